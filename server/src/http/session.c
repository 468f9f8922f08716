/* UI sign-in sessions (DESIGN §9): POST/GET/DELETE /api/v1/session, held in memory. A session
 * is a random 256-bit id in an HttpOnly, SameSite=Strict cookie plus a CSRF token that
 * mutating requests repeat in X-CSRF-Token; it keeps the key it was opened with, so revoking
 * the key ends its sessions. */
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_util.h"
#include "rt/timeutil.h"

#define MAX_SESSIONS 1024
#define TOKEN_MAX 256

/* One signed-in browser. */
struct session {
    char id[RT_SESSION_HEX];         /* cookie value, 64 hex digits; "" = free slot */
    char csrf[RT_SESSION_HEX];       /* the X-CSRF-Token mutating requests must carry */
    char token[TOKEN_MAX];           /* the key signed in with, re-checked on each use */
    int64_t expires_mono_ns;         /* absolute end (monotonic clock) */
    int64_t expires_wall_ns;         /* the same, wall clock, for the answer */
};

struct rt_sessions {
    pthread_mutex_t mu;              /* guards slots */
    struct session slots[MAX_SESSIONS];
};

struct rt_sessions *rt__sessions_new(void)
{
    struct rt_sessions *s = calloc(1, sizeof(*s));
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

void rt__sessions_free(struct rt_sessions *s)
{
    if (!s)
        return;
    sodium_memzero(s->slots, sizeof(s->slots));
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void random_hex(char out[RT_SESSION_HEX])
{
    unsigned char raw[32];
    randombytes_buf(raw, sizeof(raw));
    sodium_bin2hex(out, RT_SESSION_HEX, raw, sizeof(raw));
    sodium_memzero(raw, sizeof(raw));
}

/* Wipes every expired slot (its id, CSRF token and key); caller holds mu. */
static void drop_expired(struct rt_sessions *s)
{
    int64_t now = rt_time_mono_ns();
    for (size_t i = 0; i < MAX_SESSIONS; i++)
        if (s->slots[i].id[0] && s->slots[i].expires_mono_ns <= now)
            sodium_memzero(&s->slots[i], sizeof(s->slots[i]));
}

/* The slot holding id, or NULL; caller holds mu. Drops expired sessions first, then
 * compares in constant time per slot. */
static struct session *find(struct rt_sessions *s, const char *id)
{
    drop_expired(s);
    if (strlen(id) != RT_SESSION_HEX - 1)
        return NULL;
    struct session *hit = NULL;
    for (size_t i = 0; i < MAX_SESSIONS; i++) {
        struct session *x = &s->slots[i];
        if (x->id[0] && sodium_memcmp(x->id, id, RT_SESSION_HEX - 1) == 0)
            hit = x;
    }
    return hit;
}

int rt__sessions_create(struct rt_sessions *s, const char *token, char id[RT_SESSION_HEX],
                        char csrf[RT_SESSION_HEX], int64_t *expires_ns)
{
    if (strlen(token) >= TOKEN_MAX)
        return RT_EINVAL;
    pthread_mutex_lock(&s->mu);
    drop_expired(s);
    struct session *slot = NULL;
    for (size_t i = 0; i < MAX_SESSIONS && !slot; i++)
        if (!s->slots[i].id[0])
            slot = &s->slots[i];
    if (!slot) {               /* full: the session closest to its end makes room */
        slot = &s->slots[0];
        for (size_t i = 1; i < MAX_SESSIONS; i++)
            if (s->slots[i].expires_mono_ns < slot->expires_mono_ns)
                slot = &s->slots[i];
    }
    random_hex(slot->id);
    random_hex(slot->csrf);
    snprintf(slot->token, sizeof(slot->token), "%s", token);
    slot->expires_mono_ns = rt_time_mono_ns() + RT_SESSION_LIFETIME_S * RT_NS_PER_S;
    slot->expires_wall_ns = rt_time_now_ns() + RT_SESSION_LIFETIME_S * RT_NS_PER_S;
    memcpy(id, slot->id, RT_SESSION_HEX);
    memcpy(csrf, slot->csrf, RT_SESSION_HEX);
    *expires_ns = slot->expires_wall_ns;
    pthread_mutex_unlock(&s->mu);
    return RT_OK;
}

bool rt__sessions_lookup(struct rt_sessions *s, struct rt_control *control, const char *id,
                         struct rt_principal *who, char csrf[RT_SESSION_HEX],
                         int64_t *expires_ns)
{
    char token[TOKEN_MAX];
    pthread_mutex_lock(&s->mu);
    struct session *x = find(s, id);
    if (x) {
        memcpy(token, x->token, sizeof(token));
        memcpy(csrf, x->csrf, RT_SESSION_HEX);
        *expires_ns = x->expires_wall_ns;
    }
    pthread_mutex_unlock(&s->mu);
    if (!x)
        return false;
    bool ok = rt_control_authenticate(control, token, who) &&
              (who->scope == RT_SCOPE_ADMIN || who->scope == RT_SCOPE_READ);
    sodium_memzero(token, sizeof(token));
    if (!ok)
        rt__sessions_delete(s, id);
    return ok;
}

void rt__sessions_delete(struct rt_sessions *s, const char *id)
{
    pthread_mutex_lock(&s->mu);
    struct session *x = find(s, id);
    if (x)
        sodium_memzero(x, sizeof(*x));
    pthread_mutex_unlock(&s->mu);
}

const char *rt__session_cookie(const char *cookie_header, char out[RT_SESSION_HEX])
{
    out[0] = '\0';
    for (const char *p = cookie_header; p && *p;) {
        p += strspn(p, " \t;");
        size_t n = strcspn(p, ";");
        static const char name[] = RT_SESSION_COOKIE "=";
        if (n == sizeof(name) - 1 + RT_SESSION_HEX - 1 && strncmp(p, name, sizeof(name) - 1) == 0) {
            memcpy(out, p + sizeof(name) - 1, RT_SESSION_HEX - 1);
            out[RT_SESSION_HEX - 1] = '\0';
            return out;
        }
        p += n;
    }
    return NULL;
}

static json_t *session_json(const struct rt_principal *who, const char *csrf, int64_t expires_ns)
{
    return json_pack("{s:s, s:s, s:o}", "scope", rt_control_scope_name(who->scope), "csrf_token",
                     csrf, "expires_at", rt__api_time_json(expires_ns));
}

/* "; Secure" when the request came through a TLS-terminating proxy (X-Forwarded-Proto:
 * https), else "". A forged header only makes the cookie stricter for its own sender. */
static const char *secure_attr(const struct rt_api_req *req)
{
    const char *p = req->forwarded_proto;
    return p && strcasecmp(p, "https") == 0 ? "; Secure" : "";
}

/* POST /api/v1/session {"token"}: an admin or read key opens a session. */
void rt__api_post_session(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                          struct rt_api_resp *resp, const char *arg)
{
    /* JSON only: an HTML form on another site (which cannot send this type, and a
     * cross-origin fetch that does needs a preflight, refused) cannot sign a browser in. */
    const char *ct = req->content_type;
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
        (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        rt__api_error(resp, RT_EFORMAT, "sign-in takes a JSON body: Content-Type: "
                                        "application/json");
        return;
    }
    json_t *body = rt__api_body_object(req, resp);
    if (!body)
        return;
    const char *token = json_string_value(json_object_get(body, "token"));
    struct rt_principal who;
    if (!token || !*token) {
        rt__api_error(resp, RT_EINVAL, "the body must be {\"token\": \"<admin or read key>\"}");
    } else if (!ctx->sessions || !ctx->control || !rt_control_authenticate(ctx->control, token, &who)) {
        rt__api_json(resp, 401, json_pack("{s:s, s:s}", "error", "unauthorized", "message",
                                          "unknown or revoked key"));
        resp->refusal = "unauthorized";
    } else if (who.scope != RT_SCOPE_ADMIN && who.scope != RT_SCOPE_READ) {
        rt__api_json(resp, 403, json_pack("{s:s, s:s}", "error", "forbidden", "message",
                                          "only admin and read keys can sign in to the UI"));
        resp->refusal = "forbidden";
    } else {
        char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX];
        int64_t expires;
        int rc = rt__sessions_create(ctx->sessions, token, id, csrf, &expires);
        if (rc) {
            rt__api_error(resp, rc, "the key is too long to keep in a session");
        } else {
            rt__api_json(resp, 201, session_json(&who, csrf, expires));
            snprintf(resp->set_cookie, sizeof(resp->set_cookie),
                     RT_SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s",
                     id, RT_SESSION_LIFETIME_S, secure_attr(req));
        }
        sodium_memzero(id, sizeof(id));
    }
    json_decref(body);
}

/* The session of req's cookie, or fills resp with 401 and returns false. */
static bool current(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                    struct rt_api_resp *resp, char id[RT_SESSION_HEX], struct rt_principal *who,
                    char csrf[RT_SESSION_HEX], int64_t *expires)
{
    if (ctx->sessions && ctx->control && rt__session_cookie(req->cookie, id) &&
        rt__sessions_lookup(ctx->sessions, ctx->control, id, who, csrf, expires))
        return true;
    rt__api_json(resp, 401, json_pack("{s:s, s:s}", "error", "unauthorized", "message",
                                      "not signed in: POST /api/v1/session with a key"));
    resp->refusal = "unauthorized";
    return false;
}

/* GET /api/v1/session: the signed-in session's scope and CSRF token (after a page reload). */
void rt__api_get_session(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                         struct rt_api_resp *resp, const char *arg)
{
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX];
    struct rt_principal who;
    int64_t expires;
    if (current(ctx, req, resp, id, &who, csrf, &expires))
        rt__api_json(resp, 200, session_json(&who, csrf, expires));
}

/* DELETE /api/v1/session: signs out (needs the CSRF token like every cookie mutation). */
void rt__api_delete_session(struct rt_api_ctx *ctx, const struct rt_api_req *req,
                            struct rt_api_resp *resp, const char *arg)
{
    char id[RT_SESSION_HEX], csrf[RT_SESSION_HEX];
    struct rt_principal who;
    int64_t expires;
    if (!current(ctx, req, resp, id, &who, csrf, &expires))
        return;
    if (!rt__session_csrf_ok(req, csrf)) {
        rt__api_json(resp, 403, json_pack("{s:s, s:s}", "error", "forbidden", "message",
                                          RT_SESSION_CSRF_MSG));
        resp->refusal = "forbidden";
        return;
    }
    rt__sessions_delete(ctx->sessions, id);
    rt__api_json(resp, 200, json_pack("{s:b}", "signed_out", 1));
    snprintf(resp->set_cookie, sizeof(resp->set_cookie),
             RT_SESSION_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0%s",
             secure_attr(req));
}

bool rt__session_csrf_ok(const struct rt_api_req *req, const char csrf[RT_SESSION_HEX])
{
    const char *h = req->csrf_token;
    return h && strlen(h) == RT_SESSION_HEX - 1 &&
           sodium_memcmp(h, csrf, RT_SESSION_HEX - 1) == 0;
}
