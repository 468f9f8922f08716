/* `roottrace serve`: the server with SQLite under --data (or the store --store names, e.g.
 * clickhouse:http://HOST:8123/DB), until SIGTERM or SIGINT. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "rt/log.h"
#include "rt/memory.h"
#include "rt/server.h"
#include "rt/timeutil.h"

/* Raises the open-files limit to its hard maximum: each waiting SDK holds a socket. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* A stop that takes longer than this (the server's 5 s grace for uploads, then whatever a
 * stuck store call holds) ends the process anyway, as does a second SIGTERM or SIGINT. */
#define STOP_LIMIT_S 30

static sigset_t stop_signals;     /* SIGTERM and SIGINT, blocked in every thread */
static atomic_bool stop_done;     /* the stop ended: the watchdog must not end the process */

/* The stop watchdog (a thread started at the first signal): waits for a second stop signal
 * or STOP_LIMIT_S, then logs and ends the process with status 1, unless the stop ended in
 * the meantime. Interruptions (EINTR: LeakSanitizer's check at exit stops every thread)
 * are waited through. */
static void *stop_watchdog(void *arg)
{
    (void)arg;
    int64_t end = rt_time_mono_ns() + (int64_t)STOP_LIMIT_S * RT_NS_PER_S;
    int sig = -1;
    for (int64_t left; sig < 0 && (left = end - rt_time_mono_ns()) > 0;) {
        struct timespec ts = {left / RT_NS_PER_S, left % RT_NS_PER_S};
        sig = sigtimedwait(&stop_signals, NULL, &ts);
        if (sig < 0 && errno != EINTR)
            break; /* EAGAIN: the limit passed */
    }
    if (atomic_load(&stop_done))
        return NULL;
    if (sig > 0)
        rt_log(RT_LOG_WARN, "second %s while stopping: exiting now",
               sig == SIGINT ? "SIGINT" : "SIGTERM"); /* strsignal is not thread-safe */
    else
        rt_log(RT_LOG_WARN, "not stopped after %d s: exiting now", STOP_LIMIT_S);
    _exit(1);
}

int rt__cli_serve(int argc, char **argv)
{
    struct cli c;
    if (rt__cli_parse(&c, argc, argv,
                      "listen retention poll-interval alert-lead alert-service-label "
                      "rollup-interval"))
        return 2;
    struct rt_server_opts opts = {0};
    struct rt_error err = {0};
    opts.listen = rt__cli_opt(&c, "listen", "127.0.0.1:4040");
    /* a remote store's disk is not ours to watch (uploads' disk-full check) */
    opts.data_dir = rt_store_uri_is_remote(c.data) ? NULL : c.data;
    if (rt_duration_parse(rt__cli_opt(&c, "retention", "30d"), &opts.retention_ns)) {
        fprintf(stderr, "roottrace: --retention must be a duration such as 30d\n");
        return 2;
    }
    if (rt_duration_parse(rt__cli_opt(&c, "alert-lead", "0"), &opts.alert_lead_ns) ||
        opts.alert_lead_ns < 0 || opts.alert_lead_ns > 24 * 3600 * RT_NS_PER_S) {
        fprintf(stderr, "roottrace: --alert-lead must be a duration from 0 to 24h, such as "
                        "5m\n");
        return 2;
    }
    /* how often closed hours are rolled up (docs/internals/rollups.md); 0 = never */
    if (rt_duration_parse(rt__cli_opt(&c, "rollup-interval", "60s"), &opts.rollup_interval_ns) ||
        opts.rollup_interval_ns < 0 || opts.rollup_interval_ns > 3600 * RT_NS_PER_S) {
        fprintf(stderr, "roottrace: --rollup-interval must be a duration up to 1h, such as 60s "
                        "(0: never build rollups)\n");
        return 2;
    }
    if (opts.rollup_interval_ns == 0)
        opts.rollup_interval_ns = -1;
    opts.alert_service_labels = rt__cli_opt(&c, "alert-service-label", NULL);
    if (opts.alert_service_labels &&
        (!*opts.alert_service_labels || strlen(opts.alert_service_labels) > 255)) {
        fprintf(stderr, "roottrace: --alert-service-label is a comma-separated list of labels, "
                        "such as service,job\n");
        return 2;
    }
    /* Block the stop signals before any thread starts, so only sigwait sees them. */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    if (rt_memory_policy())
        rt_log(RT_LOG_WARN, "the C library refused the malloc thresholds; its defaults stay");

    struct rt_store *store = rt_store_open(c.data, &err);
    if (!store) {
        char where[1024];
        rt_store_uri_redacted(c.data, where, sizeof(where));
        fprintf(stderr, "roottrace: cannot open the store in %s: %s\n", where, err.msg);
        return 1;
    }
    rt_store_warn_open_modes(c.data);
    int64_t poll_ns;
    if (rt_duration_parse(rt__cli_opt(&c, "poll-interval", "10s"), &poll_ns) ||
        poll_ns < RT_NS_PER_S || poll_ns > RT_POLL_INTERVAL_MAX_S * RT_NS_PER_S) {
        fprintf(stderr, "roottrace: --poll-interval must be between 1s and %ds\n",
                RT_POLL_INTERVAL_MAX_S);
        rt_store_free(store);
        return 2;
    }
    struct rt_control *control = rt_control_new(store, poll_ns / RT_NS_PER_S, &err);
    char *shown = NULL;
    if (!control || rt_control_bootstrap(control, getenv("ROOTTRACE_BOOTSTRAP_TOKEN"), &shown,
                                         &err)) {
        fprintf(stderr, "roottrace: %s\n", err.msg);
        rt_control_free(control);
        rt_store_free(store);
        return 1;
    }
    if (shown) {
        fprintf(stderr, "roottrace: bootstrap admin token (shown once, stored only as a "
                        "hash):\n\n    %s\n\n",
                shown);
        free(shown);
    }
    struct rt_server *srv = rt_server_start(store, control, &opts, &err);
    if (!srv) {
        fprintf(stderr, "roottrace: %s\n", err.msg);
        rt_control_free(control);
        rt_store_free(store);
        return 1;
    }
    char where[1024];
    rt_store_uri_redacted(c.data, where, sizeof(where));
    rt_log(RT_LOG_INFO, "listening on %s (port %u), data in %s, retention %s", opts.listen,
           rt_server_port(srv), where, rt__cli_opt(&c, "retention", "30d"));
    /* Between stop signals, malloc's kept free memory goes back to the kernel now and then
     * (rt/memory.h). sigtimedwait gives -1 at each tick (EAGAIN) or interruption (EINTR). */
    const struct timespec tick = {RT_MEMORY_RELEASE_INTERVAL_S, 0};
    int sig;
    while ((sig = sigtimedwait(&stop_signals, NULL, &tick)) < 0)
        rt_memory_release(RT_MEMORY_RELEASE_KEEP);
    rt_log(RT_LOG_INFO, "%s: stopping", strsignal(sig));
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, stop_watchdog, NULL) == 0)
        pthread_detach(watchdog);
    rt_server_stop(srv);
    rt_control_free(control);
    rt_store_free(store);
    atomic_store(&stop_done, true);
    rt_log(RT_LOG_INFO, "stopped");
    return 0;
}
