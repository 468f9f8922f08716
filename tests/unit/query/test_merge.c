/* Tests of rt_query_merge against a real store: stacks merged across profiles, each profile
 * weighted by its overlap with the window (DESIGN §6). */
#include <math.h>

#include "rt/query.h"
#include "store_util.h"
#include "test.h"

static double stack_samples(const struct rt_profile *p, const char *leaf, int64_t *value)
{
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *st = &p->stacks[i];
        uint32_t id = p->frame_ids[st->off + st->depth - 1];
        if (strcmp(rt_profile_frame(p, id), leaf) == 0) {
            *value = st->value_ns;
            return st->samples;
        }
    }
    *value = -1;
    return -1;
}

/* Window [T0, T0 + 600): profile A [T0 - 30 s, T0 + 30 s) with main;a 100 samples (1 s)
 * weighs 1/2; profile B [T0, T0 + 60 s) with main;a 100 and main;b 50 weighs 1.
 * Merged: main;a 150 samples, 1.5 s; main;b 50, 0.5 s. */
static void test_merge(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    const char *sa[] = {"main;a"}, *sb[] = {"main;a", "main;b"};
    double xa[] = {100}, xb[] = {100, 50};
    struct rt_profile *pa = tprof(RT_PTYPE_CPU, "i1", "A", T0 - 30 * S, 60 * S, sa, xa, 1);
    pa->thread_cpu_ns = 2 * S;
    struct rt_profile *pb = tprof(RT_PTYPE_CPU, "i1", "B", T0, 60 * S, sb, xb, 2);
    pb->thread_cpu_ns = S;
    CHECK_INT(tput(t.s, pa), 0);
    CHECK_INT(tput(t.s, pb), 0);
    struct rt_store_filter f = {"shop", RT_PTYPE_CPU, T0, T0 + 600 * S, NULL, NULL};
    struct rt_error err = {0};
    struct rt_profile *m = rt_query_merge(t.s, &f, &err);
    CHECK(m != NULL);
    if (m) {
        int64_t v;
        CHECK_NEAR(stack_samples(m, "a", &v), 150.0, 1e-12);
        CHECK_INT(v, 1500 * MS);
        CHECK_NEAR(stack_samples(m, "b", &v), 50.0, 1e-12);
        CHECK_INT(v, 500 * MS);
        CHECK_INT(m->nstacks, 2);
        CHECK_NEAR(m->samples, 200.0, 1e-12);
        CHECK_INT(m->value_ns, 2 * S);
        CHECK_INT(m->time_ns, T0);
        CHECK_INT(m->duration_ns, 600 * S);
        CHECK_INT(m->period_ns, 10 * MS);
        CHECK(m->has_counts);
        CHECK_INT(m->thread_cpu_ns, 2 * S); /* 2 s * 1/2 + 1 s */
        CHECK_STR(m->service, "shop");
        CHECK(m->type == RT_PTYPE_CPU);
    }
    rt_profile_free(m);
    /* an empty window merges to an empty profile */
    f.from_ns = T0 + 3600 * S;
    f.to_ns = T0 + 4200 * S;
    m = rt_query_merge(t.s, &f, &err);
    CHECK(m != NULL);
    if (m) {
        CHECK_INT(m->nstacks, 0);
        CHECK_INT(m->thread_cpu_ns, -1);
    }
    rt_profile_free(m);
    f.to_ns = f.from_ns;
    CHECK(rt_query_merge(t.s, &f, &err) == NULL);
    CHECK_INT(err.code, RT_EINVAL);
    tstore_close(&t);
}

/* Two profiles of 3e18 ns each (within one profile's limit, 2^62 ns) merge to 6e18 ns,
 * over it: RT_ETOOBIG naming the limit, where llround and the model used to saturate. */
static void test_merge_too_big(void)
{
    struct tstore t;
    CHECK_INT(tstore_open(&t), 0);
    const char *sa[] = {"main;a"};
    double xa[] = {3e11}; /* x 10 ms = 3e18 ns */
    CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i1", "A", T0, 60 * S, sa, xa, 1)), 0);
    CHECK_INT(tput(t.s, tprof(RT_PTYPE_CPU, "i2", "B", T0, 60 * S, sa, xa, 1)), 0);
    struct rt_store_filter f = {"shop", RT_PTYPE_CPU, T0, T0 + 600 * S, NULL, NULL};
    struct rt_error err = {0};
    struct rt_profile *m = rt_query_merge(t.s, &f, &err);
    CHECK(m == NULL);
    CHECK_INT(err.code, RT_ETOOBIG);
    CHECK(strstr(err.msg, "2^62 ns") != NULL);
    rt_profile_free(m);
    f.instance = "i1"; /* one of them fits */
    m = rt_query_merge(t.s, &f, &err);
    CHECK(m != NULL);
    if (m)
        CHECK(m->value_ns == 3000000000000000000LL);
    rt_profile_free(m);
    tstore_close(&t);
}

int main(void)
{
    RUN(test_merge_too_big);
    RUN(test_merge);
    return TEST_DONE();
}
