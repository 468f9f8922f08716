<?php
// Status: the `<state>[: <reason>]` string every config poll carries and
// Profiler::status() shows (DESIGN.md §5, docs/control-plane.md).
declare(strict_types=1);

namespace RootTrace;

final class Status
{
    public const PROFILING = 'profiling';
    public const DISABLED = 'disabled';
    public const WAITING = 'waiting';
    public const UNAVAILABLE = 'unavailable';
    public const DECLINED = 'declined';
    public const ERROR = 'error';
    public const STATES = [self::PROFILING, self::DISABLED, self::WAITING, self::UNAVAILABLE,
        self::DECLINED, self::ERROR];
    /** A reason is at most this many printable ASCII characters. */
    public const REASON_MAX = 200;
    /** The grammar, for tests and for anyone checking a status string. */
    public const PATTERN = '/^(profiling|disabled|waiting|unavailable|declined|error)(: [\x20-\x7e]{1,200})?$/D';

    /** `state` or `state: reason`, always within the grammar (unknown states become error). */
    public static function format(string $state, ?string $reason = null): string
    {
        if (!in_array($state, self::STATES, true)) {
            $state = self::ERROR;
        }
        if ($reason === null) {
            return $state;
        }
        $r = rtrim(substr((string)preg_replace('/[^\x20-\x7e]/', '?', trim($reason)), 0,
            self::REASON_MAX));
        return $r === '' ? $state : $state . ': ' . $r;
    }

    /** The state part of a status string. */
    public static function state(string $status): string
    {
        return explode(':', $status, 2)[0];
    }
}
