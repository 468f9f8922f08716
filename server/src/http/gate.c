/* The scan workers (gate.h): a FIFO of suspended connections' jobs and the threads that run
 * them. */
#include "gate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rt__gate {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    rt__gate_run run;
    void *ud;
    pthread_t *threads;
    unsigned nthreads, idle;
    struct rt__gate_job *head, *tail;
    size_t waiting;
    unsigned long long waited;
    bool stopped, joined;
};

/* The first queued job, dequeued; g->mu held. */
static struct rt__gate_job *pop(struct rt__gate *g)
{
    struct rt__gate_job *j = g->head;
    if (j) {
        g->head = j->next;
        if (!g->head)
            g->tail = NULL;
        g->waiting--;
    }
    return j;
}

static void *worker(void *arg)
{
    struct rt__gate *g = arg;
    /* Lower only this thread's priority (Linux nice is per thread); a refusal (a seccomp
     * profile, say) leaves it at the process's, which costs the uploads' priority only. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), RT_GATE_NICE);
    pthread_mutex_lock(&g->mu);
    for (;;) {
        struct rt__gate_job *j;
        g->idle++;
        while (!(j = pop(g)) && !g->stopped)
            pthread_cond_wait(&g->cond, &g->mu);
        g->idle--;
        if (!j)
            break;
        pthread_mutex_unlock(&g->mu);
        g->run(g->ud, j);
        pthread_mutex_lock(&g->mu);
        j->state = RT_GATE_DONE;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

struct rt__gate *rt__gate_new(unsigned workers, rt__gate_run run, void *ud)
{
    struct rt__gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->run = run;
    g->ud = ud;
    if (workers < 1)
        workers = 1;
    if (!(g->threads = calloc(workers, sizeof(*g->threads)))) {
        rt__gate_free(g);
        return NULL;
    }
    for (; g->nthreads < workers; g->nthreads++)
        if (pthread_create(&g->threads[g->nthreads], NULL, worker, g) != 0)
            break;
    if (g->nthreads < workers) {
        rt__gate_stop(g);
        rt__gate_free(g);
        return NULL;
    }
    return g;
}

void rt__gate_free(struct rt__gate *g)
{
    if (!g)
        return;
    free(g->threads);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

int rt__gate_submit(struct rt__gate *g, struct MHD_Connection *conn, struct rt__gate_job *job)
{
    pthread_mutex_lock(&g->mu);
    int rc = 0;
    if (g->stopped) {
        job->state = RT_GATE_REFUSED;
        rc = -1;
    } else {
        job->conn = conn;
        job->next = NULL;
        job->state = RT_GATE_QUEUED;
        if (g->tail)
            g->tail->next = job;
        else
            g->head = job;
        g->tail = job;
        if (g->idle <= g->waiting++)
            g->waited++; /* no worker free for it */
        MHD_suspend_connection(conn);
        pthread_cond_signal(&g->cond);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void rt__gate_stop(struct rt__gate *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopped = true;
    for (struct rt__gate_job *j; (j = pop(g));)
        MHD_resume_connection(j->conn); /* its state stays QUEUED: answered 503 */
    pthread_cond_broadcast(&g->cond);
    bool join = !g->joined;
    g->joined = true;
    pthread_mutex_unlock(&g->mu);
    for (unsigned i = 0; join && i < g->nthreads; i++)
        pthread_join(g->threads[i], NULL);
}

void rt__gate_counts(struct rt__gate *g, size_t *waiting, unsigned long long *waited)
{
    pthread_mutex_lock(&g->mu);
    *waiting = g->waiting;
    *waited = g->waited;
    pthread_mutex_unlock(&g->mu);
}
