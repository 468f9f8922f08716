"""Co-scheduled pairs for bench/sdk_overhead/run.sh: the run without the SDK and the run with
it execute at the same time, both pinned to the same CPU (`taskset`), so the kernel time-slices
them a few milliseconds apart and both see the same host. On a shared VM the speed of a CPU
swings by up to 40 % within a second (an SMT sibling busy or not); runs one after the other
inherit those swings (sd ~11 % per pair here), runs side by side on one CPU do not (sd ~2 %).
docs/performance-sdk.md, *SDK overhead*, gives the figures.

Each workload, with RT_BENCH_BARRIER=1 in its environment, writes "ready" on stderr once it
would start its timed work (the SDK profiling) and waits for a line on stdin; the driver
releases both runs of a pair together. Which of the two starts first alternates every pair.

Usage: python3 copair.py --out FILE.jsonl --pairs N [--cpu C] [--load N] [--env K=V ...]
                         -- CMD_OFF ... -- CMD_ON ...
Writes one JSON line per run (the workload's own line, plus "pair", "cpu" and "load");
prints a line per pair. Exit status 1 when a run fails, with its stderr."""
import argparse
import json
import os
import subprocess
import sys

READY_TIMEOUT_S = 60   # a run that is not ready by then (SDK never profiling) fails
RUN_TIMEOUT_S = 600


def start(cmd, cpu, env):
    return subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(p, what):
    """Reads p's stderr up to its "ready" line; returns the lines before it."""
    seen = []
    while True:
        line = p.stderr.readline()
        if not line:
            p.wait(timeout=READY_TIMEOUT_S)
            raise RuntimeError(f"{what} ended before it was ready (exit {p.returncode}):\n"
                               + "".join(seen))
        if line.strip() == "ready":
            return seen
        seen.append(line)


def finish(p, what):
    out, err = p.communicate(timeout=RUN_TIMEOUT_S)
    if p.returncode != 0 or not out.strip():
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{err}")
    return json.loads(out.strip().splitlines()[-1])


def run_pair(off, on, cpu, env, on_first):
    """Runs one pair side by side on `cpu`; returns (off_result, on_result)."""
    order = [("on", on), ("off", off)] if on_first else [("off", off), ("on", on)]
    procs = {}
    try:
        for what, cmd in order:
            procs[what] = start(cmd, cpu, env)
        for what, _ in order:
            wait_ready(procs[what], what)
        for what, _ in order:  # release both: a line on stdin each
            procs[what].stdin.write("\n")
            procs[what].stdin.flush()
        return finish(procs["off"], "off"), finish(procs["on"], "on")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def hogs(n):
    """n CPU-bound processes (sha256 of /dev/zero), unpinned: a loaded host."""
    return [subprocess.Popen(["sha256sum", "/dev/zero"], stdout=subprocess.DEVNULL)
            for _ in range(n)]


def main():
    argv = sys.argv[1:]
    if argv.count("--") != 2:
        sys.exit(__doc__)
    i = argv.index("--")
    j = argv.index("--", i + 1)
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--load", type=int, default=0, help="CPU-bound processes beside the runs")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv[:i])
    off, on = argv[i + 1:j], argv[j + 1:]
    env = dict(os.environ, RT_BENCH_BARRIER="1")
    env.update(kv.split("=", 1) for kv in a.env)
    loaders = hogs(a.load)
    try:
        with open(a.out, "a") as f:
            for k in range(a.pairs):
                try:
                    r_off, r_on = run_pair(off, on, a.cpu, env, on_first=k % 2 == 1)
                except RuntimeError as e:
                    print(f"  {a.label} pair {k + 1}: {e}")
                    return 1
                load = float(open("/proc/loadavg").read().split()[0])
                for r in (r_off, r_on):
                    r.update(pair=k, cpu=a.cpu, load=a.load, loadavg=load)
                    f.write(json.dumps(r) + "\n")
                f.flush()
                print(f"  {a.label} pair {k + 1}: cpu {r_off['cpu_s']:.3f} s without, "
                      f"{r_on['cpu_s']:.3f} s with the SDK: {r_on['cpu_s'] / r_off['cpu_s']:.3f}"
                      f" (load average {load:.2f})", flush=True)
    finally:
        for h in loaders:
            h.kill()
            h.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
