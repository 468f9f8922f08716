/* Tests of rt_server_stop (server/src/http/server.c) under requests: the server is started
 * and stopped many times while clients keep connecting. libmicrohttpd 0.9.75 aborts the
 * process ("Failed to remove listen FD from epoll set") when MHD_quiesce_daemon races a
 * worker thread of an epoll daemon; the server must stop accepting another way
 * (docs/decisions.md, "Stopping"). A failure here is the process aborting.
 *
 * The race is rare: the version that quiesced aborted after 461-1,253 rounds in five runs of
 * RT_STOP_ROUNDS=3000, so the default 600 rounds (about 10 s) catch it in about half the runs
 * of `make test`; `RT_STOP_ROUNDS=3000 build/tests/http/test_server_stop` to be sure. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rt/server.h"
#include "rt/store.h"
#include "test.h"

static char dir[] = "/tmp/rt-server-stop-XXXXXX";

struct client {
    pthread_t thread;
    uint16_t port;
    atomic_bool stop;
    long answered; /* requests answered 200 */
    long refused;  /* connections refused or closed unanswered */
};

/* GET /healthz on a new connection; true when "HTTP/1.1 200" came back. */
static bool get_healthz(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = false;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        char buf[64] = {0};
        if (write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1) &&
            read(fd, buf, sizeof(buf) - 1) > 12)
            ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
    }
    close(fd);
    return ok;
}

static void *client_run(void *arg)
{
    struct client *c = arg;
    while (!atomic_load(&c->stop)) {
        if (get_healthz(c->port))
            c->answered++;
        else
            c->refused++;
    }
    return NULL;
}

static void test_stop_while_clients_connect(void)
{
    struct rt_error err = {0};
    struct rt_store *st = rt_store_open(dir, &err);
    CHECK(st != NULL);
    if (!st)
        return;
    enum { CLIENTS = 3 };
    const int ROUNDS = getenv("RT_STOP_ROUNDS") ? atoi(getenv("RT_STOP_ROUNDS")) : 600;
    long answered = 0, refused = 0;
    int started = 0;
    for (int round = 0; round < ROUNDS; round++) {
        struct rt_server_opts o = {.listen = "127.0.0.1:0", .data_dir = dir, .threads = 4,
                                   .rollup_interval_ns = -1};
        struct rt_server *srv = rt_server_start(st, NULL, &o, &err);
        CHECK(srv != NULL);
        if (!srv)
            break;
        started++;
        struct client cl[CLIENTS];
        for (int i = 0; i < CLIENTS; i++) {
            memset(&cl[i], 0, sizeof(cl[i]));
            cl[i].port = rt_server_port(srv);
            pthread_create(&cl[i].thread, NULL, client_run, &cl[i]);
        }
        /* Let the clients reach the workers, then stop in the middle of their requests. */
        nanosleep(&(struct timespec){0, (round % 5 + 1) * 200 * 1000}, NULL);
        rt_server_stop(srv);
        for (int i = 0; i < CLIENTS; i++) {
            atomic_store(&cl[i].stop, true);
            pthread_join(cl[i].thread, NULL);
            answered += cl[i].answered;
            refused += cl[i].refused;
        }
    }
    CHECK_INT(started, ROUNDS);
    /* The clients did reach the server while it stopped, and were turned away after. */
    CHECK(answered > ROUNDS);
    CHECK(refused >= ROUNDS);
    printf("  %d rounds: %ld requests answered, %ld turned away\n", started, answered,
           refused);
    rt_store_free(st);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_stop_while_clients_connect);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return TEST_DONE();
}
