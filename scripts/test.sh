#!/usr/bin/env bash
# Runs every test suite in order, printing each suite's duration; stops at the first failure.
# Called by `make test` (the README's test command) after the build.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=0
suite() {
    local name=$1; shift
    local t0=$(date +%s)
    echo "== suite: $name"
    "$@"; local rc=$?
    echo "== suite: $name: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - t0 )) s"
    [ $rc -eq 0 ] || failed=1
    return $rc
}
suite "unit tests" make --no-print-directory unit || exit 1
suite "unit tests under ASan+UBSan+LeakSanitizer" make --no-print-directory SAN=1 unit || exit 1
suite "unit tests under ThreadSanitizer (any data race fails)" make --no-print-directory TSAN=1 unit || exit 1
suite "the server under ThreadSanitizer beside a short load (any data race fails)" scripts/test-tsan-load.sh || exit 1
suite "fuzz inputs replayed under ASan+UBSan (crashes and seeds)" make --no-print-directory fuzz-replay || exit 1
suite "integration tests (pytest)" make --no-print-directory integration || exit 1
suite "integration tests against the ASan+UBSan+LeakSanitizer server (any report fails)" make --no-print-directory SAN=1 integration || exit 1
suite "capacity against the kernel's CPU accounting (alone, beside hogs, under a CPU quota)" make --no-print-directory accuracy || exit 1
suite "conformance on ClickHouse 18.16, 26.9 (chDB) and a replicated 18.16 cluster; the cluster's faults" make --no-print-directory test-clickhouse || exit 1
suite "Node SDK (node --test)" scripts/test-node.sh || exit 1
suite "Python SDK (pytest)" scripts/test-python.sh || exit 1
suite "Go SDK (go test)" scripts/test-go.sh || exit 1
suite "Java SDK (JUnit 5, every JDK >= 11 installed)" scripts/test-java.sh || exit 1
suite "PHP SDK (PHPUnit, with and without ext-excimer)" scripts/test-php.sh || exit 1
suite "Pyroscope's agents against the server (go, nodejs, python, java; py-spy files)" make --no-print-directory test-agents || exit 1
suite "issues from alerts: Alertmanager 0.25 (one, and two clustered replicas) and Grafana's webhook" make --no-print-directory test-alerts || exit 1
suite "UI (playwright-core, Chromium)" scripts/test-ui.sh || exit 1
suite "the README's Compose quickstart on podman (images from Debian's packages, cached)" scripts/test-containers.sh || exit 1
suite "SDK faults: server down 60 s, then back" scripts/test-faults.sh || exit 1
exit $failed
