"""Service and instance names as the server accepts them: 1-200 bytes of valid UTF-8, no
control characters, no '/'. The server answers 400 to anything else, so a name it would
refuse is refused here instead of leaving the instance `waiting` forever."""
from __future__ import annotations

from typing import Optional

# The server's limit on service and instance names, in UTF-8 bytes.
NAME_MAX_BYTES = 200


def _is_control(ch: str) -> bool:
    """A control character as the server counts them: C0 (tab included) and DEL. (C1,
    U+0080-U+009F, is accepted by the server, so it is here.)"""
    return ch < "\x20" or ch == "\x7f"


def name_problem(name: object) -> Optional[str]:
    """None when the server accepts `name`, else why not (printable ASCII, for a status)."""
    if not isinstance(name, str):
        return "not a string"
    if name == "":
        return "empty"
    try:
        n = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid UTF-8: lone surrogate"
    if n > NAME_MAX_BYTES:
        return "%d bytes, at most %d" % (n, NAME_MAX_BYTES)
    for ch in name:
        if ch == "/":
            return "contains '/'"
        if _is_control(ch):
            return "control character U+%04X" % ord(ch)
    return None


def safe_name_part(s: str, max_bytes: int) -> str:
    """`s` made acceptable inside a name (for the generated instance id): control
    characters and '/' become '-', cut to at most max_bytes of UTF-8 on a character
    boundary."""
    out = "".join("-" if ch == "/" or _is_control(ch) or "\ud800" <= ch <= "\udfff" else ch
                  for ch in s)
    b = out.encode("utf-8")[:max_bytes]
    return b.decode("utf-8", "ignore")
