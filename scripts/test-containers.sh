#!/usr/bin/env bash
# The README's Compose quickstart, run for real on podman (issue #21): the base images that
# deploy/Dockerfile names are built from Debian's packages (scripts/lib/containers.sh, cached
# in ~/.cache/roottrace/containers and podman's image store), the server's image is built with
# `podman build -f deploy/Dockerfile`, and tests/containers runs the README's block as written
# in a copy of the repository, `docker compose` being docker-compose against podman's API.
# Prints how long each step took. Where podman cannot start a container, prints
# "skip containers: REASON" (.ci/run lists it) and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
. scripts/lib/containers.sh

skip() { echo "skip containers: $*"; exit 0; }
fail() { echo "test-containers: $*" >&2; exit 1; }

ct_podman_env
why=$(ct_unusable)
[ -z "$why" ] || skip "$why"
step "bookworm root (debootstrap, cached in $CT_CACHE)" ct_rootfs || fail "debootstrap failed"
step "debian:bookworm-slim stand-in (podman import)" ct_debian_image || fail "podman import failed"
why=$(ct_can_run)
[ -z "$why" ] || skip "$why"
# The quickstart publishes 127.0.0.1:4040 as written; something else there would answer for it.
if python3 -c 'import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(("127.0.0.1",4040))!=0)'; then
    fail "127.0.0.1:4040 is in use, and the quickstart publishes the server there" \
         "(scripts/demo-compose.sh --down stops make demo-compose's)"
fi
step "node:20-bookworm stand-in (Node.js $CT_NODE_VERSION)" ct_node_image || fail "node image"
step "clickhouse-server stand-in (Debian's 18.16)" ct_clickhouse_image || fail "clickhouse image"

WORK=$(mktemp -d /tmp/roottrace-containers.XXXXXX)
# The clone: the repository's files as git sees them (tracked, and new ones not ignored), in a
# directory whose name is the Compose project's, unlike any a user would give a clone.
CLONE=$WORK/rtct$(basename "$WORK" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
mkdir -p "$CLONE"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$CLONE" ||
    fail "copying the repository"
cleanup() {
    # Whatever the tests left: the project's containers, volumes and network.
    (cd "$CLONE" && COMPOSE_PROFILES=clickhouse docker-compose down -v --remove-orphans \
        >/dev/null 2>&1)
    ct_api_stop "$WORK"
    rm -rf "$WORK"
}
trap cleanup EXIT
step "server image (podman build -f deploy/Dockerfile)" ct_server_image "$CLONE" roottrace:local ||
    fail "the server's image did not build"
step "podman's Docker API for docker-compose" ct_api_start "$WORK" || fail "podman system service"
ct_docker_shim "$WORK/bin"

RT_CT_CLONE=$CLONE RT_CT_SHIM=$WORK/bin RT_CT_CLICKHOUSE_IMAGE=$CT_CLICKHOUSE_IMAGE \
RT_CT_DEBIAN_IMAGE=$CT_DEBIAN_IMAGE PYTHONPATH="$REPO/sdk/python/src${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m pytest -q -s -rs -p no:cacheprovider tests/containers
