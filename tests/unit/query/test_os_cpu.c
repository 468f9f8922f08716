/* Tests of capacity against the OS's CPU accounting (DESIGN §7, §2) through the query engine:
 * a wall-ticking sampler's CPU scaled to the OS figure each profile carries (per profile,
 * per function, per instance), a CPU-timer sampler's only compared, a profile without its OS
 * figure used unchecked, and the agreement that says which figure capacity used. Each value
 * is computed by hand beside its test. Window [0, 600 s). */
#include <string.h>

#include "fake.h"
#include "test.h"

#define REL 1e-12

static void init1(struct rt__query_ctx *c, struct fake *f)
{
    rt__query_ctx_init(c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(c, 0, 0, 600 * S_NS);
}

/* A profile of instance inst over [start_s, start_s + dur_s) from producer prod with OS
 * figures thread_s and process_s (< 0: absent). */
static void add(struct rt__query_ctx *c, struct fake *f, const char *prod, const char *inst,
                int64_t start_s, int64_t dur_s, double thread_s, double process_s,
                const struct frow *rows, size_t n)
{
    struct fmeta m = {inst,
                      start_s * S_NS,
                      dur_s * S_NS,
                      false,
                      thread_s >= 0 ? (int64_t)(thread_s * S_NS) : 0,
                      thread_s >= 0,
                      prod,
                      process_s >= 0 ? (int64_t)(process_s * S_NS) : 0,
                      process_s >= 0};
    CHECK_INT(fake_add(c, f, 0, &m, rows, n), 0);
}

/* Node, V8 ticking on wall time: two profiles each sampled 3 s (a 2 s, b 1 s). The kernel
 * accounted the main thread 1.5 s in the first (its factor 0.5: the thread waited for a core
 * half the time) and 3 s in the second (factor 1). Capacity's CPU is 1.5 + 3 = 4.5 s, so
 * 730 * 4.5 / 600 = 5.475 vCPU-h/month; a gets 2 * 0.5 + 2 * 1 = 3 s (3.65), b 1.5 s
 * (1.825). The ranking and shares stay on the samples: a is 4 of 6 sampled seconds. */
static void test_wall_ticking_sampler_is_scaled(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f);
    struct frow rows[] = {{"main;a", 200, 2 * S_NS}, {"main;b", 100, S_NS}};
    add(&c, f, "roottrace-node", "n1", 0, 300, 1.5, 2.0, rows, 2);
    add(&c, f, "roottrace-node", "n1", 300, 300, 3.0, 4.0, rows, 2);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *cap = json_object_get(out, "capacity"), *in = json_object_get(cap, "inputs");
    CHECK_NEAR(jreal(cap, "vcpu_hours_per_month"), 730 * 4.5 / 600, REL);
    CHECK_NEAR(jreal(in, "cpu_s"), 4.5, REL);
    CHECK_NEAR(jreal(in, "sampled_cpu_s"), 6.0, REL);
    CHECK_NEAR(jreal(in, "os_cpu_s"), 4.5, REL); /* the thread's figures, not the process's */
    CHECK_NEAR(jreal(in, "cpu_factor"), 0.75, REL);
    CHECK_STR(jstr(in, "cpu_basis"), "os");
    CHECK_INT(jint(in, "profiles_scaled"), 2);
    CHECK_INT(jint(in, "profiles_unchecked"), 0);
    CHECK(strstr(jstr(in, "cpu_note"), "2 of 2 profiles come from a sampler that ticks on "
                                       "wall-clock time") != NULL);
    json_t *n1 = json_array_get(json_object_get(in, "instances"), 0);
    CHECK_NEAR(jreal(n1, "cpu_s"), 4.5, REL);
    CHECK_NEAR(jreal(n1, "sampled_cpu_s"), 6.0, REL);
    CHECK_NEAR(jreal(n1, "os_cpu_s"), 4.5, REL);
    CHECK_NEAR(jreal(n1, "cpu_factor"), 0.75, REL);
    CHECK_NEAR(jreal(n1, "vcpu_hours_per_month"), 730 * 4.5 / 600, REL);
    json_t *a = jfn(out, "a"), *b = jfn(out, "b");
    CHECK_NEAR(jreal(a, "vcpu_hours_per_month"), 730 * 3.0 / 600, REL);
    CHECK_NEAR(jreal(b, "vcpu_hours_per_month"), 730 * 1.5 / 600, REL);
    CHECK_INT(jint(a, "self_ns"), 4 * S_NS);
    CHECK_NEAR(jreal(a, "self_share"), 100 * 4.0 / 6, REL);
    CHECK_STR(jstr(json_array_get(json_object_get(out, "functions"), 0), "name"), "a");
    json_t *ag = json_object_get(out, "cpu_agreement");
    CHECK_NEAR(jreal(ag, "sampled_cpu_s"), 6.0, REL);
    CHECK_NEAR(jreal(ag, "os_cpu_s"), 4.5, REL);
    CHECK_NEAR(jreal(ag, "os_thread_cpu_s"), 4.5, REL);
    CHECK_NEAR(jreal(ag, "ratio"), 6.0 / 4.5, REL);
    CHECK_STR(jstr(ag, "scope"), "main JS thread");
    CHECK_STR(jstr(ag, "capacity_uses"), "os");
    CHECK(strstr(jstr(ag, "warning"), "the capacity figures use the OS's figure") != NULL);
    json_decref(out);
    fake_done(&c, f);
}

/* The factor is each profile's, applied before weighting: window [150, 450). n1's profiles
 * weigh 1/2 each (factors 0.5 and 1: 0.75 + 1.5 s); n2's [150, 450) weighs 1 with factor 2
 * (3 s sampled, 6 s by the kernel: V8 missed ticks) and adds 6 s. cpu 8.25 s over 300 s;
 * a: 2 * 0.5 * 0.5 + 2 * 0.5 * 1 + 2 * 2 = 5.5 s. */
static void test_factor_per_profile(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 150 * S_NS, 450 * S_NS);
    struct frow rows[] = {{"main;a", 200, 2 * S_NS}, {"main;b", 100, S_NS}};
    add(&c, f, "roottrace-node", "n1", 0, 300, 1.5, -1, rows, 2);
    add(&c, f, "roottrace-node", "n1", 300, 300, 3.0, -1, rows, 2);
    add(&c, f, "roottrace-node", "n2", 150, 300, 6.0, -1, rows, 2);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *in = json_object_get(json_object_get(out, "capacity"), "inputs");
    CHECK_NEAR(jreal(in, "cpu_s"), 2.25 + 6, REL);
    CHECK_NEAR(jreal(in, "sampled_cpu_s"), 3.0 + 3, REL);
    CHECK_NEAR(jreal(json_object_get(out, "capacity"), "vcpu_hours_per_month"),
               730 * 8.25 / 300, REL);
    /* a: n1 2 * 0.5 * 0.5 + 2 * 0.5 * 1, n2 2 * 2 = 1.5 + 4 s */
    CHECK_NEAR(jreal(jfn(out, "a"), "vcpu_hours_per_month"), 730 * 5.5 / 300, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* Go, SIGPROF on CPU time: sampled 3 s, the process 2 s. Capacity keeps the samples' 3 s
 * (3.65 vCPU-h/month) and the agreement shows both and warns, saying which figure is used. */
static void test_cpu_timer_sampler_is_compared(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f);
    struct frow rows[] = {{"main;a", 300, 3 * S_NS}};
    add(&c, f, "roottrace-go", "g1", 0, 600, 2.5, 2.0, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *cap = json_object_get(out, "capacity"), *in = json_object_get(cap, "inputs");
    CHECK_NEAR(jreal(cap, "vcpu_hours_per_month"), 730 * 3.0 / 600, REL);
    CHECK_NEAR(jreal(in, "cpu_s"), 3.0, REL);
    CHECK_NEAR(jreal(in, "os_cpu_s"), 2.0, REL); /* the process's figure */
    CHECK_NEAR(jreal(in, "cpu_factor"), 1.0, REL);
    CHECK_NEAR(jreal(in, "unattributed_cpu_s"), 0, 0); /* the OS figure is below the samples */
    CHECK_STR(jstr(in, "cpu_basis"), "samples");
    CHECK(strstr(jstr(in, "cpu_note"), "a sampler on a CPU-time timer") != NULL);
    json_t *ag = json_object_get(out, "cpu_agreement");
    CHECK_STR(jstr(ag, "scope"), "process");
    CHECK_STR(jstr(ag, "capacity_uses"), "sampled");
    CHECK(json_is_null(json_object_get(ag, "os_thread_cpu_s")));
    CHECK_NEAR(jreal(ag, "ratio"), 1.5, REL);
    CHECK(strstr(jstr(ag, "warning"), "the capacity figures use the sampled CPU") != NULL);
    json_decref(out);
    fake_done(&c, f);
}

/* Go again, with a process figure above the samples: 2 s sampled, the kernel 2.5 s (the
 * runtime's sysmon thread runs no goroutine, so no profiling timer sees it). The samples'
 * functions keep their 2 s; the 0.5 s counts in the service's capacity as unattributed CPU,
 * in no function: cpu_s 2.5 s (3.041666 vCPU-h/month), a 2 s (2.4333). */
static void test_cpu_timer_sampler_misses_cpu(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f);
    struct frow rows[] = {{"main;a", 200, 2 * S_NS}};
    add(&c, f, "roottrace-go", "g1", 0, 600, -1, 2.5, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *cap = json_object_get(out, "capacity"), *in = json_object_get(cap, "inputs");
    CHECK_NEAR(jreal(cap, "vcpu_hours_per_month"), 730 * 2.5 / 600, REL);
    CHECK_NEAR(jreal(in, "cpu_s"), 2.5, REL);
    CHECK_NEAR(jreal(in, "sampled_cpu_s"), 2.0, REL);
    CHECK_NEAR(jreal(in, "unattributed_cpu_s"), 0.5, REL);
    CHECK_NEAR(jreal(in, "cpu_factor"), 1.25, REL);
    CHECK_STR(jstr(in, "cpu_basis"), "samples");
    CHECK(strstr(jstr(in, "cpu_note"), "counts as unattributed_cpu_s, in no function") != NULL);
    json_t *g1 = json_array_get(json_object_get(in, "instances"), 0);
    CHECK_NEAR(jreal(g1, "cpu_s"), 2.5, REL);
    CHECK_NEAR(jreal(g1, "unattributed_cpu_s"), 0.5, REL);
    CHECK_NEAR(jreal(jfn(out, "a"), "vcpu_hours_per_month"), 730 * 2.0 / 600, REL);
    json_decref(out);
    fake_done(&c, f);
}

/* A Node profile without its OS figure (no /proc, an older SDK) keeps its sampled CPU and
 * says it could not be checked; beside a scaled one the basis is "mixed". An unknown
 * producer with no figure says nothing at all. */
static void test_unchecked_and_mixed(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f);
    struct frow rows[] = {{"main;a", 300, 3 * S_NS}};
    add(&c, f, "roottrace-node", "n1", 0, 300, 1.0, -1, rows, 1);
    add(&c, f, "roottrace-node", "n1", 300, 300, -1, -1, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *in = json_object_get(json_object_get(out, "capacity"), "inputs");
    CHECK_NEAR(jreal(in, "cpu_s"), 1.0 + 3.0, REL);
    CHECK_NEAR(jreal(in, "os_cpu_s"), 1.0, REL);
    CHECK_STR(jstr(in, "cpu_basis"), "mixed");
    CHECK_INT(jint(in, "profiles_scaled"), 1);
    CHECK_INT(jint(in, "profiles_unchecked"), 1);
    CHECK(strstr(jstr(in, "cpu_note"), "1 profiles from a sampler that ticks on wall-clock "
                                       "time carry no OS CPU figure") != NULL);
    json_t *ag = json_object_get(out, "cpu_agreement");
    CHECK_INT(jint(ag, "profiles"), 1);
    CHECK_NEAR(jreal(ag, "ratio"), 3.0, REL);
    json_decref(out);
    fake_done(&c, f);

    f = fake_new();
    init1(&c, f);
    add(&c, f, NULL, "u1", 0, 600, -1, -1, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    out = rt__query_profile_json(&c, "shop", 1000);
    in = json_object_get(json_object_get(out, "capacity"), "inputs");
    CHECK_STR(jstr(in, "cpu_basis"), "samples");
    CHECK(json_is_null(json_object_get(in, "os_cpu_s")));
    CHECK(json_is_null(json_object_get(in, "cpu_note")));
    CHECK(json_is_null(json_object_get(out, "cpu_agreement")));
    json_decref(out);
    fake_done(&c, f);
}

/* The diff scales each window by its own profiles: baseline factor 0.5, current factor 1. */
static void test_diff_windows_scaled_apart(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 1200 * S_NS);
    struct frow rows[] = {{"main;a", 600, 6 * S_NS}};
    struct fmeta b = {"n1", 0, 600 * S_NS, false, 3 * S_NS, true, "roottrace-node", 0, false};
    struct fmeta cur = {"n1", 600 * S_NS, 600 * S_NS, false, 6 * S_NS, true, "roottrace-node",
                        0, false};
    CHECK_INT(fake_add(&c, f, 0, &b, rows, 1), 0);
    CHECK_INT(fake_add(&c, f, 1, &cur, rows, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_diff_json(&c, "shop", 1000, NULL, NULL);
    json_t *v = json_object_get(json_object_get(out, "capacity"), "vcpu_hours_per_month");
    CHECK_NEAR(jreal(v, "base"), 730 * 3.0 / 600, REL);
    CHECK_NEAR(jreal(v, "cur"), 730 * 6.0 / 600, REL);
    json_t *fa = json_object_get(json_array_get(json_object_get(out, "functions"), 0),
                                 "vcpu_hours_per_month");
    CHECK_NEAR(jreal(fa, "base"), 730 * 3.0 / 600, REL);
    CHECK_NEAR(jreal(fa, "cur"), 730 * 6.0 / 600, REL);
    json_t *ag = json_object_get(out, "cpu_agreement");
    CHECK(json_is_string(json_object_get(json_object_get(ag, "baseline"), "warning")));
    CHECK(json_is_null(json_object_get(json_object_get(ag, "current"), "warning")));
    json_decref(out);
    fake_done(&c, f);
}

/* A scaled profile is charged its OS figure as is: 4.453244222 s sampled and 1.566537776 s
 * by the kernel, where 4453244222 * (1566537776 / 4453244222.0) is not 1566537776 in
 * doubles. cpu_s equals os_cpu_s exactly, for the window and its instance (a CI run once saw
 * them differ in the 15th digit). */
static void test_scaled_cpu_is_the_os_figure_exactly(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    init1(&c, f);
    struct frow rows[] = {{"main;a", 445, 4453244222}};
    add(&c, f, "roottrace-node", "n1", 0, 300, 1.566537776, -1, rows, 1);
    add(&c, f, "roottrace-node", "n1", 300, 300, 1.566537776, -1, rows, 1);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *out = rt__query_profile_json(&c, "shop", 1000);
    json_t *in = json_object_get(json_object_get(out, "capacity"), "inputs");
    CHECK_STR(jstr(in, "cpu_basis"), "os");
    CHECK(jreal(in, "cpu_s") == jreal(in, "os_cpu_s"));
    json_t *n1 = json_array_get(json_object_get(in, "instances"), 0);
    CHECK(jreal(n1, "cpu_s") == jreal(n1, "os_cpu_s"));
    json_decref(out);
    fake_done(&c, f);
}

int main(void)
{
    RUN(test_wall_ticking_sampler_is_scaled);
    RUN(test_factor_per_profile);
    RUN(test_cpu_timer_sampler_is_compared);
    RUN(test_cpu_timer_sampler_misses_cpu);
    RUN(test_unchecked_and_mixed);
    RUN(test_diff_windows_scaled_apart);
    RUN(test_scaled_cpu_is_the_os_figure_exactly);
    return TEST_DONE();
}
