/* The producers table (DESIGN §7, §12): for each uploader RootTrace recognises, how its sampler
 * keeps time and which OS CPU figure covers what it samples. The only place that decides
 * whether a profile's CPU is scaled to the kernel's accounting or only compared with it. */
#include <string.h>

#include "rt/err.h"
#include "rt/producer.h"

/* Slack on the OS figures' bound: /proc counts CPU in 10 ms ticks (USER_HZ 100) read at both
 * ends of a profile, and an SDK reads it just outside its profiler's start and stop. */
#define SLACK_NS (50 * 1000000LL)
#define SLACK_DIVISOR 50 /* plus 2 % of the duration */

static const struct rt_producer unknown = {
    "", NULL, 0, RT_CLOCK_UNKNOWN, RT_WITNESS_ANY, NULL,
    "an uploader RootTrace does not recognise: its profile type is as declared",
};

/* RootTrace's own SDKs, told apart by the runtime= they send. */
static const struct rt_producer table[] = {
    {"roottrace-node", "node", RT_PTYPE_CPU, RT_CLOCK_WALL, RT_WITNESS_THREAD, "main JS thread",
     "V8's sampling profiler: ticks on wall-clock time and drops the event loop's idle "
     "samples, so a main thread that waits for a core still reads as CPU"},
    {"roottrace-go", "go", RT_PTYPE_CPU, RT_CLOCK_CPU, RT_WITNESS_PROCESS, "process",
     "runtime/pprof: SIGPROF on the CPU time of each thread"},
    {"roottrace-php", "php", RT_PTYPE_CPU, RT_CLOCK_CPU, RT_WITNESS_PROCESS, "process",
     "ext-excimer EXCIMER_CPU: a timer on the thread's CPU time, inside requests"},
    {"roottrace-php", "php", RT_PTYPE_WALL, RT_CLOCK_WALL, RT_WITNESS_PROCESS, "process",
     "ext-excimer EXCIMER_REAL: a wall-clock timer, inside requests"},
    {"roottrace-python", "python", RT_PTYPE_WALL, RT_CLOCK_WALL, RT_WITNESS_PROCESS, "process",
     "sys._current_frames() on a wall-clock interval, every application thread"},
    {"roottrace-java", "java", RT_PTYPE_WALL, RT_CLOCK_WALL, RT_WITNESS_PROCESS, "process",
     "Thread.getAllStackTraces() on a wall-clock interval, every application thread"},
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

const struct rt_producer *rt_producer_of_upload(const char *runtime, enum rt_ptype t)
{
    for (size_t i = 0; runtime && i < NTABLE; i++)
        if (table[i].type == t && strcmp(table[i].runtime, runtime) == 0)
            return &table[i];
    return &unknown;
}

const struct rt_producer *rt_producer_by_name(const char *name)
{
    for (size_t i = 0; name && *name && i < NTABLE; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return &unknown;
}

int64_t rt_producer_os_cpu_ns(const struct rt_producer *p, int64_t thread_cpu_ns,
                              int64_t process_cpu_ns)
{
    switch (p->witness) {
    case RT_WITNESS_THREAD:
        return thread_cpu_ns >= 0 ? thread_cpu_ns : -1;
    case RT_WITNESS_PROCESS:
        return process_cpu_ns >= 0 ? process_cpu_ns : -1;
    default:
        return thread_cpu_ns >= 0 ? thread_cpu_ns : process_cpu_ns >= 0 ? process_cpu_ns : -1;
    }
}

bool rt_producer_os_is_thread(const struct rt_producer *p, int64_t thread_cpu_ns)
{
    return thread_cpu_ns >= 0 && p->witness != RT_WITNESS_PROCESS;
}

const char *rt_producer_scope(const struct rt_producer *p, int64_t thread_cpu_ns)
{
    if (p->scope)
        return p->scope;
    return thread_cpu_ns >= 0 ? "thread" : "process";
}

bool rt_producer_is_scaled(const struct rt_producer *p)
{
    return p->clock == RT_CLOCK_WALL && p->type == RT_PTYPE_CPU;
}

double rt_producer_cpu_scale(const struct rt_producer *p, int64_t os_cpu_ns, int64_t value_ns)
{
    if (!rt_producer_is_scaled(p) || os_cpu_ns < 0 || value_ns <= 0)
        return 1;
    return (double)os_cpu_ns / (double)value_ns;
}

double rt_producer_unsampled_ns(const struct rt_producer *p, int64_t os_cpu_ns, int64_t value_ns)
{
    if (p->clock != RT_CLOCK_CPU || p->type != RT_PTYPE_CPU || os_cpu_ns < 0 ||
        os_cpu_ns <= value_ns)
        return 0;
    return (double)os_cpu_ns - (double)(value_ns > 0 ? value_ns : 0);
}

int rt_producer_check_os_cpu(int64_t duration_ns, int64_t thread_cpu_ns, int64_t process_cpu_ns,
                             struct rt_error *err)
{
    if (duration_ns <= 0)
        return 0;
    /* duration <= 24 h (the upload's bound) keeps every product below in range */
    double bound = (double)duration_ns + (double)duration_ns / SLACK_DIVISOR + (double)SLACK_NS;
    if (thread_cpu_ns >= 0 && (double)thread_cpu_ns > bound)
        return rt_error_set(err, RT_EINVAL,
                            "thread_cpu_ns %lld exceeds the profile's duration (%lld ns): one "
                            "thread cannot run longer than the wall clock",
                            (long long)thread_cpu_ns, (long long)duration_ns);
    if (process_cpu_ns >= 0 && (double)process_cpu_ns > bound * RT_PRODUCER_MAX_CPUS)
        return rt_error_set(err, RT_EINVAL,
                            "process_cpu_ns %lld exceeds the profile's duration (%lld ns) x %d "
                            "CPUs", (long long)process_cpu_ns, (long long)duration_ns,
                            RT_PRODUCER_MAX_CPUS);
    return 0;
}
