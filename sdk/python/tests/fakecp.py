"""A fake RootTrace control plane and ingest endpoint (http.server on 127.0.0.1, random
port, in a thread), honest or hostile on demand. Tests only."""
import json
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pprof_decode import decode

BIG = 50 * 1024 * 1024


class Poll:
    def __init__(self, t, params):
        self.t = t  # monotonic seconds when it arrived
        self.params = params  # query parameters (single values)


class Upload:
    def __init__(self, t, params, profile, answer):
        self.t = t
        self.params = params
        self.profile = profile  # decoded pprof
        self.answer = answer  # the status code we answered


class FakeControlPlane:
    """Modes for GET /api/v1/sdk/config: normal (etag + held wait, 200/304), body (200 with
    raw_body), huge (50 MB body with Content-Length), huge_close (50 MB, no length),
    drip (headers one byte at a time), status (answer `code`), reset (TCP RST),
    hang (never answer), churn (200 with a new etag at once, every time), fast304 (304 at
    once, ignoring wait), codes (the next status of `codes` at once, the last one repeated,
    with status_body)."""

    def __init__(self, **config):
        self.cond = threading.Condition()
        self.config = {"enabled": False, "type": "wall", "sampling_interval_us": 20000,
                       "upload_interval_s": 60, "max_stack_depth": 256, "poll_interval_s": 10}
        self.config.update(config)
        self.version = 1
        self.mode = "normal"
        self.raw_body = b""
        self.code = 500
        self.codes = [500]  # the "codes" mode's answers, one per poll; the last repeats
        self.coded = []  # (params, status) of each poll the "codes" mode answered
        self.status_body = b'{"error":"boom"}'  # body of the "status" mode's answer
        self.polls = []
        self.uploads = []
        self.upload_answer = lambda params: 201  # status for each upload
        self.upload_hang = False
        self.release = threading.Event()  # ends every hang and drip
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                fake._config(self)

            def do_POST(self):
                fake._upload(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def etag(self):
        return "v%d" % self.version

    def set_config(self, **kw):
        with self.cond:
            self.config.update(kw)
            self.version += 1
            self.cond.notify_all()

    def set_mode(self, mode, **kw):
        with self.cond:
            self.mode = mode
            for k, v in kw.items():
                setattr(self, k, v)
            self.cond.notify_all()

    def close(self):
        self.release.set()
        with self.cond:
            self.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # ---- handlers ----

    def _params(self, h):
        q = urllib.parse.urlsplit(h.path).query
        return {k: v[0] for k, v in urllib.parse.parse_qs(q, keep_blank_values=True).items()}

    def _send(self, h, code, body=b"", headers=()):
        h.send_response(code)
        for k, v in headers:
            h.send_header(k, v)
        if code != 304:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if body:
            h.wfile.write(body)

    def _config_body(self):
        c = dict(self.config, etag=self.etag())
        return json.dumps(c).encode()

    def _config(self, h):
        if not h.path.startswith("/api/v1/sdk/config"):
            return self._send(h, 404, b'{"error":"not_found"}')
        params = self._params(h)
        with self.cond:
            self.polls.append(Poll(time.monotonic(), params))
            mode = self.mode
        try:
            getattr(self, "_mode_" + mode)(h, params)
        except OSError:
            pass

    def _mode_normal(self, h, params):
        with self.cond:
            etag, wait = params.get("etag"), float(params.get("wait", "0") or 0)
            if etag == self.etag():
                end = time.monotonic() + min(max(wait, 0), 30)
                while etag == self.etag() and self.mode == "normal" and not self.release.is_set():
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
            mode = self.mode
            unchanged = etag == self.etag()
            body, tag = self._config_body(), self.etag()
        if mode != "normal":
            return getattr(self, "_mode_" + mode)(h, params)
        if unchanged:
            return self._send(h, 304)
        self._send(h, 200, body, [("ETag", tag), ("Content-Type", "application/json")])

    def _mode_body(self, h, params):
        self._send(h, 200, self.raw_body, [("Content-Type", "application/json")])

    def _mode_huge(self, h, params):
        h.send_response(200)
        h.send_header("Content-Length", str(BIG))
        h.end_headers()
        self._write_big(h)

    def _mode_huge_close(self, h, params):
        h.send_response(200)
        h.end_headers()  # HTTP/1.0, no length: the body ends when the connection closes
        self._write_big(h)

    def _write_big(self, h):
        h.wfile.write(b'{"enabled": true, "pad": "')
        chunk = b"a" * (1024 * 1024)
        for _ in range(BIG // len(chunk)):
            if self.release.is_set():
                return
            h.wfile.write(chunk)
        h.wfile.write(b'"}')

    def _mode_drip(self, h, params):
        data = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 10000
        for i in range(len(data)):
            if self.release.wait(0.05):
                return
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()

    def _mode_status(self, h, params):
        self._send(h, self.code, self.status_body)

    def _mode_codes(self, h, params):
        with self.cond:
            code = self.codes.pop(0) if len(self.codes) > 1 else self.codes[0]
            self.coded.append((params, code))
        self._send(h, code, self.status_body)

    def _mode_reset(self, h, params):
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
        h.close_connection = True

    def _mode_hang(self, h, params):
        self.release.wait(60)

    def _mode_churn(self, h, params):
        with self.cond:
            self.version += 1
            body, tag = self._config_body(), self.etag()
        self._send(h, 200, body, [("ETag", tag)])

    def _mode_fast304(self, h, params):
        if params.get("etag") == self.etag():
            return self._send(h, 304)
        with self.cond:
            body, tag = self._config_body(), self.etag()
        self._send(h, 200, body, [("ETag", tag)])

    def _upload(self, h):
        params = self._params(h)
        n = int(h.headers.get("Content-Length", "0"))
        body = h.rfile.read(n)
        if self.upload_hang:
            self.release.wait(60)
            return
        code = self.upload_answer(params)
        try:
            prof = decode(body)
        except Exception as e:  # a broken body is a test failure, shown as 400
            prof, code = {"error": repr(e)}, 400
        with self.cond:
            self.uploads.append(Upload(time.monotonic(), params, prof, code))
            self.cond.notify_all()
        try:
            self._send(h, code, json.dumps({"id": "1", "service": params.get("service"),
                                            "type": "wall"}).encode())
        except OSError:
            pass

    def wait_uploads(self, n, timeout):
        """Waits until at least n uploads arrived; returns them."""
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.uploads) < n and time.monotonic() < end:
                self.cond.wait(max(0.01, end - time.monotonic()))
            return list(self.uploads)
