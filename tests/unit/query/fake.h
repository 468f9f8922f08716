/* Test helpers for the query engine: an in-memory source of stacks and frame names (standing
 * in for the store), a helper that adds a synthetic profile to a query context, and getters
 * for the fields of a JSON answer. */
#ifndef RT_TEST_QUERY_FAKE_H
#define RT_TEST_QUERY_FAKE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query/query_internal.h"
#include "rt/producer.h"

#define FAKE_FRAME_BASE 1000u /* frame ids start here, so ids are not indexes */
#define FAKE_STACK_BASE 500u  /* stack ids likewise */
#define FAKE_MAX 4096

struct fake {
    char *names[FAKE_MAX * 8];
    uint32_t nnames;
    uint32_t pool[FAKE_MAX * 16];
    uint32_t npool;
    uint32_t off[FAKE_MAX], depth[FAKE_MAX];
    uint32_t nstacks;
};

static inline uint32_t fake_frame(struct fake *f, const char *name, size_t len)
{
    for (uint32_t i = 0; i < f->nnames; i++)
        if (strlen(f->names[i]) == len && memcmp(f->names[i], name, len) == 0)
            return FAKE_FRAME_BASE + i;
    f->names[f->nnames] = strndup(name, len);
    return FAKE_FRAME_BASE + f->nnames++;
}

/* Stack id of a folded stack "root;...;leaf". */
static inline uint32_t fake_stack(struct fake *f, const char *folded)
{
    uint32_t ids[RT_MAX_STACK_DEPTH], n = 0;
    for (const char *p = folded;;) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        ids[n++] = fake_frame(f, p, len);
        if (!e)
            break;
        p = e + 1;
    }
    for (uint32_t s = 0; s < f->nstacks; s++)
        if (f->depth[s] == n && memcmp(f->pool + f->off[s], ids, n * sizeof(*ids)) == 0)
            return FAKE_STACK_BASE + s;
    f->off[f->nstacks] = f->npool;
    f->depth[f->nstacks] = n;
    memcpy(f->pool + f->npool, ids, n * sizeof(*ids));
    f->npool += n;
    return FAKE_STACK_BASE + f->nstacks++;
}

static int fake_src_stack(void *ud, uint32_t id, uint32_t *frames, size_t cap, size_t *depth)
{
    struct fake *f = ud;
    if (id < FAKE_STACK_BASE || id - FAKE_STACK_BASE >= f->nstacks)
        return RT_ENOTFOUND;
    *depth = f->depth[id - FAKE_STACK_BASE];
    if (*depth > cap)
        return RT_ETOOBIG;
    memcpy(frames, f->pool + f->off[id - FAKE_STACK_BASE], *depth * sizeof(*frames));
    return 0;
}

static const char *fake_src_name(void *ud, uint32_t id, struct rt_arena *a)
{
    struct fake *f = ud;
    if (id < FAKE_FRAME_BASE || id - FAKE_FRAME_BASE >= f->nnames)
        return NULL;
    const char *name = f->names[id - FAKE_FRAME_BASE];
    return rt_arena_strndup(a, name, strlen(name));
}

static inline struct fake *fake_new(void)
{
    return calloc(1, sizeof(struct fake));
}

static inline void fake_free(struct fake *f)
{
    for (uint32_t i = 0; f && i < f->nnames; i++)
        free(f->names[i]);
    free(f);
}

static inline struct rt__query_src fake_src(struct fake *f)
{
    struct rt__query_src src = {fake_src_stack, fake_src_name, f, NULL};
    return src;
}

/* One row of a synthetic profile. */
struct frow {
    const char *stack;  /* folded */
    double samples;
    int64_t value_ns;
};

/* Optional metadata of a synthetic profile. */
struct fmeta {
    const char *instance;
    int64_t start_ns, duration_ns;
    bool no_counts;          /* has_counts false */
    int64_t thread_cpu_ns;   /* 0 = absent (tests use -1 semantics through this) */
    bool has_thread_cpu;
    const char *producer;    /* rt_producer name; NULL: unknown */
    int64_t process_cpu_ns;  /* absent unless has_process_cpu */
    bool has_process_cpu;
};

static inline int fake_add(struct rt__query_ctx *c, struct fake *f, int k, const struct fmeta *fm,
                    const struct frow *rows, size_t n)
{
    struct rt_store_row *r = calloc(n ? n : 1, sizeof(*r));
    struct rt_profile_meta m = {0};
    m.instance = fm->instance ? fm->instance : "i1";
    m.time_ns = fm->start_ns;
    m.duration_ns = fm->duration_ns;
    m.period_ns = 10000000;
    m.thread_cpu_ns = fm->has_thread_cpu ? fm->thread_cpu_ns : -1;
    m.process_cpu_ns = fm->has_process_cpu ? fm->process_cpu_ns : -1;
    m.has_counts = !fm->no_counts;
    for (size_t i = 0; i < n; i++) {
        r[i].stack_id = fake_stack(f, rows[i].stack);
        r[i].samples = rows[i].samples;
        r[i].value_ns = rows[i].value_ns;
        m.samples += rows[i].samples;
        m.value_ns += rows[i].value_ns;
    }
    /* as ingest settles it (rt/producer.h) */
    const struct rt_producer *prod = rt_producer_by_name(fm->producer, c->type);
    m.producer = prod->name;
    m.cpu_scale = rt_producer_cpu_scale(
        prod, rt_producer_os_cpu_ns(prod, m.thread_cpu_ns, m.process_cpu_ns), m.value_ns);
    int rc = rt__query_add_profile(c, k, &m, r, n);
    free(r);
    return rc;
}

/* Index of the function named name in a finished context, or -1. */
static inline int fake_fn(const struct rt__query_ctx *c, const char *name)
{
    for (uint32_t i = 0; i < c->nfns; i++)
        if (strcmp(c->fns[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Ends a test's query: cleans up c and frees f. */
static inline void fake_done(struct rt__query_ctx *c, struct fake *f)
{
    rt__query_ctx_cleanup(c);
    fake_free(f);
}

/* Field key of the JSON object o as a string, real or integer (NULL or 0 when absent). */
static inline const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static inline double jreal(const json_t *o, const char *key)
{
    return json_real_value(json_object_get(o, key));
}

static inline long long jint(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* The entry of an answer's "functions" named name, or NULL. */
static inline json_t *jfn(json_t *out, const char *name)
{
    size_t i;
    json_t *fn;
    json_array_foreach(json_object_get(out, "functions"), i, fn)
        if (strcmp(json_string_value(json_object_get(fn, "name")), name) == 0)
            return fn;
    return NULL;
}

/* A test's pseudo-random numbers in [0, n) (xorshift64, the same sequence every run). */
static inline uint32_t fake_rnd(uint32_t n)
{
    static uint64_t x = 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return (uint32_t)(x % n);
}

#define S_NS 1000000000LL
#define MS_NS 1000000LL

#endif
