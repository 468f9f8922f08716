/* Tests of server/src/core/str.c: UTF-8 validation and repair (U+FFFD per invalid byte, as
 * the exporters write), and the small string helpers. */
#include <stdlib.h>

#include "rt/str.h"
#include "test.h"

#define FFFD "\xef\xbf\xbd"

static void test_utf8_seq_len(void)
{
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"a", 1), 1);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\0", 1), 1);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xc3\xa9", 2), 2);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xe4\xbd\xa0", 3), 3);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xc3\x28", 2), 0);     /* no continuation */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xc3", 1), 0);         /* cut */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\x80", 1), 0);         /* stray */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xc0\xaf", 2), 0);     /* overlong */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xe0\x80\xaf", 3), 0); /* overlong */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xed\xa0\x80", 3), 0); /* surrogate */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0); /* > 10FFFF */
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xf5\x80\x80\x80", 4), 0);
    CHECK_INT(rt_utf8_seq_len((const unsigned char *)"\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF */
}

static void test_is_utf8(void)
{
    CHECK(rt_str_is_utf8(RT_STR_LIT("")));
    CHECK(rt_str_is_utf8(RT_STR_LIT("Lib.\xe4\xbd\xa0\xe5\xa5\xbd;tab\there")));
    CHECK(!rt_str_is_utf8(RT_STR_LIT("caf\xe9")));
    CHECK(!rt_str_is_utf8(RT_STR_LIT("bad\xc3\x28" "frame")));
    /* A length that cuts a sequence makes it invalid. */
    CHECK(!rt_str_is_utf8((struct rt_str){"\xe4\xbd\xa0", 2}));
}

static void test_dup_utf8(void)
{
    size_t n = 0;
    char *s = rt_str_dup_utf8(RT_STR_LIT("caf\xe9"), &n);
    CHECK_STR(s, "caf" FFFD);
    CHECK_INT(n, 6);
    free(s);
    s = rt_str_dup_utf8(RT_STR_LIT("ok;bad\xc3\x28" "frame"), NULL);
    CHECK_STR(s, "ok;bad" FFFD "(frame");
    free(s);
    s = rt_str_dup_utf8(RT_STR_LIT("\xe2\x82"), &n); /* one U+FFFD per byte, as export */
    CHECK_STR(s, FFFD FFFD);
    CHECK_INT(n, 6);
    free(s);
    s = rt_str_dup_utf8(RT_STR_LIT("\xe4\xbd\xa0 ok"), &n); /* valid text is unchanged */
    CHECK_STR(s, "\xe4\xbd\xa0 ok");
    CHECK(s && rt_str_is_utf8(rt_str_from(s)));
    free(s);
    s = rt_str_dup_utf8((struct rt_str){NULL, 0}, &n);
    CHECK_STR(s, "");
    CHECK_INT(n, 0);
    free(s);
}

/* The one rule for names (issue #13): control bytes become visible "\xHH", so names that
 * differ only there stay distinct and carry no NUL, newline or tab into any output. */
static void test_names(void)
{
    CHECK(rt_str_is_name(RT_STR_LIT("pkg.(*T).run")));
    CHECK(rt_str_is_name(RT_STR_LIT("\xe4\xbd\xa0")));
    CHECK(!rt_str_is_name((struct rt_str){"nul\0a", 5}));
    CHECK(!rt_str_is_name(RT_STR_LIT("tab\there")));
    CHECK(!rt_str_is_name(RT_STR_LIT("del\x7f")));
    CHECK(!rt_str_is_name(RT_STR_LIT("caf\xe9")));
    size_t n = 0;
    char *a = rt_str_dup_name((struct rt_str){"nul\0a", 5}, &n);
    char *b = rt_str_dup_name((struct rt_str){"nul\0b", 5}, NULL);
    char *z = rt_str_dup_name((struct rt_str){"\0", 1}, NULL);
    CHECK_STR(a, "nul\\x00a");
    CHECK_INT(n, 8);
    CHECK_STR(b, "nul\\x00b");
    CHECK_STR(z, "\\x00"); /* a leading NUL no longer gives an empty name */
    free(a);
    free(b);
    free(z);
    a = rt_str_dup_name(RT_STR_LIT("a\tb\nc\r\x1f\x7f caf\xe9"), &n);
    CHECK_STR(a, "a\\x09b\\x0ac\\x0d\\x1f\\x7f caf" FFFD);
    CHECK(a && rt_str_is_name(rt_str_from(a)));
    free(a);
}

static void test_helpers(void)
{
    CHECK(rt_str_eq_cstr(RT_STR_LIT("cpu"), "cpu"));
    CHECK(!rt_str_eq_cstr(RT_STR_LIT("cp"), "cpu"));
    char *d = rt_str_dup((struct rt_str){"abc", 2});
    CHECK_STR(d, "ab");
    free(d);
    CHECK(rt_strdup_or_null(NULL) == NULL);
    CHECK(rt_hash("a", 1) != rt_hash("b", 1));
}

int main(void)
{
    RUN(test_utf8_seq_len);
    RUN(test_is_utf8);
    RUN(test_dup_utf8);
    RUN(test_names);
    RUN(test_helpers);
    return TEST_DONE();
}
