<?php
// The figures Profiler::status() carries, against a fake control plane: the names before and
// after start without excimer, the counters and samples after a real upload, and the error
// states with their reason and last_error (docs/sdk/README.md, "One vocabulary").
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Agent;
use RootTrace\Limits;
use RootTrace\Status;

final class StatusFiguresTest extends TestCase
{
    private FakeCP $fake;
    private string $dir;

    protected function setUp(): void
    {
        $this->fake = new FakeCP();
        // A 10 s poll interval: the config stays fresh (30 s) on a loaded machine.
        $this->fake->setConfig(['enabled' => true, 'poll_interval_s' => 10,
            'sampling_interval_us' => 20_000]);
        $this->dir = T::tmpdir('figures');
    }

    protected function tearDown(): void
    {
        $this->fake->close();
        T::rmrf($this->dir);
    }

    private function requireExcimer(): void
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
    }

    private function options(array $more = []): array
    {
        return $more + ['server' => $this->fake->url, 'key' => 'k', 'service' => 'svc',
            'spool_dir' => $this->dir . '/spool'];
    }

    /** Runs $body in a child after the prelude, with $opts defined; returns its JSON. */
    private function child(string $body, array $phpArgs = []): mixed
    {
        $code = T::prelude() . '$opts = ' . var_export($this->options(), true) . ";\n"
            . str_replace('CPU_NOW', T::CPU_NOW, $body);
        [$rc, $out, $err] = T::php($code, [], array_merge($phpArgs,
            ['-d', 'display_errors=stderr', '-d', 'error_reporting=-1']), $this->dir);
        $this->assertSame([0, ''], [$rc, $err], $out);
        $r = json_decode($out, true);
        $this->assertIsArray($r, $out);
        return $r;
    }

    public function testWithoutExcimerTheStatusNamesTheInstanceAndCountsNothing(): void
    {
        [$status, $text] = $this->child('RootTrace\Profiler::start($opts); $s = '
            . 'RootTrace\Profiler::status(); echo json_encode([$s, "" . $s]);', ['-n']);
        $this->assertSame('unavailable: ext-excimer not loaded', $text);
        $this->assertMatchesRegularExpression('/^[^\/]+-cli$/D', $status['instance']);
        $this->assertSame(['status' => 'unavailable: ext-excimer not loaded',
            'state' => 'unavailable', 'reason' => 'ext-excimer not loaded',
            'interval_us' => 10_000, 'service' => 'svc', 'instance' => $status['instance'],
            'profiles_sent' => 0, 'profiles_dropped' => 0, 'profiles_queued' => 0,
            'samples' => 0, 'last_error' => null, 'spool_dir' => $this->dir . '/spool',
            'spooled_bytes' => 0], $status);
        $this->assertSame(Agent::defaultInstance(), $status['instance']);
    }

    /** A CLI script through the facade: the config is fetched, the script profiles 0.3 s of
     * CPU and flushes; its status then counts the one profile the fake stored and exactly
     * the samples that profile holds. */
    public function testAfterAnUploadTheCountersAreTheServersFigures(): void
    {
        $this->requireExcimer();
        [$status, $text, $info, $before] = $this->child(<<<'PHP'
(new RootTrace\Agent($opts))->maintain(); // the first poll: config cached, interval opened
RootTrace\Profiler::start($opts);
$before = RootTrace\Profiler::status();
function busy_work(): int {
    $x = 0; $e = CPU_NOW + 0.3;
    while (CPU_NOW < $e) { $x = ($x * 31 + 7) % 1000003; }
    return $x;
}
busy_work();
RootTrace\Profiler::flush();
$s = RootTrace\Profiler::status();
echo json_encode([$s, (string)$s, RootTrace\Profiler::info(), $before]);
PHP);
        $uploads = $this->fake->uploads();
        $this->assertCount(1, $uploads, json_encode($uploads));
        $p = $uploads[0]['profile'];
        $samples = array_sum(array_column($p['samples'], 1));
        $this->assertGreaterThanOrEqual(5, $samples, json_encode($p['samples'])); // ~15 of 20 ms
        $this->assertSame(20_000_000, $p['period']);
        $this->assertSame('profiling', $text);
        $this->assertSame(['status' => 'profiling', 'state' => 'profiling', 'reason' => '',
            'interval_us' => 20_000, 'service' => 'svc', 'instance' => Agent::defaultInstance(),
            'profiles_sent' => 1, 'profiles_dropped' => 0, 'profiles_queued' => 0,
            'samples' => $samples, 'last_error' => null, 'spool_dir' => $this->dir . '/spool',
            'spooled_bytes' => 0], $status);
        // While the script ran, nothing had been made or sent yet.
        $this->assertSame(['profiling', 0, 0, 0], [$before['status'], $before['profiles_sent'],
            $before['profiles_queued'], $before['samples']]);
        $this->assertSame([1, 0, 0, $samples, null], [$info['sent'], $info['dropped'],
            $info['queued'], $info['samples'], $info['last_error']]);
    }

    /** A config the SDK refuses: the error's reason is the last error; without excimer the
     * status stays unavailable and the invalid config is still the last error. */
    public function testAnInvalidConfigIsTheReasonAndTheLastError(): void
    {
        $this->fake->setMode('body', ['raw_body' => json_encode(['enabled' => true,
            'type' => 'cpu', 'sampling_interval_us' => '1', 'poll_interval_s' => 10])]);
        $a = new Agent($this->options());
        $this->assertTrue($a->maintain());
        $s = $a->status();
        $why = 'invalid config: sampling_interval_us is not a number';
        $this->assertSame($why, $s->lastError);
        if (extension_loaded('excimer')) {
            $this->assertSame(['error: ' . $why, 'error', $why],
                [$s->status, $s->state, $s->reason]);
        } else {
            $this->assertSame(['unavailable: ext-excimer not loaded', 'unavailable'],
                [$s->status, $s->state]);
        }
        $this->assertSame([10_000, 0, 0, 0, 0], [$s->intervalUs, $s->profilesSent,
            $s->profilesDropped, $s->profilesQueued, $s->samples]);
        $this->assertSame($why, $a->info()['last_error']);
    }

    /** Bad options: the error status is its own last error, in both passes. */
    public function testBadOptionsAreTheErrorAndTheLastError(): void
    {
        $a = new Agent($this->options(['server' => 'ftp://x']));
        $s = $a->status();
        $this->assertSame(['error: server must be an http:// or https:// URL', 'error',
            'server must be an http:// or https:// URL'], [$s->status, $s->state, $s->reason]);
        $this->assertSame($s->status, $s->lastError);
        $this->assertSame(['svc', Agent::defaultInstance()], [$s->service, $s->instance]);
        $this->assertFalse($a->maintain()); // no client: nothing polls
        $this->assertSame([], $this->fake->polls());
    }

    /** An upload the server refuses with 400: dropped, counted, the last error, and still
     * profiling (a 4xx drops that profile only). */
    public function testADroppedUploadIsCountedWithItsError(): void
    {
        $this->requireExcimer();
        $lim = new Limits(uploadIntervalMinS: 0.01, uploadIntervalMaxS: 0.01);
        $a = new Agent($this->options(), $lim);
        $this->assertTrue($a->maintain()); // config cached, interval opened
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 400]);
        usleep(20_000);
        $this->assertTrue($a->maintain(true)); // the (empty) profile closed and uploaded
        $s = $a->status();
        $uploads = $this->fake->uploads();
        $this->assertCount(1, $uploads);
        $this->assertSame(400, $uploads[0]['answer']);
        $this->assertSame(['profiling', 0, 1, 0, 0], [$s->status, $s->profilesSent,
            $s->profilesDropped, $s->profilesQueued, $s->samples]);
        $this->assertStringStartsWith('upload answered 400: ', (string)$s->lastError);
    }
}
