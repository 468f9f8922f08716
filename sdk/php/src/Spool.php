<?php
// Spool: the directory one host and pool share (DESIGN §7 for PHP): the cached control
// state, the maintenance lock, request stacks in append-only segments (bounded, oldest
// dropped first) and the queue of finished profiles waiting for upload.
declare(strict_types=1);

namespace RootTrace;

final class Spool
{
    private const STATE = 'state.json';
    private const GATE = RequestStart::GATE;
    private const LOCK = 'lock';
    private const SEGMENTS = 'spool';
    private const QUEUE = 'queue';
    private const OS_CPU = 'os';  // first field of a request's CPU line (an earlier version's)
    private const READING = 'osc'; // first field of a sampled request's CPU reading (append)

    /** @var resource|null the maintenance lock while held */
    private $lock = null;

    /**
     * @param string $dir the spool directory (created 0700 on first write)
     * @param Limits $limits spool and queue bounds
     */
    public function __construct(public readonly string $dir, private readonly Limits $limits)
    {
    }

    /** The default spool directory for a service and instance (RequestStart::defaultDir,
     * where the rule lives). */
    public static function defaultDir(string $service, string $instance): string
    {
        return RequestStart::defaultDir($service, $instance);
    }

    /** The cached state (empty when missing or unreadable). Takes no lock: the state is
     * replaced whole by rename. */
    public function readState(): array
    {
        $raw = @file_get_contents($this->dir . '/' . self::STATE);
        if ($raw === false || $raw === '') {
            return [];
        }
        $s = json_decode($raw, true);
        return is_array($s) ? $s : [];
    }

    /** The gate in this directory (RequestStart::readGate: its shape, and why it is a
     * symbolic link). Never throws. */
    public function readGate(): array
    {
        return RequestStart::readGate($this->dir);
    }

    /** Writes the gate (see readGate) atomically: as a symbolic link, else as a file.
     * @param ?array $gate State::gate() */
    public function writeGate(?array $gate, int $nextDue): bool
    {
        $g = $gate ?? ['until' => 0, 'type' => 'cpu', 'us' => 0, 'depth' => 0];
        $line = sprintf('g1 %d %s %d %d %d', $g['until'], $g['type'], $g['us'], $g['depth'],
            $nextDue);
        if (!$this->ensure()) {
            return false;
        }
        $tmp = $this->dir . '/.' . self::GATE . '.' . getmypid() . '.link';
        @unlink($tmp);
        if (@symlink($line, $tmp)) {
            if (@rename($tmp, $this->dir . '/' . self::GATE)) {
                return true;
            }
            @unlink($tmp);
        }
        return $this->replace(self::GATE, $line . "\n");
    }

    /** Replaces the state file atomically; false when the directory cannot be written. */
    public function writeState(array $state): bool
    {
        $json = json_encode($state, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
        return $json !== false && $this->replace(self::STATE, $json);
    }

    /** Creates the directories (0700); false when that fails or when the spool belongs to
     * another user (a directory planted in a shared /tmp is not used). */
    public function ensure(): bool
    {
        foreach (['', '/' . self::SEGMENTS, '/' . self::QUEUE] as $sub) {
            $d = $this->dir . $sub;
            if (!@is_dir($d) && !@mkdir($d, 0700, true) && !@is_dir($d)) {
                return false;
            }
        }
        return ($uid = RequestStart::euid()) < 0 || @fileowner($this->dir) === $uid;
    }

    /** Whether a spool can live in $dir: it is (or can be made) a directory this process
     * owns and can write. Warning-free; one or two stat calls when it exists. */
    public static function usable(string $dir): bool
    {
        clearstatcache(true, $dir);
        if (!@is_dir($dir) && !@mkdir($dir, 0700, true) && !@is_dir($dir)) {
            return false;
        }
        return @is_writable($dir)
            && (($uid = RequestStart::euid()) < 0 || @fileowner($dir) === $uid);
    }

    /** Takes the maintenance lock without waiting; false when another process holds it. */
    public function tryLock(): bool
    {
        if ($this->lock !== null) {
            return true;
        }
        if (!$this->ensure()) {
            return false;
        }
        $fp = @fopen($this->dir . '/' . self::LOCK, 'c');
        if ($fp === false) {
            return false;
        }
        if (!@flock($fp, LOCK_EX | LOCK_NB)) {
            @fclose($fp);
            return false;
        }
        $this->lock = $fp;
        return true;
    }

    /** Releases the maintenance lock. */
    public function unlock(): void
    {
        if ($this->lock !== null) {
            @flock($this->lock, LOCK_UN);
            @fclose($this->lock);
            $this->lock = null;
        }
    }

    /**
     * Appends a sampled request's aggregate to this process's open segment (one line per
     * stack: type, period ns, events, value ns, folded stack, tab-separated; then, with $cpu,
     * a reading: "osc", type, pid, hrtime(true) ns, and the process's CPU ns at the request's
     * start and end, for Witness). With neither stacks nor a reading nothing is appended.
     * The segment is sealed at the segment size, and the spool then trimmed to its bound,
     * oldest first: a request's stacks and reading share a segment, so they are kept or
     * dropped together.
     * @param array<string, array{0: int, 1: int}> $stacks folded => [events, value_ns]
     * @param ?array{0: int, 1: int} $cpu [CPU ns at the start, at the end], 0 <= start <= end
     */
    public function append(string $type, int $periodNs, array $stacks, ?array $cpu = null): bool
    {
        if ($stacks === [] && $cpu === null) {
            return true;
        }
        $pid = getmypid();
        $lines = '';
        foreach ($stacks as $folded => [$n, $ns]) {
            $lines .= $type . "\t" . $periodNs . "\t" . $n . "\t" . $ns . "\t" . $folded . "\n";
        }
        if ($cpu !== null) {
            $lines .= self::READING . "\t" . $type . "\t" . $pid . "\t" . hrtime(true) . "\t"
                . $cpu[0] . "\t" . $cpu[1] . "\n";
        }
        $path = $this->dir . '/' . self::SEGMENTS . '/open-' . $pid . '.seg';
        for ($try = 0; $try < 8; $try++) {
            $fp = @fopen($path, 'ab');
            if ($fp === false && (!$this->ensure() || ($fp = @fopen($path, 'ab')) === false)) {
                return false;
            }
            if (!@flock($fp, LOCK_EX)) {
                @fclose($fp);
                return false;
            }
            // The uploader may have claimed (renamed, read and removed) the file between
            // fopen and flock: claim() removes it while holding the lock, so a file with no
            // link left is one it has read. Closing releases the lock.
            $st = @fstat($fp);
            if ($st === false || $st['nlink'] === 0) {
                @fclose($fp);
                continue;
            }
            $ok = @fwrite($fp, $lines) === strlen($lines);
            $size = $st['size'] + strlen($lines);
            if ($size >= $this->limits->spoolSegmentBytes) {
                @rename($path, $this->dir . '/' . self::SEGMENTS . '/sealed-' . self::stamp() . '.seg');
            }
            @fclose($fp);
            if ($size >= $this->limits->spoolSegmentBytes) {
                $this->trim();
            }
            return $ok;
        }
        return false;
    }

    /** Drops the oldest segments until the spool holds at most its bound. Returns the
     * number of bytes dropped. */
    public function trim(): int
    {
        $files = [];
        $total = 0;
        foreach ((array)@glob($this->dir . '/' . self::SEGMENTS . '/*.seg*') as $f) {
            $st = @stat($f);
            if ($st === false) {
                continue;
            }
            if (str_contains($f, '.claimed-') && $st['mtime'] < time() - 60) {
                @unlink($f); // left by a process that died while claiming
                continue;
            }
            // Sealed segments are named by time; a process's open segment is its newest.
            $files[] = [str_contains(basename($f), 'open-') ? 1 : 0, $st['mtime'], $f, $st['size']];
            $total += $st['size'];
        }
        sort($files);
        $dropped = 0;
        foreach ($files as [, , $f, $size]) {
            if ($total <= $this->limits->spoolMaxBytes) {
                break;
            }
            if (@unlink($f)) {
                $total -= $size;
                $dropped += $size;
            }
        }
        return $dropped;
    }

    /**
     * Takes every segment out of the spool and merges it: type => ['period' => ns,
     * 'stacks' => folded => [events, value_ns], 'readings' => list of [pid, mono, c0, c1]
     * (append's CPU readings, for Witness::account), 'os_cpu_ns' => the sum of the CPU lines
     * an earlier version of the SDK spooled, when any], at most $maxStacks stacks per type (the rest
     * under Frames::TRIMMED). Call under the maintenance lock.
     */
    public function claim(int $maxStacks): array
    {
        $this->trim();
        $out = [];
        foreach ((array)@glob($this->dir . '/' . self::SEGMENTS . '/*.seg') as $f) {
            $claimed = $f . '.claimed-' . getmypid();
            if (!@rename($f, $claimed)) {
                continue;
            }
            $fp = @fopen($claimed, 'rb');
            if ($fp === false) {
                continue;
            }
            @flock($fp, LOCK_EX); // a writer that opened it before the rename finishes first
            while (($line = fgets($fp)) !== false) {
                self::merge($out, $line, $maxStacks);
            }
            @unlink($claimed);
            @flock($fp, LOCK_UN);
            @fclose($fp);
        }
        return $out;
    }

    /** Drops everything spooled (profiling was turned off: the server would refuse it). */
    public function discard(): void
    {
        foreach ((array)@glob($this->dir . '/' . self::SEGMENTS . '/*') as $f) {
            @unlink($f);
        }
    }

    private static function merge(array &$out, string $line, int $maxStacks): void
    {
        $p = explode("\t", rtrim($line, "\n"), 6);
        if (count($p) === 6 && $p[0] === self::READING && $p[1] === 'cpu') {
            $r = array_slice($p, 2); // pid, mono, c0, c1: each 0 to 10^18 - 1
            if (count(preg_grep('/^[0-9]{1,18}$/', $r)) === 4 && (int)$r[2] <= (int)$r[3]) {
                $out['cpu']['readings'][] = array_map('intval', $r);
            }
            return;
        }
        if (count($p) === 3 && $p[0] === self::OS_CPU && in_array($p[1], ['cpu', 'wall'], true)
            && preg_match('/^[0-9]{1,19}$/', $p[2]) === 1) { // no ext-ctype needed
            $out[$p[1]]['os_cpu_ns'] = ($out[$p[1]]['os_cpu_ns'] ?? 0) + (int)$p[2];
            return;
        }
        if (count($p) < 5 || !in_array($p[0], ['cpu', 'wall'], true)) {
            return;
        }
        [$type, $period, $n, $ns] = $p;
        $folded = implode("\t", array_slice($p, 4));
        $t = &$out[$type];
        $t['period'] = (int)$period;
        $t['stacks'] ??= [];
        if (!isset($t['stacks'][$folded]) && count($t['stacks']) >= $maxStacks) {
            $folded = Frames::TRIMMED;
        }
        $cur = $t['stacks'][$folded] ?? [0, 0];
        $t['stacks'][$folded] = [$cur[0] + (int)$n, $cur[1] + (int)$ns];
    }

    /**
     * Queues a finished profile for upload, dropping the oldest beyond the queue bound.
     * Returns how many were dropped.
     * @param array $meta upload query parameters
     */
    public function enqueue(array $meta, string $body): int
    {
        if (!$this->ensure()) {
            return 1;
        }
        $name = self::QUEUE . '/' . self::stamp() . '.prof';
        $this->replace($name, json_encode($meta, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE) . "\n" . $body);
        $dropped = 0;
        $queued = $this->queued();
        while (count($queued) > $this->limits->queueMaxProfiles) {
            @unlink(array_shift($queued));
            $dropped++;
        }
        return $dropped;
    }

    /** Paths of the queued profiles, oldest first. */
    public function queued(): array
    {
        $q = (array)@glob($this->dir . '/' . self::QUEUE . '/*.prof');
        sort($q);
        return $q;
    }

    /** A queued profile: [meta, body], or null when unreadable (it is then removed). */
    public function load(string $path): ?array
    {
        $raw = @file_get_contents($path);
        $nl = $raw === false ? false : strpos($raw, "\n");
        $meta = $nl === false ? null : json_decode(substr($raw, 0, $nl), true);
        if (!is_array($meta)) {
            @unlink($path);
            return null;
        }
        return [$meta, (string)substr($raw, $nl + 1)];
    }

    /** Bytes spooled now (segments). */
    public function spooledBytes(): int
    {
        $n = 0;
        foreach ((array)@glob($this->dir . '/' . self::SEGMENTS . '/*.seg') as $f) {
            $n += (int)@filesize($f);
        }
        return $n;
    }

    private function replace(string $name, string $data): bool
    {
        if (!$this->ensure()) {
            return false;
        }
        $tmp = $this->dir . '/.' . basename($name) . '.' . getmypid() . '.tmp';
        if (@file_put_contents($tmp, $data) !== strlen($data)) {
            @unlink($tmp);
            return false;
        }
        return @rename($tmp, $this->dir . '/' . $name);
    }

    /** A name that sorts by time: zero-padded Unix microseconds, pid, random. */
    private static function stamp(): string
    {
        return sprintf('%017d-%d-%s', (int)(microtime(true) * 1e6), getmypid(),
            bin2hex(random_bytes(3)));
    }
}
