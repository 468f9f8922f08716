// JfrSampler: CPU profiles from JFR's execution sampler (jdk.jfr, JDK 11+): a
// jdk.jfr.Recording of jdk.ExecutionSample per profile, written by JFR to its destination (a
// temporary file) when it stops at the end of each upload interval, or by JFR's own shutdown
// hook when the JVM exits, and read back with jdk.jfr.consumer.RecordingFile into the same
// aggregate the wall sampler fills (DESIGN.md §2, §7; docs/sdk/java.md, "CPU from JFR";
// the exit path: docs/sdk/java-jfr-exit.md).
package dev.roottrace;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * One JFR recording at a time, on the sampler thread only (not thread-safe). JFR's sampler
 * ticks on wall time and samples the threads running Java code; what it charges is scaled
 * by the server to the CPU those threads ran ({@link Chunk#threadCpuNs}, DESIGN §7). Every
 * method may throw: the caller falls back to the wall sampler and says why in its status.
 * This class is loaded only where {@link #problem()} said JFR is there (it names jdk.jfr).
 */
class JfrSampler {
    static final String EVENT = "jdk.ExecutionSample";

    /** One finished profile from one recording. */
    static final class Chunk {
        final long timeNanos; // start, Unix ns
        final long durationNanos; // length, ns
        final long periodNs; // the recording's sampling period, ns (each sample's value)
        final List<Encoder.Sample> samples; // root-first stacks, heaviest first
        final long events; // samples read (SDK threads' left out)
        final long threadCpuNs; // CPU of the sampled threads over the chunk, ns; -1 unknown
        final String dropped; // why the samples were not read (file too large), else null
        final long processCpuEndNs; // the process's CPU at the chunk's end, ns; -1 unknown

        Chunk(long timeNanos, long durationNanos, long periodNs, List<Encoder.Sample> samples,
                long events, long threadCpuNs, String dropped, long processCpuEndNs) {
            this.processCpuEndNs = processCpuEndNs;
            this.timeNanos = timeNanos;
            this.durationNanos = durationNanos;
            this.periodNs = periodNs;
            this.samples = samples;
            this.events = events;
            this.threadCpuNs = threadCpuNs;
            this.dropped = dropped;
        }
    }

    private final Set<Thread> exclude; // the SDK's own threads: neither sampled nor counted
    private final java.util.function.LongSupplier processCpu; // the process's CPU, ns (-1)
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private Map<Long, Long> cpuSeen = new HashMap<>(); // thread id -> its CPU ns at the last read
    private boolean cpuKnown; // thread CPU time is supported and enabled
    private Recording rec; // the recording in progress, or null
    private Path recFile; // its destination, the SDK's temporary file (never getDestination():
                          // an operator's JFR.stop with a filename changes that one)
    private Instant recFrom; // when its profile starts
    private long recPeriodNs; // its sampling period, ns
    /** The latest end of a wait at exit (nanoTime), when a stop() is in progress: read on
     *  each pass of the wait, so that a stop() that begins during one bounds it too. */
    private volatile Supplier<OptionalLong> waitBound = OptionalLong::empty;

    JfrSampler(Set<Thread> exclude, java.util.function.LongSupplier processCpu) {
        this.exclude = exclude;
        this.processCpu = processCpu;
    }

    /** Why JFR cannot give CPU profiles in this JVM, or null when it can: a runtime without
     *  the jdk.jfr module (a jlink image), or one where the JVM has JFR off. Never throws. */
    static String problem() {
        try {
            if (!FlightRecorder.isAvailable()) {
                return "FlightRecorder.isAvailable() is false";
            }
            return null;
        } catch (LinkageError e) {
            return "no jdk.jfr module (" + e.getClass().getSimpleName() + ")";
        } catch (Throwable e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** Whether a recording is in progress. */
    boolean running() {
        return rec != null;
    }

    /** The period of the recording in progress, ns (0 when none). */
    long periodNs() {
        return rec != null ? recPeriodNs : 0;
    }

    /** Starts the first recording, sampling every {@code periodNs}. The first start in this
     *  JVM also removes the stale files of JVMs killed before their hooks ran
     *  ({@link #sweepStale}). */
    void start(long periodNs) throws Exception {
        cpuKnown = threads.isThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled();
        readThreadCpu(); // the baseline: CPU before profiling is not counted
        rec = open(periodNs);
        recFile = rec.getDestination();
        recFrom = Instant.now();
        recPeriodNs = periodNs;
        if (SWEPT.compareAndSet(false, true) && recFile.getParent() != null) {
            sweepStale(recFile.getParent(), recFrom.minus(STALE_FILE_AGE));
        }
    }

    /** A file left by a process that is gone is deleted once it is this old: in a shared
     *  temporary directory, a JVM in another pid namespace looks gone, and its file is at
     *  most an upload interval old (each rotation makes a new one, every ≤ 300 s). */
    static final Duration STALE_FILE_AGE = Duration.ofHours(1);
    /** How far a process's start time may be off (Linux derives it from the boot time, to
     *  the second) when it is compared with a file's modification time. */
    static final Duration START_SLACK = Duration.ofSeconds(5);
    private static final AtomicBoolean SWEPT = new AtomicBoolean();
    private static final long PID = ProcessHandle.current().pid();
    private static final Pattern NAME = Pattern.compile("roottrace-([0-9]{1,18})-[0-9]+\\.jfr");

    /** A new temporary file for a recording: {@code roottrace-<pid>-<digits>.jfr} in the
     *  temporary directory (the pid tells {@link #sweepStale} whose it is). */
    static Path newFile() throws java.io.IOException {
        return Files.createTempFile("roottrace-" + PID + "-", ".jfr");
    }

    /**
     * Deletes the SDK's recording files in {@code dir} ({@link #newFile}'s names, regular
     * files, links not followed) last modified before {@code before} whose process is gone
     * ({@link #ownerAlive}). A live owner's file is kept however old (a suspended JVM's: JFR
     * would not create it again at the next rotation), and so are another user's, which a
     * shared temporary directory keeps from us. Returns how many were deleted. Never throws.
     */
    static int sweepStale(Path dir, Instant before) {
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "roottrace-*.jfr")) {
            for (Path f : files) {
                try {
                    Matcher m = NAME.matcher(f.getFileName().toString());
                    if (!m.matches() || !Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                        continue;
                    }
                    Instant modified = Files.getLastModifiedTime(f, LinkOption.NOFOLLOW_LINKS)
                            .toInstant();
                    if (modified.isBefore(before)
                            && !ownerAlive(Long.parseLong(m.group(1)), modified)
                            && Files.deleteIfExists(f)) {
                        n++;
                    }
                } catch (Exception e) {
                    // another user's, or gone meanwhile
                }
            }
        } catch (Exception e) {
            // an unreadable directory: nothing to sweep
        }
        return n;
    }

    /** Whether the process that wrote a file named with {@code pid}, last modified at
     *  {@code modified}, may still run: a process has that pid and started before then
     *  (within {@link #START_SLACK}), or its start is unknown. A process that started later
     *  has the pid again: a container's JVM restarted after a kill -9 is pid 1 again, as
     *  its predecessor was, and this JVM itself is such a process for its predecessor. */
    static boolean ownerAlive(long pid, Instant modified) {
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        if (!h.isPresent()) {
            return false;
        }
        Optional<Instant> start = h.get().info().startInstant();
        return !start.isPresent() || !start.get().isAfter(modified.plus(START_SLACK));
    }

    /**
     * Ends the profile in progress and, when {@code nextPeriodNs > 0}, starts the next one
     * first, so that consecutive profiles leave no gap; an event lands in the profile whose
     * [start, end) holds its time. Returns the finished profile. Throws on any failure of
     * JFR's (a refused recording, a full disk); the recordings are then closed.
     * With {@code exiting} (the JVM is shutting down), the recording is left to JFR's own
     * shutdown hook, which stops it and writes it to its destination (dump on exit) before it
     * removes JFR's repository: this waits, until {@link #exitWaitUntil}, for the recording
     * to be closed, which JFR does only once the file is whole, and starts no next one.
     * Calling stop() or dump() then would race that hook: JFR would print errors on the
     * application's output and the profile would be lost. A rotation that finds the
     * recording already stopped (the hook came first) waits the same way.
     */
    Chunk rotate(long nextPeriodNs, int depth, int maxStacks, long maxFileBytes, boolean exiting)
            throws Exception {
        Recording old = rec;
        Instant from = recFrom;
        long period = recPeriodNs;
        Recording next = null;
        Path file = recFile;
        Path nextFile = null;
        exiting = exiting || shuttingDown();
        boolean keepFile = exiting; // JFR may still be writing it: deleting it makes JFR log errors
        try {
            rec = null;
            recFile = null;
            if (nextPeriodNs > 0 && !exiting) {
                next = open(nextPeriodNs);
                nextFile = next.getDestination();
            }
            Instant to = Instant.now();
            long cpu = readThreadCpu();
            long processEnd = processCpu.getAsLong();
            if (!exiting) {
                try {
                    old.stop(); // JFR writes the destination, then closes the recording
                } catch (IllegalStateException e) {
                    exiting = true; // already stopped: JFR's shutdown hook has it
                    keepFile = true;
                }
            }
            if (exiting) {
                awaitClosed(old);
                Instant stopped = old.getStopTime();
                if (stopped != null && stopped.isBefore(to)) {
                    to = stopped;
                }
            }
            if (old.getState() != RecordingState.CLOSED) { // the write failed, or not yet done
                throw new java.io.IOException("JFR did not write the recording ("
                        + old.getState() + ")");
            }
            keepFile = false;
            old = null;
            long size = Files.size(file);
            Sampler.Aggregate agg = new Sampler.Aggregate(maxStacks);
            String dropped = null;
            long events = 0;
            if (size > maxFileBytes) {
                dropped = "JFR chunk of " + size + " bytes over the " + maxFileBytes
                        + "-byte bound: its samples were dropped";
            } else {
                events = read(file, from, to, period, depth, agg);
            }
            if (next != null) {
                rec = next;
                recFile = nextFile;
                recFrom = to;
                recPeriodNs = nextPeriodNs;
                next = null;
            }
            long fromNs = from.getEpochSecond() * 1_000_000_000L + from.getNano();
            long durNs = Duration.between(from, to).toNanos();
            return new Chunk(fromNs, durNs, period, agg.samples(), events, cpu, dropped,
                    processEnd);
        } finally {
            if (!exiting && old != null) {
                discard(old, null); // its file: below
            }
            if (next != null && exiting) { // the shutdown began during this rotation
                rec = next; // left to JFR's hook: close() waits for it and deletes its file
                recFile = nextFile;
            } else if (next != null) {
                discard(next, nextFile);
            }
            if (!keepFile) {
                deleteQuietly(file);
            }
        }
    }

    /** Closes r without writing it (a running recording with a destination would be written
     *  there by close()), then deletes its file when given. Never throws. */
    private static void discard(Recording r, Path file) {
        try {
            r.setDestination(null);
        } catch (Throwable e) {
            // stopped already, or refused: close() below still releases it
        }
        closeQuietly(r);
        deleteQuietly(file);
    }

    /** What bounds a wait at exit besides {@link #EXIT_WAIT_NS}: halfway from the call of
     *  the stop() in progress to its deadline (nanoTime), or empty while none is. */
    void boundWaitsBy(Supplier<OptionalLong> bound) {
        waitBound = bound;
    }

    /**
     * When a wait at exit for JFR's hook, begun at {@code start}, ends (nanoTime):
     * {@link #EXIT_WAIT_NS} after its start, and no later than {@code bound}, halfway from
     * the call of the stop() in progress to its deadline, so that the upload keeps the other
     * half. An application's hook calling {@code RootTrace.stop(Duration.ofSeconds(1))} waits
     * until 0.5 s after its call, not 2 s past its own deadline, and the waits of one exit
     * (a rotation, then the next recording's close) all end by then; the SDK's hook (5 s)
     * still waits 2 s.
     */
    static long exitWaitUntil(long start, OptionalLong bound) {
        long until = start + EXIT_WAIT_NS;
        if (bound.isPresent() && bound.getAsLong() - until < 0) {
            until = bound.getAsLong();
        }
        return until;
    }

    /** Waits, until {@link #exitWaitUntil}, for JFR to close r (its destination whole). */
    private void awaitClosed(Recording r) throws InterruptedException {
        long start = System.nanoTime();
        while (r.getState() != RecordingState.CLOSED
                && System.nanoTime() - exitWaitUntil(start, waitBound.get()) < 0) {
            Thread.sleep(10);
        }
    }

    /** Stops and discards the recording in progress; once the JVM is shutting down, leaves
     *  it to JFR's own hook (see {@link #rotate}) and deletes its file once JFR wrote it.
     *  Never throws. */
    void close() {
        Recording r = rec;
        Path file = recFile;
        rec = null;
        recFile = null;
        if (r == null) {
            return;
        }
        if (!shuttingDown()) {
            discard(r, file);
            return;
        }
        try {
            awaitClosed(r); // then its file is whole and JFR is done with it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (r.getState() == RecordingState.CLOSED) {
            deleteQuietly(file); // else JFR may still write it: deleting it makes JFR log errors
        }
    }

    /** How long a rotation at exit waits for JFR's hook to write the recording, ns. */
    static final long EXIT_WAIT_NS = 2_000_000_000L;

    /** True once the JVM runs its shutdown hooks: adding one is refused then. Never throws. */
    static boolean shuttingDown() {
        try {
            Thread probe = new Thread(() -> { });
            Runtime.getRuntime().addShutdownHook(probe);
            Runtime.getRuntime().removeShutdownHook(probe);
            return false;
        } catch (IllegalStateException e) {
            return true;
        } catch (Throwable e) { // a security manager that refuses: assume running
            return false;
        }
    }

    /** A started recording of jdk.ExecutionSample only, to a temporary file of its own that
     *  JFR writes when the recording stops (ours, or JFR's hook at exit: dump on exit).
     *  Overridden by tests to fail. */
    Recording open(long periodNs) throws Exception {
        Path file = newFile();
        Recording r = new Recording();
        try {
            r.setName("roottrace");
            r.setToDisk(true);
            r.setDestination(file);
            r.setDumpOnExit(true);
            r.enable(EVENT).withPeriod(Duration.ofNanos(periodNs)).withStackTrace();
            r.start();
            return r;
        } catch (Throwable e) {
            closeQuietly(r);
            deleteQuietly(file);
            throw e;
        }
    }

    private static void deleteQuietly(Path file) {
        if (file == null) {
            return;
        }
        try {
            Files.deleteIfExists(file);
        } catch (Exception e) {
            // a temporary file left behind harms nothing
        }
    }

    private static void closeQuietly(Recording r) {
        if (r == null) {
            return;
        }
        try {
            r.close();
        } catch (Throwable e) {
            // closing is best effort: the JVM discards a closed recording's data
        }
    }

    /**
     * Adds the file's execution samples in [from, to) of threads other than the SDK's to
     * {@code agg}, each worth {@code periodNs}, stacks cut at {@code depth} frames (leaf
     * side kept) under a "(truncated)" root, as the wall sampler cuts them. Returns the count.
     */
    long read(Path file, Instant from, Instant to, long periodNs, int depth, Sampler.Aggregate agg)
            throws Exception {
        java.util.HashSet<Long> sdk = new java.util.HashSet<>();
        for (Thread t : exclude) {
            sdk.add(threadId(t));
        }
        Map<RecordedMethod, String> names = new HashMap<>(); // per file: methods are its own
        long n = 0;
        try (RecordingFile rf = new RecordingFile(file)) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                if (!EVENT.equals(e.getEventType().getName())) {
                    continue;
                }
                Instant t = e.getStartTime();
                if (t.isBefore(from) || !t.isBefore(to)) {
                    continue;
                }
                RecordedThread th = e.getThread("sampledThread");
                if (th != null && sdk.contains(th.getJavaThreadId())) {
                    continue;
                }
                RecordedStackTrace st = e.getStackTrace();
                if (st == null) {
                    continue;
                }
                agg.add(stack(st, depth, names), periodNs);
                n++;
            }
        }
        return n;
    }

    /** Leaf-first frame names of a JFR stack, at most {@code depth}; a stack deeper than
     *  that, or one JFR itself truncated (its stackdepth, 64 by default), ends in
     *  "(truncated)" in place of its root-most kept frame. */
    static String[] stack(RecordedStackTrace st, int depth, Map<RecordedMethod, String> names) {
        List<RecordedFrame> frames = st.getFrames();
        int k = Math.min(frames.size(), depth);
        String[] out = new String[Math.max(k, 1)];
        for (int i = 0; i < k; i++) {
            RecordedMethod m = frames.get(i).getMethod();
            String name = names.get(m);
            if (name == null) {
                name = m == null ? "[unknown]" : Sampler.frameName(m.getType().getName(), m.getName());
                names.put(m, name);
            }
            out[i] = name;
        }
        if (k == 0) {
            out[0] = Sampler.TRUNCATED;
        } else if (frames.size() > depth || st.isTruncated()) {
            out[k - 1] = Sampler.TRUNCATED;
        }
        return out;
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; the SDK builds for 11
    private static long threadId(Thread t) {
        return t.getId();
    }

    /** CPU ns the JVM accounted to its threads (the SDK's left out) since the last read, or -1
     *  when it does not account thread CPU. A thread that ended since is missed (its last
     *  CPU cannot be read any more); one started since counts from zero. */
    long readThreadCpu() {
        if (!cpuKnown) {
            return -1;
        }
        java.util.HashSet<Long> sdk = new java.util.HashSet<>();
        for (Thread t : exclude) {
            sdk.add(threadId(t));
        }
        Map<Long, Long> now = new HashMap<>();
        long sum = 0;
        for (long id : threads.getAllThreadIds()) {
            if (sdk.contains(id)) {
                continue;
            }
            long c = threads.getThreadCpuTime(id);
            if (c < 0) {
                continue; // ended since the list was made
            }
            now.put(id, c);
            Long before = cpuSeen.get(id);
            sum += Math.max(0, c - (before == null ? 0 : before));
        }
        cpuSeen = now;
        return sum;
    }
}
