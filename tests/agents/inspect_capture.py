#!/usr/bin/env python3
"""Decode what tests/agents/capture.py recorded (stdlib only).

  python3 inspect_capture.py DIR [DIR...]      summary of every NNNN.json in DIR
  python3 inspect_capture.py DIR/0003.json     one request
  options: --frames N  (function examples per pprof, default 8)
           --top N     (top leaf / inclusive functions per pprof, default 6)
           --json      (machine-readable summary instead of text)
           --extract D (write every decoded pprof / jfr payload to D as files)

Understands: the legacy Pyroscope `/ingest` (multipart parts `profile`,
`prev_profile`, `sample_type_config`, Java's `jfr` + `labels`; or a raw body),
the Connect `POST /push.v1.PusherService/Push` (application/proto or
application/json; PushRequest -> series{labels, samples{raw_profile, ID}}),
and OTLP profiles (only reported as such). Profiles are decoded as pprof
(google/pprof proto/profile.proto), gzip-sniffed; JFR is reported by size and
header (decode it with the JDK's `jfr summary` / `jfr print`).
"""
import base64
import gzip
import io
import json
import os
import sys
import urllib.parse
from collections import Counter, defaultdict

# ---------------------------------------------------------------- protobuf


def _varint(b, i):
    shift = 0
    r = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << shift
        if c < 0x80:
            return r, i
        shift += 7


def fields(b):
    """Yield (field_number, wire_type, value) for one protobuf message."""
    i = 0
    n = len(b)
    while i < n:
        key, i = _varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            ln, i = _varint(b, i)
            v = b[i:i + ln]
            i += ln
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d at %d" % (wt, i))
        yield fn, wt, v


def _ints(wt, v):
    """A repeated integer field, packed (wt 2) or not."""
    if wt == 2:
        out = []
        j = 0
        while j < len(v):
            x, j = _varint(v, j)
            out.append(x)
        return out
    return [v]


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def maybe_gunzip(b):
    if b[:2] == b"\x1f\x8b":
        return gzip.decompress(b), True
    return b, False


# ---------------------------------------------------------------- pprof


def decode_pprof(raw):
    b, gz = maybe_gunzip(raw)
    p = {"gzip": gz, "size": len(raw), "size_uncompressed": len(b),
         "sample_type": [], "samples": [], "locations": {}, "functions": {},
         "mappings": {}, "strings": [], "time_nanos": 0, "duration_nanos": 0,
         "period_type": None, "period": 0, "comment": [], "default_sample_type": 0,
         "drop_frames": 0, "keep_frames": 0}
    for fn, wt, v in fields(b):
        if fn == 1:
            vt = dict((f, x) for f, _, x in fields(v))
            p["sample_type"].append((vt.get(1, 0), vt.get(2, 0)))
        elif fn == 2:
            s = {"loc": [], "val": [], "label": []}
            for f, w, x in fields(v):
                if f == 1:
                    s["loc"] += _ints(w, x)
                elif f == 2:
                    s["val"] += [_signed(y) for y in _ints(w, x)]
                elif f == 3:
                    lab = dict((ff, xx) for ff, _, xx in fields(x))
                    s["label"].append((lab.get(1, 0), lab.get(2, 0), lab.get(3), lab.get(4, 0)))
            p["samples"].append(s)
        elif fn == 3:
            m = {}
            for f, _, x in fields(v):
                m[f] = x
            p["mappings"][m.get(1, 0)] = m
        elif fn == 4:
            loc = {"id": 0, "mapping": 0, "address": 0, "lines": []}
            for f, w, x in fields(v):
                if f == 1:
                    loc["id"] = x
                elif f == 2:
                    loc["mapping"] = x
                elif f == 3:
                    loc["address"] = x
                elif f == 4:
                    ln = dict((ff, xx) for ff, _, xx in fields(x))
                    loc["lines"].append((ln.get(1, 0), _signed(ln.get(2, 0))))
            p["locations"][loc["id"]] = loc
        elif fn == 5:
            f_ = dict((f, x) for f, _, x in fields(v))
            p["functions"][f_.get(1, 0)] = (f_.get(2, 0), f_.get(3, 0), f_.get(4, 0), f_.get(5, 0))
        elif fn == 6:
            p["strings"].append(v.decode("utf-8", "replace"))
        elif fn == 7:
            p["drop_frames"] = v
        elif fn == 8:
            p["keep_frames"] = v
        elif fn == 9:
            p["time_nanos"] = _signed(v)
        elif fn == 10:
            p["duration_nanos"] = _signed(v)
        elif fn == 11:
            vt = dict((f, x) for f, _, x in fields(v))
            p["period_type"] = (vt.get(1, 0), vt.get(2, 0))
        elif fn == 12:
            p["period"] = _signed(v)
        elif fn == 13:
            p["comment"] += _ints(wt, v)
        elif fn == 14:
            p["default_sample_type"] = v
    return p


def pprof_summary(p, nframes=8, ntop=6):
    S = p["strings"]

    def s(i):
        return S[i] if 0 <= i < len(S) else "<bad string %d>" % i

    out = {
        "gzip": p["gzip"], "size": p["size"], "size_uncompressed": p["size_uncompressed"],
        "sample_types": ["%s/%s" % (s(t), s(u)) for t, u in p["sample_type"]],
        "period_type": ("%s/%s" % (s(p["period_type"][0]), s(p["period_type"][1]))) if p["period_type"] else None,
        "period": p["period"],
        "time_nanos": p["time_nanos"], "time_nanos_digits": len(str(abs(p["time_nanos"]))) if p["time_nanos"] else 0,
        "duration_nanos": p["duration_nanos"],
        "n_samples": len(p["samples"]), "n_locations": len(p["locations"]),
        "n_functions": len(p["functions"]), "n_mappings": len(p["mappings"]),
        "n_strings": len(S),
        "comments": [s(c) for c in p["comment"]],
        "default_sample_type": s(p["default_sample_type"]) if p["default_sample_type"] else "",
        "drop_frames": s(p["drop_frames"]) if p["drop_frames"] else "",
        "mappings": [{"id": k, "filename": s(m.get(5, 0)), "build_id": s(m.get(6, 0)),
                      "has_functions": bool(m.get(7, 0))} for k, m in list(p["mappings"].items())[:4]],
    }
    totals = [0] * len(p["sample_type"])
    for smp in p["samples"]:
        for k, v in enumerate(smp["val"][:len(totals)]):
            totals[k] += v
    out["totals"] = totals
    # sample labels
    labs = Counter()
    for smp in p["samples"]:
        for k, st, num, nu in smp["label"]:
            labs["%s=%s" % (s(k), s(st) if st else num)] += 1
    out["sample_labels"] = dict(labs.most_common(12))

    def frames_of(loc_id):
        loc = p["locations"].get(loc_id)
        if not loc:
            return ["<missing location %d>" % loc_id]
        if not loc["lines"]:
            m = p["mappings"].get(loc["mapping"], {})
            return ["<unsymbolized %s 0x%x>" % (os.path.basename(s(m.get(5, 0))), loc["address"])]
        res = []
        for fid, line in loc["lines"]:  # leaf-first within a location
            f = p["functions"].get(fid, (0, 0, 0, 0))
            res.append("%s | %s | line %d" % (s(f[0]), s(f[2]), line))
        return res

    # function examples: as given in the Function table
    ex = []
    for fid, (name, sysname, fname, start) in list(p["functions"].items())[:nframes]:
        ex.append({"id": fid, "name": s(name), "system_name": s(sysname), "filename": s(fname),
                   "start_line": start})
    out["function_examples"] = ex
    # top by leaf and inclusive, using the last sample type (the value)
    vi = len(p["sample_type"]) - 1
    leaf = Counter()
    incl = Counter()
    for smp in p["samples"]:
        if not smp["val"]:
            continue
        v = smp["val"][vi] if vi < len(smp["val"]) else 0
        stack = []
        for lid in smp["loc"]:
            stack += frames_of(lid)
        if not stack:
            continue
        names = [x.split(" | ")[0] for x in stack]
        leaf[names[0]] += v
        for nm in set(names):
            incl[nm] += v
    tot = totals[vi] if totals else 0
    out["value_type"] = out["sample_types"][vi] if out["sample_types"] else None
    out["top_leaf"] = [(n, v, round(100.0 * v / tot, 1) if tot else 0) for n, v in leaf.most_common(ntop)]
    out["top_inclusive"] = [(n, v, round(100.0 * v / tot, 1) if tot else 0) for n, v in incl.most_common(ntop)]
    # one full stack of the heaviest sample
    best = None
    for smp in p["samples"]:
        if smp["val"] and (best is None or smp["val"][vi] > best["val"][vi]):
            best = smp
    if best:
        st = []
        for lid in best["loc"]:
            st += frames_of(lid)
        out["heaviest_stack_leaf_first"] = st[:25]
    return out


# ---------------------------------------------------------------- envelopes


def parse_multipart(body, ctype):
    bnd = None
    for part in ctype.split(";"):
        part = part.strip()
        if part.lower().startswith("boundary="):
            bnd = part[9:].strip('"')
    if not bnd:
        return None
    delim = b"--" + bnd.encode()
    parts = []
    for chunk in body.split(delim)[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk
        head, _, data = chunk.partition(b"\r\n\r\n")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        hdrs = {}
        for line in head.split(b"\r\n"):
            k, _, v = line.decode("latin-1").partition(":")
            hdrs[k.strip().lower()] = v.strip()
        disp = hdrs.get("content-disposition", "")
        name = fname = None
        for item in disp.split(";"):
            item = item.strip()
            if item.startswith("name="):
                name = item[5:].strip('"')
            elif item.startswith("filename="):
                fname = item[9:].strip('"')
        parts.append({"name": name, "filename": fname, "headers": hdrs, "data": data})
    return parts


def decode_push(body, ctype):
    series = []
    if "json" in ctype:
        j = json.loads(body)
        for s in j.get("series", []):
            labels = [(l.get("name"), l.get("value")) for l in s.get("labels", [])]
            samples = []
            for sm in s.get("samples", []):
                rp = sm.get("rawProfile") or sm.get("raw_profile") or ""
                samples.append({"ID": sm.get("ID", sm.get("id")), "raw_profile": base64.b64decode(rp),
                                "json_keys": sorted(sm.keys())})
            series.append({"labels": labels, "samples": samples, "json_keys": sorted(s.keys())})
        return series
    for fn, _, v in fields(body):
        if fn != 1:
            continue
        labels, samples = [], []
        for f, _, x in fields(v):
            if f == 1:
                lp = dict((ff, xx) for ff, _, xx in fields(x))
                labels.append((lp.get(1, b"").decode(), lp.get(2, b"").decode()))
            elif f == 2:
                sm = {"ID": "", "raw_profile": b""}
                for ff, _, xx in fields(x):
                    if ff == 1:
                        sm["raw_profile"] = xx
                    elif ff == 2:
                        sm["ID"] = xx.decode()
                samples.append(sm)
        series.append({"labels": labels, "samples": samples})
    return series


def decode_jfr_labels(b):
    """io.pyroscope.labels.pb.JfrLabels: LabelsSnapshot{contexts map<int64,Context>, strings map<int64,string>}."""
    b, gz = maybe_gunzip(b)
    ctxs, strs = {}, {}
    for fn, _, v in fields(b):
        ent = dict((f, x) for f, _, x in fields(v))
        if fn == 1:  # contexts: key int64, value Context{ labels map<int64,int64> = 1 }
            labels = {}
            for f, _, x in fields(ent.get(2, b"")):
                if f == 1:
                    kv = dict((ff, xx) for ff, _, xx in fields(x))
                    labels[kv.get(1, 0)] = kv.get(2, 0)
            ctxs[ent.get(1, 0)] = labels
        elif fn == 2:
            strs[ent.get(1, 0)] = ent.get(2, b"").decode("utf-8", "replace")
    return {"gzip": gz, "contexts": len(ctxs), "strings": strs,
            "example_contexts": {k: {strs.get(a, a): strs.get(b_, b_) for a, b_ in v.items()}
                                 for k, v in list(ctxs.items())[:3]}}


def proto_strings(b, depth=0, out=None):
    """Printable strings anywhere in a protobuf message of unknown schema (for OTLP)."""
    if out is None:
        out = []
    if depth > 12:
        return out
    try:
        fl = list(fields(b))
    except Exception:  # noqa
        return None
    for fn, wt, v in fl:
        if wt != 2 or not v:
            continue
        sub = proto_strings(v, depth + 1, []) if v[:1] and v[0] >> 3 > 0 and v[0] & 7 in (0, 1, 2, 5) else None
        txt = None
        try:
            t = v.decode("utf-8")
            if all(ch.isprintable() for ch in t):
                txt = t
        except UnicodeDecodeError:
            pass
        if txt is not None and (sub is None or len(txt) < 80 and any(c.isalpha() for c in txt)):
            out.append(txt)
        elif sub is not None:
            out.extend(sub)
    return out


def describe_payload(name, data, args, extract=None):
    """A part or sample payload: pprof, jfr, json, text."""
    d = {"part": name, "len": len(data)}
    raw, gz = maybe_gunzip(data)
    d["gzip"] = gz
    if raw[:4] == b"FLR\x00":
        d["kind"] = "jfr"
        d["jfr_version"] = "%d.%d" % (int.from_bytes(raw[4:6], "big"), int.from_bytes(raw[6:8], "big"))
        d["len_uncompressed"] = len(raw)
        if extract:
            with open(extract + ".jfr", "wb") as f:
                f.write(raw)
            d["extracted"] = extract + ".jfr"
        return d
    if name == "labels":
        try:
            d["kind"] = "jfr-labels(protobuf)"
            d.update(decode_jfr_labels(data))
            return d
        except Exception as e:  # noqa
            d["labels_error"] = str(e)
    if name == "sample_type_config" or raw[:1] in (b"{", b"["):
        d["kind"] = "json"
        d["json"] = json.loads(raw)
        return d
    try:
        p = decode_pprof(data)
        if p["sample_type"] or p["samples"]:
            d["kind"] = "pprof"
            d["pprof"] = pprof_summary(p, args.get("frames", 8), args.get("top", 6))
            if extract:
                with open(extract + ".pb.gz", "wb") as f:
                    f.write(data if gz else gzip.compress(raw))
                d["extracted"] = extract + ".pb.gz"
            return d
    except Exception as e:  # noqa
        d["pprof_error"] = str(e)
    d["kind"] = "text" if all(32 <= c < 127 or c in (9, 10, 13) for c in raw[:2000]) else "binary"
    if d["kind"] == "text":
        lines = raw.decode("utf-8", "replace").splitlines()
        d["lines"] = len(lines)
        d["head"] = lines[:8]
    else:
        d["head_hex"] = raw[:32].hex()
    return d


def inspect(jpath, args):
    with open(jpath) as f:
        rec = json.load(f)
    with open(os.path.join(os.path.dirname(jpath), rec["body_file"]), "rb") as f:
        body = f.read()
    hdr = {k.lower(): v for k, v in rec["headers"]}
    out = {"file": jpath, "seq": rec["seq"], "time": rec.get("time"), "status": rec.get("status"),
           "method": rec["method"], "path": rec["path"],
           "query": {k: v[0] if len(v) == 1 else v for k, v in rec["query"].items()},
           "headers": hdr, "body_len": len(body), "body_sha256": rec.get("body_sha256")}
    ext = None
    if args.get("extract"):
        os.makedirs(args["extract"], exist_ok=True)
        ext = os.path.join(args["extract"], "%s-%04d" % (os.path.basename(os.path.dirname(os.path.abspath(jpath))), rec["seq"]))
    ce = hdr.get("content-encoding", "")
    if ce == "gzip" or body[:2] == b"\x1f\x8b":
        out["body_gzip"] = True
    ctype = hdr.get("content-type", "")
    q = out["query"]
    if "name" in q:
        nm = q["name"]
        app, _, rest = nm.partition("{")
        labels = {}
        for kv in rest.rstrip("}").split(","):
            if kv:
                k, _, v = kv.partition("=")
                labels[k] = v
        out["name_app"] = app
        out["name_labels"] = labels
    for k in ("from", "until"):
        if k in q:
            out[k + "_digits"] = len(q[k])
    if rec["path"].endswith("/push.v1.PusherService/Push"):
        b, _ = maybe_gunzip(body) if ce == "gzip" or body[:2] == b"\x1f\x8b" else (body, False)
        series = decode_push(b, ctype)
        out["push_series"] = []
        for si, s in enumerate(series):
            ent = {"labels": s["labels"], "samples": []}
            if "json_keys" in s:
                ent["json_keys"] = s["json_keys"]
            for k, sm in enumerate(s["samples"]):
                pe = describe_payload("raw_profile", sm["raw_profile"], args,
                                      ext and "%s-s%d-%d" % (ext, si, k))
                pe["ID"] = sm["ID"]
                if "json_keys" in sm:
                    pe["json_keys"] = sm["json_keys"]
                ent["samples"].append(pe)
            out["push_series"].append(ent)
    elif "/v1development/profiles" in rec["path"]:
        b = maybe_gunzip(body)[0]
        strs = proto_strings(b) or []
        seen = []
        for x in strs:
            if x not in seen:
                seen.append(x)
        out["otlp_strings"] = seen[:60]
        out["otlp_len_uncompressed"] = len(b)
    elif "multipart" in ctype:
        parts = parse_multipart(body, ctype)
        out["multipart"] = []
        for k, pt in enumerate(parts or []):
            d = describe_payload(pt["name"], pt["data"], args, ext and "%s-%s" % (ext, pt["name"]))
            d["filename"] = pt["filename"]
            d["part_headers"] = pt["headers"]
            out["multipart"].append(d)
    elif body:
        b = body
        if ce == "gzip":
            b, _ = maybe_gunzip(body)
        out["body"] = describe_payload("body", b, args, ext and ext + "-body")
    return out


def fmt_text(o):
    L = []
    L.append("== %s  #%d  %s %s -> %s  (%d bytes%s)" % (o["file"], o["seq"], o["method"], o["path"], o["status"],
             o["body_len"], ", gzip" if o.get("body_gzip") else ""))
    for k, v in o["query"].items():
        L.append("   q %s = %s" % (k, v))
    if "name_labels" in o:
        L.append("   name: app=%r labels=%s" % (o["name_app"], o["name_labels"]))
    for k in ("from_digits", "until_digits"):
        if k in o:
            L.append("   %s = %d" % (k, o[k]))
    for k, v in o["headers"].items():
        if k == "authorization" and v.lower().startswith("basic "):
            try:
                v = v + "   (= %s)" % base64.b64decode(v[6:]).decode()
            except Exception:  # noqa
                pass
        L.append("   h %s: %s" % (k, v))

    def payload(d, ind):
        pad = " " * ind
        L.append("%spart %r kind=%s len=%d gzip=%s%s" % (pad, d["part"], d.get("kind"), d["len"], d.get("gzip"),
                 (" filename=%r" % d["filename"]) if d.get("filename") else ""))
        if d.get("part_headers"):
            L.append("%s  part headers: %s" % (pad, d["part_headers"]))
        if d.get("ID") is not None and "ID" in d:
            L.append("%s  ID=%r" % (pad, d["ID"]))
        if d.get("kind") == "json":
            L.append("%s  json: %s" % (pad, json.dumps(d["json"])[:1500]))
        if d.get("kind") == "jfr":
            L.append("%s  jfr version %s, %d bytes uncompressed" % (pad, d["jfr_version"], d["len_uncompressed"]))
        if d.get("kind", "").startswith("jfr-labels"):
            L.append("%s  contexts=%d strings=%s examples=%s" % (pad, d["contexts"], d["strings"], d["example_contexts"]))
        if d.get("kind") == "text":
            L.append("%s  %d lines; head: %s" % (pad, d["lines"], d["head"]))
        if d.get("kind") == "pprof":
            p = d["pprof"]
            L.append("%s  sample_types=%s period_type=%s period=%d" % (pad, p["sample_types"], p["period_type"], p["period"]))
            L.append("%s  time_nanos=%d (%d digits) duration_nanos=%d (%.3f s)" % (pad, p["time_nanos"], p["time_nanos_digits"],
                     p["duration_nanos"], p["duration_nanos"] / 1e9))
            L.append("%s  samples=%d locations=%d functions=%d mappings=%d strings=%d totals=%s" % (
                pad, p["n_samples"], p["n_locations"], p["n_functions"], p["n_mappings"], p["n_strings"], p["totals"]))
            if p["comments"] or p["default_sample_type"] or p["drop_frames"]:
                L.append("%s  comments=%s default_sample_type=%r drop_frames=%r" % (pad, p["comments"], p["default_sample_type"], p["drop_frames"]))
            if p["mappings"]:
                L.append("%s  mappings: %s" % (pad, p["mappings"]))
            if p["sample_labels"]:
                L.append("%s  sample labels: %s" % (pad, p["sample_labels"]))
            L.append("%s  top leaf (%s): %s" % (pad, p["value_type"], p["top_leaf"]))
            L.append("%s  top inclusive: %s" % (pad, p["top_inclusive"]))
            L.append("%s  functions (name | system_name | filename | start_line):" % pad)
            for f in p["function_examples"]:
                L.append("%s    %r | %r | %r | %d" % (pad, f["name"], f["system_name"], f["filename"], f["start_line"]))
            if p.get("heaviest_stack_leaf_first"):
                L.append("%s  heaviest stack, leaf first (name | file | line):" % pad)
                for fr in p["heaviest_stack_leaf_first"][:12]:
                    L.append("%s    %s" % (pad, fr))
        if d.get("pprof_error"):
            L.append("%s  pprof decode error: %s" % (pad, d["pprof_error"]))
        if d.get("head_hex"):
            L.append("%s  head: %s" % (pad, d["head_hex"]))

    if "otlp_strings" in o:
        L.append("   OTLP ExportProfilesServiceRequest, %d bytes uncompressed; strings in it:" % o["otlp_len_uncompressed"])
        L.append("     %s" % o["otlp_strings"])
    for part in o.get("multipart", []):
        payload(part, 3)
    if "body" in o:
        payload(o["body"], 3)
    for s in o.get("push_series", []):
        L.append("   series labels: %s" % s["labels"])
        if s.get("json_keys"):
            L.append("   series json keys: %s" % s["json_keys"])
        for sm in s["samples"]:
            payload(sm, 5)
    return "\n".join(L)


def main(argv):
    args = {"frames": 8, "top": 6, "json": False, "extract": None}
    paths = []
    it = iter(argv)
    for a in it:
        if a == "--frames":
            args["frames"] = int(next(it))
        elif a == "--top":
            args["top"] = int(next(it))
        elif a == "--json":
            args["json"] = True
        elif a == "--extract":
            args["extract"] = next(it)
        else:
            paths.append(a)
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            files.append(p)
    res = []
    for f in files:
        try:
            o = inspect(f, args)
        except Exception as e:  # noqa
            o = {"file": f, "error": repr(e)}
            print("== %s: ERROR %r" % (f, e))
            continue
        if args["json"]:
            res.append(o)
        else:
            print(fmt_text(o))
    if args["json"]:
        json.dump(res, sys.stdout, indent=1, default=lambda x: x.hex() if isinstance(x, bytes) else str(x))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
