/* Query engine: window aggregation, flame graph, the diff with its significance test, the
 * capacity estimate and data quality (DESIGN §6, §7), answering with the JSON of DESIGN §11.
 * Every answer is for one (service, type). Answers are jansson objects the caller owns. */
#ifndef RT_QUERY_H
#define RT_QUERY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/profile.h"
#include "rt/store.h"

#define RT_QUERY_DEFAULT_LIMIT 1000
#define RT_HOURS_PER_MONTH 730.0 /* 8,760 / 12 (DESIGN §7) */

/* GET /api/v1/profile: one window [from_ns, to_ns) of one (service, type). */
struct rt_query_profile_req {
    const char *service;
    enum rt_ptype type;
    int64_t from_ns, to_ns;
    const char *version, *instance;  /* filters, NULL = any */
    size_t limit;                    /* functions listed; 0 = RT_QUERY_DEFAULT_LIMIT */
    /* When set, the flame graph is appended here as JSON text, the member
     * `"flamegraph":{...}` exactly as rt_json_out would write it, and the answer has no
     * "flamegraph" member (the HTTP server writes it last: rt_api_resp.json_tail). Building
     * its 10,000 nodes as jansson values cost more than the text (docs/performance.md). */
    struct rt_buf *flamegraph_text;
};

/* Answer: {"service", "type", "type_note", "from", "to", "profiles", "samples", "value_ns",
 * "functions": [{"name", "self_ns", "total_ns", "self_share", "total_share",
 * "self_samples", "vcpu_hours_per_month"}], "truncated", "flamegraph", "capacity",
 * "capacity_unavailable", "cpu_agreement", "quality"}. functions by self_ns descending, ties
 * by name; shares in percent (0-100). NULL with err set on a store error, or RT_ECANCELED
 * once the store's reads are cancelled (rt_store_cancel_reads: a stopping server). */
json_t *rt_query_profile(struct rt_store *s, const struct rt_query_profile_req *req,
                         struct rt_error *err);

/* GET /api/v1/diff and /api/v1/issues/{id}/diff: baseline [base_from, base_to) against
 * current [cur_from, cur_to). */
struct rt_query_diff_req {
    const char *service;
    enum rt_ptype type;
    int64_t base_from_ns, base_to_ns, cur_from_ns, cur_to_ns;
    const char *version, *instance;           /* filters on both windows, NULL = any */
    const char *base_version, *cur_version;   /* per-window version filters, override version */
    size_t limit;
    json_t *issue;                            /* borrowed; the issue object, or NULL */
    struct rt_buf *flamegraph_text;           /* as rt_query_profile_req's */
};

/* Answer: DESIGN §11 diff shape: {"service", "type", "type_note", "issue", "window_s",
 * "baseline": {"from", "to", "profiles", "samples", "value_ns"}, "current": {...},
 * "functions": [{"name", "base_share", "cur_share", "delta_pp", "base_total_share",
 * "cur_total_share", "base_samples", "cur_samples", "z", "significant", "new",
 * "vcpu_hours_per_month": {"base", "cur"}}], "truncated", "significance_unavailable",
 * "flamegraph", "deploys", "capacity", "capacity_unavailable", "cpu_agreement", "quality"}.
 * functions by delta_pp descending, ties by name. NULL with err set on a store error, or
 * RT_ECANCELED as rt_query_profile. */
json_t *rt_query_diff(struct rt_store *s, const struct rt_query_diff_req *req,
                      struct rt_error *err);

/* The windows of an issue view (DESIGN §6, §13): L = window_ns if > 0 (must be 60 s..24 h,
 * else RT_EINVAL), else clamp(min(now, ended_at) - started_at, 5 min, 1 h); an issue that
 * ended (ended_at_ns > 0) shortens L to ended_at - started_at where that is less; current
 * [started, started + L) ending no later than now - upload_interval - 15 s; baseline
 * [started - L, started). */
int rt_query_issue_windows(int64_t started_at_ns, int64_t ended_at_ns, int64_t now_ns,
                           int64_t window_ns,
                           int64_t upload_interval_ns, struct rt_query_diff_req *req,
                           struct rt_error *err);

/* GET /api/v1/timeline: [from_ns, to_ns) of one (service, type) cut into `buckets` equal
 * buckets (1..RT_QUERY_TIMELINE_MAX_BUCKETS, and at most to_ns - from_ns: each at least
 * 1 ns). */
#define RT_QUERY_TIMELINE_MAX_BUCKETS 1000
struct rt_query_timeline_req {
    const char *service;
    enum rt_ptype type;
    int64_t from_ns, to_ns;
    const char *version, *instance;  /* filters, NULL = any */
    size_t buckets;
};

/* Answer: {"service", "type", "from", "to", "buckets": [{"from", "to", "profiles", "samples",
 * "value_ns"}]}, buckets in time order; bucket k is [from + span*k/n, from + span*(k+1)/n)
 * in ns. Each bucket's "profiles", "samples" (null when none of its profiles carries real
 * counts) and "value_ns" are those of rt_query_profile's answer for that bucket's window:
 * each profile weighted by its overlap with the bucket over its duration (DESIGN §6), so
 * samples can be fractional; from one scan of the store. NULL with err set: RT_EINVAL for a
 * bad request, a store error, or RT_ECANCELED as rt_query_profile. */
json_t *rt_query_timeline(struct rt_store *s, const struct rt_query_timeline_req *req,
                          struct rt_error *err);

/* Merges the window's profiles into one profile (each weighted by its overlap, DESIGN §6),
 * for export. Caller frees the result. NULL with err set on failure: RT_ETOOBIG when the
 * merged value exceeds RT_PROFILE_MAX_VALUE_NS (one profile's limit). */
struct rt_profile *rt_query_merge(struct rt_store *s, const struct rt_store_filter *f,
                                  struct rt_error *err);

/* ---- Rollups (docs/internals/rollups.md) ----
 * How long after its end a block (an hour, a day) is rolled up: profiles uploaded later still
 * count (they send the block back to wait), this only spares rebuilding a block whose last
 * uploads are on their way. */
#define RT_QUERY_ROLLUP_GRACE_NS (600LL * 1000000000LL)
/* How long a block that failed to build is left alone (read raw meanwhile). */
#define RT_QUERY_ROLLUP_RETRY_NS (3600LL * 1000000000LL)

/* Builds the rollups of at most max_blocks blocks waiting for one (rt_store_scan_rollup_pending)
 * that ended at least RT_QUERY_ROLLUP_GRACE_NS before now_ns, hours first, oldest first: each
 * block's profiles that lie wholly inside it (rt_profile_rollup_block), summed per (instance,
 * version) exactly as a window holding the block sums them (DESIGN §6 weights, §7 capacity
 * inputs), and stored with rt_store_put_rollup. A block that got new profiles while it was
 * built is left waiting (not an error); one that fails (an unreadable profile, ENOMEM) is
 * logged, deferred by RT_QUERY_ROLLUP_RETRY_NS (rt_store_defer_rollup) and does not stop the
 * others; the first such error is returned after them. *built counts the blocks stored.
 * Returns 0 (also on a store without rollups), that error, RT_EDISKFULL or RT_ECANCELED. */
int rt_query_build_rollups(struct rt_store *s, int64_t now_ns, size_t max_blocks, size_t *built,
                           struct rt_error *err);

#endif
