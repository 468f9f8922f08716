<?php
// opcache.preload for work_php_fpm.py with RT_BENCH_FPM_PRELOAD=1: the SDK's classes loaded
// once when php-fpm starts, so that no request loads them (the classes' share of the SDK's
// cost under php-fpm; docs/performance-sdk.md, *PHP under a real php-fpm*).
declare(strict_types=1);

require __DIR__ . '/../../sdk/php/src/autoload.php';
foreach (glob(__DIR__ . '/../../sdk/php/src/*.php') as $file) {
    $name = basename($file, '.php');
    if ($name !== 'autoload') {
        class_exists('RootTrace\\' . $name);
    }
}
