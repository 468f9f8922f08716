// A fixed Java workload for the SDK overhead benchmark. The default shape is the Java twin of
// ../work_python.py, 10 threads: 4 compute threads (JSON-like string building and parsing,
// SHA-256, sorting, integer arithmetic; the same every run), 3 sleeping in short sleeps, 3
// blocked on a queue, a lock and a socket. With RT_BENCH_JAVA_SHAPE=light, 2 compute threads
// and nothing else do the same work (twice the rounds each): a service whose few threads all
// work, where a stack walk is short and the sampler keeps its configured interval. The run
// ends when the compute threads have done their work.
// The work is timed from the moment the SDK is profiling and has taken its first sample (or at
// once without it) to its end; with the SDK, RootTrace.stop() (end the profile, encode,
// upload) is timed apart. The JVM's first upload loads and interprets the encoder and the
// HTTP body path once (~300 ms of CPU on docs/performance.md's machine); a service pays that
// once, not every upload interval. So after the timed part the SDK is started again and its
// second stop() is timed too: "stop_*" is that warm upload, as each later one is, and
// "first_stop_cpu_s" the first. (Restarting before the timed part instead would put the new
// agent's young objects in every young GC of it: 1.8 -> 4 ms pauses, not the steady state.)
//
// Usage (single-file source launch, JDK 11+, or compiled as run.sh does; the agent jar on the
// class path):
//   java -cp sdk/java/target/roottrace-agent.jar bench/sdk_overhead/work_java/WorkJava.java ROUNDS
//   java -cp sdk/java/target/roottrace-agent.jar bench/sdk_overhead/work_java/WorkJava.java \
//        ROUNDS SERVER KEY SERVICE
// Prints one JSON line: {"sdk", "shape", "wall_s", "cpu_s", "stop_wall_s", "stop_cpu_s",
// "first_stop_cpu_s", "checksum", "sdk_status"}. RT_BENCH_JAVA_JFR=1 says the service
// profiles cpu (JFR).

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

public class WorkJava {
    static final boolean LIGHT = "light".equals(System.getenv("RT_BENCH_JAVA_SHAPE"));
    static final int COMPUTE = LIGHT ? 2 : 4;
    /** RT_BENCH_JAVA_JFR=1: the service profiles cpu through JFR, whose samples are counted
     *  only when a chunk is read at upload, so the start waits for "profiling" alone. */
    static final boolean JFR = "1".equals(System.getenv("RT_BENCH_JAVA_JFR"));
    static final int SLEEPERS = 3; // and 3 waiters; none in the light shape
    static volatile boolean stop;

    static final int WARMUP_ROUNDS = 150; // before a co-scheduled run's barrier

    static long oneRound(long seed) throws Exception {
        long check = 0;
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (int i = 0; i < 40; i++) {
            long n = seed * 40 + i;
            StringBuilder b = new StringBuilder("{\"customer\":\"customer-").append(n % 113)
                    .append("\",\"id\":").append(n).append(",\"lines\":[");
            for (int j = 0; j < 20; j++) {
                b.append(j == 0 ? "" : ",").append("{\"price\":").append(((n * j) % 500) / 10.0 + 0.99)
                        .append(",\"qty\":").append((n + j) % 7 + 1).append(",\"sku\":\"SKU-")
                        .append((n * 31 + j) % 997).append("\"}");
            }
            String text = b.append("]}").toString();
            double total = 0;
            for (String line : text.split("\\{\"price\":")) { // parse it back
                int q = line.indexOf(",\"qty\":");
                if (q > 0) {
                    double price = Double.parseDouble(line.substring(0, q));
                    int qty = Integer.parseInt(line.substring(q + 7, line.indexOf(',', q + 7)));
                    total += qty * price;
                }
            }
            check += (long) (total * 100);
            byte[] d = sha.digest(text.getBytes(StandardCharsets.UTF_8));
            check += ((d[0] & 0xff) << 16) | ((d[1] & 0xff) << 8) | (d[2] & 0xff);
            String[] words = text.replace('"', ' ').replace(',', ' ').trim().split("\\s+");
            Arrays.sort(words);
            check += String.join("-", words).toUpperCase().length();
            long x = n;
            for (int k = 0; k < 300; k++) {
                x = (x * 1103515245L + 12345 + k) & 0x7FFFFFFF;
            }
            check = (check + x) % 1_000_000_007L;
        }
        return check;
    }

    static Thread thread(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    static long processCpuNs() {
        Object os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
    }

    /** Starts the SDK and waits until it is profiling and (the wall sampler) has taken its
     *  first sample: the sampler's first, cold walk is not the steady cost measured. */
    static void startProfiling(dev.roottrace.Options o) throws InterruptedException {
        dev.roottrace.RootTrace.start(o);
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (!dev.roottrace.RootTrace.status().status().startsWith("profiling")
                || (!JFR && dev.roottrace.RootTrace.status().samples() < 1)) {
            if (System.nanoTime() > deadline) {
                System.err.println("SDK not profiling after 15 s: "
                        + dev.roottrace.RootTrace.status().toJson());
                System.exit(1);
            }
            Thread.sleep(10);
        }
    }

    /** The three threads blocked on a queue, a lock held by main and a socket. */
    static void addWaiters(List<Thread> others, LinkedBlockingQueue<Object> queue,
            ReentrantLock held, Socket b) {
        others.add(thread("queue-waiter", () -> {
            while (!stop) {
                try {
                    queue.poll(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }));
        others.add(thread("lock-waiter", () -> {
            while (!stop) {
                try {
                    if (held.tryLock(50, TimeUnit.MILLISECONDS)) {
                        held.unlock();
                    }
                } catch (InterruptedException e) {
                    return;
                }
            }
        }));
        others.add(thread("socket-waiter", () -> {
            try {
                b.setSoTimeout(50);
                InputStream in = b.getInputStream();
                while (!stop) {
                    try {
                        in.read();
                    } catch (SocketTimeoutException e) {
                        // again
                    }
                }
            } catch (Exception e) {
                // closed
            }
        }));
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        boolean sdk = args.length > 1;
        dev.roottrace.Options o = null;
        if (sdk) {
            o = new dev.roottrace.Options().server(args[1]).key(args[2]).service(args[3])
                    .version("bench-1");
            startProfiling(o);
        }
        ReentrantLock held = new ReentrantLock();
        held.lock(); // never released while the run lasts: the lock waiter blocks on it
        LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
        ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Socket a = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
        Socket b = listener.accept();
        long[] out = new long[COMPUTE];
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < COMPUTE; i++) {
            int idx = i;
            workers.add(thread("compute-" + i, () -> {
                try {
                    long check = 0;
                    for (int r = 0; r < rounds * 4 / COMPUTE; r++) {
                        check = (check + oneRound(idx * 100_003L + r)) % 1_000_000_007L;
                    }
                    out[idx] = check;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }));
        }
        List<Thread> others = new ArrayList<>();
        for (int i = 0; i < (LIGHT ? 0 : SLEEPERS); i++) {
            others.add(thread("sleeper-" + i, () -> {
                while (!stop) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }));
        }
        if (!LIGHT) {
            addWaiters(others, queue, held, b);
        }
        // With RT_BENCH_BARRIER set (bench/sdk_overhead/copair.py), say "ready" on stderr and
        // wait for a line on stdin, so that the two runs of a pair start their work together.
        if (System.getenv("RT_BENCH_BARRIER") != null) {
            // Warm the JIT first (untimed, the same seeds in both runs): compiling oneRound
            // inside the timed part varied a run's CPU by +-20 %.
            long warm = 0;
            for (int r = 0; r < WARMUP_ROUNDS; r++) {
                warm += oneRound(-1 - r);
            }
            if (warm == 42) {
                System.err.println("(warm-up checksum)");
            }
            // Tenure what start-up left (the JVM's, and the SDK's agent and poller): young
            // until 15 young GCs have copied it, it made each of the run's first young pauses
            // ~1 ms longer with the SDK (0.9 -> 2 ms with -Xlog:gc; 0.25 -> 0.3 ms once
            // tenured), a start-up cost a running service has paid. The same in both runs.
            System.gc();
            System.err.println("ready");
            System.err.flush();
            System.in.read();
        }
        long t0 = System.nanoTime();
        long c0 = processCpuNs();
        for (Thread t : others) {
            t.start();
        }
        for (Thread t : workers) {
            t.start();
        }
        for (Thread t : workers) {
            t.join();
        }
        stop = true;
        for (Thread t : others) {
            t.join();
        }
        double wall = (System.nanoTime() - t0) / 1e9;
        double cpu = (processCpuNs() - c0) / 1e9;
        String stopWall = "null";
        String stopCpu = "null";
        String firstStopCpu = "null";
        String status = "null";
        if (sdk) {
            long sc0 = processCpuNs();
            dev.roottrace.RootTrace.stop(Duration.ofSeconds(5)); // the JVM's first upload
            firstStopCpu = String.valueOf((processCpuNs() - sc0) / 1e9);
            status = dev.roottrace.RootTrace.status().toJson();
            startProfiling(o); // again, after the timed part, for a warm upload to time
            long s0 = System.nanoTime();
            sc0 = processCpuNs();
            dev.roottrace.RootTrace.stop(Duration.ofSeconds(5));
            stopWall = String.valueOf((System.nanoTime() - s0) / 1e9);
            stopCpu = String.valueOf((processCpuNs() - sc0) / 1e9);
        }
        a.close();
        b.close();
        listener.close();
        long checksum = 0;
        for (long c : out) {
            checksum = (checksum + c) % 1_000_000_007L;
        }
        System.out.println("{\"sdk\": " + sdk + ", \"shape\": \"" + (LIGHT ? "light" : "10 threads")
                + "\", \"wall_s\": " + wall + ", \"cpu_s\": " + cpu
                + ", \"stop_wall_s\": " + stopWall + ", \"stop_cpu_s\": " + stopCpu
                + ", \"first_stop_cpu_s\": " + firstStopCpu
                + ", \"checksum\": " + checksum + ", \"sdk_status\": " + status + "}");
    }
}
