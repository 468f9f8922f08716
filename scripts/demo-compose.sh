#!/usr/bin/env bash
# make demo-compose: the product demonstration (scripts/demo.sh) with the server in its
# container. The README's Quickstart block is pasted in build/demo-compose/rtdemo (a copy of
# the repository) on podman, as scripts/test-containers.sh runs it (scripts/lib/containers.sh:
# base images from Debian's packages, docker-compose against podman's API); demo.sh then
# drives the server at http://127.0.0.1:4040 with the admin token from that .env.
# The container keeps running afterwards, with its data; --exit removes it at the end, and
#   scripts/demo-compose.sh --down   removes it (containers, volumes, build/demo-compose).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/containers.sh
DIR=$PWD/build/demo-compose
PROJECT=$DIR/rtdemo
EXIT=0
for a in "$@"; do [ "$a" = "--exit" ] && EXIT=1; done

ct_podman_env
mkdir -p "$DIR"
down() {
    [ -d "$PROJECT" ] && (cd "$PROJECT" && docker-compose down -v >/dev/null 2>&1) || true
    ct_api_stop "$DIR"
    rm -rf "$DIR"
}
if [ "${1:-}" = "--down" ]; then
    ct_api_start "$DIR" && down
    exit 0
fi
why=$(ct_unusable)
[ -z "$why" ] || { echo "demo-compose: $why (scripts/install-deps.sh)" >&2; exit 1; }
step "bookworm root (debootstrap, cached in $CT_CACHE)" ct_rootfs
step "debian:bookworm-slim stand-in" ct_debian_image
why=$(ct_can_run)
[ -z "$why" ] || { echo "demo-compose: $why" >&2; exit 1; }
step "node:20-bookworm stand-in" ct_node_image

rm -rf "$PROJECT"
mkdir -p "$PROJECT"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$PROJECT"
step "server image (podman build -f deploy/Dockerfile)" ct_server_image "$PROJECT" roottrace:local
ct_api_start "$DIR"
trap 'ct_api_stop "$DIR"' EXIT
ct_docker_shim "$DIR/bin"
block=$(python3 -c 'import sys; sys.path.insert(0, "tests/integration")
from test_deploy import readme_block; print(readme_block("Quickstart with Docker Compose"))')
echo "== the README's Quickstart block, pasted in $PROJECT"
(cd "$PROJECT" && PATH=$DIR/bin:$PATH bash -euo pipefail -c "$block")
for _ in $(seq 300); do curl -sf http://127.0.0.1:4040/healthz >/dev/null && break; sleep 0.2; done
token=$(sed -n 's/^ROOTTRACE_BOOTSTRAP_TOKEN=//p' "$PROJECT/.env")
rc=0
DEMO_SERVER_URL=http://127.0.0.1:4040 DEMO_SERVER_TOKEN=$token \
DEMO_SERVER_STOP="its container keeps running; scripts/demo-compose.sh --down removes it" \
    scripts/demo.sh "$@" || rc=$?
[ $EXIT = 0 ] || down
exit $rc
