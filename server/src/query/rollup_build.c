/* Building rollups (docs/internals/rollups.md): a block's profiles that lie wholly inside it,
 * one aggregation context per (instance, version), each encoded by rollup.c and stored
 * together with rt_store_put_rollup. */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/log.h"
#include "rt/profile.h"

/* One (instance, version) of the block being built. */
struct group {
    char *instance, *version;
    struct rt__query_ctx ctx;
};

struct build {
    struct rt_store *s;
    enum rt_ptype type;
    int level;
    int64_t block, from_ns, to_ns; /* the block: [from, to) */
    struct rt_intern keys;   /* "instance\n" + "v" version or "-": index = group */
    struct group *groups;
    size_t ngroups, cap_groups; /* ngroups: initialised (keys.count once nothing failed) */
    struct rt_buf key;
};

static int group_of(struct build *b, const struct rt_profile_meta *m, struct group **out)
{
    b->key.len = 0;
    if (rt_buf_puts(&b->key, m->instance) || rt_buf_puts(&b->key, m->version ? "\nv" : "\n-") ||
        rt_buf_puts(&b->key, m->version ? m->version : ""))
        return RT_ENOMEM;
    uint32_t n = b->keys.count, i;
    if (rt_intern_get(&b->keys, (struct rt_str){b->key.data, b->key.len}, &i))
        return RT_ENOMEM;
    if (i == n) { /* a new group */
        if (rt_array_grow((void **)&b->groups, &b->cap_groups, n + 1, sizeof(*b->groups)))
            return RT_ENOMEM;
        struct group *g = &b->groups[n];
        memset(g, 0, sizeof(*g));
        rt__query_ctx_init(&g->ctx, rt__query_src_store(b->s), b->type, 1);
        rt__query_ctx_window(&g->ctx, 0, b->from_ns, b->to_ns);
        g->instance = strdup(m->instance);
        g->version = m->version ? strdup(m->version) : NULL;
        if (!g->instance || (m->version && !g->version)) {
            free(g->instance);
            free(g->version);
            rt__query_ctx_cleanup(&g->ctx);
            return RT_ENOMEM;
        }
        b->ngroups++;
    }
    *out = &b->groups[i];
    return 0;
}

/* Adds a profile of the block to its group; profiles of no block, or another, are not
 * rolled. */
static int build_profile(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                         size_t nrows)
{
    struct build *b = ud;
    if (rt_profile_rollup_block(m->time_ns, m->duration_ns, b->level) != b->block)
        return 0;
    struct group *g;
    int rc = group_of(b, m, &g);
    return rc ? rc : rt__query_add_profile(&g->ctx, 0, m, rows, nrows);
}

/* Encodes every group and stores the block. RT_ECONFLICT: the block changed meanwhile. */
static int store_block(struct build *b, const struct rt_rollup_block *h, struct rt_error *err)
{
    size_t n = b->ngroups;
    struct rt_rollup_group *out = calloc(n ? n : 1, sizeof(*out));
    struct rt_buf *bufs = calloc(n ? n : 1, sizeof(*bufs));
    int rc = out && bufs ? 0 : RT_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        rt_buf_init(&bufs[i], 0);
        rc = rt__query_rollup_encode(&b->groups[i].ctx, &bufs[i]);
        out[i] = (struct rt_rollup_group){b->groups[i].instance, b->groups[i].version,
                                          bufs[i].data, bufs[i].len};
    }
    if (rc)
        rt_error_set(err, rc, "encoding a rollup: %s", rt_strerror(rc));
    else
        rc = rt_store_put_rollup(b->s, h, out, n, err);
    for (size_t i = 0; bufs && i < n; i++)
        rt_buf_cleanup(&bufs[i]);
    free(bufs);
    free(out);
    return rc;
}

/* Builds and stores one block. Returns 0, RT_ECONFLICT (left waiting) or an error. */
static int build_block(struct rt_store *s, const struct rt_rollup_block *h, struct rt_error *err)
{
    int64_t len = rt_rollup_level_ns(h->level);
    struct build b = {.s = s, .type = h->type, .level = h->level, .block = h->block,
                      .from_ns = h->block * len, .to_ns = (h->block + 1) * len};
    rt_intern_init(&b.keys);
    rt_buf_init(&b.key, 0);
    struct rt_store_filter f = {h->service, h->type, b.from_ns, b.to_ns, NULL, NULL};
    int rc = rt_store_scan(s, &f, build_profile, &b, err);
    if (rc == RT_ENOMEM || (rc && err->code != rc))
        rt_error_set(err, rc, "building the rollup of %s %lld of %s: %s",
                     h->level ? "day" : "hour", (long long)h->block, h->service,
                     rt_strerror(rc));
    if (!rc)
        rc = store_block(&b, h, err);
    for (size_t i = 0; i < b.ngroups; i++) {
        rt__query_ctx_cleanup(&b.groups[i].ctx);
        free(b.groups[i].instance);
        free(b.groups[i].version);
    }
    free(b.groups);
    rt_intern_cleanup(&b.keys);
    rt_buf_cleanup(&b.key);
    return rc;
}

/* The waiting blocks, copied (the scan's strings live only during its callback). */
struct pending {
    struct rt_rollup_block *blocks;
    size_t n, cap;
};

static int keep_pending(void *ud, const struct rt_rollup_block *h)
{
    struct pending *p = ud;
    if (rt_array_grow((void **)&p->blocks, &p->cap, p->n + 1, sizeof(*p->blocks)))
        return RT_ENOMEM;
    p->blocks[p->n] = *h;
    if (!(p->blocks[p->n].service = strdup(h->service)))
        return RT_ENOMEM;
    p->n++;
    return 0;
}

int rt_query_build_rollups(struct rt_store *s, int64_t now_ns, size_t max_blocks, size_t *built,
                           struct rt_error *err)
{
    struct rt_error local;
    if (!err)
        err = &local;
    rt_error_clear(err);
    size_t count = 0;
    if (built)
        *built = 0;
    if (!s || !rt_store_has_rollups(s) || now_ns < RT_QUERY_ROLLUP_GRACE_NS)
        return 0;
    struct pending p = {0};
    int rc = rt_store_scan_rollup_pending(s, now_ns - RT_QUERY_ROLLUP_GRACE_NS, now_ns,
                                          max_blocks, keep_pending, &p, err);
    if (rc == RT_ENOMEM)
        rt_error_set(err, rc, "out of memory");
    struct rt_error first = {0}; /* a block that fails does not hold the others back */
    for (size_t i = 0; !rc && i < p.n; i++) {
        int brc = build_block(s, &p.blocks[i], err);
        if (brc == RT_ECANCELED || brc == RT_EDISKFULL) {
            rc = brc;
            break;
        }
        if (brc == RT_ECONFLICT) { /* new profiles: built again later */
            rt_log(RT_LOG_DEBUG, "rollup: %s", err->msg);
        } else if (brc) { /* read raw meanwhile; tried again after RT_QUERY_ROLLUP_RETRY_NS */
            rt_log(RT_LOG_WARN, "rollup of %s %lld of %s deferred: %s",
                   p.blocks[i].level ? "day" : "hour", (long long)p.blocks[i].block,
                   p.blocks[i].service, err->msg);
            if (!first.code)
                first = *err;
            rt_error_clear(err);
            if ((rc = rt_store_defer_rollup(s, &p.blocks[i], now_ns + RT_QUERY_ROLLUP_RETRY_NS,
                                            err)))
                break;
        } else {
            count++;
        }
        rt_error_clear(err);
    }
    if (!rc && first.code) {
        *err = first;
        rc = first.code;
    }
    for (size_t i = 0; i < p.n; i++)
        free((char *)p.blocks[i].service);
    free(p.blocks);
    if (built)
        *built = count;
    return rc;
}
