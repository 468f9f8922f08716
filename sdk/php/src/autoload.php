<?php
// Autoloader for use without Composer: require this file, then use RootTrace\Profiler.
declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'RootTrace\\', 10) !== 0) {
        return;
    }
    $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, 10)) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
