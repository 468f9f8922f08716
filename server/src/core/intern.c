/* String interning with dense ids: an open-addressing table over copies kept in an arena. */
#include <stdlib.h>
#include <string.h>

#include "rt/err.h"
#include "rt/intern.h"

void rt_intern_init(struct rt_intern *t)
{
    memset(t, 0, sizeof(*t));
    rt_arena_init(&t->text);
}

void rt_intern_cleanup(struct rt_intern *t)
{
    rt_arena_cleanup(&t->text);
    free(t->strs);
    free(t->lens);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static uint32_t *find_slot(const struct rt_intern *t, struct rt_str s, uint64_t h)
{
    uint32_t mask = t->nslots - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        uint32_t v = t->slots[i];
        if (v == 0)
            return &t->slots[i];
        uint32_t id = v - 1;
        if (t->hashes[id] == h && t->lens[id] == s.len && memcmp(t->strs[id], s.ptr, s.len) == 0)
            return &t->slots[i];
    }
}

/* Rebuilds the slots at n (a power of two, more than twice the count). */
static int resize_slots(struct rt_intern *t, uint32_t n)
{
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return RT_ENOMEM;
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    for (uint32_t id = 0; id < t->count; id++) {
        struct rt_str s = {t->strs[id], t->lens[id]};
        *find_slot(t, s, t->hashes[id]) = id + 1;
    }
    return 0;
}

/* Grows strs, lens and hashes to cap ids (more than the count). */
static int resize_ids(struct rt_intern *t, uint32_t cap)
{
    char **strs = realloc(t->strs, cap * sizeof(*strs));
    if (!strs)
        return RT_ENOMEM;
    t->strs = strs;
    uint32_t *lens = realloc(t->lens, cap * sizeof(*lens));
    if (!lens)
        return RT_ENOMEM;
    t->lens = lens;
    uint64_t *hashes = realloc(t->hashes, cap * sizeof(*hashes));
    if (!hashes)
        return RT_ENOMEM;
    t->hashes = hashes;
    t->cap = cap;
    return 0;
}

/* The slots for n strings: a power of two, at least 64 and more than twice n. */
static uint32_t slots_for(size_t n)
{
    uint32_t nslots = 64;
    while (nslots < 2 * (n + 1))
        nslots *= 2;
    return nslots;
}

int rt_intern_reserve(struct rt_intern *t, size_t n)
{
    uint32_t nslots = slots_for(n < RT_INTERN_RESERVE_MAX ? n : RT_INTERN_RESERVE_MAX);
    return nslots > t->nslots ? resize_slots(t, nslots) : 0;
}

void rt_intern_fit(struct rt_intern *t)
{
    uint32_t nslots = slots_for(t->count);
    if ((uint64_t)nslots * 4 <= t->nslots)
        (void)resize_slots(t, nslots); /* on ENOMEM the larger table stays, whole */
}

int64_t rt_intern_find(const struct rt_intern *t, struct rt_str s)
{
    if (!t->nslots)
        return -1;
    uint32_t v = *find_slot(t, s, rt_hash(s.ptr, s.len));
    return v ? (int64_t)(v - 1) : -1;
}

int rt_intern_get(struct rt_intern *t, struct rt_str s, uint32_t *id)
{
    if ((t->count + 1) * 2 > t->nslots && resize_slots(t, t->nslots ? t->nslots * 2 : 64))
        return RT_ENOMEM;
    uint64_t h = rt_hash(s.ptr, s.len);
    uint32_t *slot = find_slot(t, s, h);
    if (*slot) {
        *id = *slot - 1;
        return 0;
    }
    if (t->count == t->cap && resize_ids(t, t->cap ? t->cap * 2 : 64))
        return RT_ENOMEM;
    char *copy = rt_arena_strndup(&t->text, s.ptr, s.len);
    if (!copy)
        return RT_ENOMEM;
    t->strs[t->count] = copy;
    t->lens[t->count] = (uint32_t)s.len;
    t->hashes[t->count] = h;
    t->bytes += s.len;
    *slot = ++t->count;
    *id = t->count - 1;
    return 0;
}
