/* A map from dense 32-bit ids to 32-bit values, for the query engine's hottest lookup: a
 * window's rows name stacks by the store's local ids (SQLite rowids; ClickHouse's local ids,
 * both numbered from 1 up), and every row asks for the stack's index in the query. A direct
 * array answers with one load and no probing; it is kept in pages of RT_IDINDEX_PAGE ids,
 * allocated at the first id of their range, so that a query touching a few stacks of a
 * large store allocates a few pages, not the store's id range. Memory: 8 bytes per
 * RT_IDINDEX_PAGE ids up to the largest id put, plus 4 * RT_IDINDEX_PAGE bytes per page
 * touched. Not thread-safe; the owner guards it. */
#ifndef RT_IDINDEX_H
#define RT_IDINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_IDINDEX_SHIFT 12
#define RT_IDINDEX_PAGE (1u << RT_IDINDEX_SHIFT)

struct rt_idindex {
    uint32_t **pages; /* page p holds ids [p * PAGE, (p + 1) * PAGE): value + 1, 0 = absent */
    size_t npages;    /* entries of pages (NULL where no id of its range was put) */
};

void rt_idindex_init(struct rt_idindex *m);
/* Frees the pages; m is empty (and usable) afterwards. */
void rt_idindex_cleanup(struct rt_idindex *m);

/* Sets *val and returns true when id is present. */
static inline bool rt_idindex_find(const struct rt_idindex *m, uint32_t id, uint32_t *val)
{
    size_t p = id >> RT_IDINDEX_SHIFT;
    if (p >= m->npages || !m->pages[p])
        return false;
    uint32_t v = m->pages[p][id & (RT_IDINDEX_PAGE - 1)];
    if (!v)
        return false;
    *val = v - 1;
    return true;
}

/* Asks the CPU to fetch id's entry (a hint; no effect on m), so that a rt_idindex_find a few
 * ids later does not wait for memory. */
static inline void rt_idindex_prefetch(const struct rt_idindex *m, uint32_t id)
{
    size_t p = id >> RT_IDINDEX_SHIFT;
    if (p < m->npages && m->pages[p])
        __builtin_prefetch(&m->pages[p][id & (RT_IDINDEX_PAGE - 1)]);
}

/* Sets id's value (val < UINT32_MAX), replacing any. Returns 0, RT_EINVAL (val is
 * UINT32_MAX) or RT_ENOMEM; m is unchanged on an error. */
int rt_idindex_put(struct rt_idindex *m, uint32_t id, uint32_t val);

#endif
