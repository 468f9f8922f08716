#!/usr/bin/env bash
# Installs the real profiling agents that tests/agents/ runs against
# tests/agents/capture.py, from the package registries, into caches outside the
# repository where that is sensible:
#
#   pyroscope-go v1.5.0          Go module cache (tests/agents/go/go.mod, go.sum)
#   @pyroscope/nodejs 0.6.4      tests/agents/node/node_modules (npm ci; gitignored)
#   pyroscope-io 1.4.0, py-spy 0.4.3
#                                venv $ROOTTRACE_AGENTS_VENV (~/.cache/roottrace/agents-venv)
#   io.pyroscope:agent 2.9.2     Maven local repository (~/.m2, or $MAVEN_REPO_LOCAL)
#   rbspy                        not on PyPI nor in Debian 12: reported missing
#
# Idempotent: what is already there is checked, not fetched again. Never fails
# for a missing agent: it prints one line per agent, "OK <agent> ..." or
# "MISSING <agent>: <why>", and exits 0 (tests skip, naming the agent).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
A=$REPO/tests/agents
VENV=${ROOTTRACE_AGENTS_VENV:-$HOME/.cache/roottrace/agents-venv}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
JAVA_AGENT_VERSION=$(sed -n 's#.*<pyroscope.agent.version>\(.*\)</pyroscope.agent.version>.*#\1#p' "$A/java/pom.xml")
M2=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
LOG=$(mktemp -d)/install-agents
mkdir -p "$LOG"
STATUS=()
ts=$(date +%s)
took() { local n; n=$(date +%s); TOOK="$((n - ts)) s"; ts=$n; }
ok() { took; STATUS+=("OK      $1, $TOOK"); }
missing() { took; STATUS+=("MISSING $1"); }
t0=$(date +%s)

# --- Go: pyroscope-go (module cache) --------------------------------------
if [ -x "$GO" ] || command -v "$GO" >/dev/null 2>&1; then
    # go build fetches only the modules the program needs (go mod download would
    # also fetch the test-only ones).
    if (cd "$A/go" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$GO" build -o /dev/null . >"$LOG/go.log" 2>&1); then
        ok "go      github.com/grafana/pyroscope-go v1.5.0 ($("$GO" env GOMODCACHE))"
    else
        missing "go: pyroscope-go v1.5.0 did not download/build: $(tail -1 "$LOG/go.log")"
    fi
else
    missing "go: no go toolchain"
fi

# --- Node: @pyroscope/nodejs (tests/agents/node/node_modules) -------------
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    have=$(node -p "try{require('$A/node/node_modules/@pyroscope/nodejs/package.json').version}catch(e){''}" 2>/dev/null)
    if [ "$have" != "0.6.4" ]; then
        (cd "$A/node" && npm ci --no-audit --no-fund >"$LOG/npm.log" 2>&1)
    fi
    if (cd "$A/node" && node -e "require('@pyroscope/nodejs').default.init" >>"$LOG/npm.log" 2>&1); then
        ok "node    @pyroscope/nodejs 0.6.4 ($A/node/node_modules)"
    else
        missing "node: @pyroscope/nodejs 0.6.4 not installed/loadable: $(tail -1 "$LOG/npm.log")"
    fi
else
    missing "node: no node/npm"
fi

# --- Python: pyroscope-io and py-spy (venv) -------------------------------
want_py() { "$VENV/bin/python" - "$@" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(n) == v for n, v in (a.split("==") for a in sys.argv[1:])) else 1)
EOF
}
if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV" >"$LOG/venv.log" 2>&1 || true
fi
if [ -x "$VENV/bin/python" ]; then
    for spec in pyroscope-io==1.4.0 py-spy==0.4.3; do
        if ! want_py "$spec"; then
            "$VENV/bin/pip" install -q --disable-pip-version-check "$spec" >>"$LOG/pip.log" 2>&1
        fi
    done
    if want_py pyroscope-io==1.4.0 && "$VENV/bin/python" -c 'import pyroscope' 2>/dev/null; then
        ok "python  pyroscope-io 1.4.0 ($VENV)"
    else
        missing "python: pyroscope-io 1.4.0 not installed: $(tail -1 "$LOG/pip.log" 2>/dev/null)"
    fi
    if want_py py-spy==0.4.3 && [ -x "$VENV/bin/py-spy" ]; then
        ok "py-spy  py-spy 0.4.3 ($VENV/bin/py-spy)"
    else
        missing "py-spy: py-spy 0.4.3 not installed: $(tail -1 "$LOG/pip.log" 2>/dev/null)"
    fi
else
    missing "python: could not create the venv $VENV: $(tail -1 "$LOG/venv.log" 2>/dev/null)"
    missing "py-spy: no venv"
fi

# --- Java: io.pyroscope:agent (Maven local repository) --------------------
JAR=$M2/io/pyroscope/agent/$JAVA_AGENT_VERSION/agent-$JAVA_AGENT_VERSION.jar
if ! command -v java >/dev/null 2>&1; then
    missing "java: no java"
elif [ -f "$JAR" ]; then
    ok "java    io.pyroscope:agent $JAVA_AGENT_VERSION ($JAR)"
elif command -v mvn >/dev/null 2>&1; then
    MVNARGS=(-q -B)
    [ -n "${MAVEN_REPO_LOCAL:-}" ] && MVNARGS+=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")
    mvn "${MVNARGS[@]}" dependency:get -Dartifact="io.pyroscope:agent:$JAVA_AGENT_VERSION" \
        -Dtransitive=false >"$LOG/mvn.log" 2>&1
    if [ -f "$JAR" ]; then
        ok "java    io.pyroscope:agent $JAVA_AGENT_VERSION ($JAR)"
    else
        missing "java: io.pyroscope:agent $JAVA_AGENT_VERSION not fetched: $(grep -m1 ERROR "$LOG/mvn.log")"
    fi
else
    missing "java: no mvn to fetch io.pyroscope:agent"
fi
if [ -f "$JAR" ] && command -v javac >/dev/null 2>&1; then
    mkdir -p "$A/java/target/classes"
    javac --release 11 -d "$A/java/target/classes" "$A/java/src/main/java/Burn.java" 2>"$LOG/javac.log" \
        || missing "java: Burn.java did not compile: $(tail -1 "$LOG/javac.log")"
fi

# --- rbspy ----------------------------------------------------------------
missing "rbspy: not on PyPI and not packaged in Debian 12 (no other source reachable)"

n_missing=0
for s in "${STATUS[@]}"; do case $s in MISSING*rbspy*) ;; MISSING*) n_missing=$((n_missing + 1)) ;; esac; done
if [ $n_missing -eq 0 ]; then rm -rf "$(dirname "$LOG")"; LOG="removed: nothing failed"; fi
echo "install-agents: $(( $(date +%s) - t0 )) s (logs: $LOG)"
for s in "${STATUS[@]}"; do echo "$s"; done
exit 0
