/* Small pieces of the HTTP server (server.c): the client's address, the request log's
 * "METHOD /path", and --listen's HOST:PORT. Internal to the http module. */
#ifndef RT_HTTP_NET_H
#define RT_HTTP_NET_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <stddef.h>
#include <sys/socket.h>

#include "rt/err.h"

/* The client address of conn into out ("-" when unknown). */
void rt__http_peer_address(struct MHD_Connection *conn, char out[INET6_ADDRSTRLEN]);

/* "METHOD /path" into out (n bytes) for the request log, every byte outside printable ASCII
 * written as \xNN: a path is the client's text and must not forge log lines. */
void rt__http_log_what(char *out, size_t n, const char *method, const char *url);

/* Parses --listen's "HOST:PORT", "[V6]:PORT" or "localhost:PORT" into ss. Returns 0, or
 * RT_EINVAL with err saying what is wrong. */
int rt__http_parse_listen(const char *listen, struct sockaddr_storage *ss, struct rt_error *err);

#endif
