"""The encoder against every wire test vector of sdk/testdata, byte for byte."""
import gzip
import json
import os

import pytest

from pprof_decode import decode
from roottrace import encoder

VECTORS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "testdata", "vectors.json")
with open(VECTORS_PATH, encoding="utf-8") as f:
    VECTORS = json.load(f)["vectors"]


def encode_vector(v):
    return encoder.encode(v["type"], v["time_nanos"], v["duration_nanos"], v["period"],
                          [(s["stack"], s["count"], s["value_ns"]) for s in v["samples"]])


def test_there_are_vectors():
    assert len(VECTORS) >= 4


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_bytes_exact(v):
    assert encode_vector(v).hex() == v["pprof_hex"]


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_gzip_round_trip(v):
    raw = encode_vector(v)
    gz = encoder.compress(raw)
    assert gz[:2] == b"\x1f\x8b"
    assert gzip.decompress(gz) == raw
    p = decode(gz)
    assert p["sample_type"] == [("samples", "count"), (v["type"], "nanoseconds")]
    assert p["period_type"] == (v["type"], "nanoseconds")
    assert (p["time_nanos"], p["duration_nanos"], p["period"]) == (
        v["time_nanos"], v["duration_nanos"], v["period"])
    assert p["samples"] == [(s["stack"], s["count"], s["value_ns"]) for s in v["samples"]]


def test_large_values_and_deep_stack():
    stack = ["m.f%d" % i for i in range(256)]
    raw = encoder.encode("wall", 2 ** 63 - 1, 2 ** 40, 10 ** 7, [(stack, 2 ** 32, 2 ** 62)])
    p = decode(raw)
    assert p["samples"] == [(stack, 2 ** 32, 2 ** 62)]
    assert p["time_nanos"] == 2 ** 63 - 1


def test_same_frame_twice_in_a_stack_is_one_location():
    raw = encoder.encode("wall", 1, 1, 1, [(["m.a", "m.b", "m.a"], 1, 5)])
    assert decode(raw)["samples"] == [(["m.a", "m.b", "m.a"], 1, 5)]
    assert raw.count(b"m.a") == 1
