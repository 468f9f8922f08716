/* Internal interface of the query engine: the aggregation context that the profile, diff
 * and merge answers share, the pure capacity (DESIGN §7) and significance (DESIGN §6)
 * functions. Nothing outside server/src/query includes it. */
#ifndef RT_QUERY_INTERNAL_H
#define RT_QUERY_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/buf.h"
#include "rt/err.h"
#include "rt/intern.h"
#include "rt/profile.h"
#include "rt/query.h"
#include "rt/store.h"
#include "rt/u64map.h"

/* Most flame graph nodes an answer carries (root excluded); the rest is pruned, smallest
 * totals first, and the flame graph says "truncated": true (docs/internals/query.md). */
#define RT__QUERY_MAX_FLAME_NODES 50000

/* Relative difference between sampled and OS-accounted CPU that sets a warning (DESIGN §2). */
#define RT__QUERY_AGREEMENT_TOLERANCE 0.10

/* Family-wise significance level and the smallest |delta_pp| that can be significant (§6). */
#define RT__QUERY_ALPHA 0.05
#define RT__QUERY_MIN_DELTA_PP 0.1

/* Coverage under which an answer warns (DESIGN §6). */
#define RT__QUERY_LOW_COVERAGE 0.5

#define RT__QUERY_REASON_WALL                                                                  \
    "wall-clock profiles include time blocked on I/O and locks; CPU cannot be derived from them"
#define RT__QUERY_REASON_NO_PROFILES "no profiles in window"
#define RT__QUERY_REASON_NO_DURATION "profile duration unknown"
#define RT__QUERY_REASON_EMPTY_WINDOW "window is empty"
#define RT__QUERY_CAPACITY_NOTE                                                                \
    "capacity estimate assuming the window's average rate holds for a month; not a bill"
#define RT__QUERY_UNPROFILED_NOTE                                                              \
    "instances alive in the window without profiles are not included in cpu_s"

/* ---- window.c: aggregation of store scans ---- */

/* Where stacks and frame names come from: the store, or a test's own tables. */
struct rt__query_src {
    /* A stack's frame ids, root first, copied into frames[0..cap) (rt_store_stack). */
    int (*stack)(void *ud, uint32_t stack_id, uint32_t *frames, size_t cap, size_t *depth);
    /* A frame's name copied into arena a, or NULL (rt_store_frame_name). */
    const char *(*frame_name)(void *ud, uint32_t frame_id, struct rt_arena *a);
    void *ud;
    /* Optional (NULL: keys are the ids): ids to the store's stable keys and back, in place
     * (rt_store_keys; rollups keep keys). Returns 0, RT_ENOTFOUND, RT_EIO or RT_ENOMEM. */
    int (*keys)(void *ud, enum rt_store_key_kind kind, bool to_keys, uint64_t *v, size_t n);
};

/* A source reading from store s. */
struct rt__query_src rt__query_src_store(struct rt_store *s);

/* One function (a frame name, DESIGN §3) seen in the query; index [k] is window k. */
struct rt__query_fn {
    uint32_t frame_id;     /* the store's frame id */
    const char *name;      /* set by rt__query_finish; always valid UTF-8 (a repaired copy in
                              the context's arena when the stored one was not) */
    double self_s[2];      /* weighted samples with this function as the leaf */
    double self_v[2];      /* weighted value (ns) with this function as the leaf */
    double total_s[2];     /* weighted samples of stacks containing it (once per stack) */
    double total_v[2];     /* weighted value (ns) of stacks containing it */
    double s2[2];          /* sum over profiles of x_i^2 / n_i (self counts), for chi^2 */
    double cap_v[2];       /* set by rt__query_finish: sum over instances of A_i/P_i * self
                              value (ns), DESIGN §7 */
};

/* One distinct stack seen in the query. */
struct rt__query_stack {
    uint32_t off;          /* first function index in rt__query_ctx.fpool (root first); the
                            * stacks' regions of fpool never overlap (flame.c's build keeps
                            * per-frame state in an array laid out as fpool) */
    uint32_t depth;        /* frames */
    uint32_t leaf;         /* fpool[off + depth - 1], kept here: one cache miss less a row */
    uint32_t id;           /* the store's stack id */
    double samples[2];     /* weighted samples per window */
    double value[2];       /* weighted value (ns) per window */
};

/* One profile of a window, as capacity needs it (DESIGN §7). Values are weighted by the
 * profile's overlap with the window. */
struct rt__query_prof {
    uint32_t inst;         /* instance index */
    int64_t start_ns;      /* profile start, Unix ns */
    int64_t duration_ns;   /* -1 unknown, 0 zero */
    double value_ns;       /* capacity's CPU: the sampled value times its cpu_scale, plus
                              unsampled_ns; a scaled profile's weighted OS figure as is */
    double sampled_ns;     /* the sampled value */
    double unsampled_ns;   /* CPU the OS saw beyond a CPU-timer sampler's (unattributed) */
    double os_ns;          /* the OS CPU that covers what it sampled; -1 none */
    uint32_t scaled;       /* value_ns is the OS figure (a wall-ticking sampler, §7): 1, or
                              of a summary, how many of its profiles */
    uint32_t unchecked;    /* a wall-ticking sampler without an OS figure (sampled, unchecked):
                              1, or of a summary, how many */
    bool summary;          /* stands for count profiles of a rollup (rt__query_add_rollup):
                              its sums are theirs, its covered time is in the window's spans,
                              start and duration mean nothing */
    uint32_t count;        /* a summary's profiles */
    uint32_t os_count;     /* a summary's profiles that carried an OS figure (os_ns their sum) */
};

/* Covered time of an instance that a summary stands for: part of P_i's union (DESIGN §7). */
struct rt__query_span {
    uint32_t inst;
    int64_t lo, hi;        /* [lo, hi), ns */
};

/* One instance's poll evidence inside a window (rt_store_scan_liveness). */
struct rt__query_live {
    uint32_t inst;         /* instance index */
    int64_t first_ns, last_ns; /* earliest and latest poll inside the window */
};

/* Input of the capacity estimate: one window, its profiles and its poll evidence. */
struct rt__query_cap_in {
    int64_t from_ns, to_ns;              /* the window W, half-open */
    uint32_t ninst;                      /* instance indexes are < ninst */
    const struct rt__query_prof *profs;  /* profiles overlapping W (weights already applied) */
    size_t nprofs;
    const struct rt__query_live *live;   /* polls inside W (an instance's entries combine) */
    size_t nlive;
    const struct rt__query_span *spans;  /* summaries' covered time, inside W (may be NULL) */
    size_t nspans;
};

/* One instance's part of a window's capacity estimate (DESIGN §7). Summed over instances,
 * cpu_ns, covered and alive give the window's cpu_s, profiled_s and alive_s, and
 * cpu_ns * factor gives its vcpu_hours_per_month (times 730 / |W|). */
struct rt__query_cap_inst {
    double cpu_ns;           /* cpu_i: its profiles' weighted values (capacity's CPU) */
    double sampled_ns;       /* of which the samples said */
    double unsampled_ns;     /* of which in no function: the OS saw it, the samples did not */
    double os_ns;            /* the OS figures its profiles carried; NaN when none did */
    double profiled_s;       /* P_i */
    double alive_s;          /* A_i */
    double factor;           /* A_i / P_i, 0 when unprofiled */
    bool alive, profiled;    /* has liveness evidence in W; has a profile in W */
};

/* The capacity estimate of one window and the inputs it shows (DESIGN §7, §11). */
struct rt__query_cap {
    bool available;          /* false: vcpu_hours_per_month is absent, reason says why */
    const char *reason;      /* static string, NULL when available */
    double vcpu_hours_per_month;
    double cpu_s;            /* sum of weighted CPU seconds (the OS figure where scaled) */
    double sampled_cpu_s;    /* of which the samples said */
    double unattributed_cpu_s; /* of which in no function (rt_producer_unsampled_ns) */
    double os_cpu_s;         /* the OS figures the profiles carried; NaN when none did */
    uint32_t profiles;           /* profiles in the window */
    uint32_t profiles_scaled;    /* profiles whose CPU is the OS figure */
    uint32_t profiles_unchecked; /* wall-ticking profiles without an OS figure */
    uint32_t profiles_os;        /* profiles carrying an OS figure */
    double window_s;         /* |W| */
    double profiled_s;       /* sum of P_i */
    double alive_s;          /* sum of A_i */
    double service_alive_s;  /* union of the instances' alive spans (any instance alive) */
    double coverage;         /* profiled_s / alive_s; NaN when alive_s is 0 */
    uint32_t instances_alive, instances_profiled, instances_unprofiled;
};

/* One window of a query and everything aggregated over it. */
struct rt__query_win {
    int64_t from_ns, to_ns;        /* [from, to) */
    uint32_t profiles;             /* profiles with a positive weight */
    uint32_t profiles_sampled;     /* of those, with a positive weighted sample count */
    double samples;                /* weighted samples */
    double value_ns;               /* weighted value */
    bool all_counts;               /* every profile has real sample counts */
    bool any_counts;               /* some profile has real sample counts */
    uint64_t truncated_stacks;     /* sum over profiles */
    struct rt__query_prof *profs;  /* capacity input */
    size_t nprofs, cap_profs;
    struct rt__query_live *live;   /* poll evidence */
    size_t nlive, cap_live;
    struct rt__query_span *spans;  /* covered time of summaries (rollups) */
    size_t nspans, cap_spans;
    double agree_sampled_ns;       /* weighted value of profiles carrying an OS CPU figure */
    double agree_os_ns;            /* their weighted OS CPU (rt_producer_os_cpu_ns) */
    uint32_t agree_profiles;       /* how many profiles carried one */
    uint32_t agree_scaled;         /* of which capacity takes the OS figure for */
    const char *agree_scope;       /* what the figures cover ("main JS thread"); static */
    bool agree_mixed_scope;        /* profiles of different scopes */
    bool agree_any_process;        /* some figure is a process's, not a thread's */
    struct rt__query_cap_inst *inst_cap; /* set by finish: per instance (ctx->insts order),
                                            in the context's arena */
    struct rt__query_cap cap;      /* set by finish */
};

/* Per-function capacity's input in one (instance, window): the self value of each function
 * (ns, weighted, before the instance's capacity factor, DESIGN §7), in pages of
 * RT__QUERY_INSTFN_PAGE functions made when first touched (instfn.c). A profile adds to
 * ~400 functions of its instance: their values sit in pages of 8 cache lines, where a hash
 * map of them and the entries it pointed to missed the cache about once a function each.
 * Pages below RT__QUERY_INSTFN_LOW are found by index (a directory of at most 512 bytes);
 * the others, e.g. an instance's own frames numbered late in a query of many instances,
 * through a small map of page indexes, so that memory follows the pages touched. */
#define RT__QUERY_INSTFN_PAGE 64
#define RT__QUERY_INSTFN_LOW 64
struct rt__query_instfn_page {
    double *v;   /* RT__QUERY_INSTFN_PAGE values */
    uint32_t at; /* its page index */
};
struct rt__query_instfn {
    double **low;                              /* low[p], p < nlow; NULL until touched */
    uint32_t nlow;
    struct rt_u64map high;                     /* page index -> index in high_pages */
    struct rt__query_instfn_page *high_pages;  /* in the order made */
    uint32_t nhigh;
    size_t cap_high;
};

/* Scratch of the aggregation while it runs (window.c only; nothing else reads it): one stamp
 * and one accumulator pair per function (indexed like rt__query_ctx.fns), and the functions
 * the current profile touched. */
#define RT__QUERY_STACK_CACHE_MIN 256 /* slots of the stack cache: fewest (2 KiB) */
#define RT__QUERY_STACK_CACHE 16384   /* and most (128 KiB) */
struct rt__query_scratch {
    uint32_t *stamp;                 /* last profile or stack that touched the function */
    double *acc_s, *acc_v;           /* the current profile's self samples and value */
    uint32_t cap;                    /* entries of stamp, acc_s and acc_v */
    uint32_t *touched;               /* functions touched by the current profile */
    uint32_t cap_touched;
    uint32_t seq;                    /* stamp counter */
    uint32_t *row_stack;             /* the current profile's rows' stack indexes */
    size_t cap_row_stack;
    /* A direct-mapped cache of stack_map (slot: stack id mod nstack_cache): the stacks of a
     * window's profiles repeat, and a hit costs one load that stays in the CPU's near caches,
     * where a probe of stack_map does not (window.c, row_stacks). Two slots for each stack
     * the query may have met, within [RT__QUERY_STACK_CACHE_MIN, RT__QUERY_STACK_CACHE]: small
     * where few stacks are met, as in a rollup build, which holds a context per instance. */
    struct rt__query_cached_stack {
        uint32_t id;
        uint32_t idx1;               /* stack index + 1; 0 = empty */
    } *stack_cache;
    size_t nstack_cache;             /* slots, a power of two */
    bool probe_ahead;                /* prefetch stack_map's slots: the last profile missed
                                      * stack_cache on more than a quarter of its rows */
};

/* The aggregation context of one query (one or two windows). Built by rt__query_scan (or
 * rt__query_add_profile and rt__query_add_liveness), then rt__query_finish completes it;
 * from then on it is the window's aggregate, read-only (the answers take it const). Memory of
 * the request's lifetime (repaired names, per-instance capacity) comes from arena and goes
 * at rt__query_ctx_cleanup. */
/* Who sampled a query's profiles (DESIGN §12): each distinct producer and declared type. */
#define RT__QUERY_MAX_PRODUCERS 16
struct rt__query_producer {
    const struct rt_producer *producer; /* static (rt/producer.h) */
    enum rt_ptype declared_type;        /* where relabelled; 0 = as stored */
    uint32_t profiles;                  /* profiles of the query's windows from it */
};

struct rt__query_ctx {
    struct rt__query_src src;
    struct rt_buf *flame_text;       /* where the answer writes its flame graph as text, or
                                      * NULL: in the answer (rt_query_profile_req) */
    enum rt_ptype type;
    int nwin;                        /* 1 (profile) or 2 (diff: 0 = baseline, 1 = current) */
    struct rt__query_win win[2];
    struct rt__query_fn *fns;        /* distinct functions */
    uint32_t nfns, cap_fns;
    struct rt_u64map fn_map;     /* frame id -> function index */
    struct rt__query_stack *stacks;  /* distinct stacks */
    uint32_t nstacks, cap_stacks;
    struct rt_u64map stack_map;  /* store stack id -> stack index */
    uint32_t *fpool;                 /* stacks' function indexes, root first */
    size_t nfpool, cap_fpool;
    struct rt_intern insts;          /* instance names -> instance index */
    struct rt__query_instfn *instfn; /* per (instance, window), at inst * 2 + window */
    uint32_t ninstfn;
    struct rt_arena arena;           /* the request's memory, freed at once by cleanup */
    struct rt__query_scratch scratch;
    struct rt__query_producer producers[RT__QUERY_MAX_PRODUCERS]; /* in order of first sight
                                                                    (answers sort them) */
    uint32_t nproducers;
    uint32_t producers_other;        /* profiles from producers past RT__QUERY_MAX_PRODUCERS */
    bool finished;
    bool counted;                    /* in rt__query_contexts (until cleanup) */
    const atomic_int *abandon;       /* while a diff's windows are read at once: non-zero
                                      * once the other window failed, and this context's
                                      * scan then stops at its next profile (RT_ECANCELED) */
};

void rt__query_ctx_init(struct rt__query_ctx *c, struct rt__query_src src, enum rt_ptype type,
                        int nwin);
void rt__query_ctx_cleanup(struct rt__query_ctx *c);
/* Sets window k to [from_ns, to_ns). */
void rt__query_ctx_window(struct rt__query_ctx *c, int k, int64_t from_ns, int64_t to_ns);
/* Adds one profile to window k (weighting it). Returns 0, RT_ENOMEM or RT_EIO (unknown stack). */
int rt__query_add_profile(struct rt__query_ctx *c, int k, const struct rt_profile_meta *m,
                          const struct rt_store_row *rows, size_t nrows);
/* Adds an instance's poll evidence [first_ns, last_ns] in window k. Returns 0 or RT_ENOMEM. */
int rt__query_add_liveness(struct rt__query_ctx *c, int k, const char *instance,
                           int64_t first_ns, int64_t last_ns);
/* Expands stacks to functions, resolves names, computes capacity. Returns 0 or RT_ENOMEM. */
int rt__query_finish(struct rt__query_ctx *c);
/* Scans the store into window k: profiles of f, then the polls of f->service (only of
 * instances with a profile in the window when f->version is set). */
int rt__query_scan(struct rt__query_ctx *c, int k, struct rt_store *s,
                   const struct rt_store_filter *f, struct rt_error *err);

/* ---- scan_pair.c: a diff's two windows read at once ---- */
/* Reads fb into window 0 of c and fc into window 1, as rt__query_scan twice does, to the bit;
 * window 1 on a second thread when a CPU is free for it. Returns what rt__query_scan returns. */
int rt__query_scan_pair(struct rt__query_ctx *c, struct rt_store *s,
                        const struct rt_store_filter *fb, const struct rt_store_filter *fc,
                        struct rt_error *err);
/* When rt__query_scan_pair uses a second thread: when no other query runs (the default),
 * always or never (tests). */
enum { RT__QUERY_PAIR_AUTO, RT__QUERY_PAIR_ALWAYS, RT__QUERY_PAIR_NEVER };
void rt__query_pair_mode(int mode);
/* Whether rt__query_scan_pair would read window 1 on a second thread now. */
bool rt__query_pair_threaded(void);
/* Counts the contexts alive, process-wide (rt__query_ctx_init +1, rt__query_ctx_cleanup -1),
 * and the timelines reading (timeline.c), which need no context. */
void rt__query_contexts(int delta);

/* ---- rollup.c: whole hours summed once (docs/internals/rollups.md) ---- */
/* Adds one rollup (an hour of one instance, as rt__query_rollup_encode wrote it) to window k,
 * which must hold the hour: the same state as adding each of its profiles. Returns 0,
 * RT_ENOMEM, RT_EIO (data unreadable, or an unknown stack). */
int rt__query_add_rollup(struct rt__query_ctx *c, int k, const char *instance, const void *data,
                         size_t len);
/* The aggregation's own steps, for rollup.c (window.c): a frame's function index, a stack's
 * index (its frames fetched once), the self value of a function in one instance and window,
 * for per-function capacity, and n profiles of a producer. Return 0, RT_ENOMEM or RT_EIO
 * (unknown stack). */
int rt__query_fn_index(struct rt__query_ctx *c, uint32_t frame_id, uint32_t *out);
int rt__query_stack_index(struct rt__query_ctx *c, uint32_t stack_id, uint32_t *out);
/* The same, the stack's frame ids (depth of them, root first) given instead of fetched. */
int rt__query_stack_index_of(struct rt__query_ctx *c, uint32_t stack_id, const uint32_t *frames,
                             size_t depth, uint32_t *out);
int rt__query_add_instfn(struct rt__query_ctx *c, int k, uint32_t inst, uint32_t fn, double v);
/* instfn.c: instance inst's values in window k (made empty when new; NULL when out of
 * memory); the value slot of function fn (its page made when absent; NULL when out of
 * memory); folding every value into its function's cap_v at finish (each instance's factor
 * set); freeing them. */
struct rt__query_instfn *rt__query_instfn_of(struct rt__query_ctx *c, int k, uint32_t inst);
double *rt__query_instfn_slot(struct rt__query_instfn *m, uint32_t fn);
void rt__query_instfn_fold(struct rt__query_ctx *c);
/* Sets instance inst's values in window k of c from src (an instance's values in another
 * context, which c's window k has not read), its function indexes mapped through fmap (src's
 * index -> c's). Returns 0 or RT_ENOMEM. */
int rt__query_instfn_merge(struct rt__query_ctx *c, int k, uint32_t inst,
                           const struct rt__query_instfn *src, const uint32_t *fmap);
void rt__query_instfn_cleanup(struct rt__query_ctx *c);
/* The self value of function fn in instance inst's window k for capacity, 0 when none. */
double rt__query_instfn_value(const struct rt__query_ctx *c, int k, uint32_t inst, uint32_t fn);
struct rt_producer;
void rt__query_count_producer(struct rt__query_ctx *c, const struct rt_producer *prod,
                              enum rt_ptype declared, uint32_t n);
/* Encodes window 0 of an unfinished context c, into which one instance's profiles of one hour
 * were added (each weighing 1), as a rollup into out (cleared first), its stacks and frames as
 * the store's keys (c->src.keys). Returns 0, RT_ENOMEM, or the keys' error. */
int rt__query_rollup_encode(const struct rt__query_ctx *c, struct rt_buf *out);

/* ---- capacity.c (pure, DESIGN §7) ---- */

/* Computes the capacity estimate of one window. insts (ninst entries, may be NULL) receives
 * each instance's part (A_i / P_i in .factor, 0 for unprofiled ones). cpu_i is the sum of its
 * profiles' value_ns. Sums are doubles (no overflow, see docs/internals/query.md). Always
 * fills the inputs; out->available is false (with a reason) when there are no profiles, the
 * window is empty, or a profile has no positive duration. Returns 0 or RT_ENOMEM. */
int rt__query_capacity(const struct rt__query_cap_in *in, struct rt__query_cap_inst *insts,
                       struct rt__query_cap *out);

/* vCPU-hours per month of cpu_ns weighted CPU nanoseconds (already multiplied by A_i/P_i)
 * over a window of window_s seconds: 730 * cpu_s / window_s (DESIGN §7). */
double rt__query_vcpu_hours(double weighted_cpu_ns, double window_s);

/* Most instances listed in a capacity inputs object's "instances" (the largest contributions;
 * "instances_truncated" says when more were left out). */
#define RT__QUERY_MAX_CAP_INSTANCES 100

/* The capacity inputs object of DESIGN §11 (never NULL unless ENOMEM), with "instances": the
 * part of each instance (alive or profiled) in insts[0..ninst), named by names (ids = indexes),
 * largest contribution first, at most RT__QUERY_MAX_CAP_INSTANCES. insts may be NULL (then
 * the list is empty). */
json_t *rt__query_cap_inputs_json(const struct rt__query_cap *cap,
                                  const struct rt__query_cap_inst *insts, uint32_t ninst,
                                  const struct rt_intern *names);

/* ---- diff.c: significance (DESIGN §6) ---- */

/* Pearson chi^2 of one window's per-profile counts of a function around the window's share
 * p = x / n, from s2 = sum of x_i^2 / n_i: (s2 - x p) / (p (1 - p)); 0 when p is 0 or 1. */
double rt__query_chi2(double s2, double x, double n);
/* Overdispersion: max(1, chi2 / (profiles - 2)); 1 with fewer than 3 profiles. */
double rt__query_phi(double chi2, uint32_t profiles);
/* z of the two-proportion test with overdispersion phi. Returns false (z undefined) when a
 * window has no samples or the pooled share is 0 or 1. */
bool rt__query_z(double x_b, double n_b, double x_c, double n_c, double phi, double *z);
/* Two-sided normal p-value of z: erfc(|z| / sqrt 2). */
double rt__query_pvalue(double z);

/* One function of a diff, ranked. */
struct rt__query_diff_row {
    uint32_t fn;           /* function index */
    double base_share, cur_share, delta_pp; /* percent, percent, percentage points */
    double base_total_share, cur_total_share;
    bool has_z;            /* z defined */
    double z;
    int significant;       /* 1, 0, or -1 = unknown (null) */
    bool is_new;           /* absent from every baseline stack */
};

/* Ranks the functions of a finished two-window context (delta_pp descending, ties by name)
 * and tests each. *rows is malloc'd (caller frees), *n set. baseline_missing forces
 * significant = 0; counts_missing forces -1. Returns 0 or RT_ENOMEM. */
int rt__query_diff_rows(const struct rt__query_ctx *c, bool baseline_missing,
                        bool counts_missing, struct rt__query_diff_row **rows, size_t *n);

/* ---- flame.c ---- */

/* Flame graph of window 0 (diff = false) or the differential one of windows 0 and 1, flat:
 * {"truncated", "names", "nodes": {column: [one value per node]}}, nodes in preorder, node 0
 * the root (docs/internals/query.md). Built without recursion. Returns a new JSON object or
 * NULL on ENOMEM. */
json_t *rt__query_flame_json(const struct rt__query_ctx *c, bool diff, size_t max_nodes);
/* The same flame graph appended to out as the JSON member text `"flamegraph":{...}`: the
 * bytes rt_json_out writes for the object above, without building it (12,334 nodes of a
 * 300-instance diff are 100,000 jansson values). Returns 0, RT_ENOMEM, RT_ETOOBIG, or
 * RT_EINVAL for a non-finite share (which json_real refuses as well). */
int rt__query_flame_text(const struct rt__query_ctx *c, bool diff, size_t max_nodes,
                         struct rt_buf *out);

/* ---- quality.c ---- */

/* Data quality of window k (DESIGN §6). */
json_t *rt__query_quality_json(const struct rt__query_ctx *c, int k);
/* cpu_agreement of window k (DESIGN §2), or json null. */
json_t *rt__query_agreement_json(const struct rt__query_ctx *c, int k);

/* ---- answer.c ---- */

/* Rounds weighted nanoseconds to an integer for output; beyond the int64 range (sums of many
 * profiles can get there) a JSON real, never a wrapped integer; null when not finite. */
json_t *rt__query_ns_json(double ns);
/* The same figure appended to b as JSON text (the bytes rt_json_out writes for the value
 * above). Returns 0, RT_ENOMEM or RT_ETOOBIG. */
int rt__query_ns_text(struct rt_buf *b, double ns);
/* A JSON string of s; a string that is not valid UTF-8 (data stored before ingest repaired
 * names) is repaired (U+FFFD) rather than failing. NULL only on ENOMEM. */
json_t *rt__query_str_json(const char *s);
/* The same string appended to b as JSON text. Returns 0, RT_ENOMEM or RT_ETOOBIG. */
int rt__query_str_text(struct rt_buf *b, const char *s);
/* RFC 3339 UTC string of a time. */
json_t *rt__query_time_json(int64_t ns);
/* The profile answer of a finished one-window context. */
json_t *rt__query_profile_json(const struct rt__query_ctx *c, const char *service,
                               size_t limit);
/* The diff answer of a finished two-window context; takes a reference to neither
 * issue nor deploys (borrowed; copied in with json_incref). */
json_t *rt__query_diff_json(const struct rt__query_ctx *c, const char *service, size_t limit,
                            json_t *issue, json_t *deploys);

#endif
