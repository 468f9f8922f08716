"""Authentication and scopes (DESIGN §9, docs/control-plane.md): bound ingest keys,
revocation, the bootstrap token. The matrix of every route x every principal is
test_security.py::test_auth_matrix (docs/security.md)."""
import os
import re
import subprocess
import time

import pprof_build as pb
from conftest import BIN, free_port, sqlite_only

T = 1764460800
S = 10**9

def test_health_and_metrics_need_no_key(server):
    assert server.get("/healthz", token="").status == 200
    assert server.get("/metrics", token="").status == 200


def test_bound_ingest_key(server):
    server.put("/api/v1/services/a/profiling", body={"enabled": True})
    server.put("/api/v1/services/b/profiling", body={"enabled": True})
    k = server.key("ingest", service="a")
    prof = pb.cpu_profile({"main;a": 1}, time_nanos=T * S, duration_nanos=S)
    assert server.upload(prof, service="a", token=k).status == 201
    r = server.upload(prof, service="b", token=k)
    assert r.status == 403 and "bound" in r.json()["message"]
    assert server.get("/api/v1/sdk/config", {"service": "b", "instance": "x"},
                      token=k).status == 403
    r = server.get("/api/v1/services", token=k)
    assert r.status == 403
    assert r.json()["message"] == "an ingest key cannot use GET /api/v1/services"
    r = server.upload(prof, service="a", token=server.key("read"))
    assert r.status == 403
    assert r.json()["message"] == "a read key cannot use POST /api/v1/profiles"


def test_keys_listed_without_secrets_and_revoked(server):
    created = server.post("/api/v1/keys", body={"scope": "read", "name": "grafana"}).json()
    assert created["key"].startswith("rt_") and len(created["key"]) > 40
    listed = server.get("/api/v1/keys").json()
    assert all("key" not in k for k in listed)
    mine = [k for k in listed if k["id"] == created["id"]][0]
    assert mine["name"] == "grafana" and mine["revoked_at"] is None
    assert server.get("/api/v1/services", token=created["key"]).status == 200
    assert server.delete(f"/api/v1/keys/{created['id']}").status == 200
    assert server.get("/api/v1/services", token=created["key"]).status == 401
    assert server.delete(f"/api/v1/keys/{created['id']}").status == 404
    actions = [a["action"] for a in server.get("/api/v1/audit").json()]
    assert "key.create" in actions and "key.revoke" in actions


def test_bad_scope_is_refused(server):
    assert server.post("/api/v1/keys", body={"scope": "root"}).status == 400
    r = server.post("/api/v1/keys", body={"scope": "read", "service": "x"})
    assert r.status == 400


@sqlite_only("reads the database file and the data directory's mode")
def test_bootstrap_token_shown_once_and_stored_hashed(tmp_path):
    data = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ROOTTRACE_BOOTSTRAP_TOKEN"}

    def run_once():
        log = tmp_path / f"log{time.monotonic_ns()}"
        with open(log, "wb") as f:
            p = subprocess.Popen([BIN, "serve", "--data", str(data), "--listen",
                                  f"127.0.0.1:{port}"], stdout=f, stderr=f, env=env)
            time.sleep(1.0)
            p.terminate()
            p.wait(timeout=20)
        return open(log).read()

    first = run_once()
    tokens = re.findall(r"\brt_[A-Za-z0-9_-]{40,}\b", first)
    assert len(tokens) == 1
    second = run_once()
    assert not re.findall(r"\brt_[A-Za-z0-9_-]{40,}\b", second)
    db = open(data / "roottrace.db", "rb").read()
    assert tokens[0].encode() not in db
    assert oct(os.stat(data).st_mode & 0o777) == "0o700"
