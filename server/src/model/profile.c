/* The profile model: metadata plus samples aggregated by stack. Identical stacks merge through
 * an open-addressing table over the concatenated frame ids; deep stacks are truncated at the
 * root side (DESIGN §4). This is the hot path of ingest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/producer.h"
#include "rt/profile.h"

struct rt_profile *rt_profile_new(enum rt_ptype t)
{
    struct rt_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->type = t;
    p->duration_ns = -1;
    p->thread_cpu_ns = -1;
    p->process_cpu_ns = -1;
    p->producer = rt_producer_of_upload(NULL, t);
    p->cpu_scale = 1;
    rt_intern_init(&p->frames);
    return p;
}

void rt_profile_free(struct rt_profile *p)
{
    if (!p)
        return;
    free(p->service);
    free(p->instance);
    free(p->runtime);
    free(p->runtime_version);
    free(p->sdk_version);
    free(p->version);
    free(p->profile_id);
    rt_intern_cleanup(&p->frames);
    free(p->frame_ids);
    free(p->stacks);
    free(p->stack_slots);
    free(p);
}

/* A hash of one stack: its frames' names (each with its length; fh[id] is the hash of frame
 * id's name, rt_hash), samples and value. */
static uint64_t stack_hash(const struct rt_profile *p, const struct rt_profile_stack *st,
                           const uint64_t *fh)
{
    uint64_t h = rt_hash(&st->samples, sizeof(st->samples));
    h = h * 31 + rt_hash(&st->value_ns, sizeof(st->value_ns));
    /* Each frame is h = (h * 1000003 + name's hash) * 31 + name's length, as the first
     * release stored it (test_content_hash pins values), written as h * (1000003 * 31) +
     * (hash * 31 + length): the same value modulo 2^64 with one multiply, not two, on the
     * chain from one frame to the next. */
    const uint64_t k31 = UINT64_C(1000003) * 31;
    const uint32_t *ids = p->frame_ids + st->off;
    for (uint32_t k = 0; k < st->depth; k++) {
        uint32_t id = ids[k];
        /* an id outside the profile's frames is the stores' to refuse; it reads nothing */
        bool in = id < p->frames.count;
        h = h * k31 + ((in ? fh[id] : 0) * 31 + (in ? p->frames.lens[id] : 0));
    }
    return h;
}

uint64_t rt_profile_content_hash(const struct rt_profile *p)
{
    int64_t head[3] = {(int64_t)p->type, p->time_ns, p->duration_ns};
    uint64_t h = rt_hash(head, sizeof(head));
    /* Each name's hash is the one interning kept (rt_intern_hash), not one per use. */
    for (size_t i = 0; i < p->nstacks; i++)
        h += rt_hash(&(uint64_t){stack_hash(p, &p->stacks[i], p->frames.hashes)},
                     sizeof(uint64_t));
    return h ? h : 1;
}

int rt_profile_set_str(char **field, const char *s)
{
    char *copy = NULL;
    if (s) {
        copy = rt_str_dup(rt_str_from(s));
        if (!copy)
            return RT_ENOMEM;
    }
    free(*field);
    *field = copy;
    return 0;
}

static uint64_t hash_ids(const uint32_t *ids, size_t n)
{
    return rt_hash(ids, n * sizeof(*ids));
}

/* Slot of the stack equal to ids[0..n), or the empty slot where it belongs. */
static uint32_t *find_slot(const struct rt_profile *p, const uint32_t *ids, size_t n, uint64_t h)
{
    size_t mask = p->nstack_slots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t v = p->stack_slots[i];
        if (v == 0)
            return &p->stack_slots[i];
        const struct rt_profile_stack *s = &p->stacks[v - 1];
        if (s->depth == n && memcmp(p->frame_ids + s->off, ids, n * sizeof(*ids)) == 0)
            return &p->stack_slots[i];
    }
}

/* Rebuilds the stack table with n slots (a power of two, more than twice the stacks). */
static int resize_slots(struct rt_profile *p, size_t n)
{
    if (n > SIZE_MAX / sizeof(*p->stack_slots))
        return RT_ENOMEM;
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return RT_ENOMEM;
    free(p->stack_slots);
    p->stack_slots = slots;
    p->nstack_slots = n;
    for (size_t k = 0; k < p->nstacks; k++) {
        const struct rt_profile_stack *s = &p->stacks[k];
        const uint32_t *ids = p->frame_ids + s->off;
        *find_slot(p, ids, s->depth, hash_ids(ids, s->depth)) = (uint32_t)(k + 1);
    }
    return 0;
}

static int grow_slots(struct rt_profile *p)
{
    return resize_slots(p, p->nstack_slots ? p->nstack_slots * 2 : 256);
}

/* The stack table's slots for n stacks: a power of two, at least 256 and more than twice n. */
static size_t slots_for(size_t n)
{
    size_t slots = 256;
    while (slots < 2 * (n + 1))
        slots *= 2;
    return slots;
}

int rt_profile_reserve_stacks(struct rt_profile *p, size_t nstacks)
{
    size_t n = slots_for(nstacks < RT_PROFILE_RESERVE_MAX ? nstacks : RT_PROFILE_RESERVE_MAX);
    return n > p->nstack_slots ? resize_slots(p, n) : 0;
}

void rt_profile_fit(struct rt_profile *p)
{
    size_t n = slots_for(p->nstacks);
    if (n * 4 <= p->nstack_slots)
        (void)resize_slots(p, n); /* on ENOMEM the larger table stays, whole */
    rt_intern_fit(&p->frames);
}

/* True when a + b stays within [-RT_PROFILE_MAX_VALUE_NS, RT_PROFILE_MAX_VALUE_NS]. */
static bool sum_fits(int64_t a, int64_t b)
{
    int64_t r;
    return !__builtin_add_overflow(a, b, &r) && r <= RT_PROFILE_MAX_VALUE_NS &&
           r >= -RT_PROFILE_MAX_VALUE_NS;
}

/* Checks that adding value_ns keeps the profile's total within the limit, before anything is
 * added. (Ingest refuses negative values; the model only keeps sums bounded.) */
static int check_total(const struct rt_profile *p, int64_t value_ns)
{
    return sum_fits(p->value_ns, value_ns) ? 0 : RT_ETOOBIG;
}

/* Adds a stack of n <= RT_MAX_STACK_DEPTH frame ids, merging with an identical one. */
static int add_ids(struct rt_profile *p, const uint32_t *ids, size_t n, double samples,
                   int64_t value_ns)
{
    int rc = check_total(p, value_ns);
    if (rc)
        return rc;
    if ((p->nstacks + 1) * 2 > p->nstack_slots && grow_slots(p))
        return RT_ENOMEM;
    uint64_t h = hash_ids(ids, n);
    uint32_t *slot = find_slot(p, ids, n, h);
    if (!*slot) {
        if (p->nstacks >= UINT32_MAX - 1 || p->nframe_ids + n > UINT32_MAX)
            return RT_ENOMEM;
        if (rt_array_grow((void **)&p->frame_ids, &p->cap_frame_ids, p->nframe_ids + n,
                          sizeof(*p->frame_ids)) ||
            rt_array_grow((void **)&p->stacks, &p->cap_stacks, p->nstacks + 1, sizeof(*p->stacks)))
            return RT_ENOMEM;
        memcpy(p->frame_ids + p->nframe_ids, ids, n * sizeof(*ids));
        p->stacks[p->nstacks] = (struct rt_profile_stack){
            .off = (uint32_t)p->nframe_ids, .depth = (uint32_t)n, .samples = 0, .value_ns = 0};
        p->nframe_ids += n;
        *slot = (uint32_t)++p->nstacks;
    }
    struct rt_profile_stack *s = &p->stacks[*slot - 1];
    if (!sum_fits(s->value_ns, value_ns)) /* possible only with negative values */
        return RT_ETOOBIG;
    s->samples += samples;
    s->value_ns += value_ns;
    p->samples += samples;
    p->value_ns += value_ns;
    return 0;
}

int rt_profile_add_stack_ids(struct rt_profile *p, const uint32_t *ids, size_t depth,
                             double samples, int64_t value_ns)
{
    if (depth == 0)
        return RT_EINVAL;
    if (depth <= RT_MAX_STACK_DEPTH)
        return add_ids(p, ids, depth, samples, value_ns);
    int rc = check_total(p, value_ns); /* before "(truncated)" is interned */
    if (rc)
        return rc;
    uint32_t cut[RT_MAX_STACK_DEPTH];
    if (rt_intern_get(&p->frames, RT_STR_LIT(RT_TRUNCATED_FRAME), &cut[0]))
        return RT_ENOMEM;
    memcpy(cut + 1, ids + depth - (RT_MAX_STACK_DEPTH - 1),
           (RT_MAX_STACK_DEPTH - 1) * sizeof(*ids));
    rc = add_ids(p, cut, RT_MAX_STACK_DEPTH, samples, value_ns);
    if (rc == 0)
        p->truncated_stacks++;
    return rc;
}

int rt_profile_add_stack(struct rt_profile *p, const struct rt_str *frames, size_t depth,
                         double samples, int64_t value_ns)
{
    if (depth == 0)
        return RT_EINVAL;
    int rc = check_total(p, value_ns); /* before any frame is interned */
    if (rc)
        return rc;
    uint32_t ids[RT_MAX_STACK_DEPTH];
    size_t n = 0, first = 0;
    if (depth > RT_MAX_STACK_DEPTH) {
        if (rt_intern_get(&p->frames, RT_STR_LIT(RT_TRUNCATED_FRAME), &ids[n++]))
            return RT_ENOMEM;
        first = depth - (RT_MAX_STACK_DEPTH - 1);
    }
    for (size_t i = first; i < depth; i++)
        if (rt_intern_get(&p->frames, frames[i], &ids[n++]))
            return RT_ENOMEM;
    rc = add_ids(p, ids, n, samples, value_ns);
    if (rc == 0 && first)
        p->truncated_stacks++;
    return rc;
}

double rt_profile_window_weight(int64_t start_ns, int64_t duration_ns, int64_t from_ns,
                                int64_t to_ns)
{
    if (duration_ns <= 0)
        return start_ns >= from_ns && start_ns < to_ns ? 1.0 : 0.0;
    int64_t end = start_ns > INT64_MAX - duration_ns ? INT64_MAX : start_ns + duration_ns;
    int64_t lo = start_ns > from_ns ? start_ns : from_ns;
    int64_t hi = end < to_ns ? end : to_ns;
    if (hi <= lo)
        return 0.0;
    if (lo == start_ns && hi == end)
        return 1.0;
    return (double)(hi - lo) / (double)duration_ns;
}

int64_t rt_profile_rollup_block(int64_t start_ns, int64_t duration_ns, int level)
{
    if (start_ns < 0 || duration_ns <= 0 || duration_ns > INT64_MAX - start_ns)
        return -1;
    int64_t len = rt_rollup_level_ns(level);
    int64_t room = len - start_ns % len; /* to the block's end */
    return duration_ns <= room ? start_ns / len : -1;
}
