#!/usr/bin/env bash
# The Java SDK's test suite (sdk/java, JUnit 5 through Maven) on JDK 17 and again on every
# other JDK >= 11 under /usr/lib/jvm, with the end-to-end test against build/roottrace
# required (a missing binary fails). Usage: scripts/test-java.sh (from anywhere in the repo).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT/sdk/java"
export ROOTTRACE_E2E_REQUIRED=1
export ROOTTRACE_BIN=${ROOTTRACE_BIN:-$ROOT/build/roottrace}
[ -x "$ROOTTRACE_BIN" ] || make -s -C "$ROOT" all

# The JDK's feature version (17, 25, ...), or nothing for a directory that is not a JDK.
jdk_version() {
    [ -x "$1/bin/javac" ] || return 0
    "$1/bin/java" -XshowSettings:properties -version 2>&1 |
        sed -n 's/^ *java.specification.version = //p' | sed 's/^1\.//'
}

# JDK 17 first (the default), then every other distinct JDK >= 11; symlinked aliases of one
# JDK (java-1.17.0-openjdk-amd64, openjdk-17) are run once.
jdks=()
seen=" "
for d in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/*; do
    [ -d "$d" ] || continue
    real=$(readlink -f "$d")
    case "$seen" in *" $real "*) continue ;; esac
    v=$(jdk_version "$real")
    [ -n "$v" ] && [ "$v" -ge 11 ] || continue
    seen="$seen$real "
    jdks+=("$real")
done
[ ${#jdks[@]} -gt 0 ] || { echo "no JDK >= 11 under /usr/lib/jvm" >&2; exit 1; }

# The agent jar (target/roottrace-agent.jar) that the end-to-end test runs, built once.
JAVA_HOME=${jdks[0]} mvn -B -q clean package -DskipTests >"${TMPDIR:-/tmp}/rt-java-build.log" 2>&1 ||
    { tail -40 "${TMPDIR:-/tmp}/rt-java-build.log"; exit 1; }

status=0
for jdk in "${jdks[@]}"; do
    echo "== sdk/java on $(basename "$jdk") (Java $(jdk_version "$jdk"))"
    start=$(date +%s)
    rm -rf target/surefire-reports
    if JAVA_HOME=$jdk mvn -B -q test >"${TMPDIR:-/tmp}/rt-java-test.log" 2>&1; then
        result=PASS
    else
        result=FAIL
        status=1
        grep -E '^\[ERROR\]|Tests run:|FAIL' "${TMPDIR:-/tmp}/rt-java-test.log" | grep -v '^\[ERROR\] *$' | head -40
    fi
    total=$(cat target/surefire-reports/*.xml 2>/dev/null | grep -o '<testsuite [^>]*' |
            sed -n 's/.* tests="\([0-9]*\)".*/\1/p' | paste -sd+ | bc)
    skipped=$(cat target/surefire-reports/*.xml 2>/dev/null | grep -o '<testsuite [^>]*' |
              sed -n 's/.* skipped="\([0-9]*\)".*/\1/p' | paste -sd+ | bc)
    echo "   $result: ${total:-0} tests (${skipped:-0} skipped) in $(( $(date +%s) - start )) s"
done
exit $status
