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
 * with an optional decimal part ("1764464400.25"). Returns 0 and sets *ns, or RT_EINVAL.
 * Impossible dates are refused, not rolled over: a day past its month's length (2020-02-30,
 * 2021-02-29, 2100-02-29; leap years are Gregorian), and second 60: RFC 3339 allows a leap
 * second, but Unix time has none and no producer sends one, so it is refused rather than
 * read as the next second. Times beyond +-RT_TIME_LIMIT_NS are refused. */
int rt_time_parse(const char *s, int64_t *ns);

/* Formats Unix ns as RFC 3339 UTC with at most 9 fraction digits, trailing zeros trimmed,
 * e.g. "2026-11-30T01:00:00.5Z". out must hold RT_TIME_BUFSZ bytes. Returns out. */
#define RT_TIME_BUFSZ 40
char *rt_time_format(int64_t ns, char *out);

/* Parses a duration: "90s", "10m", "1h", "30d", "500ms", or plain seconds ("600", "1.5").
 * Returns 0 and sets *ns, or RT_EINVAL. */
int rt_duration_parse(const char *s, int64_t *ns);

#endif
