"""Status: the `<state>[: <reason>]` string every config poll carries and status() shows
(DESIGN §5, docs/control-plane.md)."""
from __future__ import annotations

import re
from typing import Optional, Tuple

PROFILING = "profiling"
DISABLED = "disabled"
WAITING = "waiting"
UNAVAILABLE = "unavailable"
DECLINED = "declined"
ERROR = "error"

STATES = (PROFILING, DISABLED, WAITING, UNAVAILABLE, DECLINED, ERROR)

# Reasons are at most 200 printable ASCII characters.
REASON_MAX = 200

# The grammar, for tests and for anyone checking a status string.
STATUS_RE = re.compile(r"^(profiling|disabled|waiting|unavailable|declined|error)"
                       r"(: [\x20-\x7e]{1,200})?$")

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def clean_reason(reason: str) -> str:
    """The reason as printable ASCII (anything else becomes '?'), at most 200 characters."""
    r = _UNPRINTABLE.sub("?", str(reason)).strip()
    return r[:REASON_MAX].rstrip()


def split_status(status: str) -> Tuple[str, str]:
    """(state, reason) of a status string: the reason is the part after `<state>: `, or ""
    when there is none (docs/sdk/README.md, "One vocabulary")."""
    state, _, reason = status.partition(": ")
    return state, reason


def format_status(state: str, reason: Optional[str] = None) -> str:
    """`state` or `state: reason`, always within the grammar."""
    if state not in STATES:
        state = ERROR
    if reason:
        r = clean_reason(reason)
        if r:
            return "%s: %s" % (state, r)
    return state
