/* The v1 API as transport-free handlers (DESIGN §11): the HTTP server adapts libmicrohttpd
 * requests to struct rt_api_req, and the CLI calls the same handlers in-process on --data,
 * so both answer with the same JSON. */
#ifndef RT_API_H
#define RT_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/store.h"

struct rt_metrics;

/* What every handler shares; owned by the server (or the CLI), borrowed by handlers. */
struct rt_api_ctx {
    struct rt_store *store;
    struct rt_metrics *metrics;       /* may be NULL (CLI) */
    struct rt_ingest_limits limits;   /* DESIGN §4 */
    const char *data_dir;             /* for the free-space check; NULL = skip it */
    int64_t min_free_bytes;           /* uploads get 507 below this much free disk */
    int64_t upload_interval_ns;       /* default SDK upload interval, for issue windows */
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
};

/* One response: JSON (json set) or raw bytes (raw set, with content_type). */
struct rt_api_resp {
    int status;                       /* HTTP status */
    json_t *json;                     /* owned by the response */
    char *raw;                        /* owned, malloc'd */
    size_t raw_len;
    const char *content_type;         /* static string */
    const char *refusal;              /* static error name for metrics when status >= 400 */
};

/* Fills ctx with defaults (limits of DESIGN §4, 16 MiB free-disk reserve, 60 s upload
 * interval) for store. */
void rt_api_ctx_init(struct rt_api_ctx *ctx, struct rt_store *store);

/* Routes req to its handler and fills resp (status 404 for unknown routes, 405 for a
 * known path with another method). Never fails otherwise: errors become
 * {"error": code, "message": ...} with the status of rt_http_status_from_err. */
void rt_api_dispatch(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                     struct rt_api_resp *resp);

/* Frees what resp owns and resets it. */
void rt_api_resp_cleanup(struct rt_api_resp *resp);

/* The one place an error code becomes an HTTP status (STYLE.md). */
int rt_http_status_from_err(int code);

/* The value of query parameter key, or NULL. */
const char *rt_api_param(const struct rt_api_req *req, const char *key);

#endif
