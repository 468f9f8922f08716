"""Sampler: walks every application thread's stack from sys._current_frames() on a
daemon thread, naming frames `module.qualname` (DESIGN §3), weighting each sample by the
wall time since the previous one, and keeping the walk under its self-cost budget."""
from __future__ import annotations

import sys
import time
from collections import deque
from typing import Dict, Iterable, List, Optional, Tuple

# Frame names for code objects, by id(code); the entry holds the code object itself so
# the id cannot be reused while it is cached. Cleared when it grows past the bound.
_NAME_CACHE_MAX = 20_000
# The synthetic root frame of a stack cut at the depth limit (the server uses the same).
TRUNCATED = "(truncated)"
# The one stack that counts samples of new stacks once a profile holds its maximum.
TRIMMED = "(trimmed)"

_HAS_QUALNAME = sys.version_info >= (3, 11)

# The walk's cost is the sampler thread's CPU time: time spent waiting for the GIL or
# descheduled by the OS costs no CPU and must not lengthen the interval.
try:
    time.thread_time_ns()
    _walk_clock = time.thread_time_ns
except (AttributeError, OSError):  # pragma: no cover - platforms without a thread clock
    _walk_clock = time.perf_counter_ns

# A stack as the sampler keys it: frame names, leaf first.
Stack = Tuple[str, ...]


def code_name(module: object, code) -> str:
    """`module.function` for a code object run with globals whose __name__ is `module`:
    co_qualname on 3.11+ (`shop.checkout.Cart.total`), co_name before (no class)."""
    func = getattr(code, "co_qualname", None) if _HAS_QUALNAME else None
    if not isinstance(func, str):
        func = code.co_name
    mod = module if isinstance(module, str) and module else "<unknown>"
    return mod + "." + func


def frame_name(frame) -> str:
    """The name of one frame (DESIGN §3); no line number."""
    g = frame.f_globals
    return code_name(g.get("__name__") if isinstance(g, dict) else None, frame.f_code)


class Walker:
    """Turns frames into stacks of names, caching names per code object."""

    def __init__(self) -> None:
        self._cache: Dict[int, tuple] = {}  # id(code) -> (code, module, name)

    def stack(self, frame, depth: int) -> Stack:
        """The frame's stack, leaf first, at most `depth` frames: a deeper stack keeps
        its leaf-side depth-1 frames under a TRUNCATED root."""
        cache = self._cache
        names: List[str] = []
        n = 0
        f = frame
        while f is not None:
            if n >= depth:
                names[-1] = TRUNCATED
                break
            code = f.f_code
            mod = f.f_globals.get("__name__")
            e = cache.get(id(code))
            if e is None or e[0] is not code or (e[1] is not mod and e[1] != mod):
                if len(cache) >= _NAME_CACHE_MAX:
                    cache.clear()
                e = (code, mod, code_name(mod, code))
                cache[id(code)] = e
            names.append(e[2])
            n += 1
            f = f.f_back
        return tuple(names)


class Aggregate:
    """Samples of one profile in the making: count and wall ns per stack, at most
    max_stacks distinct stacks (later new stacks count under TRIMMED)."""

    def __init__(self, max_stacks: int = 20_000) -> None:
        self.stacks: Dict[Stack, List[int]] = {}  # leaf-first stack -> [count, value_ns]
        self.max_stacks = max_stacks  # bound on len(stacks)

    def add(self, stack: Stack, weight_ns: int) -> None:
        e = self.stacks.get(stack)
        if e is None:
            if len(self.stacks) >= self.max_stacks:
                stack = (TRIMMED,)
                e = self.stacks.get(stack)
            if e is None:
                self.stacks[stack] = [1, weight_ns]
                return
            e[0] += 1
            e[1] += weight_ns
        else:
            e[0] += 1
            e[1] += weight_ns

    def samples(self) -> List[Tuple[List[str], int, int]]:
        """(root-first frames, count, value_ns), heaviest first (ties by stack)."""
        out = [(list(reversed(k)), v[0], v[1]) for k, v in self.stacks.items()]
        out.sort(key=lambda s: (-s[2], s[0]))
        return out


class Sampler:
    """One sample of all threads, and the self-cost bookkeeping. Not thread-safe: only
    the sampler thread calls sample()."""

    def __init__(self, factor: int, window: int) -> None:
        self.walker = Walker()  # frame naming
        self.factor = factor  # interval >= factor x median walk
        self.walks: deque = deque(maxlen=window)  # recent walk costs, thread CPU ns
        self.samples_taken = 0  # samples since start (tests and status)
        self.walk_cost_total_ns = 0  # sum of all walk costs, thread CPU ns
        self.sample_times: deque = deque(maxlen=4096)  # recent sample starts, monotonic ns

    def sample(self, agg: Aggregate, weight_ns: int, exclude: Iterable[int], depth: int,
               now_ns: Optional[int] = None) -> int:
        """Adds one sample of every thread not in `exclude` to `agg`, each weighted
        `weight_ns`. Returns the walk's cost in ns of the sampler thread's CPU time."""
        c0 = _walk_clock()
        frames = sys._current_frames()
        try:
            stack = self.walker.stack
            add = agg.add
            for ident, frame in frames.items():
                if ident in exclude:
                    continue
                add(stack(frame, depth), weight_ns)
        finally:
            del frames
        cost = _walk_clock() - c0
        self.walks.append(cost)
        self.walk_cost_total_ns += cost
        self.samples_taken += 1
        self.sample_times.append(time.monotonic_ns() if now_ns is None else now_ns)
        return cost

    def median_walk_ns(self) -> int:
        """Median of the recent walk costs (0 before the first walk)."""
        w = sorted(self.walks)
        return w[len(w) // 2] if w else 0

    def effective_interval_ns(self, configured_ns: int) -> int:
        """The configured interval, lengthened so walking stays under 1/factor of a core
        (DESIGN §5 self-cost budget)."""
        return max(configured_ns, self.factor * self.median_walk_ns())


def available() -> Optional[str]:
    """None when this interpreter can be sampled, else why not."""
    if not hasattr(sys, "_current_frames"):
        return "sys._current_frames not available in this interpreter"
    return None
