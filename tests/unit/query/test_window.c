/* Tests of window aggregation (DESIGN §6): overlap weighting, self and total per function
 * (recursion counted once per stack), and the profile answer built on it. */
#include <math.h>

#include "fake.h"
#include "test.h"

#define REL 1e-9

static void init1(struct rt__query_ctx *c, struct fake *f, enum rt_ptype t, int64_t from_s,
                  int64_t to_s)
{
    rt__query_ctx_init(c, fake_src(f), t, 1);
    rt__query_ctx_window(c, 0, from_s * S_NS, to_s * S_NS);
}

static void add(struct rt__query_ctx *c, struct fake *f, const char *inst, int64_t start_s,
                int64_t dur_s, const struct frow *rows, size_t n)
{
    struct fmeta m = {inst, start_s * S_NS, dur_s < 0 ? -1 : dur_s * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(c, f, 0, &m, rows, n), 0);
}

#define W rt_profile_window_weight

static void test_weight(void)
{
    CHECK_NEAR(W(0, 60 * S_NS, 0, 600 * S_NS), 1.0, REL);
    CHECK_NEAR(W(-30 * S_NS, 60 * S_NS, 0, 600 * S_NS), 0.5, REL);
    CHECK_NEAR(W(590 * S_NS, 40 * S_NS, 0, 600 * S_NS), 0.25, REL);
    CHECK_NEAR(W(-60 * S_NS, 60 * S_NS, 0, 600 * S_NS), 0.0, REL); /* ends at from */
    CHECK_NEAR(W(600 * S_NS, 60 * S_NS, 0, 600 * S_NS), 0.0, REL); /* half-open */
    CHECK_NEAR(W(-100 * S_NS, 1000 * S_NS, 0, 600 * S_NS), 0.6, REL);
    CHECK_NEAR(W(5 * S_NS, -1, 0, 600 * S_NS), 1.0, REL);  /* unknown: start in */
    CHECK_NEAR(W(5 * S_NS, 0, 0, 600 * S_NS), 1.0, REL);
    CHECK_NEAR(W(600 * S_NS, -1, 0, 600 * S_NS), 0.0, REL);
    CHECK_NEAR(W(-1, -1, 0, 600 * S_NS), 0.0, REL);
}

/* Window [0, 600): a profile [-30, 30) with 100 samples of a (1 s) weighs 1/2; one at
 * [300, 360) with 100 samples of b weighs 1; one at [570, 630) weighs 1/2 (c). Totals:
 * samples 50 + 100 + 50 = 200, value 0.5 + 1 + 0.5 = 2 s; a's share 25 %. */
static void test_straddling_weights(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow a = {"main;a", 100, S_NS}, b = {"main;b", 100, S_NS}, cc = {"main;c", 100, S_NS};
    add(&c, f, "i1", -30, 60, &a, 1);
    add(&c, f, "i1", 300, 60, &b, 1);
    add(&c, f, "i1", 570, 60, &cc, 1);
    add(&c, f, "i1", 600, 60, &cc, 1); /* outside: ignored */
    CHECK_INT(rt__query_finish(&c), 0);
    CHECK_INT(c.win[0].profiles, 3);
    CHECK_NEAR(c.win[0].samples, 200.0, REL);
    CHECK_NEAR(c.win[0].value_ns, 2e9, REL);
    int ia = fake_fn(&c, "a");
    CHECK(ia >= 0);
    CHECK_NEAR(c.fns[ia].self_s[0], 50.0, REL);
    CHECK_NEAR(c.fns[ia].self_v[0], 0.5e9, REL);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    CHECK_NEAR(jreal(out, "samples"), 200.0, REL);
    CHECK_INT(jint(out, "value_ns"), 2 * S_NS);
    json_t *fns = json_object_get(out, "functions");
    /* main (self 0) last; b (1 s) first; a and c tie at 0.5 s: by name */
    CHECK_STR(jstr(json_array_get(fns, 0), "name"), "b");
    CHECK_STR(jstr(json_array_get(fns, 1), "name"), "a");
    CHECK_STR(jstr(json_array_get(fns, 2), "name"), "c");
    CHECK_STR(jstr(json_array_get(fns, 3), "name"), "main");
    json_t *fa = json_array_get(fns, 1);
    CHECK_NEAR(jreal(fa, "self_share"), 25.0, REL);
    CHECK_NEAR(jreal(fa, "self_samples"), 50.0, REL);
    json_t *fm = json_array_get(fns, 3);
    CHECK_NEAR(jreal(fm, "total_share"), 100.0, REL);
    CHECK_INT(jint(fm, "total_ns"), 2 * S_NS);
    CHECK_INT(jint(fm, "self_ns"), 0);
    json_decref(out);
    fake_done(&c, f);
}

/* Recursion: in "main;f;g;f" f is counted once in total; self belongs to the leaf only.
 * Stacks: main;f;g;f 30 samples (300 ms), main;f 10 (100 ms), main;g 60 (600 ms).
 * total(f) = 400 ms (40 %), self(f) = 400 ms; total(g) = 900 ms, self(g) = 600 ms. */
static void test_self_total_recursion(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"main;f;g;f", 30, 300 * MS_NS},
                          {"main;f", 10, 100 * MS_NS},
                          {"main;g", 60, 600 * MS_NS}};
    add(&c, f, "i1", 0, 600, rows, 3);
    CHECK_INT(rt__query_finish(&c), 0);
    const struct rt__query_fn *ff = &c.fns[fake_fn(&c, "f")], *g = &c.fns[fake_fn(&c, "g")];
    CHECK_NEAR(ff->total_v[0], 400.0 * MS_NS, REL);
    CHECK_NEAR(ff->self_v[0], 400.0 * MS_NS, REL);
    CHECK_NEAR(ff->total_s[0], 40.0, REL);
    CHECK_NEAR(g->total_v[0], 900.0 * MS_NS, REL);
    CHECK_NEAR(g->self_v[0], 600.0 * MS_NS, REL);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *fns = json_object_get(out, "functions");
    CHECK_STR(jstr(json_array_get(fns, 0), "name"), "g");
    CHECK_NEAR(jreal(json_array_get(fns, 1), "total_share"), 40.0, REL);
    /* gapless 600 s, 1 s CPU: 730 * 1 / 600; g: 730 * 0.6 / 600 */
    json_t *cap = json_object_get(out, "capacity");
    CHECK_NEAR(jreal(cap, "vcpu_hours_per_month"), 730.0 / 600, REL);
    CHECK_NEAR(jreal(json_array_get(fns, 0), "vcpu_hours_per_month"), 730.0 * 0.6 / 600, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* limit: 5 functions, limit 2 -> 2 listed, truncated; limit 5 -> not truncated. */
static void test_limit(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"a", 5, 5}, {"b", 4, 4}, {"c", 3, 3}, {"d", 2, 2}, {"e", 1, 1}};
    add(&c, f, "i1", 0, 600, rows, 5);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 2);
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 2);
    CHECK(json_is_true(json_object_get(out, "truncated")));
    CHECK_STR(jstr(json_array_get(json_object_get(out, "functions"), 1), "name"), "b");
    json_decref(out);
    out = rt__query_profile_json(&c, "shop", 5);
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 5);
    CHECK(json_is_false(json_object_get(out, "truncated")));
    json_decref(out);
    fake_done(&c, f);
}

/* A wall answer: capacity null with the reason, per-function vcpu null, no cpu_agreement. */
static void test_wall_profile(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_WALL, 0, 600);
    struct frow rows[] = {{"main;sleep", 100, S_NS}};
    struct fmeta m = {"i1", 0, 600 * S_NS, false, S_NS, true, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "py", 1000);
    CHECK_STR(jstr(out, "type"), "wall");
    CHECK(json_is_null(json_object_get(out, "capacity")));
    CHECK_STR(jstr(out, "capacity_unavailable"),
              "wall-clock profiles include time blocked on I/O and locks; CPU cannot be "
              "derived from them");
    json_t *fn = json_array_get(json_object_get(out, "functions"), 0);
    CHECK(json_is_null(json_object_get(fn, "vcpu_hours_per_month")));
    CHECK(json_is_null(json_object_get(out, "cpu_agreement")));
    json_t *q = json_object_get(out, "quality");
    CHECK_NEAR(jreal(q, "coverage"), 1.0, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* Unknown duration: weight 1 when its start is inside; capacity null with the reason. */
static void test_unknown_duration(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"main;a", 10, 100 * MS_NS}};
    add(&c, f, "i1", 100, -1, rows, 1);
    add(&c, f, "i1", 700, -1, rows, 1); /* outside */
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    CHECK_INT(jint(out, "profiles"), 1);
    CHECK_INT(jint(out, "value_ns"), 100 * MS_NS);
    CHECK(json_is_null(json_object_get(out, "capacity")));
    CHECK_STR(jstr(out, "capacity_unavailable"), "profile duration unknown");
    json_decref(out);
    fake_done(&c, f);
}

/* An empty window: no profiles, capacity null with "no profiles in window". */
static void test_empty(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    CHECK_INT(jint(out, "profiles"), 0);
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 0);
    CHECK_STR(jstr(out, "capacity_unavailable"), "no profiles in window");
    CHECK_STR(jstr(out, "from"), "1970-01-01T00:00:00Z");
    CHECK_STR(jstr(out, "to"), "1970-01-01T00:10:00Z");
    json_t *q = json_object_get(out, "quality");
    CHECK(json_is_false(json_object_get(q, "has_data")));
    CHECK(json_is_null(json_object_get(q, "coverage")));
    json_t *nodes = json_object_get(json_object_get(out, "flamegraph"), "nodes");
    CHECK_INT(json_integer_value(json_array_get(json_object_get(nodes, "total_ns"), 0)), 0);
    CHECK_INT(json_array_size(json_object_get(nodes, "parent")), 1); /* the root, no children */
    json_decref(out);
    fake_done(&c, f);
}

/* Per-function capacity uses each instance's A_i / P_i: instance i1 profiles [0, 100) with
 * 1 s of a, polls to 500 s (A/P = 5); i2 gapless [0, 600) with 6 s of a and 6 s of b.
 * a: 730/600 * (1 * 5 + 6) = 13.3833...; service: 730/600 * (5 + 12) = 20.6833... */
static void test_per_function_capacity(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow r1[] = {{"main;a", 100, S_NS}};
    struct frow r2[] = {{"main;a", 600, 6 * S_NS}, {"main;b", 600, 6 * S_NS}};
    add(&c, f, "i1", 0, 100, r1, 1);
    add(&c, f, "i2", 0, 600, r2, 2);
    CHECK_INT(rt__query_add_liveness(&c, 0, "i1", 0, 500 * S_NS), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *cap = json_object_get(out, "capacity");
    CHECK_NEAR(jreal(cap, "vcpu_hours_per_month"), 730.0 / 600 * (5 + 12), REL);
    json_t *fa = json_array_get(json_object_get(out, "functions"), 0);
    CHECK_STR(jstr(fa, "name"), "a");
    CHECK_NEAR(jreal(fa, "vcpu_hours_per_month"), 730.0 / 600 * (1 * 5 + 6), REL);
    json_t *in = json_object_get(cap, "inputs");
    CHECK_NEAR(jreal(in, "profiled_s"), 700.0, REL);
    CHECK_NEAR(jreal(in, "alive_s"), 1100.0, REL);
    CHECK_NEAR(jreal(in, "cpu_s"), 13.0, REL);
    CHECK_INT(jint(in, "instances_profiled"), 2);
    json_decref(out);
    fake_done(&c, f);
}

/* Names stored before ingest repaired them (not valid UTF-8: "bad\xc3(frame", "caf\xe9") made
 * every JSON answer fail (jansson refuses them: NULL, "out of memory building the answer").
 * They are now repaired (U+FFFD per invalid byte) in the functions, the flame graph and the
 * diff, and the answer serializes. */
static void test_invalid_utf8_names(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"ok;bad\xc3\x28" "frame", 3, 30 * MS_NS}, {"ok;caf\xe9", 1, 10 * MS_NS}};
    add(&c, f, "i1", 0, 60, rows, 2);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    CHECK(out != NULL);
    json_t *fns = json_object_get(out, "functions");
    CHECK_STR(jstr(json_array_get(fns, 0), "name"), "bad\xef\xbf\xbd(frame");
    CHECK_STR(jstr(json_array_get(fns, 1), "name"), "caf\xef\xbf\xbd");
    json_t *names = json_object_get(json_object_get(out, "flamegraph"), "names");
    CHECK_INT(json_array_size(names), 4);
    char *text = out ? json_dumps(out, 0) : NULL;
    CHECK(text != NULL);
    free(text);
    json_decref(out);
    fake_done(&c, f);
    /* The diff answer too. */
    f = fake_new();
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 1200 * S_NS);
    struct fmeta m0 = {"i1", 0, 60 * S_NS, false, 0, false, NULL, 0, false};
    struct fmeta m1 = {"i1", 600 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m0, rows, 2), 0);
    CHECK_INT(fake_add(&c, f, 1, &m1, rows, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    CHECK(out != NULL);
    json_decref(out);
    fake_done(&c, f);
    /* A string that is not UTF-8 is repaired, NULL reads as "". */
    json_t *j = rt__query_str_json("x\xff");
    CHECK_STR(json_string_value(j), "x\xef\xbf\xbd");
    json_decref(j);
    j = rt__query_str_json(NULL);
    CHECK_STR(json_string_value(j), "");
    json_decref(j);
}

/* Two profiles of INT64_MAX ns each (stored before ingest refused values over 2^62 ns): the
 * double sums hold 2^64 and print as a (real) number, where llround wrapped to a negative
 * self_ns. */
static void test_huge_values_not_negative(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"main;work", 1, INT64_MAX}};
    add(&c, f, "i1", 0, 60, rows, 1);
    add(&c, f, "i1", 60, 60, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *fn = json_array_get(json_object_get(out, "functions"), 0);
    CHECK(json_number_value(json_object_get(fn, "self_ns")) > 1.8e19);
    CHECK(json_number_value(json_object_get(out, "value_ns")) > 1.8e19);
    json_t *nodes = json_object_get(json_object_get(out, "flamegraph"), "nodes");
    CHECK(json_number_value(json_array_get(json_object_get(nodes, "total_ns"), 0)) > 1.8e19);
    json_decref(out);
    fake_done(&c, f);
    json_t *j = rt__query_ns_json(9223372036854775807.0);
    CHECK(json_is_real(j) && json_real_value(j) > 0);
    json_decref(j);
    j = rt__query_ns_json(-1e19);
    CHECK(json_is_real(j) && json_real_value(j) < 0);
    json_decref(j);
    j = rt__query_ns_json(9.2e18);
    CHECK(json_is_integer(j) && json_integer_value(j) == 9200000000000000000LL);
    json_decref(j);
}

/* No profile of the window carries sample counts (cpu/nanoseconds only, period 0, as
 * parca__single-stack.pb.gz): "samples" is null, not 0. An empty window keeps 0. */
static void test_samples_null_without_counts(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[] = {{"main;work", 0, 2 * S_NS}};
    struct fmeta m = {"i1", 0, 60 * S_NS, true, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    CHECK(json_is_null(json_object_get(out, "samples")));
    CHECK_INT(jint(out, "value_ns"), 2 * S_NS);
    json_t *warn = json_object_get(json_object_get(out, "quality"), "warnings");
    const char *w0 = json_string_value(json_array_get(warn, 0));
    CHECK(w0 && strstr(w0, "carries sample counts"));
    json_decref(out);
    fake_done(&c, f);
    f = fake_new();
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    CHECK_INT(rt__query_finish(&c), 0);
    out = rt__query_profile_json(&c, "shop", 1000);
    CHECK(json_is_real(json_object_get(out, "samples")));
    json_decref(out);
    fake_done(&c, f);
}

/* The capacity inputs of a profile answer list each instance's part (DESIGN §7). */
static void test_capacity_instances(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow big[] = {{"main;work", 600, 6 * S_NS}}, small[] = {{"main;work", 100, S_NS}};
    for (int i = 0; i < 10; i++) {
        add(&c, f, "web-1", 60 * i, 60, big, 1);
        add(&c, f, "web-2", 60 * i, 60, small, 1);
    }
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *in = json_object_get(json_object_get(out, "capacity"), "inputs");
    json_t *arr = json_object_get(in, "instances");
    CHECK_INT(json_array_size(arr), 2);
    CHECK_STR(jstr(json_array_get(arr, 0), "instance"), "web-1");
    CHECK_NEAR(jreal(json_array_get(arr, 0), "cpu_s"), 60.0, REL);
    CHECK_NEAR(jreal(json_array_get(arr, 0), "vcpu_hours_per_month"), 73.0, REL);
    CHECK_NEAR(jreal(json_array_get(arr, 1), "vcpu_hours_per_month"), 73.0 / 6, REL);
    CHECK(json_is_false(json_object_get(in, "instances_truncated")));
    json_decref(out);
    fake_done(&c, f);
}

/* The aggregation takes a row's stack index from a direct-mapped cache when it can (window.c,
 * row_stacks) and sums a profile's self values per function without a branch (touch).
 * Profiles of two windows and three instances, whose rows come ascending by stack id (as the
 * stores give them), descending, shuffled, with a stack twice and with rows of zero, must
 * give exactly the sums of a plain loop: per stack, per function (self and s2, the chi^2
 * input) and per (instance, function) capacity value, in each window. Integer samples and
 * values, each profile wholly inside its window (weight 1), the same additions in the same
 * order: equal to the bit. The first NPROF profiles meet NBASE stacks, so the cache keeps its
 * fewest slots, and half of them share a slot with the other half (ids that many apart); the
 * last NGROW profiles meet NSTK stacks, so the cache is made again, larger, while in use. */
#define NBASE 40
#define NSTK 240
#define NLEAF 12
#define NPROF 60
#define NGROW 12

struct any_order {
    double st_s[2][NSTK], st_v[2][NSTK], self_s[2][NLEAF], s2[2][NLEAF], inst_v[2][3][NLEAF];
};

/* One profile of random rows among stacks [0, nstk) into window p % 2 of c and into o. */
static void any_order_profile(struct rt__query_ctx *c, struct fake *f, struct any_order *o,
                              char (*names)[48], int nstk, int p)
{
    static const char *const insts[3] = {"i1", "i2", "i3"};
    struct frow rows[NSTK + 1];
    int pick[NSTK + 1], n = 0, k = p % 2;
    for (int i = 0; i < nstk; i++)
        if (fake_rnd(4)) /* about three stacks in four */
            pick[n++] = i;
    if (p % 4 == 1) /* descending */
        for (int a = 0, b = n - 1; a < b; a++, b--) {
            int t = pick[a];
            pick[a] = pick[b];
            pick[b] = t;
        }
    else if (p % 4 == 2) /* shuffled */
        for (int a = n - 1; a > 0; a--) {
            int b = (int)fake_rnd((uint32_t)a + 1), t = pick[a];
            pick[a] = pick[b];
            pick[b] = t;
        }
    else if (p % 4 == 3 && n > 2) /* a stack twice */
        pick[n++] = pick[1];
    double n_i = 0, acc_s[NLEAF] = {0}, acc_v[NLEAF] = {0};
    for (int r = 0; r < n; r++) {
        int i = pick[r];
        bool zero = fake_rnd(10) == 0;
        double smp = zero ? 0 : 1 + fake_rnd(50);
        int64_t val = zero ? 0 : (int64_t)smp * 10 * MS_NS;
        rows[r] = (struct frow){names[i], smp, val};
        o->st_s[k][i] += smp;
        o->st_v[k][i] += (double)val;
        acc_s[i % NLEAF] += smp;
        acc_v[i % NLEAF] += (double)val;
        n_i += smp;
    }
    for (int l = 0; l < NLEAF; l++) {
        o->self_s[k][l] += acc_s[l];
        if (n_i > 0 && acc_s[l] != 0) /* the engine adds only for the functions touched */
            o->s2[k][l] += acc_s[l] * acc_s[l] / n_i;
        o->inst_v[k][p % 3][l] += acc_v[l];
    }
    struct fmeta m = {insts[p % 3], p * 60 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(c, f, k, &m, rows, (size_t)n), 0);
}

static void test_rows_in_any_order(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, (NPROF + NGROW) * 60 * S_NS);
    rt__query_ctx_window(&c, 1, 0, (NPROF + NGROW) * 60 * S_NS);
    static char names[NSTK][48];
    uint32_t ids[NSTK];
    for (int i = 0; i < NSTK; i++) {
        if (i == NBASE / 2) /* stacks in between: ids[i] = ids[i - NBASE / 2] + the cache's slots */
            for (uint32_t fill = ids[NBASE / 2 - 1] + 1; fill < ids[0] + RT__QUERY_STACK_CACHE_MIN;
                 fill++) {
                char filler[32];
                snprintf(filler, sizeof(filler), "main;filler%u", fill);
                CHECK_INT(fake_stack(f, filler), fill);
            }
        snprintf(names[i], sizeof(names[i]), i < NBASE ? "main;mid%d;leaf%d" : "main;grow%d;leaf%d",
                 i < NBASE ? i % 5 : i, i % NLEAF);
        ids[i] = fake_stack(f, names[i]); /* ascending with i */
    }
    CHECK_INT(ids[NBASE / 2], ids[0] + RT__QUERY_STACK_CACHE_MIN);
    static struct any_order o;
    memset(&o, 0, sizeof(o));
    for (int p = 0; p < NPROF; p++)
        any_order_profile(&c, f, &o, names, NBASE, p);
    CHECK_INT(c.scratch.nstack_cache, RT__QUERY_STACK_CACHE_MIN);
    for (int p = NPROF; p < NPROF + NGROW; p++)
        any_order_profile(&c, f, &o, names, NSTK, p);
    CHECK(c.scratch.nstack_cache > RT__QUERY_STACK_CACHE_MIN);
    CHECK_INT(rt__query_finish(&c), 0);
    CHECK_INT(c.nstacks, NSTK);
    for (uint32_t s = 0; s < c.nstacks; s++) {
        int i = 0;
        while (i < NSTK && ids[i] != c.stacks[s].id)
            i++;
        CHECK(i < NSTK);
        for (int k = 0; k < 2 && i < NSTK; k++) {
            CHECK(c.stacks[s].samples[k] == o.st_s[k][i]);
            CHECK(c.stacks[s].value[k] == o.st_v[k][i]);
        }
    }
    for (int l = 0; l < NLEAF; l++) {
        char leaf[16];
        snprintf(leaf, sizeof(leaf), "leaf%d", l);
        int fn = fake_fn(&c, leaf);
        CHECK(fn >= 0);
        if (fn < 0)
            continue;
        int seen = 0;
        for (int k = 0; k < 2; k++) {
            CHECK(c.fns[fn].self_s[k] == o.self_s[k][l]);
            CHECK(c.fns[fn].s2[k] == o.s2[k][l]);
        }
        for (int k = 0; k < 2; k++)
            for (uint32_t i = 0; i < 3; i++) {
                CHECK(rt__query_instfn_value(&c, k, i, (uint32_t)fn) == o.inst_v[k][i][l]);
                seen += rt__query_instfn_value(&c, k, i, (uint32_t)fn) != 0;
            }
        CHECK_INT(seen, 6); /* 3 instances x 2 windows, each with a value */
    }
    static const char *const insts[3] = {"i1", "i2", "i3"};
    for (int j = 0; j < 3; j++) /* instance indexes in order of first sight */
        CHECK_INT(rt_intern_find(&c.insts, rt_str_from(insts[j])), j);
    fake_done(&c, f);
}

/* A profile in which every function of the query is a leaf: 64 of them, a power of two, so
 * that the touched list's room equals what add_profile reserves for it (rt_array_grow rounds
 * up to powers of two from 64), and one slot less would be written past (make SAN=1 unit). */
static void test_every_function_a_leaf(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f, RT_PTYPE_CPU, 0, 600);
    struct frow rows[65];
    char names[64][24];
    snprintf(names[0], sizeof(names[0]), "root");
    for (int i = 1; i < 64; i++)
        snprintf(names[i], sizeof(names[i]), "root;w%d", i);
    for (int i = 0; i < 64; i++)
        rows[i] = (struct frow){names[i], 1 + i, (1 + i) * MS_NS};
    rows[64] = rows[7]; /* a stack twice */
    add(&c, f, "i1", 0, 60, rows, 65);
    CHECK_INT(rt__query_finish(&c), 0);
    CHECK_INT(c.nfns, 64);
    for (int i = 1; i < 64; i++) {
        char leaf[16];
        snprintf(leaf, sizeof(leaf), "w%d", i);
        int fn = fake_fn(&c, leaf);
        CHECK(fn >= 0);
        double x = (1 + i) * (i == 7 ? 2 : 1), n_i = 64 * 65 / 2 + 8;
        if (fn >= 0) {
            CHECK(c.fns[fn].self_s[0] == x);
            CHECK(c.fns[fn].s2[0] == x * x / n_i);
        }
    }
    fake_done(&c, f);
}

/* Capacity's per-function values sit in pages of RT__QUERY_INSTFN_PAGE functions per
 * (instance, window), the first RT__QUERY_INSTFN_LOW pages by index and the rest through a
 * map. Two windows; i1 has 2,250 stacks root;aN;bN (4,501 functions, so that its last leaves
 * fill 7 pages past the indexed ones) in both; i2 has only the last stack, so it has no indexed page at
 * all, and is profiled for 60 s of window 1 while polled all through it, so that its
 * factors differ. Each value
 * is the instance's own sum, and each function's capacity value in each window the
 * instances' values times that window's factors, instance by instance. */
static void test_capacity_pages(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 1200 * S_NS);
    enum { N = 2250 };
    static struct frow rows[N];
    static char names[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "root;a%d;b%d", i, i);
        rows[i] = (struct frow){names[i], 1, (1 + i) * MS_NS};
    }
    struct fmeta m[4] = {{"i1", 0, 600 * S_NS, false, 0, false, NULL, 0, false},
                         {"i2", 0, 600 * S_NS, false, 0, false, NULL, 0, false},
                         {"i1", 600 * S_NS, 600 * S_NS, false, 0, false, NULL, 0, false},
                         {"i2", 600 * S_NS, 60 * S_NS, false, 0, false, NULL, 0, false}};
    CHECK_INT(fake_add(&c, f, 0, &m[0], rows, N), 0);
    CHECK_INT(fake_add(&c, f, 0, &m[1], rows + N - 1, 1), 0);
    CHECK_INT(fake_add(&c, f, 1, &m[2], rows, N), 0);
    CHECK_INT(fake_add(&c, f, 1, &m[3], rows + N - 1, 1), 0);
    /* i2 polled all through window 1 but profiled 60 s of it: A_i / P_i = 10 there */
    CHECK_INT(rt__query_add_liveness(&c, 1, "i2", 600 * S_NS, 1200 * S_NS), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    CHECK_INT(c.nfns, 2 * N + 1);
    int last = fake_fn(&c, "b2249");
    CHECK(last >= RT__QUERY_INSTFN_PAGE * RT__QUERY_INSTFN_LOW);
    CHECK(c.ninstfn >= 4);
    for (int k = 0; k < 2 && c.ninstfn >= 4; k++) {
        CHECK_INT(c.instfn[k].nlow, RT__QUERY_INSTFN_LOW); /* i1 */
        CHECK_INT(c.instfn[k].nhigh, 7); /* past the first 4 places of their list */
        CHECK_INT(c.instfn[2 + k].nlow, 0); /* i2: its one page through the map */
        CHECK_INT(c.instfn[2 + k].nhigh, 1);
    }
    double f1[2] = {c.win[0].inst_cap[0].factor, c.win[1].inst_cap[0].factor};
    double f2[2] = {c.win[0].inst_cap[1].factor, c.win[1].inst_cap[1].factor};
    CHECK(f1[0] > 0 && f2[0] > 0 && f1[1] > 0 && f2[1] > 0);
    CHECK(f2[0] != f2[1]); /* a fold reading the other window's factors fails */
    for (int i = 0; i < N; i++) {
        char leaf[16];
        snprintf(leaf, sizeof(leaf), "b%d", i);
        int fn = fake_fn(&c, leaf);
        CHECK(fn >= 0);
        if (fn < 0)
            continue;
        for (int k = 0; k < 2; k++) {
            double v1 = (1.0 + i) * MS_NS, v2 = i == N - 1 ? (double)N * MS_NS : 0;
            CHECK(rt__query_instfn_value(&c, k, 0, (uint32_t)fn) == v1);
            CHECK(rt__query_instfn_value(&c, k, 1, (uint32_t)fn) == v2);
            CHECK(rt__query_instfn_value(&c, k, 2, (uint32_t)fn) == 0); /* no such instance */
            CHECK(c.fns[fn].cap_v[k] == (v2 != 0 ? f1[k] * v1 + f2[k] * v2 : f1[k] * v1));
        }
    }
    CHECK(rt__query_instfn_value(&c, 0, 1, 0) == 0); /* i2: an indexed page never made */
    fake_done(&c, f);
}

int main(void)
{
    RUN(test_weight);
    RUN(test_straddling_weights);
    RUN(test_self_total_recursion);
    RUN(test_limit);
    RUN(test_wall_profile);
    RUN(test_unknown_duration);
    RUN(test_empty);
    RUN(test_per_function_capacity);
    RUN(test_invalid_utf8_names);
    RUN(test_huge_values_not_negative);
    RUN(test_samples_null_without_counts);
    RUN(test_capacity_instances);
    RUN(test_rows_in_any_order);
    RUN(test_every_function_a_leaf);
    RUN(test_capacity_pages);
    return TEST_DONE();
}
