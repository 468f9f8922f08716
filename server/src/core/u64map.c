/* An open-addressing hash map from 64-bit keys to 32-bit values (rt/u64map.h), for hot paths
 * (stack ids, frame ids, function ids, ClickHouse ids). */
#include <stdlib.h>

#include "rt/err.h"
#include "rt/u64map.h"

void rt_u64map_init(struct rt_u64map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->n = 0;
}

void rt_u64map_cleanup(struct rt_u64map *m)
{
    free(m->slots);
    rt_u64map_init(m);
}

static void insert(struct rt_u64map_slot *slots, size_t cap, uint64_t key, uint32_t v1)
{
    size_t i = rt__u64map_slot_of(key, cap);
    while (slots[i].val)
        i = (i + 1) & (cap - 1);
    slots[i] = (struct rt_u64map_slot){key, v1};
}

static int grow(struct rt_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16; /* small: a query keeps a map per instance */
    if (cap > SIZE_MAX / sizeof(struct rt_u64map_slot))
        return RT_ENOMEM;
    struct rt_u64map_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return RT_ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].val)
            insert(slots, cap, m->slots[i].key, m->slots[i].val);
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int rt_u64map_put(struct rt_u64map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) { /* load factor at most 1/2 */
        int rc = grow(m);
        if (rc)
            return rc;
    }
    insert(m->slots, m->cap, key, val + 1);
    m->n++;
    return 0;
}
