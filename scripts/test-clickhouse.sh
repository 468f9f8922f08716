#!/usr/bin/env bash
# `make test-clickhouse`: the conformance suite against ClickHouse. Starts a private
# clickhouse-server (scripts/clickhouse.sh), runs the store's unit tests (each data directory
# becomes a database of its own) and the integration tests (each server gets a database of
# its own; test_two_nodes.py runs two servers on one), then stops the server.
# Usage: scripts/test-clickhouse.sh UNIT_TEST_BINARY...   (ROOTTRACE_BIN names the server)
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/roottrace-ch-test.XXXXXX)
url=$(scripts/clickhouse.sh start "$dir") || exit 1
trap 'scripts/clickhouse.sh stop "$dir"' EXIT
export ROOTTRACE_TEST_STORE="clickhouse:$url"
echo "== ClickHouse $(curl -s "$url/?query=SELECT%20version()") at $url"
rc=0
echo "== store unit tests against ClickHouse"
scripts/run-unit.sh "$@" || rc=1
echo "== integration tests against ClickHouse"
python3 -m pytest -q -p no:cacheprovider -rs tests/integration || rc=1
exit $rc
