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
    unsigned threads;          /* HTTP worker threads; 0 = 4 */
};

/* Starts serving on opts->listen with store and control (borrowed; both must outlive the
 * server). Held config polls (DESIGN §5) are suspended connections, woken by a timer thread
 * or by a config change. Returns NULL with err set (e.g. the address is in use). */
struct rt_server *rt_server_start(struct rt_store *store, struct rt_control *control,
                                  const struct rt_server_opts *opts, struct rt_error *err);

/* The TCP port actually bound (useful with port 0). */
uint16_t rt_server_port(const struct rt_server *srv);

/* Stops accepting, finishes requests in flight, stops the sweeper, frees srv; accepts NULL. */
void rt_server_stop(struct rt_server *srv);

#endif
