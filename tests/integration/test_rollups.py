"""Rollups through the server (docs/internals/rollups.md): the answers of a server that reads
whole hours and days from their rollups equal those of one that never builds any (`--rollup-interval
0`), also after SIGKILLs while the server builds them at start, and (SQLite) after a crash in the
middle of a rollup's transaction. On both backends (make test-clickhouse runs this file on
ClickHouse). The equality of every field on random data is the unit test's
(tests/unit/query/test_rollup.c); this one runs the server's own builder and storage."""
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pprof_build as pb
from conftest import CLICKHOUSE, Server, clickhouse_sql, sqlite_only, store_uri

T = 1764460800  # 2025-11-30T00:00:00Z, on the hour
S = 10**9
HOURS = 8
INSTANCES = ("pod-a", "pod-b", "pod-c")
PROFILE_S = 300
RAW = ("--retention", "3650d", "--rollup-interval", "0")
ROLLED = ("--retention", "3650d", "--rollup-interval", "1s")

QUERIES = [
    ("/api/v1/profile", {"from": T, "to": T + HOURS * 3600}),
    ("/api/v1/profile", {"from": T - 3600, "to": T + 86400 + 3600}),  # the day, hours beside
    ("/api/v1/profile", {"from": T + 1800, "to": T + 5 * 3600 + 600}),
    ("/api/v1/profile", {"from": T + 3600, "to": T + 4 * 3600, "instance": "pod-b"}),
    ("/api/v1/diff", {"base_from": T + 3600, "base_to": T + 2 * 3600,
                      "cur_from": T + 2 * 3600, "cur_to": T + 4 * 3600}),
]

def seed(srv):
    """HOURS hours of 5-minute profiles; pod-b's start 7 s past each slot, so that one of its
    profiles an hour crosses the hour's edge; the hot function grows after hour 2."""
    rng = random.Random(7)
    for h in range(HOURS):
        for slot in range(3600 // PROFILE_S):
            for i, inst in enumerate(INSTANCES):
                start = T + h * 3600 + slot * PROFILE_S + (7 if i == 1 else 0)
                counts = {"main;serve;parse": rng.randint(20, 40),
                          "main;serve;render": rng.randint(20, 40) * (3 if h >= 2 else 1),
                          "main;gc": rng.randint(1, 9)}
                r = srv.upload(pb.cpu_profile(counts, time_nanos=start * S,
                                              duration_nanos=PROFILE_S * S),
                               service="shop", instance=inst,
                               version="v1" if h < 3 else "v2")
                assert r.status == 201, r.body


def answers(srv):
    out = []
    for path, params in QUERIES:
        r = srv.get(path, {"service": "shop", "type": "cpu", **params})
        assert r.status == 200, r.body
        out.append(r.json())
    return out


def same(x, y, key="$"):
    """Equal answers: counts exactly, sums to 1e-9 relative; _ns values are rounded sums of
    a different order, so +-1."""
    if isinstance(x, bool) or isinstance(y, bool) or x is None or y is None:
        assert x == y, key
    elif isinstance(x, (int, float)) and isinstance(y, (int, float)):
        tol = 1e-9 * max(abs(x), abs(y)) + (1 if key.endswith("_ns") else 1e-12)
        assert abs(x - y) <= tol, f"{key}: {x} != {y}"
    elif isinstance(x, dict):
        assert isinstance(y, dict) and x.keys() == y.keys(), key
        for k in x:
            same(x[k], y[k], k)
    elif isinstance(x, list):
        assert isinstance(y, list) and len(x) == len(y), key
        for a, b in zip(x, y):
            same(a, b, key)
    else:
        assert x == y, key


def db_count(data, sql):
    with sqlite3.connect(os.path.join(data, "roottrace.db")) as db:
        return db.execute(sql).fetchone()[0]


def rolled_blocks(srv):
    """(hours, days) rolled up in the server's store: SQLite's rollup_blocks; on ClickHouse,
    the blocks with a complete rollup of their current fingerprint (clickhouse_rollups.c)."""
    if not CLICKHOUSE:
        return tuple(db_count(srv.data_dir, "SELECT count(*) FROM rollup_blocks WHERE level = "
                              f"{level}") for level in (0, 1))
    block = {0: "if(duration_ns > 0 AND duration_ns <= 3600000000000 - time_ns % 3600000000000, "
                "intDiv(time_ns, 3600000000000), -1)",
             1: "if(duration_ns > 0 AND duration_ns <= 86400000000000 - time_ns % "
                "86400000000000, intDiv(time_ns, 86400000000000), -1)"}
    out = []
    for level in (0, 1):
        sql = (f"SELECT count() FROM (SELECT {block[level]} AS block, sum(cityHash64(id)) AS gen "
               "FROM profiles GROUP BY block HAVING block >= 0) AS cur ANY INNER JOIN (SELECT "
               f"block, gen FROM rollups WHERE level = {level} GROUP BY block, gen HAVING "
               "uniqExact(instance, has_version, version) = any(groups)) AS done "
               "USING (block, gen)")
        out.append(int(clickhouse_sql(store_uri(srv.data_dir), sql)))
    return tuple(out)


def wait_rolled(srv, hours, timeout=60):
    """Until the hours and their day are rolled up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h, d = rolled_blocks(srv)
        if h >= hours and d == 1:
            return
        time.sleep(0.2)
    raise AssertionError("the server did not roll the hours and the day up")


def test_rolled_answers_equal_raw_after_kills(tmp_path):
    """SIGKILLs at random moments while the server builds at start; then every block is rolled
    up and the answers equal those of a server that never builds."""
    data = tmp_path / "data"
    expected = raw_answers(data)
    kill_while_building(data, expected, random.Random(13), 0.5).stop()


def raw_answers(data):
    """Seeds the store of data through a server that never builds rollups; its answers."""
    raw = Server(data, extra_args=RAW).start()
    try:
        seed(raw)
        assert rolled_blocks(raw) == (0, 0)  # interval 0: none
        return answers(raw)
    finally:
        raw.stop()


def kill_while_building(data, expected, rng, within_s):
    """SIGKILLs four servers at random moments of their first within_s while they build at
    start; then one builds every block and answers as expected. Returns it, stopped."""
    for _ in range(4):
        srv = Server(data, extra_args=ROLLED).start()
        time.sleep(rng.uniform(0, within_s))
        assert srv.stop(signal.SIGKILL) == -signal.SIGKILL
    srv = Server(data, extra_args=ROLLED).start()
    try:
        wait_rolled(srv, HOURS)
        for e, g in zip(expected, answers(srv)):
            same(e, g)
        assert srv.metric("roottrace_rollup_failures_total") == 0
    finally:
        srv.stop()
    return srv


@sqlite_only("a crash inside SQLite's transaction; ClickHouse has none (the test above)")
def test_rolled_answers_equal_raw_after_crashes(tmp_path):
    data = tmp_path / "data"
    expected = raw_answers(data)

    # A crash inside a rollup's transaction: rows written, never committed (the process dies
    # with SIGKILL before COMMIT). SQLite drops them at the next open.
    code = ("import os, sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('BEGIN IMMEDIATE')\n"
            "db.execute(\"INSERT INTO rollups(service_id, type, level, block, instance_id, data) "
            "VALUES(1, 1, 0, ?, 1, x'00')\", (int(sys.argv[2]),))\n"
            "db.execute('INSERT INTO rollup_blocks VALUES(1, 1, 0, ?, 0)', (int(sys.argv[2]),))\n"
            "db.execute('DELETE FROM rollup_pending')\n"
            "os.kill(os.getpid(), 9)\n")
    p = subprocess.run([sys.executable, "-c", code, str(data / "roottrace.db"),
                        str(T // 3600 + 1)])
    assert p.returncode == -signal.SIGKILL

    # SIGKILLs while the server builds them at start, at random moments of the first 300 ms
    srv = kill_while_building(data, expected, random.Random(11), 0.3)
    # nothing stored twice, nothing waiting, the file sound
    assert db_count(srv.data_dir, "SELECT count(*) FROM rollup_pending") == 0
    assert db_count(srv.data_dir, "SELECT count(*) FROM rollups") == db_count(
        srv.data_dir, "SELECT count(*) FROM (SELECT DISTINCT level, block, instance_id, version "
                      "FROM rollups)")
    assert db_count(srv.data_dir, "SELECT count(*) FROM rollup_blocks") == HOURS + 1
    with sqlite3.connect(os.path.join(srv.data_dir, "roottrace.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_late_profile_sends_its_hour_back(tmp_path):
    srv = Server(tmp_path / "data", extra_args=ROLLED).start()
    try:
        late_profile_counts(srv)
    finally:
        srv.stop()


def late_profile_counts(srv):
    seed(srv)
    wait_rolled(srv, HOURS)
    before = answers(srv)[0]
    r = srv.upload(pb.cpu_profile({"main;late": 500}, time_nanos=(T + 2 * 3600 + 60) * S,
                                  duration_nanos=30 * S), service="shop", instance="pod-a")
    assert r.status == 201, r.body
    # at once (its hour and day are read raw again) and after they are rebuilt, it counts
    for _ in range(2):
        after = answers(srv)[0]
        assert after["profiles"] == before["profiles"] + 1
        late = [f for f in after["functions"] if f["name"] == "late"]
        assert late and late[0]["self_ns"] == 500 * 10_000_000, after["functions"][:3]
        wait_rolled(srv, HOURS)
