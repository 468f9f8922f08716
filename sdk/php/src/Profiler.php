<?php
// The public entry point: RootTrace\Profiler::start() at the top of each request or script
// (an auto_prepend_file under php-fpm). Nothing here throws or emits a warning.
declare(strict_types=1);

namespace RootTrace;

final class Profiler
{
    private static ?Agent $agent = null;
    /** The options of a request left out of the profiled share (RequestSampling::pick): its
     * Agent is built only if status(), info() or flush() asks. */
    private static ?array $leftOut = null;
    /** The options, what they resolve to and the gate read, of a picked request found idle
     * at its start (RequestStart::idle): its Agent is built only if a method asks. */
    private static ?array $idle = null;
    /** The request was idle at its start and has not begun since: checkpoint() begins it. */
    private static bool $unbegun = false;

    /**
     * Starts the SDK for this request or CLI script: profiles it with excimer while the
     * server's config (cached in the spool directory, refreshed at most every 10 s) says
     * profiling is on, spools its stacks at the end, and uploads from one process at a
     * time after the response is sent. A second call does nothing.
     * @param array{server?: string, key?: string, service?: string, version?: string,
     *        instance?: string, spool_dir?: string, root?: string,
     *        request_sample_rate?: int|float} $options
     *        server: base URL; key: an ingest key; service: the service name; version: its
     *        release; instance: default `<hostname>-<fpm pool or cli>`; spool_dir: default
     *        under sys_get_temp_dir(); root: the app root frame names are relative to
     *        (default: the nearest directory holding composer.json above the entry script).
     *        server, key, service and version default to ROOTTRACE_SERVER, ROOTTRACE_KEY,
     *        ROOTTRACE_SERVICE and ROOTTRACE_VERSION; request_sample_rate: the share of
     *        requests profiled, 0.01-1 (default 1: every request); a request left out
     *        costs one random draw and nothing else, and runs no maintenance
     *        (RequestSampling::pick; docs/sdk/php.md, step 0, says what a rate below 1
     *        costs).
     * A picked request whose gate (the spool directory's, cached by maintenance) has
     * profiling off and maintenance not yet due is idle (RequestStart::idle): it resolves
     * its names, reads the gate and does nothing else, not even register its end. What
     * an installed SDK costs while its service's profiling is off is this.
     */
    public static function start(array $options = []): void
    {
        try {
            if (self::$agent !== null || self::$leftOut !== null || self::$idle !== null) {
                return;
            }
            if (!RequestSampling::pick($options)) {
                self::$leftOut = $options; // nothing else read, started or registered
                return;
            }
            // The application's error handler sees nothing of the SDK (a handler that throws
            // on warnings would otherwise stop it at a missing gate), as in Agent::guard.
            set_error_handler(static fn() => true);
            try {
                $r = RequestStart::resolve($options);
                $gate = RequestStart::readGate($r['dir']);
                $idle = RequestStart::idle($gate, RequestStart::nowNs());
            } finally {
                restore_error_handler();
            }
            if ($idle) {
                self::$idle = [$options, $r, $gate];
                self::$unbegun = true;
                return;
            }
            self::$agent = new Agent($options, null, true, $r, $gate);
            self::$agent->begin();
        } catch (\Throwable $e) {
            // Never into the application.
        }
    }

    /** Ends this request's profile now (spooled; uploads when due, also for a request idle
     * at its start, as its gate said). A later checkpoint() does not begin it. Never throws. */
    public static function stop(): void
    {
        self::$unbegun = false;
        try {
            if (self::$agent !== null || self::$idle !== null) { // not for one left out
                self::agent()?->end();
            }
        } catch (\Throwable $e) {
            // Never into the application.
        }
    }

    /** Ends this request's profile and uploads everything spooled now, waiting at most
     * 5 s (e.g. at the end of a CLI script that must not leave data behind). Never throws. */
    public static function flush(): void
    {
        self::$unbegun = false;
        try {
            self::agent()?->flush();
        } catch (\Throwable $e) {
            // Never into the application.
        }
    }

    /** This request's Agent; for a request left out, one built now that does not profile;
     * for an idle one, one built now and not begun (checkpoint() begins it). */
    private static function agent(): ?Agent
    {
        if (self::$agent === null && self::$leftOut !== null) {
            self::$agent = new Agent(self::$leftOut, null, false);
            self::$leftOut = null;
        } elseif (self::$agent === null && self::$idle !== null) {
            self::$agent = new Agent(self::$idle[0], null, true, self::$idle[1], self::$idle[2]);
            self::$idle = null;
        }
        return self::$agent;
    }

    /** For long-running CLI workers: spools the stacks so far and follows the config
     * (call between jobs; when maintenance is due it pauses profiling and may take up to
     * 2 s for a poll, 5 s with uploads). A script idle at its start begins here: its end
     * is registered and it profiles once the config allows. Never throws. */
    public static function checkpoint(): void
    {
        try {
            if (self::$unbegun) {
                self::$unbegun = false;
                self::agent()?->begin();
            }
            self::$agent?->checkpoint();
        } catch (\Throwable $e) {
            // Never into the application.
        }
    }

    /**
     * The SDK's status now, from the cached state (no network; never throws): `->status` is
     * `<state>[: <reason>]` as sent to the server (DESIGN §5), e.g. `profiling`, `disabled`,
     * `unavailable: ext-excimer not loaded`; `->state`, `->reason`, `->intervalUs` (µs),
     * the names, the spool's counters and `->lastError` beside it; `json_encode()` gives
     * them in snake_case. Before start: `disabled: not started` (or `unavailable: ...`
     * without excimer), null names, zero counters. Up to 0.1.0 this returned the string:
     * the object still converts to it (`echo`, `.`, `(string)`) for one release, but
     * `=== 'profiling'` must become `->state === 'profiling'`.
     */
    public static function status(): Status
    {
        $agent = self::agent();
        if ($agent !== null) {
            return $agent->status();
        }
        return new Status(extension_loaded('excimer')
            ? Status::format(Status::DISABLED, 'not started')
            : Status::format(Status::UNAVAILABLE, 'ext-excimer not loaded'));
    }

    /**
     * Status, effective sampling interval (µs), type, names, spool and upload counters, as
     * an array (Agent::info(); `['status' => string]` alone before start). Never throws.
     * @return array<string, mixed>
     */
    public static function info(): array
    {
        try {
            return self::agent()?->info() ?? ['status' => self::status()->status];
        } catch (\Throwable $e) {
            return ['status' => self::status()->status];
        }
    }
}
