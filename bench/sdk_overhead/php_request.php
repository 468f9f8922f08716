<?php
// The work of one simulated request for bench/sdk_overhead: work_php.php calls it in a CLI
// loop, fpm_request.php once per php-fpm request (work_php_fpm.py).
declare(strict_types=1);

/** One request's work: 40 orders through JSON, sha256, string and integer work. */
function handle_request(int $seed): int
{
    $check = 0;
    for ($i = 0; $i < 40; $i++) {
        $n = $seed * 40 + $i;
        $lines = [];
        for ($j = 0; $j < 20; $j++) {
            $lines[] = ['sku' => 'SKU-' . (($n * 31 + $j) % 997), 'qty' => ($n + $j) % 7 + 1,
                'price' => (($n * $j) % 500) / 10 + 0.99];
        }
        $text = json_encode(['id' => $n, 'customer' => 'customer-' . ($n % 113), 'lines' => $lines]);
        $back = json_decode($text, true);
        $total = 0.0;
        foreach ($back['lines'] as $l) {
            $total += $l['qty'] * $l['price'];
        }
        $check += (int)($total * 100);
        $check += hexdec(substr(hash('sha256', $text), 0, 6));
        $words = array_filter(preg_split('/[\s",:{}\[\]]+/', $text));
        sort($words);
        $check += strlen(strtoupper(implode('-', $words)));
        $x = $n;
        for ($k = 0; $k < 300; $k++) {
            $x = ($x * 1103515245 + 12345 + $k) & 0x7FFFFFFF;
        }
        $check = ($check + $x) % 1_000_000_007;
    }
    return $check;
}
