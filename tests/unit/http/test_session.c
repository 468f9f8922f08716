/* Tests of server/src/http/session.c: the session table (create, lookup with the key
 * re-checked, delete), the cookie parser and the CSRF check; and of rt_api_body_allowance. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/api_util.h"
#include "rt/api.h"
#include "rt/control.h"
#include "test.h"

static char dir[] = "/tmp/rt-session-XXXXXX";
#define ADMIN "rt_unit_admin_token_0123456789abcdef"

static void test_cookie_parser(void)
{
    char id[RT_SESSION_HEX];
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char hdr[200];
    snprintf(hdr, sizeof(hdr), "a=1; rt_session=%s; b=2", hex);
    CHECK_STR(rt__session_cookie(hdr, id), hex);
    snprintf(hdr, sizeof(hdr), "rt_session=%s", hex);
    CHECK_STR(rt__session_cookie(hdr, id), hex);
    snprintf(hdr, sizeof(hdr), "rt_session=%s0", hex);     /* too long */
    CHECK(rt__session_cookie(hdr, id) == NULL);
    snprintf(hdr, sizeof(hdr), "xrt_session=%s", hex);     /* another cookie's name */
    CHECK(rt__session_cookie(hdr, id) == NULL);
    CHECK(rt__session_cookie("rt_session=abc", id) == NULL);
    CHECK(rt__session_cookie(NULL, id) == NULL);
    CHECK(rt__session_cookie("", id) == NULL);
}

static void test_create_lookup_delete(void)
{
    struct rt_error err = {0};
    struct rt_store *st = rt_store_open(dir, &err);
    struct rt_control *c = rt_control_new(st, 10, &err);
    char *shown = NULL;
    CHECK_INT(rt_control_bootstrap(c, ADMIN, &shown, &err), 0);
    free(shown);
    struct rt_sessions *s = rt__sessions_new();
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX], got[RT_SESSION_HEX];
    int64_t exp = 0, exp2 = 0;
    CHECK_INT(rt__sessions_create(s, ADMIN, id, csrf, &exp), 0);
    CHECK_INT(strlen(id), 64);
    CHECK_INT(strlen(csrf), 64);
    CHECK(strcmp(id, csrf) != 0);
    struct rt_principal who;
    CHECK(rt__sessions_lookup(s, c, id, &who, got, &exp2));
    CHECK_INT(who.scope, RT_SCOPE_ADMIN);
    CHECK_STR(got, csrf);
    CHECK_INT(exp2, exp);
    char other[RT_SESSION_HEX];
    memcpy(other, id, sizeof(other));
    other[0] = other[0] == 'a' ? 'b' : 'a';
    CHECK(!rt__sessions_lookup(s, c, other, &who, got, &exp2));
    CHECK(!rt__sessions_lookup(s, c, "", &who, got, &exp2));
    /* the CSRF check */
    struct rt_api_req req = {.csrf_token = csrf};
    CHECK(rt__session_csrf_ok(&req, csrf));
    req.csrf_token = other;
    CHECK(!rt__session_csrf_ok(&req, csrf));
    req.csrf_token = NULL;
    CHECK(!rt__session_csrf_ok(&req, csrf));
    /* a key that stops authenticating ends the session */
    char bad[RT_SESSION_HEX], bcsrf[RT_SESSION_HEX];
    CHECK_INT(rt__sessions_create(s, "rt_not_a_key", bad, bcsrf, &exp), 0);
    CHECK(!rt__sessions_lookup(s, c, bad, &who, got, &exp2));
    rt__sessions_delete(s, id);
    CHECK(!rt__sessions_lookup(s, c, id, &who, got, &exp2));
    /* a full table makes room */
    for (int i = 0; i < 1100; i++)
        CHECK_INT(rt__sessions_create(s, ADMIN, id, csrf, &exp), 0);
    CHECK(rt__sessions_lookup(s, c, id, &who, got, &exp2));
    char longkey[300];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    CHECK_INT(rt__sessions_create(s, longkey, id, csrf, &exp), RT_EINVAL);
    rt__sessions_free(s);
    rt__sessions_free(NULL);
    rt_control_free(c);
    rt_store_free(st);
}

/* rt_api_body_allowance for an untrusted context: sign-in keeps a small body, a valid key the
 * full limit, and every request refused whatever its body, or reading none, keeps nothing
 * (GET /api/v1/session without a cookie used to keep 4 KiB: found by fuzz_api_auth). */
static void test_body_allowance(void)
{
    char sub[sizeof(dir) + 8];
    snprintf(sub, sizeof(sub), "%s/allow", dir);
    CHECK_INT(mkdir(sub, 0700), 0);
    struct rt_error err = {0};
    struct rt_store *st = rt_store_open(sub, &err);
    struct rt_control *c = rt_control_new(st, 10, &err);
    char *shown = NULL;
    CHECK_INT(rt_control_bootstrap(c, ADMIN, &shown, &err), 0);
    free(shown);
    struct rt_api_ctx ctx;
    rt_api_ctx_init(&ctx, st, c);
    ctx.sessions = rt__sessions_new();
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX], cookie[100];
    int64_t exp;
    CHECK_INT(rt__sessions_create(ctx.sessions, ADMIN, id, csrf, &exp), 0);
    snprintf(cookie, sizeof(cookie), "rt_session=%s", id);
    const size_t full = ctx.limits.max_compressed;
    static const struct {
        const char *method, *path, *auth;
        bool cookie, csrf;
        size_t want; /* SIZE_MAX: the full limit */
    } cases[] = {
        {"POST", "/api/v1/session", NULL, false, false, RT_API_SESSION_BODY_MAX},
        {"GET", "/api/v1/session", NULL, false, false, 0},
        {"GET", "/api/v1/session", "Bearer " ADMIN, false, false, 0},
        {"DELETE", "/api/v1/session", NULL, true, true, 0},
        {"POST", "/api/v1/profiles", NULL, false, false, 0},
        {"POST", "/api/v1/profiles", "Bearer nope", true, true, 0},
        {"POST", "/api/v1/profiles", "Bearer " ADMIN, false, false, SIZE_MAX},
        {"POST", "/api/v1/issues", NULL, true, true, SIZE_MAX},
        /* a cookie request that writes without its CSRF token is refused (403) whatever
         * its body: none of it is kept */
        {"POST", "/api/v1/issues", NULL, true, false, 0},
        /* a GET or DELETE reads no body: none is kept, whatever the key */
        {"GET", "/api/v1/services", "Bearer " ADMIN, false, false, 0},
        {"DELETE", "/api/v1/keys/1", "Bearer " ADMIN, false, false, 0},
        {"PUT", "/api/v1/services/x/profiling", "Bearer " ADMIN, false, false, SIZE_MAX},
        {"PATCH", "/api/v1/keys", "Bearer " ADMIN, false, false, 0},
        {"POST", "/api/v1/nope", "Bearer " ADMIN, false, false, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rt_api_req req = {.method = cases[i].method, .path = cases[i].path,
                                 .authorization = cases[i].auth,
                                 .cookie = cases[i].cookie ? cookie : NULL,
                                 .csrf_token = cases[i].csrf ? csrf : NULL};
        size_t want = cases[i].want == SIZE_MAX ? full : cases[i].want;
        size_t got = rt_api_body_allowance(&ctx, &req);
        if (got != want)
            fprintf(stderr, "case %zu: %s %s\n", i, cases[i].method, cases[i].path);
        CHECK_INT(got, want);
    }
    rt__sessions_free(ctx.sessions);
    rt_control_free(c);
    rt_store_free(st);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 2;
    RUN(test_cookie_parser);
    RUN(test_create_lookup_delete);
    RUN(test_body_allowance);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 2;
    return TEST_DONE();
}
