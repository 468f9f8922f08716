"""A small pprof (google/pprof profile.proto) encoder for tests: builds profiles from stacks
so that tests know every value exactly. Stacks are given root first, like folded stacks."""
import gzip
import struct


def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _ld(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _int(field, v):
    return _key(field, 0) + _varint(v) if v else b""


def _packed(field, values):
    if not values:
        return b""
    return _ld(field, b"".join(_varint(v) for v in values))


def _unpacked(field, values):
    return b"".join(_key(field, 0) + _varint(v) for v in values)


def build(stacks, sample_types=(("samples", "count"), ("cpu", "nanoseconds")),
          period_type=("cpu", "nanoseconds"), period=10_000_000, time_nanos=0,
          duration_nanos=0, packed=True, compress=True, inline=None):
    """stacks: list of (frames_root_first, [values per sample type]).
    inline: optional {frame: [callee frames inlined into it, outermost first]} to emit one
    Location with several Lines. Returns the encoded (gzip-compressed) profile."""
    strings = [""]
    index = {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    functions, locations = {}, {}
    body = bytearray()
    for t, u in sample_types:
        body += _ld(1, _int(1, s(t)) + _int(2, s(u)))
    rep = _packed if packed else _unpacked

    def fn_id(name):
        if name not in functions:
            functions[name] = len(functions) + 1
        return functions[name]

    def loc_id(name):
        if name not in locations:
            locations[name] = len(locations) + 1
        return locations[name]

    samples = bytearray()
    for frames, values in stacks:
        leaf_first = [loc_id(f) for f in reversed(frames)]
        samples += _ld(2, rep(1, leaf_first) + rep(2, values))
    body += samples
    for name, lid in locations.items():
        lines = b""
        for callee in (inline or {}).get(name, []):
            lines += _ld(4, _int(1, fn_id(callee)))
        lines += _ld(4, _int(1, fn_id(name)) + _int(2, 42))
        body += _ld(4, _int(1, lid) + _int(3, 0x1000 + lid) + lines)
    for name, fid in functions.items():
        body += _ld(5, _int(1, fid) + _int(2, s(name)) + _int(3, s(name)))
    pt = _ld(11, _int(1, s(period_type[0])) + _int(2, s(period_type[1]))) if period_type else b""
    tail = _int(9, time_nanos) + _int(10, duration_nanos) + pt + _int(12, period)
    for x in strings:
        body += _ld(6, x.encode())
    body += tail
    data = bytes(body)
    return gzip.compress(data) if compress else data


def cpu_profile(counts, period=10_000_000, **kw):
    """counts: {"a;b;c": samples}. Values: samples/count and cpu/nanoseconds = count * period."""
    stacks = [(k.split(";"), [n, n * period]) for k, n in counts.items()]
    return build(stacks, period=period, **kw)


def wall_profile(counts, period=20_000_000, **kw):
    stacks = [(k.split(";"), [n, n * period]) for k, n in counts.items()]
    return build(stacks, sample_types=(("samples", "count"), ("wall", "nanoseconds")),
                 period_type=("wall", "nanoseconds"), period=period, **kw)


def push_request(series):
    """A push.v1.PushRequest (Pyroscope's Connect Push, DESIGN §12) as protobuf bytes:
    series is [(labels {name: value}, [(raw_profile bytes, id or None), ...]), ...]."""
    out = b""
    for labels, samples in series:
        s = b"".join(_ld(1, _ld(1, k.encode()) + _ld(2, v.encode())) for k, v in labels.items())
        for raw, sid in samples:
            s += _ld(2, _ld(1, raw) + (_ld(2, sid.encode()) if sid else b""))
        out += _ld(1, s)
    return out


def push_json(series):
    """The same request in Connect's JSON form (rawProfile in base64)."""
    import base64
    return {"series": [{"labels": [{"name": k, "value": v} for k, v in labels.items()],
                        "samples": [{"rawProfile": base64.b64encode(raw).decode(),
                                     **({"ID": sid} if sid else {})} for raw, sid in samples]}
                       for labels, samples in series]}
