"""Pyroscope's real agents against the real server (DESIGN §3, §12).

Each agent's program (tests/agents/<agent>/: a hot function with 3/4 of the work, a cold one
with 1/4) runs for real, uploading every 5 s through a recording proxy (proxy.py) to
`roottrace serve`; all of them at once, with an ingest key as the basic-auth password. The
proxy sends every upload the server accepted a second time, as a retry after a lost answer;
for pyroscope-java it answers 503 to the first stored upload instead of the server's 200, and
the agent retries by itself. Each service is off at first: once the agent's first upload was
refused (409) and its instance listed, the test turns profiling on. Then, from the server's
API:

  off by default     uploads before the toggle got 409; the instance was listed
                     `foreign: <agent>`; uploads after it were stored
  type               what was measured: go cpu (with capacity), node wall, python wall
                     (declared cpu), java itimer cpu, java wall wall
  hot function       first by self time, well above the cold one
  frames             `module.function`, no line number anywhere
  retries            stored once: the second answer says duplicate; profiles stored =
                     distinct uploads; value_ns = the sum over them

and py-spy's own `record --format raw` file uploaded as folded text with type=cpu: stored as
wall, declared cpu, burn.hot_loop first.

ROOTTRACE_AGENTS_DURATION (default 30) sets each program's run in seconds (Go's is 10 s
longer: its CPU windows are 10 s)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter

import pytest

from conftest import HERE, SUMMARY, Server, require
from proxy import RecordingProxy

sys.path.insert(0, HERE)
import inspect_capture  # noqa: E402  (tests/agents/inspect_capture.py: Push and pprof decoding)

DURATION_S = int(os.environ.get("ROOTTRACE_AGENTS_DURATION", "30"))
UPLOAD_S = 5
VENV = os.environ.get("ROOTTRACE_AGENTS_VENV",
                      os.path.expanduser("~/.cache/roottrace/agents-venv"))
JAVA = os.environ.get("ROOTTRACE_AGENTS_JAVA", "java")
GO = shutil.which("go") or "/usr/local/go/bin/go"
PUSH_PATH = "/push.v1.PusherService/Push"
# How much more self time the hot function must have than the cold one (the programs do 3:1).
HOT_OVER_COLD = 1.5
# A line number in a frame, as agents write them: `f:12`, py-spy's `f (file.py:12)`,
# @datadog/pprof's `(anonymous:L#12:C#3)`.
LINE_NUMBER = [re.compile(r":\d+$"), re.compile(r"\([^()]*:\d+\)"), re.compile(r"L#\d")]


class Spec:
    """One agent run: how it is installed, what it sends, what the server should make of it."""

    def __init__(self, key, install, agent, service, wire, type_, declared, hot, cold, caller,
                 hot_first=True, retry_503=False, extra_s=0):
        self.key = key  # the test id
        self.install = install  # install-agents.sh's name for it
        self.agent = agent  # the server's name for the producer (producers[].agent)
        self.service = service
        self.wire = wire  # "ingest" (POST /ingest) or "push" (Connect Push)
        self.type = type_  # what it must be stored as
        self.declared = declared  # producers[0].declared_type
        self.hot, self.cold, self.caller = hot, cold, caller  # module.function
        self.hot_first = hot_first  # hot is functions[0] (else first of its module)
        self.retry_503 = retry_503  # the agent retries a 503 by itself
        self.duration_s = DURATION_S + extra_s  # how long its program runs

    def __repr__(self):
        return self.key


SPECS = [
    # pyroscope-go's CPU windows are about twice UploadRate (captures/README.md): 10 s.
    Spec("go", "go", "pyroscope-go", "agents.go", "ingest", "cpu", None,
         "main.hotLoop", "main.coldLoop", "main.main", extra_s=10),
    Spec("node", "node", "pyroscope-nodejs", "agents.node", "ingest", "wall", None,
         "app.hotLoop", "app.coldLoop", "app.slice"),
    Spec("python", "python", "pyroscope-python", "agents.python", "push", "wall", "cpu",
         "burn.hot_loop", "burn.cold_loop", "burn.burn"),
    Spec("java-itimer", "java", "pyroscope-java", "agents.java", "ingest", "cpu", None,
         "Burn.hotLoop", "Burn.coldLoop", "Burn.main", retry_503=True),
    # Wall samples every thread, the JVM's parked ones too: a futex wait comes first.
    Spec("java-wall", "java", "pyroscope-java", "agents.java-wall", "ingest", "wall", None,
         "Burn.hotLoop", "Burn.coldLoop", "Burn.main", hot_first=False, retry_503=True),
]


def java_agent_jar():
    with open(os.path.join(HERE, "java", "pom.xml")) as f:
        version = re.search(r"<pyroscope.agent.version>(.*?)</", f.read()).group(1)
    return os.path.expanduser(
        "~/.m2/repository/io/pyroscope/agent/%s/agent-%s.jar" % (version, version))


class Run:
    """One agent program run through its proxy, and what the server said of it."""

    def __init__(self, spec, out_dir):
        self.spec = spec
        self.dir = out_dir
        self.log_path = os.path.join(out_dir, "program.log")
        self.proxy = None
        self.proc = None
        self.exit = None
        self.listing = None  # the service in GET /api/v1/services after the first 409
        self.enable_t0 = self.enable_t1 = None  # around the PUT turning profiling on
        self.answer = None  # GET /api/v1/profile of spec.type at the end
        self.other = None  # the same of the other type
        self.error = None

    def records(self):
        return self.proxy.snapshot() if self.proxy else []

    def uploads(self):
        return [r for r in self.records() if r.path in ("/ingest", PUSH_PATH)]

    def accepted(self):
        """Uploads whose first forward the server stored (2xx)."""
        return [r for r in self.uploads() if r.first and 200 <= r.first[0] < 300]

    def new_profiles(self):
        """/ingest: the profiles of the accepted uploads that were not duplicates, by id.
        Push: the sample IDs of the accepted pushes, with their decoded pprof."""
        out = {}
        for r in self.accepted():
            if self.spec.wire == "ingest":
                for p in (r.first_json() or {}).get("profiles", []):
                    if not p.get("duplicate"):
                        out[p["id"]] = p
            else:
                for s in push_series(r):
                    for sm in s["samples"]:
                        out[sm["ID"]] = inspect_capture.decode_pprof(sm["raw_profile"])
        return out

    def context(self):
        """What to read when a check fails: the proxy's records and the program's output."""
        lines = ["run %s in %s (exit %s)%s" % (self.spec.key, self.dir, self.exit,
                                               ": " + self.error if self.error else "")]
        lines += ["  " + r.brief() for r in self.records()]
        if self.proxy and self.proxy.errors:
            lines += ["  proxy error: " + e for e in self.proxy.errors]
        try:
            with open(self.log_path, errors="replace") as f:
                tail = f.read()[-3000:]
            lines.append("  program.log (tail):\n" + tail)
        except OSError:
            pass
        return "\n".join(lines)


def push_series(rec):
    body, _ = inspect_capture.maybe_gunzip(rec.body)
    return inspect_capture.decode_push(body, rec.header("Content-Type") or "")


def command(spec, url, key, out_dir):
    """(argv, cwd, env) of spec's program, uploading to url with key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYROSCOPE_")}
    d = str(spec.duration_s)
    if spec.install == "go":
        exe = os.path.join(out_dir, "agents-go")
        r = subprocess.run([GO, "build", "-o", exe, "."], cwd=os.path.join(HERE, "go"),
                           capture_output=True, text=True, timeout=600,
                           env={**env, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"})
        if r.returncode != 0:
            raise RuntimeError("go build failed:\n" + r.stdout + r.stderr)
        return ([exe, "-server", url, "-duration", d + "s", "-upload", "%ds" % UPLOAD_S,
                 "-profiles", "cpu", "-app", spec.service, "-password", key],
                os.path.join(HERE, "go"), env)
    if spec.install == "node":
        return (["node", "app.js", "--server", url, "--duration", d, "--flush-ms",
                 str(UPLOAD_S * 1000), "--mode", "wall", "--app", spec.service,
                 "--password", key], os.path.join(HERE, "node"), {**env, "DEBUG": "pyroscope*"})
    if spec.install == "python":
        return ([os.path.join(VENV, "bin", "python"), "app.py", "--server", url, "--duration", d,
                 "--upload", str(UPLOAD_S), "--app", spec.service, "--password", key],
                os.path.join(HERE, "python"), env)
    classes = os.path.join(HERE, "java", "target", "classes")
    src = os.path.join(HERE, "java", "src", "main", "java", "Burn.java")
    cls = os.path.join(classes, "Burn.class")
    if not os.path.exists(cls) or os.path.getmtime(src) > os.path.getmtime(cls):
        subprocess.run(["javac", "--release", "11", "-d", classes, src], check=True,
                       capture_output=True, timeout=300)
    env.update(PYROSCOPE_APPLICATION_NAME=spec.service, PYROSCOPE_SERVER_ADDRESS=url,
               PYROSCOPE_BASIC_AUTH_USER="roottrace", PYROSCOPE_BASIC_AUTH_PASSWORD=key,
               PYROSCOPE_TENANT_ID="rt-tenant", PYROSCOPE_UPLOAD_INTERVAL="%ds" % UPLOAD_S,
               PYROSCOPE_PROFILER_EVENT=spec.key.split("-")[1], PYROSCOPE_FORMAT="jfr",
               PYROSCOPE_LABELS="version=1.0.0,hostname=%s" % os.uname().nodename,
               PYROSCOPE_LOG_LEVEL="debug")
    return ([JAVA, "-javaagent:" + java_agent_jar(), "-cp", classes, "Burn", d], classes, env)


def wait_for(what, pred, timeout, step=0.2):
    """Polls pred() until it returns something true; raises naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError("%s: not within %d s" % (what, timeout))
        time.sleep(step)


class Window:
    """The queries' window: from well before the suite started to well after now."""

    def __init__(self):
        self.t0 = time.time() - 600

    def params(self, service, type_):
        return {"service": service, "type": type_, "from": "%d" % self.t0,
                "to": "%d" % (time.time() + 600)}


def profile(server, window, service, type_):
    r = server.get("/api/v1/profile", window.params(service, type_))
    assert r.status == 200, (service, type_, r.status, r.body[:500])
    return r.json()


def service_entry(server, service):
    r = server.get("/api/v1/services")
    assert r.status == 200, r.body[:500]
    return next((s for s in r.json() if s.get("name") == service), None)


def orchestrate(run, server, key, window):
    """Runs one agent program to its end: 409s while off, then on, then stored uploads."""
    spec = run.spec
    try:
        run.proxy = RecordingProxy(server.url, log_path=os.path.join(run.dir, "proxy.log"),
                                   fail_first_stored=spec.retry_503).start()
        argv, cwd, env = command(spec, run.proxy.url, key, run.dir)
        with open(run.log_path, "ab") as log:
            run.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

        def refused():
            if run.proc.poll() is not None:
                raise RuntimeError("the program exited (%s) before a refused upload"
                                   % run.proc.returncode)
            return any(r.first and r.first[0] == 409 for r in run.uploads())
        wait_for("a first upload refused with 409", refused, spec.duration_s + 90)

        def listed():
            s = service_entry(server, spec.service)
            return s if s and any(i.get("agent") == spec.agent for i in s["instances"]) else None
        run.listing = wait_for("the instance listed in GET /api/v1/services", listed, 30)

        run.enable_t0 = time.time()
        r = server.put("/api/v1/services/%s/profiling" % spec.service, body={"enabled": True})
        run.enable_t1 = time.time()
        assert r.status == 200, (r.status, r.body[:300])

        try:
            run.exit = run.proc.wait(timeout=spec.duration_s + 180)
        except subprocess.TimeoutExpired:
            run.error = "the program did not exit within %d s" % (spec.duration_s + 180)
            return
        wait_for("the proxy's last answer", lambda: run.proxy.inflight == 0, 60)
        expected = len(run.new_profiles())
        run.answer = wait_for(
            "%d stored %s profiles" % (expected, spec.type),
            lambda: (lambda a: a if a["profiles"] >= expected else None)(
                profile(server, window, spec.service, spec.type)), 60, step=0.5)
        run.other = profile(server, window, spec.service, "cpu" if spec.type == "wall" else "wall")
    except Exception:
        run.error = traceback.format_exc(limit=3)


def pyspy_record(out_dir):
    """py-spy record --format raw of py-spy/burn2.py: (folded text, None) or (None, why)."""
    out = os.path.join(out_dir, "pyspy.txt")
    argv = [os.path.join(VENV, "bin", "py-spy"), "record", "--format", "raw", "--rate", "100",
            "-o", out, "--", sys.executable, os.path.join(HERE, "py-spy", "burn2.py"), "10"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    with open(os.path.join(out_dir, "pyspy.log"), "w") as f:
        f.write(" ".join(argv) + "\n" + r.stdout + r.stderr)
    if r.returncode != 0 or not os.path.exists(out) or os.path.getsize(out) == 0:
        return None, "py-spy record exited %d: %s" % (r.returncode, (r.stdout + r.stderr)[-500:])
    with open(out) as f:
        return f.read(), None


def selected_specs(session):
    keys = set()
    for item in session.items:
        spec = getattr(item, "callspec", None) and item.callspec.params.get("spec")
        if isinstance(spec, Spec):
            keys.add(spec.key)
        if "pyspy_record" in item.name:
            keys.add("py-spy")
    return keys


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("agents-server") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def window():
    return Window()


@pytest.fixture(scope="session")
def runs(request, installed, server, window, tmp_path_factory):
    """Every selected, installed agent run at once to its end; py-spy's record beside them.
    {key: Run}, and "py-spy": (text, why)."""
    r = server.post("/api/v1/keys", body={"scope": "ingest"})
    assert r.status == 201, r.body
    key = r.json()["key"]
    keys = selected_specs(request.session)
    out = {}
    threads = []
    for spec in SPECS:
        if spec.key not in keys or not installed[spec.install][0]:
            continue
        run = Run(spec, str(tmp_path_factory.mktemp("agent-" + spec.key)))
        out[spec.key] = run
        threads.append(threading.Thread(target=orchestrate, args=(run, server, key, window),
                                        daemon=True))
    if "py-spy" in keys and installed["py-spy"][0]:
        pyspy_dir = str(tmp_path_factory.mktemp("py-spy"))

        def record():
            out["py-spy"] = pyspy_record(pyspy_dir)
        threads.append(threading.Thread(target=record, daemon=True))
    agent_runs = [run for run in out.values() if isinstance(run, Run)]
    try:
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if agent_runs:
            for run in agent_runs:
                SUMMARY.append(summarize(run))
            SUMMARY.append("agents ran together for %.0f s (programs %d s, Go's %d s; uploads "
                           "every %d s)" % (time.monotonic() - t0, DURATION_S, DURATION_S + 10,
                                            UPLOAD_S))
        yield out
    finally:
        for run in agent_runs:
            if run.proc and run.proc.poll() is None:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()
            if run.proxy:
                run.proxy.stop()


def summarize(run):
    ups = run.uploads()
    seq = []
    for r in ups:  # the statuses the agent got, in order, runs collapsed: 409x1 200x5
        s = "%d%s" % (r.answered, "*" if r.injected else "")
        if seq and seq[-1][0] == s:
            seq[-1][1] += 1
        else:
            seq.append([s, 1])
    reps = [r.replay for r in ups if r.replay]
    dup = sum(1 for r in ups if r.replay and r.replay[0] == 200 and (
        run.spec.wire == "push" or (r.replay_json() or {}).get("duplicate") is True))
    a = run.answer
    if a:
        tops = ", ".join("%s %.1f%%" % (f["name"], f["self_share"]) for f in a["functions"][:3])
        cap = (a["capacity"] or {}).get("vcpu_hours_per_month") if a["capacity"] else \
            "null (%s)" % (a["capacity_unavailable"] or "")[:40]
        stored = "%d %s profiles (declared %s), top %s; capacity %s" % (
            a["profiles"], a["type"], (a.get("producers") or [{}])[0].get("declared_type"),
            tops, cap)
    else:
        stored = "nothing queried: %s" % (run.error or "").strip().splitlines()[-1:]
    return "%-11s %d uploads, agent got %s; replays %d (duplicate %d); %s; exit %s; %s" % (
        run.spec.key, len(ups), " ".join("%sx%d" % (s, n) for s, n in seq), len(reps), dup,
        stored, run.exit, run.dir)


def the_run(runs, installed, spec):
    require(installed, spec.install)
    run = runs.get(spec.key)
    assert run is not None, "%s was installed but not run" % spec.key
    return run


def functions_by_name(answer):
    return {f["name"]: f for f in answer["functions"]}


def all_names(answer):
    return [f["name"] for f in answer["functions"]] + answer["flamegraph"]["names"]


by_spec = pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key)


@by_spec
def test_off_by_default_then_stored(runs, installed, spec):
    """Uploads while the service is off get 409 naming the toggle; the instance is listed
    with its agent; once on, the next uploads are stored."""
    run = the_run(runs, installed, spec)
    ctx = run.context()
    assert run.enable_t0 is not None, ctx
    before = [r for r in run.uploads() if r.time < run.enable_t0]
    after = [r for r in run.uploads() if r.time > run.enable_t1]
    assert before and all(r.first[0] == 409 for r in before), ctx
    for r in before:  # conflict, naming the service, its toggle and the agent
        assert r.answered == 409, ctx
        err = r.first_json()
        assert err["error"] == "conflict", err
        assert "profiling is off for service '%s'" % spec.service in err["message"], err
        assert "toggle" in err["message"] and spec.agent in err["message"], err
        if spec.wire == "push":  # Connect's code
            assert err["code"] == "failed_precondition", err
    entry = run.listing
    assert entry["profiling_enabled"] is False, entry
    inst = [i for i in entry["instances"] if i.get("agent") == spec.agent]
    assert len(inst) == 1, entry
    assert inst[0]["status"] == "foreign: %s" % spec.agent, entry
    # the programs tag hostname and version: the instance and release
    assert (inst[0]["instance"], inst[0]["version"]) == (socket.gethostname(), "1.0.0"), entry
    assert inst[0].get("note"), entry
    assert len(after) >= 2, "fewer than 2 uploads after profiling was on\n" + ctx
    assert all(r.first[0] == 200 for r in after), ctx
    assert run.answer and run.answer["profiles"] >= 2, ctx


@by_spec
def test_type_by_what_was_measured(runs, installed, spec):
    run = the_run(runs, installed, spec)
    a = run.answer
    assert a, run.context()
    assert a["type"] == spec.type and a["profiles"] > 0, a["type"]
    assert run.other["profiles"] == 0, "also stored as %s: %s" % (run.other["type"],
                                                                  run.other["profiles"])
    producers = a["producers"]
    assert [p["agent"] for p in producers] == [spec.agent], producers
    assert producers[0]["declared_type"] == spec.declared, producers
    assert producers[0]["profiles"] == a["profiles"], producers
    assert producers[0]["method"] and producers[0]["note"], producers
    if spec.type == "cpu":
        vcpu = (a["capacity"] or {}).get("vcpu_hours_per_month")
        assert isinstance(vcpu, (int, float)) and not isinstance(vcpu, bool) and vcpu > 0, \
            (a["capacity"], a["capacity_unavailable"])
        assert a["capacity_unavailable"] is None
    else:
        assert a["capacity"] is None, a["capacity"]
        assert isinstance(a["capacity_unavailable"], str) and a["capacity_unavailable"]
        assert all(f["vcpu_hours_per_month"] is None for f in a["functions"])
    if spec.wire == "ingest":  # each /ingest answer names the type it stored
        types = Counter(p["type"] for p in run.new_profiles().values())
        assert set(types) == {spec.type}, types


@by_spec
def test_hot_function_first(runs, installed, spec):
    run = the_run(runs, installed, spec)
    a = run.answer
    assert a, run.context()
    fns = functions_by_name(a)
    ranked = [f["name"] for f in a["functions"]]
    if spec.hot_first:
        assert ranked[0] == spec.hot, ranked[:8]
    else:
        module = spec.hot.split(".")[0] + "."
        assert [n for n in ranked if n.startswith(module)][0] == spec.hot, ranked[:8]
    hot, cold = fns[spec.hot]["self_ns"], fns.get(spec.cold, {}).get("self_ns", 0)
    assert cold > 0, ranked[:8]
    assert hot >= HOT_OVER_COLD * cold, "hot %d ns, cold %d ns: %s" % (hot, cold, ranked[:8])


@by_spec
def test_frames_module_function_no_line(runs, installed, spec):
    run = the_run(runs, installed, spec)
    a = run.answer
    assert a, run.context()
    names = all_names(a)
    with_line = [n for n in names if any(p.search(n) for p in LINE_NUMBER)]
    assert not with_line, with_line[:10]
    for qualified in (spec.hot, spec.cold):  # one name, module.function, and no other form
        bare = qualified.rsplit(".", 1)[1]
        assert {n for n in names if bare in n} == {qualified}, [n for n in names if bare in n]
    fg = a["flamegraph"]
    fnames, nodes = fg["names"], fg["nodes"]
    node_name = [fnames[i] for i in nodes["name"]]
    parents = {node_name[nodes["parent"][i]] for i, n in enumerate(node_name)
               if n == spec.hot and nodes["parent"][i] >= 0}
    assert spec.caller in parents, parents


@by_spec
def test_retried_upload_stored_once(runs, installed, spec):
    run = the_run(runs, installed, spec)
    a = run.answer
    ctx = run.context()
    assert a, ctx
    accepted = run.accepted()
    assert accepted, ctx
    for r in accepted:
        assert r.replay is not None and r.replay[0] == 200, ctx
        if spec.wire == "ingest":
            first, again = r.first_json(), r.replay_json()
            assert again["duplicate"] is True, r.brief()
            assert [p["id"] for p in again["profiles"]] == [p["id"] for p in first["profiles"]]
            assert all(p["duplicate"] for p in again["profiles"]), r.brief()
    new = run.new_profiles()
    if spec.wire == "ingest":
        # one new profile per distinct (from, until): a retry names the same window
        windows = {(r.query.get("from"), r.query.get("until")) for r in accepted}
        assert len(new) == len(windows), ctx
        value_ns = sum(p["value_ns"] for p in new.values())
    else:
        ids = [sm["ID"] for r in accepted for s in push_series(r) for sm in s["samples"]]
        assert len(ids) == len(set(ids)) == len(new), ids  # the agent never reuses an ID
        value_ns = sum(sum(s["val"][0] for s in p["samples"]) for p in new.values())
    assert a["profiles"] == len(new), "stored %d, distinct uploads %d\n%s" % (
        a["profiles"], len(new), ctx)
    assert a["value_ns"] == pytest.approx(value_ns, rel=1e-9), (a["value_ns"], value_ns)
    if spec.retry_503:
        injected = [r for r in run.uploads() if r.injected]
        assert len(injected) == 1, ctx
        retries = [r for r in run.uploads() if r.seq > injected[0].seq
                   and r.raw_query == injected[0].raw_query]
        assert retries, "the agent did not retry the upload answered 503\n" + ctx
        assert retries[0].first[0] == 200 and retries[0].first_json()["duplicate"] is True, ctx
        assert retries[0].answered == 200, ctx


def check_pyspy_file(server, window, service, text):
    """Uploads py-spy's raw output as folded text declared cpu; checks what was stored.

    py-spy writes samples without a Python frame as a line with an empty stack (" 22").
    When the server refuses the file as written, the rest is checked on the file without
    those lines, and the refusal fails the test at the end."""
    params = {"service": service, "type": "cpu", "unit": "samples", "period_ns": "10000000"}
    r = server.put("/api/v1/services/%s/profiling" % service, body={"enabled": True})
    assert r.status == 200, r.body
    as_written = server.upload(text.encode(), content_type="text/plain", **params)
    r = as_written
    if as_written.status != 201:
        stacks = "".join(line for line in text.splitlines(True) if line[:1] not in (" ", "\t"))
        r = server.upload(stacks.encode(), content_type="text/plain", **params)
    assert r.status == 201, (r.status, r.body[:500])
    up = r.json()
    assert [(p["type"], p.get("declared_type")) for p in up["profiles"]] == [("wall", "cpu")], up
    a = profile(server, window, service, "wall")
    assert a["profiles"] == 1 and a["producers"][0]["declared_type"] == "cpu", a["producers"]
    assert a["capacity"] is None and a["capacity_unavailable"]
    assert profile(server, window, service, "cpu")["profiles"] == 0
    ranked = [f["name"] for f in a["functions"]]
    assert ranked[0] == "burn.hot_loop", ranked[:8]
    fns = functions_by_name(a)
    assert fns["burn.hot_loop"]["self_ns"] >= HOT_OVER_COLD * fns["burn.cold_loop"]["self_ns"] > 0
    names = all_names(a)
    assert not [n for n in names if any(p.search(n) for p in LINE_NUMBER)], names
    assert not [n for n in names if ".py" in n], names
    assert {"burn.burn", "burn2.main"} <= set(names), names
    SUMMARY.append("%-11s %d lines uploaded as cpu: %d%s; stored %s (declared %s), top %s" % (
        service, len(text.splitlines()), as_written.status,
        "" if as_written is r else " as written, 201 without its empty-stack lines",
        up["profiles"][0]["type"], up["profiles"][0].get("declared_type"),
        ", ".join("%s %.1f%%" % (f["name"], f["self_share"]) for f in a["functions"][:3])))
    assert as_written.status == 201, (
        "py-spy's file as written is refused; its empty-stack lines (%s) are samples without "
        "a Python frame: %d %s" % (
            [line for line in text.splitlines() if line[:1] == " "],
            as_written.status, as_written.body[:300]))


def test_pyspy_record_folded_cpu_stored_as_wall(runs, installed, server, window):
    require(installed, "py-spy")
    text, why = runs["py-spy"]
    if text is None and ("ptrace" in why.lower() or "permission" in why.lower()):
        pytest.skip("py-spy cannot attach here: %s" % why)
    assert text is not None, why
    check_pyspy_file(server, window, "agents.pyspy", text)


def test_pyspy_capture_folded_cpu_stored_as_wall(server, window):
    """The same on the py-spy file recorded in captures/ (where py-spy could ptrace)."""
    with open(os.path.join(HERE, "captures", "py-spy", "out.txt")) as f:
        check_pyspy_file(server, window, "agents.pyspy-capture", f.read())
