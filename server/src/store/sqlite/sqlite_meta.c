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

struct liveness_scan {
    rt_store_liveness_cb cb;
    void *ud;
};

static int liveness_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct liveness_scan *u = ud;
    struct rt_liveness l = {rt__sqlite_text(st, 0), sqlite3_column_int64(st, 1),
                            sqlite3_column_int64(st, 2)};
    if (!l.instance)
        l.instance = "";
    return u->cb(u->ud, &l);
}

int rt__sqlite_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                             int64_t to_ns, rt_store_liveness_cb cb, void *ud,
                             struct rt_error *err)
{
    struct liveness_scan u = {cb, ud};
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(service), RT__SQLITE_I64(from_ns),
                                    RT__SQLITE_I64(to_ns)};
    return rt__sqlite_each_row(s->be, RT__SQL_LIVENESS, args, 3, liveness_row, &u,
                               "scanning liveness", err);
}

int rt__sqlite_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(d->service), RT__SQLITE_TEXT(d->version),
                                    RT__SQLITE_I64(d->at_ns), RT__SQLITE_TEXT(d->source)};
    return rt__sqlite_write_one(s->be, RT__SQL_DEPLOY_ADD, args, 4, "storing a deploy", err);
}

struct deploys_scan {
    rt_store_deploy_cb cb;
    void *ud;
};

static int deploy_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct deploys_scan *u = ud;
    struct rt_deploy d = {rt__sqlite_text(st, 0), rt__sqlite_text(st, 1),
                          rt__sqlite_text(st, 2), sqlite3_column_int64(st, 3)};
    return u->cb(u->ud, &d);
}

int rt__sqlite_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                            int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err)
{
    struct deploys_scan u = {cb, ud};
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(service), RT__SQLITE_I64(from_ns),
                                    RT__SQLITE_I64(to_ns)};
    return rt__sqlite_each_row(s->be, RT__SQL_DEPLOYS, args, 3, deploy_row, &u,
                               "scanning deploys", err);
}

int rt__sqlite_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                         struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    const char *source = i->source && *i->source ? i->source : "api";
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    struct rt__sqlite_arg args[] = {
        RT__SQLITE_TEXT(i->service), RT__SQLITE_TEXT(i->title), RT__SQLITE_I64(i->started_at_ns),
        RT__SQLITE_I64(i->created_at_ns ? i->created_at_ns : rt_time_now_ns()),
        RT__SQLITE_TEXT(source),
        RT__SQLITE_TEXT(i->alert_key), RT__SQLITE_TEXT(i->alert)};
    if (rt__sqlite_step_write(db, RT__SQL_ISSUE_ADD, args, 7, "storing an issue", err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    int64_t new_id = sqlite3_changes(db->w->db) ? sqlite3_last_insert_rowid(db->w->db) : 0;
    if (new_id && i->notified_at_ns > 0) { /* its first notification, in the same commit */
        struct rt__sqlite_arg st[] = {RT__SQLITE_I64(new_id), RT__SQLITE_I64(RT_ISSUE_NOTIFIED),
                                      RT__SQLITE_I64(i->notified_at_ns), RT__SQLITE_I64(0)};
        if (rt__sqlite_step_write(db, RT__SQL_ISSUE_STATE_ADD, st, 4, "storing an issue's state",
                                  err)) {
            rt__sqlite_rollback(db);
            return err->code;
        }
    }
    if (rt__sqlite_commit(db, err))
        return err->code;
    *id = new_id;
    if (new_id)
        return 0;
    /* an alert's issue stored meanwhile (the unique key): that one, notified */
    if (rt__sqlite_find_alert_issue(s, source, i->alert_key, id, err))
        return err->code;
    return i->notified_at_ns > 0 ? rt__sqlite_put_issue_state(s, *id, RT_ISSUE_NOTIFIED,
                                                              i->notified_at_ns, 0, err)
                                 : 0;
}

static int id_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    *(int64_t *)ud = sqlite3_column_int64(st, 0);
    return 1;
}

int rt__sqlite_find_alert_issue(struct rt_store *s, const char *source, const char *alert_key,
                                int64_t *id, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(source), RT__SQLITE_TEXT(alert_key)};
    *id = 0;
    int rc = rt__sqlite_each_row(s->be, RT__SQL_ISSUE_BY_KEY, args, 2, id_row, id,
                                 "looking up an alert's issue", err);
    return rc < 0 ? rc : 0;
}

int rt__sqlite_put_issue_state(struct rt_store *s, int64_t id, enum rt_issue_state kind,
                               int64_t at_ns, int64_t ended_at_ns, struct rt_error *err)
{
    struct rt__sqlite_arg args[] = {RT__SQLITE_I64(id), RT__SQLITE_I64((int64_t)kind),
                                    RT__SQLITE_I64(at_ns), RT__SQLITE_I64(ended_at_ns)};
    return rt__sqlite_write_one(s->be, RT__SQL_ISSUE_STATE_ADD, args, 4, "storing an issue's "
                                "state", err);
}

struct issues_scan {
    rt_store_issue_cb cb;
    void *ud;
    bool any;
};

static int issue_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct issues_scan *u = ud;
    u->any = true;
    struct rt_issue i = {.id = sqlite3_column_int64(st, 0),
                         .service = rt__sqlite_text(st, 1),
                         .title = rt__sqlite_text(st, 2),
                         .started_at_ns = sqlite3_column_int64(st, 3),
                         .created_at_ns = sqlite3_column_int64(st, 4),
                         .source = rt__sqlite_text(st, 5),
                         .alert = rt__sqlite_text(st, 6),
                         .ended_at_ns = sqlite3_column_int64(st, 7),
                         .resolved = sqlite3_column_int(st, 8) != 0,
                         .notified_at_ns = sqlite3_column_int64(st, 9),
                         .notifications = sqlite3_column_int64(st, 10)};
    return u->cb(u->ud, &i);
}

int rt__sqlite_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                           struct rt_error *err)
{
    struct issues_scan u = {cb, ud, false};
    struct rt__sqlite_arg one[] = {RT__SQLITE_I64(id)};
    int ret = id >= 0 ? rt__sqlite_each_row(s->be, RT__SQL_ISSUE_ONE, one, 1, issue_row, &u,
                                            "scanning issues", err)
                      : rt__sqlite_each_row(s->be, RT__SQL_ISSUES_ALL, NULL, 0, issue_row, &u,
                                            "scanning issues", err);
    if (!ret && id >= 0 && !u.any)
        ret = rt_error_set(err, RT_ENOTFOUND, "no issue %lld", (long long)id);
    return ret;
}

struct services_scan {
    rt_store_service_cb cb;
    void *ud;
};

static int service_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct services_scan *u = ud;
    struct rt_service_info svc = {
        .name = rt__sqlite_text(st, 0),
        .profiling_enabled = sqlite3_column_int(st, 1) != 0,
        .last_upload_ns = sqlite3_column_int64(st, 2),
        .has_cpu = sqlite3_column_int(st, 3) != 0,
        .has_wall = sqlite3_column_int(st, 4) != 0,
    };
    return u->cb(u->ud, &svc);
}

int rt__sqlite_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                             struct rt_error *err)
{
    struct services_scan u = {cb, ud};
    return rt__sqlite_each_row(s->be, RT__SQL_SERVICES, NULL, 0, service_row, &u,
                               "scanning services", err);
}

struct instances_scan {
    rt_store_instance_cb cb;
    void *ud;
};

static int instance_row(void *ud, sqlite3_stmt *st, struct rt_error *err)
{
    struct instances_scan *u = ud;
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
    return u->cb(u->ud, &inst);
}

int rt__sqlite_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                              void *ud, struct rt_error *err)
{
    struct instances_scan u = {cb, ud};
    struct rt__sqlite_arg args[] = {RT__SQLITE_TEXT(service)};
    return rt__sqlite_each_row(s->be, RT__SQL_INSTANCES, args, 1, instance_row, &u,
                               "scanning instances", err);
}
