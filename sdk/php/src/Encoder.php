<?php
// Encoder: the canonical pprof encoding of sdk/testdata/README.md (a small protobuf writer
// of our own, no dependencies), and gzip for upload.
declare(strict_types=1);

namespace RootTrace;

final class Encoder
{
    /**
     * The uncompressed pprof bytes of a profile.
     * @param string $type "cpu" or "wall" (values in nanoseconds)
     * @param int $timeNanos start, Unix nanoseconds
     * @param int $durationNanos length, nanoseconds
     * @param int $period sampling interval, nanoseconds
     * @param list<array{0: list<string>, 1: int, 2: int}> $samples in order: frames root
     *        first, sample count, value in nanoseconds
     * Location and function ids are 1, 2, ... in order of first appearance walking the
     * samples in order, each stack leaf first; a location and its function share the id.
     */
    public static function encode(string $type, int $timeNanos, int $durationNanos, int $period,
                                  array $samples): string
    {
        $strings = [];
        $index = [];
        $s = static function (string $x) use (&$strings, &$index): int {
            if (!isset($index[$x])) {
                $index[$x] = count($strings);
                $strings[] = $x;
            }
            return $index[$x];
        };
        foreach (['', 'samples', 'count', $type, 'nanoseconds'] as $x) {
            $s($x);
        }
        $out = self::ld(1, self::pair($s('samples'), $s('count')))
            . self::ld(1, self::pair($s($type), $s('nanoseconds')));
        $frameId = [];
        $frames = [];
        foreach ($samples as [$stack, $count, $value]) {
            $ids = '';
            for ($i = count($stack) - 1; $i >= 0; $i--) {
                $f = (string)$stack[$i];
                if (!isset($frameId[$f])) {
                    $frames[] = $f;
                    $frameId[$f] = count($frames);
                }
                $ids .= self::varint($frameId[$f]);
            }
            $body = ($ids === '' ? '' : self::ld(1, $ids))
                . self::ld(2, self::varint($count) . self::varint($value));
            $out .= self::ld(2, $body);
        }
        $n = count($frames);
        for ($i = 1; $i <= $n; $i++) {
            $out .= self::ld(4, self::num(1, $i) . self::ld(4, self::num(1, $i)));
        }
        foreach ($frames as $i => $f) {
            $out .= self::ld(5, self::num(1, $i + 1) . self::num(2, $s($f)));
        }
        foreach ($strings as $x) {
            $out .= self::ld(6, $x);
        }
        return $out . self::num(9, $timeNanos) . self::num(10, $durationNanos)
            . self::ld(11, self::pair($s($type), $s('nanoseconds'))) . self::num(12, $period);
    }

    /** gzip of the encoded profile (level 6); null when zlib is not loaded. */
    public static function compress(string $raw): ?string
    {
        if (!function_exists('gzencode')) {
            return null;
        }
        $gz = @gzencode($raw, 6, FORCE_GZIP);
        return $gz === false ? null : $gz;
    }

    /** A base-128 varint; a negative int64 is written as its 64-bit two's complement. */
    public static function varint(int $n): string
    {
        $out = '';
        while ($n < 0 || $n > 0x7F) {
            $out .= chr(($n & 0x7F) | 0x80);
            $n = ($n >> 7) & 0x01FFFFFFFFFFFFFF; // logical shift
        }
        return $out . chr($n);
    }

    /** A varint field, omitted when 0 (proto3). */
    private static function num(int $field, int $v): string
    {
        return $v === 0 ? '' : self::varint($field << 3) . self::varint($v);
    }

    /** A length-delimited field. */
    private static function ld(int $field, string $payload): string
    {
        return self::varint($field << 3 | 2) . self::varint(strlen($payload)) . $payload;
    }

    /** A ValueType: type (1) and unit (2) as string indexes. */
    private static function pair(int $a, int $b): string
    {
        return self::num(1, $a) . self::num(2, $b);
    }
}
