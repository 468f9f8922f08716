"""The SDK wire test vectors (sdk/testdata/vectors.json): the canonical pprof bytes every
SDK encoder must produce decode on the server to exactly the vector's stacks and values."""
import gzip
import json
import os

import pytest

from conftest import REPO

VECTORS = json.load(open(os.path.join(REPO, "sdk", "testdata", "vectors.json"),
                         encoding="utf-8"))["vectors"]


def expected_functions(v):
    self_ns, total_ns = {}, {}
    for smp in v["samples"]:
        leaf = smp["stack"][-1]
        self_ns[leaf] = self_ns.get(leaf, 0) + smp["value_ns"]
        for f in set(smp["stack"]):
            total_ns[f] = total_ns.get(f, 0) + smp["value_ns"]
    return {f: (self_ns.get(f, 0), total_ns[f]) for f in total_ns}


@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_decodes_to_its_stacks(server, v):
    body = gzip.compress(bytes.fromhex(v["pprof_hex"]))
    r = server.upload(body, service="vec", profile_id=f"vector-{v['name']}")
    assert r.status == 201, r.body
    assert r.json()["type"] == v["type"]
    assert r.json()["samples"] == sum(s["count"] for s in v["samples"])
    start = v["time_nanos"] / 1e9
    p = server.get("/api/v1/profile", {"service": "vec", "type": v["type"],
                                       "from": f"{start:.9f}",
                                       "to": f"{start + v['duration_nanos'] / 1e9:.9f}"}).json()
    assert p["profiles"] == 1
    assert p["value_ns"] == sum(s["value_ns"] for s in v["samples"])
    got = {f["name"]: (f["self_ns"], f["total_ns"]) for f in p["functions"]}
    assert got == expected_functions(v)
