/* SQLite backend: rollups of whole hours and UTC days (docs/internals/rollups.md). A profile
 * stored into a block (rt_profile_rollup_block) sends it back to rollup_pending with a new gen;
 * a rollup is stored only if its block's gen did not change since the block was read; a window
 * reads its whole rolled blocks from rollups and every other profile from the profiles table,
 * in one read transaction, so that a block is never counted twice nor missed. */
#include <stdlib.h>

#include "rt/buf.h"
#include "rt/profile.h"
#include "rt/timeutil.h"
#include "rt/u64map.h"
#include "sqlite_int.h"

int rt__sqlite_rollup_touch(struct rt__sqlite_conn *w, int64_t service_id, int type, int level,
                            int64_t block, int64_t now_ns, struct rt_error *err)
{
    static const enum rt__sql ops[] = {RT__SQL_ROLLUP_TOUCH, RT__SQL_ROLLUP_DROP_BLOCK,
                                       RT__SQL_ROLLUP_DROP_GROUPS};
    /* a block still open has no rollup to drop: (block + 1)·L <= now */
    size_t nops = block < now_ns / rt_rollup_level_ns(level) ? 3 : 1;
    for (size_t i = 0; i < nops; i++) {
        sqlite3_stmt *st = rt__sqlite_stmt(w, ops[i], err);
        if (!st)
            return err->code;
        sqlite3_bind_int64(st, 1, service_id);
        sqlite3_bind_int(st, 2, type);
        sqlite3_bind_int(st, 3, level);
        sqlite3_bind_int64(st, 4, block);
        if (i == 0)
            sqlite3_bind_int64(st, 5, now_ns); /* the gen of a new row */
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return rt__sqlite_fail(w, rc, "sending a block back to its rollup", err);
    }
    return 0;
}

/* The first block of level starting at or after t (t >= 0). */
static int64_t block_ceil(int64_t t, int level)
{
    int64_t len = rt_rollup_level_ns(level);
    return t / len + (t % len != 0);
}

int rt__sqlite_rollup_retain(struct rt__sqlite *db, int64_t cutoff_ns, struct rt_error *err)
{
    /* a block starting before the cutoff lost profiles (or will): its rollup goes */
    int64_t c = cutoff_ns < 0 ? 0 : cutoff_ns;
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(block_ceil(c, 0)),
                                    RT__SQLITE_I64(block_ceil(c, 1))};
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    if (rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUPS, args, 2, "deleting old rollups", err) ||
        rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUP_BLOCKS, args, 2, "deleting old rollups",
                              err) ||
        rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUP_PENDING, args, 2,
                              "deleting old rollups", err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    return rt__sqlite_commit(db, err);
}

/* ---- the rolled read ---- */

#define HOURS_A_DAY (RT_ROLLUP_DAY_NS / RT_ROLLUP_HOUR_NS)

/* Consecutive rolled blocks [a, b) of one level. */
struct segment {
    int level;
    int64_t a, b;
};

struct rolled_read {
    struct rt__sqlite_conn *c;
    const struct rt_store_filter *f;
    const struct rt_store_window_reader *r;
    void *ud;
    struct rt_u64map seen;    /* ids of profiles of no hour already passed */
    int64_t *blocks;          /* scratch: rolled blocks of one level, ascending */
    size_t nblocks, cap_blocks;
    struct segment *segs;     /* the window's rolled segments */
    size_t nsegs, cap_segs;
};

/* Binds ?1..?6 of the SCAN and ROLLUP_* statements: the filter with [from, to); ?7 level. */
static void bind_filter(sqlite3_stmt *st, const struct rt_store_filter *f, int64_t from,
                        int64_t to, int level)
{
    sqlite3_bind_text(st, 1, f->service, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, (int)f->type);
    sqlite3_bind_int64(st, 3, from);
    sqlite3_bind_int64(st, 4, to);
    rt__sqlite_bind_text(st, 5, f->version);
    rt__sqlite_bind_text(st, 6, f->instance);
    if (sqlite3_bind_parameter_count(st) >= 7)
        sqlite3_bind_int(st, 7, level);
}

/* Passes the profiles statement id (SCAN, SCAN_STRADDLE[_DAY]) selects in [from, to). */
static int read_profiles(struct rolled_read *u, enum rt__sql id, int64_t from, int64_t to,
                         struct rt_error *err)
{
    if (to <= from)
        return 0;
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, id, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, from, to, 0);
    int rc = rt__sqlite_scan_rows(u->c, st, u->r->rows, u->ud, &u->seen, err);
    sqlite3_reset(st);
    return rc;
}

/* The rolled blocks of level in [lo, hi) into u->blocks. */
static int read_blocks(struct rolled_read *u, int level, int64_t lo, int64_t hi,
                       struct rt_error *err)
{
    u->nblocks = 0;
    if (hi <= lo)
        return 0;
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, RT__SQL_ROLLUP_BLOCKS, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, lo, hi, level);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rt_array_grow((void **)&u->blocks, &u->cap_blocks, u->nblocks + 1,
                          sizeof(*u->blocks))) {
            sqlite3_reset(st);
            return rt_error_set(err, RT_ENOMEM, "out of memory");
        }
        u->blocks[u->nblocks++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(u->c, rc, "reading rolled blocks", err);
}

/* Appends the runs of consecutive blocks of u->blocks (of level) to u->segs; with skip_days,
 * hours inside a rolled day (a level 1 segment already there) are left out. */
static int add_segments(struct rolled_read *u, int level, bool skip_days)
{
    size_t first = u->nsegs; /* this level's segments start here; the days' are before */
    for (size_t i = 0; i < u->nblocks; i++) {
        int64_t b = u->blocks[i];
        bool in_day = false;
        for (size_t d = 0; skip_days && d < first && !in_day; d++)
            in_day = b / HOURS_A_DAY >= u->segs[d].a && b / HOURS_A_DAY < u->segs[d].b;
        if (in_day)
            continue;
        if (u->nsegs > first && u->segs[u->nsegs - 1].b == b) {
            u->segs[u->nsegs - 1].b = b + 1;
            continue;
        }
        if (rt_array_grow((void **)&u->segs, &u->cap_segs, u->nsegs + 1, sizeof(*u->segs)))
            return RT_ENOMEM;
        u->segs[u->nsegs++] = (struct segment){level, b, b + 1};
    }
    return 0;
}

static int cmp_segment(const void *x, const void *y)
{
    const struct segment *a = x, *b = y;
    int64_t s = a->a * rt_rollup_level_ns(a->level), t = b->a * rt_rollup_level_ns(b->level);
    return s < t ? -1 : s > t;
}

/* Every rollup of level's blocks [lo, hi) that the filter selects. */
static int read_rollups(struct rolled_read *u, int level, int64_t lo, int64_t hi,
                        struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, RT__SQL_ROLLUP_READ, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, lo, hi, level);
    int rc, ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *inst = rt__sqlite_text(st, 0);
        const void *data = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if ((ret = u->r->rollup(u->ud, inst ? inst : "", rt__sqlite_text(st, 1), data, len)))
            break;
    }
    sqlite3_reset(st);
    if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = rt__sqlite_fail(u->c, rc, "reading rollups", err);
    return ret;
}

/* The window: rolled days, then rolled hours outside them, from their rollups; the rest from
 * profiles. Between segments, every profile overlapping the gap; inside a segment, the
 * profiles of no block of its level (those of its blocks are in the rollups); a profile of no
 * hour met twice is passed once. */
static int read_window(struct rolled_read *u, struct rt_error *err)
{
    const struct rt_store_filter *f = u->f;
    int rc = read_blocks(u, 1, block_ceil(f->from_ns, 1), f->to_ns / RT_ROLLUP_DAY_NS, err);
    if (!rc)
        rc = add_segments(u, 1, false) ? rt_error_set(err, RT_ENOMEM, "out of memory") : 0;
    if (!rc)
        rc = read_blocks(u, 0, block_ceil(f->from_ns, 0), f->to_ns / RT_ROLLUP_HOUR_NS, err);
    if (!rc)
        rc = add_segments(u, 0, true) ? rt_error_set(err, RT_ENOMEM, "out of memory") : 0;
    if (u->nsegs)
        qsort(u->segs, u->nsegs, sizeof(*u->segs), cmp_segment);
    int64_t cursor = f->from_ns;
    for (size_t i = 0; !rc && i < u->nsegs; i++) {
        const struct segment *g = &u->segs[i];
        int64_t len = rt_rollup_level_ns(g->level), a = g->a * len, b = g->b * len;
        rc = read_profiles(u, RT__SQL_SCAN, cursor, a, err);
        if (!rc)
            rc = read_profiles(u, g->level ? RT__SQL_SCAN_STRADDLE_DAY : RT__SQL_SCAN_STRADDLE,
                               a, b, err);
        if (!rc)
            rc = read_rollups(u, g->level, g->a, g->b, err);
        cursor = b;
    }
    if (!rc)
        rc = read_profiles(u, RT__SQL_SCAN, cursor, f->to_ns, err);
    return rc;
}

int rt__sqlite_scan_rolled(struct rt_store *s, const struct rt_store_filter *f,
                           const struct rt_store_window_reader *r, void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rolled_read u = {.f = f, .r = r, .ud = ud};
    if (!(u.c = rt__sqlite_reader(db, err)))
        return err->code ? err->code : RT_EIO;
    rt_u64map_init(&u.seen);
    int rc = sqlite3_exec(u.c->db, "BEGIN", NULL, NULL, NULL); /* one snapshot for all reads */
    int ret = rc == SQLITE_OK ? read_window(&u, err)
                              : rt__sqlite_fail(u.c, rc, "starting a window's read", err);
    /* a read: nothing to lose; but a reader must not go back to the pool inside its snapshot */
    if (rc == SQLITE_OK && sqlite3_exec(u.c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(u.c->db, "ROLLBACK", NULL, NULL, NULL);
    rt__sqlite_release(db, u.c);
    rt_u64map_cleanup(&u.seen);
    free(u.blocks);
    free(u.segs);
    return ret;
}

/* ---- building ---- */

struct pending_read {
    int (*cb)(void *ud, const struct rt_rollup_block *b);
    void *ud;
};

static int pending_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    (void)err;
    struct pending_read *u = ud;
    const char *service = rt__sqlite_text(st, 0);
    struct rt_rollup_block b = {service ? service : "", (enum rt_ptype)sqlite3_column_int(st, 1),
                                sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3),
                                sqlite3_column_int64(st, 4)};
    return u->cb(u->ud, &b);
}

int rt__sqlite_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns,
                                   size_t limit,
                                   int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                                   struct rt_error *err)
{
    struct pending_read u = {cb, ud};
    int64_t e = end_ns < 0 ? 0 : end_ns; /* blocks that ended by e: block < e / L */
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(e / RT_ROLLUP_HOUR_NS),
                                    RT__SQLITE_I64(e / RT_ROLLUP_DAY_NS),
                                    RT__SQLITE_I64(limit > INT64_MAX ? INT64_MAX : (int64_t)limit),
                                    RT__SQLITE_I64(now_ns)};
    return rt__sqlite_each_row(s->be, RT__SQL_ROLLUP_PENDING, args, 4, pending_row, &u,
                               "reading the blocks waiting for rollups", err);
}

int rt__sqlite_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                            int64_t retry_ns, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(b->service), RT__SQLITE_I64((int64_t)b->type),
                                    RT__SQLITE_I64(b->level),    RT__SQLITE_I64(b->block),
                                    RT__SQLITE_I64(b->gen),      RT__SQLITE_I64(retry_ns)};
    return rt__sqlite_write_one(s->be, RT__SQL_ROLLUP_DEFER, args, 6, "deferring a rollup", err);
}

/* Inside the write transaction: claims block b (its gen unchanged) and replaces its rollup. */
static int write_rollup(struct rt__sqlite *db, int64_t sid, const struct rt_rollup_block *b,
                        const struct rt_rollup_group *g, size_t n, struct rt_error *err)
{
    struct rt__sqlite_arg key[] = {RT__SQLITE_I64(sid), RT__SQLITE_I64((int64_t)b->type),
                                   RT__SQLITE_I64(b->level), RT__SQLITE_I64(b->block),
                                   RT__SQLITE_I64(b->gen)};
    if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_CLAIM, key, 5, "claiming a block", err))
        return err->code;
    if (sqlite3_changes(db->w->db) != 1)
        return rt_error_set(err, RT_ECONFLICT,
                            "profiles of %s %lld of %s were stored after it was read",
                            b->level ? "day" : "hour", (long long)b->block, b->service);
    if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_DROP_GROUPS, key, 4, "replacing a rollup", err) ||
        rt__sqlite_step_write(db, RT__SQL_ROLLUP_DROP_BLOCK, key, 4, "replacing a rollup", err))
        return err->code;
    for (size_t i = 0; i < n; i++) {
        struct rt__sqlite_arg args[] = {key[0], key[1], key[2], key[3],
                                        RT__SQLITE_TEXT(g[i].instance),
                                        RT__SQLITE_TEXT(g[i].version),
                                        RT__SQLITE_BLOB(g[i].data, g[i].len)};
        if (g[i].len > INT32_MAX)
            return rt_error_set(err, RT_ETOOBIG, "a rollup exceeds 2 GiB");
        if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_GROUP_ADD, args, 7, "storing a rollup", err))
            return err->code;
    }
    struct rt__sqlite_arg block[] = {key[0], key[1], key[2], key[3],
                                     RT__SQLITE_I64(rt_time_now_ns())};
    return rt__sqlite_step_write(db, RT__SQL_ROLLUP_BLOCK_ADD, block, 5, "storing a rollup", err);
}

int rt__sqlite_put_rollup(struct rt_store *s, const struct rt_rollup_block *h,
                          const struct rt_rollup_group *g, size_t n, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    int64_t sid = 0;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_SERVICE_ID, err);
    int rc = st ? 0 : err->code;
    if (st) {
        sqlite3_bind_text(st, 1, h->service, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW)
            sid = sqlite3_column_int64(st, 0);
        else if (step == SQLITE_DONE)
            rc = rt_error_set(err, RT_ECONFLICT, "service %s is gone", h->service);
        else
            rc = rt__sqlite_fail(db->w, step, "looking up a service", err);
        sqlite3_reset(st);
    }
    if (!rc)
        rc = write_rollup(db, sid, h, g, n, err);
    if (rc) {
        rt__sqlite_rollback(db);
        return rc;
    }
    return rt__sqlite_commit(db, err);
}
