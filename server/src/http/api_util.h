/* Helpers shared by the API handlers of http/ (module-internal). */
#ifndef RT_HTTP_API_UTIL_H
#define RT_HTTP_API_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt/api.h"
#include "rt/err.h"
#include "rt/profile.h"

/* Sets resp to the error {"error": rt_err_name(code), "message": msg}. */
void rt__api_error(struct rt_api_resp *resp, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets resp to status with json (takes ownership of json). */
void rt__api_json(struct rt_api_resp *resp, int status, json_t *json);

/* How far ahead of this server's clock a time the API is given may lie (clock skew between
 * hosts; docs/decisions.md): a profile's start, an issue's start. Beyond it, a 400. */
#define RT__API_MAX_SKEW_NS (3600LL * 1000000000LL)

/* Reads a required string parameter; on absence fills resp with 400 and returns NULL. */
const char *rt__api_need(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key);

/* Reads a time parameter (RFC 3339 or Unix seconds) into *ns; absent leaves *ns alone and
 * returns 0; malformed fills resp with 400 and returns -1. */
int rt__api_time(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                 int64_t *ns);

/* Parses s as a decimal int64 in canonical form: an optional '-', then digits without a
 * leading zero ("0" itself is fine); no '+', spaces or anything after. Returns 0, or -1 for
 * anything else or a value outside int64 (strtoll would clamp it silently). */
int rt__api_parse_int(const char *s, int64_t *v);

/* Reads a decimal integer parameter (rt__api_parse_int) into *v in [min, max]; like
 * rt__api_time otherwise. */
int rt__api_int(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                int64_t min, int64_t max, int64_t *v);

/* Reads seconds (decimal, or a duration such as "10m") into *ns; like rt__api_time otherwise. */
int rt__api_seconds(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                    int64_t *ns);

/* Reads type=cpu|wall (required) into *t; fills resp with 400 and returns -1 otherwise. */
int rt__api_type(const struct rt_api_req *req, struct rt_api_resp *resp, enum rt_ptype *t);

/* Checks a service or instance name (1-200 bytes of UTF-8, no control character, no '/':
 * a name must fit a path segment of PUT /api/v1/services/{name}/profiling). On a bad one
 * fills resp with 400 naming what (e.g. "service") and returns false. */
bool rt__api_valid_name(struct rt_api_resp *resp, const char *what, const char *name);

/* Whether version (a service's release: an upload's `version`, a deploy's) is 1..200 bytes
 * of UTF-8 without control characters ('/' allowed: "release/2.1"); else resp is a 400. */
bool rt__api_valid_version(struct rt_api_resp *resp, const char *version);

/* RFC 3339 string of ns as a new JSON string. */
json_t *rt__api_time_json(int64_t ns);

/* A JSON body parsed as an object; on failure fills resp with 400 and returns NULL. */
json_t *rt__api_body_object(const struct rt_api_req *req, struct rt_api_resp *resp);

/* Reads a time from a JSON value (RFC 3339 string or Unix seconds number) within
 * +-RT_TIME_LIMIT_NS. Returns 0 or -1. */
int rt__api_json_time(json_t *v, int64_t *ns);

/* A route's handler; arg is the path's "*" segment (an id, a service name) or "". */
typedef void (*rt__api_handler)(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                                struct rt_api_resp *resp, const char *arg);

/* Handlers, one group per file: api_profiles.c, api_query.c, api_meta.c, api_control.c. */
/* ---- The steps of an upload, shared by POST /api/v1/profiles and Pyroscope's routes ---- */

/* Whether req may upload to service now (DESIGN §4): an ingest key's upload to a service whose
 * profiling is off is 409 naming the toggle; a body over the limit 413; a nearly full disk
 * 507. Returns 0, or -1 with resp filled. */
int rt__api_upload_admit(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         const char *service, struct rt_api_resp *resp);

/* Checks the profiles' times (duration <= 24 h, start within range, after the retention
 * horizon, not in the future; a profile that says nothing of its start ended at its arrival)
 * and stores ps[0..n) durably (res[i] for each). Returns 0, or -1 with resp filled (400, a
 * store error, or 409 for a profile_id stored with other content: nothing stored). */
int rt__api_upload_store(struct rt_api_ctx *ctx, struct rt_profile **ps, size_t n,
                         struct rt_store_put_result *res, struct rt_api_resp *resp);

/* [{"id", "type", "samples", "value_ns", "duplicate", "truncated_stacks", "agent",
 * "declared_type"?}] of stored profiles; *added counts those not duplicates. */
json_t *rt__api_upload_list(struct rt_profile *const *ps, const struct rt_store_put_result *res,
                            size_t n, unsigned *added);

/* The answer of an upload (DESIGN §11): 201 {"id", "service", "type", "samples", "duplicate",
 * "profiles": rt__api_upload_list, "skipped"?}, or 200 when every profile was a retry of a
 * stored one; counts it in the metrics. report may be NULL. */
void rt__api_upload_answer(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                           struct rt_api_resp *resp, const char *service,
                           struct rt_profile *const *ps, const struct rt_store_put_result *res,
                           size_t n, const struct rt_ingest_report *report);

/* Whether an ingest key bound to one service may send service (DESIGN §9, §12): true for
 * unbound keys and admins; else false with a 403 in resp. For the routes whose service is not
 * the query's service= (Pyroscope's: in name= or in the body). */
bool rt__api_may_send(const struct rt_api_req *req, struct rt_api_resp *resp,
                      const char *service);

/* The status of an instance that another agent registered by its uploads ("foreign:
 * pyroscope-go"), and what GET /api/v1/services says of such an instance (DESIGN §12). */
#define RT__API_FOREIGN "foreign: "
#define RT__API_FOREIGN_NOTE                                                                   \
    "sent by another agent: RootTrace cannot stop its sampling; while profiling is off for "   \
    "the service its uploads are refused (409), and it keeps sampling"

/* POST /ingest: Pyroscope's legacy upload (DESIGN §12, docs/agents.md). */
void rt__api_post_ingest(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                         const char *);
/* POST /push.v1.PusherService/Push: Pyroscope's Connect unary push (DESIGN §12). */
void rt__api_post_push(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                       const char *);

void rt__api_post_profiles(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                           const char *);
void rt__api_get_profile(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                         const char *);
void rt__api_get_timeline(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                          const char *);
void rt__api_get_diff(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                      const char *);
void rt__api_get_issue_diff(struct rt_api_ctx *, const struct rt_api_req *,
                            struct rt_api_resp *, const char *id);
void rt__api_get_export(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                        const char *);
void rt__api_post_issue(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                        const char *);
void rt__api_get_issues(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                        const char *);
/* POST /api/v1/alerts/alertmanager and /api/v1/alerts/grafana (DESIGN §13, docs/alerts.md):
 * each alert of the payload opens or touches its episode's issue, queued; answers 200 {"alerts",
 * "accepted", "refused", "unmatched"}, 400 malformed or mistyped, 413 over 1 MiB, 503 when the
 * queue is full. */
void rt__api_post_alertmanager(struct rt_api_ctx *, const struct rt_api_req *,
                               struct rt_api_resp *, const char *);
void rt__api_post_grafana(struct rt_api_ctx *, const struct rt_api_req *,
                          struct rt_api_resp *, const char *);
void rt__api_patch_issue(struct rt_api_ctx *, const struct rt_api_req *,
                         struct rt_api_resp *, const char *);
void rt__api_get_issue(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                       const char *id);
void rt__api_post_deploy(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                         const char *);
void rt__api_get_deploys(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                         const char *);
void rt__api_get_services(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                          const char *);
void rt__api_put_profiling(struct rt_api_ctx *, const struct rt_api_req *,
                           struct rt_api_resp *, const char *service);
void rt__api_get_sdk_config(struct rt_api_ctx *, const struct rt_api_req *,
                            struct rt_api_resp *, const char *);
void rt__api_get_keys(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                      const char *);
void rt__api_post_key(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                      const char *);
void rt__api_delete_key(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                        const char *id);
void rt__api_get_audit(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                       const char *);

/* UI sessions (session.c, DESIGN §9): in memory, 12 h each, at most 1,024 at once. */
#define RT_SESSION_HEX 65              /* 256 random bits as hex, plus the NUL */
#define RT_SESSION_LIFETIME_S 43200    /* a session ends 12 h after sign-in */
#define RT_SESSION_COOKIE "rt_session"
#define RT_SESSION_CSRF_MSG \
    "a request signed in by cookie that changes something must send the session's " \
    "X-CSRF-Token header (from POST or GET /api/v1/session)"

/* A new, empty session table; NULL when out of memory. Free with rt__sessions_free. */
struct rt_sessions *rt__sessions_new(void);

/* Frees s (accepts NULL), wiping what it held. */
void rt__sessions_free(struct rt_sessions *s);

/* Opens a session for token (an admin or read key the caller has checked): writes its cookie
 * id and CSRF token (64 hex digits each) and its end (wall clock, ns). When the table is
 * full the session nearest its end is dropped. RT_EINVAL for a key over 255 bytes. */
int rt__sessions_create(struct rt_sessions *s, const char *token, char id[RT_SESSION_HEX],
                        char csrf[RT_SESSION_HEX], int64_t *expires_ns);

/* The principal of session id, re-authenticating its key with control (a revoked key, or one
 * no longer admin or read, ends the session), its CSRF token and end. false when there is no
 * such live session. */
bool rt__sessions_lookup(struct rt_sessions *s, struct rt_control *control, const char *id,
                         struct rt_principal *who, char csrf[RT_SESSION_HEX],
                         int64_t *expires_ns);

/* Ends session id, if it exists. */
void rt__sessions_delete(struct rt_sessions *s, const char *id);

/* The session id of a Cookie header (the rt_session cookie), copied into out; NULL if none. */
const char *rt__session_cookie(const char *cookie_header, char out[RT_SESSION_HEX]);

/* Does req carry X-CSRF-Token equal to csrf (constant-time)? */
bool rt__session_csrf_ok(const struct rt_api_req *req, const char csrf[RT_SESSION_HEX]);

void rt__api_post_session(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                          const char *);
void rt__api_get_session(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                         const char *);
void rt__api_delete_session(struct rt_api_ctx *, const struct rt_api_req *,
                            struct rt_api_resp *, const char *);

/* Parses a positive decimal id from a path segment; 0 if it is not one. */
int64_t rt__api_path_id(const char *arg);

/* The issue whose id is the path segment id_text as its API object ({"id", "service",
 * "title", "started_at", "created_at", "ended_at", "state", "source", "alert"}), or NULL with
 * err set (RT_ENOTFOUND, also when id_text is not a canonical positive integer). *started_ns
 * and *ended_ns (0: open) receive its start and end. */
json_t *rt__api_issue_json(struct rt_store *s, const char *id_text, int64_t *started_ns,
                           int64_t *ended_ns, struct rt_error *err);

#endif
