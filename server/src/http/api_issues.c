/* Issues (DESIGN §6, §13): POST, GET /api/v1/issues, GET and PATCH /api/v1/issues/{id}. An
 * issue opened by an alert (api_alerts.c) shows its alert; an issue's end bounds its diff. */
#include <stdio.h>
#include <string.h>

#include "api_util.h"
#include "rt/timeutil.h"

static json_t *id_json(int64_t id)
{
    char b[32];
    snprintf(b, sizeof(b), "%lld", (long long)id);
    return json_string(b);
}

/* The alert of an issue it opened: the details stored at opening ({"fingerprint",
 * "starts_at", "lead_s", "lead_source", "labels", "generator_url"}) and its state now
 * ({"status", "last_notified_at", "notifications"}). */
static json_t *alert_json(const struct rt_issue *i)
{
    json_t *a = i->alert ? json_loads(i->alert, 0, NULL) : NULL;
    if (!json_is_object(a)) {
        json_decref(a);
        return json_null();
    }
    json_object_set_new(a, "status", json_string(i->resolved ? "resolved" : "firing"));
    json_object_set_new(a, "last_notified_at", i->notified_at_ns
                                                   ? rt__api_time_json(i->notified_at_ns)
                                                   : json_null());
    json_object_set_new(a, "notifications", json_integer(i->notifications));
    return a;
}

static json_t *issue_to_json(const struct rt_issue *i)
{
    return json_pack("{s:o, s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:o}", "id", id_json(i->id),
                     "service", i->service, "title", i->title ? i->title : "", "started_at",
                     rt__api_time_json(i->started_at_ns), "created_at",
                     rt__api_time_json(i->created_at_ns), "ended_at",
                     i->ended_at_ns ? rt__api_time_json(i->ended_at_ns) : json_null(),
                     "state", i->ended_at_ns ? "ended" : "open", "source",
                     i->source && *i->source ? i->source : "api", "alert", alert_json(i));
}

struct issue_one {
    json_t *json;
    int64_t started_ns, ended_ns;
};

static int issue_one_cb(void *ud, const struct rt_issue *i)
{
    struct issue_one *o = ud;
    o->json = issue_to_json(i);
    o->started_ns = i->started_at_ns;
    o->ended_ns = i->ended_at_ns;
    return 1;
}

json_t *rt__api_issue_json(struct rt_store *s, const char *id_text, int64_t *started_ns,
                           int64_t *ended_ns, struct rt_error *err)
{
    struct issue_one o = {NULL, 0, 0};
    int64_t id = rt__api_path_id(id_text);
    if (id && rt_store_scan_issues(s, id, issue_one_cb, &o, err) < 0)
        return NULL;
    if (!o.json) {
        rt_error_set(err, RT_ENOTFOUND, "no issue '%.64s'%s", id_text,
                     id ? "" : " (ids are positive integers)");
        return NULL;
    }
    *started_ns = o.started_ns;
    *ended_ns = o.ended_ns;
    return o.json;
}

void rt__api_post_issue(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                        struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    struct rt_issue issue = {.source = "api"};
    issue.service = json_string_value(json_object_get(body, "service"));
    issue.title = json_string_value(json_object_get(body, "title"));
    json_t *started = json_object_get(body, "started_at");
    if (!rt__api_valid_name(resp, "service", issue.service))
        goto out_put_body;
    if (issue.title && strlen(issue.title) > 1000) {
        rt__api_error(resp, RT_EINVAL, "'title' is at most 1000 bytes");
        goto out_put_body;
    }
    if (!started || rt__api_json_time(started, &issue.started_at_ns)) {
        rt__api_error(resp, RT_EINVAL,
                      "'started_at' (RFC 3339 string or Unix seconds) is required");
        goto out_put_body;
    }
    issue.created_at_ns = rt_time_now_ns();
    if (issue.started_at_ns > issue.created_at_ns + RT__API_MAX_SKEW_NS) {
        /* its current window would be empty until then: a typo, or a clock far off */
        rt__api_error(resp, RT_EINVAL, "'started_at' is more than 1 h in the future");
        goto out_put_body;
    }
    if (!issue.title)
        issue.title = "";
    int64_t id;
    if (rt_store_put_issue(ctx->store, &issue, &id, &err)) {
        rt__api_error(resp, err.code, "%s", err.msg);
        goto out_put_body;
    }
    issue.id = id;
    rt__api_json(resp, 201, issue_to_json(&issue));
out_put_body:
    json_decref(body);
}

struct issue_list {
    json_t *arr;
    const char *service;
    int state;       /* 0 any, 1 open, 2 ended */
};

static int issue_list_cb(void *ud, const struct rt_issue *i)
{
    struct issue_list *l = ud;
    if ((!l->service || strcmp(l->service, i->service) == 0) &&
        (!l->state || (l->state == 1) == (i->ended_at_ns == 0)))
        json_array_append_new(l->arr, issue_to_json(i));
    return 0;
}

void rt__api_get_issue(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                       struct rt_api_resp *resp, const char *id)
{
    struct rt_error err = {0};
    int64_t started, ended;
    json_t *j = rt__api_issue_json(ctx->store, id, &started, &ended, &err);
    if (j)
        rt__api_json(resp, 200, j);
    else
        rt__api_error(resp, err.code, "%s", err.msg);
}

void rt__api_get_issues(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                        struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    struct issue_list l = {NULL, rt_api_param(req, "service"), 0};
    const char *state = rt_api_param(req, "state");
    if (state) {
        l.state = strcmp(state, "open") == 0 ? 1 : strcmp(state, "ended") == 0 ? 2 : -1;
        if (l.state < 0) {
            rt__api_error(resp, RT_EINVAL, "state must be 'open' or 'ended', got '%.40s'",
                          state);
            return;
        }
    }
    l.arr = json_array();
    if (rt_store_scan_issues(ctx->store, -1, issue_list_cb, &l, &err) < 0) {
        json_decref(l.arr);
        rt__api_error(resp, err.code, "%s", err.msg);
        return;
    }
    rt__api_json(resp, 200, l.arr);
}

void rt__api_patch_issue(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *id_text)
{
    struct rt_error err = {0};
    int64_t started, ended, at = 0;
    json_t *issue = rt__api_issue_json(ctx->store, id_text, &started, &ended, &err);
    if (!issue) {
        rt__api_error(resp, err.code, "%s", err.msg);
        return;
    }
    json_decref(issue);
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    json_t *v = json_object_get(body, "ended_at");
    if (json_object_size(body) != 1 || !v ||
        (!json_is_null(v) && rt__api_json_time(v, &at))) {
        rt__api_error(resp, RT_EINVAL,
                      "the body is {\"ended_at\": RFC 3339 time, Unix seconds, or null to "
                      "reopen the issue}");
        goto out_put_body;
    }
    if (!json_is_null(v) && at <= started) {
        rt__api_error(resp, RT_EINVAL, "'ended_at' must be after the issue's start");
        goto out_put_body;
    }
    bool change = at != ended; /* reopening an open issue, or the same end: nothing to log */
    if ((change && rt_store_set_issue_end(ctx->store, rt__api_path_id(id_text), at, &err)) ||
        !(issue = rt__api_issue_json(ctx->store, id_text, &started, &ended, &err))) {
        rt__api_error(resp, err.code, "%s", err.msg);
        goto out_put_body;
    }
    if (ctx->control && change)
        rt_control_audit(ctx->control, req->who, at ? "issue ended" : "issue reopened",
                         id_text, NULL, NULL);
    rt__api_json(resp, 200, issue);
out_put_body:
    json_decref(body);
}
