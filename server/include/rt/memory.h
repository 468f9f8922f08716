/* The server's malloc policy (docs/decisions.md, "Heap memory kept between uploads"). */
#ifndef RT_MEMORY_H
#define RT_MEMORY_H

#include <stddef.h>

/* Blocks of up to this many bytes come from malloc's heaps and are reused by later uploads;
 * larger ones (a huge upload's decompressed body) get their own mapping, returned at free. */
#define RT_MEMORY_MMAP_THRESHOLD ((size_t)16 << 20)
/* Free memory a heap keeps at its top before giving it back to the kernel: above one upload's
 * working set of the largest real profiles measured (google-pprof__large.cpu: ~20 MiB). */
#define RT_MEMORY_TRIM_THRESHOLD ((size_t)32 << 20)

/* Sets glibc malloc's mmap and trim thresholds to the values above, before any thread starts.
 * Without it, glibc unmaps (or trims) each upload's multi-megabyte buffers at free and the next
 * upload faults every page in again: ~365 page faults per upload, 20 % of parse time in
 * bench_ingest. The cost: each malloc arena may keep up to RT_MEMORY_TRIM_THRESHOLD free
 * bytes that it had in use before. Returns 0, or RT_EINVAL when the C library refused a value
 * (the defaults then stay; nothing else changes). */
int rt_memory_policy(void);

/* Defined in a build whose sanitizer replaces malloc (AddressSanitizer, ThreadSanitizer):
 * glibc's heaps are then unused, and there is nothing of them to read or to give back. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_MEMORY_MALLOC_REPLACED 1
#endif

/* What the process's memory holds, for /metrics (bytes; -1 where it cannot be read: the heap's
 * figures when RT_MEMORY_MALLOC_REPLACED). */
struct rt_memory_stats {
    long long resident;  /* resident set (/proc/self/statm), as the kernel counts it */
    long long heap_used; /* malloc's blocks in use, heaps and own mappings (mallinfo2) */
    long long heap_free; /* free memory malloc's heaps keep for later blocks (mallinfo2) */
};

/* Fills out. mallinfo2 walks every malloc arena under its lock: a few microseconds, for a
 * scrape, not for a hot path. */
void rt_memory_stats(struct rt_memory_stats *out);

/* How often `roottrace serve` gives malloc's kept free memory back (rt_memory_release), and
 * how much it lets malloc keep between two releases. The thresholds above keep each arena's
 * free memory for the next upload; a diff's working memory (tens of MiB, freed by whichever
 * HTTP thread ran it) is kept the same way, and under the 30,000-instance load it grew to
 * 64-118 MiB of RSS that no upload reused (docs/performance.md, stop 31). */
#define RT_MEMORY_RELEASE_INTERVAL_S 5
#define RT_MEMORY_RELEASE_KEEP ((size_t)16 << 20)

/* When malloc's heaps keep more than keep free bytes, gives the whole pages of their free
 * memory back to the kernel (glibc's malloc_trim(0): every arena, each under its own lock, in
 * turn, so one arena's allocations wait at most for that arena's walk). Later blocks fault
 * those pages in again. Returns the free bytes before the release (mallinfo2), or -1 where
 * they cannot be read (under AddressSanitizer: nothing is done). */
long long rt_memory_release(size_t keep);

#endif
