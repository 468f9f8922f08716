/* Deadlines on receiving a request (deadline.h): every connection is in a list with its phase
 * and the phase's start; a thread cuts those past their deadline once a second. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "deadline.h"
#include "rt/timeutil.h"

enum phase { PHASE_HEADERS, PHASE_BODY, PHASE_WORKING };

/* One open connection. */
struct watch {
    struct rt__deadlines *owner;
    int fd;
    enum phase phase;
    int64_t since_ns;          /* start of the phase, monotonic */
    size_t received;           /* body bytes so far (PHASE_BODY) */
    bool cut;                  /* shut down already */
    struct watch *prev, *next;
};

struct rt__deadlines {
    pthread_mutex_t mu;        /* guards the list, every watch's fields, and stop */
    pthread_cond_t cond;
    struct watch *head;
    bool stop;
    pthread_t thread;
};

static bool overdue(const struct watch *w, int64_t now)
{
    int64_t age = now - w->since_ns;
    if (w->phase == PHASE_HEADERS)
        return age > (int64_t)RT_HEADER_DEADLINE_S * RT_NS_PER_S;
    if (w->phase == PHASE_BODY)
        /* received is at most twice the body limit (server.c closes past it); the cap
         * only keeps the product from overflowing whatever the limit. */
        return age > ((int64_t)RT_BODY_GRACE_S +
                      (int64_t)(w->received / RT_BODY_MIN_RATE < (size_t)1 << 32
                                    ? w->received / RT_BODY_MIN_RATE : (size_t)1 << 32)) *
                         RT_NS_PER_S;
    return false;
}

static void *watch_loop(void *arg)
{
    struct rt__deadlines *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        int64_t now = rt_time_mono_ns();
        /* The fd is still the connection's: its close notification needs mu. */
        for (struct watch *w = d->head; w; w = w->next)
            if (!w->cut && overdue(w, now)) {
                shutdown(w->fd, SHUT_RDWR);
                w->cut = true;
            }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&d->cond, &d->mu, &until);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

struct rt__deadlines *rt__deadlines_new(void)
{
    struct rt__deadlines *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&d->thread, NULL, watch_loop, d) != 0) {
        pthread_cond_destroy(&d->cond);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return NULL;
    }
    return d;
}

void rt__deadlines_free(struct rt__deadlines *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    while (d->head) {          /* none once the daemon stopped; kept for safety */
        struct watch *w = d->head;
        d->head = w->next;
        free(w);
    }
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void rt__deadlines_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct rt__deadlines *d = cls;
    if (!d)
        return;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct watch *w = ci ? calloc(1, sizeof(*w)) : NULL;
        if (!w)
            return;            /* this connection goes without a deadline */
        w->owner = d;
        w->fd = ci->connect_fd;
        w->since_ns = rt_time_mono_ns();
        pthread_mutex_lock(&d->mu);
        w->next = d->head;
        if (d->head)
            d->head->prev = w;
        d->head = w;
        pthread_mutex_unlock(&d->mu);
        *socket_context = w;
        return;
    }
    struct watch *w = *socket_context;
    if (!w)
        return;
    pthread_mutex_lock(&d->mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        d->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    pthread_mutex_unlock(&d->mu);
    free(w);
    *socket_context = NULL;
}

/* Moves conn's watch to phase (received bytes of body); restarts the clock unless it stays
 * in the body phase. */
static void set_phase(struct MHD_Connection *conn, enum phase phase, size_t received)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct watch *w = ci ? ci->socket_context : NULL;
    if (!w)
        return;
    pthread_mutex_lock(&w->owner->mu);
    if (w->phase != phase || phase != PHASE_BODY || received == 0)
        w->since_ns = rt_time_mono_ns();
    w->phase = phase;
    w->received = received;
    pthread_mutex_unlock(&w->owner->mu);
}

void rt__deadlines_body(struct MHD_Connection *conn, size_t received)
{
    set_phase(conn, PHASE_BODY, received);
}

void rt__deadlines_working(struct MHD_Connection *conn)
{
    set_phase(conn, PHASE_WORKING, 0);
}

void rt__deadlines_idle(struct MHD_Connection *conn)
{
    set_phase(conn, PHASE_HEADERS, 0);
}
