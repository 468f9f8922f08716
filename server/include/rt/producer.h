/* Producers: who sampled a profile, and how its sampler keeps time (DESIGN §7, §12). The one
 * table of them decides, for every profile, which OS CPU figure covers what it sampled and
 * whether its CPU is scaled to that figure (a sampler that ticks on wall time) or only
 * compared with it (a sampler on a CPU-time timer). */
#ifndef RT_PRODUCER_H
#define RT_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "rt/err.h"
#include "rt/profile.h"

/* How a sampler's timer runs. */
enum rt_sampler_clock {
    RT_CLOCK_UNKNOWN = 0, /* not known (an unrecognised uploader): compared, never scaled */
    RT_CLOCK_CPU,         /* CPU time of what it samples (Go SIGPROF, excimer CPU): compared */
    RT_CLOCK_WALL,        /* wall time on a thread that is not idle (V8): scaled to the OS */
};

/* Which OS CPU figure of an upload covers what the producer samples. */
enum rt_witness {
    RT_WITNESS_ANY = 0,   /* unknown producer: thread_cpu_ns if sent, else process_cpu_ns */
    RT_WITNESS_THREAD,    /* thread_cpu_ns (Node: the main JS thread) */
    RT_WITNESS_PROCESS,   /* process_cpu_ns (Go: every thread of the process) */
    RT_WITNESS_THREADS,   /* thread_cpu_ns summed over the threads it samples (Java with JFR:
                             the application's threads; GC and JIT threads left out) */
};

struct rt_producer {
    const char *name;            /* stored with each profile and shown as producer.agent:
                                    "roottrace-node", "pyroscope-go"; "" for an unknown one */
    const char *runtime;         /* the runtime it profiles: for RootTrace's SDKs the runtime=
                                    their uploads carry ("node"); NULL: unknown */
    const char *spy;             /* Pyroscope's agents: the spyName (or pyroscope_spy label)
                                    that names them (DESIGN §12); NULL for the SDKs */
    enum rt_ptype type;          /* the declared type it applies to; 0: any */
    enum rt_ptype stores_as;     /* the type its profiles are stored as: 0 as declared, else
                                    a relabel (py-spy's "cpu" is wall, DESIGN §12) */
    enum rt_sampler_clock clock;
    enum rt_witness witness;
    const char *scope;           /* what that OS figure covers, for answers: "main JS thread" */
    const char *method;          /* how it samples, one sentence */
    const char *note;            /* what that means for its type, one sentence; for a relabel,
                                    the reason */
    const char *otel_scope;      /* the otel.scope.name label its pushes carry, or NULL */
    bool names_lack_module;      /* its pprof Function names are bare ("hot_loop"): the module
                                    comes from Function.filename (DESIGN §3) */
};

/* The producer of an upload of type t from runtime (NULL or unrecognised: the unknown
 * producer). Never NULL; the entry is static. */
const struct rt_producer *rt_producer_of_upload(const char *runtime, enum rt_ptype t);

/* The producer of an upload from a Pyroscope agent named by spy (spyName, e.g. "gospy",
 * "pyspy"; case as sent) declaring type t: the entry for (spy, t), else the agent's entry for
 * any type, else the unknown producer. Never NULL. */
const struct rt_producer *rt_producer_of_agent(const char *spy, enum rt_ptype t);

/* The producer of a Push series from a Pyroscope agent named by its otel.scope.name label
 * ("com.grafana.pyroscope/python"), as rt_producer_of_agent. Never NULL. */
const struct rt_producer *rt_producer_of_otel_scope(const char *scope, enum rt_ptype t);

/* The type a profile that declares t is stored as (DESIGN §12: by what was measured, not by
 * the label): p->stores_as when set, else t. */
enum rt_ptype rt_producer_stored_type(const struct rt_producer *p, enum rt_ptype t);

/* The agent's name as answers show it: p->name, or "unknown". */
const char *rt_producer_agent(const struct rt_producer *p);

/* The producer stored under name for profiles of type t (the entry for that type, else the
 * first of that name; NULL or unknown names: the unknown producer). Never NULL. */
const struct rt_producer *rt_producer_by_name(const char *name, enum rt_ptype t);

/* The OS CPU (ns) that covers what p sampled, from an upload's thread_cpu_ns and
 * process_cpu_ns (-1 = absent); -1 when the upload carries none of the right scope. */
int64_t rt_producer_os_cpu_ns(const struct rt_producer *p, int64_t thread_cpu_ns,
                              int64_t process_cpu_ns);

/* True when the OS figure rt_producer_os_cpu_ns takes is the upload's thread_cpu_ns. */
bool rt_producer_os_is_thread(const struct rt_producer *p, int64_t thread_cpu_ns);

/* What that OS figure covers: p->scope, or for the unknown producer "thread" or "process"
 * after which one it took. */
const char *rt_producer_scope(const struct rt_producer *p, int64_t thread_cpu_ns);

/* The factor a profile's CPU is scaled by for capacity (DESIGN §7): os_cpu_ns / value_ns
 * where p ticks on wall time, the OS figure is present (>= 0) and the profile sampled some
 * CPU (value_ns > 0); 1 otherwise (nothing to scale, or a CPU-time sampler: compared only). */
double rt_producer_cpu_scale(const struct rt_producer *p, int64_t os_cpu_ns, int64_t value_ns);

/* CPU (ns) the OS accounted beyond what a CPU-timer sampler saw: os_cpu_ns - value_ns when p
 * counts CPU time (its samples can miss CPU, never invent it: Go's sysmon thread runs no
 * goroutine and carries no profiling timer) and the OS figure is larger; 0 otherwise (no
 * figure, a wall-ticking sampler, which is scaled instead, or an unknown one). Capacity counts
 * it as unattributed CPU, in no function (DESIGN §7, docs/decisions.md). */
double rt_producer_unsampled_ns(const struct rt_producer *p, int64_t os_cpu_ns, int64_t value_ns);

/* True when capacity takes p's CPU from the OS figure it carries (p ticks on wall time). */
bool rt_producer_is_scaled(const struct rt_producer *p);

/* Checks an upload's OS CPU figures against the profile's duration (ns; <= 0 unknown: not
 * checked): one thread cannot run longer than the wall clock, nor a process (or the threads
 * of a producer whose witness is RT_WITNESS_THREADS) longer than 1,024 CPUs can, each within
 * RT_PRODUCER_CPU_SLACK (DESIGN §7). p: the upload's producer (NULL: one thread). Returns 0,
 * or RT_EINVAL with err saying which figure and why. */
int rt_producer_check_os_cpu(const struct rt_producer *p, int64_t duration_ns,
                             int64_t thread_cpu_ns, int64_t process_cpu_ns, struct rt_error *err);

/* The spy names of py-spy's and rbspy's own files (`py-spy record --format raw`), which
 * ingest recognises by their frames' shape (DESIGN §3): stored as wall whatever declared. */
#define RT_PRODUCER_SPY_PYSPY_FILE "py-spy"
#define RT_PRODUCER_SPY_RBSPY_FILE "rbspy"

/* Most CPUs one process is believed to run on (process_cpu_ns <= duration x this). */
#define RT_PRODUCER_MAX_CPUS 1024

#endif
