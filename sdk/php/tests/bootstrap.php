<?php
// Test support: the SDK's autoloader, a fake control plane (the Python SDK's, driven over
// a pipe), child PHP processes, temporary directories and waiting helpers.
declare(strict_types=1);

require __DIR__ . '/../src/autoload.php';

final class FakeCP
{
    /** @var resource */
    private $proc;
    /** @var array<int, resource> */
    private array $pipes = [];
    public string $url;

    public function __construct()
    {
        $this->proc = proc_open(['python3', __DIR__ . '/fakecp_cli.py'],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['file', '/dev/null', 'a']], $this->pipes);
        $first = json_decode((string)fgets($this->pipes[1]), true);
        if (!is_array($first)) {
            throw new RuntimeException('fake control plane did not start (python3?)');
        }
        $this->url = $first['url'];
    }

    public function cmd(array $c): mixed
    {
        fwrite($this->pipes[0], json_encode($c) . "\n");
        return json_decode((string)fgets($this->pipes[1]), true);
    }

    public function setConfig(array $kw): void
    {
        $this->cmd(['cmd' => 'set_config', 'kw' => $kw]);
    }

    public function setMode(string $mode, array $attrs = []): void
    {
        $this->cmd(['cmd' => 'set_mode', 'mode' => $mode, 'attrs' => (object)$attrs]);
    }

    public function polls(): array
    {
        return $this->cmd(['cmd' => 'polls']);
    }

    public function uploads(): array
    {
        return $this->cmd(['cmd' => 'uploads']);
    }

    public function close(): void
    {
        @fwrite($this->pipes[0], "{\"cmd\": \"quit\"}\n");
        @fclose($this->pipes[0]);
        @fclose($this->pipes[1]);
        proc_close($this->proc);
    }
}

final class T
{
    public const SRC = __DIR__ . '/../src';
    /** A PHP expression: this process's CPU time (user + system), seconds. Busy loops in
     * child scripts spin on it, so a loaded machine still gives the CPU time asked for. */
    public const CPU_NOW = '(($r = getrusage())["ru_utime.tv_sec"] + $r["ru_stime.tv_sec"] + ($r["ru_utime.tv_usec"] + $r["ru_stime.tv_usec"]) / 1e6)';

    /** A new empty temporary directory, removed by T::rmrf. */
    public static function tmpdir(string $tag = 'rt'): string
    {
        $d = sys_get_temp_dir() . '/rtphp-' . $tag . '-' . bin2hex(random_bytes(4));
        mkdir($d, 0700, true);
        return $d;
    }

    public static function rmrf(string $d): void
    {
        if (!is_dir($d) || is_link($d)) {
            @unlink($d);
            return;
        }
        foreach (scandir($d) as $f) {
            if ($f !== '.' && $f !== '..') {
                self::rmrf($d . '/' . $f);
            }
        }
        @rmdir($d);
    }

    public static function freePort(): int
    {
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $name = stream_socket_get_name($s, false);
        fclose($s);
        return (int)substr($name, strrpos($name, ':') + 1);
    }

    /** Polls $pred until truthy or $timeout seconds pass; returns its last value. */
    public static function waitFor(callable $pred, float $timeout, float $step = 0.02): mixed
    {
        $end = microtime(true) + $timeout;
        while (true) {
            $v = $pred();
            if ($v || microtime(true) >= $end) {
                return $v;
            }
            usleep((int)($step * 1e6));
        }
    }

    /**
     * Runs PHP code in a child process (same ini as this one unless $phpArgs says
     * otherwise, e.g. ['-n'] for no extensions). Returns [exit code, stdout, stderr, seconds].
     */
    public static function php(string $code, array $args = [], array $phpArgs = [],
                               ?string $dir = null, array $env = []): array
    {
        $dir ??= self::tmpdir('child');
        $file = $dir . '/child-' . bin2hex(random_bytes(3)) . '.php';
        file_put_contents($file, $code);
        return self::runFile($file, $args, $phpArgs, $dir, $env);
    }

    /** Runs a PHP file in a child process: [exit code, stdout, stderr, seconds]. */
    public static function runFile(string $file, array $args = [], array $phpArgs = [],
                                   ?string $dir = null, array $env = []): array
    {
        $cmd = array_merge([PHP_BINARY], $phpArgs, [$file], $args);
        $t0 = microtime(true);
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $dir,
            $env === [] ? null : $env + getenv());
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $rc = proc_close($p);
        return [$rc, $out, $err, microtime(true) - $t0];
    }

    /** PHP source that builds Limits with the given overrides (for child scripts). */
    public static function limitsCode(array $overrides): string
    {
        return 'new RootTrace\Limits(...' . var_export($overrides, true) . ')';
    }

    /** The first line of a child script: the SDK's autoloader. */
    public static function prelude(): string
    {
        return "<?php\nrequire " . var_export(realpath(self::SRC) . '/autoload.php', true) . ";\n";
    }
}
