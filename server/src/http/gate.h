/* The scan gate: at most a fixed number of requests that scan profile windows (the profile,
 * timeline, diff and export answers: rt_api_scans) run at once; the others wait in arrival
 * order, suspended, holding no HTTP thread. So the threads stay free for uploads and config
 * polls however many queries arrive, and the queries share the CPU with no more of their kind
 * than there are cores. Internal to the http module (server.c); docs/decisions.md "Queries
 * take turns". */
#ifndef RT_HTTP_GATE_H
#define RT_HTTP_GATE_H

#include <microhttpd.h>
#include <stddef.h>

/* Where a request stands at the gate. */
enum rt__gate_state {
    RT_GATE_NONE = 0, /* not through the gate (yet, or it does not scan) */
    RT_GATE_QUEUED,   /* suspended, waiting; still QUEUED when resumed: the gate stopped */
    RT_GATE_RUNNING,  /* holds a slot until rt__gate_leave */
    RT_GATE_REFUSED,  /* the gate had stopped: answer 503 */
    RT_GATE_DONE,     /* held a slot and gave it back */
};

/* A waiting request, kept in the request's own state (it outlives the wait: a suspended
 * connection is not completed before it is resumed). */
struct rt__gate_wait {
    struct MHD_Connection *conn;
    enum rt__gate_state *state;
    struct rt__gate_wait *next;
};

struct rt__gate;

/* A gate letting limit (>= 1) requests through at once. NULL when out of memory. */
struct rt__gate *rt__gate_new(unsigned limit);

/* Frees g (NULL accepted); call after rt__gate_stop and once no request is in flight. */
void rt__gate_free(struct rt__gate *g);

/* The request on conn asks for a slot: *state becomes RT_GATE_RUNNING (go on, then
 * rt__gate_leave), RT_GATE_QUEUED (conn is suspended and w queued: return MHD_YES; when it is
 * resumed, *state says RUNNING, the slot passed to it, or still QUEUED, the gate stopped), or
 * RT_GATE_REFUSED (the gate stopped). The caller's MHD daemon allows suspend and resume. */
void rt__gate_enter(struct rt__gate *g, struct MHD_Connection *conn, enum rt__gate_state *state,
                    struct rt__gate_wait *w);

/* Gives back the slot of a RUNNING request (*state becomes RT_GATE_DONE): it passes to the
 * first request waiting, which is resumed. */
void rt__gate_leave(struct rt__gate *g, enum rt__gate_state *state);

/* Resumes every waiting request (each to answer 503) and refuses all from now on; libmicrohttpd
 * requires every suspended connection resumed before its daemon stops. */
void rt__gate_stop(struct rt__gate *g);

/* Requests waiting now, and requests that ever waited (for /metrics). */
void rt__gate_counts(struct rt__gate *g, size_t *waiting, unsigned long long *waited);

#endif
