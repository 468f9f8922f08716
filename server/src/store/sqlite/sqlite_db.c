/* SQLite backend plumbing: opening the database (mode 0600, WAL, synchronous=FULL), the schema
 * and its migrations (PRAGMA user_version), the writer and the reader pool, statements and
 * error mapping, disk use and the profile count. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlite_int.h"

#define SCHEMA_VERSION 7
#define BUSY_TIMEOUT_MS 10000
#define MAX_IDLE_READERS 8

static const char *const sql_text[RT__SQL_COUNT] = {
#define XX(name, sql) [RT__SQL_##name] = sql,
    RT__SQL_MAP(XX)
#undef XX
};

/* Schema version 1 (docs/internals/store.md explains each table). */
const char rt__sqlite_schema_v1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO meta VALUES('profile_count', 0), ('max_duration_ns', 1);"
    "CREATE TABLE services("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " profiling_enabled INTEGER NOT NULL DEFAULT 0, config TEXT,"
    " created_at_ns INTEGER NOT NULL, last_upload_ns INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE instances("
    " id INTEGER PRIMARY KEY, service_id INTEGER NOT NULL REFERENCES services(id),"
    " name TEXT NOT NULL, runtime TEXT, runtime_version TEXT, sdk_version TEXT, version TEXT,"
    " status TEXT, first_seen_ns INTEGER NOT NULL, last_seen_ns INTEGER NOT NULL,"
    " UNIQUE(service_id, name));"
    "CREATE TABLE service_versions("
    " service_id INTEGER NOT NULL REFERENCES services(id), version TEXT NOT NULL,"
    " first_seen_ns INTEGER NOT NULL, PRIMARY KEY(service_id, version)) WITHOUT ROWID;"
    "CREATE TABLE frames(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, frames BLOB NOT NULL);"
    "CREATE INDEX stacks_hash ON stacks(hash);"
    "CREATE TABLE profiles("
    " id INTEGER PRIMARY KEY, service_id INTEGER NOT NULL REFERENCES services(id),"
    " type INTEGER NOT NULL, instance_id INTEGER NOT NULL REFERENCES instances(id),"
    " version TEXT, profile_id TEXT, time_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, period_ns INTEGER NOT NULL, samples REAL NOT NULL,"
    " value_ns INTEGER NOT NULL, thread_cpu_ns INTEGER NOT NULL,"
    " process_cpu_ns INTEGER NOT NULL, has_counts INTEGER NOT NULL,"
    " truncated_stacks INTEGER NOT NULL, created_at_ns INTEGER NOT NULL,"
    " nrows INTEGER NOT NULL, rows BLOB NOT NULL);"
    "CREATE INDEX profiles_window ON profiles(service_id, type, time_ns);"
    "CREATE INDEX profiles_end ON profiles(end_ns);"
    "CREATE UNIQUE INDEX profiles_dedup ON profiles(profile_id, type)"
    " WHERE profile_id IS NOT NULL;"
    "CREATE TABLE polls("
    " id INTEGER PRIMARY KEY, instance_id INTEGER NOT NULL REFERENCES instances(id),"
    " first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL);"
    "CREATE INDEX polls_instance ON polls(instance_id, last_ns);"
    "CREATE INDEX polls_last ON polls(last_ns);"
    "CREATE TABLE deploys("
    " id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL,"
    " at_ns INTEGER NOT NULL,"
    " source TEXT NOT NULL CHECK (source IN ('declared', 'observed')));"
    "CREATE INDEX deploys_service ON deploys(service, at_ns);"
    "CREATE INDEX deploys_at ON deploys(at_ns);"
    "CREATE TABLE issues("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, title TEXT NOT NULL,"
    " started_at_ns INTEGER NOT NULL, created_at_ns INTEGER NOT NULL);";

/* Version 1 -> 2: the control plane's state. Instances gain the sampling interval the SDK
 * reports and the poll interval it was told; API keys (hashes only) and the audit log. */
static const char migrate_v2[] =
    "ALTER TABLE instances ADD COLUMN interval_us INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE instances ADD COLUMN poll_interval_s INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE keys("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " scope TEXT NOT NULL CHECK (scope IN ('admin', 'read', 'ingest')),"
    " service TEXT, name TEXT, hash BLOB NOT NULL CHECK (length(hash) = 32),"
    " created_at_ns INTEGER NOT NULL, revoked_at_ns INTEGER);"
    "CREATE TABLE audit("
    " id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL, actor TEXT NOT NULL,"
    " action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT);"
    "CREATE INDEX audit_at ON audit(at_ns);";

/* Version 2 -> 3: each profile records who sampled it (rt/producer.h) and the factor that
 * capacity scales its CPU by (DESIGN §7). Profiles stored before keep an unknown producer and
 * a factor of 1: their CPU is compared with the OS figure they carry, never rescaled after
 * the fact (docs/decisions.md). */
static const char migrate_v3[] =
    "ALTER TABLE profiles ADD COLUMN producer TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE profiles ADD COLUMN cpu_scale REAL NOT NULL DEFAULT 1;";

/* Version 3 -> 4: deduplication scoped to (service, instance, type, profile_id), with each
 * profile's content hash to tell a retry from another profile under the same id
 * (docs/decisions.md). An empty profile_id is no id (before, one of them made every later
 * upload of its type a "duplicate"); rows stored before read a hash of 0, "not known". */
static const char migrate_v4[] =
    "UPDATE profiles SET profile_id = NULL WHERE profile_id = '';"
    "DROP INDEX profiles_dedup;"
    "CREATE UNIQUE INDEX profiles_dedup ON profiles(service_id, instance_id, type, profile_id)"
    " WHERE profile_id IS NOT NULL;"
    "ALTER TABLE profiles ADD COLUMN content_hash INTEGER NOT NULL DEFAULT 0;";

/* Version 4 -> 5: the type a profile's producer declared where RootTrace stored another, by
 * what was measured (DESIGN §12: py-spy's "cpu" is wall). 0: as declared. */
static const char migrate_v5[] =
    "ALTER TABLE profiles ADD COLUMN declared_type INTEGER NOT NULL DEFAULT 0;";

/* Version 5 -> 6: issues from alerts (DESIGN §13). An issue keeps its source, its alert
 * episode's key (one issue per key) and the alert's details; what happens to it afterwards
 * (notifications, resolved, an end set by hand) is a log of states. Issues stored before are
 * the API's, open. */
static const char migrate_v6[] =
    "ALTER TABLE issues ADD COLUMN source TEXT NOT NULL DEFAULT 'api';"
    "ALTER TABLE issues ADD COLUMN alert_key TEXT;"
    "ALTER TABLE issues ADD COLUMN alert TEXT;"
    "CREATE UNIQUE INDEX issues_alert ON issues(source, alert_key) WHERE alert_key IS NOT NULL;"
    "CREATE TABLE issue_states("
    " id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " at_ns INTEGER NOT NULL, ended_at_ns INTEGER NOT NULL);"
    "CREATE INDEX issue_states_issue ON issue_states(issue_id, kind, id);";

/* Version 6 -> 7: rollups (docs/internals/rollups.md). Each profile has the hour and the UTC
 * day it lies wholly inside (rt_profile_rollup_block's rule, -1 for none) as virtual columns:
 * computed when read, so the migration rewrites no row of a big store. Those of no hour, and
 * of no day, get an index each, so that a window read through rollups finds them without
 * reading the others. A block waits in rollup_pending (gen grows with every store into it;
 * retry_ns defers one that failed to build) until its rollup is built into rollup_blocks and
 * rollups; every block already stored waits, so an upgraded store rolls its history up. */
#define ROLLUP_BLOCK_SQL(len)                                                                  \
    "CASE WHEN duration_ns > 0 AND time_ns >= 0 AND duration_ns <= " len " - time_ns % " len  \
    " THEN time_ns / " len " ELSE -1 END"
static const char migrate_v7[] =
    "ALTER TABLE profiles ADD COLUMN hour INTEGER GENERATED ALWAYS AS ("
    ROLLUP_BLOCK_SQL("3600000000000") ") VIRTUAL;"
    "ALTER TABLE profiles ADD COLUMN day INTEGER GENERATED ALWAYS AS ("
    ROLLUP_BLOCK_SQL("86400000000000") ") VIRTUAL;"
    "CREATE INDEX profiles_straddle ON profiles(service_id, type, time_ns) WHERE hour < 0;"
    "CREATE INDEX profiles_straddle_day ON profiles(service_id, type, time_ns) WHERE day < 0;"
    "CREATE TABLE rollup_pending("
    " service_id INTEGER NOT NULL, type INTEGER NOT NULL, level INTEGER NOT NULL,"
    " block INTEGER NOT NULL, gen INTEGER NOT NULL, retry_ns INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(service_id, type, level, block)) WITHOUT ROWID;"
    "CREATE INDEX rollup_pending_block ON rollup_pending(level, block);"
    "INSERT INTO rollup_pending(service_id, type, level, block, gen)"
    " SELECT service_id, type, 0, hour, 1 FROM profiles WHERE hour >= 0"
    " GROUP BY service_id, type, hour;"
    "INSERT INTO rollup_pending(service_id, type, level, block, gen)"
    " SELECT service_id, type, 1, day, 1 FROM profiles WHERE day >= 0"
    " GROUP BY service_id, type, day;"
    "CREATE TABLE rollup_blocks("
    " service_id INTEGER NOT NULL, type INTEGER NOT NULL, level INTEGER NOT NULL,"
    " block INTEGER NOT NULL, built_at_ns INTEGER NOT NULL,"
    " PRIMARY KEY(service_id, type, level, block)) WITHOUT ROWID;"
    "CREATE TABLE rollups("
    " id INTEGER PRIMARY KEY, service_id INTEGER NOT NULL, type INTEGER NOT NULL,"
    " level INTEGER NOT NULL, block INTEGER NOT NULL,"
    " instance_id INTEGER NOT NULL REFERENCES instances(id), version TEXT, data BLOB NOT NULL);"
    "CREATE INDEX rollups_block ON rollups(service_id, type, level, block);";

/* Migrations: migrations[v] takes a database from version v to v + 1. */
static const char *const migrations[SCHEMA_VERSION] = {rt__sqlite_schema_v1, migrate_v2,
                                                       migrate_v3, migrate_v4, migrate_v5,
                                                       migrate_v6, migrate_v7};

int rt__sqlite_fail(struct rt__sqlite_conn *c, int rc, const char *what, struct rt_error *err)
{
    int code = (rc & 0xff) == SQLITE_FULL ? RT_EDISKFULL : RT_EIO;
    const char *msg = c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
    return rt_error_set(err, code, "%s: %s", what, msg);
}

sqlite3_stmt *rt__sqlite_stmt(struct rt__sqlite_conn *c, enum rt__sql id, struct rt_error *err)
{
    sqlite3_stmt *st = c->stmts[id];
    if (!st) {
        int rc = sqlite3_prepare_v3(c->db, sql_text[id], -1, SQLITE_PREPARE_PERSISTENT, &st,
                                    NULL);
        if (rc != SQLITE_OK) {
            rt__sqlite_fail(c, rc, "preparing a statement", err);
            return NULL;
        }
        c->stmts[id] = st;
        return st;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

int rt__sqlite_run(struct rt__sqlite_conn *c, enum rt__sql id, struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(c, id, err);
    if (!st)
        return err ? err->code : RT_EIO;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return rt__sqlite_fail(c, rc, sql_text[id], err);
    return 0;
}

int rt__sqlite_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

const char *rt__sqlite_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* Runs SQL text (several statements allowed). */
static int exec(struct rt__sqlite_conn *c, const char *sql, struct rt_error *err)
{
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rt__sqlite_fail(c, rc, "running SQL", err);
    return 0;
}

/* Reads an integer PRAGMA or one-value query into *v. */
static int query_int(struct rt__sqlite_conn *c, const char *sql, int64_t *v, struct rt_error *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rt__sqlite_fail(c, rc, sql, err);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0);
    int ret = rc == SQLITE_ROW ? 0 : rt__sqlite_fail(c, rc, sql, err);
    sqlite3_finalize(st);
    return ret;
}

static void conn_close(struct rt__sqlite_conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < RT__SQL_COUNT; i++)
        sqlite3_finalize(c->stmts[i]);
    sqlite3_close(c->db);
    free(c);
}

/* Opens a connection with the settings every connection shares. */
static struct rt__sqlite_conn *conn_open(const char *path, bool reader, struct rt_error *err)
{
    struct rt__sqlite_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                SQLITE_OPEN_EXRESCODE;
    int rc = sqlite3_open_v2(path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        rt_error_set(err, RT_EIO, "cannot open %s: %s", path,
                     c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto out_close;
    }
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    const char *pragmas = reader ? "PRAGMA query_only = 1; PRAGMA cache_size = -16384;"
                                 : "PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384;"
                                   "PRAGMA temp_store = MEMORY;";
    if (exec(c, pragmas, err))
        goto out_close;
    return c;

out_close:
    conn_close(c);
    return NULL;
}

/* Creates the database file with mode 0600 unless it exists. */
static int create_file(const char *path, struct rt_error *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        fchmod(fd, 0600);
        close(fd);
        return 0;
    }
    if (errno == EEXIST)
        return 0;
    return rt_error_set(err, RT_EIO, "cannot create %s: %s", path, strerror(errno));
}

/* Brings the schema to SCHEMA_VERSION, one migration per transaction. */
static int migrate(struct rt__sqlite_conn *w, struct rt_error *err)
{
    int64_t v;
    if (query_int(w, "PRAGMA user_version", &v, err))
        return err->code;
    if (v > SCHEMA_VERSION)
        return rt_error_set(err, RT_EIO,
                            "database schema version %lld is newer than this roottrace's (%d)",
                            (long long)v, SCHEMA_VERSION);
    if (v == 0) {
        /* Only effective before the first table exists; lets retention give pages back. */
        if (exec(w, "PRAGMA auto_vacuum = INCREMENTAL", err))
            return err->code;
    }
    while (v < SCHEMA_VERSION) {
        if (exec(w, "BEGIN IMMEDIATE", err))
            return err->code;
        /* another process may have migrated meanwhile */
        if (query_int(w, "PRAGMA user_version", &v, err))
            goto out_rollback;
        if (v >= SCHEMA_VERSION)
            break;
        char setv[64];
        snprintf(setv, sizeof(setv), "PRAGMA user_version = %d", (int)v + 1);
        if (exec(w, migrations[v], err) || exec(w, setv, err))
            goto out_rollback;
        if (exec(w, "COMMIT", err))
            goto out_rollback;
        v++;
    }
    if (!sqlite3_get_autocommit(w->db) && exec(w, "COMMIT", err))
        return err->code;
    return 0;

out_rollback:
    sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    return err->code;
}

/* Opens the writer: WAL, synchronous=FULL, schema. */
static struct rt__sqlite_conn *open_writer(const char *path, struct rt_error *err)
{
    struct rt__sqlite_conn *w = conn_open(path, false, err);
    if (!w)
        return NULL;
    if (migrate(w, err))
        goto out_close;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(w->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        rt__sqlite_fail(w, rc, "setting WAL mode", err);
        goto out_close;
    }
    rc = sqlite3_step(st);
    bool wal = rc == SQLITE_ROW &&
               sqlite3_stricmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
    sqlite3_finalize(st);
    if (!wal) {
        rt__sqlite_fail(w, rc, "setting WAL mode", err);
        goto out_close;
    }
    if (exec(w, "PRAGMA synchronous = FULL; PRAGMA journal_size_limit = 67108864;", err))
        goto out_close;
    return w;

out_close:
    conn_close(w);
    return NULL;
}

struct rt__sqlite_conn *rt__sqlite_reader(struct rt__sqlite *db, struct rt_error *err)
{
    pthread_mutex_lock(&db->plock);
    struct rt__sqlite_conn *c = db->idle;
    if (c) {
        db->idle = c->next;
        db->nidle--;
    }
    pthread_mutex_unlock(&db->plock);
    if (c) {
        c->next = NULL;
        return c;
    }
    return conn_open(db->path, true, err);
}

void rt__sqlite_release(struct rt__sqlite *db, struct rt__sqlite_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&db->plock);
    bool keep = db->nidle < MAX_IDLE_READERS;
    if (keep) {
        c->next = db->idle;
        db->idle = c;
        db->nidle++;
    }
    pthread_mutex_unlock(&db->plock);
    if (!keep)
        conn_close(c);
}

int rt__sqlite_read_begin(struct rt__sqlite *db, enum rt__sql id, struct rt__sqlite_conn **c,
                          sqlite3_stmt **st, struct rt_error *err)
{
    struct rt__sqlite_conn *r = rt__sqlite_reader(db, err);
    if (!r)
        goto out_fail;
    sqlite3_stmt *s = rt__sqlite_stmt(r, id, err);
    if (!s)
        goto out_release;
    *c = r;
    *st = s;
    return 0;

out_release:
    rt__sqlite_release(db, r);
out_fail:
    return err->code ? err->code : RT_EIO;
}

void rt__sqlite_read_end(struct rt__sqlite *db, struct rt__sqlite_conn *c, sqlite3_stmt *st)
{
    sqlite3_reset(st);
    rt__sqlite_release(db, c);
}

static void bind_args(sqlite3_stmt *st, const struct rt__sqlite_arg *args, size_t nargs)
{
    for (size_t i = 0; i < nargs; i++) {
        int k = (int)i + 1;
        if (args[i].kind == RT__SQLITE_ARG_TEXT)
            rt__sqlite_bind_text(st, k, args[i].ptr);
        else if (args[i].kind == RT__SQLITE_ARG_BLOB)
            sqlite3_bind_blob(st, k, args[i].ptr, (int)args[i].i64, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, k, args[i].i64);
    }
}

int rt__sqlite_step_write(struct rt__sqlite *db, enum rt__sql id,
                          const struct rt__sqlite_arg *args, size_t nargs, const char *what,
                          struct rt_error *err)
{
    sqlite3_stmt *st = rt__sqlite_stmt(db->w, id, err);
    if (!st)
        return err->code ? err->code : RT_EIO;
    bind_args(st, args, nargs);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rt__sqlite_fail(db->w, rc, what, err);
}

int rt__sqlite_write_one(struct rt__sqlite *db, enum rt__sql id,
                         const struct rt__sqlite_arg *args, size_t nargs, const char *what,
                         struct rt_error *err)
{
    if (rt__sqlite_begin(db, true, err))
        return err->code;
    if (rt__sqlite_step_write(db, id, args, nargs, what, err)) {
        rt__sqlite_rollback(db);
        return err->code;
    }
    return rt__sqlite_commit(db, err);
}

int rt__sqlite_each_row(struct rt__sqlite *db, enum rt__sql id, const struct rt__sqlite_arg *args,
                        size_t nargs, rt__sqlite_row_fn row, void *ud, const char *what,
                        struct rt_error *err)
{
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, id, &c, &st, err))
        return err->code;
    bind_args(st, args, nargs);
    int ret = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((ret = row(ud, st, err)))
            break;
    if (!ret && rc != SQLITE_DONE)
        ret = rt__sqlite_fail(c, rc, what, err);
    rt__sqlite_read_end(db, c, st);
    return ret;
}

int rt__sqlite_begin(struct rt__sqlite *db, bool durable, struct rt_error *err)
{
    pthread_mutex_lock(&db->wlock);
    struct rt__sqlite_conn *w = db->w;
    if (w->sync_normal == durable) {
        if (rt__sqlite_run(w, durable ? RT__SQL_SYNC_FULL : RT__SQL_SYNC_NORMAL, err))
            goto out_unlock;
        w->sync_normal = !durable;
    }
    if (rt__sqlite_run(w, RT__SQL_BEGIN_WRITE, err))
        goto out_unlock;
    return 0;

out_unlock:
    pthread_mutex_unlock(&db->wlock);
    return err ? err->code : RT_EIO;
}

void rt__sqlite_rollback(struct rt__sqlite *db)
{
    struct rt__sqlite_conn *w = db->w;
    /* SQLite may have rolled back by itself (e.g. on SQLITE_FULL) */
    if (!sqlite3_get_autocommit(w->db))
        rt__sqlite_run(w, RT__SQL_ROLLBACK, NULL);
    pthread_mutex_unlock(&db->wlock);
}

int rt__sqlite_commit(struct rt__sqlite *db, struct rt_error *err)
{
    int rc = rt__sqlite_run(db->w, RT__SQL_COMMIT, err);
    if (rc) {
        rt__sqlite_rollback(db);
        return rc;
    }
    pthread_mutex_unlock(&db->wlock);
    return 0;
}

static void sqlite_free(struct rt_store *s)
{
    struct rt__sqlite *db = s->be;
    if (!db)
        return;
    while (db->idle) {
        struct rt__sqlite_conn *c = db->idle;
        db->idle = c->next;
        conn_close(c);
    }
    conn_close(db->w);
    pthread_mutex_destroy(&db->plock);
    pthread_mutex_destroy(&db->wlock);
    rt__sqlite_group_destroy(db);
    free(db->path);
    free(db);
    s->be = NULL;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static int64_t sqlite_disk_bytes(struct rt_store *s)
{
    struct rt__sqlite *db = s->be;
    size_t n = strlen(db->path) + 5;
    char *wal = malloc(n);
    if (!wal)
        return -1;
    snprintf(wal, n, "%s-wal", db->path);
    int64_t total = file_size(db->path) + file_size(wal);
    free(wal);
    return total;
}

static int64_t sqlite_profile_count(struct rt_store *s)
{
    struct rt__sqlite *db = s->be;
    struct rt_error err;
    struct rt__sqlite_conn *c;
    sqlite3_stmt *st;
    if (rt__sqlite_read_begin(db, RT__SQL_META_GET, &c, &st, &err))
        return -1;
    int64_t count = -1;
    sqlite3_bind_text(st, 1, "profile_count", -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        count = sqlite3_column_int64(st, 0);
    rt__sqlite_read_end(db, c, st);
    return count;
}

int rt__sqlite_test_cap_size(struct rt_store *s, bool on, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    pthread_mutex_lock(&db->wlock);
    int64_t pages = 0;
    int rc = query_int(db->w, "PRAGMA page_count", &pages, err);
    if (!rc) {
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld",
                 on ? (long long)pages : 1073741823LL);
        rc = query_int(db->w, sql, &pages, err);
    }
    pthread_mutex_unlock(&db->wlock);
    return rc;
}

static const struct rt__store_ops sqlite_ops = {
    .name = "sqlite",
    .free = sqlite_free,
    .put_profiles = rt__sqlite_put_profiles,
    .scan = rt__sqlite_scan,
    .load_stack = rt__sqlite_load_stack,
    .load_frame = rt__sqlite_load_frame,
    .put_poll = rt__sqlite_put_poll,
    .scan_liveness = rt__sqlite_scan_liveness,
    .put_deploy = rt__sqlite_put_deploy,
    .scan_deploys = rt__sqlite_scan_deploys,
    .put_issue = rt__sqlite_put_issue,
    .scan_issues = rt__sqlite_scan_issues,
    .find_alert_issue = rt__sqlite_find_alert_issue,
    .put_issue_state = rt__sqlite_put_issue_state,
    .scan_services = rt__sqlite_scan_services,
    .scan_instances = rt__sqlite_scan_instances,
    .set_service_config = rt__sqlite_set_service_config,
    .scan_service_configs = rt__sqlite_scan_service_configs,
    .put_polls = rt__sqlite_put_polls,
    .scan_instance_status = rt__sqlite_scan_instance_status,
    .put_key = rt__sqlite_put_key,
    .scan_keys = rt__sqlite_scan_keys,
    .revoke_key = rt__sqlite_revoke_key,
    .put_audit = rt__sqlite_put_audit,
    .scan_audit = rt__sqlite_scan_audit,
    .retain = rt__sqlite_retain,
    .scan_rolled = rt__sqlite_scan_rolled,
    .scan_rollup_pending = rt__sqlite_scan_rollup_pending,
    .put_rollup = rt__sqlite_put_rollup,
    .defer_rollup = rt__sqlite_defer_rollup,
    .disk_bytes = sqlite_disk_bytes,
    .profile_count = sqlite_profile_count,
};

int rt__sqlite_open(struct rt_store *s, const char *path, struct rt_error *err)
{
    if (create_file(path, err))
        return err->code;
    struct rt__sqlite *db = calloc(1, sizeof(*db));
    if (!db)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    db->path = strdup(path);
    if (!db->path) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        goto out_free_db;
    }
    db->w = open_writer(path, err);
    if (!db->w)
        goto out_free_path;
    pthread_mutex_init(&db->wlock, NULL);
    pthread_mutex_init(&db->plock, NULL);
    rt__sqlite_group_init(db);
    s->ops = &sqlite_ops;
    s->be = db;
    return 0;

out_free_path:
    free(db->path);
out_free_db:
    free(db);
    return err ? err->code : RT_EIO;
}
