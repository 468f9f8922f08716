<?php
// Accuracy workload (tests/accuracy) for the PHP SDK with ext-excimer's CPU timer: a CLI
// worker that burns about 0.7 of a CPU in one known function, burnHot: every 100 ms it calls
// it over and over for 70 ms of wall time (less CPU than that on a busy host or under a CPU
// quota), then calls RootTrace\Profiler::checkpoint() as a long-running worker does between
// jobs. Prints JSON lines on stdout, as burn_hot.js does: "profiling", "burn" after every
// burst with the wall and CPU time (getrusage: one thread) spent inside burnHot since the
// start, "stopping" and "stopped" (with the SDK's info) around Profiler::flush(). It runs
// RUN_S seconds from the first burst that was profiled.
// Usage: php burn_hot.php SERVER KEY SERVICE RUN_S SPOOL_DIR
declare(strict_types=1);

[, $server, $key, $service, $runS, $spool] = $argv;
require __DIR__ . '/../../../sdk/php/src/autoload.php';

const PERIOD = 0.1;
const BURST = 0.07;
const CHUNK = 20000; // xorshift rounds per call: ~0.5 ms

function burnHot(int $seed, int $n): int
{
    $x = $seed | 1;
    for ($i = 0; $i < $n; $i++) {
        $x ^= ($x << 13) & 0xffffffff;
        $x ^= $x >> 17;
        $x ^= ($x << 5) & 0xffffffff;
        $x = ($x + $i) & 0xffffffff;
    }
    return $x;
}

function emit(array $ev): void
{
    $ev['t'] = microtime(true);
    echo json_encode($ev), "\n";
}

function cpuMs(): float
{
    $u = getrusage();
    return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1e3
        + ($u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec']) / 1e3;
}

RootTrace\Profiler::start(['server' => $server, 'key' => $key, 'service' => $service,
    'version' => 'accuracy-1', 'spool_dir' => $spool, 'root' => __DIR__]);
$acc = 1;
$burnMs = $burnCpuMs = 0.0;
$since = null;
$next = microtime(true);
while (true) {
    $c0 = cpuMs();
    $end = microtime(true) + BURST;
    for ($t0 = microtime(true); $t0 < $end;) {
        $acc = burnHot($acc, CHUNK);
        $t1 = microtime(true);
        $burnMs += ($t1 - $t0) * 1e3;
        $t0 = $t1;
    }
    $burnCpuMs += cpuMs() - $c0;
    emit(['event' => 'burn', 'burn_ms' => $burnMs, 'burn_cpu_ms' => $burnCpuMs]);
    if ($since === null && RootTrace\Profiler::status()->state === 'profiling') {
        $since = microtime(true);
        emit(['event' => 'profiling']);
    }
    if ($since !== null && microtime(true) - $since >= (float)$runS) {
        break;
    }
    RootTrace\Profiler::checkpoint();
    $next += PERIOD;
    $wait = $next - microtime(true);
    if ($wait > 0) {
        usleep((int)($wait * 1e6));
    } else {
        $next = microtime(true);
    }
}
emit(['event' => 'stopping']);
RootTrace\Profiler::flush();
emit(['event' => 'stopped', 'info' => RootTrace\Profiler::info(), 'acc' => $acc]);
