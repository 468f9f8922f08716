"""Starts the real roottrace binary on a free port with a temporary data directory, and
gives tests a small HTTP client for it.

With ROOTTRACE_TEST_STORE=clickhouse:http://HOST:PORT (scripts/clickhouse.sh start prints
the URL) every server and every CLI call working on a data directory uses instead a
ClickHouse database of its own, named after that directory, so that the same tests check
both backends; tests that are inherently SQLite's are marked sqlite_only. With
ROOTTRACE_TEST_CLUSTER=NAME too, the databases are created replicated on that cluster
(`?cluster=NAME`, docs/scale-out.md)."""
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

BIN = os.environ.get("ROOTTRACE_BIN", os.path.abspath("build/roottrace"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
ADMIN_TOKEN = "rt_test_admin_token_0123456789abcdef"
TEST_STORE = os.environ.get("ROOTTRACE_TEST_STORE", "")
CLICKHOUSE = TEST_STORE.startswith("clickhouse:")
CLUSTER = os.environ.get("ROOTTRACE_TEST_CLUSTER", "") if CLICKHOUSE else ""


def sqlite_only(reason):
    """Marks a test that checks something only the SQLite backend has."""
    return pytest.mark.skipif(CLICKHOUSE, reason=f"SQLite only: {reason}")


def store_uri(data_dir):
    """The --store URI standing for a data directory under ClickHouse (None under SQLite):
    a database named after the directory, the same one whenever it is reopened."""
    if not CLICKHOUSE:
        return None
    digest = hashlib.sha1(os.path.abspath(str(data_dir)).encode()).hexdigest()[:20]
    return f"{TEST_STORE.rstrip('/')}/rt_it_{digest}" + (f"?cluster={CLUSTER}" if CLUSTER else "")


def clickhouse_sql(store, sql):
    """Runs sql on the database of a clickhouse:http://HOST:PORT/DB[?cluster=C] store URI;
    returns the response body."""
    base, db = store[len("clickhouse:"):].split("?")[0].rsplit("/", 1)
    url = f"{base}/?database={db}&query={urllib.parse.quote(sql)}"
    with urllib.request.urlopen(urllib.request.Request(url, data=b""), timeout=30) as r:
        return r.read()


def store_args(data_dir):
    """Arguments naming the store of a data directory: --data DIR (and --store URI)."""
    uri = store_uri(data_dir)
    return ["--data", str(data_dir), *(["--store", uri] if uri else [])]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    def json(self):
        return json.loads(self.body)


class Server:
    """A running `roottrace serve`; restartable on the same data directory."""

    def __init__(self, data_dir, extra_args=("--retention", "3650d"), token=ADMIN_TOKEN,
                 store=None):
        """Tests use fixed times in 2025: the default retention keeps them. store: a --store
        URI shared with other servers (nodes of one ClickHouse database)."""
        self.data_dir = str(data_dir)
        self.store = store
        self.extra_args = list(extra_args)
        self.token = token  # sent as the bearer key unless a request says otherwise
        self.proc = None
        self.port = None
        self.log_path = os.path.join(os.path.dirname(self.data_dir), "server.log")

    def start(self):
        """Starts the server on a free port and waits until it answers /healthz. The port is
        free when chosen, not when the server binds it: another process (the conformance
        suite runs two passes at once) may take it in between. A server that could not
        listen is started again on another port, and a 200 counts only once this server
        logged that it listens, so that a test never talks to someone else's server."""
        self.log = open(self.log_path, "ab")
        for _ in range(3):
            self.port = free_port()
            self.log_start = self.log.tell()
            self.proc = subprocess.Popen(
                [BIN, "serve", *(["--data", self.data_dir, "--store", self.store] if self.store
                                 else store_args(self.data_dir)),
                 "--listen", f"127.0.0.1:{self.port}",
                 *self.extra_args], stdout=self.log, stderr=self.log,
                env={**os.environ, "ROOTTRACE_BOOTSTRAP_TOKEN": ADMIN_TOKEN})
            if self._await_healthy():
                return self
        raise RuntimeError("server could not listen on three free ports in turn")

    def _logged(self, text):
        with open(self.log_path, "rb") as f:
            f.seek(self.log_start)
            return text.encode() in f.read()

    def _await_healthy(self):
        """True once healthy; False when it could not listen (the port was taken)."""
        listening = f"listening on 127.0.0.1:{self.port} "
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.get("/healthz").status == 200 and self._logged(listening):
                    return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                if self._logged("cannot listen on"):
                    return False
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("server did not become healthy")

    def stop(self, sig=None):
        if self.proc and self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.log.close()
        check_sanitizer_report(self.log_path, self.log_start)
        return self.proc.returncode

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, params=None, body=None, headers=None, timeout=60,
                token=None):
        """token: the bearer key (default: the admin token); "" sends none."""
        url = self.url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = dict(headers or {})
        token = self.token if token is None else token
        if token:
            headers.setdefault("Authorization", f"Bearer {token}")
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return Response(r.status, r.read(), dict(r.headers))
        except urllib.error.HTTPError as e:
            return Response(e.code, e.read(), dict(e.headers))

    def get(self, path, params=None, **kw):
        return self.request("GET", path, params, **kw)

    def post(self, path, params=None, body=None, **kw):
        return self.request("POST", path, params, body, **kw)

    def put(self, path, params=None, body=None, **kw):
        return self.request("PUT", path, params, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def upload(self, data, content_type="application/octet-stream", token=None, timeout=60,
               **params):
        return self.request("POST", "/api/v1/profiles", params, data,
                            headers={"Content-Type": content_type}, token=token,
                            timeout=timeout)

    def key(self, scope, service=None):
        """A new key of scope (bound to service), made with the admin token."""
        body = {"scope": scope, **({"service": service} if service else {})}
        r = self.post("/api/v1/keys", body=body)
        assert r.status == 201, r.body
        return r.json()["key"]

    def metric(self, name):
        for line in self.get("/metrics").body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None


# What ASan, UBSan and LeakSanitizer print: a server built with `make SAN=1` aborts on the
# first error, and LeakSanitizer reports at exit, so a clean stop must leave none of these.
SANITIZER_MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:",
                     b"SUMMARY: UndefinedBehaviorSanitizer")


def check_sanitizer_report(path, start=0):
    """Fails the test when the server's log from byte start on holds a sanitizer report."""
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read()
    for marker in SANITIZER_MARKERS:
        at = text.find(marker)
        if at >= 0:
            raise AssertionError(f"sanitizer report in {path}:\n"
                                 + text[max(0, at - 200):at + 4000].decode(errors="replace"))


def same_json(x, y, path="$"):
    """Asserts equal JSON, floats to 1e-9 relative (backends, and replicas whose parts merged
    differently, sum in different orders)."""
    if isinstance(x, float) or isinstance(y, float):
        assert x == pytest.approx(y, rel=1e-9, abs=1e-9), path
    elif isinstance(x, dict):
        assert isinstance(y, dict) and x.keys() == y.keys(), path
        for k in x:
            same_json(x[k], y[k], f"{path}.{k}")
    elif isinstance(x, list):
        assert isinstance(y, list) and len(x) == len(y), path
        for i, (a, b) in enumerate(zip(x, y)):
            same_json(a, b, f"{path}[{i}]")
    else:
        assert x == y, path


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path / "data").start()
    yield srv
    srv.stop()


def cli(*args, check=True, env=None):
    """Runs the roottrace CLI; returns CompletedProcess with text output. Under ClickHouse,
    --data DIR also names DIR's database (--store)."""
    args = list(args)
    if CLICKHOUSE and "--data" in args[:-1]:
        args += ["--store", store_uri(args[args.index("--data") + 1])]
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ROOTTRACE_TOKEN": ADMIN_TOKEN, **(env or {})})
    if check and r.returncode != 0:
        raise AssertionError(f"roottrace {' '.join(args)} failed ({r.returncode}):\n"
                             f"{r.stdout}\n{r.stderr}")
    for marker in SANITIZER_MARKERS:
        assert marker.decode() not in r.stderr, f"sanitizer report:\n{r.stderr}"
    return r


def shared(*parts):
    return os.path.join(SHARED, *parts)
