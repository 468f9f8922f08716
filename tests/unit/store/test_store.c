/* Tests of the store interface (server/src/store/store.c, sqlite/ and clickhouse/) on
 * SQLite, or on ClickHouse with ROOTTRACE_TEST_STORE (store_fixture.h):
 * round trips, persistence, dedup, window semantics, filters, a full disk, corruption, and
 * concurrent writers and readers. Deploys, issues, services, polls and retention are in
 * test_store_meta.c. */
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "rt/producer.h"
#include "store/sqlite/sqlite_int.h"
#include "store_fixture.h"
#include "store_scan.h"
#include "test.h"

/* Runs SQL directly on the database file of a data directory. */
static int exec_sql(const char *dir, const char *sql)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/roottrace.db", dir);
    sqlite3 *db;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

/* ---- tests ---- */

static void test_open_modes(void)
{
    SKIP_ON_CLICKHOUSE("checks SQLite files, their modes and URIs");
    char *base = fixture_tmpdir();
    char dir[512], file[600];
    snprintf(dir, sizeof(dir), "%s/data/sub", base);
    struct rt_store *s = open_dir(dir);
    CHECK(s != NULL);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    snprintf(file, sizeof(file), "%s/roottrace.db", dir);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(rt_store_disk_bytes(s) > 0);
    CHECK_INT(rt_store_profile_count(s), 0);
    rt_store_free(s);

    /* sqlite:PATH names the file itself */
    char uri[700];
    snprintf(uri, sizeof(uri), "sqlite:%s/other/x.db", base);
    struct rt_error err = {0};
    s = rt_store_open(uri, &err);
    CHECK(s != NULL);
    rt_store_free(s);
    snprintf(file, sizeof(file), "%s/other/x.db", base);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);

    CHECK(rt_store_open("clickhouse://x", &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    /* a file that is not a database */
    snprintf(file, sizeof(file), "%s/junk", base);
    FILE *f = fopen(file, "w");
    fputs("this is not a database, not at all, not even close to one.........", f);
    fclose(f);
    snprintf(uri, sizeof(uri), "sqlite:%s", file);
    CHECK(rt_store_open(uri, &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strlen(err.msg) > 0);
    rt_store_free(NULL);
    fixture_rmdir(base);
}

static int stop(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rw, size_t n)
{
    (void)ud, (void)m, (void)rw, (void)n;
    return 42;
}

static void test_roundtrip(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "p-1", T0, 10 * S);
    struct rt_profile *b = fixture_profile(RT_PTYPE_CPU, "shop", "i-2", NULL, NULL, T0 + 10 * S,
                                           10 * S);
    fixture_add(b, "main;handle;parse", 1e15, 7);     /* huge count */
    fixture_add(b, "other;x", 0.25, INT64_MAX / 4); /* fractional, large value */
    b->process_cpu_ns = 55;
    b->truncated_stacks = 2;
    b->producer = rt_producer_of_upload("node", RT_PTYPE_CPU);
    b->cpu_scale = 0.3125; /* stored as given: ingest settles it (rt/producer.h) */
    b->declared_type = RT_PTYPE_WALL; /* stored as given, whatever the type (DESIGN §12) */
    struct rt_profile *ps[] = {a, b};
    struct rt_store_put_result res[2];
    struct rt_error err = {0};
    CHECK_INT(rt_store_put_profiles(s, ps, 2, res, &err), 0);
    CHECK(res[0].id > 0 && res[1].id > res[0].id);
    CHECK(!res[0].duplicate && !res[1].duplicate);
    CHECK_INT(rt_store_profile_count(s), 2);

    struct got g;
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 2);
    struct got_prof *p = &g.p[0];
    CHECK_INT(p->id, res[0].id);
    CHECK_STR(p->profile_id, "p-1");
    CHECK_STR(p->instance, "i-1");
    CHECK_STR(p->version, "v1");
    CHECK_INT(p->time_ns, T0);
    CHECK_INT(p->duration_ns, 10 * S);
    CHECK_INT(p->period_ns, 10000000);
    CHECK_INT(p->thread_cpu_ns, 123);
    CHECK_INT(p->process_cpu_ns, -1);
    CHECK_NEAR(p->samples, 6.5, 0);
    CHECK_INT(p->value_ns, 30000000 + 25000001 - 5);
    CHECK(p->has_counts);
    CHECK_STR(p->producer, ""); /* a profile that names no producer: unknown, factor 1 */
    CHECK_INT(p->declared_type, 0);
    CHECK_NEAR(p->cpu_scale, 1, 0);
    CHECK_INT(p->nrows, 3);
    const struct got_row *r = find_row(p, "main;handle;parse");
    CHECK(r && r->samples == 3 && r->value == 30000000);
    r = find_row(p, "main;handle;render");
    CHECK(r && r->samples == 2.5 && r->value == 25000001);
    r = find_row(p, "main;idle");
    CHECK(r && r->samples == 1 && r->value == -5);

    p = &g.p[1];
    CHECK(!p->has_pid && !p->has_version);
    CHECK_STR(p->instance, "i-2");
    CHECK_INT(p->process_cpu_ns, 55);
    CHECK_INT(p->truncated, 2);
    CHECK_STR(p->producer, "roottrace-node");
    CHECK_NEAR(p->cpu_scale, 0.3125, 0);
    CHECK_INT(p->declared_type, RT_PTYPE_WALL);
    CHECK(!p->has_counts);
    r = find_row(p, "main;handle;parse");
    CHECK(r && r->samples == 1e15 && r->value == 7);
    r = find_row(p, "other;x");
    CHECK(r && r->samples == 0.25 && r->value == INT64_MAX / 4);
    /* the shared stack is interned once */
    CHECK_INT(count_rows(dir, "stacks"), 4);
    CHECK_INT(count_rows(dir, "frames"), 7);

    /* other type, other service: nothing */
    CHECK_INT(scan(s, "shop", RT_PTYPE_WALL, T0, T0 + 60 * S, NULL, NULL, &g), 0);
    CHECK_INT(scan(s, "nope", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 0);

    /* a profile with zero samples and a duration is stored (idle coverage) */
    struct rt_profile *idle = fixture_profile(RT_PTYPE_CPU, "shop", "i-3", NULL, "idle",
                                              T0 + 20 * S, 10 * S);
    CHECK_INT(fixture_put(s, idle, NULL), 0);
    rt_profile_free(idle);
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0 + 20 * S, T0 + 30 * S, NULL, NULL, &g), 1);
    CHECK_INT(g.p[0].nrows, 0);
    CHECK_NEAR(g.p[0].samples, 0, 0);
    CHECK_INT(rt_store_profile_count(s), 3);

    /* invalid input */
    struct rt_profile *bad = fixture_profile(RT_PTYPE_CPU, NULL, NULL, NULL, NULL, T0, S);
    CHECK_INT(rt_store_put_profiles(s, &bad, 1, res, &err), RT_EINVAL);
    rt_profile_free(bad);
    CHECK_INT(rt_store_profile_count(s), 3);

    /* a callback's non-zero value stops the scan and is returned */
    struct rt_store_filter f = {"shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL};
    CHECK_INT(rt_store_scan(s, &f, stop, NULL, &err), 42);

    rt_profile_free(a);
    rt_profile_free(b);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Cancels the store's reads at the first profile it is called with; counts its calls. */
static int cancel_at_first(void *ud, const struct rt_profile_meta *m,
                           const struct rt_store_row *rw, size_t n)
{
    (void)m, (void)rw, (void)n;
    struct got *g = ud;
    if (g->n++ == 0)
        rt_store_cancel_reads(g->s);
    return 0;
}

static void test_cancel_reads(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "p-1", T0, 10 * S);
    struct rt_profile *b = sample_profile("shop", "i-1", "p-2", T0 + 10 * S, 10 * S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    CHECK_INT(fixture_put(s, b, NULL), 0);
    struct rt_error err = {0};
    CHECK_INT(rt_store_check_cancelled(s, &err), 0);
    /* a scan running when the reads are cancelled stops at its next profile */
    struct got g = {.s = s};
    struct rt_store_filter f = {"shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL};
    CHECK_INT(rt_store_scan(s, &f, cancel_at_first, &g, &err), RT_ECANCELED);
    CHECK_INT(g.n, 1);
    CHECK(strstr(err.msg, "the server is stopping") != NULL);
    /* so do the scans that follow, and the check between a query's phases */
    g.n = 0;
    CHECK_INT(rt_store_scan(s, &f, collect, &g, &err), RT_ECANCELED);
    CHECK_INT(g.n, 0);
    CHECK_INT(rt_store_check_cancelled(s, &err), RT_ECANCELED);
    /* writes go on: an upload in flight at a stop is stored */
    struct rt_profile *c = sample_profile("shop", "i-1", "p-3", T0 + 20 * S, 10 * S);
    CHECK_INT(fixture_put(s, c, NULL), 0);
    CHECK_INT(rt_store_profile_count(s), 3);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_profile_free(c);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_persistence(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "p-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    rt_store_free(s);

    s = open_dir(dir);
    CHECK(s != NULL);
    CHECK_INT(rt_store_profile_count(s), 1);
    struct got g;
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0, T0 + S, NULL, NULL, &g), 1);
    CHECK(find_row(&g.p[0], "main;handle;parse") != NULL);
    CHECK(find_row(&g.p[0], "main;handle;render") != NULL);
    CHECK(find_row(&g.p[0], "main;idle") != NULL);
    CHECK(fixture_frame_name(s, 999999) == NULL);
    uint32_t fr[RT_MAX_STACK_DEPTH + 1];
    size_t depth;
    CHECK_INT(rt_store_stack(s, 999999, fr, RT_MAX_STACK_DEPTH + 1, &depth), RT_ENOTFOUND);

    /* after reopening, known frames and stacks are found, not inserted again */
    struct rt_profile *b = sample_profile("shop", "i-1", "p-2", T0 + 10 * S, 10 * S);
    fixture_add(b, "main;new", 1, 1);
    CHECK_INT(fixture_put(s, b, NULL), 0);
    CHECK_INT(count_rows(dir, "frames"), 6);
    CHECK_INT(count_rows(dir, "stacks"), 4);
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 2);
    CHECK(find_row(&g.p[1], "main;new") != NULL);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_dedup(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "same", T0, 10 * S);
    struct rt_store_put_result r1, r2, r3;
    CHECK_INT(fixture_put(s, a, &r1), 0);
    CHECK(!r1.duplicate);
    CHECK_INT(fixture_put(s, a, &r2), 0);
    CHECK(r2.duplicate);
    CHECK_INT(r2.id, r1.id);
    CHECK_INT(rt_store_profile_count(s), 1);

    /* same id, other type: a different profile */
    struct rt_profile *w = sample_profile("shop", "i-1", "same", T0, 10 * S);
    w->type = RT_PTYPE_WALL;
    CHECK_INT(fixture_put(s, w, &r3), 0);
    CHECK(!r3.duplicate && r3.id != r1.id);
    CHECK_INT(rt_store_profile_count(s), 2);

    /* twice in one upload */
    struct rt_profile *c = sample_profile("shop", "i-1", "batch", T0, 10 * S);
    struct rt_profile *ps[] = {c, c, a};
    struct rt_store_put_result res[3];
    struct rt_error err = {0};
    CHECK_INT(rt_store_put_profiles(s, ps, 3, res, &err), 0);
    CHECK(!res[0].duplicate && res[1].duplicate && res[2].duplicate);
    CHECK_INT(res[1].id, res[0].id);
    CHECK_INT(res[2].id, r1.id);
    CHECK_INT(rt_store_profile_count(s), 3);

    /* no profile_id: never deduplicated */
    struct rt_profile *n = sample_profile("shop", "i-1", NULL, T0, 10 * S);
    CHECK_INT(fixture_put(s, n, NULL), 0);
    CHECK_INT(fixture_put(s, n, NULL), 0);
    CHECK_INT(rt_store_profile_count(s), 5);
    rt_profile_free(a);
    rt_profile_free(w);
    rt_profile_free(c);
    rt_profile_free(n);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Deduplication drops only a true retry (issue #13): its key is (service, instance, type,
 * profile_id), an empty id is none, a retry answers with the stored profile's figures, and
 * the same id with other content (stacks, start) is a conflict that stores nothing. */
static void test_dedup_scope(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_store_put_result r1, r;
    struct rt_profile *a = sample_profile("shop", "i-1", "id-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, a, &r1), 0);
    CHECK(!r1.duplicate && !r1.conflict);
    CHECK_NEAR(r1.samples, 6.5, 0);
    CHECK_INT(r1.value_ns, a->value_ns);
    /* the same id in another service, and another instance: other profiles */
    struct rt_profile *b = sample_profile("cart", "i-1", "id-1", T0, 10 * S);
    struct rt_profile *j = sample_profile("shop", "i-2", "id-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, b, &r), 0);
    CHECK(!r.duplicate && r.id != r1.id);
    CHECK_INT(fixture_put(s, j, &r), 0);
    CHECK(!r.duplicate && r.id != r1.id);
    CHECK_INT(rt_store_profile_count(s), 3);
    /* a true retry: the stored one's id and figures, even when the retry says other counts */
    struct rt_profile *retry = sample_profile("shop", "i-1", "id-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, retry, &r), 0);
    CHECK(r.duplicate && !r.conflict);
    CHECK_INT(r.id, r1.id);
    CHECK_NEAR(r.samples, 6.5, 0);
    CHECK_INT(r.value_ns, a->value_ns);
    /* the same id with other stacks, or another start: a conflict, nothing stored */
    struct rt_profile *other = fixture_profile(RT_PTYPE_CPU, "shop", "i-1", "v1", "id-1", T0,
                                               10 * S);
    fixture_add(other, "main;work", 5, 50000000);
    CHECK_INT(fixture_put(s, other, &r), 0);
    CHECK(r.duplicate && r.conflict);
    CHECK_INT(r.id, r1.id);
    CHECK_INT(r.value_ns, a->value_ns); /* what is stored, not what was sent */
    struct rt_profile *later = sample_profile("shop", "i-1", "id-1", T0 + S, 10 * S);
    CHECK_INT(fixture_put(s, later, &r), 0);
    CHECK(r.duplicate && r.conflict);
    CHECK_INT(rt_store_profile_count(s), 3);
    struct got g;
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, "i-1", &g), 1);
    CHECK(find_row(&g.p[0], "main;handle;parse") != NULL);
    CHECK(find_row(&g.p[0], "main;work") == NULL);
    CHECK_INT(scan(s, "cart", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 1);
    /* an empty profile_id is none: never a duplicate, stored without an id */
    struct rt_profile *e = sample_profile("shop", "i-1", "", T0, 10 * S);
    CHECK_INT(fixture_put(s, e, &r), 0);
    CHECK(!r.duplicate);
    CHECK_INT(fixture_put(s, e, &r), 0);
    CHECK(!r.duplicate);
    CHECK_INT(rt_store_profile_count(s), 5);
    CHECK_INT(scan(s, "shop", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, "i-1", &g), 3);
    CHECK(!g.p[1].has_pid && !g.p[2].has_pid);
    struct rt_profile *all[] = {a, b, j, retry, other, later, e};
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
        rt_profile_free(all[k]);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_window_edges(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    /* [T0+100, T0+200) */
    struct rt_profile *a = sample_profile("svc", "i", NULL, T0 + 100 * S, 100 * S);
    /* unknown duration at T0+150 */
    struct rt_profile *u = sample_profile("svc", "i", NULL, T0 + 150 * S, -1);
    /* a long profile [T0 - 10000 s, T0 + 10000 s) */
    struct rt_profile *l = sample_profile("svc", "j", NULL, T0 - 10000 * S, 20000 * S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    CHECK_INT(fixture_put(s, u, NULL), 0);
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 200 * S, T0 + 300 * S, NULL, NULL, &g), 0);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 100 * S, NULL, NULL, &g), 0);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 200 * S - 1, T0 + 200 * S, NULL, NULL, &g), 1);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 100 * S + 1, NULL, NULL, &g), 1);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 120 * S, T0 + 130 * S, NULL, NULL, &g), 1);
    /* unknown duration: overlaps when its start is inside */
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 150 * S, T0 + 150 * S + 1, NULL, NULL, &g), 2);
    CHECK_INT(g.p[1].duration_ns, -1);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 150 * S + 1, T0 + 160 * S, NULL, NULL, &g), 1);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 140 * S, T0 + 150 * S, NULL, NULL, &g), 1);
    /* empty window */
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 150 * S, T0 + 150 * S, NULL, NULL, &g), 0);
    /* the long profile is found from a window near its end (the scan's lower bound) */
    CHECK_INT(fixture_put(s, l, NULL), 0);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0 + 9000 * S, T0 + 9500 * S, NULL, NULL, &g), 1);
    CHECK_STR(g.p[0].instance, "j");
    /* ordered by start */
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 1000 * S, NULL, NULL, &g), 3);
    CHECK(g.p[0].time_ns < g.p[1].time_ns && g.p[1].time_ns < g.p[2].time_ns);
    rt_profile_free(a);
    rt_profile_free(u);
    rt_profile_free(l);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_filters(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *p[4];
    p[0] = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v1", NULL, T0, 10 * S);
    p[1] = fixture_profile(RT_PTYPE_CPU, "svc", "b", "v1", NULL, T0, 10 * S);
    p[2] = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v2", NULL, T0 + 10 * S, 10 * S);
    p[3] = fixture_profile(RT_PTYPE_CPU, "svc", NULL, NULL, NULL, T0 + 20 * S, 10 * S);
    for (int i = 0; i < 4; i++) {
        fixture_add(p[i], "x;y", 1, 1);
        CHECK_INT(fixture_put(s, p[i], NULL), 0);
    }
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, NULL, &g), 4);
    CHECK_STR(g.p[3].instance, "");
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, "v1", NULL, &g), 2);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, "a", &g), 2);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, "v2", "a", &g), 1);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, "v2", "b", &g), 0);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 60 * S, NULL, "", &g), 1);
    for (int i = 0; i < 4; i++)
        rt_profile_free(p[i]);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_disk_full(void)
{
    SKIP_ON_CLICKHOUSE("fills SQLite's file with max_page_count");
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    struct rt_profile *a = sample_profile("svc", "i", "first", T0, S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    /* a profile needing many new pages */
    struct rt_profile *big = fixture_profile(RT_PTYPE_CPU, "svc", "i", "v7", "big", T0 + S, S);
    char name[300];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof(name), "lost;frame_%d_%0200d", i, i);
        fixture_add(big, name, 1, 1);
    }
    CHECK_INT(rt__sqlite_test_cap_size(s, true, &err), 0);
    struct rt_store_put_result res;
    CHECK_INT(rt_store_put_profiles(s, &big, 1, &res, &err), RT_EDISKFULL);
    CHECK(strstr(err.msg, "full") != NULL);
    CHECK_INT(rt_store_profile_count(s), 1);
    CHECK_INT(rt__sqlite_test_cap_size(s, false, &err), 0);
    CHECK_INT(count_rows(dir, "frames"), 5);
    /* frames and stacks of the rolled-back upload are not cached: new ones reuse their ids */
    struct rt_profile *b = fixture_profile(RT_PTYPE_CPU, "svc", "i", NULL, "after", T0 + 2 * S, S);
    fixture_add(b, "kept;one", 1, 1);
    fixture_add(b, "kept;two", 1, 1);
    CHECK_INT(fixture_put(s, b, NULL), 0);
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 10 * S, NULL, NULL, &g), 2);
    CHECK(find_row(&g.p[1], "kept;one") != NULL);
    CHECK(find_row(&g.p[1], "kept;two") != NULL);
    /* the full upload can be retried once there is room */
    CHECK_INT(rt_store_put_profiles(s, &big, 1, &res, &err), 0);
    CHECK(!res.duplicate);
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 10 * S, NULL, NULL, &g), 3);
    CHECK_INT(g.p[1].nrows, 3000);
    CHECK(find_row(&g.p[1], "lost;frame_0_" "0000000000000000000000000000000000000000"
                            "0000000000000000000000000000000000000000"
                            "0000000000000000000000000000000000000000"
                            "0000000000000000000000000000000000000000"
                            "0000000000000000000000000000000000000000") != NULL);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_profile_free(big);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_corruption(void)
{
    SKIP_ON_CLICKHOUSE("damages SQLite's file by hand");
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "p-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    rt_store_free(s);
    /* a damaged stack: reported, not read past its end */
    CHECK_INT(exec_sql(dir, "UPDATE stacks SET frames = x'ff' WHERE id = 1"), SQLITE_OK);
    s = open_dir(dir);
    uint32_t fr[RT_MAX_STACK_DEPTH + 1];
    size_t depth;
    CHECK_INT(rt_store_stack(s, 1, fr, RT_MAX_STACK_DEPTH + 1, &depth), RT_EIO);
    CHECK_INT(rt_store_stack(s, 2, fr, RT_MAX_STACK_DEPTH + 1, &depth), 0);
    CHECK_INT(rt_store_stack(s, 2, fr, 0, &depth), RT_ETOOBIG); /* no room to copy into */
    /* damaged rows: the scan fails with a message */
    CHECK_INT(exec_sql(dir, "UPDATE profiles SET rows = x'0100ff'"), SQLITE_OK);
    struct rt_store_filter f = {"shop", RT_PTYPE_CPU, T0, T0 + S, NULL, NULL};
    struct rt_error err = {0};
    struct got g = {.s = s};
    CHECK_INT(rt_store_scan(s, &f, collect, &g, &err), RT_EIO);
    CHECK(strstr(err.msg, "unreadable") != NULL);
    rt_store_free(s);
    /* a database from a newer roottrace is refused */
    CHECK_INT(exec_sql(dir, "PRAGMA user_version = 99"), SQLITE_OK);
    CHECK(rt_store_open(dir, &err) == NULL);
    CHECK_INT(err.code, RT_EIO);
    CHECK(strstr(err.msg, "newer") != NULL);
    rt_profile_free(a);
    fixture_rmdir(dir);
}

/* ---- concurrency ---- */

#define WRITERS 4
#define READERS 4
#define PUTS 40

struct worker {
    struct rt_store *s;
    int n;        /* writer number */
    int failures; /* checks that failed inside the thread */
    int scans;    /* scans a reader completed */
};

static void *writer_main(void *arg)
{
    struct worker *w = arg;
    char inst[16], stack[96];
    snprintf(inst, sizeof(inst), "w%d", w->n);
    for (int i = 0; i < PUTS; i++) {
        struct rt_profile *p =
            fixture_profile(RT_PTYPE_CPU, "conc", inst, "v1", NULL, T0 + i * S, S);
        fixture_add(p, "main;shared;leaf", 1, 10);
        snprintf(stack, sizeof(stack), "main;w%d;f%d", w->n, i % 7);
        fixture_add(p, stack, 2, 20);
        snprintf(stack, sizeof(stack), "main;u%d_%d", w->n, i);
        fixture_add(p, stack, 3, 30);
        if (fixture_put(w->s, p, NULL))
            w->failures++;
        if (i % 8 == 0) {
            struct rt_error err;
            if (rt_store_put_poll(w->s, "conc", inst, T0 + i * S, &err))
                w->failures++;
        }
        rt_profile_free(p);
    }
    return NULL;
}

/* Every row of every profile must resolve to "main;...". */
static int check_rows(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                      size_t nrows)
{
    struct worker *w = ud;
    if (nrows != 3)
        w->failures++;
    for (size_t i = 0; i < nrows; i++) {
        char folded[256];
        fixture_folded(w->s, rows[i].stack_id, folded, sizeof(folded));
        if (strncmp(folded, "main;", 5) != 0 || strstr(folded, "<")) {
            fprintf(stderr, "unresolved stack %u: %s\n", rows[i].stack_id, folded);
            w->failures++;
        }
    }
    (void)m;
    return 0;
}

static void *reader_main(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 60; i++) {
        struct rt_store_filter f = {"conc", RT_PTYPE_CPU, T0, T0 + PUTS * S, NULL, NULL};
        struct rt_error err;
        if (rt_store_scan(w->s, &f, check_rows, w, &err))
            w->failures++;
        struct alive a = {0};
        if (rt_store_scan_liveness(w->s, "conc", T0, T0 + PUTS * S, collect_alive, &a, &err))
            w->failures++;
        if (rt_store_profile_count(w->s) < 0)
            w->failures++;
        w->scans++;
    }
    return NULL;
}

static void test_concurrency(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    pthread_t th[WRITERS + READERS];
    struct worker ws[WRITERS + READERS];
    for (int i = 0; i < WRITERS + READERS; i++) {
        ws[i] = (struct worker){.s = s, .n = i};
        pthread_create(&th[i], NULL, i < WRITERS ? writer_main : reader_main, &ws[i]);
    }
    for (int i = 0; i < WRITERS + READERS; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(ws[i].failures, 0);
    }
    CHECK_INT(rt_store_profile_count(s), WRITERS * PUTS);
    /* frames: main, shared, leaf, w0..w3, f0..f6, and one u per profile */
    CHECK_INT(count_rows(dir, "frames"), 3 + WRITERS + 7 + WRITERS * PUTS);
    CHECK_INT(count_rows(dir, "stacks"), 1 + WRITERS * 7 + WRITERS * PUTS);
    struct worker check = {.s = s};
    struct rt_store_filter f = {"conc", RT_PTYPE_CPU, T0, T0 + PUTS * S, NULL, NULL};
    struct rt_error err;
    CHECK_INT(rt_store_scan(s, &f, check_rows, &check, &err), 0);
    CHECK_INT(check.failures, 0);
    rt_store_free(s);

    /* a second store on the same file (another process) sees every frame */
    s = open_dir(dir);
    check.s = s;
    CHECK_INT(rt_store_scan(s, &f, check_rows, &check, &err), 0);
    CHECK_INT(check.failures, 0);
    rt_store_free(s);
    fixture_rmdir(dir);
}

/* Two stores open on one database at once, as the server and the CLI would be. */
static void test_two_handles(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s1 = open_dir(dir), *s2 = open_dir(dir);
    struct rt_profile *a = sample_profile("svc", "i", "one", T0, S);
    CHECK_INT(fixture_put(s1, a, NULL), 0);
    struct got g;
    CHECK_INT(scan(s2, "svc", RT_PTYPE_CPU, T0, T0 + S, NULL, NULL, &g), 1);
    CHECK(find_row(&g.p[0], "main;handle;parse") != NULL);
    /* s2 interns the same frames without inserting them twice */
    struct rt_profile *b = sample_profile("svc", "i", "two", T0 + S, S);
    CHECK_INT(fixture_put(s2, b, NULL), 0);
    CHECK_INT(count_rows(dir, "frames"), 5);
    CHECK_INT(count_rows(dir, "stacks"), 3);
    struct rt_store_put_result r;
    CHECK_INT(fixture_put(s1, b, &r), 0);
    CHECK(r.duplicate);
    CHECK_INT(rt_store_profile_count(s1), 2);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_store_free(s1);
    rt_store_free(s2);
    fixture_rmdir(dir);
}

int main(void)
{
    RUN(test_open_modes);
    RUN(test_roundtrip);
    RUN(test_cancel_reads);
    RUN(test_persistence);
    RUN(test_dedup);
    RUN(test_dedup_scope);
    RUN(test_window_edges);
    RUN(test_filters);
    RUN(test_disk_full);
    RUN(test_corruption);
    RUN(test_concurrency);
    RUN(test_two_handles);
    return TEST_DONE();
}
