// CPU profiles from JFR (issue #20): what is uploaded, the clamps the JFR path holds, and
// the fall back to wall profiles when JFR is missing or fails, against the fake control plane.
package dev.roottrace;

import static dev.roottrace.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import jdk.jfr.Recording;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JfrTest {
    static final String HOT = "dev.roottrace.JfrTest.jfrHotLoop";
    static final String[] SDK_CLASSES = {"Agent", "Sampler", "JfrSampler", "Uploader", "Poller",
        "Http", "Encoder", "Json", "Config"};
    static volatile long sink; // keeps the busy loop's result alive
    static volatile boolean burning;

    TestSupport ts;
    Thread busy;

    static void jfrHotLoop() {
        long x = 0;
        while (burning) {
            for (int i = 0; i < 20000; i++) {
                x = (x * 31 + i) % 1000003;
            }
            sink = x;
        }
    }

    /** A thread burning CPU in jfrHotLoop under `depth` extra frames. */
    static void deep(int depth) {
        if (depth > 0) {
            deep(depth - 1);
        } else {
            jfrHotLoop();
        }
    }

    @BeforeEach
    void setUp() throws Exception {
        ts = new TestSupport();
        burning = true;
        busy = new Thread(() -> deep(20), "jfr-test-busy");
        busy.setDaemon(true);
        busy.start();
    }

    @AfterEach
    void tearDown() throws Exception {
        burning = false;
        busy.join(2000);
        ts.close();
    }

    /** Limits for fast profiles: 1 s uploads. */
    static Consumer<Limits> fast(Consumer<Limits> more) {
        return l -> {
            l.uploadIntervalMinS = 0.5;
            l.jfrRetryS = 1;
            more.accept(l);
        };
    }

    static List<FakeControlPlane.Upload> ofType(List<FakeControlPlane.Upload> ups, String type) {
        List<FakeControlPlane.Upload> out = new ArrayList<>();
        for (FakeControlPlane.Upload u : ups) {
            if (u.profile != null && u.profile.sampleTypes.contains(type + "/nanoseconds")) {
                out.add(u);
            }
        }
        return out;
    }

    List<FakeControlPlane.Upload> waitType(String type, int n, double timeoutS) throws Exception {
        long end = System.nanoTime() + (long) (timeoutS * 1e9);
        while (true) {
            List<FakeControlPlane.Upload> got = ofType(ts.fake.uploads(), type);
            if (got.size() >= n || System.nanoTime() > end) {
                return got;
            }
            TestSupport.sleep(0.05);
        }
    }

    /** Self value of each leaf frame over the uploads. */
    static Map<String, Long> selfByLeaf(List<FakeControlPlane.Upload> ups) {
        Map<String, Long> m = new java.util.HashMap<>();
        for (FakeControlPlane.Upload u : ups) {
            for (PprofDecode.Sample s : u.profile.samples) {
                m.merge(s.rootFirst.get(s.rootFirst.size() - 1), s.value, Long::sum);
            }
        }
        return m;
    }

    @Test
    void cpuFromJfrWithTheSampledThreadsCpu() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "sampling_interval_us", 10000, "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> { }));
        java.lang.management.ThreadMXBean tmx = java.lang.management.ManagementFactory.getThreadMXBean();
        assertTrue(waitFor(() -> a.jfrActive, 5), a.status().toJson());
        @SuppressWarnings("deprecation")
        long busyId = busy.getId();
        long busy0 = tmx.getThreadCpuTime(busyId);
        List<FakeControlPlane.Upload> cpu = waitType("cpu", 3, 15);
        long busy1 = tmx.getThreadCpuTime(busyId);
        assertTrue(cpu.size() >= 3, a.status().toJson());
        // the busy thread's CPU is in the sampled threads' (it ran on after the third profile
        // ended while the upload went out: hence 0.7)
        long threadSum = 0;
        for (FakeControlPlane.Upload u : cpu.subList(0, 3)) {
            threadSum += Long.parseLong(u.params.get("thread_cpu_ns"));
        }
        assertTrue(threadSum >= 0.7 * (busy1 - busy0), threadSum + " " + (busy1 - busy0));
        assertEquals("profiling", a.status().status());
        assertEquals(10000, a.status().intervalUs());
        assertTrue(ofType(ts.fake.uploads(), "wall").isEmpty());
        // the first profile holds JFR's own start-up: look at the later ones
        List<FakeControlPlane.Upload> later = cpu.subList(1, cpu.size());
        for (FakeControlPlane.Upload u : later) {
            assertEquals("cpu/nanoseconds", u.profile.periodType);
            assertEquals(10_000_000L, u.profile.period);
            long thread = Long.parseLong(u.params.get("thread_cpu_ns"));
            long process = Long.parseLong(u.params.get("process_cpu_ns"));
            double dur = u.profile.durationNanos;
            // the process's CPU is at least the sampled threads' (10 ms ticks of slack)
            assertTrue(thread > 0 && thread <= process + 20_000_000L && thread <= 2 * dur,
                    thread + " " + process + " " + dur);
            for (PprofDecode.Sample s : u.profile.samples) {
                assertEquals(s.count * 10_000_000L, s.value);
                for (String f : s.rootFirst) {
                    // the busy thread runs a lambda: its proxy's name keeps no address
                    assertFalse(f.contains("0x"), f);
                    // the SDK's threads run these (the fake control plane's are the test's)
                    for (String sdk : SDK_CLASSES) {
                        assertFalse(f.startsWith("dev.roottrace." + sdk + "."),
                                "an SDK thread was sampled: " + s.rootFirst);
                    }
                }
            }
        }
        Map<String, Long> self = selfByLeaf(later);
        String top = self.entrySet().stream().max(Map.Entry.comparingByValue()).get().getKey();
        assertEquals(HOT, top, self.toString());
        boolean lambda = later.stream().flatMap(u -> u.profile.samples.stream())
                .anyMatch(x -> x.rootFirst.contains("dev.roottrace.JfrTest$$Lambda.run"));
        assertTrue(lambda, later.get(0).profile.samples.get(0).rootFirst.toString());
        long total = self.values().stream().mapToLong(Long::longValue).sum();
        assertTrue(self.get(HOT) > 0.5 * total, self.toString());
        // consecutive profiles leave no gap and do not overlap
        for (int i = 1; i < cpu.size(); i++) {
            PprofDecode.Profile p = cpu.get(i - 1).profile, q = cpu.get(i).profile;
            assertEquals(p.timeNanos + p.durationNanos, q.timeNanos);
        }
        assertTrue(a.status().samples() > 0);
    }

    @Test
    void hiddenClassNamesAsJfrWritesThemLoseTheirAddress() {
        // as JFR named the fake control plane's lambda on JDK 17 (RecordedClass.getName())
        assertEquals("dev.roottrace.FakeControlPlane$$Lambda.run", Sampler.frameName(
                "dev.roottrace.FakeControlPlane$$Lambda+0x00007f80880ee658.992190576", "run"));
        assertEquals("a.B$$Lambda.run", Sampler.frameName("a.B$$Lambda+0x000000080108c000", "run"));
        // and on JDK 25
        assertEquals("a.B$$Lambda.run", Sampler.frameName("a.B$$Lambda.0x00000000110e2ce0", "run"));
        assertEquals("a.B0x.c", Sampler.frameName("a.B0x", "c"));
        assertEquals("a.B$$Lambda.run", Sampler.frameName("a.B$$Lambda$14/0x0000000800c02a00", "run"));
        assertEquals("a.B.c", Sampler.frameName("a.B", "c"));
    }

    @Test
    void jfrPeriodIsTheIntervalHeldWithin10To20Ms() throws Exception {
        Config c = Config.parse("{\"enabled\":true,\"sampling_interval_us\":1000}"
                .getBytes(StandardCharsets.UTF_8), Limits.DEFAULT, null);
        assertEquals(10_000, c.jfrIntervalUs);
        assertEquals(20_000, c.samplingIntervalUs); // the wall floor is the walk's
        c = Config.parse("{\"enabled\":true,\"sampling_interval_us\":15000}"
                .getBytes(StandardCharsets.UTF_8), Limits.DEFAULT, null);
        assertEquals(15_000, c.jfrIntervalUs);
        c = Config.parse("{\"enabled\":true}".getBytes(StandardCharsets.UTF_8), Limits.DEFAULT, null);
        assertEquals(20_000, c.jfrIntervalUs); // Java's default 50 ms is the walk's
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "sampling_interval_us", 1, "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> { }));
        List<FakeControlPlane.Upload> cpu = waitType("cpu", 1, 10);
        assertEquals(10_000_000L, cpu.get(0).profile.period);
        assertEquals(10000, a.status().intervalUs());
    }

    @Test
    void stacksAreCutAtTheConfiguredDepth() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "max_stack_depth", 5, "poll_interval_s", 1);
        ts.agent(fast(l -> { }));
        List<FakeControlPlane.Upload> cpu = waitType("cpu", 2, 10);
        boolean cut = false;
        for (FakeControlPlane.Upload u : cpu) {
            for (PprofDecode.Sample s : u.profile.samples) {
                assertTrue(s.rootFirst.size() <= 5, s.rootFirst.toString());
                if (s.rootFirst.get(s.rootFirst.size() - 1).equals(HOT)) {
                    // 20 frames of deep() and the thread's own beneath: cut under (truncated)
                    assertEquals(Sampler.TRUNCATED, s.rootFirst.get(0));
                    cut = true;
                }
            }
        }
        assertTrue(cut);
    }

    @Test
    void withoutJfrTheStatusSaysWallAndWhy() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> { }), ag -> ag.jfrProbe = () -> "no jdk.jfr module (test)");
        assertTrue(waitFor(() -> a.status().status().equals(
                "profiling: wall (JFR unavailable: no jdk.jfr module (test))"), 5), a.status().toJson());
        assertTrue(waitType("wall", 1, 10).size() >= 1);
        assertTrue(ofType(ts.fake.uploads(), "cpu").isEmpty());
    }

    /** A JfrSampler whose recordings fail as `fail` says (call number -> exception or null). */
    static final class Failing extends JfrSampler {
        final AtomicInteger opens;
        final java.util.function.IntFunction<Exception> fail;

        Failing(Set<Thread> exclude, AtomicInteger opens, java.util.function.IntFunction<Exception> fail) {
            super(exclude, () -> -1);
            this.opens = opens;
            this.fail = fail;
        }

        @Override
        Recording open(long periodNs) throws Exception {
            Exception e = fail.apply(opens.incrementAndGet());
            if (e != null) {
                throw e;
            }
            return super.open(periodNs);
        }
    }

    @Test
    void aRefusedRecordingFallsBackToWall() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "poll_interval_s", 1);
        AtomicInteger opens = new AtomicInteger();
        Agent a = ts.agent(fast(l -> l.jfrRetryS = 600), ag -> ag.jfrFactory = ex -> new Failing(ex, opens,
                n -> new IllegalStateException("recording refused")));
        assertTrue(waitFor(() -> a.status().status().equals(
                "profiling: wall (JFR unavailable: IllegalStateException: recording refused)"), 5),
                a.status().toJson());
        assertTrue(waitType("wall", 1, 10).size() >= 1);
        assertEquals(1, opens.get()); // not retried before jfrRetryS
        assertTrue(a.profiling);
    }

    @Test
    void aRunTimeFailureFallsBackToWallThenJfrIsTriedAgain() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "poll_interval_s", 1);
        AtomicInteger opens = new AtomicInteger();
        // the second recording (the first rotation) fails as a full disk would; the third works
        Agent a = ts.agent(fast(l -> l.jfrRetryS = 2), ag -> ag.jfrFactory = ex -> new Failing(ex, opens,
                n -> n == 2 ? new IOException("No space left on device") : null));
        assertTrue(waitFor(() -> a.status().status().equals(
                "profiling: wall (JFR unavailable: IOException: No space left on device)"), 8),
                a.status().toJson());
        assertTrue(waitType("wall", 1, 10).size() >= 1, a.status().toJson());
        // tried again after 2 s: cpu profiles resume and the status clears
        assertTrue(waitFor(() -> a.status().status().equals("profiling"), 10), a.status().toJson());
        assertTrue(waitType("cpu", 1, 10).size() >= 1);
        assertNull(a.internalError, a.internalError);
    }

    @Test
    void aChunkOverTheFileBoundIsDroppedAndTheStatusSaysSo() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> l.jfrFileMaxBytes = 100));
        List<FakeControlPlane.Upload> cpu = waitType("cpu", 1, 10);
        // the profile still goes (coverage, with its CPU), without samples
        assertTrue(cpu.get(0).profile.samples.isEmpty());
        assertNotNull(cpu.get(0).params.get("thread_cpu_ns"));
        String s = a.status().status();
        assertTrue(s.startsWith("profiling: JFR chunk of ") && s.endsWith(
                "bytes over the 100-byte bound: its samples were dropped"), s);
    }

    @Test
    void anUploadOverTheSizeBoundIsCutAndTheStatusSaysSo() throws Exception {
        List<Encoder.Sample> samples = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            samples.add(new Encoder.Sample(new String[] {"app.Main.run", "app.Worker.task" + i}, 1,
                    10_000_000L));
        }
        Uploader.Profile p = new Uploader.Profile("id", "i", 1, 10_000_000_000L, 10_000_000L,
                samples, 1L, "cpu", 1L);
        int[] kept = new int[2];
        byte[] body = Uploader.buildBody(p, 8 * 1024, kept);
        assertTrue(body.length <= 8 * 1024, String.valueOf(body.length));
        assertEquals(3000, kept[1]);
        assertTrue(kept[0] < 3000 && kept[0] > 0);
        // through the agent: the status names the cut
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 30,
                "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> l.uploadMaxBytes = 8 * 1024));
        assertTrue(waitFor(() -> a.status().status().equals("profiling"), 5), a.status().toJson());
        a.uploader.put(p);
        assertTrue(waitFor(() -> a.status().status().startsWith("profiling: last profile cut to "), 5),
                a.status().toJson());
    }

    @Test
    void turningCpuOffGoesBackToWall() throws Exception {
        ts.fake.setConfig("enabled", true, "type", "cpu", "upload_interval_s", 1,
                "poll_interval_s", 1);
        Agent a = ts.agent(fast(l -> { }));
        assertTrue(waitFor(() -> a.jfrActive, 5), a.status().toJson());
        ts.fake.setConfig("enabled", true, "type", "wall", "upload_interval_s", 1,
                "poll_interval_s", 1);
        assertTrue(waitFor(() -> !a.jfrActive, 5), a.status().toJson());
        assertTrue(waitType("wall", 1, 10).size() >= 1);
        // the cpu profile in progress was ended and queued, not lost
        assertTrue(waitType("cpu", 1, 5).size() >= 1);
        assertEquals("profiling", a.status().status());
    }

    /** The one running recording of the SDK's (named "roottrace"). */
    static Recording running() {
        List<Recording> rs = new ArrayList<>();
        for (Recording r : jdk.jfr.FlightRecorder.getFlightRecorder().getRecordings()) {
            if ("roottrace".equals(r.getName()) && r.getState() == jdk.jfr.RecordingState.RUNNING) {
                rs.add(r);
            }
        }
        assertEquals(1, rs.size(), rs.toString());
        return rs.get(0);
    }

    /** A JVM killed with -9 leaves its empty recording file: the next JVM's first start
     *  deletes the SDK's files over an hour old whose process is gone, and nothing else: not
     *  a live process's file however old (a suspended JVM's), not a recent one, not another
     *  name (the SDK's names before stop 60 had no pid), not a link. A pid in use again by a
     *  process that started after the file was written (a container's JVM, pid 1 again after
     *  a kill -9) does not keep its predecessor's file. */
    @Test
    void staleRecordingFilesOfKilledJvmsAreSwept() throws Exception {
        Path dir = Files.createTempDirectory("rt-sweep");
        try {
            Process p = new ProcessBuilder("true").start();
            p.waitFor();
            long gone = p.pid(), mine = ProcessHandle.current().pid();
            assertFalse(ProcessHandle.of(gone).isPresent());
            Instant now = Instant.now();
            Instant started = ProcessHandle.current().info().startInstant().orElseThrow();
            FileTime old = FileTime.from(now.minus(Duration.ofHours(2)));
            Path stale = Files.createFile(dir.resolve("roottrace-" + gone + "-1.jfr"));
            Path recent = Files.createFile(dir.resolve("roottrace-" + gone + "-2.jfr"));
            Path alive = Files.createFile(dir.resolve("roottrace-" + mine + "-3.jfr"));
            Path reused = Files.createFile(dir.resolve("roottrace-" + mine + "-4.jfr"));
            Path noPid = Files.createFile(dir.resolve("roottrace-5.jfr"));
            Path other = Files.createFile(dir.resolve("app-" + gone + "-6.jfr"));
            Path target = Files.createFile(dir.resolve("target.jfr"));
            Path link = Files.createSymbolicLink(dir.resolve("roottrace-" + gone + "-7.jfr"), target);
            for (Path f : List.of(stale, noPid, other, target)) {
                Files.setLastModifiedTime(f, old);
            }
            Files.setLastModifiedTime(recent, FileTime.from(now.minus(Duration.ofMinutes(10))));
            // written by this JVM (after its start), and by a predecessor with this pid
            Files.setLastModifiedTime(alive, FileTime.from(now));
            Files.setLastModifiedTime(reused, FileTime.from(started.minus(Duration.ofMinutes(1))));
            Files.getFileAttributeView(link, BasicFileAttributeView.class,
                    LinkOption.NOFOLLOW_LINKS).setTimes(old, null, null);
            // an hour's age: only the gone process's old file
            assertEquals(1, JfrSampler.sweepStale(dir, now.minus(JfrSampler.STALE_FILE_AGE)));
            assertFalse(Files.exists(stale));
            // whatever their age: the predecessor's file goes, the live process's stays
            assertEquals(2, JfrSampler.sweepStale(dir, now.plusSeconds(1)));
            assertFalse(Files.exists(reused));
            assertFalse(Files.exists(recent));
            for (Path f : List.of(alive, noPid, other, target, link)) {
                assertTrue(Files.exists(f, LinkOption.NOFOLLOW_LINKS), f.toString());
            }
            Path made = JfrSampler.newFile(); // the names open() gives: the pid, then digits
            Files.delete(made);
            assertTrue(made.getFileName().toString().matches("roottrace-" + mine + "-[0-9]+\\.jfr"),
                    made.toString());
            assertEquals(0, JfrSampler.sweepStale(dir.resolve("missing"), now)); // never throws
        } finally {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
    }

    /** The wait at exit for JFR's hook (docs/sdk/java-jfr-exit.md §7, item 3): 2 s after it
     *  began, and no later than halfway from the stop()'s call to its deadline, so that an
     *  application's hook calling stop(1 s) leaves the upload half of it; nanoTime's
     *  wrap-around included. */
    @Test
    void theWaitAtExitLeavesHalfOfTheStopsDeadlineToTheUpload() {
        long s = 1_000_000_000L, now = 123 * s;
        assertEquals(now + 2 * s, JfrSampler.exitWaitUntil(now, OptionalLong.empty()));
        assertEquals(now + 2 * s, JfrSampler.exitWaitUntil(now, OptionalLong.of(now + 5 * s / 2)));
        assertEquals(now + s / 2, JfrSampler.exitWaitUntil(now, OptionalLong.of(now + s / 2)));
        assertEquals(now - s, JfrSampler.exitWaitUntil(now, OptionalLong.of(now - s))); // over
        long late = Long.MAX_VALUE - 100; // the bound wraps around to a negative nanoTime
        assertEquals(late + s / 2, JfrSampler.exitWaitUntil(late, OptionalLong.of(late + s / 2)));
        assertEquals(2 * s, JfrSampler.EXIT_WAIT_NS);
    }

    /** JFR stopped the recording itself, as its shutdown hook does at exit (dump on exit):
     *  the rotation finds it stopped, waits until JFR closed it (its file whole) and reads
     *  that file instead of racing JFR; no temporary file is left, neither of this recording
     *  nor of the next one, discarded by close() without being written (docs/sdk/java-jfr-exit.md). */
    @Test
    void aRecordingStoppedByJfrItselfIsReadFromItsFile() throws Exception {
        JfrSampler s = new JfrSampler(Set.of(), () -> -1);
        s.start(20_000_000L);
        TestSupport.sleep(0.5); // the busy thread is sampled
        Recording r = running();
        java.nio.file.Path file = r.getDestination();
        assertTrue(java.nio.file.Files.exists(file), String.valueOf(file));
        r.stop(); // as JFR's hook does: the destination is written, then the recording closed
        assertEquals(jdk.jfr.RecordingState.CLOSED, r.getState());
        JfrSampler.Chunk ch = s.rotate(20_000_000L, 64, 1000, 4L << 20, false);
        assertTrue(ch.events > 0, "no events read from the file JFR wrote");
        assertFalse(java.nio.file.Files.exists(file), "left: " + file);
        Recording next = running();
        java.nio.file.Path nextFile = next.getDestination();
        s.close();
        assertEquals(jdk.jfr.RecordingState.CLOSED, next.getState());
        assertFalse(java.nio.file.Files.exists(nextFile), "left: " + nextFile);
    }
    /** JFR could not write the recording when it stopped (its destination's directory gone,
     *  as a full or unmounted disk would make it): JFR leaves it STOPPED, not CLOSED
     *  (docs/sdk/java-jfr-exit.md §7 item 6). The rotation throws, which falls back to wall
     *  with the reason in the status (aRunTimeFailureFallsBackToWallThenJfrIsTriedAgain), and
     *  leaves nothing behind: the stopped recording and the next one, opened before the stop,
     *  are both closed, and the next one's file is deleted without being written. */
    @Test
    void aRecordingJfrCouldNotWriteIsClosedAndTheRotationThrows() throws Exception {
        Path dir = Files.createTempDirectory("rt-jfr-unwritable");
        Path lost = dir.resolve("rec.jfr");
        AtomicInteger opens = new AtomicInteger();
        JfrSampler s = new JfrSampler(Set.of(), () -> -1) {
            @Override
            Recording open(long periodNs) throws Exception {
                Recording r = super.open(periodNs);
                if (opens.incrementAndGet() == 1) { // the first recording writes into dir
                    Path own = r.getDestination();
                    r.setDestination(lost);
                    Files.delete(own);
                }
                return r;
            }
        };
        List<Path> before = ownFiles();
        s.start(20_000_000L);
        TestSupport.sleep(0.3);
        Recording first = running();
        assertEquals(lost, first.getDestination());
        Files.delete(lost); // JFR made it empty when the destination was set (to check it)
        Files.delete(dir);
        IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
                () -> s.rotate(20_000_000L, 64, 1000, 4L << 20, false));
        assertEquals("JFR did not write the recording (STOPPED)", e.getMessage());
        assertEquals(2, opens.get());
        assertEquals(jdk.jfr.RecordingState.CLOSED, first.getState());
        for (Recording r : jdk.jfr.FlightRecorder.getFlightRecorder().getRecordings()) {
            assertFalse("roottrace".equals(r.getName()), "left open: " + r + " " + r.getState());
        }
        assertEquals(before, ownFiles()); // the next recording's file is gone too
        assertFalse(Files.exists(dir));
        s.close(); // nothing left to close: returns quietly
    }

    /** This JVM's recording files in the temporary directory (JfrSampler.newFile's names). */
    private static List<Path> ownFiles() throws IOException {
        String prefix = "roottrace-" + ProcessHandle.current().pid() + "-";
        try (Stream<Path> files = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return files.filter(f -> f.getFileName().toString().startsWith(prefix)).sorted()
                    .collect(java.util.stream.Collectors.toList());
        }
    }
}
