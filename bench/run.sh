#!/usr/bin/env bash
# Builds and runs the benchmarks (bench/*.c), then prints their figures side by side.
# Figures and ratios against a reference measured in the same run; nothing here passes or
# fails on time (STYLE.md). Usage: bench/run.sh [--mb N]   (from anywhere in the repo)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MB=300
while [ $# -gt 0 ]; do
    case "$1" in
        --mb) MB=$2; shift 2 ;;
        *) echo "usage: bench/run.sh [--mb N]" >&2; exit 2 ;;
    esac
done

make -s BUILD="$BUILD" bench-bins

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== temp dir: ${TMPDIR:-/tmp} on $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}')"
if command -v go >/dev/null 2>&1; then
    echo "== reference: $(go version)"
else
    echo "== go not found: the go tool pprof reference is skipped"
fi
echo

out=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-run-XXXXXX")
trap 'rm -rf "$out"' EXIT

status=0
"$BUILD/bench/bench_ingest" --mb "$MB" | tee "$out/ingest.txt" || status=1
echo
"$BUILD/bench/bench_routes" | tee "$out/routes.txt" || status=1
echo
"$BUILD/bench/bench_diff" | tee "$out/diff.txt" || status=1

echo
echo "== summary (ratio = RootTrace time / reference time on the same work, same run)"
printf '%-34s %-44s %s\n' "figure" "RootTrace" "reference"
awk '
/^gunzip \(reference\)/ { g = sprintf("%s profiles/s, %s MB/s comp", $4, $5) }
/^parse  /              { p = sprintf("%s profiles/s, %s MB/s comp", $3, $4); pr = $NF }
/^parse\+store/         { s = sprintf("%s profiles/s, %s MB/s comp", $3, $4); sr = $NF }
END {
    printf "%-34s %-44s %s\n", "ingest: parse", p, "gunzip " g
    printf "%-34s %-44s %s\n", "ingest: parse+store (SQLite)", s, "gunzip " g
    printf "%-34s %-44s\n", "  ratio parse / gunzip", pr
    printf "%-34s %-44s\n", "  ratio parse+store / gunzip", sr
}' "$out/ingest.txt"
awk '
/^RootTrace rt_query_diff/ { d = $NF }
/^go tool pprof -top/      { r = $NF }
/^  the pprof binary alone/ { b = $NF }
/^RATIO diff rootrace\/pprof / { ratio = $4 }
/^RATIO diff rootrace\/pprof-binary/ { bratio = $4 }
END {
    printf "%-34s %-44s %s\n", "diff 2 x 600 profiles (1 h each)", d " ms", (r == "" ? "skipped (no go)" : "pprof -diff_base " r " ms")
    printf "%-34s %-44s\n", "  ratio diff / go tool pprof", (r == "" ? "-" : ratio "x")
    if (b != "") {
        printf "%-34s %-44s %s\n", "", "", "pprof binary alone " b " ms"
        printf "%-34s %-44s\n", "  ratio diff / pprof binary", bratio "x"
    }
}' "$out/diff.txt"
echo
echo "== SDK overhead (Node and Python SDKs on/off, a real server): make bench-sdk"
echo "== Stores (SQLite and ClickHouse side by side, 1x and 10x): make bench-store"
echo "== Load (1,000 instances over loopback, slow clients, oversized bodies): make bench-load"
exit $status
