/* Window aggregation (DESIGN §6): each profile weighted by its overlap with the window, its
 * rows summed per distinct stack, then the stacks expanded to functions once (self by the
 * leaf frame, total once per stack). Functions are keyed by frame id; names come last. A
 * store that aggregates by itself hands over the sums instead (rt_store_read_window). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/buf.h"
#include "rt/producer.h"

static int store_stack(void *ud, uint32_t id, uint32_t *frames, size_t cap, size_t *depth)
{
    return rt_store_stack(ud, id, frames, cap, depth);
}

static const char *store_frame_name(void *ud, uint32_t id, struct rt_arena *a)
{
    return rt_store_frame_name(ud, id, a);
}

static int store_keys(void *ud, enum rt_store_key_kind kind, bool to_keys, uint64_t *v, size_t n)
{
    return rt_store_keys(ud, kind, to_keys, v, n, NULL);
}

struct rt__query_src rt__query_src_store(struct rt_store *s)
{
    struct rt__query_src src = {store_stack, store_frame_name, s, store_keys};
    return src;
}

void rt__query_ctx_init(struct rt__query_ctx *c, struct rt__query_src src, enum rt_ptype type,
                        int nwin)
{
    memset(c, 0, sizeof(*c));
    c->src = src;
    c->type = type;
    c->nwin = nwin < 1 ? 1 : nwin > 2 ? 2 : nwin;
    for (int k = 0; k < 2; k++)
        c->win[k].all_counts = true;
    c->scratch.probe_ahead = true; /* nothing cached yet */
    rt_u64map_init(&c->fn_map);
    rt_u64map_init(&c->stack_map);
    rt_intern_init(&c->insts);
    rt_arena_init(&c->arena);
    c->counted = true;
    rt__query_contexts(1);
}

void rt__query_ctx_cleanup(struct rt__query_ctx *c)
{
    for (int k = 0; k < 2; k++) {
        free(c->win[k].profs);
        free(c->win[k].live);
        free(c->win[k].spans);
    }
    free(c->fns);
    free(c->stacks);
    free(c->fpool);
    free(c->scratch.stamp);
    free(c->scratch.acc_s);
    free(c->scratch.acc_v);
    free(c->scratch.touched);
    free(c->scratch.row_stack);
    free(c->scratch.stack_cache);
    rt_arena_cleanup(&c->arena);
    rt_u64map_cleanup(&c->fn_map);
    rt_u64map_cleanup(&c->stack_map);
    rt__query_instfn_cleanup(c);
    rt_intern_cleanup(&c->insts);
    if (c->counted) /* a second cleanup finds it all zero */
        rt__query_contexts(-1);
    memset(c, 0, sizeof(*c));
}

void rt__query_ctx_window(struct rt__query_ctx *c, int k, int64_t from_ns, int64_t to_ns)
{
    c->win[k].from_ns = from_ns;
    c->win[k].to_ns = to_ns;
}

/* rt_array_grow for a uint32_t capacity (arrays indexed by uint32_t). */
static int reserve32(void **p, uint32_t *cap, size_t need, size_t elem)
{
    if (need >= UINT32_MAX)
        return RT_ENOMEM;
    size_t c = *cap;
    int rc = rt_array_grow(p, &c, need, elem);
    if (!rc)
        *cap = c > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)c;
    return rc;
}

/* Grows the scratch's per-function arrays to n entries (new stamps 0). */
static int scratch_reserve(struct rt__query_scratch *s, uint32_t n)
{
    if (n <= s->cap)
        return 0;
    uint32_t *stamp = realloc(s->stamp, (size_t)n * sizeof(*stamp));
    if (!stamp)
        return RT_ENOMEM;
    s->stamp = stamp;
    memset(stamp + s->cap, 0, (size_t)(n - s->cap) * sizeof(*stamp));
    double *acc_s = realloc(s->acc_s, (size_t)n * sizeof(*acc_s));
    if (!acc_s)
        return RT_ENOMEM;
    s->acc_s = acc_s;
    memset(acc_s + s->cap, 0, (size_t)(n - s->cap) * sizeof(*acc_s));
    double *acc_v = realloc(s->acc_v, (size_t)n * sizeof(*acc_v));
    if (!acc_v)
        return RT_ENOMEM;
    s->acc_v = acc_v;
    memset(acc_v + s->cap, 0, (size_t)(n - s->cap) * sizeof(*acc_v));
    s->cap = n;
    return 0;
}

static int fn_index(struct rt__query_ctx *c, uint32_t frame_id, uint32_t *out)
{
    if (rt_u64map_find(&c->fn_map, frame_id, out))
        return 0;
    int rc = reserve32((void **)&c->fns, &c->cap_fns, (size_t)c->nfns + 1, sizeof(*c->fns));
    if (!rc)
        rc = scratch_reserve(&c->scratch, c->cap_fns);
    if (!rc)
        rc = rt_u64map_put(&c->fn_map, frame_id, c->nfns);
    if (rc)
        return rc;
    memset(&c->fns[c->nfns], 0, sizeof(c->fns[0]));
    c->fns[c->nfns].frame_id = frame_id;
    *out = c->nfns++;
    return 0;
}

/* Makes the record of stack stack_id (not yet in c) from its frame ids, root first. */
static int new_stack(struct rt__query_ctx *c, uint32_t stack_id, const uint32_t *frames,
                     size_t depth, uint32_t *out)
{
    int rc = rt_array_grow((void **)&c->fpool, &c->cap_fpool, c->nfpool + depth, sizeof(*c->fpool));
    if (!rc && c->nfpool + depth > UINT32_MAX)
        rc = RT_ENOMEM;
    if (!rc)
        rc = reserve32((void **)&c->stacks, &c->cap_stacks, (size_t)c->nstacks + 1,
                       sizeof(*c->stacks));
    for (size_t j = 0; !rc && j < depth; j++)
        rc = fn_index(c, frames[j], &c->fpool[c->nfpool + j]);
    if (!rc)
        rc = rt_u64map_put(&c->stack_map, stack_id, c->nstacks);
    if (rc)
        return rc;
    struct rt__query_stack *st = &c->stacks[c->nstacks];
    memset(st, 0, sizeof(*st));
    st->off = (uint32_t)c->nfpool;
    st->depth = (uint32_t)depth;
    st->leaf = c->fpool[c->nfpool + depth - 1];
    st->id = stack_id;
    c->nfpool += depth;
    *out = c->nstacks++;
    return 0;
}

static int stack_index(struct rt__query_ctx *c, uint32_t stack_id, uint32_t *out)
{
    if (rt_u64map_find(&c->stack_map, stack_id, out))
        return 0;
    uint32_t frames[RT_MAX_STACK_DEPTH + 1];
    size_t depth = 0;
    if (c->src.stack(c->src.ud, stack_id, frames, RT_MAX_STACK_DEPTH + 1, &depth) != 0 ||
        depth == 0)
        return RT_EIO;
    return new_stack(c, stack_id, frames, depth, out);
}

/* A fresh stamp; on wrap-around every function's stamp is reset. */
static uint32_t next_stamp(struct rt__query_scratch *s)
{
    if (++s->seq == 0) {
        memset(s->stamp, 0, (size_t)s->cap * sizeof(*s->stamp));
        s->seq = 1;
    }
    return s->seq;
}

/* How far ahead of its use an entry is prefetched: a row's stack (its index slot and record),
 * a touched function's accumulators. */
#define ROW_AHEAD 8

/* Adds a profile's self samples and value of function fn to its scratch accumulators (tc:
 * the scratch's arrays), which are 0 until touched (flush_touched zeroes them again);
 * tc->touched has room for every function. No branch: which row first touches a function is
 * not predictable. */
struct rt__query_touch {
    uint32_t *touched, *stamp;
    double *acc_s, *acc_v;
    uint32_t seq;
};
static inline void touch(const struct rt__query_touch *tc, uint32_t fn, uint32_t *ntouched,
                         double s, double v)
{
    tc->touched[*ntouched] = fn;
    *ntouched += tc->stamp[fn] != tc->seq;
    tc->stamp[fn] = tc->seq;
    tc->acc_s[fn] += s;
    tc->acc_v[fn] += v;
}

/* Adds v to the self value of function fn in m (rt__query_instfn_of). Returns 0 or
 * RT_ENOMEM. */
static inline int instfn_add(struct rt__query_instfn *m, uint32_t fn, double v)
{
    uint32_t p = fn / RT__QUERY_INSTFN_PAGE;
    double *slot = p < m->nlow && m->low[p] ? m->low[p] + fn % RT__QUERY_INSTFN_PAGE
                                            : rt__query_instfn_slot(m, fn);
    if (!slot)
        return RT_ENOMEM;
    *slot += v;
    return 0;
}

static int add_instfn(struct rt__query_ctx *c, int k, uint32_t inst, uint32_t fn, double v)
{
    struct rt__query_instfn *m = rt__query_instfn_of(c, k, inst);
    return m ? instfn_add(m, fn, v) : RT_ENOMEM;
}

/* Folds the current profile's per-function accumulators into window k; capacity's share of
 * each is its value times the profile's cpu_scale (DESIGN §7). */
static int flush_touched(struct rt__query_ctx *c, int k, uint32_t inst, uint32_t ntouched,
                         double n_i, double cpu_scale)
{
    struct rt__query_scratch *sc = &c->scratch;
    bool cpu = c->type == RT_PTYPE_CPU;
    struct rt__query_instfn *m = cpu ? rt__query_instfn_of(c, k, inst) : NULL;
    int rc = cpu && !m ? RT_ENOMEM : 0;
    const uint32_t *touched = sc->touched;
    double *acc_s = sc->acc_s, *acc_v = sc->acc_v;
    /* Capacity's values first, then the s2 sums in a loop of their own: their divisions do
     * not depend on one another, and without a call between them the CPU overlaps them. */
    for (uint32_t t = 0; cpu && !rc && t < ntouched; t++) {
        uint32_t fn = touched[t];
        if (acc_v[fn] != 0)
            rc = instfn_add(m, fn, acc_v[fn] * cpu_scale);
    }
    struct rt__query_fn *fns = c->fns;
    for (uint32_t t = 0; t < ntouched; t++) {
        uint32_t fn = touched[t];
        if (!rc && n_i > 0)
            fns[fn].s2[k] += acc_s[fn] * acc_s[fn] / n_i;
        acc_s[fn] = acc_v[fn] = 0; /* for the next profile's touch, also after an error */
    }
    return rc;
}

/* The window's counts, and its CPU agreement input (DESIGN §2, §7) when the profile carries
 * the OS figure that covers what its producer sampled. */
static void add_meta(struct rt__query_win *w, const struct rt_profile_meta *m, double weight,
                     double n_i, double v_i, const struct rt_producer *prod, int64_t os)
{
    w->profiles++;
    if (n_i > 0)
        w->profiles_sampled++;
    w->samples += n_i;
    w->value_ns += v_i;
    w->all_counts = w->all_counts && m->has_counts;
    w->any_counts = w->any_counts || m->has_counts;
    w->truncated_stacks += m->truncated_stacks;
    if (os < 0)
        return;
    const char *scope = rt_producer_scope(prod, m->thread_cpu_ns);
    if (w->agree_scope && strcmp(w->agree_scope, scope) != 0)
        w->agree_mixed_scope = true;
    w->agree_scope = scope;
    w->agree_sampled_ns += v_i;
    w->agree_os_ns += weight * (double)os;
    w->agree_profiles++;
    w->agree_scaled += rt_producer_is_scaled(prod);
    w->agree_any_process |= !rt_producer_os_is_thread(prod, m->thread_cpu_ns);
}

/* Counts one profile of producer prod (declared: its declared_type) for the answers' list. */
static void count_producer(struct rt__query_ctx *c, const struct rt_producer *prod,
                           enum rt_ptype declared)
{
    for (uint32_t i = 0; i < c->nproducers; i++)
        if (c->producers[i].producer == prod && c->producers[i].declared_type == declared) {
            c->producers[i].profiles++;
            return;
        }
    if (c->nproducers == RT__QUERY_MAX_PRODUCERS) {
        c->producers_other++;
        return;
    }
    c->producers[c->nproducers++] = (struct rt__query_producer){prod, declared, 1};
}

/* Adds profile m (weight > 0, its weighted samples n_i and value v_i) to window k's counts
 * and capacity input. Returns 0 or RT_ENOMEM; *inst is its instance index. */
static int add_prof(struct rt__query_ctx *c, int k, const struct rt_profile_meta *m,
                    double weight, double n_i, double v_i, uint32_t *inst)
{
    struct rt__query_win *w = &c->win[k];
    int rc = rt_intern_get(&c->insts, rt_str_from(m->instance ? m->instance : ""), inst);
    if (!rc)
        rc = rt_array_grow((void **)&w->profs, &w->cap_profs, w->nprofs + 1, sizeof(*w->profs));
    if (rc)
        return rc;
    const struct rt_producer *prod = rt_producer_by_name(m->producer, c->type);
    int64_t os = rt_producer_os_cpu_ns(prod, m->thread_cpu_ns, m->process_cpu_ns);
    add_meta(w, m, weight, n_i, v_i, prod, os);
    count_producer(c, prod, m->declared_type);
    bool scaled = rt_producer_is_scaled(prod);
    double unsampled = weight * rt_producer_unsampled_ns(prod, os, m->value_ns);
    /* A profile scaled to its OS figure (DESIGN §7) is charged that figure as is: v_i times
     * cpu_scale (os / value) is the same number rounded twice, and the window's CPU would then
     * differ from the sum of its OS figures in the last digit. */
    bool as_os = scaled && os >= 0 && m->value_ns > 0;
    w->profs[w->nprofs++] = (struct rt__query_prof){
        .inst = *inst,
        .start_ns = m->time_ns,
        .duration_ns = m->duration_ns,
        .value_ns = as_os ? weight * (double)os : v_i * m->cpu_scale + unsampled,
        .sampled_ns = v_i,
        .unsampled_ns = unsampled,
        .os_ns = os >= 0 ? weight * (double)os : -1,
        .scaled = scaled && os >= 0,
        .unchecked = scaled && os < 0};
    return 0;
}

/* The stack index of each row of a profile into c->scratch.row_stack (UINT32_MAX for a row
 * with neither samples nor value): from the stack cache when it holds the row's stack, else
 * from stack_map (which makes the stack's record when it is new), then cached. On a large
 * window the map's probes and the stack records miss the CPU's cache (random stack ids);
 * prefetching the probe ROW_AHEAD rows ahead, and each record as soon as it is known, lets
 * the misses overlap (memory-level parallelism). The probes are prefetched only while most
 * rows miss the stack cache: a prefetch costs about what a cached row costs. */
static int row_stacks(struct rt__query_ctx *c, const struct rt_store_row *rows, size_t nrows)
{
    struct rt__query_scratch *sc = &c->scratch;
    if (rt_array_grow((void **)&sc->row_stack, &sc->cap_row_stack, nrows + 1,
                      sizeof(*sc->row_stack)))
        return RT_ENOMEM;
    size_t want = RT__QUERY_STACK_CACHE_MIN;
    size_t most = (size_t)c->nstacks + nrows; /* stacks met after this profile */
    while (want < most * 2 && want < RT__QUERY_STACK_CACHE)
        want *= 2;
    if (want > sc->nstack_cache) { /* made again, empty */
        free(sc->stack_cache);
        sc->nstack_cache = 0;
        if (!(sc->stack_cache = calloc(want, sizeof(*sc->stack_cache))))
            return RT_ENOMEM;
        sc->nstack_cache = want;
    }
    size_t mask = sc->nstack_cache - 1;
    bool ahead = sc->probe_ahead;
    for (size_t r = 0; ahead && r < nrows && r < ROW_AHEAD; r++)
        rt_u64map_prefetch(&c->stack_map, rows[r].stack_id);
    size_t n = 0, misses = 0;
    /* In locals (the compiler would load them again for every row); a miss may grow stacks. */
    uint32_t *row_stack = sc->row_stack;
    struct rt__query_cached_stack *cache = sc->stack_cache;
    const struct rt__query_stack *stacks = c->stacks;
    for (size_t r = 0; r < nrows; r++) {
        if (ahead && r + ROW_AHEAD < nrows)
            rt_u64map_prefetch(&c->stack_map, rows[r + ROW_AHEAD].stack_id);
        row_stack[r] = UINT32_MAX;
        if (rows[r].samples == 0 && rows[r].value_ns == 0)
            continue;
        uint32_t id = rows[r].stack_id, idx;
        struct rt__query_cached_stack *e = &cache[id & mask];
        n++;
        if (e->idx1 && e->id == id) {
            idx = e->idx1 - 1;
        } else {
            int rc = stack_index(c, id, &idx);
            if (rc)
                return rc;
            *e = (struct rt__query_cached_stack){id, idx + 1};
            misses++;
            stacks = c->stacks;
        }
        row_stack[r] = idx;
        __builtin_prefetch(&stacks[idx]);
    }
    sc->probe_ahead = misses * 4 > n;
    return 0;
}

int rt__query_add_profile(struct rt__query_ctx *c, int k, const struct rt_profile_meta *m,
                          const struct rt_store_row *rows, size_t nrows)
{
    struct rt__query_win *w = &c->win[k];
    double weight = rt_profile_window_weight(m->time_ns, m->duration_ns, w->from_ns, w->to_ns);
    if (!(weight > 0))
        return 0;
    uint32_t inst;
    int rc = rt_intern_get(&c->insts, rt_str_from(m->instance ? m->instance : ""), &inst);
    rc = rc ? rc : row_stacks(c, rows, nrows);
    rc = rc ? rc : reserve32((void **)&c->scratch.touched, &c->scratch.cap_touched,
                             (size_t)c->nfns + 1, sizeof(*c->scratch.touched));
    if (rc)
        return rc;
    next_stamp(&c->scratch);
    uint32_t ntouched = 0;
    double n_i = 0, v_i = 0;
    /* The scratch arrays in locals: stores through the doubles would otherwise make the
     * compiler load each pointer again for every row. */
    struct rt__query_touch tc = {c->scratch.touched, c->scratch.stamp, c->scratch.acc_s,
                                 c->scratch.acc_v, c->scratch.seq};
    const uint32_t *row_stack = c->scratch.row_stack;
    struct rt__query_stack *stacks = c->stacks;
    for (size_t r = 0; r < nrows; r++) {
        uint32_t si = row_stack[r];
        if (si == UINT32_MAX)
            continue;
        struct rt__query_stack *st = &stacks[si];
        double s = rows[r].samples * weight, v = (double)rows[r].value_ns * weight;
        st->samples[k] += s;
        st->value[k] += v;
        n_i += s;
        v_i += v;
        touch(&tc, st->leaf, &ntouched, s, v);
    }
    rc = flush_touched(c, k, inst, ntouched, n_i, m->cpu_scale);
    return rc ? rc : add_prof(c, k, m, weight, n_i, v_i, &inst);
}

int rt__query_add_liveness(struct rt__query_ctx *c, int k, const char *instance,
                           int64_t first_ns, int64_t last_ns)
{
    struct rt__query_win *w = &c->win[k];
    if (first_ns < w->from_ns)
        first_ns = w->from_ns;
    if (last_ns > w->to_ns)
        last_ns = w->to_ns;
    if (last_ns < first_ns)
        return 0;
    uint32_t inst;
    int rc = rt_intern_get(&c->insts, rt_str_from(instance ? instance : ""), &inst);
    if (!rc)
        rc = rt_array_grow((void **)&w->live, &w->cap_live, w->nlive + 1, sizeof(*w->live));
    if (rc)
        return rc;
    w->live[w->nlive++] = (struct rt__query_live){inst, first_ns, last_ns};
    return 0;
}

/* Self and total of every function, each stack expanded once (recursion counted once). */
static void expand_stacks(struct rt__query_ctx *c)
{
    for (uint32_t s = 0; s < c->nstacks; s++) {
        const struct rt__query_stack *st = &c->stacks[s];
        uint32_t stamp = next_stamp(&c->scratch);
        const uint32_t *fp = c->fpool + st->off;
        for (uint32_t j = 0; j < st->depth; j++) {
            struct rt__query_fn *f = &c->fns[fp[j]];
            if (c->scratch.stamp[fp[j]] == stamp)
                continue;
            c->scratch.stamp[fp[j]] = stamp;
            for (int k = 0; k < c->nwin; k++) {
                f->total_s[k] += st->samples[k];
                f->total_v[k] += st->value[k];
            }
        }
        struct rt__query_fn *leaf = &c->fns[fp[st->depth - 1]];
        for (int k = 0; k < c->nwin; k++) {
            leaf->self_s[k] += st->samples[k];
            leaf->self_v[k] += st->value[k];
        }
    }
}

static int window_capacity(struct rt__query_ctx *c, int k)
{
    struct rt__query_win *w = &c->win[k];
    uint32_t ninst = c->insts.count;
    w->inst_cap = rt_arena_calloc(&c->arena, ninst ? ninst : 1, sizeof(*w->inst_cap));
    if (!w->inst_cap)
        return RT_ENOMEM;
    struct rt__query_cap_in in = {w->from_ns, w->to_ns, ninst,   w->profs, w->nprofs,
                                  w->live,    w->nlive, w->spans, w->nspans};
    return rt__query_capacity(&in, w->inst_cap, &w->cap);
}

/* Sets f->name from the source. A name that is not valid UTF-8 (stored before ingest
 * repaired names) is repaired here (U+FFFD per invalid byte, as ingest now does), so that no
 * answer fails on it. Returns 0 or RT_ENOMEM. */
static int resolve_name(struct rt__query_ctx *c, struct rt__query_fn *f)
{
    const char *name = c->src.frame_name(c->src.ud, f->frame_id, &c->arena);
    struct rt_str s = rt_str_from(name ? name : "[unknown]");
    if (!rt_str_is_utf8(s)) {
        size_t len;
        char *repaired = rt_str_dup_utf8(s, &len);
        s.ptr = repaired ? rt_arena_strndup(&c->arena, repaired, len) : NULL;
        free(repaired);
        if (!s.ptr)
            return RT_ENOMEM;
    }
    f->name = s.ptr;
    return 0;
}

int rt__query_finish(struct rt__query_ctx *c)
{
    if (c->finished)
        return 0;
    for (uint32_t i = 0; i < c->nfns; i++) {
        int rc = resolve_name(c, &c->fns[i]);
        if (rc)
            return rc;
    }
    expand_stacks(c);
    for (int k = 0; k < c->nwin; k++) {
        int rc = window_capacity(c, k);
        if (rc)
            return rc;
    }
    rt__query_instfn_fold(c);
    c->finished = true;
    return 0;
}

/* ---- for rollup.c ---- */

int rt__query_fn_index(struct rt__query_ctx *c, uint32_t frame_id, uint32_t *out)
{
    return fn_index(c, frame_id, out);
}

int rt__query_stack_index(struct rt__query_ctx *c, uint32_t stack_id, uint32_t *out)
{
    return stack_index(c, stack_id, out);
}

int rt__query_stack_index_of(struct rt__query_ctx *c, uint32_t stack_id, const uint32_t *frames,
                             size_t depth, uint32_t *out)
{
    if (rt_u64map_find(&c->stack_map, stack_id, out))
        return 0;
    return depth ? new_stack(c, stack_id, frames, depth, out) : RT_EIO;
}

int rt__query_add_instfn(struct rt__query_ctx *c, int k, uint32_t inst, uint32_t fn, double v)
{
    return add_instfn(c, k, inst, fn, v);
}

void rt__query_count_producer(struct rt__query_ctx *c, const struct rt_producer *prod,
                              enum rt_ptype declared, uint32_t n)
{
    if (n == 0)
        return;
    count_producer(c, prod, declared);
    for (uint32_t i = 0; i < c->nproducers; i++) /* the rest of n at once */
        if (c->producers[i].producer == prod && c->producers[i].declared_type == declared) {
            c->producers[i].profiles += n - 1;
            return;
        }
    c->producers_other += n - 1;
}

/* Scan state passed through the store's callbacks. */
struct scan_ud {
    struct rt__query_ctx *c;
    int k;
    const struct rt_store_filter *f;
    const uint8_t *profiled; /* per instance: has a profile in the window (version filter) */
};

/* True when the other window of a diff read at once failed (rt__query_ctx.abandon): this
 * one stops, its answer unused. */
static bool abandoned(const struct scan_ud *u)
{
    return u->c->abandon && atomic_load_explicit(u->c->abandon, memory_order_relaxed);
}

static int scan_profile_cb(void *ud, const struct rt_profile_meta *m,
                           const struct rt_store_row *rows, size_t nrows)
{
    struct scan_ud *u = ud;
    if (abandoned(u))
        return RT_ECANCELED;
    return rt__query_add_profile(u->c, u->k, m, rows, nrows);
}

/* ---- windows the store aggregated itself (rt_store_scan_window): the same context state
 * as rt__query_add_profile builds row by row ---- */

static int agg_profile(void *ud, const struct rt_profile_meta *m, double weight, double n_i,
                       double v_i)
{
    struct scan_ud *u = ud;
    uint32_t inst;
    if (abandoned(u))
        return RT_ECANCELED;
    return add_prof(u->c, u->k, m, weight, n_i, v_i, &inst);
}

static int agg_stack(void *ud, uint32_t stack_id, double samples, double value_ns)
{
    struct scan_ud *u = ud;
    uint32_t si;
    int rc = stack_index(u->c, stack_id, &si);
    if (rc)
        return rc;
    u->c->stacks[si].samples[u->k] += samples;
    u->c->stacks[si].value[u->k] += value_ns;
    return 0;
}

static int agg_instance_leaf(void *ud, const char *instance, uint32_t frame_id, double value_ns)
{
    struct scan_ud *u = ud;
    if (u->c->type != RT_PTYPE_CPU || value_ns == 0)
        return 0;
    uint32_t inst, fn;
    int rc = rt_intern_get(&u->c->insts, rt_str_from(instance ? instance : ""), &inst);
    if (!rc)
        rc = fn_index(u->c, frame_id, &fn);
    return rc ? rc : add_instfn(u->c, u->k, inst, fn, value_ns);
}

static int agg_leaf_s2(void *ud, uint32_t frame_id, double s2)
{
    struct scan_ud *u = ud;
    uint32_t fn;
    int rc = fn_index(u->c, frame_id, &fn);
    if (!rc)
        u->c->fns[fn].s2[u->k] += s2;
    return rc;
}

static const struct rt_store_window_cb window_cbs = {agg_profile, agg_stack, agg_instance_leaf,
                                                     agg_leaf_s2};
static int scan_rollup_cb(void *ud, const char *instance, const char *version,
                          const void *data, size_t len)
{
    (void)version;
    struct scan_ud *u = ud;
    if (abandoned(u))
        return RT_ECANCELED;
    return rt__query_add_rollup(u->c, u->k, instance, data, len);
}

static const struct rt_store_window_reader window_reader = {scan_profile_cb, &window_cbs,
                                                            scan_rollup_cb};

static int scan_liveness_cb(void *ud, const struct rt_liveness *l)
{
    struct scan_ud *u = ud;
    const char *name = l->instance ? l->instance : "";
    if (u->f->instance && strcmp(u->f->instance, name) != 0)
        return 0;
    if (u->profiled) {
        int64_t inst = rt_intern_find(&u->c->insts, rt_str_from(name));
        if (inst < 0 || !u->profiled[inst])
            return 0;
    }
    return rt__query_add_liveness(u->c, u->k, name, l->first_ns, l->last_ns);
}

static int scan_error(int rc, struct rt_error *err, const char *what)
{
    if (rc == RT_ENOMEM)
        return rt_error_set(err, RT_ENOMEM, "out of memory while aggregating %s", what);
    if (err && err->code == rc)
        return rc; /* the store said why */
    if (rc == RT_EIO)
        return rt_error_set(err, RT_EIO, "store error while reading %s", what);
    return rt_error_set(err, rc < 0 ? rc : RT_EIO, "error while reading %s", what);
}

int rt__query_scan(struct rt__query_ctx *c, int k, struct rt_store *s,
                   const struct rt_store_filter *f, struct rt_error *err)
{
    rt__query_ctx_window(c, k, f->from_ns, f->to_ns);
    if (f->to_ns <= f->from_ns)
        return 0;
    struct scan_ud u = {c, k, f, NULL};
    rt_error_clear(err);
    /* rows summed here, or sums made by the store (rt_store_read_window chooses) */
    int rc = rt_store_read_window(s, f, &window_reader, &u, err);
    if (rc)
        return scan_error(rc, err, "profiles");
    uint8_t *profiled = NULL;
    if (f->version) { /* polls carry no version: keep only instances seen with this one */
        profiled = rt_arena_calloc(&c->arena, c->insts.count + 1, 1);
        if (!profiled)
            return rt_error_set(err, RT_ENOMEM, "out of memory");
        for (size_t i = 0; i < c->win[k].nprofs; i++)
            profiled[c->win[k].profs[i].inst] = 1;
        u.profiled = profiled;
    }
    rc = rt_store_scan_liveness(s, f->service, f->from_ns, f->to_ns, scan_liveness_cb, &u, err);
    if (rc)
        return scan_error(rc, err, "liveness");
    return 0;
}
