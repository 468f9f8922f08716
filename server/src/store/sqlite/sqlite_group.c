/* SQLite backend, group commit of uploads (sqlite_int.h): callers queue their uploads; the
 * first to find no commit running becomes the leader, takes what is queued, stores it in one
 * write transaction (sqlite_profiles.c) and wakes every caller of the group once that
 * transaction is committed, or failed. A group that fails is retried upload by upload, so that
 * one bad upload fails alone and the others are still stored. */
#include "sqlite_int.h"

/* Takes the uploads at the head of the queue into group (at most RT__SQLITE_GROUP_MAX, and
 * no more profiles than RT__SQLITE_GROUP_PROFILES past the first); db->glock held. */
static size_t take_group(struct rt__sqlite *db, struct rt__sqlite_put **group)
{
    size_t n = 0, profiles = 0;
    while (db->ghead && n < RT__SQLITE_GROUP_MAX &&
           (n == 0 || profiles + db->ghead->n <= RT__SQLITE_GROUP_PROFILES)) {
        struct rt__sqlite_put *p = db->ghead;
        db->ghead = p->next;
        if (!db->ghead)
            db->gtail = NULL;
        profiles += p->n;
        group[n++] = p;
    }
    return n;
}

/* Stores a group; sets each upload's rc and err. */
static void commit_group(struct rt_store *s, struct rt__sqlite_put **group, size_t n)
{
    if (n > 1) {
        struct rt_error err = {0};
        if (rt__sqlite_put_group(s, group, n, &err) == 0) {
            rt__store_count_commit(s, n);
            for (size_t k = 0; k < n; k++)
                group[k]->rc = 0;
            return;
        }
    }
    for (size_t k = 0; k < n; k++) {
        struct rt__sqlite_put *p = group[k];
        p->err = (struct rt_error){0};
        p->rc = rt__sqlite_put_group(s, &group[k], 1, &p->err);
        if (!p->rc)
            rt__store_count_commit(s, 1);
    }
}

int rt__sqlite_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                            struct rt_store_put_result *res, struct rt_error *err)
{
    struct rt__sqlite *db = s->be;
    struct rt__sqlite_put me = {.ps = ps, .n = n, .res = res};
    struct rt__sqlite_put *group[RT__SQLITE_GROUP_MAX];
    pthread_mutex_lock(&db->glock);
    if (db->gtail)
        db->gtail->next = &me;
    else
        db->ghead = &me;
    db->gtail = &me;
    while (!me.done) {
        if (db->gleader) {
            pthread_cond_wait(&db->gdone, &db->glock);
            continue;
        }
        db->gleader = true;
        size_t ng = take_group(db, group);
        pthread_mutex_unlock(&db->glock);
        commit_group(s, group, ng);
        pthread_mutex_lock(&db->glock);
        for (size_t k = 0; k < ng; k++)
            group[k]->done = true;
        db->gleader = false;
        pthread_cond_broadcast(&db->gdone);
    }
    pthread_mutex_unlock(&db->glock);
    if (me.rc && err)
        *err = me.err;
    return me.rc;
}

void rt__sqlite_group_init(struct rt__sqlite *db)
{
    pthread_mutex_init(&db->glock, NULL);
    pthread_cond_init(&db->gdone, NULL);
    db->ghead = db->gtail = NULL;
    db->gleader = false;
}

void rt__sqlite_group_destroy(struct rt__sqlite *db)
{
    pthread_cond_destroy(&db->gdone);
    pthread_mutex_destroy(&db->glock);
}
