/* Deadlines on receiving a request, against slow clients (slowloris): libmicrohttpd's own
 * timeout is an idle timeout, which a client sending a byte every few seconds never meets.
 * Internal to the http module (server.c); docs/decisions.md "Slow clients". */
#ifndef RT_HTTP_DEADLINE_H
#define RT_HTTP_DEADLINE_H

#include <microhttpd.h>
#include <stddef.h>

/* Headers (and the wait for the next request on a kept-alive connection) must arrive within
 * RT_HEADER_DEADLINE_S of the connection's start or of the previous request's end. */
#define RT_HEADER_DEADLINE_S 30
/* A body must arrive within RT_BODY_GRACE_S plus one second per RT_BODY_MIN_RATE bytes
 * received (a 4 MiB upload at 1 KiB/s has 68 min; a byte every 5 s is cut after 30 s). */
#define RT_BODY_GRACE_S 30
#define RT_BODY_MIN_RATE 1024

struct rt__deadlines;

/* Starts the watcher thread, which shuts down (shutdown(2), so libmicrohttpd closes it as a
 * peer's close) each connection past its deadline, checking every second. NULL on failure
 * (the server then runs without deadlines). Free with rt__deadlines_free. */
struct rt__deadlines *rt__deadlines_new(void);

/* Stops the thread and frees d (NULL accepted). Call after MHD_stop_daemon. */
void rt__deadlines_free(struct rt__deadlines *d);

/* The MHD_OPTION_NOTIFY_CONNECTION callback; cls is the rt__deadlines (or NULL: no-op). */
void rt__deadlines_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);

/* The request on conn is receiving its body, received bytes so far (0 at its start). */
void rt__deadlines_body(struct MHD_Connection *conn, size_t received);

/* The request on conn has been received whole: no deadline while it is answered. */
void rt__deadlines_working(struct MHD_Connection *conn);

/* The request on conn is over: the next one's headers are due from now. */
void rt__deadlines_idle(struct MHD_Connection *conn);

#endif
