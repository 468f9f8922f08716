/* Internals of the ClickHouse backend (docs/internals/clickhouse.md): the HTTP client (a small
 * pool of curl handles), SQL string literals, RowBinary encoding and decoding, the map from
 * ClickHouse's 64-bit frame and stack ids (hashes agreed by every node without coordination)
 * to the process-local 32-bit ids of the store interface, and the backend's entry points. */
#ifndef RT_CLICKHOUSE_INT_H
#define RT_CLICKHOUSE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt/buf.h"
#include "rt/u64map.h"
#include "store/store_int.h"

/* Schema version this roottrace writes (the schema_version table). */
#define RT__CH_SCHEMA_VERSION 6

/* Bounds on a statement, ms: connecting (a lost server answers 503 within seconds, not
 * minutes), the whole statement, and the health check's SELECT 1 (/healthz). */
#define RT__CH_CONNECT_TIMEOUT_MS 2000L
#define RT__CH_TIMEOUT_MS 300000L
#define RT__CH_PING_TIMEOUT_MS 2000L

/* Idle curl handles kept for reuse: the server's 4 HTTP threads' windows, five statements
 * each (rt__ch_run_all), and the committer and sweeper, without opening new connections. */
#define RT__CH_POOL 24

/* Statements that rt__ch_run_all runs on threads of their own, at most, per open store at
 * once (beyond them, a statement runs on its caller's thread, after the others it was given).
 * A node then has at most its callers' statements (the server's 4 HTTP threads, the committer
 * and the sweeper) plus 16 in flight, ~22, against ClickHouse's max_concurrent_queries (100 by
 * default): several nodes on one ClickHouse share that limit (docs/internals/clickhouse.md). */
#define RT__CH_EXTRA_THREADS 16

/* Largest response read, bytes. */
#define RT__CH_MAX_RESPONSE ((size_t)1 << 31)

/* The start times one SELECT of rt_store_scan covers, ns (clickhouse_scan.c). */
#define RT__CH_SCAN_SLICE_NS (600 * 1000000000LL)

/* Ids per "id IN (...)" query when loading frames and stacks. */
#define RT__CH_IN_BATCH 5000

/* instance_events.given bits: which optional fields an event carries (NULL = unchanged). */
enum {
    RT__CH_GIVEN_RUNTIME = 1,
    RT__CH_GIVEN_RUNTIME_VERSION = 2,
    RT__CH_GIVEN_SDK_VERSION = 4,
    RT__CH_GIVEN_VERSION = 8,
    RT__CH_GIVEN_STATUS = 16,
};

/* Tables an upload writes, in the order they are written (rt__ch_upload_tables). */
#define RT__CH_UPLOAD_TABLES 8

struct rt__ch_commit;

/* The backend's state (rt_store.be). */
struct rt__ch {
    char *url;                     /* "http://host:port/?database=DB[&user settings]" */
    char *where;                   /* "http://host:port", for messages (no password) */
    char *db;                      /* database name ([A-Za-z0-9_]+) */
    char *cluster;                 /* ?cluster=NAME ([A-Za-z0-9_]+), or NULL: one server */
    pthread_mutex_t pool_lock;     /* guards idle and nidle */
    CURL *idle[RT__CH_POOL];       /* idle handles */
    size_t nidle;
    atomic_int extra_threads;      /* rt__ch_run_all's statements running on threads of their
                                    * own, this store's (at most RT__CH_EXTRA_THREADS, or
                                    * briefly above it while a caller that found no room gives
                                    * its count back); each gives its slot back when its answer
                                    * is in, before the caller joins it */
    /* Guarded by rt_store.dict_lock, like the dictionary they index: */
    struct rt_u64map frame_ids;    /* ClickHouse frame id -> local frame id */
    struct rt_u64map stack_ids;    /* ClickHouse stack id -> local stack id */
    uint32_t nframes, nstacks;     /* local ids handed out */
    /* Group commit of uploads (clickhouse_commit.c): */
    pthread_mutex_t commit_lock;   /* guards the queue and stopping */
    pthread_cond_t commit_cond;    /* a new upload queued, or a round written */
    struct rt__ch_commit *queue, *queue_tail; /* uploads waiting for the next round */
    bool stopping;                 /* the committer is to finish the queue and exit */
    bool committer_started;
    pthread_t committer;
    /* How many start times of a rolled window's raw part its sums list, at most (0:
     * RT__CH_RAW_STARTS; clickhouse_rollups.c). Tests lower it to reach the unlisted read. */
    size_t raw_starts_max;
    /* A raw part of at most this many profiles is read as rows, in batches of about
     * raw_part_batch (0: RT__CH_PART_MAX, RT__CH_PART_BATCH; tests lower them). */
    size_t raw_part_max;
    uint64_t raw_part_batch;
};

/* 8,192 starts of ~20 characters: ~160 KiB of SQL, under the server's max_query_size of
 * 256 KiB for each of a window's four sums. */
#define RT__CH_RAW_STARTS 8192

/* A rolled window's raw part of at most RT__CH_PART_MAX profiles is read as rows and summed by
 * the node, in statements of about RT__CH_PART_BATCH profiles (each response held whole, as a
 * scan's slice of RT__CH_SCAN_SLICE_NS is: ~1,000 profiles for 100 instances); a larger one
 * is summed in ClickHouse (clickhouse_rollups.c). */
#define RT__CH_PART_MAX 16384
#define RT__CH_PART_BATCH 1024
/* Statements of a raw part in flight at once (the rollups' read beside the first ones): their
 * answers are held together. */
#define RT__CH_PART_AT_ONCE 4

/* ---- clickhouse_http.c ---- */

/* The local id of a 64-bit ClickHouse id in m (rt/u64map.h; local ids start at 1), or 0. */
static inline uint32_t rt__ch_idmap_get(const struct rt_u64map *m, uint64_t key)
{
    uint32_t v;
    return rt_u64map_find(m, key, &v) ? v : 0;
}

/* Runs sql. With data (n bytes, e.g. RowBinary rows of an INSERT ... FORMAT RowBinary) sql
 * goes in the URL and data is the body; else sql is the body. The response body goes into
 * out when out is not NULL (cleared first). Returns 0, or RT_EIO with ClickHouse's message
 * (RT_EDISKFULL when ClickHouse reports no space left). */
int rt__ch_exec(struct rt__ch *ch, const char *sql, const void *data, size_t n,
                struct rt_buf *out, struct rt_error *err);

/* SELECT 1 within RT__CH_PING_TIMEOUT_MS: 0, or RT_EIO with the reason. */
int rt__ch_ping(struct rt__ch *ch, struct rt_error *err);

/* Runs a statement built in b (NUL-terminated); as rt__ch_exec without data. An append
 * failure while building b (b->data NULL or b->len 0) reads as RT_ENOMEM. */
int rt__ch_run(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, struct rt_error *err);

/* Runs the n statements sql[0..n) at once (n <= RT__CH_RUN_ALL_MAX), each on a connection
 * and a thread of its own (the caller's for the first), each response into out[i] as
 * rt__ch_run (past RT__CH_EXTRA_THREADS of this store's at once, on the caller's, one after
 * the other). Each statement still runs as its SETTINGS say (a window's sums on one thread
 * each, so each gives the same answer to the bit): only the statements overlap, on as many
 * cores as the ClickHouse server has. Returns 0, or the failure of the first statement (by
 * index) that failed, with its message; every statement has ended when it returns. */
#define RT__CH_RUN_ALL_MAX 8
int rt__ch_run_all(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, size_t n,
                   struct rt_error *err);
/* rt__ch_run_all, calling done(ud, i, err) on the caller's thread for each statement i in
 * index order as soon as it and those before it have ended without failing, while the later
 * ones still run (an answer read while the next ones are computed). done's failure ends the
 * calls and is returned; the statements not yet started on the caller's thread are then not
 * run. */
int rt__ch_run_each(struct rt__ch *ch, struct rt_buf *sql, struct rt_buf *out, size_t n,
                    int (*done)(void *ud, size_t i, struct rt_error *err), void *ud,
                    struct rt_error *err);

/* Appends s[0..n) as a ClickHouse string literal: quoted, with every byte that is not
 * printable ASCII, and ' and \, written as \xHH (names may hold any bytes). 0 or RT_ENOMEM. */
int rt__ch_quote(struct rt_buf *b, const char *s, size_t n);
/* rt__ch_quote of a NUL-terminated string (NULL reads as ""). */
int rt__ch_quote_cstr(struct rt_buf *b, const char *s);

/* RowBinary writers (little-endian; strings as varint length + bytes). 0 or RT_ENOMEM. */
int rt__ch_w_u8(struct rt_buf *b, uint8_t v);
int rt__ch_w_u32(struct rt_buf *b, uint32_t v);
int rt__ch_w_u64(struct rt_buf *b, uint64_t v);
int rt__ch_w_i64(struct rt_buf *b, int64_t v);
int rt__ch_w_f64(struct rt_buf *b, double v);
int rt__ch_w_uvarint(struct rt_buf *b, uint64_t v);
int rt__ch_w_str(struct rt_buf *b, const char *s, size_t n);
int rt__ch_w_cstr(struct rt_buf *b, const char *s); /* NULL writes "" */

/* RowBinary reader over a response: a short read sets bad and reads zeros from then on. */
struct rt__ch_rd {
    const unsigned char *p, *end;
    bool bad;
};
void rt__ch_rd_init(struct rt__ch_rd *r, const struct rt_buf *b);
bool rt__ch_rd_more(const struct rt__ch_rd *r);
uint8_t rt__ch_rd_u8(struct rt__ch_rd *r);
uint32_t rt__ch_rd_u32(struct rt__ch_rd *r);
uint64_t rt__ch_rd_u64(struct rt__ch_rd *r);
int64_t rt__ch_rd_i64(struct rt__ch_rd *r);
double rt__ch_rd_f64(struct rt__ch_rd *r);
uint64_t rt__ch_rd_uvarint(struct rt__ch_rd *r);
/* A string: its bytes (inside the response, not NUL-terminated) and length. */
const char *rt__ch_rd_str(struct rt__ch_rd *r, size_t *n);
/* n 8-byte little-endian values (UInt64, Int64 or Float64: an array's elements) into out, in
 * the host's order: one bounds check and a copy. A short read sets bad and zeroes out. */
void rt__ch_rd_le64s(struct rt__ch_rd *r, void *out, size_t n);
/* Fixed n bytes into out. */
void rt__ch_rd_fixed(struct rt__ch_rd *r, void *out, size_t n);

/* Strings of one decoded row, NUL-terminated copies valid until the next reset. May start
 * zero-initialized; the caller frees buf with rt_buf_cleanup. */
struct rt__ch_strs {
    struct rt_buf buf;  /* the copies, NUL after each */
    size_t off[16];     /* offset of string i in buf */
    size_t n;
};
void rt__ch_strs_reset(struct rt__ch_strs *s);
/* Reads a string from r into s; returns its index. */
size_t rt__ch_strs_read(struct rt__ch_strs *s, struct rt__ch_rd *r);
/* String i (NULL when absent is true). Valid until the next reset or read. */
const char *rt__ch_strs_get(const struct rt__ch_strs *s, size_t i, bool absent);

/* A new 63-bit id, unique across nodes without coordination: microseconds since the epoch
 * shifted left 10 bits, plus 10 random bits (ordered by creation time, as SQLite's were). */
int64_t rt__ch_new_id(void);

/* Write order of control-plane rows: nanoseconds since the epoch, strictly increasing within
 * the process (across nodes, their clocks order concurrent writes). */
int64_t rt__ch_seq(void);

/* Sets err for a malformed response to `what`; returns RT_EIO. */
int rt__ch_bad_response(const char *what, struct rt_error *err);

/* ---- clickhouse_commit.c ---- */

/* The tables of an upload, in write order: frames, stacks, profiles, services,
 * instance_events, uploads, service_versions, deploys. */
extern const char *const rt__ch_upload_tables[RT__CH_UPLOAD_TABLES];

/* Starts / stops (after writing what is queued) the committer thread. */
int rt__ch_commit_start(struct rt__ch *ch);
void rt__ch_commit_stop(struct rt__ch *ch);

/* Writes an upload's rows (bufs[t] for table rt__ch_upload_tables[t], RowBinary, borrowed)
 * together with those of the uploads queued at the same time: returns once they are written
 * (0) or failed (RT_EIO, RT_EDISKFULL, RT_ENOMEM with err set; some tables may be written).
 * *round is the number of uploads the INSERTs held for the round's first upload, else 0 (so
 * that each round is counted once, rt_store_stats). */
int rt__ch_commit(struct rt__ch *ch, struct rt_buf *const *bufs, size_t *round,
                  struct rt_error *err);

/* ---- clickhouse_db.c ---- */

/* Opens the ClickHouse backend on uri ("clickhouse:http://HOST:PORT/DB[?settings]"; the
 * setting cluster=NAME creates the tables replicated on that cluster, docs/scale-out.md). */
int rt__ch_open(struct rt_store *s, const char *uri, struct rt_error *err);

/* Appends the table an ALTER of `table` changes: `table` itself on one server; on a cluster
 * "DB.table_local ON CLUSTER NAME" for a sharded table, else "DB.table ON CLUSTER NAME".
 * 0 or RT_ENOMEM. */
int rt__ch_alter_table(struct rt_buf *b, const struct rt__ch *ch, const char *table);

/* ---- clickhouse_profiles.c ---- */

int rt__ch_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                        struct rt_store_put_result *res, struct rt_error *err);
int rt__ch_load_stack(struct rt_store *s, uint32_t id, uint32_t *frames, size_t cap,
                      size_t *depth, struct rt_error *err);
int rt__ch_load_frame(struct rt_store *s, uint32_t id, struct rt_arena *a, const char **name,
                      struct rt_error *err);
int rt__ch_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted, struct rt_error *err);
int64_t rt__ch_profile_count(struct rt_store *s);

/* ---- clickhouse_scan.c ---- */

/* rt_store_scan: every selected profile with its rows, profile_id deduplicated. */
int rt__ch_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                void *ud, struct rt_error *err);

/* The statement of a rolled window's raw part as rows (rt__ch_scan_rolled) into sql: the
 * filter's profiles that keep (an SQL condition: a list of start times) selects and exclude
 * (the profiles the rollups stand for) does not, deduplicated, in time order, with earliest
 * (the earliest start, rt__ch_earliest_read) as the constant bound in PREWHERE. 0 or
 * RT_ENOMEM. */
int rt__ch_part_sql(struct rt_buf *sql, const struct rt_store_filter *f, const char *exclude,
                    const char *keep, int64_t earliest);
/* Reads the profiles of such a statement's answer out (freeing its memory), gives their
 * stacks local ids and calls cb for each, in order. Returns 0, RT_EIO (a bad answer, a stack
 * missing), RT_ENOMEM or cb's error. */
int rt__ch_take_scan(struct rt_store *s, struct rt_buf *out, rt_store_profile_cb cb, void *ud,
                     struct rt_error *err);

/* Gives every stack of ids[0..n) (ClickHouse ids) a local id, loading from ClickHouse the
 * stacks and frames this process has not seen. Returns 0, RT_EIO or RT_ENOMEM. */
int rt__ch_resolve_stacks(struct rt_store *s, const uint64_t *ids, size_t n,
                          struct rt_error *err);

/* Appends the SQL condition selecting a filter's profiles (before deduplication; shared by
 * the scan and the window). Returns 0 or RT_ENOMEM. */
int rt__ch_filter_sql(struct rt_buf *b, const struct rt_store_filter *f);
/* rt__ch_filter_sql, with earliest (ns) as the earliest start instead of the subquery that
 * bounds how early an overlapping profile may start (INT64_MIN: the subquery). A constant lets
 * ClickHouse bound the primary key's range before it reads (PREWHERE). */
int rt__ch_filter_sql_from(struct rt_buf *b, const struct rt_store_filter *f, int64_t earliest);
/* The earliest start of a profile of f's service and type that may overlap f's window: its
 * start less the longest stored profile's duration (INT64_MIN where that would underflow:
 * rt__ch_filter_sql_from's subquery then). The statement finding it into sql (0 or
 * RT_ENOMEM), and its answer read into *earliest (0 or RT_EIO). */
int rt__ch_earliest_sql(struct rt_buf *sql, const struct rt_store_filter *f);
int rt__ch_earliest_read(const struct rt_buf *out, const struct rt_store_filter *f,
                         int64_t *earliest, struct rt_error *err);

/* ---- clickhouse_window.c ---- */

/* rt_store_scan_window: the window summed in ClickHouse (docs/internals/clickhouse.md). */
int rt__ch_scan_window(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_cb *cb, void *ud, struct rt_error *err);

/* rt__ch_scan_window of the filter's profiles less those that exclude (an SQL condition on
 * the profiles' columns, or NULL) selects, and only those that keep (an SQL condition on
 * time_ns alone, or NULL: the sorting key's index then skips every granule it rules out)
 * selects: the raw part of a window read beside rollups. With earliest (the earliest start of
 * a profile of the window, rt__ch_earliest_read; INT64_MIN for none), the conditions go in
 * PREWHERE with that constant bound (only the granules holding profiles that pass are read
 * whole): worth it when few granules do. The four statements run at once; with_sql (or NULL),
 * a statement of the caller's, runs beside them, its rows into with_out (the rollups of a
 * rolled window, read while its raw part is summed). A rolled window's raw part comes here
 * only when it holds more than RT__CH_PART_MAX profiles (raw_part_max); a smaller one is read
 * as rows (rt__ch_part_sql). */
int rt__ch_sum_window(struct rt_store *s, const struct rt_store_filter *f, const char *exclude,
                      const char *keep, int64_t earliest, const struct rt_store_window_cb *cb,
                      void *ud, struct rt_buf *with_sql, struct rt_buf *with_out,
                      struct rt_error *err);

/* ---- clickhouse_rollups.c: rollups of whole hours and days (docs/internals/rollups.md) ---- */

/* rt_profile_rollup_block(time_ns, duration_ns, level) as an SQL expression of profiles. */
const char *rt__ch_block_sql(int level);
int rt__ch_keys(struct rt_store *s, enum rt_store_key_kind kind, bool to_keys, uint64_t *v,
                size_t n, struct rt_error *err);
int rt__ch_scan_rolled(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_reader *r, void *ud, struct rt_error *err);
int rt__ch_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns, size_t limit,
                               int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                               struct rt_error *err);
int rt__ch_put_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                      const struct rt_rollup_group *g, size_t n, struct rt_error *err);
int rt__ch_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b, int64_t retry_ns,
                        struct rt_error *err);

/* ---- clickhouse_meta.c ---- */

/* Appends the RowBinary row of an instance event (kind 1 profile, 2 poll) to b; NULL strings
 * are "not given" (the stored value stays), times in ns. Returns 0 or RT_ENOMEM. */
int rt__ch_w_instance_event(struct rt_buf *b, const char *service, const char *instance,
                            uint8_t kind, const char *runtime, const char *runtime_version,
                            const char *sdk_version, const char *version, const char *status,
                            int64_t interval_us, int64_t poll_interval_s, int64_t at_ns);
/* Appends the RowBinary row of a service registration to b. */
int rt__ch_w_service(struct rt_buf *b, const char *name, int64_t at_ns);
int rt__ch_put_poll(struct rt_store *s, const char *service, const char *instance,
                    int64_t at_ns, struct rt_error *err);
int rt__ch_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                         int64_t to_ns, rt_store_liveness_cb cb, void *ud,
                         struct rt_error *err);
int rt__ch_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err);
int rt__ch_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                        int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err);
/* INSERTs the RowBinary rows in b into table; ENOMEM while building b (built false) is
 * reported. */
int rt__ch_insert_rows(struct rt__ch *ch, const char *table, struct rt_buf *b, bool built,
                       struct rt_error *err);
/* Runs a SELECT built in sql (ending in FORMAT RowBinary) into out; ENOMEM while building it
 * (built false) is reported. */
int rt__ch_select_rows(struct rt__ch *ch, struct rt_buf *sql, bool built, struct rt_buf *out,
                       struct rt_error *err);
int rt__ch_find_alert_issue(struct rt_store *s, const char *source, const char *alert_key,
                            int64_t *id, struct rt_error *err);
int rt__ch_put_issue_state(struct rt_store *s, int64_t id, enum rt_issue_state kind,
                           int64_t at_ns, int64_t ended_at_ns, struct rt_error *err);
int rt__ch_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                     struct rt_error *err);
int rt__ch_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                       struct rt_error *err);
int rt__ch_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                         struct rt_error *err);
int rt__ch_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                          void *ud, struct rt_error *err);

/* ---- clickhouse_control.c ---- */

int rt__ch_set_service_config(struct rt_store *s, const char *name,
                              const struct rt_service_config *cfg, struct rt_error *err);
int rt__ch_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                struct rt_error *err);
int rt__ch_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                     struct rt_error *err);
int rt__ch_scan_instance_status(struct rt_store *s, const char *service,
                                rt_store_instance_status_cb cb, void *ud,
                                struct rt_error *err);
int rt__ch_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                   struct rt_error *err);
int rt__ch_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err);
int rt__ch_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err);
int rt__ch_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err);
int rt__ch_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                      rt_store_audit_cb cb, void *ud, struct rt_error *err);

#endif
