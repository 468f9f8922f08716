"""Summarises bench/sdk_overhead/run.sh: per SDK, the median wall and CPU time of the runs
without and with the SDK, their ratio, the spread of the runs without it (the noise the ratio
has to be read against), and PASS/OVER against the overhead goal. Prints figures; never fails
on them (STYLE.md). Usage: python3 summary.py OUT_DIR SERVER_URL ADMIN_TOKEN"""
import json
import os
import statistics
import sys
import urllib.request

SDKS = ("node", "python", "go", "java", "php")
GOALS = {"node": 0.01, "python": 0.02, "go": 0.01, "java": 0.02, "php": 0.02}  # the goals
UPLOAD_INTERVAL_S = 60  # the default upload interval (docs/control-plane.md)
LABEL = {"node": "Node (work_node.js)", "python": "Python (work_python.py, 10 threads)",
         "go": "Go (work_go)", "java": "Java (work_java)", "php": "PHP (work_php.php, requests)"}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def summarise(name, runs):
    off = [r for r in runs if not r["sdk"]]
    on = [r for r in runs if r["sdk"]]
    if not off or not on or len(off) != len(on):
        print(f"{LABEL[name]}: incomplete ({len(off)} runs without, {len(on)} with the SDK)")
        return
    if len({r["checksum"] for r in runs}) != 1:
        print(f"{LABEL[name]}: WARNING the runs did different work (checksums differ)")
    goal = GOALS[name]
    print(f"{LABEL[name]}: {len(off)} pairs; goal <= {goal:.0%} overhead")
    print(f"  {'':5} {'without':>9} {'with SDK':>9} {'ratio of':>9} {'paired':>7} "
          f"{'':>8} {'overhead':>9}  verdict (on the paired ratio)")
    print(f"  {'':5} {'(median)':>9} {'(median)':>9} {'medians':>9} {'ratio':>7} "
          f"{'+- s.e.':>8}")
    for key in ("wall_s", "cpu_s"):
        a = statistics.median(r[key] for r in off)
        b = statistics.median(r[key] for r in on)
        # Pairs ran back to back (order flipped every pair), so their ratio cancels the slow
        # drift of a shared machine's load that the medians keep.
        pairs = [y[key] / x[key] for x, y in zip(off, on)]
        paired = statistics.median(pairs)
        se = statistics.stdev(pairs) / len(pairs) ** 0.5 if len(pairs) > 1 else float("nan")
        verdict = "PASS" if paired - 1 <= goal else "OVER"
        if abs(paired - 1) < 2 * se:
            verdict += " (within noise)"
        print(f"  {key[:-2]:5} {a:>8.3f}s {b:>8.3f}s {b / a:>9.3f} {paired:>7.3f} {se:>8.3f} "
              f"{paired - 1:>+9.2%}  {verdict}")
        print(f"        per pair: {', '.join(f'{p:.3f}' for p in pairs)}")
        paired_cpu = paired
    # Each upload interval (60 s by default) ends a profile, encodes and uploads it: what
    # stop() does, timed apart in each run. Its CPU against 60 s of the workload's CPU:
    stop_cpu = statistics.median(r["stop_cpu_s"] for r in on)
    stop_wall = statistics.median(r["stop_wall_s"] for r in on)
    busy = statistics.median(r["cpu_s"] / r["wall_s"] for r in off)  # CPUs the work keeps busy
    per_upload = stop_cpu / (UPLOAD_INTERVAL_S * busy)
    total = paired_cpu - 1 + per_upload
    print(f"  per upload (stop(): end, encode, upload; median): {stop_wall * 1000:.1f} ms wall, "
          f"{stop_cpu * 1000:.1f} ms CPU = {per_upload:+.3%} of the work's CPU at one upload "
          f"per {UPLOAD_INTERVAL_S} s; with the paired CPU ratio: {total:+.2%}"
          f" -> {'PASS' if total <= goal else 'OVER'}")
    last = on[-1]
    if name == "node" and last.get("sdk_info"):
        i = last["sdk_info"]
        print(f"  SDK: status {i['status']!r}, {i['profiles']} profile(s) uploaded per run, "
              f"median sampling delta {i['median_delta_us']} us (configured {i['interval_us']})")
    elif last.get("sdk_status"):
        i = last["sdk_status"]
        walls = [r["wall_s"] / r["sdk_status"]["samples"] for r in on
                 if r["sdk_status"].get("samples")]
        rate = (f"one per {statistics.median(walls) * 1000:.0f} ms of wall time" if walls
                else "no sample count reported")
        print(f"  SDK: status {i.get('status')!r}, {i.get('profiles_sent')} profile(s) sent "
              f"per run, {i.get('samples')} samples in the last run: {rate} (configured "
              f"{i.get('interval_us', 0) / 1000:.0f} ms)"
              + (f", median walk {i['median_walk_us']} us" if "median_walk_us" in i else ""))


def main():
    out, url, token = sys.argv[1:4]
    print("== summary: with SDK / without, same run. 'paired ratio' is the median over pairs of "
          "(run with / run without, back to back); s.e. its standard error")
    for name in SDKS:
        path = os.path.join(out, f"{name}.jsonl")
        if os.path.exists(path):
            summarise(name, load(path))
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
