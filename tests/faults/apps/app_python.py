"""The Python SDK's fault application (tests/faults/run.py): request-like units of work (JSON
and sha256, ~1 ms) every ~4 ms on the main thread, each unit's latency measured from when it
was due (so time the thread could not run counts), reported with the SDK's status once a
second as one JSON line. Stops, flushing the SDK, when stdin closes. Env: RT_SERVER, RT_KEY,
RT_SERVICE, RT_INSTANCE."""
import hashlib
import json
import os
import sys
import threading
import time

import roottrace

stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()


def unit(seed):
    doc = {"id": seed, "lines": [{"sku": f"SKU-{(seed * 31 + j) % 997}", "qty": j % 7 + 1}
                                 for j in range(40)]}
    text = json.dumps(doc)
    back = json.loads(text)
    return sum(x["qty"] for x in back["lines"]) + hashlib.sha256(text.encode()).digest()[0]


def emit(units, final=False):
    st = roottrace.status()
    print(json.dumps({"t": time.time(), "u": units, "status": st["status"],
                      "queued": st["profiles_queued"], "sent": st["profiles_sent"],
                      "dropped": st["profiles_dropped"], "final": final}), flush=True)


roottrace.start(server=os.environ["RT_SERVER"], key=os.environ["RT_KEY"],
                service=os.environ["RT_SERVICE"], instance=os.environ["RT_INSTANCE"],
                version="faults-1")
units, last, due, i = [], time.time(), time.time(), 0
while not stop.is_set():
    now = time.time()
    if now < due:
        time.sleep(due - now)
    for _ in range(3):
        unit(i)
    i += 1
    end = time.time()
    units.append([int(due * 1000), int((end - due) * 1e6)])
    due = end + 0.004
    if end - last >= 1:
        emit(units)
        units, last = [], end
roottrace.stop(timeout=5)
emit(units, final=True)
