#!/usr/bin/env bash
# Pyroscope's real agents (pyroscope-go, @pyroscope/nodejs, pyroscope-io, pyroscope-java, and
# py-spy's own files) against build/roottrace (DESIGN §12): installs them with
# scripts/install-agents.sh (idempotent; an agent it cannot install is a pytest skip naming
# the failed install), then runs tests/agents/test_agents.py. About 40 s once installed.
# ROOTTRACE_BIN overrides the server binary; other arguments go to pytest.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export ROOTTRACE_BIN=${ROOTTRACE_BIN:-$ROOT/build/roottrace}
[ -x "$ROOTTRACE_BIN" ] || make -s all || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scripts/install-agents.sh | tee "$out/install-agents.txt"
ROOTTRACE_AGENTS_INSTALL=$out/install-agents.txt \
    python3 -m pytest -q -rs -p no:cacheprovider tests/agents "$@"
