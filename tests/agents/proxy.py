"""A recording, replaying HTTP proxy between one profiling agent and `roottrace serve`
(tests/agents/test_agents.py). Stdlib only.

Every request the agent sends is read whole (Content-Length or chunked, as the Java agent
sends it), forwarded to the server, and recorded with the server's answer. A request the
server accepted (2xx) is then sent to the server a second time, byte for byte, as an agent's
retry after a lost answer would be, and that second answer is recorded too (`replay`). The
agent gets the first answer, except with `fail_first_stored`: the first upload the server
stored is answered 503 to the agent (the server's answer "lost"), so that an agent that
retries (pyroscope-java) sends it again by itself.
"""
import http.client
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Headers about one hop, not the request: http.client writes its own Host and Content-Length.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te",
              "upgrade", "proxy-connection", "proxy-authorization", "trailer"}


class Record:
    """One request of the agent and what it was answered."""

    def __init__(self, seq, method, target, headers, body):
        self.seq = seq
        self.time = time.time()  # arrival at the proxy, Unix s
        self.method = method
        parts = urllib.parse.urlsplit(target)
        self.path = parts.path
        self.raw_query = parts.query
        self.query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        self.headers = headers  # [(name, value)] as the agent sent them
        self.body = body
        self.first = None  # (status, body bytes) of the forwarded request
        self.replay = None  # (status, body bytes) of the same request sent again, or None
        self.answered = None  # the status the agent got
        self.injected = False  # the agent got 503 instead of the server's answer
        self.done = None  # when the agent was answered, Unix s

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    @staticmethod
    def _json(body):
        try:
            return json.loads(body)
        except ValueError:
            return None

    def first_json(self):
        return self._json(self.first[1]) if self.first else None

    def replay_json(self):
        return self._json(self.replay[1]) if self.replay else None

    def brief(self):
        """One line: arrival, request, what the server and the agent got."""
        rep = "" if self.replay is None else " replay %d %s" % (self.replay[0],
                                                                 self.replay[1][:80])
        return "%04d %.3f %s %s%s %dB -> server %s %s%s -> agent %s%s" % (
            self.seq, self.time, self.method, self.path,
            "?" + self.raw_query[:100] if self.raw_query else "", len(self.body),
            self.first[0] if self.first else "-", (self.first[1] if self.first else b"")[:160],
            rep, self.answered, " (injected)" if self.injected else "")


class RecordingProxy:
    """Listens on 127.0.0.1:<free port>; forwards to upstream (http://host:port)."""

    def __init__(self, upstream, log_path=None, replay=True, fail_first_stored=False):
        u = urllib.parse.urlsplit(upstream)
        self.upstream = (u.hostname, u.port)
        self.replay = replay
        self.fail_first_stored = fail_first_stored
        self.log_path = log_path
        self.lock = threading.Lock()
        self.records = []
        self.errors = []  # exceptions while forwarding, as text
        self._seq = 0
        self._injected = False
        self.inflight = 0  # requests read and not answered yet
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def snapshot(self):
        with self.lock:
            return list(self.records)

    def _send(self, method, target, headers, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=120)
        try:
            conn.request(method, target, body=body,
                         headers={k: v for k, v in headers if k.lower() not in HOP_BY_HOP})
            r = conn.getresponse()
            return r.status, r.read(), r.getheader("Content-Type")
        finally:
            conn.close()

    def _serve(self, handler):
        with self.lock:
            self.inflight += 1
        try:
            self._forward(handler)
        finally:
            with self.lock:
                self.inflight -= 1

    def _forward(self, handler):
        body = _read_body(handler)
        headers = list(handler.headers.items())
        with self.lock:
            self._seq += 1
            rec = Record(self._seq, handler.command, handler.path, headers, body)
        try:
            status, out, ctype = self._send(rec.method, handler.path, headers, body)
        except OSError as e:
            status, out, ctype = 502, ("proxy: %s" % e).encode(), "text/plain"
            with self.lock:
                self.errors.append("%04d forward: %s" % (rec.seq, e))
        rec.first = (status, out)
        if self.replay and 200 <= status < 300:
            try:
                s2, o2, _ = self._send(rec.method, handler.path, headers, body)
                rec.replay = (s2, o2)
            except OSError as e:
                rec.replay = (0, ("proxy: %s" % e).encode())
        answer = (status, out, ctype)
        if self.fail_first_stored and 200 <= status < 300 and not self._injected:
            fj = rec.first_json()
            stored_new = fj is None or not fj.get("duplicate", False)
            if stored_new:
                self._injected = True
                rec.injected = True
                answer = (503, b'{"error":"unavailable","message":"proxy: answer lost"}',
                          "application/json")
        rec.answered = answer[0]
        handler.send_response(answer[0])
        if answer[2]:
            handler.send_header("Content-Type", answer[2])
        handler.send_header("Content-Length", str(len(answer[1])))
        handler.end_headers()
        handler.wfile.write(answer[1])
        handler.wfile.flush()
        rec.done = time.time()
        with self.lock:
            self.records.append(rec)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(rec.brief() + "\n")

    def _handler_class(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *a):
                pass

            def _handle(self):
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        return Handler


def _read_body(handler):
    """The request body, de-chunked."""
    te = (handler.headers.get("Transfer-Encoding") or "").lower()
    if "chunked" not in te:
        n = int(handler.headers.get("Content-Length") or 0)
        return handler.rfile.read(n) if n > 0 else b""
    chunks = []
    while True:
        line = handler.rfile.readline()
        if not line:
            break
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, up to the empty line
                t = handler.rfile.readline()
                if not t or t in (b"\r\n", b"\n"):
                    break
            break
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()  # the CRLF after the chunk
    return b"".join(chunks)
