// The self-cost budget (DESIGN §5) in a running agent: a slow stack walk lengthens the
// effective interval to 100 x the median walk, and status and the poll report it.
package dev.roottrace;

import static dev.roottrace.TestSupport.on;
import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SelfCostTest {
    @Test
    void aSlowWalkLengthensTheIntervalAndStatusSaysSo() throws Exception {
        try (TestSupport ts = new TestSupport()) {
            ts.fake.setConfig("enabled", true, "sampling_interval_us", 20000, "poll_interval_s", 1);
            Agent a = ts.agent(l -> l.selfCostFactor = Limits.SELF_COST_FACTOR, () -> {
                try {
                    Thread.sleep(3); // a fake walk of >= 3 ms: a JVM pausing that long per sample
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return Thread.getAllStackTraces();
            });
            assertTrue(waitFor(() -> on(a) && a.sampler.samplesTaken >= 4, 10), a.status().toJson());
            long iv = a.status().intervalUs();
            double median = a.status().medianWalkUs();
            assertTrue(median >= 3000, "" + median);
            assertTrue(iv >= 300_000 && iv >= 100 * median * 0.99, iv + " vs median " + median);
            // The sampler keeps to it: gaps between samples are at least 100 x 3 ms (the first
            // walk, cold, is left out of the median, so the first gap is the configured 20 ms).
            long n = a.sampler.samplesTaken;
            long[] ring = a.sampler.sampleTimes;
            for (long i = Math.max(2, n - 3); i < n; i++) { // after the first two (cold, then first median)
                long gap = ring[(int) (i % ring.length)] - ring[(int) ((i - 1) % ring.length)];
                assertTrue(gap >= 300_000_000L, "gap " + gap);
            }
            // The next poll reports the lengthened interval.
            assertTrue(waitFor(() -> {
                List<FakeControlPlane.Poll> p = ts.fake.polls();
                Map<String, String> last = p.get(p.size() - 1).params;
                return Long.parseLong(last.get("interval_us")) >= 300_000;
            }, 3));
        }
    }

    @Test
    void aFastWalkKeepsTheConfiguredInterval() throws Exception {
        try (TestSupport ts = new TestSupport()) {
            ts.fake.setConfig("enabled", true, "sampling_interval_us", 1_000_000, "poll_interval_s", 1);
            Agent a = ts.agent(l -> l.selfCostFactor = Limits.SELF_COST_FACTOR, Map::of);
            assertTrue(waitFor(() -> on(a) && a.sampler.samplesTaken >= 1, 4), a.status().toJson());
            assertTrue(a.status().intervalUs() == 1_000_000, a.status().toJson());
        }
    }
}
