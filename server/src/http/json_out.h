/* The API's JSON text: jansson's compact dump, byte for byte, at a fraction of its cost. */
#ifndef RT_HTTP_JSON_OUT_H
#define RT_HTTP_JSON_OUT_H

#include <jansson.h>

#include "rt/buf.h"

/* Appends j to out as `json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15))` writes it: keys
 * in insertion order, `,` and `:` without spaces, numbers and strings as rt/json_text.h.
 * When j is an object and tail is not empty, tail (members as JSON text, `"k":v,...`) is
 * written after j's own members: the flame graph, which the answers write as text
 * (rt_query_profile_req.flamegraph_text).
 *
 * Returns 0, RT_ENOMEM, RT_ETOOBIG (out's limit), or RT_EINVAL for a value jansson cannot
 * dump (a NULL value, a non-finite real); out may then hold a partial text. */
int rt_json_out(const json_t *j, const char *tail, size_t tail_len, struct rt_buf *out);

#endif
