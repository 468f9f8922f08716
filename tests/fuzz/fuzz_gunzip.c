/* Fuzz target: rt_ingest_gunzip under a small output limit, so corrupt, truncated,
 * multi-member and bomb-like streams all end in a bounded time; and against zlib's decoder
 * alone (rt__ingest_gunzip_zlib, what it falls back to): the two must give the same result
 * code, the same length and, on success, the same bytes, on failure the same message. The one
 * difference allowed is gzip.c's: a body zlib calls malformed that libdeflate decodes to
 * exactly its trailer's CRC-32 and length (a few invalid codes libdeflate is lenient on).
 *
 * Neither inflater is instrumented, so random bytes rarely make a stream that inflates far.
 * The first byte therefore picks how the body is made from the rest (a body starting with the
 * gzip magic is taken as is, with a 64 KiB limit, as the seeds are):
 *   bits 0-1: 0 the rest as is (with bit 6: the rest as a raw deflate stream between a gzip
 *             header and the trailer of what it decodes to, so that the two decoders' deflate
 *             differences are not hidden behind a CRC); 1 the rest gzipped; 2 gzipped with one byte
 *             flipped (position and mask from the rest's first bytes); 3 gzipped, then cut
 *             (bit 6 clear) or followed by a second member of the first half (bit 6 set);
 *   bits 2-4: the gzip level - 1;
 *   bit 5:    the output limit is the rest's length - 1 (else 64 KiB): the limit's edge;
 *   bit 7:    the member's header carries FEXTRA and FNAME fields, and with bit 6 (modes 1
 *             and 2) its CRC-16 (FHCRC). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <zlib.h>

#include "ingest/ingest_internal.h"
#include "rt/buf.h"
#include "rt/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gzip of p[0..n) at level into a new buffer (*len bytes; caller frees), or NULL. */
static unsigned char *gzip(const uint8_t *p, size_t n, int level, int fields, int hcrc,
                           size_t *len)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    gz_header h = {0};
    unsigned char extra[4] = {'R', 'T', 0, 0};
    if (fields) {
        h.extra = extra;
        h.extra_len = sizeof(extra);
        h.name = (Bytef *)"profile.pb";
        h.hcrc = hcrc;
        deflateSetHeader(&zs, &h);
    }
    size_t cap = deflateBound(&zs, n) + 64;
    unsigned char *out = malloc(cap);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int rc = out ? deflate(&zs, Z_FINISH) : Z_MEM_ERROR;
    *len = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

/* The raw deflate stream p[0..n) between a gzip header and the trailer (CRC-32, length) of
 * what libdeflate, else zlib, decodes it to within 64 KiB (else of p itself). */
static unsigned char *wrap_deflate(const uint8_t *p, size_t n, size_t *len)
{
    static unsigned char dec[64 * 1024];
    size_t got = 0;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    int ok = d && libdeflate_deflate_decompress(d, p, n, dec, sizeof(dec), &got) ==
                      LIBDEFLATE_SUCCESS;
    libdeflate_free_decompressor(d);
    z_stream zs = {0};
    if (!ok && inflateInit2(&zs, -15) == Z_OK) {
        zs.next_in = (Bytef *)p;
        zs.avail_in = (uInt)n;
        zs.next_out = dec;
        zs.avail_out = sizeof(dec);
        ok = inflate(&zs, Z_FINISH) == Z_STREAM_END;
        got = zs.total_out;
        inflateEnd(&zs);
    }
    uLong crc = ok ? crc32(0, dec, (uInt)got) : crc32(0, p, (uInt)n);
    size_t isize = ok ? got : n;
    unsigned char *b = malloc(n + 18);
    if (!b)
        return NULL;
    static const unsigned char head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    memcpy(b, head, 10);
    if (n)
        memcpy(b + 10, p, n);
    for (int i = 0; i < 4; i++) {
        b[10 + n + i] = (unsigned char)(crc >> (8 * i));
        b[14 + n + i] = (unsigned char)(isize >> (8 * i));
    }
    *len = n + 18;
    return b;
}

/* The body the first byte asks for (see the top); *limit set. NULL when nothing to test. */
static unsigned char *make_body(const uint8_t *data, size_t size, size_t *len, size_t *limit)
{
    uint8_t ctrl = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    *limit = (ctrl & 0x20) && n > 1 ? n - 1 : 64 * 1024;
    if ((ctrl & 3) == 0 && (ctrl & 0x40))
        return wrap_deflate(p, n, len);
    if ((ctrl & 3) == 0) {
        unsigned char *b = malloc(n ? n : 1);
        if (b && n)
            memcpy(b, p, n);
        *len = n;
        return b;
    }
    unsigned char *b = gzip(p, n, (ctrl >> 2 & 7) + 1, ctrl & 0x80,
                           (ctrl & 0x40) && (ctrl & 3) != 3, len);
    if (!b || (ctrl & 3) == 1)
        return b;
    size_t at = n >= 2 ? ((size_t)p[0] << 8 | p[1]) : 0;
    if ((ctrl & 3) == 2) {
        b[at % *len] ^= n >= 3 && p[2] ? p[2] : 0x01;
        return b;
    }
    if (!(ctrl & 0x40)) {
        *len = at % *len; /* cut */
        return b;
    }
    size_t len2;
    unsigned char *b2 = gzip(p, n / 2, 6, 0, 0, &len2);
    unsigned char *both = b2 ? realloc(b, *len + len2) : NULL;
    if (!both) {
        free(b);
        free(b2);
        return NULL;
    }
    memcpy(both + *len, b2, len2);
    *len += len2;
    free(b2);
    return both;
}

/* Whether zlib refused a body for one of the codes libdeflate decodes (gzip.c): only such a
 * refusal may differ from rt_ingest_gunzip's answer. */
static bool lenient_code(const char *zlib_msg)
{
    static const char *const codes[] = {
        "invalid literal/length code", "invalid distance code",
        "too many length or distance symbols", "invalid bit length repeat",
        "invalid code lengths set", "invalid literal/lengths set", "invalid distances set"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strstr(zlib_msg, codes[i]))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t len = size, limit = 64 * 1024;
    unsigned char *body = data[0] == 0x1f ? NULL : make_body(data, size, &len, &limit);
    const unsigned char *in = data[0] == 0x1f ? data : body;
    if (!in)
        return 0;
    struct rt_buf a, b;
    rt_buf_init(&a, limit);
    rt_buf_init(&b, limit);
    struct rt_error ea = {0}, eb = {0};
    int ra = rt_ingest_gunzip(in, len, &a, &ea);
    int rb = rt__ingest_gunzip_zlib(in, len, &b, &eb);
    bool same = ra == rb && a.len == b.len &&
                (ra == 0 ? a.len == 0 || memcmp(a.data, b.data, a.len) == 0
                         : strcmp(ea.msg, eb.msg) == 0);
    if (!same && ra == 0 && rb == RT_EMALFORMED && len >= 18 && lenient_code(eb.msg)) {
        const unsigned char *t = in + len - 8;
        uint32_t crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                       (uint32_t)t[3] << 24;
        uint32_t isize = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 |
                         (uint32_t)t[7] << 24;
        same = a.len == isize && crc32(0, (const Bytef *)a.data, (uInt)a.len) == crc;
    }
    if (!same) {
        fprintf(stderr, "gunzip %d (%s, %zu bytes) but zlib alone %d (%s, %zu bytes)\n", ra,
                ea.msg, a.len, rb, eb.msg, b.len);
        abort();
    }
    rt_buf_cleanup(&a);
    rt_buf_cleanup(&b);
    free(body);
    return 0;
}
