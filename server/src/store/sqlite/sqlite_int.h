/* Internals of the SQLite backend: connections with lazily prepared statements, the writer
 * (one connection behind a mutex) and the pool of reader connections, and the SQL text of
 * every statement the backend runs. */
#ifndef RT_SQLITE_INT_H
#define RT_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "store/store_int.h"

/* Profiles deleted per retention transaction. */
#define RT__SQLITE_RETAIN_BATCH 10000

/* XX(name, sql): every statement, prepared on first use per connection. */
/* An issue's columns with its states read back (DESIGN §13): its end is the latest state that
 * sets one, resolved whether its alert said so, its notifications those of its alert. */
#define RT__SQL_ISSUE_COLUMNS                                                                   \
    "SELECT i.id, i.service, i.title, i.started_at_ns, i.created_at_ns, i.source, i.alert, "  \
    "(SELECT ended_at_ns FROM issue_states s WHERE s.issue_id = i.id AND s.kind >= 2 "        \
    "ORDER BY s.id DESC LIMIT 1), "                                                            \
    "EXISTS(SELECT 1 FROM issue_states s WHERE s.issue_id = i.id AND s.kind = 2), "            \
    "(SELECT max(at_ns) FROM issue_states s WHERE s.issue_id = i.id AND s.kind <= 2), "        \
    "(SELECT count(*) FROM issue_states s WHERE s.issue_id = i.id AND s.kind <= 2) "           \
    "FROM issues i "

/* The profiles of a window, ?1 service, ?2 type, [?3, ?4), ?5 version, ?6 instance (NULL: any),
 * ordered by start; index: an INDEXED BY clause or "", extra: more conditions or "". */
#define RT__SQL_SCAN_PROFILES(index, extra)                                                    \
    "SELECT p.id, p.profile_id, i.name, p.version, p.time_ns, p.duration_ns, p.period_ns, "   \
    "p.thread_cpu_ns, p.process_cpu_ns, p.samples, p.value_ns, p.has_counts, "                \
    "p.truncated_stacks, p.rows, p.producer, p.cpu_scale, p.declared_type, p.hour, p.day "    \
    "FROM profiles p " index "JOIN instances i ON i.id = p.instance_id "                      \
    "WHERE p.service_id = (SELECT id FROM services WHERE name = ?1) AND p.type = ?2 "         \
    "AND p.time_ns >= ?3 - (SELECT value FROM meta WHERE key = 'max_duration_ns') "           \
    "AND p.time_ns < ?4 AND p.end_ns > ?3 " extra                                             \
    "AND (?5 IS NULL OR p.version = ?5) AND (?6 IS NULL OR i.name = ?6) "                     \
    "ORDER BY p.time_ns, p.id"
#define RT__SQL_MAP(XX)                                                                        \
    XX(BEGIN_WRITE, "BEGIN IMMEDIATE")                                                         \
    XX(COMMIT, "COMMIT")                                                                       \
    XX(ROLLBACK, "ROLLBACK")                                                                   \
    XX(SYNC_FULL, "PRAGMA synchronous = FULL")                                                 \
    XX(SYNC_NORMAL, "PRAGMA synchronous = NORMAL")                                             \
    /* A join, so that profiles_dedup is searched on all four of its columns (a subquery    \
     * correlated on p.service_id made SQLite scan the service's profiles, test_plans.c). */ \
    XX(FIND_DUP, "SELECT p.id, p.samples, p.value_ns, p.content_hash FROM services s "        \
                 "JOIN instances i ON i.service_id = s.id "                                   \
                 "JOIN profiles p ON p.service_id = s.id AND p.instance_id = i.id "           \
                 "WHERE s.name = ?3 AND i.name = ?4 AND p.type = ?2 AND p.profile_id = ?1")  \
    XX(SERVICE_ADD, "INSERT INTO services(name, created_at_ns) VALUES(?1, ?2) "                \
                    "ON CONFLICT(name) DO NOTHING")                                            \
    XX(SERVICE_ID, "SELECT id FROM services WHERE name = ?1")                                  \
    XX(SERVICE_UPLOADED, "UPDATE services SET last_upload_ns = max(last_upload_ns, ?2) "       \
                         "WHERE id = ?1")                                                      \
    XX(INSTANCE_UPSERT,                                                                        \
       "INSERT INTO instances(service_id, name, runtime, runtime_version, sdk_version, "       \
       "version, first_seen_ns, last_seen_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) "         \
       "ON CONFLICT(service_id, name) DO UPDATE SET "                                          \
       "runtime = coalesce(excluded.runtime, runtime), "                                       \
       "runtime_version = coalesce(excluded.runtime_version, runtime_version), "               \
       "sdk_version = coalesce(excluded.sdk_version, sdk_version), "                           \
       "version = coalesce(excluded.version, version), "                                       \
       "first_seen_ns = min(first_seen_ns, excluded.first_seen_ns), "                          \
       "last_seen_ns = max(last_seen_ns, excluded.last_seen_ns) RETURNING id")                 \
    XX(VERSION_SEEN, "INSERT INTO service_versions(service_id, version, first_seen_ns) "       \
                     "VALUES(?1, ?2, ?3) ON CONFLICT DO NOTHING")                              \
    XX(DEPLOY_ADD, "INSERT INTO deploys(service, version, at_ns, source) "                     \
                   "VALUES(?1, ?2, ?3, ?4)")                                                   \
    XX(FRAME_FIND, "SELECT id FROM frames WHERE name = ?1")                                    \
    XX(FRAME_ADD, "INSERT INTO frames(name) VALUES(?1)")                                       \
    XX(FRAME_BY_ID, "SELECT name FROM frames WHERE id = ?1")                                   \
    XX(STACK_FIND, "SELECT id, frames FROM stacks WHERE hash = ?1")                            \
    XX(STACK_ADD, "INSERT INTO stacks(hash, frames) VALUES(?1, ?2)")                           \
    XX(STACK_BY_ID, "SELECT hash, frames FROM stacks WHERE id = ?1")                           \
    XX(PROFILE_ADD,                                                                            \
       "INSERT INTO profiles(service_id, type, instance_id, version, profile_id, time_ns, "    \
       "duration_ns, end_ns, period_ns, samples, value_ns, thread_cpu_ns, process_cpu_ns, "    \
       "has_counts, truncated_stacks, created_at_ns, nrows, rows, producer, cpu_scale, "       \
       "content_hash, declared_type) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "   \
       "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)")                              \
    XX(META_ADD, "UPDATE meta SET value = value + ?2 WHERE key = ?1")                          \
    XX(META_MAX, "UPDATE meta SET value = max(value, ?2) WHERE key = ?1")                      \
    XX(META_GET, "SELECT value FROM meta WHERE key = ?1")                                      \
    XX(SCAN, RT__SQL_SCAN_PROFILES("", ""))                                                  \
    /* the profiles of no hour (rt_profile_rollup_hour -1), by their own partial index */      \
    XX(SCAN_STRADDLE, RT__SQL_SCAN_PROFILES("INDEXED BY profiles_straddle ", "AND p.hour < 0 ")) \
    /* the profiles of no day, likewise */                                                     \
    XX(SCAN_STRADDLE_DAY, RT__SQL_SCAN_PROFILES("INDEXED BY profiles_straddle_day ",            \
                                                "AND p.day < 0 "))                             \
    XX(POLL_FIND, "SELECT id FROM polls WHERE instance_id = ?1 AND last_ns >= ?2 - ?3 "        \
                  "AND first_ns <= ?2 + ?3 ORDER BY last_ns DESC LIMIT 1")                     \
    XX(POLL_EXTEND, "UPDATE polls SET first_ns = min(first_ns, ?2), "                          \
                    "last_ns = max(last_ns, ?2) WHERE id = ?1")                                \
    XX(POLL_ADD, "INSERT INTO polls(instance_id, first_ns, last_ns) VALUES(?1, ?2, ?2)")       \
    XX(LIVENESS,                                                                               \
       "SELECT i.name, max(min(l.first_ns), ?2), min(max(l.last_ns), ?3 - 1) "                 \
       "FROM instances i JOIN polls l ON l.instance_id = i.id "                                \
       "WHERE i.service_id = (SELECT id FROM services WHERE name = ?1) "                       \
       "AND l.last_ns >= ?2 AND l.first_ns < ?3 GROUP BY i.id ORDER BY i.name")                \
    XX(DEPLOYS, "SELECT service, version, source, at_ns FROM deploys "                         \
                "WHERE (?1 IS NULL OR service = ?1) AND at_ns >= ?2 AND at_ns < ?3 "           \
                "ORDER BY at_ns, id")                                                          \
    XX(ISSUE_ADD, "INSERT INTO issues(service, title, started_at_ns, created_at_ns, source, "  \
                  "alert_key, alert) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) "                      \
                  "ON CONFLICT DO NOTHING")                                                    \
    XX(ISSUE_BY_KEY, "SELECT id FROM issues WHERE source = ?1 AND alert_key = ?2")             \
    XX(ISSUE_STATE_ADD, "INSERT INTO issue_states(issue_id, kind, at_ns, ended_at_ns) "        \
                        "VALUES(?1, ?2, ?3, ?4)")                                              \
    XX(ISSUE_ONE, RT__SQL_ISSUE_COLUMNS "WHERE i.id = ?1")                                     \
    XX(ISSUES_ALL, RT__SQL_ISSUE_COLUMNS "ORDER BY i.started_at_ns DESC, i.id DESC")           \
    XX(SERVICES,                                                                               \
       "SELECT s.name, s.profiling_enabled, s.last_upload_ns, "                                \
       "EXISTS(SELECT 1 FROM profiles p WHERE p.service_id = s.id AND p.type = 1), "           \
       "EXISTS(SELECT 1 FROM profiles p WHERE p.service_id = s.id AND p.type = 2) "            \
       "FROM services s ORDER BY s.name")                                                      \
    XX(INSTANCES,                                                                              \
       "SELECT s.name, i.name, i.runtime, i.runtime_version, i.sdk_version, i.version, "       \
       "i.status, i.first_seen_ns, i.last_seen_ns FROM instances i "                           \
       "JOIN services s ON s.id = i.service_id WHERE (?1 IS NULL OR s.name = ?1) "             \
       "ORDER BY s.name, i.name")                                                              \
    XX(RETAIN_PROFILES, "DELETE FROM profiles WHERE id IN "                                    \
                        "(SELECT id FROM profiles WHERE end_ns <= ?1 LIMIT ?2)")                \
    XX(RETAIN_POLLS, "DELETE FROM polls WHERE last_ns < ?1")                                   \
    /* rollups (sqlite_rollups.c, docs/internals/rollups.md) */                                \
    /* gen never goes back (a row deleted by a claim comes back with the time): a builder    \
     * holding an older gen cannot claim the block (unless the wall clock went back) */      \
    XX(ROLLUP_TOUCH, "INSERT INTO rollup_pending(service_id, type, level, block, gen) "         \
                     "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET "                    \
                     "gen = max(gen + 1, excluded.gen), retry_ns = 0")                          \
    XX(ROLLUP_DROP_BLOCK, "DELETE FROM rollup_blocks WHERE service_id = ?1 AND type = ?2 "      \
                          "AND level = ?3 AND block = ?4")                                      \
    XX(ROLLUP_DROP_GROUPS, "DELETE FROM rollups WHERE service_id = ?1 AND type = ?2 "           \
                           "AND level = ?3 AND block = ?4")                                     \
    XX(ROLLUP_PENDING, "SELECT s.name, r.type, r.level, r.block, r.gen FROM rollup_pending r "  \
                       "JOIN services s ON s.id = r.service_id "                                \
                       "WHERE ((r.level = 0 AND r.block < ?1) OR (r.level = 1 AND r.block < ?2)) " \
                       "AND r.retry_ns <= ?4 "                                                  \
                       "ORDER BY r.level, r.block, r.service_id, r.type LIMIT ?3")              \
    XX(ROLLUP_DEFER, "UPDATE rollup_pending SET retry_ns = ?6 WHERE service_id = "              \
                     "(SELECT id FROM services WHERE name = ?1) AND type = ?2 AND level = ?3 "  \
                     "AND block = ?4 AND gen = ?5")                                             \
    XX(ROLLUP_CLAIM, "DELETE FROM rollup_pending WHERE service_id = ?1 AND type = ?2 "          \
                     "AND level = ?3 AND block = ?4 AND gen = ?5")                              \
    XX(ROLLUP_BLOCK_ADD, "INSERT INTO rollup_blocks(service_id, type, level, block, "           \
                         "built_at_ns) VALUES(?1, ?2, ?3, ?4, ?5)")                             \
    XX(ROLLUP_GROUP_ADD, "INSERT INTO rollups(service_id, type, level, block, instance_id, "    \
                         "version, data) VALUES(?1, ?2, ?3, ?4, (SELECT id FROM instances "     \
                         "WHERE service_id = ?1 AND name = ?5), ?6, ?7)")                       \
    /* ?1 service, ?2 type, [?3, ?4) blocks of level ?7 (?5, ?6: the filter's, unused) */     \
    XX(ROLLUP_BLOCKS, "SELECT block FROM rollup_blocks WHERE service_id = "                     \
                      "(SELECT id FROM services WHERE name = ?1) AND type = ?2 AND level = ?7 "  \
                      "AND block >= ?3 AND block < ?4 ORDER BY block")                          \
    XX(ROLLUP_READ, "SELECT i.name, r.version, r.data FROM rollups r "                          \
                    "JOIN instances i ON i.id = r.instance_id WHERE r.service_id = "            \
                    "(SELECT id FROM services WHERE name = ?1) AND r.type = ?2 "                \
                    "AND r.level = ?7 AND r.block >= ?3 AND r.block < ?4 "                      \
                    "AND (?5 IS NULL OR r.version = ?5) AND (?6 IS NULL OR i.name = ?6) "       \
                    "ORDER BY r.block, r.id")                                                   \
    /* ?1 hours, ?2 days: blocks before them */                                                \
    XX(RETAIN_ROLLUPS, "DELETE FROM rollups WHERE (level = 0 AND block < ?1) "                  \
                       "OR (level = 1 AND block < ?2)")                                         \
    XX(RETAIN_ROLLUP_BLOCKS, "DELETE FROM rollup_blocks WHERE (level = 0 AND block < ?1) "      \
                             "OR (level = 1 AND block < ?2)")                                   \
    XX(RETAIN_ROLLUP_PENDING, "DELETE FROM rollup_pending WHERE (level = 0 AND block < ?1) "    \
                              "OR (level = 1 AND block < ?2)")                                  \
    XX(FREELIST, "PRAGMA freelist_count")                                                      \
    XX(VACUUM_STEP, "PRAGMA incremental_vacuum(2048)")                                         \
    XX(SERVICE_CONFIG_SET,                                                                     \
       "INSERT INTO services(name, created_at_ns, profiling_enabled, config) "                 \
       "VALUES(?1, ?2, ?3, json_object('type', ?4, 'sampling_interval_us', ?5, "               \
       "'upload_interval_s', ?6)) ON CONFLICT(name) DO UPDATE SET "                            \
       "profiling_enabled = excluded.profiling_enabled, config = excluded.config")             \
    XX(SERVICE_CONFIGS,                                                                        \
       "SELECT name, profiling_enabled, json_extract(c, '$.type'), "                           \
       "json_extract(c, '$.sampling_interval_us'), json_extract(c, '$.upload_interval_s') "    \
       "FROM (SELECT name, profiling_enabled, iif(json_valid(config), config, '{}') AS c "     \
       "FROM services) ORDER BY name")                                                         \
    XX(INSTANCE_POLL,                                                                          \
       "INSERT INTO instances(service_id, name, runtime, runtime_version, sdk_version, "       \
       "version, status, interval_us, poll_interval_s, first_seen_ns, last_seen_ns) "         \
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) "                                 \
       "ON CONFLICT(service_id, name) DO UPDATE SET "                                          \
       "runtime = coalesce(excluded.runtime, runtime), "                                       \
       "runtime_version = coalesce(excluded.runtime_version, runtime_version), "               \
       "sdk_version = coalesce(excluded.sdk_version, sdk_version), "                           \
       "version = coalesce(excluded.version, version), "                                       \
       "status = coalesce(excluded.status, status), "                                          \
       "interval_us = excluded.interval_us, poll_interval_s = excluded.poll_interval_s, "      \
       "first_seen_ns = min(first_seen_ns, excluded.first_seen_ns), "                          \
       "last_seen_ns = max(last_seen_ns, excluded.last_seen_ns) RETURNING id")                 \
    XX(INSTANCE_STATUS,                                                                        \
       "SELECT s.name, i.name, i.status, i.interval_us, i.poll_interval_s, i.last_seen_ns "    \
       "FROM instances i JOIN services s ON s.id = i.service_id "                              \
       "WHERE (?1 IS NULL OR s.name = ?1) ORDER BY s.name, i.name")                            \
    XX(KEY_ADD, "INSERT INTO keys(scope, service, name, hash, created_at_ns, revoked_at_ns) "  \
                "VALUES(?1, ?2, ?3, ?4, ?5, nullif(?6, 0))")                                   \
    XX(KEYS, "SELECT id, scope, service, name, hash, created_at_ns, "                          \
             "coalesce(revoked_at_ns, 0) FROM keys ORDER BY id")                               \
    XX(KEY_REVOKE, "UPDATE keys SET revoked_at_ns = ?2 "                                       \
                   "WHERE id = ?1 AND revoked_at_ns IS NULL")                                  \
    XX(AUDIT_ADD, "INSERT INTO audit(at_ns, actor, action, target, detail) "                   \
                  "VALUES(?1, ?2, ?3, ?4, ?5)")                                                \
    XX(AUDIT, "SELECT at_ns, actor, action, target, detail FROM audit "                        \
              "WHERE at_ns >= ?1 AND at_ns < ?2 ORDER BY at_ns DESC, id DESC LIMIT ?3")

enum rt__sql {
#define XX(name, sql) RT__SQL_##name,
    RT__SQL_MAP(XX)
#undef XX
    RT__SQL_COUNT
};

/* One SQLite connection, used by one thread at a time. */
struct rt__sqlite_conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[RT__SQL_COUNT]; /* prepared on first use */
    bool sync_normal;                   /* synchronous is NORMAL (polls) rather than FULL */
    struct rt__sqlite_conn *next;       /* next idle reader in the pool */
};

/* The backend's state (rt_store.be). */
struct rt__sqlite {
    char *path;                    /* database file */
    pthread_mutex_t wlock;         /* guards w: one write transaction at a time */
    struct rt__sqlite_conn *w;     /* the writer */
    pthread_mutex_t glock;         /* guards the group commit queue: */
    pthread_cond_t gdone;          /* a group was committed (or failed) */
    struct rt__sqlite_put *ghead, *gtail; /* uploads waiting for a commit */
    bool gleader;                  /* a caller is committing a group */
    pthread_mutex_t plock;         /* guards idle and nidle */
    struct rt__sqlite_conn *idle;  /* idle readers */
    size_t nidle;
};

/* The SQL of schema version 1 (migration 0 -> 1, run with auto_vacuum already set; it does
 * not set user_version). Exported so that tests can build a version 1 database. */
extern const char rt__sqlite_schema_v1[];

/* The statement id on c, reset and with bindings cleared; NULL with err set on failure. */
sqlite3_stmt *rt__sqlite_stmt(struct rt__sqlite_conn *c, enum rt__sql id, struct rt_error *err);

/* Sets err from c's last error for result rc of doing `what`; returns RT_EDISKFULL for
 * SQLITE_FULL, else RT_EIO. */
int rt__sqlite_fail(struct rt__sqlite_conn *c, int rc, const char *what, struct rt_error *err);

/* Runs statement id to completion (no rows expected). */
int rt__sqlite_run(struct rt__sqlite_conn *c, enum rt__sql id, struct rt_error *err);

/* Binds a string or NULL. */
int rt__sqlite_bind_text(sqlite3_stmt *st, int i, const char *s);

/* Column text or NULL. */
const char *rt__sqlite_text(sqlite3_stmt *st, int i);

/* Takes the writer lock and begins a write transaction; durable = synchronous FULL (else
 * NORMAL: the commit reaches the WAL without fsync, and the next durable commit covers it).
 * On error the lock is released. */
int rt__sqlite_begin(struct rt__sqlite *db, bool durable, struct rt_error *err);

/* Commits and releases the writer lock; on failure rolls back first. */
int rt__sqlite_commit(struct rt__sqlite *db, struct rt_error *err);

/* Rolls back (if a transaction is open) and releases the writer lock. */
void rt__sqlite_rollback(struct rt__sqlite *db);

/* A reader connection from the pool (opened when none is idle); NULL with err on failure. */
struct rt__sqlite_conn *rt__sqlite_reader(struct rt__sqlite *db, struct rt_error *err);

/* Returns a reader to the pool. */
void rt__sqlite_release(struct rt__sqlite *db, struct rt__sqlite_conn *c);

/* Starts a read: a reader from the pool into *c and statement id on it into *st. On failure
 * returns a negative RT_E* (err->code) with nothing to undo: the reader is back in the pool. */
int rt__sqlite_read_begin(struct rt__sqlite *db, enum rt__sql id, struct rt__sqlite_conn **c,
                          sqlite3_stmt **st, struct rt_error *err);

/* Ends a read begun by rt__sqlite_read_begin: resets st and returns c to the pool. */
void rt__sqlite_read_end(struct rt__sqlite *db, struct rt__sqlite_conn *c, sqlite3_stmt *st);

/* One parameter of a statement: an integer, a string (NULL binds NULL) or a blob. */
struct rt__sqlite_arg {
    enum { RT__SQLITE_ARG_I64, RT__SQLITE_ARG_TEXT, RT__SQLITE_ARG_BLOB } kind;
    const void *ptr; /* text or blob */
    int64_t i64;     /* the integer, or the blob's length */
};
#define RT__SQLITE_I64(v) ((struct rt__sqlite_arg){RT__SQLITE_ARG_I64, NULL, (v)})
#define RT__SQLITE_TEXT(s) ((struct rt__sqlite_arg){RT__SQLITE_ARG_TEXT, (s), 0})
#define RT__SQLITE_BLOB(p, n) ((struct rt__sqlite_arg){RT__SQLITE_ARG_BLOB, (p), (int64_t)(n)})

/* Runs write statement id with args bound as ?1..?n on the writer, inside the transaction
 * the caller holds (rt__sqlite_begin). what names it in an error ("storing a deploy").
 * Returns 0 or a negative RT_E* (the caller rolls back). */
int rt__sqlite_step_write(struct rt__sqlite *db, enum rt__sql id,
                          const struct rt__sqlite_arg *args, size_t nargs, const char *what,
                          struct rt_error *err);

/* One durable write of its own: a transaction holding rt__sqlite_step_write, committed.
 * Returns 0 (durable) or a negative RT_E* (rolled back). */
int rt__sqlite_write_one(struct rt__sqlite *db, enum rt__sql id,
                         const struct rt__sqlite_arg *args, size_t nargs, const char *what,
                         struct rt_error *err);

/* A scan's row reader: turns the row into the store's struct and calls the scan's callback;
 * a non-zero return stops the scan. */
typedef int (*rt__sqlite_row_fn)(void *ud, sqlite3_stmt *st, struct rt_error *err);

/* Every read the store's scans make: statement id on a reader with args bound as ?1..?n, then
 * row(ud, st, err) per row. what names the scan in an error ("scanning deploys"). Returns 0,
 * row's non-zero value (the scan stops there), or a negative RT_E*. */
int rt__sqlite_each_row(struct rt__sqlite *db, enum rt__sql id, const struct rt__sqlite_arg *args,
                        size_t nargs, rt__sqlite_row_fn row, void *ud, const char *what,
                        struct rt_error *err);

/* ---- Group commit (sqlite_group.c) ----
 * Uploads that arrive while a commit runs wait for the next one and share it: one write
 * transaction and one fsync for all of them, and each caller returns only after the commit
 * that holds its profiles (a 2xx still means durable, DESIGN §4). No upload waits for company:
 * a group is whatever queued during the previous commit, at most RT__SQLITE_GROUP_MAX uploads
 * (and RT__SQLITE_GROUP_PROFILES profiles past the first upload). */
#define RT__SQLITE_GROUP_MAX 64
#define RT__SQLITE_GROUP_PROFILES 4096

/* One rt_store_put_profiles call waiting in the group queue. */
struct rt__sqlite_put {
    struct rt_profile *const *ps;
    size_t n;
    struct rt_store_put_result *res;
    int rc;                      /* its outcome, set by the leader */
    struct rt_error err;
    bool done;
    struct rt__sqlite_put *next; /* queue */
};

/* Stores every profile of reqs in one write transaction: all or none. Sets err for the group
 * (the caller retries a failed group's uploads one by one, so that one bad upload fails
 * alone). */
int rt__sqlite_put_group(struct rt_store *s, struct rt__sqlite_put *const *reqs, size_t nreq,
                         struct rt_error *err);

/* The queue's lock, condition and state; destroy only with no caller waiting. */
void rt__sqlite_group_init(struct rt__sqlite *db);
void rt__sqlite_group_destroy(struct rt__sqlite *db);

/* The operations of sqlite_group.c, sqlite_profiles.c and sqlite_meta.c. */
int rt__sqlite_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                            struct rt_store_put_result *res, struct rt_error *err);
int rt__sqlite_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                    void *ud, struct rt_error *err);
int rt__sqlite_load_stack(struct rt_store *s, uint32_t id, uint32_t *frames, size_t cap,
                          size_t *depth, struct rt_error *err);
int rt__sqlite_load_frame(struct rt_store *s, uint32_t id, struct rt_arena *a, const char **name,
                          struct rt_error *err);
int rt__sqlite_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted,
                      struct rt_error *err);
int rt__sqlite_put_poll(struct rt_store *s, const char *service, const char *instance,
                        int64_t at_ns, struct rt_error *err);
int rt__sqlite_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                             int64_t to_ns, rt_store_liveness_cb cb, void *ud,
                             struct rt_error *err);
int rt__sqlite_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err);
int rt__sqlite_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                            int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err);
int rt__sqlite_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                         struct rt_error *err);
int rt__sqlite_find_alert_issue(struct rt_store *s, const char *source, const char *alert_key,
                                int64_t *id, struct rt_error *err);
int rt__sqlite_put_issue_state(struct rt_store *s, int64_t id, enum rt_issue_state kind,
                               int64_t at_ns, int64_t ended_at_ns, struct rt_error *err);
int rt__sqlite_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                           struct rt_error *err);
int rt__sqlite_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                             struct rt_error *err);
int rt__sqlite_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                              void *ud, struct rt_error *err);

/* Reads the rows of SCAN or SCAN_STRADDLE statement st (bound) into cb, skipping the profiles
 * of no hour already in *seen (a u64 set of profile ids; NULL: none skipped) and adding those
 * it passes. what names the scan in an error. Returns 0, cb's value, or a negative RT_E*. */
struct rt_u64map;
int rt__sqlite_scan_rows(struct rt__sqlite_conn *c, sqlite3_stmt *st, rt_store_profile_cb cb,
                         void *ud, struct rt_u64map *seen, struct rt_error *err);
/* The operations of sqlite_rollups.c (docs/internals/rollups.md). */
int rt__sqlite_scan_rolled(struct rt_store *s, const struct rt_store_filter *f,
                           const struct rt_store_window_reader *r, void *ud, struct rt_error *err);
int rt__sqlite_scan_rollup_pending(struct rt_store *s, int64_t end_ns, int64_t now_ns,
                                   size_t limit,
                                   int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                                   struct rt_error *err);
int rt__sqlite_defer_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                            int64_t retry_ns, struct rt_error *err);
int rt__sqlite_put_rollup(struct rt_store *s, const struct rt_rollup_block *b,
                          const struct rt_rollup_group *g, size_t n, struct rt_error *err);
/* Inside a write transaction: a profile of service_id was stored into block (>= 0) of level:
 * the block waits for its rollup again, and a rollup built before (it closed) is dropped. */
int rt__sqlite_rollup_touch(struct rt__sqlite_conn *w, int64_t service_id, int type, int level,
                            int64_t block, int64_t now_ns, struct rt_error *err);
/* Drops the rollups of blocks starting before cutoff_ns, in a transaction of its own. */
int rt__sqlite_rollup_retain(struct rt__sqlite *db, int64_t cutoff_ns, struct rt_error *err);
/* The operations of sqlite_control.c. */
int rt__sqlite_set_service_config(struct rt_store *s, const char *name,
                                  const struct rt_service_config *cfg, struct rt_error *err);
int rt__sqlite_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                    struct rt_error *err);
int rt__sqlite_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                         struct rt_error *err);
int rt__sqlite_scan_instance_status(struct rt_store *s, const char *service,
                                    rt_store_instance_status_cb cb, void *ud,
                                    struct rt_error *err);
int rt__sqlite_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                       struct rt_error *err);
int rt__sqlite_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err);
int rt__sqlite_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err);
int rt__sqlite_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err);
int rt__sqlite_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                          rt_store_audit_cb cb, void *ud, struct rt_error *err);

/* Registers service (if new) and returns its id in *id; inside a write transaction. */
int rt__sqlite_service_id(struct rt__sqlite_conn *w, const char *service, int64_t now_ns,
                          int64_t *id, struct rt_error *err);

/* Registers or refreshes an instance (NULL fields keep their stored values) and returns its
 * id; inside a write transaction. */
int rt__sqlite_instance_id(struct rt__sqlite_conn *w, int64_t service_id, const char *instance,
                           const struct rt_profile *p, int64_t seen_ns, int64_t *id,
                           struct rt_error *err);

/* Records a poll at at_ns, of the poll interval poll_interval_s (s, 0 = unknown), as liveness
 * of instance_id: extends the instance's segment that at_ns falls within
 * rt_store_poll_gap_ns(poll_interval_s) of, or starts one; inside a write transaction. */
int rt__sqlite_record_poll(struct rt__sqlite_conn *w, int64_t instance_id, int64_t at_ns,
                           int64_t poll_interval_s, struct rt_error *err);

/* Test hook: caps the database at its current size so that any growth fails with SQLITE_FULL
 * (or lifts the cap with on = false). */
int rt__sqlite_test_cap_size(struct rt_store *s, bool on, struct rt_error *err);

#endif
