// Accuracy workload (tests/accuracy) for the Java SDK's CPU profiles from JFR: the main
// thread burns about 0.7 of a CPU in one known method, burnHot: every 100 ms it calls it over
// and over for 70 ms of wall time (less CPU than that on a busy host or under a CPU quota).
// Prints JSON lines on stdout, as burn_hot.js does: "profiling" when the SDK profiles, "burn"
// after every burst with the wall and CPU time (the main thread's CPU clock,
// ThreadMXBean.getCurrentThreadCpuTime) spent inside burnHot since the start, "stopping" and
// "stopped" (with the SDK's status) around RootTrace.stop. It runs RUN_S seconds from the
// first profile. Compiled with the SDK's classes by tests/accuracy/conftest.py.
// Usage: java -cp CLASSES BurnHot SERVER KEY SERVICE RUN_S
import dev.roottrace.Options;
import dev.roottrace.RootTrace;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;

public final class BurnHot {
    static final long PERIOD_NS = 100_000_000L;
    static final long BURST_NS = 70_000_000L;
    static final int CHUNK = 50_000; // xorshift rounds per call: ~0.1 ms

    static int burnHot(int seed, int n) {
        int x = seed | 1;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 17;
            x ^= x << 5;
            x += i;
        }
        return x;
    }

    static void emit(String json) {
        double t = System.currentTimeMillis() / 1000.0;
        System.out.println("{" + json + (json.isEmpty() ? "" : ",") + "\"t\":" + t + "}");
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        double runS = Double.parseDouble(args[3]);
        RootTrace.start(new Options().server(args[0]).key(args[1]).service(args[2])
                .version("accuracy-1"));
        ThreadMXBean tmx = ManagementFactory.getThreadMXBean();
        int acc = 1;
        double burnMs = 0, burnCpuMs = 0;
        long since = 0;
        long next = System.nanoTime();
        while (true) {
            long c0 = tmx.getCurrentThreadCpuTime();
            long end = System.nanoTime() + BURST_NS;
            for (long t0 = System.nanoTime(); t0 < end; ) {
                acc = burnHot(acc, CHUNK);
                long t1 = System.nanoTime();
                burnMs += (t1 - t0) / 1e6;
                t0 = t1;
            }
            burnCpuMs += (tmx.getCurrentThreadCpuTime() - c0) / 1e6;
            emit("\"event\":\"burn\",\"burn_ms\":" + burnMs + ",\"burn_cpu_ms\":" + burnCpuMs
                    + ",\"acc\":" + acc);
            long now = System.nanoTime();
            if (since == 0 && RootTrace.status().state().equals("profiling")) {
                since = now;
                emit("\"event\":\"profiling\"");
            }
            if (since != 0 && now - since >= (long) (runS * 1e9)) {
                break;
            }
            next = Math.max(next + PERIOD_NS, now);
            long left = next - System.nanoTime();
            if (left > 0) {
                Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
            }
        }
        emit("\"event\":\"stopping\"");
        RootTrace.stop(Duration.ofSeconds(5));
        emit("\"event\":\"stopped\",\"info\":" + RootTrace.status().toJson());
    }
}
