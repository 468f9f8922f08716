#!/usr/bin/env bash
# Installs the Debian packages RootTrace needs to build and test, when they are missing.
# Safe to run again: it does nothing when everything is present.
# Usage: scripts/install-deps.sh           build and test dependencies (make test, make demo)
#        scripts/install-deps.sh --build   only what `make` needs (deploy/Dockerfile)
set -euo pipefail

BUILD_ONLY=0
[ "${1:-}" = "--build" ] && BUILD_ONLY=1

pkgs=(build-essential pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev zlib1g-dev
      libdeflate-dev libsodium-dev libxxhash-dev libcurl4-openssl-dev libprotobuf-c-dev
      protobuf-c-compiler python3)
if [ $BUILD_ONLY -eq 0 ]; then
    # curl and chromium: the scripts' and the UI's browser tests; php-*: the PHP SDK's tests
    # (PHPUnit, with and without ext-excimer; php-fpm driven through cgi-fcgi from
    # libfcgi-bin). Go, a JDK with Maven, and Node.js come with the machine (README); Maven
    # fetches JUnit on the Java SDK's first test run.
    # clickhouse-server: the conformance suite's second backend (scripts/clickhouse.sh runs
    # a private server of its own on free loopback ports; Debian's is 18.16, DESIGN §8);
    # zookeeperd: the replicated cluster's ZooKeeper (scripts/ch-cluster.sh runs its jars as
    # a private server; the package's own service is not used).
    # clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes of Debian 12's
    # clang 14): `make fuzz` (scripts/fuzz.sh); `make test` replays the fuzz inputs with gcc.
    # prometheus-alertmanager (0.25, /usr/bin/prometheus-alertmanager): tests/alerts runs it as
    # private processes on free loopback ports (scripts/test-alerts.sh); the package's own
    # service (:9093, started at install where systemd runs) is neither needed nor used.
    # podman (4.3, with its recommends: netavark and aardvark-dns name the Compose services
    # to each other), runc and debootstrap: scripts/test-containers.sh runs the README's
    # Compose quickstart on podman, with base images built from a debootstrapped bookworm
    # (no image registry is reachable); docker-compose (below) drives it through podman's API.
    pkgs+=(python3-pytest curl chromium php-cli php-excimer phpunit php-fpm libfcgi-bin
           clickhouse-server zookeeperd clang libclang-rt-14-dev prometheus-alertmanager
           podman runc debootstrap)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# docker-compose: tests/integration/test_deploy.py validates deploy/compose.yaml with
# `docker-compose config`, and scripts/test-containers.sh runs it against podman's API.
# Without its recommended Docker engine, which is needed for neither.
if [ $BUILD_ONLY -eq 0 ] && ! command -v docker-compose >/dev/null 2>&1; then
    echo "install-deps: installing docker-compose"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        docker-compose >/dev/null
fi
# pytest may come from the machine's own Python rather than Debian's.
if [ $BUILD_ONLY -eq 0 ] && ! python3 -c 'import pytest' 2>/dev/null; then
    python3 -m pip install --quiet pytest
fi
# atheris: scripts/fuzz-sdk.sh (make fuzz) fuzzes the Python SDK's config parser with it; a
# binary wheel for CPython on x86-64 Linux. Optional: without it the script falls back to the
# seeded property test in a loop, and `make test` never needs it.
if [ $BUILD_ONLY -eq 0 ] && ! python3 -c 'import atheris' 2>/dev/null; then
    python3 -m pip install --quiet atheris ||
        echo "install-deps: atheris not installed (scripts/fuzz-sdk.sh will use the property loop)" >&2
fi
# jsonschema and PyYAML: tests/integration/test_openapi.py validates the server's answers
# against docs/openapi.yaml. From pip like pytest; Debian's packages where pip may not install
# into the system's Python (PEP 668).
if [ $BUILD_ONLY -eq 0 ] && ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
    echo "install-deps: installing jsonschema and PyYAML"
    if ! python3 -m pip install --quiet jsonschema pyyaml; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO=sudo
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-jsonschema \
            python3-yaml >/dev/null
    fi
fi
# openapi-spec-validator: test_openapi.py checks docs/openapi.yaml against OpenAPI 3.0 itself
# (a YAML slip can still load). From pip, else Debian's package.
if [ $BUILD_ONLY -eq 0 ] && ! python3 -c 'import openapi_spec_validator' 2>/dev/null; then
    echo "install-deps: installing openapi-spec-validator"
    if ! python3 -m pip install --quiet openapi-spec-validator; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO=sudo
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
            python3-openapi-spec-validator >/dev/null
    fi
fi
# chdb-core: ClickHouse 26.9's engine, in-process (PyPI), behind scripts/chdb.sh: the
# conformance suite's current ClickHouse (no current clickhouse-server package is reachable
# here). ~900 MB installed, so it lives outside the clone, in ~/.cache/roottrace/chdb-venv, and
# CI's fresh clones reuse it; made anew when missing or broken.
CHDB_VERSION=26.9.0
CHDB_VENV=${CHDB_VENV:-$HOME/.cache/roottrace/chdb-venv}
if [ $BUILD_ONLY -eq 0 ] &&
   ! "$CHDB_VENV/bin/python" -c "import chdb; assert chdb.__version__ == '$CHDB_VERSION'" \
       2>/dev/null; then
    echo "install-deps: installing chdb-core $CHDB_VERSION into $CHDB_VENV"
    rm -rf "$CHDB_VENV"
    mkdir -p "$(dirname "$CHDB_VENV")"
    python3 -m venv "$CHDB_VENV"
    "$CHDB_VENV/bin/pip" install --quiet "chdb-core==$CHDB_VERSION"
fi
# The web UI's toolchain (vite, TypeScript) and its browser tests' driver (playwright-core,
# which drives Debian's chromium above): npm packages from ui/package-lock.json. Node.js 20+
# and npm must be on the machine; without npm the server embeds a "UI not built" page.
UI_DIR="$(cd "$(dirname "$0")/.." && pwd)/ui"
if command -v npm >/dev/null 2>&1; then
    if [ ! -f "$UI_DIR/node_modules/.ci-stamp" ] || [ "$UI_DIR/package-lock.json" -nt "$UI_DIR/node_modules/.ci-stamp" ]; then
        echo "install-deps: npm ci in ui/"
        (cd "$UI_DIR" && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.ci-stamp)
    fi
else
    echo "install-deps: npm not found: the web UI will not be built (install Node.js 20+ and npm)" >&2
fi
