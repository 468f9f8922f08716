/* Per-function capacity's input of each (instance, window) (struct rt__query_instfn in
 * query_internal.h): the self values of its functions, in pages of RT__QUERY_INSTFN_PAGE
 * functions made when first touched. The pages of functions below RT__QUERY_INSTFN_LOW pages
 * are found by index, the others through a small map of their page index: an instance that
 * touches functions far apart (its own frames, numbered when the query first met them) pays
 * for the pages it touched, not for a directory reaching its highest function. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/buf.h"

struct rt__query_instfn *rt__query_instfn_of(struct rt__query_ctx *c, int k, uint32_t inst)
{
    size_t i = (size_t)inst * 2 + (size_t)k;
    if (i >= c->ninstfn) {
        size_t n = i + 1 > (size_t)c->ninstfn * 2 ? i + 1 : (size_t)c->ninstfn * 2;
        if (n > UINT32_MAX)
            return NULL;
        struct rt__query_instfn *m = realloc(c->instfn, n * sizeof(*m));
        if (!m)
            return NULL;
        memset(m + c->ninstfn, 0, (n - c->ninstfn) * sizeof(*m));
        for (size_t j = c->ninstfn; j < n; j++)
            rt_u64map_init(&m[j].high);
        c->instfn = m;
        c->ninstfn = (uint32_t)n;
    }
    return &c->instfn[i];
}

/* Page p of m, made (zeroed) when absent; NULL when out of memory. */
static double *page_of(struct rt__query_instfn *m, uint32_t p)
{
    if (p < RT__QUERY_INSTFN_LOW) {
        if (p >= m->nlow) {
            uint32_t n = p + 1 > m->nlow * 2 ? p + 1 : m->nlow * 2;
            n = n < RT__QUERY_INSTFN_LOW ? n : RT__QUERY_INSTFN_LOW;
            double **low = realloc(m->low, (size_t)n * sizeof(*low));
            if (!low)
                return NULL;
            memset(low + m->nlow, 0, (size_t)(n - m->nlow) * sizeof(*low));
            m->low = low;
            m->nlow = n;
        }
        if (!m->low[p])
            m->low[p] = calloc(RT__QUERY_INSTFN_PAGE, sizeof(double));
        return m->low[p];
    }
    uint32_t h;
    if (rt_u64map_find(&m->high, p, &h))
        return m->high_pages[h].v;
    if (!m->cap_high) { /* 4 first, not rt_array_grow's 64: most instances have 1-2 such pages */
        if (!(m->high_pages = malloc(4 * sizeof(*m->high_pages))))
            return NULL;
        m->cap_high = 4;
    }
    if (rt_array_grow((void **)&m->high_pages, &m->cap_high, (size_t)m->nhigh + 1,
                      sizeof(*m->high_pages)))
        return NULL;
    double *v = calloc(RT__QUERY_INSTFN_PAGE, sizeof(double));
    if (!v || rt_u64map_put(&m->high, p, m->nhigh)) {
        free(v);
        return NULL;
    }
    m->high_pages[m->nhigh++] = (struct rt__query_instfn_page){v, p};
    return v;
}

double *rt__query_instfn_slot(struct rt__query_instfn *m, uint32_t fn)
{
    double *v = page_of(m, fn / RT__QUERY_INSTFN_PAGE);
    return v ? v + fn % RT__QUERY_INSTFN_PAGE : NULL;
}

double rt__query_instfn_value(const struct rt__query_ctx *c, int k, uint32_t inst, uint32_t fn)
{
    size_t i = (size_t)inst * 2 + (size_t)k;
    if (i >= c->ninstfn)
        return 0;
    const struct rt__query_instfn *m = &c->instfn[i];
    uint32_t p = fn / RT__QUERY_INSTFN_PAGE, h;
    const double *v = p < m->nlow                       ? m->low[p]
                      : rt_u64map_find(&m->high, p, &h) ? m->high_pages[h].v
                                                        : NULL;
    return v ? v[fn % RT__QUERY_INSTFN_PAGE] : 0;
}

/* Adds factor x the page's values (page index p) to its functions' capacity in window k. */
static void fold_page(struct rt__query_ctx *c, int k, double factor, uint32_t p, const double *v)
{
    for (uint32_t j = 0; v && j < RT__QUERY_INSTFN_PAGE; j++)
        if (v[j] != 0)
            c->fns[p * RT__QUERY_INSTFN_PAGE + j].cap_v[k] += factor * v[j];
}

void rt__query_instfn_fold(struct rt__query_ctx *c)
{
    for (uint32_t i = 0; i < c->ninstfn; i++) { /* by instance, then window, then function */
        const struct rt__query_instfn *m = &c->instfn[i];
        if (!m->nlow && !m->nhigh)
            continue; /* also the entries of a window the context does not have */
        int k = (int)(i % 2);
        double factor = c->win[k].inst_cap[i / 2].factor;
        for (uint32_t p = 0; p < m->nlow; p++)
            fold_page(c, k, factor, p, m->low[p]);
        for (uint32_t h = 0; h < m->nhigh; h++)
            fold_page(c, k, factor, m->high_pages[h].at, m->high_pages[h].v);
    }
}

/* Sets dst's values in page v (page index p) from src's, functions through fmap. */
static int merge_page(struct rt__query_instfn *dst, uint32_t p, const double *v,
                      const uint32_t *fmap)
{
    for (uint32_t j = 0; v && j < RT__QUERY_INSTFN_PAGE; j++) {
        if (v[j] == 0)
            continue;
        double *slot = rt__query_instfn_slot(dst, fmap[p * RT__QUERY_INSTFN_PAGE + j]);
        if (!slot)
            return RT_ENOMEM;
        *slot = v[j];
    }
    return 0;
}

int rt__query_instfn_merge(struct rt__query_ctx *c, int k, uint32_t inst,
                           const struct rt__query_instfn *src, const uint32_t *fmap)
{
    if (!src->nlow && !src->nhigh)
        return 0;
    struct rt__query_instfn *m = rt__query_instfn_of(c, k, inst);
    int rc = m ? 0 : RT_ENOMEM;
    for (uint32_t p = 0; !rc && p < src->nlow; p++)
        rc = merge_page(m, p, src->low[p], fmap);
    for (uint32_t h = 0; !rc && h < src->nhigh; h++)
        rc = merge_page(m, src->high_pages[h].at, src->high_pages[h].v, fmap);
    return rc;
}

void rt__query_instfn_cleanup(struct rt__query_ctx *c)
{
    for (uint32_t i = 0; i < c->ninstfn; i++) {
        struct rt__query_instfn *m = &c->instfn[i];
        for (uint32_t p = 0; p < m->nlow; p++)
            free(m->low[p]);
        free(m->low);
        for (uint32_t h = 0; h < m->nhigh; h++)
            free(m->high_pages[h].v);
        free(m->high_pages);
        rt_u64map_cleanup(&m->high);
    }
    free(c->instfn);
    c->instfn = NULL;
    c->ninstfn = 0;
}
