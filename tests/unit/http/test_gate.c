/* Tests of the scan workers (server/src/http/gate.c) on a real libmicrohttpd daemon: a scan
 * holds no HTTP thread, queued or running (a request of another kind is answered on a daemon
 * of one thread while three scans are in), the scans run in arrival order on a worker of lower
 * priority, a stop refuses the queued ones and lets the running one end, and the counts say
 * so. No timing is asserted: the test waits for states (a scan inside its worker, a count of
 * queued scans), each within a bound against a hang. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http/gate.h"
#include "test.h"

/* How long a state is waited for before the check fails (a bound against a hang, not a
 * timing assertion: every state is reached in milliseconds when the gate works). */
#define BOUND_S 20

static struct rt__gate *gate;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int inside;        /* scans inside their worker, held until released */
static bool released;     /* the held scans may end */
static char order[16];    /* the ids of the scans, in the order their runs began */
static size_t norder;
static int nice_seen;     /* the nice value of the worker that ran the last scan */

struct req {
    struct rt__gate_job job; /* first */
    char id;                 /* "w" runs at once; the others wait to be released */
};

/* The workers' run: records the scan and, but for "w", holds it until released. */
static void run(void *ud, struct rt__gate_job *job)
{
    (void)ud;
    char id = ((struct req *)job)->id;
    pthread_mutex_lock(&mu);
    nice_seen = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    order[norder++] = id;
    inside++;
    while (!released && id != 'w')
        pthread_cond_wait(&cond, &mu);
    inside--;
    pthread_mutex_unlock(&mu);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* /scan/<id> goes to the workers and is answered 200 when run, 503 when refused; /other is
 * answered at once. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)cls, (void)method, (void)version, (void)upload_data, (void)upload_size;
    if (strncmp(url, "/scan/", 6) != 0)
        return reply(conn, 200, "other");
    struct req *r = *con_cls;
    if (!r) {
        *con_cls = r = calloc(1, sizeof(*r));
        return r ? MHD_YES : MHD_NO;
    }
    if (r->job.state == RT_GATE_NONE) {
        r->id = url[6];
        if (rt__gate_submit(gate, conn, &r->job) == 0)
            return MHD_YES;
    }
    return r->job.state == RT_GATE_DONE ? reply(conn, 200, "scanned")
                                        : reply(conn, 503, "stopping");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

struct client {
    pthread_t thread;
    uint16_t port;
    char path[32];
    int status; /* the answer's status, 0 when none came */
};

static void *client_run(void *arg)
{
    struct client *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(c->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* a request stuck behind the gate fails its check, not the run */
    struct timeval tv = {.tv_sec = BOUND_S};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        char req[128], buf[64] = {0};
        int n = snprintf(req, sizeof(req),
                         "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", c->path);
        if (write(fd, req, (size_t)n) == n && read(fd, buf, sizeof(buf) - 1) > 12)
            c->status = atoi(buf + 9);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void start_client(struct client *c, uint16_t port, const char *path)
{
    memset(c, 0, sizeof(*c));
    c->port = port;
    snprintf(c->path, sizeof(c->path), "%s", path);
    pthread_create(&c->thread, NULL, client_run, c);
}

/* Waits until `inside` handlers hold their turn; false past BOUND_S. */
static bool wait_inside(int n)
{
    for (int ms = 0; ms < BOUND_S * 1000; ms++) {
        pthread_mutex_lock(&mu);
        bool there = inside >= n;
        pthread_mutex_unlock(&mu);
        if (there)
            return true;
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    return false;
}

/* Waits until n requests wait at the gate; false past BOUND_S. */
static bool wait_waiting(size_t n)
{
    for (int ms = 0; ms < BOUND_S * 1000; ms++) {
        size_t waiting;
        unsigned long long waited;
        rt__gate_counts(gate, &waiting, &waited);
        if (waiting >= n)
            return true;
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    return false;
}

static struct MHD_Daemon *start_daemon(unsigned threads)
{
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                                MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                            0, NULL, NULL, on_request, NULL, MHD_OPTION_THREAD_POOL_SIZE,
                            threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                            MHD_OPTION_END);
}

static uint16_t port_of(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : 0;
}

/* One scan worker and a daemon of two HTTP threads, the worker seen idle (a scan "w" run
 * first); NULL (a failed check) when either cannot start. */
static struct MHD_Daemon *setup(uint16_t *port)
{
    gate = rt__gate_new(1, run, NULL);
    released = false;
    norder = 0;
    struct MHD_Daemon *d = start_daemon(2);
    CHECK(gate && d);
    if (!gate || !d)
        return NULL;
    *port = port_of(d);
    struct client w;
    start_client(&w, *port, "/scan/w");
    pthread_join(w.thread, NULL);
    CHECK_INT(w.status, 200);
    return d;
}

/* Lets the held scans end. */
static void release(void)
{
    pthread_mutex_lock(&mu);
    released = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static void test_scans_in_order_without_http_threads(void)
{
    uint16_t port;
    struct MHD_Daemon *d = setup(&port);
    if (!d)
        return;
    CHECK_INT(nice_seen, RT_GATE_NICE); /* the worker runs at lower priority */
    struct client a, b, c, other;
    start_client(&a, port, "/scan/a");
    CHECK(wait_inside(1)); /* a runs on the worker */
    start_client(&b, port, "/scan/b");
    CHECK(wait_waiting(1));
    start_client(&c, port, "/scan/c");
    CHECK(wait_waiting(2));
    /* a running, b and c queued: the HTTP threads are free for another request (had scans run
     * on them, a and b would hold both) */
    start_client(&other, port, "/other");
    pthread_join(other.thread, NULL);
    CHECK_INT(other.status, 200);
    pthread_mutex_lock(&mu);
    CHECK_INT(inside, 1);
    pthread_mutex_unlock(&mu);
    release();
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    pthread_join(c.thread, NULL);
    CHECK_INT(a.status, 200);
    CHECK_INT(b.status, 200);
    CHECK_INT(c.status, 200);
    CHECK_INT(norder, 4);
    CHECK(memcmp(order, "wabc", 4) == 0);
    size_t waiting;
    unsigned long long waited;
    rt__gate_counts(gate, &waiting, &waited);
    CHECK_INT(waiting, 0);
    CHECK_INT(waited, 2); /* b and c found the worker busy; w and a did not */
    rt__gate_stop(gate);
    MHD_stop_daemon(d);
    rt__gate_free(gate);
}

static void *stopper(void *arg)
{
    (void)arg;
    rt__gate_stop(gate);
    return NULL;
}

static void test_stop_refuses_the_queued_and_ends_the_running(void)
{
    uint16_t port;
    struct MHD_Daemon *d = setup(&port);
    if (!d)
        return;
    struct client a, b, c;
    start_client(&a, port, "/scan/a");
    CHECK(wait_inside(1));
    start_client(&b, port, "/scan/b");
    CHECK(wait_waiting(1));
    /* the stop resumes b unrun, then waits for a's worker */
    pthread_t st;
    pthread_create(&st, NULL, stopper, NULL);
    pthread_join(b.thread, NULL);
    CHECK_INT(b.status, 503);
    start_client(&c, port, "/scan/c"); /* refused at once, not queued */
    pthread_join(c.thread, NULL);
    CHECK_INT(c.status, 503);
    release();
    pthread_join(st, NULL);
    pthread_join(a.thread, NULL);
    CHECK_INT(a.status, 200);
    CHECK_INT(norder, 2);
    CHECK(memcmp(order, "wa", 2) == 0);
    MHD_stop_daemon(d);
    rt__gate_free(gate);
}

int main(void)
{
    RUN(test_scans_in_order_without_http_threads);
    RUN(test_stop_refuses_the_queued_and_ends_the_running);
    return TEST_DONE();
}
