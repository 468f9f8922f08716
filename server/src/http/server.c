/* libmicrohttpd adapter: request bodies with a limit, query parameters, the request log,
 * /healthz and /metrics, the embedded web UI, and the retention sweeper thread. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt/api.h"
#include "rt/buf.h"
#include "rt/log.h"
#include "rt/metrics.h"
#include "rt/query.h"
#include "rt/server.h"
#include "rt/str.h"
#include "rt/timeutil.h"
#include "api_util.h"
#include "deadline.h"
#include "gate.h"
#include "json_out.h"
#include "net.h"
#include "ui.h"

#define MAX_PARAMS 64
/* Request body buffers past BODY_FREE bytes (a typical profile is 10-100 kB, so SDK uploads
 * almost never count) are bounded, all connections together, by this many bodies of the
 * maximum size (8 x 16 MiB = 128 MiB at the defaults); past it an upload gets 503. */
#define BODY_BUDGET_BODIES 8
#define BODY_FREE ((size_t)256 << 10)
/* How long a stop waits for the requests in flight (docs/decisions.md). */
#define STOP_GRACE_NS (5 * RT_NS_PER_S)

/* A config poll held until its service's config changes or its deadline passes. */
struct waiter {
    struct MHD_Connection *conn;
    char service[201];
    int64_t deadline_ns;       /* monotonic */
};

struct rt_server {
    struct MHD_Daemon *daemon;
    /* Held polls: suspended connections (no thread each), woken by the waker thread. */
    pthread_mutex_t wmu;
    pthread_cond_t wcond;
    struct waiter *waiters;
    size_t nwaiters, cap_waiters;
    bool wstopping;
    pthread_t waker;
    bool waker_started;
    struct rt_api_ctx api;
    struct rt_metrics *metrics;
    uint16_t port;
    int64_t retention_ns;
    pthread_t sweeper;
    int64_t rollup_interval_ns;   /* rt_server_opts.rollup_interval_ns */
    bool sweeper_started;
    bool stopping;             /* guarded by mu */
    atomic_bool draining;      /* rt_server_stop began: requests arriving now get 503 */
    atomic_int inflight;       /* requests begun and not completed */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    size_t body_bytes;         /* body buffers over BODY_FREE allocated now, summed (atomic) */
    size_t body_budget;        /* bound on body_bytes: BODY_BUDGET_BODIES max-size bodies */
    struct rt__deadlines *deadlines; /* cuts slow clients (NULL: none) */
    struct rt__gate *gate;     /* the scan workers (gate.h) */
};

/* A request that scans windows, as its scan worker runs it (rt__gate_run). */
struct scan {
    struct rt__gate_job job;   /* first: the worker's job is the scan */
    struct rt_api_req req;     /* its params point into params, its strings into the
                                  suspended connection's memory */
    struct rt_api_param params[MAX_PARAMS];
    struct rt_api_resp resp;   /* the answer the worker built */
};

/* Per-request state, from the first call of the access handler to completion. */
struct request {
    struct rt_buf body;
    bool too_big;        /* body exceeded the limit; the rest is discarded */
    bool discard;        /* refused whatever its body (rt_api_body_allowance): none is kept */
    bool busy;           /* bodies in flight exceeded the server's bound; the rest discarded */
    size_t accounted;    /* bytes of body.cap counted in rt_server.body_bytes */
    size_t received;     /* body bytes received, kept or discarded */
    int64_t t0;          /* monotonic start */
    int status;
    size_t bytes_out;
    char what[200];      /* "METHOD /path" for the request log */
    bool held;           /* suspended as a held config poll; answer with no_hold on resume */
    bool late;           /* began after the stop began: refused with 503 */
    struct scan *scan;   /* sent to the scan workers, else NULL */
    char peer[INET6_ADDRSTRLEN]; /* the client's address, "-" when unknown */
};

/* Collects one query parameter; stops (so the request is refused) at a key or value that is
 * not clean UTF-8: a NUL from "%00" would otherwise cut the value short unseen. */
static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    struct rt_api_req *req = cls;
    struct rt_api_param *params = (struct rt_api_param *)req->params;
    if (req->nparams >= MAX_PARAMS || !rt_str_is_clean_utf8(key, key_size) ||
        (value && !rt_str_is_clean_utf8(value, value_size))) {
        req->nparams = MAX_PARAMS;
        return MHD_NO;
    }
    params[req->nparams].key = key;
    params[req->nparams].value = value ? value : "";
    req->nparams++;
    return MHD_YES;
}

/* Fills req (method, path, params[MAX_PARAMS], the headers the API reads) from conn. Returns
 * false when the query parameters are refused (collect_param). */
static bool read_request(struct MHD_Connection *conn, const char *method, const char *url,
                         const struct request *r, struct rt_api_param *params,
                         struct rt_api_req *req)
{
    *req = (struct rt_api_req){.method = method, .path = url, .params = params, .peer = r->peer,
                               .text_tail = true}; /* send_api writes json_tail */
    req->content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    req->authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    req->cookie = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie");
    req->csrf_token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-CSRF-Token");
    req->forwarded_proto = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-Proto");
    return MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_param, req) >= 0 &&
           req->nparams < MAX_PARAMS;
}

/* The headers of every answer outside the UI (API, /healthz, /metrics): JSON and text are
 * never rendered, framed, sniffed or cached, whatever a browser is tricked into. */
static void add_api_security_headers(struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
}

/* Queues status with data (copied when copy, else freed by libmicrohttpd); etag and cookie
 * (a Set-Cookie value) may be NULL or "". */
static enum MHD_Result send_bytes(struct MHD_Connection *conn, struct request *r, int status,
                                  const char *ctype, const char *data, size_t len, bool copy,
                                  const char *etag, const char *cookie)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    if (len || status != 304)
        MHD_add_response_header(resp, "Content-Type", ctype);
    if (etag && *etag)
        MHD_add_response_header(resp, "ETag", etag);
    if (cookie && *cookie)
        MHD_add_response_header(resp, "Set-Cookie", cookie);
    add_api_security_headers(resp);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->bytes_out = len;
    return rc;
}

static enum MHD_Result send_api(struct MHD_Connection *conn, struct request *r,
                                struct rt_api_resp *ar)
{
    char *data;
    size_t len;
    const char *ctype = ar->content_type ? ar->content_type : "application/json";
    if (ar->json) {
        struct rt_buf b;
        rt_buf_init(&b, 0);
        if (rt_json_out(ar->json, ar->json_tail.data, ar->json_tail.len, &b)) {
            rt_buf_cleanup(&b);
            return MHD_NO;
        }
        len = b.len;
        data = rt_buf_into_cstr(&b);
    } else if (ar->raw) {
        data = ar->raw;
        len = ar->raw_len;
        ar->raw = NULL;
    } else {
        data = calloc(1, 1); /* no body, e.g. 304 */
        len = 0;
    }
    if (!data)
        return MHD_NO;
    return send_bytes(conn, r, ar->status, ctype, data, len, false, ar->etag, ar->set_cookie);
}

static enum MHD_Result send_text(struct MHD_Connection *conn, struct request *r, int status,
                                 const char *ctype, const char *text)
{
    return send_bytes(conn, r, status, ctype, text, strlen(text), true, NULL, NULL);
}

static enum MHD_Result handle_builtin(struct rt_server *srv, struct MHD_Connection *conn,
                                      struct request *r, const char *url)
{
    if (strcmp(url, "/healthz") == 0) {
        struct rt_error err = {0};
        if (rt_store_ping(srv->api.store, &err) == 0)
            return send_text(conn, r, 200, "application/json", "{\"status\":\"ok\"}");
        /* the node is up and its store is not: a balancer sends its traffic elsewhere */
        json_t *j = json_pack("{s:s, s:s, s:s}", "status", "unavailable", "store", "down",
                              "error", err.msg);
        char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        enum MHD_Result rc = send_text(conn, r, 503, "application/json",
                                       body ? body : "{\"status\":\"unavailable\"}");
        free(body);
        return rc;
    }
    struct rt_buf out;
    rt_buf_init(&out, 0);
    rt_metrics_render(srv->metrics, srv->api.store, srv->api.control, &out);
    size_t waiting;
    unsigned long long waited;
    rt__gate_counts(srv->gate, &waiting, &waited);
    rt_buf_printf(&out, "# HELP roottrace_scans_waiting Queries waiting for a scan worker "
                        "(docs/decisions.md, \"Queries take turns\").\n"
                        "# TYPE roottrace_scans_waiting gauge\nroottrace_scans_waiting %zu\n"
                        "# HELP roottrace_scans_waited_total Queries that found every scan "
                        "worker busy.\n# TYPE roottrace_scans_waited_total counter\n"
                        "roottrace_scans_waited_total %llu\n",
                  waiting, waited);
    size_t len = out.len;
    return send_bytes(conn, r, 200, "text/plain; version=0.0.4", rt_buf_into_cstr(&out), len,
                      false, NULL, NULL);
}

/* GET / and the UI's assets (embedded, static): 404 for any other path outside /api/. */
static enum MHD_Result handle_ui(struct MHD_Connection *conn, struct request *r, const char *url)
{
    const struct rt__ui_asset *a = rt__ui_find(url);
    int status = a ? 200 : 404;
    static const char missing[] = "no such page: the UI is at /\n";
    struct MHD_Response *resp =
        a ? MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT)
          : MHD_create_response_from_buffer(sizeof(missing) - 1, (void *)missing,
                                            MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", a ? a->content_type : "text/plain; charset=utf-8");
    MHD_add_response_header(resp, "Content-Security-Policy", RT_UI_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->bytes_out = a ? a->len : sizeof(missing) - 1;
    return rc;
}

/* Suspends conn as a held poll of service for up to hold_ns. Returns 0, or -1 when it cannot
 * be held (then it is answered at once). */
static int hold(struct rt_server *srv, struct MHD_Connection *conn, const char *service,
                int64_t hold_ns)
{
    pthread_mutex_lock(&srv->wmu);
    int rc = -1;
    if (!srv->wstopping && srv->waker_started) {
        if (srv->nwaiters == srv->cap_waiters) {
            size_t cap = srv->cap_waiters ? srv->cap_waiters * 2 : 64;
            struct waiter *w = realloc(srv->waiters, cap * sizeof(*w));
            if (w) {
                srv->waiters = w;
                srv->cap_waiters = cap;
            }
        }
        if (srv->nwaiters < srv->cap_waiters) {
            struct waiter *w = &srv->waiters[srv->nwaiters++];
            w->conn = conn;
            snprintf(w->service, sizeof(w->service), "%s", service);
            w->deadline_ns = rt_time_mono_ns() + hold_ns;
            MHD_suspend_connection(conn);
            pthread_cond_signal(&srv->wcond);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&srv->wmu);
    return rc;
}

/* Resumes waiter i (its answer is made by on_request); caller holds wmu. */
static void wake(struct rt_server *srv, size_t i)
{
    MHD_resume_connection(srv->waiters[i].conn);
    srv->waiters[i] = srv->waiters[--srv->nwaiters];
}

/* Config change listener: wakes the held polls of service within the second (DESIGN §5). */
static void on_config_change(void *ud, const char *service)
{
    struct rt_server *srv = ud;
    pthread_mutex_lock(&srv->wmu);
    for (size_t i = srv->nwaiters; i-- > 0;)
        if (strcmp(srv->waiters[i].service, service) == 0)
            wake(srv, i);
    pthread_mutex_unlock(&srv->wmu);
}

/* The timer of held polls: wakes each at its deadline; on stop, wakes them all. */
static void *waker(void *arg)
{
    struct rt_server *srv = arg;
    pthread_mutex_lock(&srv->wmu);
    for (;;) {
        int64_t now = rt_time_mono_ns(), next = now + RT_NS_PER_S;
        for (size_t i = srv->nwaiters; i-- > 0;) {
            if (srv->wstopping || srv->waiters[i].deadline_ns <= now)
                wake(srv, i);
            else if (srv->waiters[i].deadline_ns < next)
                next = srv->waiters[i].deadline_ns;
        }
        if (srv->wstopping)
            break;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = (int64_t)until.tv_sec * RT_NS_PER_S + until.tv_nsec + (next - now);
        until.tv_sec = ns / RT_NS_PER_S;
        until.tv_nsec = ns % RT_NS_PER_S;
        pthread_cond_timedwait(&srv->wcond, &srv->wmu, &until);
    }
    pthread_mutex_unlock(&srv->wmu);
    return NULL;
}

/* 413 naming the body limit. */
static enum MHD_Result send_too_large(struct rt_server *srv, struct MHD_Connection *conn,
                                      struct request *r)
{
    char msg[160];
    snprintf(msg, sizeof(msg),
             "{\"error\":\"too_large\",\"message\":\"body exceeds the limit of %zu bytes\"}",
             r->body.limit);
    rt_metrics_refusal(srv->metrics, "too_large");
    return send_text(conn, r, 413, "application/json", msg);
}

/* True when none of r's body is kept: refused whatever it holds, over the body limit, or
 * over the bound on bodies in flight. */
static bool body_dropped(const struct request *r)
{
    return r->discard || r->too_big || r->busy;
}

/* Appends n bytes of r's body, within the body limit (else too_big) and within the bound on
 * the bodies of all requests being received at once (else busy); either way the body is
 * freed and the rest of it discarded. docs/decisions.md "Bodies in flight". */
static void take_body(struct rt_server *srv, struct request *r, const char *data, size_t n)
{
    if (body_dropped(r))
        return;
    if (rt_buf_append(&r->body, data, n) != 0) {
        r->too_big = true;
    } else if (r->body.cap > BODY_FREE && r->body.cap > r->accounted) {
        size_t grown = r->body.cap - r->accounted;
        r->accounted = r->body.cap;
        if (__atomic_add_fetch(&srv->body_bytes, grown, __ATOMIC_RELAXED) > srv->body_budget)
            r->busy = true;
    }
    if (r->too_big || r->busy) {
        __atomic_sub_fetch(&srv->body_bytes, r->accounted, __ATOMIC_RELAXED);
        r->accounted = 0;
        rt_buf_cleanup(&r->body);
    }
}

/* 503: the server is stopping. */
static enum MHD_Result send_stopping(struct rt_server *srv, struct MHD_Connection *conn,
                                     struct request *r)
{
    rt_metrics_refusal(srv->metrics, "unavailable");
    return send_text(conn, r, 503, "application/json",
                     "{\"error\":\"unavailable\",\"message\":\"the server is stopping; "
                     "retry against a running server\"}");
}

/* Runs a scan on a scan worker (rt__gate_run). */
static void run_scan(void *ud, struct rt__gate_job *job)
{
    struct rt_server *srv = ud;
    struct scan *sc = (struct scan *)job;
    rt_api_dispatch(&srv->api, &sc->req, &sc->resp);
}

/* Sends ar, the API's answer to r, and frees it. */
static enum MHD_Result send_answer(struct rt_server *srv, struct MHD_Connection *conn,
                                   struct request *r, struct rt_api_resp *ar)
{
    if (ar->status >= 400 && ar->refusal)
        rt_metrics_refusal(srv->metrics, ar->refusal);
    enum MHD_Result rc = send_api(conn, r, ar);
    rt_api_resp_cleanup(ar);
    return rc;
}

/* Sends r, a request that scans windows (rt_api_scans), to the scan workers; answers it when
 * the gate refuses it. */
static enum MHD_Result submit_scan(struct rt_server *srv, struct MHD_Connection *conn,
                                   struct request *r, const struct rt_api_req *req)
{
    if (!(r->scan = calloc(1, sizeof(*r->scan))))
        return MHD_NO;
    struct scan *sc = r->scan;
    sc->req = *req;
    memcpy(sc->params, req->params, req->nparams * sizeof(sc->params[0]));
    sc->req.params = sc->params;
    /* once queued, the job is the worker's until the connection is resumed: not read here */
    return rt__gate_submit(srv->gate, conn, &sc->job) == 0 ? MHD_YES
                                                           : send_stopping(srv, conn, r);
}

/* Answers r once its body is in (or, refused whatever its body, before it): the refusals
 * the transport makes itself (too big, busy, stopping), /healthz and /metrics, the UI, else
 * the API. */
static enum MHD_Result respond(struct rt_server *srv, struct MHD_Connection *conn,
                               struct request *r, const char *method, const char *url)
{
    rt__deadlines_working(conn);
    if (r->too_big)
        return send_too_large(srv, conn, r);
    if (r->busy) {
        rt_metrics_refusal(srv->metrics, "busy");
        return send_text(conn, r, 503, "application/json",
                         "{\"error\":\"busy\",\"message\":\"too many request bodies are being "
                         "received at once (server-wide memory bound): retry later\"}");
    }
    if (r->late)
        return send_stopping(srv, conn, r);
    if (strcmp(method, "GET") == 0 && (!strcmp(url, "/healthz") || !strcmp(url, "/metrics")))
        return handle_builtin(srv, conn, r, url);
    if ((strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) &&
        strncmp(url, "/api/", 5) != 0)
        return handle_ui(conn, r, url);

    struct rt_api_param params[MAX_PARAMS];
    struct rt_api_req req;
    if (!read_request(conn, method, url, r, params, &req)) {
        rt_metrics_refusal(srv->metrics, "invalid_argument");
        return send_text(conn, r, 400, "application/json",
                         "{\"error\":\"invalid_argument\",\"message\":\"query parameters must be "
                         "at most 63, each valid UTF-8 without control characters (no %00)\"}");
    }
    req.body = r->body.data;
    req.body_len = r->body.len;
    req.no_hold = r->held;
    if (r->scan) /* resumed: by its worker with the answer, or by the stop without one */
        return r->scan->job.state == RT_GATE_DONE ? send_answer(srv, conn, r, &r->scan->resp)
                                                  : send_stopping(srv, conn, r);
    if (rt_api_scans(&srv->api, &req))
        return submit_scan(srv, conn, r, &req);
    struct rt_api_resp ar;
    rt_api_dispatch(&srv->api, &req, &ar);
    if (ar.hold_ns > 0 && hold(srv, conn, ar.hold_service, ar.hold_ns) == 0) {
        r->held = true;
        rt_api_resp_cleanup(&ar);
        return MHD_YES;
    }
    return send_answer(srv, conn, r, &ar);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    struct rt_server *srv = cls;
    struct request *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        /* Credentials first: a request that will be refused anyway has none of its body
         * kept, so a client without a key cannot make the server hold 16 MiB a connection. */
        struct rt_api_param params[MAX_PARAMS];
        struct rt_api_req head;
        rt__http_peer_address(conn, r->peer);
        size_t keep = read_request(conn, method, url, r, params, &head)
                          ? rt_api_body_allowance(&srv->api, &head) : 0;
        r->discard = keep == 0;
        rt_buf_init(&r->body, keep ? keep : 1);
        r->t0 = rt_time_mono_ns();
        rt__http_log_what(r->what, sizeof(r->what), method, url);
        r->late = atomic_load(&srv->draining);
        atomic_fetch_add(&srv->inflight, 1);
        *con_cls = r;
        rt__deadlines_body(conn, 0);
        /* A Content-Length over the limit: nothing of the body is buffered. A client that
         * waits for 100 Continue is answered 413 at once, before it sends the body; any other
         * has its body read and discarded, then the 413: answering first and closing would
         * reset the connection under it, and it would never see why (docs/decisions.md). */
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
        bool waits = expect && strcasecmp(expect, "100-continue") == 0;
        if (!r->discard && cl && strtoull(cl, NULL, 10) > r->body.limit) {
            r->too_big = true;
            if (waits)
                return send_too_large(srv, conn, r);
        }
        /* Likewise a POST or PUT refused whatever its body (allowance 0: no key, a key
         * beyond its scope, ...): its 401, 403 or 404 goes before the body. */
        if (waits && r->discard && rt_api_method_reads_body(method))
            return respond(srv, conn, r, method, url);
        return MHD_YES;
    }
    if (*upload_size) {
        r->received += *upload_size;
        /* A body none of which is kept (refused, too big, over the budget) is read only up
         * to twice the body limit: past that the connection is closed, so a client with no
         * key cannot hold a connection forever by sending an endless body just fast enough
         * for its deadline. An honest client over the limit still gets its 413. */
        if (body_dropped(r) && r->received > 2 * srv->api.limits.max_compressed) {
            rt_metrics_refusal(srv->metrics, "discarded_body_too_long");
            return MHD_NO;
        }
        rt__deadlines_body(conn, r->received);
        take_body(srv, r, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return respond(srv, conn, r, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct rt_server *srv = cls;
    struct request *r = *con_cls;
    if (!r)
        return;
    rt__deadlines_idle(conn);
    rt_metrics_request(srv->metrics, r->status ? r->status : 500);
    rt_log(RT_LOG_INFO, "%s \"%s\" %d %zu bytes in %zu bytes out %.1f ms%s", r->peer, r->what, r->status,
           r->received, r->bytes_out, (double)(rt_time_mono_ns() - r->t0) / 1e6,
           toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
    __atomic_sub_fetch(&srv->body_bytes, r->accounted, __ATOMIC_RELAXED);
    rt_buf_cleanup(&r->body);
    if (r->scan)
        rt_api_resp_cleanup(&r->scan->resp); /* unsent when the connection failed */
    free(r->scan);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&srv->inflight, 1);
}

/* Builds the rollups of the blocks that closed (docs/internals/rollups.md), a few per call of
 * the store, until a call builds none, the server stops, or 30 s have gone (the sweeper's
 * other work then runs; the rest waits for the next interval). */
static void build_rollups(struct rt_server *srv)
{
    int64_t until = rt_time_now_ns() + 30 * RT_NS_PER_S;
    for (;;) {
        pthread_mutex_lock(&srv->mu);
        bool stopping = srv->stopping;
        pthread_mutex_unlock(&srv->mu);
        if (stopping || rt_time_now_ns() > until)
            return;
        struct rt_error err = {0};
        size_t built = 0;
        int rc = rt_query_build_rollups(srv->api.store, rt_time_now_ns(), 4, &built, &err);
        rt_metrics_rollups(srv->metrics, built, rc != 0 && rc != RT_ECANCELED);
        if (rc == RT_ECANCELED || rc == RT_EDISKFULL) {
            if (rc == RT_EDISKFULL)
                rt_log(RT_LOG_WARN, "building rollups stopped: %s", err.msg);
            return;
        }
        if (built == 0)
            return;
    }
}

/* Deletes profiles past retention at start and then hourly, and builds the rollups of closed
 * hours at start and then every rollup interval (unless it is negative: never), until the
 * server stops. */
static void *sweep(void *arg)
{
    struct rt_server *srv = arg;
    int64_t next_retention = 0;
    pthread_mutex_lock(&srv->mu);
    while (!srv->stopping) {
        pthread_mutex_unlock(&srv->mu);
        int64_t now = rt_time_now_ns();
        if (now >= next_retention) {
            struct rt_error err = {0};
            int64_t deleted = 0;
            if (rt_store_retain(srv->api.store, now - srv->retention_ns, &deleted, &err))
                rt_log(RT_LOG_WARN, "retention sweep failed: %s", err.msg);
            else if (deleted)
                rt_log(RT_LOG_INFO, "retention: deleted %lld profiles", (long long)deleted);
            next_retention = now + 3600 * (int64_t)1000000000;
        }
        if (srv->rollup_interval_ns >= 0)
            build_rollups(srv);
        int64_t wait_ns = srv->rollup_interval_ns > 0 ? srv->rollup_interval_ns
                          : srv->rollup_interval_ns == 0 ? 60 * RT_NS_PER_S
                                                         : next_retention - now;
        pthread_mutex_lock(&srv->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_ns / RT_NS_PER_S;
        until.tv_nsec += wait_ns % RT_NS_PER_S;
        if (until.tv_nsec >= RT_NS_PER_S) {
            until.tv_sec++;
            until.tv_nsec -= RT_NS_PER_S;
        }
        while (!srv->stopping && pthread_cond_timedwait(&srv->cond, &srv->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}

/* libmicrohttpd's accept policy: once rt_server_stop began, a new connection is closed at
 * once, unanswered, so that a client tries elsewhere without waiting. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)addr;
    (void)len;
    struct rt_server *srv = cls;
    return atomic_load(&srv->draining) ? MHD_NO : MHD_YES;
}

struct rt_server *rt_server_start(struct rt_store *store, struct rt_control *control,
                                  const struct rt_server_opts *opts, struct rt_error *err)
{
    struct sockaddr_storage ss;
    if (rt__http_parse_listen(opts->listen ? opts->listen : "127.0.0.1:4040", &ss, err))
        return NULL;
    struct rt_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->cond, NULL);
    pthread_mutex_init(&srv->wmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv->wcond, &ca);
    pthread_condattr_destroy(&ca);
    rt_api_ctx_init(&srv->api, store, control);
    srv->api.data_dir = opts->data_dir;
    srv->api.retention_ns = opts->retention_ns;
    srv->api.alert_lead_ns = opts->alert_lead_ns;
    if (opts->alert_service_labels)
        snprintf(srv->api.alert_service_labels, sizeof(srv->api.alert_service_labels), "%s",
                 opts->alert_service_labels);
    srv->api.sessions = rt__sessions_new();
    srv->metrics = rt_metrics_new();
    srv->api.metrics = srv->metrics;
    srv->retention_ns = opts->retention_ns;
    srv->rollup_interval_ns = opts->rollup_interval_ns;
    srv->body_budget = BODY_BUDGET_BODIES * (srv->api.limits.max_compressed + 1);
    /* As many scan workers as cores; the HTTP threads as many again plus 4 (they only send
     * the scans' answers): docs/decisions.md "Queries take turns". */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned workers = cores < 1 ? 1 : cores > 64 ? 64 : (unsigned)cores;
    unsigned threads = opts->threads ? opts->threads : workers + 4;
    if (!(srv->gate = rt__gate_new(workers, run_scan, srv))) {
        rt_error_set(err, RT_ENOMEM, "cannot start the scan workers");
        rt_server_stop(srv);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    srv->deadlines = rt__deadlines_new();
    srv->daemon = MHD_start_daemon(
        flags, 0, accept_policy, srv, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, 120u,
        MHD_OPTION_CONNECTION_LIMIT, 4096u, MHD_OPTION_NOTIFY_CONNECTION,
        rt__deadlines_notify, srv->deadlines, MHD_OPTION_END);
    if (!srv->daemon) {
        rt_error_set(err, RT_EIO, "cannot listen on %s (address in use or not permitted)",
                     opts->listen ? opts->listen : "127.0.0.1:4040");
        rt_server_stop(srv);
        return NULL;
    }
    if (pthread_create(&srv->waker, NULL, waker, srv) == 0)
        srv->waker_started = true;
    if (control)
        rt_control_on_change(control, on_config_change, srv);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : 0;
    if (srv->retention_ns > 0 && pthread_create(&srv->sweeper, NULL, sweep, srv) == 0)
        srv->sweeper_started = true;
    return srv;
}

uint16_t rt_server_port(const struct rt_server *srv)
{
    return srv->port;
}

/* Waits until no request is in flight, or STOP_GRACE_NS. */
static void drain(struct rt_server *srv)
{
    int64_t deadline = rt_time_mono_ns() + STOP_GRACE_NS;
    while (atomic_load(&srv->inflight) > 0 && rt_time_mono_ns() < deadline)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    int left = atomic_load(&srv->inflight);
    if (left > 0)
        rt_log(RT_LOG_WARN, "stopping with %d requests still in flight after %lld s", left,
               (long long)(STOP_GRACE_NS / RT_NS_PER_S));
}

void rt_server_stop(struct rt_server *srv)
{
    if (!srv)
        return;
    /* Stop accepting (accept_policy closes new connections from now on); queries stop at
     * their next profile (503); uploads and the rest finish (docs/decisions.md). Not
     * MHD_quiesce_daemon: with epoll and a thread pool it races the workers and aborts the
     * process in libmicrohttpd 0.9.75 (tests/unit/http/test_server_stop.c). */
    if (srv->daemon) {
        atomic_store(&srv->draining, true);
        rt_store_cancel_reads(srv->api.store);
    }
    if (srv->api.control)
        rt_control_on_change(srv->api.control, NULL, NULL);
    /* Every held poll is resumed before the daemon stops (libmicrohttpd requires it). */
    pthread_mutex_lock(&srv->wmu);
    srv->wstopping = true;
    pthread_cond_signal(&srv->wcond);
    pthread_mutex_unlock(&srv->wmu);
    if (srv->waker_started)
        pthread_join(srv->waker, NULL);
    /* likewise every query waiting for a scan worker; the running ones end (reads cancelled) */
    rt__gate_stop(srv->gate);
    if (srv->daemon) {
        drain(srv);
        MHD_stop_daemon(srv->daemon);
    }
    rt__deadlines_free(srv->deadlines);
    rt__gate_free(srv->gate);
    free(srv->waiters);
    pthread_cond_destroy(&srv->wcond);
    pthread_mutex_destroy(&srv->wmu);
    pthread_mutex_lock(&srv->mu);
    srv->stopping = true;
    pthread_cond_broadcast(&srv->cond);
    pthread_mutex_unlock(&srv->mu);
    if (srv->sweeper_started)
        pthread_join(srv->sweeper, NULL);
    rt_metrics_free(srv->metrics);
    rt__sessions_free(srv->api.sessions);
    pthread_cond_destroy(&srv->cond);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}
