/* Length-carrying strings (pprof string tables are not NUL-terminated) and small helpers. */
#ifndef RT_STR_H
#define RT_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_str {
    const char *ptr;  /* borrowed; not NUL-terminated */
    size_t len;       /* bytes */
};

#define RT_STR_LIT(s) ((struct rt_str){(s), sizeof(s) - 1})

static inline struct rt_str rt_str_from(const char *s)
{
    struct rt_str r = {s, 0};
    while (s && s[r.len])
        r.len++;
    return r;
}

/* True when a equals the NUL-terminated string b. */
bool rt_str_eq_cstr(struct rt_str a, const char *b);

/* Copies s into a new NUL-terminated string (caller frees); NULL on allocation failure. */
char *rt_str_dup(struct rt_str s);

/* 64-bit hash of bytes (XXH3, from Debian's libxxhash). */
uint64_t rt_hash(const void *p, size_t n);

/* strdup that accepts NULL (returns NULL). */
char *rt_strdup_or_null(const char *s);

#endif
