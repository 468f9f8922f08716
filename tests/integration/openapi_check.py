"""What test_openapi.py and test_openapi_control.py share: the server's routes and their
scopes, docs/openapi.yaml as JSON Schema, `Api` (calls a route and validates the answer against
the document), the server both files query, and the record of which documented answers were
exercised and which tests ran (test_openapi_control.py's last test checks them)."""
import copy
import os

import jsonschema
import pytest
import yaml

import pprof_build as pb
from conftest import REPO, Server

T = 1764460800  # 2025-11-30T00:00:00Z: the issues' start
S = 10**9
SPEC_PATH = os.path.join(REPO, "docs", "openapi.yaml")

# Every route the server has (server/src/http/api.c, server.c), as the document names them.
ROUTES = {
    ("post", "/api/v1/profiles"), ("get", "/api/v1/profile"), ("get", "/api/v1/timeline"),
    ("get", "/api/v1/diff"), ("post", "/api/v1/issues"), ("get", "/api/v1/issues"), ("get", "/api/v1/issues/{id}"),
    ("get", "/api/v1/issues/{id}/diff"), ("post", "/api/v1/deploys"),
    ("get", "/api/v1/deploys"), ("get", "/api/v1/services"), ("get", "/api/v1/export"),
    ("put", "/api/v1/services/{name}/profiling"), ("get", "/api/v1/sdk/config"),
    ("post", "/api/v1/keys"), ("get", "/api/v1/keys"), ("delete", "/api/v1/keys/{id}"),
    ("get", "/api/v1/audit"), ("get", "/healthz"), ("get", "/metrics"),
    ("post", "/api/v1/session"), ("get", "/api/v1/session"), ("delete", "/api/v1/session"),
    ("get", "/"), ("post", "/ingest"), ("post", "/push.v1.PusherService/Push"),
    ("patch", "/api/v1/issues/{id}"), ("post", "/api/v1/alerts/alertmanager"),
    ("post", "/api/v1/alerts/grafana"),
}
# Pyroscope's routes (DESIGN §12): outside /api/v1/, with Bearer or Basic.
PYROSCOPE = {"/ingest", "/push.v1.PusherService/Push"}
# /api/v1/ routes that take no key (the UI's sign-in: the key is in the body, or the cookie).
PUBLIC = {"/api/v1/session"}
# The scope each /api/v1/ route needs (server/src/http/api.c `routes[]`); the document says it
# in `x-roottrace-scope`, and test_scopes_are_enforced_as_documented checks the server.
SCOPES = {
    ("post", "/api/v1/profiles"): "ingest", ("get", "/api/v1/sdk/config"): "ingest",
    ("get", "/api/v1/profile"): "read", ("get", "/api/v1/timeline"): "read",
    ("get", "/api/v1/diff"): "read",
    ("get", "/api/v1/export"): "read", ("get", "/api/v1/issues"): "read",
    ("post", "/api/v1/issues"): "admin", ("get", "/api/v1/issues/{id}"): "read",
    ("get", "/api/v1/issues/{id}/diff"): "read", ("get", "/api/v1/deploys"): "read",
    ("post", "/api/v1/deploys"): "admin", ("get", "/api/v1/services"): "read",
    ("put", "/api/v1/services/{name}/profiling"): "admin", ("get", "/api/v1/keys"): "admin",
    ("post", "/api/v1/keys"): "admin", ("delete", "/api/v1/keys/{id}"): "admin",
    ("get", "/api/v1/audit"): "read",
    ("post", "/ingest"): "ingest", ("post", "/push.v1.PusherService/Push"): "ingest",
    ("patch", "/api/v1/issues/{id}"): "admin", ("post", "/api/v1/alerts/alertmanager"): "ingest",
    ("post", "/api/v1/alerts/grafana"): "ingest",
}
# Path arguments that reach each templated route's handler.
PATH_ARGS = {"id": 1, "name": "nobody"}
# Documented answers this test cannot provoke on a healthy machine.
NOT_PROVOKED = {("post", "/api/v1/profiles", "507"),  # needs a nearly full disk
                # needs 128 MiB of large bodies in flight at once: test_hostile_load.py
                ("post", "/api/v1/profiles", "503"),
                # needs the store down: tests/cluster kills a ClickHouse replica and checks
                # this answer against the document
                ("get", "/healthz", "503"),
                # needs 10,000 notifications queued behind the store at once: the bound is
                # tests/unit/control/test_control.c (test_alert_queue_bound)
                ("post", "/api/v1/alerts/alertmanager", "503")}

# ---- the document as JSON Schema ----

_SUBSCHEMA = ("items", "additionalProperties", "not")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_OAS_ONLY = ("nullable", "example", "discriminator", "readOnly", "writeOnly", "xml",
             "externalDocs", "deprecated")


def to_json_schema(node):
    """An OpenAPI 3.0 Schema Object as JSON Schema (draft 4): `nullable: true` becomes a type
    list with "null" (or an `anyOf` with {"type": "null"} where there is no `type`)."""
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in _OAS_ONLY:
            continue
        if k == "properties":
            out[k] = {name: to_json_schema(sub) for name, sub in v.items()}
        elif k in _SUBSCHEMA:
            out[k] = to_json_schema(v)
        elif k in _SUBSCHEMA_LISTS:
            out[k] = [to_json_schema(x) for x in v]
        else:
            out[k] = copy.deepcopy(v)
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def load_spec():
    with open(SPEC_PATH) as f:
        return yaml.safe_load(f)


def json_schemas(spec):
    """The document's components, each as JSON Schema, by name."""
    return {name: to_json_schema(s) for name, s in spec["components"]["schemas"].items()}


def deref(spec, obj):
    """Follows a local $ref of the document (responses, parameters)."""
    while isinstance(obj, dict) and "$ref" in obj:
        node = spec
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def validator(schema, components):
    root = {"allOf": [to_json_schema(schema)], "components": {"schemas": components}}
    return jsonschema.Draft4Validator(root)


def validate(schema, components, instance, where):
    errors = sorted(validator(schema, components).iter_errors(instance),
                    key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{where}: {len(errors)} schema error(s)"]
        for e in errors[:10]:
            path = "/".join(str(p) for p in e.absolute_path) or "(root)"
            lines.append(f"  at {path}: {e.message[:300]}")
        pytest.fail("\n".join(lines))


# ---- calling the server and checking each answer against the document ----

SEEN = set()  # (method, path template, status) answered and validated


class Api:
    def __init__(self, server, spec, components):
        self.server, self.spec, self.components = server, spec, components

    def call(self, method, template, status, path_args=None, params=None, body=None,
             headers=None, content_type=None, token=None):
        """Calls the route (with the admin key unless token says otherwise; "" sends none),
        checks the status, validates the body against the document's schema for that route,
        status and Content-Type, and the documented headers; returns the Response."""
        path = template.format(**(path_args or {}))
        if content_type:
            headers = {**(headers or {}), "Content-Type": content_type}
        r = self.server.request(method.upper(), path, params, body, headers, token=token)
        assert r.status == status, (method, path, params, r.status, r.body[:500])
        op = self.spec["paths"][template][method]
        responses = op["responses"]
        assert str(status) in responses, f"{method.upper()} {template} {status} undocumented"
        resp = deref(self.spec, responses[str(status)])
        media = (r.headers.get("Content-Type") or "").split(";")[0].strip()
        content = resp.get("content", {})
        if not content:
            assert r.body == b"" and not media, f"{method.upper()} {template} {status}: a body"
        else:
            assert media in content, (f"{method.upper()} {template} {status}: Content-Type "
                                      f"{media!r} not documented ({sorted(content)})")
        if media == "application/json":
            validate(content[media]["schema"], self.components, r.json(),
                     f"{method.upper()} {path} {status}")
        got = {k.lower(): v for k, v in r.headers.items()}
        for name, h in resp.get("headers", {}).items():
            assert name.lower() in got, f"{method.upper()} {template} {status}: no {name}"
            validate(h["schema"], self.components, got[name.lower()],
                     f"{method.upper()} {path} {status} header {name}")
        SEEN.add((method, template, str(status)))
        return r

    def error(self, method, template, status, code, words=(), path_args=None, params=None,
              **kw):
        """An error answer: documented, an Error, with this code and message words."""
        r = self.call(method, template, status, path_args, params, **kw)
        e = r.json()
        assert e["error"] == code, e
        for w in words:
            assert w in e["message"].lower(), e
        return e

    def upload(self, data, status=201, content_type="application/octet-stream", token=None,
               **params):
        return self.call("post", "/api/v1/profiles", status, params=params, body=data,
                         content_type=content_type, token=token).json()


def upload_windows(api, service, typ, base, cur, n=10, current_extra=None, **params):
    """n gapless 60 s profiles before T with counts base, then n after T with counts cur."""
    build = pb.cpu_profile if typ == "cpu" else pb.wall_profile
    for k in range(n):
        api.upload(build(base, time_nanos=(T - 60 * (n - k)) * S, duration_nanos=60 * S),
                   service=service, **params)
        api.upload(build(cur, time_nanos=(T + 60 * k) * S, duration_nanos=60 * S),
                   service=service, **{**params, **(current_extra or {})})


def serve(tmp_path_factory, spec, components):
    """The `api` fixtures' body (`yield from`): a server holding a cpu and a wall dataset,
    folded ns values, a deploy and two issues; yields its Api, then stops the server."""
    srv = Server(tmp_path_factory.mktemp("openapi") / "data").start()
    a = Api(srv, spec, components)
    # cpu: "a" grows after T; release 2.0 observed after T, with the OS's process CPU (Go:
    # compared with the samples, DESIGN §7): 0.8 s against 1.03 s sampled per profile.
    upload_windows(a, "shop", "cpu", {"main;a": 50, "main;b": 50, "main;c": 3},
                   {"main;a": 75, "main;b": 25, "main;c": 3}, instance="i-1", runtime="go",
                   version="1.0",
                   current_extra={"version": "2.0", "process_cpu_ns": "800000000"})
    # Go whose process CPU exceeds the samples (the runtime's sysmon thread carries no
    # profiling timer): the excess counts as unattributed CPU, in no function.
    upload_windows(a, "goext", "cpu", {"main;a": 100}, {"main;a": 100}, n=2, instance="g-1",
                   runtime="go", process_cpu_ns="1500000000")
    # cpu from Node, whose V8 ticks on wall time: capacity takes each profile's main-thread
    # CPU (0.5 s of the 1.03 s sampled), distributed by the samples (DESIGN §7).
    upload_windows(a, "node", "cpu", {"main;a": 50, "main;b": 50, "main;c": 3},
                   {"main;a": 75, "main;b": 25, "main;c": 3}, n=3, instance="n-1",
                   runtime="node", thread_cpu_ns="500000000", process_cpu_ns="900000000")
    # wall: "io" grows after T.
    upload_windows(a, "py", "wall", {"main;io": 10, "main;cpu": 10},
                   {"main;io": 30, "main;cpu": 10}, instance="p-1", runtime="python")
    # folded values in ns: no sample counts, so no significance test.
    for k in range(4):
        for start, text in ((T - 60 * (k + 1), b"main;x 1000000\nmain;y 1000000\n"),
                            (T + 60 * k, b"main;x 3000000\nmain;y 1000000\n")):
            a.upload(text, content_type="text/plain", service="fold", type="cpu",
                     unit="nanoseconds", start=str(start), duration_s="60")
    a.deploy = a.call("post", "/api/v1/deploys", 201,
                      body={"service": "shop", "version": "2.0", "at": T - 30}).json()
    a.cpu_issue = a.call("post", "/api/v1/issues", 201,
                         body={"service": "shop", "title": "checkout slow",
                               "started_at": "2025-11-30T01:00:00+01:00"}).json()
    a.wall_issue = a.call("post", "/api/v1/issues", 201,
                          body={"service": "py", "title": "p99 up", "started_at": T}).json()
    yield a
    srv.stop()


RAN = set()  # names of the tests that ran, over both files


def tests_of(namespace):
    """The test functions of a module's namespace (its globals())."""
    return {n for n, v in namespace.items() if n.startswith("test_") and callable(v)}


# ---- fixtures, imported by both test files ----

@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture(scope="module")
def components(spec):
    return json_schemas(spec)


@pytest.fixture(scope="module")
def api(tmp_path_factory, spec, components):
    yield from serve(tmp_path_factory, spec, components)


@pytest.fixture(autouse=True)
def _record(request):
    yield
    RAN.add(request.node.originalname)
