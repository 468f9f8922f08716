/* Tests of /ingest's parameters (pyroscope.c, DESIGN §12): the application name with its kind
 * and labels as the agents write it, times by digit count, and the kinds. */
#include <stdio.h>
#include <string.h>

#include "rt/ingest.h"
#include "rt/timeutil.h"
#include "test.h"

static void test_names(void)
{
    struct rt_ingest_pyroscope_name n;
    struct rt_error e = {0};
    /* pyroscope-go's: the kind after the application, labels in braces */
    CHECK_INT(rt_ingest_pyroscope_name("agents.go.cpu{__session_id__=5b3e,version=1.0.0}", &n,
                                       &e), 0);
    CHECK_STR(n.service, "agents.go");
    CHECK_STR(n.kind, "cpu");
    CHECK_INT(n.type, RT_PTYPE_CPU);
    CHECK_INT(n.nlabels, 2);
    CHECK_STR(rt_ingest_pyroscope_label(&n, "__session_id__"), "5b3e");
    CHECK_STR(rt_ingest_pyroscope_label(&n, "version"), "1.0.0");
    CHECK(rt_ingest_pyroscope_label(&n, "hostname") == NULL);
    /* a dot that names no kind stays in the service; no labels */
    CHECK_INT(rt_ingest_pyroscope_name("shop.checkout", &n, &e), 0);
    CHECK_STR(n.service, "shop.checkout");
    CHECK(!n.has_kind && n.type == 0 && n.nlabels == 0);
    CHECK_INT(rt_ingest_pyroscope_name("app.wall{}", &n, &e), 0);
    CHECK(n.type == RT_PTYPE_WALL && strcmp(n.service, "app") == 0);
    CHECK_INT(rt_ingest_pyroscope_name("app.itimer{a=b=c,,d=}", &n, &e), 0);
    CHECK(n.type == RT_PTYPE_CPU && n.nlabels == 2);
    CHECK_STR(rt_ingest_pyroscope_label(&n, "a"), "b=c");
    CHECK_STR(rt_ingest_pyroscope_label(&n, "d"), "");
    /* a kind that is not time: known, type 0 */
    CHECK_INT(rt_ingest_pyroscope_name("app.alloc_objects{}", &n, &e), 0);
    CHECK(n.has_kind && n.type == 0 && strcmp(n.kind, "alloc_objects") == 0);
    static const char *const bad[] = {"", "{a=b}", "app{a=b", "app{=b}", "app{ab}",
                                      "app\x01"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT(rt_ingest_pyroscope_name(bad[i], &n, &e), RT_EINVAL);
    char big[400];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_INT(rt_ingest_pyroscope_name(big, &n, &e), RT_EINVAL);
}

static void test_times(void)
{
    int64_t ns = 0;
    CHECK_INT(rt_ingest_pyroscope_time("1700000000", &ns), 0);
    CHECK_INT(ns, 1700000000LL * RT_NS_PER_S);
    CHECK_INT(rt_ingest_pyroscope_time("1700000000123", &ns), 0);
    CHECK_INT(ns, 1700000000123LL * 1000000);
    CHECK_INT(rt_ingest_pyroscope_time("1700000000123456", &ns), 0);
    CHECK_INT(ns, 1700000000123456LL * 1000);
    CHECK_INT(rt_ingest_pyroscope_time("1700000000123456789", &ns), 0);
    CHECK_INT(ns, 1700000000123456789LL);
    CHECK_INT(rt_ingest_pyroscope_time("0", &ns), 0);
    CHECK_INT(ns, 0);
    static const char *const bad[] = {"", "-1", "17e8", " 1", "12345678901234567890",
                                      "9999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT(rt_ingest_pyroscope_time(bad[i], &ns), RT_EINVAL);
}

static void test_kinds(void)
{
    enum rt_ptype t;
    CHECK_INT(rt_ingest_pyroscope_kind("process_cpu", 11, &t), 1);
    CHECK_INT(t, RT_PTYPE_CPU);
    CHECK_INT(rt_ingest_pyroscope_kind("wall", 4, &t), 1);
    CHECK_INT(t, RT_PTYPE_WALL);
    CHECK_INT(rt_ingest_pyroscope_kind("memory", 6, &t), -1);
    CHECK_INT(t, 0);
    CHECK_INT(rt_ingest_pyroscope_kind("cpux", 4, &t), 0);
    CHECK_INT(rt_ingest_pyroscope_kind("cpu", 2, &t), 0);
}

int main(void)
{
    RUN(test_names);
    RUN(test_times);
    RUN(test_kinds);
    return TEST_DONE();
}
