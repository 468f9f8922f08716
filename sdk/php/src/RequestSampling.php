<?php
// Whether a request is in the profiled share (request_sample_rate: docs/sdk/php.md, step 0 of
// "How a request, the spool and the upload fit together"). Apart from Agent so that a request
// left out loads this class, Limits and Profiler and nothing more: a php-fpm worker loads the
// classes a request uses in every request (docs/performance-sdk.md, *PHP under a real
// php-fpm*).
declare(strict_types=1);

namespace RootTrace;

final class RequestSampling
{
    /**
     * Draws whether a request with these options is in the profiled share: true with
     * probability request_sample_rate (always with a rate of 1 or an unusable option, whose
     * error status must reach the server). What a request left out pays: this draw, a few
     * microseconds; Profiler::start builds an Agent only when it is true. Never throws.
     */
    public static function pick(array $options, ?Limits $limits = null): bool
    {
        // The draw is the system's CSPRNG (one getrandom call), not mt_rand, whose sequence
        // an application may have seeded. NAN (an unusable option) and 1 pick.
        $rate = self::rate($options, $limits);
        try {
            return !($rate < 1.0) || random_int(0, 0x7fffffff) < $rate * 2147483648.0;
        } catch (\Throwable $e) {
            return true;
        }
    }

    /** The request sample rate of these options: the option (a number or a numeric
     * string, as getenv gives) clamped to [min, 1], the default without it; NAN when it is
     * not a number (an error status then stops profiling: Agent). Read by every request. */
    public static function rate(array $o, ?Limits $lim): float
    {
        $v = $o['request_sample_rate'] ?? null;
        if ($v === null) {
            return $lim !== null ? $lim->defaultRequestSampleRate : Limits::DEFAULT_REQUEST_SAMPLE_RATE;
        }
        if (!is_int($v) && !is_float($v)) {
            if (!is_string($v) || !is_numeric($v)) {
                return NAN;
            }
            $v = (float)$v;
        }
        $min = $lim !== null ? $lim->requestSampleRateMin : Limits::REQUEST_SAMPLE_RATE_MIN;
        return $v < $min ? $min : ($v > 1 ? 1.0 : (float)$v); // NAN stays NAN
    }
}
