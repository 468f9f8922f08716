"""The control plane (DESIGN §5): off by default, the toggle, per-runtime defaults, the long
poll (200/304, a toggle reaching a held poll within a second, 1,000 held polls without a
thread each), instance status and staleness, 409 for SDK uploads while off, the audit log."""
import json
import resource
import selectors
import socket
import threading
import time

import pprof_build as pb
from conftest import Server

T = 1764460800
S = 10**9


def poll(server, key, **params):
    params = {"service": "svc", "instance": "i-1", "runtime": "node", **params}
    return server.get("/api/v1/sdk/config", params, token=key)


def test_off_by_default_and_toggle(server):
    key = server.key("ingest")
    r = poll(server, key)
    assert r.status == 200
    cfg = r.json()
    assert cfg == {"enabled": False, "type": "cpu", "sampling_interval_us": 10000,
                   "upload_interval_s": 60, "max_stack_depth": 256, "poll_interval_s": 10,
                   "etag": cfg["etag"]}
    assert r.headers["ETag"] == f'"{cfg["etag"]}"'
    # Registered on its first poll; polls reach the store in the writer's next batch (<= 1 s).
    deadline, svc = time.monotonic() + 3, []
    while not svc and time.monotonic() < deadline:
        time.sleep(0.1)
        svc = [s for s in server.get("/api/v1/services").json() if s["name"] == "svc"]
    assert svc and svc[0]["profiling_enabled"] is False
    assert svc[0]["instances"][0]["instance"] == "i-1"
    r = server.put("/api/v1/services/svc/profiling",
                   body={"enabled": True, "sampling_interval_us": 5000})
    assert r.status == 200
    assert r.json() == {"name": "svc", "profiling_enabled": True,
                        "config": {"type": None, "sampling_interval_us": 5000,
                                   "upload_interval_s": None}}
    cfg2 = poll(server, key, etag=cfg["etag"]).json()
    assert cfg2["enabled"] is True and cfg2["sampling_interval_us"] == 5000
    assert cfg2["etag"] != cfg["etag"]
    assert poll(server, key, etag=cfg2["etag"]).status == 304


def test_runtime_defaults(server):
    key = server.key("ingest")
    want = {"node": (10000, "cpu"), "python": (20000, "wall"), "java": (50000, "wall"),
            "php": (10000, "cpu"), "go": (10000, "cpu")}
    for runtime, (interval, typ) in want.items():
        cfg = poll(server, key, runtime=runtime).json()
        assert (cfg["sampling_interval_us"], cfg["type"]) == (interval, typ), runtime


def test_unknown_service_can_be_turned_on_before_its_first_deploy(server):
    r = server.put("/api/v1/services/future/profiling", body={"enabled": True, "type": "wall"})
    assert r.status == 200
    cfg = poll(server, server.key("ingest"), service="future").json()
    assert cfg["enabled"] is True and cfg["type"] == "wall"


def test_bad_toggle_bodies(server):
    assert server.put("/api/v1/services/x/profiling", body={"enabled": "yes"}).status == 400
    assert server.put("/api/v1/services/x/profiling",
                      body={"enabled": True, "type": "heap"}).status == 400
    assert server.put("/api/v1/services/x/profiling",
                      body={"enabled": True, "upload_interval_s": 5}).status == 400


def test_sdk_upload_while_off_is_409_admin_upload_is_accepted(server):
    key = server.key("ingest")
    prof = pb.cpu_profile({"main;a": 1}, time_nanos=T * S, duration_nanos=S)
    r = server.upload(prof, service="off", token=key)
    assert r.status == 409 and "profiling is off" in r.json()["message"]
    assert server.upload(prof, service="off").status == 201
    server.put("/api/v1/services/off/profiling", body={"enabled": True})
    assert server.upload(pb.cpu_profile({"main;a": 2}, time_nanos=T * S, duration_nanos=S),
                         service="off", token=key).status == 201


def test_held_poll_returns_304_after_wait(server):
    key = server.key("ingest")
    etag = poll(server, key).json()["etag"]
    t0 = time.monotonic()
    r = poll(server, key, etag=etag, wait="2")
    took = time.monotonic() - t0
    assert r.status == 304 and r.body == b""
    assert 1.8 <= took < 6, took


def test_toggle_reaches_a_held_poll_within_a_second(server):
    key = server.key("ingest")
    etag = poll(server, key).json()["etag"]
    out = {}

    def held():
        t0 = time.monotonic()
        out["r"] = poll(server, key, etag=etag, wait="30")
        out["t"] = time.monotonic()

    th = threading.Thread(target=held)
    th.start()
    time.sleep(0.5)
    toggled = time.monotonic()
    assert server.put("/api/v1/services/svc/profiling", body={"enabled": True}).status == 200
    th.join(timeout=10)
    assert out["r"].status == 200 and out["r"].json()["enabled"] is True
    assert out["t"] - toggled < 1.0


def test_a_thousand_held_polls(server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    key = server.key("ingest")
    etag = poll(server, key).json()["etag"]
    n = 1000
    sel = selectors.DefaultSelector()
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall((f"GET /api/v1/sdk/config?service=svc&instance=p{i}&runtime=node"
                   f"&etag={etag}&wait=10 HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {key}\r\n\r\n").encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, bytearray())
        socks.append(s)
    time.sleep(1.0)
    # All held: none answered yet, and the server still answers other requests at once.
    assert not sel.select(timeout=0)
    t0 = time.monotonic()
    assert server.get("/api/v1/services").status == 200
    assert time.monotonic() - t0 < 1.0
    toggled = time.monotonic()
    server.put("/api/v1/services/svc/profiling", body={"enabled": True})
    done = 0
    while done < n and time.monotonic() - toggled < 10:
        for k, _ in sel.select(timeout=1):
            data = k.fileobj.recv(65536)
            k.data.extend(data)
            if b"\r\n\r\n" in k.data and b'"enabled":true' in k.data or not data:
                sel.unregister(k.fileobj)
                done += 1
    elapsed = time.monotonic() - toggled
    for s in socks:
        s.close()
    assert done == n
    assert elapsed < 3.0, elapsed


def test_instances_status_and_stale(tmp_path):
    srv = Server(tmp_path / "data", extra_args=("--retention", "3650d", "--poll-interval",
                                                "1s")).start()
    try:
        key = srv.key("ingest")
        poll(srv, key, instance="live", status="declined: V8 profiler in use",
             sdk_version="0.1.0", version="2.0", interval_us="10000")
        poll(srv, key, instance="gone", status="profiling")
        # A malformed status costs the SDK nothing (it would fail closed); the instance says so.
        assert poll(srv, key, instance="odd", status="sleeping").status == 200
        assert poll(srv, key, instance="long", status="error: " + "x" * 300).status == 200
        assert poll(srv, key, instance="a/b").status == 400
        time.sleep(3.5)
        poll(srv, key, instance="live", status="declined: V8 profiler in use")
        time.sleep(1.2)  # the poll writer's batch
        svc = [s for s in srv.get("/api/v1/services").json() if s["name"] == "svc"][0]
        inst = {i["instance"]: i for i in svc["instances"]}
        assert inst["live"]["status"] == "declined: V8 profiler in use"
        assert inst["live"]["runtime"] == "node" and inst["live"]["sdk_version"] == "0.1.0"
        assert inst["live"]["stale"] is False
        assert inst["gone"]["stale"] is True
        assert inst["odd"]["status"].startswith("error: malformed status")
        assert inst["long"]["status"].startswith("error: malformed status")
    finally:
        srv.stop()


def test_audit_records_who_and_when(server):
    server.put("/api/v1/services/aud/profiling", body={"enabled": True})
    server.put("/api/v1/services/aud/profiling", body={"enabled": False})
    log = server.get("/api/v1/audit").json()
    mine = [a for a in log if a["target"] == "aud"]
    assert [a["action"] for a in mine] == ["profiling.disable", "profiling.enable"]
    assert all(a["actor"].startswith("key ") and a["at"].endswith("Z") for a in mine)


def test_null_resets_an_override_and_quoted_etags_are_accepted(server):
    key = server.key("ingest")
    server.put("/api/v1/services/svc/profiling",
               body={"enabled": True, "sampling_interval_us": 5000, "type": "wall"})
    r = poll(server, key)
    assert r.json()["sampling_interval_us"] == 5000 and r.json()["type"] == "wall"
    assert poll(server, key, etag=r.headers["ETag"]).status == 304
    server.put("/api/v1/services/svc/profiling",
               body={"enabled": True, "sampling_interval_us": None, "type": None})
    cfg = poll(server, key).json()
    assert cfg["sampling_interval_us"] == 10000 and cfg["type"] == "cpu"
    time.sleep(1.2)
    svc = [s for s in server.get("/api/v1/services").json() if s["name"] == "svc"][0]
    assert svc["instances"][0]["interval_us"] is None


def test_wait_is_clamped_not_refused(server):
    key = server.key("ingest")
    etag = poll(server, key).json()["etag"]
    for w in ("-5", "0"):
        t0 = time.monotonic()
        assert poll(server, key, etag=etag, wait=w).status == 304
        assert time.monotonic() - t0 < 0.5
    assert poll(server, key, etag=etag, wait="soon").status == 400


def test_names_are_checked_the_same_everywhere(server):
    key = server.key("ingest")
    for bad in ("a/b", "tab\tx", "new\nline", "x" * 201, ""):
        assert poll(server, key, service=bad).status == 400, bad
        assert server.upload(b"main;a 1", content_type="text/plain", service=bad, type="cpu",
                             unit="samples", period_ns="1000000").status == 400, bad
    assert server.put("/api/v1/services/" + "x" * 300 + "/profiling",
                      body={"enabled": True}).status == 400
    r = server.put("/api/v1/services/x%FF/profiling", body={"enabled": True})
    assert r.status == 400
    assert server.put("/api/v1/services/caf%C3%A9/profiling", body={"enabled": True}).status == 200
    assert poll(server, key, service="café").json()["enabled"] is True
