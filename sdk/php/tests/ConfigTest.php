<?php
// Config validation and clamping (DESIGN §5): every field's bounds, and every way a config
// is invalid as a whole.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Config;
use RootTrace\ConfigError;
use RootTrace\Limits;

final class ConfigTest extends TestCase
{
    private static function body(array $kw = []): string
    {
        return json_encode($kw + ['enabled' => true, 'type' => 'cpu', 'sampling_interval_us' => 20000,
                'upload_interval_s' => 60, 'max_stack_depth' => 128, 'poll_interval_s' => 10,
                'etag' => 'e1']);
    }

    /** field, value sent, value used */
    public static function clampTable(): array
    {
        return [
            ['sampling_interval_us', 0, 10_000], ['sampling_interval_us', -20000, 10_000],
            ['sampling_interval_us', 9_999, 10_000], ['sampling_interval_us', 10_000, 10_000],
            ['sampling_interval_us', 25_000, 25_000], ['sampling_interval_us', 1e12, 1_000_000],
            ['sampling_interval_us', 1_000_001, 1_000_000], ['sampling_interval_us', 12345.6, 12346],
            ['upload_interval_s', 0, 10.0], ['upload_interval_s', -1, 10.0],
            ['upload_interval_s', 9.5, 10.0], ['upload_interval_s', 12.5, 12.5],
            ['upload_interval_s', 300, 300.0], ['upload_interval_s', 1e12, 300.0],
            ['max_stack_depth', 0, 1], ['max_stack_depth', -7, 1], ['max_stack_depth', 1, 1],
            ['max_stack_depth', 100, 100], ['max_stack_depth', 257, 256],
            ['max_stack_depth', 1e12, 256],
            ['poll_interval_s', 0, 1.0], ['poll_interval_s', 0.2, 1.0], ['poll_interval_s', -3, 1.0],
            ['poll_interval_s', 10, 10.0], ['poll_interval_s', 600, 600.0],
            ['poll_interval_s', 1e9, 600.0],
        ];
    }

    /** @dataProvider clampTable */
    public function testEveryBoundIsClamped(string $field, int|float $sent, int|float $used): void
    {
        $c = Config::parse(self::body([$field => $sent]), new Limits());
        $prop = ['sampling_interval_us' => 'samplingIntervalUs', 'upload_interval_s' => 'uploadIntervalS',
            'max_stack_depth' => 'maxStackDepth', 'poll_interval_s' => 'pollIntervalS'][$field];
        $this->assertSame($used, $c->$prop);
        $this->assertTrue($c->enabled);
    }

    public function testAbsentFieldsTakeThePhpDefaults(): void
    {
        $c = Config::parse('{"enabled": false}', new Limits());
        $this->assertEquals([false, 'cpu', 10_000, 60.0, 256, 10.0, null],
            [$c->enabled, $c->type, $c->samplingIntervalUs, $c->uploadIntervalS, $c->maxStackDepth,
                $c->pollIntervalS, $c->etag]);
    }

    public static function invalidBodies(): array
    {
        $cases = [
            'nan' => str_replace('20000', 'NaN', self::body()),
            'infinity' => str_replace('20000', 'Infinity', self::body()),
            'overflow to inf' => str_replace('20000', '1e400', self::body()),
            'malformed' => '{"enabled": true,', 'empty' => '', 'not an object' => '[1, 2]',
            'scalar' => '42', 'enabled missing' => '{"type": "cpu"}',
            'enabled string' => self::body(['enabled' => 'true']),
            'enabled int' => self::body(['enabled' => 1]),
            'enabled null' => self::body(['enabled' => null]),
            'type int' => self::body(['type' => 1]),
            'etag int' => self::body(['etag' => 5]),
            'type null (fuzzing)' => self::body(['type' => null]),
            'etag null (fuzzing)' => self::body(['etag' => null]),
            // an etag the server would refuse in every later poll's query (414 past ~32 KB)
            'etag 257 characters' => self::body(['etag' => str_repeat('a', 257)]),
            'etag with a space' => self::body(['etag' => 'a b']), 'etag not ASCII' => self::body(['etag' => 'café']),
            'too large' => self::body(['pad' => str_repeat('a', 70_000)]),
            'bad utf-8' => "{\"enabled\": true, \"type\": \"\xff\"}",
        ];
        foreach (['sampling_interval_us', 'upload_interval_s', 'max_stack_depth', 'poll_interval_s'] as $f) {
            foreach (['string' => '1', 'bool' => true, 'null' => null, 'array' => [1], 'object' => ['a' => 1]] as $k => $v) {
                $cases["$f $k"] = self::body([$f => $v]);
            }
        }
        return array_map(static fn($b) => [$b], $cases);
    }

    /** @dataProvider invalidBodies */
    public function testAWrongTypeNanOrMalformedJsonInvalidatesTheWholeConfig(string $body): void
    {
        $this->expectException(ConfigError::class);
        Config::parse($body, new Limits());
    }

    public function testATypeItCannotProduceIsNotMalformed(): void
    {
        $this->assertSame('heap', Config::parse(self::body(['type' => 'heap']), new Limits())->type);
    }

    public function testEtagFromTheBodyElseFromTheHeader(): void
    {
        $lim = new Limits();
        $this->assertSame('e1', Config::parse(self::body(), $lim, '"other"')->etag);
        $this->assertSame('abc', Config::parse('{"enabled": true}', $lim, 'W/"abc"')->etag);
        $this->assertSame('abc', Config::parse('{"enabled": true}', $lim, '"abc"')->etag);
        $this->assertNull(Config::parse('{"enabled": true}', $lim, '"a b"')->etag); // malformed: ignored
        $this->assertSame(str_repeat('f', 256), Config::parse(self::body(['etag' => str_repeat('f', 256)]), $lim)->etag);
    }

    public function testRoundTripThroughTheCachedState(): void
    {
        $lim = new Limits();
        $c = Config::parse(self::body(['type' => 'wall', 'upload_interval_s' => 12.5]), $lim);
        $this->assertEquals($c, Config::fromArray($c->toArray(), $lim));
        $c = Config::parse('{"enabled": true}', $lim); // no etag: null in the cached state
        $this->assertNull($c->etag);
        $this->assertEquals($c, Config::fromArray($c->toArray(), $lim));
        $this->assertNull(Config::fromArray(['enabled' => 'yes'], $lim));
        $this->assertNull(Config::fromArray('garbage', $lim));
    }
}
