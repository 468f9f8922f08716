/* The scan gate (gate.h): a counting semaphore whose waiters are suspended connections in a
 * FIFO, not blocked threads. */
#include "gate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct rt__gate {
    pthread_mutex_t mu;
    unsigned limit, running;
    struct rt__gate_wait *head, *tail;
    size_t waiting;
    unsigned long long waited;
    bool stopped;
};

struct rt__gate *rt__gate_new(unsigned limit)
{
    struct rt__gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    pthread_mutex_init(&g->mu, NULL);
    g->limit = limit ? limit : 1;
    return g;
}

void rt__gate_free(struct rt__gate *g)
{
    if (!g)
        return;
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void rt__gate_enter(struct rt__gate *g, struct MHD_Connection *conn, enum rt__gate_state *state,
                    struct rt__gate_wait *w)
{
    pthread_mutex_lock(&g->mu);
    if (g->stopped) {
        *state = RT_GATE_REFUSED;
    } else if (g->running < g->limit) {
        g->running++;
        *state = RT_GATE_RUNNING;
    } else {
        *w = (struct rt__gate_wait){.conn = conn, .state = state};
        if (g->tail)
            g->tail->next = w;
        else
            g->head = w;
        g->tail = w;
        g->waiting++;
        g->waited++;
        *state = RT_GATE_QUEUED;
        MHD_suspend_connection(conn);
    }
    pthread_mutex_unlock(&g->mu);
}

/* The first waiting request, dequeued; g->mu held. */
static struct rt__gate_wait *pop(struct rt__gate *g)
{
    struct rt__gate_wait *w = g->head;
    if (w) {
        g->head = w->next;
        if (!g->head)
            g->tail = NULL;
        g->waiting--;
    }
    return w;
}

void rt__gate_leave(struct rt__gate *g, enum rt__gate_state *state)
{
    pthread_mutex_lock(&g->mu);
    *state = RT_GATE_DONE;
    struct rt__gate_wait *w = pop(g);
    if (w) {
        *w->state = RT_GATE_RUNNING; /* the slot passes on; running is unchanged */
        MHD_resume_connection(w->conn);
    } else {
        g->running--;
    }
    pthread_mutex_unlock(&g->mu);
}

void rt__gate_stop(struct rt__gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->stopped = true;
    for (struct rt__gate_wait *w; (w = pop(g));)
        MHD_resume_connection(w->conn); /* its state stays QUEUED: answered 503 */
    pthread_mutex_unlock(&g->mu);
}

void rt__gate_counts(struct rt__gate *g, size_t *waiting, unsigned long long *waited)
{
    pthread_mutex_lock(&g->mu);
    *waiting = g->waiting;
    *waited = g->waited;
    pthread_mutex_unlock(&g->mu);
}
