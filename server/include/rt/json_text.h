/* JSON numbers and strings written as jansson's compact dump writes them, byte for byte, at a
 * fraction of its cost: jansson formats every number through snprintf, which was 28 % of the
 * instructions of a 300-instance diff (docs/performance.md). Used by the HTTP server's
 * answers (http/json_out.c) and by the flame graph's columns (query/flame.c). Held equal to
 * jansson by tests/unit/http/test_json_out.c and tests/fuzz/fuzz_json_out.c. */
#ifndef RT_JSON_TEXT_H
#define RT_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"

/* The precision of every real in an answer: significant digits, as `%.15g` (jansson's
 * JSON_REAL_PRECISION(15)). */
#define RT_JSON_TEXT_REAL_DIGITS 15

/* Appends the real v rounded to 15 significant digits, as `%.15g` then jansson's touches:
 * `.0` when there is neither `.` nor `e`; no `+` or leading zeros in an exponent ("1e-5").
 * Magnitudes in [1e-8, 1e15), the shares and seconds of every answer, are rounded exactly
 * (ties to even) in 128-bit integers; others go through snprintf as in jansson. Returns 0,
 * RT_EINVAL for NaN or an infinity (json_real refuses them), RT_ENOMEM or RT_ETOOBIG. */
int rt_json_text_real(struct rt_buf *out, double v);

/* Appends v in decimal. Returns 0, RT_ENOMEM or RT_ETOOBIG. */
int rt_json_text_int(struct rt_buf *out, int64_t v);

/* Appends s (len bytes, valid UTF-8: jansson's strings are) quoted, with jansson's escapes:
 * `\"`, `\\`, `\b \f \n \r \t`, and `\u00XX` for the other control characters; everything
 * else as is. Returns 0, RT_ENOMEM or RT_ETOOBIG. */
int rt_json_text_string(struct rt_buf *out, const char *s, size_t len);

#endif
