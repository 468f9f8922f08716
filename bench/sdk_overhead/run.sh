#!/usr/bin/env bash
# SDK overhead: the same fixed workload timed with the SDK at defaults and without it, in the
# same run, alternating (off/on, then on/off, ...), against a real server this script starts
# with profiling turned on. Prints the median wall and CPU time of each and their ratio, with
# PASS/OVER against the goals (Node and Go <= 1 %, Python, Java and PHP <= 2 %). Figures, never a failure on time:
# benchmarks are not tests (STYLE.md); the exit status is non-zero only when a run breaks.
# Usage: bench/sdk_overhead/run.sh [--rounds N] [--node-work N] [--python-work N] [--go-work N]
#                                  [--java-work N] [--php-work N]
#                                  [--only node|python|go|java|php]  (from anywhere in the repo)
set -euo pipefail

cd "$(dirname "$0")/../.."
HERE=bench/sdk_overhead
BUILD=${BUILD:-build}
ROUNDS=10         # pairs of runs per SDK
NODE_WORK=350     # work_node.js rounds: ~5 s per run on the machine of docs/performance.md
PY_WORK=175       # work_python.py rounds per compute thread: ~3.5 s per run there
GO_WORK=110       # work_go rounds: ~5 s per run there
JAVA_WORK=600     # WorkJava rounds: ~5 s per run there
PHP_WORK=1500     # work_php.php requests of ~2 ms each: ~3.5 s per run there
ONLY=
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift 2 ;;
        --node-work) NODE_WORK=$2; shift 2 ;;
        --python-work) PY_WORK=$2; shift 2 ;;
        --go-work) GO_WORK=$2; shift 2 ;;
        --java-work) JAVA_WORK=$2; shift 2 ;;
        --php-work) PHP_WORK=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        *) echo "usage: bench/sdk_overhead/run.sh [--rounds N] [--node-work N]" \
                "[--python-work N] [--go-work N] [--java-work N] [--php-work N]" \
                "[--only node|python|go|java|php]" >&2
           exit 2 ;;
    esac
done

make -s BUILD="$BUILD" all

out=$(mktemp -d "${TMPDIR:-/tmp}/rt-bench-sdk-XXXXXX")
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT

# The real server on a free port, profiling on at the defaults for both services.
TOKEN="rt_bench_admin_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
ROOTTRACE_BOOTSTRAP_TOKEN=$TOKEN "$BUILD/roottrace" serve --data "$out/data" \
    --listen "127.0.0.1:$PORT" >"$out/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    curl -fs "$URL/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fs "$URL/healthz" >/dev/null ||
    { echo "server did not start:"; cat "$out/server.log"; exit 1; }
api() { curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
KEY=$(api -X POST -d '{"scope": "ingest"}' "$URL/api/v1/keys" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
for s in bench-node bench-python bench-go bench-java bench-php; do
    api -X PUT -d '{"enabled": true}' "$URL/api/v1/services/$s/profiling" >/dev/null
done

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "== machine: $(nproc) CPUs, $cpu_model, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== node $(node --version), $(python3 --version 2>&1); server $URL, profiling on at the defaults"
echo "== $ROUNDS pairs per SDK, alternating; the workloads time their own work (see work_*.js/py)"

# run_pairs NAME CMD_OFF... -- CMD_ON...: ROUNDS pairs, order flipped every pair; one JSON
# line per run into $out/NAME.jsonl.
run_pairs() {
    local name=$1; shift
    local off=() on=()
    while [ "$1" != "--" ]; do off+=("$1"); shift; done
    shift
    on=("$@")
    : >"$out/$name.jsonl"
    for r in $(seq "$ROUNDS"); do
        local order="off on"
        [ $((r % 2)) -eq 0 ] && order="on off"
        for v in $order; do
            if [ "$v" = off ]; then "${off[@]}"; else "${on[@]}"; fi >>"$out/$name.jsonl" \
                || { echo "$name: a $v run failed"; return 1; }
            printf '  %s pair %d: %s\n' "$name" "$r" "$(tail -1 "$out/$name.jsonl" | cut -c1-160)"
        done
    done
}

status=0
if [ -z "$ONLY" ] || [ "$ONLY" = node ]; then
    echo
    echo "== Node: work_node.js $NODE_WORK rounds (JSON, sha256, strings; one thread)"
    run_pairs node node "$HERE/work_node.js" "$NODE_WORK" -- \
        node "$HERE/work_node.js" "$NODE_WORK" "$PWD/sdk/node" "$URL" "$KEY" bench-node || status=1
fi
if [ -z "$ONLY" ] || [ "$ONLY" = python ]; then
    echo
    if PYTHONPATH="$PWD/sdk/python/src" python3 -c \
        'import roottrace; roottrace.start; roottrace.stop' 2>"$out/pyimport.txt"; then
        echo "== Python: work_python.py $PY_WORK rounds x 4 compute threads," \
            "3 sleeping, 3 blocked"
        run_pairs python python3 "$HERE/work_python.py" "$PY_WORK" -- \
            env PYTHONPATH="$PWD/sdk/python/src" python3 "$HERE/work_python.py" "$PY_WORK" \
            "$URL" "$KEY" bench-python || status=1
    else
        echo "== Python: skipped, sdk/python is not importable yet: $(tail -1 "$out/pyimport.txt")"
    fi
fi

if [ -z "$ONLY" ] || [ "$ONLY" = go ]; then
    echo
    echo "== Go: work_go $GO_WORK rounds (JSON, sha256, strings; goroutines)"
    (cd "$HERE/work_go" && GOTOOLCHAIN=local GOPROXY=off go build -o "$out/work_go" .)
    run_pairs go "$out/work_go" "$GO_WORK" -- \
        "$out/work_go" "$GO_WORK" "$URL" "$KEY" bench-go || status=1
fi
if [ -z "$ONLY" ] || [ "$ONLY" = java ]; then
    echo
    echo "== Java: WorkJava $JAVA_WORK rounds (compute threads, sleeping and blocked ones)"
    (cd sdk/java && mvn -q -B package -DskipTests)
    JAR=sdk/java/target/roottrace-agent.jar
    run_pairs java java -cp "$JAR" "$HERE/work_java/WorkJava.java" "$JAVA_WORK" -- \
        java -cp "$JAR" "$HERE/work_java/WorkJava.java" "$JAVA_WORK" "$URL" "$KEY" bench-java \
        || status=1
fi
if [ -z "$ONLY" ] || [ "$ONLY" = php ]; then
    echo
    if php -r 'exit(extension_loaded("excimer") ? 0 : 1);'; then
        echo "== PHP: work_php.php $PHP_WORK requests (JSON, sha256, strings; ~2 ms each)"
        run_pairs php php "$HERE/work_php.php" "$PHP_WORK" -- \
            php "$HERE/work_php.php" "$PHP_WORK" "$URL" "$KEY" bench-php || status=1
    else
        echo "== PHP: skipped, ext-excimer is not loaded (apt-get install php-excimer)"
    fi
fi

echo
python3 "$HERE/summary.py" "$out" "$URL" "$TOKEN"
exit $status
