#!/usr/bin/env bash
# Runs the Go SDK's checks (sdk/go: gofmt, go vet, go test, with -race where the race
# detector works here) and builds the Go demo service, benchmark and accuracy workloads. The
# end-to-end test needs build/roottrace (run `make` first; ROOTTRACE_BIN overrides it) and
# fails without it here. Extra arguments go to `go test` (e.g. -run Hostile -v).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=${GOFLAGS:-}
export ROOTTRACE_E2E_REQUIRED=1
export ROOTTRACE_BIN=${ROOTTRACE_BIN:-$REPO/build/roottrace}

unformatted=$("$(dirname "$GO")/gofmt" -l sdk/go demo/go-service bench/sdk_overhead/work_go \
    tests/accuracy/workloads/go)
if [ -n "$unformatted" ]; then
    echo "gofmt: not formatted:"; echo "$unformatted"; exit 1
fi
for d in sdk/go demo/go-service bench/sdk_overhead/work_go tests/accuracy/workloads/go; do
    (cd "$d" && "$GO" vet ./... && "$GO" build -o /dev/null ./...)
done

cd sdk/go
RACE=
if "$GO" test -race -run '^$' . >/dev/null 2>&1; then
    RACE=-race
else
    echo "(the race detector does not work here: testing without -race)"
fi
exec "$GO" test $RACE -count=1 "$@" ./...
