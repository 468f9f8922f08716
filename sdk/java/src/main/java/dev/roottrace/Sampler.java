// Sampler: one wall-clock sample of every application thread from
// Thread.getAllStackTraces(), frames named `fully.qualified.Class.method` (DESIGN.md §3),
// the JVM's and the SDK's own threads left out, and the self-cost budget of DESIGN §5.
package dev.roottrace;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/** Takes samples into an {@link Aggregate}. Not thread-safe: only the sampler thread calls
 *  {@link #sample}; the counters it publishes are volatile. */
final class Sampler {
    /** The synthetic root frame of a stack cut at the depth limit (the server's convention). */
    static final String TRUNCATED = "(truncated)";
    /** The one stack that counts samples of new stacks once a profile holds its maximum. */
    static final String TRIMMED = "(trimmed)";
    /** Names of the JVM's own threads, left out wherever their thread group puts them. */
    static final Set<String> JVM_THREAD_NAMES = Set.of("Reference Handler", "Finalizer",
            "Signal Dispatcher", "Common-Cleaner", "Notification Thread", "Attach Listener",
            "Service Thread", "Monitor Deflation Thread", "process reaper", "DestroyJavaVM",
            "JVMCI-native CompilerThread0", "Surrogate Locker Thread (Concurrent GC)");
    /** Frame names cached per class and method, cleared when it grows past this. */
    private static final int NAME_CACHE_MAX = 20_000;

    private final Supplier<Map<Thread, StackTraceElement[]>> walk; // the stack walk
    private final int factor; // interval >= factor x median walk
    private final long[] walks; // ring of recent walk costs, wall ns
    private int walksN; // walks in the ring (<= walks.length)
    private int walksNext; // next slot in the ring
    private final Map<String, Map<String, String>> names = new HashMap<>(); // class -> method -> frame
    private int namesN; // entries in `names`
    volatile long samplesTaken; // samples since start (status, tests)
    volatile long walkCostTotalNs; // sum of all walk costs, ns
    volatile long medianWalkNs; // median of the recent walks, ns
    /** Recent sample times, monotonic ns (tests): a ring of the last 4096. */
    final long[] sampleTimes = new long[4096];

    /**
     * @param walk the stack walk, {@code Thread::getAllStackTraces} except in tests
     * @param factor self-cost factor (interval >= factor x median walk time)
     * @param window walks in the median
     */
    Sampler(Supplier<Map<Thread, StackTraceElement[]>> walk, int factor, int window) {
        this.walk = walk;
        this.factor = factor;
        this.walks = new long[Math.max(1, window)];
    }

    /** Whether {@code t} is one of the JVM's own threads (DESIGN §5: left out). The
     *  `system` thread group (Reference Handler, Finalizer, Signal Dispatcher, Attach
     *  Listener, Notification Thread, process reaper) and its InnocuousThreadGroup
     *  (Common-Cleaner), plus the names above wherever they run. */
    static boolean isJvmThread(Thread t) {
        String name = t.getName();
        if (JVM_THREAD_NAMES.contains(name) || NameRules.isVmThreadName(name)) {
            return true;
        }
        ThreadGroup g = t.getThreadGroup();
        if (g == null) {
            return true; // terminated since the walk
        }
        return g.getParent() == null || "InnocuousThreadGroup".equals(g.getName());
    }

    /** The frame name of a stack element: `fully.qualified.Class.method`, no line number;
     *  a hidden class's address and a lambda proxy's counter are dropped. */
    static String frameName(StackTraceElement e) {
        return frameName(e.getClassName(), e.getMethodName());
    }

    /** The frame name of a method of class {@code cls} (binary name, as
     *  Class.getName() or JFR's RecordedClass.getName() give it), by the same rule. */
    static String frameName(String cls, String method) {
        return NameRules.withoutLambdaCounter(NameRules.withoutHiddenSuffix(cls)) + "." + method;
    }

    private String cachedName(StackTraceElement e) {
        Map<String, String> byMethod = names.get(e.getClassName());
        if (byMethod == null) {
            if (namesN >= NAME_CACHE_MAX) {
                names.clear();
                namesN = 0;
            }
            byMethod = new HashMap<>();
            names.put(e.getClassName(), byMethod);
        }
        String n = byMethod.get(e.getMethodName());
        if (n == null) {
            n = frameName(e);
            byMethod.put(e.getMethodName(), n);
            namesN++;
        }
        return n;
    }

    /** A thread's stack as frame names, leaf first, at most {@code depth} frames: a deeper
     *  stack keeps its leaf-side depth-1 frames under a {@link #TRUNCATED} root. */
    String[] stack(StackTraceElement[] trace, int depth) {
        int n = Math.min(trace.length, depth);
        String[] out = new String[n];
        for (int i = 0; i < n; i++) {
            out[i] = cachedName(trace[i]);
        }
        if (trace.length > depth) {
            out[n - 1] = TRUNCATED;
        }
        return out;
    }

    /**
     * Adds one sample of every application thread to {@code agg}, each weighted
     * {@code weightNs}, leaving out the threads in {@code exclude} (the SDK's), the JVM's own
     * threads, and threads with no Java frame. Returns the walk's cost in wall ns (the
     * safepoint pause is what the application pays).
     */
    long sample(Aggregate agg, long weightNs, Set<Thread> exclude, int depth, long nowNs) {
        long t0 = System.nanoTime();
        Map<Thread, StackTraceElement[]> all = walk.get();
        for (Map.Entry<Thread, StackTraceElement[]> en : all.entrySet()) {
            Thread t = en.getKey();
            StackTraceElement[] trace = en.getValue();
            if (trace.length == 0 || exclude.contains(t) || isJvmThread(t)) {
                continue;
            }
            agg.add(stack(trace, depth), weightNs);
        }
        long cost = System.nanoTime() - t0;
        record(cost, nowNs);
        return cost;
    }

    private void record(long cost, long nowNs) {
        walkCostTotalNs += cost;
        sampleTimes[(int) (samplesTaken % sampleTimes.length)] = nowNs;
        samplesTaken++;
        if (samplesTaken == 1) {
            return; // the first walk loads and interprets this code: not in the median
        }
        walks[walksNext] = cost;
        walksNext = (walksNext + 1) % walks.length;
        walksN = Math.min(walksN + 1, walks.length);
        long[] w = Arrays.copyOf(walks, walksN);
        Arrays.sort(w);
        medianWalkNs = w[w.length / 2];
    }

    /** The largest of the recent walk costs, ns (0 before the first walk). */
    long maxRecentWalkNs() {
        long m = 0;
        for (int i = 0; i < walksN; i++) {
            m = Math.max(m, walks[i]);
        }
        return m;
    }

    /** The configured interval lengthened so that walking stays under 1/factor of the time
     *  (DESIGN §5 self-cost budget: interval >= 100 x median walk), ns. */
    long effectiveIntervalNs(long configuredNs) {
        return Math.max(configuredNs, factor * medianWalkNs);
    }

    /** Samples of one profile in the making: count and wall ns per distinct stack, at most
     *  maxStacks stacks (later new stacks count under {@link #TRIMMED}). */
    static final class Aggregate {
        /** A leaf-first stack as a map key. */
        private static final class Key {
            final String[] frames; // leaf first
            final int hash; // Arrays.hashCode(frames)

            Key(String[] frames) {
                this.frames = frames;
                this.hash = Arrays.hashCode(frames);
            }

            @Override
            public int hashCode() {
                return hash;
            }

            @Override
            public boolean equals(Object o) {
                return o instanceof Key && ((Key) o).hash == hash
                        && Arrays.equals(((Key) o).frames, frames);
            }
        }

        private final Map<Key, long[]> stacks = new HashMap<>(); // stack -> {count, value ns}
        private final int maxStacks; // bound on stacks.size()

        Aggregate(int maxStacks) {
            this.maxStacks = maxStacks;
        }

        /** Counts one sample of {@code leafFirst} weighing {@code weightNs}. */
        void add(String[] leafFirst, long weightNs) {
            Key k = new Key(leafFirst);
            long[] e = stacks.get(k);
            if (e == null) {
                if (stacks.size() >= maxStacks) {
                    k = new Key(new String[] {TRIMMED});
                    e = stacks.get(k);
                }
                if (e == null) {
                    stacks.put(k, new long[] {1, weightNs});
                    return;
                }
            }
            e[0]++;
            e[1] += weightNs;
        }

        int size() {
            return stacks.size();
        }

        /** Root-first samples, heaviest first (ties by stack text). */
        java.util.List<Encoder.Sample> samples() {
            java.util.List<Encoder.Sample> out = new java.util.ArrayList<>(stacks.size());
            for (Map.Entry<Key, long[]> en : stacks.entrySet()) {
                String[] leaf = en.getKey().frames;
                String[] root = new String[leaf.length];
                for (int i = 0; i < leaf.length; i++) {
                    root[i] = leaf[leaf.length - 1 - i];
                }
                out.add(new Encoder.Sample(root, en.getValue()[0], en.getValue()[1]));
            }
            out.sort((a, b) -> a.valueNs != b.valueNs ? Long.compare(b.valueNs, a.valueNs)
                    : Arrays.compare(a.rootFirst, b.rootFirst));
            return out;
        }
    }
}
