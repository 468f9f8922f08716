/* ClickHouse backend, the control plane's state, shared by every node: service configs and
 * API keys as ReplacingMergeTree rows read with argMax over a version column (the write's
 * time), polls as instance events, and the audit log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/timeutil.h"

/* A version for a control-plane row that replaces one of version prev: the write's time in
 * ns, and above prev whatever the clocks (a ReplacingMergeTree keeps the row of the highest
 * version when it merges, so a replacement must never carry a lower one). Of two concurrent
 * writes on different nodes, the later clock wins (docs/internals/clickhouse.md). */
static int64_t row_version(int64_t prev)
{
    int64_t now = rt_time_now_ns();
    return now > prev ? now : prev + 1;
}

/* The highest version stored for name in service_configs (0 when none). */
static int config_version(struct rt__ch *ch, const char *name, int64_t *ver,
                          struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT max(ver) FROM service_configs WHERE name = ") &&
              !rt__ch_quote_cstr(&sql, name) && !rt_buf_puts(&sql, " FORMAT TabSeparated");
    int rc = ok ? rt__ch_run(ch, &sql, &out, err) : rt_error_set(err, RT_ENOMEM, "out of memory");
    if (!rc)
        *ver = strtoll(out.data ? out.data : "0", NULL, 10);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_set_service_config(struct rt_store *s, const char *name,
                              const struct rt_service_config *cfg, struct rt_error *err)
{
    int64_t prev;
    if (config_version(s->be, name, &prev, err))
        return err->code;
    struct rt_buf svc, b;
    rt_buf_init(&svc, 0);
    rt_buf_init(&b, 0);
    int64_t now = rt_time_now_ns();
    bool ok = !rt__ch_w_service(&svc, name, now) && !rt__ch_w_cstr(&b, name) &&
              !rt__ch_w_u8(&b, cfg->enabled) &&
              !rt__ch_w_cstr(&b, rt__store_config_type_text(cfg->type)) &&
              !rt__ch_w_i64(&b, cfg->sampling_interval_us) &&
              !rt__ch_w_i64(&b, cfg->upload_interval_s) && !rt__ch_w_i64(&b, row_version(prev));
    int rc = rt__ch_insert_rows(s->be, "services", &svc, ok, err);
    if (!rc)
        rc = rt__ch_insert_rows(s->be, "service_configs", &b, ok, err);
    rt_buf_cleanup(&svc);
    rt_buf_cleanup(&b);
    return rc;
}

int rt__ch_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = rt__ch_exec(
        s->be,
        "SELECT name, en, t, si, ui FROM (SELECT DISTINCT name FROM services) AS s "
        "ANY LEFT JOIN (SELECT name, argMax(enabled, ver) AS en, argMax(type, ver) AS t,"
        " argMax(sampling_interval_us, ver) AS si, argMax(upload_interval_s, ver) AS ui "
        "FROM service_configs GROUP BY name) AS c USING name ORDER BY name FORMAT RowBinary",
        NULL, 0, &out, err);
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t name = rt__ch_strs_read(&strs, &r);
        struct rt_service_config cfg = {.enabled = rt__ch_rd_u8(&r) != 0};
        size_t tlen;
        const char *type = rt__ch_rd_str(&r, &tlen);
        cfg.type = rt__store_config_type_of(type, tlen);
        cfg.sampling_interval_us = rt__ch_rd_i64(&r);
        cfg.upload_interval_s = rt__ch_rd_i64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("a service configs query", err);
            break;
        }
        rc = cb(ud, rt__ch_strs_get(&strs, name, false), &cfg);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                     struct rt_error *err)
{
    struct rt_buf svc, ev;
    rt_buf_init(&svc, 0);
    rt_buf_init(&ev, 0);
    int64_t now = rt_time_now_ns();
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        const struct rt_poll *p = &polls[i];
        ok = !rt__ch_w_service(&svc, p->service, now) &&
             !rt__ch_w_instance_event(&ev, p->service, p->instance ? p->instance : "", 2,
                                      p->runtime, p->runtime_version, p->sdk_version,
                                      p->version, p->status, p->interval_us,
                                      p->poll_interval_s, p->at_ns);
    }
    int rc = rt__ch_insert_rows(s->be, "services", &svc, ok, err);
    if (!rc)
        rc = rt__ch_insert_rows(s->be, "instance_events", &ev, ok, err);
    rt_buf_cleanup(&svc);
    rt_buf_cleanup(&ev);
    return rc;
}

int rt__ch_scan_instance_status(struct rt_store *s, const char *service,
                                rt_store_instance_status_cb cb, void *ud, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    /* a poll always sets both intervals; the status is the newest one reported */
    bool ok = !rt_buf_puts(&sql, "SELECT service, instance, "
                                 "argMaxIf(status, seq, bitAnd(given, 16) != 0), "
                                 "bitAnd(groupBitOr(given), 16) != 0, "
                                 "argMaxIf(interval_us, seq, kind = 2), "
                                 "argMaxIf(poll_interval_s, seq, kind = 2), max(at_ns) "
                                 "FROM instance_events");
    if (service)
        ok = ok && !rt_buf_puts(&sql, " WHERE service = ") && !rt__ch_quote_cstr(&sql, service);
    ok = ok && !rt_buf_puts(&sql, " GROUP BY service, instance ORDER BY service, instance "
                                  "FORMAT RowBinary");
    int rc = ok ? rt__ch_run(s->be, &sql, &out, err)
                : rt_error_set(err, RT_ENOMEM, "out of memory");
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        size_t sv = rt__ch_strs_read(&strs, &r), inst = rt__ch_strs_read(&strs, &r),
               status = rt__ch_strs_read(&strs, &r);
        bool has_status = rt__ch_rd_u8(&r) != 0;
        struct rt_instance_status st = {.interval_us = rt__ch_rd_i64(&r)};
        st.poll_interval_s = rt__ch_rd_i64(&r);
        st.last_seen_ns = rt__ch_rd_i64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("an instance status query", err);
            break;
        }
        st.service = rt__ch_strs_get(&strs, sv, false);
        st.instance = rt__ch_strs_get(&strs, inst, false);
        st.status = rt__ch_strs_get(&strs, status, !has_status);
        rc = cb(ud, &st);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

/* Appends a keys row. A revocation is the key's row again with revoked_at_ns set and a higher
 * ver (a merge keeps only that one); reads also take max(revoked_at_ns), so a revocation is
 * never undone. */
static bool w_key(struct rt_buf *b, const struct rt_key *k, int64_t id, int64_t ver)
{
    return !rt__ch_w_i64(b, id) && !rt__ch_w_cstr(b, k->scope) &&
           !rt__ch_w_cstr(b, k->service) && !rt__ch_w_u8(b, k->service != NULL) &&
           !rt__ch_w_cstr(b, k->name) && !rt__ch_w_u8(b, k->name != NULL) &&
           !rt_buf_append(b, k->hash, 32) && !rt__ch_w_i64(b, k->created_at_ns) &&
           !rt__ch_w_i64(b, k->revoked_at_ns) && !rt__ch_w_i64(b, ver);
}

int rt__ch_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                   struct rt_error *err)
{
    int64_t new_id = rt__ch_new_id();
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = rt__ch_insert_rows(s->be, "keys", &b, w_key(&b, k, new_id, row_version(0)), err);
    rt_buf_cleanup(&b);
    if (!rc)
        *id = new_id;
    return rc;
}

/* Calls cb for each key (id < 0: all keys; else only key id). Sets *found, and *ver (may be
 * NULL) to the highest version of the last key read. */
static int read_keys(struct rt_store *s, int64_t id, rt_store_key_cb cb, void *ud, bool *found,
                     int64_t *ver_out, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_puts(&sql, "SELECT id, argMax(scope, ver), argMax(service, ver), "
                                 "argMax(has_service, ver), argMax(name, ver), "
                                 "argMax(has_name, ver), argMax(hash, ver), "
                                 "argMax(created_at_ns, ver), max(revoked_at_ns), max(ver) "
                                 "FROM keys");
    if (id >= 0)
        ok = ok && !rt_buf_printf(&sql, " WHERE id = %lld", (long long)id);
    ok = ok && !rt_buf_puts(&sql, " GROUP BY id ORDER BY id FORMAT RowBinary");
    int rc = ok ? rt__ch_run(s->be, &sql, &out, err)
                : rt_error_set(err, RT_ENOMEM, "out of memory");
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    *found = false;
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        struct rt_key k = {.id = rt__ch_rd_i64(&r)};
        size_t scope = rt__ch_strs_read(&strs, &r), svc = rt__ch_strs_read(&strs, &r);
        bool has_svc = rt__ch_rd_u8(&r) != 0;
        size_t name = rt__ch_strs_read(&strs, &r);
        bool has_name = rt__ch_rd_u8(&r) != 0;
        rt__ch_rd_fixed(&r, k.hash, sizeof(k.hash));
        k.created_at_ns = rt__ch_rd_i64(&r);
        k.revoked_at_ns = rt__ch_rd_i64(&r);
        int64_t ver = rt__ch_rd_i64(&r);
        if (r.bad) {
            rc = rt__ch_bad_response("a keys query", err);
            break;
        }
        *found = true;
        if (ver_out)
            *ver_out = ver;
        k.scope = rt__ch_strs_get(&strs, scope, false);
        k.service = rt__ch_strs_get(&strs, svc, !has_svc);
        k.name = rt__ch_strs_get(&strs, name, !has_name);
        if (cb)
            rc = cb(ud, &k);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}

int rt__ch_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err)
{
    bool found;
    return read_keys(s, -1, cb, ud, &found, NULL, err);
}

/* A key as found by a revocation: its row, copied out of the scan. */
struct found_key {
    struct rt_key k;
    char scope[16], service[256], name[128];
};

static int copy_key(void *ud, const struct rt_key *k)
{
    struct found_key *f = ud;
    f->k = *k;
    snprintf(f->scope, sizeof(f->scope), "%s", k->scope ? k->scope : "");
    snprintf(f->service, sizeof(f->service), "%s", k->service ? k->service : "");
    snprintf(f->name, sizeof(f->name), "%s", k->name ? k->name : "");
    f->k.scope = f->scope;
    f->k.service = k->service ? f->service : NULL;
    f->k.name = k->name ? f->name : NULL;
    return 0;
}

int rt__ch_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err)
{
    bool found;
    int64_t ver = 0;
    struct found_key f = {0};
    if (id < 0)
        return rt_error_set(err, RT_ENOTFOUND, "no active key %lld", (long long)id);
    if (read_keys(s, id, copy_key, &f, &found, &ver, err))
        return err->code;
    if (!found || f.k.revoked_at_ns)
        return rt_error_set(err, RT_ENOTFOUND, "no active key %lld", (long long)id);
    f.k.revoked_at_ns = at_ns;
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = rt__ch_insert_rows(s->be, "keys", &b, w_key(&b, &f.k, id, row_version(ver)), err);
    rt_buf_cleanup(&b);
    return rc;
}

int rt__ch_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    bool ok = !rt__ch_w_i64(&b, a->at_ns) && !rt__ch_w_i64(&b, rt__ch_new_id()) &&
              !rt__ch_w_cstr(&b, a->actor) && !rt__ch_w_cstr(&b, a->action) &&
              !rt__ch_w_cstr(&b, a->target) && !rt__ch_w_cstr(&b, a->detail) &&
              !rt__ch_w_u8(&b, a->detail != NULL);
    int rc = rt__ch_insert_rows(s->be, "audit", &b, ok, err);
    rt_buf_cleanup(&b);
    return rc;
}

int rt__ch_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                      rt_store_audit_cb cb, void *ud, struct rt_error *err)
{
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    bool ok = !rt_buf_printf(&sql, "SELECT at_ns, actor, action, target, detail, has_detail "
                                   "FROM audit WHERE at_ns >= %lld AND at_ns < %lld "
                                   "ORDER BY at_ns DESC, seq DESC",
                             (long long)from_ns, (long long)to_ns);
    if (limit)
        ok = ok && !rt_buf_printf(&sql, " LIMIT %zu", limit);
    ok = ok && !rt_buf_puts(&sql, " FORMAT RowBinary");
    int rc = ok ? rt__ch_run(s->be, &sql, &out, err)
                : rt_error_set(err, RT_ENOMEM, "out of memory");
    struct rt__ch_rd r;
    rt__ch_rd_init(&r, &out);
    struct rt__ch_strs strs = {0};
    while (!rc && rt__ch_rd_more(&r)) {
        rt__ch_strs_reset(&strs);
        int64_t at = rt__ch_rd_i64(&r);
        size_t actor = rt__ch_strs_read(&strs, &r), action = rt__ch_strs_read(&strs, &r),
               target = rt__ch_strs_read(&strs, &r), detail = rt__ch_strs_read(&strs, &r);
        bool has_detail = rt__ch_rd_u8(&r) != 0;
        if (r.bad) {
            rc = rt__ch_bad_response("an audit query", err);
            break;
        }
        struct rt_audit a = {at, rt__ch_strs_get(&strs, actor, false),
                             rt__ch_strs_get(&strs, action, false),
                             rt__ch_strs_get(&strs, target, false),
                             rt__ch_strs_get(&strs, detail, !has_detail)};
        rc = cb(ud, &a);
    }
    rt_buf_cleanup(&strs.buf);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return rc;
}
