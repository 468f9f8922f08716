<?php
// Uploader: spooled stacks to gzip pprof profiles, queued on disk (bounded) and POSTed to
// /api/v1/profiles (DESIGN §4; answers per docs/control-plane.md).
declare(strict_types=1);

namespace RootTrace;

final class Uploader
{
    /** What an upload attempt came to. */
    public const SENT = 'sent';
    public const DROPPED = 'dropped';
    public const REFUSED = 'refused';
    public const RETRY = 'retry';

    public function __construct(private readonly Spool $spool, private readonly Limits $limits)
    {
    }

    /**
     * The gzip pprof body of one profile, at most the upload bound: when too large, the
     * lightest stacks are folded into one "(trimmed)" stack (events and values kept) until
     * it fits. Null when zlib is missing.
     * @param array<string, array{0: int, 1: int}> $stacks folded => [events, value_ns]
     */
    public function body(string $type, int $t0Ns, int $durationNs, int $periodNs,
                         array $stacks): ?string
    {
        uasort($stacks, static fn($a, $b) => $b[1] <=> $a[1]); // heaviest first
        $samples = [];
        foreach ($stacks as $folded => [$n, $ns]) {
            $samples[] = [explode(Frames::SEP, (string)$folded), $n, $ns];
        }
        $keep = count($samples);
        while (true) {
            $use = $samples;
            if ($keep < count($samples)) {
                $rest = array_slice($samples, $keep);
                $use = array_slice($samples, 0, $keep);
                $use[] = [[Frames::TRIMMED], array_sum(array_column($rest, 1)),
                    array_sum(array_column($rest, 2))];
            }
            $gz = Encoder::compress(Encoder::encode($type, $t0Ns, $durationNs, $periodNs, $use));
            if ($gz === null || strlen($gz) <= $this->limits->uploadMaxBytes || $keep === 0) {
                return $gz;
            }
            $keep = intdiv($keep, 2);
        }
    }

    /**
     * Builds and queues one profile per type spooled in [t0, t1] (Unix ns), with the CPU
     * witness (Witness::account: what the kernel accounted to its processes over their
     * sampled requests and between them) as process_cpu_ns when there is one;
     * when nothing was spooled, one empty profile of $emptyType (coverage with no samples,
     * DESIGN §4).
     * @param array $merged what Spool::claim() returned
     * @param array $params common query parameters (service, instance, runtime, ...)
     * @return int profiles dropped from the queue by its bound (or unbuildable)
     */
    public function queueProfiles(array $merged, int $t0, int $t1, string $emptyType,
                                  int $emptyPeriodNs, array $params): int
    {
        if ($merged === []) {
            $merged = [$emptyType => ['period' => $emptyPeriodNs, 'stacks' => []]];
        }
        $dropped = 0;
        foreach ($merged as $type => $p) {
            $body = $this->body((string)$type, $t0, max(0, $t1 - $t0),
                (int)($p['period'] ?? $emptyPeriodNs), $p['stacks'] ?? []);
            if ($body === null) {
                $dropped++;
                continue;
            }
            $meta = $params + ['profile_id' => self::uuid4()];
            if (isset($p['os_cpu_ns'])) {
                // DESIGN §7's OS figure, under the server's bound (1,024 CPUs over the
                // duration): CPU between readings may come from before the profile.
                $meta['process_cpu_ns'] = min((int)$p['os_cpu_ns'], max(0, $t1 - $t0) * 1024);
            }
            $dropped += $this->spool->enqueue($meta, $body);
        }
        return $dropped;
    }

    /**
     * Uploads queued profiles oldest first until the queue is empty, one attempt asks for a
     * retry (5xx, 507, network: stop, keep it), or the deadline (microtime) passes.
     * @return array{sent: int, dropped: int, refused: bool, retry: bool, error: ?string}
     */
    public function drain(Http $http, float $deadline): array
    {
        $r = ['sent' => 0, 'dropped' => 0, 'refused' => false, 'retry' => false, 'error' => null];
        foreach ($this->spool->queued() as $path) {
            $left = $deadline - microtime(true);
            if ($left <= 0.05) {
                break;
            }
            $item = $this->spool->load($path);
            if ($item === null) {
                continue;
            }
            [$outcome, $err] = $this->send($http, $item[0], $item[1], $left);
            if ($outcome === self::RETRY) {
                $r['retry'] = true;
                $r['error'] = $err;
                break;
            }
            @unlink($path);
            $r[$outcome === self::SENT ? 'sent' : 'dropped']++;
            if ($outcome !== self::SENT) {
                $r['error'] = $err;
            }
            if ($outcome === self::REFUSED) {
                $r['refused'] = true; // profiling is off: the rest would be refused as well
                foreach ($this->spool->queued() as $rest) {
                    @unlink($rest);
                    $r['dropped']++;
                }
                break;
            }
        }
        return $r;
    }

    /** @return array{0: string, 1: ?string} outcome and error text */
    private function send(Http $http, array $params, string $body, float $left): array
    {
        try {
            $a = $http->request('POST', '/api/v1/profiles', $params, $body,
                ['Content-Type' => 'application/octet-stream'], $left,
                min($this->limits->connectTimeoutS, $left), 4096);
        } catch (\Throwable $e) {
            return [self::RETRY, 'upload failed: ' . $e->getMessage()];
        }
        $code = $a['status'];
        $text = 'upload answered ' . $code . ': ' . substr($a['body'], 0, 120);
        if ($code === 200 || $code === 201) {
            return [self::SENT, null];
        }
        if ($code === 409) {
            return [self::REFUSED, $text];
        }
        return [$code >= 400 && $code < 500 ? self::DROPPED : self::RETRY, $text];
    }

    /** A random UUID version 4 (random_bytes). */
    public static function uuid4(): string
    {
        $b = random_bytes(16);
        $b[6] = chr((ord($b[6]) & 0x0f) | 0x40);
        $b[8] = chr((ord($b[8]) & 0x3f) | 0x80);
        return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
    }

    /** Delay before retry $attempt (1, 2, ...): doubling from min, at most max, ±20 % jitter. */
    public static function backoff(int $attempt, float $lo, float $hi): float
    {
        $d = min($hi, $lo * 2 ** min($attempt - 1, 30));
        return min($hi, $d * (0.8 + 0.4 * random_int(0, 1000) / 1000));
    }
}
