/* Latency and error counts of the load test, and the server's RSS sampled every second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

int64_t load_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t load_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void load_stats_init(struct load_stats *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
}

void load_stats_cleanup(struct load_stats *s)
{
    free(s->lat_ms);
    pthread_mutex_destroy(&s->mu);
}

void load_stats_ok(struct load_stats *s, double ms)
{
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        double *v = realloc(s->lat_ms, cap * sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&s->mu);
            return;
        }
        s->lat_ms = v;
        s->cap = cap;
    }
    s->lat_ms[s->n++] = ms;
    pthread_mutex_unlock(&s->mu);
}

void load_stats_fail(struct load_stats *s, const char *kind)
{
    pthread_mutex_lock(&s->mu);
    s->errors++;
    size_t i = 0;
    while (i < s->nkinds && strncmp(s->kinds[i], kind, sizeof(s->kinds[i]) - 1) != 0)
        i++;
    if (i == s->nkinds && s->nkinds < LOAD_MAX_KINDS)
        snprintf(s->kinds[s->nkinds++], sizeof(s->kinds[0]), "%s", kind);
    if (i < s->nkinds)
        s->kind_count[i]++;
    pthread_mutex_unlock(&s->mu);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double load_stats_quantile(struct load_stats *s, double q)
{
    pthread_mutex_lock(&s->mu);
    double v = 0;
    if (s->n) {
        qsort(s->lat_ms, s->n, sizeof(double), cmp_double);
        size_t i = (size_t)(q * (double)(s->n - 1) + 0.5);
        v = s->lat_ms[i < s->n ? i : s->n - 1];
    }
    pthread_mutex_unlock(&s->mu);
    return v;
}

long load_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

static void *rss_loop(void *arg)
{
    struct load_rss *r = arg;
    for (;;) {
        long kb = load_rss_kb(r->pid);
        pthread_mutex_lock(&r->mu);
        if (r->stop) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        if (kb >= 0 && r->n == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 256;
            void *v = realloc(r->v, cap * sizeof(*r->v));
            if (v)
                r->v = v, r->cap = cap;
        }
        if (kb >= 0 && r->n < r->cap)
            r->v[r->n++] = (struct load_rss_sample){
                (double)(load_now_ns() - r->t0_ns) / 1e9, kb, r->phase};
        pthread_mutex_unlock(&r->mu);
        usleep(1000000);
    }
    return NULL;
}

int load_rss_start(struct load_rss *r, pid_t pid)
{
    memset(r, 0, sizeof(*r));
    r->pid = pid;
    r->phase = "setup";
    r->t0_ns = load_now_ns();
    pthread_mutex_init(&r->mu, NULL);
    return pthread_create(&r->thread, NULL, rss_loop, r) == 0 ? 0 : -1;
}

void load_rss_phase(struct load_rss *r, const char *phase)
{
    pthread_mutex_lock(&r->mu);
    r->phase = phase;
    pthread_mutex_unlock(&r->mu);
}

void load_rss_stop(struct load_rss *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
}

void load_rss_free(struct load_rss *r)
{
    free(r->v);
    pthread_mutex_destroy(&r->mu);
}

size_t load_rss_summary(struct load_rss *r, const char *phase, long *max_kb, long *first_kb,
                        long *last_kb)
{
    size_t n = 0;
    *max_kb = *first_kb = *last_kb = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (phase && strcmp(r->v[i].phase, phase) != 0)
            continue;
        if (n++ == 0)
            *first_kb = r->v[i].kb;
        if (r->v[i].kb > *max_kb)
            *max_kb = r->v[i].kb;
        *last_kb = r->v[i].kb;
    }
    return n;
}
