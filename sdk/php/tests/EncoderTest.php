<?php
// The pprof encoder against the wire test vectors (sdk/testdata/vectors.json): byte-exact.
declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use RootTrace\Encoder;

final class EncoderTest extends TestCase
{
    public static function vectors(): array
    {
        $d = json_decode(file_get_contents(__DIR__ . '/../../testdata/vectors.json'), true);
        $out = [];
        foreach ($d['vectors'] as $v) {
            $out[$v['name']] = [$v];
        }
        return $out;
    }

    /** @dataProvider vectors */
    public function testEncoderReproducesTheVectorByteExact(array $v): void
    {
        $samples = array_map(static fn($s) => [$s['stack'], $s['count'], $s['value_ns']], $v['samples']);
        $raw = Encoder::encode($v['type'], $v['time_nanos'], $v['duration_nanos'], $v['period'], $samples);
        $this->assertSame($v['pprof_hex'], bin2hex($raw));
        $gz = Encoder::compress($raw);
        $this->assertSame("\x1f\x8b", substr($gz, 0, 2));
        $this->assertSame($raw, gzdecode($gz));
    }

    public function testVectorsCoverEveryCase(): void
    {
        $this->assertGreaterThanOrEqual(4, count(self::vectors()));
    }

    public function testVarint(): void
    {
        $this->assertSame('00', bin2hex(Encoder::varint(0)));
        $this->assertSame('7f', bin2hex(Encoder::varint(127)));
        $this->assertSame('8001', bin2hex(Encoder::varint(128)));
        $this->assertSame('ffffffffffffffffff01', bin2hex(Encoder::varint(-1)));
        $this->assertSame('ffffffffffffffff7f', bin2hex(Encoder::varint(PHP_INT_MAX)));
    }
}
