"""A ClickHouse HTTP interface in front of chDB (PyPI chdb-core: the ClickHouse engine,
in-process), so that the conformance suite runs on a current ClickHouse (26.9, whose query
analyzer is mandatory) where no current clickhouse-server package is reachable (issue #14).

It serves the part of ClickHouse's HTTP interface that RootTrace's backend uses
(server/src/store/clickhouse/clickhouse_http.c):
- `POST /?database=DB&<setting>=<value>...` with the statement as the body, its output in
  the FORMAT the statement names (TabSeparated when none), and `GET /?query=...` likewise;
- `POST /?database=DB&query=INSERT INTO t [(cols)] FORMAT F` with the rows as the body
  (RowBinary, TabSeparated: chDB's streaming insert);
- errors as HTTP 500 with ClickHouse's own text ("Code: N. DB::Exception: ...").

What it does not emulate: concurrency (requests are served one at a time, so time nothing
through it), replication and clusters, users and passwords (the user and password settings
are accepted and ignored), sessions, compression of the answer, and progress headers.

Usage: chdb_http.py DATA_DIR PORT_FILE   (listens on a free loopback port, writes it to
PORT_FILE, serves until killed)."""
import http.server
import re
import sys
import threading
import urllib.parse

import chdb.session

# Settings the backend may pass in the URL that are not query settings of the engine.
NOT_SETTINGS = {"database", "query", "user", "password", "default_format"}
FORMAT_RE = re.compile(r"\s+FORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


class Front:
    """One chDB session, used by one request at a time."""

    def __init__(self, path):
        self.session = chdb.session.Session(path)
        self.lock = threading.Lock()

    def run(self, params, body):
        """(status, bytes) for one request."""
        db = params.get("database")
        settings = {k: v for k, v in params.items() if k not in NOT_SETTINGS}
        query = params.get("query")
        with self.lock:
            try:
                if db:
                    self.session.query(f"USE `{db}`")
                for k, v in settings.items():
                    if not re.fullmatch(r"[A-Za-z0-9_]+", k):
                        raise RuntimeError(f"Code: 115. DB::Exception: Unknown setting {k}")
                    self.session.query(f"SET {k} = {quote(v)}")
                if query is not None and body:
                    return 200, self.insert(query, body)
                sql = query if query is not None else body.decode("utf-8", "surrogateescape")
                return 200, self.select(sql)
            except Exception as e:  # chDB raises with ClickHouse's own message
                return 500, str(e).encode("utf-8", "replace")

    def insert(self, query, body):
        m = FORMAT_RE.search(query)
        if not m:
            raise RuntimeError("Code: 62. DB::Exception: an INSERT with data needs FORMAT")
        with self.session.send_insert(query[:m.start()], m.group(1)) as ins:
            ins.append(body)
            ins.finish()
        return b""

    def select(self, sql):
        m = FORMAT_RE.search(sql)
        fmt = m.group(1) if m else "TabSeparated"
        res = self.session.query(sql[:m.start()] if m else sql, fmt)
        return res.bytes() if res is not None else b""


def quote(v):
    return v if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v) else "'" + v.replace("'", "\\'") + "'"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    front = None

    def answer(self, body):
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query,
                                             keep_blank_values=True))
        status, out = self.front.run(params, body)
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8" if status != 200
                         else "application/octet-stream")
        self.send_header("Content-Length", str(len(out)))
        if status != 200:
            code = re.match(rb"Code: (\d+)", out)
            self.send_header("X-ClickHouse-Exception-Code", code.group(1).decode() if code
                             else "1000")
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.answer(self.rfile.read(n) if n else b"")

    def do_GET(self):
        self.answer(b"")

    def log_message(self, *args):
        pass


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    Handler.front = Front(argv[1])
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(argv[2], "w") as f:
        f.write(str(httpd.server_address[1]))
    httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
