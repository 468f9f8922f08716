/* ClickHouse backend, window aggregation inside the database (rt_store_scan_window): each
 * profile's overlap weight is computed in SQL and the rows are summed with GROUP BY per
 * stack, per (instance, leaf frame) and per leaf frame of each profile (summed within the
 * profile's row first), so that a window query
 * moves a few rows per distinct stack instead of every row of every profile. Queries run
 * on one thread over input ordered by (time_ns, id), so that every node sums in the same
 * order and gives the same answer to the last bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

/* One thread, so that every node sums in the same order. Blocks of 128 profiles: a block is
 * 65,536 rows by default, i.e. the whole window after the sort, and every later step (ARRAY
 * JOIN, filter, GROUP BY) then works on a block the size of the window, which outgrows the
 * CPU's caches as the window grows (at 6,000 profiles of ~350 rows, 57 MB read per query:
 * each query took ~1.5x as long per row as at 600). The sums are the same to the bit: the
 * rows reach each aggregate in the same order whatever the block size. */
#define ONE_THREAD " SETTINGS max_threads = 1, max_block_size = 128 FORMAT RowBinary"

/* Appends the subquery of the filter's profiles, deduplicated, each with its weight w
 * (rt_profile_window_weight in SQL, DESIGN §6; test_window_rule.c checks the two agree),
 * ordered by time; it selects cols, expressions of the profiles' columns and w. (18.16 finds
 * a column that a lambda alone uses only when the lambda is at the level of the WHERE that
 * uses it: hence cols here, not a level above.)
 * Sorted once: on one thread the filter w > 0 keeps the sorted stream's order, so a second
 * ORDER BY of the whole rows (arrays included) would only copy them again. */
static int weighted(struct rt_buf *b, const struct rt_store_filter *f, const char *exclude,
                    const char *keep, int64_t earliest, const char *cols)
{
    long long from = f->from_ns, to = f->to_ns;
    int rc = rt_buf_printf(
        b,
        "(SELECT %s FROM (SELECT id, has_pid, profile_id, instance, has_version, version, "
        "time_ns, duration_ns, period_ns, thread_cpu_ns, process_cpu_ns, samples, value_ns, "
        "has_counts, truncated_stacks, stacks, row_samples, row_values, row_leaves, "
        "producer, cpu_scale, declared_type, if(duration_ns <= 0, toFloat64(time_ns >= %lld AND time_ns < %lld), "
        "greatest(toInt64(0), least(end_ns, %lld) - greatest(time_ns, %lld)) / duration_ns) "
        "AS w FROM profiles %s ",
        cols, from, to, to, from, earliest != INT64_MIN ? "PREWHERE" : "WHERE");
    rc = rc || rt__ch_filter_sql_from(b, f, earliest);
    if (keep)
        rc = rc || rt_buf_printf(b, " AND (%s)", keep);
    if (exclude)
        rc = rc || rt_buf_printf(b, " AND NOT (%s)", exclude);
    rc = rc || rt_buf_puts(b, " ORDER BY time_ns, id LIMIT 1 BY dedup) WHERE w > 0)");
    return rc ? RT_ENOMEM : 0;
}

/* The window being summed: the filter's profiles, less those that exclude (an SQL condition,
 * or NULL) selects, and only those that keep (an SQL condition, or NULL) selects; with
 * earliest (the earliest start, not INT64_MIN), the conditions go in PREWHERE with that
 * constant bound (rt__ch_filter_sql_from). */
struct win {
    const struct rt_store_filter *f;
    const char *exclude, *keep;
    int64_t earliest;
};

/* Builds prefix + weighted subquery selecting cols + suffix into sql. 0 or RT_ENOMEM. */
static int statement(struct rt_buf *sql, const struct win *q, const char *prefix,
                     const char *cols, const char *suffix)
{
    return rt_buf_puts(sql, prefix) ||
                   weighted(sql, q->f, q->exclude, q->keep, q->earliest, cols) ||
                   rt_buf_puts(sql, suffix)
               ? RT_ENOMEM
               : 0;
}

/* Profiles with their weight and weighted sums, in time order. */
static int profiles(struct rt_store *s, struct rt_buf *out, const struct rt_store_window_cb *cb,
                    void *ud, struct rt_error *err)
{
    (void)s;
    int rc = 0;
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        struct rt_profile_meta m = {.id = (int64_t)rt__ch_rd_u64(&r)};
        bool has_pid = rt__ch_rd_u8(&r) != 0;
        size_t pid = rt__ch_strs_read(&strs, &r), inst = rt__ch_strs_read(&strs, &r);
        bool has_ver = rt__ch_rd_u8(&r) != 0;
        size_t ver = rt__ch_strs_read(&strs, &r);
        m.time_ns = rt__ch_rd_i64(&r);
        m.duration_ns = rt__ch_rd_i64(&r);
        m.period_ns = rt__ch_rd_i64(&r);
        m.thread_cpu_ns = rt__ch_rd_i64(&r);
        m.process_cpu_ns = rt__ch_rd_i64(&r);
        m.samples = rt__ch_rd_f64(&r);
        m.value_ns = rt__ch_rd_i64(&r);
        m.has_counts = rt__ch_rd_u8(&r) != 0;
        m.truncated_stacks = rt__ch_rd_u32(&r);
        size_t prod = rt__ch_strs_read(&strs, &r);
        m.cpu_scale = rt__ch_rd_f64(&r);
        m.declared_type = rt__store_declared_type_of(rt__ch_rd_u8(&r));
        double w = rt__ch_rd_f64(&r), n = rt__ch_rd_f64(&r), v = rt__ch_rd_f64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("a window's profiles", err);
            break;
        }
        m.profile_id = rt__ch_strs_get(&strs, pid, !has_pid);
        m.instance = rt__ch_strs_get(&strs, inst, false);
        m.version = rt__ch_strs_get(&strs, ver, !has_ver);
        m.producer = rt__ch_strs_get(&strs, prod, false);
        rc = cb->profile(ud, &m, w, n, v);
    }
    rt_buf_cleanup(&strs.buf);
    return rc;
}

/* The local id of a frame or stack (0 when it has none). */
static uint32_t local_id(struct rt_store *s, bool stack, uint64_t id)
{
    struct rt__ch *ch = s->be;
    pthread_rwlock_rdlock(&s->dict_lock);
    uint32_t lid = rt__ch_idmap_get(stack ? &ch->stack_ids : &ch->frame_ids, id);
    pthread_rwlock_unlock(&s->dict_lock);
    return lid;
}

/* Weighted sums per stack; the stacks get local ids first. */
static int stacks(struct rt_store *s, struct rt_buf *out, const struct rt_store_window_cb *cb,
                  void *ud, struct rt_error *err)
{
    int rc = 0;
    size_t n = out->len / 24;
    uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!rc && !ids)
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    if (!rc && out->len % 24)
        rc = rt__ch_bad_response("a window's stacks", err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    for (size_t i = 0; !rc && i < n; i++) {
        ids[i] = rt__ch_rd_u64(&r);
        r.p += 16;
    }
    if (!rc)
        rc = rt__ch_resolve_stacks(s, ids, n, err);
    rt__ch_rd_init(&r, out);
    for (size_t i = 0; !rc && i < n; i++) {
        uint64_t id = rt__ch_rd_u64(&r);
        double samples = rt__ch_rd_f64(&r), value = rt__ch_rd_f64(&r);
        uint32_t lid = local_id(s, true, id);
        rc = lid ? cb->stack(ud, lid, samples, value)
                 : rt_error_set(err, RT_EIO, "stack %016llx is missing", (unsigned long long)id);
    }
    free(ids);
    return rc;
}

/* Weighted values per (instance, leaf frame), each profile's scaled by its cpu_scale. */
static int instance_leaves(struct rt_store *s, struct rt_buf *out,
                           const struct rt_store_window_cb *cb, void *ud, struct rt_error *err)
{
    int rc = 0;
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t inst = rt__ch_strs_read(&strs, &r);
        uint64_t leaf = rt__ch_rd_u64(&r);
        double v = rt__ch_rd_f64(&r);
        uint32_t lid = local_id(s, false, leaf);
        if (r.bad)
            rc = rt__ch_bad_response("a window's instances", err);
        else if (!lid)
            rc = rt_error_set(err, RT_EIO, "frame %016llx is missing", (unsigned long long)leaf);
        else
            rc = cb->instance_leaf(ud, rt__ch_strs_get(&strs, inst, false), lid, v);
    }
    rt_buf_cleanup(&strs.buf);
    return rc;
}

/* Per leaf frame, sum over profiles of x^2 / n (x its weighted samples in the profile, n the
 * profile's). Each profile's x per leaf is summed inside its row, by arrayReduce('sumMap')
 * over the rows that have samples or value (each x the same sum, in the same order, as a
 * GROUP BY (profile, leaf) would give; the count column keeps a leaf whose x is 0, which
 * sumMap would drop). A GROUP BY (profile, leaf) over the ARRAY JOINed rows instead builds a
 * hash table of profiles x leaves that outgrows the caches: at 6,000 profiles of ~180 leaves
 * (1.1 M keys) it took ~1 s, half of the window's time on 18.16, and this ~0.5 s
 * (docs/performance-stores.md). The outer sum runs in time order, then leaf order (it ran in the
 * hash table's order before: the same to ~1e-14 relative, not to the bit). */
static int leaf_s2(struct rt_store *s, struct rt_buf *out, const struct rt_store_window_cb *cb,
                   void *ud, struct rt_error *err)
{
    int rc = 0;
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, out);
    while (!rc && rt__ch_rd_more(&r)) {
        uint64_t leaf = rt__ch_rd_u64(&r);
        double s2 = rt__ch_rd_f64(&r);
        uint32_t lid = local_id(s, false, leaf);
        if (r.bad)
            rc = rt__ch_bad_response("a window's overdispersion", err);
        else if (!lid)
            rc = rt_error_set(err, RT_EIO, "frame %016llx is missing", (unsigned long long)leaf);
        else
            rc = cb->leaf_s2(ud, lid, s2);
    }
    return rc;
}

/* The four sums of a window: each statement's text (prefix, the weighted subquery's columns,
 * suffix) and the reader of its rows, in the order the callbacks get them. */
static const struct sum {
    const char *prefix, *cols, *suffix;
    int (*read)(struct rt_store *s, struct rt_buf *out, const struct rt_store_window_cb *cb,
                void *ud, struct rt_error *err);
} sums[] = {
    /* profiles with their weight and weighted sums, in time order */
    {"SELECT id, has_pid, profile_id, instance, has_version, version, time_ns, "
     "duration_ns, period_ns, thread_cpu_ns, process_cpu_ns, samples, value_ns, "
     "has_counts, truncated_stacks, producer, cpu_scale, declared_type, w, "
     "arraySum(arrayMap(r -> r * w, row_samples)), "
     "arraySum(arrayMap(r -> toFloat64(r) * w, row_values)) FROM ",
     "*", ONE_THREAD, profiles},
    {"SELECT stack, sum(s * w), sum(toFloat64(v) * w) FROM (SELECT "
     "stacks, row_samples, row_values, w FROM ",
     "*", ") ARRAY JOIN stacks AS stack, row_samples AS s, row_values AS v "
     "WHERE s != 0 OR v != 0 GROUP BY stack ORDER BY stack" ONE_THREAD, stacks},
    {"SELECT instance, leaf, sum(toFloat64(v) * w * cpu_scale) FROM "
     "(SELECT instance, row_leaves, row_samples, row_values, w, cpu_scale FROM ",
     "*", ") ARRAY JOIN row_leaves AS leaf, row_samples AS s, row_values AS v "
     "WHERE s != 0 OR v != 0 GROUP BY instance, leaf ORDER BY instance, leaf" ONE_THREAD,
     instance_leaves},
    {"SELECT leaf, sum(x * x / nt) FROM (SELECT nt, m.1 AS leaves, m.2 AS xs FROM "
     "(SELECT arraySum(ws) AS nt, arrayReduce('sumMap', "
     "[arrayFilter((l, k) -> k, row_leaves, keep)], "
     "[arrayFilter((x, k) -> k, ws, keep)], [arrayFilter((x, k) -> k, keep, keep)]) "
     "AS m FROM ",
     "row_leaves, arrayMap(r -> r * w, row_samples) AS ws, "
     "arrayMap((s, v) -> s != 0 OR v != 0, row_samples, row_values) AS keep",
     ") WHERE nt > 0) ARRAY JOIN leaves AS leaf, xs AS x "
     "GROUP BY leaf ORDER BY leaf" ONE_THREAD, leaf_s2},
};
#define NSUMS (sizeof(sums) / sizeof(sums[0]))

/* The four statements, and with_sql when given, run at once (rt__ch_run_all): each on one
 * thread, in the same order whatever the others do, so the answer is the same to the bit;
 * the sums' rows are read, and the callbacks called, in the order of sums[] once all have
 * ended. The week's raw part had taken the four one after the other (docs/performance-rollups.md,
 * "Statements at once"). */
int rt__ch_sum_window(struct rt_store *s, const struct rt_store_filter *f, const char *exclude,
                      const char *keep, int64_t earliest, const struct rt_store_window_cb *cb,
                      void *ud, struct rt_buf *with_sql, struct rt_buf *with_out,
                      struct rt_error *err)
{
    struct win q = {f, exclude, keep, earliest};
    struct rt_buf sql[NSUMS + 1], out[NSUMS + 1];
    int rc = 0;
    for (size_t i = 0; i < NSUMS; i++) {
        rt_buf_init(&sql[i], 0);
        rt_buf_init(&out[i], RT__CH_MAX_RESPONSE);
        if (!rc && statement(&sql[i], &q, sums[i].prefix, sums[i].cols, sums[i].suffix))
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    }
    if (with_sql) { /* moved in and out: its buffers stay the caller's */
        sql[NSUMS] = *with_sql;
        out[NSUMS] = *with_out;
    }
    if (!rc)
        rc = rt__ch_run_all(s->be, sql, out, NSUMS + (with_sql != NULL), err);
    if (with_sql) {
        *with_sql = sql[NSUMS];
        *with_out = out[NSUMS];
    }
    for (size_t i = 0; !rc && i < NSUMS; i++)
        rc = sums[i].read(s, &out[i], cb, ud, err);
    for (size_t i = 0; i < NSUMS; i++) {
        rt_buf_cleanup(&sql[i]);
        rt_buf_cleanup(&out[i]);
    }
    return rc;
}

int rt__ch_scan_window(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_cb *cb, void *ud, struct rt_error *err)
{
    return rt__ch_sum_window(s, f, NULL, NULL, INT64_MIN, cb, ud, NULL, NULL, err);
}
