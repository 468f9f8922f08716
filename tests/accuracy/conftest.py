"""Shared parts of the accuracy suite (tests/accuracy, DESIGN §7): the workloads under each
SDK, run as real processes beside the real server, with the kernel's CPU accounting read
from outside (scripts/kernel_cpu.py), and the capacity RootTrace gives for the same window.

The server comes from tests/integration/conftest.py (ROOTTRACE_BIN)."""
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))  # pprof_build and friends
sys.path.insert(0, os.path.join(REPO, "scripts"))
import kernel_cpu  # noqa: E402  (scripts/kernel_cpu.py)
from shared_conftest import integration_conftest  # noqa: E402


Server = integration_conftest().Server

WORKLOADS = os.path.join(HERE, "workloads")
HOURS_PER_MONTH = 730
UPLOAD_INTERVAL_S = 10
# V8 charges the samples of inlined and OSR-compiled code to the caller (docs/sdk/node.md,
# Limits): without these flags burnHot's self time could read as tick's.
NODE_FLAGS = ["--no-turbo-inlining", "--no-use-osr"]


class Runtime:
    """One SDK's accuracy workload: how to start it, which OS figure covers what its profiles
    sample (the main thread for Node, the process for Go and PHP), its hot function, and the
    function through which it reads its own CPU account."""

    def __init__(self, name, column, scope, hot, argv, toggle=None, exclude=None, account=None):
        self.name = name
        self.column = column        # kernel_cpu.THREAD or kernel_cpu.PROCESS
        self.scope = scope          # what that figure covers, in words
        self.hot = hot              # suffix of the hot function's frame name
        self.argv = argv            # (server, key, service, run_s, tmp) -> argv
        self.toggle = toggle or {}  # more of the profiling toggle's fields ({"type": "cpu"})
        self.exclude = exclude      # thread name prefixes kernel_cpu.THREADS leaves out
        self.account = account      # a wall-time sampler's: suffix of the own account's reads


def node_argv(server, key, service, run_s, tmp, script="burn_hot.js"):
    return [shutil.which("node"), *NODE_FLAGS, os.path.join(WORKLOADS, script),
            os.path.join(REPO, "sdk", "node"), server.url, key, service, str(run_s)]


def php_argv(server, key, service, run_s, tmp):
    spool = os.path.join(str(tmp), f"spool-{service}")
    return [shutil.which("php"), os.path.join(WORKLOADS, "burn_hot.php"), server.url, key,
            service, str(run_s), spool]


def php_problem():
    """Why the PHP workload cannot run here, or None."""
    php = shutil.which("php")
    if not php:
        return "php is not on PATH (scripts/install-deps.sh installs php-cli)"
    out = subprocess.run([php, "-r", 'echo extension_loaded("excimer") ? "y" : "n";'],
                         capture_output=True, text=True).stdout
    return None if out == "y" else "ext-excimer is not loaded (install php-excimer)"


@pytest.fixture(scope="session")
def go_burner(tmp_path_factory):
    """The Go workload, built once, offline (the SDK has no dependencies)."""
    out = str(tmp_path_factory.mktemp("go") / "burn_hot")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "-mod=mod"}
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(WORKLOADS, "go"),
                   env=env, check=True)
    return out


def java_homes():
    """{feature version: JDK home} of the JDKs >= 11 under /usr/lib/jvm, as
    scripts/test-java.sh finds them (symlinked aliases of one JDK once)."""
    homes = {}
    root = "/usr/lib/jvm"
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        home = os.path.realpath(os.path.join(root, d))
        java, javac = os.path.join(home, "bin", "java"), os.path.join(home, "bin", "javac")
        if not (os.access(javac, os.X_OK) and home not in homes.values()):
            continue
        out = subprocess.run([java, "-XshowSettings:properties", "-version"],
                             capture_output=True, text=True).stderr
        ver = [ln.split("=")[1].strip() for ln in out.splitlines()
               if ln.strip().startswith("java.specification.version")]
        if ver and ver[0].replace("1.", "", 1).isdigit() and int(ver[0].replace("1.", "", 1)) >= 11:
            homes.setdefault(int(ver[0].replace("1.", "", 1)), home)
    return homes


JAVA_HOMES = java_homes()


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory):
    """The Java SDK's classes and the Java workload, compiled once for release 11 (the SDK's
    target) by the oldest JDK here; every JDK runs them."""
    if not JAVA_HOMES:
        pytest.fail("no JDK >= 11 under /usr/lib/jvm (scripts/install-deps.sh installs one)")
    javac = os.path.join(JAVA_HOMES[min(JAVA_HOMES)], "bin", "javac")
    out = str(tmp_path_factory.mktemp("java"))
    src = os.path.join(REPO, "sdk", "java", "src", "main", "java", "dev", "roottrace")
    files = [os.path.join(src, f) for f in sorted(os.listdir(src)) if f.endswith(".java")]
    subprocess.run([javac, "--release", "11", "-nowarn", "-d", out, *files,
                    os.path.join(WORKLOADS, "java", "BurnHot.java")], check=True)
    return out


def java_runtime(version, classes):
    """The Java workload on JDK `version`: CPU from JFR (the toggle asks for cpu). The
    capacity covers the threads JFR can sample: the kernel's CPU of the process's threads
    but HotSpot's own and the SDK's (kernel_cpu.THREADS); tests also hold it to the whole
    process's."""
    java = os.path.join(JAVA_HOMES[version], "bin", "java")

    def argv(server, key, service, run_s, tmp):
        return [java, "-cp", classes, "BurnHot", server.url, key, service, str(run_s)]
    return Runtime(f"java{version}", kernel_cpu.THREADS, "JVM threads running Java code",
                   "BurnHot.burnHot", argv, toggle={"type": "cpu"},
                   exclude=kernel_cpu.JVM_NOT_SAMPLED)


@pytest.fixture
def runtimes(go_burner):
    """The three CPU producers under test, by name."""
    def go_argv(server, key, service, run_s, tmp):
        return [go_burner, server.url, key, service, str(run_s)]
    return {
        "node": Runtime("node", kernel_cpu.THREAD, "main JS thread", ".burnHot", node_argv,
                        account="burn_hot.cpuMs"),
        "go": Runtime("go", kernel_cpu.PROCESS, "process", "main.burnHot", go_argv),
        "php": Runtime("php", kernel_cpu.PROCESS, "process", ".burnHot", php_argv),
    }


@pytest.fixture
def server(tmp_path):
    """The server at its defaults (10 s config polls, as SDKs see in production: a PHP CLI
    worker's polls run with excimer stopped, so at 1 s their CPU would be ~1 % of a core
    that no profile sees). Each service is on before its workload starts, so the SDK's first
    poll, at its start, turns profiling on."""
    srv = Server(tmp_path / "data").start()
    yield srv
    srv.stop()


class Child:
    """A workload process; its JSON lines on stdout become events, "burn" ones a series."""

    def __init__(self, argv, log_path):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True)
        self.events = queue.Queue()
        self.burn = []  # (t, cumulative wall ms, cumulative CPU ms) inside the hot function
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev["event"] == "burn":
                self.burn.append((ev["t"], ev["burn_ms"], ev.get("burn_cpu_ms")))
            else:
                self.events.put(ev)
        self.events.put({"event": "eof"})

    def wait_event(self, name, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no '{name}' from {self.log.name} within {timeout} s")
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if ev["event"] == name:
                return ev
            if ev["event"] == "eof":
                raise AssertionError(f"the workload exited ({self.proc.wait()}) before "
                                     f"'{name}'; see {self.log.name}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.log.close()

    def own_account_s(self, lo, hi, cpu=True):
        """Seconds the workload spent inside its hot function between lo and hi (Unix s), by
        its own account (CPU, or wall time), interpolated linearly at both ends."""
        col = 2 if cpu else 1

        def at(t):
            before = [p for p in self.burn if p[0] <= t]
            after = [p for p in self.burn if p[0] >= t]
            assert before and after, f"no burn events around {t}"
            a, b = before[-1], after[0]
            assert b[0] - a[0] < 2, f"burn events too far apart: {a[0]}, {b[0]}"
            if b[0] == a[0]:
                return a[col]
            return a[col] + (b[col] - a[col]) * (t - a[0]) / (b[0] - a[0])
        return (at(hi) - at(lo)) / 1000


def enable(server, service, toggle=None):
    r = server.put(f"/api/v1/services/{service}/profiling",
                   body={"enabled": True, "upload_interval_s": UPLOAD_INTERVAL_S,
                         **(toggle or {})})
    assert r.status == 200, r.body


def query(server, service, lo, hi):
    r = server.get("/api/v1/profile", params={"service": service, "type": "cpu",
                                              "from": f"{lo:.3f}", "to": f"{hi:.3f}"})
    assert r.status == 200, r.body
    return r.json()


class Run:
    """One workload's run: its events' times, its /proc samples, its own account."""

    def __init__(self, runtime, service, child, sampler, since, stopping, stopped):
        self.runtime = runtime
        self.service = service
        self.child = child
        self.sampler = sampler
        self.since = since
        self.stopping = stopping
        self.stopped = stopped


def run_all(server, tmp_path, jobs, run_s):
    """Runs jobs [(runtime, service, argv wrapper or None, script or None)] at once to their
    end, each sampled from /proc. Returns a Run per job, in order."""
    key = server.key("ingest")
    started = []
    try:
        for rt, service, wrap, script in jobs:
            enable(server, service, rt.toggle)
            argv = (rt.argv(server, key, service, run_s, tmp_path, script) if script
                    else rt.argv(server, key, service, run_s, tmp_path))
            child = Child(wrap(argv) if wrap else argv, tmp_path / f"{service}.log")
            sampler = kernel_cpu.ProcSampler(child.proc.pid, rt.exclude)
            sampler.start()
            started.append((rt, service, child, sampler))
        runs = []
        for rt, service, child, sampler in started:
            since = child.wait_event("profiling", 30)["t"]
            runs.append([rt, service, child, sampler, since])
        for r in runs:
            child = r[2]
            stopping = child.wait_event("stopping", run_s + 30)["t"]
            stopped = child.wait_event("stopped", 15)
            assert child.proc.wait(timeout=15) == 0, f"{r[1]} exited badly"
            r.extend([stopping, stopped])
        return [Run(*r) for r in runs]
    finally:
        for _, _, child, sampler in started:
            sampler.stop()
            child.close()


def check_capacity(server, run, tolerance=0.05, hot_tolerance=0.10, label=""):
    """The service's vCPU-hours over a window inside the run against the kernel's accounting
    of what its profiles cover (within tolerance), and its hot function's inclusive CPU
    (total_ns times the window's cpu_factor; for a wall-time sampler, with the samples charged
    to the account's own reads spread over the rest, as they ran no CPU) against the
    workload's own CPU account around its calls (within hot_tolerance). Prints every figure;
    returns the
    answer and the kernel's vCPU-hours."""
    rt = run.runtime
    lo, hi = run.since + UPLOAD_INTERVAL_S + 2, run.stopping - 3
    width = hi - lo
    assert width > 20, (run.since, run.stopping)
    ans = query(server, run.service, lo, hi)
    cap = ans["capacity"]
    assert cap is not None, ans["capacity_unavailable"]
    inputs = cap["inputs"]
    os_s = run.sampler.over(lo, hi, rt.column)
    os_vcpu = HOURS_PER_MONTH * os_s / width
    rt_vcpu = cap["vcpu_hours_per_month"]
    hot = [f for f in ans["functions"] if f["name"].endswith(rt.hot)]
    assert hot, [f["name"] for f in ans["functions"][:10]]
    # inclusive: the workload's account runs around its calls, and under contention Go
    # charges some of burnHot's samples to runtime.asyncPreempt beneath it (preemption)
    factor = inputs["cpu_factor"] if inputs["cpu_factor"] is not None else 1.0
    # A correction of a known misattribution (docs/sdk/node.md, Limits). Under a CPU quota a
    # wall-time sampler (V8) charges the throttled wall time to wherever the thread stood, and
    # the workload's own CPU reads (cpuMs: getrusage, which brings the scheduler's accounting
    # up to date and so can find the quota spent) are where it stands more often than their
    # share: a CI run saw 1.09 s of 14.67 CPU-s charged to (native).cpuUsage, others 0.04 s.
    # Those samples are throttled time that ran no CPU, so the window's OS CPU is spread over
    # the other samples: hot x factor x sampled / (sampled - the reads'). burnHot and cpuMs are
    # siblings under burst, so no sample is in both. Printed, so that the size stays visible.
    account = [f for f in ans["functions"] if rt.account and f["name"].endswith(rt.account)]
    account_s = account[0]["total_ns"] / 1e9 if account else 0.0
    sampled_s = inputs["sampled_cpu_s"]
    scaled = inputs["cpu_basis"] == "os"  # a wall-time sampler's window, charged its OS CPU
    spread = (sampled_s / (sampled_s - account_s)
              if scaled and account_s and sampled_s > account_s else 1.0)
    rt_hot_s = hot[0]["total_ns"] / 1e9 * factor * spread
    rt_account_s = account_s * factor
    rt_hot_self_s = hot[0]["vcpu_hours_per_month"] * width / HOURS_PER_MONTH
    own_hot_s = run.child.own_account_s(lo, hi)
    own_wall_s = run.child.own_account_s(lo, hi, cpu=False)
    agreement = ans["cpu_agreement"]
    print(f"\n[{label} {rt.name}] window {width:.1f} s; kernel: {rt.scope} {os_s:.2f} s "
          f"({os_s / width:.1%} of a CPU)")
    print(f"  vCPU-h/month: RootTrace {rt_vcpu:.2f}, kernel {os_vcpu:.2f}, ratio "
          f"{rt_vcpu / os_vcpu:.3f}; capacity basis {inputs['cpu_basis']}, sampled "
          f"{inputs['sampled_cpu_s']:.2f} s, OS {inputs['os_cpu_s']} s, factor "
          f"{inputs['cpu_factor']}")
    print(f"  {hot[0]['name']}: RootTrace {rt_hot_s:.2f} CPU-s inclusive ({rt_hot_self_s:.2f} "
          f"self; {rt_account_s:.2f} charged to the account's reads {rt.account}, spread over "
          f"the rest), own account "
          f"{own_hot_s:.2f} CPU-s ({own_wall_s:.2f} s of wall time); "
          f"cpu_agreement "
          f"{agreement and {k: agreement[k] for k in ('ratio', 'capacity_uses', 'scope')}}")
    print("  top functions (CPU-s): " + ", ".join(
        f"{f['name']} {f['vcpu_hours_per_month'] * width / HOURS_PER_MONTH:.2f}"
        for f in ans["functions"][:6]))
    assert inputs["profiled_s"] > 0.99 * width, inputs
    assert inputs["instances_profiled"] == 1, inputs
    assert abs(rt_vcpu - os_vcpu) <= tolerance * os_vcpu, (
        f"{label} {rt.name}: RootTrace {rt_vcpu:.3f} vs kernel {os_vcpu:.3f} vCPU-h/month "
        f"({rt.scope})")
    assert abs(rt_hot_s - own_hot_s) <= hot_tolerance * own_hot_s, (
        f"{label} {rt.name} {hot[0]['name']}: RootTrace {rt_hot_s:.3f} vs own account "
        f"{own_hot_s:.3f} CPU-s")
    return ans, os_vcpu
