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

/* True when p[0..n) is valid UTF-8 with no NUL and no other C0 control byte but tab. */
bool rt_str_is_clean_utf8(const char *p, size_t n);

/* Length (1-4) of the valid UTF-8 sequence at s[0..n), n > 0; 0 when s[0] starts none: a
 * stray continuation byte, a cut sequence, an overlong form, a surrogate or a code point past
 * U+10FFFF (what jansson refuses). NUL and control bytes are valid (length 1). */
size_t rt_utf8_seq_len(const unsigned char *s, size_t n);

/* True when s is entirely valid UTF-8 in the sense of rt_utf8_seq_len. */
bool rt_str_is_utf8(struct rt_str s);

/* A NUL-terminated copy of s in which each byte that starts no valid sequence is replaced by
 * U+FFFD (EF BF BD), as the exporters write it; its length in *len (len may be NULL). The
 * caller frees it. NULL on allocation failure. */
char *rt_str_dup_utf8(struct rt_str s, size_t *len);

/* True when s may be stored as a frame name as it is (docs/internals/ingest.md, "Names"):
 * valid UTF-8 with no C0 control byte (NUL, tab, newline...) and no DEL. */
bool rt_str_is_name(struct rt_str s);

/* The frame name s is stored as: each byte that starts no valid UTF-8 sequence becomes
 * U+FFFD (as rt_str_dup_utf8), and each C0 control byte or DEL becomes the four characters
 * "\xHH" (lower-case hex), so that a name keeps every byte it had, visibly: "nul\0a" and
 * "nul\0b" stay two functions ("nul\x00a", "nul\x00b") in every answer and export, none
 * of which can carry a NUL, a newline or a tab. NUL-terminated, its length in *len (may be
 * NULL); the caller frees it. At most 4 bytes per input byte. NULL on allocation failure. */
char *rt_str_dup_name(struct rt_str s, size_t *len);

/* strdup that accepts NULL (returns NULL). */
char *rt_strdup_or_null(const char *s);

#endif
