#!/usr/bin/env python3
"""SDK faults: the server down, then back (docs/reliability.md). For one SDK:

1. starts the real `roottrace serve` (poll interval 1 s), turns profiling on for a service
   (upload interval 10 s) and puts the fault proxy (proxy.py) in front of it;
2. starts the SDK's application (apps/), which does request-like units of work continuously
   and reports every unit's latency and the SDK's status and queue once a second;
3. phases: up (profiling, uploads arrive), down for --down-s seconds (first half connections
   refused, second half accepted and never answered), invalid config answers (malformed JSON,
   wrong types, NaN, a 500) for at least --invalid-s seconds and until the SDK got each once
   (or, polling less often, one), then the real config again until a new profile arrives;
4. asserts (a) unit latency while down against up (the server healthy and profiling on,
   before and after the outage): p50 <= 2 x p50 up + 2 ms and p99 <= 2 x p99 up + 10 ms, and
   the unit rate while down >= half the rate while up (PHP: the slowest unit <= 5.5 s);
   (b) the SDK's queue while down <= its bound (8), the app's RSS while down <= RSS while
   up (Java: at least its -Xmx) + 32 MiB, and in the outage's last minute <= its first
   + 16 MiB; (c) no profile covering time after the SDK had to stop (3 poll intervals into
   the outage) reaches the server before a valid config is served, in particular none during
   the invalid phase; profiling resumes within 3 poll intervals of the valid config and its
   first profile arrives within an upload interval + 3 poll intervals + 5 s (a valid poll
   after failed ones ends the upload backoff, so profiles queued while down go at once too);
   the status said
   why it stopped ("error: no valid config for 3 poll intervals", "error: invalid config");
   (d) the app never dies nor sees an exception, exits 0 after stop/flush, and the profile
   open when the server went away is delivered or counted as dropped.

Usage: run.py --sdk node|python|go|java|php [--down-s 60] [--json OUT]; exit 1 on a failure.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from proxy import Proxy  # noqa: E402

ADMIN = "rt_fault_admin_token_0123456789abcdef"
POLL_S = 1
UPLOAD_S = 10
QUEUE_BOUND = 8          # every SDK's documented upload queue (profiles)
RSS_GROWTH_MIB = 32      # RSS while down may exceed RSS while up by at most this
RSS_TREND_MIB = 16       # RSS in the outage's last minute may exceed its first by at most this
JAVA_XMX_MIB = 256       # the Java app's -Xmx
SLACK_S = 2.5            # clock and scheduling slack for the fail-closed window


def api(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {ADMIN}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def app_command(sdk, tmp):
    """The command (argv, extra env) that runs the SDK's fault application; builds it first
    where needed (Go binary, Java class)."""
    apps = os.path.join(HERE, "apps")
    if sdk == "node":
        return ["node", os.path.join(apps, "app_node.js")], {}
    if sdk == "python":
        return [sys.executable, os.path.join(apps, "app_python.py")], {
            "PYTHONPATH": os.path.join(ROOT, "sdk", "python", "src")}
    if sdk == "go":
        out = os.path.join(tmp, "app_go")
        subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(apps, "go"), check=True)
        return [out], {}
    if sdk == "java":
        jar = os.path.join(ROOT, "sdk", "java", "target", "roottrace-agent.jar")
        if not os.path.exists(jar):
            subprocess.run(["mvn", "-B", "-q", "package", "-DskipTests"],
                           cwd=os.path.join(ROOT, "sdk", "java"), check=True,
                           stdout=subprocess.DEVNULL)
        classes = os.path.join(tmp, "classes")
        subprocess.run(["javac", "-cp", jar, "-d", classes,
                        os.path.join(apps, "FaultApp.java")], check=True)
        return ["java", f"-Xmx{JAVA_XMX_MIB}m", "-cp", f"{jar}:{classes}", "FaultApp"], {}
    if sdk == "php":
        return ["php", os.path.join(apps, "app_php.php")], {
            "RT_SPOOL": os.path.join(tmp, "php-spool")}
    raise SystemExit(f"unknown SDK {sdk}")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class App:
    """The running application: its reports (one JSON line a second) and RSS samples."""

    def __init__(self, argv, env, log_dir):
        self.err_path = os.path.join(log_dir, "app.stderr")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, env={**os.environ, **env}, text=True)
        self.reports = []  # each: t, u [[start_ms, lat_us]], status, queued, sent, dropped
        self.rss = []      # (t, KiB)
        self.bad_lines = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()

    def _read(self):
        with open(self.err_path.replace("stderr", "reports.jsonl"), "w") as keep:
            for line in self.proc.stdout:
                try:
                    r = json.loads(line)
                except ValueError:
                    self.bad_lines.append(line.rstrip())
                    continue
                self.reports.append(r)
                keep.write(json.dumps({k: v for k, v in r.items() if k != "u"}) + "\n")
                keep.flush()

    def _sample(self):
        while self.proc.poll() is None:
            r = rss_kib(self.proc.pid)
            if r is not None:
                self.rss.append((time.time(), r))
            time.sleep(0.5)

    def alive(self):
        return self.proc.poll() is None

    def status(self):
        return self.reports[-1]["status"] if self.reports else ""

    def stop(self, timeout=20):
        """Closes stdin (the app stops, flushes the SDK, prints a final report, exits)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed after %d s" % timeout
        finally:
            self.err.close()


def wait_until(pred, timeout, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def units_between(app, t0, t1):
    """Latencies (ms) of the units that started in [t0, t1)."""
    return [u[1] / 1000 for r in app.reports for u in r.get("u", []) if t0 <= u[0] / 1000 < t1]


def run(args):
    tmp = tempfile.mkdtemp(prefix=f"rt-faults-{args.sdk}-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    port = free_port()
    bin_ = os.environ.get("ROOTTRACE_BIN", os.path.join(ROOT, "build", "roottrace"))
    srv_log = open(os.path.join(tmp, "server.log"), "w")
    server = subprocess.Popen([bin_, "serve", "--data", data, "--listen", f"127.0.0.1:{port}",
                               "--poll-interval", f"{POLL_S}s"], stdout=srv_log, stderr=srv_log,
                              env={**os.environ, "ROOTTRACE_BOOTSTRAP_TOKEN": ADMIN})
    proxy = app = None
    res = {"sdk": args.sdk, "down_s": args.down_s, "poll_s": POLL_S, "upload_s": UPLOAD_S,
           "checks": {}, "log_dir": tmp}
    try:
        ok = wait_until(lambda: _healthy(port), 15)
        assert ok, "server did not become healthy"
        service = f"faults-{args.sdk}"
        key = api(port, "POST", "/api/v1/keys", {"scope": "ingest", "service": service})["key"]
        api(port, "PUT", f"/api/v1/services/{service}/profiling",
            {"enabled": True, "upload_interval_s": UPLOAD_S})
        proxy = Proxy(port)
        argv, env = app_command(args.sdk, tmp)
        env.update({"RT_SERVER": f"http://127.0.0.1:{proxy.port}", "RT_KEY": key,
                    "RT_SERVICE": service, "RT_INSTANCE": f"{service}-1"})
        app = App(argv, env, tmp)
        phases = drive(args, proxy, app)
        res["phases"] = phases
        res["exit"] = app.stop()
        assess(args, proxy, app, phases, res)
    except AssertionError as e:
        res["checks"]["harness"] = [False, str(e)]
    finally:
        if app is not None and app.alive():
            app.proc.kill()
        if proxy is not None:
            proxy.close()
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        srv_log.close()
    res["ok"] = all(v[0] for v in res["checks"].values())
    report(res, app)
    if res["ok"] and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def _healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
            return True
    except OSError:
        return False


def drive(args, proxy, app):
    """Runs the phases; returns their times (epoch seconds)."""
    ph = {"start": time.time()}
    assert wait_until(lambda: app.status().startswith("profiling") or not app.alive(), 60), \
        f"SDK not profiling after 60 s: {app.status()!r}"
    assert app.alive(), "the application died during start"
    ph["profiling"] = time.time()
    assert wait_until(lambda: any(u["http"] == 201 for u in proxy.uploads), UPLOAD_S + 30), \
        "no upload reached the server while up"
    ph["first_upload"] = time.time()
    time.sleep(args.up_extra_s)
    ph["down"] = proxy.set_mode("refuse")
    time.sleep(args.down_s / 2)
    ph["hang"] = proxy.set_mode("hang")
    time.sleep(args.down_s / 2)
    ph["invalid"] = proxy.set_mode("invalid")
    n0 = proxy.invalid_served

    def invalid_done():
        # At least --invalid-s and 4 bad answers (each kind once), or, for an SDK that polls
        # less often (PHP's failure backoff after the outage), one invalid config and then no
        # poll for 3 poll intervals.
        n, now = proxy.invalid_served - n0, time.time()
        last = max((p["t"] for p in proxy.polls), default=0)
        return now - ph["invalid"] >= args.invalid_s and (
            n >= 4 or (n >= 1 and now - last > 3 * POLL_S))
    ok = wait_until(invalid_done, args.invalid_max_s)
    assert ok, f"the SDK did not poll within {args.invalid_max_s} s of the server's return"
    ph["valid"] = proxy.set_mode("up")
    ok = wait_until(lambda: first_valid(proxy, ph) is not None
                    and new_uploads(proxy, ph), args.invalid_max_s + UPLOAD_S + 30)
    ph["new_upload"] = time.time() if ok else None
    wait_until(lambda: app.status().startswith("profiling"), 5)
    time.sleep(1.5)  # one more report with the final status
    ph["end"] = time.time()
    ph["status_end"] = app.status()
    return ph


def first_valid(proxy, ph):
    """The time the first valid config (the server's 200 or 304) was served after the outage."""
    ts = [p["t"] for p in proxy.polls if p["t"] >= ph["valid"] and p["http"] in (200, 304)]
    return min(ts) if ts else None


def new_uploads(proxy, ph):
    """Uploads stored after the outage whose profile starts after the first valid config."""
    fv = first_valid(proxy, ph)
    return [u for u in proxy.uploads if fv is not None and u["http"] in (200, 201)
            and u["start_s"] is not None and u["start_s"] >= fv - 1]


def check(res, name, ok, detail):
    res["checks"][name] = [bool(ok), detail]


def assess(args, proxy, app, ph, res):
    c = lambda *a: check(res, *a)  # noqa: E731
    fv = first_valid(proxy, ph)
    t_up0 = ph["first_upload"] - UPLOAD_S
    up = units_between(app, t_up0, ph["down"])
    after = units_between(app, fv, ph["end"]) if fv else []
    down = units_between(app, ph["down"], ph["invalid"])
    # The reference: the server healthy and profiling on, before the outage and after it (two
    # windows of the same run, so the machine's load at both times is in it).
    ref_span = (ph["down"] - t_up0) + ((ph["end"] - fv) if fv else 0)
    lat = {"up": summary(up, ph["down"] - t_up0),
           "after": summary(after, (ph["end"] - fv) if fv else 0),
           "ref": summary(up + after, ref_span),
           "down": summary(down, ph["invalid"] - ph["down"]),
           "refused": summary(units_between(app, ph["down"], ph["hang"]), ph["hang"] - ph["down"]),
           "hanging": summary(units_between(app, ph["hang"], ph["invalid"]),
                              ph["invalid"] - ph["hang"]),
           "invalid": summary(units_between(app, ph["invalid"], ph["valid"]),
                              ph["valid"] - ph["invalid"])}
    res["latency_ms"] = lat
    u, d = lat["ref"], lat["down"]
    c("a: units ran while up and down", u["n"] > 100 and d["n"] > 100,
      f"up {u['n']}, down {d['n']}")
    if u["n"] and d["n"]:
        c("a: p50 down <= 2 x p50 up + 2 ms", d["p50"] <= 2 * u["p50"] + 2,
          f"{d['p50']:.2f} vs {u['p50']:.2f} ms")
        c("a: p99 down <= 2 x p99 up + 10 ms", d["p99"] <= 2 * u["p99"] + 10,
          f"{d['p99']:.2f} vs {u['p99']:.2f} ms")
        c("a: unit rate down >= 1/2 rate up", d["rate"] >= u["rate"] / 2,
          f"{d['rate']:.0f}/s vs {u['rate']:.0f}/s")
    if args.sdk == "php":
        # A PHP request's end runs the SDK's maintenance in the CLI: a poll against a hanging
        # server costs it at most the 2 s poll deadline (5 s maintenance budget).
        c("a: php: slowest unit while down <= 5.5 s (maintenance budget)",
          d["max"] <= 5500, f"max {d['max']:.0f} ms, {d['over_100ms']} units over 100 ms")
    # (b) memory
    down_reports = [r for r in app.reports if ph["down"] <= r["t"] < ph["invalid"]]
    qmax = max((r.get("queued", 0) for r in down_reports), default=None)
    res["queue_max_down"] = qmax
    c("b: queue while down <= %d profiles" % QUEUE_BOUND, qmax is not None and qmax <= QUEUE_BOUND,
      f"max {qmax}")
    rss_up = max((k for t, k in app.rss if ph["profiling"] <= t < ph["down"]), default=0)
    rss_down = max((k for t, k in app.rss if ph["down"] <= t < ph["invalid"]), default=0)
    # The first and the last minute of the outage (growth between them: a leak while down).
    first = max((k for t, k in app.rss
                 if ph["down"] <= t < min(ph["down"] + 60, ph["invalid"])), default=0)
    last = max((k for t, k in app.rss
                if max(ph["invalid"] - 60, ph["down"]) <= t < ph["invalid"]), default=0)
    res["rss_mib"] = {"up_max": round(rss_up / 1024, 1), "down_max": round(rss_down / 1024, 1),
                      "down_first_min_max": round(first / 1024, 1),
                      "down_last_min_max": round(last / 1024, 1)}
    # A JVM may grow its heap to -Xmx at any time: its reference is at least that.
    ref = max(rss_up, JAVA_XMX_MIB * 1024) if args.sdk == "java" else rss_up
    c("b: RSS while down <= RSS up (Java: at least -Xmx) + %d MiB" % RSS_GROWTH_MIB,
      rss_up and rss_down <= ref + RSS_GROWTH_MIB * 1024,
      f"{rss_down / 1024:.1f} vs {ref / 1024:.1f} MiB")
    c("b: RSS in the outage's last minute <= its first minute + %d MiB" % RSS_TREND_MIB,
      last <= first + RSS_TREND_MIB * 1024, f"{last / 1024:.1f} vs {first / 1024:.1f} MiB")
    if args.sdk == "php":
        spool = max((r.get("spooled_bytes", 0) for r in down_reports), default=0)
        res["php_spool_max_down"] = spool
        c("b: php: spool while down <= 16 MiB", spool <= 16 << 20, f"{spool} bytes")
    # (c) fail closed and resumption
    stop_by = ph["down"] + 3 * POLL_S + SLACK_S
    res["first_valid_config_after_s"] = round(fv - ph["valid"], 2) if fv else None
    stored = [x for x in proxy.uploads if x["http"] in (200, 201)]
    late = [x for x in stored if x["start_s"] is not None and x["duration_s"] is not None
            and x["start_s"] + x["duration_s"] > stop_by and (fv is None or x["start_s"] < fv - 1)]
    c("c: no profile covers time after fail-closed and before a valid config", not late,
      f"{len(late)} such uploads (start after the outage, duration): "
      f"{[(round(x['start_s'] - ph['down'], 1), round(x['duration_s'], 1)) for x in late]}")
    inv = [x for x in stored if ph["invalid"] <= x["t"] < ph["valid"]]
    # New: covering time after the SDK had to stop (retries of profiles made before are fine).
    inv_new = [x for x in inv if x["start_s"] is None or x["duration_s"] is None
               or x["start_s"] + x["duration_s"] > stop_by]
    res["uploads_invalid_phase"] = {"new": len(inv_new),
                                    "queued_before_outage": len(inv) - len(inv_new)}
    t0 = ph["down"]
    res["uploads"] = [{"at": round(x["t"] - t0, 2), "mode": x["mode"], "http": x["http"],
                       "start": round(x["start_s"] - t0, 2) if x["start_s"] else None,
                       "duration": round(x["duration_s"], 2) if x["duration_s"] else None}
                      for x in proxy.uploads]
    res["phases_rel_down"] = {k: round(v - t0, 2) for k, v in ph.items()
                              if isinstance(v, float)}
    c("c: no new profile uploaded during the invalid phase", not inv_new, f"{len(inv_new)}")
    new = new_uploads(proxy, ph)
    first_new = min((x["t"] for x in new), default=None)
    res["valid_to_first_upload_s"] = round(first_new - fv, 1) if first_new and fv else None
    first_start = min((x["start_s"] for x in new), default=None)
    res["valid_to_profiling_s"] = round(first_start - fv, 1) if first_start and fv else None
    c("c: profiling resumes within 3 poll intervals of the valid config",
      first_start is not None and first_start - fv <= 3 * POLL_S + SLACK_S,
      f"{res['valid_to_profiling_s']} s")
    c("c: a new profile arrives within an upload interval + 3 poll intervals + 5 s",
      first_new is not None and first_new - fv <= UPLOAD_S + 3 * POLL_S + 5,
      f"{res['valid_to_first_upload_s']} s")
    # Profiles made before the outage and still queued go once the server is back (a valid
    # poll ends the upload backoff), not up to 60 s later.
    old_late = [x["t"] - fv for x in stored if fv and x["t"] > fv and x["start_s"] is not None
                and x["start_s"] < ph["down"]]
    res["queued_delivered_after_valid_s"] = round(max(old_late), 1) if old_late else None
    c("d: profiles queued while down are stored within 3 poll intervals + 5 s of a valid config",
      not old_late or max(old_late) <= 3 * POLL_S + 5, f"{res['queued_delivered_after_valid_s']} s")
    statuses = [r["status"] for r in app.reports] + [p["status"] for p in proxy.polls]
    down_st = [r["status"] for r in down_reports]
    c("c: status while down says no valid config",
      any(s.startswith("error: no valid config for 3 poll intervals") for s in down_st),
      sorted(set(s[:70] for s in down_st))[:4])
    inv_st = [r["status"] for r in app.reports if ph["invalid"] <= r["t"] < ph["valid"] + 3] + \
             [p["status"] for p in proxy.polls if ph["invalid"] <= p["t"] < ph["valid"] + 3]
    c("c: status during the invalid phase says invalid config",
      any(s.startswith("error: invalid config") for s in inv_st),
      sorted(set(s[:70] for s in inv_st))[:4])
    c("c: status profiling again at the end", ph["status_end"].startswith("profiling"),
      ph["status_end"])
    res["polls"] = {k: sum(1 for p in proxy.polls if p["mode"] == k)
                    for k in ("up", "hang", "invalid")}
    res["hang_attempts"] = len(proxy.attempts)
    res["statuses_seen"] = sorted(set(s[:90] for s in statuses))
    # (d) no crash, no exception; the open profile delivered or counted as dropped
    final = next((r for r in reversed(app.reports) if r.get("final")), None)
    res["final"] = {k: v for k, v in (final or {}).items() if k != "u"}
    c("d: app exited 0 after stop, final report printed", res["exit"] == 0 and final is not None,
      f"exit {res['exit']}")
    with open(app.err_path) as f:
        err = f.read()
    bad = [w for w in ("Traceback", "Exception", "panic:", "Fatal error", "Uncaught", "FATAL")
           if w in err]
    res["app_stderr_tail"] = err[-600:]
    c("d: no exception or crash in the app's output", not bad and not app.bad_lines,
      f"{bad} {app.bad_lines[:2]}")
    open_at_down = [x for x in stored if x["start_s"] is not None and x["duration_s"] is not None
                    and x["start_s"] < ph["down"] < x["start_s"] + x["duration_s"] + 0.5]
    dropped = (final or {}).get("dropped", 0)
    res["open_profile_at_outage"] = "delivered" if open_at_down else f"dropped (counted: {dropped})"
    c("d: the profile open at the outage is delivered or counted dropped",
      open_at_down or dropped > 0, res["open_profile_at_outage"])
    sent = (final or {}).get("sent")
    res["uploads_stored_at_server"] = len(stored)
    if sent is not None:
        c("d: SDK's sent count == uploads stored", sent == len(stored),
          f"sent {sent}, stored {len(stored)}")


def summary(lat_ms, span_s):
    if not lat_ms:
        return {"n": 0, "p50": None, "p99": None, "max": None, "rate": 0, "over_100ms": 0}
    return {"n": len(lat_ms), "p50": round(statistics.median(lat_ms), 3),
            "p99": round(pct(lat_ms, 99), 3), "max": round(max(lat_ms), 1),
            "rate": len(lat_ms) / max(span_s, 1e-9),
            "over_100ms": sum(1 for x in lat_ms if x > 100)}


def report(res, app):
    print(f"== SDK faults: {res['sdk']}: down {res['down_s']} s: "
          f"{'passed' if res['ok'] else 'FAILED'} (logs {res['log_dir']})")
    for name, (ok, detail) in res["checks"].items():
        print(f"   {'ok  ' if ok else 'FAIL'} {name}: {detail}")
    for k in ("latency_ms", "rss_mib", "queue_max_down", "uploads_invalid_phase",
              "valid_to_profiling_s", "valid_to_first_upload_s", "queued_delivered_after_valid_s",
              "open_profile_at_outage", "polls", "hang_attempts",
              "final"):
        if k in res:
            print(f"   {k}: {json.dumps(res[k])}")
    if not res["ok"]:
        print("   statuses seen:", json.dumps(res.get("statuses_seen")))
        print("   app stderr tail:", res.get("app_stderr_tail", "")[-400:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sdk", required=True, choices=["node", "python", "go", "java", "php"])
    p.add_argument("--down-s", type=float, default=60)
    p.add_argument("--up-extra-s", type=float, default=8, help="up time after the first upload")
    p.add_argument("--invalid-s", type=float, default=5)
    p.add_argument("--invalid-max-s", type=float, default=330,
                   help="wait this long at most for the SDK's polls (PHP backs off up to 300 s)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--keep", action="store_true", help="keep the logs of a passing run")
    args = p.parse_args()
    res = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    sys.exit(0 if res["ok"] else 1)


if __name__ == "__main__":
    main()
