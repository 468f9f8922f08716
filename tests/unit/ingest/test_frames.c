/* Tests of the frame rules (frames.c, DESIGN §3): each shape other producers write, with a
 * real example of the tool that wrote it (docs/agents.md, "Frames"), brought to
 * `module.function` with no line number; names of no shape are left as they are. */
#include <stdio.h>
#include <string.h>

#include "ingest/ingest_internal.h"
#include "test.h"

struct shape_case {
    const char *in, *out;
    unsigned shape; /* the RT__SHAPE_* bit it must report; 0: none */
};

static void check_cases(const struct shape_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char scratch[512], got[512];
        unsigned shapes = 0;
        struct rt_str r = rt__frame_normalize(rt_str_from(c[i].in), scratch, &shapes);
        snprintf(got, sizeof(got), "%.*s", (int)r.len, r.ptr);
        if (strcmp(got, c[i].out) != 0 || (c[i].shape && !(shapes & c[i].shape)) ||
            (!c[i].shape && shapes))
            fprintf(stderr, "case %zu: \"%s\" -> \"%s\" (shapes %u)\n", i, c[i].in, got, shapes);
        CHECK_STR(got, c[i].out);
        CHECK(c[i].shape ? (shapes & c[i].shape) != 0 : shapes == 0);
        CHECK(r.len <= strlen(c[i].in) + RT__FRAME_SLACK);
    }
}

/* py-spy 0.4 `record --format raw` (tests/agents/captures/py-spy): "func (file:LINE)", with
 * the module the Python SDK would name. */
static void test_pyspy(void)
{
    static const struct shape_case c[] = {
        {"hot_hash (burn.py:4)", "burn.hot_hash", RT__SHAPE_PYSPY},
        {"<module> (burn.py:12)", "burn.<module>", RT__SHAPE_PYSPY},
        {"_bootstrap_inner (/usr/lib/python3.11/threading.py:1045)",
         "threading._bootstrap_inner", RT__SHAPE_PYSPY},
        {"run (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:982)",
         "threading.run", RT__SHAPE_PYSPY},
        {"get (/srv/venv/lib/python3.11/site-packages/requests/api.py:73)", "requests.api.get",
         RT__SHAPE_PYSPY},
        {"__init__ (/srv/venv/lib/python3.11/site-packages/shop/__init__.py:3)",
         "shop.__init__", RT__SHAPE_PYSPY},
        {"checkout (/srv/app/shop/cart.py:40)", "cart.checkout", RT__SHAPE_PYSPY},
        {"total (shop/cart.py)", "shop.cart.total", RT__SHAPE_PYSPY}, /* --nolineno */
        {"<module> (<string>:1)", "<string>.<module>", RT__SHAPE_PYSPY},
        {"<module> (<frozen site>:1)", "site.<module>", RT__SHAPE_PYSPY},
        {"Cart.total (./shop/cart.py:7)", "shop.cart.Cart.total", RT__SHAPE_PYSPY},
        /* rbspy's Ruby files, and a path of no script language keeps its file without line */
        {"block in work (app/worker.rb:12)", "app.worker.block in work", RT__SHAPE_RBSPY},
        {"memcpy (libc.so.6:0)", "memcpy (libc.so.6)", RT__SHAPE_LINE},
    };
    check_cases(c, sizeof(c) / sizeof(c[0]));
}

/* "path:function:LINE": austin (../shared/data/collapsed/inferno__flamegraph_austin_flames.txt)
 * and @datadog/pprof's function names (@pyroscope/nodejs, tests/agents/captures). */
static void test_path_function(void)
{
    static const struct shape_case c[] = {
        {"<frozen importlib._bootstrap>:_find_and_load:1007", "importlib._bootstrap._find_and_load",
         RT__SHAPE_PATH_FUNCTION},
        {"/srv/app/burn.py:hot_loop:12", "burn.hot_loop", RT__SHAPE_PATH_FUNCTION},
        {"node:internal/timers:processTimers:504", "node:internal/timers.processTimers",
         RT__SHAPE_PATH_FUNCTION},
        {"./app.js:(anonymous:L#54:C#33):54", "app.(anonymous)", RT__SHAPE_PATH_FUNCTION},
        {"./src/pricing.js:applyDiscount:9", "src/pricing.applyDiscount",
         RT__SHAPE_PATH_FUNCTION},
        {"/srv/app/node_modules/express/lib/router/index.js:handle:280",
         "express/lib/router/index.handle", RT__SHAPE_PATH_FUNCTION},
        {"file:///srv/app/app.mjs:main:3", "/srv/app/app.main", RT__SHAPE_PATH_FUNCTION},
    };
    check_cases(c, sizeof(c) / sizeof(c[0]));
}

/* @datadog/pprof's frames without a script (@pyroscope/nodejs, tests/agents/captures): the
 * Node SDK's names, the one shape that lengthens a name (by up to RT__FRAME_SLACK); a C++
 * name starting "::" is not of it. */
static void test_scriptless(void)
{
    static const struct shape_case c[] = {
        {":Garbage Collection", "(garbage collector)", RT__SHAPE_PATH_FUNCTION},
        {":write", "(native).write", RT__SHAPE_PATH_FUNCTION},
        {":w", "(native).w", RT__SHAPE_PATH_FUNCTION},
        {":Node.js", "(Node.js)", RT__SHAPE_PATH_FUNCTION},
        {":Non JS threads activity", "(Non JS threads activity)", RT__SHAPE_PATH_FUNCTION},
        {":(program)", "(program)", RT__SHAPE_PATH_FUNCTION},
        {"::operator new", "::operator new", 0},
    };
    check_cases(c, sizeof(c) / sizeof(c[0]));
}

/* perf script's "func+0x1f" (../shared/data/other/perf-script/inferno__collapse-perf_go-stacks
 * .txt), the folded suffixes, trailing lines, and names of no shape. */
static void test_other_shapes(void)
{
    static const struct shape_case c[] = {
        {"runtime.mapassign_faststr+0x277", "runtime.mapassign_faststr", RT__SHAPE_OFFSET},
        /* a Java lambda's hidden class (speedscope's heavy.jfr, JDK 17's naming) */
        {"Heavy$$Lambda+0x000001c39a007200.2136288211.getAsInt", "Heavy$$Lambda.getAsInt",
         RT__SHAPE_LAMBDA},
        {"com.shop.Cart$$Lambda$14.0x0000000800c03000.run", "com.shop.Cart$$Lambda.run",
         RT__SHAPE_LAMBDA},
        {"com.shop.Cart$$Lambda.run", "com.shop.Cart$$Lambda.run", 0},
        {"main+0x1f", "main", RT__SHAPE_OFFSET},
        {"vfs_read_[k]", "vfs_read", 0},
        {"main.go:12", "main.go", RT__SHAPE_LINE},
        {"LazyCompile:*fib /usr/src/app/main.js:1", "LazyCompile:*fib /usr/src/app/main.js",
         RT__SHAPE_LINE},
        /* no shape: the names of RootTrace's SDKs and of runtimes stay */
        {"src/pricing.applyDiscount", "src/pricing.applyDiscount", 0},
        {"node:internal/timers.processTimers", "node:internal/timers.processTimers", 0},
        {"net/http.(*conn).serve", "net/http.(*conn).serve", 0},
        {"App\\Cart::total", "App\\Cart::total", 0},
        {"std::vector<int>::push_back(int const&)", "std::vector<int>::push_back(int const&)", 0},
        {"(garbage collector)", "(garbage collector)", 0},
        {"foo (bar)", "foo (bar)", 0},
        {"mod:fn", "mod:fn", 0},
        /* the path's colon looked for after "node:" or "file://": none, or nothing after it */
        {"node:", "node:", 0},
        {"file://", "file://", 0},
        {"node:internal/timers:", "node:internal/timers:", 0},
        {"app.js:", "app.js:", 0},
        {"deadbeef+0x", "deadbeef+0x", 0},
        {"", "", 0},
    };
    check_cases(c, sizeof(c) / sizeof(c[0]));
}

static void test_injected_leaf(void)
{
    CHECK(rt__frame_is_injected_leaf(rt_str_from("runtime.asyncPreempt")));
    CHECK(!rt__frame_is_injected_leaf(rt_str_from("runtime.asyncPreempt2")));
    CHECK(!rt__frame_is_injected_leaf(rt_str_from("main.asyncPreempt")));
}

int main(void)
{
    RUN(test_pyspy);
    RUN(test_path_function);
    RUN(test_scriptless);
    RUN(test_other_shapes);
    RUN(test_injected_leaf);
    return TEST_DONE();
}
