/* The loopback load test (bench/load, `make bench-load`): simulated SDK instances uploading
 * pprof profiles to a real `roottrace serve`, diff queries beside them, and two hostile
 * scenarios (slow clients, oversized bodies), with the server's RSS sampled every second.
 * Declarations shared by the files of the one binary build/bench/load. */
#ifndef RT_BENCH_LOAD_H
#define RT_BENCH_LOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- latencies and errors -------------------------------------------------------------- */

#define LOAD_MAX_KINDS 24

/* Outcomes of one kind of request: latencies of the successes (ms) and every failure counted
 * by kind ("http 503", "curl: Timeout was reached"). Thread-safe through mu. */
struct load_stats {
    pthread_mutex_t mu;
    double *lat_ms;              /* latencies of 2xx answers, ms */
    size_t n, cap;
    uint64_t errors;             /* non-2xx answers and transport errors */
    char kinds[LOAD_MAX_KINDS][48];
    uint64_t kind_count[LOAD_MAX_KINDS];
    size_t nkinds;
};

void load_stats_init(struct load_stats *s);
void load_stats_cleanup(struct load_stats *s);
/* Records a success taking ms milliseconds. */
void load_stats_ok(struct load_stats *s, double ms);
/* Records a failure of kind (copied; at most 47 bytes kept). */
void load_stats_fail(struct load_stats *s, const char *kind);
/* The q-quantile (0..1) of the recorded latencies (sorts them); 0 when there are none. */
double load_stats_quantile(struct load_stats *s, double q);

/* ---- the server's resident memory ------------------------------------------------------ */

/* VmRSS of pid every second, each sample labelled with the phase running then. */
struct load_rss {
    pid_t pid;
    pthread_t thread;
    pthread_mutex_t mu;
    bool stop;
    const char *phase;           /* static string, the current phase */
    int64_t t0_ns;
    struct load_rss_sample { double t_s; long kb; const char *phase; } *v;
    size_t n, cap;
};

/* Starts sampling pid; returns 0 or -1. */
int load_rss_start(struct load_rss *r, pid_t pid);
/* Labels the samples from now on. */
void load_rss_phase(struct load_rss *r, const char *phase);
/* Stops the sampler; the samples stay readable until load_rss_free. */
void load_rss_stop(struct load_rss *r);
void load_rss_free(struct load_rss *r);
/* VmRSS of pid in KiB, -1 when it cannot be read. */
long load_rss_kb(pid_t pid);
/* Largest and last sample of phase (NULL: all). Returns the number of samples. */
size_t load_rss_summary(struct load_rss *r, const char *phase, long *max_kb, long *first_kb,
                        long *last_kb);

/* ---- simulated instances and their profiles --------------------------------------------- */

/* One SDK instance: its service, its name, and the gzip pprof it uploads (a CPU profile of
 * 60 s of its own stacks, drawn from its service's call tree). */
struct load_instance {
    int service;                 /* 0 .. nservices-1 */
    char name[48];
    unsigned char *body;         /* owned, gzip pprof */
    size_t len;
};

/* Builds nservices x per_service instances. Returns the array (free with
 * load_instances_free) or NULL with a message on stderr. */
struct load_instance *load_instances_new(int nservices, int per_service, uint64_t seed);
void load_instances_free(struct load_instance *v, size_t n);

/* ---- the server and its HTTP API ------------------------------------------------------- */

struct load_server {
    pid_t pid;
    uint16_t port;
    char data_dir[256];
    char log_path[300];
    char url[64];
    const char *token;           /* the admin token (bootstrap) */
    char ingest_key[128];
    bool reaped;                 /* the server was found dead and reaped: pid is 0 */
    int reaped_status;           /* its waitpid status then */
};

/* Starts bin serve on a fresh data dir and a free loopback port, waits for /healthz (20 s).
 * extra: NULL-terminated extra arguments (may be NULL). Returns 0 or -1 with a message. */
int load_server_start(struct load_server *s, const char *bin, const char *const *extra);
/* SIGTERM, waits; returns the exit status (or -1), or the status saved when the server was
 * found dead and reaped (load_server_reap). Removes the data dir unless keep. */
int load_server_stop(struct load_server *s, bool keep);
/* True when the server is still running; when it has exited, reaps it and saves its status
 * for load_server_stop (so that no signal goes to a pid the system may have reused). */
bool load_server_running(struct load_server *s);

/* One blocking request with the admin token; body may be NULL. Returns the status (0 on a
 * transport error); *out (may be NULL) receives the malloc'd answer body. */
long load_http(const struct load_server *s, const char *method, const char *path,
               const char *body, char **out);

/* ---- the upload driver ------------------------------------------------------------------ */

/* What the upload driver does: open loop, every instance uploading every interval_s (first
 * upload at a random phase), for seconds; or, with seed_per_instance > 0, closed loop: that
 * many back-dated profiles per instance, at most `concurrency` in flight. */
struct load_drive {
    const struct load_server *srv;
    const struct load_instance *inst;
    size_t ninst;
    double interval_s;
    double seconds;
    int seed_per_instance;
    int64_t seed_end_ns;         /* the seeded profiles end here (Unix ns) */
    int concurrency;             /* max connections */
    volatile int *stop;          /* optional: stops early when set */
    struct load_stats *stats;    /* results */
    uint64_t offered;            /* uploads due during the run */
    uint64_t started, done;
    double elapsed_s;
};

/* Runs the driver (blocking). Returns 0 or -1 on a setup failure. */
int load_drive_run(struct load_drive *d);

/* Diff clients: nthreads threads querying issue diffs and /api/v1/diff in a loop. */
struct load_queries {
    const struct load_server *srv;
    int nservices;
    char (*issue_ids)[32];       /* one issue per service */
    int64_t t0_ns;               /* windows are placed around it */
    int nthreads;
    volatile int stop;
    pthread_t th[16];
    struct load_stats stats;
    int64_t start_ns, end_ns;
};

int load_queries_start(struct load_queries *q);
void load_queries_stop(struct load_queries *q);

/* ---- hostile clients -------------------------------------------------------------------- */

/* Slow clients (slowloris): n connections, half sending headers and half a body, one byte
 * every byte_interval_s, for seconds. */
struct load_slow_result {
    int opened, closed_by_server, still_open;
    int answered;                /* got an HTTP answer before the close */
    char first_status[64];       /* e.g. "HTTP/1.1 408" of the first answer seen */
    double close_min_s, close_med_s, close_max_s; /* connection age at the server's close */
};
int load_slowloris(uint16_t port, int n, double byte_interval_s, double seconds,
                   struct load_slow_result *res);

/* Oversized bodies: n concurrent uploads of size bytes, each mode in turn. */
enum load_big_mode { LOAD_BIG_HONEST, LOAD_BIG_EXPECT, LOAD_BIG_CHUNKED, LOAD_BIG_LYING };
struct load_big_result {
    int n, got_413, with_reason, other_status, reset_or_closed;
    int wrong; /* of other_status: a 2xx (an oversized body stored) or a 5xx other than 503 */
    double sent_med_mib, sent_max_mib; /* body bytes sent before the answer (or close) */
    double time_max_s;
    char other[64];              /* the first unexpected status line */
};
int load_oversize(uint16_t port, const char *token, enum load_big_mode mode, int n, size_t size,
                  double timeout_s, struct load_big_result *res);
const char *load_big_mode_name(enum load_big_mode m);

/* ---- small helpers ---------------------------------------------------------------------- */

int64_t load_now_ns(void);        /* CLOCK_MONOTONIC */
int64_t load_wall_ns(void);       /* CLOCK_REALTIME */

#endif
