/* Data quality of a window (DESIGN §6) and the agreement between sampled CPU and the CPU
 * the OS accounted to the sampled thread (DESIGN §2). */
#include <math.h>
#include <stdio.h>

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

json_t *rt__query_agreement_json(const struct rt__query_ctx *c, int k)
{
    const struct rt__query_win *w = &c->win[k];
    if (c->type != RT_PTYPE_CPU || w->agree_profiles == 0)
        return json_null();
    double sampled = w->agree_sampled_ns / 1e9, os = w->agree_os_ns / 1e9;
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "sampled_cpu_s", json_real(sampled));
    json_object_set_new(o, "os_thread_cpu_s", json_real(os));
    json_object_set_new(o, "ratio", os > 0 ? json_real(sampled / os) : json_null());
    json_t *warning = json_null();
    if (os > 0 ? fabs(sampled - os) > RT__QUERY_AGREEMENT_TOLERANCE * os : sampled > 0) {
        char msg[400];
        snprintf(msg, sizeof(msg),
                 "sampled CPU (%.3f s) differs from the CPU the OS accounted to the main JS "
                 "thread (%.3f s) by more than %.0f %%: V8 ticks on wall-clock time, so a "
                 "thread that waits for a core (CPU contention, a CPU limit) or blocks "
                 "synchronously still reads as CPU, and missed ticks read as less; the "
                 "capacity figures use the sampled CPU",
                 sampled, os, RT__QUERY_AGREEMENT_TOLERANCE * 100);
        warning = json_string(msg);
    }
    json_object_set_new(o, "warning", warning);
    json_object_set_new(o, "scope", json_string("main JS thread"));
    json_object_set_new(o, "profiles", json_integer(w->agree_profiles));
    return o;
}
