#!/usr/bin/env python3
"""Reference values for tests/unit/ingest/test_jfr.c, computed with the JDK's own `jfr` tool.

For a JFR recording this prints:
  * the chunk headers (start ns, duration ns, read from the 68-byte header as
    jdk.jfr.internal.consumer.ChunkHeader lays it out) and their span;
  * from `jfr print --json --events jdk.ExecutionSample`: the number of events, their
    thread states, and the self (leaf) counts of the top leaf frames in RootTrace's
    `package.Class.method` form (DESIGN.md section 3);
  * from `jfr summary`: the event counts by kind (allocation, lock, NativeMethodSample,
    other), as the decoder skips them;
  * from `jfr print --events jdk.ActiveSetting`: the settings that state a sampling period.

Frame names: a Java frame is the class name with '/' made '.' (as
jdk.jfr.consumer.RecordedClass.getName does) + '.' + the method name; a native frame that
async-profiler writes (frame type C++ or Kernel, or the descriptor "()L;" / "(Lk;)L;" it
gives native symbols) is its symbol as is.

Usage: python3 tests/unit/ingest/jfr_reference.py FILE.jfr[.gz] [--top N]
The `jfr` binary is $JFR, else $JAVA_HOME/bin/jfr, else the newest /usr/lib/jvm/*/bin/jfr.
"""
import collections
import glob
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ALLOC = {"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB",
         "jdk.ObjectAllocationSample", "jdk.OldObjectSample", "profiler.LiveObject",
         "profiler.Malloc", "profiler.Free"}
LOCK = {"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark", "profiler.NativeLock"}
SAMPLES = {"jdk.ExecutionSample", "profiler.WallClockSample"}
NOT_EVENTS = {"jdk.Checkpoint", "jdk.Metadata"}  # jfr summary lists the format's own events


def jfr_binary():
    if os.environ.get("JFR"):
        return os.environ["JFR"]
    if os.environ.get("JAVA_HOME") and os.path.exists(os.path.join(os.environ["JAVA_HOME"], "bin", "jfr")):
        return os.path.join(os.environ["JAVA_HOME"], "bin", "jfr")
    found = sorted(glob.glob("/usr/lib/jvm/*/bin/jfr"))
    if not found:
        sys.exit("jfr_reference: no jfr binary (set JFR or JAVA_HOME)")
    return max(found, key=lambda p: ("temurin-25" in p, p))


def frame_name(frame):
    m = frame["method"]
    desc = m.get("descriptor") or ""
    native = frame.get("type") in ("C++", "Kernel") or desc in ("()L;", "(Lk;)L;")
    cls = (m.get("type") or {}).get("name") or ""
    name = m.get("name") or ""
    if native or not cls:
        return name or "[unknown]"
    return cls.replace("/", ".") + "." + name


def chunks(path):
    data = open(path, "rb").read()
    off, out = 0, []
    while off < len(data):
        magic, major, minor, size, cp, meta, start, dur = struct.unpack_from(">4sHHqqqqq", data, off)
        assert magic == b"FLR\0", "not a JFR chunk at %d" % off
        out.append((off, size, start, dur))
        off += size
    return out


def main():
    args = sys.argv[1:]
    top = 10
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    path = args[0]
    tmp = None
    if path.endswith(".gz"):
        tmp = tempfile.NamedTemporaryFile(suffix=".jfr", delete=False)
        with gzip.open(path) as f:
            shutil.copyfileobj(f, tmp)
        tmp.close()
        path = tmp.name
    jfr = jfr_binary()
    try:
        cs = chunks(path)
        for off, size, start, dur in cs:
            print("chunk at %d: size %d start_ns %d duration_ns %d" % (off, size, start, dur))
        t0 = min(c[2] for c in cs)
        t1 = max(c[2] + c[3] for c in cs)
        print("time_ns %d duration_ns %d" % (t0, t1 - t0))

        out = subprocess.run([jfr, "print", "--json", "--stack-depth", "1", "--events",
                              "jdk.ExecutionSample", path], check=True, capture_output=True).stdout
        events = json.loads(out)["recording"]["events"]
        states = collections.Counter(e["values"].get("state") for e in events)
        leaf = collections.Counter()
        for e in events:
            st = e["values"].get("stackTrace")
            frames = st["frames"] if st else []
            leaf[frame_name(frames[0]) if frames else "[unknown]"] += 1
        print("jdk.ExecutionSample events %d, states %s" % (len(events), dict(states)))
        for name, n in sorted(leaf.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:
            print("  self %5d  %s" % (n, name))

        summary = subprocess.run([jfr, "summary", path], check=True, capture_output=True,
                                 text=True).stdout
        kinds = collections.Counter()
        others = collections.Counter()
        for line in summary.splitlines():
            parts = line.split()
            if len(parts) != 3 or not parts[1].isdigit() or "." not in parts[0]:
                continue
            name, n = parts[0], int(parts[1])
            if name in NOT_EVENTS or name in SAMPLES:
                continue
            kind = ("allocation" if name in ALLOC else "lock" if name in LOCK else
                    "native_method" if name == "jdk.NativeMethodSample" else "other")
            kinds[kind] += n
            if kind == "other":
                others[name] += n
        print("skipped by kind (jfr summary): %s" % dict(kinds))
        print("  most frequent other: %s" % others.most_common(4))

        settings = subprocess.run([jfr, "print", "--json", "--events", "jdk.ActiveSetting", path],
                                  check=True, capture_output=True).stdout
        for e in json.loads(settings)["recording"]["events"]:
            v = e["values"]
            if v["name"] in ("period", "interval", "wall", "event") and (
                    v["value"] or "").strip() not in ("", "everyChunk", "beginChunk", "endChunk"):
                if v["name"] != "period" or "ms" in v["value"] and not v["value"].startswith("1000"):
                    print("  setting id %s %s = %s" % (v["id"], v["name"], v["value"]))
    finally:
        if tmp:
            os.unlink(tmp.name)


if __name__ == "__main__":
    main()
