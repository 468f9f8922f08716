/* Tests of rt_query_profile and rt_query_diff against a real SQLite store: capacity cases of
 * DESIGN §7 computed by hand, dedup by profile_id, wall answers, filters, deploys. Window
 * W = [T0, T0 + 600 s); every sample is 10 ms. */
#include <math.h>

#include "rt/producer.h"
#include "rt/query.h"
#include "store_util.h"
#include "test.h"

#define REL 1e-9

static const char *const WORK[] = {"main;work", "main;idle_loop"};

/* n back-to-back profiles of instance inst from start, each dur_s long, cpu_s CPU seconds
 * (all in main;work). */
static void profiles(struct rt_store *s, const char *inst, int64_t start_ns, int n,
                     int64_t dur_s, int64_t step_s, double cpu_s)
{
    for (int i = 0; i < n; i++) {
        char pid[64];
        snprintf(pid, sizeof(pid), "%s-%lld", inst, (long long)(start_ns / S + i * step_s));
        double samples[] = {cpu_s * 100};
        CHECK_INT(tput(s, tprof(RT_PTYPE_CPU, inst, pid, start_ns + i * step_s * S, dur_s * S,
                                WORK, samples, 1)),
                  0);
    }
}

static json_t *query(struct rt_store *s, enum rt_ptype t, int64_t from, int64_t to)
{
    struct rt_query_profile_req req = {"shop", t, from, to, NULL, NULL, 0, NULL};
    struct rt_error err = {0};
    json_t *out = rt_query_profile(s, &req, &err);
    if (!out)
        fprintf(stderr, "rt_query_profile: %s\n", err.msg);
    return out;
}

static double vcpu(json_t *out)
{
    return json_real_value(json_object_get(json_object_get(out, "capacity"),
                                           "vcpu_hours_per_month"));
}

static double input(json_t *out, const char *key)
{
    json_t *v = json_object_get(json_object_get(json_object_get(out, "capacity"), "inputs"), key);
    return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* Gapless: 10 x 60 s, 6 CPU-s each: 730 * 60 / 600 = 73. A duplicate upload of one
 * profile_id is stored once and changes nothing. */
static void test_gapless_and_duplicate(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 10, 60, 60, 6);
    double samples[] = {600};
    CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i1", "i1-1764460800", T0, 60 * S, WORK, samples, 1)),
              1);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_INT(json_integer_value(json_object_get(out, "profiles")), 10);
    CHECK_NEAR(vcpu(out), 73.0, REL);
    CHECK_NEAR(input(out, "cpu_s"), 60.0, REL);
    CHECK_NEAR(input(out, "profiled_s"), 600.0, REL);
    CHECK_NEAR(input(out, "alive_s"), 600.0, REL);
    CHECK_NEAR(input(out, "coverage"), 1.0, REL);
    CHECK_NEAR(input(out, "hours_per_month"), 730.0, REL);
    CHECK(json_is_null(json_object_get(out, "capacity_unavailable")));
    CHECK_STR(json_string_value(json_object_get(out, "from")), "2025-11-30T00:00:00Z");
    CHECK_STR(json_string_value(json_object_get(out, "to")), "2025-11-30T00:10:00Z");
    json_t *fn = json_array_get(json_object_get(out, "functions"), 0);
    CHECK_STR(json_string_value(json_object_get(fn, "name")), "work");
    CHECK_NEAR(json_real_value(json_object_get(fn, "vcpu_hours_per_month")), 73.0, REL);
    json_t *nodes = json_object_get(json_object_get(out, "flamegraph"), "nodes");
    CHECK_INT(json_integer_value(json_array_get(json_object_get(nodes, "total_ns"), 0)), 60 * S);
    json_decref(out);
    tstore_close(&t);
}

/* Duty cycle: 10 s profiles every 60 s (1 CPU-s each), polls every 10 s from T0 to
 * T0 + 590 s: P = 100 s, A = 590 s: 730 / 600 * 10 * 590 / 100. */
static void test_duty_cycle(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 10, 10, 60, 1);
    for (int i = 0; i < 60; i++)
        tpoll(t.s, "i1", T0 + i * 10 * S);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_NEAR(vcpu(out), 730.0 / 600 * 10 * 590 / 100, REL);
    CHECK_NEAR(input(out, "profiled_s"), 100.0, REL);
    CHECK_NEAR(input(out, "alive_s"), 590.0, REL);
    CHECK_NEAR(input(out, "instances_alive"), 1, REL);
    json_decref(out);
    tstore_close(&t);
}

/* Toggle off in the middle: five 60 s profiles (6 CPU-s each) from T0, polls every 10 s
 * to T0 + 590 s: 730 / 600 * 30 * 590 / 300. */
static void test_toggle(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 5, 60, 60, 6);
    for (int i = 0; i < 60; i++)
        tpoll(t.s, "i1", T0 + i * 10 * S);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_NEAR(vcpu(out), 730.0 / 600 * 30 * 590 / 300, REL);
    CHECK_NEAR(input(out, "coverage"), 300.0 / 590, REL);
    json_t *w = json_object_get(json_object_get(out, "quality"), "warnings");
    CHECK_INT(json_array_size(w), 0); /* coverage 51 % */
    json_decref(out);
    tstore_close(&t);
}

/* Instance i2 appears at T0 + 300 s (gapless from there, 6 CPU-s per 60 s), i1 gapless all
 * along: 730 / 600 * (60 + 30) = 109.5; an instance i3 that only polls is unprofiled. */
static void test_instance_mid_window(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 10, 60, 60, 6);
    profiles(t.s, "i2", T0 + 300 * S, 5, 60, 60, 6);
    for (int i = 0; i < 10; i++)
        tpoll(t.s, "i3", T0 + 100 * S + i * 10 * S);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_NEAR(vcpu(out), 109.5, REL);
    CHECK_NEAR(input(out, "instances_alive"), 3, REL);
    CHECK_NEAR(input(out, "instances_profiled"), 2, REL);
    CHECK_NEAR(input(out, "instances_unprofiled"), 1, REL);
    CHECK_NEAR(input(out, "alive_s"), 600.0 + 300.0 + 90.0, REL);
    json_t *q = json_object_get(out, "quality");
    CHECK_INT(json_integer_value(json_object_get(q, "instances_unprofiled")), 1);
    json_decref(out);
    tstore_close(&t);
}

/* Straddling: profiles [T0 - 30 s, T0 + 30 s), then every 60 s to [T0 + 570, T0 + 630),
 * 6 CPU-s each; the edge ones weigh 1/2: cpu 60 s, estimate 73, samples 6000. */
static void test_straddling(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0 - 30 * S, 11, 60, 60, 6);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_INT(json_integer_value(json_object_get(out, "profiles")), 11);
    CHECK_NEAR(json_real_value(json_object_get(out, "samples")), 6000.0, REL);
    CHECK_INT(json_integer_value(json_object_get(out, "value_ns")), 60 * S);
    CHECK_NEAR(vcpu(out), 73.0, REL);
    json_decref(out);
    tstore_close(&t);
}

/* A profile of unknown duration (or of zero duration) in the window: capacity null. */
static void test_unknown_duration(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 5, 60, 60, 6);
    double samples[] = {100};
    CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i1", "x", T0 + 400 * S, -1, WORK, samples, 1)), 0);
    json_t *out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK(json_is_null(json_object_get(out, "capacity")));
    CHECK_STR(json_string_value(json_object_get(out, "capacity_unavailable")),
              "profile duration unknown");
    CHECK_INT(json_integer_value(json_object_get(out, "value_ns")), 31 * S);
    json_decref(out);
    CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i1", "z", T0 + 1000 * S, 0, WORK, samples, 1)), 0);
    out = query(t.s, RT_PTYPE_CPU, T0 + 900 * S, T0 + 1200 * S);
    CHECK_INT(json_integer_value(json_object_get(out, "profiles")), 1);
    CHECK_STR(json_string_value(json_object_get(out, "capacity_unavailable")),
              "profile duration unknown");
    json_decref(out);
    out = query(t.s, RT_PTYPE_CPU, T0 + 2000 * S, T0 + 2600 * S);
    CHECK_STR(json_string_value(json_object_get(out, "capacity_unavailable")),
              "no profiles in window");
    json_decref(out);
    tstore_close(&t);
}

/* A wall answer never carries capacity; cpu and wall of one service are never summed. */
static void test_wall(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    profiles(t.s, "i1", T0, 10, 60, 60, 6);
    double samples[] = {6000};
    /* pyroscope-io's profile: declared cpu, stored as wall (DESIGN §12), named in the answer */
    struct rt_profile *w = tprof(RT_PTYPE_WALL, "i1", "w", T0, 600 * S, WORK + 1, samples, 1);
    w->producer = rt_producer_of_agent("pyspy", RT_PTYPE_CPU);
    w->declared_type = RT_PTYPE_CPU;
    CHECK_INT(tput(t.s, w), 0);
    json_t *out = query(t.s, RT_PTYPE_WALL, T0, T0 + 600 * S);
    json_t *prods = json_object_get(out, "producers");
    CHECK_INT(json_array_size(prods), 1);
    json_t *pr = json_array_get(prods, 0);
    CHECK_STR(json_string_value(json_object_get(pr, "agent")), "pyroscope-python");
    CHECK_STR(json_string_value(json_object_get(pr, "declared_type")), "cpu");
    CHECK_INT(json_integer_value(json_object_get(pr, "profiles")), 1);
    CHECK(strstr(json_string_value(json_object_get(pr, "note")), "not CPU time") ||
          strstr(json_string_value(json_object_get(pr, "note")), "neither is CPU time"));
    CHECK_INT(json_integer_value(json_object_get(out, "profiles")), 1);
    CHECK_INT(json_integer_value(json_object_get(out, "value_ns")), 60 * S);
    CHECK(json_is_null(json_object_get(out, "capacity")));
    CHECK_STR(json_string_value(json_object_get(out, "capacity_unavailable")),
              "wall-clock profiles include time blocked on I/O and locks; CPU cannot be "
              "derived from them");
    json_t *fn = json_array_get(json_object_get(out, "functions"), 0);
    CHECK_STR(json_string_value(json_object_get(fn, "name")), "idle_loop");
    CHECK(json_is_null(json_object_get(fn, "vcpu_hours_per_month")));
    json_decref(out);
    out = query(t.s, RT_PTYPE_CPU, T0, T0 + 600 * S);
    CHECK_INT(json_integer_value(json_object_get(out, "value_ns")), 60 * S);
    /* the cpu profiles of profiles() name no producer: one entry, "unknown", not relabelled */
    prods = json_object_get(out, "producers");
    CHECK_INT(json_array_size(prods), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(prods, 0), "agent")), "unknown");
    CHECK(json_is_null(json_object_get(json_array_get(prods, 0), "declared_type")));
    json_decref(out);
    tstore_close(&t);
}

/* The diff through the store: baseline [T0, T0 + 600) with work 50 % and parse 50 %,
 * current [T0 + 600, T0 + 1200) with work 80 %, a deploy between them, the same through
 * the issue windows. */
static void test_diff(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    const char *st[] = {"main;work", "main;parse"};
    for (int i = 0; i < 20; i++) {
        double base[] = {300, 300}, cur[] = {480, 120};
        char pid[32];
        snprintf(pid, sizeof(pid), "p%d", i);
        CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i1", pid, T0 + i * 60 * S, 60 * S, st,
                                  i < 10 ? base : cur, 2)),
                  0);
    }
    struct rt_deploy d = {"shop", "v2", "declared", T0 + 600 * S};
    struct rt_error err = {0};
    CHECK_INT(rt_store_put_deploy(t.s, &d, &err), 0);
    struct rt_query_diff_req req = {0};
    req.service = "shop";
    req.type = RT_PTYPE_CPU;
    CHECK_INT(rt_query_issue_windows(T0 + 600 * S, 0, T0 + 1300 * S, 600 * S, 60 * S, &req, &err),
              0);
    CHECK_INT(req.cur_to_ns, T0 + 1200 * S);
    json_t *out = rt_query_diff(t.s, &req, &err);
    CHECK(out != NULL);
    if (!out) {
        fprintf(stderr, "rt_query_diff: %s\n", err.msg);
        tstore_close(&t);
        return;
    }
    json_t *fns = json_object_get(out, "functions");
    json_t *first = json_array_get(fns, 0);
    CHECK_STR(json_string_value(json_object_get(first, "name")), "work");
    CHECK_NEAR(json_real_value(json_object_get(first, "delta_pp")), 30.0, REL);
    CHECK(json_is_true(json_object_get(first, "significant")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(fns, 2), "name")), "parse");
    json_t *deploys = json_object_get(out, "deploys");
    CHECK_INT(json_array_size(deploys), 1);
    json_t *d0 = json_array_get(deploys, 0);
    CHECK_STR(json_string_value(json_object_get(d0, "version")), "v2");
    CHECK_STR(json_string_value(json_object_get(d0, "at")), "2025-11-30T00:10:00Z");
    CHECK_STR(json_string_value(json_object_get(d0, "source")), "declared");
    CHECK_STR(json_string_value(json_object_get(json_object_get(out, "current"), "from")),
              "2025-11-30T00:10:00Z");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(out, "current"), "profiles")), 10);
    CHECK_NEAR(json_real_value(json_object_get(out, "window_s")), 600.0, REL);
    json_t *v = json_object_get(json_object_get(out, "capacity"), "vcpu_hours_per_month");
    CHECK_NEAR(json_real_value(json_object_get(v, "base")), 730.0 * 60 / 600, REL);
    CHECK_NEAR(json_real_value(json_object_get(v, "cur")), 730.0 * 60 / 600, REL);
    json_t *fv = json_object_get(first, "vcpu_hours_per_month");
    CHECK_NEAR(json_real_value(json_object_get(fv, "cur")), 730.0 * 48 / 600, REL);
    json_decref(out);
    /* instance filter that matches nothing: both windows empty */
    req.instance = "nope";
    out = rt_query_diff(t.s, &req, &err);
    CHECK(json_is_true(json_object_get(out, "baseline_missing")));
    CHECK_INT(json_array_size(json_object_get(out, "functions")), 0);
    CHECK_STR(json_string_value(json_object_get(out, "capacity_unavailable")),
              "no profiles in window");
    json_decref(out);
    tstore_close(&t);
}

/* Version filters: profiles of v1 then v2, compared by version over one window. */
static void test_version_filter(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    const char *st[] = {"main;work"};
    for (int i = 0; i < 4; i++) {
        double x[] = {100.0 * (i + 1)};
        char pid[32];
        snprintf(pid, sizeof(pid), "v%d", i);
        struct rt_profile *p = tprof(RT_PTYPE_CPU, "i1", pid, T0 + i * 60 * S, 60 * S, st, x, 1);
        rt_profile_set_str(&p->version, i < 2 ? "v1" : "v2");
        CHECK_INT(tput(t.s, p), 0);
    }
    struct rt_query_profile_req req = {"shop", RT_PTYPE_CPU, T0, T0 + 600 * S, "v2", NULL, 0, NULL};
    struct rt_error err = {0};
    json_t *out = rt_query_profile(t.s, &req, &err);
    CHECK_INT(json_integer_value(json_object_get(out, "profiles")), 2);
    CHECK_INT(json_integer_value(json_object_get(out, "value_ns")), 7 * S);
    json_decref(out);
    struct rt_query_diff_req d = {0};
    d.service = "shop";
    d.type = RT_PTYPE_CPU;
    d.base_from_ns = d.cur_from_ns = T0;
    d.base_to_ns = d.cur_to_ns = T0 + 600 * S;
    d.base_version = "v1";
    d.cur_version = "v2";
    out = rt_query_diff(t.s, &d, &err);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(out, "baseline"), "value_ns")),
              3 * S);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(out, "current"), "value_ns")),
              7 * S);
    json_decref(out);
    tstore_close(&t);
}

static void test_invalid(void)
{
    struct rt_query_profile_req req = {"shop", RT_PTYPE_CPU, T0, T0, NULL, NULL, 0, NULL};
    struct rt_error err = {0};
    CHECK(rt_query_profile(NULL, &req, &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    struct rt_query_diff_req d = {0};
    d.type = RT_PTYPE_CPU;
    CHECK(rt_query_diff(NULL, &d, &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
}

int main(void)
{
    RUN(test_gapless_and_duplicate);
    RUN(test_duty_cycle);
    RUN(test_toggle);
    RUN(test_instance_mid_window);
    RUN(test_straddling);
    RUN(test_unknown_duration);
    RUN(test_wall);
    RUN(test_diff);
    RUN(test_version_filter);
    RUN(test_invalid);
    return TEST_DONE();
}
