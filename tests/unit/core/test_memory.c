/* rt_memory_release: malloc's kept free memory goes back to the kernel above the bound given,
 * and stays below it; the figures rt_memory_stats reads follow. */
#include <stdlib.h>
#include <string.h>

#include "rt/memory.h"
#include "test.h"

#define MIB ((size_t)1 << 20)
#define BLOCKS 64

/* 64 blocks of 1 MiB, touched, then every other one freed: 32 MiB free inside the heap that
 * no trim of its top can give back (the blocks in use hold it in place). */
static void test_release(void)
{
    int policy = rt_memory_policy(); /* 1 MiB blocks from the heap, not their own mappings */
    void *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        b[i] = malloc(MIB);
        CHECK(b[i] != NULL);
        if (b[i])
            memset(b[i], 0x5a, MIB);
    }
    for (int i = 1; i < BLOCKS; i += 2)
        free(b[i]);
    struct rt_memory_stats before, kept, after;
    rt_memory_stats(&before);
#if defined(RT_MEMORY_MALLOC_REPLACED)
    /* A sanitizer's allocator replaces malloc (ASan's refuses mallopt too): nothing to read,
     * nothing done. */
#if defined(__SANITIZE_ADDRESS__)
    CHECK(policy != 0);
#endif
    (void)policy;
    CHECK_INT(before.heap_free, -1);
    CHECK_INT(rt_memory_release(0), -1);
    (void)kept;
    (void)after;
#else
    CHECK_INT(policy, 0);
    CHECK(before.heap_free >= (long long)(32 * MIB));
    /* Under the bound: the free memory stays resident. */
    long long free_bytes = rt_memory_release(64 * MIB);
    CHECK(free_bytes >= (long long)(32 * MIB) && free_bytes < (long long)(64 * MIB));
    rt_memory_stats(&kept);
    CHECK(kept.resident > before.resident - (long long)(4 * MIB));
    /* Over it: the free blocks' pages leave the resident set; the blocks in use stay. */
    CHECK(rt_memory_release(16 * MIB) >= (long long)(32 * MIB));
    rt_memory_stats(&after);
    CHECK(after.resident <= before.resident - (long long)(28 * MIB));
    CHECK(after.heap_used >= (long long)(32 * MIB));
#endif
    for (int i = 0; i < BLOCKS; i += 2) {
        CHECK(((unsigned char *)b[i])[MIB - 1] == 0x5a);
        free(b[i]);
    }
}

int main(void)
{
    RUN(test_release);
    return TEST_DONE();
}
