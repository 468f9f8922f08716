#!/usr/bin/env bash
# Starts or stops a private ClickHouse server for tests (docs/internals/clickhouse.md):
# Debian's clickhouse-server (apt-get install clickhouse-server clickhouse-client), run as
# the current user with a config of our own in a temporary directory, on loopback on free
# ports.
#   scripts/clickhouse.sh start [DIR]  starts it, waits for SELECT 1, prints its URL; a DIR
#                                      whose server was stopped or killed is started again
#                                      with its data and its ports
#   scripts/clickhouse.sh configure [DIR]  only writes DIR's config (free ports in DIR/ports:
#                                      HTTP, TCP, interserver HTTP), for a cluster whose
#                                      servers must know each other's ports before they start
#   scripts/clickhouse.sh kill [DIR]   kill -9 (a lost server), keeping DIR
#   scripts/clickhouse.sh stop [DIR]   stops it and removes DIR
# DIR defaults to $ROOTTRACE_CH_DIR or /tmp/roottrace-clickhouse-$UID. With CH_CONFIG_D set to
# a directory, its *.xml go into the server's config.d (merged into its config: the replicated
# cluster's files in deploy/clickhouse-cluster/, scripts/ch-cluster.sh); the server then also
# gets an interserver HTTP port (replicas fetch parts through it). The server's environment
# is this script's, so those files' from_env attributes read it.
set -euo pipefail
. "$(dirname "$0")/lib/pidfile.sh"

cmd=${1:-}
dir=${2:-${ROOTTRACE_CH_DIR:-/tmp/roottrace-clickhouse-$(id -u)}}
server=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

# Writes DIR/config.xml on free ports (DIR/ports: http tcp interserver).
configure() {
    rm -rf "$dir"
    mkdir -p "$dir/data" "$dir/tmp" "$dir/config.d"
    local http tcp inter
    http=$(free_port); tcp=$(free_port); inter=$(free_port)
    while [ "$tcp" = "$http" ]; do tcp=$(free_port); done
    while [ "$inter" = "$http" ] || [ "$inter" = "$tcp" ]; do inter=$(free_port); done
    echo "$http $tcp $inter" >"$dir/ports"
    local interserver=""
    if [ -n "${CH_CONFIG_D:-}" ]; then
        cp "$CH_CONFIG_D"/*.xml "$dir/config.d/"
        interserver="<interserver_http_port>$inter</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>"
    fi
    cat >"$dir/config.xml" <<EOF
<yandex>
  <logger><level>warning</level><log>$dir/log.txt</log><errorlog>$dir/err.txt</errorlog></logger>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  $interserver
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
</yandex>
EOF
}

case "$cmd" in
start)
    if running; then
        cat "$dir/url"
        exit 0
    fi
    if [ ! -x "$server" ]; then
        echo "clickhouse-server not found: apt-get install clickhouse-server clickhouse-client" >&2
        exit 1
    fi
    if [ ! -f "$dir/config.xml" ]; then
        # only a directory of ours (or an empty or new one) is used
        if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
            echo "$dir is not empty and not a directory of this script's" >&2
            exit 1
        fi
        configure
    fi
    read -r http _ <"$dir/ports"
    (cd "$dir" && exec "$server" --config-file="$dir/config.xml" >>"$dir/stdout.txt" 2>&1) &
    echo $! >"$dir/pid"
    url="http://127.0.0.1:$http"
    for _ in $(seq 1 300); do
        if [ "$(curl -s --max-time 1 "$url/?query=SELECT%201" 2>/dev/null)" = "1" ]; then
            echo "$url" >"$dir/url"
            echo "$url"
            exit 0
        fi
        if ! running; then
            echo "clickhouse-server exited; see $dir/err.txt" >&2
            tail -n 20 "$dir/err.txt" "$dir/stdout.txt" >&2 || true
            exit 1
        fi
        sleep 0.1
    done
    echo "clickhouse-server did not answer within 30 s; see $dir/err.txt" >&2
    exit 1
    ;;
configure)
    [ -f "$dir/config.xml" ] || configure
    ;;
kill)
    if [ -f "$dir/pid" ]; then
        kill -9 "$(cat "$dir/pid")" 2>/dev/null || true
    fi
    ;;
stop)
    stop_pidfile "$dir/pid"
    if [ -f "$dir/config.xml" ]; then
        rm -rf "$dir"
    fi
    ;;
*)
    echo "usage: $0 start|configure|kill|stop [DIR]" >&2
    exit 2
    ;;
esac
