/* Arena: memory of one lifetime (a request, a batch, a dictionary) handed out in chunks that
 * never move and freed at once (h2o's h2o_mem_pool_t; STYLE.md, Memory). */
#ifndef RT_ARENA_H
#define RT_ARENA_H

#include <stddef.h>

struct rt_arena_block;

struct rt_arena {
    struct rt_arena_block *head; /* newest block first */
    size_t bytes;                /* bytes of all blocks (for memory accounting) */
};

/* Initializes caller-owned storage; allocates nothing yet. */
void rt_arena_init(struct rt_arena *a);

/* Frees every block at once; pointers handed out become invalid. a may be reused. */
void rt_arena_cleanup(struct rt_arena *a);

/* n bytes, aligned to 8, valid until rt_arena_cleanup; NULL on ENOMEM or when n is too large
 * to round up with a block header. Blocks are 64 KiB; an allocation over 16 KiB gets a block
 * of its own, placed behind the current one so that its room stays in use. */
void *rt_arena_alloc(struct rt_arena *a, size_t n);

/* n bytes with no alignment (text, varints), packed behind the previous allocation; NULL as
 * rt_arena_alloc. */
void *rt_arena_alloc_bytes(struct rt_arena *a, size_t n);

/* n bytes zeroed (count * size, overflow checked); NULL on ENOMEM or overflow. */
void *rt_arena_calloc(struct rt_arena *a, size_t count, size_t size);

/* A NUL-terminated copy of n bytes of s, unaligned (rt_arena_alloc_bytes); NULL on ENOMEM (or n = SIZE_MAX). */
char *rt_arena_strndup(struct rt_arena *a, const char *s, size_t n);

#endif
