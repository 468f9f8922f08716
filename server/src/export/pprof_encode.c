/* pprof export: encodes a profile as a gzip-compressed profile.proto Profile (RUNTIMES.md §6)
 * that rt_ingest_parse reads back to the same stacks, values, counts, period and times. */
#include <math.h>
#include <string.h>
#include <zlib.h>

#include "rt/err.h"
#include "rt/export.h"

/* Field numbers of profile.proto used here. */
enum {
    P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_LOCATION = 4, P_FUNCTION = 5, P_STRING = 6,
    P_TIME = 9, P_DURATION = 10, P_PERIOD_TYPE = 11, P_PERIOD = 12,
};
/* Fixed strings at the start of the string table; frame f is string S_FIRST_FRAME + f. */
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_TYPE, S_NANOSECONDS, S_FIRST_FRAME };

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static int put_varint(struct rt_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    return rt_buf_append(b, tmp, n);
}

static int put_key(struct rt_buf *b, unsigned field, unsigned wire)
{
    return put_varint(b, (uint64_t)field << 3 | wire);
}

/* A varint field; omitted when 0 (proto3 default). */
static int put_uint(struct rt_buf *b, unsigned field, uint64_t v)
{
    if (v == 0)
        return 0;
    int rc = put_key(b, field, 0);
    return rc ? rc : put_varint(b, v);
}

/* Size of a varint field as put_uint writes it. */
static size_t uint_len(unsigned field, uint64_t v)
{
    return v ? varint_len((uint64_t)field << 3) + varint_len(v) : 0;
}

static int put_len(struct rt_buf *b, unsigned field, size_t len)
{
    int rc = put_key(b, field, 2);
    return rc ? rc : put_varint(b, len);
}

static int put_bytes(struct rt_buf *b, unsigned field, const void *p, size_t n)
{
    int rc = put_len(b, field, n);
    return rc ? rc : rt_buf_append(b, p, n);
}

static int put_value_type(struct rt_buf *b, unsigned field, uint64_t type, uint64_t unit)
{
    int rc = put_len(b, field, uint_len(1, type) + uint_len(2, unit));
    rc = rc ? rc : put_uint(b, 1, type);
    return rc ? rc : put_uint(b, 2, unit);
}

/* One Sample: location ids leaf first (frame id + 1), values [count,] value_ns. */
static int put_sample(struct rt_buf *b, const struct rt_profile *p,
                      const struct rt_profile_stack *s)
{
    const uint32_t *ids = p->frame_ids + s->off;
    uint64_t vals[2];
    size_t nv = 0, locs_len = 0, vals_len = 0;
    if (p->has_counts)
        vals[nv++] = (uint64_t)llround(s->samples);
    vals[nv++] = (uint64_t)s->value_ns;
    for (size_t k = 0; k < s->depth; k++)
        locs_len += varint_len((uint64_t)ids[k] + 1);
    for (size_t k = 0; k < nv; k++)
        vals_len += varint_len(vals[k]);
    size_t len = 1 + varint_len(locs_len) + locs_len + 1 + varint_len(vals_len) + vals_len;
    int rc = put_len(b, P_SAMPLE, len);
    rc = rc ? rc : put_len(b, 1, locs_len);
    for (size_t k = s->depth; k-- > 0 && rc == 0;)
        rc = put_varint(b, (uint64_t)ids[k] + 1);
    rc = rc ? rc : put_len(b, 2, vals_len);
    for (size_t k = 0; k < nv && rc == 0; k++)
        rc = put_varint(b, vals[k]);
    return rc;
}

/* Location and Function f + 1 for frame f: one Line each, no address, no mapping. */
static int put_frame(struct rt_buf *b, uint32_t f)
{
    uint64_t id = (uint64_t)f + 1, name = (uint64_t)S_FIRST_FRAME + f;
    size_t line_len = uint_len(1, id);
    int rc = put_len(b, P_LOCATION, uint_len(1, id) + 1 + varint_len(line_len) + line_len);
    rc = rc ? rc : put_uint(b, 1, id);
    rc = rc ? rc : put_len(b, 4, line_len);
    rc = rc ? rc : put_uint(b, 1, id);
    rc = rc ? rc : put_len(b, P_FUNCTION, uint_len(1, id) + uint_len(2, name));
    rc = rc ? rc : put_uint(b, 1, id);
    return rc ? rc : put_uint(b, 2, name);
}

static int encode(const struct rt_profile *p, struct rt_buf *b)
{
    const char *type = rt_ptype_name(p->type);
    int rc = 0;
    if (p->has_counts)
        rc = put_value_type(b, P_SAMPLE_TYPE, S_SAMPLES, S_COUNT);
    rc = rc ? rc : put_value_type(b, P_SAMPLE_TYPE, S_TYPE, S_NANOSECONDS);
    for (size_t i = 0; i < p->nstacks && rc == 0; i++)
        if (p->stacks[i].value_ns || llround(p->stacks[i].samples))
            rc = put_sample(b, p, &p->stacks[i]);
    for (uint32_t f = 0; f < p->frames.count && rc == 0; f++)
        rc = put_frame(b, f);
    const char *fixed[S_FIRST_FRAME] = {"", "samples", "count", type, "nanoseconds"};
    for (size_t i = 0; i < S_FIRST_FRAME && rc == 0; i++)
        rc = put_bytes(b, P_STRING, fixed[i], strlen(fixed[i]));
    for (uint32_t f = 0; f < p->frames.count && rc == 0; f++)
        rc = put_bytes(b, P_STRING, p->frames.strs[f], p->frames.lens[f]);
    rc = rc ? rc : put_uint(b, P_TIME, (uint64_t)(p->time_ns > 0 ? p->time_ns : 0));
    rc = rc ? rc : put_uint(b, P_DURATION, (uint64_t)(p->duration_ns > 0 ? p->duration_ns : 0));
    rc = rc ? rc : put_value_type(b, P_PERIOD_TYPE, S_TYPE, S_NANOSECONDS);
    return rc ? rc : put_uint(b, P_PERIOD, (uint64_t)(p->period_ns > 0 ? p->period_ns : 0));
}

/* gzip-compresses in[0..n) and appends it to out. */
static int gzip_append(const void *in, size_t n, struct rt_buf *out)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return RT_ENOMEM;
    size_t bound = deflateBound(&zs, (uLong)n);
    int rc = rt_buf_reserve(out, bound);
    if (rc == 0) {
        zs.next_in = (Bytef *)in;
        zs.avail_in = (uInt)n;
        zs.next_out = (Bytef *)out->data + out->len;
        zs.avail_out = (uInt)bound;
        if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
            rc = RT_ENOMEM;
        else
            out->len += zs.total_out;
        out->data[out->len] = '\0';
    }
    deflateEnd(&zs);
    return rc;
}

int rt_export_pprof(const struct rt_profile *p, struct rt_buf *out)
{
    struct rt_buf raw;
    rt_buf_init(&raw, 0);
    int rc = encode(p, &raw);
    if (rc == 0 && raw.len > UINT32_MAX)
        rc = RT_ETOOBIG;
    if (rc == 0)
        rc = gzip_append(raw.data ? raw.data : "", raw.len, out);
    rt_buf_cleanup(&raw);
    return rc;
}
