/* The frame/stack dictionary's bound (SQLite, RT__STORE_DICT_BUDGET): a store whose budget is
 * far smaller than its frames and stacks stays within it while uploads and queries run, and
 * answers exactly as a store that keeps everything cached (the dictionary is a cache: what it
 * drops is read back from the database). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/query.h"
#include "store/store_int.h"
#include "test.h"

#define BUDGET ((size_t)192 << 10)
#define PROFILES 120
#define STACKS 40 /* per profile, each with a leaf of its own */
#define T0 INT64_C(1700000000000000000)
#define S INT64_C(1000000000)

/* Profile i: 10 s of "main;handler_<i%7>;fn_<i>_<j>" stacks plus a shared one. */
static struct rt_profile *profile(int i)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    char inst[16], id[16], leaf[48], handler[24];
    snprintf(inst, sizeof(inst), "i-%d", i % 5);
    snprintf(id, sizeof(id), "p-%d", i);
    rt_profile_set_str(&p->service, "bound");
    rt_profile_set_str(&p->instance, inst);
    rt_profile_set_str(&p->profile_id, id);
    p->time_ns = T0 + (int64_t)i * 10 * S;
    p->duration_ns = 10 * S;
    p->period_ns = 10000000;
    p->has_counts = true;
    snprintf(handler, sizeof(handler), "app.handler_%d", i % 7);
    for (int j = 0; j < STACKS; j++) {
        snprintf(leaf, sizeof(leaf), "app.fn_%d_%d", i, j);
        struct rt_str frames[] = {RT_STR_LIT("app.main"), rt_str_from(handler), rt_str_from(leaf)};
        CHECK_INT(rt_profile_add_stack(p, frames, 3, j + 1, (int64_t)(j + 1) * 10000000), 0);
    }
    struct rt_str shared[] = {RT_STR_LIT("app.main"), RT_STR_LIT("app.idle")};
    CHECK_INT(rt_profile_add_stack(p, shared, 2, 5, 50000000), 0);
    return p;
}

static char *answer(struct rt_store *s)
{
    struct rt_query_profile_req req = {"bound", RT_PTYPE_CPU, T0, T0 + PROFILES * 10 * S,
                                       NULL, NULL, 10000, NULL};
    struct rt_error err = {0};
    json_t *j = rt_query_profile(s, &req, &err);
    CHECK(j != NULL);
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    return text;
}

static void remove_dir(const char *dir)
{
    const char *files[] = {"roottrace.db", "roottrace.db-wal", "roottrace.db-shm"};
    char path[600];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void test_bounded_dictionary_answers_as_an_unbounded_one(void)
{
    char small_dir[] = "/tmp/rt_dict_small_XXXXXX", big_dir[] = "/tmp/rt_dict_big_XXXXXX";
    CHECK(mkdtemp(small_dir) && mkdtemp(big_dir));
    struct rt_error err = {0};
    struct rt_store *small = rt_store_open(small_dir, &err), *big = rt_store_open(big_dir, &err);
    CHECK(small && big);
    CHECK_INT(small->dict_budget, RT__STORE_DICT_BUDGET); /* SQLite's default bound */
    small->dict_budget = BUDGET;
    size_t most = 0;
    for (int i = 0; i < PROFILES; i++) {
        struct rt_profile *p = profile(i);
        struct rt_store_put_result res;
        CHECK_INT(rt_store_put_profiles(small, &p, 1, &res, &err), 0);
        CHECK_INT(rt_store_put_profiles(big, &p, 1, &res, &err), 0);
        rt_profile_free(p);
        struct rt_store_stats st;
        rt_store_stats(small, &st);
        most = st.dict_bytes > most ? st.dict_bytes : most;
        if (i % 20 == 19) { /* queries read stacks back while uploads go on */
            char *a = answer(small), *b = answer(big);
            CHECK(a && b && strcmp(a, b) == 0);
            free(a);
            free(b);
        }
    }
    struct rt_store_stats st, bst;
    rt_store_stats(small, &st);
    rt_store_stats(big, &bst);
    /* 60 x 40 leaves of their own: far more than the budget holds, so it was emptied */
    CHECK(bst.dict_bytes > 3 * BUDGET);
    CHECK(st.dict_resets >= 2);
    CHECK_INT(bst.dict_resets, 0);
    CHECK(most <= BUDGET);
    CHECK_INT(st.dict_budget, BUDGET);
    /* the answer over every profile: identical, read from a cold and from a warm cache */
    char *a = answer(small), *b = answer(big), *again = answer(small);
    CHECK(a && b && again && strcmp(a, b) == 0 && strcmp(again, b) == 0);
    CHECK(b && strstr(b, "app.fn_119_39") != NULL);
    free(a);
    free(b);
    free(again);
    rt_store_free(small);
    rt_store_free(big);
    remove_dir(small_dir);
    remove_dir(big_dir);
}

int main(void)
{
    RUN(test_bounded_dictionary_answers_as_an_unbounded_one);
    return TEST_DONE();
}
