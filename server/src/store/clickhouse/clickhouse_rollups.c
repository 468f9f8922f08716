/* ClickHouse backend, rollups of whole hours and UTC days (docs/internals/rollups.md).
 * ClickHouse has no transactions, and several nodes write: so instead of SQLite's log of
 * pending blocks, a block's state is a *fingerprint*, the wrapping sum of cityHash64(id) over
 * the rows of the profiles wholly inside it (rt_profile_rollup_block), computed from the
 * profiles themselves. A rollup is stamped with the fingerprint it was built for, and a
 * window reads it only while the block's fingerprint is still that one: a late profile, a
 * concurrent twin or retention changes it, and the block is read raw until it is built again.
 * A block waits for its rollup while no complete rollup of its current fingerprint exists.
 * Stack and frame ids inside a rollup are ClickHouse's own 64-bit ids (rt_store_keys), valid
 * on every node. */
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/profile.h"
#include "rt/timeutil.h"

/* rt_profile_rollup_block in SQL, of a level's length (a literal): the block of a profile
 * wholly inside one, else -1. test_rollup.c checks it against the C on the edges. */
#define BLOCK_SQL(len)                                                                       \
    "if(time_ns >= 0 AND duration_ns > 0 AND duration_ns <= toInt64(" len ") - time_ns % "   \
    "toInt64(" len "), intDiv(time_ns, toInt64(" len ")), toInt64(-1))"
#define HOUR_SQL BLOCK_SQL("3600000000000")
#define DAY_SQL BLOCK_SQL("86400000000000")

/* A block's fingerprint: it changes with every row of its profiles stored or dropped. */
#define GEN_SQL "sum(cityHash64(id))"

/* Rollups complete for their gen: all of their groups written (a build's rows go in one
 * INSERT, but a merge may replace some of an older build's rows first). */
#define COMPLETE_SQL                                                                         \
    "GROUP BY level, block, gen HAVING uniqExact(instance, has_version, version) = any(groups)"

const char *rt__ch_block_sql(int level)
{
    return level ? DAY_SQL : HOUR_SQL;
}

/* The first block of level starting at or after t (t >= 0). */
static int64_t block_ceil(int64_t t, int level)
{
    int64_t len = rt_rollup_level_ns(level);
    return t / len + (t % len != 0);
}

/* "service = S AND type = T" */
static int service_sql(struct rt_buf *b, const char *service, enum rt_ptype type)
{
    return rt_buf_puts(b, "service = ") || rt__ch_quote_cstr(b, service) ||
                   rt_buf_printf(b, " AND type = %d", (int)type)
               ? RT_ENOMEM
               : 0;
}

/* ---- keys ---- */

int rt__ch_keys(struct rt_store *s, enum rt_store_key_kind kind, bool to_keys, uint64_t *v,
                size_t n, struct rt_error *err)
{
    struct rt__ch *ch = s->be;
    bool stack = kind == RT_STORE_STACK_KEYS;
    if (!to_keys && stack) {
        int rc = rt__ch_resolve_stacks(s, v, n, err);
        if (rc)
            return rc;
    }
    int rc = 0;
    size_t i = 0;
    pthread_rwlock_rdlock(&s->dict_lock);
    for (; !rc && i < n; i++) {
        if (to_keys) {
            rc = v[i] > UINT32_MAX ? RT_ENOTFOUND
                                   : rt__store_dict_hash(&s->dict, stack, (uint32_t)v[i], &v[i]);
        } else {
            uint32_t id = rt__ch_idmap_get(stack ? &ch->stack_ids : &ch->frame_ids, v[i]);
            if (!id)
                rc = RT_ENOTFOUND;
            else
                v[i] = id;
        }
    }
    pthread_rwlock_unlock(&s->dict_lock);
    if (rc)
        return rt_error_set(err, rc, "no %s of %s %llx", stack ? "stack" : "frame",
                            to_keys ? "id" : "key", (unsigned long long)v[i - 1]);
    return 0;
}

/* ---- which blocks wait ---- */

int rt__ch_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns, size_t limit,
                               int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                               struct rt_error *err)
{
    int64_t e = end_ns < 0 ? 0 : end_ns; /* blocks that ended by e: block < e / L */
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    int rc = rt_buf_puts(&sql, "SELECT service, type, level, block, gen FROM (SELECT service, "
                               "type, level, block, gen, built FROM (");
    for (int level = 0; !rc && level < RT_ROLLUP_LEVELS; level++)
        rc = rt_buf_printf(&sql,
                           "%sSELECT service, type, toUInt8(%d) AS level, %s AS block, " GEN_SQL
                           " AS gen FROM profiles WHERE time_ns < %lld GROUP BY service, type, "
                           "block HAVING block >= 0 AND block < %lld",
                           level ? " UNION ALL " : "", level, rt__ch_block_sql(level), (long long)e,
                           (long long)(e / rt_rollup_level_ns(level)));
    rc = rc || rt_buf_printf(&sql,
                             ") AS cur ANY LEFT JOIN (SELECT service, type, level, block, gen, "
                             "any(groups) AS built FROM rollups GROUP BY service, type, level, "
                             "block, gen HAVING uniqExact(instance, has_version, version) = "
                             "any(groups)) AS done USING (service, type, level, block, gen) "
                             "WHERE built = 0) AS todo ANY LEFT JOIN (SELECT service, type, "
                             "level, block, gen, "
                             "max(retry_ns) AS retry FROM rollup_deferrals GROUP BY service, "
                             "type, level, block, gen) AS deferred USING (service, type, level, "
                             "block, gen) "
                             "WHERE retry <= %lld ORDER BY level, block, service, type LIMIT %zu "
                             "FORMAT RowBinary",
                             (long long)now_ns, limit);
    rc = rt__ch_select_rows(s->be, &sql, !rc, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t svc = rt__ch_strs_read(&strs, &r);
        struct rt_rollup_block b = {0};
        b.type = (enum rt_ptype)rt__ch_rd_u8(&r);
        b.level = rt__ch_rd_u8(&r);
        b.block = rt__ch_rd_i64(&r);
        b.gen = (int64_t)rt__ch_rd_u64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("the blocks waiting for rollups", err);
            break;
        }
        b.service = rt__ch_strs_get(&strs, svc, false);
        rc = cb(ud, &b);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

/* The block's fingerprint now, into *gen. */
static int block_gen(struct rt__ch *ch, const struct rt_rollup_block *b, uint64_t *gen,
                     struct rt_error *err)
{
    int64_t len = rt_rollup_level_ns(b->level);
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    int rc = rt_buf_puts(&sql, "SELECT " GEN_SQL " FROM profiles WHERE ") ||
             service_sql(&sql, b->service, b->type) ||
             rt_buf_printf(&sql, " AND time_ns >= %lld AND time_ns < %lld AND %s = %lld "
                                 "FORMAT RowBinary",
                           (long long)(b->block * len), (long long)((b->block + 1) * len),
                           rt__ch_block_sql(b->level), (long long)b->block);
    rc = rt__ch_select_rows(ch, &sql, !rc, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    *gen = rt__ch_rd_u64(&r);
    if (!rc && r.bad)
        rc = rt__ch_bad_response("a block's fingerprint", err);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_put_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                      const struct rt_rollup_group *g, size_t n, struct rt_error *err)
{
    uint64_t now;
    int rc = block_gen(s->be, b, &now, err);
    if (rc)
        return rc;
    if (now != (uint64_t)b->gen) /* read raw until built again; the rows would never be read */
        return rt_error_set(err, RT_ECONFLICT,
                            "profiles of %s %lld of %s were stored after it was read",
                            b->level ? "day" : "hour", (long long)b->block, b->service);
    if (n == 0) /* nothing to store would leave it waiting, built again at every sweep */
        return rt_error_set(err, RT_EIO, "%s %lld of %s holds profiles, but the scan met none",
                            b->level ? "day" : "hour", (long long)b->block, b->service);
    struct rt_buf rows;
    rt_buf_init(&rows, 0);
    int64_t built = rt_time_now_ns(), start = b->block * rt_rollup_level_ns(b->level);
    bool ok = n <= UINT32_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = !rt__ch_w_cstr(&rows, b->service) && !rt__ch_w_u8(&rows, (uint8_t)b->type) &&
             !rt__ch_w_u8(&rows, (uint8_t)b->level) && !rt__ch_w_i64(&rows, b->block) &&
             !rt__ch_w_i64(&rows, start) && !rt__ch_w_u64(&rows, (uint64_t)b->gen) &&
             !rt__ch_w_u32(&rows, (uint32_t)n) && !rt__ch_w_cstr(&rows, g[i].instance) &&
             !rt__ch_w_u8(&rows, g[i].version != NULL) && !rt__ch_w_cstr(&rows, g[i].version) &&
             !rt__ch_w_str(&rows, g[i].data, g[i].len) && !rt__ch_w_i64(&rows, built);
    rc = rt__ch_insert_rows(s->be, "rollups", &rows, ok, err);
    rt_buf_cleanup(&rows);
    return rc;
}

int rt__ch_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b, int64_t retry_ns,
                        struct rt_error *err)
{
    struct rt_buf row;
    rt_buf_init(&row, 0);
    bool ok = !rt__ch_w_cstr(&row, b->service) && !rt__ch_w_u8(&row, (uint8_t)b->type) &&
              !rt__ch_w_u8(&row, (uint8_t)b->level) && !rt__ch_w_i64(&row, b->block) &&
              !rt__ch_w_u64(&row, (uint64_t)b->gen) && !rt__ch_w_i64(&row, retry_ns);
    int rc = rt__ch_insert_rows(s->be, "rollup_deferrals", &row, ok, err);
    rt_buf_cleanup(&row);
    return rc;
}

/* ---- the rolled read ---- */

/* One usable rollup of the window: a block whose rollup is complete for its fingerprint. */
struct rolled {
    int level;
    int64_t block;
    uint64_t gen;
};

_Static_assert(RT_ROLLUP_LEVELS == 2, "blocks_sql pairs hours with days");

/* The statement finding the window's whole blocks whose rollups are current, days first. One
 * scan of the profiles serves both levels: it sums the fingerprint per (hour, day) pair, and
 * each level's fingerprint is the wrapping sum of its pairs' (a day's profiles are those of its
 * hours and its straddlers; every profile of a block starts inside it, so inside the window's
 * whole hours). 0 or RT_ENOMEM. */
static int blocks_sql(struct rt_buf *sql, const struct rt_store_filter *f)
{
    int64_t lo[RT_ROLLUP_LEVELS], hi[RT_ROLLUP_LEVELS];
    for (int level = 0; level < RT_ROLLUP_LEVELS; level++) {
        lo[level] = block_ceil(f->from_ns, level);
        hi[level] = f->to_ns / rt_rollup_level_ns(level);
    }
    int64_t hour = rt_rollup_level_ns(0);
    int rc = rt_buf_printf(sql,
                           "SELECT level, block, gen FROM (SELECT tupleElement(t, 1) AS level, "
                           "tupleElement(t, 2) AS block, sum(tupleElement(t, 3)) AS gen FROM "
                           "(SELECT arrayJoin([(toUInt8(0), h, g), (toUInt8(1), d, g)]) AS t "
                           "FROM (SELECT %s AS h, %s AS d, " GEN_SQL " AS g FROM profiles WHERE ",
                           rt__ch_block_sql(0), rt__ch_block_sql(1)) ||
             service_sql(sql, f->service, f->type) ||
             rt_buf_printf(sql,
                           " AND time_ns >= %lld AND time_ns < %lld GROUP BY h, d)) GROUP BY "
                           "level, block HAVING (level = 0 AND block >= %lld AND block < %lld) "
                           "OR (level = 1 AND block >= %lld AND block < %lld)",
                           (long long)(lo[0] * hour), (long long)(hi[0] * hour), (long long)lo[0],
                           (long long)hi[0], (long long)lo[1], (long long)hi[1]);
    rc = rc || rt_buf_puts(sql, ") AS cur ANY INNER JOIN (SELECT level, block, gen FROM rollups "
                                "WHERE ") ||
         service_sql(sql, f->service, f->type) ||
         rt_buf_printf(sql, " AND ((level = 0 AND block >= %lld AND block < %lld) OR (level = 1 "
                            "AND block >= %lld AND block < %lld)) " COMPLETE_SQL
                            ") AS done USING (level, block, gen) ORDER BY level DESC, block "
                            "FORMAT RowBinary",
                       (long long)lo[0], (long long)hi[0], (long long)lo[1], (long long)hi[1]);
    return rc ? RT_ENOMEM : 0;
}

/* The blocks of blocks_sql's answer res into *out (*n). */
static int read_blocks(const struct rt_buf *res, struct rolled **out, size_t *n,
                       struct rt_error *err)
{
    size_t cap = 0;
    int rc = 0;
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, res);
    while (!rc && rt__ch_rd_more(&r)) {
        struct rolled b;
        b.level = rt__ch_rd_u8(&r); /* in the columns' order: one statement each */
        b.block = rt__ch_rd_i64(&r);
        b.gen = rt__ch_rd_u64(&r);
        if (r.bad)
            rc = rt__ch_bad_response("a window's rollups", err);
        else if (rt_array_grow((void **)out, &cap, *n + 1, sizeof(**out)))
            rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        else
            (*out)[(*n)++] = b;
    }
    return rc;
}

/* The window's usable blocks into *out (*n), and the earliest start of a profile that may
 * overlap it into *earliest: the two statements at once (the second alone for a window with
 * no whole hour). */
static int usable_blocks(struct rt__ch *ch, const struct rt_store_filter *f, struct rolled **out,
                         size_t *n, int64_t *earliest, struct rt_error *err)
{
    struct rt_buf sql[2], res[2];
    for (int i = 0; i < 2; i++) {
        rt_buf_init(&sql[i], 0);
        rt_buf_init(&res[i], 0);
    }
    int b = rt__store_window_has_hour(f); /* the statements: 1 or 2, the longest's last */
    int rc = (b && blocks_sql(&sql[0], f)) || rt__ch_earliest_sql(&sql[b], f)
                 ? rt_error_set(err, RT_ENOMEM, "out of memory")
                 : rt__ch_run_all(ch, sql, res, (size_t)b + 1, err);
    rc = rc || !b ? rc : read_blocks(&res[0], out, n, err);
    rc = rc ? rc : rt__ch_earliest_read(&res[b], f, earliest, err);
    for (int i = 0; i < 2; i++) {
        rt_buf_cleanup(&sql[i]);
        rt_buf_cleanup(&res[i]);
    }
    return rc;
}

/* Keeps the days, and the hours outside them (their profiles are in the days' rollups). */
static size_t drop_hours_of_days(struct rolled *b, size_t n)
{
    int64_t per_day = RT_ROLLUP_DAY_NS / RT_ROLLUP_HOUR_NS;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool in_day = false;
        for (size_t d = 0; b[i].level == 0 && d < n && !in_day; d++)
            in_day = b[d].level == 1 && b[d].block == b[i].block / per_day;
        if (!in_day)
            b[kept++] = b[i];
    }
    return kept;
}

/* The profiles the blocks' rollups stand for, as an SQL condition. */
static int standing_sql(struct rt_buf *b, const struct rolled *bl, size_t n)
{
    int rc = 0;
    for (int level = 0; !rc && level < RT_ROLLUP_LEVELS; level++) {
        size_t k = 0;
        for (size_t i = 0; !rc && i < n; i++)
            if (bl[i].level == level)
                rc = k++ ? rt_buf_printf(b, ",%lld", (long long)bl[i].block)
                         : rt_buf_printf(b, "%s%s IN (%lld", b->len ? " OR " : "",
                                         rt__ch_block_sql(level), (long long)bl[i].block);
        if (!rc && k)
            rc = rt_buf_puts(b, ")");
    }
    return rc ? RT_ENOMEM : 0;
}

/* The statement reading the usable rollups that the filter selects, into sql. 0 or
 * RT_ENOMEM. */
static int rollups_sql(struct rt_buf *sql, const struct rt_store_filter *f, const struct rolled *bl,
                       size_t n)
{
    /* PREWHERE: a rollup's row is ~40 KB (granules of 32 rows): only the rows of the blocks
     * used are read whole */
    int rc = rt_buf_puts(sql, "SELECT level, block, instance, has_version, version, data "
                              "FROM rollups PREWHERE ") ||
             service_sql(sql, f->service, f->type) ||
             rt_buf_puts(sql, " AND (level, block, gen) IN (");
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt_buf_printf(sql, "%s(%d, %lld, %llu)", i ? ", " : "", bl[i].level,
                           (long long)bl[i].block, (unsigned long long)bl[i].gen);
    rc = rc || rt_buf_puts(sql, ")");
    if (f->version)
        rc = rc || rt_buf_puts(sql, " AND has_version = 1 AND version = ") ||
             rt__ch_quote_cstr(sql, f->version);
    if (f->instance)
        rc = rc || rt_buf_puts(sql, " AND instance = ") || rt__ch_quote_cstr(sql, f->instance);
    /* no ORDER BY: 18.16 would sort the ~40 KB rows themselves (read_rollups orders them) */
    rc = rc || rt_buf_puts(sql, " LIMIT 1 BY level, block, instance, has_version, version "
                                "FORMAT RowBinary");
    return rc ? RT_ENOMEM : 0;
}

/* A rollup's row of rollups_sql's answer: its key, and where its instance starts. */
struct rollup_row {
    int64_t block;
    const char *inst, *ver, *at;
    size_t ilen, vlen;
    uint8_t level, has_ver;
};

static int cmp_str(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* The rollups' order, the table's (level, block, instance, has_version, version): two nodes add
 * the same rollups in the same order, so their sums (doubles) agree to the last bit. */
static int cmp_rollup_row(const void *pa, const void *pb)
{
    const struct rollup_row *a = pa, *b = pb;
    int c;
    if (a->level != b->level)
        return a->level < b->level ? -1 : 1;
    if (a->block != b->block)
        return a->block < b->block ? -1 : 1;
    if ((c = cmp_str(a->inst, a->ilen, b->inst, b->ilen)))
        return c;
    if (a->has_ver != b->has_ver)
        return a->has_ver < b->has_ver ? -1 : 1;
    return cmp_str(a->ver, a->vlen, b->ver, b->vlen);
}

/* Passes each rollup of out (the rows of rollups_sql's statement) to r->rollup, in the
 * table's order (cmp_rollup_row). */
static int read_rollups(struct rt_buf *out, const struct rt_store_window_reader *r, void *ud,
                        struct rt_error *err)
{
    struct rt__ch_rd rd;
    rt__ch_rd_init(&rd, out);
    struct rollup_row *row = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    while (!rc && rt__ch_rd_more(&rd)) {
        if (n == cap) {
            size_t c = cap ? 2 * cap : 256;
            struct rollup_row *p = realloc(row, c * sizeof(*p));
            if (!p) {
                rc = rt_error_set(err, RT_ENOMEM, "out of memory");
                break;
            }
            row = p;
            cap = c;
        }
        struct rollup_row *w = &row[n++];
        w->level = rt__ch_rd_u8(&rd);
        w->block = rt__ch_rd_i64(&rd);
        w->at = (const char *)rd.p;
        w->inst = rt__ch_rd_str(&rd, &w->ilen);
        w->has_ver = rt__ch_rd_u8(&rd) != 0;
        w->ver = rt__ch_rd_str(&rd, &w->vlen);
        size_t len;
        rt__ch_rd_str(&rd, &len);
        if (rd.bad)
            rc = rt__ch_bad_response("a window's rollups", err);
    }
    if (!rc && n > 1)
        qsort(row, n, sizeof(*row), cmp_rollup_row);
    struct rt__ch_strs strs = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        struct rt__ch_rd one = {(const unsigned char *)row[i].at, rd.end, false};
        rt__ch_strs_reset(&strs);
        size_t inst = rt__ch_strs_read(&strs, &one);
        bool has_ver = rt__ch_rd_u8(&one) != 0;
        size_t ver = rt__ch_strs_read(&strs, &one), len;
        const char *data = rt__ch_rd_str(&one, &len);
        rc = one.bad ? rt__ch_bad_response("a window's rollups", err)
                     : r->rollup(ud, rt__ch_strs_get(&strs, inst, false),
                                 rt__ch_strs_get(&strs, ver, !has_ver), data, len);
    }
    rt_buf_cleanup(&strs.buf);
    free(row);
    return rc;
}

/* The start times of a rolled window's raw part, in order (raw_starts), each with its number
 * of stored profiles while there are few enough to count. */
struct starts {
    int64_t *t;
    uint64_t *count;
    size_t n;
    uint64_t total;
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Runs sql (built unless RT_ENOMEM) and reads its answer, one Int64 a row, into *v (*n). */
static int select_i64s(struct rt__ch *ch, struct rt_buf *sql, bool built, int64_t **v, size_t *n,
                       struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = rt__ch_select_rows(ch, sql, built, &out, err);
    *n = out.len / 8;
    if (!rc && out.len % 8)
        rc = rt__ch_bad_response("a window's raw start times", err);
    if (!rc && !(*v = malloc((*n ? *n : 1) * sizeof(**v))))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    for (size_t i = 0; !rc && i < *n; i++)
        (*v)[i] = rt__ch_rd_i64(&r);
    rt_buf_cleanup(&out);
    return rc;
}

/* The start times of the filter's profiles (from earliest) that exclude does not select, in
 * order, into *st. With at most as_rows such profiles, each start with its number of them
 * (twins included: an upper bound of the profiles read); else the distinct starts alone, at
 * most listed + 1 of them (more than listed: "too many to list"; none when listed is 0),
 * st->total past as_rows.
 * Each query stops reading once it has one more than it needs. One pass over the window's
 * times and durations at the default block size; the raw part's reads then touch only the
 * granules holding one of those starts (a week through its days: ~3,000 profiles of
 * 1,008,000, docs/performance-rollups.md). A list, not ranges: 18.16 took minutes to apply a
 * thousand OR-ed ranges, where it applies a list of 8,192 in ~0.1 s. */
static int raw_starts(struct rt__ch *ch, const struct rt_store_filter *f, const char *exclude,
                      int64_t earliest, size_t as_rows, size_t listed, struct starts *st,
                      struct rt_error *err)
{
    struct rt_buf sql;
    rt_buf_init(&sql, 0);
    int64_t *t = NULL;
    size_t n = 0;
    for (int distinct = 0; distinct < 2; distinct++) {
        sql.len = 0;
        int rc = rt_buf_printf(&sql, "SELECT %stime_ns FROM profiles WHERE ",
                               distinct ? "DISTINCT " : "") ||
                 rt__ch_filter_sql_from(&sql, f, earliest) ||
                 rt_buf_printf(&sql, " AND NOT (%s) LIMIT %zu FORMAT RowBinary", exclude,
                               (distinct ? listed : as_rows) + 1);
        free(t);
        t = NULL;
        rc = select_i64s(ch, &sql, !rc, &t, &n, err);
        if (rc) {
            free(t);
            rt_buf_cleanup(&sql);
            return rc;
        }
        if (n <= as_rows || distinct || !listed)
            break;
    }
    rt_buf_cleanup(&sql);
    qsort(t, n, sizeof(*t), cmp_i64);
    bool counted = n <= as_rows;
    st->t = t;
    st->count = malloc((n ? n : 1) * sizeof(*st->count));
    if (!st->count)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (st->n && st->t[st->n - 1] == t[i]) { /* t[i] is read before t[st->n] is written */
            st->count[st->n - 1]++;
            continue;
        }
        st->t[st->n] = t[i];
        st->count[st->n++] = 1;
    }
    st->total = counted ? n : (uint64_t)as_rows + 1;
    return 0;
}

/* "time_ns IN (t[i..j))" into keep (cleared first). 0 or RT_ENOMEM. */
static int starts_sql(struct rt_buf *keep, const struct starts *st, size_t i, size_t j)
{
    keep->len = 0;
    int rc = 0;
    for (size_t k = i; !rc && k < j; k++)
        rc = rt_buf_printf(keep, "%s%lld", k > i ? "," : "time_ns IN (", (long long)st->t[k]);
    return rc || rt_buf_puts(keep, ")") ? RT_ENOMEM : 0;
}

_Static_assert(RT__CH_PART_AT_ONCE + 1 <= RT__CH_RUN_ALL_MAX, "the rollups and a round at once");

/* One round of part_rows: its raw answers, read into the window as each arrives. */
struct round {
    struct rt_store *s;
    const struct rt_store_window_reader *r;
    void *ud;
    struct rt_buf *out;
    size_t raw; /* out[0..raw): the raw part's answers; then the rollups' (first round) */
};

static int take_round(void *p, size_t i, struct rt_error *err)
{
    struct round *u = p;
    return i < u->raw ? rt__ch_take_scan(u->s, &u->out[i], u->r->rows, u->ud, err) : 0;
}

/* The raw part as rows (rt__ch_part_sql), in statements of consecutive starts holding about
 * RT__CH_PART_BATCH profiles each (one start at least), RT__CH_PART_AT_ONCE at a time, the
 * rollups' statement rsql (unless empty) beside the first ones; each answer read in the
 * starts' order, as soon as it and those before it have arrived. A start's
 * profiles are never split between statements, so each statement's LIMIT 1 BY dedup keeps
 * what one statement over the whole part would: the dedup key holds the content hash, which
 * holds the start (clickhouse_profiles.c), so the copies it reads once share a start. */
static int part_rows(struct rt_store *s, const struct rt_store_filter *f, const char *exclude,
                     int64_t earliest, const struct starts *st,
                     const struct rt_store_window_reader *r, void *ud, struct rt_buf *rsql,
                     struct rt_buf *rout, struct rt_error *err)
{
    struct rt__ch *ch = s->be;
    uint64_t batch = ch->raw_part_batch ? ch->raw_part_batch : RT__CH_PART_BATCH;
    struct rt_buf keep, sql[RT__CH_PART_AT_ONCE + 1], out[RT__CH_PART_AT_ONCE + 1];
    rt_buf_init(&keep, 0);
    int rc = 0;
    bool first = true;
    for (size_t i = 0, j; !rc && i < st->n; first = false) {
        size_t k = 0;
        for (; !rc && i < st->n && k < RT__CH_PART_AT_ONCE; i = j, k++) {
            uint64_t held = st->count[i];
            for (j = i + 1; j < st->n && held + st->count[j] <= batch; j++)
                held += st->count[j];
            rt_buf_init(&sql[k], 0);
            rt_buf_init(&out[k], RT__CH_MAX_RESPONSE);
            if (starts_sql(&keep, st, i, j) ||
                rt__ch_part_sql(&sql[k], f, exclude, keep.data, earliest))
                rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        }
        size_t raw = k;
        if (first && rsql->len) { /* moved in and out: its buffers stay the caller's */
            sql[k] = *rsql;
            out[k++] = *rout;
        }
        /* the raw answers taken in order as they arrive, the rollups' last (the longest) */
        struct round u = {s, r, ud, out, raw};
        if (!rc)
            rc = rt__ch_run_each(ch, sql, out, k, take_round, &u, err);
        for (size_t q = 0; q < raw; q++) {
            rt_buf_cleanup(&sql[q]);
            rt_buf_cleanup(&out[q]);
        }
        if (k > raw) {
            *rsql = sql[raw];
            *rout = out[raw];
        }
    }
    rt_buf_cleanup(&keep);
    return rc;
}

int rt__ch_scan_rolled(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_reader *r, void *ud, struct rt_error *err)
{
    struct rt__ch *ch = s->be;
    struct rolled *bl = NULL;
    size_t n = 0;
    int64_t earliest = INT64_MIN;
    int rc = usable_blocks(ch, f, &bl, &n, &earliest, err);
    n = rc ? 0 : drop_hours_of_days(bl, n);
    struct rt_buf exclude, keep;
    rt_buf_init(&exclude, 0);
    rt_buf_init(&keep, 0);
    /* with no usable block, nothing is excluded */
    if (!rc && (n ? standing_sql(&exclude, bl, n) : rt_buf_puts(&exclude, "0")))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    if (!rc && rt_buf_append(&exclude, "", 1))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    /* The profiles the rollups stand for are told apart by their times and durations alone:
     * the others' start times are found first, in one pass, and the raw part's reads touch
     * the granules holding those (the window's edges, the last minute of each block) with
     * PREWHERE and a constant bound. bench_rollup's week on 18.16: each sum had evaluated the
     * exclusion over the week's million profiles, in blocks of 128 rows, 0.6-1 s each
     * (docs/performance-rollups.md). */
    struct starts st = {0};
    /* as rows: at most as_rows profiles; summed there: a list of at most listed starts */
    size_t listed = ch->raw_starts_max ? ch->raw_starts_max : RT__CH_RAW_STARTS;
    size_t as_rows = ch->raw_part_max ? ch->raw_part_max : RT__CH_PART_MAX;
    if (!rc)
        rc = raw_starts(ch, f, exclude.data, earliest, as_rows, n ? listed : 0, &st, err);
    bool rows = st.total <= as_rows;
    if (!rc && n && st.n && !rows && st.n <= listed && starts_sql(&keep, &st, 0, st.n))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    /* the rollups are read while the raw part is */
    struct rt_buf rsql, rout;
    rt_buf_init(&rsql, 0);
    rt_buf_init(&rout, 0);
    if (!rc && n && rollups_sql(&rsql, f, bl, n))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    /* A raw part of at most as_rows profiles comes as rows, summed by the query layer as
     * SQLite's raw part is (the week: ~3,000 profiles, read once instead of by four sums; a
     * window with no usable block, such as an issue diff's hour at :23, wholly raw); a
     * larger one is summed in ClickHouse (docs/internals/clickhouse.md), a window with no
     * usable block with the subquery bound as before. */
    if (!rc && st.n && rows)
        rc = part_rows(s, f, exclude.data, earliest, &st, r, ud, &rsql, &rout, err);
    else if (!rc && !rows)
        rc = rt__ch_sum_window(s, f, n ? exclude.data : NULL, keep.len ? keep.data : NULL,
                               n ? earliest : INT64_MIN, r->sums, ud, n ? &rsql : NULL, &rout,
                               err);
    else if (!rc && n) /* rollups standing for every profile: no raw part */
        rc = rt__ch_run(ch, &rsql, &rout, err);
    if (!rc && n)
        rc = read_rollups(&rout, r, ud, err);
    rt_buf_cleanup(&rsql);
    rt_buf_cleanup(&rout);
    rt_buf_cleanup(&exclude);
    rt_buf_cleanup(&keep);
    free(st.t);
    free(st.count);
    free(bl);
    return rc;
}
