/* Tests of the profile model: types, stack merging, truncation of deep stacks, metadata. */
#include <stdlib.h>

#include "rt/err.h"
#include "rt/profile.h"
#include "test.h"

static void test_ptype(void)
{
    enum rt_ptype t = 0;
    CHECK(rt_ptype_parse("cpu", &t));
    CHECK_INT(t, RT_PTYPE_CPU);
    CHECK(rt_ptype_parse("wall", &t));
    CHECK_INT(t, RT_PTYPE_WALL);
    CHECK(!rt_ptype_parse("heap", &t));
    CHECK(!rt_ptype_parse("CPU", &t));
    CHECK(!rt_ptype_parse(NULL, &t));
    CHECK_STR(rt_ptype_name(RT_PTYPE_CPU), "cpu");
    CHECK_STR(rt_ptype_name(RT_PTYPE_WALL), "wall");
    CHECK_STR(rt_ptype_note(RT_PTYPE_WALL), "includes time blocked on I/O and locks");
    CHECK_STR(rt_ptype_note(RT_PTYPE_CPU), "excludes time spent waiting");
}

static void test_new_defaults(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_WALL);
    CHECK(p != NULL);
    CHECK_INT(p->type, RT_PTYPE_WALL);
    CHECK_INT(p->duration_ns, -1);
    CHECK_INT(p->thread_cpu_ns, -1);
    CHECK_INT(p->process_cpu_ns, -1);
    CHECK_INT(p->time_ns, 0);
    CHECK_INT(p->period_ns, 0);
    CHECK(p->service == NULL);
    CHECK_INT(p->nstacks, 0);
    CHECK_INT(rt_profile_set_str(&p->service, "shop"), 0);
    CHECK_STR(p->service, "shop");
    CHECK_INT(rt_profile_set_str(&p->service, "cart"), 0);
    CHECK_STR(p->service, "cart");
    CHECK_INT(rt_profile_set_str(&p->service, NULL), 0);
    CHECK(p->service == NULL);
    rt_profile_free(p);
    rt_profile_free(NULL);
}

static void test_merge(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    struct rt_str abc[] = {RT_STR_LIT("main"), RT_STR_LIT("a"), RT_STR_LIT("b")};
    struct rt_str ab[] = {RT_STR_LIT("main"), RT_STR_LIT("a")};
    CHECK_INT(rt_profile_add_stack(p, abc, 3, 2, 20), 0);
    CHECK_INT(rt_profile_add_stack(p, ab, 2, 1, 10), 0);
    CHECK_INT(rt_profile_add_stack(p, abc, 3, 3, 30), 0);
    CHECK_INT(rt_profile_add_stack(p, abc, 0, 3, 30), RT_EINVAL);
    CHECK_INT(p->nstacks, 2);
    CHECK_INT(p->frames.count, 3);
    CHECK_NEAR(p->samples, 6, 0);
    CHECK_INT(p->value_ns, 60);
    const struct rt_profile_stack *s = &p->stacks[0];
    CHECK_INT(s->depth, 3);
    CHECK_NEAR(s->samples, 5, 0);
    CHECK_INT(s->value_ns, 50);
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off]), "main");
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + 2]), "b");
    /* The same stack given as ids merges with the one given as strings. */
    uint32_t ids[2] = {p->frame_ids[s->off], p->frame_ids[s->off + 1]};
    CHECK_INT(rt_profile_add_stack_ids(p, ids, 2, 0.5, 5), 0);
    CHECK_INT(p->nstacks, 2);
    CHECK_NEAR(p->stacks[1].samples, 1.5, 1e-12);
    CHECK_INT(p->stacks[1].value_ns, 15);
    rt_profile_free(p);
}

/* Many distinct stacks force the table to grow several times; all must still merge. */
static void test_many_stacks(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    char names[2000][16];
    for (int i = 0; i < 2000; i++)
        snprintf(names[i], sizeof(names[i]), "f%d", i);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 2000; i++) {
            struct rt_str st[] = {RT_STR_LIT("root"), rt_str_from(names[i])};
            CHECK_INT(rt_profile_add_stack(p, st, 2, 1, 7), 0);
        }
    CHECK_INT(p->nstacks, 2000);
    CHECK_INT(p->frames.count, 2001);
    CHECK_NEAR(p->samples, 4000, 0);
    CHECK_INT(p->value_ns, 28000);
    int all_two = 1;
    for (size_t i = 0; i < p->nstacks; i++)
        all_two &= p->stacks[i].samples == 2;
    CHECK(all_two);
    rt_profile_free(p);
}

/* A reservation far above what is added is given back by rt_profile_fit (the stack table
 * and the names' slots), and the stacks and names still merge after it; one that was used is
 * kept. */
static void test_reserve_and_fit(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    CHECK_INT(rt_profile_reserve_stacks(p, (size_t)1 << 40), 0); /* capped */
    CHECK_INT(p->nstack_slots, 65536);
    CHECK_INT(rt_intern_reserve(&p->frames, 20000), 0);
    CHECK_INT(p->frames.nslots, 65536);
    struct rt_str ab[] = {RT_STR_LIT("main"), RT_STR_LIT("a")};
    struct rt_str ac[] = {RT_STR_LIT("main"), RT_STR_LIT("c")};
    CHECK_INT(rt_profile_add_stack(p, ab, 2, 1, 10), 0);
    CHECK_INT(rt_profile_add_stack(p, ac, 2, 1, 10), 0);
    rt_profile_fit(p);
    CHECK_INT(p->nstack_slots, 256);
    CHECK_INT(p->frames.nslots, 64);
    CHECK_INT(rt_profile_add_stack(p, ab, 2, 2, 20), 0);
    CHECK_INT(rt_profile_add_stack(p, ac, 2, 1, 10), 0);
    CHECK_INT(p->nstacks, 2);
    CHECK_INT(p->frames.count, 3);
    CHECK_NEAR(p->stacks[0].samples, 3, 0);
    CHECK_INT(p->stacks[1].value_ns, 20);
    rt_profile_free(p);

    p = rt_profile_new(RT_PTYPE_CPU);
    CHECK_INT(rt_profile_reserve_stacks(p, 1000), 0);
    CHECK_INT(p->nstack_slots, 2048);
    char name[16];
    for (int i = 0; i < 300; i++) { /* 300 stacks need 1,024 slots: half the table */
        snprintf(name, sizeof(name), "f%d", i);
        struct rt_str st[] = {RT_STR_LIT("root"), rt_str_from(name)};
        CHECK_INT(rt_profile_add_stack(p, st, 2, 1, 1), 0);
    }
    rt_profile_fit(p);
    CHECK_INT(p->nstack_slots, 2048);
    rt_profile_free(p);

    p = rt_profile_new(RT_PTYPE_CPU); /* a table exactly four times what 200 stacks need */
    CHECK_INT(rt_profile_reserve_stacks(p, 1000), 0);
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        struct rt_str st[] = {RT_STR_LIT("root"), rt_str_from(name)};
        CHECK_INT(rt_profile_add_stack(p, st, 2, 1, 1), 0);
    }
    rt_profile_fit(p);
    CHECK_INT(p->nstack_slots, 512);
    CHECK_INT(p->frames.nslots, 512); /* 201 names grew it to 512; nothing to give back */
    struct rt_str again[] = {RT_STR_LIT("root"), RT_STR_LIT("f199")};
    CHECK_INT(rt_profile_add_stack(p, again, 2, 1, 1), 0);
    CHECK_INT(p->nstacks, 200);
    CHECK_NEAR(p->stacks[199].samples, 2, 0);
    rt_profile_free(p);
}

static void test_truncation(void)
{
    enum { DEPTH = 10000 };
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    struct rt_str *st = malloc(DEPTH * sizeof(*st));
    char (*names)[16] = malloc(DEPTH * sizeof(*names));
    for (int i = 0; i < DEPTH; i++) {
        snprintf(names[i], sizeof(names[i]), "f%d", i);
        st[i] = rt_str_from(names[i]);
    }
    CHECK_INT(rt_profile_add_stack(p, st, DEPTH, 1, 10), 0);
    CHECK_INT(p->truncated_stacks, 1);
    CHECK_INT(p->nstacks, 1);
    const struct rt_profile_stack *s = &p->stacks[0];
    CHECK_INT(s->depth, RT_MAX_STACK_DEPTH);
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off]), RT_TRUNCATED_FRAME);
    /* Leaf side kept: f8977 .. f9999 (1023 frames). */
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + 1]), "f8977");
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + s->depth - 1]), "f9999");
    CHECK_INT(p->frames.count, 1024);
    /* The same deep stack via ids merges into the truncated one. */
    uint32_t *ids = malloc(DEPTH * sizeof(*ids));
    for (int i = 0; i < DEPTH; i++)
        CHECK_INT(rt_intern_get(&p->frames, st[i], &ids[i]), 0);
    CHECK_INT(rt_profile_add_stack_ids(p, ids, DEPTH, 2, 20), 0);
    CHECK_INT(p->nstacks, 1);
    CHECK_INT(p->truncated_stacks, 2);
    CHECK_NEAR(p->stacks[0].samples, 3, 0);
    /* Exactly RT_MAX_STACK_DEPTH frames is not truncated. */
    CHECK_INT(rt_profile_add_stack(p, st, RT_MAX_STACK_DEPTH, 1, 1), 0);
    CHECK_INT(p->truncated_stacks, 2);
    CHECK_INT(p->stacks[1].depth, RT_MAX_STACK_DEPTH);
    CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[1].off]), "f0");
    free(ids);
    free(names);
    free(st);
    rt_profile_free(p);
}

/* The total value is bounded by RT_PROFILE_MAX_VALUE_NS (2^62 ns): a stack that would push it
 * over is refused whole (nothing added, no frame interned), where it used to saturate at
 * INT64_MAX. */
static void test_value_limit(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    struct rt_str st[] = {RT_STR_LIT("x")}, other[] = {RT_STR_LIT("y")};
    CHECK_INT(rt_profile_add_stack(p, st, 1, 1, INT64_MAX), RT_ETOOBIG);
    CHECK_INT(p->nstacks, 0);
    CHECK_INT(rt_profile_add_stack(p, st, 1, 1, RT_PROFILE_MAX_VALUE_NS - 5), 0);
    CHECK_INT(rt_profile_add_stack(p, other, 1, 1, 6), RT_ETOOBIG);
    CHECK_INT(p->frames.count, 1); /* "y" was not interned */
    CHECK_INT(rt_profile_add_stack(p, st, 1, 1, 5), 0);
    CHECK(p->value_ns == RT_PROFILE_MAX_VALUE_NS);
    CHECK(p->stacks[0].value_ns == RT_PROFILE_MAX_VALUE_NS);
    CHECK_INT(rt_profile_add_stack(p, st, 1, 0, 1), RT_ETOOBIG);
    uint32_t id = 0;
    CHECK_INT(rt_profile_add_stack_ids(p, &id, 1, 0, 1), RT_ETOOBIG);
    CHECK(p->value_ns == RT_PROFILE_MAX_VALUE_NS);
    rt_profile_free(p);
    /* Negative values (ingest refuses them; the store's codec tests use them) stay bounded. */
    p = rt_profile_new(RT_PTYPE_CPU);
    CHECK_INT(rt_profile_add_stack(p, st, 1, 1, -5), 0);
    CHECK_INT(rt_profile_add_stack(p, st, 1, 1, INT64_MIN), RT_ETOOBIG);
    CHECK_INT(rt_profile_add_stack(p, other, 1, 1, RT_PROFILE_MAX_VALUE_NS), 0); /* total fits */
    CHECK_INT(rt_profile_add_stack(p, other, 1, 1, 5), RT_ETOOBIG); /* the stack would not */
    CHECK(p->value_ns == RT_PROFILE_MAX_VALUE_NS - 5);
    rt_profile_free(p);
}

/* The content hash tells a retry (the same stacks, in any order, the same start and
 * duration) from another profile under the same profile_id. */
static void test_content_hash(void)
{
    struct rt_str ab[] = {RT_STR_LIT("main"), RT_STR_LIT("a")};
    struct rt_str ac[] = {RT_STR_LIT("main"), RT_STR_LIT("c")};
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU), *q = rt_profile_new(RT_PTYPE_CPU);
    p->time_ns = q->time_ns = 1000;
    p->duration_ns = q->duration_ns = 10;
    rt_profile_add_stack(p, ab, 2, 2, 20);
    rt_profile_add_stack(p, ac, 2, 1, 10);
    rt_profile_add_stack(q, ac, 2, 1, 10); /* the other order */
    rt_profile_add_stack(q, ab, 2, 2, 20);
    uint64_t h = rt_profile_content_hash(p);
    CHECK(h != 0);
    /* Stores keep this value: a retry of a profile stored by an earlier release must hash the
     * same (XXH3 is the same on every machine; the value is the first release's). */
    CHECK(h == 0x2582159a1a914d89ULL);
    CHECK(h == rt_profile_content_hash(q));
    q->time_ns = 1001;
    CHECK(h != rt_profile_content_hash(q));
    q->time_ns = 1000;
    q->duration_ns = 11;
    CHECK(h != rt_profile_content_hash(q));
    q->duration_ns = 10;
    q->type = RT_PTYPE_WALL;
    CHECK(h != rt_profile_content_hash(q));
    q->type = RT_PTYPE_CPU;
    rt_profile_add_stack(q, ab, 2, 0, 1); /* one more nanosecond */
    CHECK(h != rt_profile_content_hash(q));
    /* a frame name that differs only past a NUL is another name */
    struct rt_profile *x = rt_profile_new(RT_PTYPE_CPU), *y = rt_profile_new(RT_PTYPE_CPU);
    rt_profile_add_stack(x, (struct rt_str[]){{"n\0a", 3}}, 1, 1, 1);
    rt_profile_add_stack(y, (struct rt_str[]){{"n\0b", 3}}, 1, 1, 1);
    CHECK(rt_profile_content_hash(x) != rt_profile_content_hash(y));
    /* a stack whose frame id no frame has (the stores refuse it after hashing): the hash
     * reads nothing outside the profile, with no frame at all or past the last one */
    struct rt_profile *z = rt_profile_new(RT_PTYPE_CPU);
    CHECK_INT(rt_profile_add_stack_ids(z, (uint32_t[]){5}, 1, 1, 1), 0);
    CHECK(rt_profile_content_hash(z) == 0x679e5a2b5ff9376dULL);
    rt_profile_add_stack(z, ab, 2, 1, 1);
    CHECK_INT(rt_profile_add_stack_ids(z, (uint32_t[]){0, 7}, 2, 1, 1), 0);
    CHECK(rt_profile_content_hash(z) != 0);
    /* deeper stacks and a fractional count beside them: the values of the first release's
     * two multiplies per frame (stack_hash computes them with one) */
    const char *names[] = {"main", "net/http.(*conn).serve", "a", "b", "c", "d", "e", "f",
                           "runtime.mallocgc"};
    struct rt_str deep[9];
    for (size_t i = 0; i < 9; i++)
        deep[i] = (struct rt_str){names[i], strlen(names[i])};
    CHECK_INT(rt_profile_add_stack(z, deep, 9, 3, 30000000), 0);
    CHECK_INT(rt_profile_add_stack(z, deep, 8, 2.5, 25000000), 0);
    CHECK(rt_profile_content_hash(z) == 0xeed2369812ea1e49ULL);
    rt_profile_free(z);
    rt_profile_free(p);
    rt_profile_free(q);
    rt_profile_free(x);
    rt_profile_free(y);
}

int main(void)
{
    RUN(test_ptype);
    RUN(test_new_defaults);
    RUN(test_merge);
    RUN(test_many_stacks);
    RUN(test_reserve_and_fit);
    RUN(test_truncation);
    RUN(test_value_limit);
    RUN(test_content_hash);
    return TEST_DONE();
}
