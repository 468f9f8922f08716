/* Data quality of a window (DESIGN §6) and the agreement between sampled CPU and the CPU
 * the OS accounted to what the profiles cover (DESIGN §2, §7). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "query_internal.h"

json_t *rt__query_quality_json(const struct rt__query_ctx *c, int k)
{
    const struct rt__query_win *w = &c->win[k];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "profiles", json_integer(w->profiles));
    json_object_set_new(o, "instances_alive", json_integer(w->cap.instances_alive));
    json_object_set_new(o, "instances_profiled", json_integer(w->cap.instances_profiled));
    json_object_set_new(o, "instances_unprofiled", json_integer(w->cap.instances_unprofiled));
    json_object_set_new(o, "truncated_stacks", json_integer((json_int_t)w->truncated_stacks));
    json_object_set_new(o, "coverage",
                        isfinite(w->cap.coverage) ? json_real(w->cap.coverage) : json_null());
    json_object_set_new(o, "has_data", json_boolean(w->profiles > 0));
    return o;
}

/* "capacity_uses" of a window's agreement: whose figure its capacity takes. */
static const char *capacity_uses(const struct rt__query_win *w)
{
    return w->agree_scaled == w->agree_profiles ? "os"
           : w->agree_scaled == 0               ? "sampled"
                                                : "mixed";
}

/* The warning of an agreement whose figures differ by more than the tolerance: why they may
 * differ, and which one the capacity figures use. */
static json_t *agreement_warning(const struct rt__query_win *w, const char *scope,
                                 double sampled, double os)
{
    char msg[600];
    int n = snprintf(msg, sizeof(msg),
                     "sampled CPU (%.3f s) differs from the CPU the OS accounted to the %s "
                     "(%.3f s) by more than %.0f %%: ",
                     sampled, scope, os, RT__QUERY_AGREEMENT_TOLERANCE * 100);
    const char *uses = capacity_uses(w);
    const char *why =
        strcmp(uses, "sampled") == 0
            ? "its sampler's timer counts CPU time, so the difference is CPU the profile "
              "cannot see (threads that run no sampled code, such as the Go runtime's sysmon "
              "thread, or native threads) or lost samples; the capacity figures use the "
              "sampled CPU, and count what the OS saw beyond it as unattributed CPU"
            : "its sampler ticks on wall-clock time, so a thread that waits for a core (CPU "
              "contention, a CPU limit) or blocks synchronously still reads as CPU, and missed "
              "ticks read as less; the capacity figures use the OS's figure (the kernel's "
              "accounting is the better witness), the function shares stay the samples'";
    if (n < 0 || (size_t)n >= sizeof(msg)) /* cut (a huge figure, or a long scope): as is */
        return json_string(n < 0 ? "sampled CPU differs from the OS's" : msg);
    snprintf(msg + n, sizeof(msg) - (size_t)n, "%s%s", why,
             strcmp(uses, "mixed") == 0 ? " where the sampler ticks on wall time" : "");
    return json_string(msg);
}

json_t *rt__query_agreement_json(const struct rt__query_ctx *c, int k)
{
    const struct rt__query_win *w = &c->win[k];
    if (c->type != RT_PTYPE_CPU || w->agree_profiles == 0)
        return json_null();
    double sampled = w->agree_sampled_ns / 1e9, os = w->agree_os_ns / 1e9;
    const char *scope = w->agree_mixed_scope ? "threads and processes of its producers"
                                             : w->agree_scope;
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "sampled_cpu_s", json_real(sampled));
    json_object_set_new(o, "os_cpu_s", json_real(os));
    json_object_set_new(o, "os_thread_cpu_s", w->agree_any_process ? json_null() : json_real(os));
    json_object_set_new(o, "ratio", os > 0 ? json_real(sampled / os) : json_null());
    bool differ = os > 0 ? fabs(sampled - os) > RT__QUERY_AGREEMENT_TOLERANCE * os : sampled > 0;
    json_object_set_new(o, "warning",
                        differ ? agreement_warning(w, scope, sampled, os) : json_null());
    json_object_set_new(o, "scope", json_string(scope));
    json_object_set_new(o, "capacity_uses", json_string(capacity_uses(w)));
    json_object_set_new(o, "profiles", json_integer(w->agree_profiles));
    return o;
}
