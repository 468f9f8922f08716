/* rt_query_merge: the profiles of a window merged into one profile for export, each
 * weighted by its overlap with the window (DESIGN §6). */
#include <math.h>
#include <stdlib.h>

#include "query_internal.h"

/* Metadata that every merged profile shares, or not. */
struct merge_meta {
    struct rt__query_ctx *c;
    int64_t period_ns;         /* common period; -1 = none seen yet, 0 = they differ */
    double thread_cpu_ns;      /* weighted sum; NAN once a profile lacks it */
    double process_cpu_ns;     /* same */
    uint32_t profiles;
};

static int merge_cb(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                    size_t nrows)
{
    struct merge_meta *mm = ud;
    const struct rt__query_win *w = &mm->c->win[0];
    double weight = rt_profile_window_weight(m->time_ns, m->duration_ns, w->from_ns, w->to_ns);
    if (!(weight > 0))
        return 0;
    int rc = rt__query_add_profile(mm->c, 0, m, rows, nrows);
    if (rc)
        return rc;
    mm->profiles++;
    if (mm->period_ns < 0)
        mm->period_ns = m->period_ns;
    else if (mm->period_ns != m->period_ns)
        mm->period_ns = 0;
    mm->thread_cpu_ns += m->thread_cpu_ns >= 0 ? weight * (double)m->thread_cpu_ns : NAN;
    mm->process_cpu_ns += m->process_cpu_ns >= 0 ? weight * (double)m->process_cpu_ns : NAN;
    return 0;
}

/* Copies the filter's and the merged metadata into p. */
static int set_meta(struct rt_profile *p, const struct rt_store_filter *f,
                    const struct merge_meta *mm, const struct rt__query_win *w)
{
    int rc = rt_profile_set_str(&p->service, f->service);
    if (!rc)
        rc = rt_profile_set_str(&p->instance, f->instance);
    if (!rc)
        rc = rt_profile_set_str(&p->version, f->version);
    p->time_ns = f->from_ns;
    p->duration_ns = f->to_ns - f->from_ns;
    p->period_ns = mm->period_ns > 0 ? mm->period_ns : 0;
    p->has_counts = w->all_counts;
    p->truncated_stacks = w->truncated_stacks > UINT32_MAX ? UINT32_MAX
                                                           : (uint32_t)w->truncated_stacks;
    bool any = mm->profiles > 0;
    p->thread_cpu_ns = any && isfinite(mm->thread_cpu_ns) ? llround(mm->thread_cpu_ns) : -1;
    p->process_cpu_ns = any && isfinite(mm->process_cpu_ns) ? llround(mm->process_cpu_ns) : -1;
    return rc;
}

/* Interns a function's name into p, repaired to valid UTF-8 if it is not (data stored before
 * ingest repaired names). Returns 0 or RT_ENOMEM. */
static int intern_name(struct rt_profile *p, const char *name, uint32_t *id)
{
    struct rt_str s = rt_str_from(name ? name : "[unknown]");
    if (rt_str_is_utf8(s))
        return rt_intern_get(&p->frames, s, id);
    char *fixed = rt_str_dup_utf8(s, &s.len);
    if (!fixed)
        return RT_ENOMEM;
    s.ptr = fixed;
    int rc = rt_intern_get(&p->frames, s, id);
    free(fixed);
    return rc;
}

/* Adds the context's stacks to p, interning each function's name once. Returns 0, RT_ENOMEM
 * or RT_ETOOBIG (the merged value exceeds RT_PROFILE_MAX_VALUE_NS). */
static int add_stacks(struct rt_profile *p, const struct rt__query_ctx *c)
{
    if (!(c->win[0].value_ns <= (double)RT_PROFILE_MAX_VALUE_NS))
        return RT_ETOOBIG; /* checked first: llround below stays within int64 */
    uint32_t *ids = malloc((c->nfns ? c->nfns : 1) * sizeof(*ids));
    uint32_t *frames = malloc(RT_MAX_STACK_DEPTH * sizeof(*frames));
    int rc = ids && frames ? 0 : RT_ENOMEM;
    struct rt_arena names; /* the copies of the names, until each is interned in p */
    rt_arena_init(&names);
    for (uint32_t i = 0; !rc && i < c->nfns; i++)
        rc = intern_name(p, c->src.frame_name(c->src.ud, c->fns[i].frame_id, &names), &ids[i]);
    rt_arena_cleanup(&names);
    for (uint32_t s = 0; !rc && s < c->nstacks; s++) {
        const struct rt__query_stack *st = &c->stacks[s];
        if (st->samples[0] == 0 && st->value[0] == 0)
            continue;
        uint32_t depth = st->depth < RT_MAX_STACK_DEPTH ? st->depth : RT_MAX_STACK_DEPTH;
        const uint32_t *fp = c->fpool + st->off + (st->depth - depth); /* keep the leaf side */
        for (uint32_t j = 0; j < depth; j++)
            frames[j] = ids[fp[j]];
        rc = rt_profile_add_stack_ids(p, frames, depth, st->samples[0], llround(st->value[0]));
    }
    free(ids);
    free(frames);
    return rc;
}

struct rt_profile *rt_query_merge(struct rt_store *s, const struct rt_store_filter *f,
                                  struct rt_error *err)
{
    if (!f->service || (f->type != RT_PTYPE_CPU && f->type != RT_PTYPE_WALL) ||
        f->to_ns <= f->from_ns) {
        rt_error_set(err, RT_EINVAL, "a merge needs a service, a type and from < to");
        return NULL;
    }
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, rt__query_src_store(s), f->type, 1);
    rt__query_ctx_window(&c, 0, f->from_ns, f->to_ns);
    struct merge_meta mm = {&c, -1, 0, 0, 0};
    struct rt_profile *p = NULL;
    rt_error_clear(err);
    int rc = rt_store_scan(s, f, merge_cb, &mm, err);
    if (rc) {
        if (rc == RT_ENOMEM)
            rt_error_set(err, RT_ENOMEM, "out of memory merging profiles");
        else if (!err || err->code != rc)
            rt_error_set(err, rc < 0 ? rc : RT_EIO, "store error merging profiles");
        goto out;
    }
    p = rt_profile_new(f->type);
    rc = !p || set_meta(p, f, &mm, &c.win[0]) ? RT_ENOMEM : add_stacks(p, &c);
    if (rc) {
        rt_profile_free(p);
        p = NULL;
        if (rc == RT_ETOOBIG)
            rt_error_set(err, RT_ETOOBIG,
                         "the window's merged value exceeds the limit of %lld ns (2^62 ns, about "
                         "146 years) of one profile: export a shorter window or one instance",
                         (long long)RT_PROFILE_MAX_VALUE_NS);
        else
            rt_error_set(err, RT_ENOMEM, "out of memory merging profiles");
    }
out:
    rt__query_ctx_cleanup(&c);
    return p;
}
