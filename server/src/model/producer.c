/* The producers table (DESIGN §7, §12): for each uploader RootTrace recognises, how its sampler
 * keeps time and which OS CPU figure covers what it samples. The only place that decides
 * whether a profile's CPU is scaled to the kernel's accounting or only compared with it. */
#include <string.h>
#include <strings.h>

#include "rt/err.h"
#include "rt/producer.h"

/* Slack on the OS figures' bound: /proc counts CPU in 10 ms ticks (USER_HZ 100) read at both
 * ends of a profile, and an SDK reads it just outside its profiler's start and stop. */
#define SLACK_NS (50 * 1000000LL)
#define SLACK_DIVISOR 50 /* plus 2 % of the duration */

static const struct rt_producer unknown = {
    "", NULL, NULL, 0, 0, RT_CLOCK_UNKNOWN, RT_WITNESS_ANY, NULL,
    "an uploader RootTrace does not recognise", "its profile type is as it declared it",
};

/* Every producer RootTrace recognises (DESIGN §7, §12; docs/agents.md has the same table).
 * RootTrace's own SDKs are told apart by the runtime= they send, Pyroscope's agents by their
 * spyName. An agent's entry for any type (type 0) follows its type-specific ones. */
static const struct rt_producer table[] = {
    {"roottrace-node", "node", NULL, RT_PTYPE_CPU, 0, RT_CLOCK_WALL, RT_WITNESS_THREAD,
     "main JS thread",
     "V8's sampling profiler: ticks on wall-clock time and drops the event loop's idle "
     "samples, so a main thread that waits for a core still reads as CPU",
     "capacity takes the main thread's CPU from the kernel; the samples distribute it"},
    {"roottrace-go", "go", NULL, RT_PTYPE_CPU, 0, RT_CLOCK_CPU, RT_WITNESS_PROCESS, "process",
     "runtime/pprof: SIGPROF on the CPU time of each thread",
     "on-CPU samples, compared with the kernel's CPU of the process"},
    {"roottrace-php", "php", NULL, RT_PTYPE_CPU, 0, RT_CLOCK_CPU, RT_WITNESS_PROCESS, "process",
     "ext-excimer EXCIMER_CPU: a timer on the thread's CPU time, inside requests",
     "on-CPU samples, compared with the kernel's CPU of the processes"},
    {"roottrace-php", "php", NULL, RT_PTYPE_WALL, 0, RT_CLOCK_WALL, RT_WITNESS_PROCESS, "process",
     "ext-excimer EXCIMER_REAL: a wall-clock timer, inside requests",
     "wall-clock samples: time waiting counts"},
    {"roottrace-python", "python", NULL, RT_PTYPE_WALL, 0, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "sys._current_frames() on a wall-clock interval, every application thread",
     "wall-clock samples: time waiting counts"},
    {"roottrace-java", "java", NULL, RT_PTYPE_WALL, 0, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "Thread.getAllStackTraces() on a wall-clock interval, every application thread",
     "wall-clock samples: time waiting counts"},
    {"pyroscope-go", "go", "gospy", RT_PTYPE_CPU, 0, RT_CLOCK_CPU, RT_WITNESS_PROCESS, "process",
     "runtime/pprof: SIGPROF on the CPU time of each thread", "on-CPU samples"},
    {"grafana-alloy-ebpf", NULL, "ebpfspy", RT_PTYPE_CPU, 0, RT_CLOCK_CPU, RT_WITNESS_PROCESS,
     "process", "an eBPF program on perf_event's CPU clock, every process of the host",
     "on-CPU samples"},
    {"pyroscope-java", "java", "javaspy", RT_PTYPE_CPU, 0, RT_CLOCK_CPU, RT_WITNESS_PROCESS,
     "process", "async-profiler's itimer or cpu event: timers on CPU time",
     "on-CPU samples of Java and native frames"},
    {"pyroscope-java", "java", "javaspy", RT_PTYPE_WALL, 0, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "async-profiler's wall event: every thread on a wall-clock interval",
     "wall-clock samples: time waiting counts"},
    {"pyroscope-python", "python", "pyspy", 0, RT_PTYPE_WALL, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "py-spy: the interpreter's stacks read on a wall-clock interval",
     "stored as wall whatever it declares: wall-clock samples; oncpu drops threads by a "
     "thread-state heuristic and gil_only drops threads without the GIL, neither is CPU time"},
    {"pyroscope-ruby", "ruby", "rbspy", 0, RT_PTYPE_WALL, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "rbspy: the interpreter's stacks read on a wall-clock interval",
     "stored as wall whatever it declares: wall-clock samples; oncpu drops threads by a "
     "thread-state heuristic, not CPU time"},
    {"py-spy", "python", RT_PRODUCER_SPY_PYSPY_FILE, 0, RT_PTYPE_WALL, RT_CLOCK_WALL,
     RT_WITNESS_PROCESS, "process",
     "py-spy record: the interpreter's stacks read on a wall-clock interval (its frames' "
     "shape, func (file.py:LINE), names it)",
     "stored as wall whatever it declares: py-spy drops idle threads by a thread-state "
     "heuristic, which is not CPU time"},
    {"rbspy", "ruby", RT_PRODUCER_SPY_RBSPY_FILE, 0, RT_PTYPE_WALL, RT_CLOCK_WALL,
     RT_WITNESS_PROCESS, "process",
     "rbspy record: the interpreter's stacks read on a wall-clock interval (its frames' "
     "shape, func (file.rb:LINE), names it)",
     "stored as wall whatever it declares: wall-clock samples, not CPU time"},
    {"pyroscope-nodejs", "node", "nodespy", RT_PTYPE_WALL, 0, RT_CLOCK_WALL, RT_WITNESS_PROCESS,
     "process", "@datadog/pprof's time profiler: V8's sampler on a wall-clock interval",
     "wall-clock samples: time waiting counts"},
};
#define NTABLE (sizeof(table) / sizeof(table[0]))

const struct rt_producer *rt_producer_of_upload(const char *runtime, enum rt_ptype t)
{
    for (size_t i = 0; runtime && i < NTABLE; i++)
        if (!table[i].spy && table[i].type == t && strcmp(table[i].runtime, runtime) == 0)
            return &table[i];
    return &unknown;
}

const struct rt_producer *rt_producer_of_agent(const char *spy, enum rt_ptype t)
{
    for (size_t i = 0; spy && i < NTABLE; i++)
        if (table[i].spy && (table[i].type == t || table[i].type == 0) &&
            strcasecmp(table[i].spy, spy) == 0)
            return &table[i];
    return &unknown;
}

enum rt_ptype rt_producer_stored_type(const struct rt_producer *p, enum rt_ptype t)
{
    return p->stores_as ? p->stores_as : t;
}

const char *rt_producer_agent(const struct rt_producer *p)
{
    return p->name[0] ? p->name : "unknown";
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
