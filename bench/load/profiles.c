/* The simulated instances' profiles: each service has a random call tree of a few thousand
 * nodes over a vocabulary of a few hundred functions; each instance samples its own hot spots
 * in that tree (a Zipf-like weighting of its own), and a few stacks end in a frame only that
 * instance has (a lambda, a generated handler), so the server interns realistic variety.
 * Encoded as gzip pprof by the server's own exporter (CPU, 10 ms period, 60 s). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "load.h"
#include "rt/buf.h"
#include "rt/export.h"
#include "rt/profile.h"
#include "rt/str.h"

#define TREE_NODES 3000
#define MAX_DEPTH 48
#define VOCAB 400
#define STACKS_PER_INSTANCE 400
#define PERIOD_NS 10000000
#define DURATION_NS INT64_C(60000000000)

static const char *const MODULES[] = {"http", "router", "orders", "db", "json", "auth",
                                      "cache", "render", "queue", "metrics", "util", "net"};
static const char *const VERBS[] = {"handle", "parse", "encode", "decode", "load", "store",
                                    "validate", "render", "compute", "fetch", "merge", "scan"};
static const char *const NOUNS[] = {"request", "order", "row", "token", "page", "batch",
                                    "header", "item", "query", "event", "user", "buffer"};

struct tree {
    int parent[TREE_NODES];
    int depth[TREE_NODES];
    int fn[TREE_NODES];                 /* index into names */
    char names[VOCAB][64];
};

static void tree_build(struct tree *t, int service, uint64_t *rng)
{
    for (int i = 0; i < VOCAB; i++) {
        size_t m = bench_rng_next(rng) % (sizeof(MODULES) / sizeof(MODULES[0]));
        size_t v = bench_rng_next(rng) % (sizeof(VERBS) / sizeof(VERBS[0]));
        size_t n = bench_rng_next(rng) % (sizeof(NOUNS) / sizeof(NOUNS[0]));
        snprintf(t->names[i], sizeof(t->names[i]), "svc%02d/%s.%s_%s_%d", service, MODULES[m],
                 VERBS[v], NOUNS[n], i);
    }
    snprintf(t->names[0], sizeof(t->names[0]), "runtime.main");
    t->parent[0] = -1;
    t->depth[0] = 1;
    t->fn[0] = 0;
    for (int k = 1; k < TREE_NODES; k++) {
        int lo = k > 300 ? k - 300 : 0, p;
        do
            p = lo + (int)(bench_rng_next(rng) % (uint64_t)(k - lo));
        while (t->depth[p] >= MAX_DEPTH);
        t->parent[k] = p;
        t->depth[k] = t->depth[p] + 1;
        t->fn[k] = 1 + (int)(bench_rng_next(rng) % (VOCAB - 1));
    }
}

/* One instance's profile: STACKS_PER_INSTANCE nodes of the tree with Zipf-like weights. */
static struct rt_profile *instance_profile(const struct tree *t, const char *name,
                                           uint64_t *rng)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    if (!p)
        return NULL;
    p->time_ns = BENCH_T0_NS;
    p->duration_ns = DURATION_NS;
    p->period_ns = PERIOD_NS;
    p->has_counts = true;
    double cores = 0.1 + 0.5 * bench_rng_unit(rng);   /* CPU the instance burns */
    double total = cores * (double)DURATION_NS / PERIOD_NS, norm = 0;
    for (int s = 0; s < STACKS_PER_INSTANCE; s++)
        norm += 1.0 / (s + 1);
    char lambda[64];
    struct rt_str frames[MAX_DEPTH + 1];
    for (int s = 0; s < STACKS_PER_INSTANCE; s++) {
        int node = (int)(bench_rng_next(rng) % TREE_NODES);
        double n = bench_rng_poisson(rng, total / (s + 1) / norm);
        if (n <= 0)
            continue;
        int d = t->depth[node];
        for (int k = node, i = d - 1; k >= 0; k = t->parent[k], i--)
            frames[i] = rt_str_from(t->names[t->fn[k]]);
        if (bench_rng_next(rng) % 10 == 0) {   /* a frame of this instance's own */
            snprintf(lambda, sizeof(lambda), "%s/gen.lambda_%d", name,
                     (int)(bench_rng_next(rng) % 50));
            frames[d++] = rt_str_from(lambda);
        }
        if (rt_profile_add_stack(p, frames, (size_t)d, n, (int64_t)n * PERIOD_NS)) {
            rt_profile_free(p);
            return NULL;
        }
    }
    return p;
}

struct load_instance *load_instances_new(int nservices, int per_service, uint64_t seed)
{
    size_t n = (size_t)nservices * (size_t)per_service;
    struct load_instance *v = calloc(n, sizeof(*v));
    struct tree *t = malloc(sizeof(*t));
    if (!v || !t) {
        fprintf(stderr, "load: out of memory\n");
        goto fail;
    }
    uint64_t rng = seed;
    for (int s = 0; s < nservices; s++) {
        tree_build(t, s, &rng);
        for (int i = 0; i < per_service; i++) {
            struct load_instance *in = &v[(size_t)s * (size_t)per_service + (size_t)i];
            in->service = s;
            snprintf(in->name, sizeof(in->name), "svc%02d-host%03d-%d", s, i, 1000 + i * 7);
            struct rt_profile *p = instance_profile(t, in->name, &rng);
            struct rt_buf out;
            rt_buf_init(&out, 0);
            if (!p || rt_export_pprof(p, &out)) {
                rt_profile_free(p);
                rt_buf_cleanup(&out);
                fprintf(stderr, "load: cannot build the profile of %s\n", in->name);
                goto fail;
            }
            rt_profile_free(p);
            in->len = out.len;
            in->body = (unsigned char *)out.data;
        }
    }
    free(t);
    return v;
fail:
    free(t);
    load_instances_free(v, n);
    return NULL;
}

void load_instances_free(struct load_instance *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i].body);
    free(v);
}
