<?php
// State: the control state cached in the spool directory (state.json), read by every
// request without a network call, written only by the process holding the maintenance
// lock. It fails closed (DESIGN §5).
declare(strict_types=1);

namespace RootTrace;

/**
 * Keys of the state array (times in Unix nanoseconds):
 *   config         last valid config (Config::toArray) or null after an invalid one
 *   valid_at       when a valid config (200 or 304) last arrived
 *   polled_at      when the last config request ended (one per poll period, all processes)
 *   fails, backoff_until  consecutive failed polls/uploads and until when (Unix ns) no
 *                  process uses the network (Maintenance::fail)
 *   etag           sent on the next poll
 *   refused        an upload got 409 since the last 200 config
 *   invalid        why the last config was invalid, or null
 *   poll_error     why the last poll gave no valid config, or null
 *   upload_error   the last upload failure, or null
 *   interval_start start of the profile being spooled, or null when not profiling
 *   retry_at, attempt  upload backoff
 *   next_due       when a request's end should run maintenance next
 *   sent, dropped  profiles uploaded and given up, since the spool was made
 *   samples        samples (excimer events) in the profiles made, since the spool was made
 *   status         the status last reported
 * A request's start reads only the gate (Spool::readGate), derived from this state.
 */
final class State
{
    /** Fail closed when no valid config has arrived for this many poll intervals. */
    public const STALE_POLLS = 3;

    /**
     * What a sample weighs, ns: the sampling interval $us (µs) divided by the request sample
     * rate. Requests are picked with probability $rate and sampled every interval of their
     * CPU inside, so a sample stands for interval / rate of the process's CPU
     * (docs/decisions.md, "PHP can profile a share of requests"). The profile's period.
     */
    public static function sampleWeightNs(int $us, float $rate): int
    {
        return (int)round($us * 1000 / max($rate, Limits::REQUEST_SAMPLE_RATE_MIN));
    }

    /** The effective sampling interval the status carries, µs: sampleWeightNs of the
     * config's interval (the default without one), rounded to µs. */
    public static function effectiveIntervalUs(?Config $c, Limits $lim, float $rate): int
    {
        $us = $c !== null ? $c->samplingIntervalUs : $lim->defaultSamplingIntervalUs;
        return (int)round(self::sampleWeightNs($us, $rate) / 1000);
    }

    /** Now, Unix nanoseconds (RequestStart::nowNs, where the rule lives). */
    public static function nowNs(): int
    {
        return RequestStart::nowNs();
    }

    /** The last valid config, re-validated, or null. */
    public static function config(array $st, Limits $lim): ?Config
    {
        return isset($st['config']) ? Config::fromArray($st['config'], $lim) : null;
    }

    /** When the config goes stale (Unix ns): valid_at plus three poll intervals. */
    public static function staleAt(array $st, Config $c): int
    {
        return (int)($st['valid_at'] ?? 0) + (int)(self::STALE_POLLS * $c->pollIntervalS * 1e9);
    }

    /** Profiling is on only under a fresh valid config that said enabled: true. */
    public static function allows(array $st, ?Config $c, int $now): bool
    {
        return $c !== null && $c->enabled && empty($st['refused']) && $now <= self::staleAt($st, $c);
    }

    /**
     * What a request needs to decide, precomputed by maintenance (Spool::writeGate) so that
     * the start of a request parses no JSON and no config: null when profiling is off, else until when (Unix ns) the
     * config allows it, the type, the sampling interval (µs) and the stack depth.
     * @return ?array{until: int, type: string, us: int, depth: int}
     */
    public static function gate(array $st, Limits $lim): ?array
    {
        $c = self::config($st, $lim);
        if ($c === null || !$c->enabled || !empty($st['refused'])) {
            return null;
        }
        return ['until' => self::staleAt($st, $c), 'type' => self::profileType($c),
            'us' => $c->samplingIntervalUs, 'depth' => $c->maxStackDepth];
    }

    /** Time between config requests (ns): the poll interval, at most the cache TTL. */
    public static function pollPeriodNs(array $st, Limits $lim): int
    {
        $poll = $lim->defaultPollIntervalS;
        $c = $st['config'] ?? null;
        if (is_array($c) && (is_int($c['poll_interval_s'] ?? null) || is_float($c['poll_interval_s'] ?? null))) {
            $poll = (float)$c['poll_interval_s'];
        } elseif (isset($st['poll_interval_s']) && is_numeric($st['poll_interval_s'])) {
            $poll = (float)$st['poll_interval_s']; // kept across an invalid config
        }
        $poll = Limits::clamp($poll, $lim->pollIntervalMinS, $lim->pollIntervalMaxS);
        return (int)(min($poll, $lim->configTtlMaxS) * 1e9);
    }

    /** The type excimer produces for a config: wall for "wall", cpu for anything else. */
    public static function profileType(?Config $c): string
    {
        return $c !== null && $c->type === 'wall' ? 'wall' : 'cpu';
    }

    /**
     * The status string for this state (DESIGN §5 grammar).
     * @param ?string $fatal a status that overrides everything (unavailable, bad options)
     */
    public static function status(array $st, Limits $lim, ?string $fatal, int $now): string
    {
        if ($fatal !== null) {
            return $fatal;
        }
        $c = self::config($st, $lim);
        $pollError = isset($st['poll_error']) ? ' (' . $st['poll_error'] . ')' : '';
        if ($c === null) {
            if (!empty($st['invalid'])) {
                return Status::format(Status::ERROR, 'invalid config: ' . $st['invalid']);
            }
            return Status::format(Status::WAITING, 'no config yet' . $pollError);
        }
        if (!empty($st['refused'])) {
            return Status::format(Status::DISABLED,
                'upload refused (409), waiting for a config that enables profiling');
        }
        if (!$c->enabled) {
            return Status::DISABLED;
        }
        if (!self::allows($st, $c, $now)) {
            if ($pollError === '') {
                // No process ran a poll (no requests): not a failure of the control plane.
                return Status::format(Status::WAITING, 'config older than ' . self::STALE_POLLS
                    . ' poll intervals, refreshing');
            }
            return Status::format(Status::ERROR, 'no valid config for ' . self::STALE_POLLS
                . ' poll intervals' . $pollError);
        }
        $type = self::profileType($c);
        if ($c->type !== $type) {
            return Status::format(Status::PROFILING, $c->type . ' not supported, sending ' . $type);
        }
        return Status::PROFILING;
    }
}
