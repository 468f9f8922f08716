/* Fuzz target: an upload end to end, POST /api/v1/profiles through rt_api_dispatch with a
 * trusted context on a seeded store (api_fixture.h, the server's 30-day retention): parsing,
 * the time checks against now and the retention horizon, and the store's write. The first
 * byte picks the parameters: bit 0 Content-Type text/plain (folded) or
 * application/octet-stream (pprof, gzip sniffed), bits 1-2 type= (absent, cpu, wall,
 * absent), bit 3 unit=nanoseconds (else period_ns=10000000), bit 4 start= (a minute ago),
 * bit 5 duration_s=10. The rest is the body. The fixture is rebuilt every
 * FIXTURE_RESET_RUNS runs, which bounds what the uploads add to the store. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api_fixture.h"

FIXTURE_FUZZER_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const types[] = {NULL, "cpu", "wall", NULL};
    if (!fixture_input(size))
        return 0;
    uint8_t sel = data[0];
    struct rt_api_param params[6] = {{"service", "upload"}, {"instance", "i-1"}};
    size_t n = 2;
    if (types[(sel >> 1) & 3])
        params[n++] = (struct rt_api_param){"type", types[(sel >> 1) & 3]};
    params[n++] = sel & 8 ? (struct rt_api_param){"unit", "nanoseconds"}
                          : (struct rt_api_param){"period_ns", "10000000"};
    char start[32];
    if (sel & 16) {
        snprintf(start, sizeof(start), "%lld",
                 (long long)(rt_time_now_ns() / RT_NS_PER_S - 60));
        params[n++] = (struct rt_api_param){"start", start};
    }
    if (sel & 32)
        params[n++] = (struct rt_api_param){"duration_s", "10"};
    struct rt_api_req req = {.method = "POST", .path = "/api/v1/profiles", .params = params,
                             .nparams = n,
                             .content_type = sel & 1 ? "text/plain" : "application/octet-stream",
                             .body = data + 1, .body_len = size - 1, .no_hold = true};
    fixture_dispatch(&req);
    return 0;
}
