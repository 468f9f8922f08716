/* When a diff reads its window 1 on a second thread (query/scan_pair.c): only when its
 * context is the only one alive in the process and the machine has two CPUs, or when a test
 * says always or never. That the answer is the same either way is test_rollup.c's
 * check_pair, on both backends. */
#include <unistd.h>

#include "query/query_internal.h"
#include "test.h"

static void test_only_when_alone(void)
{
    bool cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    struct rt__query_src src = {0};
    struct rt__query_ctx a, b;
    CHECK(!rt__query_pair_threaded()); /* no context alive: no query to read for */
    rt__query_ctx_init(&a, src, RT_PTYPE_CPU, 2);
    CHECK(rt__query_pair_threaded() == cpus);
    rt__query_ctx_init(&b, src, RT_PTYPE_CPU, 1); /* another query, or a rollup's build */
    CHECK(!rt__query_pair_threaded());
    rt__query_pair_mode(RT__QUERY_PAIR_ALWAYS);
    CHECK(rt__query_pair_threaded());
    rt__query_pair_mode(RT__QUERY_PAIR_AUTO);
    rt__query_ctx_cleanup(&b);
    rt__query_ctx_cleanup(&b); /* a second cleanup counts nothing */
    CHECK(rt__query_pair_threaded() == cpus);
    rt__query_pair_mode(RT__QUERY_PAIR_NEVER);
    CHECK(!rt__query_pair_threaded());
    rt__query_pair_mode(RT__QUERY_PAIR_AUTO);
    rt__query_ctx_cleanup(&a);
    rt__query_ctx_init(&a, src, RT_PTYPE_WALL, 2);
    CHECK(rt__query_pair_threaded() == cpus);
    rt__query_ctx_cleanup(&a);
}

int main(void)
{
    RUN(test_only_when_alone);
    return TEST_DONE();
}
