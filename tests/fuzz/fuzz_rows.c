/* Fuzz target: the store's rows blob decoder (rt__store_decode_rows, the three-byte path and
 * the varint one) on arbitrary bytes. A blob it accepts whose ids ascend strictly is encoded
 * again and decoded again, which must give the same rows: to the bit, but for a count of -0,
 * which comes back as 0 (the encoder writes it as the integer). Ids that repeat are left
 * out: the encoder's merge would sum their values, which the ingest's bounds keep in range
 * and a blob's need not. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rt_store_row *rows = NULL, *again = NULL;
    size_t cap = 0, n = 0, cap2 = 0, n2 = 0;
    bool ascending = rt__store_decode_rows(data, size, &rows, &cap, &n) == 0 && size > 1;
    for (size_t i = 1; ascending && i < n; i++)
        ascending = rows[i].stack_id > rows[i - 1].stack_id;
    if (ascending) {
        /* the period, as the decoder read it: the varint after the format byte */
        const unsigned char *p = data + 1;
        uint64_t period = 0;
        rt__store_get_uvarint(&p, data + size, &period);
        struct rt_buf b;
        rt_buf_init(&b, 0);
        size_t kept = n;
        if (rt__store_encode_rows(&b, rows, &kept, (int64_t)period) == 0) {
            if (kept != n || rt__store_decode_rows(b.data, b.len, &again, &cap2, &n2) != 0 ||
                n2 != kept)
                abort();
            for (size_t i = 0; i < kept; i++)
                if (again[i].stack_id != rows[i].stack_id ||
                    again[i].value_ns != rows[i].value_ns ||
                    (again[i].samples != rows[i].samples && /* -0 comes back as 0 */
                     memcmp(&again[i].samples, &rows[i].samples, sizeof(double)) != 0))
                    abort();
        }
        rt_buf_cleanup(&b);
    }
    free(rows);
    free(again);
    return 0;
}
