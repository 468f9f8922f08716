// The control-plane protocol and fail-closed transitions against a fake control plane
// (docs/control-plane.md); modeled on sdk/python tests/test_failclosed.py.
package dev.roottrace;

import static dev.roottrace.TestSupport.on;
import static dev.roottrace.TestSupport.since;
import static dev.roottrace.TestSupport.sleep;
import static dev.roottrace.TestSupport.tickSlackNs;
import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class FailClosedTest {
    TestSupport ts;
    FakeControlPlane fake;

    @BeforeEach
    void setUp() throws Exception {
        ts = new TestSupport();
        fake = ts.fake;
    }

    @AfterEach
    void tearDown() {
        ts.close();
    }

    @Test
    void profilesOnlyAfterEnabledConfigAndStopsOnDisabled() {
        fake.setConfig("enabled", false, "poll_interval_s", 1, "sampling_interval_us", 20000);
        Agent a = ts.agent();
        assertTrue(waitFor(() -> a.status().status().equals("disabled"), 3), a.status().toJson());
        sleep(0.3);
        assertEquals(0, a.sampler.samplesTaken);
        assertFalse(a.profiling);
        long t0 = System.nanoTime();
        fake.setConfig("enabled", true);
        assertTrue(waitFor(() -> on(a), 3));
        assertTrue(since(t0) < 2.5, "" + since(t0)); // the held poll returns on the change
        assertTrue(waitFor(() -> a.sampler.samplesTaken > 5, 10), a.status().toJson()); // budget-stretched on a slow host
        fake.setConfig("enabled", false);
        assertTrue(waitFor(() -> !a.profiling, 2.5));
        assertEquals("disabled", a.status().status());
        long n = a.sampler.samplesTaken;
        sleep(0.3);
        assertEquals(n, a.sampler.samplesTaken);
    }

    @Test
    void pollParametersEtagAndWait() {
        fake.setConfig("enabled", true, "poll_interval_s", 1);
        long beforeStart = System.nanoTime(); // the first poll starts after this
        Agent a = ts.agent();
        assertTrue(waitFor(() -> fake.polls().size() >= 3, 5));
        List<FakeControlPlane.Poll> polls = fake.polls();
        Map<String, String> first = polls.get(0).params;
        Map<String, String> second = polls.get(1).params;
        assertFalse(first.containsKey("etag") || first.containsKey("wait"));
        for (Map<String, String> p : List.of(first, second)) {
            assertEquals("svc", p.get("service"));
            assertEquals(a.instance, p.get("instance"));
            assertEquals("java", p.get("runtime"));
            assertEquals("0.1.0", p.get("sdk_version"));
            assertEquals("1.0", p.get("version"));
            assertEquals(System.getProperty("java.version"), p.get("runtime_version"));
            assertTrue(java.util.regex.Pattern.matches(StatusText.GRAMMAR, p.get("status")), p.get("status"));
            assertTrue(Long.parseLong(p.get("interval_us")) >= 20000);
        }
        assertTrue(first.get("status").startsWith("waiting"), first.get("status"));
        assertEquals(fake.etag(), second.get("etag"));
        assertEquals("1", second.get("wait"));
        assertEquals("profiling", second.get("status"));
        // The configured 50 ms, or longer by the self-cost budget (first walks run cold).
        assertTrue(Long.parseLong(second.get("interval_us")) >= 50000, second.get("interval_us"));
        // The next poll starts one poll interval after the first one started. The first one's
        // arrival is later than its start by a cold connect (~30 ms seen on Java 25), so the
        // bound is from before the agent existed, not from that arrival.
        assertTrue((polls.get(1).t - beforeStart) / 1e9 >= 1.0, "" + (polls.get(1).t - beforeStart));
        assertTrue(on(a)); // 304s keep the config valid
    }

    @Test
    void otherTypeRequestedProfilesWallAndSaysSo() {
        fake.setConfig("enabled", true, "type", "heap");
        Agent a = ts.agent();
        assertTrue(waitFor(() -> a.status().status().equals("profiling: heap not supported, sending wall"), 3),
                a.status().toJson());
        assertTrue(waitFor(() -> a.profiling, 1));
    }

    @Test
    void invalidConfigStopsAtOnceAndValidResumes() {
        fake.setConfig("enabled", true, "poll_interval_s", 1);
        Agent a = ts.agent();
        assertTrue(waitFor(() -> on(a), 3));
        fake.rawBody = "{\"enabled\": true, \"sampling_interval_us\": NaN}".getBytes();
        fake.setMode("body");
        long t0 = System.nanoTime();
        assertTrue(waitFor(() -> !a.profiling, 3));
        assertTrue(since(t0) <= 2.2, "" + since(t0)); // the held poll, then at most one interval
        assertTrue(a.status().status().startsWith("error: invalid config: malformed JSON"), a.status().status());
        int n = fake.polls().size();
        assertTrue(waitFor(() -> fake.polls().size() > n, 2));
        List<FakeControlPlane.Poll> polls = fake.polls();
        assertFalse(polls.get(polls.size() - 1).params.containsKey("etag")); // asks afresh
        fake.setMode("normal");
        assertTrue(waitFor(() -> on(a), 3));
    }

    @Test
    void noValidConfigForThreePollIntervalsStops() {
        fake.setConfig("enabled", true, "poll_interval_s", 0.2);
        Agent a = ts.agent(l -> l.pollIntervalMinS = 0.2);
        assertTrue(waitFor(() -> on(a), 3));
        // Three 0.2 s polls; the sampler wakes when the config goes stale, whatever its tick
        // (aStretchedTickDoesNotOutliveTheConfig).
        pollsFailUntilOff(a, 0.35, 1.0);
    }

    /** Makes every poll answer 503 and requires profiling off after between minS and maxS
     *  (still on at 0.25 s: one failed poll is not enough), with the status saying why; then
     *  lets polls succeed again and requires profiling back on. */
    private void pollsFailUntilOff(Agent a, double minS, double maxS) {
        fake.code = 503;
        fake.setMode("status");
        long t0 = System.nanoTime();
        sleep(0.25);
        assertTrue(a.profiling, a.status().toJson());
        assertTrue(waitFor(() -> !a.profiling, maxS + 1), a.status().toJson());
        double took = since(t0);
        assertTrue(took >= minS && took <= maxS, "" + took);
        assertEquals("error: no valid config for 3 poll intervals (config poll answered 503: boom)",
                a.status().status());
        fake.setMode("normal");
        assertTrue(waitFor(() -> on(a), 3));
    }

    @Test
    void aStretchedTickDoesNotOutliveTheConfig() {
        // A self-cost factor of 10^6 stretches every tick past 10 s (any walk takes >= 10 us),
        // far beyond the 0.6 s after which the config is stale: profiling must still stop
        // then, not at the next tick (DESIGN §5; before the fix it took the whole tick).
        fake.setConfig("enabled", true, "poll_interval_s", 0.2);
        Agent a = ts.agent(l -> {
            l.pollIntervalMinS = 0.2;
            l.selfCostFactor = 1_000_000;
        });
        assertTrue(waitFor(() -> on(a) && a.status().intervalUs() >= 10_000_000, 5), a.status().toJson());
        pollsFailUntilOff(a, 0.35, 2.0);
    }

    @Test
    void refusedPollForgetsTheEtagAndA503KeepsIt() {
        fake.setConfig("enabled", true, "poll_interval_s", 1);
        Agent a = ts.agent();
        assertTrue(waitFor(() -> on(a), 3));
        fake.setCodes(503, 401); // the next poll gets 503, every later one 401 (the key revoked)
        assertTrue(waitFor(() -> !a.profiling, 6), a.status().status());
        assertEquals("error: no valid config for 3 poll intervals (config poll answered 401: boom)",
                a.status().status());
        assertFalse(fake.polls().get(0).params.containsKey("etag"));
        assertTrue(waitFor(() -> fake.coded().size() >= 3, 3), "" + fake.coded().size());
        List<Map<String, String>> refused = fake.coded();
        assertEquals(fake.etag(), refused.get(0).get("etag")); // the 503's poll: the 200's etag
        assertEquals(fake.etag(), refused.get(1).get("etag")); // a 503 keeps it
        assertEquals("1", refused.get(1).get("wait"));
        for (int i = 2; i < refused.size(); i++) { // after a 401: no etag, not held
            Map<String, String> p = refused.get(i);
            assertFalse(p.containsKey("etag") || p.containsKey("wait"), "refused poll " + (i + 1) + ": " + p);
        }
        int n = fake.polls().size();
        fake.setMode("normal"); // the key is restored
        assertTrue(waitFor(() -> on(a), 3), a.status().status()); // profiling resumes after the 200
        Map<String, String> first = fake.polls().get(n).params;
        assertFalse(first.containsKey("etag") || first.containsKey("wait"), "" + first);
        assertEquals("profiling", a.status().status());
    }

    @Test
    void upload409DropsAndStopsUntilEnabledAgain() throws Exception {
        fake.setConfig("enabled", true, "poll_interval_s", 1, "upload_interval_s", 0.3);
        AtomicInteger n = new AtomicInteger();
        fake.uploadAnswer = p -> n.incrementAndGet() == 1 ? 409 : 201;
        Agent a = ts.agent(l -> l.uploadIntervalMinS = 0.3);
        assertTrue(waitFor(() -> !fake.uploads().isEmpty() && a.control.refused, 5));
        assertTrue(a.status().status().startsWith("disabled: upload refused (409)"), a.status().status());
        assertEquals(1, a.uploader.dropped);
        String refusedId = fake.uploads().get(0).params.get("profile_id");
        assertTrue(waitFor(() -> on(a) && !a.control.refused, 3)); // the next poll asks afresh
        List<FakeControlPlane.Upload> ups = fake.waitUploads(3, 5);
        List<String> ids = new ArrayList<>();
        ups.forEach(u -> ids.add(u.params.get("profile_id")));
        assertEquals(1, ids.stream().filter(refusedId::equals).count()); // never retried
        assertEquals(ids.size(), new HashSet<>(ids).size());
    }

    @Test
    void upload5xxRetriedWithTheSameProfileId() throws Exception {
        fake.setConfig("enabled", true, "upload_interval_s", 0.3);
        AtomicInteger n = new AtomicInteger();
        int[] answers = {503, 500, 201};
        fake.uploadAnswer = p -> answers[Math.min(n.getAndIncrement(), 2)];
        Agent a = ts.agent(l -> {
            l.uploadIntervalMinS = 0.3;
            l.retryBackoffMinS = 0.05;
            l.retryBackoffMaxS = 0.1;
        });
        List<FakeControlPlane.Upload> ups = fake.waitUploads(3, 5);
        assertEquals(List.of(503, 500, 201), List.of(ups.get(0).answer, ups.get(1).answer, ups.get(2).answer));
        assertEquals(1, new HashSet<>(List.of(ups.get(0).params.get("profile_id"), ups.get(1).params.get("profile_id"),
                ups.get(2).params.get("profile_id"))).size());
        assertTrue(waitFor(() -> a.uploader.sent >= 1, 2));
        assertTrue(on(a));
    }

    @Test
    void uploadBackoffEndsWhenTheServerIsBack() {
        // After an outage (polls failing, an upload failed into a long backoff), the first valid
        // poll ends the backoff: what is queued goes at once, not up to 60 s later (tests/faults).
        fake.setConfig("enabled", true, "upload_interval_s", 0.3, "poll_interval_s", 1);
        boolean[] down = {true};
        fake.uploadAnswer = p -> down[0] ? 503 : 201;
        Agent a = ts.agent(l -> {
            l.uploadIntervalMinS = 0.3;
            l.retryBackoffMinS = 30;
            l.retryBackoffMaxS = 30;
        });
        assertTrue(waitFor(() -> fake.uploads().size() >= 1, 5)); // 503: a 30 s backoff starts
        fake.code = 500;
        fake.setMode("status");
        int n = fake.polls().size();
        assertTrue(waitFor(() -> fake.polls().size() >= n + 1, 3)); // a failed poll
        down[0] = false;
        fake.setMode("normal");
        long t0 = System.nanoTime();
        assertTrue(waitFor(() -> a.uploader.sent >= 1, 5), a.status().toJson());
        assertTrue(since(t0) < 3, "" + since(t0));
    }

    @Test
    void uploadBackoffKeptWhilePollsStayValid() {
        // Uploads failing (5xx) while every poll is valid: polls do not cut the backoff short.
        fake.setConfig("enabled", true, "upload_interval_s", 0.3, "poll_interval_s", 1);
        fake.uploadAnswer = p -> 503;
        Agent a = ts.agent(l -> {
            l.uploadIntervalMinS = 0.3;
            l.retryBackoffMinS = 30;
            l.retryBackoffMaxS = 30;
        });
        assertTrue(waitFor(() -> fake.uploads().size() >= 1, 5));
        int n = fake.polls().size();
        assertTrue(waitFor(() -> fake.polls().size() >= n + 2, 4)); // two valid polls (304s)
        assertEquals(1, fake.uploads().size());
        assertTrue(on(a));
    }

    @Test
    void uploadOther4xxDroppedAndProfilingGoesOn() throws Exception {
        fake.setConfig("enabled", true, "upload_interval_s", 0.3);
        fake.uploadAnswer = p -> 400;
        Agent a = ts.agent(l -> l.uploadIntervalMinS = 0.3);
        List<FakeControlPlane.Upload> ups = fake.waitUploads(2, 5);
        assertFalse(ups.get(0).params.get("profile_id").equals(ups.get(1).params.get("profile_id")));
        assertTrue(a.uploader.dropped >= 1 && on(a));
    }

    @Test
    void profilesBackToBackAndTheirContents() throws Exception {
        fake.setConfig("enabled", true, "upload_interval_s", 0.3, "sampling_interval_us", 20000);
        Agent a = ts.agent(l -> l.uploadIntervalMinS = 0.3);
        List<FakeControlPlane.Upload> ups = fake.waitUploads(4, 8);
        assertTrue(ups.size() >= 4);
        for (FakeControlPlane.Upload u : ups) {
            assertEquals("java", u.params.get("runtime"));
            assertEquals("svc", u.params.get("service"));
            assertEquals(a.instance, u.params.get("instance"));
            UUID.fromString(u.params.get("profile_id"));
            assertTrue(Long.parseLong(u.params.get("process_cpu_ns")) >= 0);
        }
        for (int i = 0; i + 1 < ups.size(); i++) {
            PprofDecode.Profile prev = ups.get(i).profile;
            PprofDecode.Profile next = ups.get(i + 1).profile;
            assertEquals(prev.timeNanos + prev.durationNanos, next.timeNanos); // no gaps
        }
        for (FakeControlPlane.Upload u : ups) {
            PprofDecode.Profile p = u.profile;
            assertEquals(List.of("samples/count", "wall/nanoseconds"), p.sampleTypes);
            assertEquals("wall/nanoseconds", p.periodType);
            assertTrue(p.period >= 20_000_000, "" + p.period);
            // A profile ends at the first sampling tick past its interval: on a slow host the
            // self-cost budget stretches ticks (the factor x the median walk, DESIGN §5).
            double slack = tickSlackNs(a);
            assertTrue(p.durationNanos >= 0.3e9 && p.durationNanos <= 1.5e9 + slack,
                    p.durationNanos + " (slack " + slack + ")");
            for (String f : p.frames()) {
                assertFalse(f.startsWith("dev.roottrace.Agent.") || f.startsWith("dev.roottrace.Sampler."), f);
                assertFalse(f.startsWith("java.lang.ref.Reference"), f);
            }
            // This test's own thread (waiting on the fake) is there for the whole profile.
            long mine = 0;
            for (PprofDecode.Sample s : p.samples) {
                if (s.rootFirst.contains("dev.roottrace.FailClosedTest.profilesBackToBackAndTheirContents")) {
                    mine += s.value;
                }
            }
            assertTrue(Math.abs(mine - p.durationNanos) <= p.period * 1.5, mine + " vs " + p.durationNanos);
        }
        assertTrue(Math.abs(ups.get(0).profile.timeNanos / 1e9 - System.currentTimeMillis() / 1e3) < 10);
    }

    @Test
    void stopFlushesTheProfileInProgress() {
        fake.setConfig("enabled", true, "upload_interval_s", 60, "sampling_interval_us", 20000);
        Agent a = ts.agent();
        assertTrue(waitFor(() -> a.sampler.samplesTaken >= 10, 10), a.status().toJson());
        long t0 = System.nanoTime();
        a.stop(5);
        assertTrue(since(t0) < 2, "" + since(t0));
        assertEquals(1, fake.uploads().size());
        assertEquals(201, fake.uploads().get(0).answer);
        assertTrue(fake.uploads().get(0).profile.durationNanos > 0);
        assertEquals("disabled: stopped", a.status().status());
        for (Thread t : a.threads) {
            assertFalse(t.isAlive(), t.getName());
        }
    }

    @Test
    void stopIsBoundedWhenTheServerHangs() {
        fake.setConfig("enabled", true, "upload_interval_s", 60, "sampling_interval_us", 20000);
        fake.uploadHang = true;
        Agent a = ts.agent();
        assertTrue(waitFor(() -> a.sampler.samplesTaken >= 5, 10), a.status().toJson());
        long t0 = System.nanoTime();
        a.stop(1);
        assertTrue(since(t0) < 1.6, "" + since(t0));
    }

    @Test
    void pollRateAtMostOnePerInterval() {
        fake.setConfig("enabled", true, "poll_interval_s", 1);
        fake.setMode("fast304");
        ts.agent();
        sleep(3.2);
        List<FakeControlPlane.Poll> polls = fake.polls();
        List<Double> gaps = new ArrayList<>();
        for (int i = 0; i + 1 < polls.size(); i++) {
            gaps.add((polls.get(i + 1).t - polls.get(i).t) / 1e9);
        }
        assertTrue(polls.size() >= 2 && polls.size() <= 4, gaps.toString());
        assertTrue(gaps.stream().allMatch(g -> g >= 0.9), gaps.toString());
    }

    @Test
    void changeChurnRepollsAtMostOnceASecond() {
        fake.setConfig("enabled", true, "poll_interval_s", 1.5);
        fake.setMode("churn");
        Agent a = ts.agent();
        sleep(3.8);
        List<FakeControlPlane.Poll> polls = fake.polls();
        List<Double> gaps = new ArrayList<>();
        for (int i = 0; i + 1 < polls.size(); i++) {
            gaps.add((polls.get(i + 1).t - polls.get(i).t) / 1e9);
        }
        // 0 s (no etag, 200) -> 1.5 s later (etag, 200: a change) -> +1 s -> +1 s
        assertTrue(polls.size() <= 4, gaps.toString());
        assertTrue(gaps.get(0) >= 1.4, gaps.toString());
        assertTrue(gaps.size() >= 2 && gaps.subList(1, gaps.size()).stream().allMatch(g -> g >= 0.9 && g <= 1.3),
                gaps.toString());
        assertTrue(polls.get(1).params.containsKey("etag"));
        assertTrue(on(a));
    }

    @Test
    void queueIsBoundedDroppingTheOldest() {
        Uploader up = new Uploader(null, Map::of, 3, 1 << 20, 1);
        for (int i = 0; i < 5; i++) {
            up.put(new Uploader.Profile(String.valueOf(i), "i", i, 1, 1, List.of(), 0L));
        }
        assertEquals(List.of("2", "3", "4"), up.queuedIds());
        assertEquals(2, up.dropped);
    }

    @Test
    void oversizedProfileIsTrimmedUnderTheLimit() throws Exception {
        java.util.Random rnd = new java.util.Random(1);
        List<Encoder.Sample> samples = new ArrayList<>();
        long total = 0;
        for (int i = 0; i < 3000; i++) {
            String[] st = new String[20];
            for (int j = 0; j < 20; j++) {
                st[j] = "m.f" + rnd.nextInt(1_000_000_000);
            }
            samples.add(new Encoder.Sample(st, 1, 1000 + i));
            total += 1000 + i;
        }
        samples.sort((x, y) -> Long.compare(y.valueNs, x.valueNs));
        Uploader.Profile p = new Uploader.Profile("x", "i", 1, 10, 1, samples, 0L);
        byte[] body = Uploader.buildBody(p, 100 * 1024);
        assertTrue(body.length <= 100 * 1024, "" + body.length);
        PprofDecode.Profile d = PprofDecode.decode(
                new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(body)).readAllBytes());
        assertEquals(List.of(Sampler.TRIMMED), d.samples.get(d.samples.size() - 1).rootFirst);
        assertEquals(3000, d.samples.stream().mapToLong(s -> s.count).sum());
        assertEquals(total, d.samples.stream().mapToLong(s -> s.value).sum());
    }

    @Test
    void uploadAnswersClassified() {
        assertEquals(Uploader.Outcome.SENT, Uploader.classify(201));
        assertEquals(Uploader.Outcome.SENT, Uploader.classify(200));
        assertEquals(Uploader.Outcome.REFUSED, Uploader.classify(409));
        assertEquals(Uploader.Outcome.DROPPED, Uploader.classify(400));
        assertEquals(Uploader.Outcome.DROPPED, Uploader.classify(413));
        assertEquals(Uploader.Outcome.RETRY, Uploader.classify(500));
        assertEquals(Uploader.Outcome.RETRY, Uploader.classify(507));
        for (int i = 1; i <= 40; i++) {
            double b = Uploader.backoff(i, 1, 60);
            assertTrue(b >= 0.8 && b <= 60, "" + b);
        }
    }
}
