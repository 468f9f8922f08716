/* Tests of rt_query_issue_windows (DESIGN §6): L from window_s or clamped to [5 min, 1 h],
 * the current window cut at now - upload_interval - 15 s. */
#include "rt/query.h"
#include "test.h"

#define S 1000000000LL
#define T0 (1764460800LL * S) /* 2025-11-30T00:00:00Z */

static void test_auto_length(void)
{
    struct rt_query_diff_req r = {0};
    struct rt_error e = {0};
    /* now = started + 2 h: L = 1 h; current [T0, T0 + 1 h) is complete */
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 7200 * S, 0, 60 * S, &r, &e), 0);
    CHECK_INT(r.base_from_ns, T0 - 3600 * S);
    CHECK_INT(r.base_to_ns, T0);
    CHECK_INT(r.cur_from_ns, T0);
    CHECK_INT(r.cur_to_ns, T0 + 3600 * S);
    /* now = started + 20 min: L = 20 min; current cut at now - 60 s - 15 s */
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 1200 * S, 0, 60 * S, &r, &e), 0);
    CHECK_INT(r.base_from_ns, T0 - 1200 * S);
    CHECK_INT(r.cur_to_ns, T0 + 1200 * S - 75 * S);
    /* now = started + 1 min: L = 5 min (floor); current empty (cut before started) */
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 60 * S, 0, 60 * S, &r, &e), 0);
    CHECK_INT(r.base_from_ns, T0 - 300 * S);
    CHECK_INT(r.cur_from_ns, T0);
    CHECK_INT(r.cur_to_ns, T0);
    /* started in the future of now: L = 5 min, nothing current */
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 - 10 * S, 0, 0, &r, &e), 0);
    CHECK_INT(r.base_from_ns, T0 - 300 * S);
    CHECK_INT(r.cur_to_ns, T0);
}

static void test_explicit_length(void)
{
    struct rt_query_diff_req r = {0};
    struct rt_error e = {0};
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 86400 * S, 600 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.base_from_ns, T0 - 600 * S);
    CHECK_INT(r.cur_to_ns, T0 + 600 * S);
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 86400 * S, 60 * S, 60 * S, &r, &e), 0);
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 2 * 86400 * S, 86400 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0 + 86400 * S);
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 86400 * S, 59 * S, 60 * S, &r, &e), RT_EINVAL);
    CHECK_INT(e.code, RT_EINVAL);
    CHECK(strstr(e.msg, "window_s") != NULL);
    CHECK_INT(rt_query_issue_windows(T0, 0, T0, 86401 * S, 60 * S, &r, &e), RT_EINVAL);
    /* other fields are left alone */
    r.service = "shop";
    r.limit = 7;
    CHECK_INT(rt_query_issue_windows(T0, 0, T0 + 3600 * S, 3600 * S, 60 * S, &r, &e), 0);
    CHECK_STR(r.service, "shop");
    CHECK_INT(r.limit, 7);
    CHECK_INT(r.cur_to_ns, T0 + 3600 * S - 75 * S);
}

/* An issue's end bounds its current window and the baseline is as long (DESIGN §13): ended
 * 60 s after its start, an issue asked for 600 s compares [T0, T0 + 60) with [T0 - 60, T0);
 * without window_s its length is clamped from its end, not from now; an end past L changes
 * nothing; an end at (or before) the start gives empty windows. */
static void test_ended_issue(void)
{
    struct rt_query_diff_req r = {0};
    struct rt_error e;
    CHECK_INT(rt_query_issue_windows(T0, T0 + 60 * S, T0 + 7200 * S, 600 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_from_ns, T0);
    CHECK_INT(r.cur_to_ns, T0 + 60 * S);
    CHECK_INT(r.base_from_ns, T0 - 60 * S);
    CHECK_INT(r.base_to_ns, T0);
    /* auto length from the end: ended after 20 min, seen 2 h later: 20 min, not 1 h */
    CHECK_INT(rt_query_issue_windows(T0, T0 + 1200 * S, T0 + 7200 * S, 0, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0 + 1200 * S);
    CHECK_INT(r.base_from_ns, T0 - 1200 * S);
    /* ended after 2 min, auto: L = 5 min, cut to the 2 min it lasted */
    CHECK_INT(rt_query_issue_windows(T0, T0 + 120 * S, T0 + 7200 * S, 0, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0 + 120 * S);
    CHECK_INT(r.base_from_ns, T0 - 120 * S);
    /* an end past L: [T0, T0 + 600) as for an open issue */
    CHECK_INT(rt_query_issue_windows(T0, T0 + 3600 * S, T0 + 7200 * S, 600 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0 + 600 * S);
    CHECK_INT(r.base_from_ns, T0 - 600 * S);
    /* still in flight: the current window is cut, the baseline keeps the issue's length */
    CHECK_INT(rt_query_issue_windows(T0, T0 + 300 * S, T0 + 200 * S, 600 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0 + 125 * S);
    CHECK_INT(r.base_from_ns, T0 - 300 * S);
    CHECK_INT(rt_query_issue_windows(T0, T0, T0 + 7200 * S, 600 * S, 60 * S, &r, &e), 0);
    CHECK_INT(r.cur_to_ns, T0);
    CHECK_INT(r.base_from_ns, T0);
}

int main(void)
{
    RUN(test_ended_issue);
    RUN(test_auto_length);
    RUN(test_explicit_length);
    return TEST_DONE();
}
