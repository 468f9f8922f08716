/* Prometheus metrics of the server: uploads, bytes, refusals by reason, query latency. */
#ifndef RT_METRICS_H
#define RT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"

struct rt_store;
struct rt_metrics;

struct rt_metrics *rt_metrics_new(void);
void rt_metrics_free(struct rt_metrics *m);

/* An upload of bytes (compressed, as received) that stored profiles new profiles. */
void rt_metrics_upload(struct rt_metrics *m, uint64_t bytes, unsigned profiles);

/* A refused request; reason is an rt_err_name() such as "malformed" or "too_large". */
/* Counts hours rolled up (docs/internals/rollups.md) and a failed build. */
void rt_metrics_rollups(struct rt_metrics *m, size_t hours, bool failed);

void rt_metrics_refusal(struct rt_metrics *m, const char *reason);

/* A query (profile, diff) that took ns nanoseconds; kind is "profile" or "diff". */
void rt_metrics_query(struct rt_metrics *m, const char *kind, int64_t ns);

/* One HTTP request answered with status. */
void rt_metrics_request(struct rt_metrics *m, int status);

/* Appends the Prometheus text exposition to out, with the store's gauges and the control
 * plane's alert counts (either may be NULL). */
struct rt_control;
int rt_metrics_render(struct rt_metrics *m, struct rt_store *store, struct rt_control *control,
                      struct rt_buf *out);

#endif
