/* Tests of server/src/control/: keys (bootstrap, authenticate, revoke), the SDK config of
 * each runtime with its etag, toggles written through to the store, polls batched, and the
 * refresh from a store another node shares. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/control_int.h"
#include "rt/control.h"
#include "rt/timeutil.h"
#include "test.h"

static char dir[] = "/tmp/rt-control-XXXXXX";

static struct rt_store *open_store(void)
{
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    if (!s)
        fprintf(stderr, "open: %s\n", err.msg);
    return s;
}

static void test_bootstrap_and_authenticate(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *c = rt_control_new(s, 10, &err);
    char *shown = NULL;
    CHECK_INT(rt_control_bootstrap(c, NULL, &shown, &err), 0);
    CHECK(shown && strncmp(shown, "rt_", 3) == 0 && strlen(shown) == 46);
    struct rt_principal who;
    CHECK(rt_control_authenticate(c, shown, &who));
    CHECK_INT(who.scope, RT_SCOPE_ADMIN);
    char *again = NULL;
    CHECK_INT(rt_control_bootstrap(c, NULL, &again, &err), 0);
    CHECK(again == NULL);
    CHECK(!rt_control_authenticate(c, "rt_wrong", &who));
    CHECK(!rt_control_authenticate(c, "", &who));
    /* An admin exists: the environment's token is ignored, not added. */
    CHECK_INT(rt_control_bootstrap(c, "a-token-from-the-environment", &again, &err), 0);
    CHECK(!rt_control_authenticate(c, "a-token-from-the-environment", &who));
    CHECK(rt_control_authenticate(c, shown, &who));

    json_t *k = rt_control_create_key(c, "ingest", "shop", "ci", &who, &err);
    CHECK(k != NULL);
    const char *secret = json_string_value(json_object_get(k, "key"));
    struct rt_principal ing;
    CHECK(rt_control_authenticate(c, secret, &ing));
    CHECK_INT(ing.scope, RT_SCOPE_INGEST);
    CHECK_STR(ing.service, "shop");
    int64_t id = atoll(json_string_value(json_object_get(k, "id")));
    CHECK_INT(rt_control_revoke_key(c, id, &who, &err), 0);
    CHECK(!rt_control_authenticate(c, secret, &ing));
    CHECK_INT(rt_control_revoke_key(c, id, &who, &err), RT_ENOTFOUND);
    CHECK(rt_control_create_key(c, "root", NULL, NULL, &who, &err) == NULL);
    CHECK(rt_control_create_key(c, "read", "shop", NULL, &who, &err) == NULL);
    json_decref(k);
    rt_control_free(c);

    /* Keys survive a restart as hashes. */
    c = rt_control_new(s, 10, &err);
    CHECK(rt_control_authenticate(c, shown, &who));
    json_t *keys = rt_control_list_keys(c, &err);
    CHECK_INT(json_array_size(keys), 2);
    CHECK(json_object_get(json_array_get(keys, 0), "key") == NULL);
    json_decref(keys);
    rt_control_free(c);
    free(shown);
    rt_store_free(s);
}

/* With every admin revoked the environment's token bootstraps again, but never a revoked
 * token: a restart must not bring a revoked key back. */
static void test_bootstrap_after_revocation(void)
{
    static char d2[] = "/tmp/rt-control2-XXXXXX";
    struct rt_error err = {0};
    if (!mkdtemp(d2))
        return;
    struct rt_store *s = rt_store_open(d2, &err);
    struct rt_control *c = rt_control_new(s, 10, &err);
    char *shown = NULL;
    const char *t1 = "first-bootstrap-token-0001";
    CHECK_INT(rt_control_bootstrap(c, "short", &shown, &err), RT_EINVAL);
    CHECK_INT(rt_control_bootstrap(c, t1, &shown, &err), 0);
    CHECK(shown == NULL);
    struct rt_principal who;
    CHECK(rt_control_authenticate(c, t1, &who));
    CHECK_INT(rt_control_revoke_key(c, who.key_id, &who, &err), 0);
    CHECK_INT(rt_control_bootstrap(c, t1, &shown, &err), RT_EINVAL);
    CHECK(!rt_control_authenticate(c, t1, &who));
    CHECK_INT(rt_control_bootstrap(c, "second-bootstrap-token-02", &shown, &err), 0);
    CHECK(rt_control_authenticate(c, "second-bootstrap-token-02", &who));
    rt_control_free(c);
    rt_store_free(s);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", d2);
    CHECK_INT(system(cmd), 0);
}

static void test_sdk_config(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *c = rt_control_new(s, 10, &err);
    struct rt_sdk_config py, node, again;
    rt_control_sdk_config(c, "svc", "python", &py);
    rt_control_sdk_config(c, "svc", "node", &node);
    CHECK(!py.enabled);
    CHECK_INT(py.type, RT_PTYPE_WALL);
    CHECK_INT(py.sampling_interval_us, 20000);
    CHECK_INT(node.type, RT_PTYPE_CPU);
    CHECK_INT(node.sampling_interval_us, 10000);
    CHECK_INT(node.upload_interval_s, 60);
    CHECK_INT(node.poll_interval_s, 10);
    CHECK_INT(node.max_stack_depth, 256);
    CHECK(strcmp(py.etag, node.etag) != 0);

    struct rt_principal admin;
    rt_control_local_principal(&admin);
    struct rt_service_config cfg = {.enabled = true, .sampling_interval_us = 2500};
    json_t *ans = rt_control_set_profiling(c, "svc", &cfg, &admin, &err);
    CHECK(json_is_true(json_object_get(ans, "profiling_enabled")));
    json_decref(ans);
    rt_control_sdk_config(c, "svc", "node", &again);
    CHECK(again.enabled);
    CHECK_INT(again.sampling_interval_us, 2500);
    CHECK(strcmp(again.etag, node.etag) != 0);
    CHECK(rt_control_profiling_enabled(c, "svc"));
    CHECK(!rt_control_profiling_enabled(c, "other"));
    rt_control_free(c);

    c = rt_control_new(s, 10, &err); /* the toggle is durable */
    CHECK(rt_control_profiling_enabled(c, "svc"));
    rt_control_free(c);
    rt_store_free(s);
}

static int count_status(void *ud, const struct rt_instance_status *st)
{
    if (st->status && strcmp(st->status, "profiling") == 0)
        (*(int *)ud)++;
    return 0;
}

static void test_polls_are_batched(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *c = rt_control_new(s, 10, &err);
    for (int i = 0; i < 50; i++) {
        char inst[16];
        snprintf(inst, sizeof(inst), "i-%d", i);
        struct rt_poll p = {.service = "batch", .instance = inst, .runtime = "go",
                            .status = "profiling", .at_ns = rt_time_now_ns()};
        rt_control_record_poll(c, &p);
    }
    CHECK_INT(rt_control_flush_polls(c, &err), 0);
    int n = 0;
    rt_store_scan_instance_status(s, "batch", count_status, &n, &err);
    CHECK_INT(n, 50);
    rt_control_free(c);
    rt_store_free(s);
}

/* The poll queue is bounded (RT_CONTROL_MAX_QUEUED_POLLS): with its writer stopped, polls
 * past the bound are dropped and counted, never queued, whatever the number of instances. */
static void test_poll_queue_bound(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *c = rt_control_new(s, 10, &err);
    rt__control_polls_stop(c); /* nothing writes the queue from here on */
    struct rt_poll p = {.service = "flood", .instance = "i-1", .runtime = "go",
                        .status = "profiling", .at_ns = rt_time_now_ns()};
    for (int i = 0; i < RT_CONTROL_MAX_QUEUED_POLLS + 25; i++)
        rt_control_record_poll(c, &p);
    uint64_t queued = 0, dropped = 0;
    rt_control_poll_counts(c, &queued, &dropped);
    CHECK_INT(queued, RT_CONTROL_MAX_QUEUED_POLLS);
    CHECK_INT(dropped, 25);
    CHECK_INT(rt_control_flush_polls(c, &err), 0); /* the queued ones are written, once */
    rt_control_poll_counts(c, &queued, &dropped);
    CHECK_INT(queued, 0);
    CHECK_INT(dropped, 25);
    int n = 0;
    rt_store_scan_instance_status(s, "flood", count_status, &n, &err);
    CHECK_INT(n, 1);
    rt_control_free(c);
    rt_store_free(s);
}

struct issue_count {
    int n, alertmanager;
    int64_t notifications;
};

static int count_issue(void *ud, const struct rt_issue *i)
{
    struct issue_count *c = ud;
    c->n++;
    c->alertmanager += strcmp(i->source, "alertmanager") == 0;
    c->notifications += i->notifications;
    return 0;
}

struct audit_count {
    int unmatched_unknown;
};

static int count_audit(void *ud, const struct rt_audit *a)
{
    struct audit_count *c = ud;
    c->unmatched_unknown += strcmp(a->action, "alert unmatched") == 0 && a->detail &&
                            strstr(a->detail, "\"never-seen\" is not one RootTrace knows");
    return 0;
}

/* The alert queue (DESIGN §13): notifications are applied in order by the worker (a repeat
 * touches the issue it opened; an unmatched alert, and one naming a service RootTrace does
 * not know, are audited and open nothing); the counts for /metrics; and the bound: a batch
 * the queue cannot take whole (over 10,000) is RT_EBUSY and nothing of it is taken. */
static void test_alert_queue_bound(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *c = rt_control_new(s, 10, &err);
    struct rt_principal who;
    rt_control_local_principal(&who);
    struct rt_alert_item item = {
        .source = "alertmanager", .fingerprint = "fp",
        .issue = {.service = "queued", .title = "t", .started_at_ns = rt_time_now_ns(),
                  .source = "alertmanager", .alert_key = "fp|1", .alert = "{}"},
        .received_ns = rt_time_now_ns()};
    CHECK_INT(rt_store_put_poll(s, "queued", "i-1", rt_time_now_ns(), &err), 0);
    struct rt_alert_item items[4] = {item, item, item, item};
    items[2].unmatched = "no service label";
    items[3].issue.service = "never-seen";
    items[3].issue.alert_key = "fp|2";
    CHECK_INT(rt_control_queue_alerts(c, items, 4, &who, &err), 0);
    CHECK_INT(rt_control_flush_alerts(c, &err), 0);
    struct issue_count ic = {0};
    CHECK_INT(rt_store_scan_issues(s, -1, count_issue, &ic, &err), 0);
    CHECK(ic.n == 1 && ic.alertmanager == 1 && ic.notifications == 2);
    struct audit_count ac = {0};
    CHECK_INT(rt_store_scan_audit(s, 0, INT64_MAX, 100, count_audit, &ac, &err), 0);
    CHECK_INT(ac.unmatched_unknown, 1);
    uint64_t received, opened;
    rt_control_alert_counts(c, "alertmanager", &received, &opened);
    CHECK_INT(received, 4);
    CHECK_INT(opened, 1);
    rt_control_alert_counts(c, "grafana", &received, &opened);
    CHECK_INT(received, 0);
    enum { TOO_MANY = 10001 };
    struct rt_alert_item *many = calloc(TOO_MANY, sizeof(*many));
    for (int i = 0; i < TOO_MANY; i++)
        many[i] = item;
    CHECK_INT(rt_control_queue_alerts(c, many, TOO_MANY, &who, &err), RT_EBUSY);
    CHECK(strstr(err.msg, "at most 10000") != NULL);
    rt_control_alert_counts(c, "alertmanager", &received, &opened);
    CHECK_INT(received, 4); /* nothing of it was taken */
    free(many);
    rt_control_free(c);
    rt_store_free(s);
}

static int changes;
static char changed[64];

static void on_change(void *ud, const char *service)
{
    (void)ud;
    changes++;
    snprintf(changed, sizeof(changed), "%s", service);
}

/* Two control planes on one store stand for two nodes: a refresh brings B what A changed
 * (toggles with a notification, keys made and revoked); a local change made while a refresh
 * reads wins over it (the refresh is dropped, rt__control_refresh). */
static void test_refresh_from_shared_store(void)
{
    struct rt_error err = {0};
    struct rt_store *s = open_store();
    struct rt_control *a = rt_control_new(s, 10, &err), *b = rt_control_new(s, 10, &err);
    rt_control_on_change(b, on_change, NULL);
    struct rt_principal admin;
    rt_control_local_principal(&admin);
    struct rt_service_config on = {.enabled = true, .type = RT_PTYPE_WALL};
    json_t *r = rt_control_set_profiling(a, "shared", &on, &admin, &err);
    CHECK(r != NULL);
    json_decref(r);
    json_t *k = rt_control_create_key(a, "read", NULL, "n", &admin, &err);
    const char *secret = json_string_value(json_object_get(k, "key"));
    struct rt_principal who;
    CHECK(!rt_control_profiling_enabled(b, "shared"));
    CHECK(!rt_control_authenticate(b, secret, &who));
    changes = 0;
    CHECK_INT(rt__control_refresh(b, &err), 0);
    CHECK(rt_control_profiling_enabled(b, "shared"));
    CHECK(rt_control_authenticate(b, secret, &who));
    CHECK_INT(changes, 1);
    CHECK_STR(changed, "shared");
    /* nothing new: no notification */
    CHECK_INT(rt__control_refresh(b, &err), 0);
    CHECK_INT(changes, 1);
    /* revoked on A: refused on B after its refresh */
    int64_t id = strtoll(json_string_value(json_object_get(k, "id")), NULL, 10);
    CHECK_INT(rt_control_revoke_key(a, id, &admin, &err), 0);
    CHECK(rt_control_authenticate(b, secret, &who));
    CHECK_INT(rt__control_refresh(b, &err), 0);
    CHECK(!rt_control_authenticate(b, secret, &who));
    json_decref(k);
    rt_control_free(a);
    rt_control_free(b);
    rt_store_free(s);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_bootstrap_and_authenticate);
    RUN(test_bootstrap_after_revocation);
    RUN(test_sdk_config);
    RUN(test_alert_queue_bound);
    RUN(test_polls_are_batched);
    RUN(test_poll_queue_bound);
    RUN(test_refresh_from_shared_store);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TEST_DONE();
}
