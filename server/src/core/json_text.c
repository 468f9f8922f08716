/* JSON numbers and strings as jansson writes them (rt/json_text.h), without snprintf for
 * integers and for the reals of the usual magnitudes. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rt/err.h"
#include "rt/json_text.h"

typedef unsigned __int128 u128;

#define DIGITS RT_JSON_TEXT_REAL_DIGITS
#define MAX_NUMBER 40 /* the longest number text written, with its sign */

static const uint64_t pow10_u64[20] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
    1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
    100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
    1000000000000000000ULL, 10000000000000000000ULL};

/* 10^k as a 128-bit integer, k <= 38. */
static u128 pow10_u128(int k)
{
    return k < 20 ? (u128)pow10_u64[k] : (u128)pow10_u64[19] * pow10_u64[k - 19];
}

/* Writes u in decimal at p; returns the number of characters. */
static size_t put_u64(char *p, uint64_t u)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

/* round(m * 10^k / 2^s), ties to even, exact (m < 2^53, 0 <= k <= 22, 0 < s < 128). */
static uint64_t scaled_round(uint64_t m, int k, int s)
{
    u128 prod = (u128)m * pow10_u128(k);
    u128 q = prod >> s, r = prod & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
    if (r > half || (r == half && (q & 1)))
        q++;
    return (uint64_t)q;
}

/* The DIGITS-digit decimal significand of a (> 0) and its decimal exponent: a rounded to
 * DIGITS significant digits is *digits * 10^(*exp10 - DIGITS + 1). Returns false outside the
 * exact range [1e-8, 1e15), where the caller falls back to snprintf. */
static bool exact_digits(double a, uint64_t *digits, int *exp10)
{
    if (!(a >= 1e-8 && a < 1e15))
        return false;
    int e2;
    double f = frexp(a, &e2); /* a = f * 2^e2, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53);
    int s = 53 - e2; /* a = m / 2^s; s in [4, 80] here */
    int e10 = (int)floor(log10(a));
    const uint64_t lo = pow10_u64[DIGITS - 1], hi = pow10_u64[DIGITS];
    for (int tries = 0; tries < 3; tries++) {
        int k = DIGITS - 1 - e10;
        if (k < 0 || k > 22 || s <= 0 || s >= 128)
            return false;
        /* truncated first, to check the estimate of the exponent */
        u128 t = ((u128)m * pow10_u128(k)) >> s;
        if (t >= hi) {
            e10++;
            continue;
        }
        if (t < lo) {
            e10--;
            continue;
        }
        uint64_t q = scaled_round(m, k, s);
        if (q == hi) { /* rounding carried into one more digit: 9.99...95 -> 10.0 */
            q = lo;
            e10++;
        }
        *digits = q;
        *exp10 = e10;
        return true;
    }
    return false;
}

/* Writes the real as %.{DIGITS}g then jansson's touches; returns the number of characters. */
static size_t format_real(char *p, double v)
{
    char *start = p;
    uint64_t digits;
    int x;
    if (v == 0) {
        memcpy(p, signbit(v) ? "-0.0" : "0.0", signbit(v) ? 4 : 3);
        return signbit(v) ? 4 : 3;
    }
    if (!exact_digits(fabs(v), &digits, &x)) {
        /* jansson's own way (jsonp_dtostr): printf, then the touches below */
        int n = snprintf(p, MAX_NUMBER, "%.*g", DIGITS, v);
        if (n < 0 || n >= MAX_NUMBER - 2)
            return 0;
        p += n; /* the server never calls setlocale: the decimal point is "." */
        if (!memchr(start, '.', (size_t)n) && !memchr(start, 'e', (size_t)n)) {
            *p++ = '.';
            *p++ = '0';
        }
        char *e = memchr(start, 'e', (size_t)(p - start));
        if (e) { /* "e+05" -> "e5", "e-05" -> "e-5" */
            char *from = e + 1, *to = e + 1;
            if (*from == '-')
                *to++ = *from++;
            else if (*from == '+')
                from++;
            while (*from == '0' && from + 1 < p)
                from++;
            size_t rest = (size_t)(p - from);
            memmove(to, from, rest);
            p = to + rest;
        }
        return (size_t)(p - start);
    }
    char d[DIGITS];
    for (int i = DIGITS - 1; i >= 0; i--) {
        d[i] = (char)('0' + digits % 10);
        digits /= 10;
    }
    int nd = DIGITS; /* significant digits after trailing zeros are dropped (%g) */
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    if (v < 0)
        *p++ = '-';
    if (x < -4 || x >= DIGITS) { /* d.ddde-X, as %g's %e style */
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)nd - 1);
            p += nd - 1;
        }
        *p++ = 'e';
        if (x < 0)
            *p++ = '-';
        p += put_u64(p, (uint64_t)(x < 0 ? -x : x));
    } else if (x >= 0) { /* ddd.ddd */
        memcpy(p, d, (size_t)x + 1);
        p += x + 1;
        *p++ = '.';
        if (nd > x + 1) {
            memcpy(p, d + x + 1, (size_t)(nd - x - 1));
            p += nd - x - 1;
        } else {
            *p++ = '0'; /* jansson's ".0": a real never reads back as an integer */
        }
    } else { /* 0.000ddd */
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -x - 1; i++)
            *p++ = '0';
        memcpy(p, d, (size_t)nd);
        p += nd;
    }
    return (size_t)(p - start);
}

/* Appends n characters that put(p) writes into at most MAX_NUMBER bytes. */
static int put_number(struct rt_buf *out, size_t n_written_by(char *, const void *),
                      const void *arg)
{
    int rc = rt_buf_reserve(out, MAX_NUMBER);
    if (rc)
        return rc;
    size_t n = n_written_by(out->data + out->len, arg);
    if (n == 0)
        return RT_EINVAL;
    out->len += n;
    out->data[out->len] = '\0';
    return 0;
}

static size_t write_real(char *p, const void *arg)
{
    return format_real(p, *(const double *)arg);
}

static size_t write_int(char *p, const void *arg)
{
    int64_t v = *(const int64_t *)arg;
    if (v >= 0)
        return put_u64(p, (uint64_t)v);
    *p = '-';
    return 1 + put_u64(p + 1, 0 - (uint64_t)v);
}

int rt_json_text_real(struct rt_buf *out, double v)
{
    if (!isfinite(v))
        return RT_EINVAL; /* json_real refuses them too */
    return put_number(out, write_real, &v);
}

int rt_json_text_int(struct rt_buf *out, int64_t v)
{
    return put_number(out, write_int, &v);
}

int rt_json_text_string(struct rt_buf *out, const char *s, size_t len)
{
    int rc = rt_buf_reserve(out, len + 2);
    if (rc)
        return rc;
    out->data[out->len++] = '"';
    size_t run = 0; /* bytes copied as they are, not yet appended */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        char esc[8];
        size_t n = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default: n = (size_t)snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)c); break;
        }
        if ((rc = rt_buf_append(out, s + run, i - run)) || (rc = rt_buf_append(out, esc, n)))
            return rc;
        run = i + 1;
    }
    if ((rc = rt_buf_append(out, s + run, len - run)))
        return rc;
    return rt_buf_append(out, "\"", 1);
}

