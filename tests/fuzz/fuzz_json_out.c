/* Fuzz target: rt_json_out (server/src/http/json_out.c) against jansson's own compact dump.
 * The input is JSON text read by jansson (any value, reals as reals, NUL in strings
 * allowed); the answer's text must equal json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(15)),
 * byte for byte, or the target aborts. The first 8 bytes of an input that is not JSON are
 * read as a double and compared the same way (every magnitude, subnormals included). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/json_out.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void compare(json_t *j)
{
    char *want = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = rt_json_out(j, NULL, 0, &b);
    if (want && (rc != 0 || strcmp(b.data ? b.data : "", want) != 0))
        abort();
    rt_buf_cleanup(&b);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *j = json_loadb((const char *)data, size,
                           JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL * (size % 2) |
                               JSON_ALLOW_NUL, &err);
    if (j) {
        compare(j);
        json_decref(j);
    } else if (size >= 8) {
        double d;
        memcpy(&d, data, sizeof(d));
        json_t *r = json_real(d); /* NULL for NaN and infinities, as jansson refuses them */
        if (r)
            compare(r);
        json_decref(r);
    }
    return 0;
}
