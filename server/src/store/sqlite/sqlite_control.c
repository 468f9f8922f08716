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
    struct rt__sqlite_arg args[] = {
        RT__SQLITE_TEXT(name),
        RT__SQLITE_I64(rt_time_now_ns()),
        RT__SQLITE_I64(cfg->enabled ? 1 : 0),
        RT__SQLITE_TEXT(rt__store_config_type_text(cfg->type)),
        RT__SQLITE_I64(cfg->sampling_interval_us),
        RT__SQLITE_I64(cfg->upload_interval_s)};
    return rt__sqlite_write_one(s->be, RT__SQL_SERVICE_CONFIG_SET, args, 6,
                                "setting a service config", err);
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

struct configs_scan {
    rt_store_service_config_cb cb;
    void *ud;
};

static int config_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct configs_scan *u = ud;
    struct rt_service_config cfg;
    row_config(st, &cfg);
    return u->cb(u->ud, rt__sqlite_text(st, 0), &cfg);
}

int rt__sqlite_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                    struct rt_error *err)
{
    struct configs_scan u = {cb, ud};
    return rt__sqlite_each_row(s->be, RT__SQL_SERVICE_CONFIGS, NULL, 0, config_row, &u,
                               "scanning service configs", err);
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

struct status_scan {
    rt_store_instance_status_cb cb;
    void *ud;
};

static int status_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct status_scan *u = ud;
    struct rt_instance_status is = {
        .service = rt__sqlite_text(st, 0),
        .instance = rt__sqlite_text(st, 1),
        .status = rt__sqlite_text(st, 2),
        .interval_us = sqlite3_column_int64(st, 3),
        .poll_interval_s = sqlite3_column_int64(st, 4),
        .last_seen_ns = sqlite3_column_int64(st, 5),
    };
    return u->cb(u->ud, &is);
}

int rt__sqlite_scan_instance_status(struct rt_store *s, const char *service,
                                    rt_store_instance_status_cb cb, void *ud,
                                    struct rt_error *err)
{
    struct status_scan u = {cb, ud};
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(service)};
    return rt__sqlite_each_row(s->be, RT__SQL_INSTANCE_STATUS, args, 1, status_row, &u,
                               "scanning instance status", err);
}

int rt__sqlite_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                       struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    struct rt__sqlite_arg args[] = {
        RT__SQLITE_TEXT(k->scope),         RT__SQLITE_TEXT(k->service),
        RT__SQLITE_TEXT(k->name),          RT__SQLITE_BLOB(k->hash, sizeof(k->hash)),
        RT__SQLITE_I64(k->created_at_ns), RT__SQLITE_I64(k->revoked_at_ns)};
    if (rt__sqlite_step_write(db, RT__SQL_KEY_ADD, args, 6, "storing a key", err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    int64_t new_id = sqlite3_last_insert_rowid(db->w->db);
    if (rt__sqlite_commit(db, err))
        return err->code;
    *id = new_id;
    return 0;
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

struct keys_scan {
    rt_store_key_cb cb;
    void *ud;
};

static int key_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct keys_scan *u = ud;
    struct rt_key k;
    if (!row_key(st, &k))
        return rt_error_set(err, RT_EIO, "key %lld: stored hash is not 32 bytes",
                            (long long)sqlite3_column_int64(st, 0));
    return u->cb(u->ud, &k);
}

int rt__sqlite_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err)
{
    struct keys_scan u = {cb, ud};
    return rt__sqlite_each_row(s->be, RT__SQL_KEYS, NULL, 0, key_row, &u, "scanning keys", err);
}

int rt__sqlite_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(id), RT__SQLITE_I64(at_ns)};
    int rc = rt__sqlite_step_write(db, RT__SQL_KEY_REVOKE, args, 2, "revoking a key", err);
    if (!rc && sqlite3_changes(db->w->db) == 0)
        rc = rt_error_set(err, RT_ENOTFOUND, "no active key %lld", (long long)id);
    if (rc) {
        rt__sqlite_rollback(db);
        return rc;
    }
    return rt__sqlite_commit(db, err);
}

int rt__sqlite_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(a->at_ns), RT__SQLITE_TEXT(a->actor),
                                    RT__SQLITE_TEXT(a->action), RT__SQLITE_TEXT(a->target),
                                    RT__SQLITE_TEXT(a->detail)};
    return rt__sqlite_write_one(s->be, RT__SQL_AUDIT_ADD, args, 5, "storing an audit record",
                                err);
}

struct audit_scan {
    rt_store_audit_cb cb;
    void *ud;
};

static int audit_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct audit_scan *u = ud;
    struct rt_audit a = {
        .at_ns = sqlite3_column_int64(st, 0),
        .actor = rt__sqlite_text(st, 1),
        .action = rt__sqlite_text(st, 2),
        .target = rt__sqlite_text(st, 3),
        .detail = rt__sqlite_text(st, 4),
    };
    return u->cb(u->ud, &a);
}

int rt__sqlite_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                          rt_store_audit_cb cb, void *ud, struct rt_error *err)
{
    struct audit_scan u = {cb, ud};
    /* LIMIT -1: no limit */
    struct rt__sqlite_arg args[] = {
        RT__SQLITE_I64(from_ns), RT__SQLITE_I64(to_ns),
        RT__SQLITE_I64(limit == 0 || limit > INT64_MAX ? -1 : (int64_t)limit)};
    return rt__sqlite_each_row(s->be, RT__SQL_AUDIT, args, 3, audit_row, &u,
                               "scanning the audit log", err);
}
