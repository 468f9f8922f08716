"""A fixed Python workload of 10 threads for bench/sdk_overhead/run.sh: 4 compute (JSON,
hashing, string and arithmetic work in pure Python, the same every run), 3 sleeping in short
sleeps, 3 blocked on a queue, a lock and a socket. The run ends when the compute threads
have done their work. The work is timed from the moment the SDK is profiling (or at once
without it) to its end. With the SDK, roottrace.stop() (end the profile, encode, upload: what
each upload interval costs) is timed apart, as stop_wall_s and stop_cpu_s.

Usage: python3 work_python.py ROUNDS                                (no SDK)
       python3 work_python.py ROUNDS SERVER KEY SERVICE             (SDK at defaults;
                                                                     roottrace importable)
Prints one JSON line: {"sdk", "wall_s", "cpu_s", "stop_wall_s", "stop_cpu_s", "checksum",
"sdk_status"}."""
import hashlib
import json
import os
import queue
import socket
import sys
import threading
import time

COMPUTE, SLEEPERS = 4, 3


def one_round(seed):
    check = 0
    for i in range(40):
        n = seed * 40 + i
        order = {"id": n, "customer": f"customer-{n % 113}",
                 "lines": [{"sku": f"SKU-{(n * 31 + j) % 997}", "qty": (n + j) % 7 + 1,
                            "price": ((n * j) % 500) / 10 + 0.99} for j in range(20)]}
        text = json.dumps(order, sort_keys=True)
        back = json.loads(text)
        check += int(sum(line["qty"] * line["price"] for line in back["lines"]) * 100)
        check += int(hashlib.sha256(text.encode()).hexdigest()[:6], 16)
        words = sorted(w for w in text.replace('"', " ").replace(",", " ").split() if w)
        check += len("-".join(words).upper())
        x = n
        for k in range(300):
            x = (x * 1103515245 + 12345 + k) & 0x7FFFFFFF
        check = (check + x) % 1_000_000_007
    return check


def compute(rounds, idx, out):
    check = 0
    for r in range(rounds):
        check = (check + one_round(idx * 100_003 + r)) % 1_000_000_007
    out[idx] = check


def sleeper(stop):
    while not stop.is_set():
        time.sleep(0.005)


def queue_waiter(stop, q):
    while not stop.is_set():
        try:
            q.get(timeout=0.05)
        except queue.Empty:
            pass


def lock_waiter(stop, lock):
    while not stop.is_set():
        if lock.acquire(timeout=0.05):
            lock.release()
            time.sleep(0.001)


def socket_waiter(stop, sock):
    sock.settimeout(0.05)
    while not stop.is_set():
        try:
            sock.recv(1)
        except socket.timeout:
            pass


def barrier():
    """With RT_BENCH_BARRIER set (bench/sdk_overhead/copair.py), says "ready" on stderr and
    waits for a line on stdin, so that the two runs of a pair start their timed work together."""
    if os.environ.get("RT_BENCH_BARRIER"):
        sys.stderr.write("ready\n")
        sys.stderr.flush()
        sys.stdin.readline()


def main():
    rounds = int(sys.argv[1])
    rt = None
    if len(sys.argv) > 2:
        import roottrace as rt
        server, key, service = sys.argv[2:5]
        rt.start(server=server, key=key, service=service, version="bench-1")
        deadline = time.monotonic() + 15
        while not str(rt.status().get("status", "")).startswith("profiling"):
            if time.monotonic() > deadline:
                sys.exit(f"SDK not profiling after 15 s: {rt.status()}")
            time.sleep(0.01)
    stop = threading.Event()
    held = threading.Lock()
    held.acquire()  # never released while the run lasts: lock_waiter blocks on it
    a, b = socket.socketpair()
    q = queue.Queue()
    out = [0] * COMPUTE
    workers = [threading.Thread(target=compute, args=(rounds, i, out)) for i in range(COMPUTE)]
    others = [threading.Thread(target=sleeper, args=(stop,)) for _ in range(SLEEPERS)]
    others += [threading.Thread(target=queue_waiter, args=(stop, q)),
               threading.Thread(target=lock_waiter, args=(stop, held)),
               threading.Thread(target=socket_waiter, args=(stop, b))]
    barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in others + workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in others:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    stop_wall = stop_cpu = None
    if rt:
        s0, sc0 = time.perf_counter(), time.process_time()
        rt.stop(timeout=5)
        stop_wall, stop_cpu = time.perf_counter() - s0, time.process_time() - sc0
    a.close()
    b.close()
    print(json.dumps({"sdk": rt is not None, "wall_s": wall, "cpu_s": cpu,
                      "stop_wall_s": stop_wall, "stop_cpu_s": stop_cpu,
                      "checksum": sum(out) % 1_000_000_007,
                      "sdk_status": rt and rt.status()}, default=str), flush=True)


if __name__ == "__main__":
    main()
