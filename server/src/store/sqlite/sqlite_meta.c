/* SQLite backend, everything beside profiles: services and instances (registration and
 * listing), config polls as liveness segments, deploys and issues. */
#include <stdlib.h>
#include <string.h>

#include "rt/timeutil.h"
#include "sqlite_int.h"

int rt__sqlite_service_id(struct rt__sqlite_conn *w, const char *service, int64_t now_ns,
                          int64_t *id, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(w, RT__SQL_SERVICE_ADD, err);
    if (!st)
        return err->code;
    sqlite3_bind_text(st, 1, service, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ns);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(w, rc, "registering a service", err);
    if (!(st = rt__sqlite_stmt(w, RT__SQL_SERVICE_ID, err)))
        return err->code;
    sqlite3_bind_text(st, 1, service, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : rt__sqlite_fail(w, rc, "looking up a service", err);
}

int rt__sqlite_instance_id(struct rt__sqlite_conn *w, int64_t service_id, const char *instance,
                           const struct rt_profile *p, int64_t seen_ns, int64_t *id,
                           struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(w, RT__SQL_INSTANCE_UPSERT, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, service_id);
    sqlite3_bind_text(st, 2, instance, -1, SQLITE_STATIC);
    if (p) {
        rt__sqlite_bind_text(st, 3, p->runtime);
        rt__sqlite_bind_text(st, 4, p->runtime_version);
        rt__sqlite_bind_text(st, 5, p->sdk_version);
        rt__sqlite_bind_text(st, 6, p->version);
    }
    sqlite3_bind_int64(st, 7, seen_ns);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : rt__sqlite_fail(w, rc, "registering an instance", err);
}

int rt__sqlite_record_poll(struct rt__sqlite_conn *w, int64_t instance_id, int64_t at_ns,
                           int64_t poll_interval_s, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(w, RT__SQL_POLL_FIND, err);
    if (!st)
        return err->code;
    sqlite3_bind_int64(st, 1, instance_id);
    sqlite3_bind_int64(st, 2, at_ns);
    sqlite3_bind_int64(st, 3, rt_store_poll_gap_ns(poll_interval_s));
    int rc = sqlite3_step(st);
    int64_t seg = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return rt__sqlite_fail(w, rc, "looking up a poll segment", err);
    if (!(st = rt__sqlite_stmt(w, seg ? RT__SQL_POLL_EXTEND : RT__SQL_POLL_ADD, err)))
        return err->code;
    sqlite3_bind_int64(st, 1, seg ? seg : instance_id);
    sqlite3_bind_int64(st, 2, at_ns);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(w, rc, "recording a poll", err);
}

int rt__sqlite_put_poll(struct rt_store *s, const char *service, const char *instance,
                        int64_t at_ns, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    /* Polls are frequent and only liveness evidence: committed without fsync; the next durable
     * commit (any upload) makes them durable too. */
    if (rt__sqlite_begin(db, false, err))
        return err->code;
    int64_t service_id, instance_id;
    if (rt__sqlite_service_id(db->w, service, rt_time_now_ns(), &service_id, err) ||
        rt__sqlite_instance_id(db->w, service_id, instance, NULL, at_ns, &instance_id, err) ||
        rt__sqlite_record_poll(db->w, instance_id, at_ns, 0, err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    return rt__sqlite_commit(db, err);
}

int rt__sqlite_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                             int64_t to_ns, rt_store_liveness_cb cb, void *ud,
                             struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_LIVENESS, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    sqlite3_bind_text(st, 1, service, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from_ns);
    sqlite3_bind_int64(st, 3, to_ns);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_liveness l = {rt__sqlite_text(st, 0), sqlite3_column_int64(st, 1),
                                sqlite3_column_int64(st, 2)};
        if (!l.instance)
            l.instance = "";
        if ((ret = cb(ud, &l)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning liveness", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_DEPLOY_ADD, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_text(st, 1, d->service, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, d->at_ns);
    sqlite3_bind_text(st, 4, d->source, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "storing a deploy", err);
        goto out_rollback;
    }
    return rt__sqlite_commit(db, err);

out_rollback:
    rt__sqlite_rollback(db);
    return err->code;
}

int rt__sqlite_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                            int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_DEPLOYS, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    rt__sqlite_bind_text(st, 1, service);
    sqlite3_bind_int64(st, 2, from_ns);
    sqlite3_bind_int64(st, 3, to_ns);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_deploy d = {rt__sqlite_text(st, 0), rt__sqlite_text(st, 1),
                              rt__sqlite_text(st, 2), sqlite3_column_int64(st, 3)};
        if ((ret = cb(ud, &d)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning deploys", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                         struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, RT__SQL_ISSUE_ADD, err);
    if (!st)
        goto out_rollback;
    sqlite3_bind_text(st, 1, i->service, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, i->title, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, i->started_at_ns);
    sqlite3_bind_int64(st, 4, i->created_at_ns ? i->created_at_ns : rt_time_now_ns());
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        rt__sqlite_fail(db->w, rc, "storing an issue", err);
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

int rt__sqlite_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                           struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    enum rt__sql q = id >= 0 ? RT__SQL_ISSUE_ONE : RT__SQL_ISSUES_ALL;
    if (rt__sqlite_read_begin(db, q, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    bool any = false;
    if (id >= 0)
        sqlite3_bind_int64(st, 1, id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        any = true;
        struct rt_issue i = {sqlite3_column_int64(st, 0), rt__sqlite_text(st, 1),
                             rt__sqlite_text(st, 2), sqlite3_column_int64(st, 3),
                             sqlite3_column_int64(st, 4)};
        if ((ret = cb(ud, &i)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning issues", err);
    else if (id >= 0 && !any)
        ret = rt_error_set(err, RT_ENOTFOUND, "no issue %lld", (long long)id);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                             struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_SERVICES, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_service_info svc = {
            .name = rt__sqlite_text(st, 0),
            .profiling_enabled = sqlite3_column_int(st, 1) != 0,
            .last_upload_ns = sqlite3_column_int64(st, 2),
            .has_cpu = sqlite3_column_int(st, 3) != 0,
            .has_wall = sqlite3_column_int(st, 4) != 0,
        };
        if ((ret = cb(ud, &svc)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning services", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                              void *ud, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_INSTANCES, &c, &st, err))
        return err->code;
    int ret = 0, rc;
    rt__sqlite_bind_text(st, 1, service);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct rt_instance_info inst = {
            .service = rt__sqlite_text(st, 0),
            .instance = rt__sqlite_text(st, 1),
            .runtime = rt__sqlite_text(st, 2),
            .runtime_version = rt__sqlite_text(st, 3),
            .sdk_version = rt__sqlite_text(st, 4),
            .version = rt__sqlite_text(st, 5),
            .status = rt__sqlite_text(st, 6),
            .first_seen_ns = sqlite3_column_int64(st, 7),
            .last_seen_ns = sqlite3_column_int64(st, 8),
        };
        if ((ret = cb(ud, &inst)))
            goto out_end_read;
    }
    if (rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, "scanning instances", err);
out_end_read:
    rt__sqlite_read_end(db, c, st);
    return ret;
}
