/* Key storage (DESIGN §9, docs/security.md "Token storage"): what reaches the store is the
 * BLAKE2b-256 hash of a key, never the key, and authentication finds a key by hashing what
 * the client sent, so a key the server never saw in clear still authenticates when its hash
 * is stored. (The constant-time comparison itself is a static check in
 * tests/integration/test_security.py: nothing in a unit test can observe it without timing.) */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/control.h"
#include "rt/timeutil.h"
#include "test.h"

static char dir[] = "/tmp/rt-keystore-XXXXXX";

/* Every stored key row, copied (hash, scope, and the text fields joined). */
struct rows {
    size_t n;
    uint8_t hash[8][32];
    char text[8][320];
    int64_t revoked[8];
};

static int collect(void *ud, const struct rt_key *k)
{
    struct rows *r = ud;
    if (r->n == 8)
        return 0;
    memcpy(r->hash[r->n], k->hash, 32);
    snprintf(r->text[r->n], sizeof(r->text[r->n]), "%s|%s|%s", k->scope,
             k->service ? k->service : "", k->name ? k->name : "");
    r->revoked[r->n] = k->revoked_at_ns;
    r->n++;
    return 0;
}

static void blake2b(const char *token, uint8_t out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)token, strlen(token), NULL, 0);
}

/* Created keys reach the store as their hash only: the row holds BLAKE2b-256(secret) and no
 * field of it holds the secret or a prefix of it. */
static void test_store_holds_hashes_only(void)
{
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    struct rt_control *c = rt_control_new(s, 10, &err);
    char *shown = NULL;
    CHECK_INT(rt_control_bootstrap(c, "env-bootstrap-token-0123456789", &shown, &err), 0);
    struct rt_principal admin;
    rt_control_local_principal(&admin);
    json_t *k = rt_control_create_key(c, "ingest", "shop", "ci", &admin, &err);
    CHECK(k != NULL);
    const char *secret = json_string_value(json_object_get(k, "key"));
    CHECK(secret && strlen(secret) == 46);

    struct rows r = {0};
    CHECK_INT(rt_store_scan_keys(s, collect, &r, &err), 0);
    CHECK_INT(r.n, 2);
    uint8_t want[2][32];
    blake2b("env-bootstrap-token-0123456789", want[0]);
    blake2b(secret, want[1]);
    for (size_t i = 0; i < r.n && i < 2; i++) {
        CHECK(memcmp(r.hash[i], want[i], 32) == 0);
        CHECK(strstr(r.text[i], "rt_") == NULL);
        CHECK(strstr(r.text[i], "env-bootstrap") == NULL);
    }
    /* the secret's bytes are not the stored bytes (no truncation or encoding of it) */
    CHECK(memcmp(r.hash[1], secret, 32) != 0);
    CHECK(memcmp(r.hash[1], secret + 3, 32) != 0);
    json_decref(k);
    rt_control_free(c);
    rt_store_free(s);
}

/* A key whose hash alone was stored (the server never saw it) authenticates after a restart;
 * a key differing in its last character does not; a revoked row stays refused. */
static void test_lookup_is_by_hash(void)
{
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    const char *token = "rt_stored-only-as-a-hash-0123456789abcdefghijk";
    struct rt_key k = {.scope = "read", .name = "hash-only",
                       .created_at_ns = rt_time_now_ns()};
    blake2b(token, k.hash);
    int64_t id = 0, id2 = 0;
    CHECK_INT(rt_store_put_key(s, &k, &id, &err), 0);
    const char *gone = "rt_revoked-stored-as-a-hash-0123456789abcdefgh";
    blake2b(gone, k.hash);
    CHECK_INT(rt_store_put_key(s, &k, &id2, &err), 0);
    CHECK_INT(rt_store_revoke_key(s, id2, rt_time_now_ns(), &err), 0);

    struct rt_control *c = rt_control_new(s, 10, &err);
    struct rt_principal who;
    CHECK(rt_control_authenticate(c, token, &who));
    CHECK_INT(who.scope, RT_SCOPE_READ);
    CHECK_INT(who.key_id, id);
    char near[64];
    snprintf(near, sizeof(near), "%s", token);
    near[strlen(near) - 1] ^= 1;
    CHECK(!rt_control_authenticate(c, near, &who));
    near[strlen(near) - 1] = '\0';
    CHECK(!rt_control_authenticate(c, near, &who));
    CHECK(!rt_control_authenticate(c, gone, &who));
    rt_control_free(c);
    rt_store_free(s);
}

int main(void)
{
    if (!mkdtemp(dir) || sodium_init() < 0)
        return 1;
    RUN(test_store_holds_hashes_only);
    RUN(test_lookup_is_by_hash);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TEST_DONE();
}
