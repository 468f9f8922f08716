"""Config validation and clamping with the compiled limits (never overridden here)."""
import json

import pytest

from roottrace import config as cfgmod
from roottrace.config import DEFAULT_LIMITS, ConfigError, parse_config
from roottrace.status import STATUS_RE, clean_reason, format_status, split_status

FULL = {"enabled": True, "type": "wall", "sampling_interval_us": 20000,
        "upload_interval_s": 60, "max_stack_depth": 128, "poll_interval_s": 10, "etag": "e1"}


def parse(**overrides):
    c = dict(FULL)
    for k, v in overrides.items():
        if v is DELETE:
            c.pop(k)
        else:
            c[k] = v
    return parse_config(json.dumps(c).encode())


DELETE = object()


def test_compiled_bounds_are_the_documented_ones():
    # DESIGN §5 / docs/control-plane.md: Python floor 10 ms, upload 10-300 s, depth <= 256,
    # poll 1-600 s, upload <= 4 MiB.
    L = DEFAULT_LIMITS
    assert L.sampling_interval_min_us == 10_000
    assert (L.upload_interval_min_s, L.upload_interval_max_s) == (10, 300)
    assert L.stack_depth_max == 256
    assert (L.poll_interval_min_s, L.poll_interval_max_s) == (1, 600)
    assert L.upload_max_bytes == 4 * 1024 * 1024
    assert L.repoll_min_s == 1.0
    assert L.self_cost_factor == 100
    assert L.flush_timeout_s == 5.0
    # Each bound is written once, in Limits: no module constant repeats one.
    assert [n for n, v in vars(cfgmod).items()
            if n.isupper() and isinstance(v, (int, float))] == []


def test_valid_config():
    c = parse()
    assert (c.enabled, c.type, c.sampling_interval_us, c.upload_interval_s, c.max_stack_depth,
            c.poll_interval_s, c.etag) == (True, "wall", 20000, 60.0, 128, 10.0, "e1")


@pytest.mark.parametrize("field,value,expected", [
    ("sampling_interval_us", 0, 10_000),
    ("sampling_interval_us", -5, 10_000),
    ("sampling_interval_us", 9_999, 10_000),
    ("sampling_interval_us", 10_000, 10_000),
    ("sampling_interval_us", 15_000.4, 15_000),
    ("sampling_interval_us", 1e12, 1_000_000),
    ("sampling_interval_us", 10 ** 30, 1_000_000),
    ("sampling_interval_us", -1e300, 10_000),
    ("upload_interval_s", 0, 10),
    ("upload_interval_s", -1, 10),
    ("upload_interval_s", 9.9, 10),
    ("upload_interval_s", 30, 30),
    ("upload_interval_s", 1e9, 300),
    ("max_stack_depth", 0, 1),
    ("max_stack_depth", -3, 1),
    ("max_stack_depth", 64, 64),
    ("max_stack_depth", 257, 256),
    ("max_stack_depth", 10 ** 9, 256),
    ("poll_interval_s", 0, 1),
    ("poll_interval_s", 0.001, 1),
    ("poll_interval_s", -10, 1),
    ("poll_interval_s", 30, 30),
    ("poll_interval_s", 601, 600),
    ("poll_interval_s", 1e308, 600),
])
def test_out_of_range_numbers_are_clamped(field, value, expected):
    assert getattr(parse(**{field: value}), field) == expected


@pytest.mark.parametrize("body", [
    b'{"enabled": true, "sampling_interval_us": NaN}',
    b'{"enabled": true, "sampling_interval_us": Infinity}',
    b'{"enabled": true, "upload_interval_s": -Infinity}',
    b'{"enabled": true, "poll_interval_s": 1e400}',
    b'{"enabled": true, "sampling_interval_us": "10000"}',
    b'{"enabled": true, "sampling_interval_us": "fast"}',
    b'{"enabled": true, "sampling_interval_us": null}',
    b'{"enabled": true, "sampling_interval_us": true}',
    b'{"enabled": true, "sampling_interval_us": [10000]}',
    b'{"enabled": true, "max_stack_depth": {}}',
    b'{"enabled": true, "upload_interval_s": false}',
    b'{"enabled": "true"}',
    b'{"enabled": 1}',
    b'{"enabled": null}',
    b'{"sampling_interval_us": 10000}',
    b'{"enabled": true, "type": 5}',
    b'{"enabled": true, "type": null}',
    b'{"enabled": true, "etag": 7}',
    b'{"enabled": true, "etag": null}',  # fuzzing: null is a wrong type, as in the other SDKs
    b'{"enabled": true, "etag": "\\ud800"}',  # fuzzing: a lone surrogate, unsendable in a query
    b'{"enabled": true, "type": "wall\\udfff"}',
    # An etag the server would refuse in every later poll's query (414 past ~32 KB).
    b'{"enabled": true, "etag": "' + b'a' * 257 + b'"}',
    b'{"enabled": true, "etag": "a b"}',
    b'[{"enabled": true}]',
    b'null',
    b'true',
    b'"enabled"',
    b'{"enabled": true',
    b'{"enabled": true,}',
    b'',
    b'   ',
    b'\xff\xfe{"enabled": true}',
    b'{"enabled": true, "x": "\xc3"}',
    b'[' * 100000 + b']' * 100000,
    b'{"enabled": true, "pad": "' + b'a' * (64 * 1024) + b'"}',
], ids=lambda b: b[:40].decode("latin-1"))
def test_invalid_configs_are_invalid_as_a_whole(body):
    with pytest.raises(ConfigError):
        parse_config(body)


def test_unknown_type_is_a_request_not_malformed():
    assert parse(type="heap").type == "heap"
    assert parse(type="cpu").type == "cpu"


def test_missing_optional_fields_take_python_defaults():
    c = parse_config(b'{"enabled": false}')
    assert (c.enabled, c.type, c.sampling_interval_us, c.upload_interval_s, c.max_stack_depth,
            c.poll_interval_s, c.etag) == (False, "wall", 20000, 60.0, 256, 10.0, None)


def test_unknown_fields_ignored_and_header_etag_used():
    c = parse_config(b'{"enabled": true, "future": [1, 2]}', header_etag='"h1"')
    assert c.enabled and c.etag == "h1"
    assert parse_config(b'{"enabled": true}', header_etag='W/"h2"').etag == "h2"
    c = parse_config(b'{"enabled": true, "etag": "b1"}', header_etag='"h1"')
    assert c.etag == "b1"
    # A malformed header etag is ignored; 256 characters are kept.
    assert parse_config(b'{"enabled": true}', header_etag='"a b"').etag is None
    assert parse_config(b'{"enabled": true, "etag": "' + b'f' * 256 + b'"}').etag == "f" * 256


@pytest.mark.parametrize("state,reason,expected", [
    ("profiling", None, "profiling"),
    ("disabled", "", "disabled"),
    ("waiting", "no config yet", "waiting: no config yet"),
    ("error", "caf\u00e9\nbad\x00", "error: caf??bad?"),
    ("bogus", "x", "error: x"),
])
def test_status_grammar(state, reason, expected):
    s = format_status(state, reason)
    assert STATUS_RE.match(s), s
    assert s == expected


@pytest.mark.parametrize("status,state,reason", [
    ("profiling", "profiling", ""),
    ("disabled", "disabled", ""),
    ("disabled: not started", "disabled", "not started"),
    ("error: invalid config: etag: bad", "error", "invalid config: etag: bad"),
    ("waiting: no config yet (config poll failed: timed out)", "waiting",
     "no config yet (config poll failed: timed out)"),
])
def test_split_status_gives_state_and_reason(status, state, reason):
    assert split_status(status) == (state, reason)
    assert format_status(state, reason) == status


def test_status_reason_at_most_200_printable():
    s = format_status("error", "x" * 500 + "\u2603")
    assert STATUS_RE.match(s)
    assert len(s) == len("error: ") + 200
    assert clean_reason("\u2603" * 300) == "?" * 200


def test_a_5000_digit_number_is_invalid_or_clamped():
    # Python 3.11 (and security releases of 3.8-3.10) refuse to parse more than 4300 digits.
    try:
        c = parse_config(b'{"enabled": true, "poll_interval_s": ' + b'9' * 5000 + b'}')
    except ConfigError:
        return
    assert c.poll_interval_s == 600
