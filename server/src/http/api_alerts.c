/* Issues from alerts (DESIGN §13): POST /api/v1/alerts/alertmanager (Alertmanager's webhook,
 * payload version 4) and POST /api/v1/alerts/grafana (Grafana Alerting's webhook contact
 * point). Each alert of alerts[] (never the group's status) names its service by a label, and
 * its episode, (fingerprint, startsAt), opens one issue; the work is queued for the control
 * plane's alert worker, so that the sender is answered at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "rt/str.h"
#include "rt/timeutil.h"

/* Largest payload taken (DESIGN §13); Alertmanager's are a few KiB. */
#define MAX_PAYLOAD (1 << 20)
/* Most alerts one payload may hold. */
#define MAX_ALERTS 5000
/* Largest lead an annotation may ask for. */
#define MAX_LEAD_NS (24 * 3600 * RT_NS_PER_S)

/* An alert's string member, or NULL when absent; mistyped when present and not a string. */
static int str_member(json_t *o, const char *key, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = json_is_string(v) ? json_string_value(v) : NULL;
    return v && !json_is_string(v) && !json_is_null(v) ? -1 : 0;
}

/* Whether v is an object of strings (labels, annotations); absent (NULL) is allowed. */
static bool string_map(json_t *v)
{
    const char *k;
    json_t *x;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v))
        return false;
    json_object_foreach(v, k, x) if (!json_is_string(x)) return false;
    return true;
}

/* The first of the comma-separated labels that the alert carries, non-empty. */
static const char *service_of(json_t *labels, const char *order)
{
    char name[128];
    for (const char *p = order; *p;) {
        size_t n = strcspn(p, ",");
        if (n && n < sizeof(name)) {
            memcpy(name, p, n);
            name[n] = '\0';
            const char *v = json_string_value(json_object_get(labels, name));
            if (v && *v)
                return v;
        }
        p += n + (p[n] == ',');
    }
    return NULL;
}

/* "alertname {k=v, ...}" of an alert without a summary annotation: its alertname, then its
 * other labels in key order. */
static void default_title(json_t *labels, char *out, size_t n)
{
    const char *name = json_string_value(json_object_get(labels, "alertname"));
    int k = snprintf(out, n, "%s", name ? name : "alert");
    const char *key;
    json_t *v;
    bool first = true;
    json_object_foreach(labels, key, v) {
        if (strcmp(key, "alertname") == 0 || k < 0 || (size_t)k >= n)
            continue;
        k += snprintf(out + k, n - (size_t)k, "%s%s=%s", first ? " {" : ", ", key,
                      json_string_value(v));
        first = false;
    }
    if (!first && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, "}");
}

/* One alert read: what the issue worker needs, or why it is refused or unmatched. */
struct one_alert {
    struct rt_alert_item item;
    char key[160], title[1001], fp[130];
    char *details;                  /* the alert JSON text, owned */
    const char *refused;            /* why the alert alone is refused, or NULL */
    char why[200];
};

/* The lead time of an alert (DESIGN §13): its roottrace_lead annotation, else the server's;
 * -1 when the annotation is no duration of 0 to 24 h. */
static int64_t lead_of(const struct rt_api_ctx *ctx, json_t *annotations, const char **from)
{
    const char *s = json_string_value(json_object_get(annotations, "roottrace_lead"));
    int64_t ns;
    if (!s) {
        *from = ctx->alert_lead_ns ? "server" : "none";
        return ctx->alert_lead_ns;
    }
    *from = "annotation";
    return rt_duration_parse(s, &ns) == 0 && ns >= 0 && ns <= MAX_LEAD_NS ? ns : -1;
}

/* The alert's details kept with its issue (answers show them under "alert"). */
static char *details_json(const char *fingerprint, int64_t starts_ns, int64_t lead_ns,
                          const char *lead_from, json_t *labels, const char *url)
{
    json_t *o = json_pack("{s:s, s:o, s:f, s:s, s:O, s:o}", "fingerprint", fingerprint,
                          "starts_at", rt__api_time_json(starts_ns), "lead_s",
                          (double)lead_ns / 1e9, "lead_source", lead_from, "labels",
                          labels ? labels : json_object(), "generator_url",
                          url && *url ? json_string(url) : json_null());
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The fingerprint of an alert that sends none: a hash of its labels. */
static void labels_fingerprint(json_t *labels, char out[130])
{
    char *text = json_dumps(labels ? labels : json_object(), JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t h = text ? rt_hash(text, strlen(text)) : 0;
    free(text);
    snprintf(out, 130, "%016llx", (unsigned long long)h);
}

/* Reads alert a (index i) into o. Returns 0, or -1 with resp filled when the payload is
 * mistyped (the whole payload is refused). */
static int read_alert(const struct rt_api_ctx *ctx, const struct rt_api_req *req, json_t *a,
                      size_t i, const char *source, const char *order, int64_t now,
                      struct one_alert *o, struct rt_api_resp *resp)
{
    const char *status, *starts, *ends, *url, *fp;
    json_t *labels = json_object_get(a, "labels"), *ann = json_object_get(a, "annotations");
    if (!json_is_object(a) || str_member(a, "status", &status) ||
        str_member(a, "startsAt", &starts) || str_member(a, "endsAt", &ends) ||
        str_member(a, "generatorURL", &url) || str_member(a, "fingerprint", &fp) ||
        !json_is_object(labels) || !string_map(labels) || !string_map(ann) || !status ||
        (strcmp(status, "firing") != 0 && strcmp(status, "resolved") != 0) || !starts) {
        rt__api_error(resp, RT_EMALFORMED,
                      "alert %zu: an alert is {\"status\": \"firing\"|\"resolved\", \"labels\": "
                      "{strings}, \"annotations\": {strings}, \"startsAt\", \"endsAt\", "
                      "\"generatorURL\", \"fingerprint\"} (strings)", i);
        return -1;
    }
    int64_t starts_ns, ends_ns = 0;
    int trc = rt_time_parse(starts, &starts_ns);
    if (trc == RT_ETOOBIG) /* a time outside 1823..2116 is refused for this alert alone, below */
        starts_ns = starts[0] == '-' || strncmp(starts, "1", 1) == 0 || strncmp(starts, "0", 1) == 0
                        ? -1
                        : INT64_MAX;
    else if (trc) {
        rt__api_error(resp, RT_EMALFORMED, "alert %zu: startsAt is an RFC 3339 time", i);
        return -1;
    }
    /* an endsAt that says nothing (Go's zero time, "0001-01-01T00:00:00Z", as Alertmanager
     * and Grafana send for a firing alert) is none */
    if (ends && rt_time_parse(ends, &ends_ns))
        ends_ns = 0;
    if (fp && *fp)
        snprintf(o->fp, sizeof(o->fp), "%s", fp);
    else
        labels_fingerprint(labels, o->fp);
    fp = o->fp;
    o->item.source = source;
    o->item.fingerprint = fp;
    o->item.received_ns = now;
    o->item.resolved = strcmp(status, "resolved") == 0;
    const char *lead_from;
    int64_t lead = lead_of(ctx, ann, &lead_from);
    const char *service = service_of(labels, order);
    if (starts_ns < 0 || starts_ns > now + RT__API_MAX_SKEW_NS)
        o->refused = "startsAt is before 1970 or more than 1 h in the future";
    else if (lead < 0)
        o->refused = "the roottrace_lead annotation is no duration from 0 to 24h (e.g. 5m)";
    else if (service && (strlen(service) > 200 || strchr(service, '/') ||
                         !rt_str_is_clean_utf8(service, strlen(service))))
        o->refused = "its service label is no service name (1 to 200 bytes of UTF-8 without "
                     "control characters or '/')";
    else if (service && req->who && req->who->service[0] && strcmp(req->who->service, service))
        o->refused = "this ingest key is bound to another service";
    if (o->refused)
        return 0;
    if (!service) {
        snprintf(o->why, sizeof(o->why), "no label among %.150s names its service", order);
        o->item.unmatched = o->why;
        return 0;
    }
    const char *summary = json_string_value(json_object_get(ann, "summary"));
    if (summary && *summary)
        snprintf(o->title, sizeof(o->title), "%s", summary);
    else
        default_title(labels, o->title, sizeof(o->title));
    snprintf(o->key, sizeof(o->key), "%.120s|%lld", fp, (long long)starts_ns);
    o->details = details_json(fp, starts_ns, lead, lead_from, labels, url);
    o->item.issue = (struct rt_issue){.service = service, .title = o->title,
                                      .started_at_ns = starts_ns - lead, .created_at_ns = now,
                                      .source = source, .alert_key = o->key,
                                      .alert = o->details};
    /* resolved: its end, where it says one after its start; else the time it is heard */
    o->item.issue.ended_at_ns = ends_ns > starts_ns && ends_ns <= now + RT__API_MAX_SKEW_NS
                                    ? ends_ns : now;
    return o->details ? 0 : (rt__api_error(resp, RT_ENOMEM, "out of memory"), -1);
}

/* The answer: {"alerts", "accepted", "refused": [{"alert", "fingerprint", "reason"}],
 * "unmatched": [same]}. */
static json_t *answer_json(const struct one_alert *as, size_t n)
{
    json_t *refused = json_array(), *unmatched = json_array();
    size_t accepted = 0;
    for (size_t i = 0; i < n; i++) {
        const char *why = as[i].refused ? as[i].refused : as[i].item.unmatched;
        if (!why) {
            accepted++;
            continue;
        }
        json_array_append_new(as[i].refused ? refused : unmatched,
                              json_pack("{s:I, s:s, s:s}", "alert", (json_int_t)i,
                                        "fingerprint", as[i].item.fingerprint, "reason", why));
    }
    return json_pack("{s:I, s:I, s:o, s:o}", "alerts", (json_int_t)n, "accepted",
                     (json_int_t)accepted, "refused", refused, "unmatched", unmatched);
}

/* Queues the alerts that were read (in order), or applies them at once without a control
 * plane (the CLI on a data directory). */
static int queue(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                 const struct one_alert *as, size_t n, struct rt_error *err)
{
    struct rt_alert_item *items = calloc(n ? n : 1, sizeof(*items));
    if (!items)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!as[i].refused)
            items[k++] = as[i].item;
    int rc = 0;
    if (ctx->control) {
        rc = k ? rt_control_queue_alerts(ctx->control, items, k, req->who, err) : 0;
    } else {
        for (size_t i = 0; i < k && !rc; i++) {
            int64_t id;
            bool opened;
            if (!items[i].unmatched)
                rc = rt_store_alert_issue(ctx->store, &items[i].issue, items[i].resolved,
                                          items[i].received_ns, &id, &opened, err);
        }
    }
    free(items);
    return rc;
}

static void receive(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                    struct rt_api_resp *resp, const char *source)
{
    if (req->body_len > MAX_PAYLOAD) {
        rt__api_error(resp, RT_ETOOBIG, "an alert payload is at most %d bytes (this one: %zu)",
                      MAX_PAYLOAD, req->body_len);
        return;
    }
    const char *order = rt_api_param(req, "service_label");
    if (!order)
        order = ctx->alert_service_labels;
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    json_t *alerts = json_object_get(body, "alerts");
    json_t *version = json_object_get(body, "version");
    struct one_alert *as = NULL;
    size_t n = json_array_size(alerts), i = 0;
    if (!json_is_array(alerts) || n > MAX_ALERTS ||
        (strcmp(source, "alertmanager") == 0 && version &&
         (!json_is_string(version) || strcmp(json_string_value(version), "4") != 0))) {
        rt__api_error(resp, RT_EMALFORMED,
                      "the payload is %s's webhook: an object whose \"alerts\" is a list (at "
                      "most %d)%s", source, MAX_ALERTS,
                      strcmp(source, "alertmanager") == 0 ? ", version 4" : "");
        goto out_put_body;
    }
    as = calloc(n ? n : 1, sizeof(*as));
    int64_t now = rt_time_now_ns();
    for (; as && i < n; i++)
        if (read_alert(ctx, req, json_array_get(alerts, i), i, source, order, now, &as[i], resp))
            goto out_free;
    struct rt_error err = {0};
    if (!as)
        rt__api_error(resp, RT_ENOMEM, "out of memory");
    else if (queue(ctx, req, as, n, &err))
        rt__api_error(resp, err.code, "%s", err.msg);
    else
        rt__api_json(resp, 200, answer_json(as, n));
out_free:
    for (size_t k = 0; as && k < n; k++)
        free(as[k].details);
    free(as);
out_put_body:
    json_decref(body);
}

void rt__api_post_alertmanager(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                               struct rt_api_resp *resp, const char *arg)
{
    receive(ctx, req, resp, "alertmanager");
}

void rt__api_post_grafana(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                          struct rt_api_resp *resp, const char *arg)
{
    receive(ctx, req, resp, "grafana");
}
