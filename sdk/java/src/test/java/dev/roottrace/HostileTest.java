// A hostile control plane cannot make the sampler spin, and profiling is off wherever
// DESIGN §5 says. The sampling floor is the compiled one (20 ms); only the poll interval
// floor and the poll deadline are shortened so each case takes seconds. Modeled on
// sdk/python tests/test_hostile.py.
package dev.roottrace;

import static dev.roottrace.TestSupport.on;
import static dev.roottrace.TestSupport.since;
import static dev.roottrace.TestSupport.sleep;
import static dev.roottrace.TestSupport.tickSlackNs;
import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class HostileTest {
    static final double POLL = 0.2; // poll interval for these tests (compiled floor 1 s)
    static final long FLOOR_NS = Limits.SAMPLING_INTERVAL_MIN_US * 1000;

    static byte[] body(String interval) {
        return ("{\"enabled\": true, \"type\": \"wall\", \"sampling_interval_us\": " + interval
                + ", \"upload_interval_s\": 60, \"max_stack_depth\": 256, \"poll_interval_s\": " + POLL
                + ", \"etag\": \"hostile\"}").getBytes(StandardCharsets.UTF_8);
    }

    /** name, fake mode, raw body, expectation: "clamped" (profiling on at expectUs),
     *  "invalid" (off at once), "absent" (off after 3 poll intervals). */
    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("interval_0", "body", body("0"), "clamped", 20_000L),
                Arguments.of("interval_negative", "body", body("-20000"), "clamped", 20_000L),
                Arguments.of("interval_1e12", "body", body("1e12"), "clamped", 1_000_000L),
                Arguments.of("interval_nan", "body", body("NaN"), "invalid", 0L),
                Arguments.of("interval_string", "body", body("\"1\""), "invalid", 0L),
                Arguments.of("body_50MB", "huge", null, "invalid", 0L),
                Arguments.of("body_50MB_no_length", "huge_close", null, "invalid", 0L),
                Arguments.of("slow_drip", "drip", null, "absent", 0L),
                Arguments.of("http_500", "status", null, "absent", 0L),
                Arguments.of("tcp_reset", "reset", null, "absent", 0L),
                Arguments.of("no_answer", "hang", null, "absent", 0L));
    }

    /** The sampler never sampled faster than the floor; returns samples per second. */
    static double checkRate(Agent a, long fromNs, long toNs) {
        long n = a.sampler.samplesTaken;
        long[] ring = a.sampler.sampleTimes;
        java.util.List<Long> times = new java.util.ArrayList<>();
        for (long i = Math.max(0, n - ring.length); i < n; i++) {
            long t = ring[(int) (i % ring.length)];
            if (t >= fromNs && t <= toNs) {
                times.add(t);
            }
        }
        for (int i = 0; i + 1 < times.size(); i++) {
            long gap = times.get(i + 1) - times.get(i);
            assertTrue(gap >= FLOOR_NS, "gap " + gap);
        }
        double span = (toNs - fromNs) / 1e9;
        assertTrue(times.size() <= span * 1e9 / FLOOR_NS + 1, times.size() + " samples in " + span + " s");
        return times.size() / span;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileControlPlane(String name, String mode, byte[] raw, String kind, long expectUs) throws Exception {
        try (TestSupport ts = new TestSupport()) {
            FakeControlPlane fake = ts.fake;
            fake.setConfig("enabled", true, "poll_interval_s", POLL, "sampling_interval_us", 20000);
            if (raw != null) {
                fake.rawBody = raw;
            }
            fake.setMode(mode);
            Agent a = ts.agent(l -> {
                l.pollIntervalMinS = POLL;
                l.defaultPollIntervalS = POLL;
                l.requestSlackS = 0.5;
            });
            long tStart = System.nanoTime();

            // Phase A: hostile from the first poll.
            sleep(0.9);
            if (kind.equals("clamped")) {
                assertTrue(a.profiling, a.status().toJson());
                assertTrue(waitFor(() -> a.intervalUs() >= expectUs, 1), "" + a.intervalUs());
            } else {
                assertEquals(0, a.sampler.samplesTaken, a.status().toJson());
                assertTrue(List.of("error", "waiting").contains(a.status().state()), a.status().toJson());
            }

            // Phase B: an honest config turns profiling on (sampling at the floor).
            fake.setMode("normal");
            fake.setConfig("sampling_interval_us", 20000);
            assertTrue(waitFor(() -> on(a), 3), a.status().toJson());
            sleep(0.3);

            // Phase C: hostile again.
            long tSwitch = System.nanoTime();
            fake.setMode(mode);
            if (kind.equals("clamped")) {
                sleep(0.8);
                assertTrue(on(a), a.status().toJson());
                long iv = a.status().intervalUs();
                long budget = (long) (tickSlackNs(a) / 1000); // loaded host
                assertTrue(iv >= expectUs && iv <= Math.max(expectUs, budget), iv + " " + budget);
            } else {
                // Off within one poll (invalid) or three poll intervals (absent), plus 0.5 s for
                // the poll's own deadline and 0.5 s for a 2-core host shared with other jobs;
                // the sampler wakes at either, whatever its tick.
                double limit = (kind.equals("invalid") ? POLL : 3 * POLL) + 1.0;
                assertTrue(waitFor(() -> !a.profiling, limit + 1), a.status().toJson());
                assertTrue(since(tSwitch) <= limit, name + " took " + since(tSwitch));
                assertEquals("error", a.status().state(), a.status().toJson());
                long n = a.sampler.samplesTaken;
                sleep(0.4);
                assertEquals(n, a.sampler.samplesTaken); // off means off
            }
            double rate = checkRate(a, tStart, System.nanoTime());
            assertTrue(rate <= 1e9 / FLOOR_NS);
            List<FakeControlPlane.Poll> polls = fake.polls();
            long recent = polls.stream().filter(p -> p.t >= tSwitch).count();
            assertTrue(recent <= since(tSwitch) / POLL + 2, recent + " polls in " + since(tSwitch) + " s; agent polls " + a.polls + " fake total " + polls.size());
            long t0 = System.nanoTime();
            a.stop(2);
            assertTrue(since(t0) < 2.5);
            System.out.printf("%s: %.1f samples/s overall, interval %d us%n", name, rate, a.intervalUs());
        }
    }
}
