/* Tests of gzip handling: sniffing, inflating within the decompressed-size limit (gzip bombs),
 * truncated and corrupt streams, multi-member files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ingest/ingest_internal.h"
#include "rt/buf.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "test.h"

/* gzip-compresses `total` bytes made of repeated `pattern` into *out (caller frees). */
static size_t gzip_pattern(const char *pattern, size_t plen, size_t total, unsigned char **out)
{
    z_stream zs = {0};
    size_t cap = total / 100 + 4096, len = 0;
    unsigned char *buf = malloc(cap);
    static unsigned char chunk[1 << 20];
    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = (unsigned char)pattern[i % plen];
    deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY);
    size_t left = total;
    int flush;
    do {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        left -= n;
        flush = left ? Z_NO_FLUSH : Z_FINISH;
        zs.next_in = chunk;
        zs.avail_in = (uInt)n;
        do {
            if (cap - len < 65536) {
                cap *= 2;
                buf = realloc(buf, cap);
            }
            zs.next_out = buf + len;
            zs.avail_out = (uInt)(cap - len);
            deflate(&zs, flush);
            len = zs.total_out;
        } while (zs.avail_out == 0 || (flush == Z_FINISH && zs.avail_in));
    } while (left);
    while (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
        cap *= 2;
        buf = realloc(buf, cap);
        zs.next_out = buf + zs.total_out;
        zs.avail_out = (uInt)(cap - zs.total_out);
    }
    len = zs.total_out;
    deflateEnd(&zs);
    *out = buf;
    return len;
}

static void test_is_gzip(void)
{
    CHECK(rt_ingest_is_gzip("\x1f\x8b\x08", 3));
    CHECK(rt_ingest_is_gzip("\x1f\x8b", 2));
    CHECK(!rt_ingest_is_gzip("\x1f", 1));
    CHECK(!rt_ingest_is_gzip("\x0a\x04", 2));
    CHECK(!rt_ingest_is_gzip("", 0));
}

static void test_roundtrip_and_limit(void)
{
    unsigned char *gz;
    size_t gzlen = gzip_pattern("abc;def 1\n", 10, 100000, &gz);
    struct rt_buf out;
    struct rt_error e;
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(gz, gzlen, &out, &e), 0);
    CHECK_INT(out.len, 100000);
    CHECK(memcmp(out.data, "abc;def 1\nabc;def 1\n", 20) == 0);
    CHECK(memcmp(out.data + 99990, "abc;def 1\n", 10) == 0);
    rt_buf_cleanup(&out);
    /* The limit is inclusive: exactly 100000 bytes fit, 99999 do not. */
    rt_buf_init(&out, 100000);
    CHECK_INT(rt_ingest_gunzip(gz, gzlen, &out, &e), 0);
    rt_buf_cleanup(&out);
    rt_buf_init(&out, 99999);
    CHECK_INT(rt_ingest_gunzip(gz, gzlen, &out, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "99999") != NULL);
    rt_buf_cleanup(&out);
    free(gz);
}

static void test_truncated_and_corrupt(void)
{
    unsigned char *gz;
    size_t gzlen = gzip_pattern("0123456789abcdef", 16, 50000, &gz);
    struct rt_buf out;
    struct rt_error e;
    /* Every cut of the stream is refused as malformed (never ok, never a crash). */
    int all = 1;
    for (size_t cut = 2; cut < gzlen; cut++) {
        rt_buf_init(&out, 0);
        int rc = rt_ingest_gunzip(gz, cut, &out, &e);
        all &= rc == RT_EMALFORMED;
        rt_buf_cleanup(&out);
    }
    CHECK(all);
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(gz, gzlen - 4, &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "truncated") != NULL);
    rt_buf_cleanup(&out);
    /* A corrupted CRC. */
    gz[gzlen - 6] ^= 0xff;
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(gz, gzlen, &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "corrupt") != NULL);
    rt_buf_cleanup(&out);
    gz[gzlen - 6] ^= 0xff;
    /* Trailing garbage after the stream. */
    unsigned char *g2 = malloc(gzlen + 3);
    memcpy(g2, gz, gzlen);
    memcpy(g2 + gzlen, "xyz", 3);
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(g2, gzlen + 3, &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "trailing") != NULL);
    rt_buf_cleanup(&out);
    free(g2);
    /* Two members concatenated (as `cat a.gz b.gz`) inflate to both. */
    unsigned char *two = malloc(2 * gzlen);
    memcpy(two, gz, gzlen);
    memcpy(two + gzlen, gz, gzlen);
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(two, 2 * gzlen, &out, &e), 0);
    CHECK_INT(out.len, 100000);
    rt_buf_cleanup(&out);
    free(two);
    free(gz);
}

/* Two members whose trailer's length (the last member's, 10 bytes) understates the body:
 * inflated whole, the limit still exact. libdeflate's one try into the room that length gives
 * fails, and zlib inflates the body from its start (gzip.c). */
static void test_members_past_the_trailer_length(void)
{
    unsigned char *a, *b;
    size_t alen = gzip_pattern("abc;def 1\n", 10, 100000, &a);
    size_t blen = gzip_pattern("0123456789", 10, 10, &b);
    unsigned char *two = malloc(alen + blen);
    memcpy(two, a, alen);
    memcpy(two + alen, b, blen);
    struct rt_buf out;
    struct rt_error e;
    rt_buf_init(&out, 100010);
    CHECK_INT(rt_ingest_gunzip(two, alen + blen, &out, &e), 0);
    CHECK_INT(out.len, 100010);
    CHECK(out.len == 100010 && memcmp(out.data + 99990, "abc;def 1\n0123456789", 20) == 0);
    rt_buf_cleanup(&out);
    rt_buf_init(&out, 100009);
    CHECK_INT(rt_ingest_gunzip(two, alen + blen, &out, &e), RT_ETOOBIG);
    rt_buf_cleanup(&out);
    free(two);
    free(a);
    free(b);
}

/* A header with its CRC-16 (FLG.FHCRC, RFC 1952 2.3.1): taken when right, refused when
 * wrong, as zlib does (libdeflate would skip the check: such members go to zlib). */
static void test_header_crc(void)
{
    unsigned char *gz;
    size_t gzlen = gzip_pattern("xyz", 3, 3000, &gz);
    unsigned char *h = malloc(gzlen + 2);
    memcpy(h, gz, 10);
    h[3] |= 0x02;
    uLong crc = crc32(0, h, 10);
    h[10] = (unsigned char)(crc & 0xff);
    h[11] = (unsigned char)(crc >> 8 & 0xff);
    memcpy(h + 12, gz + 10, gzlen - 10);
    struct rt_buf out;
    struct rt_error e;
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(h, gzlen + 2, &out, &e), 0);
    CHECK_INT(out.len, 3000);
    rt_buf_cleanup(&out);
    h[10] ^= 0x5a;
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(h, gzlen + 2, &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "header crc") != NULL);
    rt_buf_cleanup(&out);
    free(h);
    free(gz);
}

/* libdeflate's leniency, chosen and pinned (gzip.c, gunzip_libdeflate): one fixed-Huffman
 * block of 'a', then length symbol 286 (invalid in RFC 1951) at distance 1, whose 259 bytes
 * match the trailer's CRC-32 and ISIZE. zlib refuses it ("invalid literal/length code");
 * rt_ingest_gunzip takes it, as libdeflate decodes it. A body of the same shape that does not
 * match its CRC is refused, with zlib's message. */
static void test_lenient_codes(void)
{
    unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x4b,
                          0x1c, 0x03, 0x00, 0x56, 0xfa, 0xc2, 0x34, 0x03, 0x01, 0x00, 0x00};
    struct rt_buf out;
    struct rt_error e;
    rt_buf_init(&out, 0);
    CHECK_INT(rt__ingest_gunzip_zlib(gz, sizeof(gz), &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "invalid literal/length code") != NULL);
    rt_buf_cleanup(&out);
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(gz, sizeof(gz), &out, &e), 0);
    CHECK_INT(out.len, 259);
    CHECK(out.len == 259 && out.data[0] == 'a' && out.data[258] == 'a' && out.data[259] == '\0');
    rt_buf_cleanup(&out);
    gz[14] ^= 1; /* the CRC-32 no longer matches */
    rt_buf_init(&out, 0);
    CHECK_INT(rt_ingest_gunzip(gz, sizeof(gz), &out, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "invalid literal/length code") != NULL);
    rt_buf_cleanup(&out);
}

/* Through rt_ingest_parse: truncated gzip is malformed; 300 MiB of zeros is a bomb. */
static void test_parse_gzip_errors(void)
{
    FILE *f = fopen(SHARED_DATA("pprof/parca__fib.pb.gz"), "rb");
    unsigned char body[8192];
    size_t n = f ? fread(body, 1, sizeof(body), f) : 0;
    if (f)
        fclose(f);
    CHECK_INT(n, 6355); /* SOURCES.md size */
    struct rt_profile *out[2];
    size_t nout = 0;
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(body, n / 2, NULL, NULL, out, &nout, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "truncated gzip") != NULL);
    CHECK_INT(rt_ingest_parse(body, 2, NULL, NULL, out, &nout, &e), RT_EMALFORMED);

    unsigned char *gz;
    size_t gzlen = gzip_pattern("\0", 1, (size_t)300 << 20, &gz);
    CHECK(gzlen < ((size_t)1 << 20)); /* well under the 16 MiB compressed limit */
    CHECK_INT(rt_ingest_parse(gz, gzlen, NULL, NULL, out, &nout, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_decompressed") != NULL);
    CHECK(strstr(e.msg, "268435456") != NULL);
    free(gz);
    /* A gzip of an empty body is an empty body. */
    gzlen = gzip_pattern("x", 1, 0, &gz);
    CHECK_INT(rt_ingest_parse(gz, gzlen, NULL, NULL, out, &nout, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "empty body") != NULL);
    free(gz);
}

int main(void)
{
    RUN(test_is_gzip);
    RUN(test_roundtrip_and_limit);
    RUN(test_truncated_and_corrupt);
    RUN(test_members_past_the_trailer_length);
    RUN(test_header_crc);
    RUN(test_lenient_codes);
    RUN(test_parse_gzip_errors);
    return TEST_DONE();
}
