/* Binary encodings the store keeps in BLOBs: a stack as varint frame ids (root first), and a
 * profile's aggregated rows as delta-coded stack ids, compact sample counts and values
 * predicted from count x period. Layouts are in docs/internals/store.md. */
#include <stdlib.h>
#include <string.h>

#include "rt/str.h"
#include "store_int.h"

#define ROWS_FORMAT 1               /* first byte of a rows blob */
#define SAMPLES_INT_MAX (1ULL << 52) /* integral sample counts below this are varints */

int rt__store_encode_stack(struct rt_buf *b, const uint32_t *frames, size_t depth)
{
    b->len = 0;
    size_t need;
    if (__builtin_mul_overflow(depth, (size_t)5, &need))
        return RT_ENOMEM;
    int rc = rt_buf_reserve(b, need + 1);
    if (rc)
        return rc;
    unsigned char *p = (unsigned char *)b->data;
    for (size_t i = 0; i < depth; i++)
        p = rt__store_put_frame_id(p, frames[i]);
    b->len = (size_t)(p - (unsigned char *)b->data);
    return 0;
}

int rt__store_decode_stack(const void *blob, size_t n, uint32_t **frames, size_t *depth)
{
    const unsigned char *p = blob, *end = p + n;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += !(p[i] & 0x80);
    uint32_t *f = malloc((count ? count : 1) * sizeof(*f));
    if (!f)
        return RT_ENOMEM;
    for (size_t i = 0; i < count; i++) {
        uint64_t v;
        if (!rt__store_get_uvarint(&p, end, &v) || v > UINT32_MAX) {
            free(f);
            return RT_EMALFORMED;
        }
        f[i] = (uint32_t)v;
    }
    if (p != end) {
        free(f);
        return RT_EMALFORMED;
    }
    *frames = f;
    *depth = count;
    return 0;
}

uint64_t rt__store_stack_hash(const void *blob, size_t n)
{
    return rt_hash(blob, n);
}

static int cmp_row(const void *a, const void *b)
{
    const struct rt_store_row *x = a, *y = b;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* True when s is a non-negative integer that the varint form holds exactly. */
static bool samples_integral(double s)
{
    return s >= 0 && s < (double)SAMPLES_INT_MAX && (double)(uint64_t)s == s;
}

/* The value a row's samples predict: samples x period when integral and representable. */
static int64_t predict(uint64_t samples, int64_t period_ns)
{
    int64_t v;
    if (period_ns <= 0 || samples > INT64_MAX ||
        __builtin_mul_overflow((int64_t)samples, period_ns, &v))
        return 0;
    return v;
}

/* Sorts rows by stack id, stably (equal ids keep their order, so that the merge below sums
 * samples in the same order whatever the sort): an insertion sort for a few rows, else a
 * least-significant-digit radix sort on the 32-bit id, one pass per byte that differs among
 * the ids (qsort's callback per comparison cost ~9 % of a put's instructions). */
static void sort_rows(struct rt_store_row *rows, size_t n)
{
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            struct rt_store_row r = rows[i];
            size_t j = i;
            for (; j > 0 && rows[j - 1].stack_id > r.stack_id; j--)
                rows[j] = rows[j - 1];
            rows[j] = r;
        }
        return;
    }
    struct rt_store_row *tmp = malloc(n * sizeof(*tmp));
    if (!tmp) { /* glibc's qsort is a merge sort, stable as well */
        qsort(rows, n, sizeof(*rows), cmp_row);
        return;
    }
    size_t count[4][256] = {{0}};
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 4; d++)
            count[d][(rows[i].stack_id >> (8 * d)) & 0xff]++;
    struct rt_store_row *src = rows, *dst = tmp;
    for (int d = 0; d < 4; d++) {
        if (count[d][(rows[0].stack_id >> (8 * d)) & 0xff] == n)
            continue; /* every id has this byte: the pass would not move anything */
        size_t pos = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[d][b];
            count[d][b] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[d][(src[i].stack_id >> (8 * d)) & 0xff]++] = src[i];
        struct rt_store_row *t = src;
        src = dst;
        dst = t;
    }
    if (src != rows)
        memcpy(rows, src, n * sizeof(*rows));
    free(tmp);
}

/* Sorts rows by stack id and merges equal ids into *n, their value_ns summed exactly (in 128
 * bits, so that the order of the terms does not matter). Returns 0, or RT_ETOOBIG when one
 * stack's sum leaves int64 (the model bounds a profile's total at 2^62, so only rows from
 * elsewhere can). */
static int sort_merge(struct rt_store_row *rows, size_t *n)
{
    if (*n < 2)
        return 0;
    sort_rows(rows, *n);
    size_t k = 0;
    __int128 sum = rows[0].value_ns;
    for (size_t i = 1; i <= *n; i++) {
        if (i < *n && rows[i].stack_id == rows[k].stack_id) {
            rows[k].samples += rows[i].samples;
            sum += rows[i].value_ns;
            continue;
        }
        if (sum > INT64_MAX || sum < INT64_MIN)
            return RT_ETOOBIG;
        rows[k].value_ns = (int64_t)sum;
        if (i < *n) {
            rows[++k] = rows[i];
            sum = rows[k].value_ns;
        }
    }
    *n = k + 1;
    return 0;
}

int rt__store_encode_rows(struct rt_buf *b, struct rt_store_row *rows, size_t *nrows,
                          int64_t period_ns)
{
    if (sort_merge(rows, nrows))
        return RT_ETOOBIG;
    size_t n = *nrows;
    b->len = 0;
    size_t need;
    if (__builtin_mul_overflow(n, (size_t)(5 + 10 + 8 + 10), &need) ||
        __builtin_add_overflow(need, (size_t)32, &need))
        return RT_ETOOBIG;
    int rc = rt_buf_reserve(b, need);
    if (rc)
        return rc;
    uint64_t period = period_ns > 0 ? (uint64_t)period_ns : 0;
    b->data[b->len++] = ROWS_FORMAT;
    rt__store_put_uvarint(b, period);
    rt__store_put_uvarint(b, n);
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rt_store_row *r = &rows[i];
        rt__store_put_uvarint(b, r->stack_id - prev);
        prev = r->stack_id;
        int64_t pred = 0;
        if (samples_integral(r->samples)) {
            uint64_t s = (uint64_t)r->samples;
            rt__store_put_uvarint(b, s << 1);
            pred = predict(s, (int64_t)period);
        } else {
            rt__store_put_uvarint(b, 1);
            uint64_t bits;
            memcpy(&bits, &r->samples, sizeof(bits));
            for (int k = 0; k < 8; k++)
                b->data[b->len++] = (char)(bits >> (8 * k));
        }
        /* wrapping subtraction: decoded with the same wrapping addition */
        rt__store_put_uvarint(b, zigzag((int64_t)((uint64_t)r->value_ns - (uint64_t)pred)));
    }
    b->data[b->len] = '\0';
    return 0;
}

/* Decodes one row at *p; false when malformed. */
static bool decode_row(const unsigned char **p, const unsigned char *end, uint64_t period,
                       uint32_t *prev, struct rt_store_row *r)
{
    uint64_t delta, tag, zz;
    if (!rt__store_get_uvarint(p, end, &delta) || delta > UINT32_MAX - *prev)
        return false;
    r->stack_id = *prev + (uint32_t)delta;
    *prev = r->stack_id;
    if (!rt__store_get_uvarint(p, end, &tag))
        return false;
    int64_t pred = 0;
    if (tag & 1) {
        if (tag != 1 || end - *p < 8)
            return false;
        uint64_t bits = 0;
        for (int k = 0; k < 8; k++)
            bits |= (uint64_t)(*p)[k] << (8 * k);
        *p += 8;
        memcpy(&r->samples, &bits, sizeof(bits));
    } else {
        uint64_t s = tag >> 1;
        r->samples = (double)s;
        pred = predict(s, (int64_t)period);
    }
    if (!rt__store_get_uvarint(p, end, &zz))
        return false;
    r->value_ns = (int64_t)((uint64_t)unzigzag(zz) + (uint64_t)pred);
    return true;
}

/* Rows decoded SHORT_RUN at a time when they are all short (short_run). */
#define SHORT_RUN 8

/* Decodes the short row at p: three one-byte varints (id step, an even tag, the value's
 * zigzag offset from count x period), as the caller checked. */
static inline void short_row(const unsigned char *p, uint32_t *prev, int64_t period,
                             struct rt_store_row *r)
{
    uint64_t s = (uint64_t)p[1] >> 1;
    r->stack_id = *prev = *prev + p[0];
    r->samples = (double)s;
    r->value_ns = unzigzag(p[2]) + (int64_t)s * period;
}

/* Whether the SHORT_RUN rows at p (3 * SHORT_RUN readable bytes) are all three one-byte
 * varints with an even (integral count) tag: one test of the 24 bytes' high bits and one of
 * the eight tags' low bits, read as three little-endian words. */
static inline bool short_run(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w0, w1, w2;
    memcpy(&w0, p, 8);
    memcpy(&w1, p + 8, 8);
    memcpy(&w2, p + 16, 8);
    /* the tags: bytes 1, 4, 7 | 10, 13 | 16, 19, 22 */
    const uint64_t t0 = 1ull << 8 | 1ull << 32 | 1ull << 56, t1 = 1ull << 16 | 1ull << 40,
                   t2 = 1ull | 1ull << 24 | 1ull << 48;
    return !((w0 | w1 | w2) & 0x8080808080808080ull) && !((w0 & t0) | (w1 & t1) | (w2 & t2));
#else
    (void)p;
    return false;
#endif
}

int rt__store_decode_rows(const void *blob, size_t n, struct rt_store_row **rows, size_t *cap,
                          size_t *nrows)
{
    const unsigned char *p = blob, *end = p + n;
    uint64_t period, count;
    if (n < 1 || *p++ != ROWS_FORMAT || !rt__store_get_uvarint(&p, end, &period) ||
        period > INT64_MAX || !rt__store_get_uvarint(&p, end, &count))
        return RT_EMALFORMED;
    if (count > (uint64_t)(end - p) / 3) /* a row takes at least 3 bytes */
        return RT_EMALFORMED;
    if (count > *cap) {
        struct rt_store_row *r = realloc(*rows, (size_t)count * sizeof(*r));
        if (!r)
            return RT_ENOMEM;
        *rows = r;
        *cap = (size_t)count;
    }
    uint32_t prev = 0;
    /* Most rows are three one-byte varints: a small id step, a count under 64 and a value
     * within -64..63 of count x period (a CPU profile's is exactly that). Those are decoded
     * at once (one test for the three high bits and the tag's), eight at a time where eight
     * such rows follow one another, the same values decode_row gives; the rest goes through
     * decode_row. */
    bool small_period = period > 0 && period <= INT64_MAX / 64;
    struct rt_store_row *r = *rows;
    for (size_t i = 0; i < count;) {
        if (small_period && count - i >= SHORT_RUN && end - p >= 3 * SHORT_RUN &&
            prev <= UINT32_MAX - SHORT_RUN * 127u && short_run(p)) {
            for (int j = 0; j < SHORT_RUN; j++, p += 3)
                short_row(p, &prev, (int64_t)period, &r[i++]);
        } else if (small_period && end - p >= 3 && !((p[0] | p[1] | p[2]) & 0x80) &&
                   !(p[1] & 1) && p[0] <= UINT32_MAX - prev) {
            short_row(p, &prev, (int64_t)period, &r[i++]);
            p += 3;
        } else if (!decode_row(&p, end, period, &prev, &r[i++])) {
            return RT_EMALFORMED;
        }
    }
    if (p != end)
        return RT_EMALFORMED;
    *nrows = (size_t)count;
    return 0;
}
