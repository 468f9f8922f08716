#!/usr/bin/env bash
# Runs bench_store on the replicated pair (docs/performance-stores.md, *Stores on a replicated
# cluster*): starts ZooKeeper and two Debian clickhouse-server 18.16 replicas of one shard
# (scripts/ch-cluster.sh, ZooKeeper's own clock), then, in one run so that the ratios compare
# like with like: (1) one server's database on replica 1, as `make bench-store` (the
# reference); (2) a database on the cluster (?cluster=roottrace: Replicated* tables, writes
# through Distributed) through one node; (3) the same with the ingest writers alternating
# between two nodes, one per replica. SQLite runs beside each as bench_store always does.
# Figures and ratios only; nothing passes or fails on time (STYLE.md).
# Usage: bench/store-cluster.sh [bench_store options]   (default --scales 1 --threads 1,4)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--scales 1 --threads 1,4)

make -s BUILD="$BUILD" bench-bins

dir=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-cluster-XXXXXX")
rmdir "$dir"
trap 'scripts/ch-cluster.sh stop "$dir"' EXIT
mapfile -t urls < <(scripts/ch-cluster.sh start "$dir")
echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== ClickHouse $(curl -s "${urls[0]}/?query=SELECT%20version()") x 2 replicas at ${urls[*]}, ZooKeeper in $dir/zk"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"

start=$(date +%s)
status=0
echo; echo "==== (1) one server (replica 1's server, a plain database)"
"$BUILD/bench/bench_store" --clickhouse "${urls[0]}" "${args[@]}" || status=$?
echo; echo "==== (2) the cluster, one node"
"$BUILD/bench/bench_store" --clickhouse "${urls[0]}?cluster=roottrace" "${args[@]}" || status=$?
echo; echo "==== (3) the cluster, two nodes (ingest writers alternate between the replicas)"
"$BUILD/bench/bench_store" --clickhouse "${urls[0]}?cluster=roottrace" --clickhouse2 "${urls[1]}" \
    --only ingest "${args[@]}" || status=$?
echo
echo "== took $(( $(date +%s) - start )) s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
