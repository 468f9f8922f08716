"""Writes the wire test vectors (vectors.json) every SDK encoder is checked against: fixed
stacks and values, and the exact uncompressed pprof bytes of the canonical encoding that
README.md specifies. Run: python3 sdk/testdata/make_vectors.py (from the repository root)."""
import json
import os


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def ld(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def num(field, v):
    return varint(field << 3) + varint(v) if v else b""


def packed(field, values):
    return ld(field, b"".join(varint(v) for v in values)) if values else b""


def encode(v):
    """The canonical encoding (README.md): one location per distinct frame, ids in order of
    first appearance walking the samples in order, each stack leaf first."""
    strings, index = [], {}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    for x in ("", "samples", "count", v["type"], "nanoseconds"):
        s(x)
    frames = []
    for smp in v["samples"]:
        for f in reversed(smp["stack"]):
            if f not in frames:
                frames.append(f)
    out = bytearray()
    out += ld(1, num(1, s("samples")) + num(2, s("count")))
    out += ld(1, num(1, s(v["type"])) + num(2, s("nanoseconds")))
    for smp in v["samples"]:
        ids = [frames.index(f) + 1 for f in reversed(smp["stack"])]
        out += ld(2, packed(1, ids) + packed(2, [smp["count"], smp["value_ns"]]))
    for i, f in enumerate(frames, 1):
        out += ld(4, num(1, i) + ld(4, num(1, i)))
    for i, f in enumerate(frames, 1):
        out += ld(5, num(1, i) + num(2, s(f)))
    for x in strings:
        out += ld(6, x.encode("utf-8"))
    out += num(9, v["time_nanos"]) + num(10, v["duration_nanos"])
    out += ld(11, num(1, s(v["type"])) + num(2, s("nanoseconds")))
    out += num(12, v["period"])
    assert len(strings) == len(index)
    return bytes(out)


VECTORS = [
    {"name": "cpu_two_stacks", "type": "cpu", "time_nanos": 1764460800000000000,
     "duration_nanos": 60000000000, "period": 10000000,
     "samples": [
         {"stack": ["src/server.handle", "src/pricing.applyDiscount"], "count": 3,
          "value_ns": 29500000},
         {"stack": ["src/server.handle"], "count": 1, "value_ns": 10250000}]},
    {"name": "wall_threads", "type": "wall", "time_nanos": 1764460860123456789,
     "duration_nanos": 59876543211, "period": 20000000,
     "samples": [
         {"stack": ["threading.Thread._bootstrap", "shop.worker.run", "shop.checkout.Cart.total"],
          "count": 7, "value_ns": 140000000},
         {"stack": ["threading.Thread._bootstrap", "shop.worker.run", "time.sleep"],
          "count": 2, "value_ns": 40321000},
         {"stack": ["__main__.<module>", "shop.checkout.Cart.total"], "count": 1,
          "value_ns": 20000000}]},
    {"name": "empty_profile", "type": "cpu", "time_nanos": 1764460920000000000,
     "duration_nanos": 60000000000, "period": 10000000, "samples": []},
    {"name": "unicode_frames", "type": "wall", "time_nanos": 1764460980000000000,
     "duration_nanos": 1000000000, "period": 10000000,
     "samples": [{"stack": ["módulo.función", "模块.函数", "<lambda>.(anonymous)"],
                  "count": 200, "value_ns": 2000000000}]},
]

if __name__ == "__main__":
    for v in VECTORS:
        v["pprof_hex"] = encode(v).hex()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"vectors": VECTORS}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(VECTORS)} vectors to {path}")
