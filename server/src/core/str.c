/* Length-carrying string helpers, UTF-8 validation and repair, and the hash function (XXH3). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* XXH3 compiled into this file (the same function and values as libxxhash's): the hashes
 * of the ingest's hot paths are short, where a call through the library costs as much as
 * the hash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rt/str.h"

bool rt_str_eq_cstr(struct rt_str a, const char *b)
{
    size_t n = strlen(b);
    return n == a.len && (n == 0 || memcmp(a.ptr, b, n) == 0);
}

char *rt_str_dup(struct rt_str s)
{
    char *p = malloc(s.len + 1);
    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    return p;
}

uint64_t rt_hash(const void *p, size_t n)
{
    return XXH3_64bits(p, n);
}

char *rt_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

bool rt_str_is_clean_utf8(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0, k; i < n; i += k) {
        if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
            return false;
        if ((k = rt_utf8_seq_len(s + i, n - i)) == 0)
            return false;
    }
    return true;
}

size_t rt_utf8_seq_len(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xf5 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong 3- and 4-byte forms, surrogates, code points past U+10FFFF. */
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

bool rt_str_is_utf8(struct rt_str s)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    for (size_t i = 0, k; i < s.len; i += k)
        if ((k = p[i] < 0x80 ? 1 : rt_utf8_seq_len(p + i, s.len - i)) == 0)
            return false;
    return true;
}

static bool is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Whether the 8 bytes at p are all printable ASCII (0x20-0x7e): no byte with its high bit,
 * none below 0x20 and no DEL (the "haszero"/"hasless" word tests of Bit Twiddling Hacks). */
static bool printable_ascii8(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    uint64_t below_space = (w - 0x20 * ones) & ~w; /* high bit set where a byte < 0x20 */
    uint64_t del = w ^ (0x7f * ones);
    uint64_t is_del = (del - ones) & ~del;         /* high bit set where a byte == 0x7f */
    return ((w | below_space | is_del) & high) == 0;
}

bool rt_str_is_name(struct rt_str s)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t i = 0;
    /* Names are mostly ASCII: eight bytes a step while they are; the first word that is not
     * goes to the byte loop, which decides from there. */
    while (i + 8 <= s.len && printable_ascii8(p + i))
        i += 8;
    for (size_t k; i < s.len; i += k)
        if (is_control(p[i]) || (k = p[i] < 0x80 ? 1 : rt_utf8_seq_len(p + i, s.len - i)) == 0)
            return false;
    return true;
}

/* A copy of s with each byte that starts no valid UTF-8 sequence as U+FFFD and, when
 * controls, each control byte as "\xHH" (see rt_str_dup_name, rt_str_dup_utf8). */
static char *repair(struct rt_str s, size_t *len, bool controls)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s.ptr;
    if (s.len > (SIZE_MAX - 1) / 4)
        return NULL;
    char *out = malloc(s.len * (controls ? 4 : 3) + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0, k; i < s.len; i += k ? k : 1) {
        bool ctl = controls && is_control(p[i]);
        k = ctl ? 0 : rt_utf8_seq_len(p + i, s.len - i);
        if (k) {
            memcpy(o, p + i, k);
            o += k;
        } else if (ctl) {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[p[i] >> 4];
            *o++ = hex[p[i] & 15];
            k = 1;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
        }
    }
    *o = '\0';
    if (len)
        *len = (size_t)(o - out);
    return out;
}

char *rt_str_dup_name(struct rt_str s, size_t *len)
{
    return repair(s, len, true);
}

char *rt_str_dup_utf8(struct rt_str s, size_t *len)
{
    return repair(s, len, false);
}
