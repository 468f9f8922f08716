"""Hostile config bodies and the invariants parse_config keeps (DESIGN §5), shared by the
property test (test_config_fuzz.py) and the atheris fuzzer (../fuzz/fuzz_config.py).

Invariants, for any body and ETag header: parse_config raises ConfigError (profiling off)
or returns a Config whose every bound lies within the compiled clamps; it raises nothing
else; profiling is on only when a strict JSON reading of the body is an object whose
"enabled" is true; its strings can be sent back (valid Unicode); the same input gives the
same answer. A generated body also carries its expected outcome (valid with these values,
invalid, or unknown after a byte-level mutation), checked exactly."""
from __future__ import annotations

import json
import os
import random
import time
from typing import Any, List, Optional, Tuple

from roottrace.config import DEFAULT_LIMITS as L
from roottrace.config import Config, ConfigError, parse_config

NUMERIC = {  # field: (default, lo, hi, integral)
    "sampling_interval_us": (L.default_sampling_interval_us, L.sampling_interval_min_us,
                             L.sampling_interval_max_us, True),
    "upload_interval_s": (L.default_upload_interval_s, L.upload_interval_min_s,
                          L.upload_interval_max_s, False),
    "max_stack_depth": (L.stack_depth_max, L.stack_depth_min, L.stack_depth_max, True),
    "poll_interval_s": (L.default_poll_interval_s, L.poll_interval_min_s,
                        L.poll_interval_max_s, False),
}
BASE = {"enabled": True, "type": "wall", "sampling_interval_us": 20000, "upload_interval_s": 60,
        "max_stack_depth": 128, "poll_interval_s": 10, "etag": "e1"}

# Bodies from test_config.py, test_hostile.py and the Go SDK's seeds.
SEEDS: List[bytes] = [
    json.dumps(BASE).encode(), b'{"enabled": false}', b'{"enabled": true}', b"", b"{", b"[]",
    b"null", b'{"enabled": "true"}', b'{"enabled": null}', b'{"enabled": true} trailing',
    b"\xff\xfe", b'{"enabled": true, "enabled": false}', b'{"enabled": true, "etag": "\\ud800"}',
    json.dumps(BASE).replace("20000", "NaN").encode(), b'{"enabled": true, "poll_interval_s": 1e400}',
    b'{"enabled": true, "max_stack_depth": 99999999999999999999999}',
    b'{"enabled": true, "poll_interval_s": ' + b"9" * 5000 + b"}",
    b'{"enabled": true, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
]


class Raw:
    """A token written as is (NaN, 1e400, -0): JSON that json.dumps would not write."""

    def __init__(self, text: str, kind: str) -> None:
        self.text, self.kind = text, kind  # "nonjson" (NaN: invalid), "overflow" (1e400), "deep"


def dump(v: Any) -> str:
    """JSON text of v; a list of (key, value) pairs is an object with those keys (duplicates
    kept); Raw is written as is."""
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, tuple):  # ("obj", [(k, v), ...])
        return "{" + ", ".join(json.dumps(k) + ": " + dump(x) for k, x in v[1]) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dump(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False) if "\ud800" not in v else json.dumps(v)
    return json.dumps(v)


def _text(rng: random.Random) -> str:
    alphabet = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\x00", "\x7f", "é", "模", "😀",
                "\u2028", "\ufeff", "\ud800", "%", "&", "="]
    n = rng.choice([0, 1, 3, 10, 200, 5000])
    return "".join(rng.choice(alphabet) for _ in range(n))


def _number(rng: random.Random) -> Any:
    return rng.choice([
        0, -0.0, 1, -1, 5, 9.999, 10, 30.5, 60, 255.9, 256, 257, 300, 301, 599.5, 600, 601,
        1000, 9999, 10000, 12345.6, 999999.4, 1000001, 2 ** 31, 2 ** 53 + 1, 2 ** 63, 10 ** 30,
        -(10 ** 30), 1e12, -1e12, 1e308, -1e308, 1e-300, 5e-324, rng.uniform(-1e3, 1e6),
        rng.randint(-10 ** 6, 10 ** 7)])


def _junk(rng: random.Random, depth: int = 0) -> Any:
    k = rng.randrange(8 if depth < 4 else 5)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return _number(rng)
    if k == 3:
        return _text(rng)
    if k == 4:
        tok = rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
        return Raw(tok, "overflow" if tok[-1].isdigit() else "nonjson")
    if k == 5:
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    if k == 6:
        return ("obj", [(_text(rng)[:8], _junk(rng, depth + 1)) for _ in range(rng.randrange(4))])
    d = rng.choice([10, 30, 200])
    return Raw("[" * d + "]" * d, "deep")


def _wrong(rng: random.Random, want: str) -> Any:
    """A value of a type other than want ("bool", "str" or "num")."""
    options = [None, True, "60", "NaN", "", [], [1], ("obj", []), 60, 0]
    bad = [o for o in options if not _is(o, want)]
    return rng.choice(bad)


def _is(v: Any, want: str) -> bool:
    if want == "bool":
        return isinstance(v, bool)
    if want == "str":
        return isinstance(v, str)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def generate(rng: random.Random) -> Tuple[bytes, Optional[str], Any]:
    """One hostile body, an ETag header (or None) and its expectation: "invalid",
    "unknown", or ("valid", fields) with fields the parsed object (duplicates: last wins)."""
    pairs = list(BASE.items())
    rng.shuffle(pairs)
    overflow = False
    for _ in range(rng.randrange(1, 5)):
        op = rng.randrange(8)
        i = rng.randrange(len(pairs))
        key = pairs[i][0]
        want = "bool" if key == "enabled" else "str" if key in ("type", "etag") else "num"
        if op == 0:
            pairs.pop(i)
            if not pairs:
                pairs.append(("enabled", False))
        elif op == 1:
            pairs[i] = (key, _wrong(rng, want))
        elif op == 2 and want == "num":
            pairs[i] = (key, _number(rng))
        elif op == 2:
            pairs[i] = (key, rng.random() < 0.5 if want == "bool" else _text(rng))
        elif op == 3 and want == "num":
            tok = rng.choice(["NaN", "Infinity", "-Infinity", "nan", "1e400", "-1e400", "1E+999"])
            pairs[i] = (key, Raw(tok, "overflow" if tok[-1].isdigit() else "nonjson"))
        elif op == 4:
            pairs.insert(rng.randrange(len(pairs) + 1), (_text(rng)[:12] or "x", _junk(rng)))
        elif op == 5:  # a duplicate key
            pairs.insert(rng.randrange(len(pairs) + 1), (key, rng.choice([_junk(rng), pairs[i][1]])))
        elif op == 6:
            pairs[i] = (key, _junk(rng))
        else:
            pairs.append(("enabled", rng.random() < 0.5))
    body = dump(("obj", pairs))
    expect: Any = _expect(pairs)
    if isinstance(expect, tuple) and any(isinstance(v, Raw) and v.kind == "overflow"
                                         for k, v in pairs if k in NUMERIC):
        overflow = True
    # A header is decoded as ISO-8859-1 by http.client: never a surrogate.
    header = rng.choice([None, '"h1"', 'W/"h2"', " ", '"', _text(rng)[:40].replace("\ud800", "?")])
    mut = rng.randrange(10)
    if mut == 0 and len(body) > 1:
        body = body[:rng.randrange(1, len(body))]  # a strict prefix of an object: never JSON
        expect = "invalid"
    elif mut == 1:
        b = bytearray(body.encode("utf-8", "surrogatepass"))
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), header, "unknown"
    elif mut == 2:
        pos = rng.randrange(len(body) + 1)
        body = body[:pos] + rng.choice([",", "}", "{", "]", "\"", ":", "\\u", "\x00", " "]) + body[pos:]
        expect = "unknown"
    if overflow and expect != "invalid":
        expect = "unknown"  # 1e400: invalid or clamped, both safe (Node clamps, Python refuses)
    return body.encode("utf-8", "surrogatepass"), header, expect


def _expect(pairs: List[Tuple[str, Any]]) -> Any:
    if any(_has_raw(v, ("nonjson",)) for _, v in pairs):
        return "invalid"  # NaN anywhere, even under a key given again later
    obj = dict(pairs)  # last wins, as json.loads
    for v in obj.values():
        if _has_raw(v, ("deep",)):
            return "unknown"
    if not isinstance(obj.get("enabled", None), bool):
        return "invalid"
    for k in ("type", "etag"):
        if k in obj and not isinstance(obj[k], str):
            return "invalid"
        if k in obj and "\ud800" in obj[k]:
            return "invalid"  # a lone surrogate: not Unicode, cannot be sent back
    if obj.get("etag") and not _sendable(obj["etag"]):
        return "invalid"  # the server would refuse it in every later poll
    for k in NUMERIC:
        if k in obj and not (_is(obj[k], "num") or (isinstance(obj[k], Raw) and obj[k].kind == "overflow")):
            return "invalid"
    return ("valid", obj)


def _has_raw(v: Any, kinds: Tuple[str, ...]) -> bool:
    if isinstance(v, Raw):
        return v.kind in kinds
    if isinstance(v, list):
        return any(_has_raw(x, kinds) for x in v)
    if isinstance(v, tuple):
        return any(_has_raw(x, kinds) for _, x in v[1])
    return False


def _sendable(etag: str) -> bool:
    return len(etag) <= 256 and all(0x21 <= ord(c) <= 0x7E and c != '"' for c in etag)


def _strict_loads(body: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)
    return json.loads(body.decode("utf-8"), parse_constant=refuse)


def parse_once(body: bytes, header: Optional[str]) -> Any:
    """parse_config's answer: a Config or "invalid"; any other exception propagates."""
    try:
        return parse_config(body, header_etag=header)
    except ConfigError:
        return "invalid"


def check(body: bytes, header: Optional[str] = None, expect: Any = "unknown") -> None:
    """Raises AssertionError (or parse_config's unexpected exception) when an invariant or
    the expectation fails."""
    got = parse_once(body, header)
    assert parse_once(body, header) == got, "not deterministic"
    if expect == "invalid":
        assert got == "invalid", "accepted an invalid config: %r" % (got,)
    if got == "invalid":
        assert not isinstance(expect, tuple), "refused a valid config"
        return
    assert isinstance(got, Config)
    obj = _strict_loads(body)  # raises on a body that is not strict JSON
    assert isinstance(obj, dict) and obj.get("enabled") is got.enabled, "enabled %r" % (got.enabled,)
    for name, (default, lo, hi, integral) in NUMERIC.items():
        v = getattr(got, name)
        assert isinstance(v, int if integral else float) and lo <= v <= hi, "%s = %r" % (name, v)
        sent = obj.get(name, default)
        want = min(max(sent, lo), hi)
        assert abs(v - want) <= (1 if integral else 1e-9 * want), "%s: sent %r, got %r" % (name, sent, v)
    for s in (got.type, got.etag):
        assert s is None or isinstance(s, str) and s.encode("utf-8") is not None
    assert got.etag is None or _sendable(got.etag), "etag %r cannot be sent back" % (got.etag,)
    assert got.type == obj.get("type", "wall")
    if "etag" in obj:
        assert got.etag == (obj["etag"] or None)
    if isinstance(expect, tuple):
        assert obj == json.loads(dump(("obj", list(expect[1].items())))), "parsed differently"


def cases(seed: int, n: int):
    """n generated cases after the seeds, deterministic for a seed."""
    for b in SEEDS:
        yield b, None, "unknown"
    rng = random.Random(seed)
    for _ in range(n):
        yield generate(rng)


def main() -> int:
    """Time-budgeted loop (scripts/fuzz-sdk.sh without atheris): generated cases from a
    random seed for $ROOTTRACE_CONFIG_FUZZ_SECONDS; a failing body is saved in sdk/testdata/config_fuzz/."""
    seconds = float(os.environ.get("ROOTTRACE_CONFIG_FUZZ_SECONDS", "60"))
    seed = int(os.environ.get("ROOTTRACE_CONFIG_FUZZ_SEED") or random.randrange(2 ** 31))
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        for _ in range(256):
            body, header, expect = generate(rng)
            try:
                check(body, header, expect)
            except Exception as e:  # noqa: BLE001
                path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "testdata", "config_fuzz", "crash-seed%d-case%d" % (seed, n))
                with open(path, "wb") as f:
                    f.write(body)
                print("seed %d, case %d, header %r: %s: %s (body saved in %s)" % (
                    seed, n, header, type(e).__name__, e, path))
                return 1
            n += 1
    print("config fuzz (python): seed %d, cases: %d in %g s" % (seed, n, seconds))
    return 0
