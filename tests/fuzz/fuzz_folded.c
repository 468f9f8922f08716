/* Fuzz target: rt_ingest_parse on folded stacks. The first byte picks the parameters: bits 0-1
 * the unit (samples, nanoseconds, absent, an unknown one), bits 2-3 the type (cpu, wall,
 * absent, an unknown one), bits 4-6 period_ns (absent, 1, 10 ms, 1 s, 2^40, INT64_MAX, -1,
 * 3). The rest is the body; every profile returned is freed. */
#include <stddef.h>
#include <stdint.h>

#include "rt/ingest.h"
#include "rt/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const units[] = {"samples", "nanoseconds", NULL, "ms"};
    static const char *const types[] = {"cpu", "wall", NULL, "heap"};
    static const int64_t periods[] = {0,         1, 10000000, 1000000000, (int64_t)1 << 40,
                                      INT64_MAX, -1, 3};
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    struct rt_ingest_params params;
    rt_ingest_params_init(&params);
    params.service = "fuzz";
    params.format = RT_FMT_FOLDED;
    params.unit = units[sel & 3];
    params.type = types[(sel >> 2) & 3];
    params.period_ns = periods[(sel >> 4) & 7];
    struct rt_profile *out[2] = {NULL, NULL};
    size_t nout = 0;
    struct rt_error err = {0};
    if (rt_ingest_parse(data + 1, size - 1, &params, &lim, out, &nout, &err) == 0)
        for (size_t i = 0; i < nout; i++)
            rt_profile_free(out[i]);
    return 0;
}
