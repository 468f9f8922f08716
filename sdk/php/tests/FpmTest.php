<?php
// Under php-fpm (pm=static, 2 children, driven by cgi-fcgi): a request's response time does
// not include the SDK's poll or upload (a fake control plane answering 2 s late), one
// worker at a time does that work, and the spooled stacks are uploaded.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;

final class FpmTest extends TestCase
{
    private const FPM = '/usr/sbin/php-fpm8.2';
    private const CGI_FCGI = '/usr/bin/cgi-fcgi';
    private FakeCP $fake;
    private string $dir;
    private int $port;
    /** @var resource|null */
    private $proc = null;

    protected function setUp(): void
    {
        foreach ([self::FPM, self::CGI_FCGI] as $bin) {
            if (!is_executable($bin)) {
                $this->markTestSkipped("$bin not installed");
            }
        }
        $this->fake = new FakeCP();
        $this->fake->setConfig(['enabled' => true, 'poll_interval_s' => 1]);
        $this->dir = T::tmpdir('fpm');
        $this->port = T::freePort();
        $user = function_exists('posix_getpwuid') ? posix_getpwuid(posix_geteuid())['name'] : get_current_user();
        file_put_contents($this->dir . '/fpm.conf', implode("\n", [
            '[global]', "pid = {$this->dir}/fpm.pid", "error_log = {$this->dir}/fpm.log",
            'daemonize = no', '[rt-test]', "user = $user", "listen = 127.0.0.1:{$this->port}",
            'pm = static', 'pm.max_children = 2', 'clear_env = no', 'catch_workers_output = yes',
            // docs/sdk/php.md's install section: php-fpm expands $pool to the pool's name
            'env[RT_TEST_POOL] = $pool', '']));
        // The same extensions as this pass: -n, then excimer only when this pass has it.
        $cmd = [self::FPM, '-n', '-F', '-y', $this->dir . '/fpm.conf', '-d', 'display_errors=stderr',
            '-d', 'error_reporting=-1', '-d', 'log_errors=1'];
        if (extension_loaded('excimer')) {
            $cmd = array_merge($cmd, ['-d', 'extension=excimer']);
        }
        if (function_exists('posix_geteuid') && posix_geteuid() === 0) {
            $cmd[] = '-R';
        }
        $this->proc = proc_open($cmd, [1 => ['file', $this->dir . '/fpm.out', 'a'],
            2 => ['file', $this->dir . '/fpm.out', 'a']], $pipes);
        $up = T::waitFor(function () {
            $s = @stream_socket_client('tcp://127.0.0.1:' . $this->port, $e, $m, 0.2);
            return $s !== false && fclose($s);
        }, 10.0, 0.05);
        $this->assertTrue($up, (string)@file_get_contents($this->dir . '/fpm.out'));
    }

    protected function tearDown(): void
    {
        if ($this->proc !== null) {
            proc_terminate($this->proc, 15);
            proc_close($this->proc);
        }
        if (isset($this->fake)) {
            $this->fake->close();
        }
        if (isset($this->dir)) {
            T::rmrf($this->dir);
        }
    }

    /** One request, with FastCGI parameters $params besides the script's: [seconds until
     * the response ended, body]. */
    private function request(string $script, array $params = []): array
    {
        $env = ['SCRIPT_FILENAME' => $script, 'REQUEST_METHOD' => 'GET', 'QUERY_STRING' => '',
            'PATH' => getenv('PATH')] + $params;
        $t0 = microtime(true);
        $p = proc_open([self::CGI_FCGI, '-bind', '-connect', '127.0.0.1:' . $this->port],
            [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        $out = stream_get_contents($pipes[1]);
        stream_get_contents($pipes[2]);
        proc_close($p);
        $t = microtime(true) - $t0;
        $parts = explode("\r\n\r\n", $out, 2);
        return [$t, $parts[1] ?? $out];
    }

    private function writeApp(): string
    {
        $limits = T::limitsCode(['uploadIntervalMinS' => 1.0, 'uploadIntervalMaxS' => 1.0]);
        $code = T::prelude() . <<<PHP
\$rt = new RootTrace\Agent(['server' => '{$this->fake->url}', 'key' => 'k', 'service' => 'fpm-svc',
    'spool_dir' => '{$this->dir}/spool'], $limits);
\$rt->begin();
function busy_request(): int { \$x = 0; \$e = microtime(true) + 0.06; while (microtime(true) < \$e) { \$x++; } return \$x > 0 ? 1 : 0; }
echo 'ok ', busy_request(), ' ', \$rt->status()->status;
PHP;
        file_put_contents($this->dir . '/app.php', $code);
        return $this->dir . '/app.php';
    }

    /** The default instance's pool: from fpm_get_status() without ROOTTRACE_POOL, else
     * ROOTTRACE_POOL (here a FastCGI parameter); and `env[...] = $pool` in a pool's
     * configuration gives the pool's name, as docs/sdk/php.md tells operators to set it. */
    public function testTheDefaultInstanceNamesThePool(): void
    {
        file_put_contents($this->dir . '/names.php', T::prelude()
            . 'echo json_encode([getenv("RT_TEST_POOL"), RootTrace\RequestStart::defaultInstance()]);');
        $host = (string)gethostname();
        [, $body] = $this->request($this->dir . '/names.php');
        $this->assertSame(['rt-test', $host . '-rt-test'], json_decode($body, true), $body);
        [, $body] = $this->request($this->dir . '/names.php', ['ROOTTRACE_POOL' => 'from-env']);
        $this->assertSame(['rt-test', $host . '-from-env'], json_decode($body, true), $body);
    }

    public function testRequestsNeverWaitForTheControlPlaneAndStacksAreUploaded(): void
    {
        $app = $this->writeApp();
        // Every answer 1.5 s late (within the 2 s poll deadline: slow, not failing).
        $this->fake->cmd(['cmd' => 'delay', 's' => 1.5]);
        $times = [];
        $bodies = [];
        $deadline = microtime(true) + 12;
        $want = extension_loaded('excimer') ? 'profiling' : 'unavailable: ext-excimer not loaded';
        do {
            [$t, $body] = $this->request($app);
            $times[] = $t;
            $bodies[] = $body;
            $done = count($this->fake->uploads()) > 0 || (!extension_loaded('excimer') && count($this->fake->polls()) >= 2);
            usleep(50_000);
        } while (!$done && microtime(true) < $deadline);
        $log = (string)@file_get_contents($this->dir . '/fpm.out');
        $this->assertTrue($done, "no upload; bodies: " . implode(' | ', array_unique($bodies)) . "\n$log");
        // Each request is its own 60 ms of work; a poll or an upload takes 1.5 s (the bound
        // leaves room for a loaded machine, not for a 1.5 s wait).
        $this->assertLessThan(1.5, max($times), json_encode($times));
        $this->assertStringNotContainsString('PHP Warning', $log);
        $this->assertStringNotContainsString('PHP Notice', $log);
        $this->assertContains('ok 1 ' . $want, $bodies);
        $polls = $this->fake->polls();
        $this->assertMatchesRegularExpression('/-rt-test$/', $polls[0]['params']['instance']);
        $this->assertSame($want, array_slice($polls, -1)[0]['params']['status']);
        // every request is profiled by default (request_sample_rate 1): the interval as
        // configured
        $this->assertSame('10000', (string)$polls[0]['params']['interval_us']);
        if (!extension_loaded('excimer')) {
            $this->assertSame([], $this->fake->uploads());
            return;
        }
        $u = $this->fake->uploads()[0];
        $this->assertSame(['cpu', 'nanoseconds'], $u['profile']['sample_type'][1]);
        $this->assertSame(10_000_000, $u['profile']['period']);
        $leaves = array_map(static fn($s) => implode(';', $s[0]), $u['profile']['samples']);
        $this->assertContains('app.php;app.php.busy_request', $leaves, json_encode($u['profile']));
    }
}
