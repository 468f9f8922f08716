<?php
// The CPU witness of DESIGN §7 (process_cpu_ns: what the kernel accounted to the processes a
// profile covers), built from readings that only sampled requests write. A request with no
// sample (three in four at 2 ms and a 10 ms interval) writes nothing and reads the CPU once,
// at its start; each reading says what the process's cumulative CPU was when the request
// started and ended. Between two readings of one process lies everything it ran in between:
// its unsampled requests, PHP's own request start-up and shutdown, the SDK's maintenance; the
// kernel counted all of it, so the witness does too (docs/decisions.md, "PHP's CPU witness
// is differenced per process").
declare(strict_types=1);

namespace RootTrace;

final class Witness
{
    /**
     * The witness of one profile's readings, and the last reading of each process to keep
     * for the next profile's.
     *
     * A reading is [pid, mono, c0, c1]: the process id, hrtime(true) when it was written (ns,
     * the system's monotonic clock), and the process's CPU (getrusage, user + system, ns) at
     * the request's start and end. Per process, in order of mono, a reading adds c1 - c1' where
     * (mono', c1') is the process's previous reading, when that one is:
     * - at most $gapMaxNs older (beyond it, too much of that CPU belongs to earlier profiles);
     * - continuous: c1' <= c0 and c0 - c1' <= mono - mono' (a process cannot have run longer
     *   than the time between; a process id reused by a new process usually fails this);
     * and c1 - c0 otherwise (the request's own CPU, as a process's first reading).
     *
     * @param list<array{0: int, 1: int, 2: int, 3: int}> $readings this profile's, any order
     * @param array<int|string, array{0: int, 1: int}> $last pid => [mono, c1] from the last call
     * @param int $nowMono hrtime(true) now: entries of $last older than $gapMaxNs are dropped
     * @param int $maxProcesses at most this many processes kept in the returned $last (the
     *        most recent)
     * @return array{0: int, 1: array<int, array{0: int, 1: int}>} [witness ns, the new $last]
     */
    public static function account(array $readings, array $last, int $nowMono, int $gapMaxNs,
                                   int $maxProcesses): array
    {
        usort($readings, static fn(array $a, array $b): int => [$a[0], $a[1]] <=> [$b[0], $b[1]]);
        $ns = 0;
        foreach ($readings as [$pid, $mono, $c0, $c1]) {
            $prev = $last[$pid] ?? null;
            $continuous = is_array($prev) && count($prev) === 2
                && $mono >= $prev[0] && $mono - $prev[0] <= $gapMaxNs
                && $c0 >= $prev[1] && $c0 - $prev[1] <= $mono - $prev[0];
            $ns += $continuous ? $c1 - $prev[1] : $c1 - $c0;
            $last[$pid] = [$mono, $c1];
        }
        $kept = [];
        foreach ($last as $pid => $l) {
            if (is_array($l) && count($l) === 2 && is_int($l[0]) && is_int($l[1])
                && $nowMono - $l[0] <= $gapMaxNs) {
                $kept[(int)$pid] = $l;
            }
        }
        if (count($kept) > $maxProcesses) {
            uasort($kept, static fn(array $a, array $b): int => $b[0] <=> $a[0]);
            $kept = array_slice($kept, 0, $maxProcesses, true);
        }
        return [$ns, $kept];
    }
}
