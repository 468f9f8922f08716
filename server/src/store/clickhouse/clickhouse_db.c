/* ClickHouse backend, the database: the URI, the curl pool, the schema and its migrations
 * (the schema_version table), disk use, and the operations table. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clickhouse_int.h"
#include "rt/log.h"
#include "rt/timeutil.h"

/* A table of the schema: its columns, its engine (MergeTree or ReplacingMergeTree, with its
 * version column or NULL) and the clauses after the engine. On a cluster (docs/scale-out.md)
 * each becomes Replicated*; a sharded table is spread over the shards by service, as a
 * Distributed table over NAME_local, and the others have one replica on every server. */
struct ch_table {
    const char *name, *columns, *engine, *ver, *rest;
    bool sharded;
};

/* Month partitions of a nanosecond time column (DESIGN §8: retention drops them). */
#define MONTH(col) "toYYYYMM(toDateTime(intDiv(greatest(" col ", 0), 1000000000)))"

static const struct ch_table schema_version_table = {
    "schema_version", "version UInt32, at_ns Int64", "ReplacingMergeTree", NULL,
    "ORDER BY version", false};

/* Version 0 -> 1: every table. Control-plane rows that change are ReplacingMergeTree read
 * with argMax over a version column; profiles are month-partitioned MergeTree ordered for
 * window scans, in granules of 256 profiles (a profile's row holds ~1,000 array elements: at
 * 18.16's default of 8,192 rows, reading a window's few profiles beside its rollups read ~80
 * minutes of a 100-instance fleet's arrays per granule; 26.9 bounds granules by bytes
 * already). Databases created before keep their granules. Schema in
 * docs/internals/clickhouse.md. */
static const struct ch_table schema_v1[] = {
    {"profiles",
     "id UInt64, dedup String, service String, type UInt8, instance String, version String,"
     " has_version UInt8, profile_id String, has_pid UInt8, time_ns Int64, duration_ns Int64,"
     " end_ns Int64, period_ns Int64, samples Float64, value_ns Int64, thread_cpu_ns Int64,"
     " process_cpu_ns Int64, has_counts UInt8, truncated_stacks UInt32, created_at_ns Int64,"
     " stacks Array(UInt64), row_samples Array(Float64), row_values Array(Int64),"
     " row_leaves Array(UInt64)",
     "MergeTree", NULL,
     "PARTITION BY " MONTH("time_ns") " ORDER BY (service, type, time_ns) SETTINGS "
     "index_granularity = 256",
     true},
    {"frames", "id UInt64, name String", "ReplacingMergeTree", NULL, "ORDER BY id", false},
    {"stacks", "id UInt64, frames Array(UInt64)", "ReplacingMergeTree", NULL, "ORDER BY id",
     false},
    {"services", "name String, created_at_ns Int64", "ReplacingMergeTree", NULL,
     "ORDER BY name", false},
    {"service_configs",
     "name String, enabled UInt8, type String, sampling_interval_us Int64,"
     " upload_interval_s Int64, ver Int64",
     "ReplacingMergeTree", "ver", "ORDER BY name", false},
    {"uploads", "service String, type UInt8, at_ns Int64", "ReplacingMergeTree", "at_ns",
     "ORDER BY (service, type)", true},
    {"instance_events",
     "service String, instance String, kind UInt8, given UInt8, runtime String,"
     " runtime_version String, sdk_version String, version String, status String,"
     " interval_us Int64, poll_interval_s Int64, at_ns Int64, seq Int64",
     "MergeTree", NULL, "PARTITION BY " MONTH("at_ns") " ORDER BY (service, instance, at_ns)",
     true},
    {"service_versions", "service String, version String, first_seen_ns Int64",
     "ReplacingMergeTree", NULL, "ORDER BY (service, version)", true},
    {"deploys", "service String, version String, source String, at_ns Int64, seq Int64",
     "MergeTree", NULL, "ORDER BY (service, at_ns, seq)", true},
    {"issues", "id Int64, service String, title String, started_at_ns Int64, created_at_ns Int64",
     "ReplacingMergeTree", NULL, "ORDER BY id", false},
    {"keys",
     "id Int64, scope String, service String, has_service UInt8, name String, has_name UInt8,"
     " hash FixedString(32), created_at_ns Int64, revoked_at_ns Int64, ver Int64",
     "ReplacingMergeTree", "ver", "ORDER BY id", false},
    {"audit",
     "at_ns Int64, seq Int64, actor String, action String, target String, detail String,"
     " has_detail UInt8",
     "MergeTree", NULL, "ORDER BY (at_ns, seq)", false},
};

#define NTABLES (sizeof(schema_v1) / sizeof(schema_v1[0]))

/* Columns appended to tables (profiles after row_leaves, in the order write_profile writes
 * them), with the schema version that added each. 18.16 has no ADD COLUMN IF NOT EXISTS: add_columns
 * looks first. A cluster's tables are created with them (no cluster database predates them).
 * Version 2: who sampled a profile (rt/producer.h) and the factor capacity scales its CPU by
 * (DESIGN §7); rows stored before read '' and 1: an unknown producer, compared and never
 * rescaled, as in the SQLite backend.
 * Version 3: the content hash that tells a retry from another profile under the same
 * profile_id (docs/decisions.md); rows stored before read 0, "not known".
 * Version 4: the type a profile's producer declared where RootTrace stored another (DESIGN
 * §12); rows stored before read 0, "as declared".
 * Version 5: issues from alerts (DESIGN §13): an issue's source, its alert episode's key and
 * the alert's details; issues stored before are the API's. */
static const struct {
    int version;
    const char *table, *name, *type;
} added_columns[] = {
    {2, "profiles", "producer", "String DEFAULT ''"},
    {2, "profiles", "cpu_scale", "Float64 DEFAULT 1"},
    {3, "profiles", "content_hash", "UInt64 DEFAULT 0"},
    {4, "profiles", "declared_type", "UInt8 DEFAULT 0"},
    {5, "issues", "source", "String DEFAULT 'api'"},
    {5, "issues", "alert_key", "String DEFAULT ''"},
    {5, "issues", "alert", "String DEFAULT ''"},
};

/* Tables created by a later schema version, with it (DESIGN §13, version 5: issues from
 * alerts keep a log of states, read back with argMax: nothing is ever updated in place). */
static const struct {
    int version;
    struct ch_table table;
} added_tables[] = {
    {5, {"issue_states", "id Int64, kind UInt8, at_ns Int64, ended_at_ns Int64, seq Int64",
         "MergeTree", NULL, "ORDER BY (id, at_ns, seq)", false}},
    /* Version 6: rollups of whole hours and days (docs/internals/rollups.md), one row per
     * (instance, version) of a block, stamped with the block's fingerprint (gen) when it was
     * built and its number of groups; a later build of the block replaces its rows. Blocks
     * that failed to build wait in rollup_deferrals until retry_ns, for that gen only. */
    {6, {"rollups",
         "service String, type UInt8, level UInt8, block Int64, start_ns Int64, gen UInt64,"
         " groups UInt32, instance String, has_version UInt8, version String, data String,"
         " built_at_ns Int64",
         "ReplacingMergeTree", "built_at_ns",
         "PARTITION BY " MONTH("start_ns")
         " ORDER BY (service, type, level, block, instance, has_version, version) SETTINGS "
         "index_granularity = 32",
         true}},
    {6, {"rollup_deferrals",
         "service String, type UInt8, level UInt8, block Int64, gen UInt64, retry_ns Int64",
         "ReplacingMergeTree", "retry_ns",
         "PARTITION BY " MONTH("retry_ns") " ORDER BY (service, type, level, block, gen)", true}},
};

#define NADDED_TABLES (sizeof(added_tables) / sizeof(added_tables[0]))

#define NADDED (sizeof(added_columns) / sizeof(added_columns[0]))

/* Appends the CREATE statement(s) of t to b, separated by '\0' (two on a cluster for a sharded
 * table: the replicated NAME_local, then the Distributed NAME). 0 or RT_ENOMEM. */
static int create_sql(const struct rt__ch *ch, const struct ch_table *t, struct rt_buf *b)
{
    if (!ch->cluster)
        return rt_buf_printf(b, "CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = %s%s%s%s %s",
                             t->name, t->columns, t->engine, t->ver ? "(" : "",
                             t->ver ? t->ver : "", t->ver ? ")" : "", t->rest);
    int rc = rt_buf_printf(b, "CREATE TABLE IF NOT EXISTS %s.%s%s ON CLUSTER %s (%s", ch->db,
                           t->name, t->sharded ? "_local" : "", ch->cluster, t->columns);
    for (size_t i = 0; !rc && i < NADDED; i++)
        if (strcmp(added_columns[i].table, t->name) == 0)
            rc = rt_buf_printf(b, ", %s %s", added_columns[i].name, added_columns[i].type);
    if (!rc)
        rc = rt_buf_printf(b, ") ENGINE = Replicated%s('/clickhouse/tables/%s/%s/%s', "
                              "'{replica}'%s%s) %s",
                           t->engine, t->sharded ? "{shard}" : "all", ch->db, t->name,
                           t->ver ? ", " : "", t->ver ? t->ver : "", t->rest);
    if (!rc && t->sharded)
        rc = rt_buf_append(b, "", 1) ||
             rt_buf_printf(b, "CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s AS %s.%s_local "
                              "ENGINE = Distributed(%s, %s, %s_local, cityHash64(service))",
                           ch->db, t->name, ch->cluster, ch->db, t->name, ch->cluster, ch->db,
                           t->name);
    return rc ? RT_ENOMEM : 0;
}

/* Runs the CREATE statement(s) of t. */
static int create_table(struct rt__ch *ch, const struct ch_table *t, struct rt_error *err)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = create_sql(ch, t, &b) || rt_buf_append(&b, "", 1)
                 ? rt_error_set(err, RT_ENOMEM, "out of memory")
                 : 0;
    for (size_t off = 0; !rc && off < b.len; off += strlen(b.data + off) + 1)
        if (b.data[off])
            rc = rt__ch_exec(ch, b.data + off, NULL, 0, NULL, err);
    rt_buf_cleanup(&b);
    return rc;
}

int rt__ch_alter_table(struct rt_buf *b, const struct rt__ch *ch, const char *table)
{
    if (!ch->cluster)
        return rt_buf_puts(b, table) ? RT_ENOMEM : 0;
    bool sharded = false;
    for (size_t i = 0; i < NTABLES; i++)
        if (strcmp(schema_v1[i].name, table) == 0)
            sharded = schema_v1[i].sharded;
    for (size_t i = 0; i < NADDED_TABLES; i++) /* tables of later versions (rollups) too */
        if (strcmp(added_tables[i].table.name, table) == 0)
            sharded = added_tables[i].table.sharded;
    return rt_buf_printf(b, "%s.%s%s ON CLUSTER %s", ch->db, table, sharded ? "_local" : "",
                         ch->cluster)
               ? RT_ENOMEM
               : 0;
}

/* Whether s[0..n) is 1-64 letters, digits or _ (a database or cluster name, pasted into SQL). */
static bool is_ident(const char *s, size_t n)
{
    return n > 0 && n <= 64 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") >= n;
}

/* Splits "clickhouse:http://HOST:PORT/DB[?settings]" into ch->url, ch->db and ch->cluster
 * (the setting cluster=NAME, ours, not ClickHouse's: it is taken out of the URL). On a cluster
 * the URL also gets insert_distributed_sync=1 (an INSERT into a Distributed table returns once
 * the shard's replica has the rows, so that a 201 means stored, DESIGN §4) and
 * distributed_product_mode=local (a subquery over a sharded table inside a query over one
 * reads the shard's local table: every sharded table is sharded by service alike). */
static int parse_uri(struct rt__ch *ch, const char *raw_uri, struct rt_error *err)
{
    char uri[1024]; /* for messages: every password as *** */
    rt_store_uri_redacted(raw_uri, uri, sizeof(uri));
    const char *http = raw_uri + strlen("clickhouse:");
    const char *scheme_end = strstr(http, "://");
    const char *slash = scheme_end ? strchr(scheme_end + 3, '/') : NULL;
    if (strncmp(http, "http", 4) != 0 || !slash)
        return rt_error_set(err, RT_EINVAL,
                            "store URI \"%s\": expected clickhouse:http://HOST:PORT/DATABASE",
                            uri);
    const char *dbname = slash + 1;
    size_t dblen = strcspn(dbname, "?");
    if (!is_ident(dbname, dblen))
        return rt_error_set(err, RT_EINVAL,
                            "store URI \"%s\": the database name must be 1-64 letters, digits "
                            "or _", uri);
    if ((dblen == 6 && strncasecmp(dbname, "system", 6) == 0) ||
        (dblen == 18 && strncasecmp(dbname, "information_schema", 18) == 0))
        return rt_error_set(err, RT_EINVAL,
                            "store URI \"%s\": %.*s is ClickHouse's own database: name one of "
                            "roottrace's", uri, (int)dblen, dbname);
    ch->db = strndup(dbname, dblen);
    /* where, for messages: scheme://host:port, without a user-info's user and password */
    const char *host = scheme_end + 3;
    const char *at = memchr(host, '@', (size_t)(slash - host));
    if (at)
        host = at + 1;
    if ((ch->where = malloc((size_t)(scheme_end + 3 - http) + (size_t)(slash - host) + 1)))
        sprintf(ch->where, "%.*s%.*s", (int)(scheme_end + 3 - http), http, (int)(slash - host),
                host);
    struct rt_buf url;
    rt_buf_init(&url, 0);
    int rc = ch->db && ch->where ? rt_buf_printf(&url, "%.*s/?database=%s", (int)(slash - http), http, ch->db)
                    : RT_ENOMEM;
    /* the settings, but cluster=NAME */
    for (const char *p = dbname[dblen] == '?' ? dbname + dblen + 1 : ""; !rc && *p;) {
        size_t n = strcspn(p, "&");
        if (n >= 8 && strncmp(p, "cluster=", 8) == 0) {
            if (!is_ident(p + 8, n - 8)) {
                rt_buf_cleanup(&url);
                return rt_error_set(err, RT_EINVAL,
                                    "store URI \"%s\": the cluster name must be 1-64 letters, "
                                    "digits or _", uri);
            }
            free(ch->cluster);
            if (!(ch->cluster = strndup(p + 8, n - 8)))
                rc = RT_ENOMEM;
        } else if (n) {
            rc = rt_buf_printf(&url, "&%.*s", (int)n, p);
        }
        p += n + (p[n] == '&');
    }
    if (!rc && ch->cluster)
        rc = rt_buf_puts(&url, "&insert_distributed_sync=1&distributed_product_mode=local");
    if (rc) {
        rt_buf_cleanup(&url);
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    }
    ch->url = rt_buf_into_cstr(&url);
    return ch->url ? 0 : rt_error_set(err, RT_ENOMEM, "out of memory");
}

/* Runs sql outside the database (?database= names one that may not exist yet, so the URL is
 * switched for this one statement), as rt__ch_exec. */
static int exec_outside(struct rt__ch *ch, const char *sql, struct rt_buf *out,
                        struct rt_error *err)
{
    char *url = ch->url, *q = strstr(url, "?database=");
    size_t n = strlen(url) + 1;
    char *bare = malloc(n);
    if (!bare)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    /* keep the settings after the database name */
    const char *rest = q + strlen("?database=") + strlen(ch->db);
    snprintf(bare, n, "%.*s?%s", (int)(q - url), url, *rest == '&' ? rest + 1 : rest);
    ch->url = bare;
    int rc = rt__ch_exec(ch, sql, NULL, 0, out, err);
    ch->url = url;
    free(bare);
    return rc;
}

/* A number a statement outside the database answers (FORMAT TabSeparated), e.g. a count. */
static int query_number(struct rt__ch *ch, const char *sql, int64_t *v, struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = exec_outside(ch, sql, &out, err);
    if (!rc)
        *v = strtoll(out.data ? out.data : "0", NULL, 10);
    rt_buf_cleanup(&out);
    return rc;
}

/* Refuses a ClickHouse older than 18.16, the oldest whose SQL the conformance suite runs. */
static int check_version(struct rt__ch *ch, struct rt_error *err)
{
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = exec_outside(ch, "SELECT version() FORMAT TabSeparated", &out, err);
    if (rc) {
        rt_buf_cleanup(&out);
        return rc;
    }
    char v[32];
    snprintf(v, sizeof(v), "%.*s", (int)strcspn(out.data ? out.data : "", "\n"),
             out.data ? out.data : "");
    rt_buf_cleanup(&out);
    long major = 0, minor = 0;
    if (sscanf(v, "%ld.%ld", &major, &minor) != 2)
        return rt_error_set(err, RT_EIO, "ClickHouse at %s answered version() with \"%s\"",
                            ch->where, v);
    if (major < 18 || (major == 18 && minor < 16))
        return rt_error_set(err, RT_EIO,
                            "ClickHouse %s at %s is older than 18.16, the oldest release "
                            "roottrace runs on (docs/scale-out.md)", v, ch->where);
    return 0;
}

/* On a cluster: the server knows it (remote_servers) and has the {shard} and {replica}
 * macros its tables' ZooKeeper paths use. */
static int check_cluster(struct rt__ch *ch, struct rt_error *err)
{
    char sql[256];
    int64_t hosts = 0, macros = 0;
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM system.clusters WHERE cluster = '%s' FORMAT TabSeparated",
             ch->cluster);
    if (query_number(ch, sql, &hosts, err) ||
        query_number(ch, "SELECT count() FROM system.macros WHERE macro IN ('shard', 'replica')"
                         " FORMAT TabSeparated",
                     &macros, err))
        return err->code;
    if (hosts == 0)
        return rt_error_set(err, RT_EINVAL,
                            "store URI names cluster \"%s\", which the ClickHouse at %s does "
                            "not have in its remote_servers (deploy/clickhouse-cluster/)",
                            ch->cluster, ch->where);
    if (macros != 2)
        return rt_error_set(err, RT_EINVAL,
                            "the ClickHouse at %s lacks the {shard} and {replica} macros that "
                            "cluster tables need (deploy/clickhouse-cluster/cluster.xml)",
                            ch->where);
    return 0;
}

/* The engine of table name in the database ("" when it does not exist) into e[n]. */
static int table_engine(struct rt__ch *ch, const char *name, char *e, size_t n,
                        struct rt_error *err)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT engine FROM system.tables WHERE database = '%s' AND name = '%s' "
             "FORMAT TabSeparated", ch->db, name);
    struct rt_buf out;
    rt_buf_init(&out, 0);
    int rc = exec_outside(ch, sql, &out, err);
    if (!rc)
        snprintf(e, n, "%.*s", (int)strcspn(out.data ? out.data : "", "\n"),
                 out.data ? out.data : "");
    rt_buf_cleanup(&out);
    return rc;
}

/* The schema version stored (0 for a new database). */
static int schema_version(struct rt__ch *ch, int64_t *v, struct rt_error *err)
{
    char engine[64], sql[128];
    *v = 0;
    if (table_engine(ch, "schema_version", engine, sizeof(engine), err))
        return err->code;
    if (!*engine)
        return 0;
    snprintf(sql, sizeof(sql), "SELECT max(version) FROM %s.schema_version FORMAT TabSeparated",
             ch->db);
    return query_number(ch, sql, v, err);
}

/* For a database without a schema version: refuses one that holds tables roottrace did not
 * make (a name outside its schema, or a profiles table without its columns), so that nothing
 * of the user's is altered and no table is created beside theirs. An interrupted first
 * migration (only roottrace's tables, profiles complete) passes and resumes. */
static int check_unversioned(struct rt__ch *ch, struct rt_error *err)
{
    struct rt_buf sql;
    rt_buf_init(&sql, 0);
    int rc = rt_buf_printf(&sql, "SELECT count() FROM system.tables WHERE database = '%s' AND "
                                 "name NOT IN ('schema_version'", ch->db);
    for (size_t i = 0; !rc && i < NTABLES; i++)
        rc = rt_buf_printf(&sql, ", '%s', '%s_local'", schema_v1[i].name, schema_v1[i].name);
    for (size_t i = 0; !rc && i < NADDED_TABLES; i++)
        rc = rt_buf_printf(&sql, ", '%s', '%s_local'", added_tables[i].table.name,
                           added_tables[i].table.name);
    if (!rc)
        rc = rt_buf_puts(&sql, ") FORMAT TabSeparated") || rt_buf_append(&sql, "", 1);
    int64_t foreign = 0, ours = 0;
    if (rc) {
        rt_buf_cleanup(&sql);
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    }
    rc = query_number(ch, sql.data, &foreign, err);
    rt_buf_cleanup(&sql);
    if (rc)
        return rc;
    char q[512];
    snprintf(q, sizeof(q),
             "SELECT countIf(name = 'row_leaves') + 2 * (count() > 0) FROM system.columns "
             "WHERE database = '%s' AND table = 'profiles' FORMAT TabSeparated", ch->db);
    if (query_number(ch, q, &ours, err))
        return err->code;
    if (foreign > 0 || ours == 2)
        return rt_error_set(err, RT_EINVAL,
                            "database %s on the ClickHouse at %s holds %s that roottrace did not "
                            "create: name a database of roottrace's own (a new name is created)",
                            ch->db, ch->where,
                            foreign > 0 ? "tables"
                                        : "a table profiles (without roottrace's columns)");
    return 0;
}

/* Whether table has column name. */
static int has_column(struct rt__ch *ch, const char *table, const char *name, bool *has,
                      struct rt_error *err)
{
    char sql[320];
    snprintf(sql, sizeof(sql),
             "SELECT count() FROM system.columns WHERE database = '%s' AND "
             "table = '%s' AND name = '%s' FORMAT TabSeparated", ch->db, table, name);
    int64_t n = 0;
    int rc = query_number(ch, sql, &n, err);
    *has = n > 0;
    return rc;
}

/* Adds the tables and columns of schema version v that the database lacks. Two nodes may
 * migrate at once: an ALTER that fails because the other added the column meanwhile is fine
 * once it is there. */
static int add_columns(struct rt__ch *ch, int v, struct rt_error *err)
{
    for (size_t i = 0; i < NADDED_TABLES; i++)
        if (added_tables[i].version == v && create_table(ch, &added_tables[i].table, err))
            return err->code;
    for (size_t i = 0; i < NADDED; i++) {
        if (added_columns[i].version != v)
            continue;
        const char *table = added_columns[i].table, *name = added_columns[i].name;
        bool has = false;
        if (has_column(ch, table, name, &has, err))
            return err->code;
        if (has)
            continue;
        char sql[256];
        snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s", table, name,
                 added_columns[i].type);
        struct rt_error alter = {0};
        if (rt__ch_exec(ch, sql, NULL, 0, NULL, &alter) == 0)
            continue;
        if (has_column(ch, table, name, &has, err))
            return err->code;
        if (!has) {
            *err = alter;
            return err->code;
        }
    }
    return 0;
}

/* Records schema version v as reached. */
static int put_version(struct rt__ch *ch, int v, struct rt_error *err)
{
    char ins[160];
    snprintf(ins, sizeof(ins), "INSERT INTO %s.schema_version VALUES (%d, %lld)", ch->db, v,
             (long long)rt_time_now_ns());
    return rt__ch_exec(ch, ins, NULL, 0, NULL, err);
}

/* Brings the schema to RT__CH_SCHEMA_VERSION. Every statement is idempotent (IF NOT EXISTS,
 * columns looked up first) and a version is recorded once its statements have run, so that
 * two nodes may migrate at once and a migration cut short resumes at the next start. A
 * database at the current version runs no DDL: a node starts while a cluster's replica is
 * down (an ON CLUSTER statement would wait for it). */
static int migrate(struct rt__ch *ch, struct rt_error *err)
{
    int64_t v;
    char engine[64];
    if (check_version(ch, err) || (ch->cluster && check_cluster(ch, err)) ||
        schema_version(ch, &v, err) || table_engine(ch, "profiles", engine, sizeof(engine), err))
        return err->code;
    if (v == 0 && check_unversioned(ch, err))
        return err->code;
    int64_t replica = 0;
    struct rt_error ignored = {0};
    if (v == 0 && !ch->cluster &&
        !query_number(ch, "SELECT count() FROM system.macros WHERE macro = 'replica' "
                          "FORMAT TabSeparated", &replica, &ignored) && replica > 0)
        rt_log(RT_LOG_WARN, "the ClickHouse at %s is a cluster's replica ({replica} macro) but "
                            "the store URI names no cluster: database %s is made on this "
                            "server alone; add ?cluster=NAME to replicate it", ch->where, ch->db);
    if (v == 0 && ch->cluster)
        rt_log(RT_LOG_INFO, "creating database %s on cluster %s (ON CLUSTER: waits for every "
                            "server of the cluster, up to its distributed_ddl_task_timeout)",
                            ch->db, ch->cluster);
    if (v > RT__CH_SCHEMA_VERSION)
        return rt_error_set(err, RT_EIO,
                            "ClickHouse schema version %lld is newer than this roottrace's (%d): "
                            "run the newer roottrace, or a new database", (long long)v,
                            RT__CH_SCHEMA_VERSION);
    if (*engine && (strcmp(engine, "Distributed") == 0) != (ch->cluster != NULL))
        return rt_error_set(err, RT_EINVAL,
                            ch->cluster ? "database %s was created on one server, not on a "
                                          "cluster: use a new database with ?cluster="
                                        : "database %s was created on a cluster: add its "
                                          "?cluster=NAME to the store URI",
                            ch->db);
    if (v == RT__CH_SCHEMA_VERSION)
        return 0;
    char sql[192];
    if (ch->cluster) {
        /* created at the current version, every column in place */
        if (v != 0)
            return rt_error_set(err, RT_EIO,
                                "the cluster's schema is at version %lld: this roottrace "
                                "migrates a cluster's schema only from scratch", (long long)v);
        snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s ON CLUSTER %s", ch->db,
                 ch->cluster);
        if (exec_outside(ch, sql, NULL, err) || create_table(ch, &schema_version_table, err))
            return err->code;
        for (size_t i = 0; i < NTABLES; i++)
            if (create_table(ch, &schema_v1[i], err))
                return err->code;
        for (size_t i = 0; i < NADDED_TABLES; i++)
            if (create_table(ch, &added_tables[i].table, err))
                return err->code;
        return put_version(ch, RT__CH_SCHEMA_VERSION, err);
    }
    snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", ch->db);
    if (exec_outside(ch, sql, NULL, err) || create_table(ch, &schema_version_table, err))
        return err->code;
    for (; v < RT__CH_SCHEMA_VERSION; v++) {
        for (size_t i = 0; v == 0 && i < NTABLES; i++)
            if (create_table(ch, &schema_v1[i], err))
                return err->code;
        if (add_columns(ch, (int)v + 1, err) || put_version(ch, (int)v + 1, err))
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
    free(ch->where);
    free(ch->db);
    free(ch->cluster);
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

static int ch_ping(struct rt_store *s, struct rt_error *err)
{
    return rt__ch_ping(s->be, err);
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
    .find_alert_issue = rt__ch_find_alert_issue,
    .put_issue_state = rt__ch_put_issue_state,
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
    .scan_rolled = rt__ch_scan_rolled,
    .scan_rollup_pending = rt__ch_scan_rollup_pending,
    .put_rollup = rt__ch_put_rollup,
    .defer_rollup = rt__ch_defer_rollup,
    .keys = rt__ch_keys,
    .disk_bytes = ch_disk_bytes,
    .ping = ch_ping,
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
    atomic_init(&ch->extra_threads, 0);
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
