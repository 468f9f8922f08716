#!/usr/bin/env bash
# Runs the loopback load test (bench/load) against a fresh `roottrace serve`: 60 s at the
# realistic rate with diff clients, compressed rates for the capacity, slow clients and a
# flood of oversized bodies. Figures, not a test (STYLE.md); exit 1 only when something failed
# outright (bench/load/main.c: a failed request, an oversized body stored or answered with a
# 5xx other than 503, a server that died or did not exit 0 on SIGTERM). Usage: bench/load/run.sh [load options, e.g. --seconds 120]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/roottrace" "$BUILD/bench/load"
echo "== $(date -u +%FT%TZ), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec nice -n 5 "$BUILD/bench/load" --bin "$BUILD/roottrace" "$@"
