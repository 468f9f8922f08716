<?php
// The status grammar `<state>[: <reason>]` (DESIGN §5) and the state it is computed from.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Limits;
use RootTrace\State;
use RootTrace\Status;

final class StatusTest extends TestCase
{
    public function testFormatStaysInsideTheGrammar(): void
    {
        $this->assertSame('profiling', Status::format('profiling'));
        $this->assertSame('unavailable: ext-excimer not loaded',
            Status::format('unavailable', 'ext-excimer not loaded'));
        $this->assertSame('error: bogus state', Status::format('bogus', 'bogus state'));
        $this->assertSame('error', Status::format('nonsense'));
        $this->assertSame('disabled', Status::format('disabled', " \t "));
        $long = Status::format('error', str_repeat('x', 500) . "\n\x01é");
        $this->assertSame(200, strlen(substr($long, strlen('error: '))));
        $this->assertSame('error: a?b??', Status::format('error', "a\nbé"));
        foreach (['profiling', 'error: x', 'waiting: no config yet', $long,
                     Status::format('declined', "\x7f")] as $s) {
            $this->assertMatchesRegularExpression(Status::PATTERN, $s);
        }
        foreach (['Profiling', 'error:', 'error: ', "error: a\n", 'idle', 'error: ' . str_repeat('x', 201)] as $s) {
            $this->assertDoesNotMatchRegularExpression(Status::PATTERN, $s);
        }
    }

    public function testStatusFromState(): void
    {
        $lim = new Limits();
        $now = State::nowNs();
        $cfg = ['enabled' => true, 'type' => 'cpu', 'sampling_interval_us' => 10000,
            'upload_interval_s' => 60, 'max_stack_depth' => 256, 'poll_interval_s' => 10, 'etag' => 'x'];
        $fresh = ['config' => $cfg, 'valid_at' => $now];
        $this->assertSame('profiling', State::status($fresh, $lim, null, $now));
        $this->assertSame('profiling: heap not supported, sending cpu',
            State::status(['config' => ['type' => 'heap'] + $cfg] + $fresh, $lim, null, $now));
        $this->assertSame('profiling', State::status(['config' => ['type' => 'wall'] + $cfg] + $fresh, $lim, null, $now));
        $this->assertSame('disabled', State::status(['config' => ['enabled' => false] + $cfg] + $fresh, $lim, null, $now));
        $this->assertStringStartsWith('disabled: upload refused (409)',
            State::status(['refused' => true] + $fresh, $lim, null, $now));
        $this->assertSame('waiting: no config yet', State::status([], $lim, null, $now));
        $this->assertSame('error: invalid config: x is bad', State::status(['invalid' => 'x is bad'], $lim, null, $now));
        $stale = ['valid_at' => $now - 31 * 1_000_000_000] + $fresh;
        $this->assertSame('waiting: config older than 3 poll intervals, refreshing',
            State::status($stale, $lim, null, $now));
        $this->assertSame('error: no valid config for 3 poll intervals (config poll failed: x)',
            State::status(['poll_error' => 'config poll failed: x'] + $stale, $lim, null, $now));
        $this->assertFalse(State::allows($stale, State::config($stale, $lim), $now));
        $this->assertTrue(State::allows($fresh, State::config($fresh, $lim), $now));
        $this->assertSame('unavailable: ext-excimer not loaded',
            State::status($fresh, $lim, 'unavailable: ext-excimer not loaded', $now));
    }
}
