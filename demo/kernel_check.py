"""`make demo`'s challenge of its own capacity figures (DESIGN §7): a CPU service's
vCPU-hours/month in each window of an issue's diff beside what the kernel accounted to the
same processes over the same windows (scripts/kernel_cpu.py record, sampled from outside),
and which figure RootTrace's capacity took.

Usage: python3 demo/kernel_check.py DIFF_JSON KERNEL_FILE SCOPE PID...
SCOPE is "thread" (the main thread, /proc/PID/task/PID/stat: what a Node profile covers) or
"process" (/proc/PID/stat: what a Go profile covers). The PIDs are every process of the
service over both windows (the release before the deploy and the one after). Exits 1 when a
window's figures differ by more than 5 %."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import kernel_cpu  # noqa: E402

TOLERANCE = 0.05


def parse_time(s):
    """RFC 3339 UTC as the API writes it, to Unix seconds."""
    from datetime import datetime
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def kernel_s(path, pids, col, lo, hi):
    """CPU seconds the pids spent in [lo, hi): a process first seen after lo started after it
    (the demo starts each release after the deploy), so all its CPU up to hi counts; one that
    exited before lo counts nothing."""
    total = 0.0
    for pid in pids:
        s = kernel_cpu.load(path, pid)
        if not s or s[-1][0] < lo or s[0][0] >= hi:
            continue
        at_lo = 0.0 if s[0][0] > lo else kernel_cpu.interpolate(s, lo, col)
        total += kernel_cpu.interpolate(s, hi, col) - at_lo
    return total


def main(argv):
    diff_path, kernel_path, scope, *pids = argv[1:]
    col = kernel_cpu.THREAD if scope == "thread" else kernel_cpu.PROCESS
    d = json.load(open(diff_path))
    cap = d["capacity"]
    agree = d.get("cpu_agreement") or {}
    what = "main thread" if scope == "thread" else "processes"
    print(f"Kernel check ({d['service']}: the {what} of PIDs {', '.join(pids)}, read from "
          f"/proc every {kernel_cpu.SAMPLE_EVERY_S} s):")
    ok = True
    for key, name in (("base", "baseline"), ("cur", "current")):
        w = d["baseline" if key == "base" else "current"]
        lo, hi = parse_time(w["from"]), parse_time(w["to"])
        k = kernel_s(kernel_path, [int(p) for p in pids], col, lo, hi)
        k_vcpu = 730 * k / (hi - lo)
        rt = cap["vcpu_hours_per_month"][key]
        inputs = cap["inputs"][key]
        a = agree.get(name) or {}
        extra = inputs.get("unattributed_cpu_s") or 0
        uses = {"os": "the kernel's figure (its sampler ticks on wall time)",
                "sampled": f"the samples' figure (its sampler counts CPU time) and {extra:.2f} s "
                           "the kernel saw beyond it, unattributed",
                "mixed": "the kernel's figure where its sampler ticks on wall time"}.get(
                    a.get("capacity_uses"), "the samples' figure (no OS figure was sent)")
        ratio = rt / k_vcpu if k_vcpu > 0 else float("nan")
        good = abs(rt - k_vcpu) <= TOLERANCE * k_vcpu
        ok = ok and good
        print(f"  {name:8} RootTrace {rt:8.2f} vCPU-h/month, kernel {k_vcpu:8.2f} (ratio "
              f"{ratio:.3f}: {'within' if good else 'NOT within'} 5 %); sampled CPU "
              f"{inputs['sampled_cpu_s']:.2f} s, OS {inputs['os_cpu_s'] or 0:.2f} s, kernel "
              f"{k:.2f} s; the capacity used {uses}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
