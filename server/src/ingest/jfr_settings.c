/* JFR recording settings that concern samples (jdk.ActiveSetting events): the JDK's "period"
 * of jdk.ExecutionSample, async-profiler's "event", "interval" and "wall" (src/flightRecorder.cpp,
 * Recording::writeSettings), whether sampling is on, and the sampling period they give. */
#include <string.h>

#include "jfr_internal.h"

/* A JDK timespan setting ("20 ms", "10ms", "1 s") in ns; 0 when not one. */
static int64_t parse_timespan(struct rt_str s)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {{"ns", 1},           {"us", 1000},           {"ms", 1000000},
                 {"s", 1000000000},   {"m", 60000000000LL},   {"h", 3600000000000LL},
                 {"d", 86400000000000LL}};
    int64_t v = 0;
    size_t i = 0;
    for (; i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9'; i++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s.ptr[i] - '0', &v))
            return 0;
    if (i == 0)
        return 0;
    while (i < s.len && s.ptr[i] == ' ')
        i++;
    struct rt_str unit = {s.ptr + i, s.len - i};
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
        if (rt_str_eq_cstr(unit, units[k].unit))
            return __builtin_mul_overflow(v, units[k].ns, &v) ? 0 : v;
    return unit.len == 0 ? v : 0; /* async-profiler writes bare nanoseconds */
}

/* Sets a numeric setting: the first statement in a chunk replaces the carried value, later
 * ones keep the smallest positive (the JDK runs at the shortest period any recording asks). */
static void set_ns(struct rt__jfr_settings *s, int64_t *field, unsigned bit, int64_t v)
{
    if (!(s->stated & bit) || (v > 0 && (*field == 0 || v < *field)))
        *field = v;
    s->stated |= bit;
}

void rt__jfr_setting(struct rt__jfr_settings *s, int target, struct rt_str name,
                     struct rt_str value)
{
    bool exec = target == RT__JFR_FOR_EXEC, wallc = target == RT__JFR_FOR_WALLCLOCK;
    int64_t ns = parse_timespan(value);
    bool on = rt_str_eq_cstr(value, "true");
    if (rt_str_eq_cstr(name, "event")) {
        s->has_event = true;
        rt__jfr_printable(s->event, sizeof(s->event), value);
    } else if (exec && rt_str_eq_cstr(name, "period")) {
        set_ns(s, &s->exec_period, 1, ns);
    } else if (exec && rt_str_eq_cstr(name, "interval")) {
        set_ns(s, &s->exec_interval, 2, ns);
    } else if (exec && rt_str_eq_cstr(name, "wall")) {
        set_ns(s, &s->exec_wall, 4, ns);
        s->wall_enabled = true;
    } else if (wallc && (rt_str_eq_cstr(name, "period") || rt_str_eq_cstr(name, "interval"))) {
        set_ns(s, &s->wall_period, 8, ns);
    } else if ((exec || wallc) && rt_str_eq_cstr(name, "enabled")) {
        bool *flag = exec ? &s->exec_enabled : &s->wall_enabled;
        unsigned bit = exec ? 16 : 32;
        *flag = (s->stated & bit ? *flag : false) || on;
        s->stated |= bit;
    }
}

/* async-profiler's "event" (src/arguments.cpp): cpu, itimer, ctimer and cpu-clock sample CPU
 * time; wall samples every thread on a wall-clock timer; anything else (hardware counters,
 * tracepoints, instrumented methods) counts no time. JDK recordings state none: cpu. */
enum rt__jfr_mode rt__jfr_mode_of(const struct rt__jfr_settings *s)
{
    static const char *const cpu[] = {"cpu", "itimer", "ctimer", "cpu-clock", ""};
    if (!s->has_event)
        return RT__JFR_MODE_CPU;
    for (size_t i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++)
        if (strcmp(s->event, cpu[i]) == 0)
            return RT__JFR_MODE_CPU;
    return strcmp(s->event, "wall") == 0 ? RT__JFR_MODE_WALL : RT__JFR_MODE_OTHER;
}

int64_t rt__jfr_period(const struct rt__jfr_settings *s, int which, int64_t hint)
{
    int64_t p = 0;
    if (which == 0)
        p = s->exec_period ? s->exec_period : s->exec_interval;
    else if (which == 1)
        p = s->exec_interval ? s->exec_interval : s->exec_wall ? s->exec_wall : s->exec_period;
    else
        p = s->wall_period ? s->wall_period
            : s->exec_wall ? s->exec_wall
            : rt__jfr_mode_of(s) == RT__JFR_MODE_WALL ? s->exec_interval
                                      : 0;
    return p > 0 ? p : hint;
}

