/* Fuzz target: the JSON bodies of the API's write routes, through rt_api_dispatch with a
 * trusted context on a seeded store (api_fixture.h). The first byte picks the route (below),
 * the rest is the body. After a write that succeeds, the reads that show its effect are
 * dispatched too (the issue's diff, the deploys and a diff at the deploy, the service's SDK
 * config, the key list then the key's revocation, the session by its cookie then sign-out),
 * so what a body stores is also read back. The fixture is rebuilt every FIXTURE_RESET_RUNS
 * runs, which bounds what the writes add to the store. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_fixture.h"

enum route { R_SESSION, R_ISSUE, R_DEPLOY, R_PROFILING_API, R_PROFILING_NEW, R_KEY, R_NROUTES };

static const struct {
    const char *method, *path;
} routes[R_NROUTES] = {
    [R_SESSION] = {"POST", "/api/v1/session"},
    [R_ISSUE] = {"POST", "/api/v1/issues"},
    [R_DEPLOY] = {"POST", "/api/v1/deploys"},
    [R_PROFILING_API] = {"PUT", "/api/v1/services/api/profiling"},
    [R_PROFILING_NEW] = {"PUT", "/api/v1/services/new-svc/profiling"},
    [R_KEY] = {"POST", "/api/v1/keys"},
};

FIXTURE_FUZZER_INITIALIZE()

/* The string member key of resp's JSON, or "". */
static const char *member(const struct rt_api_resp *resp, const char *key)
{
    const char *v = json_string_value(json_object_get(resp->json, key));
    return v ? v : "";
}

/* GETs path with params (a NULL-terminated list of key, value). */
static void get(const char *path, const char *cookie, const char *const *kv)
{
    struct rt_api_param params[8];
    size_t n = 0;
    for (; kv && kv[0] && n < 8; kv += 2)
        params[n++] = (struct rt_api_param){kv[0], kv[1]};
    struct rt_api_req req = {.method = "GET", .path = path, .params = params, .nparams = n,
                             .cookie = cookie, .no_hold = true};
    fixture_dispatch(&req);
}

/* Reads back what a successful write stored. */
static void read_back(enum route r, const struct rt_api_resp *resp)
{
    char path[512], cookie[200];
    switch (r) {
    case R_SESSION: {
        snprintf(cookie, sizeof(cookie), "%.*s", (int)strcspn(resp->set_cookie, ";"),
                 resp->set_cookie);
        get("/api/v1/session", cookie, NULL);
        struct rt_api_req req = {.method = "DELETE", .path = "/api/v1/session",
                                 .cookie = cookie, .csrf_token = member(resp, "csrf_token")};
        struct rt_api_resp out;
        rt_api_dispatch(&fx.ctx, &req, &out);
        rt_api_resp_cleanup(&out);
        break;
    }
    case R_ISSUE:
        snprintf(path, sizeof(path), "/api/v1/issues/%s/diff", member(resp, "id"));
        get(path, NULL, NULL);
        get("/api/v1/issues", NULL,
            (const char *const[]){"service", member(resp, "service"), NULL});
        break;
    case R_DEPLOY:
        get("/api/v1/deploys", NULL,
            (const char *const[]){"service", member(resp, "service"), NULL});
        get("/api/v1/diff", NULL,
            (const char *const[]){"service", member(resp, "service"), "type", "cpu", "at",
                                  member(resp, "at"), NULL});
        break;
    case R_PROFILING_API:
    case R_PROFILING_NEW:
        get("/api/v1/sdk/config", NULL,
            (const char *const[]){"service", r == R_PROFILING_API ? "api" : "new-svc",
                                  "instance", "i-1", NULL});
        get("/api/v1/services", NULL, NULL);
        break;
    case R_KEY: {
        get("/api/v1/keys", NULL, NULL);
        snprintf(path, sizeof(path), "/api/v1/keys/%s", member(resp, "id"));
        struct rt_api_req req = {.method = "DELETE", .path = path};
        struct rt_api_resp out;
        rt_api_dispatch(&fx.ctx, &req, &out);
        rt_api_resp_cleanup(&out);
        break;
    }
    case R_NROUTES:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_input(size))
        return 0;
    enum route r = (enum route)(data[0] % R_NROUTES);
    struct rt_api_req req = {.method = routes[r].method, .path = routes[r].path,
                             .content_type = "application/json", .body = data + 1,
                             .body_len = size - 1, .no_hold = true};
    struct rt_api_resp resp;
    rt_api_dispatch(&fx.ctx, &req, &resp);
    if (resp.status >= 200 && resp.status < 300)
        read_back(r, &resp);
    rt_api_resp_cleanup(&resp);
    return 0;
}
