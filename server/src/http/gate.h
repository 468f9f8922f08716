/* The scan workers: the requests that scan profile windows (the profile, timeline, diff and
 * export answers: rt_api_scans) are not answered on the HTTP threads. Each is suspended
 * (holding no thread) and queued, in arrival order, for a small pool of worker threads of
 * lower CPU priority, as many as the cores; a worker builds its answer and resumes it, and the
 * HTTP thread that picks it up sends it. So uploads and config polls always find an HTTP
 * thread, and when uploads and queries want more CPU than there is, the uploads get it first.
 * Internal to the http module (server.c); docs/decisions.md "Queries take turns". */
#ifndef RT_HTTP_GATE_H
#define RT_HTTP_GATE_H

#include <microhttpd.h>
#include <stddef.h>

/* The nice value of the workers (Linux: per thread): a nice-0 thread outweighs one of them ten
 * to one when both want the CPU, and they run at full speed when nothing else does. */
#define RT_GATE_NICE 10

/* Where a job stands. */
enum rt__gate_state {
    RT_GATE_NONE = 0, /* not submitted (the request does not scan, or not yet) */
    RT_GATE_QUEUED,   /* suspended, queued or running; still QUEUED on resume: refused */
    RT_GATE_DONE,     /* its worker ran it: the answer is ready to send */
    RT_GATE_REFUSED,  /* the gate had stopped: answer 503 */
};

/* One request's work, kept in the request's own state (a suspended connection is not
 * completed before it is resumed, so the job outlives its run). */
struct rt__gate_job {
    struct MHD_Connection *conn;
    void *arg;                 /* the caller's, for run */
    enum rt__gate_state state; /* written by the gate while suspended */
    struct rt__gate_job *next;
};

struct rt__gate;

/* Runs a job on a worker: builds its answer (in the caller's state around job). */
typedef void (*rt__gate_run)(void *ud, struct rt__gate_job *job);

/* Starts workers (>= 1) threads that run the jobs with run(ud, job). NULL when a thread or
 * memory cannot be had. Free with rt__gate_free after rt__gate_stop. */
struct rt__gate *rt__gate_new(unsigned workers, rt__gate_run run, void *ud);

/* Frees g (NULL accepted); its workers are joined by rt__gate_stop. */
void rt__gate_free(struct rt__gate *g);

/* Queues job for conn and suspends conn. Returns 0 (return MHD_YES from the access handler;
 * on resume job->state says DONE, or still QUEUED when the gate stopped first), or -1 when
 * the gate has stopped (job->state RT_GATE_REFUSED, nothing suspended). Once it returns 0 the
 * job belongs to the workers until the connection is resumed: read nothing of it before (a
 * worker may already have run it). The daemon must allow suspend and resume. */
int rt__gate_submit(struct rt__gate *g, struct MHD_Connection *conn, struct rt__gate_job *job);

/* Refuses new jobs, resumes every queued one unrun (its state stays QUEUED: answer 503), lets
 * the running ones end (they resume their connections) and joins the workers. libmicrohttpd
 * requires every suspended connection resumed before its daemon stops: call this first. */
void rt__gate_stop(struct rt__gate *g);

/* Jobs queued now (not running), and jobs that ever found every worker busy (for /metrics). */
void rt__gate_counts(struct rt__gate *g, size_t *waiting, unsigned long long *waited);

#endif
