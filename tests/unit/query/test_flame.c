/* Tests of the flat flame graphs: node totals, self values, child (preorder) order, the
 * window total at the root, pruning to a node budget, a maximally deep stack, and the text
 * form the HTTP server sends, byte for byte the jansson form's dump. */
#include "fake.h"
#include "test.h"

/* Column key of the flat flame graph fg ("parent", "depth", "name", "total_ns", ...). */
static json_t *col(json_t *fg, const char *key)
{
    return json_object_get(json_object_get(fg, "nodes"), key);
}

static long long at_int(json_t *fg, const char *key, long at)
{
    return (long long)json_integer_value(json_array_get(col(fg, key), (size_t)at));
}

/* Index of the i-th child of node at (children follow their order in preorder), or -1. */
static long child(json_t *fg, long at, size_t i)
{
    json_t *parent = col(fg, "parent");
    for (size_t j = 0; j < json_array_size(parent); j++)
        if (json_integer_value(json_array_get(parent, j)) == at && i-- == 0)
            return (long)j;
    return -1;
}

static size_t nchildren(json_t *fg, long at)
{
    size_t n = 0;
    while (child(fg, at, n) >= 0)
        n++;
    return n;
}

static const char *name(json_t *fg, long at)
{
    return json_string_value(
        json_array_get(json_object_get(fg, "names"), (size_t)at_int(fg, "name", at)));
}

static long long ns(json_t *fg, long at, const char *key)
{
    return at < 0 ? -1 : at_int(fg, key, at);
}

static double real(json_t *fg, long at, const char *key)
{
    return json_real_value(json_array_get(col(fg, key), (size_t)at));
}

/* Shape every flat flame graph has: equal column lengths, node 0 the root named "root",
 * preorder (a parent precedes its children; depth = parent's + 1). Returns the node count. */
static size_t check_shape(json_t *fg, const char *const *keys, size_t nkeys)
{
    size_t n = json_array_size(col(fg, "parent"));
    CHECK(n >= 1);
    CHECK(json_is_boolean(json_object_get(fg, "truncated")));
    CHECK_INT(json_object_size(json_object_get(fg, "nodes")), nkeys);
    for (size_t k = 0; k < nkeys; k++)
        CHECK_INT(json_array_size(col(fg, keys[k])), n);
    CHECK_STR(name(fg, 0), "root");
    CHECK_INT(at_int(fg, "parent", 0), -1);
    CHECK_INT(at_int(fg, "depth", 0), 0);
    for (size_t i = 1; i < n; i++) {
        long long p = at_int(fg, "parent", (long)i);
        CHECK(p >= 0 && p < (long long)i);
        CHECK_INT(at_int(fg, "depth", (long)i), at_int(fg, "depth", (long)p) + 1);
    }
    return n;
}

static const char *const plain_keys[] = {"parent", "depth", "name", "total_ns", "self_ns",
                                         "samples"};
static const char *const diff_keys[] = {"parent",     "depth",     "name",    "base_ns",
                                        "cur_ns",     "base_share", "cur_share", "delta_pp"};

/* The text form (rt__query_flame_text, what the HTTP server sends) is the member
 * "flamegraph" with exactly the bytes of the jansson form's compact dump. */
static void same_as_text(const struct rt__query_ctx *c, bool diff, size_t max_nodes)
{
    json_t *fg = rt__query_flame_json(c, diff, max_nodes);
    char *dump = fg ? json_dumps(fg, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    struct rt_buf want, got;
    rt_buf_init(&want, 0);
    rt_buf_init(&got, 0);
    CHECK(dump && rt_buf_printf(&want, "\"flamegraph\":%s", dump) == 0);
    CHECK_INT(rt__query_flame_text(c, diff, max_nodes, &got), 0);
    CHECK(want.data && got.data && strcmp(want.data, got.data) == 0);
    if (want.data && got.data && strcmp(want.data, got.data) != 0)
        fprintf(stderr, "text  %.300s\njson  %.300s\n", got.data, want.data);
    rt_buf_cleanup(&want);
    rt_buf_cleanup(&got);
    free(dump);
    json_decref(fg);
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
    struct fmeta m = {"i1", -300 * S_NS, 600 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 4), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, false, RT__QUERY_MAX_FLAME_NODES);
    json_t *fg = rt__query_flame_json(&c, false, RT__QUERY_MAX_FLAME_NODES);
    CHECK_INT(check_shape(fg, plain_keys, 6), 6);
    CHECK_INT(json_array_size(json_object_get(fg, "names")), 6);
    CHECK_STR(name(fg, 0), "root");
    CHECK_INT(ns(fg, 0, "total_ns"), 525 * MS_NS);
    CHECK_INT(ns(fg, 0, "total_ns"), (long long)c.win[0].value_ns);
    CHECK_INT(ns(fg, 0, "self_ns"), 0);
    CHECK_NEAR(real(fg, 0, "samples"), 52.5, 1e-12);
    CHECK(json_is_false(json_object_get(fg, "truncated")));
    long mainn = child(fg, 0, 0), other = child(fg, 0, 1);
    CHECK_STR(name(fg, mainn), "main");
    CHECK_INT(ns(fg, mainn, "total_ns"), 500 * MS_NS);
    CHECK_STR(name(fg, other), "other");
    CHECK_INT(ns(fg, other, "self_ns"), 25 * MS_NS);
    CHECK_STR(name(fg, child(fg, mainn, 0)), "h");
    long fn = child(fg, mainn, 1);
    CHECK_STR(name(fg, fn), "f");
    CHECK_INT(ns(fg, fn, "total_ns"), 200 * MS_NS);
    CHECK_INT(ns(fg, fn, "self_ns"), 50 * MS_NS);
    CHECK_INT(ns(fg, child(fg, fn, 0), "total_ns"), 150 * MS_NS);
    CHECK_INT(nchildren(fg, child(fg, fn, 0)), 0);
    /* preorder: root, main, h, f, g, other */
    const char *pre[] = {"root", "main", "h", "f", "g", "other"};
    for (long i = 0; i < 6; i++)
        CHECK_STR(name(fg, i), pre[i]);
    json_decref(fg);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* The node of a folded path ("main;f;g") under the root, or -1. */
static long by_path(json_t *fg, const char *path)
{
    long at = 0;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save, *fr = strtok_r(buf, ";", &save); fr && at >= 0;
         fr = strtok_r(NULL, ";", &save)) {
        long next = -1;
        for (size_t i = 0; next < 0 && child(fg, at, i) >= 0; i++)
            if (strcmp(name(fg, child(fg, at, i)), fr) == 0)
                next = child(fg, at, i);
        at = next;
    }
    return at;
}

/* Each stack is added along the path of the stack before it as far as they share frames
 * (flame.c, build): stacks that share a prefix, end inside the one before, go deeper than it,
 * and a stack whose next frame equals the frame stored after the one before (the stacks'
 * frames lie one after the other): every node where its path says, with its own totals. */
static void test_shared_prefixes(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    struct frow rows[] = {{"main;f;g", 1, 1 * MS_NS},   {"main;f", 2, 2 * MS_NS},
                          {"main;f;g;h", 4, 4 * MS_NS}, {"x;y", 8, 8 * MS_NS},
                          {"a", 16, 16 * MS_NS},        {"a;a", 32, 32 * MS_NS},
                          {"main;k", 64, 64 * MS_NS},   {"x;y;a", 128, 128 * MS_NS}};
    struct fmeta m = {"i1", 0, 600 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 8), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, false, RT__QUERY_MAX_FLAME_NODES);
    json_t *fg = rt__query_flame_json(&c, false, RT__QUERY_MAX_FLAME_NODES);
    CHECK_INT(check_shape(fg, plain_keys, 6), 11);
    static const struct {
        const char *path;
        long long total, self;
    } want[] = {{"main", 71, 0},     {"main;f", 7, 2}, {"main;f;g", 5, 1}, {"main;f;g;h", 4, 4},
                {"main;k", 64, 64},  {"x", 136, 0},    {"x;y", 136, 8},    {"x;y;a", 128, 128},
                {"a", 48, 16},       {"a;a", 32, 32}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        long at = by_path(fg, want[i].path);
        if (at < 0 || ns(fg, at, "total_ns") != want[i].total * MS_NS)
            fprintf(stderr, "  %s: node %ld\n", want[i].path, at);
        CHECK(at > 0);
        CHECK_INT(ns(fg, at, "total_ns"), want[i].total * MS_NS);
        CHECK_INT(ns(fg, at, "self_ns"), want[i].self * MS_NS);
    }
    json_decref(fg);
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
    struct fmeta m = {"i1", 0, 600 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m, rows, 4), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, false, 3);
    json_t *fg = rt__query_flame_json(&c, false, 3);
    CHECK_INT(check_shape(fg, plain_keys, 6), 4);
    CHECK(json_is_true(json_object_get(fg, "truncated")));
    long mainn = child(fg, 0, 0);
    CHECK_INT(ns(fg, mainn, "total_ns"), 100 * MS_NS);
    CHECK_INT(nchildren(fg, mainn), 2);
    CHECK_STR(name(fg, child(fg, mainn, 0)), "a");
    CHECK_STR(name(fg, child(fg, mainn, 1)), "b");
    CHECK_INT(json_array_size(json_object_get(fg, "names")), 4); /* pruned names are absent */
    json_decref(fg);
    fg = rt__query_flame_json(&c, false, 5);
    CHECK_INT(check_shape(fg, plain_keys, 6), 6);
    CHECK(json_is_false(json_object_get(fg, "truncated")));
    CHECK_INT(nchildren(fg, child(fg, 0, 0)), 4);
    json_decref(fg);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Node i of fg against node j of the same graph in the pruning order the server documents
 * (flame.c, cmp_prune): key (the larger total) descending, then depth, then the names from
 * the node up to the root. */
static int prune_cmp(json_t *fg, bool diff, long i, long j)
{
    const char *tot = diff ? "base_ns" : "total_ns";
    long long ki = ns(fg, i, tot), kj = ns(fg, j, tot);
    if (diff) {
        ki = ki > ns(fg, i, "cur_ns") ? ki : ns(fg, i, "cur_ns");
        kj = kj > ns(fg, j, "cur_ns") ? kj : ns(fg, j, "cur_ns");
    }
    if (ki != kj)
        return ki > kj ? -1 : 1;
    long long di = at_int(fg, "depth", i), dj = at_int(fg, "depth", j);
    if (di != dj)
        return di < dj ? -1 : 1;
    for (; i > 0 && j > 0 && i != j; i = (long)at_int(fg, "parent", i),
                                     j = (long)at_int(fg, "parent", j)) {
        int d = strcmp(name(fg, i), name(fg, j));
        if (d)
            return d;
    }
    return 0;
}

/* "root;a;b" of node at, into buf. */
static void path_of(json_t *fg, long at, char *buf, size_t cap)
{
    if (at <= 0) {
        snprintf(buf, cap, "root");
        return;
    }
    path_of(fg, (long)at_int(fg, "parent", at), buf, cap);
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, ";%s", name(fg, at));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The paths of fg's nodes but the root, sorted (the caller frees them and the array). */
static char **paths(json_t *fg, size_t *n)
{
    *n = json_array_size(col(fg, "parent")) - 1;
    char **p = calloc(*n + 1, sizeof(*p));
    for (size_t i = 0; i < *n; i++) {
        char buf[512];
        path_of(fg, (long)i + 1, buf, sizeof(buf));
        p[i] = strdup(buf);
    }
    qsort(p, *n, sizeof(*p), cmp_str);
    return p;
}

static void free_paths(char **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
    free(p);
}

/* Pruning selects the key of rank budget - 1 and sorts only the nodes that share it. On a
 * tree of hundreds of nodes over six names whose totals tie in runs (small integral counts), for
 * budgets from 1 to all, plain and diff: the nodes kept are exactly the first `budget` of the
 * whole tree in the documented order, computed here from the unpruned answer. */
static void test_prune_is_the_first_of_the_order(void)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    rt__query_ctx_window(&c, 1, 600 * S_NS, 1200 * S_NS);
    static char stacks[2][300][64];
    struct frow rows[2][300];
    for (int k = 0; k < 2; k++) {
        for (int r = 0; r < 300; r++) {
            char *s = stacks[k][r];
            int depth = 1 + (int)fake_rnd(6);
            s[0] = '\0';
            for (int d = 0; d < depth; d++)
                snprintf(s + strlen(s), 64 - strlen(s), "%s%s", d ? ";" : "",
                         names[fake_rnd(6)]);
            uint32_t n = 1 + fake_rnd(3);
            rows[k][r] = (struct frow){s, n, (int64_t)n * 10 * MS_NS};
        }
        struct fmeta m = {"i1", k * 600 * S_NS, 600 * S_NS, false, 0, false, NULL, 0, false};
        CHECK_INT(fake_add(&c, f, k, &m, rows[k], 300), 0);
    }
    CHECK_INT(rt__query_finish(&c), 0);
    for (int diff = 0; diff < 2; diff++) {
        json_t *all = rt__query_flame_json(&c, diff, RT__QUERY_MAX_FLAME_NODES);
        size_t n = json_array_size(col(all, "parent")) - 1;
        CHECK(n > 300 && n < RT__QUERY_MAX_FLAME_NODES); /* 470 and 773 nodes */
        CHECK(json_is_false(json_object_get(all, "truncated")));
        /* the whole order, by insertion (n is small) */
        long *order = calloc(n, sizeof(*order));
        for (size_t i = 0; i < n; i++) {
            size_t j = i;
            for (; j > 0 && prune_cmp(all, diff, (long)i + 1, order[j - 1]) < 0; j--)
                order[j] = order[j - 1];
            order[j] = (long)i + 1;
        }
        size_t budgets[] = {1, 2, 7, 50, n / 3, n / 2, n - 1, n};
        for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
            json_t *fg = rt__query_flame_json(&c, diff, budgets[b]);
            size_t got_n, want_n = budgets[b];
            char **got = paths(fg, &got_n);
            char **want = calloc(want_n + 1, sizeof(*want));
            for (size_t i = 0; i < want_n; i++) {
                char buf[512];
                path_of(all, order[i], buf, sizeof(buf));
                want[i] = strdup(buf);
            }
            qsort(want, want_n, sizeof(*want), cmp_str);
            CHECK_INT(got_n, want_n);
            for (size_t i = 0; i < got_n && i < want_n; i++)
                CHECK_STR(got[i], want[i]);
            CHECK(json_is_boolean(json_object_get(fg, "truncated")) &&
                  json_is_true(json_object_get(fg, "truncated")) == (budgets[b] < n));
            free_paths(got, got_n);
            free_paths(want, want_n);
            json_decref(fg);
        }
        free(order);
        json_decref(all);
    }
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
    struct fmeta mb = {"i1", 0, 600 * S_NS, false, 0, false, NULL, 0, false};
    struct fmeta mc = {"i1", 600 * S_NS, 600 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &mb, base, 2), 0);
    CHECK_INT(fake_add(&c, f, 1, &mc, cur, 2), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, true, RT__QUERY_MAX_FLAME_NODES);
    same_as_text(&c, true, 2);
    json_t *fg = rt__query_flame_json(&c, true, RT__QUERY_MAX_FLAME_NODES);
    CHECK_INT(check_shape(fg, diff_keys, 8), 5);
    CHECK_INT(ns(fg, 0, "base_ns"), 1000 * MS_NS);
    CHECK_INT(ns(fg, 0, "cur_ns"), 2000 * MS_NS);
    long mainn = child(fg, 0, 0);
    CHECK_NEAR(real(fg, mainn, "base_share"), 100.0, 1e-12);
    long a = child(fg, mainn, 0), cc = child(fg, mainn, 1), b = child(fg, mainn, 2);
    CHECK_STR(name(fg, a), "a"); /* cur 1000 ms, base 750 ms: before c (cur 1000, base 0) */
    CHECK_STR(name(fg, cc), "c");
    CHECK_STR(name(fg, b), "b");
    CHECK_NEAR(real(fg, a, "delta_pp"), -25.0, 1e-12);
    CHECK_NEAR(real(fg, cc, "delta_pp"), 50.0, 1e-12);
    CHECK_NEAR(real(fg, b, "cur_share"), 0.0, 1e-12);
    CHECK_INT(ns(fg, b, "base_ns"), 250 * MS_NS);
    json_decref(fg);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* A 1,025-frame stack (one more than RT_MAX_STACK_DEPTH) gives 1,026 nodes, the leaf at
 * depth 1,025, and the answer survives json_dumps + json_loads (jansson's parser refuses
 * nesting deeper than 2,048 levels, which the nested tree format exceeded). */
static void test_deep_stack(void)
{
    enum { DEPTH = 1025 };
    struct fake *f = fake_new();
    char buf[32];
    for (uint32_t j = 0; j < DEPTH; j++) { /* stack FAKE_STACK_BASE: f0;f1;...;f1024 */
        int len = snprintf(buf, sizeof(buf), "f%u", j);
        f->pool[f->npool++] = fake_frame(f, buf, (size_t)len);
    }
    f->off[0] = 0;
    f->depth[0] = DEPTH;
    f->nstacks = 1;
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 0, 600 * S_NS);
    struct rt_store_row row = {.stack_id = FAKE_STACK_BASE, .samples = 7, .value_ns = 70 * MS_NS};
    struct rt_profile_meta m = {.instance = "i1", .time_ns = 0, .duration_ns = 600 * S_NS,
                                .period_ns = 10000000, .samples = 7, .value_ns = 70 * MS_NS,
                                .thread_cpu_ns = -1, .process_cpu_ns = -1, .has_counts = true,
                                .producer = "", .cpu_scale = 1};
    CHECK_INT(rt__query_add_profile(&c, 0, &m, &row, 1), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, false, RT__QUERY_MAX_FLAME_NODES);
    json_t *fg = rt__query_flame_json(&c, false, RT__QUERY_MAX_FLAME_NODES);
    CHECK_INT(check_shape(fg, plain_keys, 6), DEPTH + 1);
    CHECK_INT(json_array_size(json_object_get(fg, "names")), DEPTH + 1);
    CHECK_INT(at_int(fg, "depth", DEPTH), DEPTH);
    CHECK_INT(at_int(fg, "parent", DEPTH), DEPTH - 1);
    CHECK_STR(name(fg, DEPTH), "f1024");
    CHECK_INT(ns(fg, DEPTH, "self_ns"), 70 * MS_NS);
    CHECK_INT(ns(fg, DEPTH, "total_ns"), 70 * MS_NS);
    char *text = json_dumps(fg, JSON_COMPACT);
    CHECK(text != NULL);
    json_error_t err;
    json_t *back = text ? json_loads(text, 0, &err) : NULL;
    CHECK(back != NULL);
    CHECK(json_equal(fg, back));
    CHECK_INT(json_array_size(col(back, "depth")), DEPTH + 1);
    json_decref(back);
    free(text);
    json_decref(fg);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

/* Names that need escapes or repair (a quote, a backslash, a tab, bytes that are not UTF-8,
 * stored before ingest repaired names) and weights that give long reals: the text form still
 * equals the jansson form, in a plain and a differential graph. */
static void test_text_odd_names(void)
{
    struct fake *f = fake_new();
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, fake_src(f), RT_PTYPE_CPU, 2);
    rt__query_ctx_window(&c, 0, 0, 700 * S_NS);
    rt__query_ctx_window(&c, 1, 700 * S_NS, 1300 * S_NS);
    struct frow rows[] = {{"main;q\"uote", 3, 33 * MS_NS},
                          {"main;back\\slash;t\tab", 7, 71 * MS_NS},
                          {"main;bad\xff\xfeutf8", 1, 13 * MS_NS},
                          {"main;caf\xc3\xa9", 11, 97 * MS_NS}};
    struct fmeta m0 = {"i1", -100 * S_NS, 600 * S_NS, false, 0, false, NULL, 0, false};
    struct fmeta m1 = {"i1", 650 * S_NS, 333 * S_NS, false, 0, false, NULL, 0, false};
    CHECK_INT(fake_add(&c, f, 0, &m0, rows, 4), 0);
    CHECK_INT(fake_add(&c, f, 1, &m1, rows + 1, 3), 0);
    CHECK_INT(rt__query_finish(&c), 0);
    same_as_text(&c, false, RT__QUERY_MAX_FLAME_NODES);
    same_as_text(&c, true, RT__QUERY_MAX_FLAME_NODES);
    same_as_text(&c, true, 3);
    rt__query_ctx_cleanup(&c);
    fake_free(f);
}

int main(void)
{
    RUN(test_tree);
    RUN(test_shared_prefixes);
    RUN(test_prune);
    RUN(test_prune_is_the_first_of_the_order);
    RUN(test_diff_tree);
    RUN(test_deep_stack);
    RUN(test_text_odd_names);
    return TEST_DONE();
}
