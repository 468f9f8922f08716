/* Tests of the capacity estimate (DESIGN §7) as a pure function, each against a hand
 * computation written beside it. Window W = [0, 600 s) unless said otherwise. */
#include <math.h>
#include <stdio.h>

#include "query/query_internal.h"
#include "test.h"

#define S 1000000000LL
#define REL 1e-9

static struct rt__query_prof prof(uint32_t inst, double start_s, double dur_s, double cpu_s)
{
    struct rt__query_prof p = {.inst = inst,
                               .start_ns = (int64_t)llround(start_s * S),
                               .duration_ns = dur_s < 0 ? -1 : (int64_t)llround(dur_s * S),
                               .value_ns = cpu_s * S,
                               .sampled_ns = cpu_s * S,
                               .os_ns = -1};
    return p;
}

static struct rt__query_cap run(const struct rt__query_prof *ps, size_t np,
                                const struct rt__query_live *live, size_t nl, uint32_t ninst,
                                struct rt__query_cap_inst *factor)
{
    struct rt__query_cap_in in = {0, 600 * S, ninst, ps, np, live, nl, NULL, 0};
    struct rt__query_cap out;
    CHECK_INT(rt__query_capacity(&in, factor, &out), 0);
    return out;
}

/* Gapless: ten back-to-back 60 s profiles of 6 CPU-s each. A = P = 600 s, so the estimate is
 * 730 * 60 / 600 = 73 vCPU-hours per month (0.1 core for 730 h). */
static void test_gapless(void)
{
    struct rt__query_prof ps[10];
    for (int i = 0; i < 10; i++)
        ps[i] = prof(0, 60.0 * i, 60, 6);
    struct rt__query_cap_inst f[1];
    struct rt__query_cap c = run(ps, 10, NULL, 0, 1, f);
    CHECK(c.available);
    CHECK_NEAR(c.vcpu_hours_per_month, 73.0, REL);
    CHECK_NEAR(c.cpu_s, 60.0, REL);
    CHECK_NEAR(c.window_s, 600.0, REL);
    CHECK_NEAR(c.profiled_s, 600.0, REL);
    CHECK_NEAR(c.alive_s, 600.0, REL);
    CHECK_NEAR(c.coverage, 1.0, REL);
    CHECK_NEAR(f[0].factor, 1.0, REL);
    CHECK_INT(c.instances_alive, 1);
    CHECK_INT(c.instances_profiled, 1);
    CHECK_INT(c.instances_unprofiled, 0);
}

/* Duty cycle: a 10 s profile every 60 s ([0,10), [60,70), ... [540,550)), 1 CPU-s each
 * (0.1 core while profiled), polls every 10 s from 0 to 590. P = 100 s; A = 590 - 0 = 590 s.
 * Estimate = 730 / 600 * 10 * 590 / 100 = 71.78333... */
static void test_duty_cycle(void)
{
    struct rt__query_prof ps[10];
    for (int i = 0; i < 10; i++)
        ps[i] = prof(0, 60.0 * i, 10, 1);
    struct rt__query_live live = {0, 0, 590 * S};
    struct rt__query_cap_inst f[1];
    struct rt__query_cap c = run(ps, 10, &live, 1, 1, f);
    CHECK(c.available);
    CHECK_NEAR(c.vcpu_hours_per_month, 730.0 / 600.0 * 10.0 * 590.0 / 100.0, REL);
    CHECK_NEAR(c.profiled_s, 100.0, REL);
    CHECK_NEAR(c.alive_s, 590.0, REL);
    CHECK_NEAR(c.coverage, 100.0 / 590.0, REL);
    CHECK_NEAR(f[0].factor, 5.9, REL);
    /* Without the polls the instance's evidence ends with its last profile at 550 s. */
    c = run(ps, 10, NULL, 0, 1, f);
    CHECK_NEAR(c.alive_s, 550.0, REL);
    CHECK_NEAR(c.vcpu_hours_per_month, 730.0 / 600.0 * 10.0 * 550.0 / 100.0, REL);
}

/* Toggle in the middle: profiling on for [0, 300) (five 60 s profiles, 6 CPU-s each), off
 * after; polls continue to 590 s. P = 300, A = 590: 730/600 * 30 * 590/300 = 71.78333... */
static void test_toggle(void)
{
    struct rt__query_prof ps[5];
    for (int i = 0; i < 5; i++)
        ps[i] = prof(0, 60.0 * i, 60, 6);
    struct rt__query_live live = {0, 5 * S, 590 * S};
    struct rt__query_cap c = run(ps, 5, &live, 1, 1, NULL);
    CHECK_NEAR(c.vcpu_hours_per_month, 730.0 / 600.0 * 30.0 * 590.0 / 300.0, REL);
    CHECK_NEAR(c.profiled_s, 300.0, REL);
    CHECK_NEAR(c.alive_s, 590.0, REL);
}

/* Instance 1 gapless for the whole window (60 CPU-s); instance 2 starts at 300 s, gapless
 * (five 60 s profiles of 6 CPU-s), polls from 300 s. Both A_i = P_i:
 * 730/600 * (60 + 30) = 109.5; alive 900 s, profiled 900 s. */
static void test_instance_mid_window(void)
{
    struct rt__query_prof ps[15];
    for (int i = 0; i < 10; i++)
        ps[i] = prof(0, 60.0 * i, 60, 6);
    for (int i = 0; i < 5; i++)
        ps[10 + i] = prof(1, 300 + 60.0 * i, 60, 6);
    struct rt__query_live live[2] = {{0, 0, 590 * S}, {1, 300 * S, 590 * S}};
    struct rt__query_cap_inst f[2];
    struct rt__query_cap c = run(ps, 15, live, 2, 2, f);
    CHECK_NEAR(c.vcpu_hours_per_month, 109.5, REL);
    CHECK_NEAR(c.alive_s, 900.0, REL);
    CHECK_NEAR(c.profiled_s, 900.0, REL);
    CHECK_INT(c.instances_alive, 2);
    CHECK_INT(c.instances_profiled, 2);
    CHECK_NEAR(f[1].factor, 1.0, REL);
}

/* Profiles straddling both edges: [-30, 30) and [570, 630) of 6 CPU-s each weigh 1/2 (their
 * CPU enters as 3 s), nine whole ones between. cpu = 3 + 9*6 + 3 = 60; P = A = 600 (clipped):
 * 73 vCPU-hours. */
static void test_straddling(void)
{
    struct rt__query_prof ps[11];
    double w = rt_profile_window_weight(-30 * S, 60 * S, 0, 600 * S);
    CHECK_NEAR(w, 0.5, REL);
    ps[0] = prof(0, -30, 60, 6 * w);
    for (int i = 0; i < 9; i++)
        ps[1 + i] = prof(0, 30 + 60.0 * i, 60, 6);
    ps[10] = prof(0, 570, 60, 6 * rt_profile_window_weight(570 * S, 60 * S, 0, 600 * S));
    struct rt__query_cap c = run(ps, 11, NULL, 0, 1, NULL);
    CHECK_NEAR(c.cpu_s, 60.0, REL);
    CHECK_NEAR(c.profiled_s, 600.0, REL);
    CHECK_NEAR(c.alive_s, 600.0, REL);
    CHECK_NEAR(c.vcpu_hours_per_month, 73.0, REL);
}

/* One instance's profiles overlapping in time (e.g. the PHP workers of one pool, DESIGN §5):
 * the covered time counts once, the CPU of both adds up. W = [0, 600), two profiles [0, 600)
 * with 60 and 30 CPU-s: P = A = 600, estimate 730 * 90 / 600 = 109.5. */
static void test_overlap_counts_once(void)
{
    struct rt__query_prof ps[2] = {prof(0, 0, 600, 60), prof(0, 0, 600, 30)};
    struct rt__query_cap c = run(ps, 2, NULL, 0, 1, NULL);
    CHECK_NEAR(c.profiled_s, 600.0, REL);
    CHECK_NEAR(c.vcpu_hours_per_month, 109.5, REL);
    /* Partly overlapping: [0, 100) and [50, 200): union 200 s; polls to 400 s: A = 400. */
    struct rt__query_prof qs[2] = {prof(0, 0, 100, 1), prof(0, 50, 150, 2)};
    struct rt__query_live live = {0, 10 * S, 400 * S};
    c = run(qs, 2, &live, 1, 1, NULL);
    CHECK_NEAR(c.profiled_s, 200.0, REL);
    CHECK_NEAR(c.alive_s, 400.0, REL);
    CHECK_NEAR(c.vcpu_hours_per_month, 730.0 / 600.0 * 3.0 * 400.0 / 200.0, REL);
}

/* An unknown (-1) or zero duration makes the estimate unavailable with the reason; the
 * inputs are still filled (the known profile covers 60 s). */
static void test_unknown_duration(void)
{
    struct rt__query_prof ps[2] = {prof(0, 0, 60, 6), prof(0, 100, -1, 6)};
    struct rt__query_cap c = run(ps, 2, NULL, 0, 1, NULL);
    CHECK(!c.available);
    CHECK_STR(c.reason, "profile duration unknown");
    CHECK(isnan(c.vcpu_hours_per_month));
    CHECK_NEAR(c.profiled_s, 60.0, REL);
    CHECK_NEAR(c.alive_s, 100.0, REL); /* evidence from 0 to the second profile's start */
    ps[1] = prof(0, 100, 0, 6);
    c = run(ps, 2, NULL, 0, 1, NULL);
    CHECK(!c.available);
    CHECK_STR(c.reason, "profile duration unknown");
}

/* No profiles: unavailable; an instance with polls only is alive and unprofiled. */
static void test_no_profiles(void)
{
    struct rt__query_live live = {0, 10 * S, 500 * S};
    struct rt__query_cap c = run(NULL, 0, &live, 1, 1, NULL);
    CHECK(!c.available);
    CHECK_STR(c.reason, "no profiles in window");
    CHECK_INT(c.instances_alive, 1);
    CHECK_INT(c.instances_unprofiled, 1);
    CHECK_NEAR(c.alive_s, 490.0, REL);
    CHECK_NEAR(c.coverage, 0.0, REL);
    c = run(NULL, 0, NULL, 0, 0, NULL);
    CHECK(isnan(c.coverage));
    CHECK_INT(c.instances_alive, 0);
}

/* A profiled and an unprofiled instance: the unprofiled one's CPU is absent, its alive time
 * lowers the coverage: P = 600, A = 600 + 300, coverage 2/3, estimate 73. */
static void test_unprofiled(void)
{
    struct rt__query_prof ps[1] = {prof(0, 0, 600, 60)};
    struct rt__query_live live[2] = {{0, 0, 590 * S}, {1, 100 * S, 400 * S}};
    struct rt__query_cap_inst f[2];
    struct rt__query_cap c = run(ps, 1, live, 2, 2, f);
    CHECK_NEAR(c.vcpu_hours_per_month, 73.0, REL);
    CHECK_INT(c.instances_alive, 2);
    CHECK_INT(c.instances_profiled, 1);
    CHECK_INT(c.instances_unprofiled, 1);
    CHECK_NEAR(c.coverage, 600.0 / 900.0, REL);
    CHECK_NEAR(f[1].factor, 0.0, REL);
}

/* Polls outside the window are clipped; an empty window is unavailable. */
static void test_edges(void)
{
    struct rt__query_prof ps[1] = {prof(0, 100, 100, 10)};
    struct rt__query_live live = {0, -50 * S, 900 * S};
    struct rt__query_cap c = run(ps, 1, &live, 1, 1, NULL);
    CHECK_NEAR(c.alive_s, 600.0, REL);
    CHECK_NEAR(c.vcpu_hours_per_month, 730.0 / 600.0 * 10.0 * 6.0, REL);
    struct rt__query_cap_in in = {5, 5, 1, ps, 1, NULL, 0, NULL, 0};
    CHECK_INT(rt__query_capacity(&in, NULL, &c), 0);
    CHECK(!c.available);
    CHECK_STR(c.reason, "window is empty");
    CHECK_NEAR(rt__query_vcpu_hours(3600e9, 3600), 730.0, REL);
}

static void test_inputs_json(void)
{
    struct rt__query_prof ps[10];
    for (int i = 0; i < 10; i++)
        ps[i] = prof(0, 60.0 * i, 60, 6);
    struct rt__query_cap c = run(ps, 10, NULL, 0, 1, NULL);
    json_t *o = rt__query_cap_inputs_json(&c, NULL, 0, NULL);
    CHECK_NEAR(json_real_value(json_object_get(o, "cpu_s")), 60.0, REL);
    CHECK_NEAR(json_real_value(json_object_get(o, "window_s")), 600.0, REL);
    CHECK_INT(json_integer_value(json_object_get(o, "hours_per_month")), 730);
    CHECK_INT(json_integer_value(json_object_get(o, "instances_profiled")), 1);
    CHECK_STR(json_string_value(json_object_get(o, "note")),
              "capacity estimate assuming the window's average rate holds for a month; not a bill");
    CHECK(json_is_null(json_object_get(o, "unprofiled_note")));
    CHECK_INT(json_array_size(json_object_get(o, "instances")), 0);
    CHECK(json_is_false(json_object_get(o, "instances_truncated")));
    json_decref(o);
}

static double jnum(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* DESIGN §7 "anyone can redo the sum": with different A_i/P_i the service-level sums do not
 * give the figure (730/600 * 70 * 1490/700 = 181.3), so the inputs list each instance's part.
 * "a": duty cycle, ten 10 s profiles of 1 CPU-s, polls 0..590: P = 100, A = 590,
 *      730/600 * 10 * 5.9 = 71.78333...
 * "b": gapless, ten 60 s profiles of 6 CPU-s: P = A = 600, 730/600 * 60 = 73.
 * "c": polls only, 100..400 s: A = 300, no CPU, contributes 0.
 * Total 144.78333...; listed b, a, c (contribution descending). */
static void test_inputs_instances(void)
{
    struct rt__query_prof ps[20];
    for (int i = 0; i < 10; i++) {
        ps[i] = prof(0, 60.0 * i, 10, 1);
        ps[10 + i] = prof(1, 60.0 * i, 60, 6);
    }
    struct rt__query_live live[2] = {{0, 0, 590 * S}, {2, 100 * S, 400 * S}};
    struct rt_intern names;
    rt_intern_init(&names);
    uint32_t id;
    rt_intern_get(&names, RT_STR_LIT("a"), &id);
    rt_intern_get(&names, RT_STR_LIT("b"), &id);
    rt_intern_get(&names, RT_STR_LIT("c"), &id);
    struct rt__query_cap_inst ci[3];
    struct rt__query_cap c = run(ps, 20, live, 2, 3, ci);
    double va = 730.0 / 600.0 * 10.0 * 5.9, vb = 73.0;
    CHECK_NEAR(c.vcpu_hours_per_month, va + vb, REL);
    json_t *o = rt__query_cap_inputs_json(&c, ci, 3, &names);
    json_t *arr = json_object_get(o, "instances");
    CHECK_INT(json_array_size(arr), 3);
    CHECK(json_is_false(json_object_get(o, "instances_truncated")));
    if (json_array_size(arr) == 3) {
        json_t *b = json_array_get(arr, 0), *a = json_array_get(arr, 1);
        json_t *cc = json_array_get(arr, 2);
        CHECK_STR(json_string_value(json_object_get(b, "instance")), "b");
        CHECK_STR(json_string_value(json_object_get(a, "instance")), "a");
        CHECK_STR(json_string_value(json_object_get(cc, "instance")), "c");
        CHECK_NEAR(jnum(a, "cpu_s"), 10.0, REL);
        CHECK_NEAR(jnum(a, "profiled_s"), 100.0, REL);
        CHECK_NEAR(jnum(a, "alive_s"), 590.0, REL);
        CHECK_NEAR(jnum(a, "vcpu_hours_per_month"), va, REL);
        CHECK_NEAR(jnum(b, "vcpu_hours_per_month"), vb, REL);
        CHECK_NEAR(jnum(cc, "cpu_s"), 0.0, REL);
        CHECK_NEAR(jnum(cc, "alive_s"), 300.0, REL);
        CHECK_NEAR(jnum(cc, "vcpu_hours_per_month"), 0.0, REL);
        /* The parts sum to the totals. */
        double cpu = 0, prof_s = 0, alive = 0, vcpu = 0;
        for (size_t i = 0; i < 3; i++) {
            json_t *e = json_array_get(arr, i);
            cpu += jnum(e, "cpu_s");
            prof_s += jnum(e, "profiled_s");
            alive += jnum(e, "alive_s");
            vcpu += jnum(e, "vcpu_hours_per_month");
        }
        CHECK_NEAR(cpu, jnum(o, "cpu_s"), REL);
        CHECK_NEAR(prof_s, jnum(o, "profiled_s"), REL);
        CHECK_NEAR(alive, jnum(o, "alive_s"), REL);
        CHECK_NEAR(vcpu, c.vcpu_hours_per_month, REL);
    }
    json_decref(o);
    /* Unavailable estimate (a profile without duration): the parts are listed, their
     * vcpu_hours_per_month null. */
    ps[0] = prof(0, 0, -1, 1);
    c = run(ps, 20, live, 2, 3, ci);
    CHECK(!c.available);
    o = rt__query_cap_inputs_json(&c, ci, 3, &names);
    arr = json_object_get(o, "instances");
    CHECK_INT(json_array_size(arr), 3);
    CHECK(json_is_null(json_object_get(json_array_get(arr, 0), "vcpu_hours_per_month")));
    json_decref(o);
    rt_intern_cleanup(&names);
}

/* More than RT__QUERY_MAX_CAP_INSTANCES instances: the largest 100 are listed, in order. */
static void test_inputs_instances_truncated(void)
{
    enum { N = 150 };
    struct rt__query_prof ps[N];
    struct rt__query_cap_inst ci[N];
    struct rt_intern names;
    rt_intern_init(&names);
    for (int i = 0; i < N; i++) {
        char nm[16];
        uint32_t id;
        snprintf(nm, sizeof(nm), "i%03d", i);
        rt_intern_get(&names, rt_str_from(nm), &id);
        ps[i] = prof((uint32_t)i, 0, 600, 1 + i); /* i149 has the most CPU */
    }
    struct rt__query_cap c = run(ps, N, NULL, 0, N, ci);
    json_t *o = rt__query_cap_inputs_json(&c, ci, N, &names);
    json_t *arr = json_object_get(o, "instances");
    CHECK_INT(json_array_size(arr), RT__QUERY_MAX_CAP_INSTANCES);
    CHECK(json_is_true(json_object_get(o, "instances_truncated")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(arr, 0), "instance")), "i149");
    CHECK_STR(json_string_value(json_object_get(json_array_get(arr, 99), "instance")), "i050");
    json_decref(o);
    rt_intern_cleanup(&names);
}

int main(void)
{
    RUN(test_gapless);
    RUN(test_duty_cycle);
    RUN(test_toggle);
    RUN(test_instance_mid_window);
    RUN(test_straddling);
    RUN(test_overlap_counts_once);
    RUN(test_unknown_duration);
    RUN(test_no_profiles);
    RUN(test_unprofiled);
    RUN(test_edges);
    RUN(test_inputs_json);
    RUN(test_inputs_instances);
    RUN(test_inputs_instances_truncated);
    return TEST_DONE();
}
