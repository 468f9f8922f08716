<?php
// Config: validation and clamping of what the control plane sends (DESIGN.md §5). A wrong
// type, NaN or malformed JSON makes the whole config invalid (ConfigError).
declare(strict_types=1);

namespace RootTrace;

final class Config
{
    /**
     * A valid, clamped config.
     * @param bool $enabled profiling on for the service
     * @param string $type the type the operator asked for ("cpu", "wall", anything)
     * @param int $samplingIntervalUs sampling interval, microseconds, clamped
     * @param float $uploadIntervalS upload interval (profile length), seconds, clamped
     * @param int $maxStackDepth frames kept per stack (leaf side), clamped
     * @param float $pollIntervalS poll interval, seconds, clamped
     * @param ?string $etag the config's version, sent back on the next poll
     */
    public function __construct(
        public readonly bool $enabled,
        public readonly string $type,
        public readonly int $samplingIntervalUs,
        public readonly float $uploadIntervalS,
        public readonly int $maxStackDepth,
        public readonly float $pollIntervalS,
        public readonly ?string $etag,
    ) {
    }

    /**
     * Validates and clamps a config answer (a JSON object body). Out-of-range numbers are
     * clamped to the nearest bound; anything else wrong throws ConfigError.
     * @param ?string $headerEtag the ETag header, used when the body has no "etag"
     */
    public static function parse(string $body, Limits $lim, ?string $headerEtag = null): self
    {
        if (strlen($body) > $lim->configMaxBytes) {
            throw new ConfigError('config larger than ' . $lim->configMaxBytes . ' bytes');
        }
        try {
            $o = json_decode($body, true, 32, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new ConfigError('malformed JSON: ' . substr($e->getMessage(), 0, 80));
        }
        return self::fromDecoded($o, $lim, $headerEtag);
    }

    /** Parse's checks on an already decoded JSON value; ConfigError when invalid. */
    private static function fromDecoded(mixed $o, Limits $lim, ?string $headerEtag): self
    {
        if (!is_array($o) || ($o !== [] && array_is_list($o))) {
            throw new ConfigError('config is not a JSON object');
        }
        if (!array_key_exists('enabled', $o)) {
            throw new ConfigError('enabled is missing');
        }
        if (!is_bool($o['enabled'])) {
            throw new ConfigError('enabled is not a boolean');
        }
        // A present field of the wrong type, null included, is invalid (`??` would take
        // null for absent: found by fuzzing).
        $type = array_key_exists('type', $o) ? $o['type'] : 'cpu';
        if (!is_string($type)) {
            throw new ConfigError('type is not a string');
        }
        $header = self::unquoteEtag($headerEtag);
        $etag = array_key_exists('etag', $o) ? $o['etag']
            : ($header !== null && self::validEtag($header) ? $header : null);
        if (array_key_exists('etag', $o) && !is_string($etag)) {
            throw new ConfigError('etag is not a string');
        }
        if ($etag !== null && !self::validEtag($etag)) {
            throw new ConfigError('etag is not at most ' . self::ETAG_MAX_LEN . ' printable ASCII characters');
        }
        $interval = self::number($o, 'sampling_interval_us', $lim->defaultSamplingIntervalUs,
            $lim->samplingIntervalMinUs, $lim->samplingIntervalMaxUs);
        $upload = self::number($o, 'upload_interval_s', $lim->defaultUploadIntervalS,
            $lim->uploadIntervalMinS, $lim->uploadIntervalMaxS);
        $depth = self::number($o, 'max_stack_depth', $lim->stackDepthMax,
            $lim->stackDepthMin, $lim->stackDepthMax);
        $poll = self::number($o, 'poll_interval_s', $lim->defaultPollIntervalS,
            $lim->pollIntervalMinS, $lim->pollIntervalMaxS);
        return new self($o['enabled'], $type, (int)round($interval), (float)$upload,
            (int)$depth, (float)$poll, $etag === '' ? null : $etag);
    }

    /** The field clamped to [$lo, $hi]; the default when absent; ConfigError on a wrong type. */
    private static function number(array $o, string $key, int|float $default, int|float $lo,
                                   int|float $hi): int|float
    {
        if (!array_key_exists($key, $o)) {
            return Limits::clamp($default, $lo, $hi);
        }
        $v = $o[$key];
        if (!is_int($v) && !is_float($v)) {
            throw new ConfigError($key . ' is not a number');
        }
        if (is_float($v) && !is_finite($v)) {
            throw new ConfigError($key . ' is not finite');
        }
        return Limits::clamp($v, $lo, $hi);
    }

    /**
     * An etag is sent back in every poll's query: at most this many characters, each printable
     * ASCII but '"' (RFC 9110's etagc without obs-text). The server's are 64 hex digits; a
     * longer one (up to the 64 KiB body) makes the server refuse every later poll with 414,
     * and the SDK would stay off for good.
     */
    public const ETAG_MAX_LEN = 256;

    /** True when $v can be sent back as a poll's etag (see ETAG_MAX_LEN); '' is no etag. */
    public static function validEtag(string $v): bool
    {
        return strlen($v) <= self::ETAG_MAX_LEN && preg_match('/^[\x21\x23-\x7e]*$/D', $v) === 1;
    }

    /** An ETag header's opaque value: `W/"abc"` and `"abc"` give `abc`. */
    public static function unquoteEtag(?string $v): ?string
    {
        if ($v === null) {
            return null;
        }
        $v = trim($v);
        if (str_starts_with($v, 'W/')) {
            $v = substr($v, 2);
        }
        if (strlen($v) >= 2 && $v[0] === '"' && $v[-1] === '"') {
            $v = substr($v, 1, -1);
        }
        return $v;
    }

    /** The config as a plain array (for the cached state file). */
    public function toArray(): array
    {
        return ['enabled' => $this->enabled, 'type' => $this->type,
            'sampling_interval_us' => $this->samplingIntervalUs,
            'upload_interval_s' => $this->uploadIntervalS, 'max_stack_depth' => $this->maxStackDepth,
            'poll_interval_s' => $this->pollIntervalS, 'etag' => $this->etag];
    }

    /** The inverse of toArray() (re-validated and re-clamped); null if the array is unusable. */
    public static function fromArray(mixed $a, Limits $lim): ?self
    {
        if (!is_array($a)) {
            return null;
        }
        if (array_key_exists('etag', $a) && $a['etag'] === null) {
            unset($a['etag']); // toArray() writes a config without etag so
        }
        try {
            return self::fromDecoded($a, $lim, null);
        } catch (\Throwable) {
            return null;
        }
    }
}
