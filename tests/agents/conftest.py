"""Shared parts of the agents suite (tests/agents/test_agents.py, DESIGN §12): which agents
scripts/install-agents.sh installed, the real server (tests/integration/conftest.py's
Server, ROOTTRACE_BIN), and a summary per agent printed at the end of the run whatever -s
says.

The agents come from scripts/install-agents.sh: scripts/test-agents.sh runs it first and
passes its output in ROOTTRACE_AGENTS_INSTALL (a file); without it, this runs it (idempotent:
1-2 s when everything is there)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from shared_conftest import integration_conftest  # noqa: E402

Server = integration_conftest().Server

# Lines for the terminal summary, one or more per agent run (test_agents.py appends).
SUMMARY = []

# install-agents.sh's name for each agent in its OK/MISSING lines.
INSTALL_NAMES = ("go", "node", "python", "java", "py-spy")


def parse_install(text):
    """{agent: (True, OK line) | (False, MISSING line)} from install-agents.sh's output."""
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] not in ("OK", "MISSING"):
            continue
        name = words[1].rstrip(":")
        if name in INSTALL_NAMES:
            out[name] = (words[0] == "OK", line.strip())
    return out


@pytest.fixture(scope="session")
def installed():
    """What scripts/install-agents.sh said of each agent."""
    path = os.environ.get("ROOTTRACE_AGENTS_INSTALL")
    if path:
        with open(path) as f:
            text = f.read()
    else:
        r = subprocess.run([os.path.join(REPO, "scripts", "install-agents.sh")],
                           capture_output=True, text=True, timeout=900)
        text = r.stdout + r.stderr
    status = parse_install(text)
    for name in INSTALL_NAMES:
        status.setdefault(name, (False, "install-agents.sh printed no line for %s:\n%s"
                                 % (name, text.strip())))
    return status


def require(installed, name):
    """Skips the calling test, naming the failed install, unless `name` is installed."""
    ok, line = installed[name]
    if not ok:
        pytest.skip("agent not installed (scripts/install-agents.sh): %s" % line)


def pytest_terminal_summary(terminalreporter):
    if SUMMARY:
        terminalreporter.section("agents against roottrace serve")
        for line in SUMMARY:
            terminalreporter.write_line(line)
