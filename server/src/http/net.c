/* Small pieces of the HTTP server: net.h. */
#include "net.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The client address of conn into out ("-" when unknown). */
void rt__http_peer_address(struct MHD_Connection *conn, char out[INET6_ADDRSTRLEN])
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    strcpy(out, "-");
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, INET6_ADDRSTRLEN);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
                  INET6_ADDRSTRLEN);
}

/* "METHOD /path" for the request log, with every byte outside printable ASCII written as
 * \xNN: a path is the client's text and must not forge log lines. */
void rt__http_log_what(char *out, size_t n, const char *method, const char *url)
{
    size_t o = (size_t)snprintf(out, n, "%.16s ", method);
    for (const unsigned char *p = (const unsigned char *)url; *p && o + 5 < n; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\' && *p != '"')
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, n - o, "\\x%02x", *p);
    }
    out[o < n ? o : n - 1] = '\0';
}

int rt__http_parse_listen(const char *listen, struct sockaddr_storage *ss, struct rt_error *err)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
        return rt_error_set(err, RT_EINVAL, "--listen must be HOST:PORT, got '%s'", listen);
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return rt_error_set(err, RT_EINVAL, "bad port in --listen '%s'", listen);
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    size_t hl = strlen(host);
    if (host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &v6->sin6_addr) != 1)
            return rt_error_set(err, RT_EINVAL, "bad IPv6 address in --listen '%s'", listen);
        return 0;
    }
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
        return rt_error_set(err, RT_EINVAL, "bad IPv4 address in --listen '%s'", listen);
    return 0;
}
