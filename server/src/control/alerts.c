/* Alert notifications leave the request path at once (DESIGN §13: the webhook answers 2xx
 * fast): they queue here, bounded, and one thread applies them in order to the store, each
 * through the alert episode rule (rt_store_alert_issue). An alert with no service, or naming
 * a service RootTrace does not know, is audited with its reason and opens nothing. Counts per
 * source feed /metrics. */
#include <stdlib.h>
#include <string.h>

#include "control_int.h"
#include "rt/buf.h"
#include "rt/log.h"
#include "rt/timeutil.h"

/* Most notifications queued at once; past it a webhook is answered 503 (its sender retries). */
#define MAX_QUEUED_ALERTS 10000

/* A queued notification: the item's strings copied into one block. */
struct rt__control_queued_alert {
    struct rt_alert_item item;
    struct rt_principal by;
    char *strings;
};

static int source_index(const char *source)
{
    return source && strcmp(source, "grafana") == 0 ? 1 : 0;
}

/* Copies the strings of item into one owned block. */
static int copy_item(const struct rt_alert_item *in, struct rt__control_queued_alert *q)
{
    const char *src[] = {in->source, in->issue.service, in->issue.title, in->issue.alert_key,
                         in->issue.alert, in->fingerprint, in->unmatched};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        n += src[i] ? strlen(src[i]) + 1 : 0;
    q->item = *in;
    q->strings = malloc(n ? n : 1);
    if (!q->strings)
        return RT_ENOMEM;
    const char **dst[] = {&q->item.source, &q->item.issue.service, &q->item.issue.title,
                          &q->item.issue.alert_key, &q->item.issue.alert, &q->item.fingerprint,
                          &q->item.unmatched};
    char *p = q->strings;
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
        if (!src[i])
            continue;
        size_t k = strlen(src[i]) + 1;
        memcpy(p, src[i], k);
        *dst[i] = p;
        p += k;
    }
    q->item.issue.source = q->item.source;
    return 0;
}

int rt_control_queue_alerts(struct rt_control *c, const struct rt_alert_item *items, size_t n,
                            const struct rt_principal *by, struct rt_error *err)
{
    struct rt__control_queued_alert *qs = calloc(n ? n : 1, sizeof(*qs));
    if (!qs)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    int rc = 0;
    size_t made = 0;
    for (; made < n && !rc; made++) {
        rc = copy_item(&items[made], &qs[made]) ? rt_error_set(err, RT_ENOMEM, "out of memory")
                                                : 0;
        qs[made].by = *by;
    }
    pthread_mutex_lock(&c->alert_mu);
    if (!rc && c->nalerts + n > MAX_QUEUED_ALERTS)
        rc = rt_error_set(err, RT_EBUSY,
                          "%zu alert notifications are queued for the store (at most %d): "
                          "nothing of this one was taken; retry", c->nalerts,
                          MAX_QUEUED_ALERTS);
    else if (!rc && rt_array_grow((void **)&c->alerts, &c->cap_alerts, c->nalerts + n,
                                  sizeof(*c->alerts)))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
    if (!rc) {
        memcpy(c->alerts + c->nalerts, qs, n * sizeof(*qs));
        c->nalerts += n;
        for (size_t i = 0; i < n; i++)
            c->alerts_received[source_index(items[i].source)]++;
        pthread_cond_signal(&c->alert_cond);
    }
    pthread_mutex_unlock(&c->alert_mu);
    if (rc)
        for (size_t i = 0; i < made; i++)
            free(qs[i].strings);
    free(qs);
    return rc;
}

struct known {
    const char *name;
    bool found;
};

static int known_cb(void *ud, const struct rt_service_info *svc)
{
    struct known *k = ud;
    k->found = strcmp(svc->name, k->name) == 0;
    return k->found;
}

/* Applies one notification. A firing alert opens an issue only for a service RootTrace
 * knows (one that sent a profile or polled its config): Alertmanager's `job` label names
 * every scraped job (node, postgres, ...), which must not fill the issue list. */
static int apply(struct rt_control *c, const struct rt__control_queued_alert *q, struct rt_error *err)
{
    const struct rt_alert_item *a = &q->item;
    char why[300];
    const char *unmatched = a->unmatched;
    if (!unmatched && !a->resolved) {
        struct known k = {a->issue.service, false};
        if (rt_store_scan_services(c->store, known_cb, &k, err) < 0)
            return err->code;
        snprintf(why, sizeof(why), "service \"%.200s\" is not one RootTrace knows (it has sent "
                 "no profile and polled no config)", a->issue.service);
        unmatched = k.found ? NULL : why;
    }
    if (unmatched) {
        char detail[600];
        snprintf(detail, sizeof(detail), "%s alert %s opens no issue: %s", a->source,
                 a->fingerprint ? a->fingerprint : "", unmatched);
        return rt_control_audit(c, &q->by, "alert unmatched", a->source, detail, err);
    }
    int64_t id = 0;
    bool opened = false;
    int rc = rt_store_alert_issue(c->store, &a->issue, a->resolved, a->received_ns, &id,
                                  &opened, err);
    if (rc == 0 && opened) {
        pthread_mutex_lock(&c->alert_mu);
        c->issues_opened[source_index(a->source)]++;
        pthread_mutex_unlock(&c->alert_mu);
        char target[64], detail[400];
        snprintf(target, sizeof(target), "issue %lld", (long long)id);
        snprintf(detail, sizeof(detail), "opened by %s alert %s for service %s", a->source,
                 a->fingerprint ? a->fingerprint : "", a->issue.service);
        rt_control_audit(c, &q->by, "issue opened", target, detail, NULL);
    }
    return rc;
}

int rt_control_flush_alerts(struct rt_control *c, struct rt_error *err)
{
    pthread_mutex_lock(&c->alert_mu);
    /* a batch another thread is applying comes first: when this returns, all is applied */
    while (c->alerts_applying)
        pthread_cond_wait(&c->alert_cond, &c->alert_mu);
    struct rt__control_queued_alert *batch = c->alerts;
    size_t n = c->nalerts;
    c->alerts = NULL;
    c->nalerts = c->cap_alerts = 0;
    c->alerts_applying = n;
    pthread_mutex_unlock(&c->alert_mu);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct rt_error one = {0};
        if (apply(c, &batch[i], &one)) {
            rt_log(RT_LOG_WARN, "applying an alert notification failed: %s", one.msg);
            if (!rc && err)
                *err = one;
            rc = rc ? rc : one.code;
        }
        free(batch[i].strings);
    }
    free(batch);
    pthread_mutex_lock(&c->alert_mu);
    c->alerts_applying = 0;
    pthread_cond_broadcast(&c->alert_cond);
    pthread_mutex_unlock(&c->alert_mu);
    return rc;
}

static void *alert_worker(void *arg)
{
    struct rt_control *c = arg;
    pthread_mutex_lock(&c->alert_mu);
    while (!c->alerts_stopping) {
        if (c->nalerts == 0) {
            pthread_cond_wait(&c->alert_cond, &c->alert_mu);
            continue;
        }
        pthread_mutex_unlock(&c->alert_mu);
        rt_control_flush_alerts(c, NULL);
        pthread_mutex_lock(&c->alert_mu);
    }
    pthread_mutex_unlock(&c->alert_mu);
    return NULL;
}

int rt__control_alerts_start(struct rt_control *c, struct rt_error *err)
{
    if (pthread_create(&c->alert_thread, NULL, alert_worker, c) != 0)
        return rt_error_set(err, RT_ENOMEM, "cannot start the alert worker thread");
    c->alert_thread_started = true;
    return 0;
}

void rt__control_alerts_stop(struct rt_control *c)
{
    if (c->alert_thread_started) {
        pthread_mutex_lock(&c->alert_mu);
        c->alerts_stopping = true;
        pthread_cond_broadcast(&c->alert_cond);
        pthread_mutex_unlock(&c->alert_mu);
        pthread_join(c->alert_thread, NULL);
        c->alert_thread_started = false;
    }
    struct rt_error err = {0};
    if (rt_control_flush_alerts(c, &err))
        rt_log(RT_LOG_WARN, "applying alert notifications at exit failed: %s", err.msg);
}

void rt_control_alert_counts(struct rt_control *c, const char *source, uint64_t *received,
                             uint64_t *opened)
{
    pthread_mutex_lock(&c->alert_mu);
    *received = c->alerts_received[source_index(source)];
    *opened = c->issues_opened[source_index(source)];
    pthread_mutex_unlock(&c->alert_mu);
}
