"""The issue view (DESIGN §6, §7) through the API and the CLI: ranking by delta_pp,
significance, deploys, capacity on cpu and its refusal on wall, no-baseline answers."""
import json

import pytest

import pprof_build as pb
from conftest import cli

T = 1764460800  # issue start: 2025-11-30T00:00:00Z
S = 10**9


def upload_windows(server, service, base, cur, n=10, typ="cpu", instance="i-1"):
    """n gapless 60 s profiles before T with counts base, and n after T with counts cur."""
    build = pb.cpu_profile if typ == "cpu" else pb.wall_profile
    for k in range(n):
        for start, counts in ((T - 60 * (n - k), base), (T + 60 * k, cur)):
            r = server.upload(build(counts, time_nanos=start * S, duration_nanos=60 * S),
                              service=service, instance=instance)
            assert r.status == 201, r.body


def open_issue(server, service, title="slow checkout"):
    r = server.post("/api/v1/issues", body={"service": service, "title": title,
                                            "started_at": "2025-11-30T00:00:00Z"})
    assert r.status == 201, r.body
    return r.json()["id"]


@pytest.fixture
def cpu_issue(server):
    upload_windows(server, "shop", {"main;a": 50, "main;b": 50, "main;c": 3},
                   {"main;a": 75, "main;b": 25, "main;c": 3})
    r = server.post("/api/v1/deploys", body={"service": "shop", "version": "2.0",
                                             "at": T - 30})
    assert r.status == 201
    return open_issue(server, "shop")


def test_issue_diff_ranks_growth_with_exact_delta(server, cpu_issue):
    r = server.get(f"/api/v1/issues/{cpu_issue}/diff", {"window_s": 600})
    assert r.status == 200, r.body
    d = r.json()
    assert d["type"] == "cpu" and d["type_note"] == "excludes time spent waiting"
    assert d["baseline"]["from"] == "2025-11-29T23:50:00Z"
    assert d["current"]["to"] == "2025-11-30T00:10:00Z"
    assert d["window_s"] == 600
    assert d["baseline"]["profiles"] == 10 and d["current"]["samples"] == 1030
    top = d["functions"][0]
    assert top["name"] == "a"
    # a: 500/1030 of the baseline, 750/1030 of the current window.
    assert top["delta_pp"] == pytest.approx(100 * 250 / 1030, rel=1e-12)
    assert top["significant"] is True and top["new"] is False
    last = d["functions"][-1]
    assert last["name"] == "b" and last["delta_pp"] == pytest.approx(-100 * 250 / 1030)
    c = [f for f in d["functions"] if f["name"] == "c"][0]
    assert c["significant"] is False and c["delta_pp"] == 0
    assert [(x["version"], x["source"]) for x in d["deploys"]] == [("2.0", "declared")]
    cap = d["capacity"]
    # current: 10 gapless profiles of 1030 samples x 10 ms over 600 s (DESIGN §7).
    assert cap["vcpu_hours_per_month"]["cur"] == pytest.approx(730 * 10.3 / 600, rel=1e-9)
    assert cap["inputs"]["cur"]["cpu_s"] == pytest.approx(10.3)
    assert cap["inputs"]["cur"]["coverage"] == pytest.approx(1.0)
    assert top["vcpu_hours_per_month"]["cur"] == pytest.approx(730 * 7.5 / 600, rel=1e-9)
    assert top["vcpu_hours_per_month"]["base"] == pytest.approx(730 * 5.0 / 600, rel=1e-9)


def test_cli_diff_prints_ranking_and_capacity(server, cpu_issue):
    out = cli("diff", "--server", server.url, "--issue", cpu_issue, "--window", "10m").stdout
    lines = out.splitlines()
    header = [i for i, l in enumerate(lines) if l.lstrip().startswith("delta_pp")][0]
    assert lines[header + 1].split()[-1] == "a"
    assert "+24.27" in lines[header + 1]
    cap = [l for l in lines if l.startswith("Capacity:")][0]
    assert cap.count("12.53") == 2  # 730 * 10.3 / 600 in both windows (DESIGN §7)
    as_json = json.loads(cli("diff", "--server", server.url, "--issue", cpu_issue, "--window",
                             "10m", "--json").stdout)
    api = server.get(f"/api/v1/issues/{cpu_issue}/diff", {"window_s": 600}).json()
    assert as_json["functions"] == api["functions"]


def test_wall_capacity_is_refused_everywhere(server):
    upload_windows(server, "py", {"main;io": 10}, {"main;io": 30}, typ="wall")
    issue = open_issue(server, "py")
    d = server.get(f"/api/v1/issues/{issue}/diff", {"window_s": 600}).json()
    assert d["type"] == "wall" and d["capacity"] is None
    assert "wall" in d["capacity_unavailable"]
    assert all(f["vcpu_hours_per_month"] is None for f in d["functions"])
    p = server.get("/api/v1/profile", {"service": "py", "type": "wall", "from": T,
                                       "to": T + 600}).json()
    assert p["capacity"] is None and p["capacity_unavailable"]
    assert all(f["vcpu_hours_per_month"] is None for f in p["functions"])
    out = cli("top", "--server", server.url, "--service", "py", "--type", "wall", "--from",
              str(T), "--to", str(T + 600)).stdout
    assert "Capacity: not available:" in out
    j = json.loads(cli("top", "--server", server.url, "--service", "py", "--type", "wall",
                       "--from", str(T), "--to", str(T + 600), "--json").stdout)
    assert j["capacity"] is None


def test_no_baseline_data_is_said(server):
    for k in range(5):
        server.upload(pb.cpu_profile({"main;a": 10}, time_nanos=(T + 60 * k) * S,
                                     duration_nanos=60 * S), service="fresh")
    issue = open_issue(server, "fresh")
    d = server.get(f"/api/v1/issues/{issue}/diff", {"window_s": 300}).json()
    assert d["baseline"]["profiles"] == 0
    assert any("no baseline" in w for w in d["quality"]["warnings"])
    assert not any(f["significant"] for f in d["functions"])


def test_explicit_windows_and_version_filter(server):
    for k in range(5):
        server.upload(pb.cpu_profile({"main;a": 10, "main;b": 10}, time_nanos=(T + 60 * k) * S,
                                     duration_nanos=60 * S), service="v", version="1")
        server.upload(pb.cpu_profile({"main;a": 30, "main;b": 10},
                                     time_nanos=(T + 600 + 60 * k) * S,
                                     duration_nanos=60 * S), service="v", version="2")
    d = server.get("/api/v1/diff", {"service": "v", "type": "cpu", "base_from": T,
                                    "base_to": T + 300, "cur_from": T + 600,
                                    "cur_to": T + 900}).json()
    assert d["functions"][0]["name"] == "a"
    assert d["functions"][0]["delta_pp"] == pytest.approx(25.0)
    only_v1 = server.get("/api/v1/profile", {"service": "v", "type": "cpu", "from": T,
                                             "to": T + 900, "version": "1"}).json()
    assert only_v1["profiles"] == 5


def test_bad_query_parameters(server):
    assert server.get("/api/v1/profile", {"service": "x"}).status == 400
    assert server.get("/api/v1/profile", {"service": "x", "type": "heap"}).status == 400
    r = server.get("/api/v1/diff", {"service": "x", "type": "cpu", "at": T, "window_s": 10})
    assert r.status == 400 and "window_s" in r.json()["message"]
    assert server.get("/api/v1/issues/999/diff").status == 404
    assert server.get("/api/v1/nope").status == 404
    assert server.post("/api/v1/issues", body={"title": "x"}).status == 400
