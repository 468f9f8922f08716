/* Export: writes a profile (typically a window merged by rt_query_merge) as pprof (gzip),
 * folded stacks, or speedscope JSON (DESIGN §10 `roottrace export`). */
#ifndef RT_EXPORT_H
#define RT_EXPORT_H

#include <stdbool.h>

#include "rt/buf.h"
#include "rt/profile.h"

/* gzip-compressed pprof with sample types samples/count and cpu|wall/nanoseconds, period
 * type cpu|wall/nanoseconds, time_nanos and duration_nanos. Appends to out. Returns 0 or RT_E*. */
int rt_export_pprof(const struct rt_profile *p, struct rt_buf *out);

/* Folded stacks, root first, one line per stack: "a;b;c <value_ns>", each frame written by
 * rt_export_folded_frame. Appends to out. Returns 0 or RT_E* (the buffer's). */
int rt_export_folded(const struct rt_profile *p, struct rt_buf *out);

/* Appends frame name s[0..n) as folded stacks carry it (docs/decisions.md, "Folded output"):
 * whatever a folded reader (ours, flamegraph.pl's, inferno's) would split, take for a count,
 * or drop as an annotation becomes a near character, the same wherever the frame stands, so
 * that reading the output gives this name back and writing it again changes nothing: ';' (a
 * separator) as ':', a control byte as a space, a leading '#' (a comment line) as "\x23",
 * leading and trailing blanks as '_', the blank before a trailing number ("ends with 77":
 * a count, difffolded's) as '_', the ':' of a trailing ":<digits>" (a line number, DESIGN §3)
 * as '_', the '_' of a trailing "_[k]" (perf's annotation) as '-', and an empty name as
 * "[empty]". Names ingest stored carry no control bytes (rt_str_dup_name). Returns 0 or
 * RT_E* (the buffer's). */
int rt_export_folded_frame(struct rt_buf *out, const char *s, size_t n);

/* speedscope file format (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile with unit nanoseconds, weights = value_ns. Appends to out. */
int rt_export_speedscope(const struct rt_profile *p, const char *name, struct rt_buf *out);

#endif
