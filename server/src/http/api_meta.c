/* Deploys and services: POST/GET /api/v1/deploys, GET /api/v1/services (DESIGN §6, §11). */
#include <stdio.h>
#include <string.h>

#include "api_util.h"
#include "rt/timeutil.h"

void rt__api_post_deploy(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    struct rt_deploy d = {0};
    d.service = json_string_value(json_object_get(body, "service"));
    d.version = json_string_value(json_object_get(body, "version"));
    d.source = "declared";
    json_t *at = json_object_get(body, "at");
    if (!rt__api_valid_name(resp, "service", d.service))
        goto out_put_body;
    if (!d.version) {
        rt__api_error(resp, RT_EINVAL, "'version' (a string of 1 to 200 bytes) is required");
        goto out_put_body;
    }
    if (!rt__api_valid_version(resp, d.version))
        goto out_put_body;
    if (!at)
        d.at_ns = rt_time_now_ns();
    else if (rt__api_json_time(at, &d.at_ns)) {
        rt__api_error(resp, RT_EINVAL, "'at' must be an RFC 3339 string or Unix seconds");
        goto out_put_body;
    }
    if (rt_store_put_deploy(ctx->store, &d, &err)) {
        rt__api_error(resp, err.code, "%s", err.msg);
        goto out_put_body;
    }
    rt__api_json(resp, 201,
                 json_pack("{s:s, s:s, s:o, s:s}", "service", d.service, "version", d.version,
                           "at", rt__api_time_json(d.at_ns), "source", d.source));
out_put_body:
    json_decref(body);
}

static int deploy_cb(void *ud, const struct rt_deploy *d)
{
    json_array_append_new(ud, json_pack("{s:s, s:s, s:o, s:s}", "service", d->service,
                                        "version", d->version, "at",
                                        rt__api_time_json(d->at_ns), "source", d->source));
    return 0;
}

void rt__api_get_deploys(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    int64_t from = INT64_MIN, to = INT64_MAX;
    if (rt__api_time(req, resp, "from", &from) || rt__api_time(req, resp, "to", &to))
        return;
    json_t *arr = json_array();
    if (rt_store_scan_deploys(ctx->store, rt_api_param(req, "service"), from, to, deploy_cb, arr,
                              &err) < 0) {
        json_decref(arr);
        rt__api_error(resp, err.code, "%s", err.msg);
        return;
    }
    rt__api_json(resp, 200, arr);
}

struct services_ctx {
    struct rt_store *store;
    json_t *arr;
    json_t *current;  /* the service whose instances are being listed */
    json_t *by_name;  /* its instances by name (borrowed references) */
    int64_t now_ns;
    int64_t poll_interval_s;
};

static json_t *nullable(const char *s)
{
    return s ? json_string(s) : json_null();
}

static int instance_cb(void *ud, const struct rt_instance_info *in)
{
    struct services_ctx *sc = ud;
    json_t *svc = sc->current;
    /* Stale when not seen for 3 poll intervals (DESIGN §5): rt_store_poll_gap_ns. */
    bool stale = sc->now_ns - in->last_seen_ns > rt_store_poll_gap_ns(sc->poll_interval_s);
    json_array_append_new(
        json_object_get(svc, "instances"),
        json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "instance", in->instance,
                  "runtime", nullable(in->runtime), "sdk_version", nullable(in->sdk_version),
                  "version", nullable(in->version), "status", nullable(in->status), "last_seen",
                  rt__api_time_json(in->last_seen_ns), "first_seen",
                  rt__api_time_json(in->first_seen_ns), "stale", stale));
    json_t *added = json_array_get(json_object_get(svc, "instances"),
                                   json_array_size(json_object_get(svc, "instances")) - 1);
    json_object_set_new(added, "interval_us", json_null());
    /* an instance of another agent (DESIGN §12): its name, and what RootTrace cannot do */
    bool foreign = in->status && strncmp(in->status, RT__API_FOREIGN, strlen(RT__API_FOREIGN)) == 0;
    json_object_set_new(added, "agent", foreign ? nullable(in->sdk_version) : json_null());
    json_object_set_new(added, "note", foreign ? json_string(RT__API_FOREIGN_NOTE) : json_null());
    json_object_set(sc->by_name, in->instance, added);
    return 0;
}

/* Adds what the control plane knows of an instance: the sampling interval its SDK reports
 * (DESIGN §5) and staleness by the poll interval it was told. */
static int status_cb(void *ud, const struct rt_instance_status *st)
{
    struct services_ctx *sc = ud;
    json_t *inst = json_object_get(sc->by_name, st->instance);
    if (!inst)
        return 0;
    json_object_set_new(inst, "interval_us",
                        st->interval_us > 0 ? json_integer(st->interval_us) : json_null());
    if (st->poll_interval_s > 0)
        json_object_set_new(inst, "stale", json_boolean(sc->now_ns - st->last_seen_ns >
                                                        rt_store_poll_gap_ns(st->poll_interval_s)));
    return 0;
}

static int service_cb(void *ud, const struct rt_service_info *svc)
{
    struct services_ctx *sc = ud;
    json_t *types = json_array();
    if (svc->has_cpu)
        json_array_append_new(types, json_string("cpu"));
    if (svc->has_wall)
        json_array_append_new(types, json_string("wall"));
    json_array_append_new(
        sc->arr, json_pack("{s:s, s:b, s:o, s:o, s:[]}", "name", svc->name, "profiling_enabled",
                           svc->profiling_enabled, "types", types, "last_upload",
                           svc->last_upload_ns ? rt__api_time_json(svc->last_upload_ns)
                                               : json_null(),
                           "instances"));
    return 0;
}

void rt__api_get_services(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                          struct rt_api_resp *resp, const char *arg)
{
    struct rt_error err = {0};
    struct services_ctx sc = {ctx->store, json_array(), NULL, NULL, rt_time_now_ns(),
                              ctx->control ? rt_control_poll_interval_s(ctx->control) : 10};
    /* Services first, then each one's instances: a store callback never calls the store. */
    int rc = rt_store_scan_services(ctx->store, service_cb, &sc, &err);
    for (size_t i = 0; rc >= 0 && i < json_array_size(sc.arr); i++) {
        sc.current = json_array_get(sc.arr, i);
        json_decref(sc.by_name);
        sc.by_name = json_object();
        rc = rt_store_scan_instances(ctx->store,
                                     json_string_value(json_object_get(sc.current, "name")),
                                     instance_cb, &sc, &err);
        if (rc >= 0)
            rc = rt_store_scan_instance_status(
                ctx->store, json_string_value(json_object_get(sc.current, "name")), status_cb,
                &sc, &err);
    }
    json_decref(sc.by_name);
    if (rc < 0) {
        json_decref(sc.arr);
        rt__api_error(resp, err.code ? err.code : RT_EIO, "%s", err.msg);
        return;
    }
    rt__api_json(resp, 200, sc.arr);
}
