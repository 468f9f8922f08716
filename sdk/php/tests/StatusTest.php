<?php
// The status grammar `<state>[: <reason>]` (DESIGN §5), the state it is computed from, and
// the Status value Profiler::status() returns (docs/sdk/README.md, "One vocabulary").
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

    /** The fields every SDK gives, in this order (docs/sdk/README.md), then PHP's spool. */
    private const KEYS = ['status', 'state', 'reason', 'interval_us', 'service', 'instance',
        'profiles_sent', 'profiles_dropped', 'profiles_queued', 'samples', 'last_error',
        'spool_dir', 'spooled_bytes'];

    public function testStateAndReasonComeFromTheStatusString(): void
    {
        $cases = ['profiling' => ['profiling', ''],
            'profiling: heap not supported, sending cpu' => ['profiling',
                'heap not supported, sending cpu'],
            'disabled' => ['disabled', ''],
            // A reason holding ": " itself: only the first one separates it.
            'error: no valid config for 3 poll intervals (config poll failed: x: y)' => ['error',
                'no valid config for 3 poll intervals (config poll failed: x: y)'],
            'unavailable: ext-excimer not loaded' => ['unavailable', 'ext-excimer not loaded']];
        foreach ($cases as $status => [$state, $reason]) {
            $s = new Status($status);
            $this->assertSame([$status, $state, $reason], [$s->status, $s->state, $s->reason]);
            $this->assertSame($status, $s->state . ($s->reason === '' ? '' : ': ' . $s->reason));
        }
    }

    public function testTheStringFormStillWorks(): void
    {
        $s = new Status(Status::format(Status::ERROR, 'invalid config: enabled is missing'));
        $want = 'error: invalid config: enabled is missing';
        $this->assertSame($want, (string)$s);
        $this->assertSame($want, $s->__toString());
        $this->assertSame('[' . $want . ']', '[' . $s . ']');
        $this->assertSame($want, sprintf('%s', $s));
        $this->assertSame($want, "$s");
        ob_start();
        echo $s;
        $this->assertSame($want, ob_get_clean());
        $this->assertInstanceOf(\Stringable::class, $s);
        $this->assertTrue($s == $want); // loose comparison converts the object
        // Strict comparison does not: code with `=== 'profiling'` must read ->state.
        $p = new Status('profiling');
        $this->assertFalse($p === 'profiling');
        $this->assertTrue($p->state === 'profiling');
        $this->assertMatchesRegularExpression(Status::PATTERN, (string)$s);
    }

    public function testJsonHasTheSharedKeysInOrder(): void
    {
        $s = new Status('error: invalid config: sampling_interval_us is not a number',
            intervalUs: 20_000, service: 'shop', instance: 'web-1-www', profilesSent: 3,
            profilesDropped: 1, profilesQueued: 2, samples: 417,
            lastError: 'invalid config: sampling_interval_us is not a number',
            spoolDir: '/tmp/spool', spooledBytes: 512);
        $this->assertSame(self::KEYS, array_keys($s->jsonSerialize()));
        $this->assertSame('{"status":"error: invalid config: sampling_interval_us is not a '
            . 'number","state":"error","reason":"invalid config: sampling_interval_us is not a '
            . 'number","interval_us":20000,"service":"shop","instance":"web-1-www",'
            . '"profiles_sent":3,"profiles_dropped":1,"profiles_queued":2,"samples":417,'
            . '"last_error":"invalid config: sampling_interval_us is not a number",'
            . '"spool_dir":"/tmp/spool","spooled_bytes":512}',
            json_encode($s, JSON_UNESCAPED_SLASHES));
        // The properties are the same figures, camelCase, in the same order.
        $this->assertSame(['status', 'state', 'reason', 'intervalUs', 'service', 'instance',
            'profilesSent', 'profilesDropped', 'profilesQueued', 'samples', 'lastError',
            'spoolDir', 'spooledBytes'], array_keys(get_object_vars($s)));
        $this->assertSame(array_values($s->jsonSerialize()), array_values(get_object_vars($s)));
    }

    public function testTheValueIsReadOnly(): void
    {
        $s = new Status('profiling');
        $this->expectException(\Error::class);
        $this->expectExceptionMessage('Cannot modify readonly property RootTrace\Status::$state');
        $s->state = 'error';
    }

    /** Before start, and without excimer, Profiler::status() is a Status too (child
     * processes: the facade's state is per process). */
    public function testBeforeStartWithAndWithoutExcimer(): void
    {
        $code = T::prelude() . 'echo json_encode([RootTrace\Profiler::status(), '
            . 'RootTrace\Profiler::status() instanceof RootTrace\Status, '
            . '(string)RootTrace\Profiler::status(), RootTrace\Profiler::info()]);';
        $zero = ['interval_us' => 10_000, 'service' => null, 'instance' => null,
            'profiles_sent' => 0, 'profiles_dropped' => 0, 'profiles_queued' => 0,
            'samples' => 0, 'last_error' => null, 'spool_dir' => null, 'spooled_bytes' => 0];
        $notStarted = ['status' => 'disabled: not started', 'state' => 'disabled',
            'reason' => 'not started'] + $zero;
        $noExt = ['status' => 'unavailable: ext-excimer not loaded', 'state' => 'unavailable',
            'reason' => 'ext-excimer not loaded'] + $zero;
        $dir = T::tmpdir('status');
        try {
            foreach ([[[], extension_loaded('excimer') ? $notStarted : $noExt],
                         [['-n'], $noExt]] as [$args, $want]) {
                [$rc, $out, $err] = T::php($code, [], $args, $dir);
                $this->assertSame([0, ''], [$rc, $err], $out);
                $got = json_decode($out, true);
                $this->assertSame([$want, true, $want['status'], ['status' => $want['status']]],
                    $got, $out);
                $this->assertSame(self::KEYS, array_keys($got[0]));
            }
        } finally {
            T::rmrf($dir);
        }
    }
}
