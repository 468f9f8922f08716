/* Time: the clock, RFC 3339 parsing and formatting, durations such as "10m" (DESIGN §11). */
#ifndef RT_TIMEUTIL_H
#define RT_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define RT_NS_PER_S 1000000000LL

/* Times parsed from input lie within +-2^62 ns of the epoch (1823-12 to 2116-01), so that
 * adding or subtracting a duration of up to 2^62 ns (146 years) to one cannot overflow. */
#define RT_TIME_LIMIT_NS ((int64_t)1 << 62)

/* Wall-clock now, Unix nanoseconds. */
int64_t rt_time_now_ns(void);

/* Monotonic clock, nanoseconds (for latencies). */
int64_t rt_time_mono_ns(void);

/* Parses RFC 3339 with any offset ("2026-11-30T01:00:00.5+01:00", "Z") or Unix seconds
 * with an optional decimal part ("1764464400.25"). Returns 0 and sets *ns, or an error below.
 * Impossible dates are refused, not rolled over: a day past its month's length (2020-02-30,
 * 2021-02-29, 2100-02-29; leap years are Gregorian). A leap second, which RFC 3339 allows
 * (second 60 of 23:59 UTC, whatever the offset written), reads as the last nanosecond of
 * 23:59:59 UTC: Unix time has no leap second, and the next day's first instant would put
 * it after times that follow it (docs/decisions.md). Second 60 of any other minute is refused.
 * Returns RT_EINVAL for what is no such time, RT_ETOOBIG for a well-formed time beyond
 * +-RT_TIME_LIMIT_NS. */
int rt_time_parse(const char *s, int64_t *ns);

/* Formats Unix ns as RFC 3339 UTC with at most 9 fraction digits, trailing zeros trimmed,
 * e.g. "2026-11-30T01:00:00.5Z". out must hold RT_TIME_BUFSZ bytes. Returns out. */
#define RT_TIME_BUFSZ 40
char *rt_time_format(int64_t ns, char *out);

/* Parses a duration: decimal digits with an optional fraction, then an optional unit ms, s,
 * m, h or d: "90s", "10m", "1h", "30d", "500ms", "1.5", "600". Anything else, "0x10", "1e3",
 * " 5", "+5", "inf", is RT_EINVAL (strtod read the first two as 16 and 1000 s). Returns 0
 * and sets *ns (rounded to the nanosecond), or RT_EINVAL. */
int rt_duration_parse(const char *s, int64_t *ns);

#endif
