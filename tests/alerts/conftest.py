"""Shared parts of the alerts suite (tests/alerts, DESIGN §13): the real Prometheus Alertmanager
(Debian's prometheus-alertmanager 0.25, scripts/install-deps.sh; run here as a private process on
free loopback ports, never as the package's service), a recording proxy between it and the
server, and the real server (tests/integration/conftest.py's Server, ROOTTRACE_BIN).

Alertmanager's webhook goes through the proxy, which forwards every request byte for byte and
records it with the server's answer, so that a test waits for Alertmanager's n-th notification
and reads what the server answered it instead of sleeping. Without an upstream the proxy is a
stub answering 200 `{}` (what Alertmanager itself sends, whatever the server does)."""
import base64
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from shared_conftest import integration_conftest  # noqa: E402

_it = integration_conftest()
Server = _it.Server
free_port = _it.free_port
ADMIN_TOKEN = _it.ADMIN_TOKEN

# Debian's package puts the binary here (dpkg -L prometheus-alertmanager); its systemd unit and
# init script are not used. ROOTTRACE_ALERTMANAGER names another binary.
ALERTMANAGER = os.environ.get("ROOTTRACE_ALERTMANAGER") or shutil.which(
    "prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"

AM_PATH = "/api/v1/alerts/alertmanager"
GRAFANA_PATH = "/api/v1/alerts/grafana"

# Alertmanager's timings for the tests. Its config loader refuses group_interval: 0 and
# repeat_interval: 0 ("... cannot be zero", config.go); group_wait may be 0 (the first
# notification of a group at once). Durations take ms, but a notification is only ever sent
# on a group's flush, every group_interval, and a repeat needs the last one to be older than
# repeat_interval, so with 1 s and 1 s a firing alert is notified at once and repeated every
# ~2 s. The notify call's own timeout is max(group_interval, 10 s) (notify.MinTimeout).
GROUP_WAIT = "0s"
GROUP_INTERVAL = "1s"
REPEAT_INTERVAL = "1s"


def am_problem():
    """Why Alertmanager cannot run here, or None."""
    if not os.access(ALERTMANAGER, os.X_OK):
        return (f"{ALERTMANAGER} not found: Debian's prometheus-alertmanager is not installed "
                "(scripts/install-deps.sh)")
    return None


def need_alertmanager():
    """Skips the calling test without Alertmanager; fails it instead under
    ROOTTRACE_ALERTS_REQUIRED=1 (scripts/test-alerts.sh, so that `make test` never passes by
    skipping)."""
    problem = am_problem()
    if problem:
        if os.environ.get("ROOTTRACE_ALERTS_REQUIRED") == "1":
            pytest.fail(problem)
        pytest.skip(problem)


# --- times -----------------------------------------------------------------------------------

def iso(t):
    """RFC 3339 in UTC with milliseconds, as Prometheus sends startsAt/endsAt."""
    whole = int(t // 1)
    ms = int(round((t - whole) * 1000))
    if ms == 1000:
        whole, ms = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{ms:03d}Z"


_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(\.\d+)?"
                      r"([Zz]|[+-]\d\d:\d\d)$")


def parse_time(s):
    """Unix seconds (float) of an RFC 3339 time with any offset and up to 9 fraction digits."""
    m = _RFC3339.match(s)
    assert m, f"not an RFC 3339 time: {s!r}"
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    t = calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0)) + float(m.group(7) or 0)
    off = m.group(8)
    if off not in ("Z", "z"):
        sign = 1 if off[0] == "+" else -1
        t -= sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    return t


def same_second(a, b):
    """Two times (Unix s) in the same second: a server keeping startsAt to the second, or
    to the nanosecond, both pass."""
    return int(a // 1) == int(b // 1)


# --- polling ---------------------------------------------------------------------------------

def wait_until(fn, timeout=15.0, what="condition", interval=0.05):
    """Calls fn until it returns something truthy (returned) or the deadline passes (fails,
    naming what and fn's last value)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def holds_for(fn, seconds, what="condition", interval=0.1):
    """Asserts fn() stays truthy throughout `seconds` (the server applies alert work within
    about a second: something that must not happen is watched that long)."""
    deadline = time.monotonic() + seconds
    while True:
        value = fn()
        assert value, f"{what} stopped holding: {value!r}"
        if time.monotonic() > deadline:
            return value
        time.sleep(interval)


# --- the server's side -----------------------------------------------------------------------

def issues(server, **params):
    r = server.get("/api/v1/issues", params=params or None)
    assert r.status == 200, (r.status, r.body)
    return r.json()


def issue(server, issue_id):
    r = server.get(f"/api/v1/issues/{issue_id}")
    assert r.status == 200, (r.status, r.body)
    return r.json()


def wait_issues(server, n=1, timeout=15.0, **params):
    """Waits until the issue list (with params) holds exactly n issues; returns it."""
    return wait_until(lambda: (lambda xs: xs if len(xs) == n else None)(issues(server, **params)),
                      timeout, f"{n} issue(s) for {params or 'all'}")


def audit(server):
    r = server.get("/api/v1/audit")
    assert r.status == 200, (r.status, r.body)
    return r.json()


def make_service_known(server, service, at=None):
    """Uploads one small cpu profile for service (admin key), so that the service exists."""
    at = int(time.time()) - 120 if at is None else int(at)
    r = server.upload(b"main;main.idle 5\n", "text/plain", service=service, type="cpu",
                      unit="samples", period_ns="10000000", start=str(at), duration_s="10",
                      instance="i-1")
    assert r.status == 201, (r.status, r.body)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- the recording proxy ---------------------------------------------------------------------

class Notification:
    """One request that reached the proxy (one webhook notification), with the answer."""

    def __init__(self, seq, method, target, headers, body):
        self.seq = seq
        self.time = time.time()
        self.method = method
        parts = urllib.parse.urlsplit(target)
        self.path = parts.path
        self.query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        self.headers = headers  # [(name, value)] as sent
        self.body = body
        self.status = None  # what the server (or the stub) answered
        self.answer = None  # its body

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def payload(self):
        return json.loads(self.body)

    def answer_json(self):
        try:
            return json.loads(self.answer)
        except (TypeError, ValueError):
            return None

    def __repr__(self):
        return (f"<#{self.seq} {self.method} {self.path} {len(self.body)}B "
                f"{self.payload().get('status') if self.body else ''} -> {self.status} "
                f"{(self.answer or b'')[:200]!r}>")


HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te",
              "upgrade", "trailer"}


class WebhookProxy:
    """Listens on 127.0.0.1:<free port>, records each request and forwards it unchanged to
    upstream (http://host:port), or answers 200 `{}` without one. gate=n holds every request
    until n have arrived (or gate_timeout passes) before forwarding any: two Alertmanager
    replicas then both notify before either's notification log has gossiped."""

    def __init__(self, upstream=None, gate=None, gate_timeout=10.0):
        self.upstream = urllib.parse.urlsplit(upstream) if upstream else None
        self.gate = gate
        self.gate_timeout = gate_timeout
        self.records = []
        self.cond = threading.Condition()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                proxy._handle(self)

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        with self.cond:
            rec = Notification(len(self.records), h.command, h.path, list(h.headers.items()),
                               body)
            self.records.append(rec)
            self.cond.notify_all()
            if self.gate:
                self.cond.wait_for(lambda: len(self.records) >= self.gate, self.gate_timeout)
        if self.upstream is None:
            status, answer, ctype = 200, b"{}", "application/json"
        else:
            status, answer, ctype = self._forward(h, rec)
        with self.cond:
            rec.status, rec.answer = status, answer
            self.cond.notify_all()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(answer)))
        h.end_headers()
        h.wfile.write(answer)

    def _forward(self, h, rec):
        url = f"{self.upstream.scheme}://{self.upstream.netloc}{h.path}"
        headers = {k: v for k, v in rec.headers if k.lower() not in HOP_BY_HOP}
        req = urllib.request.Request(url, data=rec.body, method=h.command, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers.get("Content-Type", "")
        except OSError as e:
            return 502, str(e).encode(), "text/plain"

    def answered(self, pred=lambda rec: True):
        """The requests answered so far that pred accepts."""
        with self.cond:
            return [r for r in self.records if r.status is not None and pred(r)]

    def wait(self, n=1, pred=lambda rec: True, timeout=20.0, what="notifications"):
        """Waits until n answered requests satisfy pred; returns them all."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [r for r in self.records if r.status is not None and pred(r)]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout} s waiting for {n} {what}; "
                                         f"the proxy saw {self.records!r}")
                self.cond.wait(min(left, 0.5))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def firing_with(fingerprint=None, labels=None):
    """A pred for WebhookProxy.wait: a notification with a firing alert (of that fingerprint,
    or those labels)."""
    def pred(rec):
        for a in rec.payload().get("alerts", []):
            if a.get("status") == "firing" and \
                    (fingerprint is None or a.get("fingerprint") == fingerprint) and \
                    (labels is None or a.get("labels") == labels):
                return True
        return False
    return pred


def resolved_with(labels):
    def pred(rec):
        return any(a.get("status") == "resolved" and a.get("labels") == labels
                   for a in rec.payload().get("alerts", []))
    return pred


# --- Alertmanager ----------------------------------------------------------------------------

def am_config(webhook_url, password, username="alertmanager"):
    """Alertmanager's configuration: one route, one webhook receiver (send_resolved, Basic
    auth with the key as password, as DESIGN §13 has it)."""
    return f"""# written by tests/alerts/conftest.py
route:
  receiver: roottrace
  group_by: ['alertname']
  group_wait: {GROUP_WAIT}
  group_interval: {GROUP_INTERVAL}
  repeat_interval: {REPEAT_INTERVAL}
receivers:
  - name: roottrace
    webhook_configs:
      - url: {json.dumps(webhook_url)}
        send_resolved: true
        http_config:
          basic_auth:
            username: {json.dumps(username)}
            password: {json.dumps(password)}
"""


class Alertmanager:
    """One `prometheus-alertmanager` on free loopback ports with its own storage; with
    cluster=True it gossips on a free port of its own (peers: other Alertmanagers' cluster
    addresses), else gossip is off (--cluster.listen-address=)."""

    def __init__(self, workdir, config, cluster=False, peers=(), name="am"):
        self.workdir = str(workdir)
        self.name = name
        os.makedirs(self.workdir, exist_ok=True)
        self.config_path = os.path.join(self.workdir, f"{name}.yml")
        with open(self.config_path, "w") as f:
            f.write(config)
        self.storage = os.path.join(self.workdir, f"{name}-data")
        self.log_path = os.path.join(self.workdir, f"{name}.log")
        self.port = free_port()
        self.cluster_port = free_port() if cluster else None
        self.peers = list(peers)
        self.proc = None
        self.log = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def cluster_address(self):
        return f"127.0.0.1:{self.cluster_port}"

    def start(self, timeout=20.0):
        args = [ALERTMANAGER, f"--config.file={self.config_path}",
                f"--storage.path={self.storage}", f"--web.listen-address=127.0.0.1:{self.port}",
                f"--web.external-url={self.url}"]
        if self.cluster_port is None:
            args.append("--cluster.listen-address=")
        else:
            # Settling polls the member count every 10 gossip intervals until it is stable
            # three times; at 50 ms that is ~1.5 s instead of ~6 s. A replica waits its
            # position x peer-timeout before notifying (15 s by default).
            args += [f"--cluster.listen-address={self.cluster_address}",
                     f"--cluster.advertise-address={self.cluster_address}",
                     "--cluster.gossip-interval=50ms", "--cluster.pushpull-interval=1s",
                     "--cluster.settle-timeout=5s", "--cluster.peer-timeout=200ms",
                     *[f"--cluster.peer={p}" for p in self.peers]]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"alertmanager exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("alertmanager did not become ready:\n" + self.log_tail())

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def post_alerts(self, alerts):
        """Posts alerts as Prometheus does (POST /api/v2/alerts)."""
        req = urllib.request.Request(self.url + "/api/v2/alerts",
                                     data=json.dumps(alerts).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 200, r.status
        except urllib.error.HTTPError as e:
            raise AssertionError(f"alertmanager refused the alerts: {e.code} {e.read()!r}")

    def status(self):
        with urllib.request.urlopen(self.url + "/api/v2/status", timeout=10) as r:
            return json.loads(r.read())

    def alerts(self):
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.log:
            self.log.close()


def alert(labels, annotations=None, starts_at=None, ends_at=None,
          generator_url="http://prometheus.test:9090/graph?g0.expr=up%3D%3D0&g0.tab=1"):
    """One alert as Prometheus posts it to Alertmanager: startsAt/endsAt in RFC 3339 (endsAt in
    the future while firing: Prometheus sends now + 4 evaluation intervals)."""
    now = time.time()
    return {"labels": dict(labels), "annotations": dict(annotations or {}),
            "startsAt": iso(now - 30 if starts_at is None else starts_at),
            "endsAt": iso(now + 600 if ends_at is None else ends_at),
            "generatorURL": generator_url}


# --- fixtures --------------------------------------------------------------------------------

@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path / "data").start()
    yield srv
    srv.stop()


@pytest.fixture
def ingest_key(server):
    return server.key("ingest")


class Receivers:
    """Makes Alertmanagers (each behind its own proxy to the server, or sharing one) and stops
    them all at the end of the test."""

    def __init__(self, tmp_path, server, key):
        self.tmp_path = tmp_path
        self.server = server
        self.key = key
        self.ams = []
        self.proxies = []

    def proxy(self, upstream="server", gate=None):
        p = WebhookProxy(self.server.url if upstream == "server" else upstream, gate=gate)
        self.proxies.append(p)
        return p

    def alertmanager(self, proxy=None, query="", cluster=False, peers=(), name=None,
                     password=None, start=True):
        """An Alertmanager (started unless start=False) whose webhook is proxy's url +
        AM_PATH + query (a new proxy to the server by default); returns (alertmanager,
        proxy)."""
        proxy = proxy or self.proxy()
        name = name or f"am{len(self.ams)}"
        cfg = am_config(proxy.url + AM_PATH + query, self.key if password is None else password)
        am = Alertmanager(self.tmp_path / "alertmanager", cfg, cluster=cluster, peers=peers,
                          name=name)
        self.ams.append(am)
        if start:
            am.start()
        return am, proxy

    def close(self):
        for am in self.ams:
            am.stop()
        for p in self.proxies:
            p.close()


@pytest.fixture
def receivers(tmp_path, server, ingest_key):
    need_alertmanager()
    rs = Receivers(tmp_path, server, ingest_key)
    yield rs
    rs.close()
