#!/usr/bin/env bash
# Fuzzes every SDK's config parser (DESIGN §5) for SECONDS each, one after the other, under
# nice: Go's native fuzzer (each FuzzXxx in sdk/go), atheris on the Python SDK (or, without
# atheris, its seeded property test in a time-budgeted loop), and the Node, Java and PHP
# seeded property tests with a time budget. Usage: scripts/fuzz-sdk.sh [SECONDS] [go|python|
# node|java|php ...] (default 60 s, every SDK). docs/reliability.md says what each asserts.
#
# New crashers land where `make test` replays them: sdk/go/testdata/fuzz/FuzzXxx/ (Go
# writes it) and, for the others, sdk/testdata/config_fuzz/, which every SDK's suite
# replays with one verdict per file. Exit status 1 when
# any fuzzer found a failure; each log is kept in $FUZZ_LOG_DIR (default a temp dir).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
SECONDS_EACH=${1:-60}
shift || true
WHICH=${*:-go python node java php}
case "$SECONDS_EACH" in '' | *[!0-9]*) echo "usage: $0 [SECONDS] [go|python|node|java|php ...]" >&2; exit 2 ;; esac
LOGS=${FUZZ_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/rt-fuzz-sdk-XXXXXX")}
mkdir -p "$LOGS"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
NICE="nice -n 10"
status=0
summary=()

# result NAME RC DETAIL: records one fuzzer's outcome.
result() {
    local verdict=ok
    [ "$2" -eq 0 ] || { verdict=FAILED; status=1; }
    summary+=("$(printf '%-28s %-6s %s' "$1" "$verdict" "$3")")
}

fuzz_go() {
    local t log rc
    for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' sdk/go/*_test.go | sed 's/^func //' | sort -u); do
        log=$LOGS/go-$t.log
        echo "== go: $t for ${SECONDS_EACH}s (log $log)"
        (cd sdk/go && GOTOOLCHAIN=local GOPROXY=off $NICE "$GO" test -run='^$' -fuzz="^$t\$" \
            -fuzztime="${SECONDS_EACH}s" -parallel="${FUZZ_JOBS:-1}" .) >"$log" 2>&1
        rc=$?
        tail -3 "$log"
        # The last progress line carries the execution count.
        result "go $t" $rc "$(grep -o 'execs: [0-9]*' "$log" | tail -1) (crashers: sdk/go/testdata/fuzz/$t/)"
    done
}

fuzz_python() {
    local log=$LOGS/python.log rc corpus=$LOGS/python-corpus
    local crashes=$REPO/sdk/testdata/config_fuzz/
    if python3 -c 'import atheris' 2>/dev/null; then
        echo "== python: atheris on parse_config for ${SECONDS_EACH}s (log $log)"
        python3 sdk/python/fuzz/fuzz_config.py --write-seeds "$corpus" >"$log" 2>&1
        $NICE python3 sdk/python/fuzz/fuzz_config.py -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
            -timeout=10 -rss_limit_mb=1024 -artifact_prefix="$crashes" "$corpus" >>"$log" 2>&1
        rc=$?
        grep -E '^(#[0-9]+[[:space:]]+DONE|==[0-9]+== ERROR|Traceback|AssertionError)' "$log" | tail -3
        result "python atheris" $rc "$(sed -n 's/^stat::number_of_executed_units: */execs: /p' "$log") (crashers: $crashes)"
    else
        echo "== python: atheris not installed: the seeded property test for ${SECONDS_EACH}s (log $log)"
        ROOTTRACE_CONFIG_FUZZ_SECONDS=$SECONDS_EACH PYTHONPATH=sdk/python/src:sdk/python/tests $NICE \
            python3 -c 'import config_fuzz, sys; sys.exit(config_fuzz.main())' >"$log" 2>&1
        rc=$?
        tail -3 "$log"
        result "python property loop" $rc "$(grep -o 'cases: [0-9]*' "$log" | tail -1) (crashers: $crashes)"
    fi
}

fuzz_node() {
    local log=$LOGS/node.log rc
    echo "== node: seeded property test for ${SECONDS_EACH}s (log $log)"
    (cd sdk/node && ROOTTRACE_CONFIG_FUZZ_SECONDS=$SECONDS_EACH $NICE node --test test/config_fuzz.test.js) >"$log" 2>&1
    rc=$?
    grep -E 'config fuzz|^# (pass|fail)' "$log"
    result "node property loop" $rc "$(grep -o '[0-9]* cases' "$log" | tail -1) (crashers: sdk/testdata/config_fuzz/)"
}

fuzz_java() {
    local log=$LOGS/java.log rc
    echo "== java: seeded property test for ${SECONDS_EACH}s (log $log)"
    (cd sdk/java && ROOTTRACE_CONFIG_FUZZ_SECONDS=$SECONDS_EACH $NICE mvn -B -q test \
        -Dtest=ConfigPropertyTest#seededHostileBodiesKeepTheInvariants -Dsurefire.failIfNoSpecifiedTests=false) >"$log" 2>&1
    rc=$?
    # Surefire keeps the test's own output in a file (pom.xml: redirectTestOutputToFile).
    cat sdk/java/target/surefire-reports/dev.roottrace.ConfigPropertyTest-output.txt >>"$log" 2>/dev/null
    grep -E 'config fuzz|Tests run:.*Fail' "$log" | sed 's/\x1b\[[0-9;]*m//g' | head -3
    result "java property loop" $rc "$(grep -o '[0-9]* cases' "$log" | tail -1) (crashers: sdk/testdata/config_fuzz/)"
}

fuzz_php() {
    local log=$LOGS/php.log rc
    echo "== php: seeded property test for ${SECONDS_EACH}s (log $log)"
    ROOTTRACE_CONFIG_FUZZ_SECONDS=$SECONDS_EACH $NICE php "${PHPUNIT:-/usr/bin/phpunit}" \
        -c sdk/php/phpunit.xml.dist --filter testSeededHostileBodiesKeepTheInvariants >"$log" 2>&1
    rc=$?
    grep -E 'config fuzz|^OK|FAILURES' "$log"
    result "php property loop" $rc "$(grep -o '[0-9]* cases' "$log" | tail -1) (crashers: sdk/testdata/config_fuzz/)"
}

for sdk in $WHICH; do
    case "$sdk" in
        go | python | node | java | php) "fuzz_$sdk" ;;
        *) echo "unknown SDK: $sdk" >&2; exit 2 ;;
    esac
done
echo
echo "== SDK config fuzzing, ${SECONDS_EACH}s each (logs in $LOGS)"
printf '%s\n' "${summary[@]}"
exit $status
