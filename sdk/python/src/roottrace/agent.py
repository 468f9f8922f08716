"""Agent: one running SDK instance. Three daemon threads (config poller, sampler,
uploader) around a control state that fails closed (DESIGN §5)."""
from __future__ import annotations

import json
import logging
import os
import platform
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from . import status as st
from ._http import Aborted, BodyTooLarge, Client, HTTPError
from .config import DEFAULT_LIMITS, Config, ConfigError, Limits, parse_config
from .names import NAME_MAX_BYTES, name_problem, safe_name_part
from .sampler import Aggregate, Sampler, available
from .uploader import REFUSED, RETRY, Profile, Uploader, backoff

log = logging.getLogger("roottrace")

SDK_VERSION = "0.1.0"
RUNTIME = "python"
# The type a stack-walking Python SDK produces: wall clock (DESIGN §2).
PROFILE_TYPE = "wall"
# Fail closed when no valid config (200 or 304) has arrived for this many poll intervals.
STALE_POLLS = 3
# How often an idle (not profiling) sampler thread looks at the control state anyway.
IDLE_CHECK_S = 0.5
# Waits between samples up to this long use time.sleep (a timed Event wait costs twice the
# CPU per wake-up); a stop or a config change is then seen at most this late.
SHORT_SLEEP_NS = 50_000_000


def make_instance_id() -> str:
    """`<hostname>-<pid>-<4 random hex>` (DESIGN §5)."""
    try:
        host = socket.gethostname() or "localhost"
    except OSError:
        host = "localhost"
    # The id must be a name the server accepts (names.py): the suffix takes at most 30
    # bytes, the host name the rest.
    host = safe_name_part(host, NAME_MAX_BYTES - 30) or "localhost"
    return "%s-%d-%s" % (host, os.getpid(), secrets.token_hex(2))


def server_message(body: bytes) -> Optional[str]:
    """The `message` of the server's JSON error answer (`{"error", "message"}`), or None."""
    try:
        m = json.loads(body.decode("utf-8")).get("message")
    except (ValueError, AttributeError):
        return None
    return m if isinstance(m, str) and m else None


@dataclass(frozen=True)
class Control:
    """What the control plane last said, replaced whole (read without a lock)."""

    config: Optional[Config]  # the last valid config, None before one or after an invalid one
    valid_at: float  # monotonic seconds when a valid config (200 or 304) last arrived
    refused: bool  # an upload got 409 since the last 200 config

    def allows(self, now: float) -> bool:
        """Profiling is on only under a fresh valid config that said enabled: true."""
        c = self.config
        if c is None or not c.enabled or self.refused:
            return False
        return now <= self.stale_at()

    def stale_at(self) -> float:
        """Monotonic seconds past which this config no longer allows profiling: three poll
        intervals after it was last confirmed (DESIGN §5, fail closed)."""
        c = self.config
        return self.valid_at + STALE_POLLS * c.poll_interval_s if c is not None else self.valid_at

    def keeps_partial(self) -> bool:
        """Whether a profile cut short by profiling stopping is still worth uploading:
        not when the server said profiling is off (it would answer 409)."""
        c = self.config
        return not self.refused and (c is None or c.enabled)


class Agent:
    """One SDK instance: start(), stop(), status(). Never raises into the caller."""

    def __init__(self, server: object = None, key: object = None, service: object = None,
                 version: object = None, instance: object = None,
                 limits: Limits = DEFAULT_LIMITS):
        self.limits = limits  # clamp bounds (DEFAULT_LIMITS except in tests)
        self.options = dict(server=server, key=key, service=service, version=version,
                            instance=instance)  # as given, for a restart after fork
        self.service = service if isinstance(service, str) else ""  # service name
        self.version = version if isinstance(version, str) and version else None  # release
        self.user_instance = instance if isinstance(instance, str) else None  # as given
        self.instance = (self.user_instance if self.user_instance is not None
                         else make_instance_id())  # instance id
        self.fatal: Optional[str] = None  # status that ends it all (bad arguments, ...)
        self.state = "new"  # new, running, stopping, stopped
        self.control = Control(None, 0.0, False)  # replaced whole by the poller / a 409
        self.etag: Optional[str] = None  # sent on the next poll
        self.poll_error: Optional[str] = None  # why the last poll gave no valid config
        self.invalid_reason: Optional[str] = None  # why the last config was invalid
        self.internal_error: Optional[str] = None  # last exception caught in a thread
        self.polls = 0  # config requests started
        self.polls_valid = 0  # of which brought a valid config (200 or 304)
        self.poll_interval_s = limits.default_poll_interval_s  # from the last valid config
        self.sdk_idents: set = set()  # idents of the threads this SDK started
        self.threads: List[threading.Thread] = []
        self.stop_event = threading.Event()  # set once by stop()
        self.wake = threading.Event()  # wakes the sampler: config change or stop
        # Ends the uploader's backoff: the server is back (a valid poll after failed or
        # invalid ones), or stop.
        self.upload_kick = threading.Event()
        self.last_poll_valid = True  # the last poll brought a valid config (200 or 304)
        self.sampler_done = threading.Event()  # the sampler has queued its last profile
        self.sampler = Sampler(limits.self_cost_factor, limits.self_cost_window)
        self.interval_ns = limits.default_sampling_interval_us * 1000  # effective interval
        self.profiling = False  # the sampler is sampling
        self.abandoned = False  # stop() gave up waiting: no new requests
        self.client: Optional[Client] = None
        self.uploader: Optional[Uploader] = None
        self.poller_ident: Optional[int] = None
        self._setup()

    # ---- set-up -------------------------------------------------------------------------

    def _setup(self) -> None:
        o = self.options
        why = None
        missing = [k for k in ("server", "key", "service") if o[k] is None]
        if missing:
            why = "missing argument%s: %s" % ("s" if len(missing) > 1 else "",
                                              ", ".join(missing))
        elif not isinstance(o["server"], str) or not o["server"]:
            why = "server must be a URL string"
        elif not isinstance(o["key"], str) or not o["key"]:
            why = "key must be a non-empty string"
        elif not isinstance(o["service"], str):
            why = "service must be a string"
        elif name_problem(o["service"]):
            why = "invalid service name (%s)" % name_problem(o["service"])
        elif o["version"] is not None and not isinstance(o["version"], str):
            why = "version must be a string"
        elif o["instance"] is not None and not isinstance(o["instance"], str):
            why = "instance must be a string"
        elif o["instance"] is not None and name_problem(o["instance"]):
            why = "invalid instance name (%s)" % name_problem(o["instance"])
        if why is None:
            try:
                self.client = Client(o["server"], {
                    "Authorization": "Bearer " + o["key"],
                    "User-Agent": "roottrace-python/" + SDK_VERSION})
            except ValueError as e:
                why = str(e)
        if why is not None:
            self.fatal = st.format_status(st.ERROR, why)
            return
        unavailable = available()
        if unavailable:
            self.fatal = st.format_status(st.UNAVAILABLE, unavailable)
        lim = self.limits
        self.uploader = Uploader(self.client, self._common_params, lim.queue_max_profiles,
                                 lim.upload_max_bytes, lim.upload_deadline_s,
                                 lim.connect_timeout_s)

    def _common_params(self) -> Dict[str, object]:
        return {"service": self.service, "instance": self.instance, "runtime": RUNTIME,
                "runtime_version": platform.python_version(), "sdk_version": SDK_VERSION,
                "version": self.version}

    # ---- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Starts the threads: the poller at once, the sampler and uploader idle until a
        valid config enables profiling."""
        if self.state != "new" or self.client is None:
            return
        self.state = "running"
        bodies = [("poller", self._poll_loop), ("uploader", self._upload_loop)]
        if self.fatal is None:
            bodies.append(("sampler", self._sample_loop))
        else:
            self.sampler_done.set()
        for name, body in bodies:
            t = threading.Thread(target=self._guarded(body), name="roottrace-" + name,
                                 daemon=True)
            t.start()
            self.sdk_idents.add(t.ident)
            self.threads.append(t)
            if name == "poller":
                self.poller_ident = t.ident

    def stop(self, timeout: Optional[float] = None) -> None:
        """Stops profiling, queues the profile in progress, uploads what is queued, and
        waits at most `timeout` seconds (default and most: the flush limit)."""
        if self.state != "running":
            return
        self.state = "stopping"
        limit = self.limits.flush_timeout_s
        try:
            wait = limit if timeout is None else float(timeout)
        except (TypeError, ValueError):
            wait = limit
        deadline = time.monotonic() + max(0.0, min(wait, limit))
        self.stop_event.set()
        self.wake.set()
        self.upload_kick.set()
        if self.client is not None and self.poller_ident is not None:
            self.client.abort_thread(self.poller_ident)
        if self.uploader is not None:
            with self.uploader.cond:
                self.uploader.cond.notify_all()
        for t in self.threads:
            if t.ident != self.poller_ident:
                t.join(max(0.0, deadline - time.monotonic()))
        self.abandoned = True  # past the deadline: threads still here start nothing new
        if self.client is not None:
            self.client.abort_all()
        for t in self.threads:
            t.join(max(0.05, deadline - time.monotonic()) if t.ident == self.poller_ident
                   else 0.05)
        self.state = "stopped"
        self.profiling = False

    def running(self) -> bool:
        return self.state == "running"

    def _guarded(self, body: Callable[[], None]) -> Callable[[], None]:
        """A thread body that never lets an exception out; a crashed loop restarts after
        a second (never spins)."""

        def run() -> None:
            while not self.stop_event.is_set():
                try:
                    body()
                    return
                except BaseException as e:  # noqa: BLE001 - never raise into the app
                    self.internal_error = "%s: %s" % (type(e).__name__, e)
                    log.debug("roottrace: internal error", exc_info=True)
                    if isinstance(e, (KeyboardInterrupt, SystemExit)):
                        return
                    self.stop_event.wait(1.0)

        return run

    # ---- status -------------------------------------------------------------------------

    def status_string(self) -> str:
        """`<state>[: <reason>]` (docs/control-plane.md)."""
        if self.fatal:
            return self.fatal
        if self.state == "new":
            return st.format_status(st.DISABLED, "not started")
        if self.state != "running":
            return st.format_status(st.DISABLED, "stopped")
        c = self.control
        if c.config is None:
            if self.invalid_reason:
                return st.format_status(st.ERROR, "invalid config: " + self.invalid_reason)
            return st.format_status(st.WAITING, "no config yet" + (
                " (%s)" % self.poll_error if self.poll_error else ""))
        if c.refused:
            return st.format_status(st.DISABLED, "upload refused (409), waiting for a config "
                                                 "that enables profiling")
        if not c.config.enabled:
            return st.DISABLED
        if not c.allows(time.monotonic()):
            return st.format_status(st.ERROR, "no valid config for %d poll intervals%s" % (
                STALE_POLLS, " (%s)" % self.poll_error if self.poll_error else ""))
        if c.config.type != PROFILE_TYPE:
            return st.format_status(st.PROFILING, "%s not supported, sending %s" % (
                c.config.type, PROFILE_TYPE))
        return st.PROFILING

    def interval_us(self) -> int:
        """The effective sampling interval: configured, clamped, lengthened by the
        self-cost budget."""
        if self.profiling:
            return self.interval_ns // 1000
        c = self.control.config
        us = c.sampling_interval_us if c else self.limits.default_sampling_interval_us
        return self.sampler.effective_interval_ns(us * 1000) // 1000

    def status(self) -> Dict[str, object]:
        """The fields of docs/sdk/README.md ("One vocabulary") in its order, then
        median_walk_us."""
        s = self.status_string()
        state, reason = st.split_status(s)
        up = self.uploader
        return {
            "status": s,
            "state": state,
            "reason": reason,
            "interval_us": self.interval_us(),
            "service": self.service,
            "instance": self.instance,
            "profiles_sent": up.sent if up else 0,
            "profiles_dropped": up.dropped if up else 0,
            "profiles_queued": len(up.queue) if up else 0,
            "samples": self.sampler.samples_taken,
            "last_error": (self.fatal or
                           ("invalid config: " + self.invalid_reason if self.invalid_reason
                            else None) or self.poll_error or
                           (up.last_error if up else None) or self.internal_error),
            "median_walk_us": self.sampler.median_walk_ns() / 1000.0,
        }

    # ---- config poller ------------------------------------------------------------------

    def _poll_interval(self) -> float:
        """The last valid config's poll interval (kept across an invalid config), else the
        default; clamped."""
        lim = self.limits
        return min(max(self.poll_interval_s, lim.poll_interval_min_s), lim.poll_interval_max_s)

    def _poll_loop(self) -> None:
        next_start = time.monotonic()
        while not self.stop_event.is_set():
            left = next_start - time.monotonic()
            if left > 0 and self.stop_event.wait(left):
                break
            started = time.monotonic()
            changed = False
            polls_valid = self.polls_valid
            try:
                changed = self._poll_once()
            except Exception as e:  # noqa: BLE001
                self.poll_error = "config poll: %s: %s" % (type(e).__name__, e)
            valid = self.polls_valid > polls_valid
            if valid and not self.last_poll_valid:
                self.upload_kick.set()  # the server is back: what is queued goes now
            self.last_poll_valid = valid
            if changed:  # at once, but never more than once a second (the poll floor)
                next_start = started + min(self.limits.repoll_min_s, self._poll_interval())
            else:
                next_start = started + self._poll_interval()

    def _poll_once(self) -> bool:
        """One config request. True when a held request returned a changed config (the
        next poll may then start at once, subject to the 1 s floor)."""
        lim = self.limits
        c = self.control
        params = self._common_params()
        params.update(status=self.status_string(), interval_us=self.interval_us())
        etag = self.etag if c.config is not None else None
        wait = 0
        if etag:
            wait = int(min(lim.poll_wait_max_s, self._poll_interval()))
            params.update(etag=etag, wait=wait)
        self.polls += 1
        try:
            r = self.client.request("GET", "/api/v1/sdk/config", params,
                                    deadline_s=wait + lim.request_slack_s,
                                    connect_timeout_s=lim.connect_timeout_s,
                                    max_body=lim.config_max_bytes)
        except BodyTooLarge as e:
            self._invalid(str(e))
            return False
        except HTTPError as e:
            if self.stop_event.is_set() or isinstance(e, Aborted):
                return False  # ended by stop(): not a failure of the control plane
            self.poll_error = "config poll failed: %s" % e
            return False
        if self.stop_event.is_set():
            return False
        if r.status == 304:
            c = self.control
            if etag and c.config is not None:
                self.control = Control(c.config, time.monotonic(), c.refused)
                self.poll_error = None
                self.polls_valid += 1
            else:
                self.poll_error = "304 to a poll without etag"
            return False
        if r.status != 200:
            if 400 <= r.status < 500:
                # A refusal (key revoked, wrong scope, ...): forget the etag, so that once its
                # cause is fixed the next poll gets a full 200 at once instead of being held
                # and answered 304. A 5xx or a network error keeps it: the server refused
                # nothing, it is unavailable.
                self.etag = None
            msg = server_message(r.body)
            self.poll_error = "config poll answered %d%s" % (r.status, ": " + msg if msg else "")
            return False
        try:
            cfg = parse_config(r.body, lim, header_etag=r.headers.get("etag"))
        except ConfigError as e:
            self._invalid(str(e))
            return False
        self.control = Control(cfg, time.monotonic(), False)
        self.polls_valid += 1
        self.poll_interval_s = cfg.poll_interval_s
        self.etag = cfg.etag
        self.poll_error = None
        self.invalid_reason = None
        self.wake.set()
        return etag is not None

    def _invalid(self, reason: str) -> None:
        """An invalid config: profiling stops at once; the next poll asks afresh."""
        self.invalid_reason = reason
        self.poll_error = None
        self.control = Control(None, 0.0, False)
        self.etag = None
        self.wake.set()

    def _refused(self) -> None:
        """A 409: stop profiling until a config says enabled: true; the next poll asks
        without etag so that it gets the current config at once."""
        c = self.control
        self.control = Control(c.config, c.valid_at, True)
        self.etag = None
        self.wake.set()

    # ---- sampler ------------------------------------------------------------------------

    def _sample_loop(self) -> None:
        agg: Optional[Aggregate] = None
        start = last = 0  # monotonic ns: profile start, previous sample
        wall0 = cpu0 = 0  # Unix ns and process CPU ns at profile start
        try:
            while not self.stop_event.is_set():
                self.wake.clear()
                c = self.control
                now = time.monotonic_ns()
                if not c.allows(now / 1e9):
                    self.profiling = False
                    if agg is not None:
                        if c.keeps_partial():
                            self._finish(agg, start, last, wall0, cpu0)
                        agg = None
                    self.wake.wait(IDLE_CHECK_S)
                    continue
                cfg = c.config
                if agg is None:
                    agg = Aggregate(self.limits.max_stacks_per_profile)
                    start = last = now
                    wall0 = time.time_ns()
                    cpu0 = time.process_time_ns()
                    self.profiling = True
                lim = self.limits
                configured = min(max(cfg.sampling_interval_us, lim.sampling_interval_min_us),
                                 lim.sampling_interval_max_us) * 1000
                self.interval_ns = self.sampler.effective_interval_ns(configured)
                deadline = last + self.interval_ns
                # Wake at the tick, or when the config goes stale if that comes first, so
                # that profiling stops on time even when the budget stretches the tick.
                wake_at = min(deadline, int(c.stale_at() * 1e9) + 1)
                left = wake_at - time.monotonic_ns()
                if left > 0:
                    if left <= SHORT_SLEEP_NS:
                        time.sleep(left / 1e9)  # half the CPU of an Event wake
                    else:
                        self.wake.wait(left / 1e9)
                if time.monotonic_ns() < deadline:
                    continue  # woken early: look at the state again
                now = time.monotonic_ns()
                c = self.control
                if self.stop_event.is_set() or not c.allows(now / 1e9):
                    continue
                self.sampler.sample(agg, now - last, self.sdk_idents,
                                    c.config.max_stack_depth, now)
                last = now
                if now - start >= int(c.config.upload_interval_s * 1e9):
                    cpu1 = self._finish(agg, start, last, wall0, cpu0)
                    wall0 += last - start
                    agg, start, cpu0 = Aggregate(self.limits.max_stacks_per_profile), last, cpu1
            if agg is not None and self.control.keeps_partial():
                self._finish(agg, start, last, wall0, cpu0)
        finally:
            self.profiling = False
            self.sampler_done.set()

    def _finish(self, agg: Aggregate, start: int, end: int, wall0: int, cpu0: int) -> int:
        """Queues the profile [start, end] (monotonic ns). Returns the process CPU clock
        read at its end."""
        cpu1 = time.process_time_ns()
        if end > start and self.uploader is not None:
            self.uploader.put(Profile(
                profile_id=str(uuid.uuid4()), instance=self.instance, time_nanos=wall0,
                duration_nanos=end - start, period_ns=self.interval_ns,
                samples=agg.samples(), process_cpu_ns=max(0, cpu1 - cpu0)))
        return cpu1

    # ---- uploader -----------------------------------------------------------------------

    def _upload_loop(self) -> None:
        up = self.uploader
        lim = self.limits
        attempt = 0
        flush_failed = False
        while True:
            stopping = self.stop_event.is_set()
            if stopping and self.sampler_done.is_set() and up.pending() == 0:
                return
            if not up.wait_for_work(IDLE_CHECK_S):
                continue
            if self.abandoned:
                return
            outcome = up.upload_one()
            if outcome == RETRY:
                if self.stop_event.is_set():
                    if flush_failed:
                        return  # flushing and the server is away: give up
                    flush_failed = True  # one more try, once the last profile is queued
                    self.sampler_done.wait(lim.flush_timeout_s)
                    continue
                attempt += 1
                self.upload_kick.clear()
                if not self.stop_event.is_set() and self.upload_kick.wait(
                        backoff(attempt, lim.retry_backoff_min_s, lim.retry_backoff_max_s)):
                    attempt = 0  # the server is back (or stop): retry at once
                continue
            attempt = 0
            if outcome == REFUSED:
                self._refused()
