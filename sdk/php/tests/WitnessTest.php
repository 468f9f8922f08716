<?php
// The CPU witness differenced per process (Witness::account, DESIGN §7): what a reading adds,
// when the CPU between two readings counts, and the state kept from one profile to the next.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Witness;

final class WitnessTest extends TestCase
{
    private const S = 1_000_000_000;
    private const GAP = 300 * self::S;

    /**
     * Against a fake control plane serving $config, runs $n requests of about $ms ms of CPU
     * each in one CLI process between two of $edgeMs ms, each through the SDK's per-request
     * path (a new Agent, begin, end; a first one polls the config), then closes and uploads
     * the profile. Returns [the loop's CPU by getrusage, ns; the segment files left in the
     * spool after the loop; the uploads]. Skips the test without ext-excimer.
     */
    private function requests(array $config, int $n, float $ms, float $edgeMs): array
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
        $code = T::prelude() . str_replace('CPU_NOW', T::CPU_NOW, <<<'PHP'
$opts = ["server" => $argv[1], "key" => "k", "service" => "svc", "spool_dir" => $argv[2]];
$request = function (float $s) use ($opts): void {
    $rt = new RootTrace\Agent($opts);
    $rt->begin(false);
    $x = 0; $e = CPU_NOW + $s; while (CPU_NOW < $e) { $x = ($x * 31 + 7) % 1000003; }
    $rt->end();
};
$request(0); // polls the config: profiling from the next request
$c0 = (int)(CPU_NOW * 1e9);
$request($argv[5] / 1e3);
for ($i = 0; $i < (int)$argv[3]; $i++) { $request($argv[4] / 1e3); }
$request($argv[5] / 1e3);
$c1 = (int)(CPU_NOW * 1e9);
$segments = count(glob($argv[2] . '/spool/*.seg'));
(new RootTrace\Agent($opts))->maintain(true);
echo json_encode(['loop_ns' => $c1 - $c0, 'segments' => $segments]);
PHP);
        $fake = new FakeCP();
        $dir = T::tmpdir('witness');
        try {
            $fake->setConfig($config + ['enabled' => true, 'poll_interval_s' => 60]);
            file_put_contents($dir . '/loop.php', $code);
            [$rc, $out, $err] = T::runFile($dir . '/loop.php',
                [$fake->url, $dir . '/spool', (string)$n, (string)$ms, (string)$edgeMs]);
            $this->assertSame([0, ''], [$rc, $err], 'loop.php');
            $r = json_decode($out, true);
            return [$r['loop_ns'], $r['segments'], $fake->uploads()];
        } finally {
            $fake->close();
            T::rmrf($dir);
        }
    }

    /** Requests of 2 ms at the default 10 ms: few have a sample and a reading; the witness
     * still covers the others' CPU, as the kernel counted it. The first and last request
     * take 30 ms, so that a reading (almost surely) starts and ends the loop. */
    public function testTheWitnessCoversTheUnsampledRequests(): void
    {
        [$loop, , $uploads] = $this->requests([], 300, 2.0, 30.0);
        $cpu = array_values(array_filter($uploads, static fn($u) => isset($u['params']['process_cpu_ns'])));
        $this->assertCount(1, $cpu, json_encode(array_column($uploads, 'params')));
        $witness = (int)$cpu[0]['params']['process_cpu_ns'];
        $samples = array_sum(array_column($cpu[0]['profile']['samples'], 1));
        // Few requests have a sample (8 of 300 here: the kernel checks CPU timers at its
        // tick), so the witness is mostly the CPU between readings.
        $this->assertLessThan(0.5 * 300, $samples, 'most requests had no sample');
        $this->assertGreaterThan(0.9 * $loop, $witness, "loop $loop ns, $samples samples");
        $this->assertLessThanOrEqual($loop, $witness);
    }

    /** A request without a sample reads the CPU once and writes nothing. */
    public function testARequestWithoutASampleSpoolsNothing(): void
    {
        // 1 s between samples: a request of ~0.1 ms has one with a chance of 1 in 10,000.
        [, $segments, $uploads] = $this->requests(['sampling_interval_us' => 1_000_000], 20, 0.0, 0.0);
        $this->assertSame(0, $segments);
        $this->assertCount(1, $uploads); // the interval, empty: coverage with no samples
        $this->assertSame([], $uploads[0]['profile']['samples']);
        $this->assertArrayNotHasKey('process_cpu_ns', $uploads[0]['params']);
    }

    /** account() with a gap bound of 300 s (the SDK compiles in an hour) and 4096 processes. */
    private static function account(array $readings, array $last = [], int $now = 0): array
    {
        $now = $now ?: max([0, ...array_column($readings, 1), ...array_column($last, 0)]);
        return Witness::account($readings, $last, $now, self::GAP, 4096);
    }

    public function testAProcesssFirstReadingIsItsRequestsOwnCpu(): void
    {
        [$ns, $last] = self::account([[10, 5 * self::S, 700_000_000, 703_000_000]]);
        $this->assertSame(3_000_000, $ns);
        $this->assertSame([10 => [5 * self::S, 703_000_000]], $last);
    }

    public function testTheCpuBetweenTwoReadingsOfAProcessCounts(): void
    {
        // Three sampled requests of 3 ms; between them unsampled requests took 20 and 8 ms.
        $r = [[10, 1 * self::S, 100_000_000, 103_000_000],
              [10, 2 * self::S, 123_000_000, 126_000_000],
              [10, 3 * self::S, 134_000_000, 137_000_000]];
        $this->assertSame(37_000_000, self::account($r)[0]);
        // Any order in, the same sum (segments are claimed in name order, not time order).
        $this->assertSame(37_000_000, self::account(array_reverse($r))[0]);
        // Two processes do not mix.
        $r[] = [11, 2 * self::S, 500_000_000, 502_000_000];
        $r[] = [11, 3 * self::S, 510_000_000, 512_000_000];
        [$ns, $last] = self::account($r);
        $this->assertSame(37_000_000 + 2_000_000 + 10_000_000, $ns);
        $this->assertSame([10 => [3 * self::S, 137_000_000], 11 => [3 * self::S, 512_000_000]], $last);
    }

    public function testTheLastReadingCarriesToTheNextProfile(): void
    {
        [, $last] = self::account([[10, 1 * self::S, 100_000_000, 103_000_000]]);
        $last = json_decode(json_encode($last), true); // as the state file keeps it
        [$ns] = self::account([[10, 61 * self::S, 150_000_000, 152_000_000]], $last);
        $this->assertSame(49_000_000, $ns);
    }

    public function testAReadingThatCannotFollowThePreviousOneCountsAlone(): void
    {
        $prev = [10 => [1 * self::S, 100_000_000]];
        // The process id was reused: the new process has less CPU than the old one had.
        $this->assertSame(3_000_000, self::account([[10, 2 * self::S, 40_000_000, 43_000_000]], $prev)[0]);
        // More CPU between the readings than time between them: not one process.
        $this->assertSame(3_000_000, self::account([[10, 2 * self::S, 1_200_000_000, 1_203_000_000]], $prev)[0]);
        // Further apart than the gap bound: that CPU belongs to earlier profiles.
        $this->assertSame(3_000_000, self::account([[10, 302 * self::S, 150_000_000, 153_000_000]], $prev)[0]);
        // Within it, the whole gap.
        $this->assertSame(53_000_000, self::account([[10, 300 * self::S, 150_000_000, 153_000_000]], $prev)[0]);
        // A reading older than the one kept (a clock that went back): alone.
        $this->assertSame(3_000_000, self::account([[10, self::S / 2, 150_000_000, 153_000_000]], $prev)[0]);
    }

    public function testTheStateForgetsOldProcessesAndIsBounded(): void
    {
        $last = [10 => [1 * self::S, 1], 11 => [200 * self::S, 2], 'x' => 'junk', 12 => [3, 'y']];
        [$ns, $kept] = Witness::account([], $last, 302 * self::S, self::GAP, 4096);
        $this->assertSame(0, $ns);
        $this->assertSame([11 => [200 * self::S, 2]], $kept);
        $r = [];
        for ($pid = 1; $pid <= 6; $pid++) {
            $r[] = [$pid, $pid * self::S, 0, 1];
        }
        [$ns, $kept] = Witness::account($r, [], 6 * self::S, self::GAP, 4);
        $this->assertSame(6, $ns);
        $this->assertSame([6, 5, 4, 3], array_keys($kept)); // the most recent
    }
}
