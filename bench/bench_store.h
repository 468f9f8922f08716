/* bench_store.c's definitions and its side-by-side table (kept apart to keep the benchmark
 * file readable). Included by bench_store.c only; every function here is static. */
#ifndef RT_BENCH_STORE_H
#define RT_BENCH_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MAX_SCALES 8
#define MAX_THREADS 8            /* entries of --threads */
#define MAX_THREAD_COUNT 64      /* writer threads of one entry */
#define MAX_RUNS 64
#define INGEST_SERVICE "bench-ingest"
#define DIFF_SERVICE "bench-diff"
#define DIFF_FILE "gdu__default.pgo"
#define DIFF_PER_1X 600          /* profiles per window and 1x: 1 h of 6 s profiles */
#define DIFF_FACTOR 3.0          /* the grown function's weight in the current window */
#define DIFF_SEED 42
#define BUILD_BATCH 100          /* profiles per rt_store_put_profiles when building */
#define PREFILL_COPIES 12        /* uploads of each input per batch when prefilling */

enum backend { SQLITE, CLICKHOUSE, NBACKENDS };
static const char *const BACKEND_NAME[NBACKENDS] = {"SQLite", "ClickHouse"};

struct opts {
    const char *data;            /* the shared pprof files */
    char ch_base[1024];          /* ClickHouse server, http://HOST:PORT ("" = SQLite only) */
    char ch_settings[1024];      /* what followed '?' in --clickhouse, passed on every request */
    char ch_base2[1024];         /* --clickhouse2: a second node's server ("" = one node) */
    double scales[MAX_SCALES];   /* multiples of the 1x data */
    size_t nscales;
    int threads[MAX_THREADS];    /* writer thread counts of the ingest runs */
    size_t nthreads;
    double mb;                   /* compressed MB of uploads at 1x (bench_ingest's --mb) */
    int runs;                    /* timed rt_query_diff runs after the cold one (median) */
    bool ingest, diff;           /* which halves run */
    bool full;                   /* time every upload of a scale > 1 (no untimed prefill) */
};

/* One ingest run's figures. */
struct ingest_res {
    bool ok;
    double profiles_s;           /* stored profiles per second of wall time */
    double mb_s;                 /* compressed upload MB per second of wall time */
    double p50_ms, p99_ms;       /* rt_store_put_profiles latency per upload */
};

/* One diff run's figures. */
struct diff_res {
    bool ok;
    double build_s;              /* building the store (batches of BUILD_BATCH) */
    double cold_ms;              /* the first rt_query_diff after reopening the store */
    double median_ms;            /* median of the next opts.runs */
    char top[128];               /* the first-ranked function */
    double top_delta_pp;         /* its delta_pp */
    bool grown_first;            /* the grown function ranked first */
};

/* ---- The table ---------------------------------------------------------------------------- */

/* Every figure of the run: [scale][backend][thread entry] and [scale][backend]. */
struct results {
    struct ingest_res ing[MAX_SCALES][NBACKENDS][MAX_THREADS];
    struct diff_res diff[MAX_SCALES][NBACKENDS];
};

/* a / b, or 0 when either is missing. */
static double ratio(double a, double b)
{
    return a > 0 && b > 0 ? a / b : 0;
}

static void print_num(double v, int width, int prec)
{
    if (v > 0)
        printf(" %*.*f", width, prec, v);
    else
        printf(" %*s", width, "-");
}

static void print_header(const struct opts *o)
{
    printf("%-6s %-16s", "scale", "");
    for (size_t t = 0; o->ingest && t < o->nthreads; t++) {
        char h[32];
        snprintf(h, sizeof(h), "ingest, %d thread%s", o->threads[t], o->threads[t] > 1 ? "s" : "");
        printf(" %-19s", h);
    }
    if (o->diff)
        printf(" %-21s", "diff, 2 windows");
    printf("\n%-6s %-16s", "", "backend");
    for (size_t t = 0; o->ingest && t < o->nthreads; t++)
        printf(" %10s %8s", "prof/s", "MB/s");
    if (o->diff)
        printf(" %9s %11s", "cold ms", "median ms");
    printf("\n");
}

/* One backend's row at scale index i. */
static void print_row(const struct results *res, size_t i, enum backend be,
                      const struct opts *o)
{
    printf("%-6g %-16s", o->scales[i], BACKEND_NAME[be]);
    for (size_t t = 0; o->ingest && t < o->nthreads; t++) {
        const struct ingest_res *r = &res->ing[i][be][t];
        print_num(r->profiles_s, 10, 1);
        print_num(r->mb_s, 8, 1);
    }
    if (o->diff) {
        print_num(res->diff[i][be].cold_ms, 9, 1);
        print_num(res->diff[i][be].median_ms, 11, 1);
    }
    printf("\n");
}

/* ClickHouse time / SQLite time of ingest entry t at scale index i (0 when missing). */
static double ingest_ratio(const struct results *res, size_t i, size_t t)
{
    return ratio(res->ing[i][SQLITE][t].profiles_s, res->ing[i][CLICKHOUSE][t].profiles_s);
}

/* ClickHouse / SQLite diff ms at scale index i, the cold run's or the median. */
static double diff_ratio(const struct results *res, size_t i, bool cold)
{
    const struct diff_res *c = &res->diff[i][CLICKHOUSE], *q = &res->diff[i][SQLITE];
    return cold ? ratio(c->cold_ms, q->cold_ms) : ratio(c->median_ms, q->median_ms);
}

/* The ratio row at scale index i. */
static void print_ratios(const struct results *res, size_t i, const struct opts *o)
{
    printf("%-6s %-16s", "", "CH/SQLite time");
    for (size_t t = 0; o->ingest && t < o->nthreads; t++) {
        print_num(ingest_ratio(res, i, t), 9, 2);
        printf("x %8s", "");
    }
    if (o->diff) {
        print_num(diff_ratio(res, i, true), 8, 2);
        printf("x");
        print_num(diff_ratio(res, i, false), 10, 2);
        printf("x");
    }
    printf("\n");
}

/* The RATIO lines a script can read. */
static void print_ratio_lines(const struct results *res, const struct opts *o)
{
    for (size_t i = 0; i < o->nscales; i++) {
        for (size_t t = 0; o->ingest && t < o->nthreads; t++)
            printf("RATIO store %gx ingest %d-thread clickhouse/sqlite time %.2f\n",
                   o->scales[i], o->threads[t], ingest_ratio(res, i, t));
        if (o->diff)
            printf("RATIO store %gx diff clickhouse/sqlite median %.2f cold %.2f\n",
                   o->scales[i], diff_ratio(res, i, false), diff_ratio(res, i, true));
    }
}

static void print_table(const struct results *res, const struct opts *o, int nbe)
{
    printf("\n== side by side (prof/s: stored profiles per second; MB/s: compressed upload "
           "bytes per second;\n   ratio = ClickHouse time / SQLite time on the same work, "
           "same run: > 1 means ClickHouse is slower)\n");
    print_header(o);
    for (size_t i = 0; i < o->nscales; i++) {
        for (int be = 0; be < nbe; be++)
            print_row(res, i, (enum backend)be, o);
        if (nbe == NBACKENDS)
            print_ratios(res, i, o);
    }
    if (nbe == NBACKENDS)
        print_ratio_lines(res, o);
    else
        printf("(no --clickhouse: SQLite only, no ratio)\n");
}

#endif
