"""GET /api/v1/export and `roottrace export`: a window as pprof, folded or speedscope, each
read back to the same functions and values."""
import json

import pprof_build as pb
from conftest import cli

T = 1764460800
S = 10**9


def fill(server):
    for k in range(3):
        r = server.upload(pb.cpu_profile({"main;api.get;db.query": 5 + k, "main;api.get": 2},
                                         time_nanos=(T + 60 * k) * S, duration_nanos=60 * S),
                          service="exp")
        assert r.status == 201


def functions(server, service, unit_window=(T, T + 180)):
    j = server.get("/api/v1/profile", {"service": service, "type": "cpu",
                                       "from": unit_window[0], "to": unit_window[1]}).json()
    return {f["name"]: (f["self_ns"], f["total_ns"]) for f in j["functions"]}


def test_pprof_export_round_trips(server):
    fill(server)
    r = server.get("/api/v1/export", {"service": "exp", "type": "cpu", "from": T, "to": T + 180,
                                      "format": "pprof"})
    assert r.status == 200 and r.body[:2] == b"\x1f\x8b"
    assert server.upload(r.body, service="back", start=str(T), duration_s="180").status == 201
    assert functions(server, "back") == functions(server, "exp")
    assert functions(server, "exp")["db.query"] == (180_000_000, 180_000_000)


def test_folded_export_round_trips(server):
    fill(server)
    r = server.get("/api/v1/export", {"service": "exp", "type": "cpu", "from": T, "to": T + 180,
                                      "format": "folded"})
    assert r.status == 200
    lines = sorted(r.body.decode().splitlines())
    assert lines == ["main;api.get 60000000", "main;api.get;db.query 180000000"]
    assert server.upload(r.body, content_type="text/plain", service="back2", type="cpu",
                         unit="nanoseconds", start=str(T), duration_s="180").status == 201
    assert functions(server, "back2") == functions(server, "exp")


def test_speedscope_export_via_cli(server, tmp_path):
    fill(server)
    out = tmp_path / "p.speedscope.json"
    cli("export", "--server", server.url, "--service", "exp", "--type", "cpu", "--from", str(T),
        "--to", str(T + 180), "--format", "speedscope", "--output", str(out))
    doc = json.loads(out.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    prof = doc["profiles"][0]
    assert prof["type"] == "sampled" and prof["unit"] == "nanoseconds"
    assert sum(prof["weights"]) == 240_000_000
    names = [f["name"] for f in doc["shared"]["frames"]]
    leaves = sorted(names[s[-1]] for s in prof["samples"])
    assert leaves == ["api.get", "db.query"]
