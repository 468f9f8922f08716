<?php
// The share of requests profiled (the request_sample_rate option, Limits; docs/decisions.md,
// "PHP profiles a share of requests"): which requests are picked, what one left out costs
// (nothing read, nothing written), and what a sample of a picked one weighs.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Agent;
use RootTrace\Limits;

final class RequestSampleRateTest extends TestCase
{
    /** The option clamped to [0.01, 1]; without it, every run in the CLI (these tests run
     * there; php-fpm's default is FpmTest's); not a number: an error status. */
    public function testTheRateIsTheOptionClampedOrTheSapisDefault(): void
    {
        $o = ['server' => 'http://127.0.0.1:9', 'key' => 'k', 'service' => 'svc',
            'spool_dir' => sys_get_temp_dir() . '/rt-rate-unused'];
        $this->assertSame('cli', PHP_SAPI);
        $this->assertSame(1.0, (new Agent($o))->requestSampleRate());
        foreach ([[0.5, 0.5], [1, 1.0], [0, 0.01], [-3.0, 0.01], [7, 1.0], [INF, 1.0]] as [$v, $want]) {
            $this->assertSame($want, (new Agent($o + ['request_sample_rate' => $v]))->requestSampleRate(),
                var_export($v, true));
        }
        foreach (['0.5', NAN, true, [0.5]] as $bad) {
            $a = new Agent($o + ['request_sample_rate' => $bad]);
            $this->assertTrue($a->picked(), 'an unusable option is reported, so never left out');
            $this->assertSame('error: request_sample_rate must be a number', $a->status()->status,
                var_export($bad, true));
        }
    }

    /** Picked with the rate's probability: 4,000 agents at 0.25 pick within 4.5 standard
     * deviations of 1,000 (27.4 each; 1 run in 150,000 falls outside); 1 picks them all. The
     * draw is the system's, never mt_rand's: a sequence the application seeded is not
     * moved. */
    public function testRequestsArePickedAtTheRateWithoutTouchingMtRand(): void
    {
        $o = ['service' => 'svc', 'request_sample_rate' => 0.25];
        mt_srand(20261204);
        $want = [mt_rand(), mt_rand()];
        mt_srand(20261204);
        $first = mt_rand();
        $picked = 0;
        for ($i = 0; $i < 4000; $i++) {
            $picked += (new Agent($o))->picked() ? 1 : 0;
        }
        $this->assertSame($want, [$first, mt_rand()], "the application's sequence");
        mt_srand();
        $this->assertEqualsWithDelta(1000, $picked, 123);
        for ($i = 0; $i < 200; $i++) {
            $this->assertTrue((new Agent(['service' => 'svc', 'request_sample_rate' => 1]))->picked());
        }
    }

    /** A request left out starts nothing, reads and writes nothing (the spool directory is
     * never created) and runs no maintenance; a picked one's end runs it (the state it
     * writes is there). */
    public function testARequestLeftOutTouchesNothing(): void
    {
        $dir = T::tmpdir('rate');
        try {
            $o = ['server' => 'http://127.0.0.1:' . T::freePort(), 'key' => 'k', 'service' => 'svc',
                'spool_dir' => $dir . '/spool', 'request_sample_rate' => 0.5];
            do {
                $out = new Agent($o);
            } while ($out->picked());
            $out->begin(false);
            $this->assertFalse($out->profiling());
            $out->end();
            $this->assertFileDoesNotExist($dir . '/spool');
            $this->assertSame(0.5, $out->info()['request_sample_rate']);
            do {
                $in = new Agent($o);
            } while (!$in->picked());
            $in->begin(false);
            $in->end(); // maintenance is due: no state yet; the poll finds nobody there
            $this->assertFileExists($dir . '/spool/state.json');
        } finally {
            T::rmrf($dir);
        }
    }

    /**
     * Against a fake control plane at the default 10 ms, 120 requests of 20 ms of CPU at a
     * rate of 0.5 in one CLI process: the profile's period is 20 ms, each sample weighs it,
     * the poll says the effective interval (20,000 µs), and the samples' value estimates the
     * loop's CPU. About 60 requests are picked (± 5.5: 4 deviations allowed) and excimer
     * loses some expiries at the kernel's tick (docs/sdk/php.md), so the estimate is
     * checked against 0.55-1.4 of the CPU (0.93-1.0 in three runs); unweighted it would be
     * half that.
     */
    public function testASampleWeighsTheIntervalOverTheRate(): void
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
        $code = T::prelude() . str_replace('CPU_NOW', T::CPU_NOW, <<<'PHP'
$opts = ["server" => $argv[1], "key" => "k", "service" => "svc", "spool_dir" => $argv[2],
    "request_sample_rate" => 0.5];
$request = function (float $s) use ($opts): bool {
    $rt = new RootTrace\Agent($opts);
    $rt->begin(false);
    $x = 0; $e = CPU_NOW + $s; while (CPU_NOW < $e) { $x = ($x * 31 + 7) % 1000003; }
    $rt->end();
    return $rt->picked();
};
while (!$request(0)) {} // a picked one polls the config: profiling from the next picked one
$c0 = (int)(CPU_NOW * 1e9);
$picked = 0;
for ($i = 0; $i < 120; $i++) { $picked += $request(0.02) ? 1 : 0; }
$c1 = (int)(CPU_NOW * 1e9);
$a = new RootTrace\Agent($opts + ["request_sample_rate" => 1]);
$a->maintain(true);
echo json_encode(['loop_ns' => $c1 - $c0, 'picked' => $picked,
    'interval_us' => (new RootTrace\Agent($opts))->info()['interval_us']]);
PHP);
        $fake = new FakeCP();
        $dir = T::tmpdir('rate');
        try {
            $fake->setConfig(['enabled' => true, 'poll_interval_s' => 60]);
            file_put_contents($dir . '/loop.php', $code);
            [$rc, $out, $err] = T::runFile($dir . '/loop.php', [$fake->url, $dir . '/spool']);
            $this->assertSame([0, ''], [$rc, $err], 'loop.php');
            $r = json_decode($out, true);
            $this->assertSame(20000, $r['interval_us'], 'the effective interval in the status');
            $polls = $fake->polls();
            $this->assertSame('20000', (string)$polls[0]['params']['interval_us'], 'as polled');
            $cpu = array_values(array_filter($fake->uploads(),
                static fn($u) => ($u['params']['service'] ?? '') === 'svc' && $u['profile']['samples'] !== []));
            $this->assertCount(1, $cpu);
            $p = $cpu[0]['profile'];
            $this->assertSame(20_000_000, $p['period']);
            $n = $v = 0;
            foreach ($p['samples'] as [, $count, $value]) {
                $this->assertSame($count * 20_000_000, $value, 'a sample weighs interval / rate');
                $n += $count;
                $v += $value;
            }
            $this->assertEqualsWithDelta(60, $r['picked'], 22, 'picked of 120 at 0.5');
            $ratio = $v / $r['loop_ns'];
            $this->assertGreaterThan(0.55, $ratio, "$n samples, {$r['picked']} picked");
            $this->assertLessThan(1.4, $ratio, "$n samples, {$r['picked']} picked");
        } finally {
            $fake->close();
            T::rmrf($dir);
        }
    }
}
