#!/usr/bin/env bash
# The web UI's browser tests (ui/tests/, node --test): playwright-core drives Debian's
# Chromium headless against build/roottrace. Screenshots go to build/ui-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
    echo "test-ui: npm is missing (install Node.js 20+): the UI was not built" >&2
    exit 1
fi
[ -f ui/node_modules/.ci-stamp ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.ci-stamp)
ROOTTRACE_BIN=${ROOTTRACE_BIN:-$PWD/build/roottrace} node --test --test-concurrency=1 ui/tests/
