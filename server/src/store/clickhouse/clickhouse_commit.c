/* ClickHouse backend, group commit of uploads: each upload's rows wait in a queue, and one
 * thread writes everything queued with one INSERT per table, then wakes the uploads it wrote.
 * Concurrent uploads thus share INSERTs (ClickHouse makes a part per INSERT and wants few of
 * them), and an upload still returns only once its rows are written (a 201 means stored).
 * Nothing waits on purpose: while one round is written, the next one queues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

const char *const rt__ch_upload_tables[RT__CH_UPLOAD_TABLES] = {
    /* the dictionary first, then the profiles, then what lists them. profiles names its
     * columns, in write_profile's order: the migrations append theirs at the end, and a
     * database migrated in another order (or by an older node) must read the same rows */
    "frames", "stacks",
    "profiles (id, dedup, service, type, instance, version, has_version, profile_id, has_pid, "
    "time_ns, duration_ns, end_ns, period_ns, samples, value_ns, thread_cpu_ns, process_cpu_ns, "
    "has_counts, truncated_stacks, created_at_ns, stacks, row_samples, row_values, row_leaves, "
    "producer, cpu_scale, content_hash, declared_type)",
    "services", "instance_events", "uploads", "service_versions", "deploys",
};

/* One upload's rows, queued. */
struct rt__ch_commit {
    struct rt_buf *const *bufs;   /* RT__CH_UPLOAD_TABLES buffers, borrowed */
    int rc;                       /* result, set with done */
    size_t round;                 /* uploads its INSERTs held: set on the round's first only */
    struct rt_error err;
    bool done;
    struct rt__ch_commit *next;   /* queue order */
};

/* INSERTs b into table (nothing when b is empty). */
static int insert(struct rt__ch *ch, const char *table, const struct rt_buf *b,
                  struct rt_error *err)
{
    if (!b->len)
        return 0;
    char sql[512];
    snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT RowBinary", table);
    return rt__ch_exec(ch, sql, b->data, b->len, NULL, err);
}

/* Writes the rows of every upload of the list, table by table. */
static int write_round(struct rt__ch *ch, struct rt__ch_commit *list, struct rt_error *err)
{
    int rc = 0;
    for (int t = 0; !rc && t < RT__CH_UPLOAD_TABLES; t++) {
        if (!list->next) { /* alone: its own buffer */
            rc = insert(ch, rt__ch_upload_tables[t], list->bufs[t], err);
            continue;
        }
        struct rt_buf all;
        rt_buf_init(&all, 0);
        for (struct rt__ch_commit *c = list; c && !rc; c = c->next)
            if (c->bufs[t]->len && rt_buf_append(&all, c->bufs[t]->data, c->bufs[t]->len))
                rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        if (!rc)
            rc = insert(ch, rt__ch_upload_tables[t], &all, err);
        rt_buf_cleanup(&all);
    }
    return rc;
}

static void *committer(void *arg)
{
    struct rt__ch *ch = arg;
    pthread_mutex_lock(&ch->commit_lock);
    for (;;) {
        while (!ch->queue && !ch->stopping)
            pthread_cond_wait(&ch->commit_cond, &ch->commit_lock);
        if (!ch->queue)
            break;
        struct rt__ch_commit *list = ch->queue;
        ch->queue = ch->queue_tail = NULL;
        pthread_mutex_unlock(&ch->commit_lock);
        struct rt_error err = {0};
        int rc = write_round(ch, list, &err);
        pthread_mutex_lock(&ch->commit_lock);
        size_t n = 0;
        for (struct rt__ch_commit *c = list; c; c = c->next)
            n++;
        list->round = n;
        for (struct rt__ch_commit *c = list; c; c = c->next) {
            c->rc = rc;
            c->err = err;
            c->done = true;
        }
        pthread_cond_broadcast(&ch->commit_cond);
    }
    pthread_mutex_unlock(&ch->commit_lock);
    return NULL;
}

int rt__ch_commit_start(struct rt__ch *ch)
{
    pthread_mutex_init(&ch->commit_lock, NULL);
    pthread_cond_init(&ch->commit_cond, NULL);
    ch->committer_started = pthread_create(&ch->committer, NULL, committer, ch) == 0;
    if (ch->committer_started)
        return 0;
    pthread_cond_destroy(&ch->commit_cond);
    pthread_mutex_destroy(&ch->commit_lock);
    return RT_ENOMEM;
}

void rt__ch_commit_stop(struct rt__ch *ch)
{
    if (!ch->committer_started)
        return;
    pthread_mutex_lock(&ch->commit_lock);
    ch->stopping = true;
    pthread_cond_broadcast(&ch->commit_cond);
    pthread_mutex_unlock(&ch->commit_lock);
    pthread_join(ch->committer, NULL);
    ch->committer_started = false;
    pthread_cond_destroy(&ch->commit_cond);
    pthread_mutex_destroy(&ch->commit_lock);
}

int rt__ch_commit(struct rt__ch *ch, struct rt_buf *const *bufs, size_t *round,
                  struct rt_error *err)
{
    struct rt__ch_commit item = {.bufs = bufs};
    pthread_mutex_lock(&ch->commit_lock);
    if (ch->queue_tail)
        ch->queue_tail->next = &item;
    else
        ch->queue = &item;
    ch->queue_tail = &item;
    pthread_cond_broadcast(&ch->commit_cond);
    while (!item.done)
        pthread_cond_wait(&ch->commit_cond, &ch->commit_lock);
    pthread_mutex_unlock(&ch->commit_lock);
    *round = item.round;
    if (item.rc && err)
        *err = item.err;
    return item.rc;
}
