"""POST /api/v1/profiles accepts what DESIGN §4 says: pprof gzip or raw, packed or unpacked,
folded, both types split, zero-sample coverage, deep stacks truncated, retries stored once."""
import json
import os

import pprof_build as pb

NOW = 1764460800  # 2025-11-30T00:00:00Z


def top(server, service, typ, frm=NOW - 10, to=NOW + 3600, **kw):
    r = server.get("/api/v1/profile", {"service": service, "type": typ, "from": frm, "to": to,
                                       **kw})
    assert r.status == 200, r.body
    return r.json()


def test_packed_and_unpacked_give_the_same_profile(server):
    counts = {"main.main;app.handle;app.parse": 7, "main.main;app.handle": 3}
    for i, packed in enumerate((True, False)):
        r = server.upload(pb.cpu_profile(counts, time_nanos=NOW * 10**9,
                                         duration_nanos=10 * 10**9, packed=packed),
                          service=f"s{i}")
        assert r.status == 201, r.body
        j = r.json()
        assert j["type"] == "cpu" and j["samples"] == 10
    a, b = top(server, "s0", "cpu"), top(server, "s1", "cpu")
    assert a["functions"] == b["functions"]
    names = {f["name"]: f for f in a["functions"]}
    assert names["app.parse"]["self_ns"] == 70_000_000
    assert names["app.handle"]["total_ns"] == 100_000_000
    assert a["value_ns"] == 100_000_000


def test_raw_uncompressed_pprof(server):
    r = server.upload(pb.cpu_profile({"main.a": 2}, time_nanos=NOW * 10**9,
                                     duration_nanos=10**10, compress=False), service="raw")
    assert r.status == 201, r.body


def test_inlined_lines_become_frames(server):
    data = pb.build([(["main.main", "app.outer"], [4, 40_000_000])],
                    inline={"app.outer": ["app.inlined_leaf"]}, time_nanos=NOW * 10**9,
                    duration_nanos=10**10)
    assert server.upload(data, service="inl").status == 201
    j = top(server, "inl", "cpu")
    names = {f["name"]: f for f in j["functions"]}
    assert names["app.inlined_leaf"]["self_ns"] == 40_000_000
    assert names["app.outer"]["self_ns"] == 0 and names["app.outer"]["total_ns"] == 40_000_000


def test_cpu_and_wall_in_one_pprof_are_two_profiles(server):
    data = pb.build([(["main.a"], [3, 30_000_000, 50_000_000])],
                    sample_types=(("samples", "count"), ("cpu", "nanoseconds"),
                                  ("wall", "nanoseconds")),
                    time_nanos=NOW * 10**9, duration_nanos=10**10)
    r = server.upload(data, service="both")
    assert r.status == 201, r.body
    types = sorted(p["type"] for p in r.json()["profiles"])
    assert types == ["cpu", "wall"]
    assert top(server, "both", "cpu")["value_ns"] == 30_000_000
    assert top(server, "both", "wall")["value_ns"] == 50_000_000


def test_retried_upload_is_stored_once(server):
    data = pb.cpu_profile({"main.a": 5}, time_nanos=NOW * 10**9, duration_nanos=10**10)
    pid = "4f1c2d9e-0000-4000-8000-000000000001"
    first = server.upload(data, service="dup", profile_id=pid)
    again = server.upload(data, service="dup", profile_id=pid)
    assert first.status == 201 and again.status == 200
    assert again.json()["duplicate"] is True and again.json()["id"] == first.json()["id"]
    j = top(server, "dup", "cpu")
    assert j["profiles"] == 1 and j["samples"] == 5


def test_zero_sample_profile_is_coverage(server):
    data = pb.cpu_profile({}, time_nanos=NOW * 10**9, duration_nanos=60 * 10**9)
    r = server.upload(data, service="idle")
    assert r.status == 201, r.body
    j = top(server, "idle", "cpu", frm=NOW, to=NOW + 60)
    assert j["profiles"] == 1 and j["value_ns"] == 0
    assert j["capacity"]["vcpu_hours_per_month"] == 0
    assert j["capacity"]["inputs"]["profiled_s"] == 60


def test_ten_thousand_frame_stack_is_truncated(server):
    frames = ";".join(f"deep.f{i}" for i in range(10_000))
    r = server.upload(pb.cpu_profile({frames: 1}, time_nanos=NOW * 10**9,
                                     duration_nanos=10**10), service="deep")
    assert r.status == 201, r.body
    j = top(server, "deep", "cpu", limit=2000)
    names = {f["name"] for f in j["functions"]}
    assert "(truncated)" in names
    assert "deep.f9999" in names and "deep.f0" not in names
    assert len(names) == 1024
    assert j["quality"]["truncated_stacks"] == 1


def test_folded_with_start_and_duration(server):
    body = b"main;work;hot 30\nmain;work 10\n"
    r = server.upload(body, content_type="text/plain", service="fold", type="wall",
                      unit="samples", period_ns="20000000", start=str(NOW),
                      duration_s="60")
    assert r.status == 201, r.body
    j = top(server, "fold", "wall", frm=NOW, to=NOW + 60)
    assert j["value_ns"] == 40 * 20_000_000
    assert j["capacity"] is None and j["capacity_unavailable"]
    assert {f["name"]: f["self_ns"] for f in j["functions"]}["hot"] == 600_000_000


def test_observed_deploy_from_new_version(server):
    for i, v in enumerate(["1.0", "1.0", "1.1"]):
        r = server.upload(pb.cpu_profile({"main.a": 1}, time_nanos=(NOW + 60 * i) * 10**9,
                                         duration_nanos=60 * 10**9),
                          service="dep", version=v, instance="i-1")
        assert r.status == 201
    d = server.get("/api/v1/deploys", {"service": "dep"}).json()
    assert [(x["version"], x["source"]) for x in d] == [("1.0", "observed"), ("1.1", "observed")]
    assert d[1]["at"] == "2025-11-30T00:02:00Z"
    svcs = server.get("/api/v1/services").json()
    s = [x for x in svcs if x["name"] == "dep"][0]
    assert s["types"] == ["cpu"] and s["profiling_enabled"] is False
    assert s["instances"][0]["instance"] == "i-1" and s["instances"][0]["version"] == "1.1"


def test_unknown_start_is_the_arrival_and_long_durations_are_refused(server):
    import time
    before = time.time()
    r = server.upload(pb.cpu_profile({"main.a": 3}, duration_nanos=10 * 10**9), service="now")
    assert r.status == 201, r.body
    j = top(server, "now", "cpu", frm=int(before) - 20, to=int(time.time()) + 1)
    assert j["profiles"] == 1
    r = server.upload(pb.cpu_profile({"main.a": 3}, time_nanos=NOW * 10**9,
                                     duration_nanos=25 * 3600 * 10**9), service="long")
    assert r.status == 400 and "24 h" in r.json()["message"]
