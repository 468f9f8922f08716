"""A small HTTP client over http.client with a deadline on the whole request (headers and
body), a cap on the body read, and a way to abort a request from another thread. A socket
timeout alone bounds each read, not a slow drip, so every read gets the time left."""
from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import urllib.parse
from typing import Dict, Optional


class HTTPError(Exception):
    """A network-level failure: refused, reset, timed out, malformed answer, aborted."""


class Aborted(HTTPError):
    """The request was ended on purpose by abort_thread() or abort_all() (the SDK stopping),
    not by the network or the server."""


class BodyTooLarge(HTTPError):
    """The answer's body is larger than the caller's cap (it was not read in full)."""


class Response:
    """An HTTP answer: status, headers (lower-case names), body (at most the cap)."""

    def __init__(self, status: int, headers: Dict[str, str], body: bytes):
        self.status = status  # HTTP status code
        self.headers = headers  # lower-cased header names
        self.body = body  # the body, at most max_body bytes


class _DeadlineReader(io.RawIOBase):
    """Raw reads from a socket, each limited to the time left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("request deadline passed")
        self._sock.settimeout(left)
        return self._sock.recv_into(b)


class _DeadlineSocket:
    """The few socket methods http.client uses, with makefile() bounded by a deadline."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("request deadline passed")
        self._sock.settimeout(left)
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *args, **kwargs):
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def close(self) -> None:
        # http.client closes the connection as soon as it sees "Connection: close", before
        # the body is read; the socket itself is closed by Client.request when done.
        pass

    def shutdown(self, how: int) -> None:
        self._sock.shutdown(how)

    def setsockopt(self, *args) -> None:
        self._sock.setsockopt(*args)


def _connection_class(https: bool):
    base = http.client.HTTPSConnection if https else http.client.HTTPConnection

    class _Conn(base):  # type: ignore[misc, valid-type]
        deadline = 0.0  # monotonic time by which the whole request must be done
        raw_sock: Optional[socket.socket] = None  # for abort()
        aborted = False  # abort() came before the socket existed

        def connect(self) -> None:
            super().connect()
            self.raw_sock = self.sock
            if self.aborted:
                raise OSError("request aborted")
            self.sock = _DeadlineSocket(self.sock, self.deadline)

    return _Conn


class Client:
    """Requests to one server base URL (http or https, optionally with a path prefix)."""

    def __init__(self, base_url: str, headers: Dict[str, str]):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("server must be an http:// or https:// URL")
        self.https = u.scheme == "https"  # TLS
        self.host = u.hostname  # host name or address
        self.port = u.port or (443 if self.https else 80)  # TCP port
        self.prefix = u.path.rstrip("/")  # path prefix before /api/v1
        self.headers = dict(headers)  # sent on every request
        self._lock = threading.Lock()
        self._active: Dict[int, object] = {}  # requests in flight, by thread ident

    def abort_thread(self, ident: int) -> None:
        """Ends the request in flight on thread `ident`, if any (its caller gets HTTPError)."""
        with self._lock:
            conn = self._active.get(ident)
        self._abort([conn] if conn is not None else [])

    def abort_all(self) -> None:
        """Ends every request in flight (their callers get HTTPError)."""
        with self._lock:
            conns = list(self._active.values())
        self._abort(conns)

    @staticmethod
    def _abort(conns) -> None:
        for c in conns:
            c.aborted = True
            sock = getattr(c, "raw_sock", None)
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def request(self, method: str, path: str, params: Dict[str, object],
                body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None, *,
                deadline_s: float, connect_timeout_s: float,
                max_body: int = 64 * 1024) -> Response:
        """One request on a new connection. Raises HTTPError on any network failure or
        when the whole exchange takes longer than deadline_s; BodyTooLarge when the body
        exceeds max_body. The deadlines come from the caller's Limits."""
        query = urllib.parse.urlencode([(k, str(v)) for k, v in params.items() if v is not None])
        url = self.prefix + path + ("?" + query if query else "")
        deadline = time.monotonic() + deadline_s
        conn = _connection_class(self.https)(self.host, self.port,
                                             timeout=min(connect_timeout_s, deadline_s))
        conn.deadline = deadline
        ident = threading.get_ident()
        with self._lock:
            self._active[ident] = conn
        try:
            h = dict(self.headers)
            if headers:
                h.update(headers)
            h["Connection"] = "close"
            conn.request(method, url, body=body, headers=h)
            resp = conn.getresponse()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            length = resp.getheader("content-length")
            if length is not None and length.strip().isdigit() and int(length) > max_body:
                raise BodyTooLarge("body of %s bytes" % length.strip())
            data = resp.read(max_body + 1)
            if len(data) > max_body:
                raise BodyTooLarge("body larger than %d bytes" % max_body)
            return Response(resp.status, hdrs, data)
        except HTTPError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            if conn.aborted:
                raise Aborted("request aborted (%s)" % type(e).__name__) from None
            raise HTTPError("%s: %s" % (type(e).__name__, e)) from None
        finally:
            with self._lock:
                self._active.pop(ident, None)
            try:
                conn.close()
            except Exception:
                pass
            if conn.raw_sock is not None:
                try:
                    conn.raw_sock.close()
                except OSError:
                    pass
