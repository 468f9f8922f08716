<?php
// One php-fpm request of bench/sdk_overhead/work_php_fpm.py: the work of work_php.php's
// simulated request (php_request.php) under the SDK as a service deploys it, when the pool
// sets RT_BENCH_SDK: RootTrace\Profiler::start() with the options from the pool's
// environment (ROOTTRACE_SERVER, _KEY, _SERVICE) and every other option at its default (the
// spool directory, the instance's name; the request sample rate unless the pool sets
// RT_BENCH_RATE), the end at shutdown.
// Query: seed=N (the request's work), status=1 (answer the SDK's status too), flush=1 (no
// work: Profiler::flush(), what one upload interval costs, timed in the request).
// Answers one JSON line: {"check", "profiling"?, "sdk_status"?, "flush_wall_s"?,
// "flush_cpu_s"?}.
declare(strict_types=1);

require __DIR__ . '/php_request.php';

/** This process's CPU time (user + system), seconds. */
function cpu_s(): float
{
    $r = getrusage();
    return $r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']
        + ($r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec']) / 1e6;
}

$sdk = getenv('RT_BENCH_SDK') === '1';
if ($sdk) {
    require __DIR__ . '/../../sdk/php/src/autoload.php';
    $rate = getenv('RT_BENCH_RATE'); // another request sample rate, as work_php.php takes it
    RootTrace\Profiler::start(['version' => 'bench-1']
        + ($rate !== false && $rate !== '' ? ['request_sample_rate' => (float)$rate] : []));
}
// RT_BENCH_SDK=excimer: excimer alone, as the SDK drives it (its CPU timer at 10 ms, started
// with the request, stopped and its log read at shutdown), without any of the SDK's code: the
// part of the SDK's cost that is the profiler's own.
if (getenv('RT_BENCH_SDK') === 'excimer') {
    $excimer = new ExcimerProfiler();
    $excimer->setPeriod(0.01);
    $excimer->setEventType(EXCIMER_CPU);
    $excimer->start();
    register_shutdown_function(static function () use ($excimer): void {
        $excimer->stop();
        $excimer->getLog();
    });
}
$out = [];
if (($_GET['flush'] ?? '') === '1') {
    $t0 = hrtime(true);
    $c0 = cpu_s();
    if ($sdk) {
        RootTrace\Profiler::flush();
    }
    $out['flush_wall_s'] = (hrtime(true) - $t0) / 1e9;
    $out['flush_cpu_s'] = cpu_s() - $c0;
    $out['check'] = 0;
} else {
    $out['check'] = handle_request((int)($_GET['seed'] ?? 0));
}
if (($_GET['status'] ?? '') === '1' && $sdk) {
    $out['sdk_status'] = RootTrace\Profiler::info();
    $out['profiling'] = ($out['sdk_status']['profiling'] ?? false) === true;
}
header('Content-Type: application/json');
echo json_encode($out), "\n";
