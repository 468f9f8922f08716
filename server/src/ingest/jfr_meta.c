/* JFR metadata: the types, fields and string table of a chunk's metadata event, read
 * generically so that every event and constant is laid out as the recording declares it (the
 * JDK's MetadataReader and ChunkHeader.readMetadata); plus the decoder's arena, id maps and
 * error messages. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jfr_internal.h"
#include "rt/buf.h"

/* ---- Arena ---- */

struct rt__jfr_block {
    struct rt__jfr_block *next;
    size_t cap, used;
    char data[];
};

char *rt__jfr_arena_alloc(struct rt__jfr_arena *a, size_t n, int *rc)
{
    if (n > a->budget - a->used) {
        *rc = RT_ETOOBIG;
        return NULL;
    }
    struct rt__jfr_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof(*b) + cap);
        if (!b) {
            *rc = RT_ENOMEM;
            return NULL;
        }
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    char *p = b->data + b->used;
    b->used += n;
    a->used += n;
    return p;
}

void rt__jfr_arena_cleanup(struct rt__jfr_arena *a)
{
    while (a->head) {
        struct rt__jfr_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
    a->used = 0;
}

/* ---- Maps ---- */

static size_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x;
}

uint32_t rt__jfr_map_get(const struct rt__jfr_map *m, uint64_t key)
{
    if (!m->mask)
        return RT__JFR_NONE;
    for (size_t i = mix(key) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t v = m->vals[i];
        if (!v)
            return RT__JFR_NONE;
        if (m->keys[i] == key)
            return v - 1;
    }
}

static int map_grow(struct rt__jfr_map *m)
{
    size_t slots = m->mask ? (m->mask + 1) * 2 : 64;
    uint64_t *keys = malloc(slots * sizeof(*keys));
    uint32_t *vals = calloc(slots, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return RT_ENOMEM;
    }
    for (size_t i = 0; m->mask && i <= m->mask; i++) {
        if (!m->vals[i])
            continue;
        size_t j = mix(m->keys[i]) & (slots - 1);
        while (vals[j])
            j = (j + 1) & (slots - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->mask = slots - 1;
    return 0;
}

int rt__jfr_map_put(struct rt__jfr_map *m, uint64_t key, uint32_t val)
{
    if ((!m->mask || (m->n + 1) * 2 > m->mask + 1) && map_grow(m))
        return RT_ENOMEM;
    size_t i = mix(key) & m->mask;
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & m->mask;
    if (!m->vals[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val + 1;
    return 0;
}

int rt__jfr_map_reserve(struct rt__jfr_map *m, size_t n)
{
    while (!m->mask || n * 2 > m->mask + 1)
        if (map_grow(m))
            return RT_ENOMEM;
    return 0;
}

void rt__jfr_map_clear(struct rt__jfr_map *m)
{
    if (m->mask >= 4096 && m->n * 8 < m->mask + 1) {
        rt__jfr_map_cleanup(m); /* clearing a big sparse table for each chunk would cost */
        return;
    }
    if (m->mask)
        memset(m->vals, 0, (m->mask + 1) * sizeof(*m->vals));
    m->n = 0;
}

void rt__jfr_map_cleanup(struct rt__jfr_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* ---- Errors ---- */

void rt__jfr_printable(char *dst, size_t cap, struct rt_str s)
{
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = s.ptr[i] >= 0x20 && s.ptr[i] < 0x7f ? s.ptr[i] : '?';
    dst[n] = '\0';
}

int rt__jfr_malformed(struct rt_error *err, size_t off, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return rt_error_set(err, RT_EMALFORMED, "JFR: %s at offset %zu", what, off);
}

int rt__jfr_in_error(const struct rt__jfr_in *r, const char *where, struct rt_error *err)
{
    if (r->rc == RT_EMALFORMED)
        return rt_error_set(err, RT_EMALFORMED, "JFR %s: %s at offset %zu", where, r->why,
                            r->fail_at);
    if (r->rc == RT_ETOOBIG)
        return rt_error_set(err, RT_ETOOBIG, "JFR %s: %s", where, r->why);
    return rt_error_set(err, RT_ENOMEM, "out of memory reading the JFR %s", where);
}

/* ---- Metadata elements (MetadataReader.createElement) ---- */

/* Where an element sits, which says what its attributes and children mean. */
enum ctx { CTX_SKIP, CTX_ROOT, CTX_TOP, CTX_METADATA, CTX_CLASS };

/* Strings of the metadata that name what the decoder reads, tagged once per string. */
enum { K_NONE, K_ID, K_NAME, K_CLASS, K_SUPER, K_DIM, K_CP, K_METADATA, K_FIELD, K_N };
static const char *const keywords[K_N] = {NULL,        "id",           "name",
                                          "class",     "superType",    "dimension",
                                          "constantPool", "metadata",  "field"};

/* The attributes the decoder reads. */
struct attrs {
    struct rt_str id, name, type, super;  /* "id", "name", "class", "superType" */
    struct rt_str dimension;
    bool cp;                               /* "constantPool" present (the JDK's test) */
};

struct mp {
    struct rt__jfr_meta *m;
    struct rt__jfr_in *r;
    struct rt_error *err;
    uint8_t *tags;  /* keyword of each string of the table, K_NONE for the others */
    uint32_t cls;   /* class whose children are being read */
};

/* String i of the metadata's table into *s; false when out of range. */
static bool str_at(const struct rt__jfr_meta *m, uint32_t i, struct rt_str *s)
{
    if (i >= m->nstrings)
        return false;
    *s = m->strings[i];
    return true;
}

/* Parses a decimal uint64 (the JDK's Long.parseLong of an id). */
static bool parse_u64(struct rt_str s, uint64_t *v)
{
    uint64_t x = 0;
    if (s.len == 0 || s.len > 20)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d = (unsigned char)s.ptr[i] - '0';
        if (d > 9 || __builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, d, &x))
            return false;
    }
    *v = x;
    return true;
}

static int bad_attr(struct mp *mp, size_t off, const char *what, struct rt_str s)
{
    char text[41];
    rt__jfr_printable(text, sizeof(text), s);
    return rt__jfr_malformed(mp->err, off, "metadata %s \"%s\" is not a number", what, text);
}

static int add_class(struct mp *mp, const struct attrs *a, size_t off)
{
    struct rt__jfr_meta *m = mp->m;
    uint64_t id;
    if (!parse_u64(a->id, &id))
        return bad_attr(mp, off, "class id", a->id);
    if (rt_array_grow((void **)&m->classes, &m->cap_classes, m->nclasses + 1,
                      sizeof(*m->classes)))
        return rt_error_set(mp->err, RT_ENOMEM, "out of memory reading JFR metadata");
    struct rt__jfr_class *c = &m->classes[m->nclasses];
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->name = a->name;
    c->field_off = (uint32_t)m->nfields;
    c->event = rt_str_eq_cstr(a->super, "jdk.jfr.Event");
    mp->cls = (uint32_t)m->nclasses++;
    return 0;
}

static int add_field(struct mp *mp, const struct attrs *a, size_t off)
{
    struct rt__jfr_meta *m = mp->m;
    uint64_t type_id, dim = 0;
    if (!parse_u64(a->type, &type_id))
        return bad_attr(mp, off, "field type id", a->type);
    if (a->dimension.len && !parse_u64(a->dimension, &dim))
        return bad_attr(mp, off, "field dimension", a->dimension);
    if (dim > 1)
        return rt__jfr_malformed(mp->err, off, "field dimension %llu (only 0 and 1 exist)",
                                 (unsigned long long)dim);
    if (rt_array_grow((void **)&m->fields, &m->cap_fields, m->nfields + 1, sizeof(*m->fields)))
        return rt_error_set(mp->err, RT_ENOMEM, "out of memory reading JFR metadata");
    struct rt__jfr_field *f = &m->fields[m->nfields++];
    f->name = a->name;
    f->type_id = type_id;
    f->cls = RT__JFR_NONE;
    f->cp = a->cp;
    f->array = dim == 1;
    f->role = -1;
    m->classes[mp->cls].nfields++;
    return 0;
}

/* Reads the attributes of an element, keeping those a class or field needs. */
static int read_attrs(struct mp *mp, uint32_t n, struct attrs *a)
{
    struct rt__jfr_in *r = mp->r;
    for (uint32_t i = 0; i < n && !r->rc; i++) {
        size_t off = rt__jfr_off(r);
        uint32_t k = rt__jfr_int(r), iv = rt__jfr_int(r);
        struct rt_str v;
        if (r->rc)
            break;
        if (k >= mp->m->nstrings || !str_at(mp->m, iv, &v))
            return rt__jfr_malformed(mp->err, off, "metadata attribute string index out of "
                                                   "range");
        switch (mp->tags[k]) {
        case K_ID:
            a->id = v;
            break;
        case K_NAME:
            a->name = v;
            break;
        case K_CLASS:
            a->type = v;
            break;
        case K_SUPER:
            a->super = v;
            break;
        case K_DIM:
            a->dimension = v;
            break;
        case K_CP:
            a->cp = true;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* Reads one element and its children; ctx says what they define. */
static int element(struct mp *mp, enum ctx ctx, int depth)
{
    struct rt__jfr_in *r = mp->r;
    size_t off = rt__jfr_off(r);
    if (depth > RT__JFR_MAX_DEPTH)
        return rt__jfr_malformed(mp->err, off, "metadata elements nest deeper than %d",
                                 RT__JFR_MAX_DEPTH);
    uint32_t iname = rt__jfr_int(r);
    uint32_t nattr = rt__jfr_int(r);
    if (r->rc)
        return rt__jfr_in_error(r, "metadata", mp->err);
    if (iname >= mp->m->nstrings)
        return rt__jfr_malformed(mp->err, off, "metadata element name index %u out of range",
                                 iname);
    if (nattr > rt__jfr_left(r) / 2)
        return rt__jfr_malformed(mp->err, off, "metadata element with %u attributes past its "
                                               "end", nattr);
    struct attrs a;
    memset(&a, 0, sizeof(a));
    int rc = read_attrs(mp, nattr, &a);
    uint32_t nchild = rt__jfr_int(r);
    if (rc || r->rc)
        return rc ? rc : rt__jfr_in_error(r, "metadata", mp->err);
    if (nchild > rt__jfr_left(r) / 3)
        return rt__jfr_malformed(mp->err, off, "metadata element with %u children past its "
                                               "end", nchild);
    enum ctx sub = CTX_SKIP;
    uint8_t tag = mp->tags[iname];
    if (ctx == CTX_ROOT)
        sub = CTX_TOP;
    else if (ctx == CTX_TOP && tag == K_METADATA)
        sub = CTX_METADATA;
    else if (ctx == CTX_METADATA && tag == K_CLASS) {
        rc = add_class(mp, &a, off);
        sub = CTX_CLASS;
    } else if (ctx == CTX_CLASS && tag == K_FIELD)
        rc = add_field(mp, &a, off);
    uint32_t cls = mp->cls;
    for (uint32_t i = 0; i < nchild && rc == 0; i++) {
        rc = element(mp, sub, depth + 1);
        mp->cls = cls;
    }
    return rc;
}

/* ---- Types ---- */

static const char *const special_names[RT__JFR_NSPECIAL] = {
    [RT__JFR_T_STRING] = "java.lang.String",
    [RT__JFR_T_SYMBOL] = "jdk.types.Symbol",
    [RT__JFR_T_CLASS] = "java.lang.Class",
    [RT__JFR_T_METHOD] = "jdk.types.Method",
    [RT__JFR_T_FRAMETYPE] = "jdk.types.FrameType",
    [RT__JFR_T_THREADSTATE] = "jdk.types.ThreadState",
    [RT__JFR_T_STACKTRACE] = "jdk.types.StackTrace",
    [RT__JFR_T_STACKFRAME] = "jdk.types.StackFrame",
    [RT__JFR_T_EXEC] = "jdk.ExecutionSample",
    [RT__JFR_T_WALLCLOCK] = "profiler.WallClockSample",
    [RT__JFR_T_SETTING] = "jdk.ActiveSetting",
};

/* The fields each special type's values are read from, by role. */
static const char *const special_roles[RT__JFR_NSPECIAL][RT__JFR_MAX_ROLES] = {
    [RT__JFR_T_SYMBOL] = {"string"},
    [RT__JFR_T_CLASS] = {"name"},
    [RT__JFR_T_METHOD] = {"type", "name", "descriptor"},
    [RT__JFR_T_FRAMETYPE] = {"description"},
    [RT__JFR_T_THREADSTATE] = {"name"},
    [RT__JFR_T_STACKTRACE] = {"frames"},
    [RT__JFR_T_STACKFRAME] = {"method", "type"},
    [RT__JFR_T_EXEC] = {"stackTrace", "state"},
    [RT__JFR_T_WALLCLOCK] = {"stackTrace", "state", "samples"},
    [RT__JFR_T_SETTING] = {"id", "name", "value"},
};

/* Events skipped by kind: jfr-parser's allocation and lock events (parser/parser.go) and
 * their siblings of the JDK and async-profiler. */
static const char *const alloc_events[] = {
    "jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample", "jdk.OldObjectSample", "profiler.LiveObject",
    "profiler.Malloc", "profiler.Free"};
static const char *const lock_events[] = {"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait",
                                          "jdk.ThreadPark", "profiler.NativeLock"};

static bool name_in(struct rt_str s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rt_str_eq_cstr(s, names[i]))
            return true;
    return false;
}

/* The encoding of a type without fields, by its name (ParserFactory.createPrimitiveParser). */
static uint8_t kind_of(struct rt_str name)
{
    static const char *const names[] = {"boolean", "byte", "char",   "short",
                                        "int",     "long", "float",  "double",
                                        "java.lang.String"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (rt_str_eq_cstr(name, names[i]))
            return (uint8_t)(RT__JFR_BOOLEAN + i);
    return RT__JFR_COMPOSITE;
}

static uint8_t category_of(const struct rt__jfr_meta *m, uint32_t c)
{
    struct rt_str name = m->classes[c].name;
    if (c == m->special[RT__JFR_T_EXEC])
        return RT__JFR_EV_EXEC;
    if (c == m->special[RT__JFR_T_WALLCLOCK])
        return RT__JFR_EV_WALLCLOCK;
    if (c == m->special[RT__JFR_T_SETTING])
        return RT__JFR_EV_SETTING;
    if (name_in(name, alloc_events, sizeof(alloc_events) / sizeof(alloc_events[0])))
        return RT__JFR_EV_ALLOC;
    if (name_in(name, lock_events, sizeof(lock_events) / sizeof(lock_events[0])))
        return RT__JFR_EV_LOCK;
    if (rt_str_eq_cstr(name, "jdk.NativeMethodSample"))
        return RT__JFR_EV_NATIVE;
    return RT__JFR_EV_OTHER;
}

/* Whether values of composite c take no bytes (all fields inline empty composites), so that
 * an array of them costs nothing to skip. Cycles count as not empty (reading one fails on
 * depth). */
static bool is_empty(struct rt__jfr_meta *m, uint32_t c, int depth)
{
    struct rt__jfr_class *k = &m->classes[c];
    if (k->empty)
        return k->empty == 2;
    if (k->kind != RT__JFR_COMPOSITE || depth > RT__JFR_MAX_DEPTH)
        return false;
    k->empty = 1; /* provisional: a cycle reads as not empty */
    bool empty = true;
    for (uint32_t i = 0; i < k->nfields && empty; i++) {
        const struct rt__jfr_field *f = &m->fields[k->field_off + i];
        empty = !f->cp && !f->array && is_empty(m, f->cls, depth + 1);
    }
    m->classes[c].empty = empty ? 2 : 1;
    return empty;
}

/* Computes the skip plan of composite c once: its fields flattened into steps, when they are
 * all numbers or constant pool keys (no string, no array) in at most RT__JFR_MAX_OPS steps.
 * Empty composites add nothing; a cycle or a nesting deeper than RT__JFR_MAX_DEPTH has none. */
static bool plan(struct rt__jfr_meta *m, uint32_t c, int depth)
{
    static const uint8_t op_of[] = {
        [RT__JFR_BOOLEAN] = RT__JFR_OP_RAW1, [RT__JFR_BYTE] = RT__JFR_OP_RAW1,
        [RT__JFR_CHAR] = RT__JFR_OP_INT2,    [RT__JFR_SHORT] = RT__JFR_OP_INT2,
        [RT__JFR_INT] = RT__JFR_OP_INT4,     [RT__JFR_LONG] = RT__JFR_OP_INT8,
        [RT__JFR_FLOAT] = RT__JFR_OP_RAW4,   [RT__JFR_DOUBLE] = RT__JFR_OP_RAW8};
    struct rt__jfr_class *k = &m->classes[c];
    if (k->flat)
        return k->flat == 2;
    if (depth > RT__JFR_MAX_DEPTH)
        return false; /* not remembered: a shallower path may still plan it */
    k->flat = 1;      /* provisional: a cycle has no plan */
    uint8_t ops[RT__JFR_MAX_OPS];
    unsigned n = 0;
    for (uint32_t i = 0; i < k->nfields; i++) {
        const struct rt__jfr_field *f = &m->fields[k->field_off + i];
        const struct rt__jfr_class *v = &m->classes[f->cls];
        if (f->array || (!f->cp && v->kind == RT__JFR_STRING))
            return false;
        if (!f->cp && v->kind == RT__JFR_COMPOSITE) {
            if (v->empty == 2)
                continue;
            if (!plan(m, f->cls, depth + 1) || n + v->nops > RT__JFR_MAX_OPS)
                return false;
            memcpy(ops + n, v->ops, v->nops);
            n += v->nops;
            continue;
        }
        if (n == RT__JFR_MAX_OPS)
            return false;
        ops[n++] = f->cp ? RT__JFR_OP_INT8 : op_of[v->kind];
    }
    memcpy(k->ops, ops, n);
    k->nops = (uint8_t)n;
    k->flat = 2;
    return true;
}

/* Indexes classes by id, resolves field types, kinds, special types, roles and categories. */
static int resolve(struct rt__jfr_meta *m, size_t off, struct rt_error *err)
{
    for (size_t i = 0; i < m->nclasses; i++)
        if (rt__jfr_map_put(&m->by_id, m->classes[i].id, (uint32_t)i))
            return rt_error_set(err, RT_ENOMEM, "out of memory reading JFR metadata");
    for (int t = 0; t < RT__JFR_NSPECIAL; t++)
        m->special[t] = RT__JFR_NONE;
    for (size_t i = 0; i < m->nclasses; i++) {
        struct rt__jfr_class *c = &m->classes[i];
        c->kind = c->nfields ? RT__JFR_COMPOSITE : kind_of(c->name);
        for (int t = 0; t < RT__JFR_NSPECIAL; t++)
            if (m->special[t] == RT__JFR_NONE && rt_str_eq_cstr(c->name, special_names[t]))
                m->special[t] = (uint32_t)i;
    }
    for (size_t i = 0; i < m->nfields; i++) {
        struct rt__jfr_field *f = &m->fields[i];
        f->cls = rt__jfr_map_get(&m->by_id, f->type_id);
        char name[61];
        rt__jfr_printable(name, sizeof(name), f->name);
        if (f->cls == RT__JFR_NONE)
            return rt__jfr_malformed(err, off, "metadata field \"%s\" has undefined type id "
                                               "%llu", name, (unsigned long long)f->type_id);
    }
    for (int t = 0; t < RT__JFR_NSPECIAL; t++) {
        uint32_t c = m->special[t];
        for (uint32_t i = 0; c != RT__JFR_NONE && i < m->classes[c].nfields; i++) {
            struct rt__jfr_field *f = &m->fields[m->classes[c].field_off + i];
            for (int k = 0; k < RT__JFR_MAX_ROLES && special_roles[t][k]; k++)
                if (rt_str_eq_cstr(f->name, special_roles[t][k]))
                    f->role = (int8_t)k;
        }
    }
    for (size_t i = 0; i < m->nclasses; i++) {
        is_empty(m, (uint32_t)i, 0);
        m->classes[i].category = m->classes[i].event ? category_of(m, (uint32_t)i) : 0;
    }
    for (size_t i = 0; i < m->nclasses; i++)
        if (m->classes[i].kind == RT__JFR_COMPOSITE)
            plan(m, (uint32_t)i, 0);
    return 0;
}

/* Reads the string table (MetadataReader's pool). */
static int read_strings(struct rt__jfr_meta *m, struct rt__jfr_in *r,
                        const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                        struct rt_error *err)
{
    size_t off = rt__jfr_off(r);
    uint32_t n = rt__jfr_int(r);
    if (r->rc)
        return rt__jfr_in_error(r, "metadata", err);
    if (n > lim->max_strings)
        return rt_error_set(err, RT_ETOOBIG,
                            "JFR metadata declares %u strings, over the limit of %zu "
                            "(max_strings)", n, lim->max_strings);
    if (n > rt__jfr_left(r))
        return rt__jfr_malformed(err, off, "metadata string count %u past its end", n);
    m->strings = calloc((size_t)n + 1, sizeof(*m->strings));
    if (!m->strings)
        return rt_error_set(err, RT_ENOMEM, "out of memory reading JFR metadata");
    m->nstrings = n;
    for (uint32_t i = 0; i < n && !r->rc; i++) {
        struct rt__jfr_val v = {{0}, 0, 0};
        size_t at = rt__jfr_off(r);
        rt__jfr_read_string(r, a, &v);
        if (v.kind == RT__JV_STRREF)
            return rt__jfr_malformed(err, at, "metadata string refers to a constant pool");
        m->strings[i] = v.kind == RT__JV_STR ? (struct rt_str){v.ptr, v.n} : RT_STR_LIT("");
    }
    return r->rc ? rt__jfr_in_error(r, "metadata", err) : 0;
}

int rt__jfr_meta_read(struct rt__jfr_meta *m, struct rt__jfr_in *r,
                      const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                      struct rt_error *err)
{
    size_t off = rt__jfr_off(r);
    uint32_t size = rt__jfr_int(r);
    if (r->rc)
        return rt__jfr_in_error(r, "metadata", err);
    if (size == 0 || size > (size_t)(r->end - (r->base + off)))
        return rt__jfr_malformed(err, off, "metadata event size %u past the chunk's end", size);
    r->end = r->base + off + size;
    uint64_t type = rt__jfr_long(r);
    rt__jfr_long(r); /* start time */
    rt__jfr_long(r); /* duration */
    rt__jfr_long(r); /* metadata id */
    if (r->rc)
        return rt__jfr_in_error(r, "metadata", err);
    if (type != 0)
        return rt__jfr_malformed(err, off, "metadata event has type id %llu, not 0",
                                 (unsigned long long)type);
    int rc = read_strings(m, r, lim, a, err);
    struct mp mp = {m, r, err, NULL, 0};
    if (rc == 0 && !(mp.tags = calloc(m->nstrings + 1, 1)))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory reading JFR metadata");
    for (size_t i = 0; rc == 0 && i < m->nstrings; i++)
        for (int k = 1; k < K_N && m->strings[i].len <= 12; k++)
            if (rt_str_eq_cstr(m->strings[i], keywords[k]))
                mp.tags[i] = (uint8_t)k;
    rc = rc ? rc : element(&mp, CTX_ROOT, 0);
    free(mp.tags);
    return rc ? rc : resolve(m, off, err);
}

void rt__jfr_meta_cleanup(struct rt__jfr_meta *m)
{
    free(m->strings);
    free(m->classes);
    free(m->fields);
    rt__jfr_map_cleanup(&m->by_id);
    memset(m, 0, sizeof(*m));
}
