#!/usr/bin/env bash
# Runs bench_store (SQLite and ClickHouse side by side, docs/performance-stores.md): builds the
# benchmarks, starts a private clickhouse-server (scripts/clickhouse.sh, free loopback ports,
# a temporary directory), runs both backends, and stops the server whatever happens.
# Figures and ratios only; nothing passes or fails on time (STYLE.md).
# Usage: bench/store.sh [bench_store options]   e.g. --scales 1,10 (the default), --scales 0.1
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

make -s BUILD="$BUILD" bench-bins

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== temp dir: ${TMPDIR:-/tmp} on $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}')"
echo "== SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || echo '(sqlite3 CLI not found)')"

chdir=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-ch-XXXXXX")
trap 'scripts/clickhouse.sh stop "$chdir"; rm -rf "$chdir"' EXIT
url=$(scripts/clickhouse.sh start "$chdir")
echo "== ClickHouse $(curl -s "$url/?query=SELECT%20version()") at $url (data in $chdir)"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

start=$(date +%s)
status=0
"$BUILD/bench/bench_store" --clickhouse "$url" "$@" || status=$?
echo
echo "== bench_store took $(( $(date +%s) - start )) s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
