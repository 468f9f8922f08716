/* Fuzz target: rt_ingest_gunzip on the input with a small output limit (64 KiB), so corrupt,
 * truncated, multi-member and bomb-like streams all end in a bounded time. */
#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"
#include "rt/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rt_buf out;
    rt_buf_init(&out, 64 * 1024);
    struct rt_error err = {0};
    rt_ingest_gunzip(data, size, &out, &err);
    rt_buf_cleanup(&out);
    return 0;
}
