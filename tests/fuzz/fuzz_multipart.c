/* Fuzz target: rt_ingest_multipart, the multipart/form-data splitter of Pyroscope's /ingest
 * (DESIGN §12). The input's first line is the Content-Type's boundary parameter (quoted when
 * the line starts with '"'), the rest the body. Every part returned must lie inside the body. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t blen = nl ? (size_t)(nl - data) : size;
    if (blen > 200)
        return 0;
    char ct[256];
    int n = snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%.*s", (int)blen,
                     (const char *)data);
    if (n < 0 || memchr(ct, '\0', (size_t)n))
        return 0;
    const uint8_t *body = nl ? nl + 1 : data + size;
    size_t len = (size_t)(data + size - body);
    struct rt_ingest_part parts[8];
    size_t np = 0;
    struct rt_error err = {0};
    if (rt_ingest_multipart(ct, body, len, parts, 8, &np, &err) == 0)
        for (size_t i = 0; i < np; i++)
            if (parts[i].data < body || parts[i].data + parts[i].len > body + len ||
                parts[i].name.ptr < (const char *)body ||
                parts[i].name.ptr + parts[i].name.len > (const char *)body + len)
                abort();
    return 0;
}
