<?php
// Frames: excimer traces to `module.function` frame names (DESIGN.md §3) and the
// per-request aggregate of folded stacks the spool stores.
declare(strict_types=1);

namespace RootTrace;

final class Frames
{
    /** The synthetic frame that stands for stacks beyond the per-profile stack bound. */
    public const TRIMMED = '(trimmed)';
    /** Folded stacks join frames with this; it is replaced inside names. */
    public const SEP = ';';

    /** @var array<string, string> file path => name relative to the root (memo) */
    private array $files = [];

    /** @param string $root the app root (no trailing slash); '' when unknown */
    public function __construct(private readonly string $root)
    {
    }

    /**
     * The app root for an entry script: the nearest directory above it holding
     * composer.json, else the script's own directory. '' when there is no script.
     */
    public static function findRoot(string $script): string
    {
        if ($script === '') {
            return '';
        }
        $real = @realpath($script);
        $dir = dirname($real === false ? $script : $real);
        for ($d = $dir, $i = 0; $i < 32; $i++) {
            if (@is_file($d . '/composer.json')) {
                return rtrim($d, '/');
            }
            $up = dirname($d);
            if ($up === $d) {
                break;
            }
            $d = $up;
        }
        return rtrim($dir, '/');
    }

    /** A file path relative to the root; files outside it keep their absolute path. */
    public function file(string $path): string
    {
        if (isset($this->files[$path])) {
            return $this->files[$path];
        }
        $rel = $path;
        if ($this->root !== '' && str_starts_with($path, $this->root . '/')) {
            $rel = substr($path, strlen($this->root) + 1);
        }
        return $this->files[$path] = $rel;
    }

    /**
     * One frame of an ExcimerLogEntry::getTrace(): `Ns\Cls::method`, `Ns\Cls::{closure}`,
     * `<relative file>.<function>` (namespaced functions and closures as excimer names
     * them), or for code outside any function (the script's `{main}`, an included file's
     * body) the relative file path. No line numbers; ';' becomes ':', tabs and line ends
     * spaces.
     * @param array{file?: string, function?: string, class?: string} $f
     */
    public function name(array $f): string
    {
        $fn = $f['function'] ?? null;
        if (isset($f['class']) && $fn !== null) {
            $p = strrpos($fn, '\\');
            if ($p !== false && str_ends_with($fn, '{closure}')) {
                $fn = substr($fn, $p + 1); // the class already carries the namespace
            }
            $n = $f['class'] . '::' . $fn;
        } else {
            $file = isset($f['file']) ? $this->file($f['file']) : '[internal]';
            $n = $fn === null ? $file : $file . '.' . $fn;
        }
        // ';' separates folded frames; tabs and line ends separate the spool's fields.
        return strtr($n, [self::SEP => ':', "\t" => ' ', "\n" => ' ', "\r" => ' ']);
    }

    /**
     * The folded stack (root first, joined by ';') of a trace (leaf first), keeping at most
     * $depth frames on the leaf side.
     */
    public function folded(array $trace, int $depth): string
    {
        if (count($trace) > $depth) {
            $trace = array_slice($trace, 0, $depth);
        }
        $names = [];
        for ($i = count($trace) - 1; $i >= 0; $i--) {
            $names[] = $this->name($trace[$i]);
        }
        return implode(self::SEP, $names);
    }

    /**
     * Whether a trace (leaf first) is the SDK's own work: a frame of the RootTrace\
     * namespace (class or function). Excimer is stopped around maintenance; this drops what
     * falls due while the SDK itself runs (spooling, a tick at start() or stop()).
     */
    public static function sdkOwn(array $trace): bool
    {
        foreach ($trace as $f) {
            $name = isset($f['class']) ? $f['class'] : ($f['function'] ?? '');
            if (is_string($name) && str_starts_with($name, 'RootTrace\\')) {
                return true;
            }
        }
        return false;
    }

    /**
     * Aggregates an excimer log: folded stack => [events, value_ns], each entry weighted
     * by its event count (value = events × period). Entries are never read through
     * formatCollapsed() (excimer 1.0.4 prefixes lines with ';').
     * @param iterable $log ExcimerLog (or any iterable of objects with getTrace() and
     *        getEventCount())
     * @param int $periodNs sampling interval, nanoseconds
     * @return array<string, array{0: int, 1: int}>
     */
    public function aggregate(iterable $log, int $periodNs, int $depth, int $maxStacks): array
    {
        $agg = [];
        foreach ($log as $entry) {
            $n = (int)$entry->getEventCount();
            if ($n <= 0) {
                continue;
            }
            $trace = $entry->getTrace();
            if (self::sdkOwn($trace)) {
                continue; // the SDK's own work is not the app's
            }
            $key = $this->folded($trace, $depth);
            if (!isset($agg[$key]) && count($agg) >= $maxStacks) {
                $key = self::TRIMMED;
            }
            if (isset($agg[$key])) {
                $agg[$key][0] += $n;
                $agg[$key][1] += $n * $periodNs;
            } else {
                $agg[$key] = [$n, $n * $periodNs];
            }
        }
        return $agg;
    }
}
