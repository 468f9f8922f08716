"""docs/openapi.yaml against the real server (DESIGN §11: "Keep docs/openapi.yaml as the full
description and test responses against it"). One server holds a cpu and a wall dataset, issues
and deploys; every route is called, error answers included (401 and 403 on every /api/v1/
route), and each JSON answer is validated against the schema the document gives for that
route and status, and its documented headers against theirs. The main answer objects are
`additionalProperties: false`, so a field the document does not describe fails here too.

This file checks the document itself and the query answers (uploads, profiles, diffs, issues,
deploys, services, export, health, the UI, unrouted paths); test_openapi_control.py the
authentication, keys, profiling switches, SDK config, audit and session routes, and that every
documented answer was exercised. openapi_check.py holds what both share."""
import gzip
import os
import re

import jsonschema
import pytest

pytest.register_assert_rewrite("openapi_check")

import openapi_check as oc  # noqa: E402
import pprof_build as pb  # noqa: E402
from conftest import shared  # noqa: E402
from openapi_check import (PUBLIC, PYROSCOPE, ROUTES, S, SCOPES, SPEC_PATH, T, deref,  # noqa: E402
                           validate, validator)

# DESIGN §11's field names: each must be a required property of the schema named here.
DESIGN_FIELDS = {
    "UploadResult": ["id", "service", "type", "samples"],
    "ProfileAnswer": ["service", "type", "type_note", "from", "to", "profiles", "samples",
                      "value_ns", "functions", "flamegraph", "capacity",
                      "capacity_unavailable", "cpu_agreement", "quality"],
    "ProfileFunction": ["name", "self_ns", "total_ns", "self_share", "total_share",
                        "vcpu_hours_per_month"],
    "DiffAnswer": ["service", "type", "type_note", "issue", "window_s", "baseline", "current",
                   "functions", "deploys", "capacity", "capacity_unavailable",
                   "cpu_agreement", "quality"],
    "DiffWindow": ["from", "to", "profiles", "samples", "value_ns"],
    "DiffFunction": ["name", "base_share", "cur_share", "delta_pp", "base_total_share",
                     "cur_total_share", "base_samples", "cur_samples", "significant", "new",
                     "vcpu_hours_per_month"],
    "DiffDeploy": ["version", "at", "source"],
    "Issue": ["id"],
    "Service": ["name", "profiling_enabled", "types", "last_upload", "instances"],
    "Instance": ["instance", "runtime", "sdk_version", "version", "status", "last_seen",
                 "stale"],
    "Capacity": ["vcpu_hours_per_month", "inputs"],
    "DiffCapacity": ["vcpu_hours_per_month", "inputs"],
    "BaseCur": ["base", "cur"],
    "CapacityInputs": ["cpu_s", "sampled_cpu_s", "os_cpu_s", "cpu_factor", "window_s",
                       "profiled_s", "alive_s", "coverage", "instances_alive",
                       "instances_profiled", "instances_unprofiled", "hours_per_month"],
    "CpuAgreement": ["sampled_cpu_s", "os_thread_cpu_s", "ratio", "warning"],
    "Error": ["error", "message"],
    "ProfilingState": ["name", "profiling_enabled", "config"],
    "SdkConfig": ["enabled", "type", "sampling_interval_us", "upload_interval_s",
                  "max_stack_depth", "poll_interval_s", "etag"],
    "KeyCreated": ["id", "scope", "service", "key", "created_at"],
    "AuditEntry": ["at", "actor", "action", "target", "detail"],
}


# The fixtures both halves share (module scope: one seeded server per file).
from openapi_check import _record, api, components, spec  # noqa: E402,F401


# ---- semantic checks the schema language cannot say (DESIGN §6, §7, §11) ----

def check_flame(fg, value_key, total):
    nodes = fg["nodes"]
    n = len(nodes["parent"])
    assert n >= 1 and all(len(col) == n for col in nodes.values()), "columns differ in length"
    assert nodes["parent"][0] == -1 and fg["names"][nodes["name"][0]] == "root"
    assert nodes[value_key][0] == total
    for i in range(1, n):
        p = nodes["parent"][i]
        assert 0 <= p < i, "preorder: a parent comes before its children"
        assert nodes["depth"][i] == nodes["depth"][p] + 1
    assert all(0 <= x < len(fg["names"]) for x in nodes["name"])


def check_profile_answer(p):
    fns = p["functions"]
    keys = [(-f["self_ns"], f["name"]) for f in fns]
    assert keys == sorted(keys), "functions by self_ns descending, ties by name"
    check_flame(p["flamegraph"], "total_ns", p["value_ns"])
    assert (p["capacity"] is None) != (p["capacity_unavailable"] is None)
    if p["type"] == "wall":
        assert p["capacity"] is None and "wall" in p["capacity_unavailable"]
        assert p["cpu_agreement"] is None
        assert all(f["vcpu_hours_per_month"] is None for f in fns)
    elif p["capacity"] is None:
        assert all(f["vcpu_hours_per_month"] is None for f in fns)
    else:
        inp = p["capacity"]["inputs"]
        assert inp["hours_per_month"] == 730
        check_capacity_instances(inp, p["capacity"]["vcpu_hours_per_month"])


def check_diff_answer(d):
    fns = d["functions"]
    keys = [(-f["delta_pp"], f["name"]) for f in fns]
    assert keys == sorted(keys), "functions by delta_pp descending, ties by name"
    for f in fns:
        assert f["delta_pp"] == pytest.approx(f["cur_share"] - f["base_share"], abs=1e-9)
    check_flame(d["flamegraph"], "cur_ns", d["current"]["value_ns"])
    assert d["flamegraph"]["nodes"]["base_ns"][0] == d["baseline"]["value_ns"]
    if d["type"] == "wall":
        assert d["capacity"] is None and "wall" in d["capacity_unavailable"]
        assert d["cpu_agreement"] is None
        assert all(f["vcpu_hours_per_month"] is None for f in fns)
    else:
        assert all(isinstance(f["vcpu_hours_per_month"], dict) for f in fns)
    if d["capacity"] is not None:
        for w in ("base", "cur"):
            check_capacity_instances(d["capacity"]["inputs"][w],
                                     d["capacity"]["vcpu_hours_per_month"][w])


def check_capacity_instances(inp, vcpu):
    """docs/internals/query.md: untruncated, the instances sum to the window's inputs and
    estimate; ordered by contribution, then alive_s; null contributions without an estimate."""
    inst = inp["instances"]
    if vcpu is None:
        assert all(i["vcpu_hours_per_month"] is None for i in inst)
    else:
        keys = [(-i["vcpu_hours_per_month"], -i["alive_s"]) for i in inst]
        assert keys == sorted(keys)
    if inp["instances_truncated"]:
        assert len(inst) == 100
        return
    for k in ("cpu_s", "profiled_s", "alive_s"):
        assert sum(i[k] for i in inst) == pytest.approx(inp[k], rel=1e-9, abs=1e-9), k
    if vcpu is not None:
        assert sum(i["vcpu_hours_per_month"] for i in inst) == pytest.approx(vcpu, rel=1e-9)


# ---- the document itself ----

def test_document_lists_exactly_the_servers_routes(spec):
    assert spec["openapi"] == "3.0.3"
    documented = {(m, p) for p, item in spec["paths"].items() for m in item
                  if m in ("get", "post", "put", "delete", "patch")}
    assert documented == ROUTES


def test_document_is_valid_openapi(spec):
    """A YAML slip (e.g. a comma in an unquoted flow-mapping description) can still load;
    the OpenAPI 3.0 validator catches it (scripts/install-deps.sh installs it: no skip)."""
    import openapi_spec_validator
    openapi_spec_validator.validate(spec)


def test_every_schema_compiles_and_every_ref_resolves(spec, components):
    for name, schema in components.items():
        jsonschema.Draft4Validator.check_schema(schema)
        # a $ref that points nowhere fails when the validator resolves it
        validator(spec["components"]["schemas"][name], components).is_valid({})
    text = open(SPEC_PATH).read()
    for ref in set(re.findall(r"\$ref: '([^']+)'", text)):
        assert deref(spec, {"$ref": ref}) is not None
    for p, item in spec["paths"].items():
        for m, op in item.items():
            for status, resp in op["responses"].items():
                resp = deref(spec, resp)
                assert resp["description"], (m, p, status)
                for media in resp.get("content", {}).values():
                    validator(media["schema"], components).is_valid(None)


def test_document_describes_authentication(spec):
    """bearerAuth on every /api/v1/ route (none on /healthz, /metrics), each operation's
    scope as the server's route table has it, and 401/403 documented everywhere."""
    assert spec["security"] == [{"bearerAuth": []}]
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        **spec["components"]["securitySchemes"]["bearerAuth"], "type": "http",
        "scheme": "bearer"}
    assert spec["components"]["securitySchemes"]["basicAuth"] == {
        **spec["components"]["securitySchemes"]["basicAuth"], "type": "http", "scheme": "basic"}
    for p, item in spec["paths"].items():
        for m, op in item.items():
            if p in PYROSCOPE:
                assert op["security"] == [{"bearerAuth": []}, {"basicAuth": []}], (m, p)
            elif not p.startswith("/api/v1/") or p in PUBLIC:
                assert op["security"] == [], (m, p)
                continue
            else:
                assert "security" not in op, (m, p)
            scope = SCOPES[(m, p)]
            assert op["x-roottrace-scope"] == scope, (m, p)
            assert f"**Scope:** `{scope}`" in op["description"], (m, p)
            assert {"401", "403"} <= set(op["responses"]), (m, p)


def test_design_field_names_are_required(spec):
    schemas = spec["components"]["schemas"]
    for name, fields in DESIGN_FIELDS.items():
        required = set(schemas[name].get("required", []))
        missing = [f for f in fields if f not in required]
        assert not missing, f"{name}: DESIGN §11 fields not required: {missing}"


def test_main_answers_refuse_undocumented_fields(spec):
    schemas = spec["components"]["schemas"]
    for name in ("UploadResult", "StoredProfile", "ProfileAnswer", "ProfileFunction",
                 "FlameGraph", "DiffFlameGraph", "DiffAnswer", "DiffFunction", "DiffWindow",
                 "Capacity", "DiffCapacity", "CapacityInputs", "CpuAgreement",
                 "DiffCpuAgreement", "ProfileQuality", "DiffQuality", "WindowQuality",
                 "Issue", "Deploy", "Service", "Instance", "Error", "Health",
                 "CapacityInstance", "ProfilingState", "ServiceConfigOverrides", "SdkConfig",
                 "KeyCreated", "Key", "KeyRevoked", "AuditEntry", "Session"):
        assert schemas[name].get("additionalProperties") is False, name
    for name in ("FlameGraph", "DiffFlameGraph"):
        assert schemas[name]["properties"]["nodes"]["additionalProperties"] is False


# ---- POST /api/v1/profiles ----

def test_upload_answers(api):
    P = "/api/v1/profiles"
    body = pb.cpu_profile({"main;a": 4}, time_nanos=(T - 7200) * S, duration_nanos=60 * S)
    first = api.upload(body, service="up", profile_id="6f1c0d9e-0000-4000-8000-000000000001")
    assert first["duplicate"] is False and first["type"] == "cpu" and first["samples"] == 4
    again = api.upload(body, status=200, service="up",
                       profile_id="6f1c0d9e-0000-4000-8000-000000000001")
    assert again["duplicate"] is True and again["id"] == first["id"]
    # a pprof with cpu and wall values: two profiles (DESIGN §2)
    both = pb.build([(["main", "a"], [2, 20_000_000, 50_000_000])],
                    sample_types=(("samples", "count"), ("cpu", "nanoseconds"),
                                  ("wall", "nanoseconds")),
                    time_nanos=(T - 7200) * S, duration_nanos=60 * S)
    two = api.upload(both, service="up2")
    assert sorted(x["type"] for x in two["profiles"]) == ["cpu", "wall"]
    # raw (not gzipped) pprof and folded samples
    api.upload(pb.cpu_profile({"main;a": 1}, compress=False), service="up", start=str(T - 7200),
               duration_s="60")
    api.upload(b"main;a 3\n", content_type="text/plain", service="up", type="wall",
               unit="samples", period_ns="20000000", start=str(T - 7200), duration_s="60")
    # refusals
    ok = pb.cpu_profile({"main;a": 1})
    api.error("post", P, 400, "invalid_argument", ["service"], body=ok,
              content_type="application/octet-stream")
    api.error("post", P, 400, "invalid_argument", ["type"], params={"service": "x",
              "type": "heap"}, body=ok, content_type="application/octet-stream")
    api.error("post", P, 400, "malformed", ["empty"], params={"service": "x"}, body=b"",
              content_type="application/octet-stream")
    api.error("post", P, 400, "malformed", ["line 2"], params={"service": "x", "type": "cpu",
              "period_ns": "1000"}, body=b"a;b 1\na;c\n", content_type="text/plain")
    api.error("post", P, 413, "too_large", ["limit"], params={"service": "x"},
              body=os.urandom(17 << 20), content_type="application/octet-stream")
    with open(shared("pprof", "legacy", "google-pprof__java.heap"), "rb") as f:
        legacy = f.read()
    api.error("post", P, 415, "unsupported_format", ["go tool pprof -proto"],
              params={"service": "x"}, body=legacy, content_type="application/octet-stream")
    heap = pb.build([(["main.a"], [3, 4096])],
                    sample_types=(("alloc_objects", "count"), ("alloc_space", "bytes")),
                    period_type=("space", "bytes"))
    api.error("post", P, 422, "unsupported_type", ["alloc_space"], params={"service": "x"},
              body=heap, content_type="application/octet-stream")
    api.error("post", P, 422, "unsupported_type", ["wall"],
              params={"service": "x", "type": "wall"}, body=ok,
              content_type="application/octet-stream")


# ---- GET /api/v1/profile ----

def test_profile_answers(api):
    P = "/api/v1/profile"
    cpu = api.call("get", P, 200, params={"service": "shop", "type": "cpu", "from": T,
                                          "to": T + 600}).json()
    check_profile_answer(cpu)
    assert cpu["type_note"] == "excludes time spent waiting"
    assert cpu["capacity"]["vcpu_hours_per_month"] == pytest.approx(730 * 10.3 / 600)
    assert cpu["cpu_agreement"]["os_cpu_s"] == pytest.approx(8.0)
    assert cpu["cpu_agreement"]["os_thread_cpu_s"] is None  # the process's figure
    assert cpu["cpu_agreement"]["warning"]  # 10.3 s sampled against 8 s
    assert cpu["capacity"]["inputs"]["unattributed_cpu_s"] == 0
    assert cpu["cpu_agreement"]["capacity_uses"] == "sampled"
    assert cpu["capacity"]["inputs"]["cpu_basis"] == "samples"
    # Node: each 60 s profile sampled 1.03 s and the kernel accounted 0.5 s to the main thread
    node = api.call("get", P, 200, params={"service": "node", "type": "cpu", "from": T - 180,
                                           "to": T + 180}).json()
    check_profile_answer(node)
    assert node["capacity"]["vcpu_hours_per_month"] == pytest.approx(730 * 3.0 / 360)
    inputs = node["capacity"]["inputs"]
    assert inputs["cpu_basis"] == "os" and inputs["profiles_scaled"] == 6
    assert inputs["sampled_cpu_s"] == pytest.approx(6 * 1.03)
    assert inputs["os_cpu_s"] == pytest.approx(3.0)
    assert inputs["cpu_factor"] == pytest.approx(0.5 / 1.03)
    assert node["cpu_agreement"]["capacity_uses"] == "os"
    assert node["cpu_agreement"]["os_thread_cpu_s"] == pytest.approx(3.0)
    assert node["cpu_agreement"]["scope"] == "main JS thread"
    # the functions' figures are scaled with their profiles: they sum to the service's
    assert sum(f["vcpu_hours_per_month"] for f in node["functions"]) == pytest.approx(
        node["capacity"]["vcpu_hours_per_month"])
    assert [f["name"] for f in node["functions"]][:2] == ["a", "b"]
    # Go: 1 s sampled, 1.5 s by the process, per profile: 0.5 s each unattributed
    ext = api.call("get", P, 200, params={"service": "goext", "type": "cpu", "from": T - 120,
                                          "to": T + 120}).json()
    check_profile_answer(ext)
    assert ext["capacity"]["inputs"]["cpu_s"] == pytest.approx(6.0)
    assert ext["capacity"]["inputs"]["unattributed_cpu_s"] == pytest.approx(2.0)
    assert ext["capacity"]["vcpu_hours_per_month"] == pytest.approx(730 * 6.0 / 240)
    assert ext["functions"][0]["vcpu_hours_per_month"] == pytest.approx(730 * 4.0 / 240)
    wall = api.call("get", P, 200, params={"service": "py", "type": "wall", "from": T - 600,
                                           "to": T + 600}).json()
    check_profile_answer(wall)
    assert wall["type_note"] == "includes time blocked on I/O and locks"
    cut = api.call("get", P, 200, params={"service": "shop", "type": "cpu", "from": T,
                                          "to": T + 600, "limit": 1}).json()
    assert len(cut["functions"]) == 1 and cut["truncated"] is True
    empty = api.call("get", P, 200, params={"service": "shop", "type": "cpu",
                                            "from": T + 86400, "to": T + 86460}).json()
    check_profile_answer(empty)
    assert empty["profiles"] == 0 and empty["capacity"] is None
    assert empty["quality"]["coverage"] is None and empty["quality"]["has_data"] is False
    default = api.call("get", P, 200, params={"service": "shop", "type": "cpu"}).json()
    assert default["profiles"] == 0  # the last hour (docs/decisions.md)
    api.error("get", P, 400, "invalid_argument", ["type"], params={"service": "shop"})
    api.error("get", P, 400, "invalid_argument", ["service"], params={"type": "cpu"})
    api.error("get", P, 400, "invalid_argument", ["from"],
              params={"service": "shop", "type": "cpu", "from": T, "to": T})
    api.error("get", P, 400, "invalid_argument", ["limit"],
              params={"service": "shop", "type": "cpu", "limit": 0})


def test_timeline_answers(api):
    P = "/api/v1/timeline"
    j = api.call("get", P, 200, params={"service": "shop", "type": "cpu", "from": T,
                                        "to": T + 600, "buckets": 4}).json()
    assert len(j["buckets"]) == 4
    whole = api.call("get", "/api/v1/profile", 200, params={"service": "shop", "type": "cpu",
                                                            "from": T, "to": T + 600}).json()
    assert sum(b["samples"] for b in j["buckets"]) == pytest.approx(whole["samples"])
    empty = api.call("get", P, 200, params={"service": "shop", "type": "cpu",
                                            "from": T + 86400, "to": T + 86460}).json()
    assert len(empty["buckets"]) == 30 and all(b["profiles"] == 0 for b in empty["buckets"])
    api.error("get", P, 400, "invalid_argument", ["type"], params={"service": "shop"})
    api.error("get", P, 400, "invalid_argument", ["buckets"],
              params={"service": "shop", "type": "cpu", "buckets": 1001})


# ---- GET /api/v1/diff ----

def test_diff_answers(api):
    P = "/api/v1/diff"
    d = api.call("get", P, 200, params={"service": "shop", "type": "cpu",
                                        "base_from": T - 600, "base_to": T, "cur_from": T,
                                        "cur_to": T + 600}).json()
    check_diff_answer(d)
    assert d["issue"] is None and d["functions"][0]["name"] == "a"
    assert d["functions"][0]["significant"] is True
    assert d["capacity"]["vcpu_hours_per_month"]["cur"] == pytest.approx(730 * 10.3 / 600)
    assert d["cpu_agreement"]["baseline"] is None and d["cpu_agreement"]["current"]
    at = api.call("get", P, 200, params={"service": "shop", "type": "cpu", "at": T,
                                         "window_s": "10m"}).json()
    check_diff_answer(at)
    assert at["window_s"] == 600 and at["current"]["from"] == "2025-11-30T00:00:00Z"
    wall = api.call("get", P, 200, params={"service": "py", "type": "wall", "at": T,
                                           "window_s": 600}).json()
    check_diff_answer(wall)
    nocounts = api.call("get", P, 200, params={"service": "fold", "type": "cpu", "at": T,
                                               "window_s": 240}).json()
    check_diff_answer(nocounts)
    assert nocounts["significance_unavailable"]
    assert all(f["significant"] is None for f in nocounts["functions"])
    # no baseline: capacity for the current window only, with the baseline's reason
    fresh = api.call("get", P, 200, params={"service": "shop", "type": "cpu",
                                            "base_from": T - 86400, "base_to": T - 86340,
                                            "cur_from": T, "cur_to": T + 60}).json()
    check_diff_answer(fresh)
    assert fresh["baseline_missing"] is True
    assert fresh["capacity"]["vcpu_hours_per_month"]["base"] is None
    assert fresh["capacity_unavailable"].startswith("baseline:")
    version = api.call("get", P, 200, params={
        "service": "shop", "type": "cpu", "base_from": T - 600, "base_to": T + 600,
        "cur_from": T - 600, "cur_to": T + 600, "base_version": "1.0", "cur_version": "2.0",
        "limit": 2}).json()
    assert version["baseline"]["profiles"] == 10 and version["truncated"] is True
    api.error("get", P, 400, "invalid_argument", ["window_s"],
              params={"service": "shop", "type": "cpu", "at": T, "window_s": 10})
    api.error("get", P, 400, "invalid_argument", ["base_from"],
              params={"service": "shop", "type": "cpu"})
    api.error("get", P, 400, "invalid_argument", ["before"],
              params={"service": "shop", "type": "cpu", "base_from": T, "base_to": T,
                      "cur_from": T, "cur_to": T + 60})
    api.error("get", P, 400, "invalid_argument", ["at"],
              params={"service": "shop", "type": "cpu", "at": "yesterday"})


# ---- issues ----

def test_issue_answers(api):
    iss = api.cpu_issue
    assert iss["started_at"] == "2025-11-30T00:00:00Z"  # +01:00 in, UTC out (§11)
    one = api.call("get", "/api/v1/issues/{id}", 200, {"id": iss["id"]}).json()
    assert one == iss
    all_ = api.call("get", "/api/v1/issues", 200).json()
    assert {i["id"] for i in all_} >= {api.cpu_issue["id"], api.wall_issue["id"]}
    py = api.call("get", "/api/v1/issues", 200, params={"service": "py"}).json()
    assert [i["id"] for i in py] == [api.wall_issue["id"]]
    api.error("get", "/api/v1/issues/{id}", 404, "not_found", ["999999"], {"id": 999999})
    api.error("post", "/api/v1/issues", 400, "invalid_argument", ["service"],
              body={"title": "no service", "started_at": T})
    api.error("post", "/api/v1/issues", 400, "invalid_argument", ["started_at"],
              body={"service": "shop", "started_at": "soon"})
    api.error("post", "/api/v1/issues", 400, "malformed", ["json"], body=b"{not json",
              content_type="application/json")


def test_issue_diff_answers(api):
    P = "/api/v1/issues/{id}/diff"
    d = api.call("get", P, 200, {"id": api.cpu_issue["id"]}, {"window_s": 600}).json()
    check_diff_answer(d)
    assert d["issue"] == api.cpu_issue and d["type"] == "cpu"
    assert d["baseline"]["from"] == "2025-11-29T23:50:00Z"
    # deploys of [baseline.from, current.to), by time: 1.0 first seen at T - 600 s (§6)
    assert [(x["version"], x["source"], x["at"]) for x in d["deploys"]] == [
        ("1.0", "observed", "2025-11-29T23:50:00Z"), ("2.0", "declared", "2025-11-29T23:59:30Z"),
        ("2.0", "observed", "2025-11-30T00:00:00Z")]
    w = api.call("get", P, 200, {"id": api.wall_issue["id"]}, {"window_s": 600}).json()
    check_diff_answer(w)
    assert w["type"] == "wall"  # default type: the service has only wall profiles
    api.call("get", P, 200, {"id": api.wall_issue["id"]}, {"window_s": 600, "type": "cpu"})
    api.error("get", P, 404, "not_found", [], {"id": 999999})
    api.error("get", P, 400, "invalid_argument", ["type"], {"id": api.cpu_issue["id"]},
              {"type": "heap"})
    api.error("get", P, 400, "invalid_argument", ["window_s"], {"id": api.cpu_issue["id"]},
              {"window_s": 86401})


# ---- deploys and services ----

def test_deploy_answers(api):
    assert api.deploy == {"service": "shop", "version": "2.0", "at": "2025-11-29T23:59:30Z",
                          "source": "declared"}
    now = api.call("post", "/api/v1/deploys", 201,
                   body={"service": "later", "version": "0.1"}).json()
    assert now["source"] == "declared"
    listed = api.call("get", "/api/v1/deploys", 200,
                      params={"service": "shop", "from": T - 3600, "to": T + 3600}).json()
    assert [(x["version"], x["source"]) for x in listed] == [
        ("1.0", "observed"), ("2.0", "declared"), ("2.0", "observed")]
    api.call("get", "/api/v1/deploys", 200)
    api.error("post", "/api/v1/deploys", 400, "invalid_argument", ["version"],
              body={"service": "shop"})
    api.error("post", "/api/v1/deploys", 400, "invalid_argument", ["at"],
              body={"service": "shop", "version": "3", "at": "later"})
    api.error("post", "/api/v1/deploys", 400, "malformed", [], body=b"[1, 2]",
              content_type="application/json")
    api.error("get", "/api/v1/deploys", 400, "invalid_argument", ["from"],
              params={"from": "last week"})


def test_services_answer(api):
    svcs = {s["name"]: s for s in api.call("get", "/api/v1/services", 200).json()}
    assert svcs["shop"]["types"] == ["cpu"] and svcs["py"]["types"] == ["wall"]
    assert sorted(svcs["up2"]["types"]) == ["cpu", "wall"]
    inst = svcs["shop"]["instances"][0]
    assert inst["instance"] == "i-1" and inst["runtime"] == "go" and inst["version"] == "2.0"
    assert svcs["shop"]["profiling_enabled"] is False  # off until an operator turns it on (§5)


# ---- export, health, metrics ----

def test_export_answers(api):
    P = "/api/v1/export"
    q = {"service": "shop", "type": "cpu", "from": T, "to": T + 600}
    r = api.call("get", P, 200, params={**q, "format": "pprof"})
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert gzip.decompress(r.body)
    r = api.call("get", P, 200, params={**q, "format": "folded"})
    assert r.headers["Content-Type"].startswith("text/plain")
    assert sorted(r.body.decode().split()) == sorted(
        ["main;a", "7500000000", "main;b", "2500000000", "main;c", "300000000"])
    r = api.call("get", P, 200, params={**q, "format": "speedscope"})
    assert sum(r.json()["profiles"][0]["weights"]) == 10_300_000_000
    api.call("get", P, 200, params={"service": "py", "type": "wall"})  # default: pprof
    api.error("get", P, 400, "invalid_argument", ["format"], params={**q, "format": "svg"})
    api.error("get", P, 400, "invalid_argument", ["type"], params={"service": "shop"})


def test_health_and_metrics(api):
    assert api.call("get", "/healthz", 200).json() == {"status": "ok"}
    text = api.call("get", "/metrics", 200).body.decode()
    assert re.search(r"^roottrace_uploads_total \d+$", text, re.M)


# ---- answers that changed with the query engine: samples without counts, huge sums ----

def test_answers_without_sample_counts(api):
    """Folded values in ns carry no sample counts: `samples` is null (not 0), and the diff
    says why in `significance_unavailable` and `quality.warnings` (docs/internals/query.md)."""
    p = api.call("get", "/api/v1/profile", 200, params={"service": "fold", "type": "cpu",
                                                         "from": T - 240, "to": T + 240}).json()
    check_profile_answer(p)
    assert p["profiles"] == 8 and p["samples"] is None and p["value_ns"] == 24_000_000
    d = api.call("get", "/api/v1/diff", 200, params={"service": "fold", "type": "cpu",
                                                      "at": T, "window_s": 240}).json()
    check_diff_answer(d)
    assert d["baseline"]["samples"] is None and d["current"]["samples"] is None
    assert any("carries sample counts" in w for w in d["quality"]["warnings"])
    empty = api.call("get", "/api/v1/profile", 200, params={
        "service": "fold", "type": "cpu", "from": T + 86400, "to": T + 86460}).json()
    assert empty["samples"] == 0  # an empty window keeps 0


def test_ns_sums_past_int64_are_integral_reals(api):
    """Two profiles at the 2^62 ns limit sum to 2^63: written as a JSON real with an integral
    value, which the document's `number` + `multipleOf: 1` admits (conventions)."""
    big = 1 << 62
    for k in range(2):
        api.upload(f"main;x {big}\n".encode(), content_type="text/plain", service="huge",
                   type="cpu", unit="nanoseconds", start=str(T + 60 * k), duration_s="60")
    p = api.call("get", "/api/v1/profile", 200, params={"service": "huge", "type": "cpu",
                                                         "from": T, "to": T + 120}).json()
    assert isinstance(p["value_ns"], float) and p["value_ns"] == pytest.approx(2.0 ** 63)
    assert p["functions"][0]["self_ns"] == pytest.approx(2.0 ** 63)
    d = api.call("get", "/api/v1/diff", 200, params={
        "service": "huge", "type": "cpu", "base_from": T, "base_to": T + 60, "cur_from": T,
        "cur_to": T + 120}).json()
    assert isinstance(d["current"]["value_ns"], float)
    assert isinstance(d["baseline"]["value_ns"], int) and d["baseline"]["value_ns"] == big


# ---- the web UI and unrouted answers ----

def test_web_ui_answer(api):
    r = api.call("get", "/", 200, token="")
    assert b"<html" in r.body


def test_unrouted_answers_are_errors(api, components, spec):
    """Outside the document's routes: 404 for an unknown path, 405 for a known path with
    another method, both as `Error` (DESIGN §11)."""
    err = spec["components"]["schemas"]["Error"]
    for method, path, status, code in (("GET", "/api/v1/nope", 404, "not_found"),
                                       ("GET", "/api/v1/issues/abc", 404, "not_found"),
                                       ("GET", "/api/v1/profiles", 405, "method_not_allowed"),
                                       ("DELETE", "/api/v1/issues/1", 405,
                                        "method_not_allowed")):
        r = api.server.request(method, path)
        assert r.status == status, (method, path, r.status)
        validate(err, components, r.json(), f"{method} {path}")
        assert r.json()["error"] == code
