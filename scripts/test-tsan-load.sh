#!/usr/bin/env bash
# The whole server under ThreadSanitizer, driven by the loopback load (bench/load): HTTP
# threads, group commit, the readers' pool, diffs beside uploads, slow clients and
# oversized bodies, all at once. Any data race TSan reports fails the run, as does any
# failed request, an oversized body stored, or a server that died or did not exit cleanly.
# The unit suite under TSan (`make TSAN=1 unit`) covers the library's threads one test at a
# time; this covers them together.
# Usage: scripts/test-tsan-load.sh [load options]; the default is the short run of
# `make test` (about a minute), `make tsan-load` passes longer phases.
set -uo pipefail
cd "$(dirname "$0")/.."
# The sanitizer variables are given explicitly: from `make SAN=1 test` they would otherwise
# reach these inner makes through MAKEFLAGS and pick another build directory.
make -s BUILD=build/tsan TSAN=1 SAN= FUZZ= build/tsan/roottrace || exit 1
make -s BUILD=build TSAN= SAN= FUZZ= build/bench/load || exit 1
# log_path is cut at a space, a comma or a colon (TSAN_OPTIONS' separators): such a $TMPDIR
# is not used.
base=${TMPDIR:-/tmp}
case $base in *[[:space:]:,]*) base=/tmp ;; esac
reports=$(mktemp -d "$base/rt-tsan-load-XXXXXX")
trap 'rm -rf "$reports"' EXIT
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--services 10 --per-service 20 --seconds 20 --seed-minutes 2
    --capacity-seconds 5 --slow 50 --slow-seconds 10 --big 8 --big-mib 20)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true # as bench/load/run.sh: slow clients hold sockets
# halt_on_error=0: the load goes on after a report, so that one run shows them all; each
# report lands in its own file (log_path), which is what fails the run.
TSAN_OPTIONS="log_path=$reports/tsan halt_on_error=0 second_deadlock_stack=1" \
    build/bench/load --bin build/tsan/roottrace "${args[@]}" >"$reports/load.log" 2>&1
rc=$?
grep -E "^== server (alive|stopped)|errors in all phases|FAILED" "$reports/load.log"
mapfile -t found < <(find "$reports" -name 'tsan*' -type f | sort)
if [ ${#found[@]} -gt 0 ]; then
    echo "ThreadSanitizer reported $(cat "${found[@]}" | grep -c '^WARNING: ThreadSanitizer')" \
        "warning(s) in the server under load:"
    cat "${found[@]}"
    exit 1
fi
# bench/load fails on a failed upload or diff, an oversized body stored or answered 5xx, a
# server that died, and one that did not exit 0 on SIGTERM (ThreadSanitizer exits 66 after
# a report); the last line is checked here too, in case the load stopped before printing it.
if [ $rc -ne 0 ] || ! grep -q '^== server stopped with SIGTERM: exit 0' "$reports/load.log"; then
    echo "the load failed (exit $rc): a request failed, the server died or did not exit cleanly"
    tail -40 "$reports/load.log"
    exit 1
fi
echo "no data race reported by ThreadSanitizer in the server under load (${args[*]})"
