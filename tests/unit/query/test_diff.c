/* Tests of the diff (DESIGN §6): ranking by delta_pp, the significance test with its
 * overdispersion phi and Bonferroni correction, A/A runs, and the diff answer's JSON. */
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "fake.h"
#include "test.h"

#define REL 1e-9

/* Column key of the flat flame graph fg ("parent", "depth", "name", "base_ns", ...). */
static json_t *fg_col(json_t *fg, const char *key)
{
    return json_object_get(json_object_get(fg, "nodes"), key);
}

static long long fg_int(json_t *fg, const char *key, long at)
{
    return (long long)json_integer_value(json_array_get(fg_col(fg, key), (size_t)at));
}

static double fg_real(json_t *fg, const char *key, long at)
{
    return json_real_value(json_array_get(fg_col(fg, key), (size_t)at));
}

static const char *fg_name(json_t *fg, long at)
{
    return json_string_value(
        json_array_get(json_object_get(fg, "names"), (size_t)fg_int(fg, "name", at)));
}

/* Index of the i-th child of node at (children follow their order in preorder), or -1. */
static long fg_child(json_t *fg, long at, size_t i)
{
    json_t *parent = fg_col(fg, "parent");
    for (size_t j = 0; j < json_array_size(parent); j++)
        if (json_integer_value(json_array_get(parent, j)) == at && i-- == 0)
            return (long)j;
    return -1;
}

/* A profile of window k: 60 s at start_s, counts per folded stack, 10 ms per sample. */
static void add60(struct rt__query_ctx *c, struct fake *f, int k, double start_s,
                  const char *const *stacks, const double *counts, size_t n, bool no_counts)
{
    struct frow rows[64];
    for (size_t i = 0; i < n; i++)
        rows[i] = (struct frow){stacks[i], counts[i], (int64_t)llround(counts[i] * 10 * MS_NS)};
    struct fmeta m = {"i1", (int64_t)(start_s * S_NS), 60 * S_NS, no_counts, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(c, f, k, &m, rows, n), 0);
}

static void init2(struct rt__query_ctx *c, struct fake *f, enum rt_ptype t)
{
    rt__query_ctx_init(c, fake_src(f), t, 2);
    rt__query_ctx_window(c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(c, 1, 600 * S_NS, 1200 * S_NS);
}

static const struct rt__query_diff_row *row_of(const struct rt__query_ctx *c,
                                               const struct rt__query_diff_row *rows, size_t n,
                                               const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(c->fns[rows[i].fn].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* Finishes c and ranks its functions into *rows (caller frees); returns the number of rows. */
static size_t rank(struct rt__query_ctx *c, struct rt__query_diff_row **rows)
{
    size_t n = 0;
    *rows = NULL;
    CHECK_INT(rt__query_finish(c), 0);
    CHECK_INT(rt__query_diff_rows(c, false, false, rows, &n), 0);
    return n;
}

/* The known-growth workload: 10 profiles of 1000 samples per window, all under main.
 * Baseline a 50 %, b 30 %, c 20 %; current a 40 %, b 30 %, c 30 %. */
static void add_known_growth(struct rt__query_ctx *c, struct fake *f)
{
    const char *st[] = {"main;a", "main;b", "main;c"};
    double base[] = {500, 300, 200}, cur[] = {400, 300, 300};
    for (int i = 0; i < 10; i++) {
        add60(c, f, 0, 60.0 * i, st, base, 3, false);
        add60(c, f, 1, 600 + 60.0 * i, st, cur, 3, false);
    }
}

/* The known-growth workload: c grows by exactly 10 pp and ranks first; then b and main
 * (0 pp, tied, by name), then a (-10 pp). z of c by hand: x_b = 2000, x_c = 3000,
 * n = 10000 each, pbar = 0.25, phi = 1 (every profile has its window's share exactly):
 * z = (0.3 - 0.2) / sqrt(0.25 * 0.75 * (1/10000 + 1/10000)). */
static void test_known_growth(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    add_known_growth(&c, f);
    struct rt__query_diff_row *rows;
    size_t n = rank(&c, &rows);
    CHECK_INT(n, 4);
    CHECK_STR(c.fns[rows[0].fn].name, "c");
    CHECK_NEAR(rows[0].delta_pp, 10.0, REL);
    CHECK_NEAR(rows[0].base_share, 20.0, REL);
    CHECK_NEAR(rows[0].cur_share, 30.0, REL);
    CHECK(rows[0].has_z);
    CHECK_NEAR(rows[0].z, 0.1 / sqrt(0.25 * 0.75 * (2.0 / 10000)), 1e-9);
    CHECK_INT(rows[0].significant, 1);
    CHECK(!rows[0].is_new);
    CHECK_STR(c.fns[rows[1].fn].name, "b");
    CHECK_STR(c.fns[rows[2].fn].name, "main");
    CHECK_NEAR(rows[2].delta_pp, 0.0, REL);
    CHECK_NEAR(rows[2].base_total_share, 100.0, REL);
    CHECK_NEAR(rows[2].cur_total_share, 100.0, REL);
    CHECK_INT(rows[2].significant, 0);
    CHECK(!rows[2].has_z); /* main has no self samples: pbar = 0 */
    CHECK_STR(c.fns[rows[3].fn].name, "a");
    CHECK_NEAR(rows[3].delta_pp, -10.0, REL);
    CHECK_INT(rows[3].significant, 1);
    CHECK_INT(rows[1].significant, 0);
    free(rows);
    fake_done(&c, f);
}

/* A function with 3 samples in each window (of 10,000) is not significant; one with 0 in the
 * baseline and 3 in the current is new, and not significant either. */
static void test_rare_not_significant(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    const char *st[] = {"main;a", "main;rare", "main;newbie"};
    double base[] = {997, 3, 0}, cur[] = {994, 3, 3};
    add60(&c, f, 0, 0, st, base, 3, false);
    add60(&c, f, 1, 600, st, cur, 3, false);
    for (int i = 1; i < 10; i++) {
        double fill[] = {1000};
        add60(&c, f, 0, 60.0 * i, st, fill, 1, false);
        add60(&c, f, 1, 600 + 60.0 * i, st, fill, 1, false);
    }
    struct rt__query_diff_row *rows;
    size_t n = rank(&c, &rows);
    const struct rt__query_diff_row *rare = row_of(&c, rows, n, "rare");
    const struct rt__query_diff_row *nb = row_of(&c, rows, n, "newbie");
    CHECK(rare && nb);
    if (rare && nb) {
        CHECK_INT(rare->significant, 0);
        CHECK(!rare->is_new);
        CHECK_NEAR(rare->delta_pp, 0.0, REL);
        CHECK_INT(nb->significant, 0);
        CHECK(nb->is_new);
        CHECK_NEAR(nb->delta_pp, 100.0 * 3 / 10000, REL);
    }
    free(rows);
    fake_done(&c, f);
}

/* chi^2 from s2 agrees with the definition: sum over every profile (zeros included) of
 * (x_i - n_i p)^2 / (n_i p (1 - p)). Profiles n = {100, 200, 300, 400}, x = {0, 10, 30, 0}:
 * x = 40, n = 1000, p = 0.04. */
static void test_chi2_identity(void)
{
    double n[] = {100, 200, 300, 400}, x[] = {0, 10, 30, 0};
    double p = 40.0 / 1000, direct = 0, s2 = 0;
    for (int i = 0; i < 4; i++) {
        direct += (x[i] - n[i] * p) * (x[i] - n[i] * p) / (n[i] * p * (1 - p));
        s2 += x[i] * x[i] / n[i];
    }
    CHECK_NEAR(rt__query_chi2(s2, 40, 1000), direct, 1e-12);
    CHECK_NEAR(rt__query_chi2(0, 0, 1000), 0.0, REL);
    CHECK_NEAR(rt__query_chi2(1000, 1000, 1000), 0.0, REL);
    CHECK_NEAR(rt__query_phi(5, 2), 1.0, REL);   /* fewer than 3 profiles */
    CHECK_NEAR(rt__query_phi(1, 10), 1.0, REL);  /* underdispersed: 1 */
    CHECK_NEAR(rt__query_phi(40, 12), 4.0, REL); /* 40 / (12 - 2) */
    double z;
    CHECK(!rt__query_z(0, 100, 0, 100, 1, &z));     /* pbar = 0 */
    CHECK(!rt__query_z(100, 100, 50, 50, 1, &z));   /* pbar = 1 */
    CHECK(!rt__query_z(1, 0, 1, 100, 1, &z));       /* empty window */
    CHECK(rt__query_z(10, 100, 20, 100, 4, &z));
    CHECK_NEAR(z, 0.1 / sqrt(4 * 0.15 * 0.85 * 0.02), 1e-12);
    CHECK_NEAR(rt__query_pvalue(1.959963984540054), 0.05, 1e-9);
    CHECK_NEAR(rt__query_pvalue(-1.959963984540054), 0.05, 1e-9);
}

/* A bursty function (all its samples in one profile per window) would pass the naive test
 * (z = 0.005 / sqrt(0.0125 * 0.9875 * 0.0002) = 3.18, p = 0.0015 < 0.05 / 2), but its
 * per-profile counts are overdispersed and phi keeps it from being significant. */
static void test_bursty_not_significant(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    const char *st[] = {"main;work", "main;burst"};
    for (int i = 0; i < 10; i++) {
        double b[] = {i == 9 ? 900 : 1000, i == 9 ? 100 : 0};
        double u[] = {i == 9 ? 850 : 1000, i == 9 ? 150 : 0};
        add60(&c, f, 0, 60.0 * i, st, b, 2, false);
        add60(&c, f, 1, 600 + 60.0 * i, st, u, 2, false);
    }
    struct rt__query_diff_row *rows;
    size_t n = rank(&c, &rows);
    const struct rt__query_diff_row *r = row_of(&c, rows, n, "burst");
    CHECK(r != NULL);
    if (r) {
        double naive = 0.005 / sqrt(0.0125 * 0.9875 * 0.0002);
        CHECK(rt__query_pvalue(naive) < 0.05 / 3);
        CHECK(fabs(r->z) < naive / 3); /* phi is large */
        CHECK_INT(r->significant, 0);
        CHECK_NEAR(r->delta_pp, 0.5, REL);
    }
    free(rows);
    fake_done(&c, f);
}

/* ---- A/A runs: a seeded generator of bursty multinomial workloads ---- */

struct rng {
    uint64_t s;
};

static double uniform(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return ((r->s * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

static double normal(struct rng *r)
{
    double u = uniform(r), v = uniform(r);
    return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/* Gamma(shape, 1) by Marsaglia-Tsang (shape >= 1). */
static double gamma_draw(struct rng *r, double shape)
{
    double d = shape - 1.0 / 3, cc = 1 / sqrt(9 * d);
    for (;;) {
        double x = normal(r), v = 1 + cc * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = uniform(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

#define NFUNC 20
static const char *const aa_stacks[NFUNC] = {
    "main;f00", "main;f01", "main;f02", "main;f03", "main;f04", "main;f05", "main;f06",
    "main;f07", "main;f08", "main;f09", "main;x;f10", "main;x;f11", "main;x;f12",
    "main;x;f13", "main;x;f14", "main;y;f15", "main;y;f16", "main;y;f17", "main;y;f18",
    "main;y;f19"};

/* 30 profiles of 500 samples for window k; function j's probability is proportional to
 * 1/(j+1) (times boost for j == 3 in window 1), each profile's probabilities perturbed by
 * Gamma(2) noise (bursty). */
static void aa_window(struct rt__query_ctx *c, struct fake *f, struct rng *r, int k,
                      double boost)
{
    for (int p = 0; p < 30; p++) {
        double w[NFUNC], sum = 0, counts[NFUNC] = {0};
        for (int j = 0; j < NFUNC; j++) {
            w[j] = (1.0 / (j + 1)) * gamma_draw(r, 2.0) * (k == 1 && j == 3 ? boost : 1);
            sum += w[j];
        }
        for (int s = 0; s < 500; s++) {
            double u = uniform(r) * sum, acc = 0;
            int j = 0;
            for (; j < NFUNC - 1; j++) {
                acc += w[j];
                if (u < acc)
                    break;
            }
            counts[j]++;
        }
        add60(c, f, k, 600.0 * k + 20.0 * p, aa_stacks, counts, NFUNC, false);
    }
}

/* Number of significant functions in one seeded run. */
static int aa_run(uint64_t seed, double boost, const char **first)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    struct rng r = {seed * 0x9E3779B97F4A7C15ULL + 1};
    aa_window(&c, f, &r, 0, 1);
    aa_window(&c, f, &r, 1, boost);
    struct rt__query_diff_row *rows;
    size_t n = rank(&c, &rows);
    int flagged = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].significant == 1) {
            flagged++;
            if (first && flagged == 1)
                *first = c.fns[rows[i].fn].name[0] == 'f' && c.fns[rows[i].fn].name[2] == '3'
                             ? "f03"
                             : "other";
        }
    free(rows);
    fake_done(&c, f);
    return flagged;
}

/* A/A: 20 seeds, the same bursty workload in both windows: at most 1 run flags anything
 * (DESIGN §6). Control: tripling f03's rate in the current window is found in most runs. */
static void test_aa_runs(void)
{
    int runs_flagging = 0, found = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        if (aa_run(seed, 1, NULL) > 0)
            runs_flagging++;
        const char *first = NULL;
        if (aa_run(seed, 3, &first) > 0 && first && strcmp(first, "f03") == 0)
            found++;
    }
    printf("A/A: %d of 20 runs flagged something; 3x growth of f03 found in %d of 20\n",
           runs_flagging, found);
    CHECK(runs_flagging <= 1);
    CHECK(found >= 15);
}

/* ---- the JSON answer of a diff ---- */

/* Diff JSON: ordering, fields, truncation with a limit, the differential flame graph. */
static void test_diff_json(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    add_known_growth(&c, f);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *issue = json_pack("{s:s}", "id", "7");
    json_t *deploys = json_array();
    json_t *out = rt__query_diff_json(&c, "shop", 2, issue, deploys);
    CHECK(out != NULL);
    CHECK_STR(jstr(out, "type"), "cpu");
    CHECK_STR(jstr(out, "type_note"), "excludes time spent waiting");
    CHECK_NEAR(jreal(out, "window_s"), 600.0, REL);
    CHECK_STR(jstr(json_object_get(out, "issue"), "id"), "7");
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 2);
    CHECK(json_is_true(json_object_get(out, "truncated")));
    json_t *first = json_array_get(json_object_get(out, "functions"), 0);
    CHECK_STR(jstr(first, "name"), "c");
    CHECK_NEAR(jreal(first, "delta_pp"), 10.0, REL);
    CHECK_NEAR(jreal(first, "base_samples"), 2000.0, REL);
    CHECK_NEAR(jreal(first, "cur_samples"), 3000.0, REL);
    CHECK(json_is_true(json_object_get(first, "significant")));
    CHECK(json_is_false(json_object_get(first, "new")));
    CHECK(json_is_real(json_object_get(first, "z")));
    /* capacity: gapless 600 s windows, 100 s of CPU each: 730 * 100 / 600 */
    json_t *cap = json_object_get(out, "capacity");
    json_t *v = json_object_get(cap, "vcpu_hours_per_month");
    CHECK_NEAR(jreal(v, "base"), 730.0 * 100 / 600, REL);
    CHECK_NEAR(jreal(v, "cur"), 730.0 * 100 / 600, REL);
    /* c: 20 s then 30 s of CPU */
    json_t *fv = json_object_get(first, "vcpu_hours_per_month");
    CHECK_NEAR(jreal(fv, "base"), 730.0 * 20 / 600, REL);
    CHECK_NEAR(jreal(fv, "cur"), 730.0 * 30 / 600, REL);
    CHECK_NEAR(jreal(json_object_get(json_object_get(cap, "inputs"), "cur"), "cpu_s"), 100.0, REL);
    CHECK(json_is_null(json_object_get(out, "capacity_unavailable")));
    CHECK(json_is_null(json_object_get(out, "significance_unavailable")));
    CHECK(json_is_false(json_object_get(out, "baseline_missing")));
    CHECK(json_is_null(json_object_get(out, "cpu_agreement")));
    /* differential flame graph: root -> main -> a (40 % now), then b and c (30 % now each)
     * by baseline total (b 30 %, c 20 %) */
    json_t *fg = json_object_get(out, "flamegraph");
    CHECK_STR(fg_name(fg, 0), "root");
    CHECK_INT(fg_int(fg, "base_ns", 0), 100 * S_NS);
    CHECK_INT(fg_int(fg, "cur_ns", 0), 100 * S_NS);
    long mainn = fg_child(fg, 0, 0);
    CHECK_STR(fg_name(fg, mainn), "main");
    CHECK_INT(fg_child(fg, mainn, 3), -1); /* three children */
    CHECK_STR(fg_name(fg, fg_child(fg, mainn, 0)), "a");
    CHECK_STR(fg_name(fg, fg_child(fg, mainn, 1)), "b");
    CHECK_STR(fg_name(fg, fg_child(fg, mainn, 2)), "c");
    long cn = fg_child(fg, mainn, 2);
    CHECK_NEAR(fg_real(fg, "base_share", cn), 20.0, REL);
    CHECK_NEAR(fg_real(fg, "cur_share", cn), 30.0, REL);
    CHECK_NEAR(fg_real(fg, "delta_pp", cn), 10.0, REL);
    json_t *q = json_object_get(out, "quality");
    CHECK_INT(jint(json_object_get(q, "baseline"), "profiles"), 10);
    CHECK_INT(json_array_size(json_object_get(q, "warnings")), 0);
    json_decref(out);
    json_decref(issue);
    json_decref(deploys);
    fake_done(&c, f);
}

/* No baseline data: the answer says so, lists current functions as new, none significant. */
static void test_baseline_missing(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    const char *st[] = {"main;a", "main;b"};
    double cur[] = {600, 400};
    for (int i = 0; i < 10; i++)
        add60(&c, f, 1, 600 + 60.0 * i, st, cur, 2, false);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    CHECK(json_is_true(json_object_get(out, "baseline_missing")));
    CHECK(json_is_null(json_object_get(out, "issue")));
    json_t *a = jfn(out, "a");
    CHECK(a && json_is_true(json_object_get(a, "new")));
    CHECK(a && json_is_false(json_object_get(a, "significant")));
    CHECK(a && json_is_null(json_object_get(json_object_get(a, "vcpu_hours_per_month"), "base")));
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 3);
    json_t *w = json_object_get(json_object_get(out, "quality"), "warnings");
    CHECK_STR(json_string_value(json_array_get(w, 0)),
              "no baseline data: nothing can be ranked as grown");
    CHECK_STR(jstr(out, "capacity_unavailable"), "baseline: no profiles in window");
    json_t *v = json_object_get(json_object_get(out, "capacity"), "vcpu_hours_per_month");
    CHECK(json_is_null(json_object_get(v, "base")));
    CHECK_NEAR(jreal(v, "cur"), 730.0 * 100 / 600, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* A profile without sample counts: significance null for all, with the reason. */
static void test_counts_missing(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    const char *st[] = {"main;a", "main;b"};
    double base[] = {500, 500}, cur[] = {100, 900};
    add60(&c, f, 0, 0, st, base, 2, false);
    add60(&c, f, 1, 600, st, cur, 2, true);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    CHECK(json_is_string(json_object_get(out, "significance_unavailable")));
    json_t *b = jfn(out, "b");
    CHECK(b && json_is_null(json_object_get(b, "significant")));
    CHECK(b && json_is_null(json_object_get(b, "z")));
    CHECK_NEAR(jreal(b, "delta_pp"), 40.0, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* A window whose profiles carry no sample counts (e.g. parca__single-stack.pb.gz: only
 * cpu/nanoseconds, period 0) has "samples": null in its block, not 0; the other window keeps
 * its count, and significance_unavailable says why. */
static void test_window_samples_null(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_CPU);
    const char *st[] = {"main;a", "main;b"};
    double base[] = {500, 500};
    add60(&c, f, 0, 0, st, base, 2, false);
    struct frow rows[2] = {{"main;a", 0, 2 * S_NS}, {"main;b", 0, 3 * S_NS}};
    struct fmeta m = {"i1", 600 * S_NS, 60 * S_NS, true, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 1, &m, rows, 2), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    json_t *bw = json_object_get(out, "baseline"), *cw = json_object_get(out, "current");
    CHECK_NEAR(jreal(bw, "samples"), 1000, REL);
    CHECK(json_is_null(json_object_get(cw, "samples")));
    CHECK_INT(jint(cw, "value_ns"), 5 * S_NS);
    const char *why = jstr(out, "significance_unavailable");
    CHECK(why && strstr(why, "no sample counts"));
    json_decref(out);
    fake_done(&c, f);
}

/* Wall diff: capacity null with the reason, per-function vcpu null; low coverage warned. */
static void test_wall_diff(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init2(&c, f, RT_PTYPE_WALL);
    const char *st[] = {"main;a"};
    double x[] = {100};
    add60(&c, f, 0, 0, st, x, 1, false);
    add60(&c, f, 1, 600, st, x, 1, false);
    CHECK_INT(rt__query_add_liveness(&c, 0, "i1", 0, 590 * S_NS), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    CHECK(json_is_null(json_object_get(out, "capacity")));
    CHECK_STR(jstr(out, "capacity_unavailable"), RT__QUERY_REASON_WALL);
    CHECK(json_is_null(json_object_get(jfn(out, "a"), "vcpu_hours_per_month")));
    CHECK_STR(jstr(out, "type_note"), "includes time blocked on I/O and locks");
    json_t *w = json_object_get(json_object_get(out, "quality"), "warnings");
    CHECK_INT(json_array_size(w), 1); /* baseline coverage 60 / 590 */
    CHECK_STR(json_string_value(json_array_get(w, 0)),
              "coverage below 50% in the baseline window");
    json_decref(out);
    fake_done(&c, f);
}

/* Windows unlike in length, and a window the instance lived in for a tenth: both said, since
 * capacity is a rate over each whole window (docs/decisions.md). */
static void test_unlike_windows_warned(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 900 * S_NS);
    const char *st[] = {"main;a"};
    double x[] = {100};
    for (int k = 0; k < 10; k++)
        add60(&c, f, 0, 60 * k, st, x, 1, false);
    add60(&c, f, 1, 600, st, x, 1, false); /* alive 60 s of the 300 s current window */
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    json_t *w = json_object_get(json_object_get(out, "quality"), "warnings");
    CHECK_INT(json_array_size(w), 2);
    CHECK_STR(json_string_value(json_array_get(w, 0)),
              "the windows differ in length (baseline 600 s, current 300 s): the current window "
              "ends before uploads still in flight; capacity is a rate and compares, sample "
              "counts do not");
    CHECK_STR(json_string_value(json_array_get(w, 1)),
              "in the current window the service was alive for 60 s of 300 s: its capacity "
              "figure averages over the whole window");
    json_decref(out);
    fake_done(&c, f);

    /* a deploy: release 1.0's instance for the first half of the current window, 2.0's for
     * the second; the service was alive throughout, so nothing to warn of */
    f = fake_new();
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 120 * S_NS);
    rt__query_ctx_window(&c, 1, 120 * S_NS, 240 * S_NS);
    struct frow rows[] = {{"main;a", 100, S_NS}};
    struct fmeta m[] = {{"i1", 0, 60 * S_NS, false, 0, false, NULL, 0, false},
                        {"i1", 60 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false},
                        {"i1", 120 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false},
                        {"i2", 180 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false}};
    for (int k = 0; k < 4; k++)
        CHECK_INT(fake_add(&c, f, k < 2 ? 0 : 1, &m[k], rows, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    CHECK_INT(json_array_size(json_object_get(json_object_get(out, "quality"), "warnings")), 0);
    json_decref(out);
    fake_done(&c, f);
}

/* Speed: 600 profiles x 3000 rows per window (distinct stacks of depth 8 over 2,000
 * functions), aggregated and answered. Printed, not asserted (STYLE: CI times nothing). */
static void test_speed(void)
{
    struct fake *f = fake_new();
    enum { NST = 3000, DEPTH = 8, NPROF = 600 };
    char buf[256];
    uint32_t ids[NST];
    struct rng r = {42};
    for (int s = 0; s < NST; s++) {
        int n = snprintf(buf, sizeof(buf), "main");
        for (int d = 1; d < DEPTH; d++)
            n += snprintf(buf + n, sizeof(buf) - n, ";m%d.f%d", d, (int)(uniform(&r) * 2000));
        ids[s] = fake_stack(f, buf);
    }
    struct rt_store_row *rows = malloc(NST * sizeof(*rows));
    struct rt__query_ctx c;
    clock_t t0 = clock();
    init2(&c, f, RT_PTYPE_CPU);
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < NPROF; p++) {
            struct rt_profile_meta m = {0};
            m.instance = p % 2 ? "i1" : "i2";
            m.time_ns = 600 * S_NS * k + (int64_t)p * S_NS;
            m.duration_ns = 60 * S_NS;
            m.thread_cpu_ns = m.process_cpu_ns = -1;
            m.has_counts = true;
            m.producer = "";
            m.cpu_scale = 1;
            for (int s = 0; s < NST; s++)
                rows[s] = (struct rt_store_row){ids[s], 1 + (s + p) % 7, 10 * MS_NS};
            CHECK_INT(rt__query_add_profile(&c, k, &m, rows, NST), 0);
        }
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(out != NULL);
    printf("speed: diff of 2 x %d profiles x %d rows: %.3f s\n", NPROF, NST, secs);
    json_decref(out);
    free(rows);
    fake_done(&c, f);
}

int main(void)
{
    RUN(test_known_growth);
    RUN(test_rare_not_significant);
    RUN(test_chi2_identity);
    RUN(test_bursty_not_significant);
    RUN(test_aa_runs);
    RUN(test_diff_json);
    RUN(test_baseline_missing);
    RUN(test_counts_missing);
    RUN(test_window_samples_null);
    RUN(test_wall_diff);
    RUN(test_unlike_windows_warned);
    RUN(test_speed);
    return TEST_DONE();
}
