// Limits: the bounds compiled into the SDK (DESIGN.md §5, docs/control-plane.md). Whatever
// the server says, these hold: a spoofed or broken control plane cannot make the SDK spin,
// flood the network or grow without bound.
package dev.roottrace;

/**
 * The SDK's bounds as one immutable value. The SDK itself always uses {@link #DEFAULT};
 * tests may build a copy with shorter bounds through {@link #override()}.
 */
final class Limits implements Cloneable {
    /**
     * Sampling interval floor, microseconds: every Thread.getAllStackTraces() is a global
     * safepoint costing 0.4-3 ms of the whole JVM (RUNTIMES.md §3), so Java's floor is 20 ms
     * (DESIGN §5).
     */
    static final long SAMPLING_INTERVAL_MIN_US = 20_000;
    /**
     * JFR's sampling period, microseconds: the configured interval held within 10-20 ms. JFR's
     * sampler stops no thread (it suspends one thread at a time, a few per tick), so the wall
     * floor's reason does not hold; 10 ms is JFR's own profile.jfc, 20 ms its default.jfc.
     * Shorter floods the chunk; longer only loses resolution at the same cost per sample.
     */
    static final long JFR_INTERVAL_MIN_US = 10_000;
    static final long JFR_INTERVAL_MAX_US = 20_000;
    /** A JFR chunk (one upload interval) larger than this on disk is not read: its samples
     *  are dropped and the status says so (bounds the SDK's CPU and memory reading it). One
     *  minute of 10 ms samples of 5 threads is ~1 MiB. */
    static final long JFR_FILE_MAX_BYTES = 32L * 1024 * 1024;
    /** After JFR failed at run time (a full disk, a refused recording), the SDK profiles wall
     *  and tries JFR again after this long, seconds. */
    static final double JFR_RETRY_S = 600;
    /** Sampling interval ceiling, microseconds: 1e12 from a server means "slow", not "off". */
    static final long SAMPLING_INTERVAL_MAX_US = 1_000_000;
    /** Upload interval 10-300 s: bounded ingest load; little lost on a crash. */
    static final double UPLOAD_INTERVAL_MIN_S = 10;
    static final double UPLOAD_INTERVAL_MAX_S = 300;
    /** Stack depth at most 256 frames (leaf side kept): bounds walk time and profile size.
     *  JFR's stacks are cut to it too (JFR itself records 64 unless the JVM was started with
     *  -XX:FlightRecorderOptions:stackdepth=N). */
    static final int STACK_DEPTH_MIN = 1;
    static final int STACK_DEPTH_MAX = 256;
    /** Poll interval 1-600 s: at most one config request a second, at least every 10 min. */
    static final double POLL_INTERVAL_MIN_S = 1;
    static final double POLL_INTERVAL_MAX_S = 600;
    /** Upload body at most 4 MiB compressed (the server takes 16 MiB). */
    static final int UPLOAD_MAX_BYTES = 4 * 1024 * 1024;
    /** A config is ~200 bytes; a larger answer is refused without being read in full. */
    static final int CONFIG_MAX_BYTES = 64 * 1024;
    /** After a held poll returns on a change, poll again at once but at most once a second. */
    static final double REPOLL_MIN_S = 1;
    /** The server holds a poll at most 30 s; we ask for the poll interval, at most this. */
    static final int POLL_WAIT_MAX_S = 30;
    /** A poll gets `wait` plus this long to answer in full, so a slow drip cannot hold it. */
    static final double REQUEST_SLACK_S = 10;
    /** Connect timeout and whole-upload deadline, seconds. */
    static final double CONNECT_TIMEOUT_S = 5;
    static final double UPLOAD_DEADLINE_S = 30;
    /** Distinct stacks in one profile (bounds memory); later new stacks count as "(trimmed)". */
    static final int MAX_STACKS_PER_PROFILE = 20_000;
    /** Profiles kept while the server is away, oldest dropped first. */
    static final int QUEUE_MAX_PROFILES = 8;
    /** Retry backoff for 5xx and network errors, doubling between these, seconds. */
    static final double RETRY_BACKOFF_MIN_S = 1;
    static final double RETRY_BACKOFF_MAX_S = 60;
    /** Self-cost budget: interval >= 100 x the median walk over the last 15 walks (§5). */
    static final int SELF_COST_FACTOR = 100;
    static final int SELF_COST_WINDOW = 15;
    /** Flush on stop() and at JVM exit waits at most this long, seconds (§5). */
    static final double FLUSH_TIMEOUT_S = 5;
    /** Defaults the server sends for runtime=java, for fields a config leaves out. */
    static final long DEFAULT_SAMPLING_INTERVAL_US = 50_000;
    static final double DEFAULT_UPLOAD_INTERVAL_S = 60;
    static final double DEFAULT_POLL_INTERVAL_S = 10;

    /** The compiled bounds; the only Limits the SDK itself uses. */
    static final Limits DEFAULT = new Limits();

    long samplingIntervalMinUs = SAMPLING_INTERVAL_MIN_US; // floor of the interval
    long samplingIntervalMaxUs = SAMPLING_INTERVAL_MAX_US; // ceiling of the interval
    long jfrIntervalMinUs = JFR_INTERVAL_MIN_US; // floor of JFR's period
    long jfrIntervalMaxUs = JFR_INTERVAL_MAX_US; // ceiling of JFR's period
    long jfrFileMaxBytes = JFR_FILE_MAX_BYTES; // largest JFR chunk read
    double jfrRetryS = JFR_RETRY_S; // wait before JFR is tried again after a failure
    double uploadIntervalMinS = UPLOAD_INTERVAL_MIN_S; // shortest profile
    double uploadIntervalMaxS = UPLOAD_INTERVAL_MAX_S; // longest profile
    int stackDepthMin = STACK_DEPTH_MIN; // fewest frames kept
    int stackDepthMax = STACK_DEPTH_MAX; // most frames kept (leaf side)
    double pollIntervalMinS = POLL_INTERVAL_MIN_S; // most frequent poll
    double pollIntervalMaxS = POLL_INTERVAL_MAX_S; // least frequent poll
    int uploadMaxBytes = UPLOAD_MAX_BYTES; // compressed upload size
    int configMaxBytes = CONFIG_MAX_BYTES; // config answer size
    double repollMinS = REPOLL_MIN_S; // gap after a change-return
    int pollWaitMaxS = POLL_WAIT_MAX_S; // longest held poll asked for
    double requestSlackS = REQUEST_SLACK_S; // poll deadline beyond `wait`
    double connectTimeoutS = CONNECT_TIMEOUT_S; // TCP connect
    double uploadDeadlineS = UPLOAD_DEADLINE_S; // whole upload request
    int maxStacksPerProfile = MAX_STACKS_PER_PROFILE; // distinct stacks in a profile
    int queueMaxProfiles = QUEUE_MAX_PROFILES; // queued profiles
    double retryBackoffMinS = RETRY_BACKOFF_MIN_S; // first retry delay
    double retryBackoffMaxS = RETRY_BACKOFF_MAX_S; // longest retry delay
    int selfCostFactor = SELF_COST_FACTOR; // interval / median walk
    int selfCostWindow = SELF_COST_WINDOW; // walks in the median
    double flushTimeoutS = FLUSH_TIMEOUT_S; // longest flush
    long defaultSamplingIntervalUs = DEFAULT_SAMPLING_INTERVAL_US;
    double defaultUploadIntervalS = DEFAULT_UPLOAD_INTERVAL_S;
    double defaultPollIntervalS = DEFAULT_POLL_INTERVAL_S;

    private Limits() {
    }

    /** A copy of these bounds whose fields a test then changes (tests only). Every field is a
     *  primitive, so the copy shares nothing; a field added above is copied with the rest. */
    Limits override() {
        try {
            return (Limits) super.clone();
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e); // Limits is Cloneable
        }
    }
}
