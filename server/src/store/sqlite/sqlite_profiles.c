/* SQLite backend, profiles: storing an upload in one transaction (interning its frames and
 * stacks through the dictionary cache), the window scan, loading frames and stacks on a cache
 * miss, and retention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/producer.h"
#include "rt/profile.h"
#include "rt/u64map.h"
#include "rt/str.h"
#include "rt/timeutil.h"
#include "sqlite_int.h"

/* State of one write transaction of uploads (one group commit). */
struct put_ctx {
    struct rt_store *s;
    struct rt__sqlite_conn *w;     /* the writer, locked */
    struct rt__store_dict pending; /* frames and stacks this transaction inserted */
    uint32_t *fmap;                /* profile frame id -> store frame id (0 = not yet) */
    size_t cap_fmap;
    uint32_t *sframes;             /* one stack's store frame ids */
    size_t cap_sframes;
    struct rt_store_row *rows;     /* one profile's rows */
    size_t cap_rows;
    struct rt_buf blob;            /* encoded stack or rows */
    int64_t now_ns;                /* time of the upload */
    int64_t added;                 /* profiles inserted */
    int64_t max_duration_ns;       /* longest duration inserted */
    struct {                       /* blocks this transaction already sent back to wait */
        int64_t service_id, block; /* for their rollups (rt__sqlite_rollup_touch), recent */
        int type, level;
    } touched[8];
    unsigned ntouched;
};

/* Sends p's block of level (if it has one) back to wait for its rollup, once per
 * transaction. */
static int touch_block(struct put_ctx *c, const struct rt_profile *p, int64_t service_id,
                       int level, struct rt_error *err)
{
    int64_t block = rt_profile_rollup_block(p->time_ns, p->duration_ns, level);
    if (block < 0)
        return 0;
    unsigned n = c->ntouched < 8 ? c->ntouched : 8;
    for (unsigned i = 0; i < n; i++)
        if (c->touched[i].block == block && c->touched[i].service_id == service_id &&
            c->touched[i].type == (int)p->type && c->touched[i].level == level)
            return 0;
    int rc = rt__sqlite_rollup_touch(c->w, service_id, (int)p->type, level, block, c->now_ns,
                                     err);
    if (!rc) {
        unsigned slot = c->ntouched++ % 8;
        c->touched[slot].service_id = service_id;
        c->touched[slot].block = block;
        c->touched[slot].type = (int)p->type;
        c->touched[slot].level = level;
    }
    return rc;
}

/* A row id as a dictionary id; RT_EIO past 32 bits. */
static int to_id32(int64_t rowid, uint32_t *id, const char *what, struct rt_error *err)
{
    if (rowid <= 0 || rowid > UINT32_MAX)
        return rt_error_set(err, RT_EIO, "%s id %lld out of range", what, (long long)rowid);
    *id = (uint32_t)rowid;
    return 0;
}

/* The store id of a frame name: dictionary, this transaction's frames, SQL, or a new row. */
static int intern_frame(struct put_ctx *c, const char *name, size_t len, uint64_t h,
                        uint32_t *id, struct rt_error *err)
{
    if (len > INT32_MAX)
        return rt_error_set(err, RT_ETOOBIG, "frame name of %zu bytes", len);
    pthread_rwlock_rdlock(&c->s->dict_lock);
    int64_t v = rt__store_dict_find_frame(&c->s->dict, name, len, h);
    pthread_rwlock_unlock(&c->s->dict_lock);
    if (v < 0)
        v = rt__store_dict_find_frame(&c->pending, name, len, h);
    if (v >= 0) {
        *id = (uint32_t)v;
        return 0;
    }
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_FRAME_FIND, err);
    if (!st)
        return err->code;
    sqlite3_bind_text(st, 1, name, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (to_id32(rowid, id, "frame", err))
            return err->code;
        /* committed before this transaction; a failure only costs a miss */
        rt__store_cache_frame(c->s, *id, name, len, h);
        return 0;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "looking up a frame", err);
    if (!(st = rt__sqlite_stmt(c->w, RT__SQL_FRAME_ADD, err)))
        return err->code;
    sqlite3_bind_text(st, 1, name, (int)len, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "storing a frame", err);
    if (to_id32(sqlite3_last_insert_rowid(c->w->db), id, "frame", err))
        return err->code;
    if (rt__store_dict_add_frame(&c->pending, *id, name, len, h))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    return 0;
}

/* Looks the encoded stack in c->blob up by hash in SQL; sets *found. */
static int find_stack_sql(struct put_ctx *c, uint64_t h, uint32_t *id, bool *found,
                          struct rt_error *err)
{
    *found = false;
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_STACK_FIND, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, (int64_t)h);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *b = sqlite3_column_blob(st, 1);
        size_t n = (size_t)sqlite3_column_bytes(st, 1);
        if (n == c->blob.len && (n == 0 || memcmp(b, c->blob.data, n) == 0)) {
            *found = true;
            int64_t rowid = sqlite3_column_int64(st, 0);
            sqlite3_reset(st);
            return to_id32(rowid, id, "stack", err);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "looking up a stack", err);
    return 0;
}

/* The store id of a stack of store frame ids, interned like frames. */
static int intern_stack(struct put_ctx *c, const uint32_t *frames, size_t depth, uint32_t *id,
                        struct rt_error *err)
{
    if (rt__store_encode_stack(&c->blob, frames, depth))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    uint64_t h = rt__store_stack_hash(c->blob.data, c->blob.len);
    pthread_rwlock_rdlock(&c->s->dict_lock);
    int64_t v = rt__store_dict_find_stack(&c->s->dict, c->blob.data, c->blob.len, h);
    pthread_rwlock_unlock(&c->s->dict_lock);
    if (v < 0)
        v = rt__store_dict_find_stack(&c->pending, c->blob.data, c->blob.len, h);
    if (v >= 0) {
        *id = (uint32_t)v;
        return 0;
    }
    bool found;
    if (find_stack_sql(c, h, id, &found, err))
        return err->code;
    if (found) {
        /* a failure only costs a miss */
        rt__store_cache_stack(c->s, *id, c->blob.data, c->blob.len, h);
        return 0;
    }
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_STACK_ADD, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, (int64_t)h);
    sqlite3_bind_blob(st, 2, c->blob.data, (int)c->blob.len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "storing a stack", err);
    if (to_id32(sqlite3_last_insert_rowid(c->w->db), id, "stack", err))
        return err->code;
    if (rt__store_dict_add_stack_enc(&c->pending, *id, c->blob.data, c->blob.len, h))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    return 0;
}

/* Checks stack i of p (its frames lie inside the profile's) and maps its frames to store ids
 * through c->fmap, interning the frames not mapped yet; c->sframes holds the result. */
static int map_frames(struct put_ctx *c, const struct rt_profile *p, size_t i,
                      struct rt_error *err)
{
    const struct rt_profile_stack *ps = &p->stacks[i];
    if ((size_t)ps->off + ps->depth > p->nframe_ids)
        return rt_error_set(err, RT_EINVAL, "stack %zu lies outside the profile's frames", i);
    if (rt_array_grow((void **)&c->sframes, &c->cap_sframes, ps->depth + 1, sizeof(*c->sframes)))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < ps->depth; k++) {
        uint32_t fid = p->frame_ids[ps->off + k];
        if (fid >= p->frames.count)
            return rt_error_set(err, RT_EINVAL, "frame id %u is not in the profile", fid);
        if (!c->fmap[fid] &&
            intern_frame(c, p->frames.strs[fid], p->frames.lens[fid],
                         rt_intern_hash(&p->frames, fid), &c->fmap[fid], err))
            return err->code;
        c->sframes[k] = c->fmap[fid];
    }
    return 0;
}

/* The part of interning that needs no SQL, under one hold of the dictionary's read lock for
 * the whole profile (not one per frame and stack): the frames and stacks that the shared
 * dictionary already knows, into c->fmap and c->rows[i].stack_id (0 where it does not, or
 * where a frame is not in the profile: intern_rows checks those). Each frame's store id is
 * encoded as it is mapped (rt__store_encode_stack's bytes), in one pass over the stack. */
static int map_known(struct put_ctx *c, const struct rt_profile *p)
{
    int rc = 0;
    pthread_rwlock_rdlock(&c->s->dict_lock);
    for (size_t i = 0; i < p->nstacks && rc == 0; i++) {
        const struct rt_profile_stack *ps = &p->stacks[i];
        c->rows[i] = (struct rt_store_row){0, ps->samples, ps->value_ns};
        if ((size_t)ps->off + ps->depth > p->nframe_ids)
            continue;
        c->blob.len = 0;
        if ((rc = rt_buf_reserve(&c->blob, (size_t)ps->depth * 5 + 1)) != 0)
            break;
        const uint32_t *fids = p->frame_ids + ps->off;
        unsigned char *enc = (unsigned char *)c->blob.data, *at = enc;
        uint32_t k = 0;
        for (; k < ps->depth; k++) {
            uint32_t fid = fids[k];
            if (fid >= p->frames.count)
                break;
            if (!c->fmap[fid]) {
                const char *name = p->frames.strs[fid];
                size_t len = p->frames.lens[fid];
                int64_t v = rt__store_dict_find_frame(&c->s->dict, name, len,
                                                      rt_intern_hash(&p->frames, fid));
                if (v <= 0)
                    break;
                c->fmap[fid] = (uint32_t)v;
            }
            at = rt__store_put_frame_id(at, c->fmap[fid]);
        }
        if (k < ps->depth)
            continue;
        size_t n = (size_t)(at - enc);
        int64_t v = rt__store_dict_find_stack(&c->s->dict, enc, n, rt__store_stack_hash(enc, n));
        if (v > 0)
            c->rows[i].stack_id = (uint32_t)v;
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
    return rc;
}

/* Interns every stack of p into c->rows (one row per stack): what the dictionary knows first
 * (map_known), then the rest through this transaction's frames and stacks, or SQL. */
static int intern_rows(struct put_ctx *c, const struct rt_profile *p, struct rt_error *err)
{
    if (rt_array_grow((void **)&c->fmap, &c->cap_fmap, p->frames.count + 1, sizeof(*c->fmap)) ||
        rt_array_grow((void **)&c->rows, &c->cap_rows, p->nstacks + 1, sizeof(*c->rows)))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    memset(c->fmap, 0, p->frames.count * sizeof(*c->fmap));
    if (map_known(c, p))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->nstacks; i++) {
        if (c->rows[i].stack_id)
            continue;
        if (map_frames(c, p, i, err) ||
            intern_stack(c, c->sframes, p->stacks[i].depth, &c->rows[i].stack_id, err))
            return err->code;
    }
    return 0;
}

/* Finds a stored profile with p's (service, instance, type, profile_id): res says duplicate,
 * with its id, figures and content hash; res is untouched when there is none. */
static int find_duplicate(struct put_ctx *c, const struct rt_profile *p,
                          struct rt_store_put_result *res, struct rt_error *err)
{
    if (!p->profile_id || !*p->profile_id)
        return 0;
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_FIND_DUP, err);
    if (!st)
        return err->code;
    sqlite3_bind_text(st, 1, p->profile_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, (int)p->type);
    sqlite3_bind_text(st, 3, p->service, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, p->instance ? p->instance : "", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *res = (struct rt_store_put_result){.id = sqlite3_column_int64(st, 0),
                                            .duplicate = true,
                                            .samples = sqlite3_column_double(st, 1),
                                            .value_ns = sqlite3_column_int64(st, 2),
                                            .stored_hash = (uint64_t)sqlite3_column_int64(st, 3)};
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "looking up profile_id", err);
    return 0;
}

/* Records an observed deploy when service_id reports version for the first time. */
static int observe_version(struct put_ctx *c, const struct rt_profile *p, int64_t service_id,
                           struct rt_error *err)
{
    struct rt_deploy d;
    if (!rt__store_observed_deploy(p, c->now_ns, &d))
        return 0;
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_VERSION_SEEN, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, service_id);
    sqlite3_bind_text(st, 2, p->version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, c->now_ns);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "recording a version", err);
    if (sqlite3_changes(c->w->db) == 0)
        return 0;
    if (!(st = rt__sqlite_stmt(c->w, RT__SQL_DEPLOY_ADD, err)))
        return err->code;
    sqlite3_bind_text(st, 1, d.service, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d.version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, d.at_ns);
    sqlite3_bind_text(st, 4, d.source, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "recording an observed deploy", err);
    return 0;
}

/* Inserts the profiles row of p with c->blob as its rows. */
static int insert_profile(struct put_ctx *c, const struct rt_profile *p, int64_t service_id,
                          int64_t instance_id, size_t nrows, int64_t *id, struct rt_error *err)
{
    int64_t span = p->duration_ns > 0 ? p->duration_ns : 1, end;
    if (__builtin_add_overflow(p->time_ns, span, &end))
        end = INT64_MAX;
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_PROFILE_ADD, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, service_id);
    sqlite3_bind_int(st, 2, (int)p->type);
    sqlite3_bind_int64(st, 3, instance_id);
    rt__sqlite_bind_text(st, 4, p->version);
    rt__sqlite_bind_text(st, 5, p->profile_id && *p->profile_id ? p->profile_id : NULL);
    sqlite3_bind_int64(st, 6, p->time_ns);
    sqlite3_bind_int64(st, 7, p->duration_ns < 0 ? -1 : p->duration_ns);
    sqlite3_bind_int64(st, 8, end);
    sqlite3_bind_int64(st, 9, p->period_ns);
    sqlite3_bind_double(st, 10, p->samples);
    sqlite3_bind_int64(st, 11, p->value_ns);
    sqlite3_bind_int64(st, 12, p->thread_cpu_ns);
    sqlite3_bind_int64(st, 13, p->process_cpu_ns);
    sqlite3_bind_int(st, 14, p->has_counts);
    sqlite3_bind_int64(st, 15, p->truncated_stacks);
    sqlite3_bind_int64(st, 16, c->now_ns);
    sqlite3_bind_int64(st, 17, (int64_t)nrows);
    sqlite3_bind_blob(st, 18, c->blob.data, (int)c->blob.len, SQLITE_STATIC);
    sqlite3_bind_text(st, 19, p->producer ? p->producer->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 20, p->cpu_scale);
    sqlite3_bind_int64(st, 21, (int64_t)p->content_hash);
    sqlite3_bind_int(st, 22, (int)p->declared_type);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c->w, rc, "storing a profile", err);
    *id = sqlite3_last_insert_rowid(c->w->db);
    c->added++;
    if (span > c->max_duration_ns)
        c->max_duration_ns = span;
    return 0;
}

/* Bumps last_upload_ns of the service. */
static int touch_service(struct put_ctx *c, int64_t service_id, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(c->w, RT__SQL_SERVICE_UPLOADED, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, service_id);
    sqlite3_bind_int64(st, 2, c->now_ns);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(c->w, rc, "updating a service", err);
}

/* Stores one profile inside the transaction. */
static int put_one(struct put_ctx *c, const struct rt_profile *p, struct rt_store_put_result *res,
                   struct rt_error *err)
{
    int64_t service_id = 0, instance_id = 0, id = 0;
    *res = (struct rt_store_put_result){0};
    if (find_duplicate(c, p, res, err))
        return err->code;
    if (res->duplicate)
        return 0;
    if (rt__sqlite_service_id(c->w, p->service, c->now_ns, &service_id, err) ||
        rt__sqlite_instance_id(c->w, service_id, p->instance ? p->instance : "", p, c->now_ns,
                               &instance_id, err) ||
        observe_version(c, p, service_id, err) || intern_rows(c, p, err))
        return err->code;
    size_t nrows = p->nstacks;
    int rc = rt__store_encode_rows(&c->blob, c->rows, &nrows, p->period_ns);
    if (rc)
        return rt_error_set(err, rc, "encoding a profile's rows: %s", rt_strerror(rc));
    if (c->blob.len > INT32_MAX)
        return rt_error_set(err, RT_ETOOBIG, "profile rows exceed 2 GiB");
    if (insert_profile(c, p, service_id, instance_id, nrows, &id, err) ||
        touch_service(c, service_id, err) || touch_block(c, p, service_id, 0, err) ||
        touch_block(c, p, service_id, 1, err))
        return err->code;
    res->id = id;
    return 0;
}

/* Updates a meta counter: op META_ADD or META_MAX. */
static int update_meta(struct rt__sqlite_conn *w, enum rt__sql op, const char *key, int64_t v,
                       struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(w, op, err);
    if (!st)
        return err->code;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(w, rc, "updating store metadata", err);
}

int rt__sqlite_put_group(struct rt_store *s, struct rt__sqlite_put *const *reqs, size_t nreq,
                         struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct put_ctx c = {.s = s, .w = db->w, .now_ns = rt_time_now_ns()};
    rt__store_dict_init(&c.pending, false);
    rt_buf_init(&c.blob, 0);
    int rc = rt__sqlite_begin(db, true, err);
    if (rc)
        goto out_free_ctx;
    for (size_t k = 0; k < nreq && !rc; k++)
        for (size_t i = 0; i < reqs[k]->n && !rc; i++)
            rc = put_one(&c, reqs[k]->ps[i], &reqs[k]->res[i], err);
    if (!rc && c.added &&
        (update_meta(c.w, RT__SQL_META_ADD, "profile_count", c.added, err) ||
         update_meta(c.w, RT__SQL_META_MAX, "max_duration_ns", c.max_duration_ns, err)))
        rc = err->code;
    if (rc) {
        rt__sqlite_rollback(db); /* pending frames and stacks are dropped with it */
        goto out_free_ctx;
    }
    rc = rt__sqlite_commit(db, err);
    if (rc)
        goto out_free_ctx;
    rt__store_cache_merge(s, &c.pending); /* a failure only costs later misses */

out_free_ctx:
    rt__store_dict_cleanup(&c.pending);
    rt_buf_cleanup(&c.blob);
    free(c.fmap);
    free(c.sframes);
    free(c.rows);
    return rc;
}

/* Fills m from a row of the SCAN statement. */
static void read_meta(sqlite3_stmt *st, struct rt_profile_meta *m)
{
    m->id = sqlite3_column_int64(st, 0);
    m->profile_id = rt__sqlite_text(st, 1);
    m->instance = rt__sqlite_text(st, 2);
    if (!m->instance)
        m->instance = "";
    m->version = rt__sqlite_text(st, 3);
    m->time_ns = sqlite3_column_int64(st, 4);
    m->duration_ns = sqlite3_column_int64(st, 5);
    m->period_ns = sqlite3_column_int64(st, 6);
    m->thread_cpu_ns = sqlite3_column_int64(st, 7);
    m->process_cpu_ns = sqlite3_column_int64(st, 8);
    m->samples = sqlite3_column_double(st, 9);
    m->value_ns = sqlite3_column_int64(st, 10);
    m->has_counts = sqlite3_column_int(st, 11) != 0;
    m->truncated_stacks = (uint32_t)sqlite3_column_int64(st, 12);
    m->producer = rt__sqlite_text(st, 14);
    if (!m->producer)
        m->producer = "";
    m->cpu_scale = sqlite3_column_double(st, 15);
    m->declared_type = rt__store_declared_type_of(sqlite3_column_int(st, 16));
}

int rt__sqlite_scan_rows(struct rt__sqlite_conn *c, sqlite3_stmt *st, rt_store_profile_cb cb,
                         void *ud, struct rt_u64map *seen, struct rt_error *err)
{
    struct rt_store_row *rows = NULL;
    size_t cap = 0;
    int ret = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_profile_meta m;
        read_meta(st, &m);
        if (seen && sqlite3_column_int64(st, 17) < 0) { /* of no hour: may come twice */
            uint32_t dummy;
            if (rt_u64map_find(seen, (uint64_t)m.id, &dummy))
                continue;
            if (rt_u64map_put(seen, (uint64_t)m.id, 0)) {
                ret = rt_error_set(err, RT_ENOMEM, "out of memory");
                break;
            }
        }
        size_t nrows;
        int drc = rt__store_decode_rows(sqlite3_column_blob(st, 13),
                                        (size_t)sqlite3_column_bytes(st, 13), &rows, &cap, &nrows);
        if (drc) {
            ret = rt_error_set(err, RT_EIO, "profile %lld: rows unreadable (%s)",
                               (long long)m.id, rt_strerror(drc));
            break;
        }
        if ((ret = cb(ud, &m, rows, nrows)))
            break;
    }
    if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning profiles", err);
    free(rows);
    return ret;
}

int rt__sqlite_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                    void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_SCAN, &c, &st, err))
        return err->code;
    sqlite3_bind_text(st, 1, f->service, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, (int)f->type);
    sqlite3_bind_int64(st, 3, f->from_ns);
    sqlite3_bind_int64(st, 4, f->to_ns);
    rt__sqlite_bind_text(st, 5, f->version);
    rt__sqlite_bind_text(st, 6, f->instance);
    int ret = rt__sqlite_scan_rows(c, st, cb, ud, NULL, err);
    rt__sqlite_read_end(db, c, st);
    return ret;
}

/* Starts a read of the one row statement q (by id) returns: the row is current on success and
 * the caller ends the read; RT_ENOTFOUND when there is none ("no <what> <id>"). */
static int read_by_id(struct rt__sqlite *db, enum rt__sql q, uint32_t id, const char *what,
                      struct rt__sqlite_conn **c, sqlite3_stmt **st, struct rt_error *err)
{
    if (rt__sqlite_read_begin(db, q, c, st, err))
        return err->code;
    sqlite3_bind_int64(*st, 1, id);
    int rc = sqlite3_step(*st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_DONE) {
        rt_error_set(err, RT_ENOTFOUND, "no %s %u", what, id);
    } else {
        char doing[32];
        snprintf(doing, sizeof(doing), "loading a %s", what);
        rt__sqlite_fail(*c, rc, doing, err);
    }
    rt__sqlite_read_end(db, *c, *st);
    return err->code;
}

int rt__sqlite_load_stack(struct rt_store *s, uint32_t id, uint32_t *out, size_t cap,
                          size_t *out_depth, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (read_by_id(db, RT__SQL_STACK_BY_ID, id, "stack", &c, &st, err))
        return err->code;
    uint64_t h = (uint64_t)sqlite3_column_int64(st, 0);
    uint32_t *frames;
    size_t depth;
    const void *blob = sqlite3_column_blob(st, 1);
    size_t nbytes = (size_t)sqlite3_column_bytes(st, 1);
    int ret = rt__store_decode_stack(blob, nbytes, &frames, &depth);
    if (ret) {
        ret = rt_error_set(err, RT_EIO, "stack %u unreadable (%s)", id, rt_strerror(ret));
        goto out_end_read;
    }
    if (depth > cap) {
        ret = rt_error_set(err, RT_ETOOBIG, "stack %u has %zu frames", id, depth);
    } else {
        memcpy(out, frames, depth * sizeof(*out));
        *out_depth = depth;
        rt__store_cache_stack(s, id, blob, nbytes, h); /* a failure only costs a miss */
    }
    free(frames);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_load_frame(struct rt_store *s, uint32_t id, struct rt_arena *a,
                          const char **out, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (read_by_id(db, RT__SQL_FRAME_BY_ID, id, "frame", &c, &st, err))
        return err->code;
    const char *name = rt__sqlite_text(st, 0);
    size_t len = (size_t)sqlite3_column_bytes(st, 0);
    if (!name)
        name = "";
    *out = rt_arena_strndup(a, name, len);
    if (*out)
        rt__store_cache_frame(s, id, name, len, rt_hash(name, len)); /* best effort */
    rt__sqlite_read_end(db, c, st);
    return *out ? 0 : rt_error_set(err, RT_ENOMEM, "out of memory");
}

/* Deletes one batch of expired profiles; sets *n to the number deleted. */
static int retain_batch(struct rt__sqlite *db, int64_t cutoff_ns, int64_t *n,
                        struct rt_error *err)
{
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(cutoff_ns),
                                    RT__SQLITE_I64(RT__SQLITE_RETAIN_BATCH)};
    if (rt__sqlite_step_write(db, RT__SQL_RETAIN_PROFILES, args, 2, "deleting old profiles",
                              err))
        goto out_rollback;
    *n = sqlite3_changes(db->w->db);
    if (*n && update_meta(db->w, RT__SQL_META_ADD, "profile_count", -*n, err))
        goto out_rollback;
    return rt__sqlite_commit(db, err);

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

/* Deletes poll segments that ended before the cutoff. */
static int retain_polls(struct rt__sqlite *db, int64_t cutoff_ns, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(cutoff_ns)};
    return rt__sqlite_write_one(db, RT__SQL_RETAIN_POLLS, args, 1, "deleting old polls", err);
}

/* Gives free pages back to the file system a bounded step at a time. */
static int vacuum_free_pages(struct rt__sqlite *db, struct rt_error *err)
{
    for (int step = 0; step < 100000; step++) {
        pthread_mutex_lock(&db->wlock);
        int rc = rt__sqlite_run(db->w, RT__SQL_VACUUM_STEP, err);
        int64_t left = 0;
        sqlite3_stmt *st = rc ? NULL : rt__sqlite_stmt(db->w, RT__SQL_FREELIST, err);
        if (st && sqlite3_step(st) == SQLITE_ROW)
            left = sqlite3_column_int64(st, 0);
        if (st)
            sqlite3_reset(st);
        pthread_mutex_unlock(&db->wlock);
        if (rc)
            return rc;
        if (left == 0)
            break;
    }
    return 0;
}

int rt__sqlite_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted,
                      struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    /* the rollups of the blocks that lose profiles go first: until the profiles go too, those
     * blocks are read raw, never from a rollup counting deleted profiles */
    if (rt__sqlite_rollup_retain(db, cutoff_ns, err))
        return err->code;
    int64_t n;
    do {
        n = 0;
        if (retain_batch(db, cutoff_ns, &n, err))
            return err->code;
        *deleted += n;
    } while (n == RT__SQLITE_RETAIN_BATCH);
    if (retain_polls(db, cutoff_ns, err))
        return err->code;
    return vacuum_free_pages(db, err);
}
