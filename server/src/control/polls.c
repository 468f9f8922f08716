/* SDK polls leave the request path at once: they queue here, and one thread writes them to
 * the store in a batch each second (DESIGN §5: slow work never runs on the thread that
 * answers polls). On a shared store (ClickHouse) the same thread re-reads service configs
 * and keys each second, so that a change made on another node is seen within the second. */
#include <stdlib.h>
#include <string.h>

#include "control_int.h"
#include "rt/log.h"
#include "rt/timeutil.h"

static void free_poll(struct rt_poll *p)
{
    free((char *)p->service);
    free((char *)p->instance);
    free((char *)p->runtime);
    free((char *)p->runtime_version);
    free((char *)p->sdk_version);
    free((char *)p->version);
    free((char *)p->status);
}

static char *dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void rt_control_record_poll(struct rt_control *c, const struct rt_poll *p)
{
    struct rt_poll q = *p;
    q.service = dup(p->service);
    q.instance = dup(p->instance);
    q.runtime = dup(p->runtime);
    q.runtime_version = dup(p->runtime_version);
    q.sdk_version = dup(p->sdk_version);
    q.version = dup(p->version);
    q.status = dup(p->status);
    pthread_mutex_lock(&c->poll_mu);
    bool ok = c->npolls < RT_CONTROL_MAX_QUEUED_POLLS && q.service && q.instance;
    if (ok && c->npolls == c->cap_polls) {
        size_t cap = c->cap_polls ? c->cap_polls * 2 : 256;
        struct rt_poll *polls = realloc(c->polls, cap * sizeof(*polls));
        if (polls) {
            c->polls = polls;
            c->cap_polls = cap;
        } else {
            ok = false;
        }
    }
    if (ok)
        c->polls[c->npolls++] = q;
    else
        c->polls_dropped++;
    pthread_mutex_unlock(&c->poll_mu);
    if (!ok)
        free_poll(&q);
}

void rt_control_poll_counts(struct rt_control *c, uint64_t *queued, uint64_t *dropped)
{
    pthread_mutex_lock(&c->poll_mu);
    *queued = c->npolls;
    *dropped = c->polls_dropped;
    pthread_mutex_unlock(&c->poll_mu);
}

int rt_control_flush_polls(struct rt_control *c, struct rt_error *err)
{
    pthread_mutex_lock(&c->poll_mu);
    struct rt_poll *batch = c->polls;
    size_t n = c->npolls;
    c->polls = NULL;
    c->npolls = c->cap_polls = 0;
    pthread_mutex_unlock(&c->poll_mu);
    int rc = n ? rt_store_put_polls(c->store, batch, n, err) : 0;
    for (size_t i = 0; i < n; i++)
        free_poll(&batch[i]);
    free(batch);
    return rc;
}

static void *writer(void *arg)
{
    struct rt_control *c = arg;
    pthread_mutex_lock(&c->poll_mu);
    while (!c->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&c->poll_cond, &c->poll_mu, &until);
        pthread_mutex_unlock(&c->poll_mu);
        struct rt_error err = {0};
        if (rt_control_flush_polls(c, &err))
            rt_log(RT_LOG_WARN, "writing SDK polls failed: %s", err.msg);
        if (rt_store_is_shared(c->store) && rt__control_refresh(c, &err))
            rt_log(RT_LOG_WARN, "re-reading the control plane from the store failed: %s",
                   err.msg);
        pthread_mutex_lock(&c->poll_mu);
    }
    pthread_mutex_unlock(&c->poll_mu);
    return NULL;
}

int rt__control_polls_start(struct rt_control *c, struct rt_error *err)
{
    if (pthread_create(&c->writer, NULL, writer, c) != 0)
        return rt_error_set(err, RT_ENOMEM, "cannot start the poll writer thread");
    c->writer_started = true;
    return 0;
}

void rt__control_polls_stop(struct rt_control *c)
{
    if (c->writer_started) {
        pthread_mutex_lock(&c->poll_mu);
        c->stopping = true;
        pthread_cond_broadcast(&c->poll_cond);
        pthread_mutex_unlock(&c->poll_mu);
        pthread_join(c->writer, NULL);
        c->writer_started = false;
    }
    struct rt_error err = {0};
    if (rt_control_flush_polls(c, &err))
        rt_log(RT_LOG_WARN, "writing SDK polls at exit failed: %s", err.msg);
}
