#!/usr/bin/env bash
# Starts or stops a current ClickHouse for tests: the engine of PyPI's chdb-core (26.9, in a
# virtualenv that scripts/install-deps.sh keeps in ~/.cache/roottrace/chdb-venv) behind the
# part of ClickHouse's HTTP interface that the backend uses (tests/clickhouse/chdb_http.py,
# which says what it does not emulate), on a free loopback port, data in a temporary
# directory. No current clickhouse-server package is reachable here (issue #14).
#   scripts/chdb.sh start [DIR]  starts it, waits for SELECT 1, prints its URL
#   scripts/chdb.sh stop [DIR]   stops it and removes DIR
# DIR defaults to $ROOTTRACE_CHDB_DIR or /tmp/roottrace-chdb-$UID. CHDB_VENV overrides the
# virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/pidfile.sh

cmd=${1:-}
dir=${2:-${ROOTTRACE_CHDB_DIR:-/tmp/roottrace-chdb-$(id -u)}}
venv=${CHDB_VENV:-$HOME/.cache/roottrace/chdb-venv}

case "$cmd" in
start)
    if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        cat "$dir/url"
        exit 0
    fi
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import chdb' 2>/dev/null; then
        echo "chdb-core not installed in $venv: run scripts/install-deps.sh" >&2
        exit 1
    fi
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/chdb-front" ]; then
        echo "$dir is not empty and not a directory of this script's" >&2
        exit 1
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    touch "$dir/chdb-front"
    "$venv/bin/python" tests/clickhouse/chdb_http.py "$dir/data" "$dir/port" \
        >"$dir/log.txt" 2>&1 &
    echo $! >"$dir/pid"
    for _ in $(seq 1 300); do
        if [ -s "$dir/port" ]; then
            url="http://127.0.0.1:$(cat "$dir/port")"
            if [ "$(curl -s --max-time 5 "$url/?query=SELECT%201" 2>/dev/null)" = "1" ]; then
                echo "$url" >"$dir/url"
                echo "$url"
                exit 0
            fi
        fi
        if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
            echo "the chDB front exited; see $dir/log.txt" >&2
            tail -n 20 "$dir/log.txt" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    echo "the chDB front did not answer within 30 s; see $dir/log.txt" >&2
    exit 1
    ;;
stop)
    stop_pidfile "$dir/pid"
    if [ -f "$dir/chdb-front" ]; then
        rm -rf "$dir"
    fi
    ;;
*)
    echo "usage: $0 start|stop [DIR]" >&2
    exit 2
    ;;
esac
