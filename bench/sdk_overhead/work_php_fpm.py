"""The PHP workload of bench/sdk_overhead/run.sh under a real php-fpm: work_php.php's request
(php_request.php) served by one php-fpm worker (pm = static, one child, the system's php.ini:
opcache and excimer as Debian installs them), sent one after the other over FastCGI by this
script, the way a web server would. With the SDK, the pool's environment names the server
(ROOTTRACE_SERVER, _KEY, _SERVICE, as a deployment sets them) and fpm_request.php calls
RootTrace\\Profiler::start() with every other option at its default, so each request pays
what a service's does: the autoloading of the SDK's classes, the default spool directory
and instance (fpm_get_status()), the gate, excimer, the end at shutdown and, when due,
maintenance after fastcgi_finish_request(). The CLI loop of work_php.php pays none of the
first three (docs/performance-sdk.md).

The measure is the worker's CPU time over the timed requests, every thread of it (excimer's
timer thread too), from the kernel (its process CPU clock, ns): this client's own CPU is not
in it. A final request with
flush=1 times Profiler::flush() inside the worker (what one upload interval costs).

Usage: python3 work_php_fpm.py ROUNDS                      (no SDK)
       python3 work_php_fpm.py ROUNDS SERVER KEY SERVICE   (the SDK at its defaults)
RT_BENCH_RATE=R runs the SDK at request sample rate R, as for work_php.php;
RT_BENCH_EXCIMER_ONLY=1 runs excimer alone instead of the SDK (the profiler's own part of the
cost: fpm_request.php); RT_BENCH_PROFILING_OFF=1 does not wait for the SDK to profile, and
fails unless it reports itself disabled: give it a SERVICE whose profiling is off on the
server (what the SDK costs installed but idle);
RT_BENCH_FPM_PRELOAD=1 preloads the SDK's classes into opcache on the SDK's side
(fpm_preload.php). With
RT_BENCH_BARRIER set (copair.py), says "ready" on stderr once warm and waits for a line
on stdin. Prints one JSON line as work_php.php does: {"sdk", "wall_s", "cpu_s",
"stop_wall_s", "stop_cpu_s", "checksum", "sdk_status"}, and the worker's minor page faults
over the timed requests ("worker_minor_faults")."""
import ctypes
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FPM = shutil.which("php-fpm8.2") or "/usr/sbin/php-fpm8.2"
SCRIPT = os.path.join(HERE, "fpm_request.php")
WARM_REQUESTS = 20        # after the SDK profiles: opcache and the caches warm on both sides
PROFILING_TIMEOUT_S = 15  # the SDK's first requests fetch the config
MODULUS = 1_000_000_007   # work_php.php's checksum
REQUEST_TIMEOUT_S = 60    # a request that takes longer fails the run (php-fpm kills it too)

PR_SET_PDEATHSIG = 1      # linux/prctl.h
# FastCGI (https://fastcgi-archives.github.io/FastCGI_Specification.html): record types.
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7
RESPONDER = 1


def record(kind, body=b"", request_id=1):
    return struct.pack("!BBHHBB", 1, kind, request_id, len(body), 0, 0) + body


def name_value(name, value):
    def length(n):
        return struct.pack("!B", n) if n < 128 else struct.pack("!I", n | 0x80000000)
    n, v = name.encode(), value.encode()
    return length(len(n)) + length(len(v)) + n + v


def fcgi_get(sock_path, query):
    """One GET of SCRIPT with `query` over a new FastCGI connection; returns the body (bytes).
    Raises RuntimeError when the worker writes to stderr or ends the request abnormally."""
    params = {"SCRIPT_FILENAME": SCRIPT, "SCRIPT_NAME": "/fpm_request.php",
              "REQUEST_URI": "/fpm_request.php?" + query, "QUERY_STRING": query,
              "REQUEST_METHOD": "GET", "DOCUMENT_ROOT": HERE, "SERVER_PROTOCOL": "HTTP/1.1",
              "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "work_php_fpm",
              "REMOTE_ADDR": "127.0.0.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
              "CONTENT_LENGTH": "0"}
    body = b"".join(name_value(k, v) for k, v in params.items())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(REQUEST_TIMEOUT_S)
        s.connect(sock_path)
        s.sendall(record(BEGIN_REQUEST, struct.pack("!HB5x", RESPONDER, 0))
                  + record(PARAMS, body) + record(PARAMS) + record(STDIN))
        f = s.makefile("rb")
        out, err = [], []
        while True:
            head = f.read(8)
            if len(head) < 8:
                raise RuntimeError("php-fpm closed the connection before the request's end")
            _, kind, _, clen, plen, _ = struct.unpack("!BBHHBB", head)
            content = f.read(clen)
            f.read(plen)
            if kind == STDOUT:
                out.append(content)
            elif kind == STDERR:
                err.append(content)
            elif kind == END_REQUEST:
                app_status, proto_status = struct.unpack("!IB3x", content)
                break
    if err or app_status != 0 or proto_status != 0:
        raise RuntimeError(f"request {query}: status {app_status}/{proto_status}, "
                           f"stderr {b''.join(err)[:500]!r}")
    raw = b"".join(out)
    return raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else raw


def get_json(sock_path, query):
    body = fcgi_get(sock_path, query)
    try:
        return json.loads(body)
    except ValueError:
        raise RuntimeError(f"request {query} answered {body[:500]!r}") from None


def worker_of(master, timeout_s=10):
    """The pid of php-fpm's one worker (a child of the master)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{master}/task/{master}/children") as f:
                kids = f.read().split()
            if len(kids) == 1:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError("php-fpm started no worker")


def cpu_ns(pid):
    """The CPU time of process pid, every thread, those that ended included (its process CPU
    clock: clock_gettime(2) with the clock id the kernel derives from a pid), ns. Excimer's
    timer thread counts with the worker's main one."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def die_with_parent(parent=os.getpid()):
    """In the child before exec: SIGTERM when this script ends (prctl PR_SET_PDEATHSIG), so
    that php-fpm's master stops, and its worker with it; no exec when this script has
    already ended."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)


def minor_faults(pid):
    """pid's minor page faults so far (/proc/<pid>/stat, field 10)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def pool_config(tmp, sdk_args):
    sock = os.path.join(tmp, "fpm.sock")
    lines = ["[global]", f"pid = {tmp}/fpm.pid", f"error_log = {tmp}/fpm.log",
             "daemonize = no", "[rtbench]", f"listen = {sock}", "pm = static",
             "pm.max_children = 1", "pm.max_requests = 0", "catch_workers_output = yes",
             f"request_terminate_timeout = {REQUEST_TIMEOUT_S}s",
             # the worker's temporary directory is this script's, where spool_dirs looks
             f"env[TMPDIR] = {tempfile.gettempdir()}"]
    if os.geteuid() == 0:
        lines.append("user = root")
    if sdk_args:
        server, key, service = sdk_args
        # RT_BENCH_EXCIMER_ONLY=1: excimer alone on the "with" side (fpm_request.php)
        mode = "excimer" if os.environ.get("RT_BENCH_EXCIMER_ONLY") else "1"
        lines += [f"env[RT_BENCH_SDK] = {mode}", f"env[ROOTTRACE_SERVER] = {server}",
                  f"env[ROOTTRACE_KEY] = {key}", f"env[ROOTTRACE_SERVICE] = {service}"]
        if os.environ.get("RT_BENCH_RATE"):  # another request sample rate (work_php.php's)
            lines.append(f"env[RT_BENCH_RATE] = {os.environ['RT_BENCH_RATE']}")
    with open(os.path.join(tmp, "fpm.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return sock


def spool_dirs(service):
    """The SDK's default spool directories of `service` (Spool::defaultDir)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"roottrace-{os.geteuid()}-{service}-*"))


def main():
    if len(sys.argv) not in (2, 5):
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    sdk_args = sys.argv[2:5] if len(sys.argv) == 5 else None
    service = sdk_args[2] if sdk_args else None
    for d in spool_dirs(service) if service else []:
        shutil.rmtree(d, ignore_errors=True)  # a run starts as a new deployment
    tmp = tempfile.mkdtemp(prefix="rt-bench-fpm-")
    sock = pool_config(tmp, sdk_args)
    cmd = [FPM, "-F", "-y", os.path.join(tmp, "fpm.conf")] + (["-R"] if os.geteuid() == 0 else [])
    if sdk_args and os.environ.get("RT_BENCH_FPM_PRELOAD"):
        cmd += ["-d", "opcache.preload=" + os.path.join(HERE, "fpm_preload.php")]
        if os.geteuid() == 0:
            cmd += ["-d", "opcache.preload_user=root"]
    log = open(os.path.join(tmp, "fpm.out"), "w")
    # php-fpm ends with this script even when it is killed (copair.py kills a pair's survivor)
    fpm = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or fpm.poll() is not None:
                raise RuntimeError("php-fpm did not start: " + open(log.name).read()[-2000:])
            time.sleep(0.02)
        worker = worker_of(fpm.pid)
        if sdk_args and not (os.environ.get("RT_BENCH_EXCIMER_ONLY")
                             or os.environ.get("RT_BENCH_PROFILING_OFF")):
            # requests until one profiles (the first ones fetch the config)
            deadline = time.monotonic() + PROFILING_TIMEOUT_S
            while not get_json(sock, "seed=0&status=1").get("profiling"):
                if time.monotonic() > deadline:
                    raise RuntimeError("SDK not profiling after "
                                       f"{PROFILING_TIMEOUT_S} s under php-fpm")
                time.sleep(0.02)
        for i in range(WARM_REQUESTS):
            get_json(sock, f"seed={i}")
        if os.environ.get("RT_BENCH_BARRIER"):
            print("ready", file=sys.stderr, flush=True)
            sys.stdin.readline()
        check = 0
        t0, c0, f0 = time.monotonic(), cpu_ns(worker), minor_faults(worker)
        for r in range(rounds):
            check = (check + get_json(sock, f"seed={r}")["check"]) % MODULUS
        wall, cpu = time.monotonic() - t0, (cpu_ns(worker) - c0) / 1e9
        faults = minor_faults(worker) - f0
        stop_wall = stop_cpu = status = None
        if sdk_args:
            f = get_json(sock, "flush=1&status=1")
            stop_wall, stop_cpu = f["flush_wall_s"], f["flush_cpu_s"]
            status = f.get("sdk_status")
            if os.environ.get("RT_BENCH_PROFILING_OFF") and (status or {}).get("state") != "disabled":
                raise RuntimeError(f"RT_BENCH_PROFILING_OFF: the SDK is {status}, not disabled "
                                   f"(is profiling off for {service} on the server?)")
        print(json.dumps({"sdk": bool(sdk_args), "wall_s": wall, "cpu_s": cpu,
                          "stop_wall_s": stop_wall, "stop_cpu_s": stop_cpu, "checksum": check,
                          "sdk_status": status, "worker_minor_faults": faults}))
    finally:
        fpm.send_signal(signal.SIGQUIT)  # graceful: the worker finishes its request
        try:
            fpm.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fpm.kill()
            fpm.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
        for d in spool_dirs(service) if service else []:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
