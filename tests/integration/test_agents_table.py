"""The producers table (DESIGN §12) as docs/agents.md writes it, checked against the server:
for each row, an upload as that agent sends it is stored as the row says, with the row's
agent and, where relabelled, the type it declared; and every answer names its producers."""
import os
import re

from conftest import REPO

NOW = 1764460800  # 2025-11-30T00:00:00Z


def rows():
    """[(agent, recognised by, declares, stored as)] of docs/agents.md's producers table."""
    text = open(os.path.join(REPO, "docs", "agents.md")).read()
    table = text[text.index("| agent | recognised by |"):]
    out = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out.append((cells[0], cells[1], cells[2].split()[0], cells[3].strip("*")))
    return out


def test_the_docs_table_is_what_the_server_does(server):
    checked = 0
    for agent, recognised, declares, stored in rows():
        spy = re.match(r"`(?:spyName=)?(\w+)`", recognised)
        body = b"main;hot 3\nmain;cold 1\n"
        if agent == "anything else":  # "as declared": one declared cpu, stored as cpu
            spy, agent, declares, stored = "somespy", "unknown", "cpu", "cpu"
        elif spy:
            spy = spy.group(1)
        else:  # py-spy's own file: recognised by its frames, uploaded as folded stacks
            r = server.upload(b"main (app.py:3);hot (burn.py:9) 3\n", "text/plain",
                              service="table", type=declares if declares != "any" else "cpu",
                              unit="samples", period_ns="10000000", start=str(NOW),
                              duration_s="10")
            assert r.status == 201, r.body
            p = r.json()["profiles"][0]
            assert (p["agent"], p["type"], p["declared_type"]) == (agent, stored, "cpu"), p
            checked += 1
            continue
        q = {"name": f"table-{checked}.{declares}{{hostname=h}}", "from": str(NOW),
             "until": str(NOW + 10), "spyName": spy}
        r = server.post("/ingest", q, body, headers={"Content-Type": "text/plain"})
        assert r.status == 200, (agent, r.body)
        p = r.json()["profiles"][0]
        assert (p["agent"], p["type"]) == (agent, stored), (agent, recognised, p)
        assert p.get("declared_type") == (declares if declares != stored else None), p
        answer = server.get("/api/v1/profile", {"service": f"table-{checked}", "type": stored,
                                                "from": NOW, "to": NOW + 10}).json()
        prod = answer["producers"]
        assert [(x["agent"], x["declared_type"]) for x in prod] == \
            [(agent, declares if declares != stored else None)], prod
        assert answer["functions"][0]["name"] == "main.hot" or \
            answer["functions"][0]["name"] == "hot", answer["functions"][0]
        checked += 1
    assert checked == 10, checked
