/* Tests of server/src/http/json_out.c and core/json_text.c: the API's JSON text is jansson's compact dump with
 * JSON_REAL_PRECISION(15), byte for byte, for reals of every magnitude, integers, strings
 * with every escape, and answers of the server's own shapes. */
#include <stdint.h>
#include <stdlib.h>

#include "http/json_out.h"
#include "rt/err.h"
#include "rt/json_text.h"
#include "test.h"

#define FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY) /* scalars too */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int mismatches;

/* Dumps j both ways; counts (and prints the first few) differences. */
static void same_as_jansson(json_t *j)
{
    char *want = json_dumps(j, FLAGS);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = rt_json_out(j, NULL, 0, &b);
    if (rc || !want || strcmp(b.data ? b.data : "", want) != 0) {
        if (mismatches++ < 5)
            fprintf(stderr, "json_out: rc %d, got %.200s, jansson %.200s\n", rc,
                    b.data ? b.data : "(null)", want ? want : "(null)");
    }
    rt_buf_cleanup(&b);
    free(want);
}

static void same_real(double v)
{
    json_t *j = json_real(v);
    if (!j)
        return; /* NaN and infinities: jansson refuses them, and so no answer holds one */
    same_as_jansson(j);
    json_decref(j);
}

/* Reals at the edges: rounding ties and carries, the exact range's bounds, %g's switch
 * between fixed and exponent forms, subnormals, the extremes. */
static void test_reals_at_edges(void)
{
    static const double v[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 100.0, 1e14, 1e15, 1e16,
        999999999999999.0, 999999999999999.4, 999999999999999.5, 99999999999999.95,
        9.999999999999995, 9.9999999999999953, 0.99999999999999994, 1e-8, 1e-9, 9.99999999e-9,
        1.00000000000001e-8, 1e-4, 1e-5, 0.0001234567890123456, 0.00001234567890123456,
        123456789012345.6, 12345678901234.56, 4.25343180005894e-07, 100.0 / 7,
        1.0000000000000049, 1.0000000000000051, 2.5, 0.125, 1e300, 1e-300, 5e-324,
        2.2250738585072014e-308, 1.7976931348623157e308, 9007199254740993.0, 4503599627370495.5,
        0.30000000000000004, 123.456, -123.456e-7, 1e21, 1e22, 1e23, 3.14159265358979,
        12.5, 1234567.0, 0.000099999999999999995, 0.00009999999999999999,
    };
    mismatches = 0;
    for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
        same_real(v[i]);
        same_real(-v[i]);
    }
    CHECK_INT(mismatches, 0);
}

/* A million reals: random bit patterns (every magnitude), shares as the answers compute them
 * (100 * part / whole), and decimals with few digits (ties at the 16th digit). */
static void test_reals_random(void)
{
    mismatches = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t bits = rng();
        double d;
        memcpy(&d, &bits, sizeof(d));
        same_real(d);
    }
    for (int i = 0; i < 400000; i++) {
        double part = (double)(rng() % 100000000000ULL), whole = (double)(rng() % 1000000000000ULL);
        if (whole > 0)
            same_real(100.0 * part / whole);
        same_real((double)(rng() % 1000000) / 1000.0 - 500.0);
    }
    for (int i = 0; i < 200000; i++) {
        int e = (int)(rng() % 40) - 20;
        double d = (double)(rng() % 10000000000000000ULL) * pow(10, e);
        same_real(d);
    }
    CHECK_INT(mismatches, 0);
}

static void test_integers(void)
{
    static const json_int_t v[] = {0, 1, -1, 9, 10, 99, 100, INT64_MAX, INT64_MIN,
                                   INT64_MIN + 1, 1000000000000000000LL, -987654321};
    mismatches = 0;
    for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
        json_t *j = json_integer(v[i]);
        same_as_jansson(j);
        json_decref(j);
    }
    for (int i = 0; i < 100000; i++) {
        json_t *j = json_integer((json_int_t)(rng() >> (rng() % 64)) * (i % 2 ? -1 : 1));
        same_as_jansson(j);
        json_decref(j);
    }
    CHECK_INT(mismatches, 0);
}

static void test_strings(void)
{
    mismatches = 0;
    char all[128];
    for (int i = 0; i < 127; i++)
        all[i] = (char)(i + 1);
    json_t *j = json_stringn(all, 127); /* every ASCII character, controls and DEL included */
    same_as_jansson(j);
    json_decref(j);
    static const char *const v[] = {"", "main.handler", "a\"b\\c/d", "é ü 中文 🔥",
                                    "line\nbreak\ttab\rcr\bbs\ffeed", "\x01\x1f\x7f"};
    for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
        j = json_string(v[i]);
        same_as_jansson(j);
        json_decref(j);
    }
    j = json_stringn("nul\0inside", 10); /* jansson writes \u0000 */
    same_as_jansson(j);
    json_decref(j);
    CHECK_INT(mismatches, 0);
}

/* Trees shaped like the answers: objects in insertion order, nested arrays, empty ones,
 * keys needing escapes, every type. */
static void test_trees(void)
{
    mismatches = 0;
    json_t *o = json_pack("{s:s, s:I, s:f, s:b, s:n, s:[], s:{}, s:[i, f, s, {s:[f, f]}]}",
                          "service", "checkout", "profiles", (json_int_t)1200, "value_ns", 1.5e9,
                          "truncated", 0, "capacity", "empty", "none", "functions", 1, 0.25,
                          "x", "k\"ey", -1e-7, 3.0);
    json_object_set_new(o, "zeta", json_integer(1));
    json_object_set_new(o, "alpha", json_real(2.0)); /* insertion order, not sorted */
    json_object_set_new(o, "\n", json_string("nl key"));
    same_as_jansson(o);
    json_t *nodes = json_object(), *cols[3] = {json_array(), json_array(), json_array()};
    for (int i = 0; i < 5000; i++) {
        json_array_append_new(cols[0], json_integer(i - 1));
        json_array_append_new(cols[1], json_real((double)rng() / 1e12));
        json_array_append_new(cols[2], json_real(100.0 * (double)(rng() % 1000) / 997.0 - 50));
    }
    json_object_set_new(nodes, "parent", cols[0]);
    json_object_set_new(nodes, "base_ns", cols[1]);
    json_object_set_new(nodes, "delta_pp", cols[2]);
    json_object_set_new(o, "nodes", nodes);
    same_as_jansson(o);
    json_decref(o);
    o = json_object();
    same_as_jansson(o);
    json_decref(o);
    o = json_array();
    same_as_jansson(o);
    json_decref(o);
    CHECK_INT(mismatches, 0);
}

/* Members given as text are written last in the top-level object: the same text as when
 * they are in the tree, moved to the end. */
static void test_tail(void)
{
    json_t *o = json_pack("{s:i, s:[f]}", "a", 1, "b", 0.5);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    const char *tail = "\"flamegraph\":{\"names\":[\"root\"]}";
    CHECK_INT(rt_json_out(o, tail, strlen(tail), &b), 0);
    CHECK_STR(b.data, "{\"a\":1,\"b\":[0.5],\"flamegraph\":{\"names\":[\"root\"]}}");
    rt_buf_cleanup(&b);
    json_decref(o);
    o = json_object();
    CHECK_INT(rt_json_out(o, tail, strlen(tail), &b), 0);
    CHECK_STR(b.data, "{\"flamegraph\":{\"names\":[\"root\"]}}");
    rt_buf_cleanup(&b);
    json_decref(o);
}

static void test_limit_and_null(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 8);
    json_t *j = json_pack("[s]", "longer than eight");
    CHECK_INT(rt_json_out(j, NULL, 0, &b), RT_ETOOBIG);
    json_decref(j);
    CHECK_INT(rt_json_out(NULL, NULL, 0, &b), RT_EINVAL);
    rt_buf_cleanup(&b);
}

int main(void)
{
    RUN(test_reals_at_edges);
    RUN(test_reals_random);
    RUN(test_integers);
    RUN(test_strings);
    RUN(test_trees);
    RUN(test_tail);
    RUN(test_limit_and_null);
    return TEST_DONE();
}
