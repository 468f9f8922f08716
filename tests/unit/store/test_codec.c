/* Tests of the store's encodings (server/src/store/store_codec.c) and of the frame/stack
 * dictionary (server/src/store/store_dict.c). */
#include <stdint.h>
#include <stdlib.h>

#include "rt/str.h"
#include "store/store_int.h"
#include "test.h"

static void test_varint(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX};
    CHECK_INT(rt_buf_reserve(&b, 10 * 7), 0);
    for (size_t i = 0; i < 7; i++)
        rt__store_put_uvarint(&b, vals[i]);
    CHECK_INT(b.len, 1 + 1 + 1 + 2 + 2 + 5 + 10);
    const unsigned char *p = (const unsigned char *)b.data, *end = p + b.len;
    for (size_t i = 0; i < 7; i++) {
        uint64_t v = 0;
        CHECK(rt__store_get_uvarint(&p, end, &v));
        CHECK(v == vals[i]);
    }
    uint64_t v;
    CHECK(!rt__store_get_uvarint(&p, end, &v)); /* at the end */
    const unsigned char trunc[] = {0x80, 0x80};
    p = trunc;
    CHECK(!rt__store_get_uvarint(&p, trunc + 2, &v));
    rt_buf_cleanup(&b);
}

static void test_stack_codec(void)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    uint32_t frames[] = {1, 200, 70000, UINT32_MAX};
    CHECK_INT(rt__store_encode_stack(&b, frames, 4), 0);
    CHECK_INT(b.len, 1 + 2 + 3 + 5);
    uint32_t *out = NULL;
    size_t depth = 0;
    CHECK_INT(rt__store_decode_stack(b.data, b.len, &out, &depth), 0);
    CHECK_INT(depth, 4);
    CHECK(out && memcmp(out, frames, sizeof(frames)) == 0);
    free(out);
    /* same frames, same hash; other frames, other hash */
    uint64_t h1 = rt__store_stack_hash(b.data, b.len);
    uint32_t other[] = {1, 200, 70000};
    struct rt_buf b2;
    rt_buf_init(&b2, 0);
    CHECK_INT(rt__store_encode_stack(&b2, other, 3), 0);
    CHECK(rt__store_stack_hash(b2.data, b2.len) != h1);
    /* malformed: a truncated varint, an id beyond 32 bits */
    CHECK_INT(rt__store_decode_stack(b.data, b.len - 1, &out, &depth), RT_EMALFORMED);
    const unsigned char big[] = {0xff, 0xff, 0xff, 0xff, 0x7f};
    CHECK_INT(rt__store_decode_stack(big, sizeof(big), &out, &depth), RT_EMALFORMED);
    rt_buf_cleanup(&b);
    rt_buf_cleanup(&b2);
}

/* The stack encoder's one- and two-byte steps write the bytes of rt__store_put_uvarint: every
 * id on each side of a varint length's edge, in stacks where the lengths follow one another
 * in every order (the steps share one output pointer), and the buffer's length. */
static void test_stack_codec_matches_varints(void)
{
    const uint32_t edges[] = {0x7f, 0x3fff, 0x1fffff, 0xfffffff};
    uint32_t ids[32];
    size_t n = 0;
    ids[n++] = 0;
    ids[n++] = UINT32_MAX;
    for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
        ids[n++] = edges[e] - 1;
        ids[n++] = edges[e];
        ids[n++] = edges[e] + 1;
    }
    struct rt_buf got, want;
    rt_buf_init(&got, 0);
    rt_buf_init(&want, 0);
    for (size_t a = 0; a < n; a++)
        for (size_t c = 0; c < n; c++) {
            uint32_t frames[3] = {ids[a], ids[c], ids[a]};
            CHECK_INT(rt__store_encode_stack(&got, frames, 3), 0);
            want.len = 0;
            CHECK_INT(rt_buf_reserve(&want, 3 * 10), 0);
            for (size_t k = 0; k < 3; k++)
                rt__store_put_uvarint(&want, frames[k]);
            CHECK_INT(got.len, want.len);
            CHECK(memcmp(got.data, want.data, want.len) == 0);
        }
    rt_buf_cleanup(&got);
    rt_buf_cleanup(&want);
}

static void test_rows_codec(void)
{
    struct rt_store_row rows[] = {
        {9, 3, 30000000},           /* count x period: value costs one byte */
        {2, 2.5, 25000001},         /* fractional samples */
        {9, 1, 10000000},           /* merged with the first */
        {UINT32_MAX, 0, -7},        /* zero samples, negative value */
        {5, 1e300, INT64_MAX},      /* beyond the integral form */
        {4, -1, INT64_MIN},         /* negative samples */
        {7, 4503599627370495.0, 1}, /* largest integral varint, value overflows the prediction */
    };
    size_t n = sizeof(rows) / sizeof(rows[0]);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt__store_encode_rows(&b, rows, &n, 10000000), 0);
    CHECK_INT(n, 6);
    struct rt_store_row *out = NULL;
    size_t cap = 0, m = 0;
    CHECK_INT(rt__store_decode_rows(b.data, b.len, &out, &cap, &m), 0);
    CHECK_INT(m, 6);
    struct rt_store_row want[] = {{2, 2.5, 25000001}, {4, -1, INT64_MIN},
                                  {5, 1e300, INT64_MAX}, {7, 4503599627370495.0, 1},
                                  {9, 4, 40000000}, {UINT32_MAX, 0, -7}};
    for (size_t i = 0; i < 6 && i < m; i++) {
        CHECK_INT(out[i].stack_id, want[i].stack_id);
        CHECK(out[i].samples == want[i].samples);
        CHECK_INT(out[i].value_ns, want[i].value_ns);
    }
    /* compactness: integral count x period rows cost 3 bytes each for small ids */
    struct rt_store_row simple[100];
    for (uint32_t i = 0; i < 100; i++)
        simple[i] = (struct rt_store_row){i + 1, 5, 50000000};
    n = 100;
    CHECK_INT(rt__store_encode_rows(&b, simple, &n, 10000000), 0);
    CHECK(b.len <= 1 + 4 + 1 + 300);
    /* malformed blobs are refused, not read past their end */
    CHECK_INT(rt__store_decode_rows(b.data, b.len - 1, &out, &cap, &m), RT_EMALFORMED);
    CHECK_INT(rt__store_decode_rows("", 0, &out, &cap, &m), RT_EMALFORMED);
    const unsigned char bad_version[] = {2, 0, 0};
    CHECK_INT(rt__store_decode_rows(bad_version, 3, &out, &cap, &m), RT_EMALFORMED);
    const unsigned char huge_count[] = {1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3};
    CHECK_INT(rt__store_decode_rows(huge_count, sizeof(huge_count), &out, &cap, &m),
              RT_EMALFORMED);
    /* equal stacks whose values merge past int64 are refused, not wrapped */
    struct rt_store_row twice[] = {{3, 1, INT64_MAX - 5}, {3, 1, 6}, {1, 1, 1}};
    n = 3;
    CHECK_INT(rt__store_encode_rows(&b, twice, &n, 10000000), RT_ETOOBIG);
    struct rt_store_row down[] = {{3, 1, INT64_MIN + 5}, {3, 1, -6}};
    n = 2;
    CHECK_INT(rt__store_encode_rows(&b, down, &n, 10000000), RT_ETOOBIG);
    /* a sum that fits is kept whatever the order of its terms (past INT64_MAX on the way) */
    struct rt_store_row fits[] = {{3, 1, INT64_MAX - 6}, {3, 1, 9}, {9, 1, 1}, {3, 1, -3}};
    n = 4;
    CHECK_INT(rt__store_encode_rows(&b, fits, &n, 10000000), 0);
    CHECK_INT(n, 2);
    CHECK_INT(rt__store_decode_rows(b.data, b.len, &out, &cap, &m), 0);
    CHECK_INT(m, 2);
    CHECK(m == 2 && out[0].value_ns == INT64_MAX && out[0].samples == 3);
    CHECK(m == 2 && out[1].stack_id == 9 && out[1].value_ns == 1);
    /* empty profile */
    n = 0;
    CHECK_INT(rt__store_encode_rows(&b, NULL, &n, 0), 0);
    CHECK_INT(rt__store_decode_rows(b.data, b.len, &out, &cap, &m), 0);
    CHECK_INT(m, 0);
    free(out);
    rt_buf_cleanup(&b);
}

/* Rows round-trip exactly around the edges of the decoder's three-byte path (an id step of
 * 127, a count of 63, a value off count x period by -64..63, a period up to INT64_MAX / 64)
 * and just past them, where rows go through the varint path: every period, count and offset
 * combined, in one blob per period. */
static void test_rows_round_trip_at_the_fast_path_edges(void)
{
    const int64_t periods[] = {0, 1, 10000000, INT64_MAX / 64, INT64_MAX / 64 + 1, INT64_MAX};
    const double counts[] = {0, 1, 63, 64, 2.5, 1e6};
    const int64_t offs[] = {0, -64, 63, 64, -65, 1000000, INT64_MIN / 2};
    const uint32_t steps[] = {1, 127, 128, 300, 0x7fffffff};
    enum { NC = 6, NO = 7, N = 6 * 7 * 5 };
    struct rt_store_row rows[N], want[N];
    struct rt_buf b;
    rt_buf_init(&b, 0);
    struct rt_store_row *out = NULL;
    size_t cap = 0, got_any = 0;
    for (size_t pi = 0; pi < sizeof(periods) / sizeof(periods[0]); pi++) {
        uint32_t id = 0;
        size_t n = 0;
        for (size_t si = 0; si < 5; si++)
            for (size_t ci = 0; ci < NC; ci++)
                for (size_t oi = 0; oi < NO; oi++) {
                    uint32_t step = steps[(si + ci + oi) % 5];
                    if (id > UINT32_MAX - step)
                        continue;
                    id += step;
                    uint64_t pred = (uint64_t)counts[ci] * (uint64_t)periods[pi];
                    rows[n] = (struct rt_store_row){id, counts[ci],
                                                    (int64_t)(pred + (uint64_t)offs[oi])};
                    want[n] = rows[n];
                    n++;
                }
        size_t m = n, got = 0;
        CHECK(n > 100);
        CHECK_INT(rt__store_encode_rows(&b, rows, &m, periods[pi]), 0);
        CHECK_INT(m, n);
        CHECK_INT(rt__store_decode_rows(b.data, b.len, &out, &cap, &got), 0);
        CHECK_INT(got, n);
        for (size_t i = 0; i < n && i < got; i++) {
            CHECK_INT(out[i].stack_id, want[i].stack_id);
            CHECK(out[i].samples == want[i].samples);
            CHECK_INT(out[i].value_ns, want[i].value_ns);
        }
    }
    /* a step past UINT32_MAX is refused on either path: a long one, then a one-byte one */
    const unsigned char over[] = {1, 0, 2, 0x7f, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 2, 0};
    CHECK_INT(rt__store_decode_rows(over, sizeof(over), &out, &cap, &got_any), RT_EMALFORMED);
    const unsigned char over1[] = {1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 2, 0, 1, 2, 0};
    CHECK_INT(rt__store_decode_rows(over1, sizeof(over1), &out, &cap, &got_any), RT_EMALFORMED);
    free(out);
    rt_buf_cleanup(&b);
}

/* Decodes blob b and checks its n rows against want. */
static void check_decoded(const struct rt_buf *b, const struct rt_store_row *want, size_t n)
{
    struct rt_store_row *out = NULL;
    size_t cap = 0, got = 0;
    CHECK_INT(rt__store_decode_rows(b->data, b->len, &out, &cap, &got), 0);
    CHECK_INT(got, n);
    for (size_t i = 0; i < n && i < got; i++) {
        CHECK_INT(out[i].stack_id, want[i].stack_id);
        CHECK(out[i].samples == want[i].samples);
        CHECK_INT(out[i].value_ns, want[i].value_ns);
    }
    free(out);
}

/* The decoder takes eight three-byte rows at once (a CPU profile's usual rows). Runs of 1-25
 * such rows, then runs of 24 with one row at each position that is not three bytes or not an
 * integral count (an id step of 128, a count of 64, a value 64 off count x period, a count of
 * 2.5 whose eight bytes have no high bit), decode to the rows encoded; an id that would pass
 * UINT32_MAX inside a run is refused. */
static void test_rows_in_runs_of_eight(void)
{
    const int64_t period = 10000000;
    struct rt_store_row rows[32], want[32];
    struct rt_buf b;
    rt_buf_init(&b, 0);
    for (size_t odd = 0; odd <= 4; odd++)
        for (size_t at = 0; at < (odd ? 24 : 1); at++)
            for (size_t n = odd ? 24 : 1; n <= (odd ? 24 : 25); n++) {
                uint32_t id = 0;
                for (size_t i = 0; i < n; i++) {
                    double count = (double)(i % 64);
                    int64_t off = (int64_t)(i % 7) - 3;
                    uint32_t step = 1 + (uint32_t)(i * 37 % 127);
                    if (i == at && odd == 1)
                        step = 128;
                    if (i == at && odd == 2)
                        count = 64;
                    if (i == at && odd == 3)
                        off = 64;
                    if (i == at && odd == 4)
                        count = 2.5;
                    id += step;
                    /* a fractional count's value is stored as is: small, so that its bytes
                     * (2.5 is 00 00 00 00 00 00 04 40) have no high bit either */
                    int64_t value = count == 2.5 ? 5 : (int64_t)(count * (double)period) + off;
                    rows[i] = (struct rt_store_row){id, count, value};
                    want[i] = rows[i];
                }
                size_t m = n;
                CHECK_INT(rt__store_encode_rows(&b, rows, &m, period), 0);
                CHECK_INT(m, n);
                /* format, period (4 bytes), count: then three bytes a row, but the odd one */
                if (odd)
                    CHECK(b.len > 6 + 3 * n);
                else
                    CHECK_INT(b.len, 6 + 3 * n);
                check_decoded(&b, want, n);
            }
    /* eight steps of 127 from UINT32_MAX - 8 x 127 end at UINT32_MAX; from one more, the last
     * passes it and the blob is refused */
    for (uint32_t first = UINT32_MAX - 8 * 127; first <= UINT32_MAX - 8 * 127 + 1; first++) {
        unsigned char blob[64] = {1, 1, 9}; /* format, period 1 ns, 9 rows */
        size_t len = 3;
        uint32_t v = first;
        for (; v >= 0x80; v >>= 7)
            blob[len++] = (unsigned char)(v | 0x80);
        blob[len++] = (unsigned char)v;
        blob[len++] = 2; /* count 1 */
        blob[len++] = 0; /* value 1 x period */
        for (int i = 0; i < 8; i++) {
            blob[len++] = 127;
            blob[len++] = 2;
            blob[len++] = 0;
        }
        struct rt_store_row *out = NULL;
        size_t cap = 0, got = 0;
        int rc = rt__store_decode_rows(blob, len, &out, &cap, &got);
        CHECK_INT(rc, first == UINT32_MAX - 8 * 127 ? 0 : RT_EMALFORMED);
        if (!rc)
            CHECK(got == 9 && out[8].stack_id == UINT32_MAX && out[8].value_ns == 1);
        free(out);
    }
    rt_buf_cleanup(&b);
}

struct keyed {
    struct rt_store_row row;
    size_t pos; /* position in the upload */
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->row.stack_id != y->row.stack_id)
        return x->row.stack_id < y->row.stack_id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Many rows (the radix sort's path): ids spread over all four bytes, repeated, with fractional
 * samples whose sum depends on the order of addition. The stored rows must be those of a
 * stable sort by id followed by the merge, summing each id's rows in upload order. */
static void test_rows_sort_is_stable(void)
{
    enum { N = 5000 };
    static struct rt_store_row rows[N], ref[N];
    uint64_t x = 42;
    for (size_t i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t id = (uint32_t)(x >> 40) % 700 * 6151u + (i % 3 ? 0 : 0x01000000u);
        rows[i] = (struct rt_store_row){id, (double)(x >> 11) / 9007199254740992.0 * 1e-3 + 1,
                                        (int64_t)(x >> 45)};
        ref[i] = rows[i];
    }
    /* the reference: qsort by (id, upload position), stable by construction, then the merge
     * in that order */
    static struct keyed kr[N];
    for (size_t i = 0; i < N; i++)
        kr[i] = (struct keyed){ref[i], i};
    qsort(kr, N, sizeof(*kr), cmp_keyed);
    for (size_t i = 0; i < N; i++)
        ref[i] = kr[i].row;
    size_t nref = 0;
    for (size_t i = 0; i < N; i++) {
        if (nref && ref[nref - 1].stack_id == ref[i].stack_id) {
            ref[nref - 1].samples += ref[i].samples;
            ref[nref - 1].value_ns += ref[i].value_ns;
        } else {
            ref[nref++] = ref[i];
        }
    }
    struct rt_buf b;
    rt_buf_init(&b, 0);
    size_t n = N;
    CHECK_INT(rt__store_encode_rows(&b, rows, &n, 0), 0);
    CHECK_INT(n, nref);
    struct rt_store_row *out = NULL;
    size_t cap = 0, m = 0;
    CHECK_INT(rt__store_decode_rows(b.data, b.len, &out, &cap, &m), 0);
    CHECK_INT(m, nref);
    size_t same = 0;
    for (size_t i = 0; i < m && i < nref; i++)
        same += out[i].stack_id == ref[i].stack_id && out[i].samples == ref[i].samples &&
                out[i].value_ns == ref[i].value_ns;
    CHECK_INT(same, nref);
    CHECK(nref > 1000 && nref < N); /* the data did repeat ids */
    free(out);
    rt_buf_cleanup(&b);
}

/* rt__store_dict_find_stack for frames[0..depth), encoded as the backends encode them. */
static int64_t find_stack(const struct rt__store_dict *d, const uint32_t *frames, size_t depth,
                          uint64_t h)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int64_t id = rt__store_encode_stack(&b, frames, depth)
                     ? -2
                     : rt__store_dict_find_stack(d, b.data, b.len, h);
    rt_buf_cleanup(&b);
    return id;
}

/* Frame i of stack id in d, or -1 when d does not hold it (or holds fewer frames). */
static long long stack_frame(const struct rt__store_dict *d, uint32_t id, size_t i)
{
    uint32_t frames[64];
    size_t depth;
    if (rt__store_dict_stack(d, id, frames, 64, &depth) || i >= depth)
        return -1;
    return frames[i];
}

static void test_dict(void)
{
    struct rt__store_dict d;
    rt__store_dict_init(&d, true);
    CHECK(rt__store_dict_frame_name(&d, 1) == NULL);
    CHECK_INT(rt__store_dict_find_frame(&d, "a", 1, rt_hash("a", 1)), -1);
    /* many entries: names handed out earlier stay valid as the dictionary grows */
    const char *first = NULL;
    char name[32];
    for (uint32_t id = 1; id <= 20000; id++) {
        int len = snprintf(name, sizeof(name), "frame.%u", id);
        CHECK_INT(rt__store_dict_add_frame(&d, id, name, (size_t)len, rt_hash(name, (size_t)len)),
                  0);
        uint32_t frames[3] = {1, id, id};
        CHECK_INT(rt__store_dict_add_stack(&d, id, frames, 3, id * 7919u), 0);
        if (id == 1)
            first = rt__store_dict_frame_name(&d, 1);
    }
    CHECK(first == rt__store_dict_frame_name(&d, 1));
    CHECK_STR(first, "frame.1");
    CHECK_INT(stack_frame(&d, 1, 0), 1);
    CHECK_INT(stack_frame(&d, 20000, 2), 20000);
    CHECK_INT(rt__store_dict_find_frame(&d, "frame.777", 9, rt_hash("frame.777", 9)), 777);
    uint32_t f[3] = {1, 555, 555};
    CHECK_INT(find_stack(&d, f, 3, 555 * 7919u), 555);
    CHECK_INT(find_stack(&d, f, 2, 555 * 7919u), -1);
    /* adding a known id is a no-op */
    CHECK_INT(rt__store_dict_add_frame(&d, 5, "other", 5, rt_hash("other", 5)), 0);
    CHECK_STR(rt__store_dict_frame_name(&d, 5), "frame.5");

    /* merge: pending entries copied, known ones skipped */
    struct rt__store_dict p;
    rt__store_dict_init(&p, false);
    CHECK_INT(rt__store_dict_add_frame(&p, 30000, "new", 3, rt_hash("new", 3)), 0);
    CHECK_INT(rt__store_dict_add_frame(&p, 7, "frame.7", 7, rt_hash("frame.7", 7)), 0);
    uint32_t sf[1] = {30000};
    CHECK_INT(rt__store_dict_add_stack(&p, 30001, sf, 1, 42), 0);
    CHECK(rt__store_dict_frame_name(&p, 30000) == NULL); /* no id index */
    CHECK_INT(rt__store_dict_find_frame(&p, "new", 3, rt_hash("new", 3)), 30000);
    CHECK_INT(rt__store_dict_merge(&d, &p), 0);
    rt__store_dict_cleanup(&p);
    CHECK_STR(rt__store_dict_frame_name(&d, 30000), "new");
    CHECK_INT(stack_frame(&d, 30001, 0), 30000);
    CHECK_INT(stack_frame(&d, 30001, 1), -1); /* one frame */
    CHECK_INT(d.nframes, 20001);
    rt__store_dict_cleanup(&d);
}

/* The id indexes' memory follows the ids cached, not the largest: a store that has made 4
 * billion stacks caches its newest ones in a page or two, not in a 16 GiB index (a direct
 * index by id took 4 bytes per id below the largest, past any bound). Ids spread over the
 * whole range cost a page (16 KiB) each, counted in rt__store_dict_bytes, which the store's
 * bound reads (docs/internals/store.md). */
static void test_dict_large_ids(void)
{
    struct rt__store_dict d;
    rt__store_dict_init(&d, true);
    const uint32_t big = UINT32_MAX - 10;
    char name[32];
    for (uint32_t i = 0; i < 1000; i++) { /* the newest 1,000 ids, near the top */
        int len = snprintf(name, sizeof(name), "f.%u", big - i);
        CHECK_INT(rt__store_dict_add_frame(&d, big - i, name, (size_t)len,
                                           rt_hash(name, (size_t)len)), 0);
        uint32_t frames[2] = {big - i, big - i};
        CHECK_INT(rt__store_dict_add_stack(&d, big - i, frames, 2,
                                           rt_hash(frames, sizeof(frames))), 0);
    }
    CHECK_STR(rt__store_dict_frame_name(&d, big), "f.4294967285");
    CHECK_INT(stack_frame(&d, big - 999, 1), big - 999);
    CHECK_INT(stack_frame(&d, big - 1000, 0), -1);
    CHECK(rt__store_dict_frame_name(&d, 7) == NULL);
    CHECK_INT(rt__store_dict_add_frame(&d, big, "other", 5, rt_hash("other", 5)), 0); /* known */
    CHECK_INT(d.nframes, 1000);
    /* two pages per index (the 1,000 ids straddle a page's end) and the directories of 2^20
     * pointers: under 20 MiB, against 32 GiB for two direct indexes */
    size_t bytes = rt__store_dict_bytes(&d);
    CHECK(bytes < ((size_t)20 << 20));
    /* ids spread over the range: a page each, all counted */
    for (uint32_t i = 1; i <= 100; i++) {
        uint32_t id = i * 40000000u;
        uint32_t frames[1] = {id};
        CHECK_INT(rt__store_dict_add_stack(&d, id, frames, 1, rt_hash(frames, sizeof(frames))),
                  0);
    }
    CHECK_INT(stack_frame(&d, 4000000000u, 0), 4000000000u);
    CHECK(rt__store_dict_bytes(&d) >= bytes + 100 * RT__STORE_ID_PAGE * sizeof(uint32_t));
    rt__store_dict_cleanup(&d);
}

/* Stacks are kept as varints: a byte per frame id under 128, five for the largest ids; read
 * back whole, refused past the caller's room, told apart from their prefixes and extensions. */
static void test_dict_stack_varints(void)
{
    struct rt__store_dict d;
    rt__store_dict_init(&d, true);
    uint32_t small[4] = {1, 2, 127, 3}, large[3] = {UINT32_MAX - 1, 128, 16384};
    CHECK_INT(rt__store_dict_add_stack(&d, 1, small, 4, 11), 0);
    CHECK_INT(rt__store_dict_add_stack(&d, 2, large, 3, 11), 0); /* the same hash */
    CHECK_INT(rt__store_dict_add_stack(&d, 3, NULL, 0, 12), 0);  /* no frames */
    CHECK_INT(d.stacks[0].nbytes, 4);
    CHECK_INT(d.stacks[1].nbytes, 5 + 2 + 3);
    CHECK_INT(d.stacks[2].nbytes, 0);
    uint32_t out[4];
    size_t depth = 99;
    CHECK_INT(rt__store_dict_stack(&d, 2, out, 4, &depth), 0);
    CHECK_INT(depth, 3);
    CHECK(memcmp(out, large, sizeof(large)) == 0);
    CHECK_INT(rt__store_dict_stack(&d, 1, out, 3, &depth), RT_ETOOBIG);
    CHECK_INT(rt__store_dict_stack(&d, 4, out, 4, &depth), RT_ENOTFOUND);
    CHECK_INT(rt__store_dict_stack(&d, 3, out, 4, &depth), 0);
    CHECK_INT(depth, 0);
    CHECK_INT(find_stack(&d, small, 4, 11), 1);
    CHECK_INT(find_stack(&d, large, 3, 11), 2);
    CHECK_INT(find_stack(&d, small, 3, 11), -1); /* a prefix */
    uint32_t longer[5] = {1, 2, 127, 3, 4};
    CHECK_INT(find_stack(&d, longer, 5, 11), -1); /* an extension */
    CHECK_INT(find_stack(&d, NULL, 0, 12), 3);
    /* the cost of a stack is what it takes, varints included */
    CHECK_INT(rt__store_dict_stack_cost(10), sizeof(struct rt__store_stack) + 26);
    /* a stack added by its encoding is the same stack */
    struct rt_buf b;
    rt_buf_init(&b, 0);
    uint32_t other[2] = {300, 5};
    CHECK_INT(rt__store_encode_stack(&b, other, 2), 0);
    CHECK_INT(rt__store_dict_add_stack_enc(&d, 9, b.data, b.len, 13), 0);
    rt_buf_cleanup(&b);
    CHECK_INT(stack_frame(&d, 9, 0), 300);
    CHECK_INT(stack_frame(&d, 9, 1), 5);
    CHECK_INT(find_stack(&d, other, 2, 13), 9);
    /* a merge copies the varints */
    struct rt__store_dict m;
    rt__store_dict_init(&m, true);
    CHECK_INT(rt__store_dict_merge(&m, &d), 0);
    CHECK_INT(rt__store_dict_stack(&m, 2, out, 4, &depth), 0);
    CHECK(depth == 3 && memcmp(out, large, sizeof(large)) == 0);
    CHECK_INT(find_stack(&m, small, 4, 11), 1);
    rt__store_dict_cleanup(&m);
    rt__store_dict_cleanup(&d);
}

int main(void)
{
    RUN(test_dict_stack_varints);
    RUN(test_varint);
    RUN(test_stack_codec);
    RUN(test_stack_codec_matches_varints);
    RUN(test_rows_codec);
    RUN(test_rows_round_trip_at_the_fast_path_edges);
    RUN(test_rows_in_runs_of_eight);
    RUN(test_rows_sort_is_stable);
    RUN(test_dict);
    RUN(test_dict_large_ids);
    return TEST_DONE();
}
