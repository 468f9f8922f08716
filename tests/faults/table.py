#!/usr/bin/env python3
"""Prints the docs/reliability.md table rows ("SDK faults") from run.py's JSON results.
Usage: table.py build/faults/*.json"""
import json
import sys


def row(r):
    lat = r.get("latency_ms", {})
    up, down = lat.get("ref", {}), lat.get("down", {})
    rss = r.get("rss_mib", {})
    inv = r.get("uploads_invalid_phase", {})
    f = lambda x, n=2: "–" if x is None else f"{x:.{n}f}"  # noqa: E731
    return (f"| {r['sdk']} | {r['down_s']:.0f} s | {f(up.get('p50'))} / {f(up.get('p99'), 1)} | "
            f"{f(down.get('p50'))} / {f(down.get('p99'), 1)} | {f(down.get('max'), 0)} | "
            f"{r.get('queue_max_down')} (8) | {rss.get('up_max')} → {rss.get('down_max')} | "
            f"{r.get('valid_to_profiling_s')} / {r.get('valid_to_first_upload_s')} s | "
            f"{inv.get('new')} ({inv.get('queued_before_outage')} retried) | "
            f"{r.get('open_profile_at_outage')} | {'passed' if r.get('ok') else 'FAILED'} |")


print("| SDK | down | p50 / p99 up | p50 / p99 down | max down | queue while down (bound) "
      "| RSS up → down (MiB) | valid → profiling / first upload | new uploads in invalid phase "
      "| profile open at the outage | result |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    with open(path) as fh:
        print(row(json.load(fh)))
