"""Summarises bench/sdk_overhead/run.sh: per SDK (and per condition for Go), one verdict line
(goal, CPU overhead +- its standard error, verdict, pairs) and the details under it: the paired
wall ratio, the median CPU of each side, the per-upload cost, GC cycles (Go) and what the SDK
reported. Prints figures; never fails on them (STYLE.md).
Usage: python3 summary.py RESULTS_DIR [SERVER_URL ADMIN_TOKEN]  (run.sh leaves the runs' JSON
lines in build/bench-sdk/; with the server's URL and token it also lists what it stored)"""
import json
import os
import statistics
import sys
import urllib.request

RUNS = ("node", "python", "go-quiet", "go-loaded", "go-heap256", "java", "java-light",
        "java-jfr", "php", "php-fpm")
GOALS = {"node": 0.01, "python": 0.02, "go": 0.01, "java": 0.02, "php": 0.02}  # issue #20
Z = 1.96                # two-sided 95 %
UPLOAD_INTERVAL_S = 60  # the default upload interval (docs/control-plane.md)
LABEL = {"node": "Node (work_node.js)", "python": "Python (work_python.py, 10 threads)",
         "go-quiet": "Go (work_go), quiet", "go-loaded": "Go (work_go), loaded",
         "go-heap256": "Go (work_go beside 256 MiB live), quiet",
         "java": "Java (work_java, wall, 10 threads)",
         "java-light": "Java (work_java, wall, 2 compute threads)",
         "java-jfr": "Java (work_java, cpu from JFR, 10 threads)",
         "php": "PHP (work_php.php, requests)",
         "php-fpm": "PHP under php-fpm (work_php_fpm.py, requests over FastCGI)"}
# Samplers that tick on wall time would take twice their samples per CPU-second of work with
# half a CPU, as a run has side by side: run.sh doubles their interval to keep the default's
# samples per CPU-second. Go's and excimer's (PHP's cpu) tick on CPU time.
WALL_TICKS = {"node", "python", "java"}
# The Go SDK's default (sdk/go/heap.go, config.go): back to back, except while the GC's heap
# goal is within a quarter of its 4 MiB minimum, where it profiles 5 s of every 60 s.
GO_HEAP_MIN = 4 << 20
GO_DUTY_ON_S, GO_DUTY_EVERY_S = 5, 60


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pairs_of(runs):
    """[(run without, run with)] by the "pair" copair.py wrote."""
    by = {}
    for r in runs:
        by.setdefault(r["pair"], {})[r["sdk"]] = r
    return [(p[False], p[True]) for _, p in sorted(by.items()) if False in p and True in p]


def verdict(over, se, goal, n):
    """MET when the 95 % interval lies at or under the goal, OVER when it lies above it, else
    UNRESOLVED with the pairs that would tell (the error falls with 1/sqrt(pairs))."""
    if over + Z * se <= goal:
        return "MET"
    if over - Z * se > goal:
        return "OVER"
    gap = abs(goal - over)
    if gap < 1e-4:
        return "UNRESOLVED (at the goal)"
    return f"UNRESOLVED (~{n * (Z * se / gap) ** 2:.0f} pairs would tell)"


def summarise(name, runs):
    sdk = name.split("-")[0]
    goal = GOALS[sdk]
    pairs = pairs_of(runs)
    if len(pairs) < 2:
        print(f"{LABEL[name]}: incomplete ({len(pairs)} pairs)")
        return
    if len({r["checksum"] for r in runs}) != 1:
        print(f"{LABEL[name]}: WARNING the runs did different work (checksums differ)")
    n = len(pairs)
    offs = [off for off, _ in pairs]
    ons = [on for _, on in pairs]
    cpu = [on["cpu_s"] / off["cpu_s"] for off, on in pairs]
    wall = [on["wall_s"] / off["wall_s"] for off, on in pairs]
    mean, se = statistics.mean(cpu), statistics.stdev(cpu) / n ** 0.5
    # Each upload interval (60 s by default) ends a profile, encodes and uploads it: what
    # stop() does, timed apart in each run. Its CPU against 60 s of the workload's CPU (alone
    # on its CPU: CPU per wall second of a run without the SDK, times 2 side by side, at most 1).
    stop_cpu = statistics.median(r["stop_cpu_s"] for r in ons)
    stop_wall = statistics.median(r["stop_wall_s"] for r in ons)
    busy = min(1.0, 2 * statistics.median(r["cpu_s"] / r["wall_s"] for r in offs))
    per_upload = stop_cpu / (UPLOAD_INTERVAL_S * busy)
    over = mean - 1 + per_upload
    bound = ", wall-time sampler at twice its interval (half a CPU)" if sdk in WALL_TICKS else ""
    if name == "java-jfr":
        bound = (", JFR's period held at 20 ms: side by side up to twice the default's samples "
                 "per CPU-second")
    duty = ""
    goals = [r["heap_goal_bytes"] for r in ons if "heap_goal_bytes" in r]
    if goals and statistics.median(goals) <= GO_HEAP_MIN * 5 // 4:
        # The runs are shorter than the default's 5 s "on" part, so they measure that part;
        # the default holds the profiler 5 s in 60 and pays one stop() per period.
        on_part = mean - 1
        f = GO_DUTY_ON_S / GO_DUTY_EVERY_S
        print(f"{LABEL[name]}: the heap at the GC's minimum ({statistics.median(goals) / 2**20:.1f} MiB "
              f"goal): the default profiles {GO_DUTY_ON_S} s of every {GO_DUTY_EVERY_S} s; the "
              f"runs measure the on part, {on_part:+.2%} +- {se:.2%}")
        over, se = on_part * f + per_upload, se * f
        duty = f", composed: on part x {GO_DUTY_ON_S}/{GO_DUTY_EVERY_S} + one upload a minute"
    print(f"{LABEL[name]}: goal <= {goal:.0%}; overhead {over:+.2%} +- {se:.2%}; "
          f"{verdict(over, se, goal, n)}; {n} pairs{bound}{duty}")
    print(f"  paired CPU ratio {mean:.4f} (median {statistics.median(cpu):.4f}); paired wall "
          f"ratio {statistics.mean(wall):.4f} +- {statistics.stdev(wall) / n ** 0.5:.4f}; "
          f"median CPU {statistics.median(r['cpu_s'] for r in offs):.3f} s without, "
          f"{statistics.median(r['cpu_s'] for r in ons):.3f} s with; load average "
          f"{min(r['loadavg'] for r in runs):.2f}-{max(r['loadavg'] for r in runs):.2f}")
    print(f"  per pair: {', '.join(f'{p:.3f}' for p in cpu)}")
    print(f"  per upload (stop(): end, encode, upload; median): {stop_wall * 1000:.1f} ms wall, "
          f"{stop_cpu * 1000:.1f} ms CPU = {per_upload:+.3%} of the work's CPU at one upload "
          f"per {UPLOAD_INTERVAL_S} s (in the overhead above)")
    firsts = [r["first_stop_cpu_s"] for r in ons if r.get("first_stop_cpu_s") is not None]
    if firsts:
        print(f"  the JVM's first upload, once per JVM (not in the overhead; the one above is a "
              f"warm one): {statistics.median(firsts) * 1000:.0f} ms CPU (median)")
    if "gc_cycles" in runs[0]:
        g_off = statistics.median(r["gc_cycles"] for r in offs)
        g_on = statistics.median(r["gc_cycles"] for r in ons)
        print(f"  GC cycles per run (median): {g_off:.0f} without, {g_on:.0f} with the SDK "
              f"({g_on / g_off - 1:+.0%})")
    if "worker_minor_faults" in runs[0]:
        f_off = statistics.median(r["worker_minor_faults"] for r in offs)
        f_on = statistics.median(r["worker_minor_faults"] for r in ons)
        print(f"  php-fpm worker's minor page faults per run (median): {f_off:.0f} without, "
              f"{f_on:.0f} with the SDK")
    last = ons[-1]
    if sdk == "node" and last.get("sdk_info"):
        i = last["sdk_info"]
        print(f"  SDK: status {i['status']!r}, {i['profiles']} profile(s) uploaded per run, "
              f"median sampling delta {i['median_delta_us']} us (configured {i['interval_us']})")
    elif last.get("sdk_status"):
        i = last["sdk_status"]
        walls = [r["wall_s"] / r["sdk_status"]["samples"] for r in ons
                 if r["sdk_status"].get("samples")]
        rate = (f"one per {statistics.median(walls) * 1000:.0f} ms of wall time" if walls
                else "no sample count reported")
        sent = i.get("profiles_sent", i.get("sent"))  # PHP's info() names it "sent"
        print(f"  SDK: status {i.get('status')!r}, {sent} profile(s) sent "
              f"per run, {i.get('samples')} samples in the last run: {rate} (configured "
              f"{i.get('interval_us', 0) / 1000:.0f} ms)"
              + (f", median walk {i['median_walk_us']} us" if "median_walk_us" in i else ""))


def main():
    out = sys.argv[1]
    url, token = (sys.argv[2:4] + [None, None])[:2]
    print("== summary: overhead = mean over co-scheduled pairs of (CPU with / CPU without) - 1, "
          "plus one upload per 60 s; +- its standard error; MET/OVER when the 95 % interval is "
          "on one side of the goal")
    for name in RUNS:
        path = os.path.join(out, f"{name}.jsonl")
        if os.path.exists(path):
            summarise(name, load(path))
    if not url:
        return
    req = urllib.request.Request(url + "/api/v1/services",
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            services = json.load(r)
        for s in services:
            print(f"  server: service {s.get('name')}: {len(s.get('instances') or [])} "
                  f"instances seen, types {s.get('types')}")
    except OSError as e:
        print(f"  server: could not list services: {e}")


if __name__ == "__main__":
    main()
