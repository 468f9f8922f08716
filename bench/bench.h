/* Small helpers shared by the benchmarks in bench/: a monotonic clock, medians, reading a
 * file whole, and temporary directories removed afterwards. Header-only, because every
 * bench/<name>.c is one binary (Makefile). Benchmarks print figures; they are not tests. */
#ifndef RT_BENCH_H
#define RT_BENCH_H

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Makes a fresh directory under $TMPDIR (or /tmp) into buf; returns buf or NULL. */
static inline char *bench_mkdtemp(char *buf, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/rt-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    return mkdtemp(buf);
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

#endif
