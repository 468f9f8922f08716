/* The v1 API as transport-free handlers (DESIGN §11): the HTTP server adapts libmicrohttpd
 * requests to struct rt_api_req, and the CLI calls the same handlers in-process on --data,
 * so both answer with the same JSON. */
#ifndef RT_API_H
#define RT_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"
#include "rt/control.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/store.h"

struct rt_metrics;
struct rt_sessions;

/* What every handler shares; owned by the server (or the CLI), borrowed by handlers. */
struct rt_api_ctx {
    struct rt_store *store;
    struct rt_control *control;       /* keys, toggles, SDK config (DESIGN §5, §9) */
    bool trusted;                     /* the CLI on the data directory: no token needed */
    struct rt_metrics *metrics;       /* may be NULL (CLI) */
    struct rt_ingest_limits limits;   /* DESIGN §4 */
    const char *data_dir;             /* for the free-space check; NULL = skip it */
    int64_t min_free_bytes;           /* uploads get 507 below this much free disk */
    int64_t upload_interval_ns;       /* default SDK upload interval, for issue windows */
    int64_t retention_ns;             /* uploads that ended before now - this are refused; 0 = none */
    struct rt_sessions *sessions;     /* UI sign-in sessions (the server's); NULL = none (CLI) */
    int64_t alert_lead_ns;            /* an alert's issue starts this much before startsAt */
    char alert_service_labels[256];   /* labels naming an alert's service, comma-separated */
};

struct rt_api_param {
    const char *key, *value;
};

/* One request, borrowed by the handler for the call. */
struct rt_api_req {
    const char *method;               /* "GET", "POST", ... */
    const char *path;                 /* "/api/v1/profiles" (no query string) */
    const struct rt_api_param *params;
    size_t nparams;
    const char *content_type;         /* may be NULL */
    const void *body;
    size_t body_len;
    const char *authorization;        /* the Authorization header, or NULL */
    const char *cookie;               /* the Cookie header (UI session), or NULL */
    const char *csrf_token;           /* the X-CSRF-Token header, or NULL */
    const char *forwarded_proto;      /* X-Forwarded-Proto ("https" behind a TLS proxy), or NULL */
    const char *peer;                 /* the client's address ("127.0.0.1"), or NULL (CLI) */
    bool no_hold;                     /* answer now: the transport cannot (or did) hold it */
    bool text_tail;                   /* the transport writes rt_api_resp.json_tail (HTTP) */
    const struct rt_principal *who;   /* set by rt_api_dispatch for the handlers */
};

/* One response: JSON (json set) or raw bytes (raw set, with content_type). */
struct rt_api_resp {
    int status;                       /* HTTP status */
    json_t *json;                     /* owned by the response */
    /* Members appended to the object json as JSON text (`"flamegraph":{...}`), written by the
     * answers only when the request's text_tail is set; rt_json_out writes them last. */
    struct rt_buf json_tail;
    char *raw;                        /* owned, malloc'd */
    size_t raw_len;
    const char *content_type;         /* static string */
    const char *refusal;              /* static error name for metrics when status >= 400 */
    char etag[20];                    /* ETag header to send, or "" */
    char set_cookie[160];             /* Set-Cookie header to send (sessions), or "" */
    /* A config poll to hold (DESIGN §5): status is 0 and the transport answers it again
     * with no_hold when the service's config changes or after hold_ns. */
    int64_t hold_ns;
    char hold_service[201];
};

/* The labels that name an alert's service, in order, unless told otherwise (DESIGN §13). */
#define RT_API_ALERT_SERVICE_LABELS "service,service_name,job"

/* Fills ctx with defaults (limits of DESIGN §4, 16 MiB free-disk reserve, 60 s upload
 * interval) for store and control (both borrowed). */
void rt_api_ctx_init(struct rt_api_ctx *ctx, struct rt_store *store, struct rt_control *control);

/* Authenticates req (401 without a valid key unless ctx->trusted; 403 when the key's scope
 * does not cover the route, docs/control-plane.md) by its bearer key or else its UI session
 * cookie (a cookie request other than GET needs the session's X-CSRF-Token, 403 otherwise;
 * the /api/v1/session routes authenticate themselves), routes it to its handler and fills resp
 * (404 for unknown routes, 405 for a known path with another method). Never fails
 * otherwise: errors become {"error": code, "message": ...} with the status of
 * rt_http_status_from_err. */
void rt_api_dispatch(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                     struct rt_api_resp *resp);

/* Whether routes of this method read a body: POST, PUT and PATCH do; GET and DELETE never do. */
bool rt_api_method_reads_body(const char *method);

/* The most body bytes (RT_API_SESSION_BODY_MAX for sign-in, POST /api/v1/session, else
 * ctx->limits.max_compressed) the transport should keep for req, judged from its method,
 * path, query parameters, Authorization, Cookie and X-CSRF-Token before the body arrives; 0
 * when req will be refused whatever its body (unknown route, other method, no valid key or
 * session, a cookie request without its CSRF token, a key beyond its scope or bound to
 * another service: the 401 and 403 of rt_api_dispatch) or reads none (every GET and
 * DELETE), so that a client without the right credentials makes the server hold none of
 * its body: it is read and dropped. A POST or PUT allowed 0 is refused whatever its body. */
#define RT_API_SESSION_BODY_MAX 4096
size_t rt_api_body_allowance(struct rt_api_ctx *ctx, const struct rt_api_req *req);

/* Whether req, judged like rt_api_body_allowance, goes to a route that scans profile windows
 * (GET /api/v1/profile, /timeline, /diff, /export and /issues/{id}/diff) and will be let
 * through by rt_api_dispatch (its key or session allows it): the requests the transport
 * makes take turns (docs/decisions.md "Queries take turns"). A request that will be refused
 * is not one: its 401 or 403 costs nothing worth a turn. */
bool rt_api_scans(struct rt_api_ctx *ctx, const struct rt_api_req *req);

/* Frees what resp owns and resets it. */
void rt_api_resp_cleanup(struct rt_api_resp *resp);

/* The one place an error code becomes an HTTP status (STYLE.md). */
int rt_http_status_from_err(int code);

/* The value of query parameter key, or NULL when it is absent or empty: every parameter is
 * optional in the same way, so "profile_id=", "version=", "instance=" or "limit=" mean what
 * leaving them out means (a client that always sends the parameter changes nothing; an empty
 * profile_id is no id, never one that every later upload would share). */
const char *rt_api_param(const struct rt_api_req *req, const char *key);

#endif
