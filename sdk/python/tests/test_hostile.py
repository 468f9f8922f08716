"""A hostile control plane cannot make the sampler spin, and profiling is off wherever
DESIGN §5 says. The sampling floor is the compiled one (10 ms); only the poll interval
floor and the poll deadline are shortened so that each case takes seconds."""
import json
import time

import pytest

from conftest import wait_for
from roottrace.config import DEFAULT_LIMITS

POLL = 0.2  # poll interval for these tests (compiled floor 1 s, overridden)
FLOOR_NS = DEFAULT_LIMITS.sampling_interval_min_us * 1000


def body(**kw):
    c = {"enabled": True, "type": "wall", "sampling_interval_us": 20000, "upload_interval_s": 60,
         "max_stack_depth": 256, "poll_interval_s": POLL, "etag": "hostile"}
    c.update(kw)
    return json.dumps(c).encode()


# name -> (fake mode and attributes, what must happen: "clamped" (profiling on, at the
# given effective interval), "invalid" (off at once), "absent" (off after 3 intervals))
CASES = {
    "interval_0": (("body", {"raw_body": body(sampling_interval_us=0)}), ("clamped", 10_000)),
    "interval_negative": (("body", {"raw_body": body(sampling_interval_us=-20000)}),
                          ("clamped", 10_000)),
    "interval_1e12": (("body", {"raw_body": body(sampling_interval_us=1e12)}),
                      ("clamped", DEFAULT_LIMITS.sampling_interval_max_us)),
    "interval_nan": (("body", {"raw_body": body().replace(b"20000", b"NaN")}), ("invalid",)),
    "interval_string": (("body", {"raw_body": body(sampling_interval_us="1")}), ("invalid",)),
    # Found by fuzzing: a lone surrogate was accepted, then every later poll failed to encode
    # it into the query (UnicodeEncodeError), so the SDK never recovered.
    "etag_lone_surrogate": (("body", {"raw_body": body(etag="\ud800")}), ("invalid",)),
    # Likewise a 60 KB etag: the server answers every later poll that sends it with 414.
    "etag_60KB": (("body", {"raw_body": body(etag="a" * 60000)}), ("invalid",)),
    "body_50MB": (("huge", {}), ("invalid",)),
    "body_50MB_no_length": (("huge_close", {}), ("invalid",)),
    "slow_drip": (("drip", {}), ("absent",)),
    "http_500": (("status", {"code": 500}), ("absent",)),
    "tcp_reset": (("reset", {}), ("absent",)),
    "no_answer": (("hang", {}), ("absent",)),
}


def check_rate(a, t_from_ns, t_to_ns):
    """The sampler never sampled faster than the floor: every gap between samples is at
    least 10 ms, so the rate is at most 100/s."""
    times = [t for t in list(a.sampler.sample_times) if t_from_ns <= t <= t_to_ns]
    gaps = [b - x for x, b in zip(times, times[1:])]
    assert not gaps or min(gaps) >= FLOOR_NS, min(gaps)
    span = (t_to_ns - t_from_ns) / 1e9
    assert len(times) <= span * 1e9 / FLOOR_NS + 1
    return len(times) / span if span else 0.0


def check_poll_rate(fake, t0, t1):
    polls = [p for p in fake.polls if t0 <= p.t <= t1]
    assert len(polls) <= (t1 - t0) / POLL + 2, len(polls)


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_control_plane(fake, agents, name):
    (mode, attrs), expect = CASES[name]
    kind = expect[0]
    fake.set_config(enabled=True, poll_interval_s=POLL, sampling_interval_us=10000)
    fake.set_mode(mode, **attrs)
    a = agents(fake, poll_interval_min_s=POLL, default_poll_interval_s=POLL, request_slack_s=0.5)
    t_start = time.monotonic_ns()

    # Phase A: hostile from the first poll.
    time.sleep(0.7)
    if kind == "clamped":
        assert a.profiling, a.status()
        assert wait_for(lambda: a.interval_us() >= expect[1], 1)
    else:
        assert a.sampler.samples_taken == 0 and not a.profiling, a.status()
        assert a.status()["state"] in ("error", "waiting"), a.status()

    # Phase B: an honest config turns profiling on (sampling at the floor).
    fake.set_mode("normal")
    fake.set_config(sampling_interval_us=10000)
    assert wait_for(lambda: a.profiling and a.status()["state"] == "profiling", 2), a.status()
    time.sleep(0.3)

    # Phase C: hostile again.
    t_switch = time.monotonic()
    fake.set_mode(mode, **attrs)
    if kind == "clamped":
        time.sleep(0.8)
        assert a.profiling and a.status()["state"] == "profiling"
        iv = a.status()["interval_us"]
        # The clamped interval, or longer only by the self-cost budget (a loaded host).
        assert expect[1] <= iv <= max(expect[1], 2 * a.limits.self_cost_factor * max(a.sampler.walks) // 1000), iv
    else:
        limit = POLL + 0.5 if kind == "invalid" else 3 * POLL + 0.5
        assert wait_for(lambda: not a.profiling, limit + 1), a.status()
        assert time.monotonic() - t_switch <= limit, time.monotonic() - t_switch
        assert a.status()["state"] == "error", a.status()
        n = a.sampler.samples_taken
        time.sleep(0.4)
        assert a.sampler.samples_taken == n  # off means off
    t_end = time.monotonic_ns()
    rate = check_rate(a, t_start, t_end)
    assert rate <= 1e9 / FLOOR_NS
    print("\n%s: %.1f samples/s overall, interval %d us" % (name, rate, a.interval_us()))
    check_poll_rate(fake, t_switch, time.monotonic())
    t0 = time.monotonic()
    a.stop(2)
    assert time.monotonic() - t0 < 2.5
