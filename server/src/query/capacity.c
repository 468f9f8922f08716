/* The capacity estimate of DESIGN §7 as a pure function of a window's profiles (instance,
 * interval, weighted CPU) and poll evidence, plus the JSON of its inputs (DESIGN §11). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

/* A profile's interval clipped to the window, for the union P_i. */
struct span {
    uint32_t inst;
    int64_t lo, hi;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->inst != y->inst)
        return x->inst < y->inst ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/* Per-instance working state. */
struct inst_acc {
    int64_t first, last;  /* liveness evidence, valid when alive */
    int64_t covered;      /* P_i in ns */
    bool alive, profiled;
};

static void evidence(struct inst_acc *a, int64_t lo, int64_t hi)
{
    if (!a->alive || lo < a->first)
        a->first = lo;
    if (!a->alive || hi > a->last)
        a->last = hi;
    a->alive = true;
}

/* Clipped spans of the profiles with a positive duration; evidence of all profiles. */
static size_t profile_spans(const struct rt__query_cap_in *in, struct inst_acc *acc,
                            struct span *spans)
{
    size_t n = 0;
    for (size_t i = 0; i < in->nprofs; i++) {
        const struct rt__query_prof *p = &in->profs[i];
        struct inst_acc *a = &acc[p->inst];
        a->profiled = true;
        if (p->duration_ns <= 0) { /* only its start is known */
            if (p->start_ns >= in->from_ns && p->start_ns < in->to_ns)
                evidence(a, p->start_ns, p->start_ns);
            continue;
        }
        int64_t end = p->start_ns > INT64_MAX - p->duration_ns ? INT64_MAX
                                                                : p->start_ns + p->duration_ns;
        int64_t lo = p->start_ns > in->from_ns ? p->start_ns : in->from_ns;
        int64_t hi = end < in->to_ns ? end : in->to_ns;
        if (hi <= lo)
            continue;
        evidence(a, lo, hi);
        spans[n++] = (struct span){p->inst, lo, hi};
    }
    return n;
}

/* P_i: the union of each instance's clipped spans (overlaps count once, DESIGN §7). */
static void union_spans(struct span *spans, size_t n, struct inst_acc *acc)
{
    qsort(spans, n, sizeof(*spans), cmp_span);
    size_t i = 0;
    while (i < n) {
        uint32_t inst = spans[i].inst;
        int64_t lo = spans[i].lo, hi = spans[i].hi;
        for (i++; i < n && spans[i].inst == inst; i++) {
            if (spans[i].lo > hi) {
                acc[inst].covered += hi - lo;
                lo = spans[i].lo;
            }
            if (spans[i].hi > hi)
                hi = spans[i].hi;
        }
        acc[inst].covered += hi - lo;
    }
}

static void set_availability(const struct rt__query_cap_in *in, struct rt__query_cap *out)
{
    out->available = false;
    if (in->to_ns <= in->from_ns)
        out->reason = RT__QUERY_REASON_EMPTY_WINDOW;
    else if (in->nprofs == 0)
        out->reason = RT__QUERY_REASON_NO_PROFILES;
    else {
        for (size_t i = 0; i < in->nprofs; i++)
            if (in->profs[i].duration_ns <= 0) {
                out->reason = RT__QUERY_REASON_NO_DURATION;
                return;
            }
        out->available = true;
        out->reason = NULL;
    }
}

int rt__query_capacity(const struct rt__query_cap_in *in, double *factor,
                       struct rt__query_cap *out)
{
    memset(out, 0, sizeof(*out));
    out->window_s = in->to_ns > in->from_ns ? (double)(in->to_ns - in->from_ns) / 1e9 : 0;
    out->coverage = NAN;
    struct inst_acc *acc = calloc(in->ninst ? in->ninst : 1, sizeof(*acc));
    struct span *spans = malloc((in->nprofs ? in->nprofs : 1) * sizeof(*spans));
    if (!acc || !spans) {
        free(acc);
        free(spans);
        return RT_ENOMEM;
    }
    union_spans(spans, profile_spans(in, acc, spans), acc);
    for (size_t i = 0; i < in->nlive; i++) {
        const struct rt__query_live *l = &in->live[i];
        int64_t lo = l->first_ns > in->from_ns ? l->first_ns : in->from_ns;
        int64_t hi = l->last_ns < in->to_ns ? l->last_ns : in->to_ns;
        if (hi >= lo)
            evidence(&acc[l->inst], lo, hi);
    }
    int64_t profiled_ns = 0, alive_ns = 0;
    for (uint32_t i = 0; i < in->ninst; i++) {
        const struct inst_acc *a = &acc[i];
        double f = a->covered > 0 ? (double)(a->last - a->first) / (double)a->covered : 0;
        if (factor)
            factor[i] = f;
        if (!a->alive)
            continue;
        out->instances_alive++;
        out->instances_profiled += a->profiled;
        out->instances_unprofiled += !a->profiled;
        profiled_ns += a->covered;
        alive_ns += a->last - a->first;
    }
    double cpu_ns = 0, weighted_ns = 0;
    for (size_t i = 0; i < in->nprofs; i++) {
        const struct rt__query_prof *p = &in->profs[i];
        const struct inst_acc *a = &acc[p->inst];
        cpu_ns += p->value_ns;
        if (a->covered > 0)
            weighted_ns += p->value_ns * ((double)(a->last - a->first) / (double)a->covered);
    }
    out->cpu_s = cpu_ns / 1e9;
    out->profiled_s = (double)profiled_ns / 1e9;
    out->alive_s = (double)alive_ns / 1e9;
    if (alive_ns > 0)
        out->coverage = (double)profiled_ns / (double)alive_ns;
    set_availability(in, out);
    out->vcpu_hours_per_month =
        out->available ? rt__query_vcpu_hours(weighted_ns, out->window_s) : NAN;
    free(acc);
    free(spans);
    return 0;
}

double rt__query_vcpu_hours(double weighted_cpu_ns, double window_s)
{
    if (!(window_s > 0))
        return NAN;
    return RT_HOURS_PER_MONTH * (weighted_cpu_ns / 1e9) / window_s;
}

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *rt__query_cap_inputs_json(const struct rt__query_cap *cap)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "cpu_s", json_real(cap->cpu_s));
    json_object_set_new(o, "window_s", json_real(cap->window_s));
    json_object_set_new(o, "profiled_s", json_real(cap->profiled_s));
    json_object_set_new(o, "alive_s", json_real(cap->alive_s));
    json_object_set_new(o, "coverage", real_or_null(cap->coverage));
    json_object_set_new(o, "instances_alive", json_integer(cap->instances_alive));
    json_object_set_new(o, "instances_profiled", json_integer(cap->instances_profiled));
    json_object_set_new(o, "instances_unprofiled", json_integer(cap->instances_unprofiled));
    json_object_set_new(o, "hours_per_month", json_integer((json_int_t)RT_HOURS_PER_MONTH));
    json_object_set_new(o, "note", json_string(RT__QUERY_CAPACITY_NOTE));
    json_object_set_new(o, "unprofiled_note", cap->instances_unprofiled
                                                  ? json_string(RT__QUERY_UNPROFILED_NOTE)
                                                  : json_null());
    return o;
}
