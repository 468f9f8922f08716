/* Rollup benchmark (docs/performance-rollups.md, "A week in under a second"): a SQLite store seeded
 * with `--days` days of `--instances` instances uploading 60 s profiles (derived from a real
 * pprof, each instance at its own phase, so that one profile per instance and hour crosses the
 * hour's edge), then GET /api/v1/profile over the whole week and 1 h issue diffs, timed
 * through rt_query_profile and rt_query_diff on the raw profiles (the reference, before any
 * rollup exists) and again once rt_query_build_rollups has rolled every closed hour up. The
 * answers of both are compared (same profiles, value_ns, function list). */
#include <inttypes.h>
#include <jansson.h>
#include <sys/resource.h>

#include "bench.h"
#include "rt/memory.h"
#include "rt/query.h"
#include "rt/store.h"

#define SERVICE "bench-rollup"
#define H RT_ROLLUP_HOUR_NS
#define MINUTE (60 * INT64_C(1000000000))
#define VARIANTS 16 /* profiles derived per instance, reused with new times */
#define RUNS_MAX 64 /* the most timed runs of one query (--runs); more is refused */

struct opts {
    const char *data, *file, *keep;
    const char *only; /* --only TEXT: the queries whose names hold TEXT (to profile one) */
    int days, instances, runs;
    bool reuse; /* --reuse DIR: a store this benchmark kept, already seeded and rolled up */
    bool no_raw; /* --no-raw: no raw reference (a ClickHouse week takes longer than a statement
                    may); the answers' profiles are printed instead */
};

static int64_t t0(void)
{
    return BENCH_T0_NS / H * H;
}

/* Seeds the store: every instance's 60 s profiles back to back at its own phase. */
static int seed(struct rt_store *s, const struct opts *o, const struct bench_source *src)
{
    size_t n = (size_t)o->instances * VARIANTS;
    struct rt_profile **v = calloc(n, sizeof(*v));
    struct rt_store_put_result *res = calloc((size_t)o->instances, sizeof(*res));
    struct rt_profile **batch = calloc((size_t)o->instances, sizeof(*batch));
    uint64_t rng = 42;
    int rc = v && res && batch ? 0 : -1;
    for (size_t i = 0; !rc && i < n; i++) {
        char inst[32];
        snprintf(inst, sizeof(inst), "pod-%03zu", i / VARIANTS);
        if (!(v[i] = bench_derive(src, SERVICE, inst, i, 0, false, 1, &rng)))
            rc = -1;
        else
            rt_profile_set_str(&v[i]->profile_id, NULL); /* no retries to tell apart */
    }
    int64_t minutes = (int64_t)o->days * 24 * 60, start = bench_now_ns();
    for (int64_t m = 0; !rc && m < minutes; m++) {
        for (int i = 0; i < o->instances; i++) {
            struct rt_profile *p = v[(size_t)i * VARIANTS + (size_t)(m % VARIANTS)];
            p->time_ns = t0() + m * MINUTE + (int64_t)i * 599 * INT64_C(1000000); /* phase */
            p->duration_ns = MINUTE;
            batch[i] = p;
        }
        struct rt_error err = {0};
        if (rt_store_put_profiles(s, batch, (size_t)o->instances, res, &err)) {
            fprintf(stderr, "bench_rollup: storing: %s\n", err.msg);
            rc = -1;
        }
        if (m % (24 * 60) == 24 * 60 - 1)
            fprintf(stderr, "  seeded day %" PRId64 " (%.0f s)\n", m / (24 * 60) + 1,
                    (bench_now_ns() - start) / 1e9);
    }
    for (size_t i = 0; v && i < n; i++)
        rt_profile_free(v[i]);
    free(v);
    free(res);
    free(batch);
    return rc;
}

/* A query of the benchmark: a profile window, or a diff when base_to > 0. */
struct query {
    const char *name;
    int64_t from, to;          /* profile window, or current window */
    int64_t base_from, base_to;
};

static json_t *run_query(struct rt_store *s, const struct query *q)
{
    struct rt_error err = {0};
    json_t *j;
    if (q->base_to) {
        struct rt_query_diff_req d = {SERVICE, RT_PTYPE_CPU, q->base_from, q->base_to,
                                      q->from,  q->to,        NULL,        NULL,
                                      NULL,     NULL,         0,           NULL,
                                      NULL};
        j = rt_query_diff(s, &d, &err);
    } else {
        struct rt_query_profile_req r = {SERVICE, RT_PTYPE_CPU, q->from, q->to, NULL, NULL, 0,
                                         NULL};
        j = rt_query_profile(s, &r, &err);
    }
    if (!j)
        fprintf(stderr, "bench_rollup: %s: %s\n", q->name, err.msg);
    return j;
}

/* Median ms of runs queries; *answer keeps the last answer. */
static double time_query(struct rt_store *s, const struct query *q, int runs, json_t **answer)
{
    double ms[RUNS_MAX]; /* main() holds runs within [1, RUNS_MAX] */
    for (int r = 0; r < runs; r++) {
        int64_t t = bench_now_ns();
        json_t *j = run_query(s, q);
        ms[r] = (bench_now_ns() - t) / 1e6;
        json_decref(*answer);
        *answer = j;
    }
    return bench_median(ms, (size_t)runs);
}

/* The figures both answers must share: profiles and value of each window, functions. */
static bool same_answer(json_t *a, json_t *b)
{
    if (!a || !b)
        return false;
    const char *keys[] = {"profiles", "value_ns"};
    for (int w = 0; w < 3; w++) {
        json_t *x = w == 0 ? a : json_object_get(a, w == 1 ? "baseline" : "current");
        json_t *y = w == 0 ? b : json_object_get(b, w == 1 ? "baseline" : "current");
        for (int k = 0; x && y && k < 2; k++) {
            double u = json_number_value(json_object_get(x, keys[k]));
            double v = json_number_value(json_object_get(y, keys[k]));
            if (fabs(u - v) > 1e-9 * fabs(u) + 1)
                return false;
        }
    }
    json_t *fa = json_object_get(a, "functions"), *fb = json_object_get(b, "functions");
    return json_array_size(fa) == json_array_size(fb) && json_array_size(fa) > 0;
}

static double rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--days N (7)] [--instances N (100)] [--runs N (3, at most 64)] [--data DIR]\n"
            "          [--file NAME (gdu__default.pgo)] [--keep DIR | --reuse DIR] [--no-raw 1]\n"
            "          [--only TEXT (the queries whose names hold it)]\n"
            "  DIR may be a store URI (clickhouse:http://HOST:PORT/DB)\n",
            argv0);
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = {bench_data_dir(), "gdu__default.pgo", NULL, NULL, 7, 100, 3, false, false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage(argv[0]);
        if (strcmp(a, "--days") == 0)
            o.days = atoi(v);
        else if (strcmp(a, "--instances") == 0)
            o.instances = atoi(v);
        else if (strcmp(a, "--runs") == 0)
            o.runs = atoi(v);
        else if (strcmp(a, "--data") == 0)
            o.data = v;
        else if (strcmp(a, "--file") == 0)
            o.file = v;
        else if (strcmp(a, "--keep") == 0)
            o.keep = v;
        else if (strcmp(a, "--reuse") == 0)
            o.keep = v, o.reuse = true;
        else if (strcmp(a, "--only") == 0)
            o.only = v;
        else if (strcmp(a, "--no-raw") == 0 && strcmp(v, "1") == 0)
            o.no_raw = true;
        else
            return usage(argv[0]);
        i++;
    }
    if (o.days < 1 || o.instances < 1 || o.runs < 1 || o.runs > RUNS_MAX)
        return usage(argv[0]);
    rt_memory_policy();
    struct bench_source src = {0};
    if (bench_load_source(&src, o.data, o.file, NULL))
        return 1;
    src.scale *= (double)MINUTE / BENCH_PROFILE_NS; /* the source's rate over 60 s, not 6 */
    char tmp[256];
    const char *dir = o.keep ? o.keep : bench_mkdtemp(tmp, sizeof(tmp), "rollup");
    struct rt_error err = {0};
    struct rt_store *s = dir ? rt_store_open(dir, &err) : NULL;
    if (!s) {
        fprintf(stderr, "bench_rollup: rt_store_open: %s\n", err.msg);
        return 1;
    }
    printf("== rollups: %d instances x %d days of 60 s profiles (%s, %zu stacks each)\n",
           o.instances, o.days, o.file, src.p->nstacks);
    int64_t t = bench_now_ns();
    if (!o.reuse && seed(s, &o, &src))
        return 1;
    printf("seeded %" PRId64 " profiles in %.1f s\n", rt_store_profile_count(s),
           (bench_now_ns() - t) / 1e9);
    int64_t end = t0() + (int64_t)o.days * 24 * H, mid = t0() + (int64_t)o.days * 12 * H;
    const struct query qs[] = {
        {"profile, the whole week", t0(), end, 0, 0},
        {"profile, the week less 17 min each side", t0() + 17 * MINUTE, end - 17 * MINUTE, 0, 0},
        {"1 h issue diff on the hour", mid, mid + H, mid - H, mid},
        {"1 h issue diff at :23", mid + 23 * MINUTE, mid + H + 23 * MINUTE,
         mid - H + 23 * MINUTE, mid + 23 * MINUTE},
    };
    enum { NQ = sizeof(qs) / sizeof(qs[0]) };
    json_t *raw[NQ] = {0}, *rolled[NQ] = {0};
    double raw_ms[NQ], rolled_ms[NQ];
    bool skip[NQ];
    int nrun = 0;
    for (int i = 0; i < NQ; i++)
        nrun += !(skip[i] = o.only && !strstr(qs[i].name, o.only));
    if (!nrun) {
        fprintf(stderr, "bench_rollup: --only %s names no query\n", o.only);
        return 2;
    }
    for (int i = 0; i < NQ && !o.reuse && !o.no_raw; i++) /* the week raw is slow: one run */
        if (!skip[i])
            raw_ms[i] = time_query(s, &qs[i], qs[i].base_to ? o.runs : 1, &raw[i]);
    t = bench_now_ns();
    size_t built = 0, total = 0;
    do {
        if (rt_query_build_rollups(s, end + 2 * H, 64, &built, &err)) {
            fprintf(stderr, "bench_rollup: building: %s\n", err.msg);
            return 1;
        }
        total += built;
    } while (built);
    double build_s = (bench_now_ns() - t) / 1e9;
    printf("rolled up %zu blocks (hours, then days) in %.1f s\n", total, build_s);
    for (int i = 0; i < NQ; i++)
        if (!skip[i])
            rolled_ms[i] = time_query(s, &qs[i], o.runs, &rolled[i]);
    printf("\n%-42s %12s %12s %8s %s\n", "query", "raw ms", "rolled ms", "ratio", "same");
    int status = 0;
    for (int i = 0; i < NQ; i++) {
        if (skip[i])
            continue;
        if (o.reuse || o.no_raw) { /* no raw reference */
            json_t *w = qs[i].base_to ? json_object_get(rolled[i], "current") : rolled[i];
            printf("%-42s %12s %12.1f %8s %.0f profiles\n", qs[i].name, "-", rolled_ms[i], "",
                   json_number_value(json_object_get(w, "profiles")));
            json_decref(rolled[i]);
            continue;
        }
        bool same = same_answer(raw[i], rolled[i]);
        status |= !same;
        printf("%-42s %12.1f %12.1f %8.4f %s\n", qs[i].name, raw_ms[i], rolled_ms[i],
               rolled_ms[i] / raw_ms[i], same ? "yes" : "NO");
        json_decref(raw[i]);
        json_decref(rolled[i]);
    }
    printf("max RSS %.0f MiB; store %.0f MiB\n", rss_mib(), rt_store_disk_bytes(s) / 1048576.0);
    rt_store_free(s);
    rt_profile_free(src.p);
    if (!o.keep)
        bench_rm_tree(dir);
    return status;
}
