"""RootTrace Python SDK: wall-clock profiles of every application thread, uploaded to a
self-hosted RootTrace server while an operator has profiling turned on for the service.

    import roottrace
    roottrace.start(server="http://roottrace:4040", key="rt_...", service="shop",
                    version="1.4.2")
    ...
    roottrace.stop()

Nothing here raises into the application: problems show in roottrace.status().
"""
from __future__ import annotations

import atexit
import os
import threading
from typing import Dict, Optional

from .agent import SDK_VERSION, Agent
from .config import DEFAULT_LIMITS, Limits
from .status import STATUS_RE, format_status, split_status

__version__ = SDK_VERSION
__all__ = ["start", "stop", "status", "__version__"]

_lock = threading.Lock()
_agent: Optional[Agent] = None


def start(server: Optional[str] = None, key: Optional[str] = None,
          service: Optional[str] = None, version: Optional[str] = None,
          instance: Optional[str] = None, *extra: object, _limits: Limits = DEFAULT_LIMITS,
          **unknown: object) -> None:
    """Starts the SDK: polls the server's control plane and profiles while it says so.
    `server` is the base URL, `key` an ingest key, `service` the service name, `version`
    the service's release, `instance` this process's name (default
    `<hostname>-<pid>-<4 random hex>`). A second start() while running does nothing.
    `_limits` is for the SDK's own tests. Never raises, not even on missing, extra or
    misspelt arguments: those give status `error: ...` and start no thread; see status()."""
    global _agent
    try:
        with _lock:
            if _agent is not None and _agent.running():
                return
            a = Agent(server, key, service, version, instance, limits=_limits)
            if extra or unknown:
                why = ("unknown argument%s: %s" % ("s" if len(unknown) > 1 else "",
                                                   ", ".join(sorted(unknown)))
                       if unknown else "too many positional arguments (%d)" % (5 + len(extra)))
                a.fatal = format_status("error", why)
                _agent = a  # reports the error; never started, so no thread runs
                return
            _agent = a
            a.start()
    except Exception:  # noqa: BLE001 - never raise into the application
        pass


def stop(timeout: float = DEFAULT_LIMITS.flush_timeout_s) -> None:
    """Stops profiling, uploads the profile in progress and what is queued, waiting at
    most `timeout` seconds (and never more than 5). Never raises."""
    try:
        a = _agent
        if a is not None:
            a.stop(timeout)
    except Exception:  # noqa: BLE001
        pass


def status() -> Dict[str, object]:
    """The SDK's state, with the fields every SDK's status has (docs/sdk/README.md, "One
    vocabulary"), in this order: `status` (`<state>[: <reason>]`, as sent to the server),
    `state`, `reason` (the part after `<state>: `, or ""), `interval_us` (effective
    sampling interval), `service`, `instance`, `profiles_sent`, `profiles_dropped`,
    `profiles_queued`, `samples`, `last_error`; then `median_walk_us`."""
    try:
        a = _agent
        if a is None:
            return _status_without_agent(format_status("disabled", "not started"), None)
        return a.status()
    except Exception as e:  # noqa: BLE001
        s = format_status("error", "status: %s" % e)
        return _status_without_agent(s, s)


def _status_without_agent(s: str, last_error: Optional[str]) -> Dict[str, object]:
    """status()'s fields when no agent can say them: status s, zero counters, no names."""
    state, reason = split_status(s)
    return {"status": s, "state": state, "reason": reason,
            "interval_us": DEFAULT_LIMITS.default_sampling_interval_us,
            "service": None, "instance": None, "profiles_sent": 0,
            "profiles_dropped": 0, "profiles_queued": 0, "samples": 0,
            "last_error": last_error, "median_walk_us": 0.0}


def _after_fork_child() -> None:
    """In a forked child: the parent's threads are gone and its locks may be held, so a
    running SDK is rebuilt from its options with a new instance id and restarted."""
    global _agent, _lock
    try:
        _lock = threading.Lock()
        old = _agent
        if old is None:
            return
        if old.running():
            o = old.options
            _agent = Agent(o["server"], o["key"], o["service"], o["version"], o["instance"],
                           limits=old.limits)
            _agent.start()
        else:
            _agent = None
    except Exception:  # noqa: BLE001
        pass


def _at_exit() -> None:
    stop(DEFAULT_LIMITS.flush_timeout_s)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)
atexit.register(_at_exit)
