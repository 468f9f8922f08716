/* Control-plane routes (DESIGN §5, §9; docs/control-plane.md): API keys, the per-service
 * profiling toggle, the SDK config poll with its long poll, and the audit log. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>
#include <stdio.h>
#include <string.h>

#include "api_util.h"
#include "rt/timeutil.h"

#define MAX_WAIT_S 30
#define MAX_REASON 200

static bool need_control(struct rt_api_ctx *ctx, struct rt_api_resp *resp)
{
    if (ctx->control)
        return true;
    rt__api_error(resp, RT_EINVAL, "the control plane needs a running server");
    return false;
}

void rt__api_post_key(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                      struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    if (!need_control(ctx, resp))
        return;
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    const char *bound = json_string_value(json_object_get(body, "service"));
    if (bound && !rt__api_valid_name(resp, "service", bound)) {
        json_decref(body);
        return;
    }
    json_t *k = rt_control_create_key(ctx->control,
                                      json_string_value(json_object_get(body, "scope")),
                                      json_string_value(json_object_get(body, "service")),
                                      json_string_value(json_object_get(body, "name")), req->who,
                                      &err);
    if (k)
        rt__api_json(resp, 201, k);
    else
        rt__api_error(resp, err.code, "%s", err.msg);
    json_decref(body);
}

void rt__api_get_keys(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                      struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    if (!need_control(ctx, resp))
        return;
    json_t *keys = rt_control_list_keys(ctx->control, &err);
    if (keys)
        rt__api_json(resp, 200, keys);
    else
        rt__api_error(resp, err.code, "%s", err.msg);
}

void rt__api_delete_key(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                        struct rt_api_resp *resp, const char *id)
{
    struct rt_error err = {0};
    if (!need_control(ctx, resp))
        return;
    int64_t key_id = rt__api_path_id(id);
    if (!key_id || rt_control_revoke_key(ctx->control, key_id, req->who, &err)) {
        rt__api_error(resp, key_id ? err.code : RT_ENOTFOUND, "%s",
                      key_id ? err.msg : "no such key (ids are positive integers)");
        return;
    }
    rt__api_json(resp, 200, json_pack("{s:s, s:b}", "id", id, "revoked", 1));
}

/* Reads an optional positive integer member of a JSON body into *v within [lo, hi]. */
static int body_int(json_t *body, const char *key, int64_t lo, int64_t hi, int64_t *v,
                    struct rt_api_resp *resp)
{
    json_t *x = json_object_get(body, key);
    if (!x)
        return 0;
    if (json_is_null(x)) { /* null resets the override to the runtime's default */
        *v = 0;
        return 0;
    }
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi) {
        rt__api_error(resp, RT_EINVAL, "'%s' must be an integer in [%lld, %lld]", key,
                      (long long)lo, (long long)hi);
        return -1;
    }
    *v = json_integer_value(x);
    return 0;
}

void rt__api_put_profiling(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                           struct rt_api_resp *resp, const char *service)
{
    struct rt_error err = {0};
    if (!need_control(ctx, resp) || !rt__api_valid_name(resp, "service", service))
        return;
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    struct rt_service_config cfg;
    rt_control_service_config(ctx->control, service, &cfg);
    json_t *enabled = json_object_get(body, "enabled"), *type = json_object_get(body, "type");
    if (!json_is_boolean(enabled)) {
        rt__api_error(resp, RT_EINVAL, "'enabled' (true or false) is required");
        goto out_put_body;
    }
    cfg.enabled = json_is_true(enabled);
    if (json_is_null(type))
        cfg.type = 0;
    if (type && !json_is_null(type)) {
        const char *t = json_string_value(type);
        if (!rt_ptype_parse(t, &cfg.type)) {
            rt__api_error(resp, RT_EINVAL, "'type' must be \"cpu\" or \"wall\"");
            goto out_put_body;
        }
    }
    if (body_int(body, "sampling_interval_us", 1000, 1000000, &cfg.sampling_interval_us,
                 resp) ||
        body_int(body, "upload_interval_s", 10, 300, &cfg.upload_interval_s, resp))
        goto out_put_body;
    json_t *answer = rt_control_set_profiling(ctx->control, service, &cfg, req->who, &err);
    if (answer)
        rt__api_json(resp, 200, answer);
    else
        rt__api_error(resp, err.code, "%s", err.msg);
out_put_body:
    json_decref(body);
}

/* Checks the status grammar "<state>[: <reason>]" of DESIGN §5. */
static bool valid_status(const char *s)
{
    static const char *const states[] = {"profiling", "disabled", "waiting",
                                         "unavailable", "declined", "error"};
    size_t n = strcspn(s, ":");
    bool known = false;
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        known |= strlen(states[i]) == n && strncmp(s, states[i], n) == 0;
    if (!known)
        return false;
    if (!s[n])
        return true;
    const char *reason = s + n + 1;
    if (*reason++ != ' ' || !*reason || strlen(reason) > MAX_REASON)
        return false;
    for (const char *p = reason; *p; p++)
        if (!isprint((unsigned char)*p))
            return false;
    return true;
}

/* Records the poll as liveness and status (queued off the request path). */
static int record(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                  struct rt_api_resp *resp, const char *service, const char *instance)
{
    struct rt_poll p = {0};
    p.service = service;
    p.instance = instance;
    p.runtime = rt_api_param(req, "runtime");
    p.runtime_version = rt_api_param(req, "runtime_version");
    p.sdk_version = rt_api_param(req, "sdk_version");
    p.version = rt_api_param(req, "version"); /* as on an upload: "version=" is none */
    p.status = rt_api_param(req, "status");
    p.poll_interval_s = rt_control_poll_interval_s(ctx->control);
    p.at_ns = rt_time_now_ns();
    /* A malformed status does not cost the SDK its config (it would then fail closed): the
     * poll counts, and the instance shows that its status could not be read. */
    if (p.status && !valid_status(p.status))
        p.status = "error: malformed status from the SDK (see docs/control-plane.md)";
    static const char *const fields[] = {"runtime", "runtime_version", "sdk_version", "version"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *v = rt_api_param(req, fields[i]);
        if (v && strlen(v) > MAX_REASON) {
            rt__api_error(resp, RT_EINVAL, "'%s' is at most %d bytes", fields[i], MAX_REASON);
            return -1;
        }
    }
    if (rt__api_int(req, resp, "interval_us", 0, INT64_MAX, &p.interval_us))
        return -1;
    rt_control_record_poll(ctx->control, &p);
    return 0;
}

/* wait=S in seconds, clamped to [0, 30] (DESIGN §5: the server clamps, it does not refuse);
 * only a value that is no number at all is refused. */
static int read_wait(const struct rt_api_req *req, struct rt_api_resp *resp, int64_t *ns)
{
    const char *s = rt_api_param(req, "wait");
    *ns = 0;
    if (!s)
        return 0;
    int64_t d;
    if (rt_duration_parse(s, &d) == 0) { /* "8", "8s", "1.5", "1m" */
        *ns = d > MAX_WAIT_S * RT_NS_PER_S ? MAX_WAIT_S * RT_NS_PER_S : d;
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || isnan(v) || strpbrk(s, "xX")) {
        rt__api_error(resp, RT_EINVAL, "wait must be a number of seconds, got '%.40s'", s);
        return -1;
    }
    *ns = v <= 0 ? 0 : MAX_WAIT_S * RT_NS_PER_S; /* negative, or too large to parse */
    return 0;
}

void rt__api_get_sdk_config(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                            struct rt_api_resp *resp, const char *arg)
{
    if (!need_control(ctx, resp))
        return;
    const char *service = rt__api_need(req, resp, "service");
    const char *instance = service ? rt__api_need(req, resp, "instance") : NULL;
    int64_t wait_ns = 0;
    if (!instance || read_wait(req, resp, &wait_ns))
        return;
    if (!rt__api_valid_name(resp, "service", service) ||
        !rt__api_valid_name(resp, "instance", instance))
        return;
    if (!req->no_hold && record(ctx, req, resp, service, instance))
        return;
    struct rt_sdk_config cfg;
    rt_control_sdk_config(ctx->control, service, rt_api_param(req, "runtime"), &cfg);
    /* The etag as the ETag header carries it ("...") or bare. */
    const char *etag = rt_api_param(req, "etag");
    size_t elen = etag ? strlen(etag) : 0;
    if (elen >= 2 && etag[0] == '"' && etag[elen - 1] == '"') {
        etag++;
        elen -= 2;
    }
    bool same = etag && elen == strlen(cfg.etag) && strncmp(etag, cfg.etag, elen) == 0;
    /* Hold an unchanged config up to wait, clamped to [0, 30] s and to the poll interval. */
    int64_t max_ns = rt_control_poll_interval_s(ctx->control) * RT_NS_PER_S;
    if (max_ns > MAX_WAIT_S * RT_NS_PER_S)
        max_ns = MAX_WAIT_S * RT_NS_PER_S;
    if (wait_ns > max_ns)
        wait_ns = max_ns;
    if (same && wait_ns > 0 && !req->no_hold) {
        resp->hold_ns = wait_ns;
        snprintf(resp->hold_service, sizeof(resp->hold_service), "%s", service);
        return;
    }
    snprintf(resp->etag, sizeof(resp->etag), "\"%s\"", cfg.etag);
    if (same) {
        resp->status = 304;
        return;
    }
    rt__api_json(resp, 200, rt_control_sdk_config_json(&cfg));
}

static int audit_cb(void *ud, const struct rt_audit *a)
{
    json_array_append_new(ud, json_pack("{s:o, s:s, s:s, s:s, s:o}", "at",
                                        rt__api_time_json(a->at_ns), "actor", a->actor, "action",
                                        a->action, "target", a->target ? a->target : "",
                                        "detail", a->detail ? json_string(a->detail)
                                                            : json_null()));
    return 0;
}

void rt__api_get_audit(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                       struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    int64_t from = INT64_MIN, to = INT64_MAX, limit = 1000;
    if (rt__api_time(req, resp, "from", &from) || rt__api_time(req, resp, "to", &to) ||
        rt__api_int(req, resp, "limit", 1, 100000, &limit))
        return;
    json_t *arr = json_array();
    if (rt_store_scan_audit(ctx->store, from, to, (size_t)limit, audit_cb, arr, &err) < 0) {
        json_decref(arr);
        rt__api_error(resp, err.code, "%s", err.msg);
        return;
    }
    rt__api_json(resp, 200, arr);
}
