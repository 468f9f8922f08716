/* Rollups at the store's interface (docs/internals/rollups.md): argument checks, the choice
 * of the rolled read, and the cancellation checks a window's reads get everywhere. */
#include <stdatomic.h>

#include "rt/profile.h"
#include "store_int.h"

bool rt_store_has_rollups(const struct rt_store *s)
{
    return s && s->ops->scan_rolled && s->ops->scan_rollup_pending && s->ops->put_rollup &&
           s->ops->defer_rollup;
}

bool rt__store_window_has_hour(const struct rt_store_filter *f)
{
    if (f->from_ns < 0 || f->to_ns <= f->from_ns)
        return false;
    /* the first hour starting at or after from ends by to (in hours: no overflow) */
    int64_t lo = f->from_ns / RT_ROLLUP_HOUR_NS + (f->from_ns % RT_ROLLUP_HOUR_NS != 0);
    return lo < f->to_ns / RT_ROLLUP_HOUR_NS;
}

/* A rolled read's data: the checked callbacks' first (rt__store_checked), the reader's rollup. */
struct rolled {
    struct rt__store_checked c;
    const struct rt_store_window_reader *r;
};

static int rolled_rollup(void *ud, const char *instance, const char *version, const void *data,
                         size_t len)
{
    struct rolled *u = ud;
    if (atomic_load_explicit(&u->c.s->reads_cancelled, memory_order_relaxed))
        return RT_ECANCELED;
    return u->r->rollup(u->c.ud, instance, version, data, len);
}

int rt__store_read_rolled(struct rt_store *s, const struct rt_store_filter *f,
                          const struct rt_store_window_reader *r, void *ud, struct rt_error *err)
{
    if (!f->service)
        return rt_error_set(err, RT_EINVAL, "rt_store_read_window: missing argument");
    if (rt_store_check_cancelled(s, err))
        return RT_ECANCELED;
    static const struct rt_store_window_reader checked = {rt__store_checked_rows,
                                                          &rt__store_checked_sums, rolled_rollup};
    struct rolled u = {{s, r->rows, r->sums, ud}, r};
    int rc = s->ops->scan_rolled(s, f, &checked, &u, err);
    if (rc == RT_ECANCELED)
        return rt_store_check_cancelled(s, err) ? RT_ECANCELED : rc;
    return rc;
}

int rt_store_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns, size_t limit,
                                 int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                                 struct rt_error *err)
{
    struct rt_error local;
    if (!err)
        err = &local;
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_rollup_pending: missing argument");
    if (!rt_store_has_rollups(s) || limit == 0)
        return 0;
    return s->ops->scan_rollup_pending(s, end_ns, now_ns, limit, cb, ud, err);
}

int rt_store_put_rollup(struct rt_store *s, const struct rt_rollup_block *h,
                        const struct rt_rollup_group *g, size_t n, struct rt_error *err)
{
    struct rt_error local;
    if (!err)
        err = &local;
    if (!s || !h || !h->service || h->level < 0 || h->level >= RT_ROLLUP_LEVELS || (n && !g))
        return rt_error_set(err, RT_EINVAL, "rt_store_put_rollup: missing argument");
    if (!rt_store_has_rollups(s))
        return rt_error_set(err, RT_EINVAL, "the %s store keeps no rollups", s->ops->name);
    for (size_t i = 0; i < n; i++)
        if (!g[i].instance || (g[i].len && !g[i].data))
            return rt_error_set(err, RT_EINVAL, "rollup group %zu has no instance or data", i);
    return s->ops->put_rollup(s, h, g, n, err);
}

int rt_store_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b, int64_t retry_ns,
                          struct rt_error *err)
{
    struct rt_error local;
    if (!err)
        err = &local;
    if (!s || !b || !b->service)
        return rt_error_set(err, RT_EINVAL, "rt_store_defer_rollup: missing argument");
    if (!rt_store_has_rollups(s))
        return rt_error_set(err, RT_EINVAL, "the %s store keeps no rollups", s->ops->name);
    return s->ops->defer_rollup(s, b, retry_ns, err);
}

int rt_store_keys(struct rt_store *s, enum rt_store_key_kind kind, bool to_keys, uint64_t *v,
                  size_t n, struct rt_error *err)
{
    struct rt_error local;
    if (!err)
        err = &local;
    if (!s || (n && !v) || (kind != RT_STORE_STACK_KEYS && kind != RT_STORE_FRAME_KEYS))
        return rt_error_set(err, RT_EINVAL, "rt_store_keys: missing argument");
    if (n == 0)
        return 0;
    if (s->ops->keys)
        return s->ops->keys(s, kind, to_keys, v, n, err);
    for (size_t i = 0; !to_keys && i < n; i++) /* the keys are the ids: only their range */
        if (v[i] > UINT32_MAX)
            return rt_error_set(err, RT_ENOTFOUND, "no %s of key %llu",
                                kind == RT_STORE_STACK_KEYS ? "stack" : "frame",
                                (unsigned long long)v[i]);
    return 0;
}
