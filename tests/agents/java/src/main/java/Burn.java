/**
 * Burns CPU in Burn.hotLoop (~3/4) and Burn.coldLoop (~1/4) for N seconds
 * (first argument, default 35), with a second thread that only sleeps, while
 * the Pyroscope Java agent (io.pyroscope:agent, attached with -javaagent and
 * configured by PYROSCOPE_* environment variables) uploads to
 * tests/agents/capture.py. See ../run.sh.
 *
 * With BURN_LABELS=1, each coldLoop call runs inside the agent's dynamic
 * labels (io.pyroscope.labels.v2.ScopedContext, endpoint=/cold), found by
 * reflection so that this class compiles and runs without the agent.
 */
public class Burn {
    static volatile long sink;

    static long hotLoop(int n) {
        long x = 1;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 17;
        }
        return x;
    }

    static long coldLoop(int n) {
        long x = 3;
        for (int i = 0; i < n; i++) {
            x = x * 2862933555777941757L + 3037000493L;
            x ^= x >>> 13;
        }
        return x;
    }

    static void sleeper(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static AutoCloseable labelScope() {
        try {
            Class<?> ls = Class.forName("io.pyroscope.labels.v2.LabelsSet");
            Object set = ls.getConstructor(String[].class).newInstance((Object) new String[] {"endpoint", "/cold"});
            Class<?> sc = Class.forName("io.pyroscope.labels.v2.ScopedContext");
            return (AutoCloseable) sc.getConstructor(ls).newInstance(set);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("dynamic labels need the Pyroscope agent", e);
        }
    }

    public static void main(String[] args) throws Exception {
        boolean labels = "1".equals(System.getenv("BURN_LABELS"));
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 35;
        long millis = (long) (seconds * 1000);
        Thread t = new Thread(() -> sleeper(millis + 1000), "sleeper");
        t.setDaemon(true);
        t.start();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        long acc = 0;
        while (System.nanoTime() < deadline) {
            acc += hotLoop(3_000_000);
            if (labels) {
                try (AutoCloseable scope = labelScope()) {
                    acc += coldLoop(1_000_000);
                }
            } else {
                acc += coldLoop(1_000_000);
            }
        }
        sink = acc;
        System.out.println("done " + (acc & 7));
        // The agent uploads the last interval from its shutdown hook.
        System.exit(0);
    }
}
