/* Test helper: writes protobuf bytes by hand (varints, keys, length-delimited fields) so that
 * tests control packed versus unpacked encodings and can break the wire format on purpose. */
#ifndef RT_TEST_PB_BUILD_H
#define RT_TEST_PB_BUILD_H

#include <stdint.h>
#include <string.h>

#include "rt/buf.h"

static void pb_varint(struct rt_buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    rt_buf_append(b, t, n);
}

static void pb_key(struct rt_buf *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

static void pb_uint(struct rt_buf *b, unsigned field, uint64_t v)
{
    pb_key(b, field, 0);
    pb_varint(b, v);
}

static void pb_bytes(struct rt_buf *b, unsigned field, const void *p, size_t n)
{
    pb_key(b, field, 2);
    pb_varint(b, n);
    rt_buf_append(b, p, n);
}

/* Appends sub as a length-delimited field and empties sub. */
static void pb_msg(struct rt_buf *b, unsigned field, struct rt_buf *sub)
{
    pb_bytes(b, field, sub->data ? sub->data : "", sub->len);
    rt_buf_cleanup(sub);
}

/* A repeated varint field, packed or one key per element. */
static void pb_repeated(struct rt_buf *b, unsigned field, const uint64_t *v, size_t n, int packed)
{
    if (!packed) {
        for (size_t i = 0; i < n; i++)
            pb_uint(b, field, v[i]);
        return;
    }
    struct rt_buf sub;
    rt_buf_init(&sub, 0);
    for (size_t i = 0; i < n; i++)
        pb_varint(&sub, v[i]);
    pb_msg(b, field, &sub);
}

static void pb_value_type(struct rt_buf *b, unsigned field, uint64_t type, uint64_t unit)
{
    struct rt_buf sub;
    rt_buf_init(&sub, 0);
    pb_uint(&sub, 1, type);
    pb_uint(&sub, 2, unit);
    pb_msg(b, field, &sub);
}

static void pb_sample(struct rt_buf *b, const uint64_t *locs, size_t nlocs, const uint64_t *vals,
                      size_t nvals, int packed)
{
    struct rt_buf sub;
    rt_buf_init(&sub, 0);
    pb_repeated(&sub, 1, locs, nlocs, packed);
    pb_repeated(&sub, 2, vals, nvals, packed);
    pb_msg(b, 2, &sub);
}

/* Location id with mapping_id and Lines calling fns[0..n) (fns[0] the innermost). */
static void pb_location(struct rt_buf *b, uint64_t id, uint64_t mapping_id, const uint64_t *fns,
                        size_t n)
{
    struct rt_buf sub, line;
    rt_buf_init(&sub, 0);
    rt_buf_init(&line, 0);
    pb_uint(&sub, 1, id);
    if (mapping_id)
        pb_uint(&sub, 2, mapping_id);
    for (size_t i = 0; i < n; i++) {
        pb_uint(&line, 1, fns[i]);
        pb_uint(&line, 2, 10 + i); /* line numbers are dropped at ingest */
        pb_msg(&sub, 4, &line);
    }
    pb_msg(b, 4, &sub);
}

static void pb_function(struct rt_buf *b, uint64_t id, uint64_t name)
{
    struct rt_buf sub;
    rt_buf_init(&sub, 0);
    pb_uint(&sub, 1, id);
    pb_uint(&sub, 2, name);
    pb_msg(b, 5, &sub);
}

static void pb_mapping(struct rt_buf *b, uint64_t id, uint64_t filename)
{
    struct rt_buf sub;
    rt_buf_init(&sub, 0);
    pb_uint(&sub, 1, id);
    pb_uint(&sub, 5, filename);
    pb_msg(b, 3, &sub);
}

static void pb_strings(struct rt_buf *b, const char *const *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pb_bytes(b, 6, s[i], strlen(s[i]));
}

#endif
