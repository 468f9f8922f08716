<?php
// The bounds compiled into the SDK (DESIGN.md §5, docs/control-plane.md), with a comment on
// why each is what it is. Tests may build a Limits with shorter bounds; the SDK uses these.
declare(strict_types=1);

namespace RootTrace;

final class Limits
{
    // Sampling interval floor 10 ms (DESIGN §5 for PHP): excimer's timer interrupts the VM
    // and each sample copies the stack; 100 Hz keeps that well under 1 % of a request.
    public const SAMPLING_INTERVAL_MIN_US = 10_000;
    // Ceiling 1 s (the server accepts overrides up to 1 s): 1e12 means "slow", not "off".
    public const SAMPLING_INTERVAL_MAX_US = 1_000_000;
    // Upload interval 10-300 s: bounded ingest load per instance, bounded loss on a crash.
    public const UPLOAD_INTERVAL_MIN_S = 10.0;
    public const UPLOAD_INTERVAL_MAX_S = 300.0;
    // Stack depth at most 256 frames, leaf side kept: bounds spool and profile size.
    public const STACK_DEPTH_MIN = 1;
    public const STACK_DEPTH_MAX = 256;
    // Poll interval 1-600 s: at most one config request a second from one host and pool.
    public const POLL_INTERVAL_MIN_S = 1.0;
    public const POLL_INTERVAL_MAX_S = 600.0;
    // The cached config is refreshed at least every 10 s, whatever the poll interval, so a
    // toggle reaches PHP within 10 s of the next request (the brief for issue #5).
    public const CONFIG_TTL_MAX_S = 10.0;
    // Upload body at most 4 MiB compressed: the server takes 16 MiB, an SDK stays under.
    public const UPLOAD_MAX_BYTES = 4 * 1024 * 1024;
    // A config is ~200 bytes; a larger answer is refused without reading it all.
    public const CONFIG_MAX_BYTES = 64 * 1024;
    // A config poll (wait=0) must be answered in full within this time, connect included
    // (the connect alone within CONNECT_TIMEOUT_S): a slow drip or a server that never
    // answers cannot hold a php-fpm worker or a CLI checkpoint longer. A config is ~200
    // bytes; a healthy server answers in milliseconds.
    public const POLL_DEADLINE_S = 2.0;
    public const CONNECT_TIMEOUT_S = 1.0;
    // One maintenance run (poll plus uploads) ends within this time: it holds a php-fpm
    // worker after the response is sent, and at CLI exit DESIGN §5 allows 5 s of flush.
    public const MAINTENANCE_BUDGET_S = 5.0;
    // A poll or upload that fails (network error, deadline, 5xx, any answer but a config)
    // makes every process of the spool skip the network for a while: the (clamped) poll
    // period doubled per consecutive failure, at most this; the first success resets it.
    public const FAIL_BACKOFF_MAX_S = 300.0;
    // The spool of request stacks: at most this many bytes (oldest segments dropped first);
    // a process's open segment is sealed at SPOOL_SEGMENT_BYTES.
    public const SPOOL_MAX_BYTES = 16 * 1024 * 1024;
    public const SPOOL_SEGMENT_BYTES = 512 * 1024;
    // Distinct stacks kept in one profile (beyond it they fold into one "(trimmed)" stack).
    public const MAX_STACKS_PER_PROFILE = 20_000;
    // The CPU witness (Witness): the CPU between two sampled requests of one process goes
    // to the later one's profile when they are at most an hour apart. On a quiet pool of
    // short requests a process may go minutes without a sample (the kernel checks CPU timers
    // at its tick: 8 samples in 300 requests of 2 ms at 10 ms here); a shorter bound would
    // lose that CPU, a longer one move it further. The last reading of at most this many
    // processes is kept from one profile to the next (~40 bytes each in the state file).
    public const WITNESS_GAP_MAX_S = 3600.0;
    public const WITNESS_PROCESSES_MAX = 4096;
    // Profiles queued on disk while the server is away (oldest dropped first).
    public const QUEUE_MAX_PROFILES = 8;
    // Retry backoff for 5xx, 507 and network errors: doubling from min to max.
    public const RETRY_BACKOFF_MIN_S = 1.0;
    public const RETRY_BACKOFF_MAX_S = 60.0;
    // The share of requests profiled: a request is picked with this probability at its
    // start, before anything else is read, and its samples weigh interval / rate
    // (docs/decisions.md, "PHP can profile a share of requests"). Every request by default;
    // the request_sample_rate option is clamped to [REQUEST_SAMPLE_RATE_MIN, 1].
    public const REQUEST_SAMPLE_RATE_MIN = 0.01;
    public const DEFAULT_REQUEST_SAMPLE_RATE = 1.0;
    // The server's default sampling interval for runtime=php, and its other defaults,
    // used for fields a config leaves out.
    public const DEFAULT_SAMPLING_INTERVAL_US = 10_000;
    public const DEFAULT_UPLOAD_INTERVAL_S = 60.0;
    public const DEFAULT_POLL_INTERVAL_S = 10.0;

    /**
     * Every bound as a property; each defaults to the compiled constant above.
     * Only the SDK's own tests pass other values (named arguments).
     */
    public function __construct(
        public readonly int $samplingIntervalMinUs = self::SAMPLING_INTERVAL_MIN_US,
        public readonly int $samplingIntervalMaxUs = self::SAMPLING_INTERVAL_MAX_US,
        public readonly float $uploadIntervalMinS = self::UPLOAD_INTERVAL_MIN_S,
        public readonly float $uploadIntervalMaxS = self::UPLOAD_INTERVAL_MAX_S,
        public readonly int $stackDepthMin = self::STACK_DEPTH_MIN,
        public readonly int $stackDepthMax = self::STACK_DEPTH_MAX,
        public readonly float $pollIntervalMinS = self::POLL_INTERVAL_MIN_S,
        public readonly float $pollIntervalMaxS = self::POLL_INTERVAL_MAX_S,
        public readonly float $configTtlMaxS = self::CONFIG_TTL_MAX_S,
        public readonly int $uploadMaxBytes = self::UPLOAD_MAX_BYTES,
        public readonly int $configMaxBytes = self::CONFIG_MAX_BYTES,
        public readonly float $pollDeadlineS = self::POLL_DEADLINE_S,
        public readonly float $connectTimeoutS = self::CONNECT_TIMEOUT_S,
        public readonly float $maintenanceBudgetS = self::MAINTENANCE_BUDGET_S,
        public readonly float $failBackoffMaxS = self::FAIL_BACKOFF_MAX_S,
        public readonly int $spoolMaxBytes = self::SPOOL_MAX_BYTES,
        public readonly int $spoolSegmentBytes = self::SPOOL_SEGMENT_BYTES,
        public readonly int $maxStacksPerProfile = self::MAX_STACKS_PER_PROFILE,
        public readonly float $witnessGapMaxS = self::WITNESS_GAP_MAX_S,
        public readonly int $witnessProcessesMax = self::WITNESS_PROCESSES_MAX,
        public readonly int $queueMaxProfiles = self::QUEUE_MAX_PROFILES,
        public readonly float $retryBackoffMinS = self::RETRY_BACKOFF_MIN_S,
        public readonly float $retryBackoffMaxS = self::RETRY_BACKOFF_MAX_S,
        public readonly int $defaultSamplingIntervalUs = self::DEFAULT_SAMPLING_INTERVAL_US,
        public readonly float $defaultUploadIntervalS = self::DEFAULT_UPLOAD_INTERVAL_S,
        public readonly float $defaultPollIntervalS = self::DEFAULT_POLL_INTERVAL_S,
        public readonly float $requestSampleRateMin = self::REQUEST_SAMPLE_RATE_MIN,
        public readonly float $defaultRequestSampleRate = self::DEFAULT_REQUEST_SAMPLE_RATE,
    ) {
    }

    /** Clamps $v to [$lo, $hi]. */
    public static function clamp(int|float $v, int|float $lo, int|float $hi): int|float
    {
        return min(max($v, $lo), $hi);
    }
}
