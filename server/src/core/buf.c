/* Growable byte buffer with a limit checked before every allocation; dynamic array growth. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/buf.h"
#include "rt/err.h"

void rt_buf_init(struct rt_buf *b, size_t limit)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->limit = limit ? limit : SIZE_MAX;
}

void rt_buf_cleanup(struct rt_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

int rt_buf_reserve(struct rt_buf *b, size_t n)
{
    size_t need;
    if (__builtin_add_overflow(b->len, n, &need) || need > b->limit)
        return RT_ETOOBIG;
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need + 1) {
        if (cap > SIZE_MAX / 2)
            return RT_ENOMEM;
        cap *= 2;
    }
    /* Never allocate past what the limit allows (a 256 MiB limit must not cost 512 MiB). */
    if (b->limit != SIZE_MAX && cap > b->limit + 1)
        cap = b->limit + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return RT_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int rt_buf_append(struct rt_buf *b, const void *p, size_t n)
{
    int rc = rt_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int rt_buf_puts(struct rt_buf *b, const char *s)
{
    return rt_buf_append(b, s, strlen(s));
}

int rt_buf_vprintf(struct rt_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return RT_EINVAL;
    int rc = rt_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int rt_buf_printf(struct rt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = rt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *rt_buf_into_cstr(struct rt_buf *b)
{
    char *s = b->data;
    if (!s)
        s = calloc(1, 1);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return s;
}

int rt__array_regrow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return RT_ENOMEM;
        n *= 2;
    }
    size_t bytes;
    if (__builtin_mul_overflow(n, elem, &bytes))
        return RT_ENOMEM;
    void *p = realloc(*arr, bytes);
    if (!p)
        return RT_ENOMEM;
    *arr = p;
    *cap = n;
    return 0;
}
