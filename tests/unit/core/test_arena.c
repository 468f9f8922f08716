/* Tests of the arena (server/src/core/arena.c): alignment, memory that never moves across
 * blocks, large allocations (in blocks of their own, behind the current one), zeroing,
 * copies, overflow, and reuse after cleanup. */
#include <stdint.h>
#include <string.h>

#include "rt/arena.h"
#include "test.h"

static void test_alignment_and_stability(void)
{
    struct rt_arena a;
    rt_arena_init(&a);
    CHECK_INT((int)a.bytes, 0);
    char *first = rt_arena_alloc(&a, 3);
    memcpy(first, "ab", 3);
    char *p[2000];
    for (int i = 0; i < 2000; i++) { /* 2000 x 40 bytes spill past one 64 KiB block */
        p[i] = rt_arena_alloc(&a, 37);
        CHECK(p[i] != NULL);
        CHECK_INT((int)((uintptr_t)p[i] % 8), 0);
        memset(p[i], i & 0xff, 37);
    }
    CHECK(a.bytes > 64 * 1024);
    CHECK_STR(first, "ab");
    int intact = 0;
    for (int i = 0; i < 2000; i++)
        intact += p[i][0] == (char)(i & 0xff) && p[i][36] == (char)(i & 0xff);
    CHECK_INT(intact, 2000);
    rt_arena_cleanup(&a);
    CHECK_INT((int)a.bytes, 0);
    CHECK(a.head == NULL);
}

static void test_large_zeroed_and_copies(void)
{
    struct rt_arena a;
    rt_arena_init(&a);
    unsigned char *big = rt_arena_calloc(&a, 1000, 100); /* one block of its own */
    CHECK(big != NULL);
    size_t zeros = 0;
    for (size_t i = 0; i < 100000; i++)
        zeros += big[i] == 0;
    CHECK_INT((int)zeros, 100000);
    CHECK(a.bytes >= 100000);
    char *s = rt_arena_strndup(&a, "checkout.apply", 8);
    CHECK_STR(s, "checkout");
    char *empty = rt_arena_strndup(&a, NULL, 0);
    CHECK_STR(empty, "");
    CHECK(rt_arena_calloc(&a, SIZE_MAX / 2, 4) == NULL);   /* count x size overflows */
    CHECK(rt_arena_alloc(&a, SIZE_MAX - 4) == NULL);       /* rounding would overflow */
    rt_arena_cleanup(&a);
    char *again = rt_arena_strndup(&a, "reused", 6);       /* usable after cleanup */
    CHECK_STR(again, "reused");
    rt_arena_cleanup(&a);
}

static void test_large_allocations_keep_the_current_block(void)
{
    struct rt_arena a;
    rt_arena_init(&a);
    char *first = rt_arena_alloc(&a, 16000);
    for (int i = 0; i < 3; i++)                      /* 64,000 of the 65,536 bytes used */
        CHECK(rt_arena_alloc(&a, 16000) != NULL);
    CHECK(rt_arena_alloc(&a, 20000) != NULL);      /* does not fit: a block of its own */
    char *next = rt_arena_alloc(&a, 8);
    CHECK(next == first + 64000);                    /* the 64 KiB block is still in use */
    CHECK_INT((int)a.bytes, 64 * 1024 + 20000);
    CHECK(rt_arena_strndup(&a, "x", SIZE_MAX) == NULL);
    rt_arena_cleanup(&a);
}

/* Unaligned bytes pack behind each other, and the next aligned allocation rounds up again. */
static void test_packed_bytes(void)
{
    struct rt_arena a;
    rt_arena_init(&a);
    unsigned char *x = rt_arena_alloc_bytes(&a, 3), *y = rt_arena_alloc_bytes(&a, 5);
    CHECK(y == x + 3);
    char *s = rt_arena_strndup(&a, "abc", 3);
    CHECK((unsigned char *)s == y + 5);
    CHECK_STR(s, "abc");
    char *aligned = rt_arena_alloc(&a, 1);
    CHECK(aligned == (char *)x + 16); /* 3 + 5 + 4 bytes, rounded up to 16 */
    for (int i = 0; i < 70000; i++)   /* past one block: a new block, still packed */
        CHECK(rt_arena_alloc_bytes(&a, 1) != NULL);
    CHECK_INT((int)a.bytes, 2 * 64 * 1024);
    memset(x, 0xab, 3);
    memset(y, 0xcd, 5);
    CHECK_STR(s, "abc");
    rt_arena_cleanup(&a);
}

int main(void)
{
    RUN(test_packed_bytes);
    RUN(test_alignment_and_stability);
    RUN(test_large_zeroed_and_copies);
    RUN(test_large_allocations_keep_the_current_block);
    return TEST_DONE();
}
