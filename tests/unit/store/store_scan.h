/* Helpers shared by test_store.c and test_store_meta.c: scans and liveness scans collected
 * into plain structs (stacks in folded form), opening a data directory, a sample cpu profile,
 * and row counts read directly from the database file. */
#ifndef RT_STORE_SCAN_H
#define RT_STORE_SCAN_H

#include <sqlite3.h>

#include "store_fixture.h"

#define S (1000000000LL) /* one second in ns */
#define T0 (1764460800LL * S)

/* ---- scan collection ---- */

struct got_row {
    char folded[256];
    double samples;
    int64_t value;
};

struct got_prof {
    int64_t id;
    char profile_id[64], instance[64], version[64];
    bool has_pid, has_version;
    int64_t time_ns, duration_ns, period_ns, thread_cpu_ns, process_cpu_ns, value_ns;
    double samples;
    bool has_counts;
    uint32_t truncated;
    char producer[32];
    double cpu_scale;
    int declared_type;
    size_t nrows;
    struct got_row rows[16];
};

struct got {
    struct rt_store *s;
    size_t n;
    struct got_prof p[64];
};

static int collect(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                   size_t nrows)
{
    struct got *g = ud;
    if (g->n >= 64)
        return 0;
    struct got_prof *p = &g->p[g->n++];
    memset(p, 0, sizeof(*p));
    p->id = m->id;
    p->has_pid = m->profile_id != NULL;
    snprintf(p->profile_id, sizeof(p->profile_id), "%s", m->profile_id ? m->profile_id : "");
    snprintf(p->instance, sizeof(p->instance), "%s", m->instance);
    p->has_version = m->version != NULL;
    snprintf(p->version, sizeof(p->version), "%s", m->version ? m->version : "");
    p->time_ns = m->time_ns;
    p->duration_ns = m->duration_ns;
    p->period_ns = m->period_ns;
    p->thread_cpu_ns = m->thread_cpu_ns;
    p->process_cpu_ns = m->process_cpu_ns;
    p->samples = m->samples;
    p->value_ns = m->value_ns;
    p->has_counts = m->has_counts;
    p->truncated = m->truncated_stacks;
    snprintf(p->producer, sizeof(p->producer), "%s", m->producer);
    p->declared_type = (int)m->declared_type;
    p->cpu_scale = m->cpu_scale;
    p->nrows = nrows;
    for (size_t i = 0; i < nrows && i < 16; i++) {
        fixture_folded(g->s, rows[i].stack_id, p->rows[i].folded, sizeof(p->rows[i].folded));
        p->rows[i].samples = rows[i].samples;
        p->rows[i].value = rows[i].value_ns;
    }
    return 0;
}

static size_t scan(struct rt_store *s, const char *svc, enum rt_ptype t, int64_t from, int64_t to,
                   const char *version, const char *instance, struct got *g)
{
    struct rt_store_filter f = {svc, t, from, to, version, instance};
    struct rt_error err = {0};
    g->s = s;
    g->n = 0;
    int rc = rt_store_scan(s, &f, collect, g, &err);
    if (rc)
        fprintf(stderr, "scan: %d %s\n", rc, err.msg);
    return g->n;
}

static const struct got_row *find_row(const struct got_prof *p, const char *folded)
{
    for (size_t i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].folded, folded) == 0)
            return &p->rows[i];
    return NULL;
}

static struct rt_store *open_dir(const char *dir)
{
    struct rt_error err = {0};
    struct rt_store *s = fixture_open(dir, &err);
    if (!s)
        fprintf(stderr, "open %s: %s\n", dir, err.msg);
    return s;
}

/* A cpu profile of svc with three stacks. */
static inline struct rt_profile *sample_profile(const char *svc, const char *inst, const char *pid,
                                         int64_t t, int64_t dur)
{
    struct rt_profile *p = fixture_profile(RT_PTYPE_CPU, svc, inst, "v1", pid, t, dur);
    p->period_ns = 10000000;
    p->has_counts = true;
    p->thread_cpu_ns = 123;
    fixture_add(p, "main;handle;parse", 3, 30000000);
    fixture_add(p, "main;handle;render", 2.5, 25000001);
    fixture_add(p, "main;idle", 1, -5);
    return p;
}

/* Number of rows of a table, read directly from the database file; on ClickHouse the
 * distinct frames, stacks or profiles. */
static inline int64_t count_rows(const char *dir, const char *table)
{
    char path[512], sql[128];
    if (fixture_clickhouse()) {
        snprintf(sql, sizeof(sql), "SELECT %s FROM %s",
                 strcmp(table, "profiles") == 0 ? "uniqExact(type, dedup)" : "uniqExact(id)",
                 table);
        return fixture_ch_int(dir, sql);
    }
    snprintf(path, sizeof(path), "%s/roottrace.db", dir);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
    sqlite3 *db;
    int64_t n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
    return n;
}

/* ---- liveness collection ---- */

struct alive {
    int n;
    char inst[8][32];
    int64_t first[8], last[8];
};

static inline int collect_alive(void *ud, const struct rt_liveness *l)
{
    struct alive *a = ud;
    if (a->n < 8) {
        snprintf(a->inst[a->n], 32, "%s", l->instance);
        a->first[a->n] = l->first_ns;
        a->last[a->n++] = l->last_ns;
    }
    return 0;
}

#endif
