"""The GIL bias of a sampler thread (README "What it cannot see"): the sampler needs the GIL
to read other threads' frames, and a thread running Python code keeps the GIL until the
switch interval (sys.getswitchinterval(), 5 ms by default) runs out or it blocks. So a CPU
burst shorter than the switch interval is charged to the place where the thread next blocks.
These tests run the real agent against the fake control plane and check both halves of
the README's claim on a workload of bursts and sleeps."""
import sys
import threading
import time

import pytest

from conftest import wait_for

SWITCH_S = 0.005  # CPython's default switch interval, which these bounds assume

pytestmark = [
    pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(),
                       reason="no GIL (free-threaded build): no GIL bias to measure"),
    pytest.mark.skipif(abs(sys.getswitchinterval() - SWITCH_S) > 1e-9,
                       reason="the switch interval is not CPython's default 5 ms"),
]


def gil_burst(ms):
    """Pure Python CPU work for `ms` ms (holds the GIL but for forced switches)."""
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def gil_rest(ms):
    """A blocking call (releases the GIL)."""
    time.sleep(ms / 1000.0)


def measure(fake, agents, burst_ms, rest_ms, seconds=3.0):
    """Runs bursts of `burst_ms` and sleeps of `rest_ms` in a thread while the agent
    samples at the 10 ms floor. Returns (the burst's share of the thread's sampled wall
    time, its real share, samples)."""
    fake.set_config(enabled=True, sampling_interval_us=10000, poll_interval_s=1,
                    upload_interval_s=60)
    a = agents(fake)
    assert wait_for(lambda: a.profiling, 3)
    stop = threading.Event()
    real = [0.0, 0.0]

    def work():
        while not stop.is_set():
            t0 = time.perf_counter()
            gil_burst(burst_ms)
            t1 = time.perf_counter()
            gil_rest(rest_ms)
            real[0] += t1 - t0
            real[1] += time.perf_counter() - t1

    t = threading.Thread(target=work, name="gil-workload")
    t.start()
    # At least `seconds`, and longer (up to 4x) until 60 walks were taken: on a slow host the
    # self-cost budget stretches the 10 ms interval (DESIGN §5).
    start, t_end = a.sampler.samples_taken, time.monotonic() + seconds
    while time.monotonic() < t_end or (a.sampler.samples_taken - start < 60 and
                                       time.monotonic() < t_end + 3 * seconds):
        time.sleep(0.05)
    stop.set()
    t.join()
    a.stop(5)
    p = fake.uploads[-1].profile
    burst = sum(s[2] for s in p["samples"] if any(f.endswith(".gil_burst") for f in s[0]))
    rest = sum(s[2] for s in p["samples"] if any(f.endswith(".gil_rest") for f in s[0]))
    n = sum(s[1] for s in p["samples"]
            if any(f.endswith((".gil_burst", ".gil_rest")) for f in s[0]))
    assert n >= 50, "too few samples of the workload thread: %d" % n
    return burst / (burst + rest), real[0] / (real[0] + real[1]), n


def test_bursts_well_above_the_switch_interval_are_seen(fake, agents):
    # 30 ms bursts, 30 ms sleeps (real share ~50 %): a sample that falls in a burst waits
    # at most one switch interval for the GIL and still lands in the burst, unless the
    # burst ends first. Measured on 2 cores: 41-50 % idle, 51-53 % with 2 and with 4
    # busy processes beside it.
    share, real, n = measure(fake, agents, 30, 30)
    assert 0.30 <= share <= 0.70, (share, real, n)
    assert 0.35 <= real <= 0.55, (share, real, n)


def test_known_limitation_bursts_below_the_switch_interval_are_under_counted(fake, agents):
    # KNOWN LIMITATION, asserted so that the README's claim stays true: 2 ms bursts and
    # 2 ms sleeps (real share ~50 %). The sampler's GIL request is granted when the thread
    # blocks in its sleep, before the switch interval forces a switch, so the burst is
    # charged to gil_rest. Measured on 2 cores: 0 % idle, 1-1.5 % with 2 busy processes
    # beside it, 12-16 % with 4 (a thread descheduled while holding the GIL for longer
    # than the switch interval hands it over mid-burst). Bound: under 25 %.
    share, real, n = measure(fake, agents, 2, 2)
    assert real >= 0.35, (share, real, n)
    assert share < 0.25, (share, real, n)
