/* SQLite backend: rollups of whole hours (docs/internals/rollups.md). A profile stored into an
 * hour (rt_profile_rollup_hour) sends it back to rollup_pending with a new gen; a rollup is
 * stored only if its hour's gen did not change since the hour was read; a window reads its
 * whole rolled hours from rollups and every other profile from the profiles table, in one
 * read transaction, so that an hour is never counted twice nor missed. */
#include <stdlib.h>

#include "rt/buf.h"
#include "rt/profile.h"
#include "rt/timeutil.h"
#include "rt/u64map.h"
#include "sqlite_int.h"

int rt__sqlite_rollup_touch(struct rt__sqlite_conn *w, int64_t service_id, int type,
                            int64_t hour, int64_t now_ns, struct rt_error *err)
{
    static const enum rt__sql ops[] = {RT__SQL_ROLLUP_TOUCH, RT__SQL_ROLLUP_DROP_HOUR,
                                       RT__SQL_ROLLUP_DROP_GROUPS};
    /* an hour still open has no rollup to drop */
    size_t nops = hour < now_ns / RT_ROLLUP_HOUR_NS ? 3 : 1; /* (hour + 1)·H <= now */
    for (size_t i = 0; i < nops; i++) {
        sqlite3_stmt *st = rt__sqlite_stmt(w, ops[i], err);
        if (!st)
            return err->code;
        sqlite3_bind_int64(st, 1, service_id);
        sqlite3_bind_int(st, 2, type);
        sqlite3_bind_int64(st, 3, hour);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return rt__sqlite_fail(w, rc, "sending an hour back to its rollup", err);
    }
    return 0;
}

int rt__sqlite_rollup_retain(struct rt__sqlite *db, int64_t cutoff_ns, struct rt_error *err)
{
    /* an hour starting before the cutoff lost profiles (or will): its rollup goes */
    int64_t before = cutoff_ns <= 0 ? 0 : (cutoff_ns - 1) / RT_ROLLUP_HOUR_NS + 1;
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(before)};
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    if (rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUPS, args, 1, "deleting old rollups", err) ||
        rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUP_HOURS, args, 1, "deleting old rollups",
                              err) ||
        rt__sqlite_step_write(db, RT__SQL_RETAIN_ROLLUP_PENDING, args, 1,
                              "deleting old rollups", err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    return rt__sqlite_commit(db, err);
}

/* ---- the rolled read ---- */

struct rolled_read {
    struct rt__sqlite_conn *c;
    const struct rt_store_filter *f;
    const struct rt_store_window_reader *r;
    void *ud;
    struct rt_u64map seen;  /* ids of profiles of no hour already passed */
    int64_t *hours;         /* the window's rolled hours, ascending */
    size_t nhours, cap_hours;
};

/* Binds ?1..?6 of the SCAN and ROLLUP_* statements: the filter with [from, to). */
static void bind_filter(sqlite3_stmt *st, const struct rt_store_filter *f, int64_t from,
                        int64_t to)
{
    sqlite3_bind_text(st, 1, f->service, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, (int)f->type);
    sqlite3_bind_int64(st, 3, from);
    sqlite3_bind_int64(st, 4, to);
    if (sqlite3_bind_parameter_count(st) >= 6) {
        rt__sqlite_bind_text(st, 5, f->version);
        rt__sqlite_bind_text(st, 6, f->instance);
    }
}

/* Passes the profiles statement id (SCAN or SCAN_STRADDLE) selects in [from, to). */
static int read_profiles(struct rolled_read *u, enum rt__sql id, int64_t from, int64_t to,
                         struct rt_error *err)
{
    if (to <= from)
        return 0;
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, id, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, from, to);
    int rc = rt__sqlite_scan_rows(u->c, st, u->r->rows, u->ud, &u->seen, err);
    sqlite3_reset(st);
    return rc;
}

/* The rolled hours in [lo, hi) into u->hours. */
static int read_hours(struct rolled_read *u, int64_t lo, int64_t hi, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, RT__SQL_ROLLUP_HOURS, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, lo, hi);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rt_array_grow((void **)&u->hours, &u->cap_hours, u->nhours + 1, sizeof(*u->hours))) {
            sqlite3_reset(st);
            return rt_error_set(err, RT_ENOMEM, "out of memory");
        }
        u->hours[u->nhours++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(u->c, rc, "reading rolled hours", err);
}

/* Every rollup of the hours in [lo, hi) that the filter selects. */
static int read_rollups(struct rolled_read *u, int64_t lo, int64_t hi, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(u->c, RT__SQL_ROLLUP_READ, err);
    if (!st)
        return err->code;
    bind_filter(st, u->f, lo, hi);
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

/* The window: rolled hours from their rollups, the rest from profiles. Between runs of rolled
 * hours, every profile overlapping the gap; inside a run, the profiles of no hour (those of the
 * run's hours are in the rollups); a profile of no hour met twice is passed once. */
static int read_window(struct rolled_read *u, struct rt_error *err)
{
    const struct rt_store_filter *f = u->f;
    int64_t lo = f->from_ns / RT_ROLLUP_HOUR_NS + (f->from_ns % RT_ROLLUP_HOUR_NS != 0);
    int64_t hi = f->to_ns / RT_ROLLUP_HOUR_NS; /* whole hours of the window: [lo, hi) */
    int rc = read_hours(u, lo, hi, err);
    int64_t cursor = f->from_ns;
    for (size_t i = 0; !rc && i < u->nhours;) {
        size_t j = i + 1;
        while (j < u->nhours && u->hours[j] == u->hours[j - 1] + 1)
            j++;
        int64_t a = u->hours[i] * RT_ROLLUP_HOUR_NS, b = (u->hours[j - 1] + 1) * RT_ROLLUP_HOUR_NS;
        rc = read_profiles(u, RT__SQL_SCAN, cursor, a, err);
        if (!rc)
            rc = read_profiles(u, RT__SQL_SCAN_STRADDLE, a, b, err);
        cursor = b;
        i = j;
    }
    if (!rc)
        rc = read_profiles(u, RT__SQL_SCAN, cursor, f->to_ns, err);
    if (!rc && u->nhours)
        rc = read_rollups(u, lo, hi, err);
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
    if (rc == SQLITE_OK)
        sqlite3_exec(u.c->db, "COMMIT", NULL, NULL, NULL); /* a read: nothing to lose */
    rt__sqlite_release(db, u.c);
    rt_u64map_cleanup(&u.seen);
    free(u.hours);
    return ret;
}

/* ---- building ---- */

struct pending_read {
    int (*cb)(void *ud, const struct rt_rollup_hour *h);
    void *ud;
};

static int pending_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    (void)err;
    struct pending_read *u = ud;
    const char *service = rt__sqlite_text(st, 0);
    struct rt_rollup_hour h = {service ? service : "", (enum rt_ptype)sqlite3_column_int(st, 1),
                               sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
    return u->cb(u->ud, &h);
}

int rt__sqlite_scan_rollup_pending(struct rt_store *s, int64_t before_hour, size_t limit,
                                   int (*cb)(void *ud, const struct rt_rollup_hour *h), void *ud,
                                   struct rt_error *err)
{
    struct pending_read u = {cb, ud};
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(before_hour),
                                    RT__SQLITE_I64(limit > INT64_MAX ? INT64_MAX : (int64_t)limit)};
    return rt__sqlite_each_row(s->be, RT__SQL_ROLLUP_PENDING, args, 2, pending_row, &u,
                               "reading the hours waiting for rollups", err);
}

/* Inside the write transaction: claims hour h (its gen unchanged) and replaces its rollup. */
static int write_rollup(struct rt__sqlite *db, int64_t sid, const struct rt_rollup_hour *h,
                        const struct rt_rollup_group *g, size_t n, struct rt_error *err)
{
    struct rt__sqlite_arg key[] = {RT__SQLITE_I64(sid), RT__SQLITE_I64((int64_t)h->type),
                                   RT__SQLITE_I64(h->hour), RT__SQLITE_I64(h->gen)};
    if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_CLAIM, key, 4, "claiming an hour", err))
        return err->code;
    if (sqlite3_changes(db->w->db) != 1)
        return rt_error_set(err, RT_ECONFLICT,
                            "profiles of hour %lld of %s were stored after it was read",
                            (long long)h->hour, h->service);
    if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_DROP_GROUPS, key, 3, "replacing a rollup", err) ||
        rt__sqlite_step_write(db, RT__SQL_ROLLUP_DROP_HOUR, key, 3, "replacing a rollup", err))
        return err->code;
    for (size_t i = 0; i < n; i++) {
        struct rt__sqlite_arg args[] = {key[0], key[1], key[2], RT__SQLITE_TEXT(g[i].instance),
                                        RT__SQLITE_TEXT(g[i].version),
                                        RT__SQLITE_BLOB(g[i].data, g[i].len)};
        if (g[i].len > INT32_MAX)
            return rt_error_set(err, RT_ETOOBIG, "a rollup exceeds 2 GiB");
        if (rt__sqlite_step_write(db, RT__SQL_ROLLUP_GROUP_ADD, args, 6, "storing a rollup", err))
            return err->code;
    }
    struct rt__sqlite_arg hour[] = {key[0], key[1], key[2], RT__SQLITE_I64(rt_time_now_ns())};
    return rt__sqlite_step_write(db, RT__SQL_ROLLUP_HOUR_ADD, hour, 4, "storing a rollup", err);
}

int rt__sqlite_put_rollup(struct rt_store *s, const struct rt_rollup_hour *h,
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
