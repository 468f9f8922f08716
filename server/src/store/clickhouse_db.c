/* ClickHouse backend, the database: the URI, the curl pool, the schema and its migrations
 * (the schema_version table), disk use, and the operations table. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "rt/timeutil.h"

/* Month partitions of a nanosecond time column (DESIGN §8: retention drops them). */
#define MONTH(col) "toYYYYMM(toDateTime(intDiv(greatest(" col ", 0), 1000000000)))"

/* Version 0 -> 1: every table. Control-plane rows that change are ReplacingMergeTree read
 * with argMax over a version column; profiles are month-partitioned MergeTree ordered for
 * window scans. Schema in docs/internals/clickhouse.md. */
static const char *const schema_v1[] = {
    "CREATE TABLE IF NOT EXISTS profiles (id UInt64, dedup String, service String, type UInt8,"
    " instance String, version String, has_version UInt8, profile_id String, has_pid UInt8,"
    " time_ns Int64, duration_ns Int64, end_ns Int64, period_ns Int64, samples Float64,"
    " value_ns Int64, thread_cpu_ns Int64, process_cpu_ns Int64, has_counts UInt8,"
    " truncated_stacks UInt32, created_at_ns Int64, stacks Array(UInt64),"
    " row_samples Array(Float64), row_values Array(Int64), row_leaves Array(UInt64))"
    " ENGINE = MergeTree PARTITION BY " MONTH("time_ns") " ORDER BY (service, type, time_ns)",
    "CREATE TABLE IF NOT EXISTS frames (id UInt64, name String)"
    " ENGINE = ReplacingMergeTree ORDER BY id",
    "CREATE TABLE IF NOT EXISTS stacks (id UInt64, frames Array(UInt64))"
    " ENGINE = ReplacingMergeTree ORDER BY id",
    "CREATE TABLE IF NOT EXISTS services (name String, created_at_ns Int64)"
    " ENGINE = ReplacingMergeTree ORDER BY name",
    "CREATE TABLE IF NOT EXISTS service_configs (name String, enabled UInt8, type String,"
    " sampling_interval_us Int64, upload_interval_s Int64, ver Int64)"
    " ENGINE = ReplacingMergeTree(ver) ORDER BY name",
    "CREATE TABLE IF NOT EXISTS uploads (service String, type UInt8, at_ns Int64)"
    " ENGINE = ReplacingMergeTree(at_ns) ORDER BY (service, type)",
    "CREATE TABLE IF NOT EXISTS instance_events (service String, instance String, kind UInt8,"
    " given UInt8, runtime String, runtime_version String, sdk_version String, version String,"
    " status String, interval_us Int64, poll_interval_s Int64, at_ns Int64, seq Int64)"
    " ENGINE = MergeTree PARTITION BY " MONTH("at_ns") " ORDER BY (service, instance, at_ns)",
    "CREATE TABLE IF NOT EXISTS service_versions (service String, version String,"
    " first_seen_ns Int64) ENGINE = ReplacingMergeTree ORDER BY (service, version)",
    "CREATE TABLE IF NOT EXISTS deploys (service String, version String, source String,"
    " at_ns Int64, seq Int64) ENGINE = MergeTree ORDER BY (service, at_ns, seq)",
    "CREATE TABLE IF NOT EXISTS issues (id Int64, service String, title String,"
    " started_at_ns Int64, created_at_ns Int64) ENGINE = ReplacingMergeTree ORDER BY id",
    "CREATE TABLE IF NOT EXISTS keys (id Int64, scope String, service String,"
    " has_service UInt8, name String, has_name UInt8, hash FixedString(32),"
    " created_at_ns Int64, revoked_at_ns Int64, ver Int64)"
    " ENGINE = ReplacingMergeTree(ver) ORDER BY id",
    "CREATE TABLE IF NOT EXISTS audit (at_ns Int64, seq Int64, actor String, action String,"
    " target String, detail String, has_detail UInt8) ENGINE = MergeTree ORDER BY (at_ns, seq)",
    NULL,
};

/* Columns appended to profiles after row_leaves, in the order write_profile writes them, with
 * the schema version that added each. 18.16 has no ADD COLUMN IF NOT EXISTS: add_columns
 * looks first.
 * Version 2: who sampled a profile (rt/producer.h) and the factor capacity scales its CPU by
 * (DESIGN §7); rows stored before read '' and 1: an unknown producer, compared and never
 * rescaled, as in the SQLite backend.
 * Version 3: the content hash that tells a retry from another profile under the same
 * profile_id (docs/decisions.md); rows stored before read 0, "not known". */
static const struct {
    int version;
    const char *name, *type;
} added_columns[] = {
    {2, "producer", "String DEFAULT ''"},
    {2, "cpu_scale", "Float64 DEFAULT 1"},
    {3, "content_hash", "UInt64 DEFAULT 0"},
};

/* migrations[v] takes the database from version v to v + 1 (then added_columns of v + 1);
 * statements are idempotent (IF NOT EXISTS), since two nodes may migrate at once. */
static const char *const *const migrations[RT__CH_SCHEMA_VERSION] = {schema_v1, NULL, NULL};

/* Splits "clickhouse:http://HOST:PORT/DB[?settings]" into ch->url and ch->db. */
static int parse_uri(struct rt__ch *ch, const char *uri, struct rt_error *err)
{
    const char *http = uri + strlen("clickhouse:");
    const char *scheme_end = strstr(http, "://");
    const char *slash = scheme_end ? strchr(scheme_end + 3, '/') : NULL;
    if (strncmp(http, "http", 4) != 0 || !slash)
        return rt_error_set(err, RT_EINVAL,
                            "store URI \"%s\": expected clickhouse:http://HOST:PORT/DATABASE",
                            uri);
    const char *dbname = slash + 1;
    size_t dblen = strcspn(dbname, "?");
    if (dblen == 0 || dblen > 64 || strspn(dbname, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                                   "OPQRSTUVWXYZ0123456789_") < dblen)
        return rt_error_set(err, RT_EINVAL,
                            "store URI \"%s\": the database name must be 1-64 letters, digits "
                            "or _", uri);
    const char *settings = dbname[dblen] == '?' ? dbname + dblen + 1 : "";
    ch->db = strndup(dbname, dblen);
    size_t n = (size_t)(slash - http) + dblen + strlen(settings) + 32;
    ch->url = malloc(n);
    if (!ch->db || !ch->url)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    snprintf(ch->url, n, "%.*s/?database=%s%s%s", (int)(slash - http), http, ch->db,
             *settings ? "&" : "", settings);
    return 0;
}

/* Creates the database (a statement run outside it: ?database= names one that may not exist
 * yet, so the URL is switched for this one statement). */
static int create_database(struct rt__ch *ch, struct rt_error *err)
{
    char *url = ch->url, *q = strstr(url, "?database=");
    size_t n = strlen(url) + 1;
    char *bare = malloc(n);
    if (!bare)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    /* keep the settings after the database name */
    const char *rest = q + strlen("?database=") + strlen(ch->db);
    snprintf(bare, n, "%.*s?%s", (int)(q - url), url, *rest == '&' ? rest + 1 : rest);
    char sql[128];
    snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", ch->db);
    ch->url = bare;
    int rc = rt__ch_exec(ch, sql, NULL, 0, NULL, err);
    ch->url = url;
    free(bare);
    return rc;
}

/* The schema version stored (0 for a new database). */
static int schema_version(struct rt__ch *ch, int64_t *v, struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = rt__ch_exec(ch, "SELECT max(version) FROM schema_version FORMAT TabSeparated", NULL,
                         0, &out, err);
    if (!rc)
        *v = strtoll(out.data ? out.data : "0", NULL, 10);
    rt_buf_cleanup(&out);
    return rc;
}

/* Whether table profiles has column name. */
static int has_column(struct rt__ch *ch, const char *name, bool *has, struct rt_error *err)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM system.columns WHERE database = currentDatabase() AND "
             "table = 'profiles' AND name = '%s' FORMAT TabSeparated", name);
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = rt__ch_exec(ch, sql, NULL, 0, &out, err);
    if (!rc)
        *has = strtoll(out.data ? out.data : "0", NULL, 10) > 0;
    rt_buf_cleanup(&out);
    return rc;
}

/* Adds the columns of schema version v that profiles lacks. Two nodes may migrate at once: an
 * ALTER that fails because the other added the column meanwhile is fine once it is there. */
static int add_columns(struct rt__ch *ch, int v, struct rt_error *err)
{
    for (size_t i = 0; i < sizeof(added_columns) / sizeof(added_columns[0]); i++) {
        if (added_columns[i].version != v)
            continue;
        const char *name = added_columns[i].name;
        bool has = false;
        if (has_column(ch, name, &has, err))
            return err->code;
        if (has)
            continue;
        char sql[256];
        snprintf(sql, sizeof(sql), "ALTER TABLE profiles ADD COLUMN %s %s", name,
                 added_columns[i].type);
        struct rt_error alter = {0};
        if (rt__ch_exec(ch, sql, NULL, 0, NULL, &alter) == 0)
            continue;
        if (has_column(ch, name, &has, err))
            return err->code;
        if (!has) {
            *err = alter;
            return err->code;
        }
    }
    return 0;
}

/* Brings the schema to RT__CH_SCHEMA_VERSION. */
static int migrate(struct rt__ch *ch, struct rt_error *err)
{
    if (create_database(ch, err) ||
        rt__ch_exec(ch,
                    "CREATE TABLE IF NOT EXISTS schema_version (version UInt32, at_ns Int64)"
                    " ENGINE = ReplacingMergeTree ORDER BY version",
                    NULL, 0, NULL, err))
        return err->code;
    int64_t v;
    if (schema_version(ch, &v, err))
        return err->code;
    if (v > RT__CH_SCHEMA_VERSION)
        return rt_error_set(err, RT_EIO,
                            "ClickHouse schema version %lld is newer than this roottrace's (%d)",
                            (long long)v, RT__CH_SCHEMA_VERSION);
    for (; v < RT__CH_SCHEMA_VERSION; v++) {
        for (const char *const *sql = migrations[v]; sql && *sql; sql++)
            if (rt__ch_exec(ch, *sql, NULL, 0, NULL, err))
                return err->code;
        if (add_columns(ch, (int)v + 1, err))
            return err->code;
        char ins[128];
        snprintf(ins, sizeof(ins), "INSERT INTO schema_version VALUES (%d, %lld)", (int)v + 1,
                 (long long)rt_time_now_ns());
        if (rt__ch_exec(ch, ins, NULL, 0, NULL, err))
            return err->code;
    }
    return 0;
}

static void ch_free(struct rt_store *s)
{
    struct rt__ch *ch = s->be;
    if (!ch)
        return;
    rt__ch_commit_stop(ch);
    for (size_t i = 0; i < ch->nidle; i++)
        curl_easy_cleanup(ch->idle[i]);
    pthread_mutex_destroy(&ch->pool_lock);
    rt_u64map_cleanup(&ch->frame_ids);
    rt_u64map_cleanup(&ch->stack_ids);
    free(ch->url);
    free(ch->db);
    free(ch);
    s->be = NULL;
}

/* Bytes of the database's active parts (compressed, on ClickHouse's disks). */
static int64_t ch_disk_bytes(struct rt_store *s)
{
    struct rt__ch *ch = s->be;
    struct rt_buf sql, out;
    rt_buf_init(&sql, 0);
    rt_buf_init(&out, 0);
    int64_t v = -1;
    struct rt_error err;
    if (!rt_buf_puts(&sql, "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND "
                           "database = ") &&
        !rt__ch_quote_cstr(&sql, ch->db) && !rt_buf_puts(&sql, " FORMAT TabSeparated") &&
        !rt__ch_run(ch, &sql, &out, &err))
        v = strtoll(out.data ? out.data : "-1", NULL, 10);
    rt_buf_cleanup(&sql);
    rt_buf_cleanup(&out);
    return v;
}

static const struct rt__store_ops ch_ops = {
    .name = "clickhouse",
    .shared = true,
    .free = ch_free,
    .put_profiles = rt__ch_put_profiles,
    .scan = rt__ch_scan,
    .scan_window = rt__ch_scan_window,
    .load_stack = rt__ch_load_stack,
    .load_frame = rt__ch_load_frame,
    .put_poll = rt__ch_put_poll,
    .scan_liveness = rt__ch_scan_liveness,
    .put_deploy = rt__ch_put_deploy,
    .scan_deploys = rt__ch_scan_deploys,
    .put_issue = rt__ch_put_issue,
    .scan_issues = rt__ch_scan_issues,
    .scan_services = rt__ch_scan_services,
    .scan_instances = rt__ch_scan_instances,
    .set_service_config = rt__ch_set_service_config,
    .scan_service_configs = rt__ch_scan_service_configs,
    .put_polls = rt__ch_put_polls,
    .scan_instance_status = rt__ch_scan_instance_status,
    .put_key = rt__ch_put_key,
    .scan_keys = rt__ch_scan_keys,
    .revoke_key = rt__ch_revoke_key,
    .put_audit = rt__ch_put_audit,
    .scan_audit = rt__ch_scan_audit,
    .retain = rt__ch_retain,
    .disk_bytes = ch_disk_bytes,
    .profile_count = rt__ch_profile_count,
};

/* Process-wide initialization of libcurl and libsodium (ids use its random numbers). */
static int global_init_rc;
static void global_init(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || sodium_init() < 0)
        global_init_rc = RT_EIO;
}

int rt__ch_open(struct rt_store *s, const char *uri, struct rt_error *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init);
    if (global_init_rc)
        return rt_error_set(err, RT_EIO, "libcurl or libsodium failed to initialize");
    struct rt__ch *ch = calloc(1, sizeof(*ch));
    if (!ch)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    pthread_mutex_init(&ch->pool_lock, NULL);
    s->ops = &ch_ops;
    s->be = ch;
    if (parse_uri(ch, uri, err) || migrate(ch, err)) {
        ch_free(s);
        s->ops = NULL;
        return err->code;
    }
    if (rt__ch_commit_start(ch)) {
        ch_free(s);
        s->ops = NULL;
        return rt_error_set(err, RT_ENOMEM, "cannot start the ClickHouse commit thread");
    }
    return 0;
}
