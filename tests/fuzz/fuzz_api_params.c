/* Fuzz target: the API's query-parameter parsing, through rt_api_dispatch with a trusted
 * context on a seeded store (api_fixture.h). The first byte picks the route (below; its high
 * bit sets no_hold), the rest is a query string "k=v&k=v..." taken verbatim (no URL
 * decoding), at most 32 parameters. Three keys are not parameters: _path is the "*" segment
 * of the route (default "1"), _cookie the Cookie header, _csrf the X-CSRF-Token header. The
 * routes are the GET routes plus the upload's parameters (POST /api/v1/profiles with an empty
 * body, which is refused after its parameters are read, so nothing is stored). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_fixture.h"

#define MAX_PARAMS 32

static const struct {
    const char *method, *path; /* "%s": the _path value */
} routes[] = {
    {"GET", "/api/v1/profile"},      {"GET", "/api/v1/diff"},
    {"GET", "/api/v1/export"},       {"GET", "/api/v1/issues"},
    {"GET", "/api/v1/issues/%s"},    {"GET", "/api/v1/issues/%s/diff"},
    {"GET", "/api/v1/deploys"},      {"GET", "/api/v1/services"},
    {"GET", "/api/v1/keys"},         {"GET", "/api/v1/audit"},
    {"GET", "/api/v1/sdk/config"},   {"GET", "/api/v1/session"},
    {"POST", "/api/v1/profiles"},    {"GET", "/api/v1/%s"},
    {"GET", "/api/v1/timeline"}, /* appended: the seeds' route bytes keep their routes */
};

FIXTURE_FUZZER_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_input(size))
        return 0;
    uint8_t sel = data[0];
    char *q = malloc(size);
    if (!q)
        return 0;
    memcpy(q, data + 1, size - 1);
    q[size - 1] = '\0';
    struct rt_api_param params[MAX_PARAMS];
    size_t n = 0;
    const char *arg = "1";
    size_t route = (sel & 0x7f) % (sizeof(routes) / sizeof(routes[0]));
    struct rt_api_req req = {.method = routes[route].method, .no_hold = sel & 0x80};
    for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv && n < MAX_PARAMS;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        const char *v = "";
        if (eq) {
            *eq = '\0';
            v = eq + 1;
        }
        if (strcmp(kv, "_path") == 0)
            arg = v;
        else if (strcmp(kv, "_cookie") == 0)
            req.cookie = v;
        else if (strcmp(kv, "_csrf") == 0)
            req.csrf_token = v;
        else
            params[n++] = (struct rt_api_param){kv, v};
    }
    char path[2048];
    snprintf(path, sizeof(path), routes[route].path, arg);
    req.path = path;
    req.params = params;
    req.nparams = n;
    fixture_dispatch(&req);
    /* The poll an SDK config request queued is written now rather than by the writer thread
     * within the second: a run that ends with more allocations than frees makes libFuzzer
     * scan for leaks, which cost 25 ms a run. */
    struct rt_error err = {0};
    rt_control_flush_polls(fx.control, &err);
    free(q);
    return 0;
}
