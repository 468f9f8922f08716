/* The HTTP server: libmicrohttpd in front of the API handlers, /healthz, /metrics, the
 * request log, and the retention sweeper (DESIGN §8, §10). */
#ifndef RT_SERVER_H
#define RT_SERVER_H

#include <stdint.h>

#include "rt/control.h"
#include "rt/err.h"
#include "rt/store.h"

struct rt_server;

struct rt_server_opts {
    const char *listen;        /* "HOST:PORT" or "[V6]:PORT"; default "127.0.0.1:4040" */
    const char *data_dir;      /* for the free-space check */
    int64_t retention_ns;      /* profiles older than this are deleted; 0 = keep all */
    unsigned threads;          /* HTTP threads; 0 = the cores + 4. The queries that scan
                                  windows run on as many scan workers as cores besides
                                  (docs/decisions.md "Queries take turns") */
    int64_t alert_lead_ns;     /* how much earlier than an alert's startsAt its issue starts
                                  (--alert-lead, DESIGN §13); 0 = none */
    const char *alert_service_labels; /* the labels naming an alert's service, in order
                                  (--alert-service-label); NULL = "service,service_name,job" */
    int64_t rollup_interval_ns; /* how often the hours that closed are rolled up
                                  (--rollup-interval, docs/internals/rollups.md); 0 = every
                                  60 s, < 0 = never */
};

/* Starts serving on opts->listen with store and control (borrowed; both must outlive the
 * server). Held config polls (DESIGN §5) are suspended connections, woken by a timer thread
 * or by a config change. Returns NULL with err set (e.g. the address is in use). */
struct rt_server *rt_server_start(struct rt_store *store, struct rt_control *control,
                                  const struct rt_server_opts *opts, struct rt_error *err);

/* The TCP port actually bound (useful with port 0). */
uint16_t rt_server_port(const struct rt_server *srv);

/* Stops (docs/decisions.md, "Stopping"): closes new connections unanswered from then on; cancels the
 * store's reads (rt_store_cancel_reads: queries in flight answer 503 at their next profile);
 * answers held polls; lets the other requests in flight (uploads) finish, waiting up to 5 s
 * for them; answers 503 to requests begun meanwhile on open connections; then closes every
 * connection, stops the sweeper and frees srv. The store is left open (its owner closes it).
 * Accepts NULL. */
void rt_server_stop(struct rt_server *srv);

#endif
