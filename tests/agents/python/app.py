#!/usr/bin/env python3
"""Runs burn.burn() under pyroscope-io 1.4.0, uploading to tests/agents/capture.py.

  python app.py [--server URL] [--duration 35] [--upload 5] [--oncpu 0|1]
                [--gil-only 0|1] [--impl pyspy|stack] [--mem 0|1] [--sleeper 0|1]
                [--app agents.python] [--password KEY]

--sleeper 1 adds a second thread that sleeps (blocked) the whole time, to see
what oncpu / gil_only do to non-running threads.
"""
import argparse
import logging
import os
import socket
import sys
import threading
import time

import pyroscope

import burn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="http://127.0.0.1:4040")
    ap.add_argument("--duration", type=float, default=35)
    ap.add_argument("--upload", type=int, default=5, help="upload_interval seconds (agent default 10)")
    ap.add_argument("--oncpu", type=int, default=1)
    ap.add_argument("--gil-only", type=int, default=1)
    ap.add_argument("--impl", default="pyspy", choices=["pyspy", "stack"])
    ap.add_argument("--mem", type=int, default=0)
    ap.add_argument("--sleeper", type=int, default=1)
    ap.add_argument("--report", type=int, default=1, help="report_pid/thread_id/thread_name")
    ap.add_argument("--app", default="agents.python", help="application_name")
    ap.add_argument("--password", default=os.environ.get("PYROSCOPE_BASIC_AUTH_PASSWORD", "rt_testkey"),
                    help="basic_auth_password (a RootTrace ingest key against roottrace serve)")
    a = ap.parse_args()

    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    impl = pyroscope.ProfilerImplementation.PySpy if a.impl == "pyspy" else pyroscope.ProfilerImplementation.Stack
    pyroscope.configure(
        application_name=a.app,
        server_address=a.server,
        basic_auth_username="roottrace",
        basic_auth_password=a.password,
        tenant_id="rt-tenant",
        tags={"version": "1.0.0", "hostname": socket.gethostname()},
        oncpu=bool(a.oncpu),
        gil_only=bool(a.gil_only),
        report_pid=bool(a.report),
        report_thread_id=bool(a.report),
        report_thread_name=bool(a.report),
        upload_interval=a.upload,
        mem_enabled=bool(a.mem),
        cpu_implementation=impl,
        enable_logging=True,
    )
    if a.sleeper:
        def sleeper():
            time.sleep(a.duration + 1)
        threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
    w0, c0 = time.time(), time.process_time()
    acc = burn.burn(a.duration)
    # what the OS accounted, to compare with the agent's cpu/nanoseconds totals
    print("done", acc % 10, "wall_s=%.2f process_cpu_s=%.2f" % (time.time() - w0, time.process_time() - c0),
          flush=True)
    pyroscope.shutdown()  # flushes the last profile


if __name__ == "__main__":
    main()
