"""Encoder: the canonical pprof encoding of sdk/testdata/README.md (a small protobuf
writer of our own, no dependencies), and gzip for upload."""
from __future__ import annotations

import gzip
from typing import Dict, List, Sequence, Tuple

# A sample as the encoder takes it: frames root first, sample count, value in ns.
Sample = Tuple[Sequence[str], int, int]


def _varint(n: int, out: bytearray) -> None:
    if n < 0:
        n &= (1 << 64) - 1  # int64 two's complement, as protobuf writes negatives
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _num(field: int, v: int, out: bytearray) -> None:
    """A varint field; omitted when 0 (proto3)."""
    if v:
        _varint(field << 3, out)
        _varint(v, out)


def _ld(field: int, payload: bytes, out: bytearray) -> None:
    """A length-delimited field."""
    _varint(field << 3 | 2, out)
    _varint(len(payload), out)
    out += payload


def _packed(field: int, values: Sequence[int], out: bytearray) -> None:
    if values:
        p = bytearray()
        for v in values:
            _varint(v, p)
        _ld(field, p, out)


def _pair(a: int, b: int) -> bytes:
    """A ValueType: type (1) and unit (2) as string indexes."""
    p = bytearray()
    _num(1, a, p)
    _num(2, b, p)
    return bytes(p)


def encode(ptype: str, time_nanos: int, duration_nanos: int, period: int,
           samples: Sequence[Sample]) -> bytes:
    """The uncompressed pprof bytes of a profile: `ptype` ("wall" or "cpu") in nanoseconds,
    `period` in ns, samples in the order given, each stack root first. Location and
    function ids are 1, 2, ... in order of first appearance walking the samples in order,
    each stack leaf first; a location and its function share the id."""
    strings: List[str] = []
    index: Dict[str, int] = {}

    def s(x: str) -> int:
        i = index.get(x)
        if i is None:
            i = index[x] = len(strings)
            strings.append(x)
        return i

    for x in ("", "samples", "count", ptype, "nanoseconds"):
        s(x)
    frame_id: Dict[str, int] = {}
    frames: List[str] = []
    out = bytearray()
    _ld(1, _pair(s("samples"), s("count")), out)
    _ld(1, _pair(s(ptype), s("nanoseconds")), out)
    for stack, count, value in samples:
        ids = []
        for f in reversed(stack):
            i = frame_id.get(f)
            if i is None:
                frames.append(f)
                i = frame_id[f] = len(frames)
            ids.append(i)
        body = bytearray()
        _packed(1, ids, body)
        _packed(2, (count, value), body)
        _ld(2, body, out)
    for i in range(1, len(frames) + 1):
        line = bytearray()
        _num(1, i, line)
        loc = bytearray()
        _num(1, i, loc)
        _ld(4, line, loc)
        _ld(4, loc, out)
    for i, f in enumerate(frames, 1):
        fn = bytearray()
        _num(1, i, fn)
        _num(2, s(f), fn)
        _ld(5, fn, out)
    for x in strings:
        _ld(6, x.encode("utf-8", "replace"), out)
    _num(9, time_nanos, out)
    _num(10, duration_nanos, out)
    _ld(11, _pair(s(ptype), s("nanoseconds")), out)
    _num(12, period, out)
    return bytes(out)


def compress(raw: bytes) -> bytes:
    """gzip of the encoded profile (mtime 0, so the same profile gives the same bytes)."""
    return gzip.compress(raw, compresslevel=6, mtime=0)
