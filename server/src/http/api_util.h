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

/* Reads a required string parameter; on absence fills resp with 400 and returns NULL. */
const char *rt__api_need(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key);

/* Reads a time parameter (RFC 3339 or Unix seconds) into *ns; absent leaves *ns alone and
 * returns 0; malformed fills resp with 400 and returns -1. */
int rt__api_time(const struct rt_api_req *req, struct rt_api_resp *resp, const char *key,
                 int64_t *ns);

/* Reads a decimal integer parameter into *v in [min, max]; like rt__api_time otherwise. */
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

/* RFC 3339 string of ns as a new JSON string. */
json_t *rt__api_time_json(int64_t ns);

/* A JSON body parsed as an object; on failure fills resp with 400 and returns NULL. */
json_t *rt__api_body_object(const struct rt_api_req *req, struct rt_api_resp *resp);

/* Reads a time from a JSON value (RFC 3339 string or Unix seconds number). Returns 0 or -1. */
int rt__api_json_time(json_t *v, int64_t *ns);

/* A route's handler; arg is the path's "*" segment (an id, a service name) or "". */
typedef void (*rt__api_handler)(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                                struct rt_api_resp *resp, const char *arg);

/* Handlers, one group per file: api_profiles.c, api_query.c, api_meta.c, api_control.c. */
void rt__api_post_profiles(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
                           const char *);
void rt__api_get_profile(struct rt_api_ctx *, const struct rt_api_req *, struct rt_api_resp *,
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

/* Parses a positive decimal id from a path segment; 0 if it is not one. */
int64_t rt__api_path_id(const char *arg);

/* The issue with this id as its API object ({"id", "service", "title", "started_at",
 * "created_at"}), or NULL with err set (RT_ENOTFOUND). *started_ns receives its start. */
json_t *rt__api_issue_json(struct rt_store *s, int64_t id, int64_t *started_ns,
                           struct rt_error *err);

#endif
