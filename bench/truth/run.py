#!/usr/bin/env python3
"""Truthfulness runs (`make bench-truth`, DESIGN §6, issue #12): does the issue view name the
function that grew, and only when one did? On a loaded host (a CPU hog on every core beside
everything else), the demo's checkout services (Node and Go, under their SDKs and a
built-in load) run through releases in phases of PHASE_S seconds, a fresh process each:

    1.0, 1.0, 2.0, 1.0, 1.0, 2.0, ...

At each boundary the diff compares the WINDOW_S seconds before it with the WINDOW_S after.
1.0 -> 1.0 is an A/A run (a redeploy of the same release: nothing may be significant);
1.0 -> 2.0 is an A/B run (applyDiscount does 3x the work: it must rank first and be
significant). LANES services per runtime run side by side, so PAIRS of each take about
3 * PAIRS / LANES phases. Prints each run's rank, delta_pp and z, then the tallies against
the goals: A/B found in >= 19 of 20, A/A flagged in <= 1 of 20. A benchmark, not a test:
nothing here passes or fails; figures go to docs/performance.md.

Usage: bench/truth/run.py [--pairs 20] [--lanes 3] [--window-s 60] [--runtimes node,go]
                          [--hogs N (default: one per CPU; 0: none)]"""
import argparse
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import kernel_cpu  # noqa: E402

BIN = os.environ.get("ROOTTRACE_BIN", os.path.join(REPO, "build", "roottrace"))
TARGET = {"node": "src/pricing.applyDiscount", "go": "main.applyDiscount"}
UPLOAD_INTERVAL_S = 10


class Api:
    def __init__(self, url, token):
        self.url, self.token = url, token

    def call(self, method, path, params=None, body=None):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read() or b"null")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(work):
    token = "rt_truth_" + secrets.token_hex(16)
    port = free_port()
    log = open(os.path.join(work, "server.log"), "wb")
    proc = subprocess.Popen([BIN, "serve", "--data", os.path.join(work, "data"), "--listen",
                             f"127.0.0.1:{port}"], stdout=log, stderr=log,
                            env={**os.environ, "ROOTTRACE_BOOTSTRAP_TOKEN": token})
    api = Api(f"http://127.0.0.1:{port}", token)
    for _ in range(200):
        try:
            urllib.request.urlopen(api.url + "/healthz", timeout=1)
            return proc, api
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start")


def build_go(work):
    out = os.path.join(work, "checkout-go")
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(REPO, "demo", "go-service"),
                   env={**os.environ, "GOTOOLCHAIN": "local", "GOPROXY": "off"}, check=True)
    return out


class Lane(threading.Thread):
    """One service going through its phases; records each boundary (time, kind)."""

    def __init__(self, runtime, service, phases, window_s, env, go_bin, work):
        super().__init__(daemon=True)
        self.runtime, self.service, self.phases = runtime, service, phases
        self.window_s, self.env, self.go_bin, self.work = window_s, env, go_bin, work
        self.boundaries = []  # (unix s, "A/A" | "A/B" | "B/A")
        self.error = None

    def argv(self):
        if self.runtime == "node":
            return ["node", "--no-turbo-inlining", "--no-use-osr",
                    os.path.join(REPO, "demo", "node-service", "src", "server.js")]
        return [self.go_bin]

    def phase(self, k, version):
        log_path = os.path.join(self.work, f"{self.service}-{k}.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(self.argv(), stdout=log, stderr=log, env={
                **self.env, "DEMO_VERSION": version, "DEMO_SERVICE": self.service, "PORT": "0"})
        port = None
        for _ in range(300):
            with open(log_path) as f:
                words = [line.split() for line in f if "listening" in line]
            if words:
                port = int(words[0][-1])
                break
            time.sleep(0.05)
        if port is None:
            proc.kill()
            raise RuntimeError(f"{self.service} did not start; see {log_path}")
        load = subprocess.Popen([sys.executable, os.path.join(REPO, "demo", "load.py"),
                                 f"http://127.0.0.1:{port}/checkout", str(self.window_s + 3), "1"],
                                stdout=subprocess.DEVNULL)
        load.wait()
        proc.terminate()  # the SDK uploads the profile in progress
        proc.wait(timeout=30)

    def run(self):
        try:
            prev = None
            for k, version in enumerate(self.phases):
                if prev is not None:
                    kind = "A/A" if prev == version else "A/B" if version == "2.0" else "B/A"
                    self.boundaries.append((time.time(), kind))
                self.phase(k, version)
                prev = version
        except Exception as e:  # reported with the lane's results
            self.error = e


def diff_at(api, service, at, window_s):
    return api.call("GET", "/api/v1/diff", {
        "service": service, "type": "cpu", "base_from": f"{at - window_s:.3f}",
        "base_to": f"{at:.3f}", "cur_from": f"{at:.3f}", "cur_to": f"{at + window_s:.3f}"})


def judge(d, target):
    """(rank of target or None, its row, rows that are significant)."""
    fns = d["functions"]
    rank = next((i + 1 for i, f in enumerate(fns) if f["name"] == target), None)
    row = fns[rank - 1] if rank else None
    return rank, row, [f for f in fns if f["significant"]]


def fmt_z(z):
    return "   n/a" if z is None else f"{z:6.1f}"


def row_ab(n, service, d, target):
    """One A/B run's line: the target's rank, delta_pp, z and significance."""
    rank, row, _ = judge(d, target)
    r = row or {}
    top = d["functions"][0] if d["functions"] else {}
    above = "" if rank == 1 else (f"  first: {top.get('name', '-')} ({top.get('delta_pp', 0):+.2f} "
                                  f"pp, z {fmt_z(top.get('z')).strip()})")
    print(f"{n:>4} A/B  {service:16} {rank or '-':>4} {r.get('delta_pp', 0):+8.2f} "
          f"{fmt_z(r.get('z'))} {'yes' if r.get('significant') else 'no':>3}{above}")
    return rank == 1 and bool(r.get("significant"))


def row_aa(n, service, d):
    """One A/A run's line: the top function, and every function flagged significant."""
    fns = d["functions"]
    top = fns[0] if fns else {}
    sig = [f for f in fns if f["significant"]]
    print(f"{n:>4} A/A  {service:16} {top.get('delta_pp', 0):+8.2f} {fmt_z(top.get('z'))}  "
          f"top {top.get('name', '-')}; flagged: "
          + (", ".join(f"{f['name']} ({f['delta_pp']:+.2f} pp, z {f['z']:.1f})" for f in sig)
             or "none"))
    return bool(sig)


def report(api, lanes, window_s):
    """Prints every run and the tallies; returns {runtime: (found, A/B runs, flagged, A/A)}."""
    tallies = {}
    for rt in sorted({lane.runtime for lane in lanes}):
        runs = {"A/B": [], "A/A": []}
        print(f"\n== {rt}: each boundary's diff ({window_s} s either side)")
        print(f"{'run':>4} kind {'service':16} {'rank':>4} {'delta_pp':>8} {'z':>6} sig   (A/B: "
              f"{TARGET[rt]}; A/A: the top function)")
        for lane in (x for x in lanes if x.runtime == rt):
            for at, kind in lane.boundaries:
                if kind == "B/A":
                    continue
                d = diff_at(api, lane.service, at, window_s)
                n = len(runs[kind]) + 1
                runs[kind].append(row_ab(n, lane.service, d, TARGET[rt]) if kind == "A/B"
                                  else row_aa(n, lane.service, d))
        found, flagged = sum(runs["A/B"]), sum(runs["A/A"])
        tallies[rt] = (found, len(runs["A/B"]), flagged, len(runs["A/A"]))
        print(f"== {rt}: A/B: {TARGET[rt]} first and significant in {found} of "
              f"{len(runs['A/B'])} (goal: >= 19 of 20); A/A: something flagged in {flagged} of "
              f"{len(runs['A/A'])} (goal: <= 1 of 20)")
    return tallies


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=20, help="A/B runs (and A/A runs) per runtime")
    ap.add_argument("--lanes", type=int, default=3, help="services per runtime side by side")
    ap.add_argument("--window-s", type=int, default=60)
    ap.add_argument("--runtimes", default="node,go")
    ap.add_argument("--hogs", type=int, default=None)
    a = ap.parse_args()
    runtimes = a.runtimes.split(",")
    work = tempfile.mkdtemp(prefix="rt-truth-")
    print(f"== truthfulness runs: {a.pairs} A/B and {a.pairs} A/A per runtime ({runtimes}), "
          f"{a.lanes} lanes each, {a.window_s} s windows, hogs "
          f"{os.cpu_count() if a.hogs is None else a.hogs}, {os.cpu_count()} CPUs; work in {work}")
    server, api = start_server(work)
    try:
        key = api.call("POST", "/api/v1/keys", body={"scope": "ingest", "name": "truth"})["key"]
        env = {**os.environ, "ROOTTRACE_SERVER": api.url, "ROOTTRACE_KEY": key}
        go_bin = build_go(work) if "go" in runtimes else None
        lanes = []
        for rt in runtimes:
            for i in range(a.lanes):
                n = len(range(i, a.pairs, a.lanes))  # pairs this lane runs
                if n == 0:
                    continue
                service = f"truth-{rt}-{i}"
                api.call("PUT", f"/api/v1/services/{service}/profiling",
                         body={"enabled": True, "upload_interval_s": UPLOAD_INTERVAL_S})
                phases = ["1.0", "1.0", "2.0"] * n
                lanes.append(Lane(rt, service, phases, a.window_s, env, go_bin, work))
        t0 = time.time()
        with kernel_cpu.hogs(a.hogs) if a.hogs != 0 else contextlib.nullcontext():
            for lane in lanes:
                lane.start()
            for lane in lanes:
                lane.join()
        for lane in lanes:
            if lane.error:
                print(f"lane {lane.service} failed: {lane.error}")
        time.sleep(UPLOAD_INTERVAL_S + 5)  # the last uploads
        print(f"== phases ran {time.time() - t0:.0f} s")
        report(api, lanes, a.window_s)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
