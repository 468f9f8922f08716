<?php
// A fixed PHP workload for bench/sdk_overhead/run.sh: requests simulated in a CLI loop, each
// doing the same JSON, sha256 and string work and, with the SDK, its per-request path
// (Agent: read the cached config, start excimer, stop it, spool the stacks, and the
// maintenance a request's end runs when due: the poll, the upload). The loop is timed from
// the moment the SDK is profiling (or at once without it) to its end. With the SDK, a final
// flush (close the interval, encode, gzip, upload: what each upload interval costs) is timed
// apart, as stop_wall_s and stop_cpu_s.
//
// The SDK runs at its default request sample rate (every request); RT_BENCH_RATE=R runs it
// at R instead (the cost against the rate, docs/performance-sdk.md). A request left out
// builds no Agent, as Profiler::start().
//
// Usage: php work_php.php ROUNDS                          (no SDK)
//        php work_php.php ROUNDS SERVER KEY SERVICE       (SDK at defaults; needs ext-excimer)
// Prints one JSON line: {"sdk", "wall_s", "cpu_s", "stop_wall_s", "stop_cpu_s", "checksum",
// "sdk_status"}.
declare(strict_types=1);

/** Process CPU time (user + system), seconds. */
function cpu_s(): float
{
    $r = getrusage();
    return $r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']
        + ($r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec']) / 1e6;
}

require __DIR__ . '/php_request.php';

$rounds = (int)($argv[1] ?? 100);
$sdk = count($argv) >= 5;
$options = null;
$spool = null;
if ($sdk) {
    require __DIR__ . '/../../sdk/php/src/autoload.php';
    $spool = sys_get_temp_dir() . '/rt-bench-php-' . getmypid() . '-' . bin2hex(random_bytes(3));
    $options = ['server' => $argv[2], 'key' => $argv[3], 'service' => $argv[4],
        'version' => 'bench-1', 'spool_dir' => $spool,
        'request_sample_rate' => (float)(getenv('RT_BENCH_RATE')
            ?: RootTrace\Limits::DEFAULT_REQUEST_SAMPLE_RATE)];
    $deadline = microtime(true) + 15;
    while (true) { // requests until one profiles (the first ones fetch the config)
        $a = new RootTrace\Agent($options);
        $a->begin(false);
        $on = $a->profiling();
        $a->end();
        if ($on) {
            break;
        }
        if (microtime(true) > $deadline) {
            fwrite(STDERR, 'SDK not profiling after 15 s: ' . json_encode($a->info()) . "\n");
            exit(1);
        }
        usleep(20_000);
    }
}

// With RT_BENCH_BARRIER set (bench/sdk_overhead/copair.py), say "ready" on stderr and wait for
// a line on stdin, so that the two runs of a pair start their timed work together.
if (getenv('RT_BENCH_BARRIER')) {
    fwrite(STDERR, "ready\n");
    fgets(STDIN);
}
$check = 0;
$t0 = microtime(true);
$c0 = cpu_s();
for ($r = 0; $r < $rounds; $r++) {
    // As RootTrace\Profiler::start() does for a request left out: it builds nothing. A
    // picked request builds its Agent here even when its gate would leave it idle
    // (Profiler::start stops there): run it with profiling on, or use work_php_fpm.py.
    $a = $sdk && RootTrace\RequestSampling::pick($options)
        ? new RootTrace\Agent($options, null, true) : null;
    $a?->begin(false);
    $check = ($check + handle_request($r)) % 1_000_000_007;
    $a?->end();
}
$wall = microtime(true) - $t0;
$cpu = cpu_s() - $c0;
$stopWall = $stopCpu = null;
$status = null;
if ($sdk) {
    $a = new RootTrace\Agent($options);
    $s0 = microtime(true);
    $sc0 = cpu_s();
    $a->maintain(true);
    $stopWall = microtime(true) - $s0;
    $stopCpu = cpu_s() - $sc0;
    $status = $a->info();
    foreach (['/spool/*', '/queue/*', '/*', '/.*'] as $pattern) {
        foreach (glob($spool . $pattern) ?: [] as $f) {
            is_dir($f) ? @rmdir($f) : @unlink($f);
        }
    }
    @rmdir($spool);
}
echo json_encode(['sdk' => $sdk, 'wall_s' => $wall, 'cpu_s' => $cpu, 'stop_wall_s' => $stopWall,
    'stop_cpu_s' => $stopCpu, 'checksum' => $check, 'sdk_status' => $status]), "\n";
