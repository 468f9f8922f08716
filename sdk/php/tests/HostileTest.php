<?php
// A hostile control plane (the Python SDK's cases, test_hostile.py) cannot hang a process
// past its poll deadline, make it poll faster than the poll interval, or keep profiling on
// where DESIGN §5 says off; clamped values are used.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Http;
use RootTrace\Limits;
use RootTrace\Maintenance;
use RootTrace\Spool;
use RootTrace\State;

final class HostileTest extends TestCase
{
    private const POLL = 0.2;      // poll interval (compiled floor 1 s, shortened)
    private const DEADLINE = 0.5;  // poll deadline (compiled 5 s, shortened)

    private static function body(array $kw = []): string
    {
        return json_encode($kw + ['enabled' => true, 'type' => 'cpu', 'sampling_interval_us' => 20000,
                'upload_interval_s' => 60, 'max_stack_depth' => 256, 'poll_interval_s' => self::POLL,
                'etag' => 'hostile']);
    }

    /** name => [mode, attributes, expectation: clamped (with interval), invalid, absent] */
    public static function cases(): array
    {
        return [
            'interval_0' => ['body', ['raw_body' => self::body(['sampling_interval_us' => 0])], 'clamped', 10_000],
            'interval_negative' => ['body', ['raw_body' => self::body(['sampling_interval_us' => -20000])], 'clamped', 10_000],
            'interval_1e12' => ['body', ['raw_body' => self::body(['sampling_interval_us' => 1e12])], 'clamped', 1_000_000],
            'interval_nan' => ['body', ['raw_body' => str_replace('20000', 'NaN', self::body())], 'invalid', 0],
            'interval_string' => ['body', ['raw_body' => self::body(['sampling_interval_us' => '1'])], 'invalid', 0],
            'body_50MB' => ['huge', [], 'invalid', 0],
            'body_50MB_no_length' => ['huge_close', [], 'invalid', 0],
            'slow_drip' => ['drip', [], 'absent', 0],
            'http_500' => ['status', ['code' => 500], 'absent', 0],
            'tcp_reset' => ['reset', [], 'absent', 0],
            'no_answer' => ['hang', [], 'absent', 0],
        ];
    }

    /** @dataProvider cases */
    public function testHostileControlPlane(string $mode, array $attrs, string $kind, int $interval): void
    {
        $fake = new FakeCP();
        $dir = T::tmpdir('hostile');
        try {
            $lim = new Limits(pollIntervalMinS: self::POLL, defaultPollIntervalS: self::POLL,
                pollDeadlineS: self::DEADLINE, maintenanceBudgetS: 1.0, failBackoffMaxS: 0.8);
            $spool = new Spool($dir, $lim);
            $m = new Maintenance($spool, $lim, new Http($fake->url, []), ['service' => 'svc'], null);
            $slowest = 0.0;
            $run = function (float $seconds) use ($m, &$slowest): void {
                $end = microtime(true) + $seconds;
                while (microtime(true) < $end) {
                    $t = microtime(true);
                    $m->run();
                    $slowest = max($slowest, microtime(true) - $t);
                    usleep(10_000);
                }
            };
            $allows = static function () use ($spool, $lim): bool {
                $st = $spool->readState();
                return State::allows($st, State::config($st, $lim), State::nowNs());
            };
            $fake->setConfig(['enabled' => true, 'poll_interval_s' => self::POLL, 'sampling_interval_us' => 10000]);
            $fake->setMode($mode, $attrs);

            // Phase A: hostile from the first poll.
            $run(0.7);
            $st = $spool->readState();
            if ($kind === 'clamped') {
                $this->assertTrue($allows());
                $this->assertSame($interval, State::config($st, $lim)->samplingIntervalUs);
            } else {
                $this->assertFalse($allows());
                $this->assertMatchesRegularExpression('/^(error|waiting): /', State::status($st, $lim, null, State::nowNs()));
            }

            // Phase B: an honest config turns profiling on.
            $fake->setMode('normal');
            $fake->setConfig(['sampling_interval_us' => 10000]);
            // (once the failure backoff, at most 0.8 s here, has passed)
            $this->assertTrue(T::waitFor(function () use ($run, $allows) {
                $run(0.05);
                return $allows();
            }, 3.0, 0.0));

            // Phase C: hostile again.
            $t0 = microtime(true);
            $fake->setMode($mode, $attrs);
            // One poll interval (invalid) or three (absent), plus a poll's deadline, plus
            // slack for a loaded machine.
            $limit = ($kind === 'invalid' ? self::POLL : 3 * self::POLL) + self::DEADLINE + 0.6;
            $off = T::waitFor(function () use ($run, $allows) {
                $run(0.01);
                return !$allows();
            }, $kind === 'clamped' ? 0.8 : 2.0, 0.0);
            if ($kind === 'clamped') {
                $this->assertFalse($off);
                $this->assertSame($interval, State::config($spool->readState(), $lim)->samplingIntervalUs);
            } else {
                $this->assertTrue($off);
                $this->assertLessThanOrEqual($limit, microtime(true) - $t0);
                $this->assertStringStartsWith('error: ',
                    State::status($spool->readState(), $lim, null, State::nowNs()));
            }
            // No run hangs past its own deadline, and polls keep to the poll interval.
            $this->assertLessThan(self::DEADLINE + 0.3, $slowest);
            $polls = array_filter($fake->polls(), static fn($p) => $p['age'] <= microtime(true) - $t0);
            $this->assertLessThanOrEqual((microtime(true) - $t0) / self::POLL + 2, count($polls));
        } finally {
            $fake->close();
            T::rmrf($dir);
        }
    }
}
