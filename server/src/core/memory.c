/* The server's malloc policy: see rt/memory.h. */
#include <malloc.h>

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
