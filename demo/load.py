"""A built-in load for `make demo`: a few client threads requesting URL over keep-alive
connections until DURATION seconds pass, each pausing PAUSE seconds after every answer (0:
back to back). Prints requests and errors at the end.
Usage: python3 load.py URL DURATION [THREADS [PAUSE]]"""
import http.client
import sys
import threading
import time
import urllib.parse


def run(url, duration, threads=3, pause=0.0):
    u = urllib.parse.urlsplit(url)
    stop = time.monotonic() + duration
    counts = {"ok": 0, "err": 0}
    lock = threading.Lock()

    def worker():
        conn = None
        while time.monotonic() < stop:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                conn.request("GET", u.path)
                r = conn.getresponse()
                r.read()
                key = "ok" if r.status == 200 else "err"
            except OSError:
                key, conn = "err", None
                time.sleep(0.1)
            with lock:
                counts[key] += 1
            if pause > 0:
                time.sleep(pause)

    ts = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return counts


if __name__ == "__main__":
    c = run(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3,
            float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    print(f"load {sys.argv[1]}: {c['ok']} requests, {c['err']} errors", flush=True)
