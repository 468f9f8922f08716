/* SQLite's query plans of the statements that read profiles (RT__SQL_MAP, sqlite_int.h): each
 * one must find its rows through an index, never by walking a service's profiles. The per-upload
 * duplicate lookup once asked for the instance in a subquery correlated on p.service_id; SQLite
 * then searched profiles_window by (service_id, type) and read every profile of the service for
 * each upload (34 % of the server's CPU with 30,000 instances, docs/performance.md). Plans come
 * from EXPLAIN QUERY PLAN on a fresh store: without ANALYZE statistics they do not depend on
 * the data. */
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/sqlite/sqlite_int.h"
#include "test.h"

#define PICK(name, sql) {#name, sql},
static const struct {
    const char *name, *sql;
} statements[] = {RT__SQL_MAP(PICK)};

/* The plan of statement i, its rows joined by newlines, into out. */
static void plan_of(sqlite3 *db, size_t i, char *out, size_t cap)
{
    char q[8192];
    snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN %s", statements[i].sql);
    sqlite3_stmt *st = NULL;
    CHECK_INT(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    size_t n = 0;
    out[0] = '\0';
    while (st && sqlite3_step(st) == SQLITE_ROW && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%s\n", (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
}

/* True when a plan row reads the profiles table (as "profiles" or its alias "p"). */
static bool reads_profiles(const char *row)
{
    return strstr(row, " profiles ") || strstr(row, " profiles\n") || strstr(row, " p ") ||
           strstr(row, " p\n");
}

static void test_profiles_are_read_through_indexes(void)
{
    char dir[] = "/tmp/rt_plans_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err); /* creates the schema */
    CHECK(s != NULL);
    char path[600];
    snprintf(path, sizeof(path), "%s/roottrace.db", dir);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char plan[16384];
    size_t checked = 0;
    for (size_t i = 0; i < sizeof(statements) / sizeof(statements[0]); i++) {
        plan_of(db, i, plan, sizeof(plan));
        for (char *row = plan, *nl; (nl = strchr(row, '\n')); row = nl + 1) {
            char line[1024];
            snprintf(line, sizeof(line), "%.*s\n", (int)(nl - row), row);
            if (!reads_profiles(line))
                continue;
            checked++;
            if (strncmp(line, "SEARCH ", 7) != 0) /* SCAN: every row of the table */
                fprintf(stderr, "%s reads profiles without an index: %s", statements[i].name,
                        line);
            CHECK(strncmp(line, "SEARCH ", 7) == 0);
        }
        if (strcmp(statements[i].name, "FIND_DUP") == 0) {
            if (!strstr(plan, "profiles_dedup (service_id=? AND instance_id=? AND type=? AND "
                              "profile_id=?)"))
                fprintf(stderr, "FIND_DUP's plan:\n%s", plan);
            CHECK(strstr(plan, "profiles_dedup (service_id=? AND instance_id=? AND type=? AND "
                               "profile_id=?)") != NULL);
            CHECK(strstr(plan, "CORRELATED") == NULL);
        }
        if (strcmp(statements[i].name, "SCAN") == 0)
            CHECK(strstr(plan, "profiles_window (service_id=? AND type=? AND time_ns>? AND "
                               "time_ns<?)") != NULL);
    }
    CHECK(checked >= 5); /* the duplicate lookup, the window scan, services, retention */
    sqlite3_close(db);
    rt_store_free(s);
    const char *files[] = {"roottrace.db", "roottrace.db-wal", "roottrace.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    CHECK_INT(rmdir(dir), 0);
}

int main(void)
{
    RUN(test_profiles_are_read_through_indexes);
    return TEST_DONE();
}
