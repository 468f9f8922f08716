<?php
// Agent: the SDK in one request or CLI script. begin() reads the cached control state (no
// network) and starts excimer when it allows; the end of the request spools the stacks and,
// when due, runs Maintenance after the response is sent (DESIGN §5, §7).
declare(strict_types=1);

namespace RootTrace;

final class Agent
{
    public const SDK_VERSION = '0.1.0';
    public const RUNTIME = 'php';
    /** The server's limit on service and instance names, in UTF-8 bytes. */
    public const NAME_MAX_BYTES = RequestStart::NAME_MAX_BYTES;
    /** The bytes a name needs no closer look for: printable ASCII but '/'. */
    private const NAME_PLAIN = "\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e01234"
        . "56789\x3a\x3b\x3c\x3d\x3e\x3f\x40ABCDEFGHIJKLMNOPQRSTUVW"
        . "XYZ\x5b\x5c\x5d\x5e\x5f\x60abcdefghijklmnopqrstuvwxyz\x7b\x7c\x7d\x7e";
    /** The bytes the server refuses in a name: '/', DEL and the C0 controls. */
    private const NAME_FORBIDDEN = RequestStart::NAME_FORBIDDEN;

    private array $options;             // as given to the constructor
    private ?array $resolved;           // RequestStart::resolve() of them, when given
    private ?array $startGate;          // the gate as the caller read it, when given
    private ?Limits $limitsGiven;       // as given (null: the compiled bounds)
    private float $rate;                // the request sample rate in use, (0, 1]
    private ?string $rateProblem;       // why the request_sample_rate option is unusable
    private bool $picked;               // this request is in the profiled share
    private bool $ready = false;        // init() ran: the fields below are set
    private Limits $limits;             // clamp bounds (compiled except in tests)
    private string $service;            // service name
    private string $instance;           // `<hostname>-<fpm pool or cli>` unless given
    private Spool $spool;               // the shared spool directory (in use): spool()
    private bool $spoolChecked = true;  // the spool directory's check ran or is not needed
    private string $spoolDir;           // the spool directory asked for
    private ?string $fatal = null;      // status that stops profiling (unavailable, bad options)
    private ?string $server = null;     // base URL, null when the options are unusable
    private string $key = '';           // ingest key
    private array $params = [];         // common query parameters
    private ?string $version;           // the service's release
    private ?string $root;              // app root for frame names (null: found lazily)
    private array $gate = RequestStart::CLOSED; // the gate as last read: at init() when the
                                        // caller gave its read, else at begin(); checkpoint()
    private ?object $profiler = null;   // the running ExcimerProfiler
    private string $type = 'cpu';       // type of the running profiler
    private int $periodNs = 0;          // its sampling interval
    private int $depth = Limits::STACK_DEPTH_MAX; // its stack depth
    private int $cpu0Ns = -1;           // the process's CPU time when a cpu profiler started or
                                        // last spooled (cpuNs()); -1: none
    private bool $begun = false;        // begin() ran
    private bool $ended = false;        // the request's profile was spooled

    /**
     * Picks whether this request is in the profiled share (the request sample rate); nothing
     * else is read until a method needs it (init), so a request left out costs a few
     * microseconds (docs/decisions.md, "PHP can profile a share of requests").
     * @param array{server?: string, key?: string, service?: string, version?: string,
     *        instance?: string, spool_dir?: string, root?: string,
     *        request_sample_rate?: int|float} $options; server, key and service default to
     *        the environment variables ROOTTRACE_SERVER, ROOTTRACE_KEY and
     *        ROOTTRACE_SERVICE; request_sample_rate: the share of requests profiled
     *        (a number or a numeric string), clamped to [0.01, 1], default 1 (every
     *        request)
     * @param ?Limits $limits only the SDK's tests pass other bounds
     * @param ?bool $picked the draw pick() made for these options (Profiler::start draws
     *        before building anything); null: draw now
     * @param ?array $resolved RequestStart::resolve($options), when the caller has it
     * @param ?array $gate the gate of the spool directory asked for, as the caller read it
     *        (RequestStart::readGate; Profiler::start), not read again: when it is this
     *        user's, the directory needs no check, and the end's view of maintenance is
     *        this gate until checkpoint() reads it again
     */
    public function __construct(array $options = [], ?Limits $limits = null, ?bool $picked = null,
                                ?array $resolved = null, ?array $gate = null)
    {
        $this->options = $options;
        $this->resolved = $resolved;
        $this->startGate = $gate;
        $this->limitsGiven = $limits;
        $rate = RequestSampling::rate($options, $limits);
        $this->rate = is_nan($rate) ? 1.0 : $rate;
        $this->rateProblem = is_nan($rate) ? 'invalid request_sample_rate (not a number)' : null;
        $this->picked = $picked ?? self::pick($options, $limits);
    }

    /** Whether a request with these options is in the profiled share (RequestSampling::pick,
     * where the rule lives; kept here for callers of this name). Never throws. */
    public static function pick(array $options, ?Limits $limits = null): bool
    {
        return RequestSampling::pick($options, $limits);
    }

    /** Reads the options (names, server, spool directory) and what PHP offers, once: the
     * status that stops profiling when they are not usable. */
    private function init(): void
    {
        if ($this->ready) {
            return;
        }
        $this->ready = true;
        $this->limits = $this->limitsGiven ?? new Limits();
        $r = $this->resolved ?? RequestStart::resolve($this->options);
        $o = $r['options'];
        $this->service = $r['service'];
        $this->version = is_string($o['version'] ?? null) && $o['version'] !== '' ? $o['version'] : null;
        $this->instance = $r['instance'];
        $this->root = is_string($o['root'] ?? null) ? rtrim($o['root'], '/') : null;
        $dir = $r['dir'];
        $this->spoolDir = $dir;
        $why = self::optionsProblem($o);
        if ($why === null) {
            $u = parse_url($o['server']);
            $scheme = is_array($u) ? strtolower($u['scheme'] ?? '') : '';
            if (!in_array($scheme, ['http', 'https'], true) || empty($u['host'])) {
                $why = 'server must be an http:// or https:// URL';
            } else {
                $this->server = $o['server'];
                $this->key = $o['key'];
            }
        }
        // An unusable rate stops profiling but, the server being usable, its status is
        // polled: it reaches the server.
        $why ??= $this->rateProblem;
        // Whether the spool directory is usable is checked when first needed (checkSpool):
        // a request whose gate reads as this user's needs no check (Spool::readGate).
        $this->spoolChecked = $why !== null;
        $this->spool = new Spool($dir, $this->limits);
        $this->params = ['service' => $this->service, 'instance' => $this->instance,
            'runtime' => self::RUNTIME, 'runtime_version' => PHP_VERSION,
            'sdk_version' => self::SDK_VERSION, 'version' => $this->version];
        if ($why !== null) {
            $this->fatal = Status::format(Status::ERROR, $why);
        } elseif (!extension_loaded('excimer')) {
            $this->fatal = Status::format(Status::UNAVAILABLE, 'ext-excimer not loaded');
        } elseif (!function_exists('gzencode')) {
            $this->fatal = Status::format(Status::ERROR, 'ext-zlib not loaded: cannot gzip uploads');
        }
        if (str_contains($dir, "\0")) { // PHP's file functions throw on it: never used
            $this->spoolChecked = true;   // said first, as an unwritable one is (checkSpool),
            $fatal = $this->fatal;        // unless an option is unusable
            $this->useFallbackSpool($dir, 'holds a NUL byte');
            $this->fatal = $why !== null ? $fatal : $this->fatal;
        }
        if ($this->startGate !== null) { // the start's read, for this directory
            $this->gate = $this->readGate($this->startGate);
        }
    }

    /** The share of requests profiled (the option clamped, or its default), in (0, 1]. */
    public function requestSampleRate(): float
    {
        return $this->rate;
    }

    /** Whether this request is in the profiled share (picked at construction). */
    public function picked(): bool
    {
        return $this->picked;
    }

    /**
     * Starts this request's (or script's) profile when it is in the profiled share and the
     * cached config allows it, and registers the end of the request. Reads one small file;
     * no network; nothing at all for a request left out. Never throws.
     * @param bool $atShutdown register the end (spool, maintenance) as a shutdown function
     */
    public function begin(bool $atShutdown = true): void
    {
        if (!$this->picked) {
            $this->begun = true;
            return;
        }
        self::guard(function () use ($atShutdown): void {
            if ($this->begun || $this->ended) {
                return;
            }
            $this->begun = true;
            $this->init();
            if ($atShutdown) {
                // Registered again from the shutdown function, so the end runs after the
                // application's own shutdown functions.
                register_shutdown_function(function (): void {
                    register_shutdown_function([$this, 'end']);
                });
            }
            if ($this->startGate === null) {
                $this->gate = $this->readGate();
            }
            $this->startGate = null; // init() took it; checkpoint() reads the gate again
            $this->startIfAllowed();
        });
    }

    /**
     * Ends this request's profile: spools its stacks and, when maintenance is due, sends
     * the response first (php-fpm) and then polls and uploads, within the maintenance
     * budget (5 s). A request left out of the profiled share does nothing: maintenance
     * runs at the end of the requests in it. Never throws.
     */
    public function end(): void
    {
        if (!$this->picked) {
            return;
        }
        self::guard(function (): void {
            if ($this->ended) {
                return;
            }
            $this->ended = true;
            $this->init();
            $this->spoolRunning(false);
            if (State::nowNs() < $this->gate['next_due']) {
                return;
            }
            if (PHP_SAPI === 'fpm-fcgi' && function_exists('fastcgi_finish_request')) {
                fastcgi_finish_request();
                @set_time_limit((int)ceil($this->limits->maintenanceBudgetS) + 5);
            }
            $this->maintain();
        });
    }

    /**
     * For long-running CLI scripts (workers): spools the stacks so far, follows the cached
     * config (starts, stops or keeps profiling) and, when due, runs maintenance with excimer
     * stopped (a poll at most 2 s, the whole run at most the maintenance budget, 5 s; not
     * at all during the failure backoff). Never throws.
     */
    public function checkpoint(): void
    {
        self::guard(function (): void {
            if (!$this->begun || $this->ended || !$this->picked) {
                return;
            }
            $this->gate = $this->readGate();
            $due = State::nowNs() >= $this->gate['next_due'];
            // Maintenance's own waits (poll, upload) are not the app's: excimer is stopped
            // (what it has spooled) before it and started again after it.
            $this->spoolRunning(!$due);
            if ($due) {
                $this->maintain();
                $this->gate = $this->readGate();
            }
            $this->startIfAllowed();
        });
    }

    /**
     * Runs maintenance now if no other process is (polls and uploads only when due, unless
     * $closeNow). Returns whether it ran. Never throws.
     * @param bool $closeNow end the profile being spooled now and upload it
     */
    public function maintain(bool $closeNow = false): bool
    {
        return (bool)self::guard(fn() => (new Maintenance($this->spool(), $this->limits,
            $this->server === null ? null : new Http($this->server, [
                'Authorization' => 'Bearer ' . $this->key,
                'User-Agent' => 'roottrace-php/' . self::SDK_VERSION]),
            $this->params, $this->fatal, $this->rate))->run($closeNow));
    }

    /**
     * Ends this request's profile and uploads everything spooled now (a CLI script that
     * must not leave data behind; at most the maintenance budget, 5 s). Never throws.
     */
    public function flush(): void
    {
        self::guard(function (): void {
            $this->ended = true;
            $this->init();
            $this->spoolRunning(false);
            $this->maintain(true);
        });
    }

    /**
     * The status with its figures (names, interval, the spool's counters, the last
     * error), from the cached state and the spool directory (no network). Never throws: on
     * an internal failure, `error: internal error` with the names.
     */
    public function status(): Status
    {
        $s = self::guard(fn() => $this->snapshot()[0]);
        return $s instanceof Status ? $s : new Status(Status::format(Status::ERROR,
            'internal error'), service: $this->service ?? null, instance: $this->instance ?? null,
            spoolDir: $this->spoolDir ?? null);
    }

    /**
     * Details for operators: what status() gives, plus the profile type and whether this
     * request is sampling now. Never throws.
     * @return array{status: string, state: string, interval_us: int, type: string,
     *         profiling: bool, request_sample_rate: float, service: string,
     *         instance: string, spool_dir: string,
     *         spooled_bytes: int, queued: int, sent: int, dropped: int, samples: int,
     *         last_error: ?string} interval_us in µs; queued, sent, dropped: profiles
     */
    public function info(): array
    {
        $r = self::guard(fn() => $this->snapshot());
        [$s, $c] = is_array($r) ? $r : [$this->status(), null];
        return ['status' => $s->status, 'state' => $s->state, 'interval_us' => $s->intervalUs,
            'type' => State::profileType($c), 'profiling' => $this->profiler !== null,
            'request_sample_rate' => $this->rate, 'service' => (string)$s->service,
            'instance' => (string)$s->instance, 'spool_dir' => (string)$s->spoolDir,
            'spooled_bytes' => $s->spooledBytes,
            'queued' => $s->profilesQueued, 'sent' => $s->profilesSent,
            'dropped' => $s->profilesDropped, 'samples' => $s->samples,
            'last_error' => $s->lastError];
    }

    /** Whether excimer is sampling this request now. */
    public function profiling(): bool
    {
        return $this->profiler !== null;
    }

    /** The spool directory in use: the one asked for, or the fallback that keeps the status
     * reaching the server when that one is not usable (checked once, here). */
    public function spool(): Spool
    {
        $this->init();
        $this->checkSpool();
        return $this->spool;
    }

    /** The gate (Spool::readGate). A gate that reads as this user's was written by this
     * user's maintenance into the directory it checked, so the directory needs no check of
     * its own: the common request costs one small read. Otherwise the directory is checked
     * now and the gate read from the directory in use.
     * @param ?array $first the gate of the directory asked for, as already read */
    private function readGate(?array $first = null): array
    {
        $g = $first !== null && $this->spool->dir === $this->spoolDir ? $first
            : $this->spool->readGate();
        if ($g['mine']) {
            $this->spoolChecked = true;
        } elseif (!$this->spoolChecked) {
            $this->checkSpool();
            $g = $this->spool->readGate();
        }
        return $g;
    }

    /** Checks the spool directory once. When it is not usable nothing can be cached or
     * spooled: not profiling, with the error as the status. The status still reaches the
     * server, polled with the state kept in a fallback directory (one poll per poll period
     * and the failure backoff, across processes); when that directory is not writable
     * either, nothing is polled. */
    private function checkSpool(): void
    {
        if ($this->spoolChecked) {
            return;
        }
        $this->spoolChecked = true;
        $dir = $this->spoolDir;
        if (!Spool::usable($dir)) {
            $this->useFallbackSpool($dir, 'not writable');
        }
    }

    /** Spool directory $dir cannot be used ($why): the status says so, and a directory of
     * this service and instance keeps it reaching the server. */
    private function useFallbackSpool(string $dir, string $why): void
    {
        $this->fatal = Status::format(Status::ERROR, 'spool directory '
            . self::shorten($dir, 150) . ' ' . $why);
        $this->spool = new Spool(RequestStart::defaultDir($this->service, $this->instance)
            . '-fallback-' . substr(hash('sha256', $dir), 0, 8), $this->limits);
    }

    /**
     * The status and the config it was computed from, read once from the spool.
     * @return array{0: Status, 1: ?Config}
     */
    private function snapshot(): array
    {
        $st = $this->spool()->readState();
        $c = State::config($st, $this->limits);
        $n = static fn(string $k): int => is_numeric($st[$k] ?? null) ? (int)$st[$k] : 0;
        return [new Status(State::status($st, $this->limits, $this->fatal, State::nowNs()),
            intervalUs: State::effectiveIntervalUs($c, $this->limits, $this->rate),
            service: $this->service, instance: $this->instance, profilesSent: $n('sent'),
            profilesDropped: $n('dropped'), profilesQueued: count($this->spool->queued()),
            samples: $n('samples'), lastError: $this->lastError($st),
            spoolDir: $this->spoolDir, spooledBytes: $this->spool->spooledBytes()), $c];
    }

    /** The last problem seen: bad options (the error status that stops everything), else
     * from the cached state an invalid config (`invalid config: <why>`, as in the status),
     * a failed poll or a failed upload; null when none. */
    private function lastError(array $st): ?string
    {
        if ($this->fatal !== null && Status::state($this->fatal) === Status::ERROR) {
            return $this->fatal;
        }
        foreach (['invalid' => 'invalid config: ', 'poll_error' => '', 'upload_error' => '']
                 as $k => $prefix) {
            if (is_string($st[$k] ?? null) && $st[$k] !== '') {
                return $prefix . $st[$k];
            }
        }
        return null;
    }

    private function startIfAllowed(): void
    {
        $g = $this->gate; // precomputed by maintenance (State::gate)
        $allowed = $this->fatal === null && State::nowNs() <= $g['until'];
        if (!$allowed || $this->profiler !== null) {
            if (!$allowed) {
                $this->spoolRunning(false);
            }
            return;
        }
        $lim = $this->limits;
        $us = (int)Limits::clamp($g['us'], $lim->samplingIntervalMinUs, $lim->samplingIntervalMaxUs);
        $this->type = $g['type'];
        $this->periodNs = State::sampleWeightNs($us, $this->rate);
        $this->depth = (int)Limits::clamp($g['depth'], $lim->stackDepthMin, $lim->stackDepthMax);
        $this->cpu0Ns = $this->type === 'cpu' ? self::cpuNs() : -1;
        $p = new \ExcimerProfiler();
        $p->setPeriod($us / 1e6);
        $p->setEventType($this->type === 'wall' ? \EXCIMER_REAL : \EXCIMER_CPU);
        $p->start();
        $this->profiler = $p;
    }

    /** Spools what the running profiler collected and, when it took a sample, the CPU time
     * the kernel had accounted to this process at its start and now (the readings of DESIGN
     * §7's witness that capacity's unattributed CPU comes from: excimer's timer loses
     * expiries when its notify thread waits for a core; Witness). Without a sample it
     * spools nothing and reads nothing: the next sampled reading of this process covers its
     * CPU. Stops the profiler unless $keep. */
    private function spoolRunning(bool $keep): void
    {
        $p = $this->profiler;
        if ($p === null) {
            return;
        }
        if ($keep) {
            $log = $p->flush();
        } else {
            $p->stop();
            $log = $p->getLog();
            $this->profiler = null;
        }
        // With a share of requests picked, every picked one reads the CPU at its end: the
        // sampled ones alone would leave too few readings for the witness (Witness).
        if (count($log) === 0 && ($this->rate >= 1.0 || $this->type !== 'cpu')) {
            $this->cpu0Ns = $keep ? $this->cpu0Ns : -1; // a later reading covers this part
            return;
        }
        $cpu = null;
        if ($this->type === 'cpu' && $this->cpu0Ns >= 0 && ($now = self::cpuNs()) >= 0) {
            $cpu = [$this->cpu0Ns, max($this->cpu0Ns, $now)];
        }
        $this->cpu0Ns = $keep && $cpu !== null ? $cpu[1] : -1;
        $this->root ??= Frames::findRoot(self::entryScript());
        $stacks = (new Frames($this->root))->aggregate($log, $this->periodNs, $this->depth,
            $this->limits->maxStacksPerProfile);
        $this->spool->append($this->type, $this->periodNs, $stacks, $cpu);
    }

    /** The CPU time (user + system, every thread) the kernel accounted to this process, ns
     * (getrusage(RUSAGE_SELF)); -1 when getrusage is unavailable. */
    private static function cpuNs(): int
    {
        $u = function_exists('getrusage') ? @getrusage() : false;
        if (!is_array($u) || !isset($u['ru_utime.tv_sec'], $u['ru_stime.tv_sec'])) {
            return -1;
        }
        return ((int)$u['ru_utime.tv_sec'] + (int)$u['ru_stime.tv_sec']) * 1000000000
            + ((int)$u['ru_utime.tv_usec'] + (int)$u['ru_stime.tv_usec']) * 1000;
    }

    /** What the options lack, or null when usable. */
    private static function optionsProblem(array $o): ?string
    {
        $missing = [];
        foreach (['server', 'key', 'service'] as $k) {
            if (!is_string($o[$k] ?? null) || $o[$k] === '') {
                $missing[] = $k;
            }
        }
        if ($missing !== []) {
            return 'missing option' . (count($missing) > 1 ? 's' : '') . ': ' . implode(', ', $missing);
        }
        foreach (['service', 'instance'] as $k) {
            if (isset($o[$k]) && ($why = self::nameProblem($o[$k])) !== null) {
                return 'invalid ' . $k . ' name (' . $why . ')';
            }
        }
        return null;
    }

    /** $s cut to at most $max bytes, the middle replaced by "...". */
    private static function shorten(string $s, int $max): string
    {
        if (strlen($s) <= $max) {
            return $s;
        }
        $half = intdiv($max - 3, 2);
        return substr($s, 0, $half) . '...' . substr($s, -$half);
    }

    /** Null when the server accepts the name (1-200 bytes of UTF-8, no control
     * characters, no '/'), else why not. */
    public static function nameProblem(mixed $name): ?string
    {
        if (!is_string($name)) {
            return 'not a string';
        }
        if ($name === '' || strlen($name) > self::NAME_MAX_BYTES) {
            return $name === '' ? 'empty' : strlen($name) . ' bytes, at most ' . self::NAME_MAX_BYTES;
        }
        $n = strlen($name);
        if (strspn($name, self::NAME_PLAIN) === $n) {
            return null; // the common case, without a regular expression
        }
        if (!preg_match('//u', $name)) {
            return 'not valid UTF-8';
        }
        $at = strcspn($name, self::NAME_FORBIDDEN);
        if ($at !== $n) {
            return $name[$at] === '/' ? "contains '/'" : sprintf('control character U+%04X', ord($name[$at]));
        }
        return null;
    }

    /** `<hostname>-<fpm pool or cli>` (DESIGN §5), as a name the server accepts
     * (RequestStart::defaultInstance, where the rule lives). */
    public static function defaultInstance(): string
    {
        return RequestStart::defaultInstance();
    }

    private static function entryScript(): string
    {
        $s = $_SERVER['SCRIPT_FILENAME'] ?? '';
        if (!is_string($s) || $s === '' || !@is_file($s)) {
            $s = get_included_files()[0] ?? '';
        }
        return is_string($s) ? $s : '';
    }

    /** Runs $f with warnings silenced and every Throwable caught (never into the app). */
    private static function guard(callable $f): mixed
    {
        set_error_handler(static fn() => true);
        try {
            return $f();
        } catch (\Throwable $e) {
            return null;
        } finally {
            restore_error_handler();
        }
    }
}
