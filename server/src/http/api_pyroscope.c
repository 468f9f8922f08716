/* The routes Pyroscope's agents send to (DESIGN §12): the legacy POST /ingest and the
 * Connect unary POST /push.v1.PusherService/Push. Each upload names its service, instance,
 * version and agent in Pyroscope's own way; from there it is an upload like any other
 * (api_profiles.c's steps), under the same toggle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_util.h"
#include "rt/metrics.h"
#include "rt/producer.h"
#include "rt/timeutil.h"

/* Most parts a multipart /ingest body may have (profile, prev_profile, sample_type_config,
 * jfr, labels: a few). */
#define MAX_PARTS 8

/* Labels that name an instance, in order of preference. pyroscope-go's __session_id__ is
 * made anew by each process: as good as an instance for liveness. */
static const char *const INSTANCE_LABELS[] = {"instance", "pod", "hostname", "__session_id__"};
#define NINSTANCE_LABELS (sizeof(INSTANCE_LABELS) / sizeof(INSTANCE_LABELS[0]))

/* What one upload from an agent says of itself, once read from its route's own form. */
struct agent_upload {
    const char *service, *instance, *version, *spy;
    const struct rt_producer *producer; /* for the registration of its instance */
};

bool rt__api_may_send(const struct rt_api_req *req, struct rt_api_resp *resp,
                      const char *service)
{
    if (!req->who || !req->who->service[0] || strcmp(req->who->service, service) == 0)
        return true;
    rt__api_json(resp, 403,
                 json_pack("{s:s, s:s}", "error", "forbidden", "message",
                           "this ingest key is bound to another service"));
    resp->refusal = "forbidden";
    return false;
}

/* Registers the agent's instance (DESIGN §12: shown with the agent's name, whether or not its
 * uploads are stored) as a poll would, so that it is listed and its liveness counts; stale
 * after three of its upload periods (period_ns, at least a second). */
static void register_instance(struct rt_api_ctx *ctx, const struct agent_upload *u,
                              int64_t period_ns)
{
    if (!ctx->control)
        return;
    char status[160];
    snprintf(status, sizeof(status), RT__API_FOREIGN "%s", rt_producer_agent(u->producer));
    struct rt_poll p = {0};
    p.service = u->service;
    p.instance = u->instance;
    p.runtime = u->producer->runtime;
    p.sdk_version = rt_producer_agent(u->producer);
    p.version = u->version;
    p.status = status;
    p.poll_interval_s = period_ns >= RT_NS_PER_S ? period_ns / RT_NS_PER_S : 1;
    p.at_ns = rt_time_now_ns();
    rt_control_record_poll(ctx->control, &p);
}

/* Refuses an agent's upload to a service whose profiling is off (DESIGN §12: 409 naming the
 * toggle, after its instance is registered); returns true when refused. Admin keys upload
 * whatever the toggle, as on /api/v1/profiles. */
static bool refused_off(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                        struct rt_api_resp *resp, const struct agent_upload *u)
{
    if (!req->who || req->who->scope != RT_SCOPE_INGEST || !ctx->control ||
        rt_control_profiling_enabled(ctx->control, u->service))
        return false;
    rt__api_error(resp, RT_ECONFLICT,
                  "profiling is off for service '%.200s': turn it on from RootTrace's UI "
                  "(Services, its toggle). RootTrace cannot stop %s's own sampling; its "
                  "uploads are refused until then",
                  u->service, rt_producer_agent(u->producer));
    return true;
}

/* The instance an upload names: the first of INSTANCE_LABELS found by label(ud, key), else
 * the connection's source address (docs/agents.md), else "unknown". */
static const char *instance_of(const char *(*label)(const void *, const char *), const void *ud,
                               const struct rt_api_req *req)
{
    for (size_t i = 0; i < NINSTANCE_LABELS; i++) {
        const char *v = label(ud, INSTANCE_LABELS[i]);
        if (v && *v)
            return v;
    }
    return req->peer && strcmp(req->peer, "-") != 0 ? req->peer : "unknown";
}

/* Validates the names an upload gave (as /api/v1/profiles does its parameters). */
static bool valid_names(struct rt_api_resp *resp, const struct agent_upload *u)
{
    return rt__api_valid_name(resp, "service", u->service) &&
           rt__api_valid_name(resp, "instance", u->instance) &&
           (!u->version || rt__api_valid_version(resp, u->version));
}

/* ---- POST /ingest ---- */

static const char *name_label(const void *ud, const char *key)
{
    return rt_ingest_pyroscope_label(ud, key);
}

/* The format= of /ingest: folded (the default), lines, pprof or jfr; a multipart body is pprof
 * (pyroscope-go sends no format) unless it carries a jfr part. */
static int ingest_format(const struct rt_api_req *req, struct rt_api_resp *resp,
                         enum rt_ingest_format *fmt)
{
    const char *f = rt_api_param(req, "format");
    static const struct {
        const char *name;
        enum rt_ingest_format fmt;
    } formats[] = {{"folded", RT_FMT_FOLDED}, {"trie", RT_FMT_AUTO}, {"tree", RT_FMT_AUTO},
                   {"lines", RT_FMT_LINES},   {"pprof", RT_FMT_PPROF}, {"jfr", RT_FMT_JFR}};
    *fmt = rt_ingest_is_multipart(req->content_type) ? RT_FMT_PPROF : RT_FMT_FOLDED;
    if (!f)
        return 0;
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        if (strcmp(f, formats[i].name) == 0 && formats[i].fmt != RT_FMT_AUTO) {
            *fmt = formats[i].fmt;
            return 0;
        }
    rt__api_error(resp, RT_EFORMAT,
                  "format=%.40s is not accepted: folded, lines, pprof or jfr (Pyroscope's trie "
                  "and tree formats are not)", f);
    return -1;
}

/* The type a profile of /ingest declares, from its name's kind, units= and aggregationType=
 * (DESIGN §2: only cpu and wall time are stored): *want 0 when nothing says (a pprof or JFR
 * declares its own). Returns 0, or -1 with a 422 naming what is refused. */
static int ingest_type(const struct rt_api_req *req, struct rt_api_resp *resp,
                       const struct rt_ingest_pyroscope_name *n, enum rt_ptype *want)
{
    const char *units = rt_api_param(req, "units");
    const char *agg = rt_api_param(req, "aggregationType");
    *want = n->type;
    if (n->has_kind && !n->type) {
        rt__api_error(resp, RT_ETYPE,
                      "'%.32s' profiles are not stored: RootTrace keeps CPU and wall-clock time "
                      "only (heap, allocations, locks and goroutines are refused)", n->kind);
        return -1;
    }
    if (units && strcmp(units, "samples") != 0 && strcmp(units, "nanoseconds") != 0) {
        rt__api_error(resp, RT_ETYPE,
                      "units=%.32s: RootTrace keeps CPU and wall-clock time only (samples or "
                      "nanoseconds)", units);
        return -1;
    }
    if (agg && strcmp(agg, "sum") != 0) {
        rt__api_error(resp, RT_ETYPE,
                      "aggregationType=%.32s: only profiles whose values add up (sum) are "
                      "time profiles", agg);
        return -1;
    }
    return 0;
}

/* The profile's bytes: the whole body, or a multipart body's jfr part (format jfr) or profile
 * part. prev_profile (a previous cumulative heap profile) and sample_type_config (how to read
 * heap types) serve kinds RootTrace refuses; labels (JFR context labels) are not kept. */
static int ingest_body(const struct rt_api_req *req, struct rt_api_resp *resp,
                       enum rt_ingest_format *fmt, const void **body, size_t *len)
{
    *body = req->body;
    *len = req->body_len;
    if (!rt_ingest_is_multipart(req->content_type))
        return 0;
    struct rt_ingest_part parts[MAX_PARTS];
    size_t n = 0;
    struct rt_error err = {0};
    int rc = rt_ingest_multipart(req->content_type, req->body, req->body_len, parts, MAX_PARTS,
                                 &n, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg);
        return -1;
    }
    const struct rt_ingest_part *p = rt_ingest_part_named(parts, n, "jfr");
    if (p)
        *fmt = RT_FMT_JFR;
    else
        p = rt_ingest_part_named(parts, n, "profile");
    if (!p) {
        rt__api_error(resp, RT_EMALFORMED,
                      "a multipart upload carries its profile in a part named \"profile\" (or "
                      "\"jfr\")");
        return -1;
    }
    *body = p->data;
    *len = p->len;
    return 0;
}

/* from= and until= (DESIGN §12): the profile's start and duration. */
static int ingest_times(const struct rt_api_req *req, struct rt_api_resp *resp,
                        struct rt_ingest_params *p)
{
    const char *from = rt_api_param(req, "from"), *until = rt_api_param(req, "until");
    int64_t f = 0, u = 0;
    if ((from && rt_ingest_pyroscope_time(from, &f)) ||
        (until && rt_ingest_pyroscope_time(until, &u))) {
        rt__api_error(resp, RT_EINVAL,
                      "from= and until= are Unix times in seconds, milliseconds, microseconds "
                      "or nanoseconds (10, 13, 16 or 19 digits)");
        return -1;
    }
    if (from && until && u < f) {
        rt__api_error(resp, RT_EINVAL, "until= is before from=");
        return -1;
    }
    p->start_ns = f;
    if (from && until)
        p->duration_ns = u - f;
    return 0;
}

/* sampleRate= (Hz) as the period of a folded or JFR profile. */
static int ingest_rate(const struct rt_api_req *req, struct rt_api_resp *resp,
                       struct rt_ingest_params *p)
{
    int64_t hz = 100; /* Pyroscope's default */
    if (rt__api_int(req, resp, "sampleRate", 1, 1000000000, &hz))
        return -1;
    p->period_ns = RT_NS_PER_S / hz;
    p->unit = "samples";
    return 0;
}

void rt__api_post_ingest(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *arg)
{
    const char *name = rt__api_need(req, resp, "name");
    struct rt_ingest_pyroscope_name n;
    struct rt_error err = {0};
    if (!name)
        return;
    if (rt_ingest_pyroscope_name(name, &n, &err)) {
        rt__api_error(resp, RT_EINVAL, "%s", err.msg);
        return;
    }
    struct rt_ingest_params params;
    rt_ingest_params_init(&params);
    enum rt_ptype want;
    const void *body;
    size_t len;
    if (ingest_format(req, resp, &params.format) || ingest_type(req, resp, &n, &want) ||
        ingest_times(req, resp, &params) || ingest_rate(req, resp, &params) ||
        ingest_body(req, resp, &params.format, &body, &len))
        return;
    params.spy = rt_api_param(req, "spyName");
    struct agent_upload u = {n.service, instance_of(name_label, &n, req),
                             rt_ingest_pyroscope_label(&n, "version"), params.spy,
                             rt_producer_of_agent(params.spy, want ? want : RT_PTYPE_CPU)};
    if (!valid_names(resp, &u) || !rt__api_may_send(req, resp, u.service))
        return;
    register_instance(ctx, &u, params.duration_ns);
    if (refused_off(ctx, req, resp, &u) || rt__api_upload_admit(ctx, req, u.service, resp))
        return;
    params.service = u.service;
    params.instance = u.instance;
    params.version = u.version;
    params.type = want ? rt_ptype_name(want) : NULL;
    /* the legacy API has no profile id: an upload's instance, start and end name it, so that
     * an agent's retry is stored once (and other content under them is a 409) */
    char pid[96];
    snprintf(pid, sizeof(pid), "ingest-%lld-%lld", (long long)params.start_ns,
             (long long)params.duration_ns);
    params.profile_id = params.start_ns ? pid : NULL;
    struct rt_ingest_report report;
    params.report = &report;
    struct rt_profile *ps[2] = {NULL, NULL};
    size_t np = 0;
    int rc = rt_ingest_parse(body, len, &params, &ctx->limits, ps, &np, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg[0] ? err.msg : rt_strerror(rc));
        return;
    }
    struct rt_store_put_result res[2];
    if (rt__api_upload_store(ctx, ps, np, res, resp) == 0) {
        rt__api_upload_answer(ctx, req, resp, u.service, ps, res, np, &report);
        resp->status = 200; /* pyroscope-go logs any other status as a failed upload */
    }
    for (size_t i = 0; i < np; i++)
        rt_profile_free(ps[i]);
}

/* ---- POST /push.v1.PusherService/Push (Connect unary) ---- */

static const char *push_label(const void *ud, const char *key)
{
    return rt_ingest_push_label(ud, key);
}

/* Connect's error code for an HTTP status (connectrpc.com/docs/protocol, "Error codes"), put
 * beside RootTrace's own {"error", "message"} so that a Connect client reads it. */
static void connect_error(struct rt_api_resp *resp)
{
    static const struct {
        int status;
        const char *code;
    } codes[] = {{400, "invalid_argument"},  {401, "unauthenticated"},
                 {403, "permission_denied"}, {404, "not_found"},
                 {409, "failed_precondition"}, {413, "resource_exhausted"},
                 {415, "invalid_argument"},  {422, "invalid_argument"},
                 {503, "unavailable"},       {507, "resource_exhausted"}};
    const char *code = "internal";
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (codes[i].status == resp->status)
            code = codes[i].code;
    if (json_is_object(resp->json))
        json_object_set_new(resp->json, "code", json_string(code));
}

/* A series' upload: its names, and whether it is refused (reason, status) before parsing. */
struct push_series {
    struct agent_upload u;
    enum rt_ptype want;       /* the type its __name__ declares; 0: as the pprof declares */
    int refused;              /* 0, or the status refusing it (409 off, 422 not time) */
};

/* Reads series s's names (service_name, instance labels, version, pyroscope_spy) and what its
 * __name__ declares. Returns 0, or -1 with resp filled (a name that is missing or invalid, or
 * a key bound to another service: the push is refused whole). */
static int push_series_read(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                            struct rt_api_resp *resp, const struct rt_ingest_push_series *s,
                            size_t i, struct push_series *ps)
{
    memset(ps, 0, sizeof(*ps));
    ps->u.service = rt_ingest_push_label(s, "service_name");
    if (!ps->u.service) {
        rt__api_error(resp, RT_EINVAL, "series %zu has no service_name label", i);
        return -1;
    }
    ps->u.instance = instance_of(push_label, s, req);
    ps->u.version = rt_ingest_push_label(s, "version");
    /* the agent: a pyroscope_spy label, else the otel.scope.name every Pyroscope SDK sends */
    ps->u.spy = rt_ingest_push_label(s, "pyroscope_spy");
    if (!ps->u.spy)
        ps->u.spy = rt_producer_of_otel_scope(rt_ingest_push_label(s, "otel.scope.name"), 0)->spy;
    const char *kind = rt_ingest_push_label(s, "__name__");
    int known = kind ? rt_ingest_pyroscope_kind(kind, strlen(kind), &ps->want) : 0;
    ps->u.producer = rt_producer_of_agent(ps->u.spy, ps->want ? ps->want : RT_PTYPE_CPU);
    if (!valid_names(resp, &ps->u) || !rt__api_may_send(req, resp, ps->u.service))
        return -1;
    struct rt_api_resp off = {0};
    if (known < 0)
        ps->refused = 422;
    else if (refused_off(ctx, req, &off, &ps->u))
        ps->refused = 409;
    rt_api_resp_cleanup(&off);
    return 0;
}

/* Parses sample k of series s into ps[*n..] (profile_id its ID). Returns 0 or -1 with resp. */
static int push_sample(struct rt_api_ctx *ctx, struct rt_api_resp *resp,
                       const struct push_series *sr, const struct rt_ingest_push_sample *smp,
                       struct rt_profile **ps, size_t *n)
{
    struct rt_ingest_params params;
    rt_ingest_params_init(&params);
    params.service = sr->u.service;
    params.instance = sr->u.instance;
    params.version = sr->u.version;
    params.spy = sr->u.spy;
    params.profile_id = smp->id;
    params.type = sr->want ? rt_ptype_name(sr->want) : NULL;
    params.format = RT_FMT_PPROF;
    if (smp->id && strlen(smp->id) > 200) {
        rt__api_error(resp, RT_EINVAL, "a sample's ID is at most 200 bytes");
        return -1;
    }
    struct rt_error err = {0};
    size_t got = 0;
    int rc = rt_ingest_parse(smp->raw, smp->len, &params, &ctx->limits, ps + *n, &got, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg[0] ? err.msg : rt_strerror(rc));
        return -1;
    }
    *n += got;
    return 0;
}

/* Answers a stored push as Connect expects a PushResponse: an empty message in the request's
 * codec (proto: no bytes; JSON: {}). */
static void push_answer(struct rt_api_resp *resp, bool json)
{
    resp->status = 200;
    resp->content_type = json ? "application/json" : "application/proto";
    if (json)
        rt__api_json(resp, 200, json_object());
}

/* The push after decoding: every series read, every sample parsed, then one store of all. */
static void push_store(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                       struct rt_api_resp *resp, const struct rt_ingest_push *push, bool json)
{
    struct push_series *sr = calloc(push->nseries ? push->nseries : 1, sizeof(*sr));
    struct rt_profile **ps = calloc(2 * push->nsamples + 1, sizeof(*ps));
    struct rt_store_put_result *res = calloc(2 * push->nsamples + 1, sizeof(*res));
    size_t n = 0;
    int first_refusal = 0;
    int rc = sr && ps && res ? 0 : -1;
    if (rc)
        rt__api_error(resp, RT_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < push->nseries; i++) {
        rc = push_series_read(ctx, req, resp, &push->series[i], i, &sr[i]);
        if (!rc)
            register_instance(ctx, &sr[i].u, 15 * RT_NS_PER_S);
        if (!rc && sr[i].refused && !first_refusal)
            first_refusal = (int)i + 1;
        for (size_t k = 0; !rc && !sr[i].refused && k < push->series[i].nsamples; k++)
            rc = push_sample(ctx, resp, &sr[i], &push->series[i].samples[k], ps, &n);
    }
    if (!rc && n == 0 && first_refusal) {
        struct push_series *f = &sr[first_refusal - 1];
        if (f->refused == 409)
            refused_off(ctx, req, resp, &f->u);
        else
            rt__api_error(resp, RT_ETYPE,
                          "'%.40s' profiles are not stored: RootTrace keeps CPU and wall-clock "
                          "time only", rt_ingest_push_label(&push->series[first_refusal - 1],
                                                            "__name__"));
    } else if (!rc && (n == 0 || (rt__api_upload_admit(ctx, req, sr[0].u.service, resp) == 0 &&
                                  rt__api_upload_store(ctx, ps, n, res, resp) == 0))) {
        unsigned added = 0;
        json_decref(rt__api_upload_list(ps, res, n, &added));
        push_answer(resp, json);
        if (ctx->metrics)
            rt_metrics_upload(ctx->metrics, req->body_len, added);
    }
    for (size_t i = 0; i < n; i++)
        rt_profile_free(ps[i]);
    free(res);
    free(ps);
    free(sr);
}

void rt__api_post_push(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                       struct rt_api_resp *resp, const char *arg)
{
    const char *ct = req->content_type ? req->content_type : "";
    bool json = strncasecmp(ct, "application/json", 16) == 0;
    if (!json && strncasecmp(ct, "application/proto", 17) != 0) {
        rt__api_error(resp, RT_EFORMAT,
                      "Push takes Connect's unary codecs: Content-Type application/proto or "
                      "application/json");
        connect_error(resp);
        return;
    }
    struct rt_ingest_push push;
    struct rt_error err = {0};
    int rc = rt_ingest_push_decode(req->body, req->body_len, json, &ctx->limits, &push, &err);
    if (rc) {
        rt__api_error(resp, rc, "%s", err.msg);
        connect_error(resp);
        return;
    }
    push_store(ctx, req, resp, &push, json);
    rt_ingest_push_free(&push);
    if (resp->status >= 400)
        connect_error(resp);
}
