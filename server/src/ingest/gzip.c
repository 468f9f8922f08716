/* gzip: sniffing the magic bytes and inflating under a decompressed-size limit, so a gzip bomb
 * stops at the limit instead of exhausting memory (DESIGN §4).
 *
 * Two inflaters. libdeflate inflates a whole member in one call, about twice as fast as zlib,
 * with a carry-less-multiply CRC-32 (issue #19's "zlib with a fast CRC"): it takes a body of
 * one member whose trailer gives its length. Every other body (several members, a false or
 * outsized length, too big, corrupt, truncated, trailing garbage, a header CRC) goes to zlib
 * from its start, so those refusals and the limit are zlib's, with zlib's message. The one
 * difference: the few invalid codes libdeflate decodes (gunzip_libdeflate). zlib writes
 * straight into the output buffer's spare room (no bounce copy), which grows by doubling up
 * to the limit. */
#include <libdeflate.h>
#include <stdint.h>
#include <zlib.h>

#include "rt/buf.h"
#include "rt/ingest.h"
#include "ingest_internal.h"

bool rt_ingest_is_gzip(const void *data, size_t len)
{
    const unsigned char *p = data;
    return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* zlib's inflate of in into out, member after member: the decoder whose messages every
 * refusal carries. Returns 0, RT_EMALFORMED, RT_ETOOBIG or RT_ENOMEM, with err set. */
int rt__ingest_gunzip_zlib(const void *in, size_t len, struct rt_buf *out, struct rt_error *err)
{
    z_stream zs = {0};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return rt_error_set(err, RT_ENOMEM, "out of memory starting gzip decompression");
    const unsigned char *next = in, *end = next + len;
    int rc = 0, zrc = Z_OK;
    /* One early allocation for typical ratios; growth past it is the buffer's business. */
    size_t hint = len > ((size_t)16 << 20) ? ((size_t)64 << 20) : len * 4;
    if (hint > out->limit - out->len)
        hint = out->limit - out->len;
    (void)rt_buf_reserve(out, hint);
    while (rc == 0) {
        if (zs.avail_in == 0 && next < end) {
            size_t n = (size_t)(end - next) > UINT_MAX ? UINT_MAX : (size_t)(end - next);
            zs.next_in = (unsigned char *)next;
            zs.avail_in = (uInt)n;
            next += n;
        }
        /* out's spare room (its last byte is the NUL's), grown when full: by what it holds
         * (at least 64 KiB), never past the limit (rt_buf_reserve keeps cap <= limit + 1) */
        size_t room = out->cap > out->len + 1 ? out->cap - 1 - out->len : 0;
        if (room == 0 && out->len < out->limit) {
            size_t want = out->len > 65536 ? out->len : 65536;
            if (want > out->limit - out->len)
                want = out->limit - out->len;
            if ((rc = rt_buf_reserve(out, want)) != 0)
                break;
            room = out->cap - 1 - out->len;
        }
        /* at the limit, one byte more of output means the body is too big */
        unsigned char spare, *dst = room ? (unsigned char *)out->data + out->len : &spare;
        if (room == 0)
            room = 1;
        if (room > UINT_MAX)
            room = UINT_MAX;
        zs.next_out = dst;
        zs.avail_out = (uInt)room;
        zrc = inflate(&zs, Z_NO_FLUSH);
        size_t got = room - zs.avail_out;
        if (dst == &spare && got) {
            rc = RT_ETOOBIG;
            break;
        }
        if (dst != &spare && got) {
            out->len += got;
            out->data[out->len] = '\0';
        }
        if (zrc == Z_STREAM_END) {
            /* A gzip file may hold several members; anything else after one is an error. */
            const unsigned char *rest = zs.next_in;
            size_t left = zs.avail_in + (size_t)(end - next);
            if (left == 0)
                break;
            if (left < 2 || rest[0] != 0x1f || rest[1] != 0x8b) {
                rc = rt_error_set(err, RT_EMALFORMED, "trailing garbage after the gzip stream");
                break;
            }
            inflateReset(&zs);
            continue;
        }
        if (zrc == Z_NEED_DICT || zrc == Z_DATA_ERROR || zrc == Z_STREAM_ERROR) {
            rc = rt_error_set(err, RT_EMALFORMED, "corrupt gzip stream: %s",
                              zs.msg ? zs.msg : "invalid data");
            break;
        }
        if (zrc == Z_MEM_ERROR) {
            rc = rt_error_set(err, RT_ENOMEM, "out of memory decompressing gzip");
            break;
        }
        if (got == 0 && zs.avail_in == 0 && next >= end) {
            rc = rt_error_set(err, RT_EMALFORMED,
                              "truncated gzip stream (ended after %zu decompressed bytes)",
                              out->len);
            break;
        }
    }
    if (rc == RT_ETOOBIG)
        rt_error_set(err, RT_ETOOBIG,
                     "decompressed body exceeds the limit of %zu bytes (max_decompressed)",
                     out->limit);
    else if (rc == RT_ENOMEM)
        rt_error_set(err, RT_ENOMEM, "out of memory decompressing gzip");
    inflateEnd(&zs);
    return rc;
}

/* FLG's FHCRC bit: a CRC-16 of the member's header, which zlib checks and libdeflate skips. */
#define GZIP_FHCRC 0x02
/* The largest ratio of ISIZE to the body's length trusted for libdeflate's one try: real
 * profiles gzip 2-20 times; a body claiming more (a bomb, or a false length) goes to zlib,
 * which grows its room as the output comes, so no claim reserves memory out of proportion. */
#define TRUSTED_RATIO 64

/* libdeflate's inflate of in into out, in one call into room of the trailer's ISIZE (the
 * length of the body's last member, mod 2^32). That is exact for a body of one member, which
 * is what every agent sends. Returns 0 (out holds the body) or 1 when zlib must decide: ISIZE
 * is 0, past out's limit or more than TRUSTED_RATIO times len; the header carries a CRC-16
 * (FHCRC); the room or the decompressor cannot be had; the member is corrupt, truncated or
 * larger than ISIZE says; bytes follow it (another member, or garbage). out's bytes and len
 * are then as they were.
 * libdeflate 1.14 is more lenient than zlib on a few invalid codes (length symbols 286-287,
 * distance codes 30-31, too many code lengths, some incomplete codes): a member using them
 * whose output matches its CRC-32 and ISIZE is taken here where zlib refuses it
 * (docs/internals/ingest.md; test_gzip.c pins it). */
static int gunzip_libdeflate(const unsigned char *in, size_t len, struct rt_buf *out)
{
    if (len < 18 || (in[3] & GZIP_FHCRC))
        return 1;
    const unsigned char *t = in + len - 4;
    size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    if (isize == 0 || isize > out->limit - out->len || isize / TRUSTED_RATIO >= len)
        return 1;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d || rt_buf_reserve(out, isize)) {
        libdeflate_free_decompressor(d);
        return 1;
    }
    size_t used = 0, got = 0;
    enum libdeflate_result r = libdeflate_gzip_decompress_ex(d, in, len, out->data + out->len,
                                                             isize, &used, &got);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS || used != len)
        return 1;
    out->len += got;
    out->data[out->len] = '\0';
    return 0;
}

int rt_ingest_gunzip(const void *in, size_t len, struct rt_buf *out, struct rt_error *err)
{
    size_t start = out->len;
    if (gunzip_libdeflate(in, len, out) == 0)
        return 0;
    if (out->data) /* what libdeflate did not take, zlib reads from the start and names */
        out->data[start] = '\0';
    return rt__ingest_gunzip_zlib(in, len, out, err);
}
