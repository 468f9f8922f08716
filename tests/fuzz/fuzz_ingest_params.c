/* Fuzz target: Pyroscope's legacy POST /ingest end to end through rt_api_dispatch with a
 * trusted context on a seeded store (api_fixture.h): its parameters (name=app.kind{labels},
 * from and until by digit count, sampleRate, spyName, units, aggregationType, format), the
 * multipart body, and the profile. The input's first line is the query string, split on '&'
 * and '=' without percent-decoding (at most 16 parameters); its first byte picks the
 * Content-Type: bit 0 multipart/form-data with boundary "b" (else text/plain). The rest is
 * the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api_fixture.h"

FIXTURE_FUZZER_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_input(size))
        return 0;
    uint8_t sel = data[0];
    const uint8_t *nl = memchr(data + 1, '\n', size - 1);
    size_t qlen = nl ? (size_t)(nl - data - 1) : size - 1;
    char *q = malloc(qlen + 1);
    if (!q)
        return 0;
    memcpy(q, data + 1, qlen);
    q[qlen] = '\0';
    if (strlen(q) != qlen) { /* a NUL inside: the transport refuses such a query */
        free(q);
        return 0;
    }
    struct rt_api_param params[16];
    size_t n = 0;
    for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv && n < 16;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (eq)
            *eq = '\0';
        params[n++] = (struct rt_api_param){kv, eq ? eq + 1 : ""};
    }
    const uint8_t *body = nl ? nl + 1 : data + size;
    struct rt_api_req req = {.method = "POST", .path = "/ingest", .params = params,
                             .nparams = n,
                             .content_type = sel & 1 ? "multipart/form-data; boundary=b"
                                                     : "text/plain",
                             .body = body, .body_len = (size_t)(data + size - body),
                             .no_hold = true, .peer = "127.0.0.1"};
    fixture_dispatch(&req);
    free(q);
    return 0;
}
