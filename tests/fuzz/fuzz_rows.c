/* Fuzz target: the store's rows blob decoder (rt__store_decode_rows, its three-byte path and
 * its varint one) on arbitrary bytes. Besides crashes it aborts when:
 * - its answer (accepted or not, and every row) differs from a plain decoder of the format
 *   written here from docs/internals/store.md, byte by byte;
 * - a blob it accepts whose ids ascend strictly does not come back the same from
 *   rt__store_encode_rows and a second decode: to the bit, but for a count of -0, which
 *   comes back as 0 (the encoder writes it as the integer);
 * - a blob it accepts whose ids repeat or descend is not encoded either as its distinct ids,
 *   ascending, each with the sum of its values, or refused with RT_ETOOBIG exactly when one
 *   of those sums leaves int64 (the ingest's bounds keep them in range; a blob's need not). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = ((const struct rt_store_row *)a)->stack_id;
    uint32_t y = ((const struct rt_store_row *)b)->stack_id;
    return x < y ? -1 : x > y;
}

/* rows[0..n) (ids not strictly ascending) through the encoder's sort and merge, against the
 * same merge done here in 128-bit sums. */
static void merged_again(const struct rt_store_row *rows, size_t n)
{
    struct rt_store_row *mine = malloc(n * sizeof(*mine)), *got = malloc(n * sizeof(*got));
    __int128 *sum = malloc(n * sizeof(*sum));
    if (!mine || !got || !sum)
        abort();
    memcpy(mine, rows, n * sizeof(*mine));
    memcpy(got, rows, n * sizeof(*got));
    qsort(mine, n, sizeof(*mine), cmp_id);
    size_t k = 0;
    bool over = false;
    for (size_t i = 0; i < n; i++) {
        if (i && mine[i].stack_id == mine[k - 1].stack_id) {
            sum[k - 1] += mine[i].value_ns;
        } else {
            mine[k] = mine[i];
            sum[k++] = mine[i].value_ns;
        }
    }
    for (size_t i = 0; i < k; i++)
        over = over || sum[i] > INT64_MAX || sum[i] < INT64_MIN;
    struct rt_buf b;
    rt_buf_init(&b, 0);
    size_t kept = n;
    int rc = rt__store_encode_rows(&b, got, &kept, 0);
    if (rc != (over ? RT_ETOOBIG : 0) || (!over && kept != k))
        abort();
    for (size_t i = 0; !over && i < k; i++)
        if (got[i].stack_id != mine[i].stack_id || got[i].value_ns != (int64_t)sum[i])
            abort();
    rt_buf_cleanup(&b);
    free(mine);
    free(got);
    free(sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A varint at *p, byte by byte (at most 10 bytes, the bits past 64 dropped). */
static bool ref_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (unsigned i = 0; i < 10 && *p < end; i++) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The format, decoded the plain way: 0 and the rows in out (n of them), or -1. */
static int ref_decode(const uint8_t *p, size_t size, struct rt_store_row *out, size_t *n)
{
    const uint8_t *end = p + size;
    uint64_t period, count;
    if (size < 1 || *p++ != 1 || !ref_varint(&p, end, &period) || period > INT64_MAX ||
        !ref_varint(&p, end, &count) || count > (uint64_t)(end - p) / 3)
        return -1;
    uint64_t id = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t delta, tag, zz;
        if (!ref_varint(&p, end, &delta) || delta > UINT32_MAX - id)
            return -1;
        id += delta;
        if (!ref_varint(&p, end, &tag))
            return -1;
        uint64_t pred = 0;
        if (tag == 1) {
            if (end - p < 8)
                return -1;
            uint64_t bits = 0;
            for (int k = 0; k < 8; k++)
                bits |= (uint64_t)p[k] << (8 * k);
            p += 8;
            memcpy(&out[i].samples, &bits, sizeof(bits));
        } else if (tag & 1) {
            return -1;
        } else {
            uint64_t s = tag >> 1;
            int64_t prod;
            out[i].samples = (double)s;
            if (period > 0 && s <= INT64_MAX &&
                !__builtin_mul_overflow((int64_t)s, (int64_t)period, &prod))
                pred = (uint64_t)prod;
        }
        if (!ref_varint(&p, end, &zz))
            return -1;
        uint64_t delta_v = (zz >> 1) ^ (0 - (zz & 1)); /* zigzag, as two's complement bits */
        out[i].stack_id = (uint32_t)id;
        out[i].value_ns = (int64_t)(delta_v + pred);
    }
    *n = (size_t)count;
    return p == end ? 0 : -1;
}

static bool same_row(const struct rt_store_row *a, const struct rt_store_row *b)
{
    return a->stack_id == b->stack_id && a->value_ns == b->value_ns &&
           memcmp(&a->samples, &b->samples, sizeof(double)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rt_store_row *rows = NULL, *again = NULL;
    struct rt_store_row *want = malloc((size / 3 + 1) * sizeof(*want));
    size_t cap = 0, n = 0, cap2 = 0, n2 = 0, nwant = 0;
    if (!want)
        return 0;
    int rc = rt__store_decode_rows(data, size, &rows, &cap, &n);
    int ref = ref_decode(data, size, want, &nwant);
    if ((rc == 0) != (ref == 0) || (rc == 0 && n != nwant))
        abort();
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!same_row(&rows[i], &want[i]))
            abort();
    bool ascending = rc == 0 && size > 1;
    for (size_t i = 1; ascending && i < n; i++)
        ascending = rows[i].stack_id > rows[i - 1].stack_id;
    if (ascending) {
        /* the period, as the decoder read it: the varint after the format byte */
        const unsigned char *p = data + 1;
        uint64_t period = 0;
        rt__store_get_uvarint(&p, data + size, &period);
        struct rt_buf b;
        rt_buf_init(&b, 0);
        size_t kept = n;
        if (rt__store_encode_rows(&b, rows, &kept, (int64_t)period) == 0) {
            if (kept != n || rt__store_decode_rows(b.data, b.len, &again, &cap2, &n2) != 0 ||
                n2 != kept)
                abort();
            for (size_t i = 0; i < kept; i++)
                if (again[i].stack_id != rows[i].stack_id ||
                    again[i].value_ns != rows[i].value_ns ||
                    (again[i].samples != rows[i].samples && /* -0 comes back as 0 */
                     memcmp(&again[i].samples, &rows[i].samples, sizeof(double)) != 0))
                    abort();
        }
        rt_buf_cleanup(&b);
    } else if (rc == 0 && n > 1) {
        merged_again(rows, n);
    }
    free(rows);
    free(again);
    free(want);
    return 0;
}
