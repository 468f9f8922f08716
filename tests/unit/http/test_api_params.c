/* Tests of the API's integer parameters (server/src/http/api.c): rt__api_parse_int takes
 * canonical decimal int64 only, rt__api_int adds the range and the 400, rt__api_path_id the
 * positive ids of /api/v1/.../{id}. */
#include <stdint.h>
#include <string.h>

#include "http/api_util.h"
#include "rt/api.h"
#include "test.h"

static void test_parse_int(void)
{
    int64_t v = 7;
    CHECK_INT(rt__api_parse_int("0", &v), 0);
    CHECK_INT(v, 0);
    CHECK_INT(rt__api_parse_int("42", &v), 0);
    CHECK_INT(v, 42);
    CHECK_INT(rt__api_parse_int("-17", &v), 0);
    CHECK_INT(v, -17);
    CHECK_INT(rt__api_parse_int("9223372036854775807", &v), 0);
    CHECK(v == INT64_MAX);
    CHECK_INT(rt__api_parse_int("-9223372036854775808", &v), 0);
    CHECK(v == INT64_MIN);
    /* Not canonical, or not a number (strtoll with an end check took 9 of these 16). */
    const char *bad[] = {"", "-", "+5", " 5", "5 ", "010", "00", "-0", "-05", "5x", "0x10",
                         "1e3", "1.0", "9223372036854775808", "-9223372036854775809",
                         "99999999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 7;
        if (rt__api_parse_int(bad[i], &v) != -1 || v != 7) {
            fprintf(stderr, "accepted '%s'\n", bad[i]);
            CHECK(0);
        }
    }
}

static void test_int_param(void)
{
    struct rt_api_param params[] = {{"limit", "25"}, {"big", "99999999999999999999"},
                                    {"plus", "+5"}};
    struct rt_api_req req = {.method = "GET", .path = "/", .params = params, .nparams = 3};
    struct rt_api_resp resp = {0};
    int64_t v = -1;
    CHECK_INT(rt__api_int(&req, &resp, "absent", 1, 10, &v), 0); /* absent: left alone */
    CHECK_INT(v, -1);
    CHECK_INT(rt__api_int(&req, &resp, "limit", 1, 100, &v), 0);
    CHECK_INT(v, 25);
    CHECK_INT(rt__api_int(&req, &resp, "limit", 1, 24, &v), -1); /* out of range */
    CHECK_INT(resp.status, 400);
    rt_api_resp_cleanup(&resp);
    memset(&resp, 0, sizeof(resp));
    /* Past int64: a 400, not INT64_MAX as strtoll's clamp would have it. */
    CHECK_INT(rt__api_int(&req, &resp, "big", 0, INT64_MAX, &v), -1);
    CHECK_INT(resp.status, 400);
    CHECK(strstr(json_string_value(json_object_get(resp.json, "message")),
                 "'big' must be an integer in [0, 9223372036854775807]") != NULL);
    rt_api_resp_cleanup(&resp);
    memset(&resp, 0, sizeof(resp));
    CHECK_INT(rt__api_int(&req, &resp, "plus", 0, 10, &v), -1);
    CHECK_INT(resp.status, 400);
    rt_api_resp_cleanup(&resp);
    CHECK_INT(v, 25);
}

static void test_path_id(void)
{
    CHECK_INT(rt__api_path_id("12"), 12);
    CHECK_INT(rt__api_path_id("9223372036854775807"), INT64_MAX);
    CHECK_INT(rt__api_path_id("0"), 0);
    CHECK_INT(rt__api_path_id("-3"), 0);
    CHECK_INT(rt__api_path_id("+3"), 0);
    CHECK_INT(rt__api_path_id("03"), 0);
    CHECK_INT(rt__api_path_id("3a"), 0);
    CHECK_INT(rt__api_path_id("9223372036854775808"), 0);
}

int main(void)
{
    RUN(test_parse_int);
    RUN(test_int_param);
    RUN(test_path_id);
    return TEST_DONE();
}
