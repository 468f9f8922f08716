/* Fuzz target: rt__ingest_jfr on a raw JFR recording (the module-internal decoder, as the
 * upload routes will call it after gunzip) with the limits of DESIGN §4. The input stays a
 * plain recording, so a crash is a JFR file: its length picks the parameters, len % 3 the
 * wanted type (any, cpu, wall) and (len / 3) % 2 whether the upload states a 10 ms period.
 * Every profile returned is freed.
 * Seeds (tests/fuzz/corpus/fuzz_jfr/): *.jfr but scrub-* are written by
 * `build/tests/ingest/test_jfr --seeds DIR` (recordings built in test_jfr.c); scrub-* are
 * ../shared/data/other/jfr's async-profiler recordings (grafana/jfr-parser, Apache-2.0) cut
 * by the JDK's `jfr scrub` to under 64 KiB (test_jfr.c, test_real_alloc_only). JDK
 * recordings cannot be cut that small: their metadata alone is 80-100 KB. */
#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest_internal.h"
#include "rt/ingest.h"
#include "rt/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum rt_ptype wants[3] = {(enum rt_ptype)0, RT_PTYPE_CPU, RT_PTYPE_WALL};
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    struct rt_profile *out[2] = {NULL, NULL};
    size_t nout = 0;
    struct rt__jfr_skipped skipped;
    struct rt_error err = {0};
    int64_t hint = (size / 3) % 2 == 0 ? 10000000 : 0;
    if (rt__ingest_jfr(data, size, wants[size % 3], hint, &lim, out, &nout, &skipped, &err) == 0)
        for (size_t i = 0; i < nout; i++)
            rt_profile_free(out[i]);
    return 0;
}
