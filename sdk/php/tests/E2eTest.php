<?php
// End to end against the real server binary (ROOTTRACE_BIN, default <repo>/build/roottrace):
// an ingest key, profiling turned on from the API, CLI scripts using the SDK, the cpu and
// then wall profiles they produced, the toggle turning it off, and `unavailable` without
// excimer. With ROOTTRACE_E2E_REQUIRED=1 a missing binary fails instead of skipping.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;

final class E2eTest extends TestCase
{
    private const ADMIN = 'e2e-admin-token-php-0123456789';
    private string $dir;
    private string $url;
    /** @var resource|null */
    private $proc = null;

    protected function setUp(): void
    {
        $bin = getenv('ROOTTRACE_BIN') ?: dirname(__DIR__, 3) . '/build/roottrace';
        if (!is_executable($bin)) {
            if (getenv('ROOTTRACE_E2E_REQUIRED') === '1') {
                $this->fail("no server binary at $bin (ROOTTRACE_E2E_REQUIRED=1)");
            }
            $this->markTestSkipped("no server binary at $bin (run make)");
        }
        $this->dir = T::tmpdir('e2e');
        $port = T::freePort();
        $this->url = "http://127.0.0.1:$port";
        $this->proc = proc_open([$bin, 'serve', '--data', $this->dir . '/data', '--listen', "127.0.0.1:$port",
            '--poll-interval', '1s'], [1 => ['file', $this->dir . '/server.log', 'a'],
            2 => ['file', $this->dir . '/server.log', 'a']], $pipes, null,
            ['ROOTTRACE_BOOTSTRAP_TOKEN' => self::ADMIN] + getenv());
        $ok = T::waitFor(fn() => $this->call('GET', '/healthz')[0] === 200, 20.0, 0.05);
        $this->assertTrue($ok, (string)@file_get_contents($this->dir . '/server.log'));
    }

    protected function tearDown(): void
    {
        if ($this->proc !== null) {
            proc_terminate($this->proc, 15);
            proc_close($this->proc);
        }
        if (isset($this->dir)) {
            T::rmrf($this->dir);
        }
    }

    /** [status, decoded JSON body] */
    private function call(string $method, string $path, ?array $body = null): array
    {
        $ctx = stream_context_create(['http' => ['method' => $method, 'ignore_errors' => true,
            'timeout' => 10, 'header' => "Authorization: Bearer " . self::ADMIN . "\r\nContent-Type: application/json\r\n",
            'content' => $body === null ? '' : json_encode($body)]]);
        $out = @file_get_contents($this->url . $path, false, $ctx);
        $status = isset($http_response_header[0]) ? (int)explode(' ', $http_response_header[0])[1] : 0;
        return [$status, $out === false ? null : json_decode($out, true)];
    }

    private function ingestKey(): string
    {
        [$code, $b] = $this->call('POST', '/api/v1/keys', ['scope' => 'ingest', 'name' => 'php-e2e']);
        $this->assertSame(201, $code);
        return $b['key'];
    }

    private function toggle(string $service, array $body): void
    {
        [$code, $b] = $this->call('PUT', "/api/v1/services/$service/profiling", $body);
        $this->assertSame(200, $code, json_encode($b));
        $this->assertSame($body['enabled'], $b['profiling_enabled']);
    }

    private function writeApp(string $key, string $service): string
    {
        $limits = T::limitsCode(['uploadIntervalMinS' => 1.0, 'uploadIntervalMaxS' => 1.0]);
        $code = T::prelude() . <<<PHP
\$rt = new RootTrace\Agent(['server' => '{$this->url}', 'key' => '$key', 'service' => '$service',
    'version' => '2.0.1', 'spool_dir' => __DIR__ . '/spool-$service'], $limits);
\$rt->begin();
function busy_compute_checksum(): int { \$x = 0; \$e = CPU_NOW + 0.3; while (CPU_NOW < \$e) { \$x = (\$x * 31 + 7) % 1000003; } return \$x; }
function sleepy_wait_for_io(): void { usleep(300000); }
busy_compute_checksum();
sleepy_wait_for_io();
echo \$rt->status()->status, "\\n";
PHP;
        file_put_contents($this->dir . '/app.php', str_replace('CPU_NOW', T::CPU_NOW, $code));
        return $this->dir . '/app.php';
    }

    /** Runs the app until GET /api/v1/profile shows $function in a $type profile. */
    private function runUntil(string $app, string $service, string $type, string $function): array
    {
        $prof = T::waitFor(function () use ($app, $service, $type, $function) {
            [$rc, $out, $err] = T::runFile($app, [], ['-d', 'display_errors=stderr', '-d', 'error_reporting=-1'], $this->dir);
            $this->assertSame([0, ''], [$rc, $err], $out);
            [, $p] = $this->call('GET', "/api/v1/profile?service=$service&type=$type");
            $names = array_column($p['functions'] ?? [], 'name');
            return in_array($function, $names, true) ? $p : null;
        }, 15.0, 0.0);
        $this->assertNotNull($prof, "no $type profile with $function");
        return $prof;
    }

    private function instanceStatus(string $service): ?string
    {
        [, $svcs] = $this->call('GET', '/api/v1/services');
        foreach ($svcs ?? [] as $s) {
            if ($s['name'] === $service && $s['instances'] !== []) {
                return $s['instances'][0]['status'];
            }
        }
        return null;
    }

    public function testCpuThenWallThenOffAgainstTheRealServer(): void
    {
        if (!extension_loaded('excimer')) {
            $this->markTestSkipped('ext-excimer not loaded (this pass runs without it)');
        }
        $key = $this->ingestKey();
        $this->toggle('e2e-php', ['enabled' => true]);
        $app = $this->writeApp($key, 'e2e-php');
        $cpu = $this->runUntil($app, 'e2e-php', 'cpu', 'app.php.busy_compute_checksum');
        $this->assertSame('cpu', $cpu['type']);
        // Sleeping is not CPU (a timer tick due as usleep() starts is charged to its caller
        // after it returns, so the sleeper may show, thinly).
        $self = array_column($cpu['functions'], 'self_ns', 'name');
        $this->assertLessThan(0.2 * $self['app.php.busy_compute_checksum'], $self['app.php.sleepy_wait_for_io'] ?? 0);
        $this->assertNotNull($cpu['capacity']); // a cpu profile has a capacity estimate

        $this->toggle('e2e-php', ['enabled' => true, 'type' => 'wall']);
        $wall = $this->runUntil($app, 'e2e-php', 'wall', 'app.php.sleepy_wait_for_io');
        $this->assertSame('wall', $wall['type']);
        $this->assertNull($wall['capacity']);

        $this->toggle('e2e-php', ['enabled' => false]);
        $off = T::waitFor(function () use ($app) {
            T::runFile($app, [], [], $this->dir);
            return $this->instanceStatus('e2e-php') === 'disabled';
        }, 10.0, 0.0);
        $this->assertTrue($off, (string)$this->instanceStatus('e2e-php'));
        $count = fn() => $this->call('GET', '/api/v1/profile?service=e2e-php&type=wall')[1]['profiles']
            + $this->call('GET', '/api/v1/profile?service=e2e-php&type=cpu')[1]['profiles'];
        $before = $count();
        for ($i = 0; $i < 3; $i++) {
            [, $out] = T::runFile($app, [], [], $this->dir);
            $this->assertSame("disabled\n", $out);
            usleep(400_000);
        }
        $this->assertSame($before, $count());
    }

    public function testWithoutExcimerTheServerSeesUnavailable(): void
    {
        $app = $this->writeApp($this->ingestKey(), 'e2e-php-noext');
        [$rc, $out, $err] = T::runFile($app, [], ['-n', '-d', 'display_errors=stderr', '-d', 'error_reporting=-1'], $this->dir);
        $this->assertSame([0, "unavailable: ext-excimer not loaded\n", ''], [$rc, $out, $err]);
        // The server records polls off the answering thread: wait for it.
        $this->assertSame('unavailable: ext-excimer not loaded', T::waitFor(
            fn() => $this->instanceStatus('e2e-php-noext'), 5.0, 0.05));
        [, $svcs] = $this->call('GET', '/api/v1/services');
        $svc = array_values(array_filter($svcs, static fn($s) => $s['name'] === 'e2e-php-noext'))[0];
        $this->assertFalse($svc['profiling_enabled']);
        $this->assertSame('php', $svc['instances'][0]['runtime']);
        $this->assertSame('0.1.0', $svc['instances'][0]['sdk_version']);
    }
}
