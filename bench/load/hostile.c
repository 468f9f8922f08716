/* Hostile clients on raw sockets and epoll: slow clients (slowloris) that send headers or a
 * body a byte at a time, and floods of uploads over the body limit (an honest Content-Length,
 * the same with Expect: 100-continue, chunked with no length, and a Content-Length that lies). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "load.h"

#define CHUNK 65536

/* One hostile connection. */
struct hconn {
    int fd;
    int kind;                    /* slowloris: 0 headers, 1 body */
    bool open;
    int64_t opened_ns, closed_ns, next_send_ns;
    size_t sent;                 /* body bytes sent */
    size_t sent_at_answer;       /* body bytes sent when the answer began (or the close) */
    bool answered, continued, done;
    char resp[1024];             /* the start of what the server sent (after any 100) */
    size_t rlen;
    int64_t done_ns;             /* when the answer was complete */
    char *frame;                 /* oversized: the piece being sent (owned) */
    size_t plen, poff;           /* its length, and how much of it went out */
};

static int connect_loopback(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends what it can of p[0..n) (nonblocking); returns bytes sent, -1 when the peer is gone. */
static ssize_t send_some(int fd, const void *p, size_t n)
{
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k >= 0)
        return k;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN ? 0 : -1;
}

static void mark_closed(struct hconn *c)
{
    if (!c->open)
        return;
    c->open = false;
    c->closed_ns = load_now_ns();
    if (!c->answered)
        c->sent_at_answer = c->sent;
    close(c->fd);
}

/* Reads what the server sent; a 100 Continue is consumed (c->continued). Marks the
 * connection closed on EOF or error. */
static void read_answer(struct hconn *c)
{
    char buf[4096];
    for (;;) {
        ssize_t k = recv(c->fd, buf, sizeof(buf), 0);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            mark_closed(c);
            return;
        }
        if (k < 0)
            return;
        size_t room = sizeof(c->resp) - 1 - c->rlen, take = (size_t)k < room ? (size_t)k : room;
        memcpy(c->resp + c->rlen, buf, take);
        c->rlen += take;
        c->resp[c->rlen] = '\0';
        char *end;
        if (!strncmp(c->resp, "HTTP/1.1 100", 12) && (end = strstr(c->resp, "\r\n\r\n"))) {
            c->continued = true;
            c->rlen -= (size_t)(end + 4 - c->resp);
            memmove(c->resp, end + 4, c->rlen + 1);
        }
        if (c->rlen >= 12 && !c->answered && strncmp(c->resp, "HTTP/1.1 100", 12) != 0) {
            c->answered = true;
            c->sent_at_answer = c->sent;
        }
        if (c->answered && !c->done && strchr(c->resp, '}')) {
            c->done = true;
            c->done_ns = load_now_ns();
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- slow clients ------------------------------------------------------------------------- */

static const char SLOW_HEAD[] = "POST /api/v1/profiles?service=slowloris HTTP/1.1\r\n"
                                "Host: 127.0.0.1\r\nX-Slow: ";
static const char SLOW_BODY[] = "POST /api/v1/profiles?service=slowloris HTTP/1.1\r\n"
                                "Host: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                                "Content-Length: 100000\r\n\r\n";

int load_slowloris(uint16_t port, int n, double byte_interval_s, double seconds,
                   struct load_slow_result *res)
{
    memset(res, 0, sizeof(*res));
    struct hconn *c = calloc((size_t)n, sizeof(*c));
    double *ages = calloc((size_t)n, sizeof(*ages));
    int ep = epoll_create1(0);
    if (!c || !ages || ep < 0) {
        free(c);
        free(ages);
        return -1;
    }
    int64_t iv = (int64_t)(byte_interval_s * 1e9), t0 = load_now_ns();
    int64_t end = t0 + (int64_t)(seconds * 1e9);
    for (int i = 0; i < n; i++) {
        if ((c[i].fd = connect_loopback(port)) < 0)
            continue;
        c[i].open = true;
        c[i].kind = i % 2;
        c[i].opened_ns = load_now_ns();
        c[i].next_send_ns = c[i].opened_ns + (int64_t)i * iv / n;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
        const char *pre = c[i].kind ? SLOW_BODY : SLOW_HEAD;
        if (send_some(c[i].fd, pre, strlen(pre)) < 0)
            mark_closed(&c[i]);
        res->opened++;
    }
    struct epoll_event evs[256];
    for (int64_t now = load_now_ns(); now < end; now = load_now_ns()) {
        int k = epoll_wait(ep, evs, 256, 100);
        for (int j = 0; j < k; j++)
            read_answer(&c[evs[j].data.u32]);
        for (int i = 0; i < n; i++)
            if (c[i].open && c[i].next_send_ns <= now) {
                if (send_some(c[i].fd, "a", 1) < 0)
                    mark_closed(&c[i]);
                c[i].next_send_ns += iv;
            }
    }
    int nages = 0;
    for (int i = 0; i < n; i++) {
        if (c[i].answered) {
            res->answered++;
            if (!res->first_status[0])
                snprintf(res->first_status, sizeof(res->first_status), "%.12s", c[i].resp);
        }
        if (c[i].fd < 0)
            continue;
        if (c[i].open) {
            res->still_open++;
            close(c[i].fd);
        } else {
            res->closed_by_server++;
            ages[nages++] = (double)(c[i].closed_ns - c[i].opened_ns) / 1e9;
        }
    }
    if (nages) {
        qsort(ages, (size_t)nages, sizeof(*ages), cmp_double);
        res->close_min_s = ages[0];
        res->close_med_s = ages[nages / 2];
        res->close_max_s = ages[nages - 1];
    }
    close(ep);
    free(c);
    free(ages);
    return 0;
}

/* ---- oversized bodies --------------------------------------------------------------------- */

const char *load_big_mode_name(enum load_big_mode m)
{
    switch (m) {
    case LOAD_BIG_HONEST: return "Content-Length";
    case LOAD_BIG_EXPECT: return "Content-Length + Expect: 100-continue";
    case LOAD_BIG_CHUNKED: return "chunked, no length";
    case LOAD_BIG_LYING: return "Content-Length 1 MiB, sends more";
    }
    return "?";
}

/* Sends the next pieces of c's body, size bytes in all, chunked or not, without blocking:
 * a frame (a chunk with its header, or a plain slice) is kept until the socket took it all. */
static void send_body(struct hconn *c, enum load_big_mode mode, size_t size, const char *zeros)
{
    while (c->open) {
        if (c->poff == c->plen) {
            if (c->sent == size)
                return;
            size_t n = size - c->sent < CHUNK ? size - c->sent : CHUNK;
            if (mode == LOAD_BIG_CHUNKED) {
                int h = snprintf(c->frame, CHUNK + 32, "%zx\r\n", n);
                memcpy(c->frame + h, zeros, n);
                c->plen = (size_t)h + n;
                memcpy(c->frame + c->plen, "\r\n", 2);
                c->plen += 2;
                if (c->sent + n == size) {
                    memcpy(c->frame + c->plen, "0\r\n\r\n", 5);
                    c->plen += 5;
                }
            } else {
                memcpy(c->frame, zeros, n);
                c->plen = n;
            }
            c->poff = 0;
            c->sent += n;
        }
        ssize_t k = send_some(c->fd, c->frame + c->poff, c->plen - c->poff);
        if (k < 0) {
            mark_closed(c);
            return;
        }
        if (k == 0)
            return;
        c->poff += (size_t)k;
    }
}

int load_oversize(uint16_t port, const char *token, enum load_big_mode mode, int n, size_t size,
                  double timeout_s, struct load_big_result *res)
{
    memset(res, 0, sizeof(*res));
    res->n = n;
    struct hconn *c = calloc((size_t)n, sizeof(*c));
    double *sent = calloc((size_t)n, sizeof(*sent));
    char *zeros = calloc(1, CHUNK);
    int ep = epoll_create1(0);
    if (!c || !sent || !zeros || ep < 0)
        goto out;
    char head[512];
    snprintf(head, sizeof(head),
             "POST /api/v1/profiles?service=flood HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n%s\r\n",
             token,
             mode == LOAD_BIG_CHUNKED ? "Transfer-Encoding: chunked\r\n"
             : mode == LOAD_BIG_LYING ? "Content-Length: 1048576\r\n"
             : mode == LOAD_BIG_EXPECT ? "Content-Length: 20971520\r\nExpect: 100-continue\r\n"
                                       : "Content-Length: 20971520\r\n");
    int64_t t0 = load_now_ns(), end = t0 + (int64_t)(timeout_s * 1e9);
    for (int i = 0; i < n; i++) {
        if ((c[i].fd = connect_loopback(port)) < 0)
            continue;
        if (!(c[i].frame = malloc(CHUNK + 32))) {
            close(c[i].fd);
            c[i].fd = -1;
            continue;
        }
        c[i].open = true;
        c[i].opened_ns = load_now_ns();
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
        usleep(1000); /* the connect completes on loopback within this */
        if (send_some(c[i].fd, head, strlen(head)) < (ssize_t)strlen(head))
            mark_closed(&c[i]);
    }
    struct epoll_event evs[256];
    int active = n;
    while (active > 0 && load_now_ns() < end) {
        int k = epoll_wait(ep, evs, 256, 5);
        for (int j = 0; j < k; j++)
            read_answer(&c[evs[j].data.u32]);
        active = 0;
        for (int i = 0; i < n; i++) {
            if (!c[i].open || c[i].done)
                continue;
            active++;
            bool may_send = mode != LOAD_BIG_EXPECT || c[i].continued;
            if (!c[i].answered && may_send)
                send_body(&c[i], mode, size, zeros);
        }
    }
    for (int i = 0; i < n; i++) {
        struct hconn *h = &c[i];
        if (h->answered && !strncmp(h->resp + 9, "413", 3)) {
            res->got_413++;
            res->with_reason += strstr(h->resp, "too_large") != NULL;
        } else if (h->answered) {
            res->other_status++;
            int code = atoi(h->resp + 9);
            res->wrong += (code >= 200 && code < 300) || (code >= 500 && code != 503);
            if (!res->other[0])
                snprintf(res->other, sizeof(res->other), "%.*s",
                         (int)strcspn(h->resp, "\r\n"), h->resp);
        } else {
            res->reset_or_closed++;
        }
        sent[i] = (double)(h->answered ? h->sent_at_answer : h->sent) / 1048576.0;
        int64_t at = h->done ? h->done_ns : h->open ? load_now_ns() : h->closed_ns;
        double t = (double)(at - h->opened_ns) / 1e9;
        res->time_max_s = t > res->time_max_s ? t : res->time_max_s;
        if (h->open)
            close(h->fd);
        free(h->frame);
    }
    qsort(sent, (size_t)n, sizeof(*sent), cmp_double);
    res->sent_med_mib = sent[n / 2];
    res->sent_max_mib = sent[n - 1];
out:
    if (ep >= 0)
        close(ep);
    free(c);
    free(sent);
    free(zeros);
    return 0;
}
