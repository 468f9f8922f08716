<?php
// A picked request whose gate has profiling off and maintenance not yet due is idle
// (RequestStart::idle): Profiler::start resolves the names, reads the gate and stops there,
// without loading Agent or registering the request's end (what an installed SDK costs while
// its service's profiling is off; docs/sdk/php.md, step 1). Each case runs in a fresh PHP, as
// a php-fpm request does, against a gate this process writes as maintenance would.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Limits;
use RootTrace\RequestStart;
use RootTrace\Spool;

final class IdleRequestTest extends TestCase
{
    private const ON = ['until' => 0, 'type' => 'cpu', 'us' => 10000, 'depth' => 64];

    /** The start of a child request: Profiler::start with a refused server and the spool
     * directory $argv[1]; then the RootTrace classes loaded so far, sorted, as $loaded. */
    private const START = <<<'PHP'
RootTrace\Profiler::start(["server" => "http://127.0.0.1:9", "key" => "k", "service" => "svc",
    "spool_dir" => $argv[1]]);
$loaded = array_values(array_filter(get_declared_classes(),
    static fn($c) => str_starts_with($c, "RootTrace\\")));
sort($loaded);

PHP;

    /** Gate off, maintenance due in 10 minutes: four classes loaded, no Agent; nothing
     * written then or at the script's end; status() builds the Agent, from the state (none
     * cached here: waiting for a config, or unavailable without excimer). */
    public function testAnIdleRequestReadsTheGateAndNothingElse(): void
    {
        [$dir, $spool] = $this->spoolWithGate(null, 600);
        try {
            $before = $this->listing($spool);
            $got = $this->child($spool, self::START . <<<'PHP'
$status = RootTrace\Profiler::status();
echo json_encode(["loaded" => $loaded, "state" => $status->state,
    "profiling" => RootTrace\Profiler::info()["profiling"], "excimer" => extension_loaded("excimer")]);
PHP, $dir);
            $this->assertSame(['RootTrace\Limits', 'RootTrace\Profiler', 'RootTrace\RequestSampling',
                'RootTrace\RequestStart'], $got['loaded'], 'an idle request loads these and no more');
            $this->assertSame([$got['excimer'] ? 'waiting' : 'unavailable', false],
                [$got['state'], $got['profiling']]);
            $this->assertSame($before, $this->listing($spool), 'nothing spooled, cached or polled');
        } finally {
            T::rmrf($dir);
        }
    }

    /** Gate off but maintenance due: not idle. The request builds its Agent and, at its
     * end, runs maintenance: the poll to the refused server is recorded, and the gate's next
     * due time moves into the future. */
    public function testARequestWhoseMaintenanceIsDueRunsIt(): void
    {
        [$dir, $spool] = $this->spoolWithGate(null, -1);
        try {
            $got = $this->child($spool, self::START . 'echo json_encode(["loaded" => $loaded]);', $dir);
            $this->assertContains('RootTrace\Agent', $got['loaded']);
            $st = json_decode((string)@file_get_contents($spool . '/state.json'), true);
            $this->assertIsArray($st, 'maintenance wrote the state');
            $this->assertNotSame('', (string)($st['poll_error'] ?? ''), 'the poll failed and says so');
            $gate = RequestStart::readGate($spool);
            $this->assertTrue($gate['mine']);
            $this->assertGreaterThan(RequestStart::nowNs(), $gate['next_due']);
        } finally {
            T::rmrf($dir);
        }
    }

    /** Gate on: not idle; the request profiles (with excimer) from the gate Profiler::start
     * read, with the gate's interval. */
    public function testARequestWithTheGateOnProfiles(): void
    {
        [$dir, $spool] = $this->spoolWithGate(self::ON, 600, 600);
        try {
            $got = $this->child($spool, self::START . <<<'PHP'
echo json_encode(["loaded" => $loaded, "info" => RootTrace\Profiler::info(),
    "excimer" => extension_loaded("excimer")]);
PHP, $dir);
            $this->assertContains('RootTrace\Agent', $got['loaded']);
            $this->assertSame($got['excimer'], $got['info']['profiling']);
            $this->assertSame($got['excimer'] ? 'waiting' : 'unavailable', $got['info']['state'],
                'no config cached here: the state says so, the gate decides');
        } finally {
            T::rmrf($dir);
        }
    }

    /** A CLI worker idle at its start follows the config at its first checkpoint(), also
     * after info() built its Agent: the gate turned on meanwhile (as maintenance of another
     * process would) starts profiling. */
    public function testACheckpointBeginsAnIdleScript(): void
    {
        [$dir, $spool] = $this->spoolWithGate(null, 600);
        try {
            $on = var_export(self::ON, true);
            $got = $this->child($spool, self::START . <<<PHP
\$before = RootTrace\Profiler::info()["profiling"];
\$gate = $on;
\$gate["until"] = RootTrace\RequestStart::nowNs() + 600_000_000_000;
(new RootTrace\Spool(\$argv[1], new RootTrace\Limits()))->writeGate(\$gate,
    RootTrace\RequestStart::nowNs() + 600_000_000_000);
RootTrace\Profiler::checkpoint();
echo json_encode(["loaded" => \$loaded, "before" => \$before,
    "after" => RootTrace\Profiler::info()["profiling"], "excimer" => extension_loaded("excimer")]);
PHP, $dir);
            $this->assertNotContains('RootTrace\Agent', $got['loaded'], 'idle at its start');
            $this->assertFalse($got['before']);
            $this->assertSame($got['excimer'], $got['after'], 'profiling after the checkpoint');
        } finally {
            T::rmrf($dir);
        }
    }

    /** A status asked for, then stop(), on an idle request: the Agent built for the status
     * knows the gate read at the start, so stop() finds maintenance not due, as the request's
     * end did before the idle path: nothing written. */
    public function testStatusThenStopOnAnIdleRequestRunsNoMaintenance(): void
    {
        [$dir, $spool] = $this->spoolWithGate(null, 600);
        try {
            $before = $this->listing($spool);
            $got = $this->child($spool, self::START . <<<'PHP'
$state = RootTrace\Profiler::status()->state;
RootTrace\Profiler::stop();
echo json_encode(["loaded" => $loaded, "state" => $state]);
PHP, $dir);
            $this->assertNotContains('RootTrace\Agent', $got['loaded']);
            $this->assertSame($before, $this->listing($spool), 'no maintenance: not due');
        } finally {
            T::rmrf($dir);
        }
    }

    /** stop() or flush() ends an idle CLI script for good: a later checkpoint() does not
     * begin it, though the gate has turned on with maintenance due meanwhile: nothing
     * profiles, and the checkpoint runs no maintenance (the spool directory is as before it,
     * which tells it also without excimer). */
    public function testStopOrFlushEndsAnIdleScriptForGood(): void
    {
        foreach (['stop', 'flush'] as $end) {
            [$dir, $spool] = $this->spoolWithGate(null, 600);
            try {
                $on = var_export(self::ON, true);
                $got = $this->child($spool, self::START . <<<PHP
RootTrace\Profiler::$end();
\$gate = $on;
\$gate["until"] = RootTrace\RequestStart::nowNs() + 600_000_000_000;
(new RootTrace\Spool(\$argv[1], new RootTrace\Limits()))->writeGate(\$gate,
    RootTrace\RequestStart::nowNs() - 1_000_000_000);
\$listing = static function () use (\$argv): array {
    \$out = [];
    foreach (scandir(\$argv[1]) as \$f) {
        \$p = \$argv[1] . '/' . \$f;
        \$out[\$f] = is_link(\$p) ? readlink(\$p) : (is_file(\$p) ? md5_file(\$p) : 'dir');
    }
    return \$out;
};
\$before = \$listing();
RootTrace\Profiler::checkpoint();
echo json_encode(["loaded" => \$loaded, "after" => RootTrace\Profiler::info()["profiling"],
    "unchanged" => \$listing() === \$before]);
PHP, $dir);
                $this->assertNotContains('RootTrace\Agent', $got['loaded'], "idle at its start ($end)");
                $this->assertFalse($got['after'], "not profiling after $end() and a checkpoint");
                $this->assertTrue($got['unchanged'], "no maintenance at the checkpoint after $end()");
            } finally {
                T::rmrf($dir);
            }
        }
    }

    /** The application's error handler, set before start() and throwing on every warning
     * (as frameworks do), is never called by the SDK's start, which finds no gate yet: the
     * request goes on to its Agent, and its end polls and writes the gate and the state. */
    public function testTheApplicationsErrorHandlerSeesNothingOfTheStart(): void
    {
        $dir = T::tmpdir('idle');
        $spool = $dir . '/spool';
        try {
            $got = $this->child($spool, <<<'PHP'
$calls = 0;
set_error_handler(static function (int $no, string $msg) use (&$calls): bool {
    $calls++;
    throw new ErrorException($msg, 0, $no);
});

PHP . self::START . 'echo json_encode(["loaded" => $loaded, "calls" => $calls]);', $dir);
            $this->assertSame(0, $got['calls'], 'the handler was not called');
            $this->assertContains('RootTrace\Agent', $got['loaded'], 'no gate: not idle');
            $this->assertTrue(RequestStart::readGate($spool)['mine'], 'maintenance wrote the gate');
            $this->assertFileExists($spool . '/state.json');
        } finally {
            T::rmrf($dir);
        }
    }

    /** A new temporary directory and a spool directory in it whose gate is $gate (null: off)
     * with maintenance due $dueS seconds from now and profiling allowed $onS seconds from now
     * (when $gate is given), written as maintenance writes it. */
    private function spoolWithGate(?array $gate, int $dueS, int $onS = 0): array
    {
        $dir = T::tmpdir('idle');
        $spool = $dir . '/spool';
        if ($gate !== null) {
            $gate['until'] = RequestStart::nowNs() + $onS * 1_000_000_000;
        }
        $this->assertTrue((new Spool($spool, new Limits()))->writeGate($gate,
            RequestStart::nowNs() + $dueS * 1_000_000_000));
        $this->assertSame($gate === null ? 0 : $gate['until'], RequestStart::readGate($spool)['until']);
        return [$dir, $spool];
    }

    /** Runs a child script with the spool directory as $argv[1]; returns its JSON output. */
    private function child(string $spool, string $body, string $dir): array
    {
        [$rc, $out, $err] = T::php(T::prelude() . $body, [$spool], [], $dir);
        $this->assertSame([0, ''], [$rc, $err]);
        $got = json_decode($out, true);
        $this->assertIsArray($got, $out);
        return $got;
    }

    /** The names in $spool and their contents (the gate's target for the link). */
    private function listing(string $spool): array
    {
        $out = [];
        foreach (scandir($spool) as $f) {
            $p = $spool . '/' . $f;
            $out[$f] = is_link($p) ? 'link:' . readlink($p) : (is_file($p) ? md5_file($p) : 'dir');
        }
        return $out;
    }
}
