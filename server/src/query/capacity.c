/* The capacity estimate of DESIGN §7 as a pure function of a window's profiles (instance,
 * interval, weighted CPU) and poll evidence, plus the JSON of its inputs (DESIGN §11). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/buf.h"

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
        if (p->summary) /* its covered time is in in->spans */
            continue;
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
    for (size_t i = 0; i < in->nspans; i++) {
        const struct rt__query_span *sp = &in->spans[i];
        int64_t lo = sp->lo > in->from_ns ? sp->lo : in->from_ns;
        int64_t hi = sp->hi < in->to_ns ? sp->hi : in->to_ns;
        if (hi <= lo)
            continue;
        evidence(&acc[sp->inst], lo, hi);
        spans[n++] = (struct span){sp->inst, lo, hi};
    }
    return n;
}

/* Profiles p stands for: 1, or a summary's count. */
static uint32_t profiles_of(const struct rt__query_prof *p)
{
    return p->summary ? p->count : 1;
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

/* What the CPU of the window and of each instance is made of (DESIGN §7): the samples' own
 * figure, the OS figures the profiles carried, and how many profiles were scaled to theirs
 * or could not be checked. os sums are NaN where no profile carried one. */
static void sum_cpu_sources(const struct rt__query_cap_in *in, struct rt__query_cap_inst *insts,
                            struct rt__query_cap *out)
{
    double sampled = 0, unsampled = 0, os = 0;
    uint64_t profiles = 0;
    for (size_t i = 0; i < in->nprofs; i++) {
        const struct rt__query_prof *p = &in->profs[i];
        sampled += p->sampled_ns;
        unsampled += p->unsampled_ns;
        out->profiles_scaled += p->scaled;
        out->profiles_unchecked += p->unchecked;
        profiles += profiles_of(p);
        if (insts) {
            insts[p->inst].sampled_ns += p->sampled_ns;
            insts[p->inst].unsampled_ns += p->unsampled_ns;
        }
        uint32_t carried = p->summary ? p->os_count : p->os_ns >= 0;
        if (!carried)
            continue;
        os += p->os_ns;
        out->profiles_os += carried;
        if (insts)
            insts[p->inst].os_ns = (isnan(insts[p->inst].os_ns) ? 0 : insts[p->inst].os_ns) +
                                   p->os_ns;
    }
    out->profiles = profiles > UINT32_MAX ? UINT32_MAX : (uint32_t)profiles;
    out->sampled_cpu_s = sampled / 1e9;
    out->unattributed_cpu_s = unsampled / 1e9;
    out->os_cpu_s = out->profiles_os ? os / 1e9 : NAN;
}

/* The union of the alive instances' [first, last] spans, ns: how long the service (any of
 * its instances) was alive in the window. Sorts spans (ninst entries, scratch). */
static double service_alive_ns(const struct inst_acc *acc, uint32_t ninst, struct span *spans)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ninst; i++)
        if (acc[i].alive)
            spans[n++] = (struct span){0, acc[i].first, acc[i].last};
    qsort(spans, n, sizeof(*spans), cmp_span);
    double total = 0;
    for (size_t i = 0; i < n;) {
        int64_t lo = spans[i].lo, hi = spans[i].hi;
        for (i++; i < n && spans[i].lo <= hi; i++)
            hi = spans[i].hi > hi ? spans[i].hi : hi;
        total += (double)(hi - lo);
    }
    return total;
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
            if (!in->profs[i].summary && in->profs[i].duration_ns <= 0) {
                out->reason = RT__QUERY_REASON_NO_DURATION;
                return;
            }
        out->available = true;
        out->reason = NULL;
    }
}

int rt__query_capacity(const struct rt__query_cap_in *in, struct rt__query_cap_inst *insts,
                       struct rt__query_cap *out)
{
    memset(out, 0, sizeof(*out));
    out->window_s = in->to_ns > in->from_ns ? (double)(in->to_ns - in->from_ns) / 1e9 : 0;
    out->coverage = NAN;
    struct inst_acc *acc = calloc(in->ninst ? in->ninst : 1, sizeof(*acc));
    size_t nspans = in->nprofs + in->nspans > in->ninst ? in->nprofs + in->nspans : in->ninst;
    struct span *spans = malloc((nspans ? nspans : 1) * sizeof(*spans));
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
    /* Sums over instances and profiles are doubles: they cannot overflow, whatever the
     * number of instances or the profiles' values (each <= RT_PROFILE_MAX_VALUE_NS). */
    double profiled_ns = 0, alive_ns = 0;
    for (uint32_t i = 0; i < in->ninst; i++) {
        const struct inst_acc *a = &acc[i];
        double span = a->alive ? (double)a->last - (double)a->first : 0;
        double f = a->covered > 0 ? span / (double)a->covered : 0;
        if (insts)
            insts[i] = (struct rt__query_cap_inst){0,          0, 0, NAN, (double)a->covered / 1e9,
                                                   span / 1e9, f, a->alive, a->profiled};
        if (!a->alive)
            continue;
        out->instances_alive++;
        out->instances_profiled += a->profiled;
        out->instances_unprofiled += !a->profiled;
        profiled_ns += (double)a->covered;
        alive_ns += span;
    }
    double cpu_ns = 0, weighted_ns = 0;
    for (size_t i = 0; i < in->nprofs; i++) {
        const struct rt__query_prof *p = &in->profs[i];
        const struct inst_acc *a = &acc[p->inst];
        cpu_ns += p->value_ns;
        if (insts)
            insts[p->inst].cpu_ns += p->value_ns;
        if (a->covered > 0)
            weighted_ns += p->value_ns * ((double)(a->last - a->first) / (double)a->covered);
    }
    sum_cpu_sources(in, insts, out);
    out->service_alive_s = service_alive_ns(acc, in->ninst, spans) / 1e9;
    out->cpu_s = cpu_ns / 1e9;
    out->profiled_s = profiled_ns / 1e9;
    out->alive_s = alive_ns / 1e9;
    if (alive_ns > 0)
        out->coverage = profiled_ns / alive_ns;
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

/* Order of the "instances" list: contribution (cpu_i * A_i / P_i) descending, then alive
 * time descending, then name. */
struct inst_order {
    const struct rt__query_cap_inst *insts;
    const struct rt_intern *names;
};

static int cmp_contribution(const void *a, const void *b, void *ud)
{
    const struct inst_order *o = ud;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct rt__query_cap_inst *x = &o->insts[i], *y = &o->insts[j];
    double cx = x->cpu_ns * x->factor, cy = y->cpu_ns * y->factor;
    if (cx != cy)
        return cx > cy ? -1 : 1;
    if (x->alive_s != y->alive_s)
        return x->alive_s > y->alive_s ? -1 : 1;
    return strcmp(rt_intern_str(o->names, i), rt_intern_str(o->names, j));
}

/* cpu / sampled, or null when nothing was sampled. */
static json_t *factor_json(double cpu, double sampled)
{
    return sampled > 0 ? real_or_null(cpu / sampled) : json_null();
}

/* One instance's part: {"instance", "cpu_s", "sampled_cpu_s", "os_cpu_s", "cpu_factor",
 * "profiled_s", "alive_s", "vcpu_hours_per_month"}, the last null when the window's estimate
 * is unavailable, os_cpu_s when its profiles carried no OS figure. */
static json_t *inst_json(const struct rt__query_cap *cap, const struct rt__query_cap_inst *ci,
                         const char *name)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "instance", rt__query_str_json(name));
    json_object_set_new(o, "cpu_s", json_real(ci->cpu_ns / 1e9));
    json_object_set_new(o, "sampled_cpu_s", json_real(ci->sampled_ns / 1e9));
    json_object_set_new(o, "unattributed_cpu_s", json_real(ci->unsampled_ns / 1e9));
    json_object_set_new(o, "os_cpu_s", real_or_null(ci->os_ns / 1e9));
    json_object_set_new(o, "cpu_factor", factor_json(ci->cpu_ns, ci->sampled_ns));
    json_object_set_new(o, "profiled_s", json_real(ci->profiled_s));
    json_object_set_new(o, "alive_s", json_real(ci->alive_s));
    json_object_set_new(o, "vcpu_hours_per_month",
                        cap->available
                            ? real_or_null(rt__query_vcpu_hours(ci->cpu_ns * ci->factor,
                                                                cap->window_s))
                            : json_null());
    return o;
}

/* Sets "instances" and "instances_truncated" of an inputs object. Returns 0 or RT_ENOMEM. */
static int set_instances(json_t *o, const struct rt__query_cap *cap,
                         const struct rt__query_cap_inst *insts, uint32_t ninst,
                         const struct rt_intern *names)
{
    uint32_t *order = malloc((ninst ? ninst : 1) * sizeof(*order));
    json_t *arr = json_array();
    if (!order || !arr) {
        free(order);
        json_decref(arr);
        return RT_ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; insts && i < ninst; i++)
        if (insts[i].alive || insts[i].profiled)
            order[n++] = i;
    struct inst_order ud = {insts, names};
    qsort_r(order, n, sizeof(*order), cmp_contribution, &ud);
    int rc = 0;
    for (uint32_t k = 0; k < n && k < RT__QUERY_MAX_CAP_INSTANCES && !rc; k++)
        rc = json_array_append_new(arr, inst_json(cap, &insts[order[k]],
                                                  rt_intern_str(names, order[k])))
                 ? RT_ENOMEM
                 : 0;
    free(order);
    json_object_set_new(o, "instances", arr);
    json_object_set_new(o, "instances_truncated", json_boolean(n > RT__QUERY_MAX_CAP_INSTANCES));
    return rc;
}

/* "cpu_basis": where the window's CPU comes from. */
static const char *cpu_basis(const struct rt__query_cap *cap)
{
    if (cap->profiles_scaled == 0)
        return "samples";
    return cap->profiles_scaled == cap->profiles ? "os" : "mixed";
}

/* "cpu_note": what cpu_basis means for this window, or null when there is nothing to say. */
static void set_cpu_note(json_t *o, const struct rt__query_cap *cap)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = 0;
    if (cap->profiles_scaled)
        rc = rc || rt_buf_printf(&b,
                                 "%u of %u profiles come from a sampler that ticks on wall-clock "
                                 "time: their CPU is the OS's accounting of what each covers "
                                 "(os_cpu_s), distributed over functions by the samples "
                                 "(DESIGN §7).",
                                 cap->profiles_scaled, cap->profiles);
    if (cap->profiles_unchecked)
        rc = rc || rt_buf_printf(&b,
                                 "%s%u profiles from a sampler that ticks on wall-clock time "
                                 "carry no OS CPU figure (an older SDK, or no /proc): their "
                                 "sampled CPU is used unchecked, and it reads high where "
                                 "threads wait for a core.",
                                 b.len ? " " : "", cap->profiles_unchecked);
    if (cap->profiles_os > cap->profiles_scaled)
        rc = rc || rt_buf_printf(&b,
                                 "%s%u profiles come from a sampler on a CPU-time timer: their "
                                 "CPU is the samples', compared with the OS figure they carry "
                                 "(cpu_agreement)%s.",
                                 b.len ? " " : "", cap->profiles_os - cap->profiles_scaled,
                                 cap->unattributed_cpu_s > 0
                                     ? "; what the OS accounted beyond the samples (CPU the "
                                       "sampler cannot see, such as the Go runtime's sysmon "
                                       "thread) counts as unattributed_cpu_s, in no function"
                                     : "");
    json_object_set_new(o, "cpu_note", !rc && b.len ? json_string(b.data) : json_null());
    rt_buf_cleanup(&b);
}

json_t *rt__query_cap_inputs_json(const struct rt__query_cap *cap,
                                  const struct rt__query_cap_inst *insts, uint32_t ninst,
                                  const struct rt_intern *names)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "cpu_s", json_real(cap->cpu_s));
    json_object_set_new(o, "sampled_cpu_s", json_real(cap->sampled_cpu_s));
    json_object_set_new(o, "unattributed_cpu_s", json_real(cap->unattributed_cpu_s));
    json_object_set_new(o, "os_cpu_s", real_or_null(cap->os_cpu_s));
    json_object_set_new(o, "cpu_factor", factor_json(cap->cpu_s, cap->sampled_cpu_s));
    json_object_set_new(o, "cpu_basis", json_string(cpu_basis(cap)));
    json_object_set_new(o, "profiles_scaled", json_integer(cap->profiles_scaled));
    json_object_set_new(o, "profiles_unchecked", json_integer(cap->profiles_unchecked));
    set_cpu_note(o, cap);
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
    if (set_instances(o, cap, insts, ninst, names)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
