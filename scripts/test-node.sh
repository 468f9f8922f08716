#!/usr/bin/env bash
# Runs the Node SDK's tests (sdk/node, `node --test`; no npm install: the SDK has no
# dependencies). The end-to-end test uses build/roottrace (or $ROOTTRACE_BIN) and skips,
# saying why, when that binary is missing or has no control plane.
set -euo pipefail
cd "$(dirname "$0")/../sdk/node"
exec node --test "$@"
