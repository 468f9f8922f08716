<?php
// The PHP SDK's fault application (tests/faults/run.py): request-like units of work (JSON and
// sha256, ~1 ms) every ~4 ms, each one a request through the SDK's per-request path (an
// Agent: begin() reads the cached config and starts excimer, end() spools and, when due, runs
// maintenance: the poll and the upload, in this process as a CLI request does). Each unit's
// latency, measured from when it was due, includes the SDK's begin and end. Reported with the
// SDK's info once a second as one JSON line; stops, flushing, when stdin closes.
// Env: RT_SERVER, RT_KEY, RT_SERVICE, RT_INSTANCE, RT_SPOOL (spool directory).
declare(strict_types=1);
require __DIR__ . '/../../../sdk/php/src/autoload.php';

function unit(int $seed): int
{
    $lines = [];
    for ($j = 0; $j < 40; $j++) {
        $lines[] = ['sku' => 'SKU-' . (($seed * 31 + $j) % 997), 'qty' => $j % 7 + 1];
    }
    $text = json_encode(['id' => $seed, 'lines' => $lines]);
    $back = json_decode($text, true);
    $s = 0;
    foreach ($back['lines'] as $l) {
        $s += $l['qty'];
    }
    return $s + ord(hash('sha256', $text, true)[0]);
}

$options = ['server' => getenv('RT_SERVER'), 'key' => getenv('RT_KEY'),
    'service' => getenv('RT_SERVICE'), 'instance' => getenv('RT_INSTANCE'),
    'version' => 'faults-1', 'spool_dir' => getenv('RT_SPOOL')];

function emit(RootTrace\Agent $a, array &$units, bool $final): void
{
    $i = $a->info();
    echo json_encode(['t' => microtime(true), 'u' => $units, 'status' => $i['status'],
        'queued' => $i['queued'], 'sent' => $i['sent'], 'dropped' => $i['dropped'],
        'spooled_bytes' => $i['spooled_bytes'], 'final' => $final]), "\n";
    $units = [];
}

stream_set_blocking(STDIN, false);
$units = [];
$last = $due = microtime(true);
$sink = 0;
for ($i = 0; ; $i++) {
    $wait = $due - microtime(true);
    if ($wait > 0) {
        usleep((int)($wait * 1e6));
    }
    $a = new RootTrace\Agent($options);
    $a->begin(false);
    for ($k = 0; $k < 3; $k++) {
        $sink += unit($i);
    }
    $a->end();
    $end = microtime(true);
    $units[] = [(int)($due * 1000), (int)(($end - $due) * 1e6)];
    $due = $end + 0.004;
    if ($end - $last >= 1) {
        emit($a, $units, false);
        $last = $end;
        fread(STDIN, 4096);
        if (feof(STDIN)) {
            break;
        }
    }
}
$a = new RootTrace\Agent($options);
$a->flush();
emit($a, $units, true);
