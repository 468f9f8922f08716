/* Fuzz target: rt__query_add_rollup on a stored rollup's bytes (docs/internals/rollups.md),
 * then the window finished and answered as GET /api/v1/profile answers it, so that whatever a
 * damaged rollup holds (counts past its end, NaN sums, spans upside down) is refused or
 * answered, never a crash. Stacks come from a fake source: any stack id is two frames; keys
 * (RTR2's u64 ones too) turn into ids below 2^20, and one in seven is unknown. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/query_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fake_stack(void *ud, uint32_t id, uint32_t *frames, size_t cap, size_t *depth)
{
    (void)ud;
    if (cap < 2)
        return RT_ETOOBIG;
    frames[0] = 1;
    frames[1] = 2 + id % 64;
    *depth = 2;
    return 0;
}

static const char *fake_name(void *ud, uint32_t id, struct rt_arena *a)
{
    (void)ud;
    char name[16];
    snprintf(name, sizeof(name), "f%u", id);
    return rt_arena_strndup(a, name, strlen(name));
}

static int fake_keys(void *ud, enum rt_store_key_kind kind, bool to_keys, uint64_t *v, size_t n)
{
    (void)ud, (void)kind;
    for (size_t i = 0; !to_keys && i < n; i++) {
        if (v[i] % 7 == 6)
            return RT_ENOTFOUND;
        v[i] %= (uint64_t)1 << 20;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rt__query_src src = {fake_stack, fake_name, NULL, fake_keys};
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, src, size && (data[0] & 1) ? RT_PTYPE_WALL : RT_PTYPE_CPU, 1);
    rt__query_ctx_window(&c, 0, 0, RT_ROLLUP_HOUR_NS);
    if (rt__query_add_rollup(&c, 0, "i", data, size) == 0 &&
        rt__query_add_rollup(&c, 0, "j", data, size) == 0 && rt__query_finish(&c) == 0) {
        json_t *j = rt__query_profile_json(&c, "fuzz", 100);
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        free(text);
        json_decref(j);
    }
    rt__query_ctx_cleanup(&c);
    return 0;
}
