/* Growable byte buffer with a hard limit checked before every allocation (curl's dynbuf), and
 * the growth step of a caller's dynamic array. */
#ifndef RT_BUF_H
#define RT_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct rt_buf {
    char *data;    /* owned; NUL-terminated after every append (data may be NULL while empty) */
    size_t len;    /* bytes used, excluding the terminating NUL */
    size_t cap;    /* bytes allocated */
    size_t limit;  /* most bytes len may reach; 0 = SIZE_MAX */
};

/* Initializes caller-owned storage with a limit in bytes (0 = no limit). */
void rt_buf_init(struct rt_buf *b, size_t limit);

/* Frees the storage and resets to empty; the limit stays. */
void rt_buf_cleanup(struct rt_buf *b);

/* Makes room for n more bytes. Returns 0, RT_ETOOBIG past the limit, or RT_ENOMEM. */
int rt_buf_reserve(struct rt_buf *b, size_t n);

/* Appends n bytes. Returns 0, RT_ETOOBIG or RT_ENOMEM (b unchanged on error). */
int rt_buf_append(struct rt_buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string. */
int rt_buf_puts(struct rt_buf *b, const char *s);

/* Appends printf-formatted text. */
int rt_buf_printf(struct rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rt_buf_vprintf(struct rt_buf *b, const char *fmt, va_list ap);

/* Moves the contents out as a NUL-terminated string the caller frees; b is left empty. */
char *rt_buf_into_cstr(struct rt_buf *b);

/* rt_array_grow's growth, for an array that lacks room: not called directly. */
int rt__array_regrow(void **arr, size_t *cap, size_t need, size_t elem);

/* Makes the array *arr (capacity *cap elements of elem bytes) hold at least need elements,
 * doubling from 64; the new elements are uninitialized. Returns 0 or RT_ENOMEM (*arr and *cap
 * unchanged). Inline where there is room already, as on nearly every call of the ingest's
 * loops (one per sample and stack). */
static inline int rt_array_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : rt__array_regrow(arr, cap, need, elem);
}

#endif
