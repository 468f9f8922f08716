#!/usr/bin/env bash
# The file-based demonstration (`make demo-files`): a server, real
# profiles from ../shared/data ingested as two services, an issue on each, and its diff.
# The CPU service's diff converts to vCPU-hours per month; the wall-clock one refuses to.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/roottrace
DATA=../shared/data
DEMO=$(mktemp -d /tmp/roottrace-demo.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT

export ROOTTRACE_TOKEN=rt_demo_$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
ROOTTRACE_BOOTSTRAP_TOKEN=$ROOTTRACE_TOKEN $BIN serve --data "$DEMO/data" \
    --listen 127.0.0.1:$PORT 2>"$DEMO/server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$DEMO"' EXIT
for _ in $(seq 100); do $BIN health --url $URL >/dev/null 2>&1 && break; sleep 0.1; done
echo "== roottrace serving on $URL (data in $DEMO/data)"

now=$(date +%s)
T=$((now - 1800))        # the issue starts 30 minutes ago
W=600                    # 10-minute windows

echo
echo "== every real pprof file in $DATA/pprof, ingested or refused with its reason"
for f in "$DATA"/pprof/*.pb.gz "$DATA"/pprof/*.pprof "$DATA"/pprof/*.pgo "$DATA"/pprof/legacy/*; do
    $BIN ingest "$f" --service zoo --server $URL --at $((T - 7200)) 2>&1 | sed "s|$DATA/||" || true
done

echo
echo "== service 'checkout' (cpu): inferno's diff-folded before/after pair, 10 profiles of"
echo "   60 s each side of the issue start; a declared deploy 30 s before it"
for k in $(seq 0 9); do
    $BIN ingest "$DATA/collapsed/inferno__diff-folded_before.txt" --service checkout --type cpu \
        --unit samples --period_ns 10000000 --at $((T - W + 60 * k)) --duration 60 \
        --instance checkout-1 --version 1.4.0 --server $URL >/dev/null
    $BIN ingest "$DATA/collapsed/inferno__diff-folded_after.txt" --service checkout --type cpu \
        --unit samples --period_ns 10000000 --at $((T + 60 * k)) --duration 60 \
        --instance checkout-1 --version 1.5.0 --server $URL >/dev/null
done
$BIN deploy --service checkout --version 1.5.0 --at $((T - 30)) --server $URL
ISSUE=$($BIN issue create --service checkout --title "checkout p99 up" --at $T --server $URL --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo
$BIN diff --issue "$ISSUE" --window 10m --server $URL

echo
echo "== service 'worker' (wall clock): parca's fgprof profile before and after the issue"
for k in $(seq 0 9); do
    for at in $((T - W + 60 * k)) $((T + 60 * k)); do
        $BIN ingest "$DATA/pprof/parca__fgprof.pb.gz" --service worker --at $at --duration 60 \
            --instance worker-1 --server $URL >/dev/null
    done
done
ISSUE=$($BIN issue create --service worker --title "worker slow" --at $T --server $URL --json \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo
$BIN diff --issue "$ISSUE" --window 10m --limit 8 --server $URL

echo
echo "== top of the real Go CPU profile parca__fib.pb.gz (compare: go tool pprof -top)"
$BIN ingest "$DATA/pprof/parca__fib.pb.gz" --service fib --at $T --server $URL >/dev/null
$BIN top --service fib --type cpu --from $T --to $((T + 60)) --limit 8 --server $URL
