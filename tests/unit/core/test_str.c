/* Tests of server/src/core/str.c: UTF-8 validation and repair (U+FFFD per invalid byte, as
 * the exporters write), and the small string helpers. */
#include <stdlib.h>
#include <xxhash.h>

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

/* rt_str_is_name reads eight bytes a step while they are printable ASCII: every byte value
 * at every offset of a word, and before, across and after a word's end, decides as a name of
 * that one odd byte does; a valid three-byte sequence at any offset stays a name. */
static void test_names_by_word(void)
{
    char s[24];
    size_t wrong = 0;
    for (size_t at = 0; at < 17; at++) {
        for (int v = 0; v < 256; v++) {
            memset(s, 'a', sizeof(s));
            s[at] = (char)v;
            bool want = v >= 0x20 && v < 0x7f; /* alone, a byte from 0x80 starts nothing */
            for (size_t len = at + 1; len <= sizeof(s); len++)
                wrong += rt_str_is_name((struct rt_str){s, len}) != want;
            wrong += !rt_str_is_name((struct rt_str){s, at}); /* the byte left out */
        }
        memset(s, 'a', sizeof(s));
        memcpy(s + at, "\xe4\xbd\xa0", 3);
        wrong += !rt_str_is_name((struct rt_str){s, sizeof(s)});
        s[at + 2] = 'a'; /* cut short: invalid */
        wrong += rt_str_is_name((struct rt_str){s, sizeof(s)});
    }
    CHECK_INT(wrong, 0);
}

/* rt_hash compiles XXH3 into str.c; its values are stored (stack and frame hashes, each
 * profile's content hash, ClickHouse's stack ids of up to 8 KiB), so they must stay
 * libxxhash's own: every length to 320 bytes (XXH3's short paths), then lengths around its
 * 1 KiB blocks and up to 9 KiB. */
static void test_hash_is_libxxhash(void)
{
    static unsigned char buf[9300];
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    size_t wrong = 0;
    for (size_t off = 0; off < 4; off++) {
        for (size_t n = 0; n <= 320; n++)
            wrong += rt_hash(buf + off, n) != XXH3_64bits(buf + off, n);
        for (size_t n = 321; n + off <= sizeof(buf); n += n % 1024 > 1000 ? 1 : 37)
            wrong += rt_hash(buf + off, n) != XXH3_64bits(buf + off, n);
        for (size_t k = 1; k <= 9; k++) /* each block's edge */
            for (size_t n = 1024 * k - 1; n <= 1024 * k + 1; n++)
                wrong += rt_hash(buf + off, n) != XXH3_64bits(buf + off, n);
    }
    CHECK_INT(wrong, 0);
    CHECK(rt_hash("a", 1) == 0xe6c632b61e964e1fu); /* XXH3_64bits("a"), seed 0 */
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
    RUN(test_names_by_word);
    RUN(test_helpers);
    RUN(test_hash_is_libxxhash);
    return TEST_DONE();
}
