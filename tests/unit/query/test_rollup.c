/* Rollups (docs/internals/rollups.md): answers read through rollups (hours, days) equal the
 * answers read from the raw profiles. Two stores get the same random profiles (instances, versions, producers
 * that scale CPU, profiles across hours' edges, of unknown duration, overlapping, late); one is
 * rolled up, the other never is, and every answer of the first must equal the second's: all
 * fields, counts exactly, sums within floating-point summation order. The store rolled up is
 * the one the suite runs against (ROOTTRACE_TEST_STORE: make test-clickhouse runs this test on
 * ClickHouse too); the reference is always a SQLite store that is never rolled up. */
#include <math.h>
#include <sqlite3.h>

#include "rt/producer.h"
#include "rt/query.h"
#include "query/query_internal.h"
#include "store/clickhouse/clickhouse_int.h"
#include "fake.h"
#include "store/store_fixture.h"
#include "store_util.h"
#include "test.h"

/* Opens the store under test (SQLite, or the suite's ClickHouse) in a new directory. */
static int tested_open(struct tstore *t)
{
    int rc = tstore_open(t);
    if (rc || !fixture_clickhouse())
        return rc;
    rt_store_free(t->s); /* the directory stands for its ClickHouse database */
    struct rt_error err = {0};
    if (!(t->s = fixture_open(t->dir, &err)))
        fprintf(stderr, "fixture_open: %s\n", err.msg);
    return t->s ? 0 : -1;
}

#define H RT_ROLLUP_HOUR_NS
#define D RT_ROLLUP_DAY_NS
#define HOURS 6

static const char *const STACKS[] = {
    "main;serve;parse", "main;serve;render", "main;serve;render;escape", "main;gc",
    "main;serve;db;query", "main;serve;db;wait", "main;idle", "main;serve;parse;lex",
};
#define NSTACKS (sizeof(STACKS) / sizeof(STACKS[0]))

/* One profile into both stores: random stacks and samples (halves too). */
static void put_both(struct rt_store *a, struct rt_store *b, enum rt_ptype t, const char *inst,
                     const char *version, bool node, int64_t start, int64_t dur)
{
    static int seq;
    char pid[32];
    snprintf(pid, sizeof(pid), "p%d", ++seq);
    const char *st[NSTACKS];
    double samples[NSTACKS];
    size_t n = 1 + fake_rnd(NSTACKS);
    for (size_t i = 0; i < n; i++) {
        st[i] = STACKS[fake_rnd(NSTACKS)];
        samples[i] = 1 + fake_rnd(40) + (fake_rnd(4) == 0 ? 0.5 : 0);
    }
    int64_t os_extra = fake_rnd(1000) * MS;
    for (int k = 0; k < 2; k++) {
        struct rt_profile *p = tprof(t, inst, pid, start, dur, st, samples, n);
        if (version)
            rt_profile_set_str(&p->version, version);
        if (node && t == RT_PTYPE_CPU) { /* V8 ticks on wall time: its CPU is scaled (§7) */
            p->producer = rt_producer_by_name("roottrace-node", t);
            p->thread_cpu_ns = p->value_ns / 2 + os_extra;
            p->cpu_scale = rt_producer_cpu_scale(p->producer, p->thread_cpu_ns, p->value_ns);
        }
        CHECK_INT(tput(k ? b : a, p), 0);
    }
}

/* Minutes between profiles: 1, or 5 on ClickHouse, whose uploads take longer (the same edges
 * crossed, a fifth of the uploads: the suite's three ClickHouse setups in minutes, not ten). */
static int step(void)
{
    return fixture_clickhouse() ? 5 : 1;
}

/* Six hours of three instances: profiles of step() minutes back to back (with gaps and versions
 * changing mid-hour), and the awkward ones. */
static void seed(struct rt_store *a, struct rt_store *b, enum rt_ptype t)
{
    static const char *const insts[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        for (int64_t m = 0; m < HOURS * 60; m += step()) {
            if (fake_rnd(10) == 0)
                continue; /* a gap */
            const char *v = m < 150 ? "v1" : i == 2 ? NULL : "v2";
            int64_t jitter = i == 1 ? 7 * S : 0; /* b's profiles cross each hour's edge */
            put_both(a, b, t, insts[i], v, i == 0, T0 + m * 60 * S + jitter, step() * 60 * S);
        }
        put_both(a, b, t, insts[i], "v1", false, T0 + 90 * 60 * S, -1);      /* unknown */
        put_both(a, b, t, insts[i], "v1", false, T0 + 95 * 60 * S, 0);       /* zero */
        put_both(a, b, t, insts[i], "v2", false, T0 + 170 * 60 * S, 2 * H);  /* long */
        put_both(a, b, t, insts[i], "v2", false, T0 + 200 * 60 * S + 13 * S, 30 * S); /* overlap */
    }
    for (int64_t m = 0; m < HOURS * 6; m++)
        tpoll(a, "d", T0 + m * 10 * 60 * S), tpoll(b, "d", T0 + m * 10 * 60 * S);
}

/* a and b agree: same keys, same strings, numbers equal up to summation order (_ns values are
 * rounded sums: +-1). */
static bool same_json(json_t *x, json_t *y, const char *key, char *path, size_t cap)
{
    if (json_is_number(x) && json_is_number(y)) {
        double u = json_number_value(x), v = json_number_value(y);
        size_t kl = key ? strlen(key) : 0;
        double tol = 1e-9 * fmax(fabs(u), fabs(v)) + 1e-12;
        if (kl > 3 && strcmp(key + kl - 3, "_ns") == 0)
            tol += 1;
        if (fabs(u - v) <= tol)
            return true;
        snprintf(path, cap, "%s: %.17g != %.17g", key ? key : "?", u, v);
        return false;
    }
    if (json_typeof(x) != json_typeof(y)) {
        snprintf(path, cap, "%s: types differ", key ? key : "?");
        return false;
    }
    if (json_is_object(x)) {
        if (json_object_size(x) != json_object_size(y)) {
            snprintf(path, cap, "%s: sizes differ", key ? key : "?");
            return false;
        }
        const char *k;
        json_t *v;
        json_object_foreach(x, k, v) {
            json_t *w = json_object_get(y, k);
            if (!w || !same_json(v, w, k, path, cap))
                return w ? false : (snprintf(path, cap, "%s missing", k), false);
        }
        return true;
    }
    if (json_is_array(x)) {
        if (json_array_size(x) != json_array_size(y)) {
            snprintf(path, cap, "%s: lengths %zu != %zu", key ? key : "?", json_array_size(x),
                     json_array_size(y));
            return false;
        }
        for (size_t i = 0; i < json_array_size(x); i++)
            if (!same_json(json_array_get(x, i), json_array_get(y, i), key, path, cap))
                return false;
        return true;
    }
    if (json_equal(x, y))
        return true;
    snprintf(path, cap, "%s differs", key ? key : "?");
    return false;
}

static void check_same(json_t *raw, json_t *rolled, const char *what)
{
    char path[256] = "";
    CHECK(raw != NULL && rolled != NULL);
    if (!raw || !rolled)
        return;
    bool same = same_json(raw, rolled, NULL, path, sizeof(path));
    if (!same)
        fprintf(stderr, "  %s: %s\n", what, path);
    CHECK(same);
}

struct window {
    int64_t from, to;
    const char *version, *instance;
};

/* The diff with window 1 read on a thread of its own is, to the byte, the diff read one window
 * after the other (query/scan_pair.c). */
static void check_pair(struct rt_store *s, const struct rt_query_diff_req *d, const char *what)
{
    struct rt_error err = {0};
    rt__query_pair_mode(RT__QUERY_PAIR_NEVER);
    json_t *x = rt_query_diff(s, d, &err);
    rt__query_pair_mode(RT__QUERY_PAIR_ALWAYS);
    json_t *y = rt_query_diff(s, d, &err);
    rt__query_pair_mode(RT__QUERY_PAIR_AUTO);
    char *tx = x ? json_dumps(x, JSON_SORT_KEYS) : NULL, *ty = y ? json_dumps(y, JSON_SORT_KEYS) : NULL;
    if (!tx || !ty || strcmp(tx, ty) != 0)
        fprintf(stderr, "  %s read at once differs from one after the other (%s)\n", what,
                err.msg);
    CHECK(tx && ty && strcmp(tx, ty) == 0);
    free(tx);
    free(ty);
    json_decref(x);
    json_decref(y);
}

/* Every answer of the windows and of diffs between them, on a (never rolled) and b. */
static void compare(struct rt_store *a, struct rt_store *b, enum rt_ptype t)
{
    static const struct window ws[] = {
        {T0 + H, T0 + 4 * H, NULL, NULL},              /* whole hours */
        {T0 + H / 2, T0 + 4 * H + 10 * 60 * S, NULL, NULL}, /* raw edges */
        {T0, T0 + HOURS * H, NULL, NULL},              /* everything */
        {T0 + 2 * H, T0 + 3 * H, NULL, NULL},          /* one hour: an issue's window */
        {T0 + H, T0 + 5 * H, "v2", NULL},              /* version filter */
        {T0 + H, T0 + 5 * H, NULL, "b"},               /* instance filter */
        {T0 + H - 1, T0 + 3 * H + 1, "v1", "a"},       /* both */
        {T0, T0 + D, NULL, NULL},                      /* the day */
        {T0 - H, T0 + D + 2 * H, NULL, NULL},          /* the day and hours beside it */
        {T0 + H, T0 + D, "v2", NULL},                  /* hours of the day, not the day */
        /* no whole hour: ClickHouse reads them as rows too, or sums them (raw_part_max) */
        {T0 + H + 20 * 60 * S, T0 + 2 * H + 20 * 60 * S, NULL, NULL}, /* an hour at :20 */
        {T0 + 2 * H + 5 * 60 * S, T0 + 2 * H + 35 * 60 * S, "v1", "a"},
        {T0 + 30 * H + 60 * S, T0 + 30 * H + 30 * 60 * S, NULL, NULL}, /* no profile */
    };
    for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
        struct rt_query_profile_req r = {"shop", t, ws[i].from, ws[i].to, ws[i].version,
                                         ws[i].instance, 0, NULL};
        struct rt_error err = {0};
        json_t *x = rt_query_profile(a, &r, &err), *y = rt_query_profile(b, &r, &err);
        if (!x || !y)
            fprintf(stderr, "  window %zu: %s\n", i, err.msg);
        char what[64];
        snprintf(what, sizeof(what), "profile window %zu", i);
        check_same(x, y, what);
        json_decref(x);
        json_decref(y);
    }
    struct rt_query_diff_req d = {"shop", t, T0 + H, T0 + 2 * H, T0 + 2 * H, T0 + 4 * H,
                                  NULL, NULL, "v1", "v2", 0, NULL, NULL};
    struct rt_error err = {0};
    json_t *x = rt_query_diff(a, &d, &err), *y = rt_query_diff(b, &d, &err);
    check_same(x, y, "diff");
    json_decref(x);
    json_decref(y);
    /* window 1 meets the instances in another order than window 0 (c's first v2 profile is
     * late), and new stacks; then raw edges, an instance, and a window 1 with no profile */
    check_pair(b, &d, "diff");
    struct rt_query_diff_req e = {"shop", t, T0 + H / 2, T0 + 2 * H + 7 * 60 * S,
                                  T0 + 2 * H + 7 * 60 * S, T0 + 5 * H,
                                  NULL, NULL, NULL, NULL, 0, NULL, NULL};
    check_pair(b, &e, "diff on raw edges");
    e.instance = "b";
    check_pair(b, &e, "diff of one instance");
    e.instance = NULL;
    e.base_to_ns = T0 + H / 2 + 90 * S; /* a minute and a half: most stacks new in window 1 */
    check_pair(b, &e, "diff against a short baseline");
    e.cur_from_ns = T0 + 30 * H, e.cur_to_ns = T0 + 31 * H;
    check_pair(b, &e, "diff against an empty window");
}

/* Builds every block that ended by now (minus the grace); returns how many. */
static size_t build(struct rt_store *s, int64_t now)
{
    size_t built = 0, total = 0;
    struct rt_error err = {0};
    do {
        int rc = rt_query_build_rollups(s, now, 3, &built, &err);
        if (rc)
            fprintf(stderr, "  building rollups: %s\n", err.msg);
        CHECK_INT(rc, 0);
        total += built;
    } while (built == 3);
    return total;
}

/* One profile of instance inst from producer (its name) and declared type: stacks st[0..n). */
static void put_from(struct rt_store *s, const char *inst, const char *producer,
                     enum rt_ptype declared, int64_t start, const char *const *st,
                     const double *samples, size_t n)
{
    static int seq;
    char pid[32];
    snprintf(pid, sizeof(pid), "m%d", ++seq);
    struct rt_profile *p = tprof(RT_PTYPE_CPU, inst, pid, start, 60 * S, st, samples, n);
    p->producer = rt_producer_by_name(producer, RT_PTYPE_CPU);
    p->declared_type = declared;
    CHECK_INT(tput(s, p), 0);
}

/* What the diffs of compare() never make the merge of query/scan_pair.c meet: an instance,
 * producers and functions new in window 1, functions on capacity's every kind of page, and a
 * window 1 with more producers than the list holds, which is read again in turn (a merge
 * would lose the profiles it counted as others). On raw rows, then on rollups. */
static void test_pair_merge(void)
{
    static const char *const names[] = {
        "", "roottrace-go", "roottrace-node", "roottrace-php", "roottrace-python",
        "roottrace-java", "pyroscope-go", "grafana-alloy-ebpf", "pyroscope-java",
        "pyroscope-python", "pyroscope-ruby", "py-spy", "rbspy", "pyroscope-nodejs"};
    enum { NFN = 4300 };
    static char fn[NFN][32];
    static const char *st[NFN];
    static double smp[NFN];
    for (int i = 0; i < NFN; i++) {
        snprintf(fn[i], sizeof(fn[i]), "main;serve;f%d", i);
        st[i] = fn[i];
        smp[i] = 1 + i % 7;
    }
    struct tstore b;
    CHECK_INT(tested_open(&b), 0);
    /* hour 0 (window 0): a and b, functions 0-39, two producers */
    put_from(b.s, "a", names[1], 0, T0 + 60 * S, st, smp, 40);
    put_from(b.s, "b", names[0], 0, T0 + 120 * S, st + 10, smp, 20);
    /* hour 1: c first, new, of a new producer, with functions 100-4299 (pages by index, and
     * past RT__QUERY_INSTFN_LOW's, by map); then b and a, functions 20-79 */
    put_from(b.s, "c", names[6], 0, T0 + H + 60 * S, st + 100, smp, NFN - 100);
    put_from(b.s, "b", names[0], 0, T0 + H + 120 * S, st + 20, smp, 60);
    put_from(b.s, "a", names[1], 0, T0 + H + 180 * S, st, smp + 3, 40);
    /* hour 2: 16 producers new to window 0 first, then window 0's two */
    for (int i = 0; i < 18; i++) {
        const char *name = i < 16 ? names[2 + i % 12] : names[17 - i];
        enum rt_ptype declared = i >= 12 && i < 16 ? RT_PTYPE_WALL : 0;
        put_from(b.s, "d", name, declared, T0 + 2 * H + i * 60 * S, st + i, smp, 5);
    }
    struct rt_query_diff_req d = {"shop", RT_PTYPE_CPU, T0, T0 + H, T0 + H, T0 + 2 * H,
                                  NULL, NULL, NULL, NULL, 0, NULL, NULL};
    struct rt_query_diff_req e = d;
    e.cur_from_ns = T0 + 2 * H, e.cur_to_ns = T0 + 3 * H;
    for (int rolled = 0; rolled < 2; rolled++) {
        check_pair(b.s, &d, "diff with new instances, functions, producers");
        check_pair(b.s, &e, "diff with 18 producers in window 1");
        struct rt_error err = {0};
        json_t *j = rt_query_diff(b.s, &e, &err);
        char *t = j ? json_dumps(j, 0) : NULL;
        CHECK(t && strstr(t, "\"several other producers\"")); /* the list did overflow */
        free(t);
        json_decref(j);
        if (!rolled)
            CHECK_INT(build(b.s, T0 + 10 * H), 3);
    }
    /* the server stopping: both windows' reads stop, the diff says so (and leaks nothing) */
    rt_store_cancel_reads(b.s);
    static const int modes[] = {RT__QUERY_PAIR_NEVER, RT__QUERY_PAIR_ALWAYS};
    for (size_t i = 0; i < 2; i++) {
        struct rt_error err = {0};
        rt__query_pair_mode(modes[i]);
        json_t *j = rt_query_diff(b.s, &d, &err);
        rt__query_pair_mode(RT__QUERY_PAIR_AUTO);
        CHECK(j == NULL);
        CHECK_INT(err.code, RT_ECANCELED);
        json_decref(j);
    }
    tstore_close(&b);
}

static void test_rolled_equals_raw(void)
{
    for (int t = RT_PTYPE_CPU; t <= RT_PTYPE_WALL; t++) {
        struct tstore a, b;
        CHECK_INT(tstore_open(&a), 0);
        CHECK_INT(tested_open(&b), 0);
        seed(a.s, b.s, (enum rt_ptype)t);
        compare(a.s, b.s, (enum rt_ptype)t); /* nothing rolled yet */
        /* an hour that has not closed yet (now inside its grace) is not built */
        size_t built = 0;
        struct rt_error err = {0};
        CHECK_INT(rt_query_build_rollups(b.s, T0 + H + 5 * 60 * S, 100, &built, &err), 0);
        CHECK_INT(built, 0);
        CHECK_INT(build(b.s, T0 + 10 * H), HOURS); /* the hours; the day is not over */
        compare(a.s, b.s, (enum rt_ptype)t);
        CHECK_INT(build(b.s, T0 + 2 * D), 1);        /* the day */
        compare(a.s, b.s, (enum rt_ptype)t);
        if (fixture_clickhouse()) {
            struct rt__ch *ch = b.s->be;
            ch->raw_part_batch = 1; /* the raw part as rows, a statement per start time */
            compare(a.s, b.s, (enum rt_ptype)t);
            ch->raw_part_batch = 0;
            ch->raw_part_max = 1; /* listed, but too many profiles for rows: summed there */
            compare(a.s, b.s, (enum rt_ptype)t);
            ch->raw_starts_max = 1; /* too many for rows, starts not listed: the exclusion */
            compare(a.s, b.s, (enum rt_ptype)t);
            ch->raw_starts_max = 0;
            ch->raw_part_max = 0;
        }

        /* a late profile sends its hour and its day back to raw until they are built again */
        put_both(a.s, b.s, (enum rt_ptype)t, "a", "v2", true, T0 + 2 * H + 100 * S, 20 * S);
        compare(a.s, b.s, (enum rt_ptype)t);
        if (fixture_clickhouse()) { /* no thread to spare: the statements one after the other */
            struct rt__ch *ch = b.s->be;
            atomic_store(&ch->extra_threads, RT__CH_EXTRA_THREADS);
            compare(a.s, b.s, (enum rt_ptype)t);
            atomic_store(&ch->extra_threads, 0);
        }
        CHECK_INT(build(b.s, T0 + 2 * D), 2);
        compare(a.s, b.s, (enum rt_ptype)t);

        /* retention in the middle of an hour drops that hour's rollup, and its day's;
         * ClickHouse drops whole months: a cutoff past the month drops its rollups too */
        if (fixture_clickhouse()) {
            int64_t da = 0, db = 0;
            CHECK_INT(rt_store_retain(a.s, T0 + 40 * D, &da, &err), 0);
            int rc = rt_store_retain(b.s, T0 + 40 * D, &db, &err);
            if (rc)
                fprintf(stderr, "  retention: %s\n", err.msg);
            CHECK_INT(rc, 0);
            CHECK(da > 0);
            CHECK_INT(da, db);
            CHECK_INT(fixture_ch_int(b.dir, "SELECT count() FROM rollups"), 0);
            compare(a.s, b.s, (enum rt_ptype)t);
            tstore_close(&a);
            tstore_close(&b);
            continue;
        }
        int64_t deleted_a = 0, deleted_b = 0;
        CHECK_INT(rt_store_retain(a.s, T0 + H + H / 2, &deleted_a, &err), 0);
        CHECK_INT(rt_store_retain(b.s, T0 + H + H / 2, &deleted_b, &err), 0);
        CHECK(deleted_a > 0);
        CHECK_INT(deleted_a, deleted_b);
        compare(a.s, b.s, (enum rt_ptype)t);
        CHECK_INT(build(b.s, T0 + 2 * D), 0); /* the dropped blocks lost profiles: not waiting */
        tstore_close(&a);
        tstore_close(&b);
    }
}

/* Windows around 1970 (no whole hour: ClickHouse reads them as rows, its earliest start
 * bounded by the subquery) agree with SQLite's: a profile that starts before the window and
 * ends inside it counts its overlap. */
static void test_before_1970(void)
{
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, -40 * 60 * S, 20 * 60 * S);
    put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, -10 * 60 * S, 20 * 60 * S);
    put_both(a.s, b.s, RT_PTYPE_CPU, "b", NULL, false, 5 * 60 * S, 10 * 60 * S);
    static const int64_t ws[][3] = {{-30 * 60 * S, 30 * 60 * S, 3}, /* all three */
                                    {-25 * 60 * S, -5 * 60 * S, 2}}; /* the first two */
    for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
        struct rt_query_profile_req r = {"shop", RT_PTYPE_CPU, ws[i][0], ws[i][1], NULL, NULL,
                                         0, NULL};
        struct rt_error err = {0};
        json_t *x = rt_query_profile(a.s, &r, &err), *y = rt_query_profile(b.s, &r, &err);
        CHECK(x && json_integer_value(json_object_get(x, "profiles")) == ws[i][2]);
        check_same(x, y, "a window around 1970");
        json_decref(x);
        json_decref(y);
    }
    tstore_close(&a);
    tstore_close(&b);
}

/* A rollup built from an hour that got a profile meanwhile is refused, and nothing changes. */
static int keep_first(void *ud, const struct rt_rollup_block *h)
{
    struct rt_rollup_block *out = ud;
    if (!out->service) {
        *out = *h;
        out->service = "shop";
    }
    return 0;
}

static void test_stale_rollup_refused(void)
{
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, T0 + 60 * S, 60 * S);
    struct rt_rollup_block h = {0};
    struct rt_error err = {0};
    CHECK_INT(rt_store_scan_rollup_pending(b.s, T0 + H, T0 + D, 10, keep_first, &h, &err), 0);
    CHECK_INT(h.level, 0);
    CHECK_INT(h.block, T0 / H);
    put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, T0 + 180 * S, 60 * S);
    CHECK_INT(rt_store_put_rollup(b.s, &h, NULL, 0, &err), RT_ECONFLICT);
    compare(a.s, b.s, RT_PTYPE_CPU);
    CHECK_INT(build(b.s, T0 + 2 * H), 1);
    compare(a.s, b.s, RT_PTYPE_CPU);
    tstore_close(&a);
    tstore_close(&b);
}

static int keep_day(void *ud, const struct rt_rollup_block *h)
{
    struct rt_rollup_block *out = ud;
    if (h->level == 1 && !out->service) {
        *out = *h;
        out->service = "shop";
    }
    return 0;
}

/* A window holding a whole day reads the day's rollup: its fingerprint, found beside the
 * hours' in one scan on ClickHouse, counts the day's profiles across an hour's edge too. Shown
 * by a corrupt rollup stored for the day's fingerprint failing the answer (RT_EIO); a day
 * fingerprint that missed them, or any other, leaves the day read raw and the answer whole. */
static void test_day_rollup_read(void)
{
    struct tstore b;
    CHECK_INT(tested_open(&b), 0);
    struct rt_profile *p[3];
    static const char *const st[] = {"main;serve"};
    static const double one[] = {3};
    p[0] = tprof(RT_PTYPE_CPU, "a", "d1", T0 + 10 * 60 * S, 60 * S, st, one, 1);
    p[1] = tprof(RT_PTYPE_CPU, "a", "d2", T0 + H - 30 * S, 60 * S, st, one, 1); /* an edge */
    p[2] = tprof(RT_PTYPE_CPU, "a", "d3", T0 + 5 * H + 60 * S, 60 * S, st, one, 1);
    for (int i = 0; i < 3; i++)
        CHECK_INT(tput(b.s, p[i]), 0);
    struct rt_rollup_block day = {0};
    struct rt_error err = {0};
    CHECK_INT(rt_store_scan_rollup_pending(b.s, T0 + D + H, T0 + 2 * D, 10, keep_day, &day, &err),
              0);
    CHECK(day.service != NULL);
    CHECK_INT(day.block, T0 / D);
    static const uint8_t bad[12] = {'R', 'T', 'R', '1', 0xff, 0xff, 0xff, 0xff};
    struct rt_rollup_group g = {"a", NULL, bad, sizeof(bad)};
    CHECK_INT(rt_store_put_rollup(b.s, &day, &g, 1, &err), 0);
    struct rt_query_profile_req r = {"shop", RT_PTYPE_CPU, T0, T0 + D, NULL, NULL, 0, NULL};
    json_t *j = rt_query_profile(b.s, &r, &err);
    CHECK(j == NULL);
    CHECK_INT(err.code, RT_EIO);
    json_decref(j);
    tstore_close(&b);
}

/* A rollup that cannot be read fails the answer with RT_EIO; nothing crashes. */
static void test_corrupt_rollup(void)
{
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    for (int m = 0; m < 60; m += step())
        put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, T0 + m * 60 * S, step() * 60 * S);
    CHECK_INT(build(b.s, T0 + 2 * H), 1);
    static const uint8_t bad[][12] = {{0}, {'R', 'T', 'R', '1', 0xff, 0xff, 0xff, 0xff}};
    struct rt_rollup_block h = {"shop", RT_PTYPE_CPU, 0, T0 / H, 0};
    for (size_t i = 0; i < 2; i++) {
        /* store it as the hour's rollup: a profile of the hour first, for a gen to claim */
        put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, T0 + 30 * S, 10 * S);
        struct rt_rollup_block p = {0};
        struct rt_error err = {0};
        CHECK_INT(rt_store_scan_rollup_pending(b.s, T0 + H, T0 + D, 10, keep_first, &p, &err), 0);
        h.gen = p.gen;
        struct rt_rollup_group g = {"a", NULL, bad[i], i ? 12 : 3};
        CHECK_INT(rt_store_put_rollup(b.s, &h, &g, 1, &err), 0);
        struct rt_query_profile_req r = {"shop", RT_PTYPE_CPU, T0, T0 + H, NULL, NULL, 0, NULL};
        json_t *j = rt_query_profile(b.s, &r, &err);
        CHECK(j == NULL);
        CHECK_INT(err.code, RT_EIO);
        json_decref(j);
        /* a diff whose window 1, then window 0, is that hour: read at once, it fails the same
         * (and leaks nothing: make SAN=1 unit) */
        rt__query_pair_mode(RT__QUERY_PAIR_ALWAYS);
        for (int k = 0; k < 2; k++) {
            struct rt_query_diff_req d = {"shop", RT_PTYPE_CPU, T0 + H, T0 + 2 * H, T0, T0 + H,
                                          NULL, NULL, NULL, NULL, 0, NULL, NULL};
            if (k)
                d.base_from_ns = T0, d.base_to_ns = T0 + H, d.cur_from_ns = T0 + H,
                d.cur_to_ns = T0 + 2 * H;
            rt_error_clear(&err);
            j = rt_query_diff(b.s, &d, &err);
            CHECK(j == NULL);
            CHECK_INT(err.code, RT_EIO);
            json_decref(j);
        }
        rt__query_pair_mode(RT__QUERY_PAIR_AUTO);
    }
    tstore_close(&a);
    tstore_close(&b);
}

static void test_rollup_block_rule(void)
{
    CHECK_INT(rt_profile_rollup_block(T0, 60 * S, 0), T0 / H);
    CHECK_INT(rt_profile_rollup_block(T0 + H - 60 * S, 60 * S, 0), T0 / H); /* to the edge */
    CHECK_INT(rt_profile_rollup_block(T0 + H - 60 * S, 60 * S + 1, 0), -1);  /* across it */
    CHECK_INT(rt_profile_rollup_block(T0 + H - 60 * S, 60 * S + 1, 1), T0 / D); /* its day */
    CHECK_INT(rt_profile_rollup_block(T0, H, 0), T0 / H);
    CHECK_INT(rt_profile_rollup_block(T0, D, 1), T0 / D);
    CHECK_INT(rt_profile_rollup_block(T0, D + 1, 1), -1);
    CHECK_INT(rt_profile_rollup_block(T0, 0, 0), -1);
    CHECK_INT(rt_profile_rollup_block(T0, -1, 1), -1);
    CHECK_INT(rt_profile_rollup_block(-S, S, 0), -1);
    CHECK_INT(rt_profile_rollup_block(INT64_MAX - 5, 3, 0), INT64_MAX / H);
    CHECK_INT(rt_profile_rollup_block(INT64_MAX - 5, INT64_MAX, 1), -1);
}

/* The store's hour and day columns (SQL) and rt_profile_rollup_block (C) agree: the reads
 * select by the first, the builder and the ingest's pending rows by the second. */
static void test_sql_rule_matches_c(void)
{
    SKIP_ON_CLICKHOUSE("reads SQLite's columns; test_clickhouse_rule_matches_c reads its SQL");
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    static const int64_t starts[] = {T0, T0 + H - S, T0 + D - 60 * S, T0 + 7, T0 + D - 1};
    static const int64_t durs[] = {S, 60 * S, H, H + 1, D, D + 1, 0, -1, 1};
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
        for (size_t j = 0; j < sizeof(durs) / sizeof(durs[0]); j++)
            put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, starts[i], durs[j]);
    char path[128];
    snprintf(path, sizeof(path), "%s/roottrace.db", a.dir);
    sqlite3 *db;
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_prepare_v2(db, "SELECT time_ns, duration_ns, hour, day FROM profiles", -1,
                                 &st, NULL), SQLITE_OK);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0), d = sqlite3_column_int64(st, 1);
        CHECK_INT(sqlite3_column_int64(st, 2), rt_profile_rollup_block(t, d, 0));
        CHECK_INT(sqlite3_column_int64(st, 3), rt_profile_rollup_block(t, d, 1));
        n++;
    }
    CHECK_INT(n, 45);
    sqlite3_finalize(st);
    sqlite3_close(db);
    tstore_close(&a);
    tstore_close(&b);
}

/* A block that cannot be built (a profile's rows unreadable) is deferred and does not hold the
 * next back; it is tried again after RT_QUERY_ROLLUP_RETRY_NS. */
static void test_failing_block_deferred(void)
{
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    for (int m = 0; m < 120; m += 10)
        put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, T0 + m * 60 * S, 60 * S);
    const char *why = "rows unreadable";
    if (fixture_clickhouse()) { /* a profile of the first hour that names no stored stack */
        why = "names unknown stack";
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO profiles (id, dedup, service, type, instance, time_ns, "
                 "duration_ns, end_ns, stacks, row_samples, row_values, row_leaves) VALUES (1, "
                 "'#1', 'shop', %d, 'a', %lld, %lld, %lld, [12345], [1], [10000000], [6789])",
                 (int)RT_PTYPE_CPU, (long long)(T0 + 5 * 60 * S), (long long)(60 * S),
                 (long long)(T0 + 6 * 60 * S));
        CHECK_INT(fixture_ch_int(b.dir, sql), 0);
    } else {
        char path[128];
        snprintf(path, sizeof(path), "%s/roottrace.db", b.dir);
        sqlite3 *db;
        CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
        CHECK_INT(sqlite3_exec(db, "UPDATE profiles SET rows = x'ff' WHERE id = 1", NULL, NULL,
                               NULL),
                  SQLITE_OK);
        sqlite3_close(db);
    }
    size_t built = 0;
    struct rt_error err = {0};
    int64_t now = T0 + 3 * H;
    CHECK_INT(rt_query_build_rollups(b.s, now, 10, &built, &err), RT_EIO);
    CHECK_INT(built, 1); /* the second hour */
    CHECK(strstr(err.msg, why) != NULL);
    CHECK_INT(rt_query_build_rollups(b.s, now + 60 * S, 10, &built, &err), 0);
    CHECK_INT(built, 0); /* deferred */
    CHECK_INT(rt_query_build_rollups(b.s, now + RT_QUERY_ROLLUP_RETRY_NS, 10, &built, &err),
              RT_EIO);
    struct rt_query_profile_req r = {"shop", RT_PTYPE_CPU, T0 + H, T0 + 2 * H, NULL, NULL, 0, NULL};
    json_t *x = rt_query_profile(a.s, &r, &err), *y = rt_query_profile(b.s, &r, &err);
    check_same(x, y, "the built hour");
    json_decref(x);
    json_decref(y);
    tstore_close(&a);
    tstore_close(&b);
}

/* ClickHouse's SQL of the blocks (rt__ch_block_sql) and rt_profile_rollup_block agree on the
 * blocks' edges, on the suite's ClickHouse. */
static void test_clickhouse_rule_matches_c(void)
{
    if (!fixture_clickhouse()) {
        fprintf(stderr, "skip %s on sqlite: ClickHouse's SQL, run by make test-clickhouse\n",
                __func__);
        return;
    }
    struct tstore a, b;
    CHECK_INT(tstore_open(&a), 0);
    CHECK_INT(tested_open(&b), 0);
    static const int64_t starts[] = {T0, T0 + H - S, T0 + D - 60 * S, T0 + 7, T0 + D - 1};
    static const int64_t durs[] = {S, 60 * S, H, H + 1, D, D + 1, 0, -1, 1};
    int n = 0;
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
        for (size_t j = 0; j < sizeof(durs) / sizeof(durs[0]); j++) {
            put_both(a.s, b.s, RT_PTYPE_CPU, "a", NULL, false, starts[i], durs[j]);
            for (int level = 0; level < RT_ROLLUP_LEVELS; level++) {
                char sql[640];
                snprintf(sql, sizeof(sql),
                         "SELECT any(%s) FROM profiles WHERE time_ns = %lld AND duration_ns = "
                         "%lld FORMAT TabSeparated",
                         rt__ch_block_sql(level), (long long)starts[i], (long long)durs[j]);
                int64_t want = rt_profile_rollup_block(starts[i], durs[j], level);
                CHECK_INT(fixture_ch_int(b.dir, sql), want);
                n++;
            }
        }
    CHECK_INT(n, 90);
    tstore_close(&a);
    tstore_close(&b);
}

int main(void)
{
    RUN(test_rollup_block_rule);
    RUN(test_rolled_equals_raw);
    RUN(test_before_1970);
    RUN(test_stale_rollup_refused);
    RUN(test_corrupt_rollup);
    RUN(test_day_rollup_read);
    RUN(test_pair_merge);
    RUN(test_sql_rule_matches_c);
    RUN(test_failing_block_deferred);
    RUN(test_clickhouse_rule_matches_c);
    return TEST_DONE();
}
