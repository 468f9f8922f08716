"""The control-plane protocol and fail-closed transitions against a fake control plane
(docs/control-plane.md)."""
import time
import uuid

from conftest import wait_for
from roottrace.status import STATUS_RE
from roottrace.uploader import Profile, Uploader


def on(a):
    return a.profiling and a.status()["state"] == "profiling"


def test_profiles_only_after_enabled_config_and_stops_on_disabled(fake, agents):
    fake.set_config(enabled=False, poll_interval_s=1, sampling_interval_us=10000)
    a = agents(fake)
    assert wait_for(lambda: a.status()["status"] == "disabled", 3)
    time.sleep(0.3)
    assert a.sampler.samples_taken == 0 and not a.profiling
    t0 = time.monotonic()
    fake.set_config(enabled=True)
    # The next poll (<= 1 poll interval) is held; the change returns it at once.
    assert wait_for(lambda: on(a), 3)
    assert time.monotonic() - t0 < 2.5
    # 10 s: the self-cost budget stretches the interval on a slow host (DESIGN §5); CI once
    # saw fewer than 6 walks in 2 s.
    assert wait_for(lambda: a.sampler.samples_taken > 5, 10), a.status()
    fake.set_config(enabled=False)
    assert wait_for(lambda: not a.profiling, 2.5)
    assert a.status()["status"] == "disabled"
    n = a.sampler.samples_taken
    time.sleep(0.3)
    assert a.sampler.samples_taken == n


def test_poll_parameters_etag_and_wait(fake, agents):
    fake.set_config(enabled=True, poll_interval_s=1)
    before_start = time.monotonic()  # the first poll starts after this
    a = agents(fake)
    assert wait_for(lambda: len(fake.polls) >= 3, 5)
    first, second = fake.polls[0].params, fake.polls[1].params
    assert "etag" not in first and "wait" not in first
    for p in (first, second):
        assert p["service"] == "svc" and p["instance"] == a.instance
        assert p["runtime"] == "python" and p["sdk_version"] == "0.1.0"
        assert p["version"] == "1.0" and p["runtime_version"].count(".") == 2
        assert STATUS_RE.match(p["status"]), p["status"]
        assert int(p["interval_us"]) >= 10000
    assert first["status"].startswith("waiting")
    assert second["etag"] == fake.etag() and second["wait"] == "1"
    assert second["status"] == "profiling"
    # The second poll starts one poll interval after the first one started. The first one
    # arrives later than it starts (a cold connect), so the bound is from before the agent.
    assert fake.polls[1].t - before_start >= 1.0, fake.polls[1].t - before_start
    # 304s keep the config valid: still profiling after several held polls.
    assert wait_for(lambda: len(fake.polls) >= 4, 3)
    assert on(a)


def test_type_request_that_python_cannot_produce(fake, agents):
    fake.set_config(enabled=True, type="cpu")
    a = agents(fake)
    assert wait_for(lambda: a.status()["status"] == "profiling: cpu not supported, sending wall", 3)


def test_invalid_config_stops_at_once_and_valid_resumes(fake, agents):
    fake.set_config(enabled=True, poll_interval_s=1)
    a = agents(fake)
    assert wait_for(lambda: on(a), 3)
    fake.set_mode("body", raw_body=b'{"enabled": true, "sampling_interval_us": NaN}')
    t0 = time.monotonic()
    assert wait_for(lambda: not a.profiling, 3)
    assert time.monotonic() - t0 <= 2.2  # the held poll (<= 1 s) then at most one interval
    assert a.status()["status"].startswith("error: invalid config: non-JSON number NaN")
    # The next poll asks afresh (no etag): a 304 cannot revive the invalid config.
    n = len(fake.polls)
    assert wait_for(lambda: len(fake.polls) > n, 2)
    assert "etag" not in fake.polls[-1].params
    fake.set_mode("normal")
    assert wait_for(lambda: on(a), 3)


def test_no_valid_config_for_three_poll_intervals_stops(fake, agents):
    fake.set_config(enabled=True, poll_interval_s=0.2)
    a = agents(fake, poll_interval_min_s=0.2)
    assert wait_for(lambda: on(a), 3)
    fake.set_mode("status", code=503)
    t0 = time.monotonic()
    time.sleep(0.25)
    assert a.profiling  # one failed poll is not enough
    assert wait_for(lambda: not a.profiling, 2)
    took = time.monotonic() - t0
    assert 0.35 <= took <= 1.0, took
    s = a.status()["status"]
    assert s == "error: no valid config for 3 poll intervals (config poll answered 503)", s
    fake.set_mode("normal")
    assert wait_for(lambda: on(a), 3)


def test_a_stretched_tick_does_not_outlive_the_config(fake, agents):
    # A self-cost factor of 10^6 stretches every tick past 10 s (any walk costs >= 10 us of
    # CPU), far beyond the 0.6 s after which the config is stale: profiling must still stop
    # then, not at the next tick (DESIGN §5; before the fix it took the whole tick).
    fake.set_config(enabled=True, poll_interval_s=0.2)
    a = agents(fake, poll_interval_min_s=0.2, self_cost_factor=10**6)
    assert wait_for(lambda: on(a) and a.status()["interval_us"] >= 10**7, 5), a.status()
    fake.set_mode("status", code=503)
    t0 = time.monotonic()
    assert wait_for(lambda: not a.profiling, 3), a.status()
    assert time.monotonic() - t0 <= 2.0
    s = a.status()["status"]
    assert s == "error: no valid config for 3 poll intervals (config poll answered 503)", s
    fake.set_mode("normal")
    assert wait_for(lambda: on(a), 3)


def test_refused_poll_forgets_the_etag_and_a_503_keeps_it(fake, agents):
    fake.set_config(enabled=True, poll_interval_s=1)
    a = agents(fake)
    assert wait_for(lambda: on(a), 3)
    # The next poll gets 503, every later one 401 (the key revoked) until the mode is reset.
    fake.set_mode("codes", codes=[503, 401],
                  status_body=b'{"error":"unauthorized","message":"key revoked"}')
    assert wait_for(lambda: not a.profiling, 6)  # 3 poll intervals without a valid config
    s = a.status()["status"]
    assert s == ("error: no valid config for 3 poll intervals "
                 "(config poll answered 401: key revoked)"), s
    assert "etag" not in fake.polls[0].params
    assert wait_for(lambda: len(fake.coded) >= 3, 3)
    coded = list(fake.coded)
    assert [c for _, c in coded[:3]] == [503, 401, 401], coded
    assert coded[0][0]["etag"] == fake.etag()  # the 200's etag
    assert coded[1][0]["etag"] == fake.etag() and coded[1][0]["wait"] == "1"  # a 503 keeps it
    for i, (p, _) in enumerate(coded[2:], 3):  # after a 401: no etag, not held
        assert "etag" not in p and "wait" not in p, (i, p)
    n = len(fake.polls)
    fake.set_mode("normal")  # the key is restored
    assert wait_for(lambda: on(a), 3)  # profiling resumes after the 200
    assert "etag" not in fake.polls[n].params and "wait" not in fake.polls[n].params
    assert a.status()["status"] == "profiling"


def test_upload_409_drops_and_stops_until_enabled_again(fake, agents):
    fake.set_config(enabled=True, poll_interval_s=1, upload_interval_s=0.3)
    answers = {"n": 0}

    def answer(params):
        answers["n"] += 1
        return 409 if answers["n"] == 1 else 201

    fake.upload_answer = answer
    a = agents(fake, upload_interval_min_s=0.3)
    assert wait_for(lambda: fake.uploads and a.control.refused, 5)
    assert a.status()["status"].startswith("disabled: upload refused (409)")
    assert a.uploader.dropped == 1
    refused = fake.uploads[0].params["profile_id"]
    # The next poll asks afresh; the fake still says enabled, so profiling resumes.
    assert wait_for(lambda: on(a) and not a.control.refused, 3)
    assert "etag" not in fake.polls[-1].params or len(fake.polls) > 2
    fake.wait_uploads(3, 5)
    ids = [u.params["profile_id"] for u in fake.uploads]
    assert ids.count(refused) == 1  # never retried
    assert len(set(ids)) == len(ids)


def test_upload_5xx_retried_with_same_profile_id(fake, agents):
    fake.set_config(enabled=True, upload_interval_s=0.3)
    answers = iter([503, 500, 201])
    fake.upload_answer = lambda params: next(answers, 201)
    a = agents(fake, upload_interval_min_s=0.3, retry_backoff_min_s=0.05,
               retry_backoff_max_s=0.1)
    ups = fake.wait_uploads(3, 5)
    assert [u.answer for u in ups[:3]] == [503, 500, 201]
    assert len({u.params["profile_id"] for u in ups[:3]}) == 1
    assert wait_for(lambda: a.uploader.sent >= 1, 2)
    assert on(a)


def test_upload_other_4xx_dropped_and_profiling_goes_on(fake, agents):
    fake.set_config(enabled=True, upload_interval_s=0.3)
    fake.upload_answer = lambda params: 400
    a = agents(fake, upload_interval_min_s=0.3)
    ups = fake.wait_uploads(2, 5)
    assert ups[0].params["profile_id"] != ups[1].params["profile_id"]
    assert a.uploader.dropped >= 1 and on(a)


def test_profiles_back_to_back_and_their_contents(fake, agents):
    fake.set_config(enabled=True, upload_interval_s=0.3, sampling_interval_us=10000)
    a = agents(fake, upload_interval_min_s=0.3)
    ups = fake.wait_uploads(4, 8)
    assert len(ups) >= 4
    profs = [u.profile for u in ups]
    for u in ups:
        p = u.params
        assert p["runtime"] == "python" and p["service"] == "svc" and p["instance"] == a.instance
        uuid.UUID(p["profile_id"])
        assert int(p["process_cpu_ns"]) >= 0
    for prev, nxt in zip(profs, profs[1:]):
        assert prev["time_nanos"] + prev["duration_nanos"] == nxt["time_nanos"]
    for p in profs:
        assert p["sample_type"] == [("samples", "count"), ("wall", "nanoseconds")]
        assert p["period_type"] == ("wall", "nanoseconds")
        assert p["period"] >= 10_000_000
        assert 0.3e9 <= p["duration_nanos"] <= 1.5e9
        names = {f for s in p["samples"] for f in s[0]}
        sdk = [n for n in names if n.startswith("roottrace.") and
               ("_guarded" in n or n.endswith("_loop"))]
        assert not sdk, names  # the SDK's threads are left out
        # The main thread (pytest, waiting on the fake) is there for the whole profile.
        main = [s for s in p["samples"] if s[0][0] == "__main__.<module>" or
                "_pytest.main.pytest_cmdline_main" in s[0]]
        assert main
        main_ns = sum(s[2] for s in main)
        assert abs(main_ns - p["duration_nanos"]) <= p["period"] * 1.5, (main_ns, p)
    assert abs(ups[0].profile["time_nanos"] / 1e9 - time.time()) < 10


def test_stop_flushes_the_profile_in_progress(fake, agents):
    fake.set_config(enabled=True, upload_interval_s=60)
    a = agents(fake)
    # 10 s: the self-cost budget stretches the interval on a slow host (DESIGN §5).
    assert wait_for(lambda: a.sampler.samples_taken >= 10, 10), a.status()
    t0 = time.monotonic()
    a.stop(5)
    assert time.monotonic() - t0 < 2
    assert len(fake.uploads) == 1 and fake.uploads[0].answer == 201
    assert fake.uploads[0].profile["duration_nanos"] > 0
    assert a.status()["status"] == "disabled: stopped"
    assert not any(t.is_alive() for t in a.threads)


def test_stop_is_bounded_when_the_server_hangs(fake, agents):
    fake.set_config(enabled=True, upload_interval_s=60)
    fake.upload_hang = True
    a = agents(fake)
    assert wait_for(lambda: a.sampler.samples_taken >= 5, 10), a.status()
    t0 = time.monotonic()
    a.stop(1)
    assert time.monotonic() - t0 < 1.6


def test_poll_rate_at_most_one_per_interval(fake, agents):
    # A server that answers 304 at once, ignoring wait: still one request per interval.
    fake.set_config(enabled=True, poll_interval_s=1)
    fake.set_mode("fast304")
    agents(fake)
    time.sleep(3.2)
    n = len(fake.polls)
    gaps = [b.t - a.t for a, b in zip(fake.polls, fake.polls[1:])]
    assert 2 <= n <= 4, gaps  # 3.2 s at one request per second
    # Arrival times carry the requests' own latency jitter (a loaded host): 0.9 s.
    assert min(gaps) >= 0.9, gaps


def test_change_churn_repolls_at_most_once_a_second(fake, agents):
    # Every poll with an etag gets 200 with a new config at once ("returned because of a
    # change"): the SDK polls again at once, but never more than once a second.
    fake.set_config(enabled=True, poll_interval_s=1.5)
    fake.set_mode("churn")
    a = agents(fake)
    time.sleep(3.8)
    gaps = [b.t - x.t for x, b in zip(fake.polls, fake.polls[1:])]
    # 0 s (no etag, 200) -> 1.5 s later (etag, 200: a change) -> +1 s -> +1 s
    assert len(fake.polls) <= 4, gaps
    assert gaps[0] >= 1.4, gaps
    assert gaps[1:] and all(0.9 <= g <= 1.3 for g in gaps[1:]), gaps
    assert "etag" in fake.polls[1].params
    assert on(a)


def test_queue_is_bounded_dropping_the_oldest():
    up = Uploader(client=None, params=dict, max_profiles=3, max_bytes=1 << 20, deadline_s=1,
                  connect_timeout_s=1)
    ps = [Profile(str(i), "i", i, 1, 1, [], 0) for i in range(5)]
    for p in ps:
        up.put(p)
    assert [p.profile_id for p in up.queue] == ["2", "3", "4"]
    assert up.dropped == 2


def test_oversized_profile_is_trimmed_under_the_limit():
    from pprof_decode import decode
    from roottrace.uploader import TRIMMED, build_body
    import random
    rnd = random.Random(1)
    samples = [(["m.f%d" % rnd.randrange(10 ** 9) for _ in range(20)], 1, 1000 + i)
               for i in range(3000)]
    samples.sort(key=lambda s: -s[2])
    p = Profile("x", "i", 1, 10, 1, samples, 0)
    body = build_body(p, 100 * 1024)
    assert len(body) <= 100 * 1024
    d = decode(body)
    assert d["samples"][-1][0] == [TRIMMED]
    assert sum(s[1] for s in d["samples"]) == 3000
    assert sum(s[2] for s in d["samples"]) == sum(s[2] for s in samples)


def test_distinct_stacks_per_profile_are_bounded():
    from roottrace.sampler import TRIMMED, Aggregate
    agg = Aggregate(max_stacks=3)
    for i in range(10):
        agg.add(("m.f%d" % i,), 10)
    agg.add(("m.f0",), 10)
    s = {tuple(x[0]): x[1:] for x in agg.samples()}
    assert len(s) == 4 and s[(TRIMMED,)] == (7, 70) and s[("m.f0",)] == (2, 20)


def test_upload_backoff_ends_when_the_server_is_back(fake, agents):
    """After an outage (polls failing, an upload failed into a long backoff), the first valid
    poll ends the backoff: what is queued is sent at once, not up to 60 s later."""
    fake.set_config(enabled=True, upload_interval_s=0.3, poll_interval_s=1)
    down = [True]
    fake.upload_answer = lambda params: 503 if down[0] else 201
    a = agents(fake, upload_interval_min_s=0.3, retry_backoff_min_s=30, retry_backoff_max_s=30)
    assert wait_for(lambda: len(fake.uploads) >= 1, 5)  # 503: a 30 s backoff starts
    fake.set_mode("status", code=500)
    n = len(fake.polls)
    assert wait_for(lambda: len(fake.polls) >= n + 1, 3)  # a failed poll
    down[0] = False
    fake.set_mode("normal")
    t0 = time.monotonic()
    assert wait_for(lambda: a.uploader.sent >= 1, 5)
    assert time.monotonic() - t0 < 3
    assert len(fake.uploads) >= 2


def test_upload_backoff_kept_while_polls_stay_valid(fake, agents):
    """Uploads failing (5xx) while every poll is valid: the backoff is kept, polls do not cut
    it short (a failing ingest is not retried once a poll interval)."""
    fake.set_config(enabled=True, upload_interval_s=0.3, poll_interval_s=1)
    fake.upload_answer = lambda params: 503
    a = agents(fake, upload_interval_min_s=0.3, retry_backoff_min_s=30, retry_backoff_max_s=30)
    assert wait_for(lambda: len(fake.uploads) >= 1, 5)
    n = len(fake.polls)
    assert wait_for(lambda: len(fake.polls) >= n + 2, 4)  # two valid polls (304s)
    assert len(fake.uploads) == 1 and on(a)
