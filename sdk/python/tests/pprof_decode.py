"""A minimal protobuf reader for the pprof the SDK uploads (tests only)."""
import gzip


def _varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """(field, wire type, value) for each field of a message; length-delimited values
    are bytes."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("unexpected wire type %d" % wt)
        out.append((f, wt, v))
    return out


def _packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def decode(body):
    """A dict: sample_type [(type, unit)], samples [(root-first names, count, value)],
    time_nanos, duration_nanos, period_type, period."""
    raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    st, samples, locs, funcs, strings = [], [], {}, {}, []
    p = {"time_nanos": 0, "duration_nanos": 0, "period": 0, "period_type": None}
    for f, wt, v in fields(raw):
        if f == 1:
            d = {k: x for k, _, x in fields(v)}
            st.append((d.get(1, 0), d.get(2, 0)))
        elif f == 2:
            ids, vals = [], []
            for k, w, x in fields(v):
                if k == 1:
                    ids += _packed(x) if w == 2 else [x]
                elif k == 2:
                    vals += _packed(x) if w == 2 else [x]
            samples.append((ids, vals))
        elif f == 4:
            lid, fid = 0, []
            for k, _, x in fields(v):
                if k == 1:
                    lid = x
                elif k == 4:
                    fid.append(dict((a, c) for a, _, c in fields(x)).get(1, 0))
            locs[lid] = fid
        elif f == 5:
            d = {k: x for k, _, x in fields(v)}
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif f == 6:
            strings.append(v.decode("utf-8"))
        elif f == 9:
            p["time_nanos"] = v
        elif f == 10:
            p["duration_nanos"] = v
        elif f == 11:
            d = {k: x for k, _, x in fields(v)}
            p["period_type"] = (d.get(1, 0), d.get(2, 0))
        elif f == 12:
            p["period"] = v
    name = lambda fid: strings[funcs[fid]]  # noqa: E731
    p["sample_type"] = [(strings[a], strings[b]) for a, b in st]
    if p["period_type"]:
        p["period_type"] = tuple(strings[x] for x in p["period_type"])
    p["samples"] = [([name(fid) for lid in reversed(ids) for fid in reversed(locs[lid])],
                     vals[0], vals[1]) for ids, vals in samples]
    return p
