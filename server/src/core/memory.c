/* The server's malloc policy: see rt/memory.h. */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "rt/err.h"
#include "rt/memory.h"

int rt_memory_policy(void)
{
    /* mallopt returns 1 on success; setting either value also turns off glibc's dynamic
     * adjustment of both, so they stay as set. */
    if (mallopt(M_MMAP_THRESHOLD, (int)RT_MEMORY_MMAP_THRESHOLD) != 1 ||
        mallopt(M_TRIM_THRESHOLD, (int)RT_MEMORY_TRIM_THRESHOLD) != 1)
        return RT_EINVAL;
    return 0;
}

void rt_memory_stats(struct rt_memory_stats *out)
{
#if defined(RT_MEMORY_MALLOC_REPLACED)
    /* mallinfo2 would read glibc's heaps, unused (0) */
    out->heap_used = out->heap_free = -1;
#else
    struct mallinfo2 mi = mallinfo2();
    out->heap_used = (long long)(mi.uordblks + mi.hblkhd);
    out->heap_free = (long long)mi.fordblks;
#endif
    out->resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    long long size, pages;
    if (f && fscanf(f, "%lld %lld", &size, &pages) == 2)
        out->resident = pages * (long long)sysconf(_SC_PAGESIZE);
    if (f)
        fclose(f);
}

long long rt_memory_release(size_t keep)
{
#if defined(RT_MEMORY_MALLOC_REPLACED)
    (void)keep;
    return -1;
#else
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks > keep)
        malloc_trim(0);
    return (long long)mi.fordblks;
#endif
}
