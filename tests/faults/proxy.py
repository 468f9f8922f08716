"""A controllable HTTP proxy between an SDK and the real `roottrace serve` (docs/reliability.md,
"SDK faults"). Modes, switched at any time with set_mode():

- "up": every request is passed through to the server (one request per connection).
- "refuse": the listener is closed: connecting gets ECONNREFUSED; held connections are closed.
- "hang": connections are accepted and the request read, but never answered, until the mode
  changes (they are then closed without an answer).
- "invalid": config polls get a bad answer, in turn malformed JSON, wrong types, a NaN and a
  500; every other request (uploads) is passed through, so an upload made in this phase
  reaches the server and is counted.

Every config poll and upload is recorded (time, mode, answer, the poll's `status`, the upload's
profile window read from its pprof body), so a test can count what reached the server when.
"""
import gzip
import http.client
import socket
import threading
import time
import urllib.parse

# Bad config answers served in turn in mode "invalid": (kind, HTTP status, body). Invalid
# configs come first (they are answers: an SDK with a failure backoff, PHP, polls on), the 500
# (a failed poll) last.
INVALID_ANSWERS = [
    ("garbage", 200, b'{"enabled": true, "type": "cpu", "sampling_interval_us": 10000, "uplo'),
    ("wrong-types", 200, b'{"enabled": "yes", "type": 7, "sampling_interval_us": "fast", '
                         b'"upload_interval_s": 10, "max_stack_depth": 256, '
                         b'"poll_interval_s": 1, "etag": "fault-bad-types"}'),
    ("nan", 200, b'{"enabled": true, "type": "cpu", "sampling_interval_us": NaN, '
                 b'"upload_interval_s": 10, "max_stack_depth": 256, "poll_interval_s": 1, '
                 b'"etag": "fault-nan"}'),
    ("http-500", 500, b'{"error": "internal", "message": "injected by the fault proxy"}'),
]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te",
              "upgrade", "content-length"}


def _varint(buf, i):
    """Decodes a protobuf varint at buf[i]; returns (value, next index)."""
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def profile_window(body):
    """(time_s, duration_s) of a gzip pprof body (fields 9 and 10 of Profile), or (None, None)
    when the body is not a gzip pprof."""
    try:
        raw = gzip.decompress(body)
        i = 0
        t = d = None
        while i < len(raw):
            key, i = _varint(raw, i)
            field, wire = key >> 3, key & 7
            if wire == 0:
                v, i = _varint(raw, i)
                if field == 9:
                    t = v
                elif field == 10:
                    d = v
            elif wire == 2:
                n, i = _varint(raw, i)
                i += n
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            else:
                return None, None
        return (t / 1e9 if t is not None else None, d / 1e9 if d is not None else None)
    except Exception:
        return None, None


def _read_request(conn):
    """Reads one HTTP/1.x request from a socket: (method, target, headers dict lower-cased,
    body bytes), or None when the peer closes or sends garbage. Content-Length and chunked
    bodies are supported."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 3:
        return None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()

    def need(n):
        nonlocal rest
        while len(rest) < n:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("peer closed mid-body")
            rest += chunk

    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                need(len(rest) + 1)
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            need(size + 2)
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                break
    else:
        n = int(headers.get("content-length", "0") or 0)
        need(n)
        body = rest[:n]
    return parts[0], parts[1], headers, body


class Proxy:
    """The proxy on 127.0.0.1:port in front of the server on 127.0.0.1:upstream_port."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "up"
        self.cond = threading.Condition()
        self.polls = []    # dicts: t, mode, answer, status (the SDK's), http
        # uploads: dicts t, mode, http (None: not forwarded), start_s, duration_s, profile_id
        self.uploads = []
        self.attempts = []  # connections accepted in mode hang: t, path
        self.invalid_served = 0
        self.closed = False
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.listener = None
        self._open_listener()

    def _open_listener(self):
        deadline = time.time() + 10
        while True:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", self.port))
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        s.listen(128)
        s.settimeout(0.2)
        self.listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while self.listener is s:
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()
        s.close()

    def set_mode(self, mode):
        """Switches to mode ("up", "refuse", "hang", "invalid"); returns the switch time."""
        assert mode in ("up", "refuse", "hang", "invalid"), mode
        with self.cond:
            self.mode = mode
            self.cond.notify_all()
        if mode == "refuse" and self.listener is not None:
            s, self.listener = self.listener, None
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        elif mode != "refuse" and self.listener is None:
            self._open_listener()
        return time.time()

    def close(self):
        self.closed = True
        self.set_mode("refuse")

    def _hold(self, conn):
        """Holds a connection unanswered until the mode leaves "hang", then closes it."""
        with self.cond:
            while self.mode == "hang" and not self.closed:
                self.cond.wait(0.5)
        conn.close()

    def _serve(self, conn):
        try:
            req = _read_request(conn)
        except (OSError, ValueError, ConnectionError):
            conn.close()
            return
        if req is None:
            conn.close()
            return
        method, target, headers, body = req
        now, mode = time.time(), self.mode
        path, _, query = target.partition("?")
        q = urllib.parse.parse_qs(query)
        is_poll = path == "/api/v1/sdk/config"
        is_upload = path == "/api/v1/profiles" and method == "POST"
        rec = None
        if is_poll:
            rec = {"t": now, "mode": mode, "status": q.get("status", [""])[0],
                   "etag": q.get("etag", [""])[0], "answer": None, "http": None}
            self.polls.append(rec)
        elif is_upload:
            start, dur = profile_window(body)
            rec = {"t": now, "mode": mode, "http": None, "start_s": start, "duration_s": dur,
                   "profile_id": q.get("profile_id", [""])[0], "bytes": len(body)}
            self.uploads.append(rec)
        if mode in ("hang", "refuse"):
            if mode == "hang":
                self.attempts.append({"t": now, "path": path})
                self._hold(conn)
            else:
                conn.close()
            return
        if is_poll and mode == "invalid":
            kind, code, payload = INVALID_ANSWERS[self.invalid_served % len(INVALID_ANSWERS)]
            self.invalid_served += 1
            rec["answer"], rec["http"] = kind, code
            extra = {"ETag": '"fault-bad"'} if code == 200 else {}
            self._respond(conn, code, payload, {"Content-Type": "application/json", **extra})
            return
        self._forward(conn, method, target, headers, body, rec)

    def _forward(self, conn, method, target, headers, body, rec):
        fwd = {k: v for k, v in headers.items() if k not in HOP_BY_HOP and k != "host"}
        try:
            up = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
            up.request(method, target, body=body if body or method != "GET" else None,
                       headers=fwd)
            resp = up.getresponse()
            data = resp.read()
            out = {k: v for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP}
            up.close()
        except OSError:
            conn.close()
            return
        if rec is not None:
            rec["http"] = resp.status
            rec["answer"] = "server"
        self._respond(conn, resp.status, data, out, resp.reason)

    @staticmethod
    def _respond(conn, code, body, headers, reason="X"):
        try:
            head = f"HTTP/1.1 {code} {reason}\r\n"
            for k, v in headers.items():
                head += f"{k}: {v}\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            conn.sendall(head.encode("latin-1") + body)
        except OSError:
            pass
        finally:
            conn.close()
