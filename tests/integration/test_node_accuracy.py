"""The Node SDK's CPU figures against the OS's accounting (DESIGN §2, §7), end to end: a real
Node process under the SDK, the real server, and /proc read from outside.

(a) A main thread burning about half a CPU in one function: the service's capacity estimate
    must agree with the CPU the OS accounted to that thread over the same window (within
    10 %), and the function must hold >= 90 % of it.
(b) A main thread blocked half the time in Atomics.wait: V8 samples it as running, so the
    window's cpu_agreement must carry a warning.

Each child runs for a fixed time (60 s and 30 s), so this file takes about 90 s."""
import json
import os
import queue
import shutil
import subprocess
import threading
import time

import pytest

from conftest import REPO, Server

NODE = shutil.which("node")
SDK = os.path.join(REPO, "sdk", "node")
WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
# V8 charges the samples of inlined and OSR-compiled code to the caller (sdk/node/README.md,
# Limits): without these flags burnHalf's self time could read as tick's.
NODE_FLAGS = ["--no-turbo-inlining", "--no-use-osr"]
CLK_TCK = os.sysconf("SC_CLK_TCK")
HOURS_PER_MONTH = 730
SAMPLE_EVERY_S = 0.5

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH")


def read_cpu_s(path):
    """utime + stime of a /proc stat file, seconds (fields 14 and 15, counted after the last
    ')' since the command name may hold spaces and parentheses)."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state), so field n is fields[n - 3].
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def read_runq_wait_s(path):
    """Time the thread spent runnable but waiting for a CPU (schedstat's 2nd field), s."""
    try:
        with open(path) as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class ProcSampler(threading.Thread):
    """Samples a process's main-thread CPU, whole-process CPU and main-thread run-queue wait
    from /proc every SAMPLE_EVERY_S, each with the wall-clock time (Unix s) of the read."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = []  # (t, thread_cpu_s, process_cpu_s, runq_wait_s)
        self.done = threading.Event()

    def sample(self):
        t0 = time.time()
        thread = read_cpu_s(f"/proc/{self.pid}/task/{self.pid}/stat")
        proc = read_cpu_s(f"/proc/{self.pid}/stat")
        wait = read_runq_wait_s(f"/proc/{self.pid}/task/{self.pid}/schedstat")
        self.samples.append(((t0 + time.time()) / 2, thread, proc, wait))

    def run(self):
        while not self.done.is_set():
            try:
                self.sample()
            except (OSError, IndexError, ValueError):
                return  # the process is gone
            self.done.wait(SAMPLE_EVERY_S)

    def at(self, t, column):
        """Column (1 thread CPU, 2 process CPU, 3 run-queue wait) at time t, interpolated
        linearly between the samples either side of it."""
        before = [s for s in self.samples if s[0] <= t]
        after = [s for s in self.samples if s[0] >= t]
        assert before and after, f"no /proc samples around {t}"
        a, b = before[-1], after[0]
        assert b[0] - a[0] < 3 * SAMPLE_EVERY_S + 1, f"/proc samples too far apart: {a}, {b}"
        if a[column] is None or b[column] is None:
            return None
        if b[0] == a[0]:
            return a[column]
        return a[column] + (b[column] - a[column]) * (t - a[0]) / (b[0] - a[0])

    def over(self, lo, hi, column):
        x, y = self.at(lo, column), self.at(hi, column)
        return None if x is None or y is None else y - x


def raise_priority(pid):
    """The measured thread must not wait for a CPU while runnable: V8 counts that wait as CPU
    and the OS does not (DESIGN §2), and this test compares the two, not the machine's other
    load. On a busy 2-CPU machine a nice value is not enough (each wakeup still waits out the
    running task's slice: measured ~1.5 ms at 50 wakeups a second, 7 % of the thread's CPU),
    so the child's main thread runs SCHED_RR at the lowest real-time priority where allowed
    (root or CAP_SYS_NICE; it uses half a CPU and the kernel's RT throttling bounds it
    anyway). V8's sampler thread, started later by that thread, inherits it. Else its
    session's autogroup (start_new_session) and the thread get nice -10, else nothing. The
    test prints the run-queue wait it measured either way. Returns what it did."""
    try:
        os.sched_setscheduler(pid, os.SCHED_RR, os.sched_param(1))
        return "SCHED_RR 1"
    except (OSError, AttributeError):
        pass
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write("-10")
        os.setpriority(os.PRIO_PROCESS, pid, -10)
        return "nice -10"
    except OSError:
        return "default priority"


class NodeChild:
    """A workload from workloads/ under the SDK; its JSON lines on stdout become events."""

    def __init__(self, script, server, key, service, run_s, log_path):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [NODE, *NODE_FLAGS, os.path.join(WORKLOADS, script), SDK, server.url, key, service,
             str(run_s)], stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)
        self.priority = raise_priority(self.proc.pid)
        self.events = queue.Queue()
        self.burn = []  # (t, cumulative ms in burnHalf) from "burn" events, in order
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev["event"] == "burn":
                self.burn.append((ev["t"], ev["burn_ms"]))
            else:
                self.events.put(ev)
        self.events.put({"event": "eof"})

    def wait_event(self, name, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no '{name}' from the Node child within {timeout} s")
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if ev["event"] == name:
                return ev
            if ev["event"] == "eof":
                raise AssertionError(f"the Node child exited ({self.proc.wait()}) before "
                                     f"'{name}'; see {self.log.name}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.log.close()


@pytest.fixture
def server(tmp_path):
    """The server with 1 s config polls, so the SDK starts profiling within about a second."""
    srv = Server(tmp_path / "data", extra_args=("--poll-interval", "1s")).start()
    yield srv
    srv.stop()


def enable(server, service):
    r = server.put(f"/api/v1/services/{service}/profiling",
                   body={"enabled": True, "upload_interval_s": 10})
    assert r.status == 200, r.body
    assert r.json()["config"]["upload_interval_s"] == 10


def query(server, service, lo, hi):
    r = server.get("/api/v1/profile", params={"service": service, "type": "cpu",
                                              "from": f"{lo:.3f}", "to": f"{hi:.3f}"})
    assert r.status == 200, r.body
    return r.json()


def run_child(server, tmp_path, script, service, run_s):
    """Runs a workload to its end, sampling /proc. Returns (profiling since, stopping at,
    the SDK's info() at the end, the sampler, the child's priority, the child's "burn"
    series)."""
    enable(server, service)
    child = NodeChild(script, server, server.key("ingest"), service, run_s,
                      tmp_path / f"{service}.log")
    sampler = ProcSampler(child.proc.pid)
    try:
        sampler.start()
        since = child.wait_event("profiling", 20)["t"]
        stopping = child.wait_event("stopping", run_s + 20)["t"]
        stopped = child.wait_event("stopped", 15)
        assert child.proc.wait(timeout=10) == 0
    finally:
        sampler.done.set()
        child.close()
        sampler.join(timeout=5)
    info = stopped["info"]
    assert info["status"] == "disabled: stopped", info
    assert info["uploads"]["lastError"] is None and info["queued"] == 0, info
    return since, stopping, info, sampler, child.priority, child.burn


def burn_over(series, lo, hi):
    """Seconds the workload spent inside burnHalf between lo and hi (unix s), by its own
    account: the cumulative series interpolated linearly at both ends."""
    def at(t):
        before = [p for p in series if p[0] <= t]
        after = [p for p in series if p[0] >= t]
        assert before and after, f"no burn events around {t}"
        (ta, a), (tb, b) = before[-1], after[0]
        assert tb - ta < 1, f"burn events too far apart: {ta}, {tb}"
        return a if tb == ta else a + (b - a) * (t - ta) / (tb - ta)
    return (at(hi) - at(lo)) / 1000


def test_capacity_agrees_with_os_thread_cpu(server, tmp_path):
    since, stopping, info, sampler, prio, burn_series = run_child(
        server, tmp_path, "burn_half.js", "burner", 60)
    # Well inside the run: the first profile's start and the last's end are left out.
    lo, hi = since + 15, stopping - 5
    width = hi - lo
    assert width > 35, (since, stopping)
    ans = query(server, "burner", lo, hi)

    os_cpu_s = sampler.over(lo, hi, 1)
    os_vcpu = HOURS_PER_MONTH * os_cpu_s / width
    process_vcpu = HOURS_PER_MONTH * sampler.over(lo, hi, 2) / width
    runq_wait_s = sampler.over(lo, hi, 3)
    cap = ans["capacity"]
    assert cap is not None, ans["capacity_unavailable"]
    rt_vcpu = cap["vcpu_hours_per_month"]
    burn = [f for f in ans["functions"] if f["name"].endswith(".burnHalf")]
    assert burn, [f["name"] for f in ans["functions"][:10]]
    share = burn[0]["vcpu_hours_per_month"] / rt_vcpu
    rt_burn_s = burn[0]["vcpu_hours_per_month"] * width / HOURS_PER_MONTH
    own_burn_s = burn_over(burn_series, lo, hi)
    agreement = ans["cpu_agreement"]
    print(f"\nwindow {width:.1f} s; main thread CPU {os_cpu_s:.2f} s "
          f"({os_cpu_s / width:.1%} of a CPU), run-queue wait {runq_wait_s} s ({prio})")
    print(f"vCPU-h/month: RootTrace {rt_vcpu:.2f}, OS main thread {os_vcpu:.2f}, "
          f"ratio {rt_vcpu / os_vcpu:.3f}; OS whole process {process_vcpu:.2f} "
          f"(RootTrace / process {rt_vcpu / process_vcpu:.3f})")
    print(f"{burn[0]['name']}: {share:.1%} of the service; cpu_agreement ratio "
          f"{agreement and agreement['ratio']}; capacity inputs "
          f"{ {k: cap['inputs'][k] for k in ('cpu_s', 'window_s', 'profiled_s', 'alive_s')} }")
    print(f"burnHalf: RootTrace {rt_burn_s:.2f} s, the workload's own account {own_burn_s:.2f} s "
          f"(ratio {rt_burn_s / own_burn_s:.3f})")
    print(f"SDK: median sampling delta {info['lastMedianDeltaUs']} µs, "
          f"{info['profiles']} profiles; top functions (self, % of the service): " + ", ".join(
              f"{f['name']} {f['self_share']:.1f}" for f in ans["functions"][:6]))

    # The workload did what it is meant to: about half a CPU, nearly all of it in burnHalf.
    assert 0.25 < os_cpu_s / width < 0.75, os_cpu_s / width
    # Every second of the window is covered by an uploaded profile.
    assert cap["inputs"]["profiled_s"] > 0.99 * width, cap["inputs"]
    assert cap["inputs"]["instances_profiled"] == 1, cap["inputs"]
    why = (f"RootTrace {rt_vcpu:.3f} vs OS {os_vcpu:.3f} vCPU-h/month; the main thread "
           f"waited {runq_wait_s} s for a CPU in the {width:.1f} s window (V8 counts that "
           "wait as CPU: is the machine loaded?)")
    assert abs(rt_vcpu - os_vcpu) <= 0.10 * os_vcpu, why
    # burnHalf's own figure agrees with the time the workload measured around its calls. The
    # rest of the thread's CPU (timers, the SDK's own work, V8's "(program)") is not
    # burnHalf's: its share of the service is host-dependent (89% on a slow CI machine), so
    # only "most of it" is asserted for the share.
    assert abs(rt_burn_s - own_burn_s) <= 0.10 * own_burn_s, (rt_burn_s, own_burn_s)
    assert share >= 0.75, [(f["name"], f["vcpu_hours_per_month"]) for f in ans["functions"][:5]]
    # The per-window agreement says the same.
    assert agreement is not None and agreement["warning"] is None, agreement


def test_blocked_thread_gets_agreement_warning(server, tmp_path):
    since, stopping, info, sampler, _, _ = run_child(server, tmp_path, "block_half.js", "blocker",
                                                  30)
    lo, hi = since - 1, stopping + 1  # every profile of the run
    ans = query(server, "blocker", lo, hi)
    agreement = ans["cpu_agreement"]
    last = min(stopping, sampler.samples[-1][0])
    os_cpu_s = sampler.over(since, last, 1)
    block = [f for f in ans["functions"] if f["name"].endswith(".blockHalf")]
    print(f"\ncpu_agreement {agreement}")
    print(f"OS main thread CPU {os_cpu_s:.2f} s in {last - since:.1f} s of the run; "
          f"blockHalf {block and block[0]}")
    assert agreement is not None, ans
    assert agreement["profiles"] >= 2, agreement
    assert agreement["ratio"] is not None and agreement["ratio"] > 1.10, agreement
    assert agreement["warning"], agreement
    assert agreement["sampled_cpu_s"] > 0.3 * (stopping - since), agreement
    assert block and block[0]["total_share"] > 50, [f["name"] for f in ans["functions"][:5]]
