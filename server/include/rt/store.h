/* The store interface (DESIGN §8): profiles as aggregated (stack, samples, value) rows with
 * interned frames and stacks, plus services, instances, liveness, deploys and issues.
 * One interface, two backends behind it (SQLite, ClickHouse); nothing outside store/
 * names a backend. All functions are safe to call from several threads at once; uploads and
 * queries run concurrently. Times are Unix nanoseconds. */
#ifndef RT_STORE_H
#define RT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/err.h"
#include "rt/profile.h"

struct rt_store;

/* Opens (creating if needed) a store. uri is "sqlite:PATH" (PATH a file), a directory, in
 * which case the SQLite file is DIR/roottrace.db (DIR created with mode 0700), or
 * "clickhouse:http://HOST:PORT/DB[?settings]" (the database and its tables are created or
 * migrated; settings are passed to every request, docs/internals/clickhouse.md).
 * Returns NULL with err set on failure. */
struct rt_store *rt_store_open(const char *uri, struct rt_error *err);

/* True when other processes share the store's state and change it behind this one's back
 * (ClickHouse: several nodes); the control plane then re-reads its state every second. */
bool rt_store_is_shared(const struct rt_store *s);

/* True when uri names a store that is not a local file or directory (clickhouse:...). */
bool rt_store_uri_is_remote(const char *uri);

/* uri into out[n] (always NUL-terminated, cut to fit) with every password written as ***:
 * the value of a password= setting (any case) and the user-info's (scheme://user:***@host).
 * For logs and messages. */
void rt_store_uri_redacted(const char *uri, char *out, size_t n);

/* For a store opened from a data directory (uri neither sqlite:PATH nor remote): logs a
 * warning for the directory (wanted 0700) and its database file (0600) when group or others
 * may read them. The store creates them so, but keeps the mode of what already existed. */
void rt_store_warn_open_modes(const char *uri);

/* Whether the store answers now (/healthz): 0, or RT_EIO with the reason (a ClickHouse that
 * does not answer SELECT 1 within 2 s). A local store always answers. */
int rt_store_ping(struct rt_store *s, struct rt_error *err);

/* Makes every scan of profiles (rt_store_scan, rt_store_scan_window), running or to come,
 * stop at its next profile or row and return RT_ECANCELED ("the server is stopping"); writes
 * are not affected. For a server's stop: a long query must not hold it up
 * (docs/decisions.md). Irreversible; safe to call from any thread or several times. */
void rt_store_cancel_reads(struct rt_store *s);

/* 0, or RT_ECANCELED with its message in err once rt_store_cancel_reads was called: for the
 * phases of a query that follow its scans. */
int rt_store_check_cancelled(struct rt_store *s, struct rt_error *err);

/* Closes the store; accepts NULL. */
void rt_store_free(struct rt_store *s);

/* Result of storing one profile. */
struct rt_store_put_result {
    int64_t id;          /* the stored profile's id (the existing one for a duplicate) */
    bool duplicate;      /* a profile of its (service, instance, type, profile_id) was stored
                            already: nothing was added */
    bool conflict;       /* of a duplicate: the stored one holds other content (another start,
                            duration or stacks, rt_profile_content_hash): not a retry */
    double samples;      /* the stored profile's samples and value: the existing one's for a */
    int64_t value_ns;    /* duplicate, which a retry answers with */
    uint64_t stored_hash; /* backends fill it for a duplicate: its content hash, 0 unknown */
};

/* Stores profiles in one transaction, durable (synchronous=FULL) when this returns 0
 * (ClickHouse: written by INSERTs shared with concurrent uploads before this returns; no
 * transaction, see docs/internals/clickhouse.md). Each profile's content_hash is set first.
 * A profile whose (service, instance, type, profile_id) is stored already is not stored again
 * (docs/decisions.md): res says duplicate, with the stored one's figures, and conflict when
 * its content differs (profiles stored before content was hashed count as the same). An
 * absent or empty profile_id is never a duplicate. ClickHouse looks the stored one up within
 * a day of the profile's start; a concurrent twin is stored but read once. Registers
 * the service and instance (runtime, versions, last_seen = now) and records an observed
 * deploy when an instance reports a version the service has not reported before (at = the
 * profile's start). A profile's own start and end are liveness evidence that the query
 * layer reads from the profile itself; only polls are stored as liveness.
 * res has n entries. Errors: RT_EDISKFULL (nothing stored), RT_EIO. */
int rt_store_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                          struct rt_store_put_result *res, struct rt_error *err);

/* Which profiles a scan reads: one (service, type) and the profiles overlapping
 * [from_ns, to_ns) (a profile of unknown duration overlaps when its start is inside). */
struct rt_store_filter {
    const char *service;
    enum rt_ptype type;
    int64_t from_ns, to_ns;
    const char *version;   /* NULL = any */
    const char *instance;  /* NULL = any */
};

/* A stored profile's metadata, as a scan yields it (strings valid during the callback). */
struct rt_profile_meta {
    int64_t id;
    const char *profile_id;  /* may be NULL */
    const char *instance;    /* never NULL ("" when the upload named none) */
    const char *version;     /* may be NULL */
    int64_t time_ns, duration_ns, period_ns; /* duration -1 = unknown; period 0 = unknown */
    int64_t thread_cpu_ns, process_cpu_ns;   /* -1 = absent */
    double samples;
    int64_t value_ns;
    bool has_counts;
    uint32_t truncated_stacks;
    const char *producer;    /* rt_producer name, never NULL ("" unknown; DESIGN §12) */
    double cpu_scale;        /* factor capacity scales its CPU by (rt_producer_cpu_scale) */
    enum rt_ptype declared_type; /* what its producer declared where relabelled; 0 = none */
};

/* One aggregated row of a stored profile. */
struct rt_store_row {
    uint32_t stack_id;  /* resolve with rt_store_stack */
    double samples;
    int64_t value_ns;
};

/* Called once per profile of a scan, ordered by time_ns; return non-zero to stop (that value
 * is returned by the scan). rows are valid during the call only. */
typedef int (*rt_store_profile_cb)(void *ud, const struct rt_profile_meta *m,
                                   const struct rt_store_row *rows, size_t nrows);

/* Reads every profile that the filter selects. Returns 0, the callback's non-zero value,
 * RT_EIO, or RT_ECANCELED after rt_store_cancel_reads. */
int rt_store_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                  void *ud, struct rt_error *err);

/* A window aggregated by the store itself (ClickHouse: GROUP BY in the database rather
 * than every row to the client). Each profile is weighted by w = its overlap with
 * [f->from_ns, f->to_ns) divided by its duration (1 when its duration is unknown or 0 and it
 * starts inside; DESIGN §6); profiles of weight 0 are left out, rows with neither samples nor
 * value too. Called in this order; a non-zero return stops the scan with that value. */
struct rt_store_window_cb {
    /* Once per profile, ordered by time_ns: its metadata, w, and its weighted samples and
     * value (sums over its rows of samples x w and value x w). */
    int (*profile)(void *ud, const struct rt_profile_meta *m, double weight, double samples,
                   double value_ns);
    /* Once per stack: its weighted samples and value summed over the profiles. */
    int (*stack)(void *ud, uint32_t stack_id, double samples, double value_ns);
    /* Once per (instance, leaf frame): the weighted value of the stacks ending in it, each
     * profile's times its cpu_scale (capacity's CPU, DESIGN §7). */
    int (*instance_leaf)(void *ud, const char *instance, uint32_t frame_id, double value_ns);
    /* Once per leaf frame: sum over profiles with weighted samples n > 0 of x^2 / n, x the
     * profile's weighted samples of the stacks ending in it (DESIGN §6, overdispersion). */
    int (*leaf_s2)(void *ud, uint32_t frame_id, double s2);
};

/* True when the backend aggregates windows itself (rt_store_scan_window); otherwise the
 * caller aggregates rt_store_scan's rows (SQLite). The query layer does not ask: it reads
 * windows through rt_store_read_window, which chooses. */
bool rt_store_aggregates(const struct rt_store *s);

/* A reader of windows for every backend: rows, called as rt_store_scan calls it (the reader
 * weights and sums them itself, with rt_profile_window_weight), and sums, called as
 * rt_store_scan_window calls them. */
struct rt_store_window_reader {
    rt_store_profile_cb rows;
    const struct rt_store_window_cb *sums;
    /* Optional (NULL: no rollups are read): one block's rollup of one (instance, version), as
     * rt_store_put_rollup stored it, for each whole block (a day, or an hour outside the
     * rolled days) of the window that a rollup covers (docs/internals/rollups.md). The
     * profiles such a block stands for are then not passed to rows (or summed into sums);
     * every other profile overlapping the window is, once. */
    int (*rollup)(void *ud, const char *instance, const char *version, const void *data,
                  size_t len);
};

/* Reads the window that the filter selects into r: the sums where the backend aggregates
 * (ClickHouse), the rows otherwise (SQLite), with the rollups of the window's whole hours
 * where the backend keeps them and r->rollup is set (ClickHouse then passes a raw part of at
 * most 16,384 profiles as rows, a larger one as sums; with r->rollup set, also for a window
 * with no whole hour). Returns what that scan returns. */
int rt_store_read_window(struct rt_store *s, const struct rt_store_filter *f,
                         const struct rt_store_window_reader *r, void *ud, struct rt_error *err);

/* ---- Rollups (docs/internals/rollups.md) ----
 * Whole blocks of a (service, type), hours and UTC days, summed once after they close, so that
 * long windows read a block's sums instead of its profiles. The store keeps them as opaque data
 * per (instance, version) of a block, built by the query layer (rt_query_build_rollups): the
 * store decides which profiles a block stands for (rt_profile_rollup_block), which blocks are
 * stale, and reads them beside the raw profiles (rt_store_read_window). */

/* True when the backend keeps rollups (both do). */
bool rt_store_has_rollups(const struct rt_store *s);

/* A block waiting for its rollup: new profiles of it were stored since it was last built.
 * gen changes with every such store (SQLite: a time; ClickHouse: the block's fingerprint,
 * docs/internals/rollups.md); rt_store_put_rollup refuses a rollup built from an older gen. */
struct rt_rollup_block {
    const char *service;
    enum rt_ptype type;
    int level;        /* 0: an hour, 1: a UTC day (rt_rollup_level_ns) */
    int64_t block;    /* [block·L, (block+1)·L), L = rt_rollup_level_ns(level) */
    int64_t gen;
};

/* Calls cb for at most limit waiting blocks that ended by end_ns and are not deferred past
 * now_ns (rt_store_defer_rollup), hours first, oldest first; strings are valid during the
 * call. Returns 0, cb's non-zero value, RT_EIO; 0 with no call on a backend without
 * rollups. */
int rt_store_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns, size_t limit,
                                 int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                                 struct rt_error *err);

/* One (instance, version) of a block's rollup: data is the query layer's encoding. */
struct rt_rollup_group {
    const char *instance;  /* never NULL */
    const char *version;   /* NULL = none */
    const void *data;
    size_t len;
};

/* Stores block b's rollup (replacing any) as n groups, durably, unless profiles of the block
 * were stored after it was read (b->gen is stale): then RT_ECONFLICT and nothing changes.
 * Returns 0, RT_ECONFLICT, RT_EINVAL (no rollups here), RT_EDISKFULL or RT_EIO. */
int rt_store_put_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                        const struct rt_rollup_group *g, size_t n, struct rt_error *err);

/* Leaves block b out of rt_store_scan_rollup_pending until retry_ns (it failed to build),
 * unless a profile of it is stored before then (b->gen stale: nothing changes). Returns 0,
 * RT_EINVAL (no rollups here), RT_EDISKFULL or RT_EIO. */
int rt_store_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b, int64_t retry_ns,
                          struct rt_error *err);

/* What rt_store_keys translates: stack or frame ids. */
enum rt_store_key_kind { RT_STORE_STACK_KEYS, RT_STORE_FRAME_KEYS };

/* Translates v[0..n) in place between this process's stack or frame ids and keys that stay
 * valid across processes and the nodes of a cluster, for data the query layer keeps in the
 * store (rollups): to_keys true turns ids into keys, false turns keys back into ids. SQLite's
 * keys are its row ids; ClickHouse's are its 64-bit content hashes, and turning them back
 * loads the stacks (with their frames) this process has not seen; a frame key must be a frame
 * of a stack resolved before. Returns 0, RT_ENOTFOUND (an id or key unknown here: err names
 * it), RT_EIO or RT_ENOMEM. */
int rt_store_keys(struct rt_store *s, enum rt_store_key_kind kind, bool to_keys, uint64_t *v,
                  size_t n, struct rt_error *err);

/* Aggregates the profiles that the filter selects (as rt_store_scan would yield them) into
 * cb's calls. Returns 0, a callback's non-zero value, RT_EINVAL when the backend does not
 * aggregate, RT_EIO, RT_ENOMEM, or RT_ECANCELED after rt_store_cancel_reads. */
int rt_store_scan_window(struct rt_store *s, const struct rt_store_filter *f,
                         const struct rt_store_window_cb *cb, void *ud, struct rt_error *err);

/* Frame and stack ids are this process's handles, valid while the store is open (ClickHouse
 * keeps 64-bit content hashes and maps them to these; docs/internals/clickhouse.md).
 * The frames of a stack, root first, as frame ids, copied into frames[0..cap) (a cap of
 * RT_MAX_STACK_DEPTH + 1 always suffices); *depth is their number. Copies, because the
 * dictionary that caches them is bounded and may drop them at any time (SQLite,
 * docs/internals/store.md). Returns 0, RT_ENOTFOUND, RT_EIO (unreadable), RT_EINVAL (a
 * missing argument) or RT_ETOOBIG (cap too small). */
int rt_store_stack(struct rt_store *s, uint32_t stack_id, uint32_t *frames, size_t cap,
                   size_t *depth);

/* The name of a frame id, copied into arena a (valid until a is cleaned up), or NULL if
 * unknown (or out of memory). */
const char *rt_store_frame_name(struct rt_store *s, uint32_t frame_id, struct rt_arena *a);

/* The longest poll interval the server may tell SDKs (`roottrace serve --poll-interval`, s). */
#define RT_POLL_INTERVAL_MAX_S 600

/* Liveness (DESIGN §7): two polls of an instance at most this far apart (ns) are one stretch
 * of liveness, and an instance not heard from for longer is stale: three of the poll
 * intervals it was told (poll_interval_s, s; 0 or less = unknown, the default 10 s). The one
 * place of that rule: both backends and the API's staleness call it. */
int64_t rt_store_poll_gap_ns(int64_t poll_interval_s);

/* Liveness evidence (DESIGN §7): an SDK's config poll at at_ns for (service, instance), of an
 * unknown poll interval (the default 10 s; rt_store_put_polls says the interval). */
int rt_store_put_poll(struct rt_store *s, const char *service, const char *instance,
                      int64_t at_ns, struct rt_error *err);

/* One instance's liveness evidence inside a window: the earliest and latest evidence times
 * (polls, profile starts and ends) within [from, to). */
struct rt_liveness {
    const char *instance;  /* valid during the callback */
    int64_t first_ns, last_ns;
};
typedef int (*rt_store_liveness_cb)(void *ud, const struct rt_liveness *l);

/* Calls cb once per instance of service with liveness evidence in [from_ns, to_ns)
 * (polls only; the query layer adds the profiles' own starts and ends). */
int rt_store_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                           int64_t to_ns, rt_store_liveness_cb cb, void *ud, struct rt_error *err);

/* Deploys (DESIGN §6). source is "declared" or "observed". */
struct rt_deploy {
    const char *service, *version, *source;
    int64_t at_ns;
};
int rt_store_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err);
typedef int (*rt_store_deploy_cb)(void *ud, const struct rt_deploy *d);
/* Deploys of service (NULL = all) with at in [from_ns, to_ns), ordered by at. */
int rt_store_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                          int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err);

/* Issues (DESIGN §6, §13). An issue opened by an alert carries its source, the key of its
 * episode and the alert's details; what happens to an issue afterwards (notifications, its
 * end) is a log of states, read back into the fields below. */
struct rt_issue {
    int64_t id;
    const char *service, *title;
    int64_t started_at_ns, created_at_ns;
    const char *source;       /* "api", "alertmanager", "grafana"; NULL or "" read as "api" */
    const char *alert_key;    /* the alert episode's key within its source ("fingerprint|
                                 startsAt ns"), NULL for an issue opened by hand */
    const char *alert;        /* the alert's details as JSON text (issues from alerts), or NULL */
    /* read back from the states (ignored by rt_store_put_issue but notified_at_ns): */
    int64_t ended_at_ns;      /* 0: open */
    bool resolved;            /* the alert said resolved */
    int64_t notified_at_ns;   /* the last notification of the alert; 0: none. Given to
                                 rt_store_put_issue: the notification that opens the issue */
    int64_t notifications;    /* notifications of the alert received */
};

/* What one state of an issue says. */
enum rt_issue_state {
    RT_ISSUE_NOTIFIED = 1,    /* a notification of its alert, firing */
    RT_ISSUE_RESOLVED = 2,    /* its alert resolved: ended at ended_at_ns */
    RT_ISSUE_SET_END = 3,     /* its end set by hand: ended_at_ns, or 0 to reopen it */
};

/* Stores a new issue; sets *id. With alert_key set, an issue of the same (source, alert_key)
 * already stored is found instead (*id is its id): two nodes opening it at once store one.
 * With notified_at_ns > 0 the notification that opens it is stored with it: no reader sees
 * the issue without it (on the found issue it counts as a repeat). */
int rt_store_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                       struct rt_error *err);

/* Applies one notification of an alert episode (DESIGN §13), i naming it (source, alert_key,
 * and what a new issue holds): the episode's issue, found or opened, records it (a repeat, or
 * a second Alertmanager replica's duplicate, touches it and never opens another); resolved
 * ends it at i->ended_at_ns; a resolved episode with no issue opens nothing (*id 0). *opened
 * says whether this call opened the issue. Returns 0 or a store error. */
int rt_store_alert_issue(struct rt_store *s, const struct rt_issue *i, bool resolved,
                         int64_t now_ns, int64_t *id, bool *opened, struct rt_error *err);

/* Sets issue id's end (ended_at_ns > 0), or reopens it (0). RT_ENOTFOUND for no such issue. */
int rt_store_set_issue_end(struct rt_store *s, int64_t id, int64_t ended_at_ns,
                           struct rt_error *err);
typedef int (*rt_store_issue_cb)(void *ud, const struct rt_issue *i);
/* One issue by id (RT_ENOTFOUND if none), or all issues (id < 0), newest first. */
int rt_store_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                         struct rt_error *err);

/* Services and their instances. */
struct rt_service_info {
    const char *name;
    bool profiling_enabled;
    int64_t last_upload_ns;   /* 0 = never */
    bool has_cpu, has_wall;   /* profile types stored */
};
struct rt_instance_info {
    const char *service, *instance, *runtime, *runtime_version, *sdk_version, *version, *status;
    int64_t first_seen_ns, last_seen_ns;
};
typedef int (*rt_store_service_cb)(void *ud, const struct rt_service_info *svc);
typedef int (*rt_store_instance_cb)(void *ud, const struct rt_instance_info *inst);
int rt_store_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                           struct rt_error *err);
int rt_store_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                            void *ud, struct rt_error *err);

/* Deletes profiles that ended before cutoff_ns, and polls older than it, in bounded
 * batches (ClickHouse: whole month partitions whose newest profile ended by the cutoff).
 * Sets *deleted (may be NULL) to the number of profiles removed. */
int rt_store_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted, struct rt_error *err);

/* Bytes the store uses on disk (database and its WAL; ClickHouse: the database's parts). */
int64_t rt_store_disk_bytes(struct rt_store *s);

/* Number of stored profiles (for /metrics and tests). */
int64_t rt_store_profile_count(struct rt_store *s);

/* Commits by how many uploads they held: buckets of at most 1, 2, 4, 8, 16, 32 uploads and
 * more (rt_store_commit_bucket_le gives the bounds of all but the last). */
#define RT_STORE_COMMIT_BUCKETS 7
extern const unsigned rt_store_commit_bucket_le[RT_STORE_COMMIT_BUCKETS - 1];

/* The store's write counters and the size of its in-memory frame dictionary (/metrics). */
struct rt_store_stats {
    uint64_t commits;        /* write transactions of uploads committed since the start */
    uint64_t commit_uploads; /* rt_store_put_profiles calls those commits held (SQLite groups
                                the uploads that arrive together, sqlite_group.c) */
    uint64_t commit_hist[RT_STORE_COMMIT_BUCKETS]; /* commits per bucket, not cumulative */
    uint64_t dict_frames;    /* frames the dictionary caches (bounded by the store's frames) */
    uint64_t dict_stacks;    /* stacks it caches */
    uint64_t dict_bytes;     /* memory it holds */
    uint64_t dict_budget;    /* its bound in bytes (0: none; ClickHouse) */
    uint64_t dict_resets;    /* times it was emptied to stay within the bound */
};

/* Fills out (zeros for a NULL store). */
void rt_store_stats(struct rt_store *s, struct rt_store_stats *out);

/* ---- Control plane state (DESIGN §5, §9) ---------------------------------------------- */

/* A service's profiling toggle and the per-service overrides of the SDK config. */
struct rt_service_config {
    bool enabled;                  /* profiling on; false for every new service */
    enum rt_ptype type;            /* RT_PTYPE_CPU, RT_PTYPE_WALL, or 0: the runtime's own */
    int64_t sampling_interval_us;  /* 0 = the runtime's default */
    int64_t upload_interval_s;     /* 0 = the default (60 s) */
};

/* Sets service name's config, creating the service if unknown. Durable when it returns 0. */
int rt_store_set_service_config(struct rt_store *s, const char *name,
                                const struct rt_service_config *cfg, struct rt_error *err);

/* Calls cb once per service with its config (all services, ordered by name). */
typedef int (*rt_store_service_config_cb)(void *ud, const char *name,
                                          const struct rt_service_config *cfg);
int rt_store_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                  struct rt_error *err);

/* One SDK config poll, as the control plane batches them: liveness evidence (like
 * rt_store_put_poll) plus what the instance says of itself. Strings may be NULL (unchanged). */
struct rt_poll {
    const char *service, *instance, *runtime, *runtime_version, *sdk_version, *version;
    const char *status;            /* "<state>[: <reason>]" as the SDK reported it */
    int64_t interval_us;           /* effective sampling interval the SDK reports; 0 = unknown */
    int64_t poll_interval_s;       /* the poll interval the instance was told (for staleness) */
    int64_t at_ns;
};

/* Records n polls in one transaction (registering services and instances on first sight,
 * off by default), updating each instance's runtime, versions, status, interval and
 * last_seen. Not fsynced: liveness is made durable by the next durable commit. */
int rt_store_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                       struct rt_error *err);

/* Instance fields the control plane adds (read by rt_store_scan_instances' callers). */
struct rt_instance_status {
    const char *service, *instance, *status;
    int64_t interval_us, poll_interval_s, last_seen_ns;
};
typedef int (*rt_store_instance_status_cb)(void *ud, const struct rt_instance_status *st);
/* Status of each instance of service (NULL = all). */
int rt_store_scan_instance_status(struct rt_store *s, const char *service,
                                  rt_store_instance_status_cb cb, void *ud,
                                  struct rt_error *err);

/* API keys: stored as a hash only (DESIGN §9). */
struct rt_key {
    int64_t id;
    const char *scope;             /* "admin", "read" or "ingest" */
    const char *service;           /* bound service, or NULL */
    const char *name;              /* free text, may be NULL */
    uint8_t hash[32];              /* BLAKE2b-256 of the secret */
    int64_t created_at_ns;
    int64_t revoked_at_ns;         /* 0 = active */
};
/* Stores a new key; sets *id. Durable when it returns 0. */
int rt_store_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                     struct rt_error *err);
typedef int (*rt_store_key_cb)(void *ud, const struct rt_key *k);
/* All keys, revoked ones included, ordered by id. */
int rt_store_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err);
/* Marks key id revoked at at_ns. RT_ENOTFOUND if no such active key. */
int rt_store_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err);

/* The audit log of control-plane changes (DESIGN §5). */
struct rt_audit {
    int64_t at_ns;
    const char *actor, *action, *target, *detail;  /* detail may be NULL */
};
int rt_store_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err);
typedef int (*rt_store_audit_cb)(void *ud, const struct rt_audit *a);
/* Audit records with at in [from_ns, to_ns), newest first, at most limit (0 = all). */
int rt_store_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                        rt_store_audit_cb cb, void *ud, struct rt_error *err);

#endif
