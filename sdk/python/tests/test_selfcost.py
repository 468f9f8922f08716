"""The self-cost budget (DESIGN §5): the interval is at least 100 x the median walk, so
walking stays under 1 % of one core; with many threads the interval lengthens."""
import threading
import time

from conftest import wait_for
from roottrace.config import DEFAULT_LIMITS
from roottrace.sampler import Sampler


def test_effective_interval_is_100x_median_walk():
    s = Sampler(100, 5)
    assert s.effective_interval_ns(10_000_000) == 10_000_000
    for w in (50_000, 60_000, 1_000_000, 70_000, 55_000):
        s.walks.append(w)
    assert s.median_walk_ns() == 60_000
    assert s.effective_interval_ns(10_000_000) == 10_000_000  # 6 ms < 10 ms
    for w in (300_000, 310_000, 320_000):
        s.walks.append(w)
    assert s.median_walk_ns() == 300_000
    assert s.effective_interval_ns(10_000_000) == 30_000_000


class Crowd:
    """n threads parked under `depth` recursive frames."""

    def __init__(self, n, depth):
        self.go = threading.Event()
        self.ready = threading.Semaphore(0)
        self.threads = [threading.Thread(target=self.dive, args=(depth,), daemon=True)
                        for _ in range(n)]
        for t in self.threads:
            t.start()
        for _ in self.threads:
            self.ready.acquire(timeout=10)

    def dive(self, n):
        if n:
            return self.dive(n - 1)
        self.ready.release()
        self.go.wait(60)

    def close(self):
        self.go.set()
        for t in self.threads:
            t.join(5)


def thread_cpu_ns(ident):
    return time.clock_gettime_ns(time.pthread_getcpuclockid(ident))


def sampler_ident(a):
    return next(t.ident for t in a.threads if t.name == "roottrace-sampler")


def test_few_threads_walk_fast_and_keep_the_configured_interval(fake, agents):
    fake.set_config(enabled=True, sampling_interval_us=10000)
    a = agents(fake, self_cost_factor=DEFAULT_LIMITS.self_cost_factor)
    assert wait_for(lambda: a.sampler.samples_taken >= 30, 10), a.status()
    iv = a.status()["interval_us"]
    walks_us = [w / 1000 for w in sorted(a.sampler.walks)]  # sorted() copies atomically
    # A handful of threads: walks of ~0.1 ms of CPU. The fastest of the last 15 is under
    # 2 ms even on a loaded host (the median was seen at 4.5 ms with the other core busy),
    # so the budget leaves the configured 10 ms alone whenever the median is that fast.
    assert walks_us[0] < 2000, walks_us
    # The interval may come from the walks one sample before these, whose median is at most
    # the next walk up from this median: when that is <= 100 us, 100 x it is <= 10 ms.
    if walks_us[len(walks_us) // 2 + 1] <= 100:
        assert iv == 10000, (iv, walks_us)
    # Never past the budget: the interval was set at the last tick, from the walks before
    # it, so the slowest recent walk bounds it.
    assert 10000 <= iv <= max(10000, 100 * walks_us[-1] * 1.01), (iv, walks_us)


def test_many_threads_lengthen_the_interval_and_cost_stays_under_budget(fake, agents):
    crowd = Crowd(300, 40)
    try:
        fake.set_config(enabled=True, sampling_interval_us=10000)
        a = agents(fake, self_cost_factor=DEFAULT_LIMITS.self_cost_factor)
        assert wait_for(lambda: a.sampler.samples_taken >= 3, 10), a.status()
        st = a.status()
        median_us = a.sampler.median_walk_ns() / 1000
        assert st["interval_us"] > 10000, st
        assert st["interval_us"] >= 100 * median_us * 0.99, (st, median_us)
        # CPU the sampler thread burns, as the OS accounts it, over 2 s.
        ident = sampler_ident(a)
        c0, t0 = thread_cpu_ns(ident), time.monotonic_ns()
        n0, w0 = a.sampler.samples_taken, a.sampler.walk_cost_total_ns
        time.sleep(2.0)
        c1, t1 = thread_cpu_ns(ident), time.monotonic_ns()
        n1, w1 = a.sampler.samples_taken, a.sampler.walk_cost_total_ns
        share = (c1 - c0) / (t1 - t0)
        walking = (w1 - w0) / (t1 - t0)
        print("\nself-cost: 300 threads x ~48 frames: median walk %.0f us, interval %d us, "
              "%d samples in 2 s, walking %.2f %% and the whole sampler thread %.2f %% of a core"
              % (median_us, a.status()["interval_us"], n1 - n0, walking * 100, share * 100))
        # Walking under 1 % of a core; one walk more or less in the window is allowed for.
        assert walking <= 0.01 + max(a.sampler.walks) / (t1 - t0), walking
        assert share < 0.03, share  # the whole thread, wake-ups included, on a noisy host
    finally:
        crowd.close()
