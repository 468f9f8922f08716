/* API routing, the error-to-status mapping, and helpers shared by the handlers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "rt/timeutil.h"

void rt_api_ctx_init(struct rt_api_ctx *ctx, struct rt_store *store)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->store = store;
    rt_ingest_limits_default(&ctx->limits);
    ctx->min_free_bytes = 16 << 20;
    ctx->upload_interval_ns = 60 * RT_NS_PER_S;
}

int rt_http_status_from_err(int code)
{
    switch (code) {
    case RT_OK: return 200;
    case RT_EINVAL:
    case RT_EMALFORMED: return 400;
    case RT_EAUTH: return 401;
    case RT_EFORBIDDEN: return 403;
    case RT_ENOTFOUND: return 404;
    case RT_ECONFLICT: return 409;
    case RT_ETOOBIG: return 413;
    case RT_EFORMAT: return 415;
    case RT_ETYPE: return 422;
    case RT_ENOMEM: return 503;
    case RT_EDISKFULL: return 507;
    default: return 500;
    }
}

const char *rt_api_param(const struct rt_api_req *req, const char *key)
{
    for (size_t i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].key, key) == 0)
            return req->params[i].value;
    return NULL;
}

void rt_api_resp_cleanup(struct rt_api_resp *resp)
{
    json_decref(resp->json);
    free(resp->raw);
    memset(resp, 0, sizeof(*resp));
}

void rt__api_json(struct rt_api_resp *resp, int status, json_t *json)
{
    json_decref(resp->json);
    resp->status = status;
    resp->json = json;
    resp->content_type = "application/json";
}

void rt__api_error(struct rt_api_resp *resp, int code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rt__api_json(resp, rt_http_status_from_err(code),
                 json_pack("{s:s, s:s}", "error", rt_err_name(code), "message", msg));
    resp->refusal = rt_err_name(code);
}

const char *rt__api_need(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key)
{
    const char *v = rt_api_param(req, key);
    if (!v || !*v)
        rt__api_error(resp, RT_EINVAL, "query parameter '%s' is required", key);
    return v && *v ? v : NULL;
}

int rt__api_time(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                 int64_t *ns)
{
    const char *v = rt_api_param(req, key);
    if (!v)
        return 0;
    if (rt_time_parse(v, ns) == 0)
        return 0;
    rt__api_error(resp, RT_EINVAL,
                  "'%s' must be an RFC 3339 time or Unix seconds, got '%.64s'", key, v);
    return -1;
}

int rt__api_int(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                int64_t min, int64_t max, int64_t *v)
{
    const char *s = rt_api_param(req, key);
    if (!s)
        return 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || x < min || x > max) {
        rt__api_error(resp, RT_EINVAL, "'%s' must be an integer in [%lld, %lld], got '%.64s'",
                      key, (long long)min, (long long)max, s);
        return -1;
    }
    *v = x;
    return 0;
}

int rt__api_seconds(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                    int64_t *ns)
{
    const char *s = rt_api_param(req, key);
    if (!s)
        return 0;
    if (rt_duration_parse(s, ns) == 0)
        return 0;
    rt__api_error(resp, RT_EINVAL, "'%s' must be seconds or a duration like 10m, got '%.64s'",
                  key, s);
    return -1;
}

int rt__api_type(const struct rt_api_req *req, struct rt_api_resp *resp, enum rt_ptype *t)
{
    const char *v = rt__api_need(req, resp, "type");
    if (!v)
        return -1;
    if (rt_ptype_parse(v, t))
        return 0;
    rt__api_error(resp, RT_EINVAL, "type must be 'cpu' or 'wall', got '%.64s'", v);
    return -1;
}

json_t *rt__api_time_json(int64_t ns)
{
    char b[RT_TIME_BUFSZ];
    return json_string(rt_time_format(ns, b));
}

json_t *rt__api_body_object(const struct rt_api_req *req, struct rt_api_resp *resp)
{
    json_error_t jerr;
    json_t *o = req->body_len
                    ? json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr)
                    : NULL;
    if (!o) {
        rt__api_error(resp, RT_EMALFORMED, "the body must be a JSON object: %s",
                      req->body_len ? jerr.text : "empty body");
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        rt__api_error(resp, RT_EMALFORMED, "the body must be a JSON object");
        return NULL;
    }
    return o;
}

int rt__api_json_time(json_t *v, int64_t *ns)
{
    if (json_is_string(v))
        return rt_time_parse(json_string_value(v), ns) ? -1 : 0;
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (!(d > -9e9 && d < 9e9))
            return -1;
        *ns = (int64_t)(d * 1e9);
        return 0;
    }
    return -1;
}

/* Parses "/api/v1/issues/<id>[/diff]": returns 1 for the issue, 2 for its diff, 0 otherwise. */
static int issue_route(const char *path, int64_t *id)
{
    const char *prefix = "/api/v1/issues/";
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0)
        return 0;
    char *end;
    long long v = strtoll(path + n, &end, 10);
    if (end == path + n || v <= 0)
        return 0;
    *id = v;
    if (!*end)
        return 1;
    return strcmp(end, "/diff") == 0 ? 2 : 0;
}

void rt_api_dispatch(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                     struct rt_api_resp *resp)
{
    const char *p = req->path, *m = req->method;
    bool get = strcmp(m, "GET") == 0, post = strcmp(m, "POST") == 0;
    int64_t id = 0;
    int kind;
    memset(resp, 0, sizeof(*resp));

    if (strcmp(p, "/api/v1/profiles") == 0 && post)
        rt__api_post_profiles(ctx, req, resp);
    else if (strcmp(p, "/api/v1/profile") == 0 && get)
        rt__api_get_profile(ctx, req, resp);
    else if (strcmp(p, "/api/v1/diff") == 0 && get)
        rt__api_get_diff(ctx, req, resp);
    else if (strcmp(p, "/api/v1/export") == 0 && get)
        rt__api_get_export(ctx, req, resp);
    else if (strcmp(p, "/api/v1/issues") == 0 && post)
        rt__api_post_issue(ctx, req, resp);
    else if (strcmp(p, "/api/v1/issues") == 0 && get)
        rt__api_get_issues(ctx, req, resp, -1);
    else if ((kind = issue_route(p, &id)) == 1 && get)
        rt__api_get_issues(ctx, req, resp, id);
    else if (kind == 2 && get)
        rt__api_get_issue_diff(ctx, req, resp, id);
    else if (strcmp(p, "/api/v1/deploys") == 0 && post)
        rt__api_post_deploy(ctx, req, resp);
    else if (strcmp(p, "/api/v1/deploys") == 0 && get)
        rt__api_get_deploys(ctx, req, resp);
    else if (strcmp(p, "/api/v1/services") == 0 && get)
        rt__api_get_services(ctx, req, resp);
    else if (kind || !strcmp(p, "/api/v1/profiles") || !strcmp(p, "/api/v1/profile") ||
             !strcmp(p, "/api/v1/diff") || !strcmp(p, "/api/v1/issues") ||
             !strcmp(p, "/api/v1/deploys") || !strcmp(p, "/api/v1/services") ||
             !strcmp(p, "/api/v1/export")) {
        rt__api_json(resp, 405,
                     json_pack("{s:s, s:s}", "error", "method_not_allowed", "message",
                               "this route does not take that method"));
        resp->refusal = "method_not_allowed";
    } else {
        rt__api_json(resp, 404,
                     json_pack("{s:s, s:s}", "error", "not_found", "message", "no such route"));
        resp->refusal = "not_found";
    }
}
