/* Arena allocation: blocks chained newest first, bump allocation inside a block. */
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

void *rt_arena_alloc(struct rt_arena *a, size_t n)
{
    if (n > SIZE_MAX - 8 - sizeof(struct rt_arena_block))
        return NULL;
    n = (n + 7) & ~(size_t)7;
    struct rt_arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLOCK_BYTES / 4 ? n : BLOCK_BYTES;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        a->bytes += cap;
        if (cap == n && a->head) { /* a large one: behind the head, whose room stays in use */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
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
    char *p = rt_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}
