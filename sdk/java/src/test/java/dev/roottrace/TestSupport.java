// Shared test helpers: agents with test limits against a fake control plane, and waiting.
package dev.roottrace;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

final class TestSupport implements AutoCloseable {
    final FakeControlPlane fake; // the fake control plane
    private final List<Agent> made = new ArrayList<>();

    TestSupport() throws Exception {
        fake = new FakeControlPlane();
    }

    /** A started agent against the fake, with limits changed by {@code tweak}. */
    Agent agent(Consumer<Limits> tweak) {
        return agent(tweak, Thread::getAllStackTraces);
    }

    /** The same with a stack walk of the test's choosing. */
    Agent agent(Consumer<Limits> tweak, java.util.function.Supplier<java.util.Map<Thread, StackTraceElement[]>> walk) {
        return agent(tweak, walk, a -> { });
    }

    /** The same, with {@code beforeStart} applied to the agent before it starts (JFR hooks). */
    Agent agent(Consumer<Limits> tweak, Consumer<Agent> beforeStart) {
        return agent(tweak, Thread::getAllStackTraces, beforeStart);
    }

    Agent agent(Consumer<Limits> tweak, java.util.function.Supplier<java.util.Map<Thread, StackTraceElement[]>> walk,
            Consumer<Agent> beforeStart) {
        Limits l = Limits.DEFAULT.override();
        // Tests that are not about the self-cost budget run under a tenth of it, so that a
        // loaded host (30 ms walks seen in CI) does not stretch their ticks to seconds;
        // SelfCostTest and ConfigTest check the compiled factor of 100.
        l.selfCostFactor = TEST_SELF_COST_FACTOR;
        tweak.accept(l);
        Agent a = new Agent(new Options().server(fake.url()).key("test-key").service("svc")
                .version("1.0"), l, walk);
        made.add(a);
        beforeStart.accept(a);
        a.start();
        return a;
    }

    Agent agent() {
        return agent(l -> { });
    }

    /** The self-cost factor tests run under unless they set one (DESIGN §5 compiles 100). */
    static final int TEST_SELF_COST_FACTOR = 10;

    /** How far the self-cost budget may stretch one sampling tick of a, ns: twice its factor
     *  times the slowest recent walk (DESIGN §5). */
    static double tickSlackNs(Agent a) {
        return 2.0 * a.limits.selfCostFactor * a.sampler.maxRecentWalkNs();
    }

    @Override
    public void close() {
        for (Agent a : made) {
            a.stop(2);
        }
        fake.close();
    }

    /** Polls pred until true or timeout (seconds); returns its last value. */
    static boolean waitFor(BooleanSupplier pred, double timeoutS) {
        long end = System.nanoTime() + (long) (timeoutS * 1e9);
        while (true) {
            boolean v = pred.getAsBoolean();
            if (v || System.nanoTime() >= end) {
                return v;
            }
            sleep(0.01);
        }
    }

    static void sleep(double s) {
        try {
            Thread.sleep((long) (s * 1000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static double since(long t0) {
        return (System.nanoTime() - t0) / 1e9;
    }

    /** Profiling on, and the status says so. */
    static boolean on(Agent a) {
        return a.profiling && a.status().state().equals("profiling");
    }
}
