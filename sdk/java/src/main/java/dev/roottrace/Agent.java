// Agent: one running SDK instance. Three daemon threads (config poller, sampler, uploader)
// around a control state that fails closed (DESIGN.md §5, docs/control-plane.md).
package dev.roottrace;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

final class Agent {
    static final String SDK_VERSION = "0.1.0";
    static final String RUNTIME = "java";
    /** The type a stack-walking Java SDK produces: wall clock (DESIGN §2). */
    static final String PROFILE_TYPE = "wall";
    /** The type JFR's execution sampler gives, where the JVM has JFR (docs/sdk/java.md). */
    static final String CPU_TYPE = "cpu";
    /** Fail closed when no valid config (200 or 304) has arrived for this many intervals. */
    static final int STALE_POLLS = 3;
    /** How often an idle (not profiling) sampler or uploader looks at its state, ms. */
    static final long IDLE_CHECK_MS = 500;

    /** What the control plane last said, replaced whole (read without a lock). */
    static final class Control {
        final Config config; // the last valid config; null before one or after an invalid one
        final long validAtNs; // System.nanoTime() when a valid config (200 or 304) last came
        final boolean refused; // an upload got 409 since the last 200 config

        Control(Config config, long validAtNs, boolean refused) {
            this.config = config;
            this.validAtNs = validAtNs;
            this.refused = refused;
        }

        /** Profiling is on only under a fresh valid config that said enabled: true. */
        boolean allows(long nowNs) {
            if (config == null || !config.enabled || refused) {
                return false;
            }
            return nowNs - staleAtNs() <= 0;
        }

        /** The nanoTime past which this config no longer allows profiling: three poll
         *  intervals after it was last confirmed (DESIGN §5, fail closed). */
        long staleAtNs() {
            return validAtNs + (long) (STALE_POLLS * config.pollIntervalS * 1e9);
        }

        /** Whether a profile cut short by profiling stopping is still worth uploading: not
         *  when the server said profiling is off (it would answer 409). */
        boolean keepsPartial() {
            return !refused && (config == null || config.enabled);
        }
    }

    /** A wake-up signal for the sampler (config change or stop). */
    static final class Wake {
        private boolean set; // guarded by this

        synchronized void signal() {
            set = true;
            notifyAll();
        }

        synchronized void clear() {
            set = false;
        }

        synchronized void await(long ns) throws InterruptedException {
            if (!set && ns > 0) {
                TimeUnit.NANOSECONDS.timedWait(this, ns);
            }
        }
    }

    final Limits limits; // clamp bounds (Limits.DEFAULT except in tests)
    final String server; // base URL as given
    final String key; // ingest key
    final String service; // service name
    final String version; // the service's release, or null
    final String instance; // instance id
    volatile String fatal; // status that ends it all (bad options), else null
    private volatile String state = "new"; // new, running, stopping, stopped
    volatile Control control = new Control(null, 0, false); // replaced whole
    volatile String etag; // sent on the next poll
    volatile String pollError; // why the last poll gave no valid config
    volatile String invalidReason; // why the last config was invalid
    volatile String internalError; // last Throwable caught in a thread
    volatile long polls; // config requests started
    private volatile double pollIntervalS; // from the last valid config
    /** Every live thread any agent of this JVM started (left out of profiles). One set for the
     *  JVM, not per agent: after stop() and start(), the stopped agent's HTTP threads and its
     *  client's selector thread live on for a while (JDK 17 cannot close an HttpClient; its
     *  selector ends once the client is collected) and are still the SDK's, not the
     *  application's. Ended threads leave it as each agent is made. */
    static final Set<Thread> SDK_THREADS = ConcurrentHashMap.newKeySet();
    final Set<Thread> sdkThreads = SDK_THREADS;
    final List<Thread> threads = new ArrayList<>(); // poller, sampler, uploader
    volatile boolean stopping; // set once by stop()
    volatile long stopHalfwayNs; // nanoTime halfway from stop()'s call to its deadline, set
                                 // before stopping (JfrSampler.exitWaitUntil)
    final Wake wake = new Wake();
    private final CountDownLatch samplerDone = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1); // counted down by stop()
    private final Object kick = new Object(); // ends the uploader's backoff (backoffWait)
    private boolean kicked; // guarded by kick
    private boolean lastPollValid = true; // poller thread only: the last poll brought a valid config
    final Sampler sampler;
    volatile long intervalNs; // effective sampling interval while profiling
    volatile boolean profiling; // the sampler is sampling
    private volatile boolean abandoned; // stop() gave up waiting: start nothing new
    private Http http; // uploads; made on the first upload (guarded by this)
    volatile Poller pollClient; // config polls; made by start()
    volatile Uploader uploader;
    private Thread poller;
    private Object osBean; // com.sun.management.OperatingSystemMXBean, or a miss marker
    volatile String jfrProblem; // why JFR gives no CPU profiles now (status), else null
    /** CPU profiles from JFR, when the config asks (sampler thread only). One per agent, so
     *  that its retry time and probe survive a restart of the sampler loop (guarded()). */
    private final JfrProfiles jfrProfiles = new JfrProfiles(this);
    volatile boolean jfrActive; // a JFR recording is in progress
    volatile long jfrEvents; // JFR samples read since start
    volatile String jfrNote; // why the last JFR chunk's samples were dropped, else null
    /** Makes the JFR sampler from the SDK's threads (tests: one that fails); null: the real
     *  one. Set before start(). */
    volatile java.util.function.Function<Set<Thread>, JfrSampler> jfrFactory;
    /** Says why JFR cannot be used (tests: a JVM without it); null: JfrSampler.problem().
     *  Set before start(). */
    volatile Supplier<String> jfrProbe;

    Agent(Options o, Limits limits, Supplier<Map<Thread, StackTraceElement[]>> walk) {
        this.limits = limits;
        this.server = o.server != null ? o.server : System.getenv("ROOTTRACE_SERVER");
        this.key = o.key != null ? o.key : System.getenv("ROOTTRACE_KEY");
        this.service = o.service;
        this.version = o.version == null || o.version.isEmpty() ? null : o.version;
        this.instance = o.instance != null ? o.instance : makeInstanceId();
        this.sampler = new Sampler(walk, limits.selfCostFactor, limits.selfCostWindow);
        this.intervalNs = limits.defaultSamplingIntervalUs * 1000;
        this.pollIntervalS = limits.defaultPollIntervalS;
        this.fatal = validate(o);
        SDK_THREADS.removeIf(t -> t.getState() == Thread.State.TERMINATED);
    }

    private String validate(Options o) {
        List<String> missing = new ArrayList<>();
        if (server == null || server.isEmpty()) {
            missing.add("server");
        }
        if (key == null || key.isEmpty()) {
            missing.add("key");
        }
        if (service == null) {
            missing.add("service");
        }
        String why = null;
        if (o.problem != null) {
            why = o.problem;
        } else if (!missing.isEmpty()) {
            why = "missing option" + (missing.size() > 1 ? "s" : "") + ": "
                    + String.join(", ", missing);
        } else if (Names.problem(service) != null) {
            why = "invalid service name (" + Names.problem(service) + ")";
        } else if (o.instance != null && Names.problem(o.instance) != null) {
            why = "invalid instance name (" + Names.problem(o.instance) + ")";
        } else {
            try {
                Http.baseUrl(server);
            } catch (IllegalArgumentException e) {
                why = e.getMessage();
            }
        }
        return why == null ? null : StatusText.format(StatusText.ERROR, why);
    }

    /** {@code <hostname>-<pid>-<4 random hex>} (DESIGN §5), without a DNS lookup. */
    static String makeInstanceId() {
        String host = System.getenv("HOSTNAME");
        if (host == null || host.isEmpty()) {
            try {
                host = new String(Files.readAllBytes(Paths.get("/proc/sys/kernel/hostname")),
                        StandardCharsets.UTF_8).trim();
            } catch (Exception | Error e) {
                host = System.getenv("COMPUTERNAME");
            }
        }
        host = Names.safePart(host == null || host.isEmpty() ? "localhost" : host,
                Names.NAME_MAX_BYTES - 30);
        long pid = ProcessHandle.current().pid();
        return (host.isEmpty() ? "localhost" : host) + "-" + pid + "-"
                + Names.hex4(ThreadLocalRandom.current().nextInt(0x10000));
    }

    Map<String, Object> commonParams() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("service", service);
        m.put("instance", instance);
        m.put("runtime", RUNTIME);
        m.put("runtime_version", System.getProperty("java.version"));
        m.put("sdk_version", SDK_VERSION);
        m.put("version", version);
        return m;
    }

    // ---- life cycle --------------------------------------------------------------------

    /** Starts the threads: the poller at once, the sampler and uploader idle until a valid
     *  config enables profiling. Does nothing after a fatal status or a second time. */
    synchronized void start() {
        if (!state.equals("new") || fatal != null) {
            return;
        }
        state = "running";
        pollClient = new Poller(server, key, "roottrace-java/" + SDK_VERSION,
                limits.connectTimeoutS);
        uploader = new Uploader(this::http, this::commonParams, limits.queueMaxProfiles,
                limits.uploadMaxBytes, limits.uploadDeadlineS);
        poller = spawn("poller", this::pollLoop);
        spawn("sampler", this::sampleLoop);
        spawn("uploader", this::uploadLoop);
    }

    private Thread spawn(String name, Runnable body) {
        Thread t = new Thread(() -> guarded(body), "roottrace-" + name);
        t.setDaemon(true);
        sdkThreads.add(t);
        threads.add(t);
        t.start();
        return t;
    }

    /** A thread body that never lets a Throwable out; a crashed loop restarts after a
     *  second (never spins). */
    private void guarded(Runnable body) {
        while (!stopping) {
            try {
                body.run();
                return;
            } catch (Throwable e) { // never into the application
                internalError = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError)) {
                    return; // out of memory or a broken VM: do no more harm
                }
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException ie) {
                    if (stopping) {
                        return;
                    }
                }
            }
        }
    }

    boolean running() {
        return state.equals("running");
    }

    /**
     * Stops profiling, queues the profile in progress, uploads what is queued, and waits at
     * most {@code timeoutS} seconds (never more than the flush limit).
     */
    void stop(double timeoutS) {
        synchronized (this) {
            if (!state.equals("running")) {
                return;
            }
            state = "stopping";
        }
        if (!(timeoutS >= 0)) {
            timeoutS = limits.flushTimeoutS;
        }
        long called = System.nanoTime();
        long deadline = called + (long) (Math.min(timeoutS, limits.flushTimeoutS) * 1e9);
        stopHalfwayNs = called + (deadline - called) / 2; // before stopping: seen with it
        stopping = true;
        stopped.countDown();
        kickUploader();
        wake.signal();
        Poller pc = pollClient;
        if (pc != null) {
            pc.abort();
        }
        if (poller != null) {
            poller.interrupt();
        }
        Uploader up = uploader;
        if (up != null) {
            up.wake();
        }
        for (Thread t : threads) {
            if (t != poller) {
                join(t, deadline - System.nanoTime());
            }
        }
        Http h;
        synchronized (this) {
            abandoned = true; // past the deadline: threads still here start nothing new
            h = http;
        }
        if (h != null) {
            h.abortAll();
        }
        for (Thread t : threads) {
            join(t, t == poller ? Math.max(50_000_000L, deadline - System.nanoTime()) : 50_000_000L);
        }
        state = "stopped";
        profiling = false;
    }

    private static void join(Thread t, long ns) {
        if (ns <= 0) {
            return;
        }
        try {
            t.join(Math.max(1, ns / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- status ------------------------------------------------------------------------

    /** {@code <state>[: <reason>]} (docs/control-plane.md). */
    String statusString() {
        if (fatal != null) {
            return fatal;
        }
        if (state.equals("new")) {
            return StatusText.format(StatusText.DISABLED, "not started");
        }
        if (!state.equals("running")) {
            return StatusText.format(StatusText.DISABLED, "stopped");
        }
        Control c = control;
        String pe = pollError;
        String paren = pe != null ? " (" + pe + ")" : "";
        if (c.config == null) {
            if (invalidReason != null) {
                return StatusText.format(StatusText.ERROR, "invalid config: " + invalidReason);
            }
            return StatusText.format(StatusText.WAITING, "no config yet" + paren);
        }
        if (c.refused) {
            return StatusText.format(StatusText.DISABLED,
                    "upload refused (409), waiting for a config that enables profiling");
        }
        if (!c.config.enabled) {
            return StatusText.DISABLED;
        }
        if (!c.allows(System.nanoTime())) {
            return StatusText.format(StatusText.ERROR,
                    "no valid config for " + STALE_POLLS + " poll intervals" + paren);
        }
        String type = c.config.type;
        if (type.equals(CPU_TYPE)) {
            String p = jfrProblem;
            if (p != null) {
                return StatusText.format(StatusText.PROFILING,
                        PROFILE_TYPE + " (JFR unavailable: " + p + ")");
            }
        } else if (!type.equals(PROFILE_TYPE)) {
            return StatusText.format(StatusText.PROFILING,
                    type + " not supported, sending " + PROFILE_TYPE);
        }
        Uploader up = uploader;
        String note = jfrNote != null ? jfrNote : up != null ? up.sizeNote : null;
        return StatusText.format(StatusText.PROFILING, note);
    }

    /** The effective sampling interval, microseconds: configured, clamped, lengthened by the
     *  self-cost budget. */
    long intervalUs() {
        if (profiling) {
            return intervalNs / 1000;
        }
        Config c = control.config;
        long us = c != null ? c.samplingIntervalUs : limits.defaultSamplingIntervalUs;
        return sampler.effectiveIntervalNs(clampInterval(us) * 1000) / 1000;
    }

    private long clampInterval(long us) {
        return Math.min(Math.max(us, limits.samplingIntervalMinUs), limits.samplingIntervalMaxUs);
    }

    Status status() {
        String s = statusString();
        Uploader up = uploader;
        String le = fatal != null ? fatal
                : invalidReason != null ? "invalid config: " + invalidReason
                : pollError != null ? pollError
                : up != null && up.lastError != null ? up.lastError : internalError;
        return new Status(s, intervalUs(), service, instance, up == null ? 0 : up.sent,
                up == null ? 0 : up.dropped, up == null ? 0 : up.pending(),
                sampler.samplesTaken + jfrEvents, sampler.medianWalkNs / 1000.0, le);
    }

    // ---- config poller -----------------------------------------------------------------

    /** The last valid config's poll interval (kept across an invalid one), clamped, s. */
    double pollInterval() {
        return Math.min(Math.max(pollIntervalS, limits.pollIntervalMinS), limits.pollIntervalMaxS);
    }

    /** The upload client, made on first use: a JVM that never profiles never loads
     *  java.net.http. Null after stop() gave up waiting. */
    synchronized Http http() {
        if (http == null && !abandoned) {
            http = new Http(server, key, "roottrace-java/" + SDK_VERSION, limits.connectTimeoutS,
                    sdkThreads);
        }
        return http;
    }

    private void pollLoop() {
        long nextStart = System.nanoTime();
        while (!stopping) {
            long left = nextStart - System.nanoTime();
            if (left > 0 && sleepUnlessStopping(left)) {
                break;
            }
            long started = System.nanoTime();
            boolean changed = false;
            Control before = control;
            try {
                changed = pollOnce();
            } catch (RuntimeException e) {
                pollError = "config poll: " + e.getClass().getSimpleName() + ": " + e.getMessage();
            }
            Control after = control;
            boolean valid = after != before && after.config != null && after.validAtNs != before.validAtNs;
            if (valid && !lastPollValid) {
                kickUploader(); // the server is back: what is queued goes now, not after the backoff
            }
            lastPollValid = valid;
            double gap = changed ? Math.min(limits.repollMinS, pollInterval()) : pollInterval();
            nextStart = started + (long) (gap * 1e9);
        }
    }

    /** Ends the uploader's retry backoff (the server is back, or stop). */
    private void kickUploader() {
        synchronized (kick) {
            kicked = true;
            kick.notifyAll();
        }
    }

    /** The uploader's retry backoff: waits ns; true when kicked (server back) or stopping. */
    private boolean backoffWait(long ns) throws InterruptedException {
        long end = System.nanoTime() + ns;
        synchronized (kick) {
            kicked = false;
            while (!kicked && !stopping) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(kick, left);
            }
            return true;
        }
    }

    /** Sleeps ns, or less when stop() comes; true when stopping. */
    private boolean sleepUnlessStopping(long ns) {
        try {
            stopped.await(ns, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            return stopping;
        }
        return stopping;
    }

    /** One config request. True when a held request returned a changed config (the next
     *  poll may then start at once, subject to the 1 s floor). */
    boolean pollOnce() {
        Control c = control;
        Map<String, Object> params = commonParams();
        params.put("status", statusString());
        params.put("interval_us", intervalUs());
        String tag = c.config != null ? etag : null;
        int wait = 0;
        if (tag != null) {
            wait = (int) Math.min(limits.pollWaitMaxS, pollInterval());
            params.put("etag", tag);
            params.put("wait", wait);
        }
        polls++;
        Http.Response r;
        try {
            r = pollClient.get("/api/v1/sdk/config?" + Http.query(params),
                    wait + limits.requestSlackS, limits.configMaxBytes);
        } catch (Http.BodyTooLarge e) {
            invalid(e.getMessage());
            return false;
        } catch (Http.HttpFailure e) {
            if (!stopping && !(e instanceof Http.Aborted)) {
                pollError = "config poll failed: " + e.getMessage();
            }
            return false;
        }
        if (stopping) {
            return false;
        }
        if (r.status == 304) {
            c = control;
            if (tag != null && c.config != null) {
                control = new Control(c.config, System.nanoTime(), c.refused);
                pollError = null;
            } else {
                pollError = "304 to a poll without etag";
            }
            return false;
        }
        if (r.status != 200) {
            if (r.status >= 400 && r.status < 500) {
                // A refusal (key revoked, wrong scope, ...): forget the etag, so that once its
                // cause is fixed the next poll gets a full 200 at once instead of being held
                // and answered 304. A 5xx or a network error keeps it: the server refused
                // nothing, it is unavailable.
                etag = null;
            }
            String msg = serverMessage(r.body);
            pollError = "config poll answered " + r.status + (msg != null ? ": " + msg : "");
            return false;
        }
        Config cfg;
        try {
            cfg = Config.parse(r.body, limits, r.etag);
        } catch (Config.ConfigException e) {
            invalid(e.getMessage());
            return false;
        }
        control = new Control(cfg, System.nanoTime(), false);
        pollIntervalS = cfg.pollIntervalS;
        etag = cfg.etag;
        pollError = null;
        invalidReason = null;
        wake.signal();
        return tag != null;
    }

    /** The {@code message} of the server's JSON error answer, or null. */
    static String serverMessage(byte[] body) {
        try {
            Object o = Json.parse(body);
            Object m = o instanceof Map ? ((Map<?, ?>) o).get("message") : null;
            return m instanceof String && !((String) m).isEmpty() ? (String) m : null;
        } catch (Json.JsonException e) {
            return null;
        }
    }

    /** An invalid config: profiling stops at once; the next poll asks afresh. */
    private void invalid(String reason) {
        invalidReason = reason;
        pollError = null;
        control = new Control(null, 0, false);
        etag = null;
        wake.signal();
    }

    /** A 409: stop profiling until a config says enabled: true; the next poll asks without
     *  etag so that it gets the current config at once. */
    private void refused() {
        Control c = control;
        control = new Control(c.config, c.validAtNs, true);
        etag = null;
        wake.signal();
    }

    // ---- sampler -----------------------------------------------------------------------

    private void sampleLoop() {
        Sampler.Aggregate agg = null;
        long start = 0; // nanoTime: profile start
        long last = 0; // nanoTime: previous sample
        long wall0 = 0; // Unix ns at profile start
        long cpu0 = 0; // process CPU ns at profile start
        JfrProfiles jfr = jfrProfiles;
        try {
            while (!stopping) {
                wake.clear();
                Control c = control;
                long now = System.nanoTime();
                if (!c.allows(now)) {
                    profiling = false;
                    if (agg != null && c.keepsPartial()) {
                        finish(agg, start, last, wall0, cpu0);
                    }
                    agg = null;
                    jfr.end(c.keepsPartial());
                    wake.await(IDLE_CHECK_MS * 1_000_000);
                    continue;
                }
                if (jfr.wanted(c.config, now)) {
                    if (agg != null) {
                        finish(agg, start, last, wall0, cpu0); // wall until now
                        agg = null;
                    }
                    jfr.step(c);
                    continue;
                }
                jfr.end(true); // cpu until now
                if (agg == null) {
                    agg = new Sampler.Aggregate(limits.maxStacksPerProfile);
                    start = last = now;
                    wall0 = unixNanos();
                    cpu0 = processCpuNs();
                    profiling = true;
                }
                intervalNs = sampler.effectiveIntervalNs(clampInterval(c.config.samplingIntervalUs) * 1000);
                long deadline = last + intervalNs;
                // Wake at the tick, or when the config goes stale if that comes first, so that
                // profiling stops on time even when the budget stretches the tick.
                long staleWake = c.staleAtNs() + 1;
                wake.await((staleWake - deadline < 0 ? staleWake : deadline) - System.nanoTime());
                now = System.nanoTime();
                if (now < deadline) {
                    continue; // woken early: look at the state again
                }
                c = control;
                if (stopping || !c.allows(now)) {
                    continue;
                }
                sampler.sample(agg, now - last, sdkThreads, c.config.maxStackDepth, now);
                last = now;
                if (now - start >= (long) (c.config.uploadIntervalS * 1e9)) {
                    long cpu1 = finish(agg, start, last, wall0, cpu0);
                    wall0 += last - start;
                    agg = new Sampler.Aggregate(limits.maxStacksPerProfile);
                    start = last;
                    cpu0 = cpu1;
                }
            }
            if (agg != null && control.keepsPartial()) {
                finish(agg, start, last, wall0, cpu0);
            }
            jfr.end(control.keepsPartial());
        } catch (InterruptedException e) {
            // stop(): nothing more to sample
        } finally {
            jfr.close();
            jfrActive = false;
            profiling = false;
            samplerDone.countDown();
        }
    }

    private static long unixNanos() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    /** The process's CPU time, ns, or -1 where the JVM does not say. */
    long processCpuNs() {
        try {
            if (osBean == null) {
                Object b = ManagementFactory.getOperatingSystemMXBean();
                osBean = b instanceof com.sun.management.OperatingSystemMXBean ? b : Boolean.FALSE;
            }
            if (osBean instanceof com.sun.management.OperatingSystemMXBean) {
                return ((com.sun.management.OperatingSystemMXBean) osBean).getProcessCpuTime();
            }
        } catch (Throwable e) { // a JVM without java.management or jdk.management
            osBean = Boolean.FALSE;
        }
        return -1;
    }

    /** Queues the profile [start, end] (nanoTime). Returns the process CPU read at its end. */
    private long finish(Sampler.Aggregate agg, long start, long end, long wall0, long cpu0) {
        long cpu1 = processCpuNs();
        Uploader up = uploader;
        if (end > start && up != null) {
            Long cpu = cpu0 >= 0 && cpu1 >= cpu0 ? cpu1 - cpu0 : null;
            up.put(new Uploader.Profile(UUID.randomUUID().toString(), instance, wall0,
                    end - start, intervalNs, agg.samples(), cpu));
        }
        return cpu1;
    }

    // ---- uploader ----------------------------------------------------------------------

    private void uploadLoop() {
        int attempt = 0;
        boolean flushFailed = false;
        try {
            while (true) {
                Uploader up = uploader;
                if (stopping && samplerDone.getCount() == 0 && up.pending() == 0) {
                    return;
                }
                if (!up.waitForWork(IDLE_CHECK_MS)) {
                    continue;
                }
                if (abandoned) {
                    return;
                }
                Uploader.Outcome o = up.uploadOne();
                if (o == Uploader.Outcome.RETRY) {
                    if (stopping) {
                        if (flushFailed) {
                            return; // flushing and the server is away: give up
                        }
                        flushFailed = true; // one more try, once the last profile is queued
                        samplerDone.await((long) (limits.flushTimeoutS * 1000), TimeUnit.MILLISECONDS);
                        continue;
                    }
                    attempt++;
                    if (backoffWait((long) (Uploader.backoff(attempt, limits.retryBackoffMinS,
                            limits.retryBackoffMaxS) * 1e9))) {
                        attempt = 0; // the server is back (or stop): retry at once
                    }
                    continue;
                }
                attempt = 0;
                if (o == Uploader.Outcome.REFUSED) {
                    refused();
                }
            }
        } catch (InterruptedException e) {
            // stop() gave up waiting
        }
    }
}
