/* Fuzz target: the alert webhooks end to end (DESIGN §13) through rt_api_dispatch with a
 * trusted context on a seeded store (api_fixture.h): the payload's JSON, each alert's labels,
 * annotations (roottrace_lead), times and fingerprint, the queue, and the issue worker's
 * writes (flushed at once). The first byte's bit 0 picks Grafana's route (else
 * Alertmanager's), bit 1 a service_label= of "app,job"; the rest is the body. */
#include <stdint.h>
#include <string.h>

#include "api_fixture.h"

FIXTURE_FUZZER_INITIALIZE()

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_input(size))
        return 0;
    struct rt_api_param label = {"service_label", "app,job"};
    struct rt_api_req req = {.method = "POST",
                             .path = data[0] & 1 ? "/api/v1/alerts/grafana"
                                                 : "/api/v1/alerts/alertmanager",
                             .params = &label, .nparams = data[0] & 2 ? 1 : 0,
                             .content_type = "application/json", .body = data + 1,
                             .body_len = size - 1, .no_hold = true, .peer = "127.0.0.1"};
    fixture_dispatch(&req);
    rt_control_flush_alerts(fx.control, NULL);
    return 0;
}
