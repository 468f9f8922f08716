#!/usr/bin/env python3
"""Capture server for profiling agents (Pyroscope and friends).

Answers every request 200 with an empty body, except the Connect unary
`POST /push.v1.PusherService/Push`, which gets an empty `PushResponse`
(`{}` as application/json, or zero bytes as application/proto, matching the
request's Content-Type).

Each request is recorded in --dir as two files:
  NNNN.json  method, path, raw query, parsed query, headers, body size/sha256,
             the status answered, the time it arrived
  NNNN.body  the raw body exactly as received (still gzip if it was sent gzip)

--fail N answers the first N requests (or every request whose sequence number
is listed in --fail-seq) with --fail-status (default 503), to see whether and
how an agent retries. --ok-status 201 (or 204) answers the other requests with
that code, to see whether an agent takes a 2xx other than 200 as success.
Stdlib only.

  python3 capture.py --port 4040 --dir /tmp/cap [--fail 3 --fail-status 503]
  python3 capture.py --port 0 --port-file /tmp/port --dir /tmp/cap   (any free port)
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PUSH_PATH = "/push.v1.PusherService/Push"


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seq = 0
        self.fail_seq = set(args.fail_seq or [])

    def next(self):
        with self.lock:
            self.seq += 1
            return self.seq


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "capture/1"

    def log_message(self, fmt, *a):  # quiet; we print our own line
        pass

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline()
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # trailers until empty line
                    while True:
                        t = self.rfile.readline()
                        if not t or t in (b"\r\n", b"\n"):
                            break
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after chunk
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _handle(self):
        st = self.server.state
        a = st.args
        seq = st.next()
        body = self._read_body()
        parsed = urllib.parse.urlsplit(self.path)
        fail = seq <= a.fail or seq in st.fail_seq
        status = a.fail_status if fail else a.ok_status
        ctype_req = (self.headers.get("Content-Type") or "").lower()

        rec = {
            "seq": seq,
            "time": time.time(),
            "time_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
            "client": "%s:%d" % self.client_address[:2],
            "method": self.command,
            "request_line": self.requestline,
            "path": parsed.path,
            "raw_query": parsed.query,
            "query": urllib.parse.parse_qs(parsed.query, keep_blank_values=True),
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_file": "%04d.body" % seq,
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "status": status,
        }
        os.makedirs(a.dir, exist_ok=True)
        with open(os.path.join(a.dir, rec["body_file"]), "wb") as f:
            f.write(body)
        with open(os.path.join(a.dir, "%04d.json" % seq), "w") as f:
            json.dump(rec, f, indent=1)
        print("%04d %s %s %s %dB -> %d" % (seq, rec["time_iso"], self.command,
              self.path[:160], len(body), status), flush=True)

        out = b""
        ctype = None
        if status < 300 and parsed.path == PUSH_PATH:
            if "json" in ctype_req:
                out, ctype = b"{}", "application/json"
            else:
                # empty PushResponse is zero protobuf bytes
                out, ctype = b"", (ctype_req.split(";")[0] or "application/proto")
        elif status >= 300:
            if parsed.path == PUSH_PATH:
                # Connect error envelope
                code = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
                        404: "unimplemented", 409: "already_exists", 413: "resource_exhausted",
                        429: "unavailable", 500: "internal", 501: "unimplemented"}.get(status, "unavailable")
                out = json.dumps({"code": code, "message": "capture: injected failure"}).encode()
            else:
                out = b"capture: injected failure\n"
            ctype = "application/json" if parsed.path == PUSH_PATH else "text/plain"
        if status in (204, 304):
            out, ctype = b"", None
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=4040)
    p.add_argument("--dir", required=True, help="directory to record requests into")
    p.add_argument("--fail", type=int, default=0, help="answer the first N requests with --fail-status")
    p.add_argument("--fail-seq", type=int, nargs="*", help="sequence numbers (1-based) to fail")
    p.add_argument("--fail-status", type=int, default=503)
    p.add_argument("--ok-status", type=int, default=200, help="status for requests not failed (e.g. 201, 204)")
    p.add_argument("--port-file", help="write the bound port here (use with --port 0)")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    srv = ThreadingHTTPServer((a.host, a.port), Handler)
    srv.daemon_threads = True
    srv.state = State(a)
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(a.port_file + ".tmp", a.port_file)
    print("capture listening on http://%s:%d/ -> %s" % (a.host, srv.server_address[1], a.dir), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
