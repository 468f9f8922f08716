/* Length-carrying string helpers and the hash function (XXH3 from libxxhash). */
#include <stdlib.h>
#include <string.h>
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
