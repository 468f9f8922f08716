#!/bin/sh
# Runs the Python SDK's tests (sdk/python/tests) with the package from its source tree.
# The end-to-end test uses build/roottrace (run `make` first; ROOTTRACE_BIN overrides it) and
# fails without it here.
set -eu
cd "$(dirname "$0")/.."
ROOTTRACE_E2E_REQUIRED=1 PYTHONPATH="$(pwd)/sdk/python/src${PYTHONPATH:+:$PYTHONPATH}" \
    exec python3 -m pytest -q -rs -p no:cacheprovider sdk/python/tests "$@"
