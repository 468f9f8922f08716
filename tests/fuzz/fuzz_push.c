/* Fuzz target: Pyroscope's Push route end to end, POST /push.v1.PusherService/Push through
 * rt_api_dispatch with a trusted context on a seeded store (api_fixture.h): the envelope
 * (protobuf-c, or Connect's JSON with base64 profiles), the labels, each sample's pprof, and
 * the store's write. The first byte's bit 0 picks Content-Type application/json (else
 * application/proto); the rest is the body (gzip sniffed). */
#include <stdint.h>
#include <string.h>

#include "api_fixture.h"

FIXTURE_FUZZER_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_input(size))
        return 0;
    struct rt_api_req req = {.method = "POST", .path = "/push.v1.PusherService/Push",
                             .content_type = data[0] & 1 ? "application/json"
                                                         : "application/proto",
                             .body = data + 1, .body_len = size - 1, .no_hold = true,
                             .peer = "127.0.0.1"};
    fixture_dispatch(&req);
    return 0;
}
