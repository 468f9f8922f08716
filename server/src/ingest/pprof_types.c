/* Type resolution of a pprof (DESIGN §2): which sample value is CPU or wall time, which is the
 * sample count, and what the period means. The server never infers CPU; only declared types,
 * or an upload's type= where the pprof declares nothing, decide. */
#include <stdio.h>
#include <string.h>

#include "ingest_internal.h"

/* What one declared ValueType is. */
enum kind { K_UNDECLARED, K_CPU, K_WALL, K_COUNT, K_OTHER };

static bool eq(struct rt_str s, const char *c)
{
    return rt_str_eq_cstr(s, c);
}

/* Nanoseconds per unit of a time unit, 0 when the unit is not a time. */
static int64_t unit_ns(struct rt_str u)
{
    if (eq(u, "nanoseconds") || eq(u, "nanosecond") || eq(u, "ns"))
        return 1;
    if (eq(u, "microseconds") || eq(u, "microsecond") || eq(u, "us"))
        return 1000;
    if (eq(u, "milliseconds") || eq(u, "millisecond") || eq(u, "ms"))
        return 1000000;
    if (eq(u, "seconds") || eq(u, "second") || eq(u, "s"))
        return 1000000000;
    return 0;
}

static bool is_wall_name(struct rt_str t)
{
    /* "time" is fgprof's sample type, "wallclock" its period type. */
    return eq(t, "wall") || eq(t, "wallclock") || eq(t, "time");
}

static enum kind classify(const struct rt__pprof *pp, const struct rt__pprof_vt *vt,
                          int64_t *scale)
{
    struct rt_str t = rt__pprof_str(pp, vt->type), u = rt__pprof_str(pp, vt->unit);
    *scale = unit_ns(u);
    if (t.len == 0 && u.len == 0)
        return K_UNDECLARED;
    if ((eq(t, "samples") || eq(t, "sample")) && eq(u, "count"))
        return K_COUNT;
    if (*scale && eq(t, "cpu"))
        return K_CPU;
    if (*scale && is_wall_name(t))
        return K_WALL;
    return K_OTHER;
}

/* Writes "type/unit, type/unit" of every sample type into buf. */
static const char *type_list(const struct rt__pprof *pp, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pp->nsample_types && n < size; i++) {
        struct rt_str t = rt__pprof_str(pp, pp->sample_types[i].type);
        struct rt_str u = rt__pprof_str(pp, pp->sample_types[i].unit);
        int k = snprintf(buf + n, size - n, "%s%.*s/%.*s", i ? ", " : "",
                         (int)(t.len > 64 ? 64 : t.len), t.ptr, (int)(u.len > 64 ? 64 : u.len),
                         u.ptr);
        if (k < 0)
            break;
        n += (size_t)k;
    }
    return buf;
}

/* Period in ns from period_type/period, 0 when unknown or not a time. */
static int64_t period_ns(const struct rt__pprof *pp)
{
    int64_t scale = unit_ns(rt__pprof_str(pp, pp->period_type.unit));
    int64_t ns;
    if (scale == 0 || pp->period <= 0 || __builtin_mul_overflow(pp->period, scale, &ns))
        return 0;
    return ns;
}

/* A samples/count profile with no time value: its period type (or type=) decides. */
static int resolve_counts(const struct rt__pprof *pp, enum rt_ptype want, int count_idx,
                          struct rt__pprof_pick *pick, struct rt_error *err)
{
    int64_t scale;
    enum kind k = classify(pp, &pp->period_type, &scale);
    struct rt_str t = rt__pprof_str(pp, pp->period_type.type);
    struct rt_str u = rt__pprof_str(pp, pp->period_type.unit);
    enum rt_ptype type;
    if (k == K_CPU || k == K_WALL) {
        type = k == K_CPU ? RT_PTYPE_CPU : RT_PTYPE_WALL;
        if (want && want != type)
            return rt_error_set(err, RT_ETYPE,
                                "type=%s contradicts the profile's period type %.*s/%.*s",
                                rt_ptype_name(want), (int)t.len, t.ptr, (int)u.len, u.ptr);
    } else if (k == K_UNDECLARED && want) {
        type = want;
    } else if (k == K_UNDECLARED) {
        return rt_error_set(err, RT_ETYPE,
                            "profile has only samples/count and no period type: cannot tell "
                            "cpu from wall (upload with type=cpu or type=wall)");
    } else {
        return rt_error_set(err, RT_ETYPE,
                            "profile has only samples/count with period type %.*s/%.*s, which "
                            "is neither cpu nor wall time",
                            (int)(t.len > 64 ? 64 : t.len), t.ptr,
                            (int)(u.len > 64 ? 64 : u.len), u.ptr);
    }
    int64_t per = k == K_UNDECLARED ? pp->period : period_ns(pp);
    if (per <= 0)
        return rt_error_set(err, RT_ETYPE,
                            "profile has only samples/count and period %lld: its %s values "
                            "are unknown",
                            (long long)pp->period, rt_ptype_name(type));
    *pick = (struct rt__pprof_pick){.type = type, .value_idx = -1, .scale = 1,
                                    .count_idx = count_idx, .period_ns = per};
    return 0;
}

int rt__pprof_resolve(const struct rt__pprof *pp, enum rt_ptype want,
                      struct rt__pprof_pick picks[2], size_t *npicks, struct rt_error *err)
{
    int cpu = -1, wall = -1, count = -1;
    int64_t cpu_scale = 0, wall_scale = 0, scale;
    bool all_undeclared = true;
    char names[400];
    if (pp->nsample_types == 0)
        return rt_error_set(err, RT_EMALFORMED, "profile has no sample type");
    for (size_t i = 0; i < pp->nsample_types; i++) {
        enum kind k = classify(pp, &pp->sample_types[i], &scale);
        all_undeclared &= k == K_UNDECLARED;
        /* Two values of one type: which is the profile's cannot be told (docs/decisions.md);
         * taking the first, as before, guessed. */
        if ((k == K_CPU && cpu >= 0) || (k == K_WALL && wall >= 0))
            return rt_error_set(err, RT_ETYPE,
                                "sample types %d and %zu are both %s time: which one is the "
                                "profile's cannot be told (upload one of them)",
                                k == K_CPU ? cpu : wall, i, k == K_CPU ? "cpu" : "wall");
        if (k == K_CPU && cpu < 0) {
            cpu = (int)i;
            cpu_scale = scale;
        } else if (k == K_WALL && wall < 0) {
            wall = (int)i;
            wall_scale = scale;
        } else if (k == K_COUNT && count < 0) {
            count = (int)i;
        }
    }
    if (cpu < 0 && wall < 0) {
        if (count >= 0) {
            *npicks = 1;
            return resolve_counts(pp, want, count, &picks[0], err);
        }
        if (all_undeclared)
            return rt_error_set(err, RT_ETYPE,
                                "profile's sample types are undeclared (empty type and unit): "
                                "its values are neither cpu nor wall time");
        return rt_error_set(err, RT_ETYPE,
                            "profile's sample types (%s) are neither cpu nor wall time",
                            type_list(pp, names, sizeof(names)));
    }
    if (want == RT_PTYPE_CPU && cpu < 0)
        return rt_error_set(err, RT_ETYPE, "type=cpu contradicts the profile's sample types (%s)",
                            type_list(pp, names, sizeof(names)));
    if (want == RT_PTYPE_WALL && wall < 0)
        return rt_error_set(err, RT_ETYPE,
                            "type=wall contradicts the profile's sample types (%s)",
                            type_list(pp, names, sizeof(names)));
    int64_t per = period_ns(pp);
    size_t n = 0;
    if (cpu >= 0 && want != RT_PTYPE_WALL)
        picks[n++] = (struct rt__pprof_pick){RT_PTYPE_CPU, cpu, cpu_scale, count, per};
    if (wall >= 0 && want != RT_PTYPE_CPU)
        picks[n++] = (struct rt__pprof_pick){RT_PTYPE_WALL, wall, wall_scale, count, per};
    *npicks = n;
    return 0;
}
