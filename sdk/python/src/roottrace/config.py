"""Config: the bounds compiled into the SDK, and validation and clamping of what the
control plane sends (DESIGN.md §5, docs/control-plane.md)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Optional

# ---------------------------------------------------------------------------------------
# Clamp bounds. Whatever the server says, these hold: a spoofed or broken control plane
# cannot make the SDK spin, flood the network or grow without bound.
# ---------------------------------------------------------------------------------------

# Sampling interval floor: each sample walks every thread's stack holding the GIL
# (~0.3 us a frame), so Python's floor is 10 ms (100 Hz), as DESIGN §5 fixes it.
SAMPLING_INTERVAL_MIN_US = 10_000
# Sampling interval ceiling (our choice, DESIGN is silent): one sample a second is the
# coarsest rate that still fills a 10 s profile; 1e12 from the server means "slow", not "off".
SAMPLING_INTERVAL_MAX_US = 1_000_000
# Upload interval 10-300 s: fewer than one upload per 10 s per instance keeps the server's
# ingest load bounded; more than 5 min between uploads would lose too much on a crash.
UPLOAD_INTERVAL_MIN_S = 10.0
UPLOAD_INTERVAL_MAX_S = 300.0
# Stack depth at most 256 frames (leaf side kept): bounds walk time and profile size.
STACK_DEPTH_MIN = 1
STACK_DEPTH_MAX = 256
# Poll interval 1-600 s: at most one config request a second; a config still arrives at
# least every 10 minutes, and the 3-interval fail-closed rule then still acts.
POLL_INTERVAL_MIN_S = 1.0
POLL_INTERVAL_MAX_S = 600.0
# Upload body at most 4 MiB compressed: the server takes 16 MiB, an SDK stays well under.
UPLOAD_MAX_BYTES = 4 * 1024 * 1024
# A config is ~200 bytes; an answer larger than this is refused without reading it all.
CONFIG_MAX_BYTES = 64 * 1024
# An etag is sent back in every poll's query: at most this many characters, each printable
# ASCII but '"' (RFC 9110's etagc without obs-text). The server's are 64 hex digits; a
# longer one (up to the 64 KiB body) makes the server refuse every later poll with 414, and
# the SDK would stay off for good.
ETAG_MAX_LEN = 256
# After a held poll returns because of a change, poll again at once, but never more often
# than once a second (docs/control-plane.md).
REPOLL_MIN_S = 1.0
# The server holds a poll at most 30 s; we ask for the poll interval, at most this.
POLL_WAIT_MAX_S = 30
# A poll gets `wait` plus this long to answer in full (headers and body) before it is
# abandoned; a slow drip cannot hold the poller longer.
REQUEST_SLACK_S = 10.0
# Uploads: connect timeout and whole-request deadline.
CONNECT_TIMEOUT_S = 5.0
UPLOAD_DEADLINE_S = 30.0
# Distinct stacks in one profile: bounds the sampler's memory (a stack is a tuple of up
# to 256 shared names, ~2 KB); stacks beyond it are counted under one "(trimmed)" stack.
MAX_STACKS_PER_PROFILE = 20_000
# Profiles kept while the server is away (oldest dropped first): bounds memory.
QUEUE_MAX_PROFILES = 8
# Retry backoff for 5xx and network errors: doubles from the first to the last value.
RETRY_BACKOFF_MIN_S = 1.0
RETRY_BACKOFF_MAX_S = 60.0
# Self-cost budget: interval >= this many times the median stack walk (walking < 1 % of
# one core, DESIGN §5), over this many recent walks.
SELF_COST_FACTOR = 100
SELF_COST_WINDOW = 15
# Flush on stop() and at exit waits at most this long (DESIGN §5).
FLUSH_TIMEOUT_S = 5.0

# Defaults the server would send for runtime=python, used for fields a config leaves out.
DEFAULT_SAMPLING_INTERVAL_US = 20_000
DEFAULT_UPLOAD_INTERVAL_S = 60.0
DEFAULT_POLL_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Limits:
    """The bounds above as one value. Tests may build a copy with shorter bounds
    (Limits.for_tests); the SDK itself always uses DEFAULT_LIMITS."""

    sampling_interval_min_us: int = SAMPLING_INTERVAL_MIN_US  # floor of the interval
    sampling_interval_max_us: int = SAMPLING_INTERVAL_MAX_US  # ceiling of the interval
    upload_interval_min_s: float = UPLOAD_INTERVAL_MIN_S  # shortest profile
    upload_interval_max_s: float = UPLOAD_INTERVAL_MAX_S  # longest profile
    stack_depth_min: int = STACK_DEPTH_MIN  # fewest frames kept
    stack_depth_max: int = STACK_DEPTH_MAX  # most frames kept (leaf side)
    poll_interval_min_s: float = POLL_INTERVAL_MIN_S  # most frequent poll
    poll_interval_max_s: float = POLL_INTERVAL_MAX_S  # least frequent poll
    upload_max_bytes: int = UPLOAD_MAX_BYTES  # compressed upload size
    config_max_bytes: int = CONFIG_MAX_BYTES  # config answer size
    repoll_min_s: float = REPOLL_MIN_S  # gap after a change-return
    poll_wait_max_s: int = POLL_WAIT_MAX_S  # longest held poll asked for
    request_slack_s: float = REQUEST_SLACK_S  # poll deadline beyond `wait`
    connect_timeout_s: float = CONNECT_TIMEOUT_S  # TCP/TLS connect
    upload_deadline_s: float = UPLOAD_DEADLINE_S  # whole upload request
    max_stacks_per_profile: int = MAX_STACKS_PER_PROFILE  # distinct stacks in a profile
    queue_max_profiles: int = QUEUE_MAX_PROFILES  # queued profiles
    retry_backoff_min_s: float = RETRY_BACKOFF_MIN_S  # first retry delay
    retry_backoff_max_s: float = RETRY_BACKOFF_MAX_S  # longest retry delay
    self_cost_factor: int = SELF_COST_FACTOR  # interval / median walk
    self_cost_window: int = SELF_COST_WINDOW  # walks in the median
    flush_timeout_s: float = FLUSH_TIMEOUT_S  # longest flush
    default_sampling_interval_us: int = DEFAULT_SAMPLING_INTERVAL_US
    default_upload_interval_s: float = DEFAULT_UPLOAD_INTERVAL_S
    default_poll_interval_s: float = DEFAULT_POLL_INTERVAL_S

    def override(self, **changes: Any) -> "Limits":
        """A copy with some bounds changed (tests only)."""
        return replace(self, **changes)


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


def valid_etag(v: str) -> bool:
    """True when v can be sent back as a poll's etag (see ETAG_MAX_LEN)."""
    return len(v) <= ETAG_MAX_LEN and all("!" <= ch <= "~" and ch != '"' for ch in v)


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
    etag = _string(obj, "etag", header if header and valid_etag(header) else None)
    if etag and not valid_etag(etag):
        raise ConfigError("etag is not at most %d printable ASCII characters" % ETAG_MAX_LEN)
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
