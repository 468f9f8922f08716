"""A regression corpus of bug reports (issue #13): the smallest input rebuilt from reports filed
against other profilers, sent to the real server. Each case names its source (a repository
and an issue number, or RootTrace's own issue) and the right answer; the first five failed
on the code before issue #13 (two of them answered success and dropped data)."""
import gzip
import json
import subprocess

import pytest

import pprof_build as pb
from conftest import BIN

NOW = 1764460800  # 2025-11-30T00:00:00Z
S = 10**9
UUID = "11111111-1111-4111-8111-111111111111"


def folded(server, text, status=201, **params):
    params = {"type": "cpu", "period_ns": "10000000", "start": str(NOW), "duration_s": "10",
              **params}
    r = server.upload(text.encode() if isinstance(text, str) else text,
                      content_type="text/plain", **params)
    assert r.status == status, (r.status, r.body)
    return r.json()


def profile(server, service, typ="cpu", **params):
    r = server.get("/api/v1/profile", params={"service": service, "type": typ,
                                              "from": str(NOW - 60), "to": str(NOW + 60),
                                              **params})
    assert r.status == 200, r.body
    return r.json()


def names(answer):
    return sorted(f["name"] for f in answer["functions"])


# ---- RootTrace #13, 1; open-telemetry/opentelemetry-proto#652 (profile_id is optional) ----

def test_empty_profile_id_is_none(server):
    """An empty profile_id= was a real id shared across services: after the first upload,
    every later one got 200 duplicate and was thrown away. Right: each is stored (201)."""
    for s in ("a", "b", "c"):
        r = folded(server, "main;work 1\n", service=s, type="wall", profile_id="")
        assert r["duplicate"] is False
    for s in ("a", "b", "c"):
        assert profile(server, s, "wall")["profiles"] == 1
    folded(server, "main;work 1\n", service="b", type="wall", profile_id="")
    assert profile(server, "b", "wall")["profiles"] == 2  # still none: never a duplicate


# ---- RootTrace #13, 2; grafana/pyroscope#2483 (distinct profiles of one series deduped) ----

def test_dedup_is_per_service_and_instance(server):
    """Service B's upload with an id service A used was dropped, and its 200 gave B's own
    figures with A's id. Right: other services and instances store their own."""
    a = folded(server, "main;work 1\n", service="A", profile_id=UUID)
    b = folded(server, "main;work 5\n", service="B", profile_id=UUID)
    assert b["duplicate"] is False and b["id"] != a["id"]
    folded(server, "main;work 2\n", service="A", instance="other", profile_id=UUID)
    assert profile(server, "B")["value_ns"] == 50_000_000
    assert profile(server, "A")["profiles"] == 2


def test_a_retry_answers_what_is_stored(server):
    """The 200 of a retry said what the retry carried. Right: the stored profile's figures;
    a retry with other content is a 409 that says so, and stores nothing."""
    first = folded(server, "main;work 1\n", service="r", profile_id=UUID)
    again = folded(server, "main;work 1\n", service="r", profile_id=UUID, status=200)
    assert again["duplicate"] is True and again["id"] == first["id"]
    assert again["profiles"][0]["value_ns"] == 10_000_000
    other = folded(server, "main;work 5\n", service="r", profile_id=UUID, status=409)
    assert other["error"] == "conflict" and "other content" in other["message"]
    later = folded(server, "main;work 1\n", service="r", profile_id=UUID, start=str(NOW + 1),
                   status=409)
    assert "other content" in later["message"]
    ans = profile(server, "r")
    assert ans["profiles"] == 1 and ans["value_ns"] == 10_000_000


# ---- RootTrace #13, 3: brendangregg/FlameGraph's difffolded.pl writes two counts ----

def test_two_count_lines_are_difffolded(server):
    """"main;parse 5 6" is difffolded.pl's before 5, after 6; it was stored as a frame named
    "parse 5" with 6 samples. Right: main;parse with the after count, as flamegraph.pl and
    inferno draw it."""
    folded(server, "main;parse 5 6\n", service="tc")
    ans = profile(server, "tc")
    assert names(ans) == ["main", "parse"]
    assert ans["value_ns"] == 60_000_000


# ---- RootTrace #13, 3 (the writer); jonhoo/inferno#164 ("numbers at the end of a line
# confuse it", "I need to escape semicolons") ----

def test_folded_export_is_read_back_whole(server):
    """A frame whose name ends in a number ("ends with 77") was exported as is, and
    flamegraph.pl took the 77 as a count. Right: the folded writer writes what a reader would
    misread so that it reads back whole; exported text re-imported gives the same names."""
    data = pb.build([(["main", "ends with 77"], [3, 30_000_000]),
                     (["main", "a;b"], [2, 20_000_000])], time_nanos=NOW * S,
                    duration_nanos=10 * S)
    assert server.upload(data, service="wx").status == 201
    r = server.get("/api/v1/export", params={"service": "wx", "type": "cpu", "format": "folded",
                                             "from": str(NOW - 60), "to": str(NOW + 60)})
    assert r.status == 200, r.body
    text = r.body.decode()
    assert sorted(text.splitlines()) == ["main;a:b 20000000", "main;ends with_77 30000000"]
    folded(server, text, service="wx2", unit="nanoseconds")
    assert names(profile(server, "wx2")) == ["a:b", "ends with_77", "main"]


# ---- RootTrace #13, 4; boostorg/stacktrace#78 (a function name with a NUL in it) ----

def test_nul_in_pprof_names_keeps_functions_apart(server, tmp_path):
    """Three functions "nul\\0a", "nul\\0b" and "nul" showed as three rows all named "nul"
    (and exports merged them); a leading NUL gave an empty name. Right: one rule for control
    bytes in every name: each is written "\\xHH" at ingest, so every output shows them apart
    and none carries a NUL."""
    data = pb.build([(["main", "nul\x00a"], [1, 10_000_000]),
                     (["main", "nul\x00b"], [2, 20_000_000]),
                     (["main", "nul"], [3, 30_000_000]),
                     (["main", "\x00lead"], [4, 40_000_000]),
                     (["main", "tab\there"], [5, 50_000_000])], time_nanos=NOW * S,
                    duration_nanos=10 * S)
    assert server.upload(data, service="nul").status == 201
    want = ["\\x00lead", "main", "nul", "nul\\x00a", "nul\\x00b", "tab\\x09here"]
    assert names(profile(server, "nul")) == want
    common = {"service": "nul", "type": "cpu", "from": str(NOW - 60), "to": str(NOW + 60)}
    text = server.get("/api/v1/export", params={**common, "format": "folded"}).body.decode()
    assert "nul\\x00a" in text and "\x00" not in text and "\t" not in text
    speed = json.loads(server.get("/api/v1/export", params={**common,
                                                          "format": "speedscope"}).body)
    assert sorted(f["name"] for f in speed["shared"]["frames"]) == want
    pprof = server.get("/api/v1/export", params={**common, "format": "pprof"}).body
    assert b"nul\\x00a" in gzip.decompress(pprof)
    top = subprocess.run([BIN, "top", "--server", server.url, "--service", "nul", "--type", "cpu",
                          "--from", str(NOW - 60), "--to", str(NOW + 60)],
                         capture_output=True, text=True,
                         env={"ROOTTRACE_TOKEN": server.token})
    assert top.returncode == 0, top.stderr
    assert "nul\\x00b" in top.stdout and "\x00" not in top.stdout


# ---- RootTrace #13, 5; brendangregg/FlameGraph#92 ("[unknown]" frames of stackcollapse-perf) ----

@pytest.mark.parametrize("text", ["[0x7f3a] libc;work 3\n", "[[vdso]];clock_gettime 2\n",
                                  '{"k"};x 1\n', "[-1] x 1\n", '["s"] y 1\n'])
def test_text_plain_is_folded_whatever_it_starts_with(server, text):
    """A folded body whose first frame started with '[' and a digit, '[', '"', '-' or ']', or
    '{' and '"', got 415 "V8 .cpuprofile / JSON". Right: text/plain is folded text."""
    folded(server, text, service="sn")
    assert profile(server, "sn")["profiles"] >= 1


def test_undeclared_perf_brackets_are_folded_too(server):
    """Undeclared (application/octet-stream), only a real JSON object or array of objects is
    taken for JSON; stackcollapse-perf's bracketed frames are folded text."""
    r = server.upload(b"[[vdso]];clock_gettime 2\n", service="sn2", type="cpu",
                      period_ns="10000000", start=str(NOW), duration_s="10")
    assert r.status == 201, r.body
    r = server.upload(b'{"nodes": []}', service="sn2", type="cpu")
    assert r.status == 415 and "cpuprofile" in r.json()["message"]


# ---- brendangregg/FlameGraph#259 (stackcollapse-perf root frames such as
# "t_99076_10314749.002559:") and #324 (fractional counts) ----

def test_stackcollapse_root_frames_and_fractional_counts(server):
    """Odd root frames are names like any other; fractional counts are samples (flamegraph.pl
    showed 0 for them). Right: stored as written."""
    folded(server, "t_99076_10314749.002559:;[ld-2.17.so];_dl_map_object 1\n"
                   "foo;bar;baz 0.156\n", service="odd")
    ans = profile(server, "odd")
    assert "t_99076_10314749.002559:" in names(ans)
    assert ans["samples"] == pytest.approx(1.156)


# ---- decisions of issue #13 (docs/decisions.md) ----

def test_two_cpu_sample_types_are_refused(server):
    """A pprof declaring cpu/nanoseconds twice: the first was taken silently. Right: 422
    naming both, since which one is the profile's cannot be told."""
    data = pb.build([(["main", "a"], [1, 10, 20])],
                    sample_types=(("samples", "count"), ("cpu", "nanoseconds"),
                                  ("cpu", "nanoseconds")))
    r = server.upload(data, service="twice")
    assert r.status == 422 and "both cpu time" in r.json()["message"], r.body


def test_leap_second_and_future_issue(server):
    """A leap second (RFC 3339 allows 23:59:60) was refused; an issue starting in the future
    was accepted with an empty current window. Right: the leap second reads as 23:59:59.999
    999999 UTC; an issue more than 1 h ahead is a 400."""
    r = server.post("/api/v1/issues", body={"service": "s", "title": "leap",
                                            "started_at": "2016-12-31T23:59:60Z"})
    assert r.status == 201, r.body
    assert r.json()["started_at"] == "2016-12-31T23:59:59.999999999Z"
    r = server.post("/api/v1/issues", body={"service": "s", "title": "far",
                                            "started_at": "2099-01-01T00:00:00Z"})
    assert r.status == 400 and "future" in r.json()["message"], r.body


@pytest.mark.parametrize("bad", ["0x10", "1e3", " 5", "inf"])
def test_durations_are_decimal(server, bad):
    """duration_s= took "0x10" as 16 s and "1e3" as 1000 s (strtod). Right: 400."""
    r = server.upload(b"main;work 1\n", content_type="text/plain", service="d", type="cpu",
                      period_ns="10000000", start=str(NOW), duration_s=bad)
    assert r.status == 400 and "duration_s" in r.json()["message"], r.body


def test_empty_optional_parameters_are_absent(server):
    """Any optional parameter left empty means what leaving it out means: instance=,
    runtime=, limit=, type= on a query that needs one names the missing one."""
    folded(server, "main;work 1\n", service="e", instance="", runtime="", sdk_version="")
    r = server.get("/api/v1/profile", params={"service": "e", "type": "cpu", "limit": "",
                                              "from": str(NOW - 60), "to": str(NOW + 60)})
    assert r.status == 200 and r.json()["profiles"] == 1, r.body
    r = server.get("/api/v1/profile", params={"service": "e", "type": ""})
    assert r.status == 400 and "type" in r.json()["message"]
