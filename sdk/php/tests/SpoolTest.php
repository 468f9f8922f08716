<?php
// The spool: request aggregates merged per type, bounded size (oldest dropped first), claim
// under concurrent writers, the maintenance lock, the upload queue bound, the gate and whose
// gate a request follows.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Frames;
use RootTrace\Limits;
use RootTrace\Spool;

final class SpoolTest extends TestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = T::tmpdir('spool');
    }

    protected function tearDown(): void
    {
        T::rmrf($this->dir);
    }

    public function testRequestsAreMergedPerTypeAndStack(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $this->assertTrue($s->append('cpu', 10_000_000, ['a;b' => [2, 20_000_000], 'a' => [1, 10_000_000]]));
        $this->assertTrue($s->append('cpu', 10_000_000, ['a;b' => [3, 30_000_000]]));
        $this->assertTrue($s->append('wall', 20_000_000, ['x;y z' => [5, 100_000_000]]));
        $this->assertTrue($s->append('cpu', 10_000_000, []));
        $m = $s->claim(100);
        $this->assertSame(['cpu', 'wall'], array_keys($m));
        $this->assertSame(['a;b' => [5, 50_000_000], 'a' => [1, 10_000_000]], $m['cpu']['stacks']);
        $this->assertSame(10_000_000, $m['cpu']['period']);
        $this->assertSame(['x;y z' => [5, 100_000_000]], $m['wall']['stacks']);
        $this->assertSame([], $s->claim(100)); // claimed once
        $s->append('cpu', 10_000_000, ['a' => [1, 1], 'b' => [1, 1], 'c' => [1, 1]]);
        $this->assertSame(['a' => [1, 1], 'b' => [1, 1], Frames::TRIMMED => [1, 1]], $s->claim(2)['cpu']['stacks']);
    }

    /** A reading is spooled with its request's stacks, or alone (a picked request without
     * a sample below a rate of 1: Agent decides); a request with neither writes nothing. */
    public function testCpuReadingsAreSpooledWithTheirStacksOrAlone(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $t0 = hrtime(true);
        $this->assertTrue($s->append('cpu', 10_000_000, ['a' => [2, 20_000_000]], [5_000_000, 30_000_000]));
        $this->assertTrue($s->append('cpu', 10_000_000, [], [40_000_000, 44_000_000])); // no sample
        $this->assertTrue($s->append('cpu', 10_000_000, [])); // neither: nothing
        $this->assertTrue($s->append('cpu', 10_000_000, ['a' => [1, 10_000_000]]));
        $this->assertTrue($s->append('wall', 10_000_000, ['w' => [1, 10_000_000]]));
        $this->assertTrue($s->append('cpu', 10_000_000, ['b' => [1, 10_000_000]], [50_000_000, 61_000_000]));
        $m = $s->claim(100);
        $this->assertSame(['a' => [3, 30_000_000], 'b' => [1, 10_000_000]], $m['cpu']['stacks']);
        $r = $m['cpu']['readings'];
        $this->assertCount(3, $r, json_encode($m));
        $this->assertSame([getmypid(), 5_000_000, 30_000_000], [$r[0][0], $r[0][2], $r[0][3]]);
        $this->assertSame([getmypid(), 40_000_000, 44_000_000], [$r[1][0], $r[1][2], $r[1][3]]);
        $this->assertSame([getmypid(), 50_000_000, 61_000_000], [$r[2][0], $r[2][2], $r[2][3]]);
        $this->assertGreaterThanOrEqual($t0, $r[0][1]);
        $this->assertGreaterThanOrEqual($r[0][1], $r[1][1]);
        $this->assertGreaterThanOrEqual($r[1][1], $r[2][1]);
        $this->assertLessThanOrEqual(hrtime(true), $r[2][1]);
        $this->assertArrayNotHasKey('readings', $m['wall']);
        $this->assertArrayNotHasKey('os_cpu_ns', $m['cpu']);
        $this->assertSame([], $s->claim(100)); // claimed once
    }

    public function testMalformedReadingsAreLeftOutAndEarlierCpuLinesSummed(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $this->assertTrue($s->append('cpu', 10_000_000, ['a' => [1, 10_000_000]]));
        $seg = glob($this->dir . '/s/spool/open-*.seg')[0];
        file_put_contents($seg, "osc\tcpu\t7\t100\t9\t8\n"          // ends before it starts
            . "osc\tcpu\t7\t100\t1\t1234567890123456789\n"            // 19 digits
            . "osc\tcpu\t-7\t100\t1\t2\n" . "osc\twall\t7\t100\t1\t2\n"
            . "osc\tcpu\t7\t100\t1\n" . "osc\tcpu\t7\t100\t1\t2\n"
            . "os\tcpu\t25000000\n" . "os\tcpu\t4000000\n" . "os\twall\t7\n", FILE_APPEND);
        $m = $s->claim(100);
        $this->assertSame([[7, 100, 1, 2]], $m['cpu']['readings']);
        $this->assertSame(29_000_000, $m['cpu']['os_cpu_ns']); // an earlier SDK's lines
        $this->assertSame(['os_cpu_ns' => 7], $m['wall']);
    }

    public function testSpoolSizeIsBoundedOldestDroppedFirst(): void
    {
        $lim = new Limits(spoolSegmentBytes: 4096, spoolMaxBytes: 16384);
        $s = new Spool($this->dir . '/s', $lim);
        for ($i = 0; $i < 200; $i++) {
            $s->append('cpu', 1, [sprintf('req%03d;%s', $i, str_repeat('f', 200)) => [1, 1]]);
            clearstatcache();
            $this->assertLessThanOrEqual(16384 + 4096 + 300, $s->spooledBytes());
        }
        $stacks = array_keys($s->claim(10_000)['cpu']['stacks']);
        $ids = array_map(static fn($k) => (int)substr($k, 3, 3), $stacks);
        $this->assertContains(199, $ids);  // the newest kept
        $this->assertNotContains(0, $ids); // the oldest dropped
        $this->assertLessThan(200, count($ids));
        $this->assertGreaterThan(50, count($ids));
    }

    public function testConcurrentWritersLoseNothingWhileClaimed(): void
    {
        $dir = $this->dir . '/s';
        $code = T::prelude() . '$s = new RootTrace\Spool($argv[1], new RootTrace\Limits(spoolSegmentBytes: 2048));'
            . 'for ($i = 0; $i < 400; $i++) { $s->append("cpu", 1, ["w;" . getmypid() => [1, 1]]); }';
        $file = $this->dir . '/writer.php';
        file_put_contents($file, $code);
        $procs = [];
        for ($i = 0; $i < 3; $i++) {
            $procs[] = proc_open([PHP_BINARY, $file, $dir], [], $pipes);
        }
        $s = new Spool($dir, new Limits());
        $total = 0;
        $claims = 0;
        do {
            $running = 0;
            foreach ($procs as $p) {
                $running += proc_get_status($p)['running'] ? 1 : 0;
            }
            foreach ($s->claim(1000)['cpu']['stacks'] ?? [] as [$n]) {
                $total += $n;
            }
            $claims++;
        } while ($running > 0);
        foreach ($procs as $p) {
            proc_close($p);
        }
        foreach ($s->claim(1000)['cpu']['stacks'] ?? [] as [$n]) {
            $total += $n;
        }
        $this->assertSame(1200, $total, "after $claims claims");
    }

    public function testLockIsExclusiveAcrossProcesses(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $this->assertTrue($s->tryLock());
        $code = T::prelude() . '$s = new RootTrace\Spool($argv[1], new RootTrace\Limits()); echo $s->tryLock() ? "got" : "busy";';
        $this->assertSame('busy', T::php($code, [$this->dir . '/s'], [], $this->dir)[1]);
        $s->unlock();
        $this->assertSame('got', T::php($code, [$this->dir . '/s'], [], $this->dir)[1]);
    }

    public function testQueueIsBoundedOldestDroppedFirst(): void
    {
        $s = new Spool($this->dir . '/s', new Limits(queueMaxProfiles: 3));
        $dropped = 0;
        for ($i = 0; $i < 5; $i++) {
            $dropped += $s->enqueue(['n' => $i], "body$i\n\x00");
        }
        $this->assertSame(2, $dropped);
        $q = $s->queued();
        $this->assertCount(3, $q);
        $this->assertSame([['n' => 2], "body2\n\x00"], $s->load($q[0]));
        $this->assertSame(['n' => 4], $s->load($q[2])[0]);
    }

    public function testStateIsReplacedWholeAndAbsentStateIsEmpty(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $this->assertSame([], $s->readState());
        $this->assertTrue($s->writeState(['a' => 1, 'b' => 'x']));
        $this->assertSame(['a' => 1, 'b' => 'x'], $s->readState());
        file_put_contents($this->dir . '/s/state.json', '{garbage');
        $this->assertSame([], $s->readState());
        $ro = new Spool('/proc/nonexistent/spool', new Limits());
        $this->assertFalse($ro->writeState(['a' => 1]));
        $this->assertFalse($ro->append('cpu', 1, ['a' => [1, 1]]));
        $this->assertFalse($ro->tryLock());
    }

    public function testTheGateIsALinkAndAFileGateStillReads(): void
    {
        $s = new Spool($this->dir . '/s', new Limits());
        $off = ['until' => 0, 'type' => 'cpu', 'us' => 0, 'depth' => 0, 'next_due' => 0, 'mine' => false];
        $this->assertSame($off, $s->readGate());
        $this->assertTrue($s->writeGate(['until' => 7, 'type' => 'wall', 'us' => 20000, 'depth' => 64], 9));
        $want = ['until' => 7, 'type' => 'wall', 'us' => 20000, 'depth' => 64, 'next_due' => 9, 'mine' => true];
        $this->assertTrue(is_link($this->dir . '/s/gate'));
        $this->assertSame('g1 7 wall 20000 64 9', readlink($this->dir . '/s/gate'));
        $this->assertSame($want, $s->readGate());
        // A gate written as a file (symlink() refused, or an older SDK) reads the same.
        unlink($this->dir . '/s/gate');
        file_put_contents($this->dir . '/s/gate', "g1 7 wall 20000 64 9\n");
        $this->assertSame($want, $s->readGate());
        file_put_contents($this->dir . '/s/gate', "g1 7 wall 20000 64\n");
        $this->assertSame($off, $s->readGate());
        unlink($this->dir . '/s/gate');
        symlink('g2 7 wall 20000 64 9', $this->dir . '/s/gate');
        $this->assertSame($off, $s->readGate());
        $this->assertTrue($s->writeGate(null, 5)); // replaces whatever is there
        $this->assertSame(['until' => 0, 'type' => 'cpu', 'us' => 0, 'depth' => 0, 'next_due' => 5,
            'mine' => true], $s->readGate());
        $this->assertSame(['gate', 'queue', 'spool'], array_values(array_diff(scandir($this->dir . '/s'), ['.', '..'])));
    }

    /** A directory planted under the spool's name by another user, with a gate that allows
     * profiling: no request follows that gate or writes there (needs root, to make a file
     * another user's). */
    public function testAnotherUsersGateAndDirectoryAreNotUsed(): void
    {
        if (posix_geteuid() !== 0) {
            $this->markTestSkipped('needs root to give a file to another user (CI runs as root)');
        }
        $dir = $this->dir . '/planted';
        $s = new Spool($dir, new Limits());
        $until = (int)(microtime(true) * 1e9) + 3_600_000_000_000;
        $this->assertTrue($s->writeGate(['until' => $until, 'type' => 'cpu', 'us' => 10000, 'depth' => 64], PHP_INT_MAX));
        $this->assertTrue($s->readGate()['mine']);
        $this->assertTrue(lchown($dir . '/gate', 65534));
        $this->assertFalse($s->readGate()['mine']);
        $this->assertSame(0, $s->readGate()['until']);
        unlink($dir . '/gate');
        file_put_contents($dir . '/gate', "g1 $until cpu 10000 64 " . PHP_INT_MAX . "\n");
        $this->assertTrue($s->readGate()['mine']);
        chown($dir . '/gate', 65534);
        clearstatcache();
        $this->assertFalse($s->readGate()['mine']);
        // The agent then checks the directory itself, refuses it and does not profile.
        chown($dir, 65534);
        $a = new RootTrace\Agent(['server' => 'http://127.0.0.1:1', 'key' => 'k', 'service' => 'svc',
            'spool_dir' => $dir]);
        $a->begin(false);
        $this->assertFalse($a->profiling());
        $a->end();
        $this->assertSame('error: spool directory ' . $dir . ' not writable', $a->status()->status);
        $this->assertSame(['gate', 'queue', 'spool'], array_values(array_diff(scandir($dir), ['.', '..'])));
        $this->assertSame([], array_values(array_diff(scandir($dir . '/spool'), ['.', '..'])));
        T::rmrf($a->spool()->dir);
    }
}
