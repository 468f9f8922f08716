"""docs/openapi.yaml against the real server, continued from test_openapi.py (which says what
is checked and how): authentication and scopes on every /api/v1/ route, API keys, profiling
switches, the SDK's config poll, the audit log and the UI's session. The last test checks that
the two files together exercised every documented answer; pytest collects this file after
test_openapi.py, so it runs last."""
import threading
import time

import pytest

pytest.register_assert_rewrite("openapi_check")

import openapi_check as oc  # noqa: E402
import pprof_build as pb  # noqa: E402
import test_openapi as openapi_tests  # noqa: E402  (the other half: the names of its tests)
from openapi_check import NOT_PROVOKED, PATH_ARGS, S, SCOPES, SEEN, T  # noqa: E402


# The fixtures both halves share (module scope: one seeded server per file).
from openapi_check import _record, api, components, spec  # noqa: E402,F401


# ---- authentication and scopes ----

def test_unauthorized_on_every_route(api):
    """401 without a key, with an unknown key, with a malformed header and with a revoked
    key, on every /api/v1/ route; /healthz and /metrics need none."""
    revoked = api.call("post", "/api/v1/keys", 201, body={"scope": "admin"}).json()
    api.call("delete", "/api/v1/keys/{id}", 200, {"id": revoked["id"]})
    for (m, p) in sorted(SCOPES):
        for token in ("", "rt_not_a_key_0123456789abcdef", revoked["key"]):
            api.error(m, p, 401, "unauthorized", ["bearer"], PATH_ARGS, token=token)
        r = api.server.request(m.upper(), p.format(**PATH_ARGS),
                               headers={"Authorization": f"Basic {api.server.token}"}, token="")
        assert r.status == 401, (m, p, r.status)
    for p in ("/healthz", "/metrics"):
        api.call("get", p, 200, token="")


def test_scopes_are_enforced_as_documented(api, spec):
    """For every /api/v1/ route, a read and an ingest key are refused (403) exactly when the
    document's scope is another; when allowed, they pass authorization."""
    keys = {s: api.server.key(s) for s in ("read", "ingest")}
    for (m, p), _ in sorted(SCOPES.items()):
        need = spec["paths"][p][m]["x-roottrace-scope"]
        for scope, key in keys.items():
            if scope == need:
                r = api.server.request(m.upper(), p.format(**PATH_ARGS), token=key)
                assert r.status not in (401, 403), (m, p, scope, r.status, r.body)
            else:
                api.error(m, p, 403, "forbidden", [scope], PATH_ARGS, token=key)


def test_bound_ingest_key(api):
    """An ingest key bound to one service is refused (403) for another service or none."""
    key = api.server.key("ingest", service="bound")
    api.call("put", "/api/v1/services/{name}/profiling", 200, {"name": "bound"},
             body={"enabled": True})
    body = pb.cpu_profile({"main;a": 1})
    api.error("post", "/api/v1/profiles", 403, "forbidden", ["bound to another service"],
              params={"service": "other"}, body=body, content_type="application/octet-stream",
              token=key)
    api.error("get", "/api/v1/sdk/config", 403, "forbidden", ["bound"],
              params={"service": "other", "instance": "i"}, token=key)
    api.error("get", "/api/v1/sdk/config", 403, "forbidden", ["bound"],
              params={"instance": "i"}, token=key)
    api.call("get", "/api/v1/sdk/config", 200, params={"service": "bound", "instance": "i"},
             token=key)
    api.upload(body, token=key, service="bound")


def test_sdk_upload_answers(api):
    """POST /api/v1/profiles: 409 for an ingest key while profiling is off, 201 once on (an
    admin's upload is accepted either way); 400 for times outside retention or the future."""
    key = api.server.key("ingest")
    body = pb.cpu_profile({"main;a": 2}, duration_nanos=10 * S)
    api.error("post", "/api/v1/profiles", 409, "conflict", ["profiling is off"],
              params={"service": "sdk-svc", "instance": "n-1"}, body=body,
              content_type="application/octet-stream", token=key)
    api.upload(body, service="sdk-svc", instance="n-1")  # admin: accepted while off
    api.call("put", "/api/v1/services/{name}/profiling", 200, {"name": "sdk-svc"},
             body={"enabled": True})
    api.upload(body, token=key, service="sdk-svc", instance="n-1")
    now = int(time.time())
    api.error("post", "/api/v1/profiles", 400, "invalid_argument", ["retention horizon"],
              params={"service": "sdk-svc", "start": str(now - 3651 * 86400),
                      "duration_s": "60"}, body=body, content_type="application/octet-stream")
    api.error("post", "/api/v1/profiles", 400, "invalid_argument", ["future"],
              params={"service": "sdk-svc", "start": str(now + 7200)}, body=body,
              content_type="application/octet-stream")


# ---- the control plane ----

def test_key_answers(api):
    P = "/api/v1/keys"
    made = api.call("post", P, 201, body={"scope": "ingest", "service": "shop",
                                         "name": "shop sdk"}).json()
    assert made["scope"] == "ingest" and made["service"] == "shop" and made["key"]
    plain = api.call("post", P, 201, body={"scope": "read"}).json()
    assert plain["service"] is None and plain["name"] is None
    listed = {k["id"]: k for k in api.call("get", P, 200).json()}
    assert listed[made["id"]]["revoked_at"] is None
    assert all("key" not in k for k in listed.values())  # no secrets (and the schema says so)
    gone = api.call("delete", "/api/v1/keys/{id}", 200, {"id": plain["id"]}).json()
    assert gone == {"id": plain["id"], "revoked": True}
    again = {k["id"]: k for k in api.call("get", P, 200).json()}
    assert again[plain["id"]]["revoked_at"]
    api.error("delete", "/api/v1/keys/{id}", 404, "not_found", [], {"id": plain["id"]})
    api.error("delete", "/api/v1/keys/{id}", 404, "not_found", [], {"id": 999999})
    api.error("delete", "/api/v1/keys/{id}", 404, "not_found", [], {"id": "abc"})
    api.error("post", P, 400, "invalid_argument", ["scope"], body={"scope": "root"})
    api.error("post", P, 400, "invalid_argument", ["ingest"],
              body={"scope": "read", "service": "shop"})
    api.error("post", P, 400, "malformed", ["json"], body=b"{", content_type="application/json")


def test_profiling_answers(api):
    P = "/api/v1/services/{name}/profiling"
    on = api.call("put", P, 200, {"name": "toggled"},
                  body={"enabled": True, "type": "wall", "sampling_interval_us": 20000,
                        "upload_interval_s": 30}).json()
    assert on == {"name": "toggled", "profiling_enabled": True,
                  "config": {"type": "wall", "sampling_interval_us": 20000,
                             "upload_interval_s": 30}}
    off = api.call("put", P, 200, {"name": "toggled"}, body={"enabled": False}).json()
    assert off["profiling_enabled"] is False
    assert off["config"] == on["config"]  # overrides left out are kept
    fresh = api.call("put", P, 200, {"name": "toggled-2"}, body={"enabled": False}).json()
    assert fresh["config"] == {"type": None, "sampling_interval_us": None,
                               "upload_interval_s": None}  # runtime defaults apply
    svcs = {s["name"]: s for s in api.call("get", "/api/v1/services", 200).json()}
    assert svcs["toggled"]["profiling_enabled"] is False  # an unknown name was created
    for body, word in (({"type": "cpu"}, "enabled"), ({"enabled": True, "type": "heap"}, "type"),
                       ({"enabled": True, "upload_interval_s": 5}, "upload_interval_s"),
                       ({"enabled": True, "sampling_interval_us": 10}, "sampling_interval_us")):
        api.error("put", P, 400, "invalid_argument", [word], {"name": "toggled"}, body=body)
    api.error("put", P, 400, "malformed", [], {"name": "toggled"}, body=b"[]",
              content_type="application/json")


def test_sdk_config_answers(api):
    P = "/api/v1/sdk/config"
    key = api.server.key("ingest")
    q = {"service": "polled", "instance": "n-1", "runtime": "node", "runtime_version": "22.1.0",
         "sdk_version": "0.1.0", "version": "1.0", "status": "waiting: no config yet",
         "interval_us": 10000}
    r = api.call("get", P, 200, params=q, token=key)
    cfg = r.json()
    assert cfg["enabled"] is False and cfg["sampling_interval_us"] == 10000
    assert r.headers["ETag"] == f'"{cfg["etag"]}"'
    # unchanged: 304 at once without wait, and after holding `wait` seconds
    r = api.call("get", P, 304, params={**q, "etag": cfg["etag"]}, token=key)
    assert r.headers["ETag"] == f'"{cfg["etag"]}"'
    t0 = time.monotonic()
    api.call("get", P, 304, params={**q, "etag": cfg["etag"], "wait": "1"}, token=key)
    assert 0.8 <= time.monotonic() - t0 < 5
    # a held poll answers 200 with the new config as soon as it changes
    toggle = threading.Timer(0.5, lambda: api.server.put(
        "/api/v1/services/polled/profiling", body={"enabled": True}))
    toggle.start()
    t0 = time.monotonic()
    new = api.call("get", P, 200, params={**q, "etag": cfg["etag"], "wait": "8s"},
                   token=key).json()
    toggle.join()
    assert new["enabled"] is True and new["etag"] != cfg["etag"]
    assert time.monotonic() - t0 < 3
    svcs = {s["name"]: s for s in api.call("get", "/api/v1/services", 200).json()}
    inst = svcs["polled"]["instances"][0]
    assert inst["status"] == "waiting: no config yet" and inst["runtime"] == "node"
    for params, word in (({"service": "polled"}, "instance"), ({"instance": "n-1"}, "service"),
                         ({**q, "sdk_version": "v" * 201}, "sdk_version"),
                         ({**q, "instance": "a/b"}, "instance"),
                         ({**q, "interval_us": "-1"}, "interval_us"),
                         ({**q, "wait": "soon"}, "wait")):
        api.error("get", P, 400, "invalid_argument", [word], params=params, token=key)


def test_audit_answers(api):
    P = "/api/v1/audit"
    log = api.call("get", P, 200).json()
    ats = [e["at"] for e in log]
    assert ats == sorted(ats, reverse=True)  # newest first
    actions = {e["action"] for e in log}
    assert {"key.create", "key.revoke", "profiling.enable", "profiling.disable"} <= actions
    assert api.call("get", P, 200, params={"limit": 1}).json() == log[:1]
    assert api.call("get", P, 200, params={"to": T}).json() == []
    api.call("get", P, 200, token=api.server.key("read"))
    api.error("get", P, 400, "invalid_argument", ["from"], params={"from": "yesterday"})
    api.error("get", P, 400, "invalid_argument", ["limit"], params={"limit": 0})


def test_session_answers(api):
    """The UI's sign-in (tests/integration/test_session.py checks its semantics)."""
    P = "/api/v1/session"
    s = api.call("post", P, 201, body={"token": api.server.token}, token="").json()
    cookie = api.server.request("POST", P, body={"token": api.server.token}, token="")
    cookie = cookie.headers["Set-Cookie"].split(";")[0]
    api.error("post", P, 400, "invalid_argument", ["token"], body={}, token="")
    api.error("post", P, 401, "unauthorized", ["unknown"], body={"token": "rt_nope_0123456789"},
              token="")
    ingest = api.server.key("ingest")
    api.error("post", P, 403, "forbidden", ["admin and read"], body={"token": ingest}, token="")
    api.error("post", P, 415, "unsupported_format", ["json"],
              body=b'{"token": "' + api.server.token.encode() + b'"}', content_type="text/plain",
              token="")
    got = api.call("get", P, 200, headers={"Cookie": cookie}, token="").json()
    assert got["scope"] == "admin" and len(got["csrf_token"]) == 64 and s["scope"] == "admin"
    api.error("get", P, 401, "unauthorized", ["not signed in"], token="")
    api.error("delete", P, 403, "forbidden", ["x-csrf-token"], headers={"Cookie": cookie},
              token="")
    api.call("delete", P, 200, headers={"Cookie": cookie, "X-CSRF-Token": got["csrf_token"]},
             token="")
    api.error("delete", P, 401, "unauthorized", ["not signed in"], headers={"Cookie": cookie},
              token="")


# ---- Pyroscope's routes (DESIGN §12; the real agents: tests/agents) ----

def test_pyroscope_ingest_answers(api):
    """Every documented answer of POST /ingest."""
    I = "/ingest"
    api.call("put", "/api/v1/services/{name}/profiling", 200, {"name": "pyro"},
             body={"enabled": True})
    now = int(time.time())
    q = {"name": "pyro.cpu{version=1.0,hostname=h-1}", "from": str(now - 10), "until": str(now),
         "spyName": "gospy", "sampleRate": "100"}
    body = b"main;hot 30\nmain;cold 10\n"
    r = api.call("post", I, 200, params=q, body=body, content_type="text/plain").json()
    assert r["profiles"][0]["agent"] == "pyroscope-go" and r["type"] == "cpu", r
    assert not r["duplicate"], r
    assert r["profiles"][0]["value_ns"] == 40 * 10_000_000, r
    r = api.call("post", I, 200, params=q, body=body, content_type="text/plain").json()
    assert r["duplicate"], r
    api.error("post", I, 409, "conflict", ["other content"], params=q, body=b"main;hot 31\n",
              content_type="text/plain")
    api.error("post", I, 400, "invalid_argument", ["name"], params={"from": q["from"]},
              body=body, content_type="text/plain")
    api.error("post", I, 401, "unauthorized", ["basic"], params=q, body=body,
              content_type="text/plain", token="")
    api.error("post", I, 403, "forbidden", ["ingest"], params=q, body=body,
              content_type="text/plain", token=api.server.key("read"))
    off = {**q, "name": "pyro-off.cpu{hostname=h-2}"}
    api.error("post", I, 409, "conflict", ["profiling is off", "cannot stop"], params=off,
              body=body, content_type="text/plain", token=api.server.key("ingest"))
    api.error("post", I, 413, "too_large", ["limit"], params=q, body=b"a" * (17 << 20),
              content_type="text/plain")
    api.error("post", I, 415, "unsupported_format", ["trie"], params={**q, "format": "trie"},
              body=body, content_type="text/plain")
    api.error("post", I, 422, "unsupported_type", ["alloc_objects"],
              params={**q, "name": "pyro.alloc_objects{}"}, body=body, content_type="text/plain")


def test_pyroscope_push_answers(api):
    """Every documented answer of POST /push.v1.PusherService/Push: Connect's empty answer in
    the request's codec, and errors with Connect's code."""
    P = "/push.v1.PusherService/Push"
    api.call("put", "/api/v1/services/{name}/profiling", 200, {"name": "pushed"},
             body={"enabled": True})
    now = int(time.time())
    prof = pb.cpu_profile({"main;hot": 3}, time_nanos=(now - 10) * S, duration_nanos=10 * S)
    labels = {"service_name": "pushed", "__name__": "process_cpu", "hostname": "h-1"}
    r = api.call("post", P, 200, body=pb.push_request([(labels, [(prof, "id-1")])]),
                 content_type="application/proto")
    assert r.body == b"" and r.headers["Content-Type"] == "application/proto"
    r = api.call("post", P, 200, body=pb.push_json([(labels, [(prof, "id-2")])]))
    assert r.json() == {}
    err = lambda status, code, words, body, ct="application/proto", **kw: api.error(
        "post", P, status, code, words, body=body, content_type=ct, **kw)
    assert err(400, "malformed", ["pushrequest"], b"\xff\xff")["code"] == "invalid_argument"
    err(401, "unauthorized", ["basic"], b"", token="")
    bound = api.server.key("ingest", service="elsewhere")
    err(403, "forbidden", ["bound"], pb.push_request([(labels, [(prof, "id-3")])]),
        token=bound)
    off = {**labels, "service_name": "pushed-off"}
    assert err(409, "conflict", ["profiling is off"], pb.push_request([(off, [(prof, None)])]),
               token=api.server.key("ingest"))["code"] == "failed_precondition"
    err(413, "too_large", ["limit"], b"a" * (17 << 20))
    err(415, "unsupported_format", ["application/proto"], b"x", ct="text/plain")
    mem = {**labels, "__name__": "memory"}
    err(422, "unsupported_type", ["memory"], pb.push_request([(mem, [(prof, None)])]))


# ---- issues from alerts (DESIGN §13; the real Alertmanager: tests/alerts) ----

def am_alert(service, fp, starts, status="firing", ends="0001-01-01T00:00:00Z", **ann):
    return {"status": status, "labels": {"alertname": "HighLatency", "service": service},
            "annotations": ann, "startsAt": starts, "endsAt": ends, "fingerprint": fp,
            "generatorURL": "http://prometheus:9090/graph?g0.expr=up"}


def wait_issue(api, service, pred, deadline_s=10):
    """The issue of service once pred(issue) holds (the webhook's work is queued)."""
    end = time.time() + deadline_s
    while True:
        got = [i for i in api.call("get", "/api/v1/issues", 200,
                                   params={"service": service}).json() if pred(i)]
        if got or time.time() > end:
            return got
        time.sleep(0.05)


def test_alert_webhook_answers(api):
    """Every documented answer of both webhooks and of PATCH /api/v1/issues/{id}."""
    AM, GF = "/api/v1/alerts/alertmanager", "/api/v1/alerts/grafana"
    now = time.time()
    starts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 300))
    for known in ("alerted", "grafanaed"):  # an alert opens issues for known services only
        api.upload(b"main;main.f 5\n", content_type="text/plain", service=known, type="cpu",
                   unit="samples", period_ns="10000000", start=str(int(now) - 120),
                   duration_s="10", instance="i-1")
    payload = {"version": "4", "status": "firing", "alerts": [
        am_alert("alerted", "fp-1", starts, summary="p99 over 2 s", roottrace_lead="1m"),
        {**am_alert("x", "fp-2", starts), "labels": {"alertname": "NoService"}},
        am_alert("alerted", "fp-3", "1969-12-31T00:00:00Z")]}
    ans = api.call("post", AM, 200, body=payload).json()
    assert (ans["alerts"], ans["accepted"]) == (3, 1), ans
    assert [u["fingerprint"] for u in ans["unmatched"]] == ["fp-2"], ans
    assert [r["fingerprint"] for r in ans["refused"]] == ["fp-3"], ans
    issue = wait_issue(api, "alerted", lambda i: i["source"] == "alertmanager")
    assert len(issue) == 1, issue
    i = issue[0]
    assert i["title"] == "p99 over 2 s" and i["state"] == "open", i
    assert i["alert"]["lead_source"] == "annotation" and i["alert"]["lead_s"] == 60, i
    assert i["alert"]["generator_url"].startswith("http://prometheus"), i
    api.error("post", AM, 400, "malformed", ["alerts"], body={"version": "4"})
    api.error("post", AM, 400, "malformed", ["version 4"], body={"version": "3", "alerts": []})
    api.error("post", AM, 400, "malformed", ["alert 0"],
              body={"version": "4", "alerts": [{"status": "on fire", "labels": {}}]})
    api.error("post", AM, 401, "unauthorized", ["basic"], body=payload, token="")
    api.error("post", AM, 403, "forbidden", ["read"], body=payload,
              token=api.server.key("read"))
    api.error("post", AM, 413, "too_large", ["1048576"],
              body={"alerts": [], "pad": "x" * (1 << 20)})
    g = {"receiver": "roottrace", "status": "firing", "orgId": 1, "alerts": [
        am_alert("grafanaed", "gfp", starts, summary="errors up")]}
    api.call("post", GF, 200, body=g)
    assert wait_issue(api, "grafanaed", lambda i: i["source"] == "grafana")
    api.error("post", GF, 400, "malformed", ["alerts"], body={"alerts": {}})
    api.error("post", GF, 401, "unauthorized", ["basic"], body=g, token="")
    api.error("post", GF, 403, "forbidden", ["read"], body=g, token=api.server.key("read"))
    api.error("post", GF, 413, "too_large", ["1048576"], body={"pad": "x" * (1 << 20)})
    # an end by hand, bounds checked, and a reopening
    P = "/api/v1/issues/{id}"
    ended = api.call("patch", P, 200, {"id": i["id"]}, body={"ended_at": now - 60}).json()
    assert ended["state"] == "ended" and ended["ended_at"], ended
    reopened = api.call("patch", P, 200, {"id": i["id"]}, body={"ended_at": None}).json()
    assert reopened["state"] == "open" and reopened["ended_at"] is None, reopened
    api.error("patch", P, 400, "invalid_argument", ["after the issue's start"], {"id": i["id"]},
              body={"ended_at": now - 10 * 3600})
    api.error("patch", P, 400, "invalid_argument", ["ended_at"], {"id": i["id"]},
              body={"ended": now})
    api.error("patch", P, 404, "not_found", ["no issue"], {"id": 987654321},
              body={"ended_at": now})
    api.error("patch", P, 401, "unauthorized", ["basic"], {"id": i["id"]},
              body={"ended_at": now}, token="")
    api.error("patch", P, 403, "forbidden", ["ingest"], {"id": i["id"]},
              body={"ended_at": now}, token=api.server.key("ingest"))
    assert [x["id"] for x in api.call("get", "/api/v1/issues", 200,
                                      params={"state": "open", "service": "alerted"}).json()]\
        == [i["id"]]
    api.error("get", "/api/v1/issues", 400, "invalid_argument", ["state"],
              params={"state": "closed"})


# ---- every documented answer, over test_openapi.py and this file ----

def test_every_documented_answer_was_exercised(spec):
    others = oc.tests_of(globals()) | oc.tests_of(vars(openapi_tests))
    others.discard("test_every_documented_answer_was_exercised")
    if not others <= oc.RAN:
        pytest.skip("needs test_openapi.py and this file whole: ran only "
                    + ", ".join(sorted(oc.RAN)))
    documented = {(m, p, s) for p, item in spec["paths"].items() for m, op in item.items()
                  for s in op["responses"] if s != "default"}
    missing = documented - SEEN - NOT_PROVOKED
    assert not missing, f"documented answers never exercised: {sorted(missing)}"
