/* Tests of server/src/core/timeutil.c: RFC 3339 and Unix-seconds parsing, formatting, durations. */
#include "rt/err.h"
#include "rt/timeutil.h"
#include "test.h"

static void test_parse_rfc3339(void)
{
    int64_t ns = 0;
    CHECK_INT(rt_time_parse("2025-11-30T01:00:00Z", &ns), 0);
    CHECK_INT(ns, 1764464400LL * RT_NS_PER_S);
    CHECK_INT(rt_time_parse("2025-11-30T02:00:00.5+01:00", &ns), 0);
    CHECK_INT(ns, 1764464400LL * RT_NS_PER_S + 500000000);
    CHECK_INT(rt_time_parse("2025-11-29T20:30:00.000000001-04:30", &ns), 0);
    CHECK_INT(ns, 1764464400LL * RT_NS_PER_S + 1);
    CHECK_INT(rt_time_parse("2025-11-30T01:00:00", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2026-13-30T01:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-11-30T01:00:00Zjunk", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("", &ns), RT_EINVAL);
}

static void test_parse_unix(void)
{
    int64_t ns = 0;
    CHECK_INT(rt_time_parse("1764464400", &ns), 0);
    CHECK_INT(ns, 1764464400LL * RT_NS_PER_S);
    CHECK_INT(rt_time_parse("1764464400.25", &ns), 0);
    CHECK_INT(ns, 1764464400LL * RT_NS_PER_S + 250000000);
    CHECK_INT(rt_time_parse("12abc", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("99999999999999999999", &ns), RT_EINVAL);
}

static void test_format(void)
{
    char b[RT_TIME_BUFSZ];
    CHECK_STR(rt_time_format(1764464400LL * RT_NS_PER_S, b), "2025-11-30T01:00:00Z");
    CHECK_STR(rt_time_format(1764464400LL * RT_NS_PER_S + 500000000, b),
              "2025-11-30T01:00:00.5Z");
    CHECK_STR(rt_time_format(1764464400LL * RT_NS_PER_S + 1, b),
              "2025-11-30T01:00:00.000000001Z");
    CHECK_STR(rt_time_format(-1, b), "1969-12-31T23:59:59.999999999Z");
}

static void test_duration(void)
{
    int64_t ns = 0;
    CHECK_INT(rt_duration_parse("10m", &ns), 0);
    CHECK_INT(ns, 600 * RT_NS_PER_S);
    CHECK_INT(rt_duration_parse("1h", &ns), 0);
    CHECK_INT(ns, 3600 * RT_NS_PER_S);
    CHECK_INT(rt_duration_parse("30d", &ns), 0);
    CHECK_INT(ns, 30 * 86400 * RT_NS_PER_S);
    CHECK_INT(rt_duration_parse("1.5", &ns), 0);
    CHECK_INT(ns, 1500000000);
    CHECK_INT(rt_duration_parse("250ms", &ns), 0);
    CHECK_INT(ns, 250000000);
    CHECK_INT(rt_duration_parse("10x", &ns), RT_EINVAL);
    CHECK_INT(rt_duration_parse("-5s", &ns), RT_EINVAL);
}

int main(void)
{
    RUN(test_parse_rfc3339);
    RUN(test_parse_unix);
    RUN(test_format);
    RUN(test_duration);
    return TEST_DONE();
}
