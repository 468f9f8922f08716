/* Test helpers for the query engine against a real store: a temporary SQLite store and
 * profiles built from folded stacks (10 ms per sample). */
#ifndef RT_TEST_QUERY_STORE_UTIL_H
#define RT_TEST_QUERY_STORE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/profile.h"
#include "rt/store.h"

#define S 1000000000LL
#define MS 1000000LL
#define T0 (1764460800LL * S) /* 2025-11-30T00:00:00Z */

struct tstore {
    char dir[64];
    struct rt_store *s;
};

static inline int tstore_open(struct tstore *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/rt-query-XXXXXX");
    if (!mkdtemp(t->dir))
        return -1;
    struct rt_error err = {0};
    t->s = rt_store_open(t->dir, &err);
    if (!t->s)
        fprintf(stderr, "rt_store_open: %s\n", err.msg);
    return t->s ? 0 : -1;
}

static inline void tstore_close(struct tstore *t)
{
    rt_store_free(t->s);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", t->dir);
}

/* A profile of service "shop" from folded stacks; each sample is worth 10 ms. */
static inline struct rt_profile *tprof(enum rt_ptype t, const char *inst, const char *pid,
                                       int64_t start_ns, int64_t dur_ns,
                                       const char *const *stacks, const double *samples,
                                       size_t n)
{
    struct rt_profile *p = rt_profile_new(t);
    rt_profile_set_str(&p->service, "shop");
    rt_profile_set_str(&p->instance, inst);
    rt_profile_set_str(&p->profile_id, pid);
    p->time_ns = start_ns;
    p->duration_ns = dur_ns;
    p->period_ns = 10 * MS;
    p->has_counts = true;
    for (size_t i = 0; i < n; i++) {
        struct rt_str fr[64];
        size_t depth = 0;
        for (const char *s = stacks[i];;) {
            const char *e = strchr(s, ';');
            fr[depth].ptr = s;
            fr[depth++].len = e ? (size_t)(e - s) : strlen(s);
            if (!e)
                break;
            s = e + 1;
        }
        rt_profile_add_stack(p, fr, depth, samples[i], (int64_t)(samples[i] * 10 * MS));
    }
    return p;
}

/* Stores p (and frees it). Returns the put result's duplicate flag, or -1 on error. */
static inline int tput(struct rt_store *s, struct rt_profile *p)
{
    struct rt_store_put_result res = {0};
    struct rt_error err = {0};
    int rc = rt_store_put_profiles(s, &p, 1, &res, &err);
    rt_profile_free(p);
    if (rc) {
        fprintf(stderr, "rt_store_put_profiles: %s\n", err.msg);
        return -1;
    }
    return res.duplicate;
}

static inline void tpoll(struct rt_store *s, const char *inst, int64_t at_ns)
{
    struct rt_error err = {0};
    if (rt_store_put_poll(s, "shop", inst, at_ns, &err))
        fprintf(stderr, "rt_store_put_poll: %s\n", err.msg);
}

#endif
