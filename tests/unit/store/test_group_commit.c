/* Group commit (store/sqlite/sqlite_group.c): uploads that queue while a commit runs share the
 * next one, each caller returns only once its upload is committed, and a group holding an
 * upload that fails is retried upload by upload, so that only that one fails. The test holds
 * the writer itself, so that the queue forms deterministically: the first upload becomes the
 * leader of a group of one and waits for the writer, the others queue behind it. */
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>

#include "store/sqlite/sqlite_int.h"
#include "store_fixture.h"
#include "store_scan.h"
#include "test.h"



#define QUEUED 10

struct putter {
    struct rt_store *s;
    char id[32];
    int rc;
    struct rt_store_put_result res;
    struct rt_error err;
};

static void *put_main(void *ud)
{
    struct putter *p = ud;
    struct rt_profile *pr = fixture_profile(RT_PTYPE_CPU, "grp", "i", "1", p->id, T0, S);
    fixture_add(pr, "main;handle;work", 3, 30000000);
    fixture_add(pr, p->id, 1, 10000000); /* a frame of its own */
    p->rc = rt_store_put_profiles(p->s, &pr, 1, &p->res, &p->err);
    rt_profile_free(pr);
    return NULL;
}

/* Uploads waiting in the queue, and whether a leader took its group. */
static size_t queued(struct rt__sqlite *db, bool *leader)
{
    size_t n = 0;
    pthread_mutex_lock(&db->glock);
    for (struct rt__sqlite_put *p = db->ghead; p; p = p->next)
        n++;
    *leader = db->gleader;
    pthread_mutex_unlock(&db->glock);
    return n;
}

/* Waits (for a state, not a time) until a leader holds its group and `want` uploads queue. */
static void wait_queue(struct rt__sqlite *db, size_t want)
{
    bool leader = false;
    while (queued(db, &leader) != want || !leader)
        sched_yield();
}

/* Puts QUEUED + 1 uploads while the test holds the writer; poison (if >= 1) names the
 * queued upload a trigger refuses. Returns the store, the uploads' outcomes in ps. */
static struct rt_store *put_behind_held_writer(const char *dir, struct putter *ps, int poison)
{
    struct rt_error err = {0};
    struct rt_store *s = fixture_open(dir, &err);
    CHECK(s != NULL);
    if (poison) {
        /* another connection adds a trigger that refuses one profile_id, as a disk or
         * constraint error would refuse it inside the transaction */
        char path[512];
        snprintf(path, sizeof(path), "%s/roottrace.db", dir);
        sqlite3 *db;
        CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "CREATE TRIGGER poison BEFORE INSERT ON profiles WHEN NEW.profile_id = 'u%d' "
                 "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;", poison);
        CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    struct rt__sqlite *db = s->be;
    CHECK_INT(rt__sqlite_begin(db, true, &err), 0); /* the test holds the writer */
    pthread_t th[QUEUED + 1];
    for (int k = 0; k <= QUEUED; k++) {
        ps[k] = (struct putter){.s = s};
        snprintf(ps[k].id, sizeof(ps[k].id), "u%d", k);
        pthread_create(&th[k], NULL, put_main, &ps[k]);
        wait_queue(db, (size_t)k); /* upload 0 leads a group of one; the rest queue */
    }
    rt__sqlite_rollback(db); /* releases the writer */
    for (int k = 0; k <= QUEUED; k++)
        pthread_join(th[k], NULL);
    return s;
}

static void test_uploads_that_queue_share_a_commit(void)
{
    SKIP_ON_CLICKHOUSE("group commit is the SQLite backend's");
    char *dir = fixture_tmpdir();
    struct putter ps[QUEUED + 1];
    struct rt_store *s = put_behind_held_writer(dir, ps, 0);
    for (int k = 0; k <= QUEUED; k++) {
        CHECK_INT(ps[k].rc, 0);
        CHECK(ps[k].res.id > 0 && !ps[k].res.duplicate);
        for (int j = 0; j < k; j++)
            CHECK(ps[j].res.id != ps[k].res.id);
    }
    struct rt_store_stats st;
    rt_store_stats(s, &st);
    CHECK_INT(st.commits, 2); /* the leader's group of one, then the ten that queued */
    CHECK_INT(st.commit_uploads, QUEUED + 1);
    CHECK_INT(st.commit_hist[0], 1);     /* <= 1 upload */
    CHECK_INT(st.commit_hist[4], 1);     /* 9..16 uploads: the ten */
    CHECK_INT(st.dict_frames, 3 + QUEUED + 1); /* main, handle, work and one a profile */
    rt_store_free(s);
    /* committed: another handle (a restart) reads every one */
    struct rt_error err = {0};
    s = fixture_open(dir, &err);
    CHECK_INT(rt_store_profile_count(s), QUEUED + 1);
    rt_store_free(s);
    fixture_rmdir(dir);
}

static void test_a_failing_upload_fails_alone(void)
{
    SKIP_ON_CLICKHOUSE("group commit is the SQLite backend's");
    char *dir = fixture_tmpdir();
    struct putter ps[QUEUED + 1];
    struct rt_store *s = put_behind_held_writer(dir, ps, 4);
    for (int k = 0; k <= QUEUED; k++) {
        if (k == 4) {
            CHECK(ps[k].rc != 0);
            CHECK(strstr(ps[k].err.msg, "refused by the test") != NULL);
        } else {
            CHECK_INT(ps[k].rc, 0);
            CHECK(ps[k].res.id > 0);
        }
    }
    struct rt_store_stats st;
    rt_store_stats(s, &st);
    /* the group of ten failed whole and was retried upload by upload: nine commits of one */
    CHECK_INT(st.commits, 1 + QUEUED - 1);
    CHECK_INT(st.commit_uploads, QUEUED);
    CHECK_INT(rt_store_profile_count(s), QUEUED);
    /* the frames the failed group inserted were rolled back with it: none is cached twice or
     * under an id that does not exist */
    CHECK_INT(st.dict_frames, 3 + QUEUED);
    rt_store_free(s);
    /* read back through a new handle: each stored profile's own frame has its own name */
    s = open_dir(dir);
    static struct got g;
    CHECK_INT(scan(s, "grp", RT_PTYPE_CPU, T0, T0 + S, NULL, NULL, &g), QUEUED);
    for (size_t i = 0; i < g.n; i++) {
        CHECK(strcmp(g.p[i].profile_id, "u4") != 0);
        CHECK(find_row(&g.p[i], g.p[i].profile_id) != NULL);
        CHECK(find_row(&g.p[i], "main;handle;work") != NULL);
    }
    rt_store_free(s);
    fixture_rmdir(dir);
}

int main(void)
{
    RUN(test_uploads_that_queue_share_a_commit);
    RUN(test_a_failing_upload_fails_alone);
    return TEST_DONE();
}
