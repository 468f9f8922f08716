"""Uploader: a bounded queue of finished profiles and the thread that POSTs them to
/api/v1/profiles (DESIGN §4; answers per docs/control-plane.md)."""
from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import encoder
from ._http import Aborted, Client, HTTPError
from .sampler import TRIMMED

log = logging.getLogger("roottrace")

# What an upload attempt came to.
SENT, DROPPED, REFUSED, RETRY = "sent", "dropped", "refused", "retry"


@dataclass
class Profile:
    """A finished profile waiting to be uploaded."""

    profile_id: str  # UUID, the same on every retry
    instance: str  # the instance it was taken in
    time_nanos: int  # start, Unix ns
    duration_nanos: int  # length, ns
    period_ns: int  # effective sampling interval, ns
    samples: List[Tuple[List[str], int, int]]  # (root-first stack, count, wall ns)
    process_cpu_ns: Optional[int]  # process CPU over the profile, ns
    body: Optional[bytes] = field(default=None, repr=False)  # gzip pprof, made once


def build_body(p: Profile, max_bytes: int) -> bytes:
    """The gzip pprof body, at most max_bytes: when too large, the lightest stacks are
    folded into one TRIMMED stack (counts and values kept) until it fits. Samples come
    heaviest first (Aggregate.samples)."""
    def make(samples) -> bytes:
        return encoder.compress(encoder.encode("wall", p.time_nanos, p.duration_nanos,
                                               p.period_ns, samples))

    body = make(p.samples)
    base = [s for s in p.samples if s[0] != [TRIMMED]]
    extra = [s for s in p.samples if s[0] == [TRIMMED]]
    keep = len(base)
    while len(body) > max_bytes and keep > 0:
        keep //= 2
        rest = base[keep:] + extra
        body = make(base[:keep] + [([TRIMMED], sum(s[1] for s in rest),
                                    sum(s[2] for s in rest))])
    return body


class Uploader:
    """The queue and the upload of one profile. The agent's upload thread calls
    upload_one(); anyone may call put()."""

    def __init__(self, client: Client, params: Callable[[], Dict[str, object]],
                 max_profiles: int, max_bytes: int, deadline_s: float, connect_timeout_s: float):
        self.client = client  # HTTP client for the server
        self.params = params  # common query parameters (service, runtime, ...)
        self.max_profiles = max_profiles  # queue bound
        self.max_bytes = max_bytes  # body bound
        self.deadline_s = deadline_s  # whole-request deadline
        self.connect_timeout_s = connect_timeout_s  # connect timeout
        self.queue: deque = deque()  # Profiles, oldest first
        self.cond = threading.Condition()  # guards queue; notified on put
        self.sent = 0  # profiles stored by the server
        self.dropped = 0  # profiles given up (queue full, 4xx, 409)
        self.last_error: Optional[str] = None  # last failure, for status

    def put(self, p: Profile) -> None:
        """Queues a profile, dropping the oldest when the queue is full."""
        with self.cond:
            while len(self.queue) >= self.max_profiles:
                self.queue.popleft()
                self.dropped += 1
            self.queue.append(p)
            self.cond.notify_all()

    def pending(self) -> int:
        with self.cond:
            return len(self.queue)

    def wait_for_work(self, timeout: float) -> bool:
        with self.cond:
            if not self.queue:
                self.cond.wait(timeout)
            return bool(self.queue)

    def upload_one(self) -> Optional[str]:
        """Uploads the oldest queued profile: SENT, DROPPED or REFUSED remove it from the
        queue; RETRY leaves it (5xx, network). None when the queue is empty."""
        with self.cond:
            if not self.queue:
                return None
            p = self.queue[0]
        if p.body is None:
            p.body = build_body(p, self.max_bytes)
        params = dict(self.params())
        params.update(instance=p.instance, profile_id=p.profile_id,
                      process_cpu_ns=p.process_cpu_ns)
        try:
            r = self.client.request("POST", "/api/v1/profiles", params, body=p.body,
                                    headers={"Content-Type": "application/octet-stream"},
                                    deadline_s=self.deadline_s,
                                    connect_timeout_s=self.connect_timeout_s)
        except Aborted:
            # stop() gave up waiting for this upload (its flush deadline passed).
            self.last_error = "upload abandoned: stop() flush deadline passed"
            return RETRY
        except HTTPError as e:
            self.last_error = "upload failed: %s" % e
            return RETRY
        if r.status in (200, 201):
            outcome = SENT
        elif r.status == 409:
            outcome = REFUSED
        elif 400 <= r.status < 500:
            outcome = DROPPED
        else:
            self.last_error = "upload answered %d" % r.status
            return RETRY
        if outcome != SENT:
            self.last_error = "upload answered %d: %s" % (r.status, r.body[:120].decode("utf-8", "replace"))
        with self.cond:
            if self.queue and self.queue[0] is p:
                self.queue.popleft()
            if outcome == SENT:
                self.sent += 1
            else:
                self.dropped += 1
        return outcome

    def clear(self) -> None:
        with self.cond:
            self.dropped += len(self.queue)
            self.queue.clear()


def backoff(attempt: int, lo: float, hi: float) -> float:
    """Delay before retry `attempt` (1, 2, ...): doubling from lo, at most hi, +-20 % jitter."""
    d = min(hi, lo * (2 ** min(attempt - 1, 30)))
    return min(hi, d * random.uniform(0.8, 1.2))
