/* The windows of an issue view (DESIGN §6, §13): current [started, min(started + L, ended)),
 * baseline the same length just before, the current one cut where uploads may still be in
 * flight. */
#include "query_internal.h"
#include "rt/timeutil.h"

#define MIN_AUTO_NS (5 * 60 * RT_NS_PER_S)      /* 5 min */
#define MAX_AUTO_NS (60 * 60 * RT_NS_PER_S)     /* 1 h */
#define MIN_WINDOW_NS (60 * RT_NS_PER_S)        /* window_s bounds: 60 s .. 24 h */
#define MAX_WINDOW_NS (24 * 60 * 60 * RT_NS_PER_S)
#define IN_FLIGHT_NS (15 * RT_NS_PER_S)         /* slack for uploads still in flight */

int rt_query_issue_windows(int64_t started_at_ns, int64_t ended_at_ns, int64_t now_ns,
                           int64_t window_ns, int64_t upload_interval_ns,
                           struct rt_query_diff_req *req, struct rt_error *err)
{
    int64_t len;
    if (window_ns > 0) {
        if (window_ns < MIN_WINDOW_NS || window_ns > MAX_WINDOW_NS)
            return rt_error_set(err, RT_EINVAL, "window_s must be between 60 s and 24 h");
        len = window_ns;
    } else {
        len = (ended_at_ns > 0 && ended_at_ns < now_ns ? ended_at_ns : now_ns) - started_at_ns;
        len = len < MIN_AUTO_NS ? MIN_AUTO_NS : len > MAX_AUTO_NS ? MAX_AUTO_NS : len;
    }
    /* an issue's end bounds its current window, and the baseline is as long (DESIGN §13) */
    if (ended_at_ns > 0 && ended_at_ns - started_at_ns < len)
        len = ended_at_ns > started_at_ns ? ended_at_ns - started_at_ns : 0;
    if (upload_interval_ns < 0)
        upload_interval_ns = 0;
    int64_t cut = now_ns - upload_interval_ns - IN_FLIGHT_NS;
    int64_t cur_to = started_at_ns + len;
    if (cur_to > cut)
        cur_to = cut;
    if (cur_to < started_at_ns)
        cur_to = started_at_ns; /* nothing complete yet: an empty current window */
    req->base_from_ns = started_at_ns - len;
    req->base_to_ns = started_at_ns;
    req->cur_from_ns = started_at_ns;
    req->cur_to_ns = cur_to;
    return 0;
}
