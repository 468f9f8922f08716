<?php
// What every request's start reads before anything else: the names and the spool directory
// its options resolve to, and the gate in that directory (docs/sdk/php.md, steps 0 and 1 of
// "How a request, the spool and the upload fit together"). A php-fpm worker loads the
// classes a request uses in every request, and a request whose gate is closed and whose
// maintenance is not due needs nothing more: Profiler::start stops here for it without
// loading Agent (docs/performance-sdk.md, *PHP under a real php-fpm*).
declare(strict_types=1);

namespace RootTrace;

final class RequestStart
{
    /** The gate's name in the spool directory (readGate, Spool::writeGate). */
    public const GATE = 'gate';
    /** The gate of a missing, malformed or foreign gate file: off, maintenance due. */
    public const CLOSED = ['until' => 0, 'type' => 'cpu', 'us' => 0, 'depth' => 0,
        'next_due' => 0, 'mine' => false];

    /** The server's limit on service and instance names, in UTF-8 bytes. */
    public const NAME_MAX_BYTES = 200;
    /** The bytes the server refuses in a name: '/', DEL and the C0 controls. */
    public const NAME_FORBIDDEN = "/\x7f\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
        . "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f";

    /**
     * The options with the environment's defaults and the names they resolve to, as Agent
     * uses them: ['options' => the options with server, key, service and version taken
     * from ROOTTRACE_SERVER, _KEY, _SERVICE and _VERSION where not given, 'service' => the
     * service name ('' when not a string), 'instance' => the instance name (the option,
     * else defaultInstance()), 'dir' => the spool directory (the option, else
     * defaultDir())]. Reads the environment, the host's name and, under php-fpm without
     * ROOTTRACE_POOL, fpm_get_status(). Never throws.
     * @return array{options: array, service: string, instance: string, dir: string}
     */
    public static function resolve(array $o): array
    {
        foreach (['server', 'key', 'service', 'version'] as $k) {
            $o[$k] ??= self::env('ROOTTRACE_' . strtoupper($k));
        }
        $service = is_string($o['service'] ?? null) ? $o['service'] : '';
        $instance = is_string($o['instance'] ?? null) ? $o['instance'] : self::defaultInstance();
        $dir = is_string($o['spool_dir'] ?? null) && $o['spool_dir'] !== '' ? $o['spool_dir']
            : self::defaultDir($service, $instance);
        return ['options' => $o, 'service' => $service, 'instance' => $instance, 'dir' => $dir];
    }

    /**
     * Whether a request that read $gate at its start has nothing to do: the gate is this
     * user's (written by maintenance into a directory it checked), profiling is off by it
     * (its `until` has passed, or is 0) and maintenance is not due before $nowNs (Unix ns).
     * Such a request starts no profiler, spools nothing and registers no end.
     */
    public static function idle(array $gate, int $nowNs): bool
    {
        return $gate['mine'] && $nowNs > $gate['until'] && $nowNs < $gate['next_due'];
    }

    /**
     * The gate in spool directory $dir: ['until' => Unix ns profiling is allowed until
     * (0: off), 'type', 'us', 'depth', 'next_due' => Unix ns when maintenance is next due,
     * 'mine' => whether it is a gate this user wrote]; CLOSED when missing, malformed or
     * another user's (off, maintenance due). Every request pays for this read, so the gate
     * is one short line kept as a symbolic link's target: a readlink and an lstat, where
     * reading a file costs PHP eight system calls. A gate that could not be written as a
     * link is a file of the same line (Spool::writeGate), read when readlink fails. Never
     * throws (a path holding a NUL byte reads as CLOSED).
     */
    public static function readGate(string $dir): array
    {
        $path = $dir . '/' . self::GATE;
        if (str_contains($path, "\0")) {
            return self::CLOSED;
        }
        $raw = @readlink($path);
        if ($raw !== false) {
            clearstatcache(true, $path);
            $st = @lstat($path);
        } else {
            $fp = @fopen($path, 'rb');
            $st = false;
            if ($fp !== false) {
                $raw = @fread($fp, 256);
                $st = @fstat($fp);
                @fclose($fp);
            }
        }
        $p = $raw === false ? [] : explode(' ', trim($raw));
        if (count($p) !== 6 || $p[0] !== 'g1' || $st === false
            || (($uid = self::euid()) >= 0 && $st['uid'] !== $uid)) {
            return self::CLOSED;
        }
        return ['until' => (int)$p[1], 'type' => $p[2] === 'wall' ? 'wall' : 'cpu',
            'us' => (int)$p[3], 'depth' => (int)$p[4], 'next_due' => (int)$p[5], 'mine' => true];
    }

    /**
     * The default spool directory for a service and instance: under sys_get_temp_dir(),
     * one per user, service and instance (a name safe in a path plus a hash of the exact
     * names).
     */
    public static function defaultDir(string $service, string $instance): string
    {
        $uid = self::euid();
        $uid = $uid >= 0 ? (string)$uid : 'u';
        $safe = strspn($service, self::PATH_PLAIN) === strlen($service) ? $service
            : (string)preg_replace('/[^A-Za-z0-9_.-]+/', '_', $service);
        return rtrim(sys_get_temp_dir(), '/') . '/roottrace-' . $uid . '-' . substr($safe, 0, 40)
            . '-' . substr(hash('sha256', $service . "\0" . $instance), 0, 12);
    }

    /** `<hostname>-<fpm pool or cli>` (DESIGN §5), as a name the server accepts. */
    public static function defaultInstance(): string
    {
        $pool = PHP_SAPI === 'cli' ? 'cli' : (PHP_SAPI === 'fpm-fcgi' ? self::fpmPool() : PHP_SAPI);
        $host = (string)@gethostname();
        $host = $host === '' ? 'localhost' : $host;
        $max = self::NAME_MAX_BYTES - strlen($pool) - 1;
        if (strlen($host) > $max || strcspn($host, self::NAME_FORBIDDEN) !== strlen($host)) {
            $host = substr((string)preg_replace('/[\x00-\x1f\x7f\/]/', '-', $host), 0, $max);
            while ($host !== '' && !preg_match('//u', $host)) {
                $host = substr($host, 0, -1); // cut on a character boundary
            }
        }
        return $host . '-' . $pool;
    }

    /** Now, Unix nanoseconds (microsecond resolution, exact in an int). */
    public static function nowNs(): int
    {
        [$frac, $sec] = explode(' ', microtime());
        return (int)$sec * 1_000_000_000 + (int)round((float)$frac * 1e6) * 1000;
    }

    /** The environment variable $name ($_SERVER first, as php-fpm's env[] sets it there),
     * null when unset or empty. */
    public static function env(string $name): ?string
    {
        $v = $_SERVER[$name] ?? getenv($name);
        return is_string($v) && $v !== '' ? $v : null;
    }

    /** This process's effective uid now (a process may change it), -1 without ext-posix. */
    public static function euid(): int
    {
        return function_exists('posix_geteuid') ? posix_geteuid() : -1;
    }

    /** The bytes of a service name kept as they are in the spool directory's name. */
    private const PATH_PLAIN = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-';

    /** The php-fpm pool's name: ROOTTRACE_POOL when the pool config sets it (`env[...] =
     * $pool`, which php-fpm expands to the pool's name), else from fpm_get_status(), whose
     * cost grows with the pool's children (2 µs with 1, 23 µs with 32 on the machine of
     * docs/performance-sdk.md, stop 63); "fpm" when unknown. */
    private static function fpmPool(): string
    {
        $pool = self::env('ROOTTRACE_POOL');
        if ($pool === null && function_exists('fpm_get_status')) {
            $s = @fpm_get_status();
            $pool = is_array($s) && is_string($s['pool'] ?? null) ? $s['pool'] : null;
        }
        $pool = (string)preg_replace('/[^\x21-\x7e]|\//', '-', (string)$pool);
        return $pool === '' ? 'fpm' : substr($pool, 0, 60);
    }
}
