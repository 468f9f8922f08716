/* API keys (DESIGN §9): random secrets shown once, stored as BLAKE2b-256 hashes, checked in
 * constant time against every active key; the bootstrap admin key. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_int.h"
#include "rt/timeutil.h"

#define SECRET_BYTES 32

const char *rt_control_scope_name(enum rt_scope s)
{
    switch (s) {
    case RT_SCOPE_ADMIN: return "admin";
    case RT_SCOPE_READ: return "read";
    case RT_SCOPE_INGEST: return "ingest";
    default: return "none";
    }
}

enum rt_scope rt__control_scope_parse(const char *s)
{
    if (!s)
        return RT_SCOPE_NONE;
    if (!strcmp(s, "admin"))
        return RT_SCOPE_ADMIN;
    if (!strcmp(s, "read"))
        return RT_SCOPE_READ;
    if (!strcmp(s, "ingest"))
        return RT_SCOPE_INGEST;
    return RT_SCOPE_NONE;
}

static void hash_token(const char *token, uint8_t out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)token, strlen(token), NULL, 0);
}

/* Appends k to ks; 0 or RT_ENOMEM. */
static int keyset_add(struct rt__control_keyset *ks, const struct rt_key *k)
{
    if (ks->n == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 16;
        struct rt__control_key *keys = realloc(ks->keys, cap * sizeof(*keys));
        if (!keys)
            return RT_ENOMEM;
        ks->keys = keys;
        ks->cap = cap;
    }
    struct rt__control_key *m = &ks->keys[ks->n++];
    memset(m, 0, sizeof(*m));
    m->id = k->id;
    m->scope = rt__control_scope_parse(k->scope);
    snprintf(m->service, sizeof(m->service), "%s", k->service ? k->service : "");
    snprintf(m->name, sizeof(m->name), "%s", k->name ? k->name : "");
    memcpy(m->hash, k->hash, 32);
    m->created_at_ns = k->created_at_ns;
    m->revoked_at_ns = k->revoked_at_ns;
    return 0;
}

static int key_cb(void *ud, const struct rt_key *k)
{
    return keyset_add(ud, k);
}

int rt__control_read_keys(struct rt_control *c, struct rt__control_keyset *ks,
                          struct rt_error *err)
{
    memset(ks, 0, sizeof(*ks));
    int rc = rt_store_scan_keys(c->store, key_cb, ks, err);
    if (rc == RT_ENOMEM)
        rt_error_set(err, RT_ENOMEM, "out of memory reading keys");
    return rc < 0 ? rc : 0;
}

int rt__control_load_keys(struct rt_control *c, struct rt_error *err)
{
    struct rt__control_keyset ks;
    int rc = rt__control_read_keys(c, &ks, err);
    if (rc) {
        free(ks.keys);
        return rc;
    }
    free(c->keys);
    c->keys = ks.keys;
    c->nkeys = ks.n;
    c->cap_keys = ks.cap;
    return 0;
}

/* Stores a key with this token's hash and caches it; *id receives its id. Caller holds no lock. */
static int add_key(struct rt_control *c, enum rt_scope scope, const char *service,
                   const char *name, const char *token, int64_t *id, int64_t *created,
                   struct rt_error *err)
{
    struct rt_key k = {0};
    k.scope = rt_control_scope_name(scope);
    k.service = service && *service ? service : NULL;
    k.name = name;
    k.created_at_ns = rt_time_now_ns();
    hash_token(token, k.hash);
    int rc = rt_store_put_key(c->store, &k, &k.id, err);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&c->lock);
    struct rt__control_keyset ks = {c->keys, c->nkeys, c->cap_keys};
    rc = keyset_add(&ks, &k);
    c->keys = ks.keys;
    c->nkeys = ks.n;
    c->cap_keys = ks.cap;
    c->gen++;
    pthread_rwlock_unlock(&c->lock);
    if (rc)
        return rt_error_set(err, rc, "out of memory");
    *id = k.id;
    *created = k.created_at_ns;
    return 0;
}

/* A new random secret: "rt_" + 43 base64url characters (256 bits). */
static void new_token(char *out, size_t n)
{
    unsigned char raw[SECRET_BYTES];
    randombytes_buf(raw, sizeof(raw));
    char b64[sodium_base64_ENCODED_LEN(SECRET_BYTES, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf(out, n, "rt_%s", b64);
    sodium_memzero(raw, sizeof(raw));
}

bool rt_control_authenticate(struct rt_control *c, const char *token, struct rt_principal *who)
{
    if (!token || !*token)
        return false;
    uint8_t h[32];
    hash_token(token, h);
    const struct rt__control_key *found = NULL;
    pthread_rwlock_rdlock(&c->lock);
    /* Compare with every key, without stopping at a match (constant time in the secret). */
    for (size_t i = 0; i < c->nkeys; i++) {
        bool same = sodium_memcmp(h, c->keys[i].hash, 32) == 0;
        if (same && !c->keys[i].revoked_at_ns)
            found = &c->keys[i];
    }
    if (found) {
        memset(who, 0, sizeof(*who));
        who->scope = found->scope;
        who->key_id = found->id;
        snprintf(who->service, sizeof(who->service), "%s", found->service);
        snprintf(who->actor, sizeof(who->actor), "key %lld%s%s%s", (long long)found->id,
                 found->name[0] ? " (" : "", found->name, found->name[0] ? ")" : "");
    }
    pthread_rwlock_unlock(&c->lock);
    return found != NULL;
}

void rt_control_local_principal(struct rt_principal *who)
{
    memset(who, 0, sizeof(*who));
    who->scope = RT_SCOPE_ADMIN;
    snprintf(who->actor, sizeof(who->actor), "local cli");
}

/* Does this token's hash belong to a key, active or revoked? */
static bool known_token(struct rt_control *c, const char *token)
{
    uint8_t h[32];
    hash_token(token, h);
    bool known = false;
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->nkeys; i++)
        known |= sodium_memcmp(h, c->keys[i].hash, 32) == 0;
    pthread_rwlock_unlock(&c->lock);
    return known;
}

int rt_control_bootstrap(struct rt_control *c, const char *env_token, char **shown,
                         struct rt_error *err)
{
    *shown = NULL;
    bool have_admin = false;
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->nkeys; i++)
        have_admin |= c->keys[i].scope == RT_SCOPE_ADMIN && !c->keys[i].revoked_at_ns;
    pthread_rwlock_unlock(&c->lock);
    /* Only a server with no active admin key is bootstrapped: the first start, or one whose
     * admins were all revoked. A token once revoked is never brought back. */
    if (have_admin)
        return 0;
    int64_t id, at;
    struct rt_principal server = {.scope = RT_SCOPE_ADMIN, .actor = "server bootstrap"};
    if (env_token && *env_token) {
        if (strlen(env_token) < 16)
            return rt_error_set(err, RT_EINVAL,
                                "ROOTTRACE_BOOTSTRAP_TOKEN must be at least 16 characters");
        if (known_token(c, env_token))
            return rt_error_set(err, RT_EINVAL,
                                "ROOTTRACE_BOOTSTRAP_TOKEN was revoked; give another one");
        int rc = add_key(c, RT_SCOPE_ADMIN, NULL, "bootstrap", env_token, &id, &at, err);
        if (rc == 0)
            rt_control_audit(c, &server, "key.bootstrap", "admin", "from the environment",
                             NULL);
        return rc;
    }
    char token[64];
    new_token(token, sizeof(token));
    int rc = add_key(c, RT_SCOPE_ADMIN, NULL, "bootstrap", token, &id, &at, err);
    if (rc == 0) {
        *shown = strdup(token);
        rt_control_audit(c, &server, "key.bootstrap", "admin", "random, shown once", NULL);
    }
    sodium_memzero(token, sizeof(token));
    return rc;
}

static json_t *time_or_null(int64_t ns)
{
    char b[RT_TIME_BUFSZ];
    return ns ? json_string(rt_time_format(ns, b)) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

json_t *rt_control_create_key(struct rt_control *c, const char *scope, const char *service,
                              const char *name, const struct rt_principal *by,
                              struct rt_error *err)
{
    enum rt_scope sc = rt__control_scope_parse(scope);
    if (sc == RT_SCOPE_NONE) {
        rt_error_set(err, RT_EINVAL, "scope must be admin, read or ingest");
        return NULL;
    }
    if (service && *service && sc != RT_SCOPE_INGEST) {
        rt_error_set(err, RT_EINVAL, "only ingest keys can be bound to a service");
        return NULL;
    }
    if ((service && strlen(service) > 200) || (name && strlen(name) > 95)) {
        rt_error_set(err, RT_EINVAL, "service is at most 200 bytes, name at most 95");
        return NULL;
    }
    char token[64], idtxt[32], detail[320];
    int64_t id, at;
    new_token(token, sizeof(token));
    if (add_key(c, sc, service, name, token, &id, &at, err)) {
        sodium_memzero(token, sizeof(token));
        return NULL;
    }
    snprintf(idtxt, sizeof(idtxt), "%lld", (long long)id);
    snprintf(detail, sizeof(detail), "scope %s%s%s", rt_control_scope_name(sc),
             service && *service ? ", service " : "", service && *service ? service : "");
    rt_control_audit(c, by, "key.create", idtxt, detail, NULL);
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:s, s:o}", "id", idtxt, "scope",
                          rt_control_scope_name(sc), "service", str_or_null(service), "name",
                          str_or_null(name), "key", token, "created_at", time_or_null(at));
    sodium_memzero(token, sizeof(token));
    return o;
}

json_t *rt_control_list_keys(struct rt_control *c, struct rt_error *err)
{
    json_t *arr = json_array();
    pthread_rwlock_rdlock(&c->lock);
    for (size_t i = 0; i < c->nkeys; i++) {
        const struct rt__control_key *k = &c->keys[i];
        char id[32];
        snprintf(id, sizeof(id), "%lld", (long long)k->id);
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "id", id, "scope",
                           rt_control_scope_name(k->scope), "service", str_or_null(k->service),
                           "name", str_or_null(k->name), "created_at",
                           time_or_null(k->created_at_ns), "revoked_at",
                           time_or_null(k->revoked_at_ns)));
    }
    pthread_rwlock_unlock(&c->lock);
    return arr;
}

int rt_control_revoke_key(struct rt_control *c, int64_t id, const struct rt_principal *by,
                          struct rt_error *err)
{
    int64_t now = rt_time_now_ns();
    int rc = rt_store_revoke_key(c->store, id, now, err);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&c->lock);
    for (size_t i = 0; i < c->nkeys; i++)
        if (c->keys[i].id == id)
            c->keys[i].revoked_at_ns = now;
    c->gen++;
    pthread_rwlock_unlock(&c->lock);
    char idtxt[32];
    snprintf(idtxt, sizeof(idtxt), "%lld", (long long)id);
    rt_control_audit(c, by, "key.revoke", idtxt, NULL, NULL);
    return 0;
}
