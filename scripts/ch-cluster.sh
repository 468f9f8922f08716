#!/usr/bin/env bash
# Starts or stops a replicated ClickHouse cluster for tests (docs/scale-out.md): Debian's
# ZooKeeper (zookeeperd's jars, run as the current user on a free loopback port) and two
# Debian clickhouse-server 18.16 replicas of one shard (scripts/clickhouse.sh, with
# deploy/clickhouse-cluster/ in their config.d), all under DIR.
#   scripts/ch-cluster.sh start DIR          starts all three, prints the replicas' URLs (one a line)
#   scripts/ch-cluster.sh kill DIR N         kill -9 replica N (1 or 2), keeping its data
#   scripts/ch-cluster.sh start-replica DIR N  starts replica N again, prints its URL
#   scripts/ch-cluster.sh kill-zk DIR        kill -9 ZooKeeper, keeping its data
#   scripts/ch-cluster.sh start-zk DIR       starts ZooKeeper again
#   scripts/ch-cluster.sh stop DIR           stops everything and removes DIR
# ZK_TICK_MS (default 2000, ZooKeeper's own) bounds the ClickHouse sessions at 20 ticks: a
# killed replica is back only once its old session has expired, so `make test` runs with 250
# (5 s sessions) and `make test-cluster-full` with the default (30 s, as deployed).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/pidfile.sh
cmd=${1:-}
dir=${2:?usage: $0 start|kill|start-replica|kill-zk|start-zk|stop DIR [N]}
ZK_JAR=/usr/share/java/zookeeper.jar

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

zk_ok() {
    python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"ruok")
sys.exit(0 if s.recv(4) == b"imok" else 1)
PY
}

# The environment deploy/clickhouse-cluster/cluster.xml reads, for replica $1.
replica_env() {
    local p1 p2
    read -r _ p1 _ <"$dir/r1/ports"
    read -r _ p2 _ <"$dir/r2/ports"
    export RT_CH_REPLICA1_HOST=127.0.0.1 RT_CH_REPLICA1_TCP_PORT=$p1
    export RT_CH_REPLICA2_HOST=127.0.0.1 RT_CH_REPLICA2_TCP_PORT=$p2
    export RT_ZK_HOST=127.0.0.1 RT_ZK_PORT
    RT_ZK_PORT=$(cat "$dir/zk/port")
    export RT_CH_REPLICA="r$1"
}

start_replica() {
    (replica_env "$1" && scripts/clickhouse.sh start "$dir/r$1")
}

# Starts ZooKeeper on DIR/zk (its config and data kept across a kill) and waits for ruok.
start_zk() {
    local port
    port=$(cat "$dir/zk/port")
    (exec java -Xmx256m -cp "$ZK_JAR" -Dzookeeper.log.dir="$dir/zk" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk/zoo.cfg" \
        >>"$dir/zk/out.txt" 2>&1) &
    echo $! >"$dir/zk/pid"
    for _ in $(seq 1 300); do
        zk_ok "$port" && return 0
        if ! kill -0 "$(cat "$dir/zk/pid")" 2>/dev/null; then
            echo "ZooKeeper exited; see $dir/zk/out.txt" >&2
            tail -n 20 "$dir/zk/out.txt" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "ZooKeeper did not answer within 30 s" >&2
    return 1
}

case "$cmd" in
start)
    if [ ! -f "$ZK_JAR" ]; then
        echo "ZooKeeper not found: apt-get install zookeeperd" >&2
        exit 1
    fi
    if [ -e "$dir" ]; then
        echo "$dir exists: stop it first" >&2
        exit 1
    fi
    mkdir -p "$dir/zk/data"
    port=$(free_port)
    echo "$port" >"$dir/zk/port"
    cat >"$dir/zk/zoo.cfg" <<CFG
tickTime=${ZK_TICK_MS:-2000}
dataDir=$dir/zk/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
maxClientCnxns=0
CFG
    start_zk
    CH_CONFIG_D=$PWD/deploy/clickhouse-cluster scripts/clickhouse.sh configure "$dir/r1"
    CH_CONFIG_D=$PWD/deploy/clickhouse-cluster scripts/clickhouse.sh configure "$dir/r2"
    start_replica 1
    start_replica 2
    ;;
start-replica)
    start_replica "${3:?replica 1 or 2}"
    ;;
kill)
    scripts/clickhouse.sh kill "$dir/r${3:?replica 1 or 2}"
    ;;
kill-zk)
    kill -9 "$(cat "$dir/zk/pid")" 2>/dev/null || true
    ;;
start-zk)
    start_zk
    ;;
stop)
    for r in 1 2; do
        if [ -d "$dir/r$r" ]; then scripts/clickhouse.sh stop "$dir/r$r"; fi
    done
    stop_pidfile "$dir/zk/pid"
    if [ -f "$dir/zk/zoo.cfg" ]; then rm -rf "$dir"; fi
    ;;
*)
    echo "usage: $0 start|kill|start-replica|kill-zk|start-zk|stop DIR [N]" >&2
    exit 2
    ;;
esac
