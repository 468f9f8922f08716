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
    /** The option (a number or a numeric string) clamped to [0.01, 1]; every request
     * without it; not a number: an error status, which the poll takes to the server. */
    public function testTheRateIsTheOptionClampedOrEveryRequest(): void
    {
        $fake = new FakeCP();
        $dir = T::tmpdir('rate');
        try {
            $o = ['server' => $fake->url, 'key' => 'k', 'service' => 'svc',
                'spool_dir' => $dir . '/spool'];
            $this->assertSame(1.0, (new Agent($o))->requestSampleRate());
            foreach ([[0.5, 0.5], [1, 1.0], [0, 0.01], [-3.0, 0.01], [7, 1.0], [INF, 1.0],
                         ['0.25', 0.25], [' 0.5', 0.5]] as [$v, $want]) {
                $this->assertSame($want, (new Agent($o + ['request_sample_rate' => $v]))
                    ->requestSampleRate(), var_export($v, true));
            }
            $want = 'error: invalid request_sample_rate (not a number)';
            foreach (['a tenth', NAN, true, [0.5]] as $bad) {
                $a = new Agent($o + ['request_sample_rate' => $bad]);
                $this->assertTrue($a->picked(), 'an unusable option is reported, so never left out');
                $this->assertSame($want, $a->status()->status, var_export($bad, true));
            }
            $a->begin(false);
            $this->assertFalse($a->profiling());
            $a->end(); // maintenance is due: the poll says the error
            $this->assertSame($want, $fake->polls()[0]['params']['status']);
        } finally {
            $fake->close();
            T::rmrf($dir);
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

    /** Profiler::start() for a request left out, in a fresh PHP as a php-fpm request is:
     * it loads Profiler, RequestSampling and Limits, not Agent (which a php-fpm worker would
     * otherwise load in every request), and reads and writes nothing; status() then builds
     * the Agent. A child picked (1 % at this rate) is run again. */
    public function testProfilerStartLeavesARequestOutWithoutLoadingTheAgent(): void
    {
        $dir = T::tmpdir('rate');
        try {
            $code = T::prelude() . <<<'PHP'
RootTrace\Profiler::start(["server" => "http://127.0.0.1:9", "key" => "k", "service" => "svc",
    "spool_dir" => $argv[1], "request_sample_rate" => 0.01]);
$loaded = array_values(array_filter(get_declared_classes(),
    static fn($c) => str_starts_with($c, "RootTrace\\")));
sort($loaded);
$spool = file_exists($argv[1]);
RootTrace\Profiler::status();
echo json_encode(["loaded" => $loaded, "spool" => $spool,
    "agent_after_status" => class_exists("RootTrace\\Agent", false)]);
PHP;
            for ($try = 0; $try < 5; $try++) {
                [$rc, $out, $err] = T::php($code, [$dir . '/spool'], [], $dir);
                $this->assertSame([0, ''], [$rc, $err]);
                $got = json_decode($out, true);
                if (!in_array('RootTrace\Agent', $got['loaded'], true)) {
                    break; // left out (a picked child loads the Agent: drawn again)
                }
            }
            $this->assertSame(['RootTrace\Limits', 'RootTrace\Profiler', 'RootTrace\RequestSampling'],
                $got['loaded'], 'a request left out loads these and no more');
            $this->assertFalse($got['spool'], 'nothing written (the spool directory is not made)');
            $this->assertTrue($got['agent_after_status'], 'status() builds the Agent');
        } finally {
            T::rmrf($dir);
        }
    }

    /**
     * Runs $body in a CLI child after a prelude that defines $opts (rate 0.5, the fake as
     * server, a spool) and $request(float $s): one request of $s s of CPU through the SDK's
     * path, returning [picked, profiling]. Returns [the child's JSON output, the fake's
     * uploads, its polls]. Skips the test without ext-excimer.
     */
    private function loop(array $config, string $body): array
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
        $code = T::prelude() . str_replace('CPU_NOW', T::CPU_NOW, (<<<'PHP'
$opts = ["server" => $argv[1], "key" => "k", "service" => "svc", "spool_dir" => $argv[2],
    "request_sample_rate" => 0.5];
$request = function (float $s) use ($opts): array {
    $rt = new RootTrace\Agent($opts);
    $rt->begin(false);
    $on = $rt->profiling();
    $x = 0; $e = CPU_NOW + $s; while (CPU_NOW < $e) { $x = ($x * 31 + 7) % 1000003; }
    $rt->end();
    return [$rt->picked(), $on];
};

PHP) . $body);
        $fake = new FakeCP();
        $dir = T::tmpdir('rate');
        try {
            $fake->setConfig($config + ['enabled' => true, 'poll_interval_s' => 60]);
            file_put_contents($dir . '/loop.php', $code);
            [$rc, $out, $err] = T::runFile($dir . '/loop.php', [$fake->url, $dir . '/spool']);
            $this->assertSame([0, ''], [$rc, $err], 'loop.php');
            return [json_decode($out, true), $fake->uploads(), $fake->polls()];
        } finally {
            $fake->close();
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
        [$r, $uploads, $polls] = $this->loop([], <<<'PHP'
while (!$request(0)[0]) {} // a picked one polls the config: profiling from the next picked one
$c0 = (int)(CPU_NOW * 1e9);
$picked = 0;
for ($i = 0; $i < 120; $i++) { $picked += $request(0.02)[0] ? 1 : 0; }
$c1 = (int)(CPU_NOW * 1e9);
(new RootTrace\Agent(array_replace($opts, ["request_sample_rate" => 1])))->maintain(true);
echo json_encode(['loop_ns' => $c1 - $c0, 'picked' => $picked,
    'interval_us' => (new RootTrace\Agent($opts))->info()['interval_us']]);
PHP);
        $this->assertSame(20000, $r['interval_us'], 'the effective interval in the status');
        $this->assertSame('20000', (string)$polls[0]['params']['interval_us'], 'as polled');
        $cpu = array_values(array_filter($uploads, static fn($u) => $u['profile']['samples'] !== []));
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
    }

    /** At a rate below 1 every picked request writes its CPU reading, a sample or not (the
     * witness needs them: at 1 the sampled requests' readings suffice, WitnessTest); the
     * profile carries their witness. */
    public function testAPickedRequestWithoutASampleWritesItsReading(): void
    {
        // 1 s between samples: a request of ~1 ms has one with a chance of 1 in 1,000
        [$r, $uploads] = $this->loop(['sampling_interval_us' => 1_000_000], <<<'PHP'
while (!$request(0)[1]) { usleep(10000); } // picked and profiling: the config is there
$picked = 0;
for ($i = 0; $i < 20; $i++) { $picked += $request(0.001)[1] ? 1 : 0; }
$lines = 0;
foreach (glob($argv[2] . '/spool/*.seg') as $f) { $lines += substr_count(file_get_contents($f), "osc\tcpu\t"); }
(new RootTrace\Agent($opts))->maintain(true); // maintain() runs, picked or not
echo json_encode(['picked' => $picked, 'readings' => $lines]);
PHP);
        // the first request that profiled had no sample either: its reading is there too
        $this->assertSame($r['picked'] + 1, $r['readings'], json_encode($r));
        $cpu = array_values(array_filter($uploads, static fn($u) => isset($u['params']['process_cpu_ns'])));
        $this->assertCount(1, $cpu, json_encode(array_column($uploads, 'params')));
        $this->assertGreaterThan(0, (int)$cpu[0]['params']['process_cpu_ns']);
        // no stacks: the period is the maintaining process's (interval / its rate)
        $this->assertSame(1_000_000_000 * 2, $cpu[0]['profile']['period']);
    }
}
