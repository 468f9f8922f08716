"""The README's Compose quickstart, run for real on podman (issue #21).

scripts/test-containers.sh builds the images and calls this module with RT_CT_CLONE (a copy
of the repository, named for the Compose project), RT_CT_SHIM (a directory whose `docker`
runs `docker compose ARGS` as docker-compose against podman's API; DOCKER_HOST names it)
and the stand-in images. The tests run in file order against one deployment, each step
printing how long it took: paste the block, then check the running container, then the
faults. The last one switches to the `clickhouse` Compose profile.
"""
import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLONE = os.environ.get("RT_CT_CLONE", "")
SHIM = os.environ.get("RT_CT_SHIM", "")
URL = "http://127.0.0.1:4040"
SERVICE = "quote-service"
TOKEN_MESSAGE = "write it in .env (README, Quickstart)"

pytestmark = pytest.mark.skipif(not CLONE, reason="run by scripts/test-containers.sh")

sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from test_deploy import readme_block  # noqa: E402  the block as test_deploy.py reads it


@contextlib.contextmanager
def timed(name):
    t0 = time.monotonic()
    yield
    print("\nstep %s: %.1f s" % (name, time.monotonic() - t0), flush=True)


def run(args, timeout=600, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def compose(*args, env=None):
    r = run(["docker-compose", *args], cwd=CLONE, env=env)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def paste():
    """The README's block, as written, in the clone; `docker` is the shim."""
    env = dict(os.environ, PATH="%s:%s" % (SHIM, os.environ["PATH"]))
    return run(["bash", "-euo", "pipefail", "-c", readme_block("Quickstart with Docker Compose")],
               cwd=CLONE, env=env)


def token():
    m = re.search(r"^ROOTTRACE_BOOTSTRAP_TOKEN=(\S+)$", read_env(), re.M)
    assert m, read_env()
    return m.group(1)


def read_env():
    with open(os.path.join(CLONE, ".env"), encoding="utf-8") as f:
        return f.read()


def write_env(text):
    with open(os.path.join(CLONE, ".env"), "w", encoding="utf-8") as f:
        f.write(text)


def api(path, method="GET", body=None, key=None, params=None, headers=None, raw=False):
    """(status, parsed JSON or bytes, response headers) of one request to the published port."""
    url = URL + path + ("?" + urllib.parse.urlencode(params) if params else "")
    h = {"Content-Type": "application/json"}
    if key is not None:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, out, hdrs = r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        status, out, hdrs = e.code, e.read(), e.headers
    return status, (out if raw else json.loads(out or b"null")), hdrs


def wait_healthz(seconds=120):
    """Waits for GET /healthz to answer 200 {"status": "ok"}; fails after `seconds`."""
    end, last = time.monotonic() + seconds, None
    while time.monotonic() < end:
        try:
            status, body, _ = api("/healthz")
            if status == 200 and body == {"status": "ok"}:
                return
            last = (status, body)
        except OSError as e:
            last = e
        time.sleep(0.2)
    pytest.fail("no healthy answer on %s/healthz in %d s: %r" % (URL, seconds, last))


def container(service="roottrace"):
    cid = compose("ps", "-q", service).stdout.strip()
    assert cid, "no %s container" % service
    return cid


def inspect(cid):
    r = run(["podman", "inspect", cid])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]


def state():
    """A summary of what the server holds: keys, issues and stored profiles of SERVICE."""
    key = token()
    _, keys, _ = api("/api/v1/keys", key=key)
    _, issues, _ = api("/api/v1/issues", key=key)
    status, folded, _ = api("/api/v1/export", key=key, raw=True,
                            params={"service": SERVICE, "type": "wall", "from": 0,
                                    "to": int(time.time()) + 60, "format": "folded"})
    assert status == 200, folded
    return {"keys": sorted(k["id"] for k in keys), "issues": sorted(i["id"] for i in issues),
            "folded": folded}


def test_the_block_starts_the_server_on_podman():
    with timed("paste the README's block (docker compose up -d)"):
        r = paste()
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.strip().endswith(
        "RootTrace: http://127.0.0.1:4040/ (sign in with the admin token in .env)"), r.stdout
    assert re.fullmatch(r"ROOTTRACE_BOOTSTRAP_TOKEN=rt_[0-9a-f]{48}\n", read_env())
    with timed("GET /healthz answers"):
        wait_healthz()


def test_health_state_is_healthy():
    cid = container()
    info = inspect(cid)
    assert info["Config"]["Healthcheck"]["Test"] == [
        "CMD", "roottrace", "health", "--url", "http://127.0.0.1:4040"]
    # Podman 4.3 schedules health checks with systemd timers; without systemd (here) none
    # runs by itself, so the check is run as its timer would run it.
    print("\nhealth before a check ran: %s, %d checks logged" % (
        info["State"]["Health"]["Status"], len(info["State"]["Health"]["Log"] or [])))
    with timed("podman healthcheck run"):
        r = run(["podman", "healthcheck", "run", cid])
    assert r.returncode == 0, (r.stdout, r.stderr)
    health = inspect(cid)["State"]["Health"]
    assert health["Status"] == "healthy", health
    assert health["Log"][-1]["ExitCode"] == 0, health


def test_server_runs_as_uid_10001_and_owns_its_volume():
    info = inspect(container())
    with open("/proc/%d/status" % info["State"]["Pid"], encoding="ascii") as f:
        status = f.read()
    assert re.search(r"^Uid:\s+10001\s+10001\s+10001\s+10001$", status, re.M), status
    assert re.search(r"^Gid:\s+(\d+)", status, re.M).group(1) != "0", status
    data = [m for m in info["Mounts"] if m["Destination"] == "/data"]
    assert data and data[0]["Type"] == "volume", info["Mounts"]
    st = os.stat(data[0]["Source"])
    assert st.st_uid == 10001 and os.path.exists(os.path.join(data[0]["Source"], "roottrace.db"))


def host_addresses():
    """This machine's IPv4 addresses other than loopback (`hostname -I`: the containers'
    bridge's gateway among them)."""
    r = run(["hostname", "-I"])
    return [a for a in r.stdout.split() if "." in a and not a.startswith("127.")]


def test_port_is_published_on_loopback_only():
    ports = inspect(container())["NetworkSettings"]["Ports"]
    assert ports == {"4040/tcp": [{"HostIp": "127.0.0.1", "HostPort": "4040"}]}, ports
    others = host_addresses()
    print("\nnot reachable on %s" % (others or "(no other address)"))
    for addr in others:
        with socket.socket() as s:
            s.settimeout(5)
            assert s.connect_ex((addr, 4040)) != 0, addr


def test_sign_in_with_the_token_from_env_and_the_ui_is_served():
    status, body, hdrs = api("/api/v1/session", "POST", {"token": token()})
    assert status == 201, body
    cookie = re.match(r"(rt_session=[0-9a-f]{64});", hdrs["Set-Cookie"]).group(1)
    status, services, _ = api("/api/v1/services", headers={"Cookie": cookie})
    assert status == 200 and isinstance(services, list), services
    assert api("/api/v1/session", "POST", {"token": "rt_" + "0" * 48})[0] == 401
    status, page, hdrs = api("/", raw=True)
    assert status == 200 and hdrs["Content-Type"].startswith("text/html"), hdrs
    assert b"<title>RootTrace" in page, page[:200]
    scripts = re.findall(rb'<script[^>]+src="/?([^"]+)"', page)
    assert scripts, page[:400]
    status, js, hdrs = api("/" + scripts[0].decode(), raw=True)
    assert status == 200 and "javascript" in hdrs["Content-Type"] and len(js) > 1000, hdrs


# A service with a hot function: release 1.0 formats receipts; 2.0 also computes quotes,
# three times the work of a receipt. Wall clock (the Python SDK's profile) of the main thread,
# in bursts longer than the GIL's switch interval (5 ms), so that the sampler thread does not
# only see the main thread where it sleeps (docs/sdk/python.md, the GIL's bias).
SERVICE_PY = r'''
import json, sys, time
import roottrace

def format_receipt(i):
    x = i
    for j in range(100000):
        x = (x * 31 + j) % 1000003
    return x

def compute_quote(i):
    q = i
    for j in range(300000):
        q = (q * 17 + j) % 999983
    return q

release, seconds = sys.argv[3], float(sys.argv[4])
roottrace.start(server=sys.argv[1], key=sys.argv[2], service="@SERVICE@", version=release)
end = time.monotonic() + seconds
i = 0
while time.monotonic() < end:
    format_receipt(i)
    if release == "2.0":
        compute_quote(i)
    i += 1
    time.sleep(0.005)
roottrace.stop(timeout=10)
print(json.dumps(roottrace.status()))
'''.replace("@SERVICE@", SERVICE)


def run_release(tmp_path, key, release, seconds):
    script = tmp_path / "service.py"
    script.write_text(SERVICE_PY)
    with timed("release %s of %s profiled for %d s" % (release, SERVICE, seconds)):
        r = run([sys.executable, str(script), URL, key, release, str(seconds)],
                timeout=seconds + 60)
    assert r.returncode == 0, r.stderr
    final = json.loads(r.stdout.strip().splitlines()[-1])
    assert final["profiles_sent"] >= seconds // 10 - 1 and final["profiles_dropped"] == 0, final


def test_python_sdk_profiles_a_service_and_the_issue_diff_ranks_its_hot_function(tmp_path):
    admin = token()
    status, body, _ = api("/api/v1/keys", "POST", {"scope": "ingest", "name": "quote"}, admin)
    assert status == 201, body
    key = body["key"]
    status, body, _ = api("/api/v1/services/%s/profiling" % SERVICE, "PUT",
                          {"enabled": True, "upload_interval_s": 10}, admin)
    assert status == 200 and body["profiling_enabled"] is True, body
    run_release(tmp_path, key, "1.0", 75)
    started = int(time.time())
    status, issue, _ = api("/api/v1/issues", "POST", {"service": SERVICE, "title": "slower quotes",
                                                      "started_at": started}, admin)
    assert status == 201, issue
    # The current window ends no later than now - upload interval - 15 s (docs/openapi.yaml).
    run_release(tmp_path, key, "2.0", 90)
    status, diff, _ = api("/api/v1/issues/%s/diff" % issue["id"], key=admin,
                          params={"window_s": 60, "type": "wall"})
    assert status == 200, diff
    assert diff["window_s"] == 60 and diff["capacity"] is None, diff["window_s"]
    top = diff["functions"][0]
    print("\nissue diff, first rows: %s" % [(f["name"], round(f["delta_pp"], 1))
                                           for f in diff["functions"][:3]])
    assert top["name"] == "__main__.compute_quote", [f["name"] for f in diff["functions"][:5]]
    # The share itself is not asserted beyond that: a wall profile of Python's main thread is
    # biased by when the sampler thread gets the GIL (docs/sdk/python.md), and on a busy host
    # it saw compute_quote in 16 % of the samples where a quiet one sees 70 %. What the issue
    # view claims is the ranking and the test: new in this window, significant, and ahead.
    assert top["base_samples"] == 0 and top["new"] is True and top["cur_samples"] > 0, top
    assert top["significant"] is True, top
    assert top["delta_pp"] > diff["functions"][1]["delta_pp"], diff["functions"][:2]


def test_compose_restart_keeps_the_data():
    before = state()
    assert before["issues"] and before["folded"], before
    with timed("docker compose restart"):
        compose("restart")
        wait_healthz()
    assert state() == before


def test_compose_down_then_up_keeps_the_data():
    before = state()
    with timed("docker compose down; docker compose up -d"):
        compose("down")
        assert compose("ps", "-q").stdout.strip() == ""
        compose("up", "-d")
        wait_healthz()
    assert state() == before


def test_a_second_paste_keeps_the_existing_env():
    env, before = read_env(), state()
    with timed("paste the block again"):
        r = paste()
        assert r.returncode == 0, r.stderr
        wait_healthz()
    assert read_env() == env
    assert state() == before


def test_an_env_without_the_token_stops_compose_up_with_the_files_message():
    env = read_env()
    cid = container()
    try:
        write_env("# the token was here\n")
        r = paste()   # the block keeps this .env and calls `docker compose up -d`
        assert r.returncode != 0
        assert TOKEN_MESSAGE in r.stderr, r.stderr
        assert read_env() == "# the token was here\n"
    finally:
        write_env(env)
    assert container() == cid and inspect(cid)["State"]["Status"] == "running"


class Uploader(threading.Thread):
    """Uploads small folded profiles, each with a stack of its own, until stopped; keeps the
    stacks that got a 201."""

    def __init__(self, key):
        super().__init__(daemon=True)
        self.key, self.stop, self.acked, self.failed, self.n = key, threading.Event(), [], 0, 0

    def run(self):
        while not self.stop.is_set():
            self.n += 1
            stack = "upload_%06d;work" % self.n
            try:
                status, _, _ = api("/api/v1/profiles", "POST", ("%s 1000000\n" % stack).encode(),
                                   self.key, headers={"Content-Type": "text/plain"},
                                   params={"service": SERVICE, "type": "wall",
                                           "unit": "nanoseconds", "instance": "uploader"})
            except OSError:
                status = None
            if status == 201:
                self.acked.append(stack)
            else:
                self.failed += 1
                time.sleep(0.05)


def stored_stacks():
    status, folded, _ = api("/api/v1/export", key=token(), raw=True,
                            params={"service": SERVICE, "type": "wall", "from": 0,
                                    "to": int(time.time()) + 60, "format": "folded"})
    assert status == 200, folded
    return {line.rsplit(" ", 1)[0] for line in folded.decode().splitlines()}


def wait_for(what, pred, seconds=60):
    end = time.monotonic() + seconds
    while not pred():
        assert time.monotonic() < end, "%s: not within %d s" % (what, seconds)
        time.sleep(0.05)


def wait_running(cid, old_pid, seconds=60):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st = inspect(cid)["State"]
        if st["Status"] == "running" and st["Pid"] not in (0, old_pid):
            return st
        time.sleep(0.2)
    pytest.fail("container %s was not running again in %d s: %r" % (cid, seconds, st))


def kill_under_uploads(kill):
    """Runs kill(cid, pid) while uploads go on; returns (uploader, container id, old pid)."""
    cid = container()
    pid = inspect(cid)["State"]["Pid"]
    up = Uploader(token())
    up.start()
    wait_for("20 uploads acknowledged", lambda: len(up.acked) >= 20)
    kill(cid, pid)
    return up, cid, pid


def finish(up):
    """Waits for an upload after the restart to be acknowledged, stops the uploader, and
    checks that every acknowledged upload is stored."""
    n = len(up.acked)
    wait_for("an upload acknowledged after the restart", lambda: len(up.acked) > n)
    up.stop.set()
    up.join(30)
    missing = set(up.acked) - stored_stacks()
    print("\n%d uploads acknowledged, %d refused or cut by the kill, %d missing" % (
        len(up.acked), up.failed, len(missing)))
    assert not missing, sorted(missing)[:10]


def test_kill_9_of_the_server_is_restarted_and_loses_no_acknowledged_upload():
    restarts = inspect(container())["RestartCount"]
    with timed("kill -9 of the server's process, restarted by restart: unless-stopped"):
        up, cid, pid = kill_under_uploads(lambda cid, pid: os.kill(pid, signal.SIGKILL))
        st = wait_running(cid, pid)
        wait_healthz()
    assert inspect(cid)["RestartCount"] == restarts + 1
    assert st["Pid"] != pid
    finish(up)


def test_podman_kill_is_a_stop_by_the_user_and_up_brings_it_back():
    """Podman documents that its restart policy does not restart a container stopped with
    `podman kill` or `podman stop` (podman-run(1), --restart), as Docker's `unless-stopped`
    does not restart a container its user stopped: the README's `docker compose up -d`
    brings it back."""
    with timed("podman kill, then docker compose up -d"):
        def kill(cid, pid):
            r = run(["podman", "kill", cid])
            assert r.returncode == 0, r.stderr
        up, cid, pid = kill_under_uploads(kill)
        # `podman kill` returns once the signal is sent: the state reads "stopped" (the
        # process is gone) until conmon's cleanup marks it "exited" (libpod's
        # ContainerStateStopped, then ContainerStateExited), which on a busy host takes a
        # moment, and CI once read "stopped". Either is a container that exited and was not
        # restarted; the wait gives a restart the time to happen.
        end = time.monotonic() + 20
        while True:
            st = inspect(cid)["State"]
            if st["Status"] != "stopped" or time.monotonic() > end:
                break
            time.sleep(0.2)
        assert st["Status"] in ("exited", "stopped") and not st["Running"], st
        assert st["ExitCode"] == 137, st
        compose("up", "-d")
        wait_running(container(), pid)
        wait_healthz()
    finish(up)


def container_limits(image):
    """{name: hard limit} of a container started with no ulimits of its own on this machine."""
    r = run(["podman", "run", "--rm", "--network", "none", image, "cat", "/proc/self/limits"])
    assert r.returncode == 0, r.stderr
    return {"nofile": int(re.search(r"^Max open files\s+\d+\s+(\d+)", r.stdout, re.M).group(1)),
            "nproc": int(re.search(r"^Max processes\s+\d+\s+(\d+)", r.stdout, re.M).group(1))}


def test_clickhouse_profile_on_the_clickhouse_stand_in():
    """The `clickhouse` profile as compose.yaml's comment says to enable it. The image it
    names cannot be pulled here: a stand-in (Debian's clickhouse-server 18.16 with an
    entrypoint honouring CLICKHOUSE_DB/USER/PASSWORD) is tagged with its name for this test.
    Where this machine cannot grant the service's nofile ulimit (262144), an override file
    lowers it to what a container gets here (podman, rootful, also sets nproc when any ulimit
    is given, so that one is lowered too)."""
    ch_image = re.search(r"image: (clickhouse/\S+)", readme_block(
        "Quickstart with Docker Compose")).group(1)
    env = read_env()
    files = ["-f", "compose.yaml"]
    limits = container_limits(os.environ["RT_CT_DEBIAN_IMAGE"])
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 262144:
        with open(os.path.join(CLONE, "compose.limits.yaml"), "w", encoding="utf-8") as f:
            f.write("services:\n  clickhouse:\n    ulimits:\n"
                    "      nofile: {soft: %(nofile)d, hard: %(nofile)d}\n"
                    "      nproc: {soft: %(nproc)d, hard: %(nproc)d}\n" % limits)
        files += ["-f", "compose.limits.yaml"]
        print("\nclickhouse ulimits lowered to %s: this machine's hard nofile is %d" % (
            limits, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    assert run(["podman", "tag", os.environ["RT_CT_CLICKHOUSE_IMAGE"], ch_image]).returncode == 0
    try:
        compose(*files, "down")
        secret = "ch%d" % os.getpid()
        write_env(env + "COMPOSE_PROFILES=clickhouse\nCLICKHOUSE_PASSWORD=%s\n"
                  "ROOTTRACE_STORE=clickhouse:http://clickhouse:8123/roottrace?user=roottrace"
                  "&password=%s\n" % (secret, secret))
        with timed("docker compose up -d with the clickhouse profile"):
            compose(*files, "up", "-d")
            wait_healthz(180)
        assert inspect(container("clickhouse"))["State"]["Status"] == "running"
        admin = token()
        status, issue, _ = api("/api/v1/issues", "POST",
                               {"service": "on-clickhouse", "started_at": 1700000000}, admin)
        assert status == 201, issue
        r = run(["podman", "exec", container("clickhouse"), "clickhouse-client", "--user",
                 "roottrace", "--password", secret, "--query",
                 "SELECT DISTINCT id FROM roottrace.issues WHERE service = 'on-clickhouse'"])
        assert r.returncode == 0 and r.stdout.split() == [issue["id"]], (r.stdout, r.stderr)
        with timed("docker compose restart with the clickhouse profile"):
            compose(*files, "restart")
            wait_healthz(180)
        status, issues, _ = api("/api/v1/issues", key=admin, params={"service": "on-clickhouse"})
        assert status == 200 and [i["id"] for i in issues] == [issue["id"]], issues
    finally:
        compose(*files, "down")
        write_env(env)
        run(["podman", "untag", ch_image, ch_image])  # that name only
