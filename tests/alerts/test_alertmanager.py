"""Issues from Prometheus Alertmanager (DESIGN §13): the real Alertmanager 0.25, fed alerts the
way Prometheus posts them (POST /api/v2/alerts), notifies `roottrace serve` through its webhook
receiver (Basic auth, the password an ingest key). One issue per alert episode, whatever the
repeats, re-posts and replicas; resolved ends it; the lead moves its start; the issue's diff
compares the windows around the alert's start."""
import base64
import time

import pytest

from conftest import (AM_PATH, Receivers, Server, alert, audit, firing_with, holds_for, iso,
                      issue, issues, make_service_known, need_alertmanager, parse_time,
                      resolved_with, same_second, wait_issues, wait_until)


def accepted_all(rec, n=1):
    """The server's answer to one notification: 200, every alert accepted."""
    assert rec.status == 200, rec
    ans = rec.answer_json()
    assert ans == {"alerts": n, "accepted": n, "refused": [], "unmatched": []}, rec
    return ans


def fire(receivers, labels, annotations=None, starts_at=None, query="", pair=None):
    """Posts one firing alert to an Alertmanager (pair: (alertmanager, proxy); a new one
    unless given) and waits for its first notification. Returns (alertmanager, proxy, the
    alert posted, the notification)."""
    am, proxy = pair or receivers.alertmanager(query=query)
    a = alert(labels, annotations, starts_at=starts_at)
    am.post_alerts([a])
    rec = proxy.wait(1, firing_with(labels=labels))[-1]
    return am, proxy, a, rec


def check_alert_issue(it, service, posted, rec, lead_s=0, lead_source="none"):
    """An issue opened by the alert posted, as notification rec carried it."""
    sent = [a for a in rec.payload()["alerts"] if a["labels"] == posted["labels"]][0]
    starts = parse_time(posted["startsAt"])
    assert it["service"] == service, it
    assert it["source"] == "alertmanager", it
    assert it["state"] == "open" and it["ended_at"] is None, it
    al = it["alert"]
    assert al["fingerprint"] == sent["fingerprint"], (al, sent)
    assert same_second(parse_time(al["starts_at"]), starts), (al, posted)
    assert same_second(parse_time(it["started_at"]) + lead_s, starts), (it, posted)
    assert al["lead_s"] == pytest.approx(lead_s), al
    assert al["lead_source"] == lead_source, al
    assert al["labels"] == posted["labels"], al
    assert al["generator_url"] == posted["generatorURL"], al
    assert al["status"] == "firing", al
    assert_notified(it)


def assert_notified(it):
    """An alert's issue carries the notification that opened it from its first read."""
    al = it["alert"]
    assert al["notifications"] >= 1 and al["last_notified_at"] is not None, (
        "the issue was read without the notification that opened it (see "
        f"test_an_opened_issue_is_seen_with_its_notification): {it}")
    assert parse_time(al["last_notified_at"]) >= parse_time(it["created_at"]) - 1, it


# --- what Alertmanager sends (no RootTrace route needed) --------------------------------------

def test_what_alertmanager_sends(receivers, ingest_key):
    """Pins what the server's receiver is written against: Alertmanager's webhook is a POST of
    payload version 4, Basic auth with the configured user and the key as password, a firing
    alert's endsAt the zero time, startsAt as posted, repeats about every 2 s here, and a
    resolved notification carrying the posted endsAt."""
    stub = receivers.proxy(upstream=None)
    am, _ = receivers.alertmanager(proxy=stub)
    labels = {"alertname": "CheckoutLatency", "service": "checkout", "severity": "page"}
    starts = time.time() - 42.5
    posted = alert(labels, {"summary": "checkout p99 over 2 s"}, starts_at=starts)
    am.post_alerts([posted])
    first, second = stub.wait(2, firing_with(labels=labels), timeout=10)[:2]
    assert first.method == "POST" and first.path == AM_PATH, first
    assert first.header("Authorization") == "Basic " + base64.b64encode(
        f"alertmanager:{ingest_key}".encode()).decode()
    assert first.header("Content-Type") == "application/json"
    assert first.header("User-Agent").startswith("Alertmanager/"), first.headers
    body = first.payload()
    assert body["version"] == "4" and body["status"] == "firing", body
    assert set(body) == {"receiver", "status", "alerts", "groupLabels", "commonLabels",
                         "commonAnnotations", "externalURL", "version", "groupKey",
                         "truncatedAlerts"}, body
    assert body["groupKey"] == '{}:{alertname="CheckoutLatency"}', body
    assert body["externalURL"] == am.url
    (a,) = body["alerts"]
    assert set(a) == {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL",
                      "fingerprint"}, a
    # RFC 3339 as Go writes it: trailing zeros of the fraction trimmed (".330" as ".33")
    assert a["labels"] == labels, a
    assert parse_time(a["startsAt"]) == pytest.approx(parse_time(posted["startsAt"]), abs=1e-6)
    assert a["endsAt"] == "0001-01-01T00:00:00Z", a
    assert len(a["fingerprint"]) == 16 and int(a["fingerprint"], 16) >= 0, a
    assert 0.5 < second.time - first.time < 4, (first.time, second.time)
    assert second.body == first.body  # a repeat is the same notification again

    ends = time.time() - 1
    am.post_alerts([alert(labels, {"summary": "checkout p99 over 2 s"}, starts_at=starts,
                          ends_at=ends)])
    res = stub.wait(1, resolved_with(labels), timeout=10)[0].payload()
    assert res["status"] == "resolved", res
    (r,) = res["alerts"]
    assert r["fingerprint"] == a["fingerprint"] and r["startsAt"] == a["startsAt"], r
    assert parse_time(r["endsAt"]) == pytest.approx(parse_time(iso(ends)), abs=1e-6), r


# --- one issue per alert episode -------------------------------------------------------------

def test_firing_opens_one_issue_for_the_service_label(server, receivers):
    make_service_known(server, "checkout")
    labels = {"alertname": "CheckoutLatency", "service": "checkout", "job": "node-exporter",
              "severity": "page"}
    _, _, posted, rec = fire(receivers, labels, {"summary": "checkout p99 over 2 s",
                                                 "runbook_url": "https://runbooks.test/p99"})
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    assert it["title"] == "checkout p99 over 2 s", it
    check_alert_issue(it, "checkout", posted, rec)
    again = issue(server, it["id"])  # a repeat may have touched it meanwhile
    for key in ("id", "service", "title", "started_at", "created_at", "source", "state"):
        assert again[key] == it[key], (key, it, again)
    assert [x["id"] for x in issues(server, service="checkout")] == [it["id"]]
    assert [x["id"] for x in issues(server, state="open")] == [it["id"]]
    assert issues(server, state="ended") == []
    assert issues(server, service="node-exporter") == []


def test_job_alone_names_the_service_and_the_title_falls_back(server, receivers):
    make_service_known(server, "payments")
    labels = {"alertname": "PaymentsDown", "job": "payments", "instance": "10.0.0.7:8080"}
    _, _, posted, rec = fire(receivers, labels)
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    check_alert_issue(it, "payments", posted, rec)
    # no summary annotation: alertname and the labels
    assert "PaymentsDown" in it["title"], it


def test_service_label_parameter_names_the_labels(server, receivers):
    make_service_known(server, "search")
    labels = {"alertname": "SearchSlow", "app": "search", "service": "frontdoor",
              "job": "kubernetes-pods"}
    _, _, posted, rec = fire(receivers, labels, {"summary": "search slow"},
                             query="?service_label=app")
    assert rec.query == {"service_label": "app"}
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    check_alert_issue(it, "search", posted, rec)


def test_repeats_and_reposts_touch_the_one_issue(server, receivers):
    make_service_known(server, "checkout")
    labels = {"alertname": "CheckoutErrors", "service": "checkout"}
    notes = {"summary": "checkout 5xx over 1 %"}
    am, proxy, posted, rec = fire(receivers, labels, notes)
    accepted_all(rec)
    (first,) = wait_issues(server, 1)
    assert_notified(first)
    # Prometheus re-posts a firing alert every evaluation; Alertmanager repeats it every
    # repeat_interval (~2 s here)
    for _ in range(2):
        am.post_alerts([posted])
    sent = proxy.wait(3, firing_with(labels=labels), timeout=15)
    for r in sent:
        accepted_all(r)
    last_sent = parse_time(first["alert"]["last_notified_at"])
    touched = wait_until(
        lambda: (lambda x: x if parse_time(x["alert"]["last_notified_at"]) > last_sent
                 else None)(issue(server, first["id"])),
        10, "the repeats to touch the issue")
    assert len(issues(server)) == 1
    for key in ("id", "service", "title", "started_at", "created_at", "source"):
        assert touched[key] == first[key], (key, first, touched)
    assert touched["alert"]["fingerprint"] == first["alert"]["fingerprint"]
    assert touched["alert"]["starts_at"] == first["alert"]["starts_at"]
    assert touched["alert"]["notifications"] >= first["alert"]["notifications"]
    holds_for(lambda: len(issues(server)) == 1, 1.5, "one issue")


def test_resolved_sets_ended_at(server, receivers):
    make_service_known(server, "checkout")
    labels = {"alertname": "CheckoutLatency", "service": "checkout"}
    notes = {"summary": "checkout p99 over 2 s"}
    am, proxy, posted, rec = fire(receivers, labels, notes)
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    starts = parse_time(posted["startsAt"])
    resolved = alert(labels, notes, starts_at=starts, ends_at=time.time() - 2)
    # the time as posted (to the millisecond), not the float it was made from:
    # x.9996 s goes out as x+1.000 s
    ends = parse_time(resolved["endsAt"])
    am.post_alerts([resolved])
    res = proxy.wait(1, resolved_with(labels))[0]
    accepted_all(res)
    ended = wait_until(lambda: (lambda x: x if x["state"] == "ended" else None)(
        issue(server, it["id"])), 10, "the issue to end")
    assert same_second(parse_time(ended["ended_at"]), ends), ended
    assert ended["alert"]["status"] == "resolved", ended
    assert ended["started_at"] == it["started_at"], ended
    assert [x["id"] for x in issues(server, state="ended")] == [it["id"]]
    assert issues(server, state="open") == []
    assert len(issues(server)) == 1


def test_resolved_alert_without_issue_opens_nothing(server, receivers):
    """Alertmanager notifies a group only while it has a firing alert (or once it has notified
    one), so the resolved alert comes in the same post as a firing sibling of its group (same
    alertname), the sibling first: with group_wait 0 a group made by the resolved alert alone
    could be flushed, and the alert dropped, before the sibling joins it. A notification
    carries both, and only the firing one opens an issue."""
    make_service_known(server, "checkout")
    am, proxy = receivers.alertmanager()
    over = {"alertname": "CheckoutSpike", "service": "checkout", "instance": "i-1"}
    sibling = {"alertname": "CheckoutSpike", "service": "checkout", "instance": "i-2"}
    now = time.time()
    am.post_alerts([alert(sibling, {"summary": "still on"}),
                    alert(over, {"summary": "over"}, starts_at=now - 120, ends_at=now - 60)])
    rec = proxy.wait(1, resolved_with(over))[0]
    assert rec.status == 200, rec
    assert sorted(a["status"] for a in rec.payload()["alerts"]) == ["firing", "resolved"], rec
    (it,) = wait_issues(server, 1)
    assert it["alert"]["labels"] == sibling, it
    holds_for(lambda: len(issues(server)) == 1, 1.5, "only the firing alert's issue")


def test_lead_annotation_moves_the_start_earlier(server, receivers):
    make_service_known(server, "checkout")
    labels = {"alertname": "CheckoutSaturation", "service": "checkout"}
    _, _, posted, rec = fire(receivers, labels, {"summary": "checkout saturated",
                                                 "roottrace_lead": "2m"})
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    check_alert_issue(it, "checkout", posted, rec, lead_s=120, lead_source="annotation")
    assert parse_time(it["started_at"]) == pytest.approx(parse_time(posted["startsAt"]) - 120,
                                                         abs=1e-3), it


def test_server_lead_applies_unless_the_annotation_says(tmp_path):
    (tmp_path / "lead").mkdir()
    srv = Server(tmp_path / "lead" / "data",
                 extra_args=("--retention", "3650d", "--alert-lead", "1m")).start()
    rs = None
    try:
        make_service_known(srv, "checkout")
        need_alertmanager()
        rs = Receivers(tmp_path / "lead", srv, srv.key("ingest"))
        pair = rs.alertmanager()
        plain = {"alertname": "CheckoutLatency", "service": "checkout"}
        _, _, posted, rec = fire(rs, plain, {"summary": "p99"}, pair=pair)
        accepted_all(rec)
        (it,) = wait_issues(srv, 1)
        check_alert_issue(it, "checkout", posted, rec, lead_s=60, lead_source="server")
        annotated = {"alertname": "CheckoutErrors", "service": "checkout"}
        _, _, posted2, rec2 = fire(rs, annotated, {"summary": "5xx", "roottrace_lead": "30s"},
                                   pair=pair)
        accepted_all(rec2)
        both = wait_issues(srv, 2)
        it2 = [x for x in both if x["alert"]["labels"] == annotated][0]
        check_alert_issue(it2, "checkout", posted2, rec2, lead_s=30, lead_source="annotation")
    finally:
        if rs:
            rs.close()
        srv.stop()


def test_alert_without_service_is_unmatched_and_audited(server, receivers):
    make_service_known(server, "checkout")
    labels = {"alertname": "DiskFull", "instance": "db-1:9100", "severity": "warning"}
    _, _, _, rec = fire(receivers, labels, {"summary": "disk full"})
    assert rec.status == 200, rec
    fp = rec.payload()["alerts"][0]["fingerprint"]
    ans = rec.answer_json()
    assert ans["alerts"] == 1 and ans["accepted"] == 0 and ans["refused"] == [], ans
    (um,) = ans["unmatched"]
    assert um["alert"] == 0 and um["fingerprint"] == fp and um["reason"], ans
    entry = wait_until(lambda: [e for e in audit(server) if fp in str(e)], 10,
                       f"an audit entry naming fingerprint {fp}")
    assert entry, entry
    holds_for(lambda: issues(server) == [], 1.5, "no issue")


def test_alert_for_an_unknown_service_opens_nothing(server, receivers):
    """An alert whose label names a service RootTrace has never heard of (no profile, no SDK
    poll: here node_exporter's job) is taken, audited with the service named, and opens no
    issue: `job` is on every Prometheus alert."""
    make_service_known(server, "checkout")
    labels = {"alertname": "NodeDiskFull", "job": "node", "instance": "db-1:9100"}
    _, _, _, rec = fire(receivers, labels, {"summary": "disk full"})
    accepted_all(rec)
    fp = rec.payload()["alerts"][0]["fingerprint"]
    entry = wait_until(lambda: [e for e in audit(server) if fp in str(e)], 10,
                       f"an audit entry naming fingerprint {fp}")
    assert entry[0]["action"] == "alert unmatched", entry
    assert '"node" is not one RootTrace knows' in entry[0]["detail"], entry
    holds_for(lambda: issues(server) == [], 1.5, "no issue")


def test_an_opened_issue_is_seen_with_its_notification(server):
    """The issue an alert opens is never read half-made: from the first answer that lists it,
    it carries the notification that opened it (notifications >= 1, last_notified_at set).
    Posted straight to the receiver, read back as fast as the API answers."""
    make_service_known(server, "checkout")
    seen = []
    for k in range(30):
        fp = f"{k:016x}"
        a = {"status": "firing", "labels": {"alertname": f"Probe{k}", "service": "checkout"},
             "annotations": {}, "startsAt": iso(time.time() - 60),
             "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "", "fingerprint": fp}
        r = server.post(AM_PATH, body={"version": "4", "alerts": [a]})
        assert r.status == 200, (r.status, r.body)
        it = wait_until(lambda: [x for x in issues(server) if x["alert"]["fingerprint"] == fp],
                        10, f"the issue of alert {fp}", interval=0.001)[0]
        seen.append(it)
    half = [x for x in seen if x["alert"]["notifications"] < 1
            or x["alert"]["last_notified_at"] is None]
    assert not half, f"{len(half)} of {len(seen)} issues first read without their " \
                     f"notification, e.g. {half[0]}"


# --- the issue's diff ------------------------------------------------------------------------

def upload_step(server, service, t_step, before, after, lo, hi, step=10):
    """cpu profiles of `step` s each covering [lo, hi): folded counts before, from t_step on
    after."""
    for start in range(lo, hi, step):
        counts = before if start < t_step else after
        body = "".join(f"{stack} {n}\n" for stack, n in counts.items()).encode()
        r = server.upload(body, "text/plain", service=service, type="cpu", unit="samples",
                          period_ns="10000000", start=str(start), duration_s=str(step),
                          instance="i-1")
        assert r.status == 201, (start, r.status, r.body)


def diff(server, issue_id, window_s):
    r = server.get(f"/api/v1/issues/{issue_id}/diff", {"type": "cpu", "window_s": window_s})
    assert r.status == 200, (r.status, r.body)
    return r.json()


def test_issue_diff_around_the_alert(server, receivers):
    """main.slow grows from 10 % to 60 % of the samples at T; the alert fires with startsAt
    T: the issue's diff ranks main.slow first, significant, over [T, T+120 s) against
    [T-120 s, T); resolved at T+60 s, over [T, T+60 s) against [T-60 s, T)."""
    T = (int(time.time()) - 300) // 10 * 10
    upload_step(server, "shop", T, {"main;main.slow": 10, "main;main.fast": 90},
                {"main;main.slow": 60, "main;main.fast": 40}, T - 600, T + 180)
    labels = {"alertname": "ShopLatency", "service": "shop"}
    notes = {"summary": "shop p99 over 1 s"}
    am, proxy, posted, rec = fire(receivers, labels, notes, starts_at=T)
    accepted_all(rec)
    (it,) = wait_issues(server, 1)
    assert parse_time(it["started_at"]) == T, it

    d = diff(server, it["id"], 120)
    assert parse_time(d["current"]["from"]) == T, d["current"]
    assert parse_time(d["current"]["to"]) == T + 120, d["current"]
    assert parse_time(d["baseline"]["from"]) == T - 120, d["baseline"]
    assert parse_time(d["baseline"]["to"]) == T, d["baseline"]
    top = d["functions"][0]
    assert top["name"] == "main.slow", [f["name"] for f in d["functions"]]
    assert top["significant"] is True, top
    assert top["delta_pp"] == pytest.approx(50, abs=1e-6), top
    assert d["functions"][-1]["name"] == "main.fast", d["functions"]

    am.post_alerts([alert(labels, notes, starts_at=T, ends_at=T + 60)])
    accepted_all(proxy.wait(1, resolved_with(labels))[0])
    ended = wait_until(lambda: (lambda x: x if x["state"] == "ended" else None)(
        issue(server, it["id"])), 10, "the issue to end")
    assert parse_time(ended["ended_at"]) == T + 60, ended

    d = diff(server, it["id"], 120)
    assert parse_time(d["current"]["from"]) == T, d["current"]
    assert parse_time(d["current"]["to"]) == T + 60, d["current"]
    assert parse_time(d["baseline"]["from"]) == T - 60, d["baseline"]
    assert parse_time(d["baseline"]["to"]) == T, d["baseline"]
    top = d["functions"][0]
    assert top["name"] == "main.slow" and top["significant"] is True, top
    assert top["delta_pp"] == pytest.approx(50, abs=1e-6), top


# --- two replicas ----------------------------------------------------------------------------

def test_two_clustered_replicas_open_one_issue(server, receivers):
    """Two Alertmanagers gossiping with each other (HA), both sent the alert as Prometheus
    sends every alert to every Alertmanager. The proxy holds the first notification until the
    second arrives, so both replicas notify before either's notification log has reached the
    other (what HA delivers at least once): still one issue."""
    make_service_known(server, "checkout")
    gate = receivers.proxy(gate=2)
    a, _ = receivers.alertmanager(proxy=gate, cluster=True, name="am-a", start=False)
    b, _ = receivers.alertmanager(proxy=gate, cluster=True, name="am-b", start=False)
    a.peers, b.peers = [b.cluster_address], [a.cluster_address]
    a.start()
    b.start()

    def clustered():
        sa, sb = a.status()["cluster"], b.status()["cluster"]
        return (sa["status"] == "ready" and sb["status"] == "ready"
                and len(sa.get("peers") or []) == 2 and len(sb.get("peers") or []) == 2)
    wait_until(clustered, 20, "the two Alertmanagers to form a ready cluster")

    labels = {"alertname": "CheckoutLatency", "service": "checkout"}
    notes = {"summary": "checkout p99 over 2 s"}
    posted = alert(labels, notes)
    a.post_alerts([posted])
    b.post_alerts([posted])
    both = gate.wait(2, firing_with(labels=labels), timeout=20)
    senders = {r.payload()["externalURL"] for r in both}
    assert senders == {a.url, b.url}, both
    for r in both[:2]:
        accepted_all(r)
    (it,) = wait_issues(server, 1)
    check_alert_issue(it, "checkout", posted, both[0])
    holds_for(lambda: len(issues(server)) == 1, 1.5, "one issue")

    resolved = alert(labels, notes, starts_at=parse_time(posted["startsAt"]),
                     ends_at=time.time() - 1)
    ends = parse_time(resolved["endsAt"])  # as posted, to the millisecond
    a.post_alerts([resolved])
    b.post_alerts([resolved])
    gate.wait(1, resolved_with(labels), timeout=20)
    ended = wait_until(lambda: (lambda x: x if x["state"] == "ended" else None)(
        issue(server, it["id"])), 10, "the issue to end")
    assert same_second(parse_time(ended["ended_at"]), ends), ended
    assert len(issues(server)) == 1
