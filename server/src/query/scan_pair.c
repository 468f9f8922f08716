/* A diff's two windows read at once (rt__query_scan_pair): window 1 into a context of its own
 * on a second thread while the caller's thread reads window 0, then merged into window 1 of
 * the caller's context. The merge meets the second context's instances, functions and stacks
 * in the order that context met them, which is the order reading window 1 after window 0
 * would have met those new to the first; every per-window sum of window 1 was made by the same
 * additions from 0. So the context, and the answer, are those of reading the windows one
 * after the other, to the bit (test_rollup.c's check_pair compares the answers' text). Only
 * when no other query runs: a busy server gains nothing from a second thread. When one window
 * fails, the other stops at its next profile, and the diff returns the first failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query_internal.h"

static atomic_int mode = RT__QUERY_PAIR_AUTO;
static atomic_int contexts; /* query contexts alive, and timelines reading, process-wide */
static long cpus;          /* online CPUs, read once (0: not yet) */

void rt__query_pair_mode(int m)
{
    atomic_store(&mode, m);
}

void rt__query_contexts(int delta)
{
    atomic_fetch_add(&contexts, delta);
}

/* True when window 1 gets a thread of its own: always or never when a test says so; else
 * when the caller's context is the only one alive (no other query, no rollup being built)
 * and the machine has two CPUs or more, so that the second thread takes a core nobody else
 * wants. A loaded server reads the windows one after the other: under bench/load's four
 * clients, a second thread whenever no other window was being read took the diffs from 44 to
 * 33 a second and the resident memory past 256 MiB (docs/performance-rollups.md). */
bool rt__query_pair_threaded(void)
{
    int m = atomic_load(&mode);
    if (m != RT__QUERY_PAIR_AUTO)
        return m == RT__QUERY_PAIR_ALWAYS;
    long n = __atomic_load_n(&cpus, __ATOMIC_RELAXED);
    if (!n) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        __atomic_store_n(&cpus, n > 0 ? n : 1, __ATOMIC_RELAXED);
    }
    return n >= 2 && atomic_load(&contexts) == 1;
}

/* Which window failed first, while both are read (0: neither yet): the other stops early
 * (rt__query_ctx.abandon) and the diff reports the first one's error. */
enum { FAILED_NONE, FAILED_0, FAILED_1 };

static void note_failed(atomic_int *failed, int which)
{
    int none = FAILED_NONE;
    atomic_compare_exchange_strong(failed, &none, which);
}

/* Window 1 read on its own thread into ctx (one window, as window 0). */
struct side {
    struct rt__query_ctx ctx;
    struct rt_store *s;
    const struct rt_store_filter *f;
    struct rt_error err;
    int rc;
    atomic_int failed;
};

static void *read_side(void *p)
{
    struct side *b = p;
    rt_error_clear(&b->err);
    b->rc = rt__query_scan(&b->ctx, 0, b->s, b->f, &b->err);
    if (b->rc)
        note_failed(&b->failed, FAILED_1);
    return NULL;
}

/* Remaps the instance indexes of n entries (each inst at offset off of elem bytes). */
static void remap_inst(void *arr, size_t n, size_t elem, size_t off, const uint32_t *imap)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t *inst = (uint32_t *)((char *)arr + i * elem + off);
        *inst = imap[*inst];
    }
}

/* Merges window 0 of src (a one-window context, unfinished) into window 1 of dst, which has
 * read nothing into window 1. Returns 0 or RT_ENOMEM (dst is then only fit for cleanup). */
static int merge(struct rt__query_ctx *dst, struct rt__query_ctx *src)
{
    uint32_t ni = src->insts.count, nf = src->nfns;
    uint32_t *imap = malloc(((size_t)ni + 1) * sizeof(*imap));
    uint32_t *fmap = malloc(((size_t)nf + 1) * sizeof(*fmap));
    int rc = imap && fmap ? 0 : RT_ENOMEM;
    for (uint32_t i = 0; !rc && i < ni; i++)
        rc = rt_intern_get(&dst->insts, rt_str_from(rt_intern_str(&src->insts, i)), &imap[i]);
    for (uint32_t f = 0; !rc && f < nf; f++) {
        rc = rt__query_fn_index(dst, src->fns[f].frame_id, &fmap[f]);
        if (rc)
            break;
        struct rt__query_fn *d = &dst->fns[fmap[f]];
        const struct rt__query_fn *s = &src->fns[f];
        d->self_s[1] = s->self_s[0];
        d->self_v[1] = s->self_v[0];
        d->total_s[1] = s->total_s[0];
        d->total_v[1] = s->total_v[0];
        d->s2[1] = s->s2[0];
    }
    uint32_t frames[RT_MAX_STACK_DEPTH + 1];
    for (uint32_t i = 0; !rc && i < src->nstacks; i++) {
        const struct rt__query_stack *s = &src->stacks[i];
        uint32_t at;
        if (!rt_u64map_find(&dst->stack_map, s->id, &at)) { /* new: made from its frames */
            for (uint32_t j = 0; j < s->depth && j <= RT_MAX_STACK_DEPTH; j++)
                frames[j] = src->fns[src->fpool[s->off + j]].frame_id;
            rc = rt__query_stack_index_of(dst, s->id, frames, s->depth, &at);
        }
        if (!rc) {
            dst->stacks[at].samples[1] = s->samples[0];
            dst->stacks[at].value[1] = s->value[0];
        }
    }
    for (uint32_t i = 0; !rc && i < ni && (size_t)i * 2 < src->ninstfn; i++)
        rc = rt__query_instfn_merge(dst, 1, imap[i], &src->instfn[(size_t)i * 2], fmap);
    for (uint32_t p = 0; !rc && p < src->nproducers; p++)
        rt__query_count_producer(dst, src->producers[p].producer, src->producers[p].declared_type,
                                 src->producers[p].profiles);
    /* the scope a rollup named lives in src's arena (the others are static) */
    const char *scope = src->win[0].agree_scope;
    if (!rc && scope && !(scope = rt_arena_strndup(&dst->arena, scope, strlen(scope))))
        rc = RT_ENOMEM;
    if (!rc) { /* the window's counts and arrays, moved */
        struct rt__query_win *w = &dst->win[1];
        *w = src->win[0];
        w->agree_scope = scope;
        memset(&src->win[0], 0, sizeof(src->win[0]));
        remap_inst(w->profs, w->nprofs, sizeof(*w->profs), offsetof(struct rt__query_prof, inst),
                   imap);
        remap_inst(w->live, w->nlive, sizeof(*w->live), offsetof(struct rt__query_live, inst),
                   imap);
        remap_inst(w->spans, w->nspans, sizeof(*w->spans), offsetof(struct rt__query_span, inst),
                   imap);
    }
    free(imap);
    free(fmap);
    return rc;
}

int rt__query_scan_pair(struct rt__query_ctx *c, struct rt_store *s,
                        const struct rt_store_filter *fb, const struct rt_store_filter *fc,
                        struct rt_error *err)
{
    bool two = fc->to_ns > fc->from_ns && fb->to_ns > fb->from_ns; /* else one is empty */
    struct side *b = two && rt__query_pair_threaded() ? calloc(1, sizeof(*b)) : NULL;
    pthread_t t;
    if (b) {
        rt__query_ctx_init(&b->ctx, c->src, c->type, 1);
        b->s = s;
        b->f = fc;
        atomic_init(&b->failed, FAILED_NONE);
        b->ctx.abandon = c->abandon = &b->failed;
        if (pthread_create(&t, NULL, read_side, b) != 0) {
            rt__query_ctx_cleanup(&b->ctx);
            free(b);
            b = NULL;
            c->abandon = NULL;
        }
    }
    int rc = rt__query_scan(c, 0, s, fb, err);
    if (!b)
        return rc ? rc : rt__query_scan(c, 1, s, fc, err);
    if (rc)
        note_failed(&b->failed, FAILED_0);
    pthread_join(t, NULL);
    c->abandon = NULL;
    if (atomic_load(&b->failed) == FAILED_1) { /* window 0's error, if any, is its stopping */
        if (err)
            *err = b->err;
        rc = b->rc;
    }
    /* Producers past the list's room were counted as others, which reading after window 0
     * might have matched: window 1 is then read again, here (it takes 17 producers). */
    if (!rc && b->ctx.producers_other)
        rc = rt__query_scan(c, 1, s, fc, err);
    else if (!rc && merge(c, &b->ctx))
        rc = rt_error_set(err, RT_ENOMEM, "out of memory while aggregating profiles");
    rt__query_ctx_cleanup(&b->ctx);
    free(b);
    return rc;
}
