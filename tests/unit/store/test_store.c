/* Tests of the store interface on the SQLite backend (server/src/store/store.c and sqlite_*.c):
 * round trips, persistence, dedup, window semantics, filters, deploys, issues, services,
 * polls and liveness, retention, a full disk, and concurrent writers and readers. */
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/sqlite_int.h"
#include "store_fixture.h"
#include "test.h"

#define S (1000000000LL) /* one second in ns */
#define T0 (1764460800LL * S)

/* ---- scan collection ---- */

struct got_row {
    char folded[256];
    double samples;
    int64_t value;
};

struct got_prof {
    int64_t id;
    char profile_id[64], instance[64], version[64];
    bool has_pid, has_version;
    int64_t time_ns, duration_ns, period_ns, thread_cpu_ns, process_cpu_ns, value_ns;
    double samples;
    bool has_counts;
    uint32_t truncated;
    size_t nrows;
    struct got_row rows[16];
};

struct got {
    struct rt_store *s;
    size_t n;
    struct got_prof p[64];
};

static int collect(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                   size_t nrows)
{
    struct got *g = ud;
    if (g->n >= 64)
        return 0;
    struct got_prof *p = &g->p[g->n++];
    memset(p, 0, sizeof(*p));
    p->id = m->id;
    p->has_pid = m->profile_id != NULL;
    snprintf(p->profile_id, sizeof(p->profile_id), "%s", m->profile_id ? m->profile_id : "");
    snprintf(p->instance, sizeof(p->instance), "%s", m->instance);
    p->has_version = m->version != NULL;
    snprintf(p->version, sizeof(p->version), "%s", m->version ? m->version : "");
    p->time_ns = m->time_ns;
    p->duration_ns = m->duration_ns;
    p->period_ns = m->period_ns;
    p->thread_cpu_ns = m->thread_cpu_ns;
    p->process_cpu_ns = m->process_cpu_ns;
    p->samples = m->samples;
    p->value_ns = m->value_ns;
    p->has_counts = m->has_counts;
    p->truncated = m->truncated_stacks;
    p->nrows = nrows;
    for (size_t i = 0; i < nrows && i < 16; i++) {
        fixture_folded(g->s, rows[i].stack_id, p->rows[i].folded, sizeof(p->rows[i].folded));
        p->rows[i].samples = rows[i].samples;
        p->rows[i].value = rows[i].value_ns;
    }
    return 0;
}

static size_t scan(struct rt_store *s, const char *svc, enum rt_ptype t, int64_t from, int64_t to,
                   const char *version, const char *instance, struct got *g)
{
    struct rt_store_filter f = {svc, t, from, to, version, instance};
    struct rt_error err = {0};
    g->s = s;
    g->n = 0;
    int rc = rt_store_scan(s, &f, collect, g, &err);
    if (rc)
        fprintf(stderr, "scan: %d %s\n", rc, err.msg);
    return g->n;
}

static const struct got_row *find_row(const struct got_prof *p, const char *folded)
{
    for (size_t i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].folded, folded) == 0)
            return &p->rows[i];
    return NULL;
}

static struct rt_store *open_dir(const char *dir)
{
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    if (!s)
        fprintf(stderr, "open %s: %s\n", dir, err.msg);
    return s;
}

/* A cpu profile of svc with three stacks. */
static struct rt_profile *sample_profile(const char *svc, const char *inst, const char *pid,
                                         int64_t t, int64_t dur)
{
    struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, svc, inst, "v1", pid, t, dur);
    p->period_ns = 10000000;
    p->has_counts = true;
    p->thread_cpu_ns = 123;
    fixture_add(p, "main;handle;parse", 3, 30000000);
    fixture_add(p, "main;handle;render", 2.5, 25000001);
    fixture_add(p, "main;idle", 1, -5);
    return p;
}

/* Number of rows of a table, read directly from the database file. */
static int64_t count_rows(const char *dir, const char *table)
{
    char path[512], sql[128];
    snprintf(path, sizeof(path), "%s/roottrace.db", dir);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    sqlite3 *db;
    int64_t n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
    return n;
}

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
    CHECK(rt_store_frame_name(s, 999999) == NULL);
    const uint32_t *fr;
    size_t depth;
    CHECK_INT(rt_store_stack(s, 999999, &fr, &depth), RT_ENOTFOUND);

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

struct deploys {
    int n;
    char text[8][96];
};

static int collect_deploy(void *ud, const struct rt_deploy *d)
{
    struct deploys *ds = ud;
    if (ds->n < 8)
        snprintf(ds->text[ds->n++], 96, "%s %s %s %lld", d->service, d->version, d->source,
                 (long long)((d->at_ns - T0) / S));
    return 0;
}

static void test_deploys(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *p1 = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v1", NULL, T0, S);
    struct rt_profile *p2 = fixture_profile(RT_PTYPE_CPU, "svc", "b", "v1", NULL, T0 + 5 * S, S);
    struct rt_profile *p3 = fixture_profile(RT_PTYPE_WALL, "svc", "a", "v2", NULL, T0 + 9 * S, S);
    struct rt_profile *p4 = fixture_profile(RT_PTYPE_CPU, "other", "a", "v1", NULL, T0 + 7 * S, S);
    struct rt_profile *all[] = {p1, p2, p3, p4};
    for (int i = 0; i < 4; i++)
        CHECK_INT(fixture_put(s, all[i], NULL), 0);
    struct rt_error err = {0};
    struct rt_deploy d = {"svc", "v3", "declared", T0 + 8 * S};
    CHECK_INT(rt_store_put_deploy(s, &d, &err), 0);
    d.source = "guessed";
    CHECK_INT(rt_store_put_deploy(s, &d, &err), RT_EINVAL);

    struct deploys ds = {0};
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0, T0 + 60 * S, collect_deploy, &ds, &err), 0);
    CHECK_INT(ds.n, 3);
    CHECK_STR(ds.text[0], "svc v1 observed 0");
    CHECK_STR(ds.text[1], "svc v3 declared 8");
    CHECK_STR(ds.text[2], "svc v2 observed 9");
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, NULL, T0, T0 + 60 * S, collect_deploy, &ds, &err), 0);
    CHECK_INT(ds.n, 4);
    CHECK_STR(ds.text[1], "other v1 observed 7");
    /* half-open */
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0 + 8 * S, T0 + 9 * S, collect_deploy, &ds, &err),
              0);
    CHECK_INT(ds.n, 1);
    /* a profile without a start time: the deploy is at now */
    struct rt_profile *p5 = fixture_profile(RT_PTYPE_CPU, "svc", "a", "v9", NULL, 0, S);
    CHECK_INT(fixture_put(s, p5, NULL), 0);
    memset(&ds, 0, sizeof(ds));
    CHECK_INT(rt_store_scan_deploys(s, "svc", T0 + 3600 * S, INT64_MAX, collect_deploy, &ds, &err),
              0);
    CHECK_INT(ds.n, 1);
    for (int i = 0; i < 4; i++)
        rt_profile_free(all[i]);
    rt_profile_free(p5);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct issues {
    int n;
    int64_t ids[8];
    char titles[8][32];
    int64_t started[8], created[8];
};

static int collect_issue(void *ud, const struct rt_issue *i)
{
    struct issues *is = ud;
    if (is->n < 8) {
        is->ids[is->n] = i->id;
        snprintf(is->titles[is->n], 32, "%s/%s", i->service, i->title);
        is->started[is->n] = i->started_at_ns;
        is->created[is->n++] = i->created_at_ns;
    }
    return 0;
}

static void test_issues(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    int64_t id1 = 0, id2 = 0;
    struct rt_issue a = {0, "svc", "slow checkout", T0, 0};
    struct rt_issue b = {0, "svc", "errors", T0 + 60 * S, T0 + 61 * S};
    CHECK_INT(rt_store_put_issue(s, &a, &id1, &err), 0);
    CHECK_INT(rt_store_put_issue(s, &b, &id2, &err), 0);
    CHECK(id1 > 0 && id2 > id1);
    struct issues is = {0};
    CHECK_INT(rt_store_scan_issues(s, -1, collect_issue, &is, &err), 0);
    CHECK_INT(is.n, 2);
    CHECK_INT(is.ids[0], id2);
    CHECK_STR(is.titles[0], "svc/errors");
    CHECK_INT(is.created[0], T0 + 61 * S);
    CHECK(is.created[1] > T0); /* now */
    memset(&is, 0, sizeof(is));
    CHECK_INT(rt_store_scan_issues(s, id1, collect_issue, &is, &err), 0);
    CHECK_INT(is.n, 1);
    CHECK_STR(is.titles[0], "svc/slow checkout");
    CHECK_INT(is.started[0], T0);
    CHECK_INT(rt_store_scan_issues(s, id2 + 100, collect_issue, &is, &err), RT_ENOTFOUND);
    struct rt_issue bad = {0, "svc", NULL, T0, 0};
    CHECK_INT(rt_store_put_issue(s, &bad, &id1, &err), RT_EINVAL);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct listing {
    int n;
    char text[8][160];
};

static int collect_service(void *ud, const struct rt_service_info *v)
{
    struct listing *l = ud;
    if (l->n < 8)
        snprintf(l->text[l->n++], 160, "%s en=%d cpu=%d wall=%d up=%d", v->name,
                 v->profiling_enabled, v->has_cpu, v->has_wall, v->last_upload_ns > 0);
    return 0;
}

static int collect_instance(void *ud, const struct rt_instance_info *i)
{
    struct listing *l = ud;
    if (l->n < 8)
        snprintf(l->text[l->n++], 160, "%s/%s %s %s %s %s %s %lld", i->service, i->instance,
                 i->runtime ? i->runtime : "-", i->runtime_version ? i->runtime_version : "-",
                 i->sdk_version ? i->sdk_version : "-", i->version ? i->version : "-",
                 i->status ? i->status : "-", (long long)(i->last_seen_ns >= i->first_seen_ns));
    return 0;
}

static void test_services_instances(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    struct rt_profile *a = fixture_profile(RT_PTYPE_CPU, "api", "a1", "v1", NULL, T0, S);
    rt_profile_set_str(&a->runtime, "node");
    rt_profile_set_str(&a->runtime_version, "22.1");
    rt_profile_set_str(&a->sdk_version, "0.1.0");
    struct rt_profile *b = fixture_profile(RT_PTYPE_WALL, "api", "a1", "v2", NULL, T0 + S, S);
    struct rt_profile *c = fixture_profile(RT_PTYPE_WALL, "worker", "w1", NULL, NULL, T0, S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    CHECK_INT(fixture_put(s, b, NULL), 0); /* no runtime: the stored one stays */
    CHECK_INT(fixture_put(s, c, NULL), 0);
    CHECK_INT(rt_store_put_poll(s, "polled", "p1", T0, &err), 0);

    struct listing l = {0};
    CHECK_INT(rt_store_scan_services(s, collect_service, &l, &err), 0);
    CHECK_INT(l.n, 3);
    CHECK_STR(l.text[0], "api en=0 cpu=1 wall=1 up=1");
    CHECK_STR(l.text[1], "polled en=0 cpu=0 wall=0 up=0");
    CHECK_STR(l.text[2], "worker en=0 cpu=0 wall=1 up=1");

    memset(&l, 0, sizeof(l));
    CHECK_INT(rt_store_scan_instances(s, NULL, collect_instance, &l, &err), 0);
    CHECK_INT(l.n, 3);
    CHECK_STR(l.text[0], "api/a1 node 22.1 0.1.0 v2 - 1");
    CHECK_STR(l.text[1], "polled/p1 - - - - - 1");
    CHECK_STR(l.text[2], "worker/w1 - - - - - 1");
    memset(&l, 0, sizeof(l));
    CHECK_INT(rt_store_scan_instances(s, "worker", collect_instance, &l, &err), 0);
    CHECK_INT(l.n, 1);
    rt_profile_free(a);
    rt_profile_free(b);
    rt_profile_free(c);
    rt_store_free(s);
    fixture_rmdir(dir);
}

struct alive {
    int n;
    char inst[8][32];
    int64_t first[8], last[8];
};

static int collect_alive(void *ud, const struct rt_liveness *l)
{
    struct alive *a = ud;
    if (a->n < 8) {
        snprintf(a->inst[a->n], 32, "%s", l->instance);
        a->first[a->n] = l->first_ns;
        a->last[a->n++] = l->last_ns;
    }
    return 0;
}

static void test_polls_liveness(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    /* i1 polls every 10 s from T0 to T0+100, then after a 60 s gap from T0+160 to T0+200 */
    for (int t = 0; t <= 100; t += 10)
        CHECK_INT(rt_store_put_poll(s, "svc", "i1", T0 + t * S, &err), 0);
    for (int t = 160; t <= 200; t += 10)
        CHECK_INT(rt_store_put_poll(s, "svc", "i1", T0 + t * S, &err), 0);
    /* i2: one poll; a late out-of-order poll joins its segment */
    CHECK_INT(rt_store_put_poll(s, "svc", "i2", T0 + 50 * S, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "svc", "i2", T0 + 40 * S, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "other", "i1", T0, &err), 0);
    CHECK_INT(count_rows(dir, "polls"), 4);

    struct alive a = {0};
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0, T0 + 300 * S, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 2);
    CHECK_STR(a.inst[0], "i1");
    CHECK_INT(a.first[0], T0);
    CHECK_INT(a.last[0], T0 + 200 * S);
    CHECK_STR(a.inst[1], "i2");
    CHECK_INT(a.first[1], T0 + 40 * S);
    CHECK_INT(a.last[1], T0 + 50 * S);

    /* clipped to the window: a segment straddling an edge reports the edge */
    memset(&a, 0, sizeof(a));
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 45 * S, T0 + 95 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 2);
    CHECK_INT(a.first[0], T0 + 45 * S);
    CHECK_INT(a.last[0], T0 + 95 * S - 1);
    CHECK_INT(a.first[1], T0 + 45 * S);
    CHECK_INT(a.last[1], T0 + 50 * S);
    /* in the gap: nobody */
    memset(&a, 0, sizeof(a));
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 + 110 * S, T0 + 150 * S, collect_alive, &a, &err),
              0);
    CHECK_INT(a.n, 0);
    /* half-open: a window ending at the first poll does not contain it */
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 - 60 * S, T0, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 0);
    CHECK_INT(rt_store_scan_liveness(s, "svc", T0 - 60 * S, T0 + 1, collect_alive, &a, &err), 0);
    CHECK_INT(a.n, 1);
    CHECK_INT(a.first[0], T0);
    CHECK_INT(a.last[0], T0);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_retention(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    for (int i = 0; i < 10; i++) {
        struct rt_profile *p = sample_profile("svc", "i", NULL, T0 + i * 10 * S, 10 * S);
        CHECK_INT(fixture_put(s, p, NULL), 0);
        rt_profile_free(p);
    }
    struct rt_profile *u = sample_profile("svc", "i", NULL, T0 + 45 * S, -1);
    CHECK_INT(fixture_put(s, u, NULL), 0);
    rt_profile_free(u);
    CHECK_INT(rt_store_put_poll(s, "svc", "i", T0, &err), 0);
    CHECK_INT(rt_store_put_poll(s, "svc", "i", T0 + 100 * S, &err), 0);
    CHECK_INT(rt_store_profile_count(s), 11);

    int64_t deleted = -1;
    /* profiles [T0, T0+50) end at or before T0+50: 5 deleted; the unknown one at T0+45 too */
    CHECK_INT(rt_store_retain(s, T0 + 50 * S, &deleted, &err), 0);
    CHECK_INT(deleted, 6);
    CHECK_INT(rt_store_profile_count(s), 5);
    CHECK_INT(count_rows(dir, "profiles"), 5);
    CHECK_INT(count_rows(dir, "polls"), 1);
    struct got g;
    CHECK_INT(scan(s, "svc", RT_PTYPE_CPU, T0, T0 + 200 * S, NULL, NULL, &g), 5);
    CHECK_INT(g.p[0].time_ns, T0 + 50 * S);
    /* stacks stay resolvable */
    CHECK(find_row(&g.p[0], "main;handle;parse") != NULL);
    CHECK_INT(rt_store_retain(s, T0 + 50 * S, NULL, &err), 0);
    CHECK_INT(rt_store_profile_count(s), 5);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_retention_batches(void)
{
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_error err = {0};
    enum { N = RT__SQLITE_RETAIN_BATCH + 500 };
    struct rt_profile **ps = calloc(N, sizeof(*ps));
    struct rt_store_put_result *res = calloc(N, sizeof(*res));
    for (int i = 0; i < N; i++) {
        ps[i] = fixture_profile(RT_PTYPE_CPU, "svc", "i", NULL, NULL, T0 + i * S, S);
        fixture_add(ps[i], "a;b", 1, 1);
    }
    CHECK_INT(rt_store_put_profiles(s, ps, N, res, &err), 0);
    CHECK_INT(rt_store_profile_count(s), N);
    int64_t deleted = 0;
    CHECK_INT(rt_store_retain(s, T0 + (N - 100) * S, &deleted, &err), 0);
    CHECK_INT(deleted, N - 100);
    CHECK_INT(rt_store_profile_count(s), 100);
    CHECK_INT(count_rows(dir, "profiles"), 100);
    for (int i = 0; i < N; i++)
        rt_profile_free(ps[i]);
    free(ps);
    free(res);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_disk_full(void)
{
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
    char *dir = fixture_tmpdir();
    struct rt_store *s = open_dir(dir);
    struct rt_profile *a = sample_profile("shop", "i-1", "p-1", T0, 10 * S);
    CHECK_INT(fixture_put(s, a, NULL), 0);
    rt_store_free(s);
    /* a damaged stack: reported, not read past its end */
    CHECK_INT(exec_sql(dir, "UPDATE stacks SET frames = x'ff' WHERE id = 1"), SQLITE_OK);
    s = open_dir(dir);
    const uint32_t *fr;
    size_t depth;
    CHECK_INT(rt_store_stack(s, 1, &fr, &depth), RT_EIO);
    CHECK_INT(rt_store_stack(s, 2, &fr, &depth), 0);
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
    RUN(test_persistence);
    RUN(test_dedup);
    RUN(test_window_edges);
    RUN(test_filters);
    RUN(test_deploys);
    RUN(test_issues);
    RUN(test_services_instances);
    RUN(test_polls_liveness);
    RUN(test_retention);
    RUN(test_retention_batches);
    RUN(test_disk_full);
    RUN(test_corruption);
    RUN(test_concurrency);
    RUN(test_two_handles);
    return TEST_DONE();
}
