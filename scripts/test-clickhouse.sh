#!/usr/bin/env bash
# `make test-clickhouse`: the conformance suite against ClickHouse, on three setups:
# - clickhouse: Debian's clickhouse-server 18.16 (a private server that scripts/clickhouse.sh
#   starts): the store's unit tests (each data directory becomes a database of its own) and
#   the integration tests (each server gets a database of its own; test_two_nodes.py runs two
#   servers on one);
# - chdb: ClickHouse 26.9, whose query analyzer is mandatory (chDB behind scripts/chdb.sh),
#   the same tests;
# - cluster: two 18.16 replicas of one shard with ZooKeeper (scripts/ch-cluster.sh), every
#   database created with ?cluster=roottrace (Replicated* and Distributed tables): the store's
#   unit tests, the two-node and API-document tests, then tests/cluster (a replica killed
#   and brought back, insert_quorum), which starts a cluster of its own.
# Usage: scripts/test-clickhouse.sh UNIT_TEST_BINARY...   (ROOTTRACE_BIN names the server;
# CH_ENGINES="clickhouse chdb cluster" or a part of it chooses the setups; chDB's runs beside
# the others unless CH_SERIAL=1)
set -uo pipefail
cd "$(dirname "$0")/.."

# One setup: its server, the store's unit tests, the integration tests, its server stopped
# (and for the cluster, tests/cluster). Returns non-zero when anything failed.
run_engine() {
    local engine=$1 rc=0 dir urls url tests start stop
    shift
    dir=${RT_CH_SIDE_DIR:-}
    if [ -z "$dir" ]; then
        dir=$(mktemp -d /tmp/roottrace-$engine-test.XXXXXX) || return 1
        rmdir "$dir"
    fi
    start=$engine stop=$engine
    [ "$engine" = cluster ] && start=ch-cluster stop=ch-cluster
    if ! urls=$(ZK_TICK_MS=250 scripts/$start.sh start "$dir"); then
        echo "== $engine did not start"
        return 1
    fi
    url=$(echo "$urls" | head -n 1)
    export ROOTTRACE_TEST_STORE="clickhouse:$url"
    tests=tests/integration
    if [ "$engine" = cluster ]; then
        export ROOTTRACE_TEST_CLUSTER=roottrace
        tests="tests/integration/test_two_nodes.py tests/integration/test_openapi.py tests/integration/test_openapi_control.py"
    fi
    echo "== ClickHouse $(curl -s "$url/?query=SELECT%20version()") ($engine) at $url"
    echo "== store unit tests against ClickHouse ($engine)"
    scripts/run-unit.sh "$@" || rc=1
    echo "== integration tests against ClickHouse ($engine): $tests"
    # shellcheck disable=SC2086
    python3 -m pytest -q -p no:cacheprovider -rs $tests || rc=1
    scripts/$stop.sh stop "$dir"
    unset ROOTTRACE_TEST_STORE ROOTTRACE_TEST_CLUSTER
    if [ "$engine" = cluster ]; then
        echo "== the cluster's faults (tests/cluster: a replica lost, insert_quorum)"
        python3 -m pytest -q -s -rs -p no:cacheprovider tests/cluster || rc=1
    fi
    return $rc
}

# chDB's pass is the longest (its engine answers each statement in a single Python process,
# ~7 ms on average) and uses about one core: it runs beside the other two, which run one
# after the other, its output printed once they are done (CH_SERIAL=1: all in turn).
# A process and its descendants (a background job keeps no process group of its own here).
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        kill_tree "$c"
    done
    kill "$1" 2>/dev/null
}

# Interrupted (Ctrl-C, a CI cancel): the side pass, its chDB front and servers stop too.
stop_side() {
    [ -n "${side_pid:-}" ] || return 0
    kill_tree "$side_pid"
    scripts/chdb.sh stop "$side_dir" > /dev/null 2>&1
    rm -f "$side"
}

rc=0
engines=${CH_ENGINES:-clickhouse chdb cluster}
side= side_pid= side_dir=
if [ -z "${CH_SERIAL:-}" ] && [[ " $engines " == *" chdb "* ]] && [ "$engines" != chdb ]; then
    side=$(mktemp /tmp/roottrace-chdb-pass.XXXXXX) || exit 1
    side_dir=$(mktemp -d /tmp/roottrace-chdb-test.XXXXXX) || exit 1
    rmdir "$side_dir"
    trap 'stop_side; exit 130' INT
    trap 'stop_side; exit 143' TERM # bash runs it once the command in the foreground ends
    RT_CH_SIDE_DIR=$side_dir run_engine chdb "$@" > "$side" 2>&1 &
    side_pid=$!
    engines=$(echo " $engines " | sed 's/ chdb / /')
    echo "== chDB's pass runs beside the others (pid $side_pid); its output follows theirs"
fi
for engine in $engines; do
    run_engine "$engine" "$@" || rc=1
done
if [ -n "$side" ]; then
    wait "$side_pid" || rc=1
    side_pid=
    echo "== chDB's pass (ran beside the others):"
    cat "$side"
    rm -f "$side"
fi
exit $rc
