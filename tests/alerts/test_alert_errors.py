"""What the alert receivers refuse (DESIGN §13): a malformed, mistyped or over-1-MiB body is a
4xx and stores nothing; keys as for ingest (401 without, 403 of read scope); an alert whose
startsAt is before 1970 or far in the future is refused while the others in the same payload
are taken.

One server serves the whole module: the refused bodies name service `bad`, and the last test
watches that nothing opened for it (the server applies alert work within about a second); the
tests that open issues use a service of their own."""
import itertools
import json
import os
import sqlite3
import time

import pytest

from conftest import (AM_PATH, GRAFANA_PATH, Server, audit, basic, holds_for, issues, iso,
                      make_service_known, parse_time, wait_issues, wait_until)

MIB = 1 << 20
_fingerprints = itertools.count(0x1000)


def new_fp():
    """A fingerprint no other alert of the module has."""
    return f"{next(_fingerprints):016x}"
PATHS = [pytest.param(AM_PATH, id="alertmanager"), pytest.param(GRAFANA_PATH, id="grafana")]


def good_alert(fingerprint="0123456789abcdef", service="bad", starts_at=None):
    return {"status": "firing",
            "labels": {"alertname": "CheckoutLatency", "service": service,
                       "fp": fingerprint},
            "annotations": {"summary": f"checkout p99 over 2 s ({fingerprint})"},
            "startsAt": starts_at or iso(time.time() - 60), "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus.test:9090/graph?g0.expr=x",
            "fingerprint": fingerprint}


def payload(path, alerts):
    """A whole webhook body of the sender behind path around alerts."""
    common = {"receiver": "roottrace", "status": "firing", "alerts": alerts,
              "groupLabels": {"alertname": "CheckoutLatency"},
              "commonLabels": {"alertname": "CheckoutLatency"}, "commonAnnotations": {},
              "externalURL": "http://alertmanager.test:9093",
              "groupKey": '{}:{alertname="CheckoutLatency"}', "truncatedAlerts": 0}
    if path == AM_PATH:
        return {**common, "version": "4"}
    return {**common, "orgId": 1, "version": "1", "title": "[FIRING:1] CheckoutLatency",
            "state": "alerting", "message": "**Firing**\n"}


def post_raw(server, path, body, token=None, headers=None):
    return server.post(path, body=body, token=token,
                       headers={"Content-Type": "application/json", **(headers or {})})


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("alert-errors") / "data").start()
    make_service_known(srv, "bad")
    yield srv
    srv.stop()


def assert_nothing_stored(server, fps):
    """No issue of service bad is of an alert of fingerprints fps (each test's own: the module
    shares one server, and one refusal that failed must not fail the tests after it)."""
    got = [x for x in issues(server, service="bad") if x["alert"]["fingerprint"] in fps]
    assert got == [], got


def assert_error(r, status):
    assert r.status == status, (r.status, r.body)
    e = r.json()
    assert isinstance(e.get("error"), str) and isinstance(e.get("message"), str), e


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("body", [b'{"version":"4","alerts":[', b"", b"not json",
                                  b'{"alerts":[]}{"alerts":[]}', b"\xff\xfe{}"],
                         ids=["truncated", "empty", "text", "two-documents", "not-utf8"])
def test_malformed_json_is_400(known, path, body):
    assert_error(post_raw(known, path, body), 400)


@pytest.mark.parametrize("path", PATHS)
def test_body_over_1_mib_is_413(known, path):
    service = f"size-{path.rsplit('/', 1)[1]}"
    make_service_known(known, service)
    body = json.dumps(payload(path, [good_alert(service=service)])).encode()
    # JSON whitespace pads the same payload to exactly 1 MiB (taken) and one byte more (413)
    over = body + b" " * (MIB + 1 - len(body))
    assert len(over) == MIB + 1
    assert_error(post_raw(known, path, over), 413)
    assert issues(known, service=service) == []
    at = body + b" " * (MIB - len(body))
    r = post_raw(known, path, at)
    assert r.status == 200, (r.status, r.body)
    assert r.json()["accepted"] == 1, r.body
    wait_issues(known, 1, service=service)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("body", ["[]", '"alerts"', "4", "null", "true",
                                  json.dumps([{"alerts": []}])],
                         ids=["list", "string", "number", "null", "bool", "list-of-object"])
def test_non_object_is_400(known, path, body):
    assert_error(post_raw(known, path, body.encode()), 400)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("alerts", [{}, {"0": {}}, "[]", 3, None, "missing"],
                         ids=["object", "object-of-alert", "string", "number", "null",
                              "missing"])
def test_alerts_not_a_list_is_400(known, path, alerts):
    fp = new_fp()
    p = payload(path, [])
    if alerts == "missing":
        del p["alerts"]
    elif isinstance(alerts, dict) and alerts:
        p["alerts"] = {"0": good_alert(fp)}
    else:
        p["alerts"] = alerts
    assert_error(post_raw(known, path, json.dumps(p).encode()), 400)
    assert_nothing_stored(known, {fp})


def mistype(field, value):
    def change(a):
        a[field] = value
        return a
    return change


WRONG_TYPES = {
    "alert-string": lambda a: "CheckoutLatency",
    "alert-list": lambda a: [a],
    "labels-list": mistype("labels", [["service", "checkout"]]),
    "labels-string": mistype("labels", "service=checkout"),
    "label-value-number": lambda a: {**a, "labels": {**a["labels"], "service": 7}},
    "label-value-object": lambda a: {**a, "labels": {**a["labels"], "service": {"n": "x"}}},
    "annotations-list": mistype("annotations", ["summary"]),
    "annotation-value-number": lambda a: {**a, "annotations": {"summary": 1.5}},
    "status-number": mistype("status", 1),
    "startsAt-number": mistype("startsAt", 1764460800),
    "startsAt-not-a-time": mistype("startsAt", "yesterday at noon"),
    "startsAt-trailing-junk": mistype("startsAt", "2025-11-30T09:51:03Z and then some"),
    "startsAt-missing": lambda a: {k: v for k, v in a.items() if k != "startsAt"},
    "endsAt-object": mistype("endsAt", {}),
    "fingerprint-number": mistype("fingerprint", 1234),
    "generatorURL-list": mistype("generatorURL", ["http://x"]),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("change", list(WRONG_TYPES.values()), ids=list(WRONG_TYPES))
def test_wrong_types_are_400_and_store_nothing(known, path, change):
    """One mistyped alert after a good one: the whole body is refused, nothing opens."""
    good, bad = new_fp(), new_fp()
    alerts = [good_alert(good), change(good_alert(bad))]
    assert_error(post_raw(known, path, json.dumps(payload(path, alerts)).encode()), 400)
    assert_nothing_stored(known, {good, bad})


def test_alertmanager_version_not_the_string_4_is_400(known):
    """The one top-level field besides alerts that the receiver reads: Alertmanager's payload
    version, the string "4". (The group's status and labels are never read, DESIGN §13.)"""
    fps = []
    for version in (4, "3", ["4"]):
        fps.append(new_fp())
        p = payload(AM_PATH, [good_alert(fps[-1])])
        p["version"] = version
        assert_error(post_raw(known, AM_PATH, json.dumps(p).encode()), 400)
    assert_nothing_stored(known, set(fps))


@pytest.mark.parametrize("path", PATHS)
def test_keys(known, path):
    server = known
    service = f"keys-{path.rsplit('/', 1)[1]}"
    make_service_known(server, service)
    body = json.dumps(payload(path, [good_alert(service=service)])).encode()
    read = server.key("read")
    assert_error(post_raw(server, path, body, token=""), 401)
    assert_error(post_raw(server, path, body, token="rt_no_such_key_0123456789abcdef"), 401)
    assert_error(post_raw(server, path, body, token="",
                          headers={"Authorization": basic("alertmanager", "rt_wrong")}), 401)
    assert_error(post_raw(server, path, body, token=read), 403)
    assert_error(post_raw(server, path, body, token="",
                          headers={"Authorization": basic("alertmanager", read)}), 403)
    assert issues(server, service=service) == []
    ingest = server.key("ingest")
    r = post_raw(server, path, body, token="",
                 headers={"Authorization": basic("any-user-name", ingest)})
    assert r.status == 200, (r.status, r.body)
    r = post_raw(server, path, body, token=ingest)  # Bearer; the same alert again
    assert r.status == 200, (r.status, r.body)
    r = post_raw(server, path, body)  # the admin key (Bearer)
    assert r.status == 200, (r.status, r.body)
    wait_issues(server, 1, service=service)
    holds_for(lambda: len(issues(server, service=service)) == 1, 1.2, "one issue")


@pytest.mark.parametrize("path", PATHS)
def test_starts_at_before_1970_or_far_ahead_is_refused(known, path):
    service = f"times-{path.rsplit('/', 1)[1]}"
    make_service_known(known, service)
    good = good_alert("bbbbbbbbbbbbbbbb", service=service)
    alerts = [good_alert("aaaaaaaaaaaaaaaa", service=service,
                         starts_at="1969-07-20T20:17:40Z"), good,
              good_alert("cccccccccccccccc", service=service,
                         starts_at="3000-01-01T00:00:00Z")]
    r = post_raw(known, path, json.dumps(payload(path, alerts)).encode())
    assert r.status == 200, (r.status, r.body)
    ans = r.json()
    assert ans["alerts"] == 3 and ans["accepted"] == 1 and ans["unmatched"] == [], ans
    refused = sorted(ans["refused"], key=lambda x: x["alert"])
    assert [(x["alert"], x["fingerprint"]) for x in refused] == [
        (0, "aaaaaaaaaaaaaaaa"), (2, "cccccccccccccccc")], ans
    assert all(isinstance(x["reason"], str) and x["reason"] for x in refused), ans
    (it,) = wait_issues(known, 1, service=service)
    assert it["alert"]["fingerprint"] == "bbbbbbbbbbbbbbbb", it
    assert parse_time(it["started_at"]) == pytest.approx(parse_time(good["startsAt"]),
                                                         abs=1e-3), it
    holds_for(lambda: len(issues(known, service=service)) == 1, 1.2,
              "only the good alert's issue")


def test_patch_ended_at(known):
    """PATCH /api/v1/issues/{id} {"ended_at": time|null}: admin only; ends or reopens an issue,
    each change audited once (reopening an open issue changes and audits nothing); anything
    else in ended_at is a 400."""
    service = "patched"
    make_service_known(known, service)
    r = post_raw(known, AM_PATH, json.dumps(payload(AM_PATH, [good_alert(
        "dddddddddddddddd", service=service)])).encode())
    assert r.status == 200, (r.status, r.body)
    (it,) = wait_issues(known, 1, service=service)
    path = f"/api/v1/issues/{it['id']}"
    end = iso(parse_time(it["started_at"]) + 60)
    for token, status in (("", 401), (known.key("ingest"), 403), (known.key("read"), 403)):
        assert_error(known.request("PATCH", path, body={"ended_at": end}, token=token), status)
    for bad in ({"ended_at": 5.5e20}, {"ended_at": "soon"}, {"ended_at": []}, [], {}):
        assert_error(known.request("PATCH", path, body=bad), 400)
    assert_error(known.request("PATCH", "/api/v1/issues/999999", body={"ended_at": end}), 404)
    r = known.request("PATCH", path, body={"ended_at": end})
    assert r.status == 200, (r.status, r.body)
    assert r.json()["state"] == "ended", r.body
    assert parse_time(r.json()["ended_at"]) == parse_time(end), r.body
    got = known.get(path).json()
    assert got["state"] == "ended" and parse_time(got["ended_at"]) == parse_time(end), got
    r = known.request("PATCH", path, body={"ended_at": None})
    assert r.status == 200, (r.status, r.body)
    got = known.get(path).json()
    assert got["state"] == "open" and got["ended_at"] is None, got
    r = known.request("PATCH", path, body={"ended_at": None})
    assert r.status == 200 and r.json()["state"] == "open", (r.status, r.body)
    mine = [e["action"] for e in audit(known)
            if e.get("target") == str(it["id"]) and e["action"] in ("issue ended",
                                                                     "issue reopened")]
    assert sorted(mine) == ["issue ended", "issue reopened"], audit(known)


def test_answers_while_the_store_is_locked(known):
    """The webhook answers whatever the store is doing (DESIGN §13): with SQLite's write lock
    held by another connection (BEGIN EXCLUSIVE, 3 s, within the server's 10 s busy
    timeout), a notification is answered 200 at once and its issue opens once the lock is
    released. A handler that wrote to the store would hang on the lock past the client's 2 s
    timeout."""
    if os.environ.get("ROOTTRACE_TEST_STORE"):
        pytest.skip("SQLite's lock: the store under test is " + os.environ["ROOTTRACE_TEST_STORE"])
    fp = "10c4ed0000000001"
    make_service_known(known, "locked")
    db = sqlite3.connect(os.path.join(known.data_dir, "roottrace.db"), timeout=5,
                         isolation_level=None)
    try:
        db.execute("BEGIN EXCLUSIVE")
        t0 = time.monotonic()
        r = known.request("POST", AM_PATH, None,
                          json.dumps(payload(AM_PATH, [good_alert(fp, service="locked")])).encode(),
                          headers={"Content-Type": "application/json"}, timeout=2)
        answered_s = time.monotonic() - t0
        assert r.status == 200 and r.json()["accepted"] == 1, (r.status, r.body)
        time.sleep(3 - answered_s)
        assert not [x for x in issues(known, service="locked")
                    if x["alert"]["fingerprint"] == fp], "an issue written through the lock"
    finally:
        db.execute("ROLLBACK")
        db.close()
    print(f"\n[store locked] the webhook answered in {answered_s * 1000:.1f} ms")
    (it,) = wait_until(lambda: [x for x in issues(known, service="locked")
                                if x["alert"]["fingerprint"] == fp], 15,
                       "the issue once the lock is released")
    assert it["alert"]["notifications"] == 1, it


def test_no_refused_body_opened_anything(known):
    """Last in the module: nothing of the refused bodies above opens an issue later."""
    holds_for(lambda: issues(known, service="bad") == [], 1.5, "no issue for the refused bodies")
