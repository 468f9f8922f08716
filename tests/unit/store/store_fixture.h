/* Helpers shared by the store's unit tests: temporary data directories (or, with
 * ROOTTRACE_TEST_STORE=clickhouse:http://HOST:PORT, a ClickHouse database per directory, so
 * that one conformance suite runs against both backends) and profiles built from folded-like
 * stack strings ("a;b;c" root first). */
#ifndef RT_STORE_FIXTURE_H
#define RT_STORE_FIXTURE_H

#include <curl/curl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/profile.h"
#include "rt/store.h"
#include "rt/str.h"

/* The ClickHouse server the tests run against ("clickhouse:http://HOST:PORT" from
 * ROOTTRACE_TEST_STORE), or NULL for SQLite. */
static inline const char *fixture_clickhouse(void)
{
    const char *e = getenv("ROOTTRACE_TEST_STORE");
    return e && strncmp(e, "clickhouse:", 11) == 0 ? e : NULL;
}

/* The ClickHouse cluster the store's tables are replicated on (ROOTTRACE_TEST_CLUSTER, with a
 * clickhouse: store; scripts/test-clickhouse.sh sets it for its cluster run), or NULL. */
static inline const char *fixture_cluster(void)
{
    const char *e = getenv("ROOTTRACE_TEST_CLUSTER");
    return fixture_clickhouse() && e && *e ? e : NULL;
}

/* Skips the rest of a test that is inherently SQLite's when running against ClickHouse. */
#define SKIP_ON_CLICKHOUSE(reason)                                                        \
    do {                                                                                 \
        if (fixture_clickhouse()) {                                                      \
            fprintf(stderr, "skip %s on clickhouse: %s\n", __func__, reason);            \
            return;                                                                      \
        }                                                                                \
    } while (0)

/* The ClickHouse database a data directory stands for: rt_<basename>, other bytes as _. */
static inline void fixture_dbname(const char *dir, char *out, size_t n)
{
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    int len = snprintf(out, n, "rt_%s", base);
    for (int i = 0; i < len && (size_t)i < n; i++)
        if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= 'A' && out[i] <= 'Z') ||
              (out[i] >= '0' && out[i] <= '9')))
            out[i] = '_';
}

/* The store URI of a data directory: the directory, or its ClickHouse database. */
static inline void fixture_uri(const char *dir, char *out, size_t n)
{
    const char *ch = fixture_clickhouse();
    if (!ch) {
        snprintf(out, n, "%s", dir);
        return;
    }
    char db[128];
    fixture_dbname(dir, db, sizeof(db));
    const char *cluster = fixture_cluster();
    snprintf(out, n, "%s/%s%s%s", ch, db, cluster ? "?cluster=" : "", cluster ? cluster : "");
}

static inline size_t fixture_ch_body(char *p, size_t size, size_t n, void *ud)
{
    char *out = ud;
    size_t have = strlen(out), add = size * n;
    if (have + add < 256) {
        memcpy(out + have, p, add);
        out[have + add] = '\0';
    }
    return size * n;
}

/* One integer from sql run on the ClickHouse database of dir (-1 on failure). */
static inline int64_t fixture_ch_int(const char *dir, const char *sql)
{
    char db[128], url[512], out[256] = "";
    fixture_dbname(dir, db, sizeof(db));
    snprintf(url, sizeof(url), "%s/?database=%s&insert_distributed_sync=1",
             fixture_clickhouse() + 11, db);
    CURL *h = curl_easy_init();
    if (!h)
        return -1;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fixture_ch_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)out);
    long status = 0;
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    return cc == CURLE_OK && status == 200 ? strtoll(out, NULL, 10) : -1;
}

/* Opens the store of a data directory (SQLite or its ClickHouse database). */
static inline struct rt_store *fixture_open(const char *dir, struct rt_error *err)
{
    char uri[600];
    fixture_uri(dir, uri, sizeof(uri));
    return rt_store_open(uri, err);
}

/* A new empty directory under /tmp (caller frees the path and removes the directory). */
static inline char *fixture_tmpdir(void)
{
    char *d = strdup("/tmp/rt_store_test_XXXXXX");
    if (!d || !mkdtemp(d)) {
        perror("mkdtemp");
        exit(2);
    }
    return d;
}

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a directory tree and frees its path. */
static inline void fixture_rmdir(char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* Adds a stack given as "root;child;leaf". */
static inline int fixture_add(struct rt_profile *p, const char *folded, double samples,
                              int64_t value)
{
    struct rt_str frames[64];
    size_t n = 0;
    const char *s = folded;
    while (*s && n < 64) {
        const char *e = strchr(s, ';');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        frames[n++] = (struct rt_str){s, len};
        s += len + (e ? 1 : 0);
    }
    return rt_profile_add_stack(p, frames, n, samples, value);
}

/* A profile with metadata; fields NULL are left unset. */
static inline struct rt_profile *fixture_profile(enum rt_ptype t, const char *service,
                                          const char *instance, const char *version,
                                          const char *profile_id, int64_t time_ns,
                                          int64_t duration_ns)
{
    struct rt_profile *p = rt_profile_new(t);
    if (!p)
        exit(2);
    rt_profile_set_str(&p->service, service);
    rt_profile_set_str(&p->instance, instance);
    rt_profile_set_str(&p->version, version);
    rt_profile_set_str(&p->profile_id, profile_id);
    p->time_ns = time_ns;
    p->duration_ns = duration_ns;
    return p;
}

/* Stores one profile; returns the put's result code and fills *res. */
static inline int fixture_put(struct rt_store *s, struct rt_profile *p,
                              struct rt_store_put_result *res)
{
    struct rt_error err = {0};
    struct rt_store_put_result local;
    int rc = rt_store_put_profiles(s, &p, 1, res ? res : &local, &err);
    if (rc)
        fprintf(stderr, "put: %s\n", err.msg);
    return rc;
}

/* The name of a stored frame in a buffer of the fixture's (valid until the next call; not for
 * threads: fixture_folded is), or NULL when unknown. */
static inline const char *fixture_frame_name(struct rt_store *s, uint32_t frame_id)
{
    static char buf[4096];
    struct rt_arena a;
    rt_arena_init(&a);
    const char *name = rt_store_frame_name(s, frame_id, &a);
    if (name)
        snprintf(buf, sizeof(buf), "%s", name);
    rt_arena_cleanup(&a);
    return name ? buf : NULL;
}

/* Writes the folded form of a stored stack ("a;b;c") into out (thread-safe: readers of the
 * concurrency test call it at once). */
static inline void fixture_folded(struct rt_store *s, uint32_t stack_id, char *out,
                                  size_t cap)
{
    uint32_t frames[RT_MAX_STACK_DEPTH + 1];
    size_t depth;
    out[0] = '\0';
    if (rt_store_stack(s, stack_id, frames, RT_MAX_STACK_DEPTH + 1, &depth) != 0) {
        snprintf(out, cap, "<no stack %u>", stack_id);
        return;
    }
    struct rt_arena names;
    rt_arena_init(&names);
    size_t len = 0;
    for (size_t i = 0; i < depth && len < cap; i++) {
        const char *name = rt_store_frame_name(s, frames[i], &names);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ";" : "",
                                name ? name : "<null>");
    }
    rt_arena_cleanup(&names);
}

#endif
