/* Small helpers shared by the benchmarks in bench/: a monotonic clock, medians, reading a
 * file whole, temporary directories removed afterwards, the ingest input files, and the diff
 * benchmark's data (seeded copies of a real profile). Header-only, because every
 * bench/<name>.c is one binary (Makefile). Benchmarks print figures; they are not tests. */
#ifndef RT_BENCH_H
#define RT_BENCH_H

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/profile.h"

/* Where the shared pprof files sit, relative to the repository root (bench/run.sh runs
 * from there); RT_BENCH_DATA overrides it. */
#define BENCH_DEFAULT_DATA "../shared/data/pprof"

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v in place); 0 when n is 0. */
static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Reads path whole into a malloc'd buffer the caller frees; NULL (errno set) on failure. */
static inline unsigned char *bench_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            unsigned char *nd = realloc(data, ncap);
            if (!nd) {
                free(data);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            data = nd, cap = ncap;
        }
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(data);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return data;
}

/* The data directory: RT_BENCH_DATA, else BENCH_DEFAULT_DATA. */
static inline const char *bench_data_dir(void)
{
    const char *d = getenv("RT_BENCH_DATA");
    return d && *d ? d : BENCH_DEFAULT_DATA;
}

/* Makes a fresh directory under base into buf; returns buf or NULL. */
static inline char *bench_mkdtemp_in(char *buf, size_t size, const char *base, const char *tag)
{
    snprintf(buf, size, "%s/rt-%s-XXXXXX", base, tag);
    return mkdtemp(buf);
}

/* Makes a fresh directory under $TMPDIR (or /tmp) into buf; returns buf or NULL. */
static inline char *bench_mkdtemp(char *buf, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    return bench_mkdtemp_in(buf, size, tmp && *tmp ? tmp : "/tmp", tag);
}

static inline int bench_rm_one(const char *path, const struct stat *sb, int flag,
                               struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a directory made by bench_mkdtemp and everything in it. */
static inline void bench_rm_tree(const char *dir)
{
    nftw(dir, bench_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- Ingest input: bench_ingest's and bench_store's uploads ------------------------- */

/* The cpu and wall pprof files of the data directory that ingest should accept; any it
 * refuses is skipped with the reason. The anon file is a raw (not gzip) pprof. */
static const char *const BENCH_INGEST_FILES[] = {
    "gdu__default.pgo",           "google-pprof__large.cpu.pb.gz",
    "parca__fib.pb.gz",           "parca__labels.pb.gz",
    "pprofutils__labelframes.in.pprof", "pprofutils__anon.in.pprof",
    "parca__fgprof.pb.gz",        "google-pprof__sample.cpu.pb.gz",
};
#define BENCH_INGEST_NFILES (sizeof(BENCH_INGEST_FILES) / sizeof(BENCH_INGEST_FILES[0]))

/* Start of the first upload or profile (Unix ns), and of upload i in bench_ingest's schedule:
 * distinct per upload, 10 s apart, so nothing dedups. */
#define BENCH_T0_NS INT64_C(1700000000000000000)
#define BENCH_UPLOAD_STEP_NS INT64_C(10000000000)

/* The ingest parameters of upload i of an input (instance = the file's name): a profile_id
 * and a start of its own. id (idsize bytes, >= 48) receives the profile_id q points to. */
static inline void bench_upload_params(struct rt_ingest_params *q, const char *service,
                                       const char *file, size_t i, char *id, size_t idsize)
{
    rt_ingest_params_init(q);
    snprintf(id, idsize, "bench-%08zx-0000-4000-8000-000000000000", i);
    q->service = service;
    q->instance = file;
    q->runtime = "go";
    q->profile_id = id;
    q->start_ns = BENCH_T0_NS + (int64_t)i * BENCH_UPLOAD_STEP_NS;
}

/* ---- Diff data: seeded copies of a real profile ---------------------------------------- */

/* Each derived profile covers 6 s, back to back (600 make a 1 h window). */
#define BENCH_PROFILE_NS INT64_C(6000000000)

/* splitmix64: a small seeded generator, so every run builds the same store. */
static inline uint64_t bench_rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double bench_rng_unit(uint64_t *s)
{
    return (bench_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* A Poisson draw of mean lambda (Knuth below 30, a rounded normal above). */
static inline double bench_rng_poisson(uint64_t *s, double lambda)
{
    if (lambda <= 0)
        return 0;
    if (lambda >= 30) {
        double u1 = bench_rng_unit(s), u2 = bench_rng_unit(s);
        double g = sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
        double v = floor(lambda + sqrt(lambda) * g + 0.5);
        return v > 0 ? v : 0;
    }
    double l = exp(-lambda), p = 1;
    int k = 0;
    do {
        k++;
        p *= bench_rng_unit(s);
    } while (p > l);
    return k - 1;
}

/* The source profile, parsed once, and the function the current window grows. */
struct bench_source {
    struct rt_profile *p; /* owned; free with rt_profile_free */
    uint32_t grow_id;     /* frame id (in p) of the grown function */
    double scale;         /* per-stack mean = samples * scale (source duration -> 6 s) */
    int64_t period_ns;    /* the source's sampling period (10 ms when it names none) */
};

struct bench_leaf {
    uint32_t id;      /* frame id */
    int64_t self_ns;  /* value of the stacks ending in it */
};

static inline int bench_cmp_leaf(const void *a, const void *b)
{
    const struct bench_leaf *x = a, *y = b;
    return (x->self_ns < y->self_ns) - (x->self_ns > y->self_ns);
}

/* Picks the grown function: the one named, else the 5th by self value (large enough to
 * matter, small enough that tripling it does not swamp the profile). 0 or -1. */
static inline int bench_pick_grow(struct bench_source *src, const char *name)
{
    struct rt_profile *p = src->p;
    if (name) {
        int64_t id = rt_intern_find(&p->frames, rt_str_from(name));
        if (id < 0) {
            fprintf(stderr, "bench: no frame %s in the source profile\n", name);
            return -1;
        }
        src->grow_id = (uint32_t)id;
        return 0;
    }
    struct bench_leaf *l = calloc(p->frames.count, sizeof(*l));
    if (!l)
        return -1;
    for (uint32_t i = 0; i < p->frames.count; i++)
        l[i].id = i;
    for (size_t k = 0; k < p->nstacks; k++) {
        const struct rt_profile_stack *st = &p->stacks[k];
        l[p->frame_ids[st->off + st->depth - 1]].self_ns += st->value_ns;
    }
    qsort(l, p->frames.count, sizeof(*l), bench_cmp_leaf);
    src->grow_id = l[p->frames.count > 4 ? 4 : 0].id;
    free(l);
    return 0;
}

/* Parses dir/file (its first profile) into src and picks the grown function (grow, or NULL
 * for the 5th by self). 0, or -1 with the reason on stderr (src->p then NULL or owned). */
static inline int bench_load_source(struct bench_source *src, const char *dir,
                                    const char *file, const char *grow)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    size_t len;
    unsigned char *data = bench_read_file(path, &len);
    if (!data) {
        fprintf(stderr, "bench: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct rt_ingest_limits lim;
    struct rt_ingest_params q;
    rt_ingest_limits_default(&lim);
    rt_ingest_params_init(&q);
    struct rt_profile *ps[2];
    size_t np = 0;
    struct rt_error err = {0};
    int rc = rt_ingest_parse(data, len, &q, &lim, ps, &np, &err);
    free(data);
    if (rc || np == 0) {
        fprintf(stderr, "bench: rt_ingest_parse %s: %s\n", path, err.msg);
        return -1;
    }
    for (size_t k = 1; k < np; k++)
        rt_profile_free(ps[k]);
    src->p = ps[0];
    src->period_ns = src->p->period_ns > 0 ? src->p->period_ns : 10000000;
    src->scale = src->p->duration_ns > 0 ? (double)BENCH_PROFILE_NS / src->p->duration_ns : 1.0;
    return bench_pick_grow(src, grow);
}

/* Copy k of the source for (service, instance), starting at BENCH_T0_NS + slot * 6 s: stack
 * counts drawn Poisson around the source's rate over 6 s, the grown function's stacks (leaf =
 * it) with mean times factor when cur is set. k makes the profile_id, so it must be unique
 * in the store. Returns a profile the caller frees, or NULL (ENOMEM). */
static inline struct rt_profile *bench_derive(const struct bench_source *src,
                                              const char *service, const char *instance,
                                              size_t k, size_t slot, bool cur, double factor,
                                              uint64_t *rng)
{
    const struct rt_profile *s = src->p;
    struct rt_profile *p = rt_profile_new(s->type);
    if (!p)
        return NULL;
    char id[64];
    snprintf(id, sizeof(id), "bench-%08zx-0000-4000-8000-00000000diff", k);
    if (rt_profile_set_str(&p->service, service) || rt_profile_set_str(&p->instance, instance) ||
        rt_profile_set_str(&p->runtime, "go") || rt_profile_set_str(&p->profile_id, id))
        goto out_free;
    p->time_ns = BENCH_T0_NS + (int64_t)slot * BENCH_PROFILE_NS;
    p->duration_ns = BENCH_PROFILE_NS;
    p->period_ns = src->period_ns;
    p->has_counts = true;
    /* Same frame ids as the source: intern its names in id order. */
    for (uint32_t f = 0; f < s->frames.count; f++) {
        uint32_t got;
        struct rt_str name = {s->frames.strs[f], s->frames.lens[f]};
        if (rt_intern_get(&p->frames, name, &got) || got != f)
            goto out_free;
    }
    for (size_t j = 0; j < s->nstacks; j++) {
        const struct rt_profile_stack *st = &s->stacks[j];
        const uint32_t *ids = &s->frame_ids[st->off];
        double mean = st->samples * src->scale;
        if (cur && ids[st->depth - 1] == src->grow_id)
            mean *= factor;
        double n = bench_rng_poisson(rng, mean);
        if (n > 0 && rt_profile_add_stack_ids(p, ids, st->depth, n,
                                              (int64_t)n * src->period_ns))
            goto out_free;
    }
    return p;
out_free:
    rt_profile_free(p);
    return NULL;
}

#endif
