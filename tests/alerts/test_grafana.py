"""Issues from Grafana Alerting's webhook contact point (DESIGN §13): the example payload in the
shape of Grafana's documentation (grafana_webhook_example.json, README.md) posted to
/api/v1/alerts/grafana, as Grafana sends it (Bearer, or Basic with the key as password)."""
import copy
import json
import os

import pytest

from conftest import (GRAFANA_PATH, basic, holds_for, issue, issues, make_service_known,
                      parse_time, wait_issues, wait_until)

HERE = os.path.dirname(os.path.abspath(__file__))
ENDS_AT = "2025-11-30T10:21:03.157076+02:00"


def example():
    with open(os.path.join(HERE, "grafana_webhook_example.json")) as f:
        return json.load(f)


def resolved_example():
    """The first alert of the example resolved 30 minutes on, as Grafana sends it alone in its
    group's notification."""
    p = example()
    a = copy.deepcopy(p["alerts"][0])
    a["status"] = "resolved"
    a["endsAt"] = ENDS_AT
    a["values"] = {"B": 0.41, "C": 0}
    a["valueString"] = ("[ var='B' labels={service=checkout, zone=eu-1} value=0.41 ], "
                        "[ var='C' labels={service=checkout, zone=eu-1} value=0 ]")
    p.update(status="resolved", alerts=[a], commonLabels=a["labels"],
             commonAnnotations=a["annotations"], title="[RESOLVED] Shop (blue checkout eu-1)",
             state="ok", message="**Resolved**\n\nValue: B=0.41, C=0\n")
    return p


def post(server, payload, token=None, headers=None):
    return server.post(GRAFANA_PATH, body=json.dumps(payload).encode(), token=token,
                       headers={"Content-Type": "application/json", **(headers or {})})


def test_grafana_firing_opens_one_issue(server):
    make_service_known(server, "checkout")
    key = server.key("ingest")
    p = example()
    r = post(server, p, token=key)
    assert r.status == 200, (r.status, r.body)
    ans = r.json()
    assert ans["alerts"] == 2 and ans["accepted"] == 1 and ans["refused"] == [], ans
    # the second alert has no service label (Grafana's own example has none)
    (um,) = ans["unmatched"]
    assert um["alert"] == 1 and um["fingerprint"] == p["alerts"][1]["fingerprint"], ans

    (it,) = wait_issues(server, 1)
    a = p["alerts"][0]
    assert it["service"] == "checkout" and it["source"] == "grafana", it
    assert it["title"] == "Checkout p99 latency over 2 s in eu-1", it
    assert it["state"] == "open" and it["ended_at"] is None, it
    assert parse_time(it["started_at"]) == pytest.approx(parse_time(a["startsAt"]), abs=1e-6)
    assert it["started_at"].startswith("2025-11-30T07:51:03"), it  # UTC
    al = it["alert"]
    assert al["generator_url"] == a["generatorURL"], al
    assert al["fingerprint"] == a["fingerprint"], al
    assert al["labels"] == a["labels"], al
    assert al["status"] == "firing" and al["lead_source"] == "none" and al["lead_s"] == 0, al

    # Grafana notifies again (repeat interval, or a second Grafana of an HA pair)
    r = post(server, p, headers={"Authorization": basic("grafana", key)}, token="")
    assert r.status == 200, (r.status, r.body)
    holds_for(lambda: len(issues(server)) == 1, 1.5, "one issue")


def test_grafana_resolved_sets_ended_at(server):
    make_service_known(server, "checkout")
    key = server.key("ingest")
    assert post(server, example(), token=key).status == 200
    (it,) = wait_issues(server, 1)
    r = post(server, resolved_example(), headers={"Authorization": basic("grafana", key)},
             token="")
    assert r.status == 200, (r.status, r.body)
    assert r.json() == {"alerts": 1, "accepted": 1, "refused": [], "unmatched": []}, r.body
    ended = wait_until(lambda: (lambda x: x if x["state"] == "ended" else None)(
        issue(server, it["id"])), 10, "the issue to end")
    assert parse_time(ended["ended_at"]) == pytest.approx(parse_time(ENDS_AT), abs=1e-6), ended
    assert ended["alert"]["status"] == "resolved", ended
    assert ended["started_at"] == it["started_at"], ended
    assert len(issues(server)) == 1


def test_grafana_resolved_without_issue_opens_nothing(server):
    make_service_known(server, "checkout")
    r = post(server, resolved_example(), token=server.key("ingest"))
    assert r.status == 200, (r.status, r.body)
    holds_for(lambda: issues(server) == [], 1.5, "no issue")
