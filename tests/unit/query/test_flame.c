/* Tests of the flame graph trees: node totals, self values, child order, the window total
 * at the root, and pruning to a node budget. */
#include "fake.h"
#include "test.h"

static json_t *child(json_t *node, size_t i)
{
    return json_array_get(json_object_get(node, "children"), i);
}

static const char *name(json_t *node)
{
    return json_string_value(json_object_get(node, "name"));
}

static long long ns(json_t *node, const char *key)
{
    return (long long)json_integer_value(json_object_get(node, key));
}

/* Stacks main;f;g 30 (300 ms), main;f 10 (100 ms), main;h 60 (600 ms), other 5 (50 ms) in
 * a 600 s window with a profile [−300, 300) weighing 1/2: values halve. Root total = window
 * total = 525 ms; root's children: main (500 ms) then other (25 ms); main's: h (300), f (200). */
static void test_tree(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    struct frow rows[] = {{"main;f;g", 30, 300 * MS_NS},
                          {"main;f", 10, 100 * MS_NS},
                          {"main;h", 60, 600 * MS_NS},
                          {"other", 5, 50 * MS_NS}};
    struct fmeta m = {"i1", -300 * S_NS, 600 * S_NS, false, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 4), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *root = rt__query_flame_json(&c, false, RT__QUERY_MAX_FLAME_NODES);
    CHECK_STR(name(root), "root");
    CHECK_INT(ns(root, "total_ns"), 525 * MS_NS);
    CHECK_INT(ns(root, "total_ns"), (long long)c.win[0].value_ns);
    CHECK_INT(ns(root, "self_ns"), 0);
    CHECK_NEAR(json_real_value(json_object_get(root, "samples")), 52.5, 1e-12);
    CHECK(json_is_false(json_object_get(root, "truncated")));
    json_t *mainn = child(root, 0), *other = child(root, 1);
    CHECK_STR(name(mainn), "main");
    CHECK_INT(ns(mainn, "total_ns"), 500 * MS_NS);
    CHECK_STR(name(other), "other");
    CHECK_INT(ns(other, "self_ns"), 25 * MS_NS);
    CHECK_STR(name(child(mainn, 0)), "h");
    json_t *fn = child(mainn, 1);
    CHECK_STR(name(fn), "f");
    CHECK_INT(ns(fn, "total_ns"), 200 * MS_NS);
    CHECK_INT(ns(fn, "self_ns"), 50 * MS_NS);
    CHECK_INT(ns(child(fn, 0), "total_ns"), 150 * MS_NS);
    CHECK_INT(json_array_size(json_object_get(child(fn, 0), "children")), 0);
    json_decref(root);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Pruning: 4 leaves under main (40, 30, 20, 10 ms). A budget of 3 nodes keeps main and the
 * two largest leaves; main keeps its full total (100 ms) and the root says truncated. */
static void test_prune(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    struct frow rows[] = {{"main;a", 4, 40 * MS_NS},
                          {"main;b", 3, 30 * MS_NS},
                          {"main;c", 2, 20 * MS_NS},
                          {"main;d", 1, 10 * MS_NS}};
    struct fmeta m = {"i1", 0, 600 * S_NS, false, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 4), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *root = rt__query_flame_json(&c, false, 3);
    CHECK(json_is_true(json_object_get(root, "truncated")));
    json_t *mainn = child(root, 0);
    CHECK_INT(ns(mainn, "total_ns"), 100 * MS_NS);
    CHECK_INT(json_array_size(json_object_get(mainn, "children")), 2);
    CHECK_STR(name(child(mainn, 0)), "a");
    CHECK_STR(name(child(mainn, 1)), "b");
    json_decref(root);
    root = rt__query_flame_json(&c, false, 5);
    CHECK(json_is_false(json_object_get(root, "truncated")));
    CHECK_INT(json_array_size(json_object_get(child(root, 0), "children")), 4);
    json_decref(root);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Differential tree: baseline main;a 75 %, main;b 25 %; current main;a 50 %, main;c 50 %.
 * Nodes carry both totals, shares of each window's total and delta_pp. */
static void test_diff_tree(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 1200 * S_NS);
    struct frow base[] = {{"main;a", 75, 750 * MS_NS}, {"main;b", 25, 250 * MS_NS}};
    struct frow cur[] = {{"main;a", 100, 1000 * MS_NS}, {"main;c", 100, 1000 * MS_NS}};
    struct fmeta mb = {"i1", 0, 600 * S_NS, false, 0, false};
    struct fmeta mc = {"i1", 600 * S_NS, 600 * S_NS, false, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &mb, base, 2), 0);
    CHECK_INT(fake_add(&c, f, 1, &mc, cur, 2), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    json_t *root = rt__query_flame_json(&c, true, RT__QUERY_MAX_FLAME_NODES);
    CHECK_INT(ns(root, "base_ns"), 1000 * MS_NS);
    CHECK_INT(ns(root, "cur_ns"), 2000 * MS_NS);
    json_t *mainn = child(root, 0);
    CHECK_NEAR(json_real_value(json_object_get(mainn, "base_share")), 100.0, 1e-12);
    json_t *a = child(mainn, 0), *cc = child(mainn, 1), *b = child(mainn, 2);
    CHECK_STR(name(a), "a"); /* cur 1000 ms, base 750 ms: before c (cur 1000, base 0) */
    CHECK_STR(name(cc), "c");
    CHECK_STR(name(b), "b");
    CHECK_NEAR(json_real_value(json_object_get(a, "delta_pp")), -25.0, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(cc, "delta_pp")), 50.0, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(b, "cur_share")), 0.0, 1e-12);
    CHECK_INT(ns(b, "base_ns"), 250 * MS_NS);
    json_decref(root);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

int main(void)
{
    RUN(test_tree);
    RUN(test_prune);
    RUN(test_diff_tree);
    return TEST_DONE();
}
