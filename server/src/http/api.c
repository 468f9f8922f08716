/* API routing, the error-to-status mapping, and helpers shared by the handlers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "api_util.h"
#include "rt/str.h"
#include "rt/timeutil.h"

void rt_api_ctx_init(struct rt_api_ctx *ctx, struct rt_store *store, struct rt_control *control)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->store = store;
    ctx->control = control;
    rt_ingest_limits_default(&ctx->limits);
    ctx->min_free_bytes = 16 << 20;
    ctx->upload_interval_ns = 60 * RT_NS_PER_S;
    snprintf(ctx->alert_service_labels, sizeof(ctx->alert_service_labels), "%s",
             RT_API_ALERT_SERVICE_LABELS);
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
    case RT_ENOMEM:
    case RT_EIO: /* the store failed or is unreachable: a retry may succeed */
    case RT_ECANCELED:
    case RT_EBUSY: return 503; /* the senders retry */
    case RT_EDISKFULL: return 507;
    default: return 500;
    }
}

const char *rt_api_param(const struct rt_api_req *req, const char *key)
{
    for (size_t i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].key, key) == 0)
            return req->params[i].value && *req->params[i].value ? req->params[i].value : NULL;
    return NULL;
}

void rt_api_resp_cleanup(struct rt_api_resp *resp)
{
    json_decref(resp->json);
    free(resp->raw);
    rt_buf_cleanup(&resp->json_tail);
    memset(resp, 0, sizeof(*resp));
}

void rt__api_json(struct rt_api_resp *resp, int status, json_t *json)
{
    json_decref(resp->json);
    rt_buf_cleanup(&resp->json_tail); /* members of the answer this one replaces */
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

int rt__api_parse_int(const char *s, int64_t *v)
{
    bool neg = *s == '-';
    const char *d = s + neg;
    if (*d < '0' || *d > '9' || (d[0] == '0' && d[1] != '\0') || (neg && d[0] == '0'))
        return -1;
    uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return -1;
        unsigned digit = (unsigned)(*d - '0');
        if (x > (lim - digit) / 10)
            return -1; /* out of int64 range */
        x = x * 10 + digit;
    }
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 0;
}

int rt__api_int(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                int64_t min, int64_t max, int64_t *v)
{
    const char *s = rt_api_param(req, key);
    if (!s)
        return 0;
    int64_t x;
    if (rt__api_parse_int(s, &x) || x < min || x > max) {
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

/* Whether s is 1..200 bytes of UTF-8 without control characters (tab included). */
static bool is_label(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 1 && n <= 200 && !strchr(s, '\t') && rt_str_is_clean_utf8(s, n);
}

bool rt__api_valid_name(struct rt_api_resp *resp, const char *what, const char *name)
{
    bool ok = is_label(name) && !strchr(name, '/');
    if (!ok)
        rt__api_error(resp, RT_EINVAL,
                      "%s names are 1 to 200 bytes of UTF-8 without control characters or '/'",
                      what);
    return ok;
}

bool rt__api_valid_version(struct rt_api_resp *resp, const char *version)
{
    bool ok = is_label(version);
    if (!ok)
        rt__api_error(resp, RT_EINVAL,
                      "a version is 1 to 200 bytes of UTF-8 without control characters");
    return ok;
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
        if (!(d * 1e9 > -(double)RT_TIME_LIMIT_NS && d * 1e9 < (double)RT_TIME_LIMIT_NS))
            return -1;
        *ns = (int64_t)(d * 1e9);
        return 0;
    }
    return -1;
}

int64_t rt__api_path_id(const char *arg)
{
    int64_t v;
    return rt__api_parse_int(arg, &v) == 0 && v > 0 ? v : 0;
}

/* One route: method, a path pattern where "*" stands for one path segment (an id or a
 * service name, passed to the handler), the scope it needs, its handler, whether the
 * handler itself checks a bound ingest key's service (rt__api_may_send: Pyroscope's routes
 * name it in name= or in the body) rather than the dispatcher against service=, and whether
 * it scans profile windows (rt_api_scans). */
struct route {
    const char *method, *pattern;
    enum rt_scope need;
    rt__api_handler fn;
    bool service_in_handler;
    bool scans;
};

/* RT_SCOPE_NONE: the handler authenticates the request itself (sign-in and sign-out). */
static const struct route routes[] = {
    {"POST", "/api/v1/session", RT_SCOPE_NONE, rt__api_post_session, false, false},
    {"GET", "/api/v1/session", RT_SCOPE_NONE, rt__api_get_session, false, false},
    {"DELETE", "/api/v1/session", RT_SCOPE_NONE, rt__api_delete_session, false, false},
    {"POST", "/api/v1/profiles", RT_SCOPE_INGEST, rt__api_post_profiles, false, false},
    {"POST", "/ingest", RT_SCOPE_INGEST, rt__api_post_ingest, true, false},
    {"POST", "/push.v1.PusherService/Push", RT_SCOPE_INGEST, rt__api_post_push, true, false},
    {"GET", "/api/v1/sdk/config", RT_SCOPE_INGEST, rt__api_get_sdk_config, false, false},
    {"GET", "/api/v1/profile", RT_SCOPE_READ, rt__api_get_profile, false, true},
    {"GET", "/api/v1/timeline", RT_SCOPE_READ, rt__api_get_timeline, false, true},
    {"GET", "/api/v1/diff", RT_SCOPE_READ, rt__api_get_diff, false, true},
    {"GET", "/api/v1/export", RT_SCOPE_READ, rt__api_get_export, false, true},
    {"POST", "/api/v1/alerts/alertmanager", RT_SCOPE_INGEST, rt__api_post_alertmanager, true, false},
    {"POST", "/api/v1/alerts/grafana", RT_SCOPE_INGEST, rt__api_post_grafana, true, false},
    {"GET", "/api/v1/issues", RT_SCOPE_READ, rt__api_get_issues, false, false},
    {"POST", "/api/v1/issues", RT_SCOPE_ADMIN, rt__api_post_issue, false, false},
    {"GET", "/api/v1/issues/*", RT_SCOPE_READ, rt__api_get_issue, false, false},
    {"PATCH", "/api/v1/issues/*", RT_SCOPE_ADMIN, rt__api_patch_issue, false, false},
    {"GET", "/api/v1/issues/*/diff", RT_SCOPE_READ, rt__api_get_issue_diff, false, true},
    {"GET", "/api/v1/deploys", RT_SCOPE_READ, rt__api_get_deploys, false, false},
    {"POST", "/api/v1/deploys", RT_SCOPE_ADMIN, rt__api_post_deploy, false, false},
    {"GET", "/api/v1/services", RT_SCOPE_READ, rt__api_get_services, false, false},
    {"PUT", "/api/v1/services/*/profiling", RT_SCOPE_ADMIN, rt__api_put_profiling, false, false},
    {"GET", "/api/v1/keys", RT_SCOPE_ADMIN, rt__api_get_keys, false, false},
    {"POST", "/api/v1/keys", RT_SCOPE_ADMIN, rt__api_post_key, false, false},
    {"DELETE", "/api/v1/keys/*", RT_SCOPE_ADMIN, rt__api_delete_key, false, false},
    {"GET", "/api/v1/audit", RT_SCOPE_READ, rt__api_get_audit, false, false},
};

/* Matches path against pattern; a "*" segment is copied into arg (at most argsz - 1 bytes,
 * longer segments do not match). */
static bool match(const char *pattern, const char *path, char *arg, size_t argsz)
{
    arg[0] = '\0';
    while (*pattern && *path) {
        if (*pattern == '*') {
            size_t n = strcspn(path, "/");
            if (n == 0 || n >= argsz)
                return false;
            memcpy(arg, path, n);
            arg[n] = '\0';
            path += n;
            pattern++;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return !*pattern && !*path;
}

/* Does a key of scope have allows a route that needs need? Ingest keys may upload and poll
 * their config, nothing else; read keys see everything and change nothing (DESIGN §9). */
static bool allows(enum rt_scope have, enum rt_scope need)
{
    if (have == RT_SCOPE_ADMIN)
        return true;
    return have == need;
}

static void refuse(struct rt_api_resp *resp, int status, const char *error, const char *msg)
{
    rt__api_json(resp, status, json_pack("{s:s, s:s}", "error", error, "message", msg));
    resp->refusal = error;
}

/* The key an Authorization header carries: "Bearer <key>", or "Basic <base64(user:key)>" with
 * the key as the password and the user name ignored (DESIGN §12: Pyroscope's agents and
 * Alertmanager's http_config send Basic). Writes it NUL-terminated into key[n]; false when
 * the header is neither or does not decode. */
static bool header_key(const char *h, char *key, size_t n)
{
    if (strncasecmp(h, "Bearer ", 7) == 0) {
        size_t len = strlen(h + 7);
        if (len >= n)
            return false;
        memcpy(key, h + 7, len + 1);
        return true;
    }
    if (strncasecmp(h, "Basic ", 6) != 0)
        return false;
    unsigned char raw[512];
    size_t len = 0;
    const char *b64 = h + 6;
    while (*b64 == ' ')
        b64++;
    if (sodium_base642bin(raw, sizeof(raw) - 1, b64, strlen(b64), NULL, &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return false;
    raw[len] = '\0';
    const unsigned char *colon = memchr(raw, ':', len);
    if (!colon || memchr(raw, '\0', len) || (size_t)(raw + len - colon - 1) >= n)
        return false;
    memcpy(key, colon + 1, (size_t)(raw + len - colon - 1) + 1);
    sodium_memzero(raw, sizeof(raw));
    return true;
}

/* Who sent req: the local principal when trusted, else the key of its Authorization header
 * (header_key), else the UI session of its cookie (*by_cookie set, *csrf_ok whether it
 * carries the CSRF token). */
static bool authenticate(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_principal *who, bool *by_cookie, bool *csrf_ok)
{
    *by_cookie = *csrf_ok = false;
    if (ctx->trusted || !ctx->control) {
        rt_control_local_principal(who);
        return true;
    }
    const char *h = req->authorization;
    if (h) {
        char key[384];
        bool ok = header_key(h, key, sizeof(key)) &&
                  rt_control_authenticate(ctx->control, key, who);
        sodium_memzero(key, sizeof(key));
        return ok;
    }
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX];
    int64_t expires;
    if (!ctx->sessions || !rt__session_cookie(req->cookie, id) ||
        !rt__sessions_lookup(ctx->sessions, ctx->control, id, who, csrf, &expires))
        return false;
    *by_cookie = true;
    *csrf_ok = rt__session_csrf_ok(req, csrf);
    return true;
}

/* The route of req's method and path, or NULL (*path_known: some route has this path);
 * arg receives its "*" segment. */
static const struct route *find_route(const struct rt_api_req *req, char arg[1024],
                                      bool *path_known)
{
    *path_known = false;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (!match(routes[i].pattern, req->path, arg, 1024))
            continue;
        *path_known = true;
        if (strcmp(routes[i].method, req->method) == 0)
            return &routes[i];
    }
    return NULL;
}

/* Whether req may use found, a route that needs a scope: a valid key or session, a cookie
 * request's CSRF token on a method that writes, the key's scope, and a bound ingest key's
 * service (the query's `service`). Fills *who; else refuses resp (401 or 403) and returns
 * false. */
static bool admit(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                  const struct route *found, struct rt_principal *who, struct rt_api_resp *resp)
{
    bool by_cookie, csrf_ok;
    if (!authenticate(ctx, req, who, &by_cookie, &csrf_ok)) {
        refuse(resp, 401, "unauthorized",
               "send a valid key as 'Authorization: Bearer <key>', or as the password of "
               "'Authorization: Basic' (see docs/control-plane.md)");
        return false;
    }
    if (by_cookie && !csrf_ok && strcmp(req->method, "GET") != 0 &&
        strcmp(req->method, "HEAD") != 0) {
        refuse(resp, 403, "forbidden", RT_SESSION_CSRF_MSG);
        return false;
    }
    if (!allows(who->scope, found->need)) {
        char msg[160];
        const char *scope = rt_control_scope_name(who->scope);
        snprintf(msg, sizeof(msg), "%s %s key cannot use %s %s",
                 scope[0] && strchr("aeiou", scope[0]) ? "an" : "a", scope, req->method, found->pattern);
        refuse(resp, 403, "forbidden", msg);
        return false;
    }
    const char *service = rt_api_param(req, "service");
    if (who->service[0] && !found->service_in_handler &&
        (!service || strcmp(service, who->service) != 0)) {
        refuse(resp, 403, "forbidden", "this ingest key is bound to another service");
        return false;
    }
    return true;
}

/* admit, judging only: its refusal is dropped. */
static bool admitted(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                     const struct route *found)
{
    struct rt_principal who;
    struct rt_api_resp refusal;
    memset(&refusal, 0, sizeof(refusal));
    bool ok = admit(ctx, req, found, &who, &refusal);
    rt_api_resp_cleanup(&refusal);
    return ok;
}

bool rt_api_method_reads_body(const char *method)
{
    return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
           strcmp(method, "PATCH") == 0;
}

size_t rt_api_body_allowance(struct rt_api_ctx *ctx, const struct rt_api_req *req)
{
    char arg[1024];
    bool path_known;
    const struct route *found = find_route(req, arg, &path_known);
    if (!found)
        return 0;
    if (!rt_api_method_reads_body(found->method))
        return 0; /* a GET or DELETE is answered whatever its body, none of it kept */
    if (found->need == RT_SCOPE_NONE) /* sign-in, which authenticates by its body */
        return RT_API_SESSION_BODY_MAX;
    return admitted(ctx, req, found) ? ctx->limits.max_compressed : 0;
}

bool rt_api_scans(struct rt_api_ctx *ctx, const struct rt_api_req *req)
{
    char arg[1024];
    bool path_known;
    const struct route *found = find_route(req, arg, &path_known);
    return found && found->scans && admitted(ctx, req, found);
}

void rt_api_dispatch(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                     struct rt_api_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    char arg[1024];
    bool path_known;
    const struct route *found = find_route(req, arg, &path_known);
    if (!found) {
        if (path_known)
            refuse(resp, 405, "method_not_allowed", "this route does not take that method");
        else
            refuse(resp, 404, "not_found", "no such route");
        return;
    }
    if (found->need == RT_SCOPE_NONE) {
        found->fn(ctx, req, resp, arg);
        return;
    }
    struct rt_principal who;
    if (!admit(ctx, req, found, &who, resp))
        return;
    struct rt_api_req r = *req;
    r.who = &who;
    found->fn(ctx, &r, resp, arg);
}
