#!/usr/bin/env bash
# The whole server under ThreadSanitizer, driven by the loopback load (bench/load): HTTP
# threads, group commit, the readers' pool, diffs beside uploads, slow clients and
# oversized bodies, all at once. Any data race TSan reports fails the run, as does any
# failed request or a server that died. The unit suite under TSan (`make TSAN=1 unit`)
# covers the library's threads one test at a time; this covers them together.
# Usage: scripts/test-tsan-load.sh [load options]; the default is the short run of
# `make test` (about a minute), `make tsan-load` passes the load's full phases.
set -uo pipefail
cd "$(dirname "$0")/.."
make -s TSAN=1 build/tsan/roottrace || exit 1
make -s build/bench/load || exit 1
reports=$(mktemp -d "${TMPDIR:-/tmp}/rt-tsan-load-XXXXXX")
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
grep -E "^== server (alive|stopped)|errors in all phases" "$reports/load.log"
found=$(find "$reports" -name 'tsan*' -type f | sort)
if [ -n "$found" ]; then
    echo "ThreadSanitizer reported $(cat $found | grep -c '^WARNING: ThreadSanitizer')" \
        "warning(s) in the server under load:"
    cat $found
    exit 1
fi
if [ $rc -ne 0 ]; then
    echo "the load failed (exit $rc): a request failed or the server died"
    tail -40 "$reports/load.log"
    exit 1
fi
echo "no data race reported by ThreadSanitizer in the server under load (${args[*]})"
