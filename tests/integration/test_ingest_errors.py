"""POST /api/v1/profiles refusals (DESIGN §4): each malformed or oversized input gets a 4xx
that says why, the server keeps serving, and nothing is stored."""
import gzip
import os
import zlib

import pytest

import pprof_build as pb

NOW = 1764460800  # 2025-11-30T00:00:00Z, a fixed time for stored profiles


def stored(server):
    return server.metric("roottrace_store_profiles")


def refused(server, data, status, words, ctype="application/octet-stream", **params):
    before = stored(server)
    params.setdefault("service", "svc")
    r = server.upload(data, content_type=ctype, **params)
    assert r.status == status, (r.status, r.body)
    body = r.json()
    for w in words:
        assert w in body["message"].lower(), body
    assert server.get("/healthz").status == 200
    assert stored(server) == before
    return body


def test_empty_body(server):
    refused(server, b"", 400, ["empty"])


def test_pprof_without_sample_type(server):
    data = pb.build([(["main.a"], [])], sample_types=(), period_type=None)
    refused(server, data, 400, ["sample type"])


def test_truncated_gzip(server):
    data = pb.cpu_profile({"main.a": 5})
    refused(server, data[: len(data) // 2], 400, ["gzip"])


def test_gzip_bomb(server):
    # 300 MiB of zeros compress to ~300 KB; the decompressed limit is 256 MiB.
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    data = b"".join(comp.compress(chunk) for _ in range(300)) + comp.flush()
    assert len(data) < 16 << 20
    refused(server, data, 413, ["decompressed", "limit"])


def test_body_over_16_mib(server):
    refused(server, os.urandom(17 << 20), 413, ["limit"])


def test_bad_varint(server):
    # Field 1 (sample_type), length-delimited, whose length varint never ends.
    refused(server, gzip.compress(b"\x0a" + b"\xff" * 11), 400, ["varint"])


def test_string_index_out_of_range(server):
    raw = pb.build([(["main.a"], [1, 10])], compress=False)
    # Append a Function whose name points far past the string table.
    bad = raw + b"\x2a\x05\x08\x63\x10\xe7\x07"  # field 5: {id: 99, name: 999}
    refused(server, gzip.compress(bad), 400, ["string"])


def test_folded_line_without_count(server):
    refused(server, b"main;a;b 10\nmain;a;c\n", 400, ["line 2"], ctype="text/plain",
            type="cpu", unit="samples", period_ns="10000000")


def test_heap_profile_refused_naming_type(server):
    data = pb.build([(["main.a"], [3, 4096])],
                    sample_types=(("alloc_objects", "count"), ("alloc_space", "bytes")),
                    period_type=("space", "bytes"))
    refused(server, data, 422, ["alloc_space"])


def test_type_contradiction(server):
    refused(server, pb.cpu_profile({"main.a": 5}), 422, ["wall"], type="wall")


def test_legacy_pprof(server):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data",
                           "pprof", "legacy", "google-pprof__java.heap"), "rb") as f:
        body = refused(server, f.read(), 415, ["go tool pprof -proto"])
    assert body["error"] == "unsupported_format"


def test_missing_service(server):
    r = server.upload(pb.cpu_profile({"main.a": 1}))
    assert r.status == 400
    assert "service" in r.json()["message"]


def test_too_many_samples(server):
    # One folded line per sample stack: 10^6 + 1 distinct lines are over the limit.
    lines = b"".join(b"f%d 1\n" % i for i in range(1_000_001))
    refused(server, gzip.compress(lines), 413, ["10"], ctype="text/plain", type="cpu",
            unit="samples", period_ns="1000000")


@pytest.mark.parametrize("time_nanos", [(1 << 63) - 2, -(1 << 63) + 1])
def test_time_nanos_out_of_range(server, time_nanos):
    """A pprof's time_nanos near +-2^63 is refused; near 2^63 it overflowed the retention
    check, which stopped the sanitized server with a UBSan report (found while writing
    the fuzz_api_upload target; its input is in tests/fuzz/crashes/fuzz_api_upload/)."""
    data = pb.cpu_profile({"main;work": 3}, time_nanos=time_nanos,
                          duration_nanos=1_000_000_000)
    refused(server, data, 400, ["out of range"])


def test_versions_are_checked(server):
    """An upload's `version` is 1-200 bytes of UTF-8 without control characters (it becomes
    an observed deploy); '/' is allowed; an empty `version=` is no version."""
    data = pb.cpu_profile({"main;work": 3}, time_nanos=NOW * 10**9, duration_nanos=10**9)
    # a newline is refused with every query parameter (the transport's check), a tab here
    refused(server, data, 400, ["a version", "control characters"], version="a\tb")
    refused(server, data, 400, ["control characters"], version="a\nb")
    refused(server, data, 400, ["version"], version="v" * 201)
    r = server.upload(data, service="ver", version="release/2.1")
    assert r.status == 201, r.body
    r = server.upload(pb.cpu_profile({"main;work": 4}, time_nanos=(NOW + 1) * 10**9,
                                     duration_nanos=10**9), service="ver", version="")
    assert r.status == 201, r.body
    deploys = server.get("/api/v1/deploys", {"service": "ver", "from": NOW - 60,
                                             "to": NOW + 60}).json()
    assert [d["version"] for d in deploys] == ["release/2.1"], deploys
    # In a query, an empty filter filters nothing, as in an upload.
    q = {"service": "ver", "type": "cpu", "from": NOW - 60, "to": NOW + 60}
    for key in ("version", "instance"):
        assert server.get("/api/v1/profile", {**q, key: ""}).json()["samples"] == 7, key
        assert server.get("/api/v1/timeline", {**q, key: "", "buckets": 1}).json()[
            "buckets"][0]["samples"] == 7, key
    assert server.get("/api/v1/profile", {**q, "version": "release/2.1"}).json()["samples"] == 3
    # A declared deploy is checked the same way.
    r = server.post("/api/v1/deploys", body={"service": "ver", "version": "a\tb", "at": NOW})
    assert r.status == 400 and "version" in r.json()["message"], r.body
    r = server.post("/api/v1/deploys", body={"service": "ver", "version": "release/2.2",
                                             "at": NOW})
    assert r.status == 201, r.body


@pytest.mark.parametrize("params,words", [
    # one thread cannot run longer than the wall clock (10 s, plus 2 % and 50 ms of slack)
    ({"thread_cpu_ns": "10251000000"}, ["thread_cpu_ns 10251000000 exceeds", "wall clock"]),
    # nor a process longer than 1,024 CPUs can
    ({"process_cpu_ns": str(1024 * 10_250_000_000 + 1)}, ["process_cpu_ns", "1024 cpus"]),
    ({"thread_cpu_ns": "-1"}, ["thread_cpu_ns"]),
    ({"thread_cpu_ns": "12.5"}, ["thread_cpu_ns"]),
    ({"process_cpu_ns": "many"}, ["process_cpu_ns"]),
])
def test_os_cpu_figures_are_checked(server, params, words):
    """DESIGN §7's OS figures bound what capacity takes: a figure the kernel cannot have
    given is a 400 naming it, and nothing is stored (issue #12, bad input)."""
    data = pb.cpu_profile({"main;a": 10}, time_nanos=NOW * 10**9, duration_nanos=10 * 10**9)
    refused(server, data, 400, words, runtime="node", **params)


def test_os_cpu_figures_at_their_bounds_are_stored(server):
    data = pb.cpu_profile({"main;a": 10}, time_nanos=NOW * 10**9, duration_nanos=10 * 10**9)
    r = server.upload(data, service="svc", runtime="node", thread_cpu_ns="10250000000",
                      process_cpu_ns=str(1024 * 10_250_000_000))
    assert r.status == 201, r.body
