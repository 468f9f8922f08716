#!/bin/sh
# Issues from alerts (tests/alerts, DESIGN §13): the real Prometheus Alertmanager (Debian's
# prometheus-alertmanager 0.25, scripts/install-deps.sh; run as private processes on free
# loopback ports, never the package's service) notifying `roottrace serve` through its webhook,
# alone and as two clustered replicas; Grafana's webhook payload; the receivers' refusals.
# About 40 s. ROOTTRACE_BIN overrides the server binary (default build/roottrace); other
# arguments go to pytest. Without Alertmanager the suite fails rather than skips.
set -eu
cd "$(dirname "$0")/.."
export ROOTTRACE_BIN="${ROOTTRACE_BIN:-$(pwd)/build/roottrace}"
[ -x "$ROOTTRACE_BIN" ] || make -s all
ROOTTRACE_ALERTS_REQUIRED=1 exec python3 -m pytest -q -rs -p no:cacheprovider tests/alerts "$@"
