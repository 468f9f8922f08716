/* gzip: sniffing the magic bytes and inflating with zlib under a decompressed-size limit, so a
 * gzip bomb stops at the limit instead of exhausting memory (DESIGN §4). zlib writes straight
 * into the output buffer's spare room (no bounce copy), which grows by doubling up to the
 * limit. */
#include <zlib.h>

#include "rt/buf.h"
#include "rt/ingest.h"

bool rt_ingest_is_gzip(const void *data, size_t len)
{
    const unsigned char *p = data;
    return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

int rt_ingest_gunzip(const void *in, size_t len, struct rt_buf *out, struct rt_error *err)
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
