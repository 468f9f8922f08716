/* The load test's HTTP side: starting and stopping the server, blocking admin requests, the
 * upload driver (libcurl multi, one thread, open or closed loop) and the diff clients. */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "load.h"
#include "rt/buf.h"

#define ERRBODY 160

/* ---- the server ---------------------------------------------------------------------- */

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    uint16_t port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int load_server_start(struct load_server *s, const char *bin, const char *const *extra)
{
    if (!bench_mkdtemp(s->data_dir, sizeof(s->data_dir), "load")) {
        perror("load: mkdtemp");
        return -1;
    }
    snprintf(s->log_path, sizeof(s->log_path), "%s.log", s->data_dir);
    s->port = free_port();
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", (unsigned)s->port);
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)s->port);
    const char *argv[32] = {bin, "serve", "--data", s->data_dir, "--listen", listen};
    int argc = 6;
    for (; extra && *extra && argc < 31; extra++)
        argv[argc++] = *extra;
    argv[argc] = NULL;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        FILE *log = fopen(s->log_path, "w");
        if (log) {
            dup2(fileno(log), 1);
            dup2(fileno(log), 2);
        }
        setenv("ROOTTRACE_BOOTSTRAP_TOKEN", s->token, 1);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) {
        if (load_http(s, "GET", "/healthz", NULL, NULL) == 200)
            return 0;
        if (!load_server_running(s)) {
            fprintf(stderr, "load: the server exited at start (log: %s)\n", s->log_path);
            return -1;
        }
        usleep(50000);
    }
    fprintf(stderr, "load: the server did not become healthy (log: %s)\n", s->log_path);
    return -1;
}

bool load_server_running(struct load_server *s)
{
    if (s->pid <= 0)
        return false;
    int st;
    if (waitpid(s->pid, &st, WNOHANG) != s->pid)
        return true;
    s->reaped = true;
    s->reaped_status = st;
    s->pid = 0;
    return false;
}

int load_server_stop(struct load_server *s, bool keep)
{
    int status = s->reaped ? s->reaped_status : -1;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (int i = 0; i < 600 && waitpid(s->pid, &status, WNOHANG) == 0; i++)
            usleep(50000);
        if (status == -1) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
        s->pid = 0;
    }
    if (!keep) {
        bench_rm_tree(s->data_dir);
        remove(s->log_path);
    }
    return status;
}

static size_t collect(char *ptr, size_t size, size_t n, void *ud)
{
    rt_buf_append(ud, ptr, size * n);
    return size * n;
}

long load_http(const struct load_server *s, const char *method, const char *path,
               const char *body, char **out)
{
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    char url[1024], auth[256];
    snprintf(url, sizeof(url), "%s%s", s->url, path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s->token);
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    struct rt_buf b;
    rt_buf_init(&b, 64 << 20);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    if (out)
        *out = rt_buf_into_cstr(&b);
    else
        rt_buf_cleanup(&b);
    return code;
}

/* ---- the upload driver ----------------------------------------------------------------- */

struct slot {
    CURL *h;
    size_t inst;
    int64_t t_start;
    bool busy;
    char url[512];
    char err[ERRBODY];           /* the start of the answer, kept for a failure's message */
    size_t errlen;
};

static size_t keep_start(char *ptr, size_t size, size_t n, void *ud)
{
    struct slot *sl = ud;
    size_t len = size * n, room = sizeof(sl->err) - 1 - sl->errlen;
    memcpy(sl->err + sl->errlen, ptr, len < room ? len : room);
    sl->errlen += len < room ? len : room;
    sl->err[sl->errlen] = '\0';
    return len;
}

/* Starts an upload of instance i whose profile starts at start_s (Unix seconds). */
static int start_upload(struct load_drive *d, CURLM *m, struct slot *sl, size_t i, double start_s,
                        struct curl_slist *hdr, uint64_t seq)
{
    const struct load_instance *in = &d->inst[i];
    if (!sl->h && !(sl->h = curl_easy_init()))
        return -1;
    snprintf(sl->url, sizeof(sl->url),
             "%s/api/v1/profiles?service=svc%02d&instance=%s&runtime=go&sdk_version=load-1"
             "&version=v1&profile_id=%08x-%04x-4000-8000-%012llx&start=%.3f&duration_s=60",
             d->srv->url, in->service, in->name, (unsigned)i, (unsigned)(seq & 0xffff),
             (unsigned long long)(load_wall_ns() & 0xffffffffffffULL), start_s);
    curl_easy_setopt(sl->h, CURLOPT_URL, sl->url);
    curl_easy_setopt(sl->h, CURLOPT_POSTFIELDS, in->body);
    curl_easy_setopt(sl->h, CURLOPT_POSTFIELDSIZE, (long)in->len);
    curl_easy_setopt(sl->h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(sl->h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(sl->h, CURLOPT_WRITEFUNCTION, keep_start);
    curl_easy_setopt(sl->h, CURLOPT_WRITEDATA, sl);
    curl_easy_setopt(sl->h, CURLOPT_PRIVATE, sl);
    sl->inst = i;
    sl->busy = true;
    sl->errlen = 0;
    sl->err[0] = '\0';
    sl->t_start = load_now_ns();
    d->started++;
    return curl_multi_add_handle(m, sl->h) == CURLM_OK ? 0 : -1;
}

/* The upload slots, with a stack of the free ones (taking one is O(1): the driver asks for
 * one per upload, thousands of times a second at saturation). */
struct pool {
    struct slot *slots;
    int *free;                   /* indexes of the free slots */
    int nfree;
};

/* A free slot of the pool, or NULL when all are busy. */
static struct slot *take_slot(struct pool *p)
{
    return p->nfree > 0 ? &p->slots[p->free[--p->nfree]] : NULL;
}

/* Collects finished uploads, returning their slots to the pool; returns how many finished. */
static int reap(struct load_drive *d, CURLM *m, struct pool *p, bool *busy_inst)
{
    int left, n = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct slot *sl;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&sl);
        double ms = (double)(load_now_ns() - sl->t_start) / 1e6;
        long code = 0;
        char kind[48];
        if (msg->data.result != CURLE_OK) {
            snprintf(kind, sizeof(kind), "curl: %s", curl_easy_strerror(msg->data.result));
            load_stats_fail(d->stats, kind);
        } else if (curl_easy_getinfo(sl->h, CURLINFO_RESPONSE_CODE, &code), code / 100 != 2) {
            snprintf(kind, sizeof(kind), "http %ld", code);
            load_stats_fail(d->stats, kind);
            if (d->stats->errors <= 3)
                fprintf(stderr, "load: upload answered %ld: %s\n", code, sl->err);
        } else {
            load_stats_ok(d->stats, ms);
        }
        curl_multi_remove_handle(m, sl->h);
        sl->busy = false;
        p->free[p->nfree++] = (int)(sl - p->slots);
        if (busy_inst)
            busy_inst[sl->inst] = false;
        d->done++;
        n++;
    }
    return n;
}

/* Waits for the uploads in flight (at most 90 s). */
static void drain(struct load_drive *d, CURLM *m, struct pool *p, bool *busy_inst)
{
    int64_t until = load_now_ns() + INT64_C(90000000000);
    int running = 1;
    while (running && load_now_ns() < until) {
        curl_multi_perform(m, &running);
        reap(d, m, p, busy_inst);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    reap(d, m, p, busy_inst);
}

int load_drive_run(struct load_drive *d)
{
    int conc = d->concurrency > 0 ? d->concurrency : 256;
    CURLM *m = curl_multi_init();
    struct slot *slots = calloc((size_t)conc, sizeof(*slots));
    int *free_ids = calloc((size_t)conc, sizeof(*free_ids));
    struct pool pool = {.slots = slots, .free = free_ids, .nfree = 0};
    int64_t *due = calloc(d->ninst, sizeof(*due));
    bool *busy = calloc(d->ninst, sizeof(*busy));
    char auth[200];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", d->srv->ingest_key);
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
    hdr = curl_slist_append(hdr, "Expect:");
    int rc = -1;
    if (!m || !slots || !free_ids || !due || !busy || !hdr)
        goto out;
    for (int k = conc - 1; k >= 0; k--)
        free_ids[pool.nfree++] = k;
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)conc);
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)conc);
    uint64_t rng = 0x10ad, seq = 0;
    int64_t t0 = load_now_ns(), iv = (int64_t)(d->interval_s * 1e9);
    int64_t end = t0 + (int64_t)(d->seconds * 1e9);
    size_t cursor = 0, seed_next = 0, seed_total = d->ninst * (size_t)(d->seed_per_instance > 0 ?
                                                            d->seed_per_instance : 0);
    for (size_t i = 0; i < d->ninst; i++)
        due[i] = t0 + (int64_t)(bench_rng_unit(&rng) * (double)iv);
    for (;;) {
        int64_t now = load_now_ns(), next = now + 50000000;
        if (seed_total ? seed_next >= seed_total : now >= end)
            break;
        if (d->stop && *d->stop) {
            end = now;             /* an open-ended run ends here */
            break;
        }
        struct slot *sl;
        if (seed_total) {
            while (seed_next < seed_total && (sl = take_slot(&pool))) {
                size_t i = seed_next % d->ninst, k = seed_next / d->ninst;
                double start = (double)d->seed_end_ns / 1e9 -
                               60.0 * (double)(d->seed_per_instance - (int)k);
                if (start_upload(d, m, sl, i, start, hdr, seq++))
                    goto out;
                seed_next++;
            }
        } else {
            /* From where the last pass stopped, so that at saturation every instance
             * waits its turn; a pass stops when no slot is free (a finished upload wakes
             * the poll below). Late instances start when their previous upload ends. */
            for (size_t k = 0; k < d->ninst; k++) {
                if (!pool.nfree)
                    break;
                size_t i = cursor;
                cursor = cursor + 1 == d->ninst ? 0 : cursor + 1;
                if (due[i] > now) {
                    next = due[i] < next ? due[i] : next;
                    continue;
                }
                if (busy[i])
                    continue;
                if (start_upload(d, m, take_slot(&pool), i, (double)load_wall_ns() / 1e9 - 60,
                                 hdr, seq++))
                    goto out;
                busy[i] = true;
                due[i] += iv;
                d->offered++;
            }
        }
        int running;
        curl_multi_perform(m, &running);
        reap(d, m, &pool, busy);
        int wait_ms = (int)((next - load_now_ns()) / 1000000);
        curl_multi_poll(m, NULL, 0, wait_ms < 1 ? 1 : wait_ms, NULL);
    }
    /* Uploads that came due but never started (every slot busy) still count as offered. */
    for (size_t i = 0; !seed_total && i < d->ninst; i++)
        if (due[i] <= end)
            d->offered += (uint64_t)((end - due[i]) / iv) + 1;
    drain(d, m, &pool, busy);
    d->elapsed_s = (double)(load_now_ns() - t0) / 1e9;
    rc = 0;
out:
    for (int i = 0; slots && i < conc; i++)
        if (slots[i].h) {
            if (slots[i].busy)
                curl_multi_remove_handle(m, slots[i].h);
            curl_easy_cleanup(slots[i].h);
        }
    curl_multi_cleanup(m);
    curl_slist_free_all(hdr);
    free(slots);
    free(free_ids);
    free(due);
    free(busy);
    return rc;
}

/* ---- diff clients ------------------------------------------------------------------------ */

static size_t discard(char *ptr, size_t size, size_t n, void *ud)
{
    return size * n;
}

static void *query_loop(void *arg)
{
    struct load_queries *q = arg;
    CURL *h = curl_easy_init();
    char auth[200], url[600];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", q->srv->token);
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    uint64_t rng = (uint64_t)(uintptr_t)&rng ^ (uint64_t)load_now_ns();
    double t0 = (double)q->t0_ns / 1e9;
    for (uint64_t k = 0; h && !q->stop; k++) {
        int s = (int)(bench_rng_next(&rng) % (uint64_t)q->nservices);
        if (k % 2 == 0)
            snprintf(url, sizeof(url), "%s/api/v1/issues/%s/diff?type=cpu&window_s=300",
                     q->srv->url, q->issue_ids[s]);
        else
            snprintf(url, sizeof(url),
                     "%s/api/v1/diff?service=svc%02d&type=cpu&base_from=%.0f&base_to=%.0f"
                     "&cur_from=%.0f&cur_to=%.0f", q->srv->url, s, t0 - 600, t0 - 300,
                     t0 - 300, t0 + 3600);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
        int64_t t = load_now_ns();
        CURLcode cc = curl_easy_perform(h);
        long code = 0;
        char kind[48];
        if (cc != CURLE_OK) {
            snprintf(kind, sizeof(kind), "curl: %s", curl_easy_strerror(cc));
            load_stats_fail(&q->stats, kind);
        } else if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), code != 200) {
            snprintf(kind, sizeof(kind), "http %ld", code);
            load_stats_fail(&q->stats, kind);
        } else {
            load_stats_ok(&q->stats, (double)(load_now_ns() - t) / 1e6);
        }
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return NULL;
}

int load_queries_start(struct load_queries *q)
{
    load_stats_init(&q->stats);
    q->stop = 0;
    q->start_ns = load_now_ns();
    if (q->nthreads > 16)
        q->nthreads = 16;
    for (int i = 0; i < q->nthreads; i++)
        if (pthread_create(&q->th[i], NULL, query_loop, q) != 0) {
            q->nthreads = i;
            return -1;
        }
    return 0;
}

void load_queries_stop(struct load_queries *q)
{
    q->stop = 1;
    for (int i = 0; i < q->nthreads; i++)
        pthread_join(q->th[i], NULL);
    q->end_ns = load_now_ns();
}
