/* SQLite backend, the control plane's state: per-service profiling toggles and SDK config
 * overrides (services.profiling_enabled, services.config as JSON), batched SDK polls with the
 * status they report, API keys (hashes only) and the audit log. */
#include <limits.h>
#include <string.h>

#include "rt/timeutil.h"
#include "sqlite_int.h"

int rt__sqlite_set_service_config(struct rt_store *s, const char *name,
                                  const struct rt_service_config *cfg, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_SERVICE_CONFIG_SET, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, rt_time_now_ns());
    sqlite3_bind_int(st, 3, cfg->enabled ? 1 : 0);
    sqlite3_bind_text(st, 4, rt__store_config_type_text(cfg->type), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, cfg->sampling_interval_us);
    sqlite3_bind_int64(st, 6, cfg->upload_interval_s);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "setting a service config", err);
        goto out_rollback;
    }
    return rt__sqlite_commit(db, err);

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

/* The config of a SERVICE_CONFIGS row; a type other than cpu or wall reads as "". */
static void row_config(sqlite3_stmt *st, struct rt_service_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->enabled = sqlite3_column_int(st, 1) != 0;
    const char *type = rt__sqlite_text(st, 2);
    cfg->type = rt__store_config_type_of(type, type ? strlen(type) : 0);
    cfg->sampling_interval_us = sqlite3_column_int64(st, 3);
    cfg->upload_interval_s = sqlite3_column_int64(st, 4);
}

int rt__sqlite_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                    struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_SERVICE_CONFIGS, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_service_config cfg;
        row_config(st, &cfg);
        if ((ret = cb(ud, rt__sqlite_text(st, 0), &cfg)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning service configs", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

/* Registers or refreshes the instance a poll comes from with what it reports (NULL strings
 * keep the stored values) and returns its id; inside a write transaction. */
static int poll_instance(struct rt__sqlite_conn *w, int64_t service_id, const struct rt_poll *p,
                         int64_t *id, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(w, RT__SQL_INSTANCE_POLL, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, service_id);
    sqlite3_bind_text(st, 2, p->instance ? p->instance : "", -1, SQLITE_STATIC);
    rt__sqlite_bind_text(st, 3, p->runtime);
    rt__sqlite_bind_text(st, 4, p->runtime_version);
    rt__sqlite_bind_text(st, 5, p->sdk_version);
    rt__sqlite_bind_text(st, 6, p->version);
    rt__sqlite_bind_text(st, 7, p->status);
    sqlite3_bind_int64(st, 8, p->interval_us);
    sqlite3_bind_int64(st, 9, p->poll_interval_s);
    sqlite3_bind_int64(st, 10, p->at_ns);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : rt__sqlite_fail(w, rc, "registering a polling instance", err);
}

int rt__sqlite_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                         struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    /* Liveness evidence, as rt_store_put_poll: committed without fsync; the next durable
     * commit makes it durable too. */
    if (rt__sqlite_begin(db, false, err))
        return err->code;
    int64_t now_ns = rt_time_now_ns();
    for (size_t i = 0; i < n; i++) {
        const struct rt_poll *p = &polls[i];
        int64_t service_id = 0, instance_id = 0;
        if (rt__sqlite_service_id(db->w, p->service, now_ns, &service_id, err) ||
            poll_instance(db->w, service_id, p, &instance_id, err) ||
            rt__sqlite_record_poll(db->w, instance_id, p->at_ns, p->poll_interval_s, err)) {
            rt__sqlite_rollback(db);
            return err->code;
        }
    }
    return rt__sqlite_commit(db, err);
}

int rt__sqlite_scan_instance_status(struct rt_store *s, const char *service,
                                    rt_store_instance_status_cb cb, void *ud,
                                    struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_INSTANCE_STATUS, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    rt__sqlite_bind_text(st, 1, service);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_instance_status is = {
            .service = rt__sqlite_text(st, 0),
            .instance = rt__sqlite_text(st, 1),
            .status = rt__sqlite_text(st, 2),
            .interval_us = sqlite3_column_int64(st, 3),
            .poll_interval_s = sqlite3_column_int64(st, 4),
            .last_seen_ns = sqlite3_column_int64(st, 5),
        };
        if ((ret = cb(ud, &is)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning instance status", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                       struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_KEY_ADD, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_text(st, 1, k->scope, -1, SQLITE_STATIC);
    rt__sqlite_bind_text(st, 2, k->service);
    rt__sqlite_bind_text(st, 3, k->name);
    sqlite3_bind_blob(st, 4, k->hash, (int)sizeof(k->hash), SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, k->created_at_ns);
    sqlite3_bind_int64(st, 6, k->revoked_at_ns);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "storing a key", err);
        goto out_rollback;
    }
    int64_t new_id = sqlite3_last_insert_rowid(db->w->db);
    if (rt__sqlite_commit(db, err))
        return err->code;
    *id = new_id;
    return 0;

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

/* Fills k from a KEYS row; false when its hash is not 32 bytes (a damaged row). */
static bool row_key(sqlite3_stmt *st, struct rt_key *k)
{
    memset(k, 0, sizeof(*k));
    k->id = sqlite3_column_int64(st, 0);
    k->scope = rt__sqlite_text(st, 1);
    k->service = rt__sqlite_text(st, 2);
    k->name = rt__sqlite_text(st, 3);
    const void *hash = sqlite3_column_blob(st, 4);
    if (!hash || sqlite3_column_bytes(st, 4) != (int)sizeof(k->hash))
        return false;
    memcpy(k->hash, hash, sizeof(k->hash));
    k->created_at_ns = sqlite3_column_int64(st, 5);
    k->revoked_at_ns = sqlite3_column_int64(st, 6);
    return true;
}

int rt__sqlite_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_KEYS, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_key k;
        if (!row_key(st, &k)) {
            ret = rt_error_set(err, RT_EIO, "key %lld: stored hash is not 32 bytes",
                               (long long)sqlite3_column_int64(st, 0));
            goto out_end_read;
        }
        if ((ret = cb(ud, &k)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning keys", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_KEY_REVOKE, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, at_ns);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "revoking a key", err);
        goto out_rollback;
    }
    if (sqlite3_changes(db->w->db) == 0) {
        rt_error_set(err, RT_ENOTFOUND, "no active key %lld", (long long)id);
        goto out_rollback;
    }
    return rt__sqlite_commit(db, err);

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

int rt__sqlite_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_AUDIT_ADD, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_int64(st, 1, a->at_ns);
    sqlite3_bind_text(st, 2, a->actor, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, a->action, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, a->target, -1, SQLITE_STATIC);
    rt__sqlite_bind_text(st, 5, a->detail);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "storing an audit record", err);
        goto out_rollback;
    }
    return rt__sqlite_commit(db, err);

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

int rt__sqlite_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                          rt_store_audit_cb cb, void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_AUDIT, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    sqlite3_bind_int64(st, 1, from_ns);
    sqlite3_bind_int64(st, 2, to_ns);
    /* LIMIT -1: no limit */
    sqlite3_bind_int64(st, 3, limit == 0 || limit > INT64_MAX ? -1 : (int64_t)limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_audit a = {
            .at_ns = sqlite3_column_int64(st, 0),
            .actor = rt__sqlite_text(st, 1),
            .action = rt__sqlite_text(st, 2),
            .target = rt__sqlite_text(st, 3),
            .detail = rt__sqlite_text(st, 4),
        };
        if ((ret = cb(ud, &a)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning the audit log", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}
