/* Tests of server/src/core/timeutil.c: RFC 3339 and Unix-seconds parsing, formatting, durations. */
#include "rt/err.h"
#include "rt/timeutil.h"
#include "test.h"

#define T0_NS (1764464400LL * RT_NS_PER_S) /* 2025-11-30T01:00:00Z */

/* fn(text, &ns) succeeds and gives want nanoseconds. */
#define CHECK_PARSES(fn, text, want)                                                               \
    do {                                                                                           \
        int64_t ns_ = 0;                                                                           \
        CHECK_INT(fn(text, &ns_), 0);                                                              \
        CHECK_INT(ns_, want);                                                                      \
    } while (0)

static void test_parse_rfc3339(void)
{
    int64_t ns = 0;
    CHECK_PARSES(rt_time_parse, "2025-11-30T01:00:00Z", T0_NS);
    CHECK_PARSES(rt_time_parse, "2025-11-30T02:00:00.5+01:00", T0_NS + 500000000);
    CHECK_PARSES(rt_time_parse, "2025-11-29T20:30:00.000000001-04:30", T0_NS + 1);
    CHECK_INT(rt_time_parse("2025-11-30T01:00:00", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2026-13-30T01:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-11-30T01:00:00Zjunk", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("", &ns), RT_EINVAL);
}

/* Days past the month's length are refused (they used to roll over: 2020-02-30 read as
 * 2020-03-01), with Gregorian leap years. A leap second (23:59:60 UTC, RFC 3339) reads as
 * the last nanosecond of 23:59:59; second 60 of another minute is refused. */
static void test_parse_impossible_dates(void)
{
    int64_t ns = 0;
    CHECK_INT(rt_time_parse("2020-02-30T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2021-02-29T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2100-02-29T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-04-31T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-06-31T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-09-31T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-11-31T00:00:00Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-11-00T00:00:00Z", &ns), RT_EINVAL);
    CHECK_PARSES(rt_time_parse, "2016-12-31T23:59:60Z", 1483228799LL * RT_NS_PER_S + 999999999);
    CHECK_PARSES(rt_time_parse, "2016-12-31T23:59:60.5Z", 1483228799LL * RT_NS_PER_S + 999999999);
    CHECK_PARSES(rt_time_parse, "2016-12-31T18:59:60-05:00",
                 1483228799LL * RT_NS_PER_S + 999999999);
    CHECK_INT(rt_time_parse("2016-12-31T23:58:60Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2016-12-31T23:59:60+01:00", &ns), RT_EINVAL); /* 22:59:60 UTC */
    CHECK_INT(rt_time_parse("2016-12-31T23:59:61Z", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("2025-11-30T24:00:00Z", &ns), RT_EINVAL);
    /* Last days that exist: 2020 and 2000 are leap years. */
    CHECK_PARSES(rt_time_parse, "2020-02-29T00:00:00Z", 1582934400LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "2000-02-29T00:00:00Z", 951782400LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "2025-12-31T23:59:59Z", 1767225599LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "2025-01-31T00:00:00Z", 1738281600LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "2025-04-30T00:00:00Z", 1745971200LL * RT_NS_PER_S);
}

static void test_parse_unix(void)
{
    int64_t ns = 0;
    CHECK_PARSES(rt_time_parse, "1764464400", T0_NS);
    CHECK_PARSES(rt_time_parse, "1764464400.25", T0_NS + 250000000);
    CHECK_INT(rt_time_parse("12abc", &ns), RT_EINVAL);
    CHECK_INT(rt_time_parse("99999999999999999999", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("99999999999999999999abc", &ns), RT_EINVAL);
}

/* Times beyond +-RT_TIME_LIMIT_NS (2116-02-20T23:53:38Z) are refused as RT_ETOOBIG (a
 * well-formed time, unlike RT_EINVAL's "no time": the alert webhooks refuse one alert for the
 * first and the payload for the second): they used to overflow
 * int64 nanoseconds (9223372039 s, year 9999) or the arithmetic of windows around them
 * (found by fuzz_api_params and fuzz_api_body). */
static void test_parse_range(void)
{
    int64_t ns = 0;
    CHECK_PARSES(rt_time_parse, "4611686018", 4611686018LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "-4611686018", -4611686018LL * RT_NS_PER_S);
    CHECK_PARSES(rt_time_parse, "2116-01-01T00:00:00Z", 4607280000LL * RT_NS_PER_S);
    CHECK_INT(rt_time_parse("4611686018.5", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("4611686019", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("9223372039", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("-9223372039", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("2262-04-12T00:00:00Z", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("9999-12-31T23:59:59Z", &ns), RT_ETOOBIG);
    CHECK_INT(rt_time_parse("1800-01-01T00:00:00Z", &ns), RT_ETOOBIG);
}

static void test_format(void)
{
    char b[RT_TIME_BUFSZ];
    CHECK_STR(rt_time_format(T0_NS, b), "2025-11-30T01:00:00Z");
    CHECK_STR(rt_time_format(T0_NS + 500000000, b), "2025-11-30T01:00:00.5Z");
    CHECK_STR(rt_time_format(T0_NS + 1, b), "2025-11-30T01:00:00.000000001Z");
    CHECK_STR(rt_time_format(-1, b), "1969-12-31T23:59:59.999999999Z");
}

static void test_duration(void)
{
    int64_t ns = 0;
    CHECK_PARSES(rt_duration_parse, "10m", 600 * RT_NS_PER_S);
    CHECK_PARSES(rt_duration_parse, "1h", 3600 * RT_NS_PER_S);
    CHECK_PARSES(rt_duration_parse, "30d", 30 * 86400 * RT_NS_PER_S);
    CHECK_PARSES(rt_duration_parse, "1.5", 1500000000);
    CHECK_PARSES(rt_duration_parse, "250ms", 250000000);
    CHECK_INT(rt_duration_parse("10x", &ns), RT_EINVAL);
    CHECK_INT(rt_duration_parse("-5s", &ns), RT_EINVAL);
    /* decimal only (issue #13): strtod read "0x10" as 16 s and "1e3" as 1000 s */
    const char *bad[] = {"0x10", "1e3", "1E3", " 5", "+5", "inf", "nan", ".5", "5.", "1.5.2",
                         "", "5 s", "0x10s", "1e3ms"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (rt_duration_parse(bad[i], &ns) != RT_EINVAL) {
            fprintf(stderr, "duration \"%s\" accepted\n", bad[i]);
            CHECK(0);
        }
    CHECK_PARSES(rt_duration_parse, "0.25s", 250000000);
    CHECK_PARSES(rt_duration_parse, "007", 7 * RT_NS_PER_S);
}

int main(void)
{
    RUN(test_parse_rfc3339);
    RUN(test_parse_impossible_dates);
    RUN(test_parse_unix);
    RUN(test_parse_range);
    RUN(test_format);
    RUN(test_duration);
    return TEST_DONE();
}
