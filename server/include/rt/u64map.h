/* An open-addressing hash map from 64-bit keys to 32-bit values, for hot paths: the query
 * engine's stack, frame and (window, instance, function) indexes, and the ClickHouse
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

void rt_u64map_init(struct rt_u64map *m);
/* Frees the slots; m is empty (and usable) afterwards. */
void rt_u64map_cleanup(struct rt_u64map *m);
/* Sets *val and returns true when key is present. */
bool rt_u64map_find(const struct rt_u64map *m, uint64_t key, uint32_t *val);
/* Inserts key (which must be absent) with val < UINT32_MAX; the load factor stays at most
 * 1/2. Returns 0 or RT_ENOMEM. */
/* Asks the CPU to fetch the slot where a lookup of key starts (a hint; no effect on m), so that
 * a rt_u64map_find a few keys later does not wait for memory. */
void rt_u64map_prefetch(const struct rt_u64map *m, uint64_t key);

int rt_u64map_put(struct rt_u64map *m, uint64_t key, uint32_t val);

#endif
