/* Tests of data quality and cpu_agreement (DESIGN §2, §6). */
#include "fake.h"
#include "test.h"

#define REL 1e-9

static void ctx(struct rt__query_ctx *c, struct fake *f, enum rt_ptype t)
{
    rt__query_ctx_init(c, fake_src(f), t, 1);
    rt__query_ctx_window(c, 0, 0, 600 * S_NS);
}

/* Two Node profiles carrying thread_cpu_ns: [0, 300) sampled 3 s, OS 3 s; [300, 900)
 * (weight 1/2) sampled 4 s (2 s weighted), OS 6 s (3 s weighted); a profile without
 * thread_cpu_ns is left out. sampled 5 s, OS 6 s, ratio 5/6: off by 16.7 % -> warning. */
static void test_agreement(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    ctx(&c, f, RT_PTYPE_CPU);
    struct frow r1[] = {{"main;a", 300, 3 * S_NS}}, r2[] = {{"main;a", 400, 4 * S_NS}};
    struct fmeta m1 = {"i1", 0, 300 * S_NS, false, 3 * S_NS, true, "roottrace-node", 0, false};
    struct fmeta m2 = {"i1", 300 * S_NS, 600 * S_NS, false, 6 * S_NS, true, "roottrace-node", 0, false};
    struct fmeta m3 = {"i2", 0, 600 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m1, r1, 1), 0);
    CHECK_INT(fake_add(&c, f, 0, &m2, r2, 1), 0);
    CHECK_INT(fake_add(&c, f, 0, &m3, r2, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *a = rt__query_agreement_json(&c, 0);
    CHECK_NEAR(json_real_value(json_object_get(a, "sampled_cpu_s")), 5.0, REL);
    CHECK_NEAR(json_real_value(json_object_get(a, "os_thread_cpu_s")), 6.0, REL);
    CHECK_NEAR(json_real_value(json_object_get(a, "ratio")), 5.0 / 6.0, REL);
    CHECK(json_is_string(json_object_get(a, "warning")));
    CHECK_STR(json_string_value(json_object_get(a, "scope")), "main JS thread");
    json_decref(a);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Within 10 %: no warning (sampled 1.05 s, OS 1 s); no thread_cpu_ns anywhere: null. */
static void test_agreement_ok_and_absent(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    ctx(&c, f, RT_PTYPE_CPU);
    struct frow r[] = {{"main;a", 105, 1050 * MS_NS}};
    struct fmeta m = {"i1", 0, 600 * S_NS, false, S_NS, true, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, r, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *a = rt__query_agreement_json(&c, 0);
    CHECK_NEAR(json_real_value(json_object_get(a, "ratio")), 1.05, REL);
    CHECK(json_is_null(json_object_get(a, "warning")));
    json_decref(a);
    rt__query_ctx_cleanup(&c);
    ctx(&c, f, RT_PTYPE_CPU);
    m.has_thread_cpu = false;
    CHECK_INT(fake_add(&c, f, 0, &m, r, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    a = rt__query_agreement_json(&c, 0);
    CHECK(json_is_null(a));
    json_decref(a);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Quality: one profiled instance [0, 200) with polls to 590 s, one instance with polls only
 * (100 s .. 400 s), one truncated stack. coverage = 200 / (590 + 300). */
static void test_quality(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    ctx(&c, f, RT_PTYPE_CPU);
    struct rt_store_row row = {fake_stack(f, "main;a"), 100, S_NS};
    struct rt_profile_meta pm = {0};
    pm.instance = "i1";
    pm.time_ns = 0;
    pm.duration_ns = 200 * S_NS;
    pm.thread_cpu_ns = pm.process_cpu_ns = -1;
    pm.has_counts = true;
    pm.truncated_stacks = 1;
    pm.producer = "";
    pm.cpu_scale = 1;
    CHECK_INT(rt__query_add_profile(&c, 0, &pm, &row, 1), 0);
    CHECK_INT(rt__query_add_liveness(&c, 0, "i1", 10 * S_NS, 590 * S_NS), 0);
    CHECK_INT(rt__query_add_liveness(&c, 0, "i9", 100 * S_NS, 400 * S_NS), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *q = rt__query_quality_json(&c, 0);
    CHECK_INT(json_integer_value(json_object_get(q, "profiles")), 1);
    CHECK_INT(json_integer_value(json_object_get(q, "instances_alive")), 2);
    CHECK_INT(json_integer_value(json_object_get(q, "instances_profiled")), 1);
    CHECK_INT(json_integer_value(json_object_get(q, "instances_unprofiled")), 1);
    CHECK_INT(json_integer_value(json_object_get(q, "truncated_stacks")), 1);
    CHECK_NEAR(json_real_value(json_object_get(q, "coverage")), 200.0 / 890.0, REL);
    CHECK(json_is_true(json_object_get(q, "has_data")));
    json_decref(q);
    /* the profile answer warns about both */
    json_t *out = rt__query_profile_json(&c, "shop", 10);
    json_t *w = json_object_get(json_object_get(out, "quality"), "warnings");
    CHECK_INT(json_array_size(w), 2);
    CHECK_STR(json_string_value(json_array_get(w, 0)), "coverage below 50% in the queried window");
    CHECK(json_is_string(json_object_get(json_object_get(json_object_get(out, "capacity"),
                                                         "inputs"),
                                         "unprofiled_note")));
    json_decref(out);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

int main(void)
{
    RUN(test_agreement);
    RUN(test_agreement_ok_and_absent);
    RUN(test_quality);
    return TEST_DONE();
}
