/* Rollups (docs/internals/rollups.md): one hour of one (instance, version) summed once, in the
 * aggregation's own state, so that a window holding the hour adds the sums instead of the
 * profiles and gets the same answer (DESIGN §6: a profile wholly inside a window weighs 1).
 *
 * The encoding, little-endian, every count a u32, every sum an f64 (its value as built):
 *   magic "RTR1"
 *   window:   profiles, profiles_sampled, samples, value_ns, all_counts u8, any_counts u8,
 *             truncated_stacks u64
 *   agreement: sampled_ns, os_ns, profiles, scaled, mixed_scope u8, any_process u8, scope str
 *   producers: n, then n × (name str, declared_type, profiles); producers_other
 *   capacity: profiles, value_ns, sampled_ns, unsampled_ns, os_ns, os_count, scaled, unchecked
 *   spans:    n, then n × (lo i64, hi i64): the union of the profiles' intervals, ascending
 *   stacks:   n, then n × (stack key, samples, value_ns)
 *   leaves:   n, then n × (frame key, s2, capacity value_ns)
 * where str is a u32 length (0xffffffff: none) and its bytes, and a key is the store's
 * (rt_store_keys: SQLite's row id, ClickHouse's 64-bit hash), a u32 under the magic "RTR1"
 * (written while every key fits) and a u64 under "RTR2". */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/producer.h"

#define ROLLUP_MAGIC 0x31525452u      /* "RTR1": keys as u32 */
#define ROLLUP_MAGIC_WIDE 0x32525452u /* "RTR2": keys as u64 */
#define NO_STRING 0xffffffffu

/* ---- writing ---- */

static int put_u32(struct rt_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return rt_buf_append(b, x, 4);
}

static int put_u64(struct rt_buf *b, uint64_t v)
{
    return put_u32(b, (uint32_t)v) || put_u32(b, (uint32_t)(v >> 32)) ? RT_ENOMEM : 0;
}

static int put_f64(struct rt_buf *b, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof(v));
    return put_u64(b, v);
}

static int put_u8(struct rt_buf *b, bool v)
{
    uint8_t x = v;
    return rt_buf_append(b, &x, 1);
}

static int put_str(struct rt_buf *b, const char *s)
{
    if (!s)
        return put_u32(b, NO_STRING);
    size_t n = strlen(s);
    return put_u32(b, (uint32_t)n) || rt_buf_append(b, s, n) ? RT_ENOMEM : 0;
}

static int cmp_span(const void *a, const void *b)
{
    const struct rt__query_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/* The union of the profiles' intervals, merged, ascending. */
static int put_spans(struct rt_buf *b, const struct rt__query_win *w)
{
    struct rt__query_span *sp = malloc((w->nprofs ? w->nprofs : 1) * sizeof(*sp));
    if (!sp)
        return RT_ENOMEM;
    for (size_t i = 0; i < w->nprofs; i++)
        sp[i] = (struct rt__query_span){0, w->profs[i].start_ns,
                                        w->profs[i].start_ns + w->profs[i].duration_ns};
    qsort(sp, w->nprofs, sizeof(*sp), cmp_span);
    size_t n = 0;
    for (size_t i = 0; i < w->nprofs; i++) {
        if (n && sp[i].lo <= sp[n - 1].hi) {
            if (sp[i].hi > sp[n - 1].hi)
                sp[n - 1].hi = sp[i].hi;
        } else {
            sp[n++] = sp[i];
        }
    }
    int rc = put_u32(b, (uint32_t)n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = put_u64(b, (uint64_t)sp[i].lo) || put_u64(b, (uint64_t)sp[i].hi) ? RT_ENOMEM : 0;
    free(sp);
    return rc;
}

static int put_capacity(struct rt_buf *b, const struct rt__query_win *w)
{
    double value = 0, sampled = 0, unsampled = 0, os = 0;
    uint32_t os_count = 0, scaled = 0, unchecked = 0;
    for (size_t i = 0; i < w->nprofs; i++) {
        const struct rt__query_prof *p = &w->profs[i];
        value += p->value_ns;
        sampled += p->sampled_ns;
        unsampled += p->unsampled_ns;
        scaled += p->scaled;
        unchecked += p->unchecked;
        if (p->os_ns >= 0) {
            os += p->os_ns;
            os_count++;
        }
    }
    if (put_u32(b, (uint32_t)w->nprofs) || put_f64(b, value) || put_f64(b, sampled) ||
        put_f64(b, unsampled) || put_f64(b, os) || put_u32(b, os_count) || put_u32(b, scaled) ||
        put_u32(b, unchecked))
        return RT_ENOMEM;
    return put_spans(b, w);
}

/* The self value of function fn for capacity (the context's one instance), 0 when none. */
static double instfn_value(const struct rt__query_ctx *c, uint32_t fn)
{
    return rt__query_instfn_value(c, 0, 0, fn); /* window 0, instance 0 */
}

static int put_window(struct rt_buf *b, const struct rt__query_win *w)
{
    return put_u32(b, w->profiles) || put_u32(b, w->profiles_sampled) ||
                   put_f64(b, w->samples) || put_f64(b, w->value_ns) ||
                   put_u8(b, w->all_counts) || put_u8(b, w->any_counts) ||
                   put_u64(b, w->truncated_stacks) || put_f64(b, w->agree_sampled_ns) ||
                   put_f64(b, w->agree_os_ns) || put_u32(b, w->agree_profiles) ||
                   put_u32(b, w->agree_scaled) || put_u8(b, w->agree_mixed_scope) ||
                   put_u8(b, w->agree_any_process) || put_str(b, w->agree_scope)
               ? RT_ENOMEM
               : 0;
}

static int put_producers(struct rt_buf *b, const struct rt__query_ctx *c)
{
    if (put_u32(b, c->nproducers))
        return RT_ENOMEM;
    for (uint32_t i = 0; i < c->nproducers; i++)
        if (put_str(b, c->producers[i].producer->name) ||
            put_u32(b, (uint32_t)c->producers[i].declared_type) ||
            put_u32(b, c->producers[i].profiles))
            return RT_ENOMEM;
    return put_u32(b, c->producers_other) ? RT_ENOMEM : 0;
}

/* Translates v[0..n) between ids and the store's keys (identity without c->src.keys). */
static int translate(const struct rt__query_ctx *c, enum rt_store_key_kind kind, bool to_keys,
                     uint64_t *v, size_t n)
{
    if (c->src.keys && n)
        return c->src.keys(c->src.ud, kind, to_keys, v, n);
    for (size_t i = 0; !to_keys && i < n; i++)
        if (v[i] > UINT32_MAX)
            return RT_EIO;
    return 0;
}

/* Into *keys (the caller frees it): the keys of c's stacks, then those of the leaves that
 * put_sums writes (a function with an s2 or a capacity value), *nleaves of them. */
static int sum_keys(const struct rt__query_ctx *c, uint64_t **keys, uint32_t *nleaves)
{
    *nleaves = 0;
    for (uint32_t i = 0; i < c->nfns; i++)
        *nleaves += c->fns[i].s2[0] != 0 || instfn_value(c, i) != 0;
    size_t n = (size_t)c->nstacks + *nleaves;
    uint64_t *k = *keys = malloc((n ? n : 1) * sizeof(*k));
    if (!k)
        return RT_ENOMEM;
    for (uint32_t i = 0; i < c->nstacks; i++)
        k[i] = c->stacks[i].id;
    uint64_t *leaves = k + c->nstacks;
    for (uint32_t i = 0, j = 0; i < c->nfns; i++)
        if (c->fns[i].s2[0] != 0 || instfn_value(c, i) != 0)
            leaves[j++] = c->fns[i].frame_id;
    int rc = translate(c, RT_STORE_STACK_KEYS, true, k, c->nstacks);
    return rc ? rc : translate(c, RT_STORE_FRAME_KEYS, true, leaves, *nleaves);
}

static int put_key(struct rt_buf *b, uint64_t key, bool wide)
{
    return wide ? put_u64(b, key) : put_u32(b, (uint32_t)key);
}

static int put_sums(struct rt_buf *b, const struct rt__query_ctx *c, const uint64_t *keys,
                    uint32_t nleaves, bool wide)
{
    if (put_u32(b, c->nstacks))
        return RT_ENOMEM;
    for (uint32_t i = 0; i < c->nstacks; i++)
        if (put_key(b, keys[i], wide) || put_f64(b, c->stacks[i].samples[0]) ||
            put_f64(b, c->stacks[i].value[0]))
            return RT_ENOMEM;
    if (put_u32(b, nleaves))
        return RT_ENOMEM;
    const uint64_t *leaves = keys + c->nstacks;
    for (uint32_t i = 0, j = 0; i < c->nfns; i++) {
        double cap = instfn_value(c, i);
        if ((c->fns[i].s2[0] != 0 || cap != 0) &&
            (put_key(b, leaves[j++], wide) || put_f64(b, c->fns[i].s2[0]) || put_f64(b, cap)))
            return RT_ENOMEM;
    }
    return 0;
}

int rt__query_rollup_encode(const struct rt__query_ctx *c, struct rt_buf *b)
{
    b->len = 0;
    uint64_t *keys = NULL;
    uint32_t nleaves;
    int rc = sum_keys(c, &keys, &nleaves);
    bool wide = false; /* RTR1 while every key fits in 32 bits (SQLite's row ids) */
    for (size_t i = 0; !rc && i < (size_t)c->nstacks + nleaves; i++)
        wide = wide || keys[i] > UINT32_MAX;
    if (!rc && put_u32(b, wide ? ROLLUP_MAGIC_WIDE : ROLLUP_MAGIC))
        rc = RT_ENOMEM;
    if (!rc)
        rc = put_window(b, &c->win[0]);
    if (!rc)
        rc = put_producers(b, c);
    if (!rc)
        rc = put_capacity(b, &c->win[0]);
    if (!rc)
        rc = put_sums(b, c, keys, nleaves, wide);
    free(keys);
    return rc;
}

/* ---- reading ---- */

struct cursor {
    const uint8_t *p;
    size_t left;
    bool bad; /* read past the end, or a count larger than what is left */
};

static uint32_t get_u32(struct cursor *r)
{
    if (r->left < 4) {
        r->bad = true;
        r->left = 0;
        return 0;
    }
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    r->left -= 4;
    return v;
}

static uint64_t get_u64(struct cursor *r)
{
    uint64_t lo = get_u32(r);
    return lo | (uint64_t)get_u32(r) << 32;
}

static double get_f64(struct cursor *r)
{
    uint64_t v = get_u64(r);
    double d;
    memcpy(&d, &v, sizeof(d));
    return d;
}

static bool get_u8(struct cursor *r)
{
    if (r->left < 1) {
        r->bad = true;
        return false;
    }
    r->left--;
    return *r->p++ != 0;
}

/* A string into the context's arena (NULL: none, or bad). */
static const char *get_str(struct cursor *r, struct rt_arena *a)
{
    uint32_t n = get_u32(r);
    if (n == NO_STRING || r->bad)
        return NULL;
    if (n > r->left) {
        r->bad = true;
        return NULL;
    }
    const char *s = rt_arena_strndup(a, (const char *)r->p, n);
    r->p += n;
    r->left -= n;
    if (!s)
        r->bad = true;
    return s;
}

/* A count of entries of at least size bytes each: bad when more than what is left. */
static uint32_t get_count(struct cursor *r, size_t size)
{
    uint32_t n = get_u32(r);
    if (!r->bad && (size_t)n > r->left / size)
        r->bad = true;
    return r->bad ? 0 : n;
}

static void add_window(struct cursor *r, struct rt__query_ctx *c, struct rt__query_win *w)
{
    w->profiles += get_u32(r);
    w->profiles_sampled += get_u32(r);
    w->samples += get_f64(r);
    w->value_ns += get_f64(r);
    bool all = get_u8(r), any = get_u8(r);
    w->all_counts = w->all_counts && all;
    w->any_counts = w->any_counts || any;
    w->truncated_stacks += get_u64(r);
    double sampled = get_f64(r), os = get_f64(r);
    uint32_t profiles = get_u32(r), scaled = get_u32(r);
    bool mixed = get_u8(r), any_process = get_u8(r);
    const char *scope = get_str(r, &c->arena);
    if (r->bad || profiles == 0)
        return;
    if (!scope) {
        r->bad = true;
        return;
    }
    if (mixed || (w->agree_scope && strcmp(w->agree_scope, scope) != 0))
        w->agree_mixed_scope = true;
    w->agree_scope = scope;
    w->agree_sampled_ns += sampled;
    w->agree_os_ns += os;
    w->agree_profiles += profiles;
    w->agree_scaled += scaled;
    w->agree_any_process |= any_process;
}

static void add_producers(struct cursor *r, struct rt__query_ctx *c)
{
    uint32_t n = get_count(r, 12);
    for (uint32_t i = 0; i < n && !r->bad; i++) {
        const char *name = get_str(r, &c->arena);
        uint32_t declared = get_u32(r), profiles = get_u32(r);
        if (declared > RT_PTYPE_WALL) /* 0 (as stored), cpu or wall */
            r->bad = true;
        if (!r->bad)
            rt__query_count_producer(c, rt_producer_by_name(name ? name : "", c->type),
                                     (enum rt_ptype)declared, profiles);
    }
    c->producers_other += get_u32(r);
}

static int add_capacity(struct cursor *r, struct rt__query_win *w, uint32_t inst)
{
    struct rt__query_prof p = {.inst = inst, .summary = true};
    p.count = get_u32(r);
    p.value_ns = get_f64(r);
    p.sampled_ns = get_f64(r);
    p.unsampled_ns = get_f64(r);
    p.os_ns = get_f64(r);
    p.os_count = get_u32(r);
    p.scaled = get_u32(r);
    p.unchecked = get_u32(r);
    uint32_t nspans = get_count(r, 16);
    if (r->bad)
        return RT_EIO;
    if (rt_array_grow((void **)&w->profs, &w->cap_profs, w->nprofs + 1, sizeof(*w->profs)) ||
        rt_array_grow((void **)&w->spans, &w->cap_spans, w->nspans + nspans, sizeof(*w->spans)))
        return RT_ENOMEM;
    if (!p.os_count)
        p.os_ns = -1;
    w->profs[w->nprofs++] = p;
    for (uint32_t i = 0; i < nspans; i++) {
        int64_t lo = (int64_t)get_u64(r), hi = (int64_t)get_u64(r);
        w->spans[w->nspans++] = (struct rt__query_span){inst, lo, hi};
    }
    return 0;
}

/* Reads n (key, f64, f64) entries of key width `wide`, the keys translated to ids of kind. */
static int get_entries(struct cursor *r, struct rt__query_ctx *c, enum rt_store_key_kind kind,
                       bool wide, uint64_t **ids, double **x, uint32_t *n)
{
    *n = get_count(r, wide ? 24 : 20);
    *ids = malloc((*n ? *n : 1) * sizeof(**ids));
    *x = malloc((*n ? *n : 1) * 2 * sizeof(**x));
    if (!*ids || !*x)
        return RT_ENOMEM;
    for (uint32_t i = 0; i < *n && !r->bad; i++) {
        (*ids)[i] = wide ? get_u64(r) : get_u32(r);
        (*x)[2 * i] = get_f64(r);
        (*x)[2 * i + 1] = get_f64(r);
    }
    if (r->bad)
        return RT_EIO;
    int rc = translate(c, kind, false, *ids, *n);
    return rc == RT_ENOTFOUND ? RT_EIO : rc;
}

static int add_sums(struct cursor *r, struct rt__query_ctx *c, int k, uint32_t inst, bool wide)
{
    uint64_t *ids = NULL;
    double *x = NULL;
    uint32_t n;
    int rc = get_entries(r, c, RT_STORE_STACK_KEYS, wide, &ids, &x, &n);
    for (uint32_t i = 0, si; !rc && i < n; i++)
        if (!(rc = rt__query_stack_index(c, (uint32_t)ids[i], &si))) {
            c->stacks[si].samples[k] += x[2 * i];
            c->stacks[si].value[k] += x[2 * i + 1];
        }
    free(ids);
    free(x);
    ids = NULL;
    x = NULL;
    if (!rc)
        rc = get_entries(r, c, RT_STORE_FRAME_KEYS, wide, &ids, &x, &n);
    for (uint32_t i = 0, fn; !rc && i < n; i++) {
        double s2 = x[2 * i], cap = x[2 * i + 1];
        if ((rc = rt__query_fn_index(c, (uint32_t)ids[i], &fn)))
            break;
        c->fns[fn].s2[k] += s2;
        if (c->type == RT_PTYPE_CPU && cap != 0)
            rc = rt__query_add_instfn(c, k, inst, fn, cap);
    }
    free(ids);
    free(x);
    return rc;
}

int rt__query_add_rollup(struct rt__query_ctx *c, int k, const char *instance, const void *data,
                         size_t len)
{
    struct cursor r = {data, data ? len : 0, false};
    uint32_t magic = get_u32(&r);
    if (magic != ROLLUP_MAGIC && magic != ROLLUP_MAGIC_WIDE)
        return RT_EIO;
    uint32_t inst;
    int rc = rt_intern_get(&c->insts, rt_str_from(instance ? instance : ""), &inst);
    if (rc)
        return rc;
    add_window(&r, c, &c->win[k]);
    add_producers(&r, c);
    if (r.bad)
        return RT_EIO;
    bool wide = magic == ROLLUP_MAGIC_WIDE;
    if ((rc = add_capacity(&r, &c->win[k], inst)) || (rc = add_sums(&r, c, k, inst, wide)))
        return rc;
    return r.bad || r.left ? RT_EIO : 0;
}
