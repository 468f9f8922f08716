/* Fuzz target: rt_ingest_parse on a pprof body (gzip is sniffed, so gzip and raw protobuf are
 * both reached) with the limits of DESIGN §4. Every profile returned is freed. */
#include <stddef.h>
#include <stdint.h>

#include "rt/ingest.h"
#include "rt/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    struct rt_ingest_params params;
    rt_ingest_params_init(&params);
    params.service = "fuzz";
    params.format = RT_FMT_PPROF;
    struct rt_profile *out[2] = {NULL, NULL};
    size_t nout = 0;
    struct rt_error err = {0};
    if (rt_ingest_parse(data, size, &params, &lim, out, &nout, &err) == 0)
        for (size_t i = 0; i < nout; i++)
            rt_profile_free(out[i]);
    return 0;
}
