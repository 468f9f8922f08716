<?php
// Property test of Config::parse (DESIGN §5) on seeded hostile bodies: mutations of a valid
// config (wrong types, huge numbers, NaN-ish tokens, deep nesting, long and unicode strings,
// lone surrogates, duplicate keys, truncated or corrupted JSON). For every body parse throws
// ConfigError (profiling off) and nothing else, or returns a config whose every bound lies
// within the compiled clamps; it is enabled only when the body is a JSON object whose
// "enabled" is true; the same body gives the same answer; a generated body with a known
// outcome gets exactly it. Saved inputs in sdk/testdata/config_fuzz/ are replayed.
// ROOTTRACE_CONFIG_FUZZ_SECONDS=N runs for N seconds from a random seed instead
// (scripts/fuzz-sdk.sh), saving a failing body in sdk/testdata/config_fuzz/.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Config;
use RootTrace\ConfigError;
use RootTrace\Limits;

/** A token written as is: kind "nonjson" (NaN: invalid), "overflow" (1e400) or "deep". */
final class FuzzRaw
{
    public function __construct(public readonly string $text, public readonly string $kind)
    {
    }
}

/** An object as key/value pairs (keys may repeat). */
final class FuzzObj
{
    /** @param list<array{0: string, 1: mixed}> $pairs */
    public function __construct(public array $pairs)
    {
    }
}

final class ConfigPropertyTest extends TestCase
{
    private const CASES = 3000; // a second or two here
    private const LONE = "\u{E000}"; // generated as a stand-in, written as the escape \ud800
    private const NUMERIC = [ // field => [lo, hi, integral, default, property]
        'sampling_interval_us' => [Limits::SAMPLING_INTERVAL_MIN_US, Limits::SAMPLING_INTERVAL_MAX_US, true,
            Limits::DEFAULT_SAMPLING_INTERVAL_US, 'samplingIntervalUs'],
        'upload_interval_s' => [Limits::UPLOAD_INTERVAL_MIN_S, Limits::UPLOAD_INTERVAL_MAX_S, false,
            Limits::DEFAULT_UPLOAD_INTERVAL_S, 'uploadIntervalS'],
        'max_stack_depth' => [Limits::STACK_DEPTH_MIN, Limits::STACK_DEPTH_MAX, true,
            Limits::STACK_DEPTH_MAX, 'maxStackDepth'],
        'poll_interval_s' => [Limits::POLL_INTERVAL_MIN_S, Limits::POLL_INTERVAL_MAX_S, false,
            Limits::DEFAULT_POLL_INTERVAL_S, 'pollIntervalS'],
    ];
    private const BASE = [['enabled', true], ['type', 'cpu'], ['sampling_interval_us', 20000],
        ['upload_interval_s', 60], ['max_stack_depth', 256], ['poll_interval_s', 10], ['etag', 'e1']];

    private static function dump(mixed $v): string
    {
        if ($v instanceof FuzzRaw) {
            return $v->text;
        }
        if ($v instanceof FuzzObj) {
            return '{' . implode(', ', array_map(fn($p) => self::dump($p[0]) . ': ' . self::dump($p[1]),
                    $v->pairs)) . '}';
        }
        if (is_array($v)) {
            return '[' . implode(',', array_map([self::class, 'dump'], $v)) . ']';
        }
        $s = json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION);
        return str_replace(self::LONE, '\ud800', $s);
    }

    private static function pick(array $xs): mixed
    {
        return $xs[mt_rand(0, count($xs) - 1)];
    }

    private static function text(): string
    {
        $chars = ['a', 'Z', '0', ' ', '"', '\\', '/', "\n", "\0", "\x7f", 'é', '模', '😀', "\u{2028}",
            "\u{FEFF}", self::LONE, '%', '&', '='];
        $n = self::pick([0, 1, 3, 10, 200, 5000]);
        $s = '';
        for ($i = 0; $i < $n; $i++) {
            $s .= self::pick($chars);
        }
        return $s;
    }

    private static function number(): int|float
    {
        return self::pick([0, -0.0, 1, -1, 5, 9.999, 10, 30.5, 60, 255.9, 256, 257, 300, 301, 599.5, 600,
            601, 1000, 9999, 10000, 12345.6, 999999.4, 1000001, 2 ** 31, PHP_INT_MAX, 1e30, -1e30, 1e12,
            -1e12, 1e308, -1e308, 1e-300, 5e-324, mt_rand() / mt_getrandmax() * 1e6 - 1e3,
            mt_rand(-1000000, 9000000)]);
    }

    private static function junk(int $depth = 0): mixed
    {
        switch (mt_rand(0, $depth < 4 ? 7 : 4)) {
            case 0: return null;
            case 1: return mt_rand(0, 1) === 1;
            case 2: return self::number();
            case 3: return self::text();
            case 4:
                $tok = self::pick(['NaN', 'Infinity', '-Infinity', '1e400', '-1e400']);
                return new FuzzRaw($tok, ctype_digit(substr($tok, -1)) ? 'overflow' : 'nonjson');
            case 5: return array_map(fn() => self::junk($depth + 1), range(1, mt_rand(1, 3)));
            case 6:
                $pairs = [];
                for ($i = mt_rand(0, 3); $i > 0; $i--) {
                    $pairs[] = [mb_substr(self::text(), 0, 8), self::junk($depth + 1)];
                }
                return new FuzzObj($pairs);
            default:
                $d = self::pick([10, 30, 200, 5000]);
                return new FuzzRaw(str_repeat('[', $d) . str_repeat(']', $d), 'deep');
        }
    }

    private static function kindOf(string $key): string
    {
        return $key === 'enabled' ? 'bool' : (in_array($key, ['type', 'etag'], true) ? 'string' : 'number');
    }

    private static function isKind(mixed $v, string $kind): bool
    {
        return match ($kind) {
            'bool' => is_bool($v), 'string' => is_string($v), default => is_int($v) || is_float($v),
        };
    }

    private static function wrong(string $kind): mixed
    {
        $options = [null, true, '60', 'NaN', '', [], [1], new FuzzObj([]), 60, 0];
        return self::pick(array_values(array_filter($options, fn($o) => !self::isKind($o, $kind))));
    }

    /** Some value holds a raw token of one of these kinds, or (lone) a lone surrogate. */
    private static function has(mixed $v, array $kinds, bool $lone = false): bool
    {
        if ($v instanceof FuzzRaw) {
            return in_array($v->kind, $kinds, true);
        }
        if ($v instanceof FuzzObj) {
            foreach ($v->pairs as [$k, $x]) {
                if (self::has($k, $kinds, $lone) || self::has($x, $kinds, $lone)) {
                    return true;
                }
            }
            return false;
        }
        if (is_array($v)) {
            foreach ($v as $x) {
                if (self::has($x, $kinds, $lone)) {
                    return true;
                }
            }
            return false;
        }
        return $lone && is_string($v) && str_contains($v, self::LONE);
    }

    /** An etag the server takes back in a query: at most 256 printable ASCII characters but '"'. */
    private static function sendable(string $e): bool
    {
        if (strlen($e) > 256) {
            return false;
        }
        foreach (str_split($e) as $ch) {
            if (ord($ch) < 0x21 || ord($ch) > 0x7e || $ch === '"') {
                return false;
            }
        }
        return true;
    }

    /** 'invalid', 'unknown' or ['valid'] for an object given as pairs. */
    private static function expectOf(array $pairs): string|array
    {
        $whole = new FuzzObj($pairs);
        if (self::has($whole, ['nonjson'], true)) {
            return 'invalid'; // NaN anywhere; a lone surrogate anywhere (json_decode refuses it)
        }
        if (self::has($whole, ['deep'])) {
            return 'unknown'; // deeper than json_decode's 32 levels, or not
        }
        $o = [];
        foreach ($pairs as [$k, $v]) {
            $o[$k] = $v; // last wins, as json_decode
        }
        if (!array_key_exists('enabled', $o) || !is_bool($o['enabled'])) {
            return 'invalid';
        }
        foreach (['type', 'etag'] as $k) {
            if (array_key_exists($k, $o) && !is_string($o[$k])) {
                return 'invalid';
            }
        }
        if (array_key_exists('etag', $o) && !self::sendable($o['etag'])) {
            return 'invalid'; // the server would refuse it in every later poll
        }
        foreach (array_keys(self::NUMERIC) as $k) {
            if (array_key_exists($k, $o) && $o[$k] instanceof FuzzRaw) {
                return 'unknown'; // 1e400: invalid or clamped, both safe
            }
            if (array_key_exists($k, $o) && !self::isKind($o[$k], 'number')) {
                return 'invalid';
            }
        }
        return ['valid'];
    }

    /** One hostile body and its expected outcome. */
    private static function generate(): array
    {
        $pairs = self::BASE;
        shuffle($pairs);
        for ($n = mt_rand(1, 4); $n > 0; $n--) {
            $i = mt_rand(0, count($pairs) - 1);
            $key = $pairs[$i][0];
            $kind = self::kindOf($key);
            switch (mt_rand(0, 7)) {
                case 0:
                    array_splice($pairs, $i, 1);
                    $pairs = $pairs ?: [['enabled', false]];
                    break;
                case 1: $pairs[$i] = [$key, self::wrong($kind)]; break;
                case 2:
                    $pairs[$i] = [$key, match ($kind) {
                        'number' => self::number(), 'bool' => mt_rand(0, 1) === 1, default => self::text(),
                    }];
                    break;
                case 3:
                    if ($kind === 'number') {
                        $tok = self::pick(['NaN', 'Infinity', '-Infinity', 'nan', '1e400', '-1e400', '1E+999']);
                        $pairs[$i] = [$key, new FuzzRaw($tok, ctype_digit(substr($tok, -1)) ? 'overflow' : 'nonjson')];
                    }
                    break;
                case 4:
                    $k = mb_substr(self::text(), 0, 12);
                    array_splice($pairs, mt_rand(0, count($pairs)), 0, [[$k === '' ? 'x' : $k, self::junk()]]);
                    break;
                case 5:
                    $v = mt_rand(0, 1) === 1 ? self::junk() : $pairs[$i][1];
                    array_splice($pairs, mt_rand(0, count($pairs)), 0, [[$key, $v]]);
                    break;
                case 6: $pairs[$i] = [$key, self::junk()]; break;
                default: $pairs[] = ['enabled', mt_rand(0, 1) === 1];
            }
        }
        $body = self::dump(new FuzzObj($pairs));
        $expect = self::expectOf($pairs);
        $mut = mt_rand(0, 9);
        if ($mut === 0 && strlen($body) > 1) {
            return [substr($body, 0, mt_rand(1, strlen($body) - 1)), 'invalid']; // never JSON
        }
        if ($mut === 1) {
            for ($n = mt_rand(1, 3); $n > 0; $n--) {
                $body[mt_rand(0, strlen($body) - 1)] = chr(mt_rand(0, 255));
            }
            return [$body, 'unknown'];
        }
        if ($mut === 2) {
            $pos = mt_rand(0, strlen($body));
            return [substr($body, 0, $pos) . self::pick([',', '}', '{', ']', '"', ':', '\u', "\0", ' '])
                . substr($body, $pos), 'unknown'];
        }
        return [$body, $expect];
    }

    /** Fails unless Config::parse keeps the invariants on $body. */
    private function check(string $body, string|array $expect = 'unknown'): void
    {
        $lim = new Limits();
        $parse = static function () use ($body, $lim): Config|string {
            try {
                return Config::parse($body, $lim);
            } catch (ConfigError $e) {
                return 'invalid';
            }
        }; // any other Throwable fails the test
        $got = $parse();
        $this->assertEquals($got, $parse(), 'not deterministic');
        if ($expect === 'invalid') {
            $this->assertSame('invalid', $got, 'accepted an invalid config');
        }
        if ($got === 'invalid') {
            $this->assertIsString($expect, 'refused a valid config');
            return;
        }
        $o = json_decode($body, true, 512);
        $this->assertIsArray($o, 'accepted a body that is not JSON');
        $this->assertTrue(array_key_exists('enabled', $o) && $o['enabled'] === $got->enabled, 'enabled');
        foreach (self::NUMERIC as $name => [$lo, $hi, $integral, $default, $prop]) {
            $v = $got->$prop;
            $this->assertTrue($integral ? is_int($v) : is_float($v), "$name type");
            $this->assertTrue($v >= $lo && $v <= $hi, "$name = $v outside [$lo, $hi]");
            $want = Limits::clamp(array_key_exists($name, $o) ? $o[$name] : $default, $lo, $hi);
            $this->assertEqualsWithDelta($want, $v, $integral ? 1 : 1e-9 * $want, "$name: want $want");
        }
        $this->assertSame(array_key_exists('type', $o) ? $o['type'] : 'cpu', $got->type);
        $this->assertSame(array_key_exists('etag', $o) && $o['etag'] !== '' ? $o['etag'] : null, $got->etag);
        $this->assertTrue($got->etag === null || self::sendable($got->etag), 'etag cannot be sent back');
    }

    /** @return array{0: int, 1: array<string, int>} cases run and outcomes seen */
    private function run_(int $seed, int $n, ?float $deadline): array
    {
        mt_srand($seed);
        $seen = ['invalid' => 0, 'valid' => 0, 'unknown' => 0];
        for ($i = 0; $i < $n && ($deadline === null || $i % 256 !== 0 || microtime(true) < $deadline); $i++) {
            [$body, $expect] = self::generate();
            try {
                $this->check($body, $expect);
            } catch (\Throwable $e) {
                $saved = '';
                if ($deadline !== null) {
                    $saved = __DIR__ . "/../../testdata/config_fuzz/crash-seed$seed-case$i";
                    file_put_contents($saved, $body);
                    $saved = " (body saved in $saved)";
                }
                $this->fail(sprintf("seed %d, case %d, expect %s%s: %s: %s; body %s", $seed, $i,
                    is_string($expect) ? $expect : 'valid', $saved, get_class($e), $e->getMessage(),
                    json_encode(mb_strcut($body, 0, 300), JSON_INVALID_UTF8_SUBSTITUTE)));
            }
            $seen[is_string($expect) ? $expect : 'valid']++;
        }
        return [$i, $seen];
    }

    public function testSeededHostileBodiesKeepTheInvariants(): void
    {
        $seconds = (float)(getenv('ROOTTRACE_CONFIG_FUZZ_SECONDS') ?: 0);
        if ($seconds > 0) {
            $seed = (int)(getenv('ROOTTRACE_CONFIG_FUZZ_SEED') ?: random_int(1, 2 ** 31));
            [$cases, $seen] = $this->run_($seed, PHP_INT_MAX, microtime(true) + $seconds);
            fwrite(STDERR, "config fuzz (php): seed $seed, $cases cases in $seconds s " . json_encode($seen) . "\n");
            $this->addToAssertionCount(1);
            return;
        }
        [, $seen] = $this->run_(20261130, self::CASES, null);
        foreach ($seen as $k => $count) { // a generator stuck on one outcome would prove little
            $this->assertGreaterThan(self::CASES / 20, $count, json_encode($seen));
        }
    }

    public function testSavedFuzzInputsKeepTheInvariants(): void
    {
        $files = array_values(array_diff(scandir(__DIR__ . '/../../testdata/config_fuzz'), ['.', '..', 'README.md']));
        $this->assertNotEmpty($files);
        foreach ($files as $f) {
            $this->check(file_get_contents(__DIR__ . '/../../testdata/config_fuzz/' . $f),
                str_starts_with($f, 'invalid-') ? 'invalid' : 'unknown');
        }
    }
}
