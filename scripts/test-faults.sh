#!/usr/bin/env bash
# SDK faults: the server down, then back (docs/reliability.md). Runs tests/faults/run.py for
# each SDK (node, python, go, java, php) against build/roottrace behind the fault proxy, two
# SDKs at a time. Usage: scripts/test-faults.sh [--down-s N] [SDK ...]; the default is the
# compressed run of `make test` (down 60 s, poll 1 s); `make reliability` passes --down-s 600.
# Per-SDK results (JSON) land in $FAULTS_OUT (default build/faults/).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
down=60
sdks=()
while [ $# -gt 0 ]; do
    case "$1" in
        --down-s) down=$2; shift 2 ;;
        *) sdks+=("$1"); shift ;;
    esac
done
[ ${#sdks[@]} -gt 0 ] || sdks=(node python go java php)
export ROOTTRACE_BIN=${ROOTTRACE_BIN:-$ROOT/build/roottrace}
[ -x "$ROOTTRACE_BIN" ] || make -s all
out=${FAULTS_OUT:-$ROOT/build/faults}
mkdir -p "$out"
# The Java application needs the agent jar (scripts/test-java.sh builds it too), rebuilt when
# a source or the pom is newer than it.
jar=sdk/java/target/roottrace-agent.jar
case " ${sdks[*]} " in *" java "*)
    if [ ! -f "$jar" ] || [ -n "$(find sdk/java/src/main sdk/java/pom.xml -newer "$jar" | head -1)" ]; then
        (cd sdk/java && mvn -B -q package -DskipTests >"$out/java-build.log" 2>&1) ||
            { tail -20 "$out/java-build.log"; exit 1; }
    fi ;;
esac

status=0
run_one() {
    nice python3 tests/faults/run.py --sdk "$1" --down-s "$down" --json "$out/$1.json" \
        >"$out/$1.log" 2>&1
}
i=0
while [ $i -lt ${#sdks[@]} ]; do
    pids=()
    for s in "${sdks[@]:$i:2}"; do
        run_one "$s" &
        pids+=("$!:$s")
    done
    for p in "${pids[@]}"; do
        wait "${p%%:*}" || status=1
        cat "$out/${p#*:}.log"
    done
    i=$((i + 2))
done
exit $status
