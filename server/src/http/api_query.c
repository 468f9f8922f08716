/* Query routes: GET /api/v1/profile, /api/v1/timeline, /api/v1/diff, /api/v1/issues/{id}/diff and
 * /api/v1/export (DESIGN §6, §7, §11). */
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "rt/export.h"
#include "rt/metrics.h"
#include "rt/query.h"
#include "rt/timeutil.h"

#define DEFAULT_SPAN_NS (3600 * RT_NS_PER_S)
#define MIN_WINDOW_NS (60 * RT_NS_PER_S)
#define MAX_WINDOW_NS (86400 * RT_NS_PER_S)

/* Reads [from, to) (defaults: the last hour) into *from, *to; -1 with resp filled on error. */
static int read_range(const struct rt_api_req *req, struct rt_api_resp *resp, int64_t *from,
                      int64_t *to)
{
    *to = rt_time_now_ns();
    *from = INT64_MIN;
    if (rt__api_time(req, resp, "to", to) || rt__api_time(req, resp, "from", from))
        return -1;
    if (*from == INT64_MIN)
        *from = *to - DEFAULT_SPAN_NS;
    if (*from >= *to) {
        rt__api_error(resp, RT_EINVAL, "'from' must be before 'to'");
        return -1;
    }
    return 0;
}

static int read_limit(const struct rt_api_req *req, struct rt_api_resp *resp, size_t *limit)
{
    int64_t v = RT_QUERY_DEFAULT_LIMIT;
    if (rt__api_int(req, resp, "limit", 1, 1000000, &v))
        return -1;
    *limit = (size_t)v;
    return 0;
}

/* Where a query writes its flame graph as text (rt_query_profile_req.flamegraph_text): tail
 * when the transport writes rt_api_resp.json_tail (HTTP), else NULL (in the answer: the CLI
 * in-process). tail is initialized either way; answer() takes it. */
static struct rt_buf *flame_tail(const struct rt_api_req *req, struct rt_buf *tail)
{
    rt_buf_init(tail, 0);
    return req->text_tail ? tail : NULL;
}

/* Sends a query answer, or the error it failed with, and times it for /metrics. The members
 * the query wrote as text (tail, or NULL) go with the answer, or are dropped with it. */
static void answer(struct rt_api_ctx *ctx, struct rt_api_resp *resp, json_t *j,
                   struct rt_buf *tail, const struct rt_error *err, const char *kind, int64_t t0)
{
    if (!j) {
        if (tail)
            rt_buf_cleanup(tail);
        rt__api_error(resp, err->code ? err->code : RT_EIO, "%s", err->msg);
        return;
    }
    rt__api_json(resp, 200, j);
    if (tail) {
        resp->json_tail = *tail; /* moved */
        rt_buf_init(tail, 0);
    }
    if (ctx->metrics)
        rt_metrics_query(ctx->metrics, kind, rt_time_mono_ns() - t0);
}

void rt__api_get_profile(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *arg)
{
    struct rt_query_profile_req q = {0};
    struct rt_error err = {0};
    int64_t t0 = rt_time_mono_ns();
    if (!(q.service = rt__api_need(req, resp, "service")) || rt__api_type(req, resp, &q.type) ||
        read_range(req, resp, &q.from_ns, &q.to_ns) || read_limit(req, resp, &q.limit))
        return;
    q.version = rt_api_param(req, "version");
    q.instance = rt_api_param(req, "instance");
    struct rt_buf tail;
    q.flamegraph_text = flame_tail(req, &tail);
    answer(ctx, resp, rt_query_profile(ctx->store, &q, &err), &tail, &err, "profile", t0);
}

/* GET /api/v1/timeline?service=&type=&from=&to=&buckets=N (1..1000, default 30)&version=
 * &instance=: samples over time, rt_query_timeline's answer; 400 on a bad parameter. */
void rt__api_get_timeline(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                          struct rt_api_resp *resp, const char *arg)
{
    (void)arg;
    struct rt_query_timeline_req q = {0};
    struct rt_error err = {0};
    int64_t t0 = rt_time_mono_ns(), n = 30;
    if (!(q.service = rt__api_need(req, resp, "service")) || rt__api_type(req, resp, &q.type) ||
        read_range(req, resp, &q.from_ns, &q.to_ns) ||
        rt__api_int(req, resp, "buckets", 1, RT_QUERY_TIMELINE_MAX_BUCKETS, &n))
        return;
    q.buckets = (size_t)n;
    q.version = rt_api_param(req, "version");
    q.instance = rt_api_param(req, "instance");
    /* timed with the window queries in /metrics (kind "profile") */
    answer(ctx, resp, rt_query_timeline(ctx->store, &q, &err), NULL, &err, "profile", t0);
}

/* The upload interval of service's SDKs: its override, else the default. Uploads still in
 * flight end the issue view's current window (DESIGN §6). */
static int64_t upload_interval_ns(struct rt_api_ctx *ctx, const char *service)
{
    struct rt_service_config cfg = {0};
    if (ctx->control)
        rt_control_service_config(ctx->control, service, &cfg);
    return cfg.upload_interval_s > 0 ? cfg.upload_interval_s * RT_NS_PER_S
                                     : ctx->upload_interval_ns;
}

/* Reads the diff filters shared by both diff routes into q. */
static void read_diff_filters(const struct rt_api_req *req, struct rt_query_diff_req *q)
{
    q->version = rt_api_param(req, "version");
    q->instance = rt_api_param(req, "instance");
    q->base_version = rt_api_param(req, "base_version");
    q->cur_version = rt_api_param(req, "cur_version");
}

/* window_s parameter: 0 when absent, else checked against [60 s, 24 h] (DESIGN §6). */
static int read_window(const struct rt_api_req *req, struct rt_api_resp *resp, int64_t *w)
{
    *w = 0;
    if (rt__api_seconds(req, resp, "window_s", w))
        return -1;
    if (*w && (*w < MIN_WINDOW_NS || *w > MAX_WINDOW_NS)) {
        rt__api_error(resp, RT_EINVAL, "window_s must be between 60 s and 24 h");
        return -1;
    }
    return 0;
}

void rt__api_get_diff(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                      struct rt_api_resp *resp, const char *arg)
{
    struct rt_query_diff_req q = {0};
    struct rt_error err = {0};
    int64_t t0 = rt_time_mono_ns(), at = INT64_MIN, window = 0;
    if (!(q.service = rt__api_need(req, resp, "service")) || rt__api_type(req, resp, &q.type) ||
        read_limit(req, resp, &q.limit) || rt__api_time(req, resp, "at", &at) ||
        read_window(req, resp, &window))
        return;
    read_diff_filters(req, &q);
    if (at != INT64_MIN) {
        if (rt_query_issue_windows(at, 0, rt_time_now_ns(), window,
                                   upload_interval_ns(ctx, q.service), &q,
                                   &err)) {
            rt__api_error(resp, err.code, "%s", err.msg);
            return;
        }
    } else {
        q.base_from_ns = q.base_to_ns = q.cur_from_ns = q.cur_to_ns = INT64_MIN;
        if (rt__api_time(req, resp, "base_from", &q.base_from_ns) ||
            rt__api_time(req, resp, "base_to", &q.base_to_ns) ||
            rt__api_time(req, resp, "cur_from", &q.cur_from_ns) ||
            rt__api_time(req, resp, "cur_to", &q.cur_to_ns))
            return;
        if (q.base_from_ns == INT64_MIN || q.base_to_ns == INT64_MIN ||
            q.cur_from_ns == INT64_MIN || q.cur_to_ns == INT64_MIN) {
            rt__api_error(resp, RT_EINVAL,
                          "give 'at' (and optionally 'window_s'), or all four of base_from, "
                          "base_to, cur_from, cur_to");
            return;
        }
        if (q.base_from_ns >= q.base_to_ns || q.cur_from_ns >= q.cur_to_ns) {
            rt__api_error(resp, RT_EINVAL, "each window's start must be before its end");
            return;
        }
    }
    struct rt_buf tail;
    q.flamegraph_text = flame_tail(req, &tail);
    answer(ctx, resp, rt_query_diff(ctx->store, &q, &err), &tail, &err, "diff", t0);
}

/* The type to diff an issue by: type=, else cpu when the service has cpu profiles. */
struct type_pick {
    const char *service;
    bool has_cpu, has_wall;
};

static int pick_cb(void *ud, const struct rt_service_info *svc)
{
    struct type_pick *tp = ud;
    if (strcmp(svc->name, tp->service) == 0) {
        tp->has_cpu = svc->has_cpu;
        tp->has_wall = svc->has_wall;
    }
    return 0;
}

void rt__api_get_issue_diff(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                            struct rt_api_resp *resp, const char *id)
{
    struct rt_query_diff_req q = {0};
    struct rt_error err = {0};
    int64_t t0 = rt_time_mono_ns(), window = 0, started = 0, ended = 0;
    json_t *issue = rt__api_issue_json(ctx->store, id, &started, &ended, &err);
    if (!issue) {
        rt__api_error(resp, err.code, "%s", err.msg);
        return;
    }
    q.service = json_string_value(json_object_get(issue, "service"));
    const char *type = rt_api_param(req, "type");
    if (type) {
        if (rt__api_type(req, resp, &q.type))
            goto out_put_issue;
    } else {
        struct type_pick tp = {q.service, false, false};
        rt_store_scan_services(ctx->store, pick_cb, &tp, NULL);
        q.type = tp.has_cpu || !tp.has_wall ? RT_PTYPE_CPU : RT_PTYPE_WALL;
    }
    if (read_limit(req, resp, &q.limit) || read_window(req, resp, &window))
        goto out_put_issue;
    read_diff_filters(req, &q);
    if (rt_query_issue_windows(started, ended, rt_time_now_ns(), window,
                               upload_interval_ns(ctx, q.service), &q,
                               &err)) {
        rt__api_error(resp, err.code, "%s", err.msg);
        goto out_put_issue;
    }
    q.issue = issue;
    struct rt_buf tail;
    q.flamegraph_text = flame_tail(req, &tail);
    answer(ctx, resp, rt_query_diff(ctx->store, &q, &err), &tail, &err, "diff", t0);
out_put_issue:
    json_decref(issue);
}

void rt__api_get_export(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                        struct rt_api_resp *resp, const char *arg)
{
    struct rt_store_filter f = {0};
    struct rt_error err = {0};
    const char *format = rt_api_param(req, "format");
    if (!(f.service = rt__api_need(req, resp, "service")) || rt__api_type(req, resp, &f.type) ||
        read_range(req, resp, &f.from_ns, &f.to_ns))
        return;
    f.version = rt_api_param(req, "version");
    f.instance = rt_api_param(req, "instance");
    if (!format)
        format = "pprof";
    if (strcmp(format, "pprof") && strcmp(format, "folded") && strcmp(format, "speedscope")) {
        rt__api_error(resp, RT_EINVAL, "format must be pprof, folded or speedscope");
        return;
    }
    struct rt_profile *p = rt_query_merge(ctx->store, &f, &err);
    if (!p) {
        rt__api_error(resp, err.code ? err.code : RT_EIO, "%s", err.msg);
        return;
    }
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc;
    if (!strcmp(format, "pprof")) {
        rc = rt_export_pprof(p, &out);
        resp->content_type = "application/octet-stream";
    } else if (!strcmp(format, "folded")) {
        rc = rt_export_folded(p, &out);
        resp->content_type = "text/plain; charset=utf-8";
    } else {
        rc = rt_export_speedscope(p, f.service, &out);
        resp->content_type = "application/json";
    }
    rt_profile_free(p);
    if (rc) {
        rt_buf_cleanup(&out);
        rt__api_error(resp, rc, "export failed: %s", rt_strerror(rc));
        return;
    }
    resp->status = 200;
    resp->raw_len = out.len;
    resp->raw = rt_buf_into_cstr(&out);
}
