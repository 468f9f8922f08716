"""GET /api/v1/timeline: samples over time in one call. Each bucket must say what GET
/api/v1/profile says for that bucket's window (DESIGN §6 weighting), and the hand-computed
values for profiles that straddle bucket edges."""
import pytest

import pprof_build as pb

T = 1764460800  # 2025-11-30T00:00:00Z
S = 10**9


def iso(t):
    import datetime
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def upload(server, service, start, dur, counts, instance="i-1", typ="cpu"):
    build = pb.cpu_profile if typ == "cpu" else pb.wall_profile
    r = server.upload(build(counts, time_nanos=start * S, duration_nanos=dur * S),
                      service=service, instance=instance)
    assert r.status == 201, r.body


def timeline(server, service, lo, hi, n, typ="cpu", **extra):
    r = server.get("/api/v1/timeline", {"service": service, "type": typ, "from": lo, "to": hi,
                                        "buckets": n, **extra})
    assert r.status == 200, r.body
    return r.json()


def test_profiles_spread_over_buckets_by_overlap(server):
    # 60 s profiles with 120 samples (10 ms each): one starting at T (buckets [T, T+30) and
    # [T+30, T+60) get half each), one at T+45 (a quarter in [T+30, T+60), half in the next,
    # a quarter in [T+90, T+120)), and one of 40 samples on another instance over
    # [T+100, T+120), all in [T+90, T+120). The last bucket has none.
    upload(server, "tl", T, 60, {"main;a": 120})
    upload(server, "tl", T + 45, 60, {"main;a": 60, "main;b": 60})
    upload(server, "tl", T + 100, 20, {"main;b": 40}, instance="i-2")
    j = timeline(server, "tl", T, T + 150, 5)
    assert (j["service"], j["type"], j["from"], j["to"]) == ("tl", "cpu", iso(T), iso(T + 150))
    b = j["buckets"]
    assert [(x["from"], x["to"]) for x in b] == [(iso(T + 30 * k), iso(T + 30 * k + 30))
                                                 for k in range(5)]
    assert [x["profiles"] for x in b] == [1, 2, 1, 2, 0]
    want = [60, 60 + 30, 60, 30 + 40, 0]
    assert [x["samples"] for x in b] == pytest.approx(want, rel=1e-12)
    assert [x["value_ns"] for x in b] == pytest.approx([s * 10_000_000 for s in want], rel=1e-12)
    # The instance filter keeps i-2 alone.
    only = timeline(server, "tl", T, T + 150, 5, instance="i-2")["buckets"]
    assert [x["samples"] for x in only] == pytest.approx([0, 0, 0, 40, 0], rel=1e-12)


def test_each_bucket_is_what_profile_says_for_it(server):
    # Uneven, overlapping profiles on two instances; 7 buckets whose edges fall inside them.
    for k, (start, dur) in enumerate([(0, 60), (50, 30), (75, 61), (130, 10), (170, 45)]):
        upload(server, "cmp", T + start, dur, {"main;a": 13 * (k + 1), "main;x;b": 7 + k},
               instance=f"i-{k % 2}")
    lo, hi, n = T + 5, T + 205, 7
    j = timeline(server, "cmp", lo, hi, n)
    assert len(j["buckets"]) == n
    total = 0
    for x in j["buckets"]:
        p = server.get("/api/v1/profile", {"service": "cmp", "type": "cpu", "from": x["from"],
                                           "to": x["to"]})
        assert p.status == 200, p.body
        p = p.json()
        assert x["profiles"] == p["profiles"], (x, p["profiles"])
        assert x["samples"] == pytest.approx(p["samples"], rel=1e-9, abs=1e-9), x
        assert x["value_ns"] == pytest.approx(p["value_ns"], rel=1e-9, abs=1), x
        total += x["samples"]
    # The buckets tile [lo, hi): their sum is the whole range's.
    whole = server.get("/api/v1/profile", {"service": "cmp", "type": "cpu", "from": lo,
                                           "to": hi}).json()
    assert total == pytest.approx(whole["samples"], rel=1e-9)


def test_types_are_kept_apart_and_empty_buckets_are_zero(server):
    upload(server, "mix", T, 60, {"main;a": 100}, typ="wall")
    cpu = timeline(server, "mix", T - 60, T + 60, 2)["buckets"]
    assert [(x["profiles"], x["samples"], x["value_ns"]) for x in cpu] == [(0, 0, 0), (0, 0, 0)]
    wall = timeline(server, "mix", T - 60, T + 60, 2, typ="wall")["buckets"]
    assert [x["samples"] for x in wall] == [0, 100]


def test_odd_spans_tile_without_gaps(server):
    # 10 s in 3 buckets: the edges are whole nanoseconds, each bucket starts where the last
    # ended, and the last ends at `to`.
    j = timeline(server, "none", T, T + 10, 3)
    edges = [(x["from"], x["to"]) for x in j["buckets"]]
    assert edges[0][0] == iso(T) and edges[-1][1] == iso(T + 10)
    assert all(a[1] == b[0] for a, b in zip(edges, edges[1:]))
    # As many buckets as nanoseconds: each is 1 ns, and a profile covering them all is in
    # each (the review's case: with empty buckets the later ones missed it).
    upload(server, "ns", T, 1, {"main;a": 10})
    j = timeline(server, "ns", f"{iso(T)[:-1]}.000000000Z", f"{iso(T)[:-1]}.000000005Z", 5)
    assert [x["profiles"] for x in j["buckets"]] == [1] * 5
    assert [x["samples"] for x in j["buckets"]] == pytest.approx([1e-8] * 5, rel=1e-9)


@pytest.mark.parametrize("params,why", [
    ({"buckets": 0}, "buckets"),
    ({"buckets": 1001}, "buckets"),
    ({"buckets": "x"}, "buckets"),
    ({"from": T + 10, "to": T}, "before"),
    # 10 buckets in 5 ns would make empty ones, which /api/v1/profile refuses as windows
    ({"from": f"{iso(T)[:-1]}.000000000Z", "to": f"{iso(T)[:-1]}.000000005Z", "buckets": 10},
     "at least 1 ns"),
    ({"service": None}, "service"),
])
def test_bad_requests_say_why(server, params, why):
    q = {"service": "tl", "type": "cpu", "from": T, "to": T + 60, "buckets": 3, **params}
    r = server.get("/api/v1/timeline", {k: v for k, v in q.items() if v is not None})
    assert r.status == 400, r.body
    assert why in r.json()["message"], r.body
