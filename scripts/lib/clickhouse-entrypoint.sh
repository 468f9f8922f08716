# The entrypoint of the ClickHouse stand-in image (scripts/lib/containers.sh): Debian's
# clickhouse-server 18.16 told what the official image's environment tells it. CLICKHOUSE_USER
# gets CLICKHOUSE_PASSWORD from any address, the server listens on every interface, and
# CLICKHOUSE_DB is created once the server answers. Runs as root, the server as clickhouse.
set -euo pipefail
mkdir -p /etc/clickhouse-server/config.d /etc/clickhouse-server/users.d
cat >/etc/clickhouse-server/config.d/listen.xml <<'EOF'
<yandex><listen_host>0.0.0.0</listen_host></yandex>
EOF
if [ -n "${CLICKHOUSE_USER:-}" ]; then
    cat >/etc/clickhouse-server/users.d/env-user.xml <<EOF
<yandex><users><${CLICKHOUSE_USER}>
  <password>${CLICKHOUSE_PASSWORD:-}</password>
  <networks><ip>::/0</ip></networks>
  <profile>default</profile><quota>default</quota>
</${CLICKHOUSE_USER}></users></yandex>
EOF
fi
chown -R clickhouse:clickhouse /var/lib/clickhouse
su -s /bin/sh clickhouse -c \
    'exec /usr/sbin/clickhouse-server --config-file=/etc/clickhouse-server/config.xml' &
server=$!
trap 'kill -TERM $server' TERM INT
if [ -n "${CLICKHOUSE_DB:-}" ]; then
    for _ in $(seq 300); do
        clickhouse-client --query 'SELECT 1' >/dev/null 2>&1 && break
        sleep 0.1
    done
    clickhouse-client --query "CREATE DATABASE IF NOT EXISTS ${CLICKHOUSE_DB}"
fi
wait $server || wait $server
