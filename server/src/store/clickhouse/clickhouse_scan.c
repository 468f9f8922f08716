/* ClickHouse backend, the window scan: one SELECT of the profiles overlapping the window
 * (profile_id deduplicated with LIMIT 1 BY), then the stacks and frames this process has not
 * seen loaded in batches and given local ids, then one callback per profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/str.h"

/* One profile of the answer. */
struct sprof {
    struct rt_profile_meta m;       /* strings set after parsing */
    size_t pid, inst, ver, prod;    /* offsets of the strings in scan_ctx.strs */
    bool has_pid, has_ver;
    size_t row_off, nrows;          /* its rows in scan_ctx.stacks/samples/values */
};

/* State of one scan. */
struct scan_ctx {
    struct rt_store *s;
    struct rt__ch *ch;
    struct rt_buf strs;             /* the profiles' strings, NUL-terminated */
    struct sprof *profs;
    size_t nprofs, cap_profs;
    uint64_t *stacks;               /* rows: ClickHouse stack id, samples, value */
    double *samples;
    int64_t *values;
    size_t nrows, cap_rows, cap_samples, cap_values;
    uint64_t *ids;                  /* scratch: ids to load */
    size_t nids, cap_ids;
    uint32_t *lids;                 /* the rows' local stack ids found before loading (0: not) */
};

/* Appends a string read from r to c->strs; its offset in *off. */
static int read_str(struct scan_ctx *c, struct rt__ch_rd *r, size_t *off)
{
    size_t n;
    const char *p = rt__ch_rd_str(r, &n);
    *off = c->strs.len;
    if (rt_buf_append(&c->strs, p, n) || rt_buf_append(&c->strs, "", 1))
        return RT_ENOMEM;
    return 0;
}

/* Reads an array length and makes room for that many more rows. */
static int read_len(struct scan_ctx *c, struct rt__ch_rd *r, size_t *n)
{
    uint64_t len = rt__ch_rd_uvarint(r);
    if (r->bad || len > (uint64_t)(r->end - r->p) / 8)
        return RT_EMALFORMED;
    *n = (size_t)len;
    size_t need = c->nrows + *n + 1;
    if (rt_array_grow((void **)&c->stacks, &c->cap_rows, need, sizeof(*c->stacks)) ||
        rt_array_grow((void **)&c->samples, &c->cap_samples, need, sizeof(*c->samples)) ||
        rt_array_grow((void **)&c->values, &c->cap_values, need, sizeof(*c->values)))
        return RT_ENOMEM;
    return 0;
}

/* Reads one profile row of the scan's SELECT. */
static int read_profile(struct scan_ctx *c, struct rt__ch_rd *r)
{
    if (rt_array_grow((void **)&c->profs, &c->cap_profs, c->nprofs + 1, sizeof(*c->profs)))
        return RT_ENOMEM;
    struct sprof *p = &c->profs[c->nprofs];
    memset(p, 0, sizeof(*p));
    p->m.id = (int64_t)rt__ch_rd_u64(r);
    p->has_pid = rt__ch_rd_u8(r) != 0;
    if (read_str(c, r, &p->pid) || read_str(c, r, &p->inst))
        return RT_ENOMEM;
    p->has_ver = rt__ch_rd_u8(r) != 0;
    if (read_str(c, r, &p->ver))
        return RT_ENOMEM;
    p->m.time_ns = rt__ch_rd_i64(r);
    p->m.duration_ns = rt__ch_rd_i64(r);
    p->m.period_ns = rt__ch_rd_i64(r);
    p->m.thread_cpu_ns = rt__ch_rd_i64(r);
    p->m.process_cpu_ns = rt__ch_rd_i64(r);
    p->m.samples = rt__ch_rd_f64(r);
    p->m.value_ns = rt__ch_rd_i64(r);
    p->m.has_counts = rt__ch_rd_u8(r) != 0;
    p->m.truncated_stacks = rt__ch_rd_u32(r);
    /* the three arrays, of one length (read_len bounds it by what the answer holds) */
    size_t n, n2, n3;
    int rc = read_len(c, r, &n);
    if (!rc)
        rt__ch_rd_le64s(r, c->stacks + c->nrows, n);
    rc = rc ? rc : read_len(c, r, &n2);
    if (!rc && n2 == n)
        rt__ch_rd_le64s(r, c->samples + c->nrows, n);
    rc = rc ? rc : n2 != n ? RT_EMALFORMED : read_len(c, r, &n3);
    if (!rc && n3 == n)
        rt__ch_rd_le64s(r, c->values + c->nrows, n);
    rc = rc ? rc : n3 != n ? RT_EMALFORMED : 0;
    if (rc)
        return rc;
    if (read_str(c, r, &p->prod))
        return RT_ENOMEM;
    p->m.cpu_scale = rt__ch_rd_f64(r);
    p->m.declared_type = rt__store_declared_type_of(rt__ch_rd_u8(r));
    if (r->bad)
        return RT_EMALFORMED;
    p->row_off = c->nrows;
    p->nrows = n;
    c->nrows += n;
    c->nprofs++;
    return 0;
}

int rt__ch_filter_sql(struct rt_buf *b, const struct rt_store_filter *f)
{
    return rt__ch_filter_sql_from(b, f, INT64_MIN);
}

int rt__ch_earliest_sql(struct rt_buf *sql, const struct rt_store_filter *f)
{
    return rt_buf_puts(sql, "SELECT max(end_ns - time_ns) FROM profiles WHERE service = ") ||
                   rt__ch_quote_cstr(sql, f->service) ||
                   rt_buf_printf(sql, " AND type = %d FORMAT RowBinary", (int)f->type)
               ? RT_ENOMEM
               : 0;
}

int rt__ch_earliest_read(const struct rt_buf *out, const struct rt_store_filter *f,
                         int64_t *earliest, struct rt_error *err)
{
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    int64_t longest = rt__ch_rd_i64(&r);
    /* from_ns - longest, saturated: INT64_MIN asks for the subquery bound instead
     * (rt__ch_filter_sql_from), also for a window before 1970 */
    *earliest = longest <= 0 ? f->from_ns
                : f->from_ns >= INT64_MIN + longest ? f->from_ns - longest
                                                     : INT64_MIN;
    return r.bad ? rt__ch_bad_response("the longest profile", err) : 0;
}

int rt__ch_filter_sql_from(struct rt_buf *b, const struct rt_store_filter *f, int64_t earliest)
{
    bool before = earliest == INT64_MIN;
    int rc = rt_buf_puts(b, "service = ");
    rc = rc || rt__ch_quote_cstr(b, f->service);
    rc = rc || rt_buf_printf(b, " AND type = %d AND time_ns < %lld AND end_ns > %lld",
                             (int)f->type, (long long)f->to_ns, (long long)f->from_ns);
    /* the longest stored profile bounds how far before the window one may start */
    if (before) {
        rc = rc || rt_buf_printf(b, " AND time_ns >= %lld - (SELECT max(end_ns - time_ns) FROM "
                                    "profiles WHERE service = ", (long long)f->from_ns);
        rc = rc || rt__ch_quote_cstr(b, f->service);
        rc = rc || rt_buf_printf(b, " AND type = %d)", (int)f->type);
    } else {
        rc = rc || rt_buf_printf(b, " AND time_ns >= %lld", (long long)earliest);
    }
    if (f->version) {
        rc = rc || rt_buf_puts(b, " AND has_version = 1 AND version = ");
        rc = rc || rt__ch_quote_cstr(b, f->version);
    }
    if (f->instance) {
        rc = rc || rt_buf_puts(b, " AND instance = ");
        rc = rc || rt__ch_quote_cstr(b, f->instance);
    }
    return rc ? RT_ENOMEM : 0;
}

/* The columns a scan reads, in read_profile's order. */
#define SCAN_COLS                                                                          \
    "SELECT id, has_pid, profile_id, instance, has_version, version, time_ns, duration_ns, " \
    "period_ns, thread_cpu_ns, process_cpu_ns, samples, value_ns, has_counts, "             \
    "truncated_stacks, stacks, row_samples, row_values, producer, cpu_scale, declared_type " \
    "FROM profiles "

/* Deduplicated, in time order. */
#define SCAN_ORDER " ORDER BY time_ns, id LIMIT 1 BY dedup FORMAT RowBinary"

/* The SELECT of a filter's profiles that start in [lo, hi) (lo INT64_MIN: no lower bound). */
static int scan_sql(struct rt_buf *b, const struct rt_store_filter *f, int64_t lo, int64_t hi)
{
    int rc = rt_buf_puts(b, SCAN_COLS "WHERE ");
    /* with lo, only profiles that start inside: lo bounds their start */
    rc = rc || rt__ch_filter_sql_from(b, f, lo == INT64_MIN ? INT64_MIN : f->from_ns);
    if (lo != INT64_MIN)
        rc = rc || rt_buf_printf(b, " AND time_ns >= %lld", (long long)lo);
    rc = rc || rt_buf_printf(b, " AND time_ns < %lld", (long long)hi);
    rc = rc || rt_buf_puts(b, SCAN_ORDER);
    return rc ? RT_ENOMEM : 0;
}

/* Runs "SELECT id, <col> FROM table WHERE id IN (ids[from..to)) LIMIT 1 BY id". */
static int select_ids(struct rt__ch *ch, const char *cols, const char *table,
                      const uint64_t *ids, size_t n, struct rt_buf *out, struct rt_error *err)
{
    struct rt_buf sql;
    rt_buf_init(&sql, 0);
    int rc = rt_buf_printf(&sql, "SELECT %s FROM %s WHERE id IN (", cols, table);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt_buf_printf(&sql, "%s%llu", i ? "," : "", (unsigned long long)ids[i]);
    rc = rc || rt_buf_puts(&sql, ") LIMIT 1 BY id FORMAT RowBinary");
    rc = rc ? rt_error_set(err, RT_ENOMEM, "out of memory") : rt__ch_run(ch, &sql, out, err);
    rt_buf_cleanup(&sql);
    return rc;
}

/* Collects into c->ids the stack ids of ids[0..n) this process has no local id for; with
 * lids, the local id of each of ids (0 for those) into lids[0..n). */
static int missing_stacks(struct scan_ctx *c, const uint64_t *ids, size_t n, uint32_t *lids)
{
    struct rt_u64map seen = {0};
    int rc = 0;
    c->nids = 0;
    pthread_rwlock_rdlock(&c->s->dict_lock);
    for (size_t i = 0; !rc && i < n; i++) {
        uint64_t id = ids[i];
        uint32_t lid = rt__ch_idmap_get(&c->ch->stack_ids, id);
        if (lids)
            lids[i] = lid;
        if (lid || rt__ch_idmap_get(&seen, id))
            continue;
        rc = rt_u64map_put(&seen, id, 1) ||
             rt_array_grow((void **)&c->ids, &c->cap_ids, c->nids + 1, sizeof(*c->ids));
        if (!rc)
            c->ids[c->nids++] = id;
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
    rt_u64map_cleanup(&seen);
    return rc ? RT_ENOMEM : 0;
}

/* Loads the frames of ids[0..n) that have no local id, and gives them one. */
static int load_frames(struct scan_ctx *c, const uint64_t *ids, size_t n, struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, RT__CH_MAX_RESPONSE);
    int rc = select_ids(c->ch, "id, name", "frames", ids, n, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    pthread_rwlock_wrlock(&c->s->dict_lock);
    while (!rc && rt__ch_rd_more(&r)) {
        uint64_t id = rt__ch_rd_u64(&r);
        size_t len;
        const char *name = rt__ch_rd_str(&r, &len);
        if (r.bad) {
            rc = rt__ch_bad_response("a frame query", err);
            break;
        }
        if (rt__ch_idmap_get(&c->ch->frame_ids, id))
            continue;
        uint32_t lid = c->ch->nframes + 1;
        if (rt__store_dict_add_frame(&c->s->dict, lid, name, len, id) ||
            rt_u64map_put(&c->ch->frame_ids, id, lid))
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        else
            c->ch->nframes = lid;
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
    rt_buf_cleanup(&out);
    return rc;
}

/* The frame ids of a stacks answer that have no local id, into c->ids. */
static int missing_frames(struct scan_ctx *c, const struct rt_buf *stacks)
{
    struct rt_u64map seen = {0};
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, stacks);
    int rc = 0;
    c->nids = 0;
    pthread_rwlock_rdlock(&c->s->dict_lock);
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_rd_u64(&r);
        uint64_t depth = rt__ch_rd_uvarint(&r);
        for (uint64_t k = 0; !rc && k < depth && !r.bad; k++) {
            uint64_t f = rt__ch_rd_u64(&r);
            if (rt__ch_idmap_get(&c->ch->frame_ids, f) || rt__ch_idmap_get(&seen, f))
                continue;
            rc = rt_u64map_put(&seen, f, 1) ||
                 rt_array_grow((void **)&c->ids, &c->cap_ids, c->nids + 1, sizeof(*c->ids));
            if (!rc)
                c->ids[c->nids++] = f;
        }
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
    rt_u64map_cleanup(&seen);
    return rc ? RT_ENOMEM : 0;
}

/* Gives the stacks of a stacks answer local ids (their frames have them by now). */
static int add_stacks(struct scan_ctx *c, const struct rt_buf *stacks, struct rt_error *err)
{
    uint32_t local[RT_MAX_STACK_DEPTH];
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, stacks);
    int rc = 0;
    pthread_rwlock_wrlock(&c->s->dict_lock);
    while (!rc && rt__ch_rd_more(&r)) {
        uint64_t id = rt__ch_rd_u64(&r);
        uint64_t depth = rt__ch_rd_uvarint(&r);
        bool ok = depth <= RT_MAX_STACK_DEPTH;
        for (uint64_t k = 0; ok && k < depth; k++)
            ok = (local[k] = rt__ch_idmap_get(&c->ch->frame_ids, rt__ch_rd_u64(&r))) != 0;
        if (r.bad || !ok) {
            rc = rt_error_set(err, RT_EIO, "stack %016llx: unreadable or a frame is missing",
                              (unsigned long long)id);
            break;
        }
        if (rt__ch_idmap_get(&c->ch->stack_ids, id))
            continue;
        uint32_t lid = c->ch->nstacks + 1;
        if (rt__store_dict_add_stack(&c->s->dict, lid, local, (size_t)depth, id) ||
            rt_u64map_put(&c->ch->stack_ids, id, lid))
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        else
            c->ch->nstacks = lid;
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
    return rc;
}

/* Loads every stack of ids[0..n) that this process has not seen, with its frames; lids as
 * missing_stacks'. */
static int resolve(struct scan_ctx *c, const uint64_t *ids, size_t n, uint32_t *lids,
                   struct rt_error *err)
{
    if (missing_stacks(c, ids, n, lids))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    size_t nstack_ids = c->nids;
    uint64_t *stack_ids = c->ids;
    c->ids = NULL;
    c->nids = c->cap_ids = 0;
    int rc = 0;
    struct rt_buf out;
    rt_buf_init(&out, RT__CH_MAX_RESPONSE);
    for (size_t at = 0; !rc && at < nstack_ids; at += RT__CH_IN_BATCH) {
        size_t batch = nstack_ids - at < RT__CH_IN_BATCH ? nstack_ids - at : RT__CH_IN_BATCH;
        rc = select_ids(c->ch, "id, frames", "stacks", stack_ids + at, batch, &out, err);
        if (!rc && missing_frames(c, &out))
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        for (size_t f = 0; !rc && f < c->nids; f += RT__CH_IN_BATCH)
            rc = load_frames(c, c->ids + f,
                             c->nids - f < RT__CH_IN_BATCH ? c->nids - f : RT__CH_IN_BATCH, err);
        if (!rc)
            rc = add_stacks(c, &out, err);
    }
    rt_buf_cleanup(&out);
    free(stack_ids);
    return rc;
}

/* Calls cb for each profile with its rows in local stack ids. */
static int deliver(struct scan_ctx *c, rt_store_profile_cb cb, void *ud, struct rt_error *err)
{
    struct rt_store_row *rows = NULL;
    size_t cap = 0;
    int ret = 0;
    for (size_t i = 0; !ret && i < c->nprofs; i++) {
        struct sprof *p = &c->profs[i];
        if (rt_array_grow((void **)&rows, &cap, p->nrows + 1, sizeof(*rows))) {
            ret = rt_error_set(err, RT_ENOMEM, "out of memory");
            break;
        }
        pthread_rwlock_rdlock(&c->s->dict_lock);
        for (size_t k = 0; k < p->nrows && !ret; k++) {
            size_t j = p->row_off + k;
            uint32_t lid = c->lids[j];
            if (!lid) /* loaded by resolve */
                lid = rt__ch_idmap_get(&c->ch->stack_ids, c->stacks[j]);
            if (!lid)
                ret = rt_error_set(err, RT_EIO, "profile %lld names unknown stack %016llx",
                                   (long long)p->m.id, (unsigned long long)c->stacks[j]);
            rows[k] = (struct rt_store_row){lid, c->samples[j], c->values[j]};
        }
        pthread_rwlock_unlock(&c->s->dict_lock);
        if (ret)
            break;
        p->m.profile_id = p->has_pid ? c->strs.data + p->pid : NULL;
        p->m.instance = c->strs.data + p->inst;
        p->m.version = p->has_ver ? c->strs.data + p->ver : NULL;
        p->m.producer = c->strs.data + p->prod;
        ret = cb(ud, &p->m, rows, p->nrows);
    }
    free(rows);
    return ret;
}

int rt__ch_resolve_stacks(struct rt_store *s, const uint64_t *ids, size_t n,
                          struct rt_error *err)
{
    struct scan_ctx c = {.s = s, .ch = s->be};
    int rc = resolve(&c, ids, n, NULL, err);
    free(c.ids);
    return rc;
}

int rt__ch_take_scan(struct rt_store *s, struct rt_buf *out, rt_store_profile_cb cb, void *ud,
                     struct rt_error *err)
{
    struct scan_ctx c = {.s = s, .ch = s->be};
    rt_buf_init(&c.strs, 0);
    int rc = 0;
    /* Each row takes 24 bytes of the answer (an element of each of its three arrays), so the
     * answer's length bounds its rows: the arrays are made once at that size and never grow
     * (growing copies what they hold: ~4 % of an issue diff at :23, perf). */
    size_t most = out->len / 24 + 1;
    c.stacks = malloc(most * sizeof(*c.stacks));
    c.samples = malloc(most * sizeof(*c.samples));
    c.values = malloc(most * sizeof(*c.values));
    if (!c.stacks || !c.samples || !c.values)
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    else
        c.cap_rows = c.cap_samples = c.cap_values = most;
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    while (!rc && rt__ch_rd_more(&r)) {
        rc = read_profile(&c, &r);
        if (rc == RT_ENOMEM)
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        else if (rc)
            rc = rt__ch_bad_response("a profile scan", err);
    }
    rt_buf_cleanup(out);
    if (!rc && !(c.lids = malloc((c.nrows ? c.nrows : 1) * sizeof(*c.lids))))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    if (!rc)
        rc = resolve(&c, c.stacks, c.nrows, c.lids, err);
    if (!rc)
        rc = deliver(&c, cb, ud, err);
    rt_buf_cleanup(&c.strs);
    free(c.profs);
    free(c.stacks);
    free(c.samples);
    free(c.values);
    free(c.ids);
    free(c.lids);
    return rc;
}

/* Scans the profiles of f that start in [lo, hi), in time order. */
static int scan_slice(struct rt_store *s, const struct rt_store_filter *f, int64_t lo, int64_t hi,
                      rt_store_profile_cb cb, void *ud, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, RT__CH_MAX_RESPONSE);
    int rc = scan_sql(&sql, f, lo, hi) ? rt_error_set(err, RT_ENOMEM, "out of memory")
                                       : rt__ch_run(s->be, &sql, &out, err);
    rt_buf_cleanup(&sql);
    rc = rc ? rc : rt__ch_take_scan(s, &out, cb, ud, err);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_part_sql(struct rt_buf *sql, const struct rt_store_filter *f, const char *exclude,
                    const char *keep, int64_t earliest)
{
    return rt_buf_puts(sql, SCAN_COLS "PREWHERE ") || rt__ch_filter_sql_from(sql, f, earliest) ||
                   rt_buf_printf(sql, " AND (%s) AND NOT (%s)" SCAN_ORDER, keep, exclude)
               ? RT_ENOMEM
               : 0;
}

/* The slices of RT__CH_SCAN_SLICE_NS from f->from_ns that hold a start of f's profiles, in
 * order, into *ks (*n of them; the caller frees it): empty stretches cost no query. */
static int slices(struct rt__ch *ch, const struct rt_store_filter *f, int64_t **ks, size_t *n,
                  struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    int rc = rt_buf_printf(&sql, "SELECT intDiv(time_ns - %lld, %lld) AS k FROM profiles WHERE ",
                           (long long)f->from_ns, (long long)RT__CH_SCAN_SLICE_NS) ||
             rt__ch_filter_sql_from(&sql, f, f->from_ns) ||
             rt_buf_puts(&sql, " GROUP BY k ORDER BY k FORMAT RowBinary");
    rc = rt__ch_select_rows(ch, &sql, !rc, &out, err);
    *n = out.len / 8;
    if (!rc && out.len % 8)
        rc = rt__ch_bad_response("a scan's slices", err);
    if (!rc && !(*ks = malloc((*n ? *n : 1) * sizeof(**ks))))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    for (size_t i = 0; !rc && i < *n; i++)
        (*ks)[i] = rt__ch_rd_i64(&r);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                void *ud, struct rt_error *err)
{
    if (f->from_ns < 0 || f->to_ns - f->from_ns <= RT__CH_SCAN_SLICE_NS) /* one response */
        return scan_slice(s, f, INT64_MIN, f->to_ns, cb, ud, err);
    /* In slices of start time, so that a long window (a day's rollup: ~170 million rows for
     * 100 instances) is never one response held whole: first the profiles that start before
     * the window, then each slice of RT__CH_SCAN_SLICE_NS that holds a start. A profile's
     * twins share its start, so each slice deduplicates them whole. */
    int64_t *ks = NULL;
    size_t n = 0;
    int rc = scan_slice(s, f, INT64_MIN, f->from_ns, cb, ud, err);
    if (!rc)
        rc = slices(s->be, f, &ks, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        int64_t lo = f->from_ns + ks[i] * RT__CH_SCAN_SLICE_NS; /* 0 <= from <= lo < to */
        int64_t hi = f->to_ns - lo > RT__CH_SCAN_SLICE_NS ? lo + RT__CH_SCAN_SLICE_NS : f->to_ns;
        rc = scan_slice(s, f, lo, hi, cb, ud, err);
    }
    free(ks);
    return rc;
}
