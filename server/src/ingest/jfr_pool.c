/* JFR values and constant pools: strings in their five encodings, values of any declared type
 * skipped or read field by field, and the checkpoint events of a chunk chained by their delta
 * offsets (the JDK's StringParser, ParserFactory and ChunkParser.fillConstantPools). */
#include <stdlib.h>
#include <string.h>

#include "jfr_internal.h"
#include "rt/buf.h"

/* ---- Strings (StringParser.Encoding) ---- */

enum { S_NULL = 0, S_EMPTY = 1, S_POOL = 2, S_UTF8 = 3, S_CHARS = 4, S_LATIN1 = 5 };

static size_t put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | c >> 12);
        o[1] = (char)(0x80 | (c >> 6 & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | c >> 18);
    o[1] = (char)(0x80 | (c >> 12 & 0x3f));
    o[2] = (char)(0x80 | (c >> 6 & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* Room for a converted string of at most n bytes, or NULL with r failed. */
static char *room(struct rt__jfr_in *r, struct rt__jfr_arena *a, uint64_t n)
{
    int rc = 0;
    char *o = n <= UINT32_MAX ? rt__jfr_arena_alloc(a, (size_t)n, &rc) : NULL;
    if (!o)
        rt__jfr_fail(r, rc == RT_ENOMEM ? RT_ENOMEM : RT_ETOOBIG,
                     "strings converted to UTF-8 exceed the limit of max_decompressed bytes");
    return o;
}

/* Latin-1 bytes as UTF-8: borrowed when all ASCII. */
static void latin1(struct rt__jfr_in *r, struct rt__jfr_arena *a, uint32_t n,
                   struct rt__jfr_val *v)
{
    const uint8_t *s = r->p;
    size_t high = 0;
    for (uint32_t i = 0; i < n; i++)
        high += s[i] >> 7;
    r->p += n;
    v->kind = RT__JV_STR;
    v->n = n;
    v->ptr = (const char *)s;
    if (!high)
        return;
    char *o = room(r, a, (uint64_t)n + high);
    if (!o)
        return;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        k += put_utf8(o + k, s[i]);
    v->ptr = o;
    v->n = (uint32_t)k;
}

/* n UTF-16 code units (compressed integers, else 2 bytes each) as UTF-8; an unpaired
 * surrogate becomes U+FFFD. */
static void chars(struct rt__jfr_in *r, struct rt__jfr_arena *a, uint32_t n,
                  struct rt__jfr_val *v)
{
    char *o = room(r, a, (uint64_t)n * 3);
    if (!o)
        return;
    size_t k = 0;
    uint32_t hi = 0;
    for (uint32_t i = 0; i < n && !r->rc; i++) {
        uint32_t c = (uint16_t)(r->compressed ? rt__jfr_var(r) : rt__jfr_be(r, 2));
        if (hi && c >= 0xdc00 && c <= 0xdfff) {
            k += put_utf8(o + k, 0x10000 + ((hi - 0xd800) << 10) + (c - 0xdc00));
            hi = 0;
            continue;
        }
        if (hi)
            k += put_utf8(o + k, 0xfffd);
        hi = c >= 0xd800 && c <= 0xdbff ? c : 0;
        if (!hi)
            k += put_utf8(o + k, c >= 0xdc00 && c <= 0xdfff ? 0xfffd : c);
    }
    if (hi)
        k += put_utf8(o + k, 0xfffd);
    v->kind = RT__JV_STR;
    v->ptr = o;
    v->n = (uint32_t)k;
}

void rt__jfr_read_string(struct rt__jfr_in *r, struct rt__jfr_arena *a, struct rt__jfr_val *v)
{
    uint8_t tag = rt__jfr_u8(r);
    uint32_t n = 0;
    switch (tag) {
    case S_NULL:
        v->kind = RT__JV_NULL;
        break;
    case S_EMPTY:
        v->kind = RT__JV_STR;
        v->ptr = "";
        v->n = 0;
        break;
    case S_POOL:
        v->kind = RT__JV_STRREF;
        v->u = rt__jfr_long(r);
        break;
    case S_UTF8:
    case S_LATIN1:
    case S_CHARS:
        n = rt__jfr_int(r);
        if (n > rt__jfr_left(r)) {
            rt__jfr_fail(r, RT_EMALFORMED, "string length past its end");
        } else if (tag == S_UTF8) {
            v->kind = RT__JV_STR;
            v->ptr = (const char *)r->p;
            v->n = n;
            r->p += n;
        } else if (tag == S_LATIN1) {
            latin1(r, a, n, v);
        } else {
            chars(r, a, n, v);
        }
        break;
    default:
        rt__jfr_fail(r, RT_EMALFORMED, "unknown string encoding");
    }
    if (r->rc)
        v->kind = RT__JV_NONE;
}

static void skip_string(struct rt__jfr_in *r)
{
    uint8_t tag = rt__jfr_u8(r);
    if (tag == S_NULL || tag == S_EMPTY)
        return;
    if (tag == S_POOL) {
        rt__jfr_long(r);
        return;
    }
    if (tag != S_UTF8 && tag != S_LATIN1 && tag != S_CHARS) {
        rt__jfr_fail(r, RT_EMALFORMED, "unknown string encoding");
        return;
    }
    uint32_t n = rt__jfr_int(r);
    if (n > rt__jfr_left(r))
        rt__jfr_fail(r, RT_EMALFORMED, "string length past its end");
    else if (tag != S_CHARS)
        r->p += n;
    else if (!r->compressed)
        rt__jfr_skip(r, (uint64_t)n * 2);
    else
        for (uint32_t i = 0; i < n && !r->rc; i++)
            rt__jfr_var(r);
}

/* ---- Values of declared types ---- */

/* Skips a compressed integer, or n bytes uncompressed. */
static inline void skip_int(struct rt__jfr_in *r, unsigned n)
{
    if (r->compressed)
        rt__jfr_var(r);
    else
        rt__jfr_skip(r, n);
}

/* Skips a value of a composite of numbers by its plan. */
static void skip_plan(struct rt__jfr_in *r, const struct rt__jfr_class *k)
{
    static const unsigned width[] = {[RT__JFR_OP_INT2] = 2, [RT__JFR_OP_INT4] = 4,
                                     [RT__JFR_OP_INT8] = 8, [RT__JFR_OP_RAW1] = 1,
                                     [RT__JFR_OP_RAW4] = 4, [RT__JFR_OP_RAW8] = 8};
    for (unsigned i = 0; i < k->nops; i++) {
        uint8_t op = k->ops[i];
        if (r->compressed && op <= RT__JFR_OP_INT8)
            rt__jfr_skip_var(r);
        else
            rt__jfr_skip(r, width[op]);
    }
}

static void skip_value(const struct rt__jfr_meta *m, struct rt__jfr_in *r, uint32_t c,
                       int depth)
{
    const struct rt__jfr_class *k = &m->classes[c];
    switch (k->kind) {
    case RT__JFR_BOOLEAN:
    case RT__JFR_BYTE:
        rt__jfr_skip(r, 1);
        return;
    case RT__JFR_CHAR:
    case RT__JFR_SHORT:
        skip_int(r, 2);
        return;
    case RT__JFR_INT:
        skip_int(r, 4);
        return;
    case RT__JFR_LONG:
        skip_int(r, 8);
        return;
    case RT__JFR_FLOAT:
        rt__jfr_skip(r, 4);
        return;
    case RT__JFR_DOUBLE:
        rt__jfr_skip(r, 8);
        return;
    case RT__JFR_STRING:
        skip_string(r);
        return;
    default:
        break;
    }
    if (k->empty == 2)
        return;
    if (k->flat == 2) {
        skip_plan(r, k);
        return;
    }
    if (depth > RT__JFR_MAX_DEPTH) {
        rt__jfr_fail(r, RT_EMALFORMED, "values nest deeper than 32 levels");
        return;
    }
    for (uint32_t i = 0; i < k->nfields && !r->rc; i++)
        rt__jfr_skip_field(m, r, &m->fields[k->field_off + i], depth + 1);
}

/* Skips n compressed integers in one pass over the bytes (each ends at a byte below 0x80, or
 * at its 9th byte). */
static void skip_vars(struct rt__jfr_in *r, uint64_t n)
{
    const uint8_t *p = r->p, *end = r->end;
    unsigned run = 0;
    while (n && p < end) {
        uint8_t b = *p++;
        if (b < 0x80 || run == 8) {
            n--;
            run = 0;
        } else {
            run++;
        }
    }
    if (n)
        rt__jfr_fail(r, RT_EMALFORMED, "truncated");
    else
        r->p = p;
}

/* Whether values of class k are compressed integers only, k->nops of them. */
static bool all_ints(const struct rt__jfr_class *k)
{
    if (k->flat != 2)
        return false;
    for (unsigned i = 0; i < k->nops; i++)
        if (k->ops[i] > RT__JFR_OP_INT8)
            return false;
    return k->nops > 0;
}

/* Skips n elements of array field f. */
static void skip_elements(const struct rt__jfr_meta *m, struct rt__jfr_in *r,
                          const struct rt__jfr_field *f, uint32_t n, int depth)
{
    const struct rt__jfr_class *k = &m->classes[f->cls];
    if (!f->cp && k->empty == 2)
        return;
    if (n > rt__jfr_left(r)) {
        rt__jfr_fail(r, RT_EMALFORMED, "array count past its end");
        return;
    }
    if (r->compressed && (f->cp || k->kind == RT__JFR_INT || k->kind == RT__JFR_LONG ||
                          (k->kind == RT__JFR_COMPOSITE && all_ints(k)))) {
        skip_vars(r, (uint64_t)n * (f->cp || k->kind != RT__JFR_COMPOSITE ? 1 : k->nops));
        return;
    }
    for (uint32_t i = 0; i < n && !r->rc; i++) {
        if (f->cp)
            rt__jfr_long(r);
        else
            skip_value(m, r, f->cls, depth);
    }
}

void rt__jfr_skip_field(const struct rt__jfr_meta *m, struct rt__jfr_in *r,
                        const struct rt__jfr_field *f, int depth)
{
    if (f->array)
        skip_elements(m, r, f, rt__jfr_int(r), depth);
    else if (f->cp)
        rt__jfr_long(r);
    else
        skip_value(m, r, f->cls, depth);
}

/* Reads field f into v: a constant pool key, an integer, a string, or where an array starts. */
static void read_field(const struct rt__jfr_meta *m, struct rt__jfr_in *r,
                       const struct rt__jfr_field *f, struct rt__jfr_arena *a,
                       struct rt__jfr_val *v)
{
    if (f->array) {
        uint32_t n = rt__jfr_int(r);
        v->kind = RT__JV_ARRAY;
        v->u = rt__jfr_off(r);
        v->n = n;
        skip_elements(m, r, f, n, 1);
        return;
    }
    if (f->cp) {
        v->kind = RT__JV_REF;
        v->u = rt__jfr_long(r);
        v->n = f->cls;
        return;
    }
    static const unsigned width[] = {[RT__JFR_CHAR] = 2, [RT__JFR_SHORT] = 2,
                                     [RT__JFR_INT] = 4, [RT__JFR_LONG] = 8};
    uint8_t kind = m->classes[f->cls].kind;
    v->kind = RT__JV_INT;
    if (kind == RT__JFR_STRING)
        rt__jfr_read_string(r, a, v);
    else if (kind == RT__JFR_BOOLEAN || kind == RT__JFR_BYTE)
        v->u = rt__jfr_u8(r);
    else if (kind >= RT__JFR_CHAR && kind <= RT__JFR_LONG)
        v->u = r->compressed ? rt__jfr_var(r) : rt__jfr_be(r, width[kind]);
    else {
        v->kind = RT__JV_NONE;
        skip_value(m, r, f->cls, 1);
    }
}

void rt__jfr_read_obj(const struct rt__jfr_meta *m, struct rt__jfr_in *r, uint32_t c,
                      struct rt__jfr_arena *a, struct rt__jfr_val *vals)
{
    const struct rt__jfr_class *k = &m->classes[c];
    if (k->kind != RT__JFR_COMPOSITE) {
        skip_value(m, r, c, 0);
        return;
    }
    for (uint32_t i = 0; i < k->nfields && !r->rc; i++) {
        const struct rt__jfr_field *f = &m->fields[k->field_off + i];
        if (f->role < 0)
            rt__jfr_skip_field(m, r, f, 1);
        else
            read_field(m, r, f, a, &vals[f->role]);
    }
}

/* ---- Constant pools ---- */

/* Entry values of a new entry of p (zeroed), or NULL on ENOMEM. */
static struct rt__jfr_val *new_entry(struct rt__jfr_pool *p, uint64_t key)
{
    if (rt_array_grow((void **)&p->vals, &p->cap, p->n + 1,
                      sizeof(*p->vals) * RT__JFR_MAX_ROLES) ||
        rt__jfr_map_put(&p->index, key, (uint32_t)p->n))
        return NULL;
    struct rt__jfr_val *v = &p->vals[p->n++ * RT__JFR_MAX_ROLES];
    memset(v, 0, sizeof(*v) * RT__JFR_MAX_ROLES);
    return v;
}

static int too_many(const struct rt_ingest_limits *lim, int t, struct rt_error *err)
{
    static const char *const what[RT__JFR_NPOOLS] = {
        [RT__JFR_T_METHOD] = "methods", [RT__JFR_T_CLASS] = "classes",
        [RT__JFR_T_STACKTRACE] = "stack traces"};
    return rt_error_set(err, RT_ETOOBIG,
                        "a JFR chunk declares more than %zu %s, over the limit (max_locations)",
                        lim->max_locations, what[t]);
}

/* Reads count entries of one constant pool (type c, kept in slot t or skipped when t < 0). */
static int read_entries(struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                        struct rt__jfr_in *r, uint32_t c, int t, uint32_t count,
                        const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                        struct rt_error *err)
{
    struct rt__jfr_pool *p = t >= 0 ? &ps->pool[t] : NULL;
    bool located = t == RT__JFR_T_METHOD || t == RT__JFR_T_CLASS || t == RT__JFR_T_STACKTRACE;
    size_t room = p ? p->n + count : 0;
    if (p && located && room > lim->max_locations)
        return too_many(lim, t, err);
    if (p && (rt_array_grow((void **)&p->vals, &p->cap, room,
                            sizeof(*p->vals) * RT__JFR_MAX_ROLES) ||
              rt__jfr_map_reserve(&p->index, room)))
        return rt_error_set(err, RT_ENOMEM, "out of memory reading JFR constant pools");
    for (uint32_t j = 0; j < count && !r->rc; j++) {
        uint64_t key = rt__jfr_long(r);
        if (!p) {
            skip_value(m, r, c, 1);
            continue;
        }
        struct rt__jfr_val *v = new_entry(p, key);
        if (!v)
            return rt_error_set(err, RT_ENOMEM, "out of memory reading JFR constant pools");
        if (t == RT__JFR_T_STRING)
            rt__jfr_read_string(r, a, v);
        else
            rt__jfr_read_obj(m, r, c, a, v);
    }
    return 0;
}

/* Reads the pools of one checkpoint event after its header. */
static int read_pools(struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                      struct rt__jfr_in *r, const struct rt_ingest_limits *lim,
                      struct rt__jfr_arena *a, struct rt_error *err)
{
    size_t at = rt__jfr_off(r);
    uint32_t npools = rt__jfr_int(r);
    if (!r->rc && npools > rt__jfr_left(r))
        return rt__jfr_malformed(err, at, "checkpoint pool count %u past its end", npools);
    for (uint32_t i = 0; i < npools && !r->rc; i++) {
        at = rt__jfr_off(r);
        uint64_t type_id = rt__jfr_long(r);
        uint32_t count = rt__jfr_int(r);
        if (r->rc)
            break;
        uint32_t c = rt__jfr_map_get(&m->by_id, type_id);
        if (c == RT__JFR_NONE)
            return rt__jfr_malformed(err, at, "constant pool of undefined type id %llu",
                                     (unsigned long long)type_id);
        if (count > lim->max_strings - ps->entries)
            return rt_error_set(err, RT_ETOOBIG,
                                "a JFR chunk's constant pools hold more than %zu entries, over "
                                "the limit (max_strings)", lim->max_strings);
        if (count > rt__jfr_left(r))
            return rt__jfr_malformed(err, at, "constant pool count %u past its checkpoint's "
                                              "end", count);
        ps->entries += count;
        int t = -1;
        for (int k = 0; k < RT__JFR_NPOOLS; k++)
            t = m->special[k] == c ? k : t;
        int rc = read_entries(ps, m, r, c, t, count, lim, a, err);
        if (rc)
            return rc;
    }
    return r->rc ? rt__jfr_in_error(r, "constant pool", err) : 0;
}

int rt__jfr_pools_read(struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                       const struct rt__jfr_in *chunk, uint64_t cp_off,
                       const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                       struct rt_error *err)
{
    for (int t = 0; t < RT__JFR_NPOOLS; t++) {
        rt__jfr_map_clear(&ps->pool[t].index);
        ps->pool[t].n = 0;
    }
    ps->entries = 0;
    size_t csize = rt__jfr_left(chunk), seen = 0;
    for (uint64_t pos = cp_off; pos != 0;) {
        if (pos < RT__JFR_HEADER_SIZE || pos >= csize)
            return rt__jfr_malformed(err, rt__jfr_off(chunk), "constant pool position %llu "
                                     "outside its chunk", (unsigned long long)pos);
        struct rt__jfr_in r = *chunk;
        r.p += pos;
        uint32_t size = rt__jfr_int(&r);
        if (r.rc)
            return rt__jfr_in_error(&r, "checkpoint", err);
        if (size == 0 || size > csize - pos)
            return rt__jfr_malformed(err, rt__jfr_off(chunk) + pos, "checkpoint event size %u "
                                     "past its chunk's end", size);
        seen += size;
        if (seen > csize)
            return rt__jfr_malformed(err, rt__jfr_off(chunk) + pos, "checkpoint chain loops");
        r.end = chunk->p + pos + size;
        uint64_t type = rt__jfr_long(&r);
        rt__jfr_long(&r); /* start time */
        rt__jfr_long(&r); /* duration */
        int64_t delta = (int64_t)rt__jfr_long(&r);
        rt__jfr_u8(&r); /* checkpoint type: flush, chunk header, statics, thread */
        if (r.rc)
            return rt__jfr_in_error(&r, "checkpoint", err);
        if (type != 1)
            return rt__jfr_malformed(err, rt__jfr_off(chunk) + pos, "expected a checkpoint "
                                     "event (type id 1), found type id %llu",
                                     (unsigned long long)type);
        int rc = read_pools(ps, m, &r, lim, a, err);
        if (rc || delta == 0)
            return rc;
        if (delta < -(int64_t)pos || (delta > 0 && (uint64_t)delta >= csize - pos))
            return rt__jfr_malformed(err, rt__jfr_off(chunk) + pos, "checkpoint delta %lld "
                                     "leaves its chunk", (long long)delta);
        pos = (uint64_t)((int64_t)pos + delta);
    }
    return 0;
}

void rt__jfr_pools_cleanup(struct rt__jfr_pools *ps)
{
    for (int t = 0; t < RT__JFR_NPOOLS; t++) {
        rt__jfr_map_cleanup(&ps->pool[t].index);
        free(ps->pool[t].vals);
    }
    memset(ps, 0, sizeof(*ps));
}

const struct rt__jfr_val *rt__jfr_pool_get(const struct rt__jfr_pools *ps, int t, uint64_t key,
                                           uint32_t *index)
{
    uint32_t i = rt__jfr_map_get(&ps->pool[t].index, key);
    if (index)
        *index = i;
    return i == RT__JFR_NONE ? NULL : &ps->pool[t].vals[(size_t)i * RT__JFR_MAX_ROLES];
}

bool rt__jfr_str(const struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                 struct rt__jfr_val v, struct rt_str *out)
{
    for (int hop = 0; hop < 4; hop++) {
        const struct rt__jfr_val *e = NULL;
        if (v.kind == RT__JV_STR) {
            *out = (struct rt_str){v.ptr, v.n};
            return true;
        }
        if (v.kind == RT__JV_STRREF)
            e = rt__jfr_pool_get(ps, RT__JFR_T_STRING, v.u, NULL);
        else if (v.kind == RT__JV_REF && v.n == m->special[RT__JFR_T_SYMBOL])
            e = rt__jfr_pool_get(ps, RT__JFR_T_SYMBOL, v.u, NULL);
        else if (v.kind == RT__JV_REF && v.n == m->special[RT__JFR_T_STRING])
            e = rt__jfr_pool_get(ps, RT__JFR_T_STRING, v.u, NULL);
        if (!e)
            return false;
        v = e[0];
    }
    return false;
}
