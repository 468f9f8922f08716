/* The profile model every module shares: one profile of one type (cpu or wall, never both),
 * its metadata, and its samples aggregated by stack. Frames are interned strings
 * "module.function" (DESIGN §3); stacks run root first, leaf last. */
#ifndef RT_PROFILE_H
#define RT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/intern.h"
#include "rt/str.h"

struct rt_producer;

/* Profile types (DESIGN §2). CPU and wall clock are never summed together. */
enum rt_ptype { RT_PTYPE_CPU = 1, RT_PTYPE_WALL = 2 };

/* "cpu" or "wall". */
const char *rt_ptype_name(enum rt_ptype t);

/* Parses "cpu" or "wall". Returns true on success. */
bool rt_ptype_parse(const char *s, enum rt_ptype *t);

/* What the type cannot see (DESIGN §2), e.g. "excludes time spent waiting". */
const char *rt_ptype_note(enum rt_ptype t);

/* Deepest stack stored; deeper stacks keep their leaf side under RT_TRUNCATED_FRAME (DESIGN §4). */
#define RT_MAX_STACK_DEPTH 1024
#define RT_TRUNCATED_FRAME "(truncated)"

/* Largest total value a profile may hold: 2^62 ns, about 146 years of CPU (or wall) time, far
 * beyond any real profile, and small enough that sums of a few profiles' values still fit in an
 * int64 (docs/internals/ingest.md). Ingest refuses a profile over it with RT_ETOOBIG. */
#define RT_PROFILE_MAX_VALUE_NS ((int64_t)1 << 62)

/* One distinct stack of a profile and what was sampled in it. */
struct rt_profile_stack {
    uint32_t off;      /* index of the root frame in rt_profile.frame_ids */
    uint32_t depth;    /* frames, root first; depth >= 1 */
    double samples;    /* sample count (fractional for some folded inputs) */
    int64_t value_ns;  /* CPU or wall nanoseconds */
};

struct rt_profile {
    /* Metadata (owned strings, NULL when absent). */
    char *service;
    char *instance;
    char *runtime;
    char *runtime_version;
    char *sdk_version;
    char *version;          /* the service's release */
    char *profile_id;       /* SDK-made UUID; retried uploads carry the same one */
    enum rt_ptype type;
    int64_t time_ns;        /* start, Unix ns; 0 = unknown */
    int64_t duration_ns;    /* -1 = unknown */
    int64_t period_ns;      /* sampling period in ns, 0 = unknown */
    int64_t thread_cpu_ns;  /* main thread's OS-accounted CPU over the profile, -1 = absent */
    int64_t process_cpu_ns; /* process CPU over the profile, -1 = absent */
    const struct rt_producer *producer; /* who sampled it (rt/producer.h); static, never NULL */
    enum rt_ptype declared_type; /* the type its producer declared, where that is not type
                                    (relabelled by what was measured, DESIGN §12); 0 = none */
    double cpu_scale;       /* factor capacity applies to its CPU (rt_producer_cpu_scale), 1 */
    uint64_t content_hash;  /* rt_profile_content_hash, set by the store; 0 until then */
    bool has_counts;        /* samples are real counts (samples/count, folded samples, value/period) */
    uint32_t truncated_stacks; /* stacks cut at RT_MAX_STACK_DEPTH */

    /* Samples. */
    struct rt_intern frames;          /* frame names, "module.function" */
    uint32_t *frame_ids;              /* stacks' frames, concatenated; ids into frames */
    size_t nframe_ids, cap_frame_ids;
    struct rt_profile_stack *stacks;  /* distinct stacks */
    size_t nstacks, cap_stacks;
    uint32_t *stack_slots;            /* hash table of stack index + 1, for merging */
    size_t nstack_slots;
    double samples;                   /* total samples */
    int64_t value_ns;                 /* total value, |value_ns| <= RT_PROFILE_MAX_VALUE_NS */
};

/* New empty profile of type t; metadata unknown (-1/0/NULL as documented). NULL on ENOMEM. */
struct rt_profile *rt_profile_new(enum rt_ptype t);

/* Frees p and everything it owns; accepts NULL. */
void rt_profile_free(struct rt_profile *p);

/* Adds one stack (frames root first, depth >= 1) with its samples and value. Identical
 * stacks are merged. A stack deeper than RT_MAX_STACK_DEPTH keeps its RT_MAX_STACK_DEPTH - 1
 * leaf-side frames under RT_TRUNCATED_FRAME and counts in truncated_stacks.
 * Returns 0, RT_EINVAL (depth 0), RT_ETOOBIG (the profile's total value, or the stack's, would
 * leave [-RT_PROFILE_MAX_VALUE_NS, RT_PROFILE_MAX_VALUE_NS]; nothing is added) or RT_ENOMEM.
 * Negative values are the caller's to refuse (ingest does). */
int rt_profile_add_stack(struct rt_profile *p, const struct rt_str *frames, size_t depth,
                         double samples, int64_t value_ns);

/* The stacks a reservation sizes the table for at most (its table: 4 bytes a slot, 256 KiB). */
#define RT_PROFILE_RESERVE_MAX 32767

/* Sizes p's table of distinct stacks for nstacks of them (at most RT_PROFILE_RESERVE_MAX),
 * so that adding that many rehashes nothing; the stacks themselves are still added one by
 * one. A decoder that knows how many samples it holds calls it first. Returns 0 or
 * RT_ENOMEM (p unchanged). */
int rt_profile_reserve_stacks(struct rt_profile *p, size_t nstacks);

/* Gives back what reservations did not use, once a decoder has added every stack: the stack
 * table, and the frame names' slots (rt_intern_fit), are rebuilt at the size their contents
 * need when that is a quarter of the table's or less. A profile kept until a batch is stored
 * (a Push's) then holds what it has, not what its sample and function counts promised. Best
 * effort: without memory for a smaller table, the larger one stays. */
void rt_profile_fit(struct rt_profile *p);

/* Same with frames given as ids already interned in p->frames; same errors. */
int rt_profile_add_stack_ids(struct rt_profile *p, const uint32_t *ids, size_t depth,
                             double samples, int64_t value_ns);

/* A hash of what p holds, for telling a retry from another profile under the same profile_id
 * (docs/decisions.md): its type, start and duration, and each stack (its frame names, samples
 * and value), independent of the stacks' order. Never 0 (0 stands for "not known" in a
 * store). */
uint64_t rt_profile_content_hash(const struct rt_profile *p);

/* The weight of a profile starting at start_ns for duration_ns in the window [from_ns, to_ns)
 * (DESIGN §6): its overlap with the window over its duration, in [0, 1]; a profile without a
 * positive duration weighs 1 when its start is inside, else 0. The one statement of the rule:
 * the query layer applies it to scanned rows, and ClickHouse's window SQL
 * (clickhouse_window.c) is checked against it on random windows (test_window_rule.c). */
double rt_profile_window_weight(int64_t start_ns, int64_t duration_ns, int64_t from_ns,
                                int64_t to_ns);

/* Rollups (docs/internals/rollups.md) sum whole blocks of time of the profiles that lie wholly
 * inside one: [t, t + d) within [b·L, (b+1)·L), L the level's length (an hour, a UTC day),
 * t >= 0, d > 0. In a window that holds that block, such a profile weighs exactly 1 (DESIGN
 * §6), so the block's sums stand for it. */
#define RT_ROLLUP_HOUR_NS 3600000000000LL
#define RT_ROLLUP_DAY_NS (24 * RT_ROLLUP_HOUR_NS)
#define RT_ROLLUP_LEVELS 2 /* 0: hours, 1: days */

/* The length of a level's blocks, ns. */
static inline int64_t rt_rollup_level_ns(int level)
{
    return level ? RT_ROLLUP_DAY_NS : RT_ROLLUP_HOUR_NS;
}

/* The block b (t / L) of a level a profile lies wholly inside, or -1: a profile across the
 * block's edge, of unknown or zero duration, or starting before 1970 is not rolled up at that
 * level (a profile inside an hour is inside its day too). The one statement of the rule: the
 * SQLite store keeps it per profile (its `hour` and `day` columns; the migration computes the
 * same in SQL) and the rollup builder selects by it. */
int64_t rt_profile_rollup_block(int64_t start_ns, int64_t duration_ns, int level);

/* Sets a string field (e.g. &p->service) to a copy of s (NULL clears). Returns 0 or RT_ENOMEM. */
int rt_profile_set_str(char **field, const char *s);

/* Frame name of frame id. */
static inline const char *rt_profile_frame(const struct rt_profile *p, uint32_t id)
{
    return rt_intern_str(&p->frames, id);
}

#endif
