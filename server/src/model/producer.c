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
    .name = "", .clock = RT_CLOCK_UNKNOWN, .witness = RT_WITNESS_ANY,
    .method = "an uploader RootTrace does not recognise",
    .note = "its profile type is as it declared it",
};

#define WALL_NOTE "wall-clock samples: time waiting counts"
#define SPY_NOTE                                                                               \
    "stored as wall whatever it declares: wall-clock samples; oncpu drops threads by a "       \
    "thread-state heuristic and gil_only drops threads without the GIL, neither is CPU time"

/* Every producer RootTrace recognises (DESIGN §7, §12; docs/agents.md has the same table).
 * RootTrace's own SDKs are told apart by the runtime= they send, Pyroscope's agents by their
 * spyName (or the otel.scope.name of their pushes). An agent's entry for any type (type 0)
 * follows its type-specific ones. */
static const struct rt_producer table[] = {
    {.name = "roottrace-node", .runtime = "node", .type = RT_PTYPE_CPU, .clock = RT_CLOCK_WALL,
     .witness = RT_WITNESS_THREAD, .scope = "main JS thread",
     .method = "V8's sampling profiler: ticks on wall-clock time and drops the event loop's "
               "idle samples, so a main thread that waits for a core still reads as CPU",
     .note = "capacity takes the main thread's CPU from the kernel; the samples distribute it"},
    {.name = "roottrace-go", .runtime = "go", .type = RT_PTYPE_CPU, .clock = RT_CLOCK_CPU,
     .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "runtime/pprof: SIGPROF on the CPU time of each thread",
     .note = "on-CPU samples, compared with the kernel's CPU of the process"},
    {.name = "roottrace-php", .runtime = "php", .type = RT_PTYPE_CPU, .clock = RT_CLOCK_CPU,
     .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "ext-excimer EXCIMER_CPU: a timer on the thread's CPU time, inside requests",
     .note = "on-CPU samples, compared with the kernel's CPU of the processes"},
    {.name = "roottrace-php", .runtime = "php", .type = RT_PTYPE_WALL, .clock = RT_CLOCK_WALL,
     .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "ext-excimer EXCIMER_REAL: a wall-clock timer, inside requests",
     .note = WALL_NOTE},
    {.name = "roottrace-python", .runtime = "python", .type = RT_PTYPE_WALL,
     .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "sys._current_frames() on a wall-clock interval, every application thread",
     .note = WALL_NOTE},
    {.name = "roottrace-java", .runtime = "java", .type = RT_PTYPE_CPU, .clock = RT_CLOCK_WALL,
     .witness = RT_WITNESS_THREADS, .scope = "threads running Java code (JFR)",
     .method = "JFR's jdk.ExecutionSample: ticks on wall-clock time and samples the threads "
               "running Java code; native frames, GC and JIT threads are not seen",
     .note = "capacity takes the sampled threads' CPU from the JVM (getThreadCpuTime); the "
             "samples distribute it"},
    {.name = "roottrace-java", .runtime = "java", .type = RT_PTYPE_WALL, .clock = RT_CLOCK_WALL,
     .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "Thread.getAllStackTraces() on a wall-clock interval, every application thread",
     .note = WALL_NOTE},
    {.name = "pyroscope-go", .runtime = "go", .spy = "gospy", .type = RT_PTYPE_CPU,
     .clock = RT_CLOCK_CPU, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/go",
     .method = "runtime/pprof: SIGPROF on the CPU time of each thread",
     .note = "on-CPU samples"},
    {.name = "grafana-alloy-ebpf", .spy = "ebpfspy", .type = RT_PTYPE_CPU, .clock = RT_CLOCK_CPU,
     .witness = RT_WITNESS_PROCESS, .scope = "process",
     .method = "an eBPF program on perf_event's CPU clock, every process of the host",
     .note = "on-CPU samples"},
    {.name = "pyroscope-java", .runtime = "java", .spy = "javaspy", .type = RT_PTYPE_CPU,
     .clock = RT_CLOCK_CPU, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/java",
     .method = "async-profiler's itimer or cpu event: timers on CPU time",
     .note = "on-CPU samples of Java and native frames"},
    {.name = "pyroscope-java", .runtime = "java", .spy = "javaspy", .type = RT_PTYPE_WALL,
     .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/java",
     .method = "async-profiler's wall event: every thread on a wall-clock interval",
     .note = WALL_NOTE},
    {.name = "pyroscope-python", .runtime = "python", .spy = "pyspy", .stores_as = RT_PTYPE_WALL,
     .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/python", .names_lack_module = true,
     .method = "py-spy (in pyroscope-rs): the interpreter's stacks read on a wall-clock "
               "interval",
     .note = SPY_NOTE},
    {.name = "pyroscope-ruby", .runtime = "ruby", .spy = "rbspy", .stores_as = RT_PTYPE_WALL,
     .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/ruby", .names_lack_module = true,
     .method = "rbspy (in pyroscope-rs): the interpreter's stacks read on a wall-clock interval",
     .note = "stored as wall whatever it declares: wall-clock samples; oncpu drops threads by "
             "a thread-state heuristic, not CPU time"},
    {.name = "py-spy", .runtime = "python", .spy = RT_PRODUCER_SPY_PYSPY_FILE,
     .stores_as = RT_PTYPE_WALL, .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS,
     .scope = "process",
     .method = "py-spy record: the interpreter's stacks read on a wall-clock interval (its "
               "frames' shape, func (file.py:LINE), names it)",
     .note = "stored as wall whatever it declares: py-spy drops idle threads by a "
             "thread-state heuristic, which is not CPU time"},
    {.name = "rbspy", .runtime = "ruby", .spy = RT_PRODUCER_SPY_RBSPY_FILE,
     .stores_as = RT_PTYPE_WALL, .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS,
     .scope = "process",
     .method = "rbspy record: the interpreter's stacks read on a wall-clock interval (its "
               "frames' shape, func (file.rb:LINE), names it)",
     .note = "stored as wall whatever it declares: wall-clock samples, not CPU time"},
    {.name = "pyroscope-nodejs", .runtime = "node", .spy = "nodespy", .type = RT_PTYPE_WALL,
     .clock = RT_CLOCK_WALL, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/nodejs",
     .method = "@datadog/pprof's time profiler: V8's sampler on a wall-clock interval",
     .note = WALL_NOTE},
    {.name = "pyroscope-nodejs", .runtime = "node", .spy = "nodespy", .type = RT_PTYPE_CPU,
     .clock = RT_CLOCK_CPU, .witness = RT_WITNESS_PROCESS, .scope = "process",
     .otel_scope = "com.grafana.pyroscope/nodejs",
     .method = "@datadog/pprof's CPU time: the thread's CPU clock read at each wall-clock "
               "sample, charged to the stack it took",
     .note = "CPU time of the JS thread between two samples, charged to the later sample's "
             "stack; other threads' CPU in one (Non JS threads activity) frame"},
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

const struct rt_producer *rt_producer_by_name(const char *name, enum rt_ptype t)
{
    const struct rt_producer *first = &unknown;
    for (size_t i = 0; name && *name && i < NTABLE; i++) {
        if (strcmp(table[i].name, name) != 0)
            continue;
        if (table[i].type == t)
            return &table[i];
        if (first == &unknown)
            first = &table[i];
    }
    return first;
}

const struct rt_producer *rt_producer_of_otel_scope(const char *scope, enum rt_ptype t)
{
    for (size_t i = 0; scope && i < NTABLE; i++)
        if (table[i].otel_scope && strcmp(table[i].otel_scope, scope) == 0)
            return rt_producer_of_agent(table[i].spy, t);
    return &unknown;
}

int64_t rt_producer_os_cpu_ns(const struct rt_producer *p, int64_t thread_cpu_ns,
                              int64_t process_cpu_ns)
{
    switch (p->witness) {
    case RT_WITNESS_THREAD:
    case RT_WITNESS_THREADS:
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

int rt_producer_check_os_cpu(const struct rt_producer *p, int64_t duration_ns,
                             int64_t thread_cpu_ns, int64_t process_cpu_ns, struct rt_error *err)
{
    if (duration_ns <= 0)
        return 0;
    /* duration <= 24 h (the upload's bound) keeps every product below in range */
    double bound = (double)duration_ns + (double)duration_ns / SLACK_DIVISOR + (double)SLACK_NS;
    if (p && p->witness == RT_WITNESS_THREADS && thread_cpu_ns >= 0 &&
        (double)thread_cpu_ns > bound * RT_PRODUCER_MAX_CPUS)
        return rt_error_set(err, RT_EINVAL,
                            "thread_cpu_ns %lld exceeds the profile's duration (%lld ns) x %d "
                            "CPUs", (long long)thread_cpu_ns, (long long)duration_ns,
                            RT_PRODUCER_MAX_CPUS);
    if ((!p || p->witness != RT_WITNESS_THREADS) && thread_cpu_ns >= 0 &&
        (double)thread_cpu_ns > bound)
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
