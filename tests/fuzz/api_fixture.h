/* The API fuzz targets' fixture: a trusted API context on a SQLite store in a temporary
 * directory, with a control plane, a session table and a bootstrap admin key, seeded through
 * rt_api_dispatch itself with profiles of two services (cpu and wall, two versions, in the
 * last hour), an issue and a deploy, so the query routes do real work. fixture_tick() rebuilds
 * it from scratch every FIXTURE_RESET_RUNS executions so writes cannot grow it without bound.
 * The directory is removed at exit. */
#ifndef RT_FUZZ_API_FIXTURE_H
#define RT_FUZZ_API_FIXTURE_H

#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api_util.h"
#include "rt/api.h"
#include "rt/timeutil.h"

#define FIXTURE_RESET_RUNS 5000
#define FIXTURE_ADMIN_TOKEN "rt-fuzz-admin-token-0123456789abcdef"

static struct {
    char dir[64];
    struct rt_store *store;
    struct rt_control *control;
    struct rt_sessions *sessions;
    struct rt_api_ctx ctx;
    unsigned long runs;
} fx;

/* Dispatches req with the fixture's context and frees the answer; returns its status. */
static int fixture_dispatch(const struct rt_api_req *req)
{
    struct rt_api_resp resp;
    rt_api_dispatch(&fx.ctx, req, &resp);
    int status = resp.status;
    rt_api_resp_cleanup(&resp);
    return status;
}

/* Dispatches one request with the fixture's context and frees the answer; returns its
 * status. */
static int fixture_call(const char *method, const char *path, const struct rt_api_param *params,
                        size_t nparams, const char *content_type, const char *body)
{
    struct rt_api_req req = {.method = method, .path = path, .params = params,
                             .nparams = nparams, .content_type = content_type, .body = body,
                             .body_len = body ? strlen(body) : 0, .no_hold = true};
    return fixture_dispatch(&req);
}

/* Uploads folded stacks (nanoseconds) of service/type/version, started ago_s seconds ago. */
static void fixture_upload(const char *service, const char *type, const char *version,
                           int64_t ago_s, const char *folded)
{
    char start[32];
    snprintf(start, sizeof(start), "%lld", (long long)(rt_time_now_ns() / RT_NS_PER_S - ago_s));
    const struct rt_api_param p[] = {
        {"service", service}, {"type", type}, {"version", version}, {"instance", "i-1"},
        {"unit", "nanoseconds"}, {"start", start}, {"duration_s", "60"}};
    int st = fixture_call("POST", "/api/v1/profiles", p, sizeof(p) / sizeof(p[0]), "text/plain",
                          folded);
    if (st != 201 && st != 200) {
        fprintf(stderr, "fuzz fixture: seeding upload failed with %d\n", st);
        abort();
    }
}

static void fixture_seed(void)
{
    static const char *const v1 = "main;serve;handle;parse 30000000\n"
                                  "main;serve;handle;render 20000000\n"
                                  "main;gc 5000000\n";
    static const char *const v2 = "main;serve;handle;parse 60000000\n"
                                  "main;serve;handle;render 10000000\n"
                                  "main;serve;log 8000000\n";
    fixture_upload("api", "cpu", "v1", 900, v1);
    fixture_upload("api", "wall", "v1", 900, v1);
    fixture_upload("api", "cpu", "v2", 300, v2);
    fixture_upload("api", "wall", "v2", 300, v2);
    fixture_upload("web", "cpu", "1.0", 600, v1);
    char body[160];
    long long now_s = (long long)(rt_time_now_ns() / RT_NS_PER_S);
    snprintf(body, sizeof(body), "{\"service\":\"api\",\"title\":\"slow\",\"started_at\":%lld}",
             now_s - 300);
    fixture_call("POST", "/api/v1/issues", NULL, 0, "application/json", body);
    snprintf(body, sizeof(body), "{\"service\":\"api\",\"version\":\"v2\",\"at\":%lld}",
             now_s - 300);
    fixture_call("POST", "/api/v1/deploys", NULL, 0, "application/json", body);
}

static int fixture_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void fixture_close(void)
{
    rt_control_free(fx.control);
    rt_store_free(fx.store);
    rt__sessions_free(fx.sessions);
    fx.control = NULL;
    fx.store = NULL;
    fx.sessions = NULL;
    if (fx.dir[0])
        nftw(fx.dir, fixture_rm, 16, FTW_DEPTH | FTW_PHYS);
    fx.dir[0] = '\0';
}

static void fixture_open(void)
{
    struct rt_error err = {0};
    snprintf(fx.dir, sizeof(fx.dir), "/tmp/rt-fuzz-api-XXXXXX");
    if (!mkdtemp(fx.dir) || !(fx.store = rt_store_open(fx.dir, &err)) ||
        !(fx.control = rt_control_new(fx.store, 10, &err)) ||
        !(fx.sessions = rt__sessions_new())) {
        fprintf(stderr, "fuzz fixture: %s\n", err.msg[0] ? err.msg : "cannot set up");
        abort();
    }
    char *shown = NULL;
    if (rt_control_bootstrap(fx.control, FIXTURE_ADMIN_TOKEN, &shown, &err)) {
        fprintf(stderr, "fuzz fixture: bootstrap: %s\n", err.msg);
        abort();
    }
    free(shown);
    rt_api_ctx_init(&fx.ctx, fx.store, fx.control);
    fx.ctx.trusted = true;
    fx.ctx.sessions = fx.sessions;
    fx.ctx.retention_ns = 30 * 86400 * RT_NS_PER_S; /* the server's default --retention */
    fixture_seed();
}

/* Opens the fixture on the first call, and reopens it afresh every FIXTURE_RESET_RUNS calls. */
static void fixture_tick(void)
{
    if (fx.store && ++fx.runs % FIXTURE_RESET_RUNS != 0)
        return;
    if (!fx.store)
        atexit(fixture_close);
    fixture_close();
    fixture_open();
}

/* Declares libFuzzer's entry points and defines LLVMFuzzerInitialize as opening the fixture,
 * for the targets that need nothing more before their first input. */
#define FIXTURE_FUZZER_INITIALIZE()                                                               \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                 \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                                            \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                             \
    {                                                                                             \
        fixture_tick();                                                                           \
        return 0;                                                                                 \
    }

/* The start of each input of a target whose first byte picks what it does: false for an empty
 * input (nothing to do), else the fixture ticked. */
static inline bool fixture_input(size_t size)
{
    if (size < 1)
        return false;
    fixture_tick();
    return true;
}

#endif
