#!/usr/bin/env python3
"""The kernel's own CPU accounting, read from outside a process, and the conditions that make
a wall-ticking sampler go wrong (DESIGN §7): the witness RootTrace's capacity figures are
checked against in tests/accuracy, bench/truth and `make demo`.

- ProcSampler: a thread sampling /proc/<pid>/task/<pid>/stat (the main thread) and
  /proc/<pid>/stat (every thread) of a process every 0.2 s, with the wall time of each read;
  `over(lo, hi, col)` interpolates the CPU seconds spent in [lo, hi).
- hogs(n): n busy loops at the callers' priority, one per core by default.
- CpuQuota: a cgroup holding a process under a CPU quota (cgroup v2 `cpu.max`, else v1
  `cpu.cfs_quota_us`), with its own usage.

As a command: `kernel_cpu.py record OUT PID...` writes one JSON line per sample
({"t", "pid", "thread_s", "process_s"}) until every PID has exited or it is killed;
`kernel_cpu.py over FILE PID LO HI` prints the main thread's and the process's CPU seconds
in [LO, HI) (Unix seconds) from such a file."""
import contextlib
import json
import os
import subprocess
import sys
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_EVERY_S = 0.2
THREAD, PROCESS = 1, 2  # columns of a sample (t, thread_s, process_s)
THREADS = 3  # with ProcSampler(pid, exclude=...): the threads whose names it does not exclude
# A JVM's threads that run no Java code (HotSpot's own: GC, JIT, VM, JFR's sampler and
# recorder; /proc shows the first 15 bytes of their names) and the Java SDK's own threads:
# the rest are the threads JFR's execution sampler can sample (tests/accuracy, Java).
JVM_NOT_SAMPLED = ("GC Thread", "G1 ", "VM Thread", "VM Periodic", "C1 CompilerThre",
                   "C2 CompilerThre", "JFR Thread Samp", "JFR Recorder", "Monitor Deflati",
                   "Service Thread", "Sweeper thread", "roottrace-", "HttpClient-")


def read_cpu_s(path):
    """utime + stime of a /proc stat file, seconds (fields 14 and 15, counted after the last
    ')' since the command name may hold spaces and parentheses)."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state), so field n is fields[n - 3].
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def read_pid(pid, exclude=None):
    """(wall time of the read, main thread CPU s, process CPU s), and with exclude (name
    prefixes) the CPU s of the threads whose names start with none of them."""
    t0 = time.time()
    thread = read_cpu_s(f"/proc/{pid}/task/{pid}/stat")
    proc = read_cpu_s(f"/proc/{pid}/stat")
    if exclude is None:
        return ((t0 + time.time()) / 2, thread, proc)
    kept = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().rstrip("\n")
            if not name.startswith(exclude):
                kept += read_cpu_s(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue  # the thread ended meanwhile
    return ((t0 + time.time()) / 2, thread, proc, kept)


def interpolate(samples, t, col):
    """Column col of samples [(t, thread_s, process_s)] at time t, linearly between the
    samples either side; the last sample when t is after it (the process has exited: its
    CPU no longer grows), None when t is before the first."""
    before = [s for s in samples if s[0] <= t]
    after = [s for s in samples if s[0] >= t]
    if not before:
        return None
    a = before[-1]
    if not after:
        return a[col]
    b = after[0]
    if b[0] == a[0]:
        return a[col]
    assert b[0] - a[0] < 10 * SAMPLE_EVERY_S + 1, f"/proc samples too far apart: {a}, {b}"
    return a[col] + (b[col] - a[col]) * (t - a[0]) / (b[0] - a[0])


def over(samples, lo, hi, col):
    """CPU seconds of column col spent in [lo, hi), or None when lo is before the samples."""
    x, y = interpolate(samples, lo, col), interpolate(samples, hi, col)
    return None if x is None or y is None else y - x


class ProcSampler(threading.Thread):
    """Samples a process's main-thread and whole-process CPU every SAMPLE_EVERY_S until
    stopped or the process is gone."""

    def __init__(self, pid, exclude=None):
        super().__init__(daemon=True)
        self.pid = pid
        self.exclude = exclude  # name prefixes left out of column THREADS, or None
        self.samples = []  # (t, thread_s, process_s)
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                self.samples.append(read_pid(self.pid, self.exclude))
            except (OSError, IndexError, ValueError):
                return  # the process is gone
            self.done.wait(SAMPLE_EVERY_S)

    def stop(self):
        self.done.set()
        self.join(timeout=5)

    def over(self, lo, hi, col):
        return over(self.samples, lo, hi, col)


@contextlib.contextmanager
def hogs(n=None):
    """n CPU-bound processes (one per online CPU by default) at the caller's priority for
    the duration of the block."""
    n = n or os.cpu_count() or 1
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


class CpuQuota:
    """A cgroup of its own with a CPU quota of `cores` (0.5: 50 ms of CPU every 100 ms), on
    cgroup v2 (`cpu.max`) when that is the hierarchy with the cpu controller, else v1
    (`cpu.cfs_quota_us`). `wrap(argv)` runs argv inside it; `usage_s()` is its CPU so far.
    Needs root (or a delegated hierarchy); `available()` says why not."""

    V2 = "/sys/fs/cgroup"
    V1 = "/sys/fs/cgroup/cpu"
    V1_ACCT = "/sys/fs/cgroup/cpuacct"  # a hierarchy of its own on some v1 hosts
    PERIOD_US = 100000

    def __init__(self, name, cores):
        self.name = name
        self.cores = cores
        self.path = None
        self.acct = None  # v1: the cpuacct cgroup when cpuacct is mounted apart from cpu
        self.version = None

    @classmethod
    def available(cls):
        """None when a quota can be made here, else why not."""
        if os.geteuid() != 0:
            return "not root: cannot make a cgroup"
        if cls._v2_cpu() or os.path.exists(os.path.join(cls.V1, "cpu.cfs_quota_us")):
            return None
        return "no cgroup cpu controller (neither v2 cpu.max nor v1 cpu.cfs_quota_us)"

    @classmethod
    def _v2_cpu(cls):
        try:
            with open(os.path.join(cls.V2, "cgroup.controllers")) as f:
                return "cpu" in f.read().split()
        except OSError:
            return False

    def __enter__(self):
        if self._v2_cpu():
            with open(os.path.join(self.V2, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")
            self.version, self.path = 2, os.path.join(self.V2, self.name)
            os.makedirs(self.path, exist_ok=True)
            with open(os.path.join(self.path, "cpu.max"), "w") as f:
                f.write(f"{int(self.cores * self.PERIOD_US)} {self.PERIOD_US}")
        else:
            self.version, self.path = 1, os.path.join(self.V1, self.name)
            os.makedirs(self.path, exist_ok=True)
            for k, v in (("cpu.cfs_period_us", self.PERIOD_US),
                         ("cpu.cfs_quota_us", int(self.cores * self.PERIOD_US))):
                with open(os.path.join(self.path, k), "w") as f:
                    f.write(str(v))
            if not os.path.exists(os.path.join(self.path, "cpuacct.usage")) and \
                    os.path.exists(os.path.join(self.V1_ACCT, "cpuacct.usage")):
                self.acct = os.path.join(self.V1_ACCT, self.name)
                os.makedirs(self.acct, exist_ok=True)
        return self

    def wrap(self, argv):
        """argv run inside the cgroup: a shell moves itself in, then execs argv."""
        moves = " && ".join(f'echo $$ > "{os.path.join(d, "cgroup.procs")}"'
                            for d in (self.path, self.acct) if d)
        return ["sh", "-c", f'{moves} && exec "$@"', "sh", *argv]

    def usage_s(self):
        """CPU seconds the cgroup's processes used (v2 cpu.stat usage_usec; v1 cpuacct)."""
        if self.version == 2:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                stat = dict(line.split() for line in f)
            return int(stat["usage_usec"]) / 1e6
        acct = os.path.join(self.acct or self.path, "cpuacct.usage")
        if os.path.exists(acct):
            with open(acct) as f:
                return int(f.read()) / 1e9
        return None

    def throttled_s(self):
        """Time the cgroup spent throttled (cpu.stat), seconds."""
        with open(os.path.join(self.path, "cpu.stat")) as f:
            stat = dict(line.split() for line in f)
        if self.version == 2:
            return int(stat.get("throttled_usec", 0)) / 1e6
        return int(stat.get("throttled_time", 0)) / 1e9

    def throttled_periods(self):
        """(periods in which the cgroup ran out of quota, periods in which it ran), cpu.stat's
        nr_throttled and nr_periods: the share of periods throttled says whether the quota
        bit, whatever the length of each throttle."""
        with open(os.path.join(self.path, "cpu.stat")) as f:
            stat = dict(line.split() for line in f)
        return int(stat.get("nr_throttled", 0)), int(stat.get("nr_periods", 0))

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = [int(x) for x in f.read().split()]
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)
        for d in (self.path, self.acct):
            for _ in range(50 if d else 0):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)
        return False


def record(out_path, pids):
    """Writes a sample of each live pid every SAMPLE_EVERY_S to out_path until all exited."""
    live = set(pids)
    with open(out_path, "a") as out:
        while live:
            for pid in sorted(live):
                try:
                    t, thread, proc = read_pid(pid)
                except (OSError, IndexError, ValueError):
                    live.discard(pid)
                    continue
                out.write(json.dumps({"t": t, "pid": pid, "thread_s": thread,
                                      "process_s": proc}) + "\n")
            out.flush()
            time.sleep(SAMPLE_EVERY_S)


def load(path, pid):
    """The samples of pid in a record() file, as [(t, thread_s, process_s)]."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [(r["t"], r["thread_s"], r["process_s"]) for r in rows if r["pid"] == pid]


def main(argv):
    if len(argv) >= 3 and argv[1] == "record":
        record(argv[2], [int(p) for p in argv[3:]])
        return 0
    if len(argv) == 6 and argv[1] == "over":
        s = load(argv[2], int(argv[3]))
        lo, hi = float(argv[4]), float(argv[5])
        print(json.dumps({"thread_s": over(s, lo, hi, THREAD),
                          "process_s": over(s, lo, hi, PROCESS)}))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
