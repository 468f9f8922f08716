"""Two `roottrace serve` nodes, each on its own replica of a replicated ClickHouse cluster
(docs/scale-out.md): the same answers from both; a replica killed with -9 in the middle of a
stream of uploads (the live node keeps storing, the dead one answers 503 with the reason
within 5 s and /healthz says the store is down); the replica restarted and caught up, every
acknowledged upload read back from both nodes, none lost, none counted twice; and what
insert_quorum=2 changes about that. Prints the figures docs/scale-out.md quotes."""
import json
import threading
import time

import pytest

import openapi_check as oc
import pprof_build as pb
from conftest import SESSION_S, Server, same_json, wait_for

S = 10**9
T = 1767225600  # 2026-01-01T00:00:00Z
CATCH_UP_S = SESSION_S + 60  # the old session expires, then the replica fetches what it missed


def nodes(cluster, tmp_path, db, **settings):
    a = Server(tmp_path / "a", store=cluster.store(1, db, **settings)).start()
    b = Server(tmp_path / "b", store=cluster.store(2, db, **settings)).start()
    return a, b


def upload(node, k, **kw):
    """Upload k of a stream: 10 s at T + 10 k, one stack of its own, main;u<k>, with k % 7 + 1
    samples; its profile_id is fixed, so a retry is one."""
    t0 = time.monotonic()
    r = node.upload(pb.cpu_profile({f"main;u{k}": k % 7 + 1}, time_nanos=(T + 10 * k) * S,
                                   duration_nanos=10 * S),
                    service="shop", instance=f"i-{k % 3}", version="v1",
                    profile_id=f"00000000-0000-4000-8000-{k:012d}", timeout=30, **kw)
    return r, time.monotonic() - t0


def caught_up(cluster, db):
    return wait_for(lambda: cluster.caught_up(1, db) and cluster.caught_up(2, db), CATCH_UP_S,
                    step=0.25)


def read_back(node, n):
    """Asserts that node's profile holds uploads 0..n-1, each exactly once."""
    r = node.get("/api/v1/profile", {"service": "shop", "type": "cpu", "from": T,
                                     "to": T + 10 * n})
    assert r.status == 200, r.body
    ans = r.json()
    assert ans["profiles"] == n, ans["profiles"]
    got = {f["name"]: f["self_samples"] for f in ans["functions"] if f["name"].startswith("u")}
    want = {f"u{k}": k % 7 + 1 for k in range(n)}
    lost = sorted(set(want) - set(got), key=lambda x: int(x[1:]))
    twice = sorted((f, got[f]) for f in got if f in want and got[f] != want[f])
    assert not lost and not twice, f"lost {lost}; counted wrong {twice}"
    assert ans["samples"] == sum(want.values())
    return ans


def test_two_nodes_on_two_replicas_answer_the_same(cluster, tmp_path):
    db = "rt_cluster_same"
    a, b = nodes(cluster, tmp_path, db)
    try:
        for k in range(12):
            counts = {"main;handle;parse": 10 + k, "main;handle;render": 5 + (k >= 6) * 20,
                      "main;idle": 3}
            node = (a, b)[k % 2]
            r = node.upload(pb.cpu_profile(counts, time_nanos=(T + 40 * k) * S,
                                           duration_nanos=45 * S),
                            service="shop", instance=f"i-{k % 3}",
                            version="v1" if k < 6 else "v2", thread_cpu_ns=str(k * 10**8))
            assert r.status == 201, r.body
        assert b.post("/api/v1/deploys", body={"service": "shop", "version": "v2",
                                               "at": T + 240}).status == 201
        issue = a.post("/api/v1/issues", body={"service": "shop", "title": "slow render",
                                               "started_at": T + 240})
        assert issue.status == 201
        assert b.put("/api/v1/services/shop/profiling",
                     body={"enabled": True, "type": "cpu"}).status == 200
        assert caught_up(cluster, db) is not None
        iid = issue.json()["id"]
        queries = [
            ("/api/v1/profile", {"service": "shop", "type": "cpu", "from": T + 13,
                                 "to": T + 431}),
            ("/api/v1/diff", {"service": "shop", "type": "cpu", "base_from": T + 3,
                              "base_to": T + 237, "cur_from": T + 237, "cur_to": T + 500}),
            ("/api/v1/timeline", {"service": "shop", "type": "cpu", "from": T, "to": T + 600,
                                  "buckets": 12}),
            (f"/api/v1/issues/{iid}/diff", {"type": "cpu", "window_s": 200}),
            ("/api/v1/deploys", {"service": "shop", "from": T, "to": T + 600}),
            ("/api/v1/issues", {}),
        ]
        for path, q in queries:
            ra, rb = a.get(path, q), b.get(path, q)
            assert ra.status == rb.status == 200, (path, ra.body, rb.body)
            same_json(ra.json(), rb.json())
            print(f"\n[same] {path}: {len(ra.body)} bytes, identical on both nodes")
        diff = a.get("/api/v1/diff", queries[1][1]).json()
        assert diff["current"]["profiles"] > 0 and diff["baseline"]["profiles"] > 0
        # the toggle made on B reaches A within a second or so (configs re-read each second)
        assert wait_for(lambda: a.get("/api/v1/services").json()
                        == b.get("/api/v1/services").json(), 5) is not None
        shop = [s for s in a.get("/api/v1/services").json() if s["name"] == "shop"]
        assert shop and shop[0]["profiling_enabled"] is True
    finally:
        a.stop()
        b.stop()


class Stream:
    """Uploads 0, 1, 2, ... every 50 ms, even ones through a, odd ones through b, recording
    each answer: (k, node name, status, seconds, body)."""

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.results, self.k = [], 0
        self.stopping = threading.Event()
        self.th = threading.Thread(target=self.run)

    def run(self):
        while not self.stopping.is_set():
            node, name = (self.a, "a") if self.k % 2 == 0 else (self.b, "b")
            started = time.monotonic()
            r, took = upload(node, self.k)
            self.results.append((self.k, name, r.status, took, r.body, started))
            self.k += 1
            time.sleep(0.05)

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.th.join(timeout=60)


def retry_until_stored(nodes_, results, deadline_s):
    """Sends every upload that got no 2xx again (same profile_id) until one is stored, as an
    SDK keeps a profile and retries it; returns the retries' answers."""
    answers = []
    pending = sorted({k for k, _, status, *_ in results if status // 100 != 2})
    deadline = time.monotonic() + deadline_s
    while pending and time.monotonic() < deadline:
        k = pending[0]
        r, _ = upload(nodes_[k % len(nodes_)], k)
        answers.append((k, r.status))
        if r.status // 100 == 2:
            pending.pop(0)
        else:
            time.sleep(0.2)
    assert not pending, f"never stored: {pending}; last answers {answers[-5:]}"
    return answers


def test_a_replica_lost_in_a_stream_of_uploads(cluster, tmp_path, spec, components):
    db = "rt_cluster_lost"
    a, b = nodes(cluster, tmp_path, db)
    c = None
    try:
        with Stream(a, b) as stream:
            assert wait_for(lambda: len(stream.results) >= 20, 30) is not None
            killed = time.monotonic()
            cluster.kill(2)
            # /healthz on the node whose replica died: 503, store down, within 5 s
            t0 = time.monotonic()
            h = b.get("/healthz", timeout=10)
            health_s = time.monotonic() - t0
            assert h.status == 503 and health_s < 5, (h.status, health_s)
            oc.validate(oc.deref(spec, spec["paths"]["/healthz"]["get"]["responses"]["503"])
                        ["content"]["application/json"]["schema"], components, h.json(),
                        "GET /healthz 503")
            assert h.json()["store"] == "down" and "ClickHouse" in h.json()["error"]
            assert a.get("/healthz").status == 200
            # a query on the dead node: 503 with the reason, not a hang or a 500
            t0 = time.monotonic()
            q = b.get("/api/v1/profile", {"service": "shop", "type": "cpu", "from": T,
                                          "to": T + 3600}, timeout=10)
            query_s = time.monotonic() - t0
            assert q.status == 503 and query_s < 5, (q.status, q.body, query_s)
            assert q.json()["error"] == "storage_error" and "ClickHouse" in q.json()["message"]
            # a node starting on the live replica while the other is down starts (the schema
            # is current: no ON CLUSTER statement waits for the dead one)
            t0 = time.monotonic()
            c = Server(tmp_path / "c", store=cluster.store(1, db)).start()
            start_s = time.monotonic() - t0
            # down until its ZooKeeper session has expired, and 40 uploads at least
            assert wait_for(lambda: sum(1 for r in stream.results if r[5] > killed + 0.5)
                            >= 40 and time.monotonic() - killed > SESSION_S + 3,
                            SESSION_S + 60) is not None
            down_s = time.monotonic() - killed
            restarting = time.monotonic()  # uploads that ended before this saw the replica down
            cluster.restart(2)
            restarted = time.monotonic()
            assert wait_for(lambda: b.get("/healthz").status == 200, CATCH_UP_S) is not None
            assert wait_for(lambda: len(stream.results) > 0 and stream.results[-1][1] == "b"
                            and stream.results[-1][2] == 201, CATCH_UP_S) is not None
            healthy_s = time.monotonic() - restarted
        results = stream.results
        # started after the kill, ended before the restart began (one in flight meanwhile may be
        # stored by the replica coming back: 201 is then right)
        after = [r for r in results if killed + 0.5 < r[5] and r[5] + r[3] < restarting]
        on_a = [r for r in after if r[1] == "a"]
        on_b = [r for r in after if r[1] == "b"]
        assert on_a and on_b
        assert all(r[2] == 201 for r in on_a), [(r[0], r[2], r[4][:200]) for r in on_a
                                                if r[2] != 201]
        assert all(r[2] == 503 for r in on_b), [(r[0], r[2]) for r in on_b if r[2] != 503]
        assert max(r[3] for r in on_b) < 5, max(r[3] for r in on_b)
        reasons = sorted({json.loads(r[4])["message"][:110] for r in on_b})
        catch_up_s = caught_up(cluster, db)
        assert catch_up_s is not None
        retries = retry_until_stored([b, a], results, 60)
        n = len(results)
        ans_a, ans_b = read_back(a, n), read_back(b, n)
        same_json(ans_a, ans_b)
        failed = sum(1 for r in results if r[2] // 100 != 2)
        print(f"\n[lost replica] {n} uploads; replica 2 down {down_s:.1f} s (ZooKeeper "
              f"sessions {SESSION_S:.0f} s): node A {len(on_a)} x 201; node B {len(on_b)} x "
              f"503 in at most {max(r[3] for r in on_b) * 1e3:.0f} ms ({reasons}); "
              f"B's /healthz 503 in {health_s * 1e3:.0f} ms, a query 503 in "
              f"{query_s * 1e3:.0f} ms; a node started on replica 1 meanwhile in "
              f"{start_s:.2f} s; B healthy {healthy_s:.1f} s after the restart, replicas "
              f"caught up {catch_up_s:.1f} s after that; {failed} refused uploads retried "
              f"({sorted({s for _, s in retries})}); read back from both nodes: {n} profiles, "
              f"0 lost, 0 counted twice")
    finally:
        for node in (a, b, c):
            if node:
                node.stop()
        if not cluster.caught_up(2, db):
            cluster.restart(2)


def test_insert_quorum_2_refuses_while_a_replica_is_down(cluster, tmp_path):
    """With insert_quorum=2 a 201 means two replicas hold the rows: with one down, uploads are
    refused (503) until it is back, first after the quorum timeout (the dead replica's
    ZooKeeper session still looks alive), then at once; the retries store each once."""
    db = "rt_cluster_quorum"
    a, b = nodes(cluster, tmp_path, db, insert_quorum=2, insert_quorum_timeout=2000)
    try:
        for k in range(6):
            r, _ = upload((a, b)[k % 2], k)
            assert r.status == 201, r.body
        cluster.kill(2)
        killed = time.monotonic()
        results = []
        k = 6
        while time.monotonic() - killed < SESSION_S + 6:
            started = time.monotonic()
            r, took = upload(a, k)
            results.append((k, "a", r.status, took, r.body, started))
            k += 1
            time.sleep(0.2)
        assert all(r[2] == 503 for r in results), [(r[0], r[2]) for r in results]
        messages = [json.loads(r[4])["message"] for r in results]
        slow = [r[3] for r in results if r[3] > 1]
        cluster.restart(2)
        restarted = time.monotonic()
        assert caught_up(cluster, db) is not None
        retries = retry_until_stored([a], results, CATCH_UP_S)
        stored_s = time.monotonic() - restarted
        n = k
        same_json(read_back(a, n), read_back(b, n))
        kinds = sorted({m[m.find("Code:"):][:100] for m in messages})
        print(f"\n[insert_quorum=2] replica 2 down: {len(results)} uploads on the live node "
              f"all 503 ({kinds}); {len(slow)} waited the quorum timeout (max "
              f"{max(slow, default=0):.1f} s), the rest answered in at most "
              f"{max((r[3] for r in results if r[3] <= 1), default=0) * 1e3:.0f} ms; after "
              f"the restart every refused upload was stored within {stored_s:.1f} s "
              f"({len(retries)} retries); {n} read back from both nodes, 0 lost, 0 twice")
    finally:
        a.stop()
        b.stop()
        if not cluster.caught_up(2, db):
            cluster.restart(2)


def test_zookeeper_lost_then_a_roottrace_node(cluster, tmp_path):
    """ZooKeeper killed: every replicated table turns read-only, so uploads are refused (503)
    on both nodes while queries keep answering from what the replicas hold; ZooKeeper back,
    the refused uploads are stored on retry. Then a roottrace node killed: the other answers
    everything, with the same data."""
    db = "rt_cluster_zk"
    a, b = nodes(cluster, tmp_path, db)
    try:
        for k in range(10):
            r, _ = upload((a, b)[k % 2], k)
            assert r.status == 201, r.body
        assert caught_up(cluster, db) is not None
        cluster.kill_zk()
        killed = time.monotonic()
        q = {"service": "shop", "type": "cpu", "from": T, "to": T + 1000}
        results, k = [], 10
        # the servers notice when their ZooKeeper session is lost (within its timeout); an
        # upload may hang a while then, so go on until three have started past it (at most 60 s)
        def late_count():
            return sum(1 for r in results if r[5] > killed + SESSION_S + 1)
        while (time.monotonic() - killed < SESSION_S + 4 or late_count() < 3) and \
                time.monotonic() - killed < SESSION_S + 60:
            started = time.monotonic()
            r, took = upload((a, b)[k % 2], k)
            results.append((k, "ab"[k % 2], r.status, took, r.body, started))
            k += 1
            time.sleep(0.1)
        late = [r for r in results if r[5] > killed + SESSION_S + 1]
        assert late and all(r[2] == 503 for r in late), [(r[0], r[2]) for r in late]
        messages = sorted({json.loads(r[4])["message"][:120] for r in late})
        reads = [a.get("/api/v1/profile", q), b.get("/api/v1/profile", q)]
        assert all(r.status == 200 and r.json()["profiles"] >= 10 for r in reads)
        health = (a.get("/healthz").status, b.get("/healthz").status)
        cluster.start_zk()
        back = time.monotonic()
        retries = retry_until_stored([a, b], results, CATCH_UP_S)
        stored_s = time.monotonic() - back
        assert caught_up(cluster, db) is not None
        n = k
        same_json(read_back(a, n), read_back(b, n))
        # a roottrace node lost: the other stores and answers alone
        a.proc.kill()
        a.proc.wait()
        r, _ = upload(b, n)
        assert r.status == 201, r.body
        read_back(b, n + 1)
        print(f"\n[ZooKeeper lost] {len(results)} uploads while it was down "
              f"({SESSION_S:.0f} s sessions): {len(late)} after the session timeout, all 503 "
              f"({messages}); queries 200 on both nodes, /healthz {health}; ZooKeeper back, "
              f"the refused uploads stored within {stored_s:.1f} s ({len(retries)} attempts); "
              f"{n} read back from both, 0 lost, 0 twice. Node A killed: B stored upload {n} "
              f"(201) and answers all {n + 1}")
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="module")
def spec():
    return oc.load_spec()


@pytest.fixture(scope="module")
def components(spec):
    return oc.json_schemas(spec)
