/* ClickHouse backend, profiles: an upload as RowBinary rows for a few tables, written by the
 * group commit (frames, stacks, then the profiles, so that a profile is never visible before
 * its dictionary), the
 * window scan with profile_id deduplicated at read time, the mapping of ClickHouse's 64-bit
 * frame and stack ids (hashes of their content) to local ids, and retention by partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/producer.h"
#include "rt/str.h"
#include "rt/timeutil.h"

/* A frame or stack this upload writes, published to the dictionary after the INSERTs. */
struct new_entry {
    uint64_t id;        /* ClickHouse id */
    const char *name;   /* frame: borrowed from the profile */
    size_t len;         /* frame: bytes of name; stack: depth */
    size_t off;         /* stack: first frame in put_ctx.pool */
};

/* One aggregated row with a ClickHouse stack id. */
struct grow {
    uint64_t stack;
    uint64_t leaf;      /* ClickHouse id of the stack's leaf frame */
    double samples;
    int64_t value_ns;
};

/* State of one rt_store_put_profiles call. */
struct put_ctx {
    struct rt_store *s;
    struct rt__ch *ch;
    int64_t now_ns;
    struct rt_buf frames, stacks, profiles, events, services, uploads, versions, deploys;
    struct rt_u64map seen_frames, seen_stacks; /* written by this call: id -> 1 */
    struct new_entry *nf, *ns;                     /* new frames and stacks */
    size_t nnf, cap_nf, nns, cap_ns;
    uint64_t *pool;                                /* new stacks' frame ids */
    size_t npool, cap_pool;
    uint64_t *fmap;                                /* profile frame id -> ClickHouse id */
    size_t cap_fmap;
    struct grow *rows;
    size_t cap_rows;
};

static bool known(struct rt_store *s, struct rt_u64map *m, uint64_t id)
{
    pthread_rwlock_rdlock(&s->dict_lock);
    bool k = rt__ch_idmap_get(m, id) != 0;
    pthread_rwlock_unlock(&s->dict_lock);
    return k;
}

/* The ClickHouse id of a frame name (h: its rt_hash), queued for writing when new. */
static int frame_id(struct put_ctx *c, const char *name, size_t len, uint64_t h, uint64_t *id)
{
    *id = h;
    if (rt__ch_idmap_get(&c->seen_frames, h) || known(c->s, &c->ch->frame_ids, h))
        return 0;
    if (rt_array_grow((void **)&c->nf, &c->cap_nf, c->nnf + 1, sizeof(*c->nf)) ||
        rt_u64map_put(&c->seen_frames, h, 1) || rt__ch_w_u64(&c->frames, h) ||
        rt__ch_w_str(&c->frames, name, len))
        return RT_ENOMEM;
    c->nf[c->nnf++] = (struct new_entry){h, name, len, 0};
    return 0;
}

/* The ClickHouse id of a stack of ClickHouse frame ids, queued for writing when new. */
static int stack_id(struct put_ctx *c, const uint64_t *frames, size_t depth, uint64_t *id)
{
    unsigned char buf[8 * RT_MAX_STACK_DEPTH];
    size_t n = depth < RT_MAX_STACK_DEPTH ? depth : RT_MAX_STACK_DEPTH;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 8; k++)
            buf[8 * i + k] = (unsigned char)(frames[i] >> (8 * k));
    uint64_t h = rt_hash(buf, 8 * n);
    *id = h;
    if (rt__ch_idmap_get(&c->seen_stacks, h) || known(c->s, &c->ch->stack_ids, h))
        return 0;
    if (rt_array_grow((void **)&c->ns, &c->cap_ns, c->nns + 1, sizeof(*c->ns)) ||
        rt_array_grow((void **)&c->pool, &c->cap_pool, c->npool + n, sizeof(*c->pool)) ||
        rt_u64map_put(&c->seen_stacks, h, 1) || rt__ch_w_u64(&c->stacks, h) ||
        rt__ch_w_uvarint(&c->stacks, n))
        return RT_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (rt__ch_w_u64(&c->stacks, frames[i]))
            return RT_ENOMEM;
    memcpy(c->pool + c->npool, frames, n * sizeof(*frames));
    c->ns[c->nns++] = (struct new_entry){h, NULL, n, c->npool};
    c->npool += n;
    return 0;
}

static int cmp_grow(const void *a, const void *b)
{
    const struct grow *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* p's rows with ClickHouse stack ids, sorted by id and merged; *n receives their count. */
static int profile_rows(struct put_ctx *c, const struct rt_profile *p, size_t *n,
                        struct rt_error *err)
{
    uint64_t frames[RT_MAX_STACK_DEPTH];
    if (rt_array_grow((void **)&c->fmap, &c->cap_fmap, p->frames.count + 1, sizeof(*c->fmap)) ||
        rt_array_grow((void **)&c->rows, &c->cap_rows, p->nstacks + 1, sizeof(*c->rows)))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    memset(c->fmap, 0, p->frames.count * sizeof(*c->fmap));
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *ps = &p->stacks[i];
        if ((size_t)ps->off + ps->depth > p->nframe_ids || ps->depth > RT_MAX_STACK_DEPTH ||
            ps->depth == 0)
            return rt_error_set(err, RT_EINVAL, "stack %zu lies outside the profile's frames", i);
        for (uint32_t k = 0; k < ps->depth; k++) {
            uint32_t fid = p->frame_ids[ps->off + k];
            if (fid >= p->frames.count)
                return rt_error_set(err, RT_EINVAL, "frame id %u is not in the profile", fid);
            if (!c->fmap[fid] && frame_id(c, p->frames.strs[fid], p->frames.lens[fid],
                                          rt_intern_hash(&p->frames, fid), &c->fmap[fid]))
                return rt_error_set(err, RT_ENOMEM, "out of memory");
            frames[k] = c->fmap[fid];
        }
        uint64_t sid;
        if (stack_id(c, frames, ps->depth, &sid))
            return rt_error_set(err, RT_ENOMEM, "out of memory");
        c->rows[i] = (struct grow){sid, frames[ps->depth - 1], ps->samples, ps->value_ns};
    }
    size_t k = 0;
    if (p->nstacks) {
        qsort(c->rows, p->nstacks, sizeof(*c->rows), cmp_grow);
        for (size_t i = 1; i < p->nstacks; i++) {
            if (c->rows[i].stack == c->rows[k].stack) {
                c->rows[k].samples += c->rows[i].samples;
                c->rows[k].value_ns += c->rows[i].value_ns;
            } else {
                c->rows[++k] = c->rows[i];
            }
        }
        k++;
    }
    *n = k;
    return 0;
}

/* How far from a profile's start a stored one with its profile_id is looked for: a day,
 * the longest profile (api_profiles.c), so that the lookup stays on the primary key
 * (service, type, time_ns); without a range 18.16 reads every profile_id of the service and
 * uploads slow down as the store grows. Farther apart, both are stored and both read (the
 * dedup key holds the content hash). */
#define DUP_RANGE_NS (86400LL * 1000000000LL)

/* A stored profile with p's (service, instance, type, profile_id) within DUP_RANGE_NS of p's
 * start: res says duplicate, with its id, figures and content hash (rows stored before the
 * hash read 0, "not known"); res is untouched when there is none. */
static int find_duplicate(struct put_ctx *c, const struct rt_profile *p,
                          struct rt_store_put_result *res, struct rt_error *err)
{
    if (!p->profile_id || !*p->profile_id)
        return 0;
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    long long t = p->time_ns;
    long long lo = t > INT64_MIN + DUP_RANGE_NS ? t - DUP_RANGE_NS : INT64_MIN;
    long long hi = t < INT64_MAX - DUP_RANGE_NS ? t + DUP_RANGE_NS : INT64_MAX;
    rt_buf_puts(&sql, "SELECT id, samples, value_ns, content_hash FROM profiles WHERE service = ");
    rt__ch_quote_cstr(&sql, p->service);
    rt_buf_printf(&sql, " AND type = %d AND time_ns >= %lld AND time_ns <= %lld AND has_pid = 1 "
                        "AND profile_id = ", (int)p->type, lo, hi);
    rt__ch_quote_cstr(&sql, p->profile_id);
    rt_buf_puts(&sql, " AND instance = ");
    rt__ch_quote_cstr(&sql, p->instance ? p->instance : "");
    rt_buf_puts(&sql, " ORDER BY id LIMIT 1 FORMAT RowBinary");
    int rc = rt__ch_run(c->ch, &sql, &out, err);
    if (!rc && out.len == 32) {
        struct rt__ch_rd r;
        rt__ch_rd_init(&r, &out);
        res->id = (int64_t)rt__ch_rd_u64(&r);
        res->samples = rt__ch_rd_f64(&r);
        res->value_ns = rt__ch_rd_i64(&r);
        res->stored_hash = rt__ch_rd_u64(&r);
        res->duplicate = true;
    }
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

/* The read-time deduplication key of a profile (LIMIT 1 BY dedup within a service and type):
 * instance, profile_id and content hash, so that only a true retry (or a concurrent twin)
 * is read once; "#id" for a profile without a profile_id. Appended to key; 0 or RT_ENOMEM. */
static int dedup_key(const struct rt_profile *p, int64_t id, struct rt_buf *key)
{
    if (!p->profile_id || !*p->profile_id)
        return rt_buf_printf(key, "#%lld", (long long)id);
    const char *inst = p->instance ? p->instance : "";
    return rt_buf_append(key, inst, strlen(inst) + 1) ||
           rt_buf_append(key, p->profile_id, strlen(p->profile_id) + 1) ||
           rt_buf_printf(key, "%016llx", (unsigned long long)p->content_hash);
}

/* Queues an observed deploy when p's service reports p's version for the first time. */
static int observe_version(struct put_ctx *c, const struct rt_profile *p, struct rt_error *err)
{
    struct rt_deploy d;
    if (!rt__store_observed_deploy(p, c->now_ns, &d))
        return 0;
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    rt_buf_puts(&sql, "SELECT count() FROM service_versions WHERE service = ");
    rt__ch_quote_cstr(&sql, p->service);
    rt_buf_puts(&sql, " AND version = ");
    rt__ch_quote_cstr(&sql, p->version);
    rt_buf_puts(&sql, " FORMAT TabSeparated");
    int rc = rt__ch_run(c->ch, &sql, &out, err);
    bool seen = !rc && out.data && strtoll(out.data, NULL, 10) > 0;
    /* also seen earlier in this upload */
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &c->versions);
    while (!rc && !seen && rt__ch_rd_more(&r)) {
        size_t n1, n2;
        const char *svc = rt__ch_rd_str(&r, &n1), *ver = rt__ch_rd_str(&r, &n2);
        rt__ch_rd_i64(&r);
        seen = n1 == strlen(p->service) && !memcmp(svc, p->service, n1) &&
               n2 == strlen(p->version) && !memcmp(ver, p->version, n2);
    }
    if (!rc && !seen &&
        (rt__ch_w_cstr(&c->versions, p->service) || rt__ch_w_cstr(&c->versions, p->version) ||
         rt__ch_w_i64(&c->versions, c->now_ns) || rt__ch_w_cstr(&c->deploys, d.service) ||
         rt__ch_w_cstr(&c->deploys, d.version) || rt__ch_w_cstr(&c->deploys, d.source) ||
         rt__ch_w_i64(&c->deploys, d.at_ns) ||
         rt__ch_w_i64(&c->deploys, rt__ch_new_id())))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

/* Appends the RowBinary row of profile p (rows in c->rows) to c->profiles. */
static int write_profile(struct put_ctx *c, const struct rt_profile *p, int64_t id, size_t n)
{
    struct rt_buf *b = &c->profiles;
    int64_t span = p->duration_ns > 0 ? p->duration_ns : 1, end;
    if (__builtin_add_overflow(p->time_ns, span, &end))
        end = INT64_MAX;
    struct rt_buf dedup;
    rt_buf_init(&dedup, 0);
    bool pid = p->profile_id && *p->profile_id;
    int rc = dedup_key(p, id, &dedup) || rt__ch_w_u64(b, (uint64_t)id) ||
             rt__ch_w_str(b, dedup.data, dedup.len) ||
             rt__ch_w_cstr(b, p->service) || rt__ch_w_u8(b, (uint8_t)p->type) ||
             rt__ch_w_cstr(b, p->instance) || rt__ch_w_cstr(b, p->version) ||
             rt__ch_w_u8(b, p->version != NULL) || rt__ch_w_cstr(b, pid ? p->profile_id : NULL) ||
             rt__ch_w_u8(b, pid) || rt__ch_w_i64(b, p->time_ns) ||
             rt__ch_w_i64(b, p->duration_ns < 0 ? -1 : p->duration_ns) || rt__ch_w_i64(b, end) ||
             rt__ch_w_i64(b, p->period_ns) || rt__ch_w_f64(b, p->samples) ||
             rt__ch_w_i64(b, p->value_ns) || rt__ch_w_i64(b, p->thread_cpu_ns) ||
             rt__ch_w_i64(b, p->process_cpu_ns) || rt__ch_w_u8(b, p->has_counts) ||
             rt__ch_w_u32(b, p->truncated_stacks) || rt__ch_w_i64(b, c->now_ns);
    rc = rc || rt__ch_w_uvarint(b, n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt__ch_w_u64(b, c->rows[i].stack);
    rc = rc || rt__ch_w_uvarint(b, n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt__ch_w_f64(b, c->rows[i].samples);
    rc = rc || rt__ch_w_uvarint(b, n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt__ch_w_i64(b, c->rows[i].value_ns);
    rc = rc || rt__ch_w_uvarint(b, n);
    for (size_t i = 0; !rc && i < n; i++)
        rc = rt__ch_w_u64(b, c->rows[i].leaf);
    /* schema v2's to v4's columns, appended to the table by their migrations */
    rc = rc || rt__ch_w_cstr(b, p->producer ? p->producer->name : "") ||
         rt__ch_w_f64(b, p->cpu_scale) || rt__ch_w_u64(b, p->content_hash) ||
         rt__ch_w_u8(b, (uint8_t)p->declared_type);
    rt_buf_cleanup(&dedup);
    return rc ? RT_ENOMEM : 0;
}

/* Queues profile i of the upload, or finds it a duplicate. */
static int put_one(struct put_ctx *c, struct rt_profile *const *ps, size_t i,
                   struct rt_store_put_result *res, struct rt_error *err)
{
    const struct rt_profile *p = ps[i];
    for (size_t j = 0; p->profile_id && j < i; j++)
        if (ps[j]->profile_id && ps[j]->type == p->type && !res[j].duplicate &&
            !strcmp(ps[j]->profile_id, p->profile_id) && !strcmp(ps[j]->service, p->service) &&
            !strcmp(ps[j]->instance ? ps[j]->instance : "", p->instance ? p->instance : "")) {
            res[i] = (struct rt_store_put_result){.id = res[j].id, .duplicate = true,
                                                  .samples = ps[j]->samples,
                                                  .value_ns = ps[j]->value_ns,
                                                  .stored_hash = ps[j]->content_hash};
            return 0;
        }
    res[i] = (struct rt_store_put_result){0};
    if (find_duplicate(c, p, &res[i], err))
        return err->code;
    if (res[i].duplicate)
        return 0;
    size_t n;
    int64_t id = rt__ch_new_id();
    if (profile_rows(c, p, &n, err) || observe_version(c, p, err))
        return err->code;
    if (write_profile(c, p, id, n) || rt__ch_w_service(&c->services, p->service, c->now_ns) ||
        rt__ch_w_instance_event(&c->events, p->service, p->instance ? p->instance : "", 1,
                                p->runtime, p->runtime_version, p->sdk_version, p->version,
                                NULL, 0, 0, c->now_ns) ||
        rt__ch_w_cstr(&c->uploads, p->service) || rt__ch_w_u8(&c->uploads, (uint8_t)p->type) ||
        rt__ch_w_i64(&c->uploads, c->now_ns))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    res[i].id = id;
    return 0;
}

/* Publishes the frames and stacks just written to the dictionary under local ids. */
static void publish(struct put_ctx *c)
{
    struct rt__ch *ch = c->ch;
    uint32_t local[RT_MAX_STACK_DEPTH];
    pthread_rwlock_wrlock(&c->s->dict_lock);
    for (size_t i = 0; i < c->nnf; i++) {
        const struct new_entry *e = &c->nf[i];
        if (rt__ch_idmap_get(&ch->frame_ids, e->id))
            continue;
        uint32_t lid = ch->nframes + 1;
        if (rt__store_dict_add_frame(&c->s->dict, lid, e->name, e->len, e->id) ||
            rt_u64map_put(&ch->frame_ids, e->id, lid))
            break; /* only costs a reload later */
        ch->nframes = lid;
    }
    for (size_t i = 0; i < c->nns; i++) {
        const struct new_entry *e = &c->ns[i];
        bool ok = !rt__ch_idmap_get(&ch->stack_ids, e->id);
        for (size_t k = 0; ok && k < e->len; k++)
            ok = (local[k] = rt__ch_idmap_get(&ch->frame_ids, c->pool[e->off + k])) != 0;
        uint32_t lid = ch->nstacks + 1;
        if (!ok || rt__store_dict_add_stack(&c->s->dict, lid, local, e->len, e->id) ||
            rt_u64map_put(&ch->stack_ids, e->id, lid))
            continue;
        ch->nstacks = lid;
    }
    pthread_rwlock_unlock(&c->s->dict_lock);
}

int rt__ch_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                        struct rt_store_put_result *res, struct rt_error *err)
{
    struct put_ctx c = {.s = s, .ch = s->be, .now_ns = rt_time_now_ns()};
    struct rt_buf *const bufs[RT__CH_UPLOAD_TABLES] = {
        &c.frames, &c.stacks, &c.profiles, &c.services,
        &c.events, &c.uploads, &c.versions, &c.deploys};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        rt_buf_init(bufs[i], 0);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = put_one(&c, ps, i, res, err);
    /* in the order of rt__ch_upload_tables: the dictionary before the profiles */
    size_t round = 0;
    if (!rc)
        rc = rt__ch_commit(c.ch, bufs, &round, err);
    if (!rc) {
        publish(&c);
        if (round) /* the first upload of its round counts the round's INSERTs */
            rt__store_count_commit(s, round);
    }
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        rt_buf_cleanup(bufs[i]);
    rt_u64map_cleanup(&c.seen_frames);
    rt_u64map_cleanup(&c.seen_stacks);
    free(c.nf);
    free(c.ns);
    free(c.pool);
    free(c.fmap);
    free(c.rows);
    return rc;
}

int rt__ch_load_stack(struct rt_store *s, uint32_t id, uint32_t *frames, size_t cap,
                      size_t *depth, struct rt_error *err)
{
    (void)s, (void)frames, (void)cap, (void)depth;
    /* local ids exist only for stacks already in the dictionary, which is never emptied */
    return rt_error_set(err, RT_ENOTFOUND, "no stack %u", id);
}

int rt__ch_load_frame(struct rt_store *s, uint32_t id, struct rt_arena *a, const char **name,
                      struct rt_error *err)
{
    (void)s, (void)a, (void)name;
    return rt_error_set(err, RT_ENOTFOUND, "no frame %u", id);
}

int64_t rt__ch_profile_count(struct rt_store *s)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    struct rt_error err;
    int64_t v = -1;
    if (!rt__ch_exec(s->be,
                     "SELECT uniqExact(service, type, dedup) FROM profiles FORMAT TabSeparated",
                     NULL, 0, &out, &err))
        v = strtoll(out.data ? out.data : "-1", NULL, 10);
    rt_buf_cleanup(&out);
    return v;
}

/* The month partition of a nanosecond time column, as MONTH() in clickhouse_db.c. */
#define MONTH_OF(col) "toYYYYMM(toDateTime(intDiv(greatest(" col ", 0), 1000000000)))"

/* Drops the month partitions of table whose newest time (expr) is before cutoff_ns (within
 * `strict` ? < : <=), and that also satisfy `also` (an SQL condition on the month m, or NULL);
 * adds the profiles dropped to *deleted when counting. */
static int drop_partitions(struct rt__ch *ch, const char *table, const char *time_col,
                           const char *end_col, bool strict, const char *also, int64_t cutoff_ns,
                           int64_t *deleted, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    rt_buf_printf(&sql,
                  "SELECT toYYYYMM(toDateTime(intDiv(greatest(%s, 0), 1000000000))) AS m, %s "
                  "FROM %s GROUP BY m HAVING max(%s) %s %lld%s%s ORDER BY m FORMAT RowBinary",
                  time_col, deleted ? "uniqExact(service, type, dedup)" : "count()", table, end_col,
                  strict ? "<" : "<=", (long long)cutoff_ns, also ? " AND " : "",
                  also ? also : "");
    int rc = rt__ch_run(ch, &sql, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    while (!rc && rt__ch_rd_more(&r)) {
        uint32_t month = rt__ch_rd_u32(&r);
        uint64_t count = rt__ch_rd_u64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("a retention query", err);
            break;
        }
        struct rt_buf drop;
        rt_buf_init(&drop, 0);
        rc = rt_buf_puts(&drop, "ALTER TABLE ") || rt__ch_alter_table(&drop, ch, table) ||
                     rt_buf_printf(&drop, " DROP PARTITION %u", month)
                 ? rt_error_set(err, RT_ENOMEM, "out of memory")
                 : rt__ch_run(ch, &drop, NULL, err);
        rt_buf_cleanup(&drop);
        if (!rc && deleted)
            *deleted += (int64_t)count;
    }
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted, struct rt_error *err)
{
    struct rt__ch *ch = s->be;
    /* A month's rollups go once its profiles have gone, not before: a block whose rollup was
     * dropped while its profiles stay would wait to be built again (docs/internals/rollups.md).
     * (One whose block lost profiles is never read again anyway: its fingerprint changed.) */
    if (drop_partitions(ch, "profiles", "time_ns", "end_ns", false, NULL, cutoff_ns, deleted,
                        err) ||
        drop_partitions(ch, "instance_events", "at_ns", "at_ns", true, NULL, cutoff_ns, NULL,
                        err) ||
        drop_partitions(ch, "rollups", "start_ns", "start_ns", true,
                        "m NOT IN (SELECT DISTINCT " MONTH_OF("time_ns") " FROM profiles)",
                        cutoff_ns, NULL, err) ||
        drop_partitions(ch, "rollup_deferrals", "retry_ns", "retry_ns", true, NULL, cutoff_ns,
                        NULL, err))
        return err->code;
    return 0;
}
