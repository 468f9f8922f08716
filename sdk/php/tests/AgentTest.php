<?php
// The SDK in CLI scripts (child processes) against a fake control plane: scripts profile
// themselves and upload, without excimer the status is unavailable and nothing else
// changes, and one process at a time runs maintenance.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;

final class AgentTest extends TestCase
{
    private FakeCP $fake;
    private string $dir;

    protected function setUp(): void
    {
        $this->fake = new FakeCP();
        $this->fake->setConfig(['enabled' => true, 'poll_interval_s' => 1]);
        $this->dir = T::tmpdir('agent');
    }

    protected function tearDown(): void
    {
        $this->fake->close();
        T::rmrf($this->dir);
    }

    /** The application: CPU work, a sleep, output. With $sdk, the SDK starts first. */
    private function app(string $sdk): string
    {
        return T::prelude() . $sdk . str_replace('CPU_NOW', T::CPU_NOW, <<<'PHP'
function busy_work(): int { $x = 0; $e = CPU_NOW + 0.25; while (CPU_NOW < $e) { $x = ($x * 31 + 7) % 1000003; } return $x > -1 ? 1 : 0; }
function sleepy_wait(): void { usleep(200000); }
echo "result=", busy_work(), "\n";
sleepy_wait();
echo "done ", strlen(str_repeat("x", 10)), "\n";
PHP);
    }

    private function agentCode(array $limits = []): string
    {
        return '$rt = new RootTrace\Agent(["server" => $argv[1], "key" => "k", "service" => "svc",'
            . ' "spool_dir" => $argv[2], "version" => "7"], ' . T::limitsCode($limits) . ");\n\$rt->begin();\n";
    }

    private function runApp(string $code, array $phpArgs = []): array
    {
        file_put_contents($this->dir . '/app.php', $code);
        return T::runFile($this->dir . '/app.php', [$this->fake->url, $this->dir . '/spool'],
            array_merge($phpArgs, ['-d', 'display_errors=stderr', '-d', 'error_reporting=-1']), $this->dir);
    }

    public function testWithoutExcimerTheStatusIsReportedAndTheAppIsUnchanged(): void
    {
        $this->fake->setConfig(['poll_interval_s' => 10]);
        $plain = $this->runApp($this->app(''), ['-n']);
        $code = $this->app('RootTrace\Profiler::start(["server" => $argv[1], "key" => "k", "service" => "svc", "spool_dir" => $argv[2]]);' . "\n")
            // echo of the Status object: the string form kept for one release (__toString).
            . 'echo RootTrace\Profiler::status(), "\n";';
        $with = $this->runApp($code, ['-n']);
        $this->assertSame(0, $with[0]);
        $this->assertSame('', $with[2]); // no warning, notice or deprecation
        $this->assertSame($plain[1] . "unavailable: ext-excimer not loaded\n", $with[1]);
        $polls = $this->fake->polls();
        $this->assertCount(1, $polls);
        $this->assertSame('unavailable: ext-excimer not loaded', $polls[0]['params']['status']);
        $this->assertSame('php', $polls[0]['params']['runtime']);
        $this->assertMatchesRegularExpression('/-cli$/', $polls[0]['params']['instance']);
        $this->runApp($code, ['-n']); // the config is cached: no second poll within the interval
        $this->assertCount(1, $this->fake->polls());
        $this->assertSame([], $this->fake->uploads());
    }

    public function testBadOptionsNeverReachTheApplication(): void
    {
        $code = $this->app('RootTrace\Profiler::start(["server" => "ftp://x", "key" => 5]); RootTrace\Profiler::start();' . "\n")
            . 'echo RootTrace\Profiler::status()->status, "\n";';
        [$rc, $out, $err] = $this->runApp($code);
        $this->assertSame(0, $rc);
        $this->assertSame('', $err);
        $this->assertStringEndsWith("done 10\nerror: missing options: key, service\n", $out);
    }

    private function requireExcimer(): void
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
    }

    /** Runs the app with the SDK until an upload whose leaf frame is $frame arrives. */
    private function profileUntil(string $frame, array $limits): array
    {
        $plain = $this->runApp($this->app(''));
        $code = $this->app($this->agentCode($limits));
        $found = T::waitFor(function () use ($code, $plain, $frame) {
            [$rc, $out, $err] = $this->runApp($code);
            $this->assertSame([0, $plain[1], ''], [$rc, $out, $err], 'the app with the SDK');
            foreach ($this->fake->uploads() as $u) {
                foreach ($u['profile']['samples'] as $s) {
                    if (end($s[0]) === $frame) {
                        return [$u, $s];
                    }
                }
            }
            return null;
        }, 8.0, 0.0);
        $this->assertNotNull($found, json_encode($this->fake->uploads()));
        return $found;
    }

    private const SHORT = ['uploadIntervalMinS' => 0.4, 'uploadIntervalMaxS' => 0.4];

    public function testCliScriptsProfileCpuAndUpload(): void
    {
        $this->requireExcimer();
        [$u, $s] = $this->profileUntil('app.php.busy_work', self::SHORT);
        $p = $u['profile'];
        $this->assertSame(['cpu', 'nanoseconds'], $p['sample_type'][1]);
        $this->assertSame(['app.php', 'app.php.busy_work'], $s[0]);
        $this->assertGreaterThanOrEqual(10, $s[1], json_encode($p['samples'])); // ~25 of 10 ms
        $this->assertSame($s[1] * 10_000_000, $s[2]);
        $names = array_merge(...array_map(static fn($x) => $x[0], $p['samples']));
        $sleepy = array_sum(array_map(static fn($x) => end($x[0]) === 'app.php.sleepy_wait' ? $x[1] : 0, $p['samples']));
        // Sleeping is not CPU (a tick due as usleep() starts is charged to it after it returns).
        $this->assertLessThan(0.2 * $s[1], $sleepy, json_encode($p['samples']));
        // The SDK's own start and end are outside the profile but for a tick falling due
        // right at excimer's start() or stop().
        $sdk = array_sum(array_map(static fn($x) => preg_grep('/RootTrace/', $x[0]) ? $x[1] : 0, $p['samples']));
        $this->assertLessThan(0.2 * $s[1], $sdk, json_encode($p['samples']));
        $this->assertSame(['svc', '7', 'php'], [$u['params']['service'], $u['params']['version'], $u['params']['runtime']]);
        // The kernel's account of the script's CPU while it profiled (DESIGN §7's witness):
        // busy_work's 0.25 s at least, and no more than the profile's wall time.
        $sampled = array_sum(array_column($p['samples'], 2));
        $os = (int)$u['params']['process_cpu_ns'];
        $this->assertGreaterThanOrEqual(0.2e9, $os, json_encode($u['params']));
        $this->assertGreaterThanOrEqual(0.8 * $sampled, $os);
        $this->assertLessThanOrEqual($p['duration_nanos'], $os);
    }

    public function testWallWhenTheConfigAsksForIt(): void
    {
        $this->requireExcimer();
        $this->fake->setConfig(['type' => 'wall']);
        [$u, $s] = $this->profileUntil('app.php.sleepy_wait', self::SHORT);
        $this->assertSame(['wall', 'nanoseconds'], $u['profile']['sample_type'][1]);
        $this->assertGreaterThanOrEqual(15, $s[1]); // one usleep(200 ms): one entry, ~20 events
    }

    public function testOnlyOneProcessRunsMaintenanceAtATime(): void
    {
        $code = T::prelude() . str_replace('$rt->begin();', '', $this->agentCode()) . <<<'PHP'
$at = (float)$argv[3];
while (microtime(true) < $at) { usleep(1000); }
$t = microtime(true);
echo json_encode(['ran' => $rt->maintain(), 's' => microtime(true) - $t]);
PHP;
        file_put_contents($this->dir . '/m.php', $code);
        T::runFile($this->dir . '/m.php', [$this->fake->url, $this->dir . '/spool', '0'], [], $this->dir);
        $this->assertCount(1, $this->fake->polls()); // the first config
        usleep(1_100_000); // the next poll is due
        $this->fake->cmd(['cmd' => 'delay', 's' => 1.0]);
        $at = (string)(microtime(true) + 0.5);
        $procs = [];
        foreach ([0, 1] as $i) {
            $procs[$i] = proc_open([PHP_BINARY, $this->dir . '/m.php', $this->fake->url, $this->dir . '/spool', $at],
                [1 => ['pipe', 'w']], $pipes[$i], $this->dir);
        }
        $res = [];
        foreach ([0, 1] as $i) {
            $out = stream_get_contents($pipes[$i][1]);
            proc_close($procs[$i]);
            $res[] = json_decode(substr($out, (int)strrpos($out, '{')), true);
        }
        usort($res, static fn($a, $b) => $a['ran'] <=> $b['ran']);
        $this->assertSame([false, true], array_column($res, 'ran'));
        $this->assertLessThan(0.2, $res[0]['s']);     // the other never waits for the lock
        $this->assertGreaterThan(0.9, $res[1]['s']);  // the poll took the fake's delay
        $this->assertCount(2, $this->fake->polls());  // one poll, not two
    }
}
