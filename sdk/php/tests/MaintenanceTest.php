<?php
// Maintenance against a fake control plane: one poll per poll period, profiles that cover
// the whole interval back to back (empty ones included), and every upload answer.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Http;
use RootTrace\Limits;
use RootTrace\Maintenance;
use RootTrace\Spool;
use RootTrace\State;

final class MaintenanceTest extends TestCase
{
    private const POLL = 0.2;
    private const UPLOAD = 0.3;
    private FakeCP $fake;
    private string $dir;
    private Spool $spool;
    private Limits $lim;

    protected function setUp(): void
    {
        $this->fake = new FakeCP();
        $this->fake->setConfig(['enabled' => true, 'poll_interval_s' => self::POLL, 'type' => 'cpu']);
        $this->dir = T::tmpdir('maint');
        $this->lim = new Limits(pollIntervalMinS: self::POLL, uploadIntervalMinS: self::UPLOAD,
            uploadIntervalMaxS: self::UPLOAD, pollDeadlineS: 0.5, maintenanceBudgetS: 1.0,
            retryBackoffMinS: 0.2, retryBackoffMaxS: 0.4);
        $this->spool = new Spool($this->dir . '/spool', $this->lim);
    }

    protected function tearDown(): void
    {
        $this->fake->close();
        T::rmrf($this->dir);
    }

    private function run1(?string $fatal = null): void
    {
        $params = ['service' => 'svc', 'instance' => 'host-cli', 'runtime' => 'php',
            'runtime_version' => PHP_VERSION, 'sdk_version' => '0.1.0', 'version' => '1.0'];
        $m = new Maintenance($this->spool, $this->lim, new Http($this->fake->url,
            ['Authorization' => 'Bearer k']), $params, $fatal);
        $this->assertTrue($m->run());
    }

    /** Runs maintenance every 20 ms for $seconds, or until $until() holds (then at most
     * 10 s: a loaded machine runs fewer loops), appending one stack before each run. */
    private function loop(float $seconds, bool $append = true, ?callable $until = null): int
    {
        $n = 0;
        $end = microtime(true) + ($until === null ? $seconds : 10.0);
        while (microtime(true) < $end && ($until === null || !$until())) {
            if ($append && State::allows($st = $this->spool->readState(), State::config($st, $this->lim), State::nowNs())) {
                $this->spool->append('cpu', 10_000_000, ['index.php;index.php.work' => [1, 10_000_000]]);
                $n++;
            }
            $this->run1();
            usleep(20_000);
        }
        return $n;
    }

    public function testOnePollPerPollPeriodAndStatusOnEveryPoll(): void
    {
        $t0 = microtime(true);
        $this->loop(0, false, fn() => count($this->fake->polls()) >= 5);
        $this->loop(0.3, false);
        $polls = $this->fake->polls();
        $this->assertLessThanOrEqual((microtime(true) - $t0) / self::POLL + 2, count($polls));
        $this->assertGreaterThanOrEqual(5, count($polls));
        $this->assertSame('waiting: no config yet', $polls[0]['params']['status']);
        $this->assertArrayNotHasKey('etag', $polls[0]['params']);
        foreach (array_slice($polls, 1) as $p) {
            $this->assertSame('profiling', $p['params']['status']);
            $this->assertSame('10000', $p['params']['interval_us']);
            $this->assertSame('0', $p['params']['wait']);
            $this->assertSame('v2', $p['params']['etag']);
            $this->assertSame(['php', 'svc', 'host-cli', PHP_VERSION, '0.1.0', '1.0'],
                [$p['params']['runtime'], $p['params']['service'], $p['params']['instance'],
                    $p['params']['runtime_version'], $p['params']['sdk_version'], $p['params']['version']]);
        }
    }

    /** The CPU witness (Witness): a process's reading counts from its previous one, kept
     * in the state from one profile to the next, and forgotten when profiling stops. */
    public function testTheWitnessCarriesToTheNextProfileUntilProfilingStops(): void
    {
        $this->loop(0, false, fn() => State::allows($st = $this->spool->readState(),
            State::config($st, $this->lim), State::nowNs()));
        $stack = ['index.php;index.php.work' => [1, 10_000_000]];
        $witnesses = [];
        foreach ([[100_000_000, 103_000_000], [110_000_000, 112_000_000]] as $i => $cpu) {
            $this->spool->append('cpu', 10_000_000, $stack, $cpu);
            $this->loop(0, false, fn() => count(array_filter($this->fake->uploads(),
                static fn($u) => $u['profile']['samples'] !== [])) > $i);
            $with = array_values(array_filter($this->fake->uploads(), static fn($u) => $u['profile']['samples'] !== []));
            $witnesses[] = $with[$i]['params']['process_cpu_ns'] ?? null;
        }
        $this->assertSame(['3000000', '9000000'], $witnesses); // 103 - 100, then 112 - 103
        $this->assertSame([getmypid()], array_keys($this->spool->readState()['witness']));
        $this->fake->setConfig(['enabled' => false]);
        $this->loop(0, false, fn() => !State::allows($st = $this->spool->readState(),
            State::config($st, $this->lim), State::nowNs()));
        $this->assertSame([], $this->spool->readState()['witness']);
    }

    public function testProfilesCoverTheWholeIntervalBackToBack(): void
    {
        $appended = $this->loop(0, true, fn() => count($this->fake->uploads()) >= 3);
        $ups = $this->fake->uploads();
        $this->assertGreaterThanOrEqual(3, count($ups));
        $events = 0;
        foreach ($ups as $i => $u) {
            $p = $u['profile'];
            $this->assertSame(201, $u['answer']);
            $this->assertSame([['samples', 'count'], ['cpu', 'nanoseconds']], $p['sample_type']);
            $this->assertSame(['cpu', 'nanoseconds'], $p['period_type']);
            $this->assertSame(10_000_000, $p['period']);
            $this->assertMatchesRegularExpression('/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/',
                $u['params']['profile_id']);
            $this->assertGreaterThanOrEqual(self::UPLOAD * 1e9, $p['duration_nanos']);
            $this->assertLessThan((self::UPLOAD + 0.15) * 1e9, $p['duration_nanos']);
            if ($i > 0) {
                $prev = $ups[$i - 1]['profile'];
                $this->assertSame($prev['time_nanos'] + $prev['duration_nanos'], $p['time_nanos']);
            }
            foreach ($p['samples'] as [$stack, $n, $ns]) {
                $this->assertSame(['index.php', 'index.php.work'], $stack);
                $this->assertSame($n * 10_000_000, $ns);
                $events += $n;
            }
        }
        $left = $this->spool->claim(100)['cpu']['stacks']['index.php;index.php.work'][0] ?? 0;
        $this->assertSame($appended, $events + $left);
        $this->assertCount(count($ups), array_unique(array_map(static fn($u) => $u['params']['profile_id'], $ups)));
    }

    public function testEmptyIntervalsAreUploaded(): void
    {
        $this->loop(0, false, fn() => count($this->fake->uploads()) >= 2);
        $ups = $this->fake->uploads();
        $this->assertGreaterThanOrEqual(2, count($ups));
        foreach ($ups as $u) {
            $this->assertSame([], $u['profile']['samples']);
            $this->assertGreaterThanOrEqual(self::UPLOAD * 1e9, $u['profile']['duration_nanos']);
        }
    }

    public function testWallWhenTheConfigAsksForIt(): void
    {
        $this->fake->setConfig(['type' => 'wall']);
        $this->loop(0, false, fn() => count($this->fake->uploads()) >= 1);
        $ups = $this->fake->uploads();
        $this->assertNotEmpty($ups);
        $this->assertSame(['wall', 'nanoseconds'], $ups[0]['profile']['sample_type'][1]);
    }

    public function testDisabledStopsProfilingAndDropsTheSpool(): void
    {
        $this->loop(0.25);
        $this->fake->setConfig(['enabled' => false]);
        $this->loop(0, true, function () {
            $st = $this->spool->readState();
            return !State::allows($st, State::config($st, $this->lim), State::nowNs());
        });
        $n = count($this->fake->uploads());
        $st = $this->spool->readState();
        $this->assertFalse(State::allows($st, State::config($st, $this->lim), State::nowNs()));
        $this->assertSame([], $this->spool->claim(100));
        $this->loop(0.5);
        $this->assertSame($n, count($this->fake->uploads()));
        $this->assertSame('disabled', array_slice($this->fake->polls(), -1)[0]['params']['status']);
    }

    public function testA409StopsProfilingUntilAConfigEnablesIt(): void
    {
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 409]);
        $this->loop(0, true, fn() => count($this->fake->uploads()) >= 1);
        $ups = $this->fake->uploads();
        $this->assertSame(409, $ups[0]['answer']);
        $refusedPoll = fn() => array_filter($this->fake->polls(),
            static fn($p) => str_starts_with($p['params']['status'], 'disabled: upload refused'));
        $this->loop(0, true, $refusedPoll);
        $st = $this->spool->readState();
        $polls = $this->fake->polls();
        // The poll after the 409 reports it and asks without etag, so the answer (enabled)
        // lifts the refusal at once.
        $after = array_values(array_filter($polls, static fn($p) => str_starts_with($p['params']['status'], 'disabled: upload refused')));
        $this->assertNotEmpty($after, json_encode(array_column($polls, 'params')));
        $this->assertArrayNotHasKey('etag', $after[0]['params']);
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 201]);
        $this->loop(0, true, fn() => array_slice($this->fake->uploads(), -1)[0]['answer'] === 201);
        $this->assertSame(201, array_slice($this->fake->uploads(), -1)[0]['answer']);
        $this->assertEmpty($this->spool->readState()['refused']);
    }

    public function testARefusedPollForgetsTheEtagAndA503KeepsIt(): void
    {
        $polled = fn(int $n) => fn() => count($this->fake->polls()) >= $n;
        $this->loop(0, true, $polled(1)); // 200 with the etag
        $this->fake->setMode('status', ['code' => 503]);
        $this->loop(0, true, $polled(2));
        $this->fake->setMode('status', ['code' => 401]); // the key revoked
        $this->loop(0, true, $polled(3));
        $st = $this->spool->readState();
        $this->assertSame('config poll answered 401', $st['poll_error']);
        $this->fake->setMode('normal'); // the key restored
        $this->loop(0, true, $polled(4));
        $polls = array_column($this->fake->polls(), 'params');
        $this->assertCount(4, $polls);
        $this->assertArrayNotHasKey('etag', $polls[0]);
        $etag = $polls[1]['etag'] ?? ''; // the 200's etag
        $this->assertMatchesRegularExpression('/^v\d+$/', $etag);
        $this->assertSame($etag, $polls[2]['etag'] ?? null); // a 503 keeps it
        $this->assertArrayNotHasKey('etag', $polls[3], json_encode($polls[3])); // a 401 does not
        // The refusals outlasted three poll intervals: profiling had stopped; the 200 resumes it.
        $this->assertStringStartsWith('error: no valid config for 3 poll intervals', $polls[3]['status']);
        $st = $this->spool->readState();
        $this->assertTrue(State::allows($st, State::config($st, $this->lim), State::nowNs()));
        $this->assertSame($etag, $st['etag']);
    }

    public function testServerErrorsAreRetriedWithBackoffAndOther4xxDropped(): void
    {
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 503]);
        $t0 = microtime(true);
        $this->loop(0, true, fn() => count($this->fake->uploads()) >= 2);
        $this->loop(max(0, 1.0 - (microtime(true) - $t0)));
        $ups = $this->fake->uploads();
        $this->assertGreaterThanOrEqual(2, count($ups));
        $this->assertLessThanOrEqual(6, count($ups)); // backoff, not every 20 ms
        $this->assertNotEmpty($this->spool->queued());
        $first = $ups[0]['params']['profile_id'];
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 201]);
        T::waitFor(function () {
            $this->run1();
            return $this->spool->queued() === [];
        }, 2.0, 0.05);
        $ok = array_filter($this->fake->uploads(), static fn($u) => $u['answer'] === 201);
        $this->assertContains($first, array_map(static fn($u) => $u['params']['profile_id'], $ok));
        $this->fake->cmd(['cmd' => 'upload_code', 'code' => 400]);
        $n = count($this->fake->uploads());
        $this->loop(0, true, fn() => count($this->fake->uploads()) >= $n + 2);
        $bad = array_slice($this->fake->uploads(), $n);
        $this->assertNotEmpty($bad);
        $ids = array_map(static fn($u) => $u['params']['profile_id'], $bad);
        $this->assertSame(count($ids), count(array_unique($ids))); // never retried
        $this->assertSame([], $this->spool->queued());
    }

    public function testUnavailableIsReportedAndNothingIsProfiled(): void
    {
        $end = microtime(true) + 10;
        while (microtime(true) < $end && count($this->fake->polls()) < 3) {
            $this->run1('unavailable: ext-excimer not loaded');
            usleep(20_000);
        }
        $polls = $this->fake->polls();
        $this->assertGreaterThanOrEqual(2, count($polls));
        foreach ($polls as $p) {
            $this->assertSame('unavailable: ext-excimer not loaded', $p['params']['status']);
        }
        $this->assertSame([], $this->fake->uploads());
    }
}
