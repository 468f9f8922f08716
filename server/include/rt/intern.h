/* String interning: each distinct string gets a dense id 0, 1, 2, ... (frames of a profile). */
#ifndef RT_INTERN_H
#define RT_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/str.h"

struct rt_intern {
    char **strs;       /* copies in text, NUL-terminated, indexed by id */
    uint32_t *lens;    /* length of each string */
    uint64_t *hashes;  /* rt_hash of each string: the stores' frame hash, kept once */
    uint32_t count;    /* number of distinct strings */
    uint32_t cap;      /* capacity of strs/lens */
    uint32_t *slots;   /* open-addressing table of id + 1 (0 = empty) */
    uint32_t nslots;   /* power of two */
    size_t bytes;      /* total bytes of all strings, for limits */
    struct rt_arena text; /* the copies: no allocation of its own per string */
};

void rt_intern_init(struct rt_intern *t);
void rt_intern_cleanup(struct rt_intern *t);

/* The most strings rt_intern_reserve sizes a table for: 2^16 slots, 256 KiB. More strings
 * still fit; they grow it. */
#define RT_INTERN_RESERVE_MAX 32767

/* Sizes t's slots for n strings (at most RT_INTERN_RESERVE_MAX) so that adding them does not
 * rehash it; a table already that large is left alone. The strings' own arrays still grow as
 * they come. Returns 0 or RT_ENOMEM (t unchanged). */
int rt_intern_reserve(struct rt_intern *t, size_t n);

/* Gives back the slots a reservation did not use: rebuilds them at the size the strings held
 * need when that is a quarter of the table's or less (a hint that was far too high). Best
 * effort: without memory for the smaller table, t stays as it is. */
void rt_intern_fit(struct rt_intern *t);

/* Returns the id of s in *id, adding a copy if new. Returns 0 or RT_ENOMEM. */
int rt_intern_get(struct rt_intern *t, struct rt_str s, uint32_t *id);

/* Looks s up without adding it. Returns its id or -1. */
int64_t rt_intern_find(const struct rt_intern *t, struct rt_str s);

/* rt_hash(string id, its length): the hash the stores key frame names by. */
static inline uint64_t rt_intern_hash(const struct rt_intern *t, uint32_t id)
{
    return t->hashes[id];
}

/* The string with this id (valid until t is cleaned up). */
static inline const char *rt_intern_str(const struct rt_intern *t, uint32_t id)
{
    return t->strs[id];
}

#endif
