/* Dense 32-bit ids -> 32-bit values in pages allocated on first use (rt/idindex.h). */
#include <stdlib.h>
#include <string.h>

#include "rt/err.h"
#include "rt/idindex.h"

void rt_idindex_init(struct rt_idindex *m)
{
    m->pages = NULL;
    m->npages = 0;
}

void rt_idindex_cleanup(struct rt_idindex *m)
{
    for (size_t p = 0; p < m->npages; p++)
        free(m->pages[p]);
    free(m->pages);
    rt_idindex_init(m);
}

int rt_idindex_put(struct rt_idindex *m, uint32_t id, uint32_t val)
{
    if (val == UINT32_MAX)
        return RT_EINVAL;
    size_t p = id >> RT_IDINDEX_SHIFT;
    if (p >= m->npages) { /* grows by doubling, at least to p + 1 */
        size_t n = m->npages ? m->npages * 2 : 16;
        if (n < p + 1)
            n = p + 1;
        uint32_t **pages = realloc(m->pages, n * sizeof(*pages));
        if (!pages)
            return RT_ENOMEM;
        memset(pages + m->npages, 0, (n - m->npages) * sizeof(*pages));
        m->pages = pages;
        m->npages = n;
    }
    if (!m->pages[p] && !(m->pages[p] = calloc(RT_IDINDEX_PAGE, sizeof(uint32_t))))
        return RT_ENOMEM;
    m->pages[p][id & (RT_IDINDEX_PAGE - 1)] = val + 1;
    return 0;
}
