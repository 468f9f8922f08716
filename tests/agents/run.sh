#!/usr/bin/env bash
# Runs one real profiling agent against tests/agents/capture.py and records
# every request it sends.
#
#   tests/agents/run.sh AGENT VARIANT [OUTDIR] [-- capture.py options]
#
#   go      cpu | default                    pyroscope-go v1.5.0
#   node    wall | wall-cpu | all            @pyroscope/nodejs 0.6.4
#   python  default | oncpu0 | gil0 | stack | mem
#                                            pyroscope-io 1.4.0
#   java    itimer | cpu | wall | labels | alloc | otlp-itimer | otlp-wall
#                                            io.pyroscope:agent (JFR unless otlp-*;
#                                            labels = itimer + dynamic labels on coldLoop)
#
# Environment: DURATION (seconds, default 35), UPLOAD (seconds, default 5),
# NICE (default 10), JAVA (the java binary, default java on PATH). OUTDIR defaults to /tmp/roottrace-agents/AGENT-VARIANT.
# The requests land in OUTDIR/NNNN.json + NNNN.body, the program's output in
# OUTDIR/program.log, the capture server's in OUTDIR/capture.log; a summary is
# printed by inspect_capture.py. Install everything first with
# scripts/install-agents.sh. Exits 3 (and says so) when the agent is not installed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT=${1:?agent}
VARIANT=${2:?variant}
shift 2
OUT=/tmp/roottrace-agents/$AGENT-$VARIANT
if [ $# -gt 0 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
[ "${1:-}" = "--" ] && shift
CAPARGS=("$@")
DURATION=${DURATION:-35}
UPLOAD=${UPLOAD:-5}
NICE=${NICE:-10}
VENV=${ROOTTRACE_AGENTS_VENV:-$HOME/.cache/roottrace/agents-venv}
JAVA_AGENT_VERSION=${JAVA_AGENT_VERSION:-$(sed -n 's#.*<pyroscope.agent.version>\(.*\)</pyroscope.agent.version>.*#\1#p' "$HERE/java/pom.xml")}
JAVA_AGENT_JAR=${JAVA_AGENT_JAR:-$HOME/.m2/repository/io/pyroscope/agent/$JAVA_AGENT_VERSION/agent-$JAVA_AGENT_VERSION.jar}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

missing() { echo "SKIP: $AGENT agent not installed ($1); run scripts/install-agents.sh"; exit 3; }

case $AGENT in
go) "$GO" version >/dev/null 2>&1 || missing "no go" ;;
node) [ -d "$HERE/node/node_modules/@pyroscope/nodejs" ] || missing "no tests/agents/node/node_modules/@pyroscope/nodejs" ;;
python) "$VENV/bin/python" -c 'import pyroscope' 2>/dev/null || missing "no pyroscope-io in $VENV" ;;
java) [ -f "$JAVA_AGENT_JAR" ] || missing "no $JAVA_AGENT_JAR" ;;
*) echo "unknown agent $AGENT" >&2; exit 2 ;;
esac

rm -rf "$OUT"
mkdir -p "$OUT"
PORTFILE=$OUT/.port
python3 "$HERE/capture.py" --port 0 --port-file "$PORTFILE" --dir "$OUT" "${CAPARGS[@]}" >"$OUT/capture.log" 2>&1 &
CAP=$!
trap 'kill $CAP 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$PORTFILE" ] && break; sleep 0.1; done
PORT=$(cat "$PORTFILE")
SERVER=http://127.0.0.1:$PORT
echo "capture on $SERVER -> $OUT"

run() { nice -n "$NICE" "$@" >"$OUT/program.log" 2>&1 || echo "(program exited $?)"; }

case $AGENT in
go)
    BIN=$OUT/.agents-go
    (cd "$HERE/go" && GOFLAGS=-mod=mod "$GO" build -o "$BIN" .)
    run "$BIN" -server "$SERVER" -duration "${DURATION}s" -upload "${UPLOAD}s" -profiles "$VARIANT"
    ;;
node)
    (cd "$HERE/node" && DEBUG='pyroscope*' run node app.js --server "$SERVER" --duration "$DURATION" \
        --flush-ms "$((UPLOAD * 1000))" --mode "$VARIANT")
    ;;
python)
    PYARGS=()
    case $VARIANT in
    default) ;;
    oncpu0) PYARGS=(--oncpu 0) ;;
    gil0) PYARGS=(--gil-only 0) ;;
    oncpu0-gil0) PYARGS=(--oncpu 0 --gil-only 0) ;;
    stack) PYARGS=(--impl stack) ;;
    mem) PYARGS=(--mem 1) ;;
    *) echo "unknown python variant $VARIANT" >&2; exit 2 ;;
    esac
    (cd "$HERE/python" && run "$VENV/bin/python" app.py --server "$SERVER" --duration "$DURATION" \
        --upload "$UPLOAD" "${PYARGS[@]}")
    ;;
java)
    if [ ! -f "$HERE/java/target/classes/Burn.class" ] || [ "$HERE/java/src/main/java/Burn.java" -nt "$HERE/java/target/classes/Burn.class" ]; then
        mkdir -p "$HERE/java/target/classes"
        javac --release 11 -d "$HERE/java/target/classes" "$HERE/java/src/main/java/Burn.java"
    fi
    EVENT=$VARIANT FORMAT=jfr ALLOC=
    case $VARIANT in
    otlp-*) EVENT=${VARIANT#otlp-}; FORMAT=otlp ;;
    alloc) EVENT=itimer; ALLOC=512k ;;
    labels) EVENT=itimer; export BURN_LABELS=1 ;;
    esac
    export PYROSCOPE_APPLICATION_NAME=agents.java PYROSCOPE_SERVER_ADDRESS=$SERVER \
        PYROSCOPE_BASIC_AUTH_USER=roottrace PYROSCOPE_BASIC_AUTH_PASSWORD=rt_testkey \
        PYROSCOPE_TENANT_ID=rt-tenant PYROSCOPE_UPLOAD_INTERVAL=${UPLOAD}s \
        PYROSCOPE_PROFILER_EVENT=$EVENT PYROSCOPE_FORMAT=$FORMAT \
        PYROSCOPE_LABELS="version=1.0.0,hostname=$(hostname)" PYROSCOPE_LOG_LEVEL=debug
    [ -n "$ALLOC" ] && export PYROSCOPE_PROFILER_ALLOC=$ALLOC
    run "${JAVA:-java}" -javaagent:"$JAVA_AGENT_JAR" -cp "$HERE/java/target/classes" Burn "$DURATION"
    ;;
esac
sleep 1
kill $CAP 2>/dev/null || true
wait $CAP 2>/dev/null || true
trap - EXIT
rm -f "$PORTFILE"
n=$(find "$OUT" -maxdepth 1 -name '*.json' | wc -l)
echo "$n request(s) recorded in $OUT"
python3 "$HERE/inspect_capture.py" "$OUT" | grep -E '^== |sample_types=|time_nanos=|top leaf|series labels|q (from|until|name|spyName|format) ' || true
