"""Config: the bounds compiled into the SDK, and validation and clamping of what the
control plane sends (DESIGN.md §5, docs/control-plane.md)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Optional


@dataclass(frozen=True)
class Limits:
    """The clamp bounds, and the timings that depend on them. Whatever the server says,
    these hold: a spoofed or broken control plane cannot make the SDK spin, flood the
    network or grow without bound. Each bound is written once, here, with why it is what
    it is; the SDK itself always uses DEFAULT_LIMITS, tests may build a copy with shorter
    bounds (DEFAULT_LIMITS.override)."""

    # Sampling interval floor: each sample walks every thread's stack holding the GIL
    # (~0.3 us a frame), so Python's floor is 10 ms (100 Hz), as DESIGN §5 fixes it.
    sampling_interval_min_us: int = 10_000
    # Sampling interval ceiling (our choice, DESIGN is silent): one sample a second is the
    # coarsest rate that still fills a 10 s profile; 1e12 from the server means "slow",
    # not "off".
    sampling_interval_max_us: int = 1_000_000
    # Upload interval 10-300 s: fewer than one upload per 10 s per instance keeps the
    # server's ingest load bounded; more than 5 min between uploads would lose too much on
    # a crash.
    upload_interval_min_s: float = 10.0
    upload_interval_max_s: float = 300.0
    # Stack depth at most 256 frames (leaf side kept): bounds walk time and profile size.
    stack_depth_min: int = 1
    stack_depth_max: int = 256
    # Poll interval 1-600 s: at most one config request a second; a config still arrives
    # at least every 10 minutes, and the 3-interval fail-closed rule then still acts.
    poll_interval_min_s: float = 1.0
    poll_interval_max_s: float = 600.0
    # Upload body at most 4 MiB compressed: the server takes 16 MiB, an SDK stays well
    # under.
    upload_max_bytes: int = 4 * 1024 * 1024
    # A config is ~200 bytes; an answer larger than this is refused without reading it all.
    config_max_bytes: int = 64 * 1024
    # An etag is sent back in every poll's query: at most this many characters, each
    # printable ASCII but '"' (RFC 9110's etagc without obs-text). The server's are 64 hex
    # digits; a longer one (up to the 64 KiB body) makes the server refuse every later poll
    # with 414, and the SDK would stay off for good.
    etag_max_len: int = 256
    # After a held poll returns because of a change, poll again at once, but never more
    # often than once a second (docs/control-plane.md).
    repoll_min_s: float = 1.0
    # The server holds a poll at most 30 s; we ask for the poll interval, at most this.
    poll_wait_max_s: int = 30
    # A poll gets `wait` plus this long to answer in full (headers and body) before it is
    # abandoned; a slow drip cannot hold the poller longer.
    request_slack_s: float = 10.0
    # Uploads: TCP/TLS connect timeout and whole-request deadline.
    connect_timeout_s: float = 5.0
    upload_deadline_s: float = 30.0
    # Distinct stacks in one profile: bounds the sampler's memory (a stack is a tuple of up
    # to 256 shared names, ~2 KB); stacks beyond it are counted under one "(trimmed)" stack.
    max_stacks_per_profile: int = 20_000
    # Profiles kept while the server is away (oldest dropped first): bounds memory.
    queue_max_profiles: int = 8
    # Retry backoff for 5xx and network errors: doubles from the first to the last value.
    retry_backoff_min_s: float = 1.0
    retry_backoff_max_s: float = 60.0
    # Self-cost budget: interval >= this many times the median stack walk (walking < 1 % of
    # one core, DESIGN §5), over this many recent walks.
    self_cost_factor: int = 100
    self_cost_window: int = 15
    # Flush on stop() and at exit waits at most this long (DESIGN §5).
    flush_timeout_s: float = 5.0
    # Defaults the server would send for runtime=python, for fields a config leaves out.
    default_sampling_interval_us: int = 20_000
    default_upload_interval_s: float = 60.0
    default_poll_interval_s: float = 10.0

    def override(self, **changes: Any) -> "Limits":
        """A copy with some bounds changed (tests only)."""
        return replace(self, **changes)


# The compiled bounds: the only Limits the SDK itself uses.
DEFAULT_LIMITS = Limits()


class ConfigError(ValueError):
    """A config answer that is invalid as a whole (wrong type, NaN, malformed JSON)."""


@dataclass(frozen=True)
class Config:
    """A valid, clamped config from the control plane."""

    enabled: bool  # profiling on for this service
    type: str  # the profile type the operator asked for ("cpu", "wall", ...)
    sampling_interval_us: int  # clamped sampling interval
    upload_interval_s: float  # clamped upload interval (profile length)
    max_stack_depth: int  # clamped stack depth
    poll_interval_s: float  # clamped poll interval
    etag: Optional[str]  # the config's version, sent back on the next poll


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN, Infinity and -Infinity; JSON does not.
    raise ConfigError(f"non-JSON number {name}")


def _number(obj: dict, key: str, default: float, lo: float, hi: float) -> float:
    """The field clamped to [lo, hi]; default when absent; ConfigError on a wrong type."""
    if key not in obj:
        return min(max(default, lo), hi)
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{key} is not a number")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{key} is not finite")
    return min(max(v, lo), hi)


def _string(obj: dict, key: str, default: Optional[str]) -> Optional[str]:
    """The field as a string; default when absent; ConfigError on a wrong type (null
    included) or on a lone surrogate ("\\ud800"), which could not be sent back in a query."""
    if key not in obj:
        return default
    v = obj[key]
    if not isinstance(v, str):
        raise ConfigError(f"{key} is not a string")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{key} is not valid Unicode (a lone surrogate)") from None
    return v


def valid_etag(v: str, max_len: int) -> bool:
    """True when v can be sent back as a poll's etag: at most max_len printable ASCII
    characters but '"' (see Limits.etag_max_len)."""
    return len(v) <= max_len and all("!" <= ch <= "~" and ch != '"' for ch in v)


def _unquote_etag(v: Optional[str]) -> Optional[str]:
    """An ETag header's opaque value: `W/"abc"` and `"abc"` give `abc` (the body field,
    which is preferred, carries it unquoted)."""
    if v is None:
        return None
    v = v.strip()
    if v.startswith("W/"):
        v = v[2:]
    if len(v) >= 2 and v[0] == v[-1] == '"':
        v = v[1:-1]
    return v


def parse_config(body: bytes, limits: Limits = DEFAULT_LIMITS, header_etag: Optional[str] = None) -> Config:
    """Validates and clamps a config answer (a JSON object). Out-of-range numbers are
    clamped to the nearest bound; a wrong type, NaN/Infinity, or malformed JSON raises
    ConfigError: the whole config is then invalid (DESIGN §5)."""
    if len(body) > limits.config_max_bytes:
        raise ConfigError("config larger than %d bytes" % limits.config_max_bytes)
    try:
        text = body.decode("utf-8")
        obj = json.loads(text, parse_constant=_reject_constant)
    except ConfigError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ConfigError("malformed JSON: %s" % (str(e)[:80],)) from None
    if not isinstance(obj, dict):
        raise ConfigError("config is not a JSON object")
    if "enabled" not in obj:
        raise ConfigError("enabled is missing")
    enabled = obj["enabled"]
    if not isinstance(enabled, bool):
        raise ConfigError("enabled is not a boolean")
    ptype = _string(obj, "type", "wall")
    header = _unquote_etag(header_etag)
    max_len = limits.etag_max_len
    etag = _string(obj, "etag", header if header and valid_etag(header, max_len) else None)
    if etag and not valid_etag(etag, max_len):
        raise ConfigError("etag is not at most %d printable ASCII characters" % max_len)
    interval = _number(obj, "sampling_interval_us", limits.default_sampling_interval_us,
                       limits.sampling_interval_min_us, limits.sampling_interval_max_us)
    upload = _number(obj, "upload_interval_s", limits.default_upload_interval_s,
                     limits.upload_interval_min_s, limits.upload_interval_max_s)
    depth = _number(obj, "max_stack_depth", limits.stack_depth_max,
                    limits.stack_depth_min, limits.stack_depth_max)
    poll = _number(obj, "poll_interval_s", limits.default_poll_interval_s,
                   limits.poll_interval_min_s, limits.poll_interval_max_s)
    return Config(enabled=enabled, type=ptype, sampling_interval_us=int(round(interval)),
                  upload_interval_s=float(upload), max_stack_depth=int(depth),
                  poll_interval_s=float(poll), etag=etag or None)
