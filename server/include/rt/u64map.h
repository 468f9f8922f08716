/* An open-addressing hash map from 64-bit keys to 32-bit values, for hot paths: the query
 * engine's stack and frame indexes, the flame graph's children, the pages of capacity's
 * per-function values past the indexed ones, and the ClickHouse
 * backend's 64-bit content ids -> local ids. Not thread-safe; the owner guards it. */
#ifndef RT_U64MAP_H
#define RT_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A slot: key and value side by side, so that a probe costs one cache miss, not two. */
struct rt_u64map_slot {
    uint64_t key;
    uint32_t val; /* value + 1; 0 = empty slot */
};

struct rt_u64map {
    struct rt_u64map_slot *slots;
    size_t cap; /* slots, a power of two (0 before the first put) */
    size_t n;   /* occupied slots */
};

/* The slot where a lookup of key starts (Fibonacci hashing); cap a power of two. */
static inline size_t rt__u64map_slot_of(uint64_t key, size_t cap)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

void rt_u64map_init(struct rt_u64map *m);
/* Frees the slots; m is empty (and usable) afterwards. */
void rt_u64map_cleanup(struct rt_u64map *m);
/* Sets *val and returns true when key is present. Inline: the query's loops call it per row
 * and per function of a profile. */
static inline bool rt_u64map_find(const struct rt_u64map *m, uint64_t key, uint32_t *val)
{
    if (!m->cap)
        return false;
    for (size_t i = rt__u64map_slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        const struct rt_u64map_slot *s = &m->slots[i];
        if (!s->val)
            return false;
        if (s->key == key) {
            *val = s->val - 1;
            return true;
        }
    }
}

/* Asks the CPU to fetch the slot where a lookup of key starts (a hint; no effect on m), so that
 * a rt_u64map_find a few keys later does not wait for memory. */
static inline void rt_u64map_prefetch(const struct rt_u64map *m, uint64_t key)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[rt__u64map_slot_of(key, m->cap)]);
}

/* Inserts key (which must be absent) with val < UINT32_MAX; the load factor stays at most
 * 1/2. Returns 0 or RT_ENOMEM. */
int rt_u64map_put(struct rt_u64map *m, uint64_t key, uint32_t val);

#endif
