/* POST /api/v1/profiles: upload of a pprof or folded profile (DESIGN §4). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>

#include "api_util.h"
#include "rt/metrics.h"
#include "rt/producer.h"
#include "rt/timeutil.h"

#define MAX_DURATION_NS (86400 * RT_NS_PER_S)

/* Free bytes on the file system holding dir, or -1 if unknown. */
static int64_t free_bytes(const char *dir)
{
    struct statvfs st;
    if (!dir || statvfs(dir, &st) != 0)
        return -1;
    return (int64_t)st.f_bavail * (int64_t)st.f_frsize;
}

/* Whether media type ct (parameters after ';' ignored, case-insensitive) is name. */
static bool is_media(const char *ct, const char *name)
{
    size_t n = strlen(name);
    if (strncasecmp(ct, name, n) != 0)
        return false;
    ct += n;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* The format a Content-Type declares (docs/decisions.md): text/plain is folded text and the
 * protobuf types are pprof, whatever the body starts with; any other type, or none, leaves
 * the body to be sniffed (application/octet-stream as the SDKs send it; curl's default
 * application/x-www-form-urlencoded). gzip is sniffed in every case (DESIGN §4). */
static enum rt_ingest_format declared_format(const char *ct)
{
    static const char *const pprof[] = {"application/x-protobuf", "application/protobuf",
                                        "application/vnd.google.protobuf"};
    if (!ct)
        return RT_FMT_AUTO;
    if (is_media(ct, "text/plain"))
        return RT_FMT_FOLDED;
    for (size_t i = 0; i < sizeof(pprof) / sizeof(pprof[0]); i++)
        if (is_media(ct, pprof[i]))
            return RT_FMT_PPROF;
    return RT_FMT_AUTO;
}

/* Reads the upload's query parameters into params; fills resp and returns -1 on a bad one. */
static int read_params(const struct rt_api_req *req, struct rt_api_resp *resp,
                       struct rt_ingest_params *p)
{
    rt_ingest_params_init(p);
    if (!(p->service = rt__api_need(req, resp, "service")))
        return -1;
    p->instance = rt_api_param(req, "instance");
    p->runtime = rt_api_param(req, "runtime");
    p->runtime_version = rt_api_param(req, "runtime_version");
    p->sdk_version = rt_api_param(req, "sdk_version");
    p->version = rt_api_param(req, "version"); /* "version=" is none, as SDKs send it */
    p->profile_id = rt_api_param(req, "profile_id");
    p->type = rt_api_param(req, "type");
    p->unit = rt_api_param(req, "unit");
    enum rt_ptype pt;
    if (p->type && !rt_ptype_parse(p->type, &pt)) {
        rt__api_error(resp, RT_EINVAL, "type must be 'cpu' or 'wall', got '%.64s'", p->type);
        return -1;
    }
    if (!rt__api_valid_name(resp, "service", p->service) ||
        (p->instance && !rt__api_valid_name(resp, "instance", p->instance)) ||
        (p->version && !rt__api_valid_version(resp, p->version)))
        return -1;
    const char *texts[] = {p->runtime, p->runtime_version, p->sdk_version, p->profile_id};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i] && strlen(texts[i]) > 200) {
            rt__api_error(resp, RT_EINVAL, "runtime, versions and profile_id are at most 200 "
                                           "bytes");
            return -1;
        }
    if (rt__api_int(req, resp, "period_ns", 1, INT64_MAX, &p->period_ns) ||
        rt__api_time(req, resp, "start", &p->start_ns) ||
        rt__api_seconds(req, resp, "duration_s", &p->duration_ns) ||
        rt__api_int(req, resp, "thread_cpu_ns", 0, INT64_MAX, &p->thread_cpu_ns) ||
        rt__api_int(req, resp, "process_cpu_ns", 0, INT64_MAX, &p->process_cpu_ns))
        return -1;
    p->format = declared_format(req->content_type);
    return 0;
}

/* Bounds the profiles' times (docs/decisions.md): a duration over MAX_DURATION_NS is refused
 * (one such profile would widen every later window scan); a profile that says nothing of its
 * start is taken to have ended at its arrival; one that ended before the retention horizon
 * is refused rather than acknowledged and then deleted; one starting in the future (beyond
 * clock skew) is refused, and so is a start beyond +-RT_TIME_LIMIT_NS (a pprof's time_nanos
 * near 2^63 overflowed the retention check). Returns -1 with resp filled. */
static int check_times(const struct rt_api_ctx *ctx, struct rt_profile **ps, size_t n,
                       struct rt_api_resp *resp)
{
    int64_t now = rt_time_now_ns();
    for (size_t i = 0; i < n; i++) {
        int64_t dur = ps[i]->duration_ns > 0 ? ps[i]->duration_ns : 0;
        if (ps[i]->duration_ns > MAX_DURATION_NS) {
            rt__api_error(resp, RT_EINVAL, "profile duration %.0f s exceeds the limit of 24 h",
                          (double)ps[i]->duration_ns / 1e9);
            return -1;
        }
        if (ps[i]->time_ns == 0)
            ps[i]->time_ns = now - dur;
        if (ps[i]->time_ns < -RT_TIME_LIMIT_NS || ps[i]->time_ns > RT_TIME_LIMIT_NS) {
            rt__api_error(resp, RT_EINVAL,
                          "profile start %lld ns (time_nanos) is out of range: give start= to "
                          "re-time it", (long long)ps[i]->time_ns);
            return -1;
        }
        if (ctx->retention_ns > 0 && ps[i]->time_ns + dur < now - ctx->retention_ns) {
            char at[RT_TIME_BUFSZ];
            rt__api_error(resp, RT_EINVAL,
                          "profile ended at %s, before the retention horizon (%.0f days): it "
                          "would be deleted; give start= to re-time it or raise --retention",
                          rt_time_format(ps[i]->time_ns + dur, at),
                          (double)ctx->retention_ns / 86400e9);
            return -1;
        }
        if (ps[i]->time_ns > now + RT__API_MAX_SKEW_NS) {
            rt__api_error(resp, RT_EINVAL, "profile starts more than 1 h in the future");
            return -1;
        }
    }
    return 0;
}

int rt__api_upload_admit(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         const char *service, struct rt_api_resp *resp)
{
    /* An SDK's upload for a service whose profiling is off: the SDK drops it and stops
     * (DESIGN §4). An admin's upload of files is accepted whatever the toggle. */
    if (req->who && req->who->scope == RT_SCOPE_INGEST && ctx->control &&
        !rt_control_profiling_enabled(ctx->control, service)) {
        rt__api_error(resp, RT_ECONFLICT,
                      "profiling is off for service '%.200s': turn it on from the UI; the SDK "
                      "drops this profile and stops profiling", service);
        return -1;
    }
    if (req->body_len > ctx->limits.max_compressed) {
        rt__api_error(resp, RT_ETOOBIG, "body of %zu bytes exceeds the limit of %zu bytes",
                      req->body_len, ctx->limits.max_compressed);
        return -1;
    }
    int64_t avail = free_bytes(ctx->data_dir);
    if (avail >= 0 && avail < ctx->min_free_bytes + (int64_t)req->body_len * 4) {
        rt__api_error(resp, RT_EDISKFULL,
                      "disk nearly full (%lld bytes free): upload refused, nothing stored",
                      (long long)avail);
        return -1;
    }
    return 0;
}

int rt__api_upload_store(struct rt_api_ctx *ctx, struct rt_profile **ps, size_t n,
                         struct rt_store_put_result *res, struct rt_api_resp *resp)
{
    struct rt_error err = {0};
    if (check_times(ctx, ps, n, resp))
        return -1;
    int rc = rt_store_put_profiles(ctx->store, ps, n, res, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (res[i].conflict) {
            rt__api_error(resp, RT_ECONFLICT,
                          "profile_id '%.100s' is stored for this instance with other content "
                          "(another start, duration or stacks): a retry resends the same "
                          "profile; this one was not stored", ps[i]->profile_id);
            return -1;
        }
    return 0;
}

json_t *rt__api_upload_list(struct rt_profile *const *ps, const struct rt_store_put_result *res,
                            size_t n, unsigned *added)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "%lld", (long long)res[i].id);
        *added += !res[i].duplicate;
        /* a retry answers with what is stored, not with what it sent (the same, once hashed) */
        json_t *o = json_pack("{s:s, s:s, s:f, s:I, s:b, s:b}", "id", id, "type",
                              rt_ptype_name(ps[i]->type), "samples", res[i].samples, "value_ns",
                              (json_int_t)res[i].value_ns, "duplicate", res[i].duplicate,
                              "truncated_stacks", ps[i]->truncated_stacks > 0);
        if (o && ps[i]->declared_type)
            json_object_set_new(o, "declared_type",
                                json_string(rt_ptype_name(ps[i]->declared_type)));
        if (o)
            json_object_set_new(o, "agent", json_string(rt_producer_agent(ps[i]->producer)));
        json_array_append_new(list, o);
    }
    return list;
}

void rt__api_upload_answer(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                           struct rt_api_resp *resp, const char *service,
                           struct rt_profile *const *ps, const struct rt_store_put_result *res,
                           size_t n, const struct rt_ingest_report *report)
{
    unsigned added = 0;
    json_t *list = rt__api_upload_list(ps, res, n, &added);
    json_t *first = json_array_get(list, 0);
    json_t *o = json_pack("{s:O, s:s, s:O, s:O, s:O, s:o}", "id", json_object_get(first, "id"),
                          "service", service, "type", json_object_get(first, "type"),
                          "samples", json_object_get(first, "samples"), "duplicate",
                          json_object_get(first, "duplicate"), "profiles", list);
    if (o && report && report->skipped[0])
        json_object_set_new(o, "skipped", json_string(report->skipped));
    rt__api_json(resp, added ? 201 : 200, o);
    if (ctx->metrics)
        rt_metrics_upload(ctx->metrics, req->body_len, added);
}

void rt__api_post_profiles(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                           struct rt_api_resp *resp, const char *arg)
{
    struct rt_ingest_params params;
    struct rt_error err = {0};
    struct rt_profile *ps[2] = {NULL, NULL};
    size_t n = 0;

    if (read_params(req, resp, &params) || rt__api_upload_admit(ctx, req, params.service, resp))
        return;
    int rc = rt_ingest_parse(req->body, req->body_len, &params, &ctx->limits, ps, &n, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg[0] ? err.msg : rt_strerror(rc));
        return;
    }
    struct rt_store_put_result res[2];
    if (rt__api_upload_store(ctx, ps, n, res, resp) == 0)
        rt__api_upload_answer(ctx, req, resp, params.service, ps, res, n, NULL);
    for (size_t i = 0; i < n; i++)
        rt_profile_free(ps[i]);
}
