#!/usr/bin/env bash
# SDK overhead: the same fixed workload run with the SDK at defaults and without it, as
# co-scheduled pairs (copair.py: both runs of a pair side by side on one CPU, which cancels the
# host's speed swings), against a real server this script starts with profiling turned on. Go
# runs twice: quiet, and beside one CPU-bound process per CPU. summary.py prints, per SDK, the
# paired CPU ratio with its standard error and a verdict against the goals (Node and Go <= 1 %,
# Python, Java and PHP <= 2 %), or the number of pairs a verdict would take. Figures, never a
# failure on time: benchmarks are not tests (STYLE.md); the exit status is non-zero only when a
# run breaks.
# Usage: bench/sdk_overhead/run.sh [--rounds N] [--node-work N] [--python-work N] [--go-work N]
#                                  [--java-work N] [--php-work N]
#                                  [--only node|python|go|java|php]  (from anywhere in the repo;
#                                  php runs the CLI loop and php-fpm)
set -euo pipefail

cd "$(dirname "$0")/../.."
HERE=bench/sdk_overhead
BUILD=${BUILD:-build}
ROUNDS=20         # pairs of runs per SDK (and per condition for Go)
# Work per run: ~1 s of CPU on the machine of docs/performance.md (~2 s of wall side by side)
NODE_WORK=80      # work_node.js rounds
PY_WORK=50        # work_python.py rounds per compute thread
GO_WORK=20        # work_go rounds
JAVA_WORK=120     # WorkJava rounds
PHP_WORK=400      # work_php.php requests of ~2 ms each
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
RESULTS=$BUILD/bench-sdk  # the runs' JSON lines, kept: python3 $HERE/summary.py $RESULTS
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
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
# The server on the last CPU, away from the pairs on CPU 0 (when there are two).
ROOTTRACE_BOOTSTRAP_TOKEN=$TOKEN taskset -c $(($(nproc) - 1)) "$BUILD/roottrace" serve --data "$out/data" \
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
for s in bench-go bench-php bench-php-fpm; do
    api -X PUT -d '{"enabled": true}' "$URL/api/v1/services/$s/profiling" >/dev/null
done
# The samplers that tick on wall time (V8, Python's and Java's wall samplers) at twice their
# default interval (docs/control-plane.md: 10, 20, 50 ms): side by side a run has half a CPU,
# so this keeps the default's samples per CPU-second of work. Go's and excimer's tick on CPU.
for s in node:20000 python:40000 java:100000; do
    api -X PUT -d "{\"enabled\": true, \"sampling_interval_us\": ${s#*:}}" \
        "$URL/api/v1/services/bench-${s%%:*}/profiling" >/dev/null
done
api -X PUT -d '{"enabled": true, "type": "cpu"}' "$URL/api/v1/services/bench-java-jfr/profiling" \
    >/dev/null

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "== machine: $(nproc) CPUs, $cpu_model, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== node $(node --version), $(python3 --version 2>&1); server $URL, profiling on at the defaults"
echo "== $ROUNDS co-scheduled pairs per SDK on CPU 0 (copair.py); the workloads time their own work"

# run_pairs NAME [copair.py options] -- CMD_OFF... -- CMD_ON...: ROUNDS co-scheduled pairs
# (copair.py: both runs side by side on CPU 0), one JSON line per run into $RESULTS/NAME.jsonl.
run_pairs() {
    local name=$1; shift
    python3 "$HERE/copair.py" --out "$RESULTS/$name.jsonl" --pairs "$ROUNDS" --label "$name" "$@"
}

status=0
if [ -z "$ONLY" ] || [ "$ONLY" = node ]; then
    echo
    echo "== Node: work_node.js $NODE_WORK rounds (JSON, sha256, strings; one thread)"
    run_pairs node -- node --expose-gc "$HERE/work_node.js" "$NODE_WORK" -- \
        node --expose-gc "$HERE/work_node.js" "$NODE_WORK" "$PWD/sdk/node" "$URL" "$KEY" bench-node || status=1
fi
if [ -z "$ONLY" ] || [ "$ONLY" = python ]; then
    echo
    if PYTHONPATH="$PWD/sdk/python/src" python3 -c \
        'import roottrace; roottrace.start; roottrace.stop' 2>"$out/pyimport.txt"; then
        echo "== Python: work_python.py $PY_WORK rounds x 4 compute threads," \
            "3 sleeping, 3 blocked"
        run_pairs python -- python3 "$HERE/work_python.py" "$PY_WORK" -- \
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
    # GOMAXPROCS as on the whole machine (taskset alone would make it 1). Quiet: the pair
    # alone on its CPU; loaded: beside one CPU-bound process per CPU; heap256: quiet, with
    # 256 MiB kept live (a service with a real heap; 3x the pairs: its cost is near 0).
    for cond in quiet loaded heap256; do
        load=0 heap=0 pairs=$ROUNDS
        [ $cond = loaded ] && load=$(nproc)
        [ $cond = heap256 ] && heap=256 pairs=$((3 * ROUNDS))
        run_pairs "go-$cond" --pairs "$pairs" --load "$load" --env "GOMAXPROCS=$(nproc)" \
            --env "RT_BENCH_LIVE_HEAP_MB=$heap" -- "$out/work_go" "$GO_WORK" -- \
            "$out/work_go" "$GO_WORK" "$URL" "$KEY" bench-go || status=1
    done
fi
if [ -z "$ONLY" ] || [ "$ONLY" = java ]; then
    echo
    echo "== Java: WorkJava $JAVA_WORK rounds (compute threads, sleeping and blocked ones)"
    (cd sdk/java && mvn -q -B package -DskipTests)
    JAR=sdk/java/target/roottrace-agent.jar
    javac -cp "$JAR" -d "$out/java" "$HERE/work_java/WorkJava.java"
    # The JVM's own noise fixed the same on both sides: run to run, C2's compile timing and
    # the GC's sizing moved a run's CPU by +-15-30 % (A/A pairs); with the serial GC, a fixed
    # heap and C1 only, by +-1 %.
    JVM=(java -XX:+UseSerialGC -Xms256m -Xmx256m -XX:TieredStopAtLevel=1 -cp "$JAR:$out/java")
    # java: the wall sampler on 10 threads (walks of ~10 ms side by side stretch its interval);
    # java-light: the wall sampler on 2 compute threads (short walks, the configured interval);
    # java-jfr: CPU from JFR (type cpu) on the 10 threads. JFR holds its period within 10-20
    # ms and samples threads in Java code whether or not they hold the CPU, so side by side it
    # takes up to twice the default's samples per CPU-second (no doubling is possible).
    for cond in java java-light java-jfr; do
        shape=default service=bench-java jfr=0
        [ $cond = java-light ] && shape=light
        [ $cond = java-jfr ] && service=bench-java-jfr jfr=1
        run_pairs "$cond" --env "RT_BENCH_JAVA_SHAPE=$shape" --env "RT_BENCH_JAVA_JFR=$jfr" \
            -- "${JVM[@]}" WorkJava "$JAVA_WORK" \
            -- "${JVM[@]}" WorkJava "$JAVA_WORK" "$URL" "$KEY" "$service" || status=1
    done
fi
if [ -z "$ONLY" ] || [ "$ONLY" = php ]; then
    echo
    if php -r 'exit(extension_loaded("excimer") ? 0 : 1);'; then
        echo "== PHP: work_php.php $PHP_WORK requests (JSON, sha256, strings; ~2 ms each)"
        run_pairs php -- php "$HERE/work_php.php" "$PHP_WORK" -- \
            php "$HERE/work_php.php" "$PHP_WORK" "$URL" "$KEY" bench-php || status=1
        echo
        if ! command -v php-fpm8.2 >/dev/null && [ ! -x /usr/sbin/php-fpm8.2 ]; then
            echo "== PHP under php-fpm: skipped, php-fpm8.2 is not installed (make deps)"
        else
            echo "== PHP under php-fpm: $PHP_WORK requests of the same work over FastCGI to one" \
                "worker, the SDK at its defaults from the pool's environment (work_php_fpm.py)"
            run_pairs php-fpm -- python3 "$HERE/work_php_fpm.py" "$PHP_WORK" -- \
                python3 "$HERE/work_php_fpm.py" "$PHP_WORK" "$URL" "$KEY" bench-php-fpm || status=1
        fi
    else
        echo "== PHP: skipped, ext-excimer is not loaded (apt-get install php-excimer)"
    fi
fi

echo
python3 "$HERE/summary.py" "$RESULTS" "$URL" "$TOKEN"
exit $status
