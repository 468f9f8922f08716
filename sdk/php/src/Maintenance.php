<?php
// Maintenance: the work one process at a time does under the spool's lock, after its
// response is sent: the config poll (wait=0), closing the spool interval into profiles,
// and uploading the queue with backoff (DESIGN §5, §7).
declare(strict_types=1);

namespace RootTrace;

final class Maintenance
{
    /**
     * @param ?Http $http null when the options did not allow a client (nothing to do)
     * @param array $params common query parameters (service, instance, runtime, ...)
     * @param ?string $fatal the status that overrides everything, or null
     * @param float $requestSampleRate the share of requests profiled (Agent), in (0, 1]: the
     *        status carries the interval / this, what a sample weighs
     */
    public function __construct(
        private readonly Spool $spool,
        private readonly Limits $limits,
        private readonly ?Http $http,
        private readonly array $params,
        private readonly ?string $fatal,
        private readonly float $requestSampleRate = 1.0,
    ) {
    }

    /**
     * One run: takes the lock without waiting (false when another process holds it), then
     * polls when due, closes the interval when due, uploads when due, and writes the state.
     * Ends within the maintenance budget. Never throws.
     * @param bool $closeNow end the profile being spooled now (flush), not when it is due
     */
    public function run(bool $closeNow = false): bool
    {
        if ($this->http === null || !$this->spool->tryLock()) {
            return false;
        }
        try {
            $deadline = microtime(true) + $this->limits->maintenanceBudgetS;
            $st = $this->spool->readState();
            $this->closeStale($st);
            // One instant decides what is due: were the upload's own clock read later, a
            // failure backoff ending in between would let it through without the poll that
            // ends the backoff first (its 2xx then resets the backoff: polls at full rate).
            $now = State::nowNs();
            if ($now >= $this->pollDue($st)) {
                $this->poll($st, $deadline);
                // Any poll that brought no config (network, deadline, 5xx, other answers)
                // backs the network off for every process; an invalid config does not.
                if (isset($st['poll_error'])) {
                    $this->fail($st);
                } else {
                    $this->succeed($st);
                }
            }
            $this->roll($st, $closeNow);
            $this->upload($st, $now, $deadline);
            $st['next_due'] = $this->nextDue($st);
            $this->spool->writeState($st);
            $this->spool->writeGate(State::gate($st, $this->limits), $st['next_due']);
        } catch (\Throwable $e) {
            // Never into the application; the next run starts from the state on disk.
        } finally {
            $this->spool->unlock();
        }
        return true;
    }

    /** The profile being spooled ends where the config went stale (fail closed). */
    private function closeStale(array &$st): void
    {
        $c = State::config($st, $this->limits);
        if (isset($st['interval_start']) && $c !== null) {
            $stale = State::staleAt($st, $c);
            if (State::nowNs() > $stale) {
                $this->close($st, $c, max((int)$st['interval_start'], $stale));
                self::endInterval($st);
            }
        }
    }

    /** Starts, continues or closes the interval by the current config. */
    private function roll(array &$st, bool $closeNow): void
    {
        $now = State::nowNs();
        $c = State::config($st, $this->limits);
        if ($this->fatal !== null || !State::allows($st, $c, $now)) {
            return;
        }
        if (!isset($st['interval_start'])) {
            $st['interval_start'] = $now;
        } elseif ($closeNow || $now - (int)$st['interval_start'] >= (int)($c->uploadIntervalS * 1e9)) {
            $this->close($st, $c, $now);
            $st['interval_start'] = $now; // back to back: the next profile starts here
        }
    }

    /** Queues the spooled stacks as the profile [interval_start, $end], counting its
     * samples (the state's `samples`, what Status reports). */
    private function close(array &$st, ?Config $c, int $end): void
    {
        $merged = $this->spool->claim($this->limits->maxStacksPerProfile);
        if (isset($merged['cpu']['readings'])) {
            [$ns, $st['witness']] = Witness::account($merged['cpu']['readings'],
                is_array($st['witness'] ?? null) ? $st['witness'] : [], hrtime(true),
                (int)($this->limits->witnessGapMaxS * 1e9), $this->limits->witnessProcessesMax);
            $merged['cpu']['os_cpu_ns'] = ($merged['cpu']['os_cpu_ns'] ?? 0) + $ns;
            unset($merged['cpu']['readings']);
        }
        if (isset($merged['wall'])) {
            $st['witness'] = []; // a wall part: the CPU between two readings is not all cpu's
        }
        $st['samples'] = (int)($st['samples'] ?? 0) + self::samples($merged);
        $weightNs = State::sampleWeightNs($c !== null ? $c->samplingIntervalUs
            : $this->limits->defaultSamplingIntervalUs, $this->requestSampleRate);
        $st['dropped'] = (int)($st['dropped'] ?? 0) + (new Uploader($this->spool, $this->limits))
            ->queueProfiles($merged, (int)$st['interval_start'], $end, State::profileType($c),
                $weightNs, $this->params);
    }

    /** No profile is being spooled: the witness's last readings are forgotten with it, so
     * that the CPU of a time not profiled never enters a profile's witness (Witness). */
    private static function endInterval(array &$st): void
    {
        $st['interval_start'] = null;
        $st['witness'] = [];
    }

    /**
     * The samples in what Spool::claim() returned: the sum of the stacks' events (excimer's
     * getEventCount(), the pprof samples/count values), "(trimmed)" included.
     * @param array<string, array{stacks?: array<string, array{0: int, 1: int}>}> $merged
     */
    private static function samples(array $merged): int
    {
        $n = 0;
        foreach ($merged as $p) {
            foreach ($p['stacks'] ?? [] as [$events]) {
                $n += (int)$events;
            }
        }
        return $n;
    }

    /** One config request (wait=0) and what its answer does to the state. */
    private function poll(array &$st, float $deadline): void
    {
        $now = State::nowNs();
        $st['polled_at'] = $now;
        $hadConfig = State::config($st, $this->limits) !== null;
        $etag = $hadConfig ? ($st['etag'] ?? null) : null;
        $st['status'] = State::status($st, $this->limits, $this->fatal, $now);
        $params = $this->params + ['status' => $st['status'],
                'interval_us' => $this->intervalUs($st), 'etag' => $etag, 'wait' => 0];
        $left = min($this->limits->pollDeadlineS, $deadline - microtime(true));
        try {
            try {
                $a = $this->http->request('GET', '/api/v1/sdk/config', $params, null, [], $left,
                    min($this->limits->connectTimeoutS, $left), $this->limits->configMaxBytes);
            } finally {
                // The next poll is a poll period after this one ended: a slow answer does not
                // make polls back to back.
                $st['polled_at'] = State::nowNs();
            }
        } catch (BodyTooLarge $e) {
            $this->invalid($st, $e->getMessage());
            return;
        } catch (\Throwable $e) {
            $st['poll_error'] = 'config poll failed: ' . $e->getMessage();
            return;
        }
        if ($a['status'] === 304) {
            if ($etag !== null) {
                $st['valid_at'] = State::nowNs();
                $st['poll_error'] = null;
            } else {
                $st['poll_error'] = '304 to a poll without etag';
            }
            return;
        }
        if ($a['status'] !== 200) {
            if ($a['status'] >= 400 && $a['status'] < 500) {
                // A refusal (key revoked, wrong scope, ...): forget the etag, so that once its
                // cause is fixed the next poll gets the full config (200), not a 304 that would
                // revive the config from before the refusal. A 5xx or a network error keeps it.
                $st['etag'] = null;
            }
            $m = json_decode($a['body'], true);
            $msg = is_array($m) && is_string($m['message'] ?? null) ? ': ' . $m['message'] : '';
            $st['poll_error'] = 'config poll answered ' . $a['status'] . $msg;
            return;
        }
        try {
            $c = Config::parse($a['body'], $this->limits, $a['headers']['etag'] ?? null);
        } catch (ConfigError $e) {
            $this->invalid($st, $e->getMessage());
            return;
        }
        $st = array_merge($st, ['config' => $c->toArray(), 'valid_at' => State::nowNs(),
            'etag' => $c->etag, 'refused' => false, 'invalid' => null, 'poll_error' => null,
            'poll_interval_s' => $c->pollIntervalS]);
        if (!$c->enabled && isset($st['interval_start'])) {
            $this->spool->discard(); // the server would refuse it (409)
            self::endInterval($st);
        }
    }

    /** An invalid config: profiling stops at once (what was spooled is still sent). */
    private function invalid(array &$st, string $why): void
    {
        $c = State::config($st, $this->limits);
        if (isset($st['interval_start'])) {
            $this->close($st, $c, State::nowNs());
            self::endInterval($st);
        }
        $st = array_merge($st, ['config' => null, 'etag' => null, 'invalid' => $why,
            'poll_error' => null]);
    }

    /** Uploads the queue when the backoff allows at $now (Unix ns: the run's instant, so
     * that a failed poll's backoff holds the upload too); a 409 stops profiling. */
    private function upload(array &$st, int $now, float $deadline): void
    {
        if ($this->spool->queued() === [] || $now < (int)($st['retry_at'] ?? 0)
            || $now < (int)($st['backoff_until'] ?? 0)) {
            return;
        }
        $r = (new Uploader($this->spool, $this->limits))->drain($this->http, $deadline);
        if ($r['retry'] && str_starts_with((string)$r['error'], 'upload failed:')) {
            $this->fail($st); // the network failed: no process tries again before the backoff
        } elseif ($r['sent'] > 0) {
            $this->succeed($st);
        }
        $st['sent'] = (int)($st['sent'] ?? 0) + $r['sent'];
        $st['dropped'] = (int)($st['dropped'] ?? 0) + $r['dropped'];
        if ($r['error'] !== null) {
            $st['upload_error'] = $r['error'];
        }
        if ($r['retry']) {
            $st['attempt'] = (int)($st['attempt'] ?? 0) + 1;
            $st['retry_at'] = State::nowNs() + (int)(1e9 * Uploader::backoff($st['attempt'],
                $this->limits->retryBackoffMinS, $this->limits->retryBackoffMaxS));
        } else {
            $st['attempt'] = 0;
            $st['retry_at'] = 0;
        }
        if ($r['refused']) {
            $this->spool->discard();
            $st = array_merge($st, ['refused' => true, 'etag' => null]);
            self::endInterval($st);
        }
    }

    /** When the next config poll is due (Unix ns): a poll period after the last one
     * ended, and not before the failure backoff ends. */
    private function pollDue(array $st): int
    {
        return max((int)($st['polled_at'] ?? 0) + State::pollPeriodNs($st, $this->limits),
            (int)($st['backoff_until'] ?? 0));
    }

    /** A failed poll or upload: no network for the poll period × 2^failures (at most
     * FAIL_BACKOFF_MAX_S), for every process sharing the spool (state.json). */
    private function fail(array &$st): void
    {
        $st['fails'] = $n = (int)($st['fails'] ?? 0) + 1;
        $s = min($this->limits->failBackoffMaxS,
            State::pollPeriodNs($st, $this->limits) / 1e9 * 2 ** min($n, 30));
        $st['backoff_until'] = State::nowNs() + (int)($s * 1e9);
    }

    /** The server answered: the failure backoff ends. */
    private function succeed(array &$st): void
    {
        $st['fails'] = 0;
        $st['backoff_until'] = 0;
    }

    /** When a request's end should run maintenance next (Unix ns). */
    private function nextDue(array $st): int
    {
        $due = [$this->pollDue($st)];
        $c = State::config($st, $this->limits);
        if (isset($st['interval_start']) && $c !== null) {
            $due[] = (int)$st['interval_start'] + (int)($c->uploadIntervalS * 1e9);
            $due[] = State::staleAt($st, $c) + 1;
        }
        if ($this->spool->queued() !== []) {
            $due[] = max((int)($st['retry_at'] ?? 0), (int)($st['backoff_until'] ?? 0));
        }
        return min($due);
    }

    /** The effective sampling interval (µs) the status carries. */
    private function intervalUs(array $st): int
    {
        return State::effectiveIntervalUs(State::config($st, $this->limits), $this->limits,
            $this->requestSampleRate);
    }
}
