#!/usr/bin/env bash
# Starts or stops a private ClickHouse server for tests (docs/internals/clickhouse.md):
# Debian's clickhouse-server (apt-get install clickhouse-server clickhouse-client), run as
# the current user with a config of our own in a temporary directory, on loopback on free
# ports.
#   scripts/clickhouse.sh start [DIR]  starts it, waits for SELECT 1, prints its URL
#   scripts/clickhouse.sh stop [DIR]   stops it and removes DIR
# DIR defaults to $ROOTTRACE_CH_DIR or /tmp/roottrace-clickhouse-$UID.
set -euo pipefail

cmd=${1:-}
dir=${2:-${ROOTTRACE_CH_DIR:-/tmp/roottrace-clickhouse-$(id -u)}}
server=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

case "$cmd" in
start)
    if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        cat "$dir/url"
        exit 0
    fi
    if [ ! -x "$server" ]; then
        echo "clickhouse-server not found: apt-get install clickhouse-server clickhouse-client" >&2
        exit 1
    fi
    # only a directory of ours (or an empty or new one) is reused
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/config.xml" ]; then
        echo "$dir is not empty and not a directory of this script's" >&2
        exit 1
    fi
    rm -rf "$dir"
    mkdir -p "$dir/data" "$dir/tmp"
    http=$(free_port); tcp=$(free_port)
    while [ "$tcp" = "$http" ]; do tcp=$(free_port); done
    cat >"$dir/config.xml" <<EOF
<yandex>
  <logger><level>warning</level><log>$dir/log.txt</log><errorlog>$dir/err.txt</errorlog></logger>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
EOF
    (cd "$dir" && exec "$server" --config-file="$dir/config.xml" >"$dir/stdout.txt" 2>&1) &
    echo $! >"$dir/pid"
    url="http://127.0.0.1:$http"
    for _ in $(seq 1 300); do
        if [ "$(curl -s --max-time 1 "$url/?query=SELECT%201" 2>/dev/null)" = "1" ]; then
            echo "$url" >"$dir/url"
            echo "$url"
            exit 0
        fi
        if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
            echo "clickhouse-server exited; see $dir/err.txt" >&2
            tail -n 20 "$dir/err.txt" "$dir/stdout.txt" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    echo "clickhouse-server did not answer within 30 s; see $dir/err.txt" >&2
    exit 1
    ;;
stop)
    if [ -f "$dir/pid" ]; then
        pid=$(cat "$dir/pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    if [ -f "$dir/config.xml" ]; then
        rm -rf "$dir"
    fi
    ;;
*)
    echo "usage: $0 start|stop [DIR]" >&2
    exit 2
    ;;
esac
