"""End to end against the real server binary: an ingest key, profiling turned on from the
API, a child Python process using the SDK, and the wall-clock profile it produced."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BIN = os.environ.get("ROOTTRACE_BIN", os.path.join(REPO, "build", "roottrace"))
ADMIN = "e2e-admin-token-0123456789"
SERVICE = "e2e-python"

CHILD = r'''
import json, sys, threading, time
import roottrace

def sleepy_wait_for_io():
    while True:
        time.sleep(0.05)

def busy_compute_checksum():
    x = 0
    while True:
        for i in range(20000):
            x = (x * 31 + i) % 1000003

threading.Thread(target=sleepy_wait_for_io, daemon=True).start()
threading.Thread(target=busy_compute_checksum, daemon=True).start()
roottrace.start(server=sys.argv[1], key=sys.argv[2], service=sys.argv[3], version="1.2.3")
end = time.monotonic() + 15
while roottrace.status()["state"] != "profiling" and time.monotonic() < end:
    time.sleep(0.05)
profiling = roottrace.status()
time.sleep(2.5)
roottrace.stop(timeout=5)
print(json.dumps({"profiling": profiling, "final": roottrace.status()}))
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(url, method="GET", body=None, token=ADMIN, params=None):
    if params:
        url += "?" + urllib.parse.urlencode(params)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture
def server(tmp_path):
    if not os.path.exists(BIN):
        # scripts/test-python.sh (make test) requires it, as the PHP suite does
        if os.environ.get("ROOTTRACE_E2E_REQUIRED") == "1":
            pytest.fail("no server binary at %s (run make -C %s)" % (BIN, REPO))
        pytest.skip("no server binary at %s (run make -C %s)" % (BIN, REPO))
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    env = dict(os.environ, ROOTTRACE_BOOTSTRAP_TOKEN=ADMIN)
    proc = subprocess.Popen([BIN, "serve", "--data", str(tmp_path / "data"), "--listen",
                             "127.0.0.1:%d" % port, "--poll-interval", "1s"],
                            stdout=log, stderr=log, env=env)
    url = "http://127.0.0.1:%d" % port
    try:
        end = time.monotonic() + 20
        while True:
            try:
                if call(url + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, "server exited: %s" % (tmp_path / "server.log").read_text()
            assert time.monotonic() < end, "server did not become healthy"
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def ingest_key(server):
    code, body = call(server + "/api/v1/keys", "POST", {"scope": "ingest", "name": "e2e"})
    assert code == 201, body
    return json.loads(body)["key"]


def toggle(server, service, enabled):
    code, body = call(server + "/api/v1/services/%s/profiling" % service, "PUT",
                      {"enabled": enabled})
    assert code == 200, body
    assert json.loads(body)["profiling_enabled"] is enabled


def test_end_to_end_against_the_real_server(server, tmp_path):
    key = ingest_key(server)
    code, body = call(server + "/api/v1/services/%s/profiling" % SERVICE, "PUT",
                      {"enabled": True})
    assert code == 200, body
    assert json.loads(body)["profiling_enabled"] is True

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, str(script), server, key, SERVICE], env=env,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    res = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert res["profiling"]["state"] == "profiling", res
    final = res["final"]
    assert final["profiles_sent"] >= 1 and final["profiles_dropped"] == 0, final
    assert final["status"] == "disabled: stopped"

    code, body = call(server + "/api/v1/profile", params={"service": SERVICE, "type": "wall"})
    assert code == 200, body
    prof = json.loads(body)
    assert prof["type"] == "wall" and prof["profiles"] >= 1, prof
    names = {f["name"]: f for f in prof["functions"]}
    assert "__main__.sleepy_wait_for_io" in names, sorted(names)
    assert "__main__.busy_compute_checksum" in names, sorted(names)
    # The SDK's own threads are left out (the main thread calling roottrace.stop() or
    # status() is the application's, and may show).
    assert not [n for n in names if n.startswith("roottrace.") and
                ("_guarded" in n or n.endswith("_loop"))], sorted(names)
    # Wall clock: the sleeping thread is there for the whole profile, like the busy one.
    sleepy = names["__main__.sleepy_wait_for_io"]["total_ns"]
    busy = names["__main__.busy_compute_checksum"]["total_ns"]
    assert sleepy > 1.5e9 and busy > 1.5e9, (sleepy, busy)
    assert prof["capacity"] is None and prof["capacity_unavailable"]

    code, body = call(server + "/api/v1/services")
    assert code == 200, body
    svc = [s for s in json.loads(body) if s["name"] == SERVICE]
    assert svc and svc[0]["profiling_enabled"] is True
    inst = [i for i in svc[0]["instances"] if i["instance"] == final["instance"]]
    assert inst and inst[0]["runtime"] == "python" and inst[0]["sdk_version"] == "0.1.0", svc


def test_toggle_from_the_api_reaches_a_running_sdk(server):
    from conftest import wait_for
    from roottrace.agent import Agent

    key = ingest_key(server)
    a = Agent(server, key, "e2e-toggle", version="9")
    a.start()
    try:
        assert wait_for(lambda: a.status()["status"] == "disabled", 3), a.status()
        assert a.sampler.samples_taken == 0
        t0 = time.monotonic()
        toggle(server, "e2e-toggle", True)
        assert wait_for(lambda: a.profiling, 4), a.status()
        on_after = time.monotonic() - t0
        assert a.etag and a.control.config.type == "wall"
        assert a.control.config.sampling_interval_us == 20000  # the server's Python default
        t0 = time.monotonic()
        toggle(server, "e2e-toggle", False)
        assert wait_for(lambda: not a.profiling, 4), a.status()
        off_after = time.monotonic() - t0
        print("\ntoggle reached the SDK: on after %.2f s, off after %.2f s" % (on_after, off_after))

        def seen():
            code, body = call(server + "/api/v1/services")
            svc = [s for s in json.loads(body) if s["name"] == "e2e-toggle"]
            inst = svc and [i for i in svc[0]["instances"] if i["instance"] == a.instance]
            return inst and inst[0]["status"] == "disabled" and inst[0]
        assert wait_for(seen, 4, step=0.2)
    finally:
        a.stop(2)


def test_upload_answers_201_duplicate_and_409_as_the_sdk_expects(server):
    import uuid
    from roottrace.agent import Agent
    from roottrace.uploader import REFUSED, SENT, Profile

    key = ingest_key(server)
    a = Agent(server, key, "e2e-upload")  # not started: its uploader is used by hand
    now = time.time_ns()
    p = Profile(str(uuid.uuid4()), a.instance, now - 10 ** 9, 10 ** 9, 20_000_000,
                [(["__main__.<module>", "__main__.work"], 50, 10 ** 9)], 1234)
    a.uploader.put(p)
    assert a.uploader.upload_one() == REFUSED  # profiling off for the service: 409
    assert a.uploader.pending() == 0 and a.uploader.dropped == 1
    toggle(server, "e2e-upload", True)
    a.uploader.put(p)
    assert a.uploader.upload_one() == SENT  # 201
    a.uploader.put(p)
    assert a.uploader.upload_one() == SENT  # the same profile_id again: 200 duplicate
    assert a.uploader.sent == 2
    bad = Agent(server, "not-a-key", "e2e-upload")
    bad.uploader.put(Profile(str(uuid.uuid4()), "x", now, 10 ** 9, 1, [], None))
    assert bad.uploader.upload_one() == "dropped"  # 401: dropped, not retried


def test_the_sdk_name_rule_matches_the_server(server):
    # Every name the SDK accepts, the server accepts on a config poll, and every name the
    # SDK refuses, the server answers with 400 (so no SDK is left `waiting` forever).
    from roottrace.names import name_problem
    key = ingest_key(server)
    names = ["caf\u00e9-\u670d\u52a1-\U0001f680", "a\u0085b", "\u00e9" * 100, "x" * 200,
             "a b.c:d@e", "", "x" * 201, "\u00e9" * 100 + "x", "a\nb", "a/b", "a\tb",
             "a\x7fb", "a\x00b"]
    for name in names:
        for which in ("service", "instance"):
            params = {"service": "e2e-names", "instance": "i-1", "runtime": "python",
                      "status": "waiting"}
            params[which] = name
            code, body = call(server + "/api/v1/sdk/config", token=key, params=params)
            want = 200 if name_problem(name) is None else 400
            assert code == want, (which, name, code, body, name_problem(name))
