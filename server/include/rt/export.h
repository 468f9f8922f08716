/* Export: writes a profile (typically a window merged by rt_query_merge) as pprof (gzip),
 * folded stacks, or speedscope JSON (DESIGN §10 `roottrace export`). */
#ifndef RT_EXPORT_H
#define RT_EXPORT_H

#include "rt/buf.h"
#include "rt/profile.h"

/* gzip-compressed pprof with sample types samples/count and cpu|wall/nanoseconds, period
 * type cpu|wall/nanoseconds, time_nanos and duration_nanos. Appends to out. Returns 0 or RT_E*. */
int rt_export_pprof(const struct rt_profile *p, struct rt_buf *out);

/* Folded stacks, root first, one line per stack: "a;b;c <value_ns>". Appends to out. */
int rt_export_folded(const struct rt_profile *p, struct rt_buf *out);

/* speedscope file format (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile with unit nanoseconds, weights = value_ns. Appends to out. */
int rt_export_speedscope(const struct rt_profile *p, const char *name, struct rt_buf *out);

#endif
