<?php
// Autoloader for use without Composer: require this file, then use RootTrace\Profiler.
// The SDK's classes are named here, so that loading one costs no system call: a php-fpm
// worker loads five or six of them in every request, and a stat of each (is_file) cost a
// few microseconds apiece there (docs/sdk/php.md, *Overhead*). AutoloadTest checks this
// list against the files of src/.
declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'RootTrace\\', 10) !== 0) {
        return;
    }
    $name = substr($class, 10);
    $known = match ($name) {
        'Agent', 'BodyTooLarge', 'Config', 'ConfigError', 'Encoder', 'Frames', 'Http',
        'HttpError', 'Limits', 'Maintenance', 'Profiler', 'RequestSampling', 'RequestStart',
        'Spool', 'State', 'Status', 'Uploader', 'Witness' => true,
        default => false,
    };
    if ($known) {
        require __DIR__ . '/' . $name . '.php';
    }
});
