# Sourced by the scripts that run test servers (clickhouse.sh, chdb.sh, ch-cluster.sh).
# stop_pidfile FILE: SIGTERM to the process whose pid FILE holds, up to 10 s for it to end,
# then SIGKILL. Nothing when FILE is missing or the process is gone.
stop_pidfile() {
    [ -f "$1" ] || return 0
    local pid
    pid=$(cat "$1")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}
