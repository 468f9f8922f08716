// Frame naming, thread filtering, depth truncation, bounded aggregates and the self-cost
// budget of the sampler.
package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class SamplerTest {
    static final class Parked {
        final CountDownLatch in = new CountDownLatch(1);
        final CountDownLatch out = new CountDownLatch(1);

        void parkedInApplicationCode() throws InterruptedException {
            in.countDown();
            out.await();
        }
    }

    static Sampler realSampler() {
        return new Sampler(Thread::getAllStackTraces, 100, 15);
    }

    @Test
    void frameNamesAreClassDotMethodWithoutLines() {
        StackTraceElement e = new StackTraceElement("com.shop.Cart", "total", "Cart.java", 42);
        assertEquals("com.shop.Cart.total", Sampler.frameName(e));
        assertEquals("com.shop.Cart$Line.price",
                Sampler.frameName(new StackTraceElement("com.shop.Cart$Line", "price", null, -1)));
        assertEquals("com.shop.Cart.lambda$total$0",
                Sampler.frameName(new StackTraceElement("com.shop.Cart", "lambda$total$0", null, 7)));
        // Hidden classes: the address suffix and JDK 17's lambda counter vary per run.
        assertEquals("com.shop.Cart$$Lambda.run", Sampler.frameName(
                new StackTraceElement("com.shop.Cart$$Lambda$14/0x0000000800c03000", "run", null, -1)));
        assertEquals("com.shop.Cart$$Lambda.run", Sampler.frameName(
                new StackTraceElement("com.shop.Cart$$Lambda/0x000071a8c8001200", "run", null, -1)));
        assertEquals("java.lang.Thread.<init>",
                Sampler.frameName(new StackTraceElement("java.lang.Thread", "<init>", null, 1)));
    }

    @Test
    void aRealStackNamesTheMethodsOnIt() throws Exception {
        Parked p = new Parked();
        Thread t = new Thread(() -> {
            try {
                p.parkedInApplicationCode();
            } catch (InterruptedException e) {
                // done
            }
        }, "app-worker");
        t.start();
        p.in.await();
        try {
            Sampler s = realSampler();
            Sampler.Aggregate agg = new Sampler.Aggregate(1000);
            s.sample(agg, 1000, Set.of(), 256, System.nanoTime());
            List<Encoder.Sample> out = agg.samples();
            Encoder.Sample mine = out.stream()
                    .filter(x -> List.of(x.rootFirst).contains("dev.roottrace.SamplerTest$Parked.parkedInApplicationCode"))
                    .findFirst().orElseThrow();
            assertEquals("java.lang.Thread.run", mine.rootFirst[0]); // root first
            assertEquals(1, mine.count);
            assertEquals(1000, mine.valueNs);
            for (Encoder.Sample x : out) {
                for (String f : x.rootFirst) {
                    assertFalse(f.matches(".*:\\d+$"), f); // no line numbers
                }
            }
        } finally {
            p.out.countDown();
            t.join();
        }
    }

    @Test
    void jvmAndSdkThreadsAreLeftOutApplicationThreadsKept() throws Exception {
        Parked p = new Parked();
        Thread app = new Thread(() -> {
            try {
                p.parkedInApplicationCode();
            } catch (InterruptedException e) {
                // done
            }
        }, "app-worker");
        Parked q = new Parked();
        Thread sdk = new Thread(() -> {
            try {
                q.parkedInApplicationCode();
            } catch (InterruptedException e) {
                // done
            }
        }, "roottrace-sampler");
        app.start();
        sdk.start();
        p.in.await();
        q.in.await();
        try {
            Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
            Map<String, Thread> byName = new HashMap<>();
            all.keySet().forEach(t -> byName.put(t.getName(), t));
            // The JVM's own threads this JVM shows are all recognized.
            for (String n : new String[] {"Reference Handler", "Finalizer", "Signal Dispatcher",
                    "Common-Cleaner", "Notification Thread", "Attach Listener"}) {
                if (byName.containsKey(n)) {
                    assertTrue(Sampler.isJvmThread(byName.get(n)), n);
                }
            }
            assertTrue(byName.containsKey("Reference Handler") && byName.containsKey("Signal Dispatcher"),
                    byName.keySet().toString());
            assertFalse(Sampler.isJvmThread(app));
            assertFalse(Sampler.isJvmThread(Thread.currentThread()));
            Sampler s = realSampler();
            Sampler.Aggregate agg = new Sampler.Aggregate(1000);
            s.sample(agg, 1, Set.of(sdk), 256, 0);
            String parked = "dev.roottrace.SamplerTest$Parked.parkedInApplicationCode";
            long withParked = agg.samples().stream().filter(x -> List.of(x.rootFirst).contains(parked)).count();
            assertEquals(1, withParked); // the app thread, not the excluded "SDK" thread
            for (Encoder.Sample x : agg.samples()) {
                String all2 = String.join(";", x.rootFirst);
                assertFalse(all2.contains("java.lang.ref.Reference.processPendingReferences")
                        || all2.contains("java.lang.ref.Reference$ReferenceHandler")
                        || all2.contains("java.lang.ref.Finalizer$FinalizerThread"), all2);
            }
        } finally {
            p.out.countDown();
            q.out.countDown();
            app.join();
            sdk.join();
        }
    }

    @Test
    void deepStacksKeepTheLeafSideUnderATruncatedRoot() {
        StackTraceElement[] trace = new StackTraceElement[300];
        for (int i = 0; i < trace.length; i++) {
            trace[i] = new StackTraceElement("a.B", "m" + i, null, i);
        }
        String[] leafFirst = realSampler().stack(trace, 256);
        assertEquals(256, leafFirst.length);
        assertEquals("a.B.m0", leafFirst[0]);
        assertEquals("a.B.m254", leafFirst[254]);
        assertEquals(Sampler.TRUNCATED, leafFirst[255]);
        assertEquals(3, realSampler().stack(java.util.Arrays.copyOf(trace, 3), 256).length);
    }

    @Test
    void distinctStacksPerProfileAreBounded() {
        Sampler.Aggregate agg = new Sampler.Aggregate(3);
        for (int i = 0; i < 10; i++) {
            agg.add(new String[] {"m.f" + i}, 10);
        }
        agg.add(new String[] {"m.f0"}, 10);
        Map<String, long[]> got = new HashMap<>();
        for (Encoder.Sample s : agg.samples()) {
            got.put(String.join(";", s.rootFirst), new long[] {s.count, s.valueNs});
        }
        assertEquals(4, got.size());
        assertArrayEquals(new long[] {7, 70}, got.get(Sampler.TRIMMED));
        assertArrayEquals(new long[] {2, 20}, got.get("m.f0"));
    }

    @Test
    void effectiveIntervalIs100xMedianWalk() {
        long[] cost = {0};
        Supplier<Map<Thread, StackTraceElement[]>> walk = () -> {
            long end = System.nanoTime() + cost[0];
            while (System.nanoTime() < end) {
                Thread.onSpinWait();
            }
            return Map.of();
        };
        Sampler s = new Sampler(walk, 100, 5);
        assertEquals(50_000_000, s.effectiveIntervalNs(50_000_000));
        Sampler.Aggregate agg = new Sampler.Aggregate(10);
        cost[0] = 50_000; // 50 us walks: 5 ms < 50 ms, no change
        s.sample(agg, 1, Set.of(), 10, 0); // the first (cold) walk is left out of the median
        assertEquals(0, s.medianWalkNs);
        for (int i = 0; i < 5; i++) {
            s.sample(agg, 1, Set.of(), 10, i);
        }
        assertTrue(s.medianWalkNs >= 50_000 && s.medianWalkNs < 400_000, "" + s.medianWalkNs);
        assertEquals(50_000_000, s.effectiveIntervalNs(50_000_000));
        cost[0] = 2_000_000; // a fake slow walk (2 ms): the interval goes to >= 200 ms
        for (int i = 0; i < 3; i++) {
            s.sample(agg, 1, Set.of(), 10, i);
        }
        long iv = s.effectiveIntervalNs(50_000_000);
        assertTrue(iv >= 200_000_000 && iv == 100 * s.medianWalkNs, "" + iv);
        assertEquals(9, s.samplesTaken);
    }

    /** A stopped agent's threads that live on (its HTTP client's selector thread: JDK 17
     *  cannot close a client) stay the SDK's for the next agent, which leaves them out of
     *  its profiles; ended threads leave the set when an agent is made. */
    @Test
    void aStoppedAgentsThreadsAreStillLeftOutAfterARestart() throws Exception {
        try (TestSupport ts = new TestSupport()) {
            ts.fake.setConfig("enabled", true, "poll_interval_s", 1);
            Set<Thread> before = new java.util.HashSet<>(Agent.SDK_THREADS); // earlier tests' agents
            Agent first = ts.agent();
            assertTrue(TestSupport.waitFor(() -> first.sampler.samplesTaken >= 2, 10),
                    first.status().toJson());
            first.stop(2); // the upload of its profile made its HTTP client
            assertEquals(1, first.status().profilesSent(), first.status().toJson());
            List<Thread> selectors = new java.util.ArrayList<>();
            for (Thread t : first.sdkThreads) {
                if (!before.contains(t) && t.getName().startsWith("HttpClient-")
                        && t.getName().endsWith("-SelectorManager")) {
                    selectors.add(t);
                }
            }
            assertEquals(1, selectors.size(), first.sdkThreads.toString()); // first's client's
            assertTrue(selectors.get(0).isAlive()); // the client is still reachable: it lives on
            Thread ended = new Thread(() -> { }, "ended");
            Agent.SDK_THREADS.add(ended);
            ended.start();
            ended.join();
            Agent second = ts.agent();
            assertTrue(second.sdkThreads.contains(selectors.get(0)), second.sdkThreads.toString());
            assertFalse(second.sdkThreads.contains(ended));
            Sampler.Aggregate agg = new Sampler.Aggregate(1000);
            realSampler().sample(agg, 1, second.sdkThreads, 256, 0);
            for (Encoder.Sample x : agg.samples()) {
                assertFalse(String.join(";", x.rootFirst).contains("SelectorManager.run"),
                        String.join(";", x.rootFirst));
            }
        }
    }
}
