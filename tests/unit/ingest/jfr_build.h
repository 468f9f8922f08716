/* Test helper: writes small JFR recordings (chunk header, metadata event, settings, sample
 * and allocation events, one checkpoint) with compressed or big-endian integers, as the JDK
 * and async-profiler lay them out, so that tests and fuzz seeds control every field. The JDK's
 * `jfr summary` and `jfr print` read what it writes with compressed integers. */
#ifndef RT_TEST_JFR_BUILD_H
#define RT_TEST_JFR_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable JFR writer. */
struct w {
    uint8_t *b;        /* the bytes written (malloc'd, the caller frees) */
    size_t n, cap;     /* bytes written, allocated */
    bool compressed;   /* the current chunk's integer encoding */
};

static void put(struct w *w, const void *p, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 256;
        w->b = realloc(w->b, w->cap);
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void u8(struct w *w, uint8_t v)
{
    put(w, &v, 1);
}

static void be(struct w *w, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        u8(w, (uint8_t)(v >> (8 * i)));
}

/* RecordingOutput's compressed integer: 7 bits a byte, the 9th byte whole. */
static void var(struct w *w, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 7) {
        if (v < 0x80) {
            u8(w, (uint8_t)v);
            return;
        }
        u8(w, (uint8_t)(v | 0x80));
    }
    u8(w, (uint8_t)v);
}

static void jint(struct w *w, uint64_t v)
{
    if (w->compressed)
        var(w, v);
    else
        be(w, v, 4);
}

static void jlong(struct w *w, uint64_t v)
{
    if (w->compressed)
        var(w, v);
    else
        be(w, v, 8);
}

static void jstr(struct w *w, const char *s)
{
    u8(w, 3);
    jint(w, strlen(s));
    put(w, s, strlen(s));
}

/* Starts a sized event: 4 bytes reserved for its size (a padded compressed integer, as the
 * JDK writes it), then its type id. Returns where it starts. */
static size_t begin(struct w *w, uint64_t type)
{
    size_t at = w->n;
    be(w, 0, 4);
    jlong(w, type);
    return at;
}

static void end(struct w *w, size_t at)
{
    uint32_t v = (uint32_t)(w->n - at);
    if (w->compressed) {
        for (int i = 0; i < 3; i++)
            w->b[at + i] = (uint8_t)((v >> (7 * i) & 0x7f) | 0x80);
        w->b[at + 3] = (uint8_t)(v >> 21 & 0x7f);
    } else {
        for (int i = 0; i < 4; i++)
            w->b[at + i] = (uint8_t)(v >> (24 - 8 * i));
    }
}

enum { T_LONG = 10, T_INT, T_BOOL, T_STRING, T_SYMBOL = 20, T_CLASS, T_METHOD, T_FTYPE,
       T_FRAME, T_TRACE, T_STATE, E_EXEC = 100, E_ALLOC, E_SETTING, E_WALL };

struct fspec {
    const char *name;
    int type;
    bool cp, array;
};
struct cspec {
    int id;
    const char *name;
    bool event;
    struct fspec f[4];
};

static const struct cspec classes[] = {
    {T_LONG, "long", 0, {{0}}},
    {T_INT, "int", 0, {{0}}},
    {T_BOOL, "boolean", 0, {{0}}},
    {T_STRING, "java.lang.String", 0, {{0}}},
    {T_SYMBOL, "jdk.types.Symbol", 0, {{"string", T_STRING, 0, 0}}},
    {T_CLASS, "java.lang.Class", 0, {{"name", T_SYMBOL, 1, 0}}},
    {T_METHOD, "jdk.types.Method", 0,
     {{"type", T_CLASS, 1, 0}, {"name", T_SYMBOL, 1, 0}, {"descriptor", T_SYMBOL, 1, 0}}},
    {T_FTYPE, "jdk.types.FrameType", 0, {{"description", T_STRING, 0, 0}}},
    {T_FRAME, "jdk.types.StackFrame", 0,
     {{"method", T_METHOD, 1, 0}, {"lineNumber", T_INT, 0, 0}, {"type", T_FTYPE, 1, 0}}},
    {T_TRACE, "jdk.types.StackTrace", 0,
     {{"truncated", T_BOOL, 0, 0}, {"frames", T_FRAME, 0, 1}}},
    {T_STATE, "jdk.types.ThreadState", 0, {{"name", T_STRING, 0, 0}}},
    {E_EXEC, "jdk.ExecutionSample", 1,
     {{"startTime", T_LONG, 0, 0}, {"stackTrace", T_TRACE, 1, 0}, {"state", T_STATE, 1, 0}}},
    {E_ALLOC, "jdk.ObjectAllocationInNewTLAB", 1,
     {{"startTime", T_LONG, 0, 0}, {"stackTrace", T_TRACE, 1, 0}, {"tlabSize", T_LONG, 0, 0}}},
    {E_SETTING, "jdk.ActiveSetting", 1,
     {{"id", T_LONG, 0, 0}, {"name", T_STRING, 0, 0}, {"value", T_STRING, 0, 0}}},
    {E_WALL, "profiler.WallClockSample", 1,
     {{"startTime", T_LONG, 0, 0}, {"stackTrace", T_TRACE, 1, 0}, {"state", T_STATE, 1, 0},
      {"samples", T_INT, 0, 0}}},
};

/* The metadata's string table, built as elements name strings. */
struct strtab {
    const char *s[128];
    int n;
};

static uint32_t sidx(struct strtab *t, const char *s)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->s[i], s))
            return (uint32_t)i;
    t->s[t->n] = s;
    return (uint32_t)t->n++;
}

static void element(struct w *e, struct strtab *t, const char *name, int nattr,
                    const char **attrs, int nchild)
{
    jint(e, sidx(t, name));
    jint(e, (uint64_t)nattr);
    for (int i = 0; i < nattr; i++) {
        jint(e, sidx(t, attrs[2 * i]));
        jint(e, sidx(t, attrs[2 * i + 1]));
    }
    jint(e, (uint64_t)nchild);
}

/* The id attribute of class c of the table above, as text. */
static const char *id_of(int type)
{
    static char ids[sizeof(classes) / sizeof(classes[0])][16];
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (classes[i].id == type) {
            snprintf(ids[i], sizeof(ids[i]), "%d", type);
            return ids[i];
        }
    return "0";
}

static void metadata(struct w *w)
{
    struct strtab t = {{0}, 0};
    struct w e = {NULL, 0, 0, w->compressed};
    size_t nc = sizeof(classes) / sizeof(classes[0]);
    element(&e, &t, "root", 0, NULL, 2);
    element(&e, &t, "metadata", 0, NULL, (int)nc);
    for (size_t i = 0; i < nc; i++) {
        const struct cspec *c = &classes[i];
        int nf = 0;
        while (nf < 4 && c->f[nf].name)
            nf++;
        /* Symbol, FrameType and ThreadState are simple types, as the JDK declares them */
        bool simple = c->id == T_SYMBOL || c->id == T_FTYPE || c->id == T_STATE;
        const char *a[] = {"id", id_of(c->id), "name", c->name,
                           c->event ? "superType" : "simpleType",
                           c->event ? "jdk.jfr.Event" : "true"};
        element(&e, &t, "class", c->event || simple ? 3 : 2, a, nf);
        for (int k = 0; k < nf; k++) {
            const char *fa[8] = {"name", c->f[k].name, "class", id_of(c->f[k].type)};
            int n = 2;
            if (c->f[k].cp)
                fa[2 * n] = "constantPool", fa[2 * n + 1] = "true", n++;
            if (c->f[k].array)
                fa[2 * n] = "dimension", fa[2 * n + 1] = "1", n++;
            element(&e, &t, "field", n, fa, 0);
        }
    }
    element(&e, &t, "region", 0, NULL, 0);
    size_t at = begin(w, 0);
    jlong(w, 0); /* start */
    jlong(w, 0); /* duration */
    jlong(w, 1); /* metadata id */
    jint(w, (uint64_t)t.n);
    for (int i = 0; i < t.n; i++)
        jstr(w, t.s[i]);
    put(w, e.b, e.n);
    end(w, at);
    free(e.b);
}

/* What a built recording holds. */
struct opts {
    bool uncompressed;
    int exec1, exec2;      /* ExecutionSample events on stack trace 1 and 2 */
    int sleeping;          /* ExecutionSample events in STATE_SLEEPING (stack 1) */
    int alloc;             /* allocation events */
    int wall_events;       /* WallClockSample events, each of wall_samples samples */
    int wall_samples;
    bool deep;             /* one ExecutionSample on stack trace 3, 1,100 frames deep */
    const char *period;    /* "period" of jdk.ExecutionSample (JDK style), NULL = none */
    const char *event;     /* async-profiler's "event" setting, NULL = none */
    const char *wall;      /* async-profiler's "wall" setting of jdk.ExecutionSample */
    bool enabled;          /* "enabled" "true" of jdk.ExecutionSample */
    uint32_t huge_count;   /* a constant pool declaring this many entries, 0 = none */
    int64_t start_ns, duration_ns;
    unsigned major;        /* 0 = 2 */
};

static void setting(struct w *w, uint64_t id, const char *name, const char *value)
{
    size_t at = begin(w, E_SETTING);
    jlong(w, id);
    jstr(w, name);
    jstr(w, value);
    end(w, at);
}

static void frame(struct w *w, uint64_t method, uint64_t ftype)
{
    jlong(w, method);
    jint(w, 42); /* line number: never shown */
    jlong(w, ftype);
}

static void checkpoint(struct w *w, const struct opts *o)
{
    static const char *const syms[] = {"", "com/shop/Cart", "total", "()J", "java/lang/Thread",
                                       "run", "()V", "libc.so.6", "write", "()L;"};
    size_t at = begin(w, 1);
    jlong(w, 0);
    jlong(w, 0);
    jlong(w, 0); /* delta: the only checkpoint */
    u8(w, 0);
    jint(w, o->huge_count ? 7 : 6);
    jlong(w, T_FTYPE);
    jint(w, 2);
    jlong(w, 1), jstr(w, "JIT compiled"), jlong(w, 2), jstr(w, "Native");
    jlong(w, T_STATE);
    jint(w, 2);
    jlong(w, 1), jstr(w, "STATE_RUNNABLE"), jlong(w, 2), jstr(w, "STATE_SLEEPING");
    jlong(w, T_SYMBOL);
    jint(w, 9);
    for (int i = 1; i <= 9; i++)
        jlong(w, (uint64_t)i), jstr(w, syms[i]);
    jlong(w, T_CLASS);
    jint(w, 3);
    jlong(w, 1), jlong(w, 1), jlong(w, 2), jlong(w, 4), jlong(w, 3), jlong(w, 7);
    jlong(w, T_METHOD); /* 1 Cart.total, 2 Thread.run, 3 the native symbol write */
    jint(w, 3);
    jlong(w, 1), jlong(w, 1), jlong(w, 2), jlong(w, 3);
    jlong(w, 2), jlong(w, 2), jlong(w, 5), jlong(w, 6);
    jlong(w, 3), jlong(w, 3), jlong(w, 8), jlong(w, 9);
    jlong(w, T_TRACE); /* leaf first: 1 Cart.total < Thread.run; 2 write < Cart.total < run */
    jint(w, o->deep ? 3 : 2);
    jlong(w, 1), u8(w, 0), jint(w, 2), frame(w, 1, 1), frame(w, 2, 1);
    jlong(w, 2), u8(w, 0), jint(w, 3), frame(w, 3, 2), frame(w, 1, 1), frame(w, 2, 1);
    if (o->deep) {
        jlong(w, 3), u8(w, 1), jint(w, 1100);
        for (int i = 0; i < 1100; i++)
            frame(w, i ? 2 : 1, 1);
    }
    if (o->huge_count) {
        jlong(w, T_SYMBOL);
        jint(w, o->huge_count);
    }
    end(w, at);
}

/* One chunk into w. */
static void chunk(struct w *w, const struct opts *o)
{
    size_t start = w->n;
    put(w, "FLR\0", 4);
    be(w, o->major ? o->major : 2, 2);
    be(w, 1, 2);
    for (int i = 0; i < 3; i++)
        be(w, 0, 8); /* size, constant pool, metadata: patched below */
    be(w, (uint64_t)(o->start_ns ? o->start_ns : 1700000000000000000LL), 8);
    be(w, (uint64_t)(o->duration_ns ? o->duration_ns : 10000000000LL), 8);
    be(w, 0, 8);
    be(w, 1000000000, 8);
    be(w, o->uncompressed ? 0 : 1, 4);
    w->compressed = !o->uncompressed;
    size_t meta = w->n - start;
    metadata(w);
    if (o->period)
        setting(w, E_EXEC, "period", o->period);
    if (o->event)
        setting(w, 999, "event", o->event);
    if (o->wall)
        setting(w, E_EXEC, "wall", o->wall);
    if (o->enabled)
        setting(w, E_EXEC, "enabled", "true");
    int e1 = o->exec1, e2 = e1 + o->exec2, sl = e2 + o->sleeping; /* events' ends */
    for (int i = 0; i < sl + o->deep; i++) {
        size_t at = begin(w, E_EXEC);
        jlong(w, 123);
        jlong(w, i < e1 ? 1 : i < e2 ? 2 : i < sl ? 1 : 3); /* stack trace */
        jlong(w, i >= e2 && i < sl ? 2 : 1);                 /* thread state */
        end(w, at);
    }
    for (int i = 0; i < o->alloc; i++) {
        size_t at = begin(w, E_ALLOC);
        jlong(w, 123), jlong(w, 2), jlong(w, 4096);
        end(w, at);
    }
    for (int i = 0; i < o->wall_events; i++) {
        size_t at = begin(w, E_WALL);
        jlong(w, 123), jlong(w, 2), jlong(w, 2), jint(w, (uint64_t)o->wall_samples);
        end(w, at);
    }
    size_t cp = w->n - start;
    checkpoint(w, o);
    uint64_t hdr[3] = {w->n - start, cp, meta};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 8; i++)
            w->b[start + 8 + 8 * k + i] = (uint8_t)(hdr[k] >> (56 - 8 * i));
}

/* Writes v big-endian into p[0..8). */
static void set_be(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* A recording of one chunk as o says (malloc'd, the caller frees); its size in *n. */
static uint8_t *built(const struct opts *o, size_t *n)
{
    struct w w = {NULL, 0, 0, true};
    chunk(&w, o);
    *n = w.n;
    return w.b;
}

#endif
