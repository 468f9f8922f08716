"""The replicated cluster suite (docs/scale-out.md): a ZooKeeper and two Debian ClickHouse
18.16 replicas of one shard, started by scripts/ch-cluster.sh with the config files of
deploy/clickhouse-cluster/, and `roottrace serve` nodes on them (the Server of
tests/integration/conftest.py, ROOTTRACE_BIN).

ROOTTRACE_CLUSTER_ZK_TICK_MS (default 250) is ZooKeeper's tick: sessions last at most 20
ticks, and a killed replica is back only once its old session expired, so `make test` runs
on 5 s sessions and `make test-cluster-full` on the deployed 30 s."""
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))  # pprof_build, openapi_check
from shared_conftest import integration_conftest  # noqa: E402
CLUSTER = "roottrace"
ZK_TICK_MS = int(os.environ.get("ROOTTRACE_CLUSTER_ZK_TICK_MS", "250"))
SESSION_S = 20 * ZK_TICK_MS / 1000  # the longest session ZooKeeper grants: 20 ticks


_it = integration_conftest()
Server, same_json = _it.Server, _it.same_json


class Cluster:
    """The cluster of scripts/ch-cluster.sh in a temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="roottrace-cluster-")
        os.rmdir(self.dir)  # the script makes it

    def script(self, *args):
        out = subprocess.run([os.path.join(REPO, "scripts", "ch-cluster.sh"), args[0],
                              self.dir, *args[1:]], cwd=REPO, capture_output=True, text=True,
                             env={**os.environ, "ZK_TICK_MS": str(ZK_TICK_MS)}, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    def start(self):
        self.urls = self.script("start")
        assert len(self.urls) == 2, self.urls
        return self

    def stop(self):
        self.script("stop")

    def kill(self, n):
        """kill -9 replica n (1 or 2): a lost server, its data kept."""
        self.script("kill", str(n))

    def kill_zk(self):
        """kill -9 ZooKeeper (its data kept)."""
        self.script("kill-zk")

    def start_zk(self):
        self.script("start-zk")

    def restart(self, n):
        assert self.script("start-replica", str(n)) == [self.urls[n - 1]]

    def sql(self, n, query, db=None):
        """query on replica n (the body of the answer, text)."""
        url = self.urls[n - 1] + "/?" + urllib.parse.urlencode(
            {"query": query, **({"database": db} if db else {})})
        with urllib.request.urlopen(urllib.request.Request(url, data=b""), timeout=30) as r:
            return r.read().decode()

    def caught_up(self, n, db):
        """Whether replica n has every table of db writable, active and with nothing left to
        fetch or merge from the other's log."""
        out = self.sql(n, "SELECT count(), sum(is_readonly), sum(is_session_expired), "
                          "sum(queue_size), sum(inserts_in_queue), max(absolute_delay), "
                          "min(active_replicas) FROM system.replicas WHERE database = "
                          f"'{db}' FORMAT TSV").split()
        tables, ro, expired, queue, inserts, delay, active = map(int, out)
        return tables > 0 and ro == expired == queue == inserts == delay == 0 and active == 2

    def store(self, n, db, **settings):
        """The --store URI of database db on replica n, on the cluster."""
        q = urllib.parse.urlencode({"cluster": CLUSTER, **settings})
        return f"clickhouse:{self.urls[n - 1]}/{db}?{q}"


@pytest.fixture(scope="session")
def cluster():
    c = Cluster().start()
    yield c
    c.stop()


def wait_for(pred, seconds, step=0.1):
    """Polls pred until it holds; returns the seconds it took, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if pred():
            return time.monotonic() - t0
        time.sleep(step)
    return None
