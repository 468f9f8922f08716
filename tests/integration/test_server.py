"""The server process: health, metrics, request log, clean SIGTERM, durability under
kill -9, and the CLI working on the same data directory without a server."""
import json
import os
import signal
import threading
import time

import pprof_build as pb
from conftest import BIN, CLICKHOUSE, Server, cli

T = 1764460800
S = 10**9


def test_health_and_metrics(server):
    r = server.get("/healthz")
    assert r.status == 200 and r.json()["status"] == "ok"
    assert server.upload(pb.cpu_profile({"main.a": 1}), service="m").status == 201
    assert server.upload(b"", service="m").status == 400
    text = server.get("/metrics").body.decode()
    assert "roottrace_uploads_total 1" in text
    assert 'roottrace_refusals_total{reason="malformed"} 1' in text
    assert "roottrace_store_profiles 1" in text
    # the upload's commit, holding one upload; the frame dictionary holds its one frame
    assert server.metric("roottrace_store_commit_uploads_count") == 1
    assert server.metric('roottrace_store_commit_uploads_bucket{le="1"}') == 1
    assert server.metric('roottrace_store_commit_uploads_bucket{le="+Inf"}') == 1
    assert server.metric("roottrace_store_commit_uploads_sum") == 1
    assert server.metric('roottrace_store_dict_entries{kind="frame"}') == 1
    assert server.metric('roottrace_store_dict_entries{kind="stack"}') == 1
    # its memory, within SQLite's bound of 256 MiB, never emptied for one frame; ClickHouse's
    # dictionary is its id map and has no bound (0)
    bound = 0 if CLICKHOUSE else 256 << 20
    assert 0 < server.metric("roottrace_store_dict_bytes") <= 256 << 20
    assert server.metric("roottrace_store_dict_bound_bytes") == bound
    assert server.metric("roottrace_store_dict_resets_total") == 0
    # its memory: the resident size is the kernel's (read just before; it moves a little),
    # and malloc holds the dictionary; a server under ASan has no malloc figures (its
    # allocator replaces malloc's)
    statm = open(f"/proc/{server.proc.pid}/statm").read().split()
    rss = int(statm[1]) * os.sysconf("SC_PAGE_SIZE")
    assert abs(server.metric("process_resident_memory_bytes") - rss) <= 0.2 * rss
    used, free = server.metric("roottrace_heap_used_bytes"), server.metric("roottrace_heap_free_bytes")
    if "/san/" in BIN:
        assert used is None and free is None
    else:
        assert used >= server.metric("roottrace_store_dict_bytes") > 0 and free >= 0
    # no SDK polled: nothing queued for the poll writer, nothing dropped (its bound is in
    # test_control.c's test_poll_queue_bound)
    assert server.metric("roottrace_polls_queued") == 0
    assert server.metric("roottrace_polls_dropped_total") == 0
    server.get("/api/v1/profile", {"service": "m", "type": "cpu"})
    assert server.metric('roottrace_query_duration_seconds_count{query="profile"}') == 1
    # one query alone never waits for its turn (tests/unit/http/test_gate.c makes them wait)
    assert server.metric("roottrace_scans_waiting") == 0
    assert server.metric("roottrace_scans_waited_total") == 0


def test_sigterm_is_a_clean_stop_and_requests_are_logged(tmp_path):
    srv = Server(tmp_path / "data").start()
    srv.get("/api/v1/services")
    assert srv.stop(signal.SIGTERM) == 0
    log = open(srv.log_path).read()
    assert '"GET /api/v1/services" 200' in log
    assert "stopped" in log


def test_kill_9_loses_no_acknowledged_profile(tmp_path):
    # Recent profiles: the restarted server's retention sweep (30 d) would delete older ones.
    T = int(time.time()) - 3600
    srv = Server(tmp_path / "data").start()
    try:
        acked, lock, stop = [], threading.Lock(), threading.Event()

        def client(cid):
            k = 0
            while not stop.is_set() and k < 2000:
                pid = f"00000000-0000-4000-8000-{cid:04d}{k:08d}"
                try:
                    r = srv.upload(pb.cpu_profile({f"main;c{cid}": 1 + k % 7},
                                                  time_nanos=(T + k) * S, duration_nanos=S),
                                   service="crash", instance=f"c{cid}", profile_id=pid,
                                   timeout=5)
                except OSError:
                    return
                if r.status == 201:
                    with lock:
                        acked.append(pid)
                k += 1

        threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        srv.proc.kill()
        srv.proc.wait()
        stop.set()
        for t in threads:
            t.join()
        assert len(acked) > 20
        srv.log.close()
        srv.start()
        j = srv.get("/api/v1/profile", {"service": "crash", "type": "cpu", "from": T - 1,
                                        "to": T + 3000}).json()
        assert j["profiles"] >= len(acked)
        # Every acknowledged profile is whole: re-uploading it is a duplicate.
        for pid in acked[:: max(1, len(acked) // 25)]:
            cid, k = int(pid[24:28]), int(pid[28:])
            r = srv.upload(pb.cpu_profile({f"main;c{cid}": 1 + k % 7}, time_nanos=(T + k) * S,
                                          duration_nanos=S),
                           service="crash", instance=f"c{cid}", profile_id=pid)
            assert r.status == 200 and r.json()["duplicate"] is True
    finally:
        if srv.proc.poll() is None:
            srv.stop()


def test_cli_on_data_dir_matches_api(tmp_path):
    srv = Server(tmp_path / "data").start()
    for k in range(3):
        srv.upload(pb.cpu_profile({"main;a;b": 4, "main;c": 1}, time_nanos=(T + 60 * k) * S,
                                  duration_nanos=60 * S), service="local")
    api = srv.get("/api/v1/profile", {"service": "local", "type": "cpu", "from": T,
                                      "to": T + 180}).json()
    srv.stop()
    out = cli("top", "--data", srv.data_dir, "--service", "local", "--type", "cpu", "--from",
              str(T), "--to", str(T + 180), "--json").stdout
    assert json.loads(out)["functions"] == api["functions"]
    plain = cli("top", "--data", srv.data_dir, "--service", "local", "--type", "cpu", "--from",
                str(T), "--to", str(T + 180)).stdout
    assert "Type: cpu (excludes time spent waiting)" in plain
    assert "Capacity:" in plain and "vCPU-hours/month" in plain
    row = [l for l in plain.splitlines() if l.endswith("  b")][0].split()
    assert row[0] == "120ms" and row[1] == "80.00%"


def test_cli_help_goes_to_stdout_and_exits_0_and_a_bad_call_exits_2(tmp_path):
    for args in (["--help"], ["help"], ["serve", "--help"], ["top", "-h"],
                 ["key", "create", "--scope", "read", "--help"], ["top", "--json", "-h"]):
        r = cli(*args, check=False)
        assert r.returncode == 0 and r.stderr == "", (args, r.returncode, r.stderr)
        assert r.stdout.startswith("roottrace: a self-hosted continuous profiler"), args
        assert "  serve   [--data DIR | --store URI]" in r.stdout
    for args in ([], ["bogus"]):
        r = cli(*args, check=False)
        assert r.returncode == 2 and r.stdout == "" and "usage: roottrace COMMAND" in r.stderr
    r = cli("serve", "--bogus", check=False)
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr
    # An option's value is not a request for help: "-h" is a version here.
    r = cli("deploy", "--service", "s", "--version", "-h", "--at", "1764460800", "--json",
            "--data", str(tmp_path / "d"))
    assert json.loads(r.stdout)["version"] == "-h"


def test_request_log_cannot_be_forged(tmp_path):
    srv = Server(tmp_path / "data").start()
    forged = '2026-11-30T00:00:00Z info 127.0.0.1 "POST /api/v1/keys" 201'
    srv.get("/nope%0A" + forged.replace(" ", "%20").replace('"', "%22"), token="")
    srv.stop()
    lines = open(srv.log_path).read().splitlines()
    assert not any(l.startswith("2026-11-30T00:00:00Z info") for l in lines)
    assert any("/nope\\x0a2026" in l for l in lines)


def test_path_ids_are_canonical_positive_integers(server):
    issue = server.post("/api/v1/issues", body={"service": "ids", "title": "t",
                                                "started_at": 1764460800}).json()
    key = server.post("/api/v1/keys", body={"scope": "read"}).json()
    assert server.get(f"/api/v1/issues/{issue['id']}").json()["title"] == "t"
    for bad in ("0" + str(issue["id"]), "+" + str(issue["id"]), "0", "-1", "x",
                "99999999999999999999"):
        r = server.get(f"/api/v1/issues/{bad}")
        assert r.status == 404, (bad, r.status)
        assert r.json()["message"] == f"no issue '{bad}' (ids are positive integers)"
        r = server.get(f"/api/v1/issues/{bad}/diff")
        assert r.status == 404, (bad, r.status)
    for bad in ("+" + str(key["id"]), "0" + str(key["id"])):
        r = server.delete(f"/api/v1/keys/{bad}")
        assert r.status == 404 and "positive integers" in r.json()["message"], (bad, r.body)
    assert server.get("/api/v1/issues/999999").json()["message"] == "no issue 999999"
    assert server.delete(f"/api/v1/keys/{key['id']}").status == 200
