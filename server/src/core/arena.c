/* Arena allocation: blocks chained newest first, bump allocation inside a block. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt/arena.h"

#define BLOCK_BYTES (64 * 1024)

struct rt_arena_block {
    struct rt_arena_block *next; /* older block */
    size_t used, cap;            /* bytes of data used and available */
    _Alignas(8) unsigned char data[];
};

void rt_arena_init(struct rt_arena *a)
{
    a->head = NULL;
    a->bytes = 0;
}

void rt_arena_cleanup(struct rt_arena *a)
{
    struct rt_arena_block *b = a->head;
    while (b) {
        struct rt_arena_block *next = b->next;
        free(b);
        b = next;
    }
    rt_arena_init(a);
}

/* n bytes at a multiple of align (1 or 8) inside the newest block, or a new block. */
static void *alloc_aligned(struct rt_arena *a, size_t n, size_t align)
{
    if (n > SIZE_MAX - 8 - sizeof(struct rt_arena_block))
        return NULL;
    struct rt_arena_block *b = a->head;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at > b->cap || b->cap - at < n) {
        bool large = n > BLOCK_BYTES / 4;
        size_t cap = large ? (n + 7) & ~(size_t)7 : BLOCK_BYTES;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        a->bytes += cap;
        if (large && a->head) { /* behind the head, whose room stays in use */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
        at = 0;
    }
    b->used = at + n;
    return b->data + at;
}

void *rt_arena_alloc(struct rt_arena *a, size_t n)
{
    return alloc_aligned(a, n, 8);
}

void *rt_arena_alloc_bytes(struct rt_arena *a, size_t n)
{
    return alloc_aligned(a, n, 1);
}

void *rt_arena_calloc(struct rt_arena *a, size_t count, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(count, size, &n))
        return NULL;
    void *p = rt_arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

char *rt_arena_strndup(struct rt_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = rt_arena_alloc_bytes(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}
