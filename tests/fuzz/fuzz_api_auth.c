/* Fuzz target: authentication, through rt_api_body_allowance and rt_api_dispatch with an
 * UNTRUSTED context (as the HTTP server's: a session table, a control plane with a bootstrap
 * admin key) on the seeded store of api_fixture.h. The fixture also makes, through the API,
 * an admin, a read, an ingest and a service-bound ingest key (service "api", whose profiling
 * it turns on), a revoked key, a "victim" key for the revocation route (remade once revoked),
 * and two UI sessions (admin and read), signed in again whenever a run ends one.
 *
 * Input: byte 0 picks the route (routes[] below), byte 1 is flags (F_* below), then fields
 * separated by '\n': Authorization, Cookie, X-CSRF-Token, and the body (the rest, newlines
 * included). In every field the two bytes "\x01" + selector are replaced by a real secret
 * (secret_of below: the keys' tokens, the sessions' ids and CSRF tokens), so the fuzzer
 * reaches the authenticated branches; the bootstrap token FIXTURE_ADMIN_TOKEN is also known.
 *
 * Beyond "no crash", each run checks (abort() on a violation):
 * - without credentials (an Authorization that is not exactly "Bearer " + an active key, or
 *   no Authorization and no live session id in the Cookie), a non-session route answers only
 *   401, 404 or 405;
 * - a cookie request other than GET without its session's exact X-CSRF-Token is never 2xx;
 * - a key (or session) never gets 2xx on a route its scope does not cover, nor a bound
 *   ingest key for another service; an admin key never gets 401 or 403;
 * - the session routes: sign-in is 2xx only with an admin or read token in its body, the
 *   session GET and DELETE only with a live session cookie (DELETE with its CSRF token);
 * - rt_api_body_allowance is 0 whenever dispatch answers 401, 404 or 405 (except sign-in,
 *   whose 401 depends on the body); for a valid key, the full limit on a POST or PUT route
 *   its scope covers (and, bound, for its service), else 0 (every GET and DELETE keeps no
 *   body); 0 for a cookie request that writes without its session's CSRF token. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_AUTH = 1, F_COOKIE = 2, F_CSRF = 4, F_NO_CTYPE = 8, F_SVC_SHIFT = 4, F_HTTPS = 64 };
enum kind { K_SESSION_POST, K_SESSION_GET, K_SESSION_DELETE, K_ROUTE, K_NONE };

static const struct {
    const char *method, *path;
    enum kind kind;
    enum rt_scope need;            /* for K_ROUTE */
    const char *ctype;             /* default Content-Type */
} routes[] = {
    {"POST", "/api/v1/session", K_SESSION_POST, RT_SCOPE_NONE, "application/json"},
    {"GET", "/api/v1/session", K_SESSION_GET, RT_SCOPE_NONE, NULL},
    {"DELETE", "/api/v1/session", K_SESSION_DELETE, RT_SCOPE_NONE, NULL},
    {"POST", "/api/v1/profiles", K_ROUTE, RT_SCOPE_INGEST, "text/plain"},
    {"GET", "/api/v1/sdk/config", K_ROUTE, RT_SCOPE_INGEST, NULL},
    {"GET", "/api/v1/profile", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/diff", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/export", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/issues", K_ROUTE, RT_SCOPE_READ, NULL},
    {"POST", "/api/v1/issues", K_ROUTE, RT_SCOPE_ADMIN, "application/json"},
    {"GET", "/api/v1/issues/1", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/issues/1/diff", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/deploys", K_ROUTE, RT_SCOPE_READ, NULL},
    {"POST", "/api/v1/deploys", K_ROUTE, RT_SCOPE_ADMIN, "application/json"},
    {"GET", "/api/v1/services", K_ROUTE, RT_SCOPE_READ, NULL},
    {"PUT", "/api/v1/services/api/profiling", K_ROUTE, RT_SCOPE_ADMIN, "application/json"},
    {"GET", "/api/v1/keys", K_ROUTE, RT_SCOPE_ADMIN, NULL},
    {"POST", "/api/v1/keys", K_ROUTE, RT_SCOPE_ADMIN, "application/json"},
    {"DELETE", NULL /* the victim key */, K_ROUTE, RT_SCOPE_ADMIN, NULL},
    {"GET", "/api/v1/audit", K_ROUTE, RT_SCOPE_READ, NULL},
    {"GET", "/api/v1/nope", K_NONE, RT_SCOPE_NONE, NULL},
    {"PATCH", "/api/v1/keys", K_NONE, RT_SCOPE_NONE, NULL},
    {"HEAD", "/api/v1/services", K_NONE, RT_SCOPE_NONE, NULL},
    {"POST", "/api/v1/session/", K_NONE, RT_SCOPE_NONE, "application/json"},
    {"GET", "/api/v1/services/api/profiling", K_NONE, RT_SCOPE_NONE, NULL},
    /* appended: the seeds' route bytes keep their routes */
    {"GET", "/api/v1/timeline", K_ROUTE, RT_SCOPE_READ, NULL},
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* The fixture's secrets: selector, scope, bound service, and whether it is an active key. */
enum { S_BOOT, S_ADMIN, S_READ, S_INGEST, S_BOUND, S_REVOKED, S_NKEYS };
static struct {
    char token[64];
    enum rt_scope scope;
    const char *service;
} keys[S_NKEYS];
static const char key_sel[S_NKEYS] = {'A', 'a', 'r', 'i', 'b', 'x'};
enum { SESS_ADMIN, SESS_READ, NSESS };
static struct {
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX];
} sess[NSESS];
static char victim_path[64];
static struct rt_api_ctx uctx;   /* the untrusted context */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_api_auth: %s\n", what);
    abort();
}

/* Dispatches on ctx; the caller cleans resp up. */
static void call(struct rt_api_ctx *ctx, const char *method, const char *path,
                 const char *body, struct rt_api_resp *resp)
{
    struct rt_api_req req = {.method = method, .path = path, .content_type = "application/json",
                             .body = body, .body_len = body ? strlen(body) : 0, .no_hold = true};
    rt_api_dispatch(ctx, &req, resp);
}

/* Creates a key through the API (trusted) into out (its token), returns its id. */
static long long make_key(const char *body, char out[64])
{
    struct rt_api_resp r;
    call(&fx.ctx, "POST", "/api/v1/keys", body, &r);
    const char *k = json_string_value(json_object_get(r.json, "key"));
    const char *id = json_string_value(json_object_get(r.json, "id"));
    if (r.status != 201 || !k || !id || strlen(k) >= 64)
        die("cannot create a key");
    snprintf(out, 64, "%s", k);
    long long v = atoll(id);
    rt_api_resp_cleanup(&r);
    return v;
}

static void make_victim(void)
{
    char token[64];
    long long id = make_key("{\"scope\":\"read\",\"name\":\"victim\"}", token);
    snprintf(victim_path, sizeof(victim_path), "/api/v1/keys/%lld", id);
}

/* Signs in with token through the API (untrusted), keeping the session's id and CSRF. */
static void sign_in(int s, const char *token)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"token\":\"%s\"}", token);
    struct rt_api_resp r;
    call(&uctx, "POST", "/api/v1/session", body, &r);
    const char *csrf = json_string_value(json_object_get(r.json, "csrf_token"));
    const char *c = strstr(r.set_cookie, RT_SESSION_COOKIE "=");
    if (r.status != 201 || !csrf || !c || !rt__session_cookie(c, sess[s].id))
        die("cannot sign in");
    snprintf(sess[s].csrf, RT_SESSION_HEX, "%s", csrf);
    rt_api_resp_cleanup(&r);
}

/* After the fixture is (re)built: the untrusted context, the keys, the victim, and profiling
 * turned on for service "api". */
static void setup_keys(void)
{
    uctx = fx.ctx;
    uctx.trusted = false;
    snprintf(keys[S_BOOT].token, 64, "%s", FIXTURE_ADMIN_TOKEN);
    static const char *const bodies[S_NKEYS] = {
        [S_ADMIN] = "{\"scope\":\"admin\",\"name\":\"fuzz-admin\"}",
        [S_READ] = "{\"scope\":\"read\",\"name\":\"fuzz-read\"}",
        [S_INGEST] = "{\"scope\":\"ingest\",\"name\":\"fuzz-ingest\"}",
        [S_BOUND] = "{\"scope\":\"ingest\",\"service\":\"api\"}",
        [S_REVOKED] = "{\"scope\":\"admin\",\"name\":\"fuzz-revoked\"}"};
    static const enum rt_scope scopes[S_NKEYS] = {RT_SCOPE_ADMIN, RT_SCOPE_ADMIN, RT_SCOPE_READ,
                                                  RT_SCOPE_INGEST, RT_SCOPE_INGEST,
                                                  RT_SCOPE_NONE};
    for (int k = 0; k < S_NKEYS; k++) {
        keys[k].scope = scopes[k];
        keys[k].service = k == S_BOUND ? "api" : NULL;
        if (k == S_BOOT)
            continue;
        long long id = make_key(bodies[k], keys[k].token);
        if (k == S_REVOKED) {
            char path[64];
            snprintf(path, sizeof(path), "/api/v1/keys/%lld", id);
            struct rt_api_resp r;
            call(&fx.ctx, "DELETE", path, NULL, &r);
            if (r.status != 200)
                die("cannot revoke a key");
            rt_api_resp_cleanup(&r);
        }
    }
    make_victim();
    memset(sess, 0, sizeof(sess));
    struct rt_api_resp r; /* so that the ingest keys' uploads to "api" can succeed */
    call(&fx.ctx, "PUT", "/api/v1/services/api/profiling", "{\"enabled\":true}", &r);
    if (r.status != 200)
        die("cannot turn profiling on");
    rt_api_resp_cleanup(&r);
}

/* Makes sure the fixture's two sessions are live (a run may sign one out, or fill the table). */
static void ensure_sessions(void)
{
    for (int s = 0; s < NSESS; s++) {
        struct rt_principal who;
        char csrf[RT_SESSION_HEX];
        int64_t exp;
        if (!sess[s].id[0] || !rt__sessions_lookup(fx.sessions, fx.control, sess[s].id, &who,
                                                   csrf, &exp))
            sign_in(s, keys[s == SESS_ADMIN ? S_BOOT : S_READ].token);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fixture_tick();
    setup_keys();
    return 0;
}

/* The secret "\x01" + sel stands for, or NULL. */
static const char *secret_of(char sel)
{
    for (int k = 0; k < S_NKEYS; k++)
        if (key_sel[k] == sel)
            return keys[k].token;
    switch (sel) {
    case 'S': return sess[SESS_ADMIN].id;
    case 'C': return sess[SESS_ADMIN].csrf;
    case 's': return sess[SESS_READ].id;
    case 'c': return sess[SESS_READ].csrf;
    default: return NULL;
    }
}

/* Copies field [p, end) into out (cap bytes, NUL-terminated, truncated), expanding secrets;
 * returns its length. */
static size_t expand(const uint8_t *p, const uint8_t *end, char *out, size_t cap)
{
    size_t n = 0;
    while (p < end && n + 1 < cap) {
        const char *s = *p == 1 && p + 1 < end ? secret_of((char)p[1]) : NULL;
        if (s) {
            size_t l = strlen(s);
            if (n + l + 1 > cap)
                break;
            memcpy(out + n, s, l);
            n += l;
            p += 2;
        } else {
            out[n++] = (char)*p++;
        }
    }
    out[n] = '\0';
    return n;
}

/* The next '\n'-terminated field of [*p, end) (the rest when last), advancing *p. */
static size_t field(const uint8_t **p, const uint8_t *end, bool last, char *out, size_t cap)
{
    const uint8_t *q = last ? end : memchr(*p, '\n', (size_t)(end - *p));
    if (!q)
        q = end;
    size_t n = expand(*p, q, out, cap);
    *p = q < end ? q + 1 : end;
    return n;
}

/* The key "Bearer <token>" names exactly, or -1. */
static int bearer_key(const char *auth)
{
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return -1;
    for (int k = 0; k < S_NKEYS; k++)
        if (k != S_REVOKED && strcmp(auth + 7, keys[k].token) == 0)
            return k;
    return -1;
}

/* Whether body is a JSON object whose "token" is exactly an admin or read key (JSON escapes
 * decoded, as sign-in reads it). */
static bool signin_token_valid(const char *body, size_t len)
{
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    const char *t = json_string_value(json_object_get(o, "token"));
    bool ok = false;
    for (int k = 0; t && k < S_NKEYS; k++)
        ok |= k != S_REVOKED && keys[k].scope >= RT_SCOPE_READ && !strcmp(t, keys[k].token);
    json_decref(o);
    return ok;
}

/* Bit s set: the cookie holds session s's id (a superset of what authenticates). */
static unsigned cookie_sessions(const char *cookie)
{
    unsigned m = 0;
    for (int s = 0; cookie && s < NSESS; s++)
        if (strstr(cookie, sess[s].id))
            m |= 1u << s;
    return m;
}

/* Whether some session of mask m has the exact CSRF token csrf. */
static bool csrf_matches(unsigned m, const char *csrf)
{
    for (int s = 0; csrf && s < NSESS; s++)
        if ((m >> s & 1) && strcmp(csrf, sess[s].csrf) == 0)
            return true;
    return false;
}

static bool covers(enum rt_scope have, enum rt_scope need)
{
    return have == RT_SCOPE_ADMIN || have == need;
}

static void check(bool ok, const char *what, const struct rt_api_req *req, int status,
                  size_t allowance)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_api_auth: invariant broken: %s\n  %s %s -> %d, allowance %zu\n"
                    "  Authorization: %s\n  Cookie: %s\n  X-CSRF-Token: %s\n",
            what, req->method, req->path, status, allowance,
            req->authorization ? req->authorization : "(none)",
            req->cookie ? req->cookie : "(none)", req->csrf_token ? req->csrf_token : "(none)");
    abort();
}

/* Signs out and forgets a session a successful sign-in made (the table stays small). */
static void drop_new_session(const struct rt_api_resp *resp, const struct rt_api_req *req)
{
    char id[RT_SESSION_HEX];
    const char *c = resp->set_cookie;
    bool https = req->forwarded_proto != NULL;
    check(rt__session_cookie(c, id) && strstr(c, "; HttpOnly; SameSite=Strict") &&
              (strstr(c, "; Secure") != NULL) == https,
          "a sign-in's Set-Cookie", req, resp->status, 0);
    rt__sessions_delete(fx.sessions, id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    fixture_tick();
    if (fx.runs % FIXTURE_RESET_RUNS == 0)
        setup_keys();
    ensure_sessions();
    unsigned r = data[0] % NROUTES, flags = data[1];
    static char auth[512], cookie[512], csrf[512], body[4096];
    const uint8_t *p = data + 2, *end = data + size;
    field(&p, end, false, auth, sizeof(auth));
    field(&p, end, false, cookie, sizeof(cookie));
    field(&p, end, false, csrf, sizeof(csrf));
    size_t body_len = field(&p, end, true, body, sizeof(body));
    static const char *const services[] = {NULL, "api", "web", ""};
    const char *service = services[(flags >> F_SVC_SHIFT) & 3];
    struct rt_api_param params[] = {
        {"service", service}, {"type", "cpu"}, {"version", "v9"}, {"instance", "i-1"},
        {"unit", "nanoseconds"}, {"duration_s", "60"}};
    struct rt_api_req req = {
        .method = routes[r].method, .path = routes[r].path ? routes[r].path : victim_path,
        .params = service ? params : params + 1, .nparams = service ? 6 : 5,
        .content_type = flags & F_NO_CTYPE ? NULL : routes[r].ctype, .body = body,
        .body_len = body_len, .authorization = flags & F_AUTH ? auth : NULL,
        .cookie = flags & F_COOKIE ? cookie : NULL, .csrf_token = flags & F_CSRF ? csrf : NULL,
        .forwarded_proto = flags & F_HTTPS ? "https" : NULL, .no_hold = true};

    size_t allowance = rt_api_body_allowance(&uctx, &req);
    struct rt_api_resp resp;
    rt_api_dispatch(&uctx, &req, &resp);
    int st = resp.status;
    bool ok2xx = st >= 200 && st < 300;

    int k = bearer_key(req.authorization);
    unsigned cs = req.authorization ? 0 : cookie_sessions(req.cookie);
    bool is_get = strcmp(req.method, "GET") == 0;
    if (st == 401 || st == 404 || st == 405)
        check(allowance == 0 || routes[r].kind == K_SESSION_POST,
              "a request refused whatever its body is allowed a body", &req, st, allowance);
    switch (routes[r].kind) {
    case K_SESSION_POST:
        check(allowance == RT_API_SESSION_BODY_MAX, "sign-in's allowance", &req, st, allowance);
        check(!ok2xx || signin_token_valid(body, body_len), "a sign-in without an admin or read key",
              &req, st, allowance);
        if (ok2xx)
            drop_new_session(&resp, &req);
        break;
    case K_SESSION_GET:
    case K_SESSION_DELETE: {
        unsigned any = cookie_sessions(req.cookie); /* these routes read only the cookie */
        check(!ok2xx || any, "a session route without a session cookie", &req, st, allowance);
        check(!ok2xx || is_get || csrf_matches(any, req.csrf_token),
              "a sign-out without the session's CSRF token", &req, st, allowance);
        break;
    }
    case K_ROUTE:
        if (k < 0 && !cs)
            check(st == 401 && allowance == 0, "a request without credentials", &req, st,
                  allowance);
        if (k < 0 && cs && !is_get) {
            check(!ok2xx || csrf_matches(cs, req.csrf_token),
                  "a cookie request without the session's CSRF token", &req, st, allowance);
            check(allowance == 0 || csrf_matches(cs, req.csrf_token),
                  "a body allowed to a cookie request without its CSRF token", &req, st,
                  allowance);
        }
        if (k >= 0) {
            check(!ok2xx || covers(keys[k].scope, routes[r].need),
                  "a key used beyond its scope", &req, st, allowance);
            check(!ok2xx || !keys[k].service || (service && !strcmp(service, keys[k].service)),
                  "a bound ingest key used for another service", &req, st, allowance);
            bool admitted = covers(keys[k].scope, routes[r].need) &&
                            (!keys[k].service || (service && !strcmp(service, keys[k].service)));
            check(allowance == (admitted && rt_api_method_reads_body(req.method)
                                    ? fx.ctx.limits.max_compressed : 0),
                  "a valid key's allowance (the limit on its POST and PUT routes, else 0)",
                  &req, st, allowance);
            check(keys[k].scope != RT_SCOPE_ADMIN || (st != 401 && st != 403),
                  "an admin key refused", &req, st, allowance);
        } else if (cs) {
            bool admin = cs & (1u << SESS_ADMIN);
            check(!ok2xx || covers(admin ? RT_SCOPE_ADMIN : RT_SCOPE_READ, routes[r].need),
                  "a session used beyond its scope", &req, st, allowance);
        }
        if (ok2xx && !routes[r].path)
            make_victim();
        break;
    case K_NONE:
        check(st == 404 || st == 405, "an unknown route or method", &req, st, allowance);
        break;
    }
    rt_api_resp_cleanup(&resp);
    return 0;
}
