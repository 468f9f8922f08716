<?php
// Status: what Profiler::status() returns (docs/sdk/README.md, "One vocabulary"): the
// `<state>[: <reason>]` string every config poll carries (DESIGN.md §5,
// docs/control-plane.md) with the figures beside it, and the grammar of that string.
declare(strict_types=1);

namespace RootTrace;

/**
 * The SDK's status at one moment, read from the spool's cached state (no network).
 * `json_encode()` gives the snake_case fields every SDK names alike. It converts to its
 * `status` string (`echo`, concatenation, `(string)`), the form Profiler::status() returned
 * up to 0.1.0: deprecated, kept for one release (CHANGELOG.md); `=== 'profiling'` never
 * matched an object, read `->state`. The counters are the spool's: every process of one
 * host and pool (one instance) shares them, since the spool was made.
 */
final class Status implements \Stringable, \JsonSerializable
{
    public const PROFILING = 'profiling';
    public const DISABLED = 'disabled';
    public const WAITING = 'waiting';
    public const UNAVAILABLE = 'unavailable';
    public const DECLINED = 'declined';
    public const ERROR = 'error';
    public const STATES = [self::PROFILING, self::DISABLED, self::WAITING, self::UNAVAILABLE,
        self::DECLINED, self::ERROR];
    /** A reason is at most this many printable ASCII characters. */
    public const REASON_MAX = 200;
    /** The grammar, for tests and for anyone checking a status string. */
    public const PATTERN = '/^(profiling|disabled|waiting|unavailable|declined|error)(: [\x20-\x7e]{1,200})?$/D';

    /** `<state>[: <reason>]`, exactly as sent to the server on each poll */
    public readonly string $status;
    /** One of STATES: profiling, disabled, waiting, unavailable, declined or error */
    public readonly string $state;
    /** The part of $status after `<state>: `, or "" */
    public readonly string $reason;

    /**
     * Built by the SDK (Profiler::status(), Agent::status()); the defaults are the status
     * before start.
     * @param string $status `<state>[: <reason>]` (Status::format); state and reason come
     *        from it
     * @param int $intervalUs the effective sampling interval, µs: the config's, clamped (the
     *        default 10 ms before a config), divided by the request sample rate
     * @param ?string $service the service name, null before start
     * @param ?string $instance the instance name, null before start
     * @param int $profilesSent profiles the server stored (200 or 201)
     * @param int $profilesDropped profiles given up on (queue bound, 4xx, 409)
     * @param int $profilesQueued profiles on disk waiting to upload
     * @param int $samples samples (excimer events) in the profiles made so far
     * @param ?string $lastError the last problem seen (bad options, an invalid config, a
     *        failed poll or upload), null when none
     * @param ?string $spoolDir the spool directory asked for (PHP's own), null before start
     * @param int $spooledBytes bytes of request stacks spooled, not yet in a profile
     */
    public function __construct(
        string $status,
        public readonly int $intervalUs = Limits::DEFAULT_SAMPLING_INTERVAL_US,
        public readonly ?string $service = null,
        public readonly ?string $instance = null,
        public readonly int $profilesSent = 0,
        public readonly int $profilesDropped = 0,
        public readonly int $profilesQueued = 0,
        public readonly int $samples = 0,
        public readonly ?string $lastError = null,
        public readonly ?string $spoolDir = null,
        public readonly int $spooledBytes = 0,
    ) {
        $this->status = $status;
        $this->state = self::state($status);
        $this->reason = str_starts_with($status, $this->state . ': ')
            ? substr($status, strlen($this->state) + 2) : '';
    }

    /** `state` or `state: reason`, always within the grammar (unknown states become error). */
    public static function format(string $state, ?string $reason = null): string
    {
        if (!in_array($state, self::STATES, true)) {
            $state = self::ERROR;
        }
        if ($reason === null) {
            return $state;
        }
        $r = rtrim(substr((string)preg_replace('/[^\x20-\x7e]/', '?', trim($reason)), 0,
            self::REASON_MAX));
        return $r === '' ? $state : $state . ': ' . $r;
    }

    /** The state part of a status string. */
    public static function state(string $status): string
    {
        return explode(':', $status, 2)[0];
    }

    /** The status string, `<state>[: <reason>]`: what Profiler::status() returned up to
     * 0.1.0 (deprecated as a conversion, kept for one release; read ->status). */
    public function __toString(): string
    {
        return $this->status;
    }

    /**
     * The fields in the order every SDK gives them, then PHP's spool.
     * @return array{status: string, state: string, reason: string, interval_us: int,
     *         service: ?string, instance: ?string, profiles_sent: int,
     *         profiles_dropped: int, profiles_queued: int, samples: int,
     *         last_error: ?string, spool_dir: ?string, spooled_bytes: int}
     *         interval_us in µs, spooled_bytes in bytes
     */
    public function jsonSerialize(): array
    {
        return ['status' => $this->status, 'state' => $this->state, 'reason' => $this->reason,
            'interval_us' => $this->intervalUs, 'service' => $this->service,
            'instance' => $this->instance, 'profiles_sent' => $this->profilesSent,
            'profiles_dropped' => $this->profilesDropped,
            'profiles_queued' => $this->profilesQueued, 'samples' => $this->samples,
            'last_error' => $this->lastError, 'spool_dir' => $this->spoolDir,
            'spooled_bytes' => $this->spooledBytes];
    }
}
