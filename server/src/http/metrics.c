/* Prometheus counters of the server, rendered in the text exposition format. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt/control.h"
#include "rt/memory.h"
#include "rt/metrics.h"
#include "rt/store.h"

#define MAX_REASONS 32
/* Query latency histogram bucket bounds, seconds. */
static const double buckets_s[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBUCKETS (sizeof(buckets_s) / sizeof(buckets_s[0]))
#define NKINDS 2

struct rt_metrics {
    pthread_mutex_t mu;
    unsigned long long uploads, upload_bytes, profiles_stored;
    const char *reasons[MAX_REASONS];    /* static strings from rt_err_name */
    unsigned long long refusals[MAX_REASONS];
    unsigned long long by_class[6];      /* requests by status class 1xx..5xx */
    unsigned long long q_count[NKINDS], q_buckets[NKINDS][NBUCKETS];
    double q_sum_s[NKINDS];
    unsigned long long rollup_blocks, rollup_failures;
};

static const char *kinds[NKINDS] = {"profile", "diff"};

struct rt_metrics *rt_metrics_new(void)
{
    struct rt_metrics *m = calloc(1, sizeof(*m));
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

void rt_metrics_free(struct rt_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void rt_metrics_upload(struct rt_metrics *m, uint64_t bytes, unsigned profiles)
{
    pthread_mutex_lock(&m->mu);
    m->uploads++;
    m->upload_bytes += bytes;
    m->profiles_stored += profiles;
    pthread_mutex_unlock(&m->mu);
}

void rt_metrics_rollups(struct rt_metrics *m, size_t hours, bool failed)
{
    pthread_mutex_lock(&m->mu);
    m->rollup_blocks += hours;
    m->rollup_failures += failed;
    pthread_mutex_unlock(&m->mu);
}

void rt_metrics_refusal(struct rt_metrics *m, const char *reason)
{
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < MAX_REASONS; i++) {
        if (!m->reasons[i])
            m->reasons[i] = reason;
        if (strcmp(m->reasons[i], reason) == 0) {
            m->refusals[i]++;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

void rt_metrics_query(struct rt_metrics *m, const char *kind, int64_t ns)
{
    int k = strcmp(kind, "diff") == 0;
    double s = (double)ns / 1e9;
    pthread_mutex_lock(&m->mu);
    m->q_count[k]++;
    m->q_sum_s[k] += s;
    for (size_t b = 0; b < NBUCKETS; b++)
        if (s <= buckets_s[b])
            m->q_buckets[k][b]++;
    pthread_mutex_unlock(&m->mu);
}

void rt_metrics_request(struct rt_metrics *m, int status)
{
    int c = status / 100;
    pthread_mutex_lock(&m->mu);
    if (c >= 1 && c <= 5)
        m->by_class[c]++;
    pthread_mutex_unlock(&m->mu);
}

int rt_metrics_render(struct rt_metrics *m, struct rt_store *store, struct rt_control *control,
                      struct rt_buf *o)
{
    pthread_mutex_lock(&m->mu);
    rt_buf_printf(o, "# HELP roottrace_uploads_total Profile uploads accepted.\n"
                     "# TYPE roottrace_uploads_total counter\nroottrace_uploads_total %llu\n",
                  m->uploads);
    rt_buf_printf(o, "# HELP roottrace_upload_bytes_total Compressed bytes of accepted uploads.\n"
                     "# TYPE roottrace_upload_bytes_total counter\n"
                     "roottrace_upload_bytes_total %llu\n",
                  m->upload_bytes);
    rt_buf_printf(o, "# HELP roottrace_profiles_stored_total Profiles stored (duplicates "
                     "excluded).\n# TYPE roottrace_profiles_stored_total counter\n"
                     "roottrace_profiles_stored_total %llu\n",
                  m->profiles_stored);
    rt_buf_printf(o, "# HELP roottrace_rollup_blocks_total Blocks (hours, days) rolled up "
                     "(docs/internals/rollups.md).\n# TYPE roottrace_rollup_blocks_total counter\n"
                     "roottrace_rollup_blocks_total %llu\n"
                     "# HELP roottrace_rollup_failures_total Rollup builds that failed (the "
                     "server's log says why).\n# TYPE roottrace_rollup_failures_total counter\n"
                     "roottrace_rollup_failures_total %llu\n",
                  m->rollup_blocks, m->rollup_failures);
    rt_buf_puts(o, "# HELP roottrace_refusals_total Requests refused, by reason.\n"
                   "# TYPE roottrace_refusals_total counter\n");
    for (int i = 0; i < MAX_REASONS && m->reasons[i]; i++)
        rt_buf_printf(o, "roottrace_refusals_total{reason=\"%s\"} %llu\n", m->reasons[i],
                      m->refusals[i]);
    rt_buf_puts(o, "# HELP roottrace_http_requests_total HTTP requests by status class.\n"
                   "# TYPE roottrace_http_requests_total counter\n");
    for (int c = 1; c <= 5; c++)
        rt_buf_printf(o, "roottrace_http_requests_total{code=\"%dxx\"} %llu\n", c,
                      m->by_class[c]);
    rt_buf_puts(o, "# HELP roottrace_query_duration_seconds Query latency.\n"
                   "# TYPE roottrace_query_duration_seconds histogram\n");
    for (int k = 0; k < NKINDS; k++) {
        for (size_t b = 0; b < NBUCKETS; b++)
            rt_buf_printf(o, "roottrace_query_duration_seconds_bucket{query=\"%s\",le=\"%g\"} %llu\n",
                          kinds[k], buckets_s[b], m->q_buckets[k][b]);
        rt_buf_printf(o, "roottrace_query_duration_seconds_bucket{query=\"%s\",le=\"+Inf\"} %llu\n"
                         "roottrace_query_duration_seconds_sum{query=\"%s\"} %.6f\n"
                         "roottrace_query_duration_seconds_count{query=\"%s\"} %llu\n",
                      kinds[k], m->q_count[k], kinds[k], m->q_sum_s[k], kinds[k], m->q_count[k]);
    }
    pthread_mutex_unlock(&m->mu);
    if (control) {
        /* DESIGN §13: what the alerting systems sent, and the issues it opened */
        static const char *const sources[] = {"alertmanager", "grafana"};
        uint64_t rec[2], opened[2];
        for (int i = 0; i < 2; i++)
            rt_control_alert_counts(control, sources[i], &rec[i], &opened[i]);
        rt_buf_printf(o, "# HELP roottrace_alerts_received_total Alert notifications received "
                         "by the webhooks.\n# TYPE roottrace_alerts_received_total counter\n");
        for (int i = 0; i < 2; i++)
            rt_buf_printf(o, "roottrace_alerts_received_total{source=\"%s\"} %llu\n",
                          sources[i], (unsigned long long)rec[i]);
        rt_buf_printf(o, "# HELP roottrace_issues_opened_total Issues opened by alerts.\n"
                         "# TYPE roottrace_issues_opened_total counter\n");
        for (int i = 0; i < 2; i++)
            rt_buf_printf(o, "roottrace_issues_opened_total{source=\"%s\"} %llu\n", sources[i],
                          (unsigned long long)opened[i]);
        uint64_t queued, dropped;
        rt_control_poll_counts(control, &queued, &dropped);
        rt_buf_printf(o, "# HELP roottrace_polls_queued SDK polls waiting for the poll writer "
                         "(at most %d).\n# TYPE roottrace_polls_queued gauge\n"
                         "roottrace_polls_queued %llu\n"
                         "# HELP roottrace_polls_dropped_total SDK polls dropped because the "
                         "queue was full.\n# TYPE roottrace_polls_dropped_total counter\n"
                         "roottrace_polls_dropped_total %llu\n",
                      RT_CONTROL_MAX_QUEUED_POLLS, (unsigned long long)queued,
                      (unsigned long long)dropped);
    }
    struct rt_memory_stats mem;
    rt_memory_stats(&mem);
    rt_buf_printf(o, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                     "# TYPE process_resident_memory_bytes gauge\n"
                     "process_resident_memory_bytes %lld\n",
                  mem.resident);
    if (mem.heap_used >= 0)
        rt_buf_printf(o, "# HELP roottrace_heap_used_bytes Memory malloc has handed out and "
                         "not got back.\n# TYPE roottrace_heap_used_bytes gauge\n"
                         "roottrace_heap_used_bytes %lld\n"
                         "# HELP roottrace_heap_free_bytes Free memory malloc keeps for later "
                         "blocks (docs/decisions.md, \"Heap memory kept between uploads\").\n"
                         "# TYPE roottrace_heap_free_bytes gauge\nroottrace_heap_free_bytes %lld\n",
                      mem.heap_used, mem.heap_free);
    if (store) {
        rt_buf_printf(o, "# HELP roottrace_store_disk_bytes Bytes the store uses on disk.\n"
                         "# TYPE roottrace_store_disk_bytes gauge\nroottrace_store_disk_bytes %lld\n",
                      (long long)rt_store_disk_bytes(store));
        rt_buf_printf(o, "# HELP roottrace_store_profiles Profiles in the store.\n"
                         "# TYPE roottrace_store_profiles gauge\nroottrace_store_profiles %lld\n",
                      (long long)rt_store_profile_count(store));
        struct rt_store_stats st;
        rt_store_stats(store, &st);
        rt_buf_printf(o, "# HELP roottrace_store_commit_uploads Uploads per commit of the "
                         "store (SQLite commits the uploads that arrive together at once).\n"
                         "# TYPE roottrace_store_commit_uploads histogram\n");
        uint64_t cum = 0;
        for (size_t b = 0; b < RT_STORE_COMMIT_BUCKETS; b++) {
            cum += st.commit_hist[b];
            if (b < RT_STORE_COMMIT_BUCKETS - 1)
                rt_buf_printf(o, "roottrace_store_commit_uploads_bucket{le=\"%u\"} %llu\n",
                              rt_store_commit_bucket_le[b], (unsigned long long)cum);
            else
                rt_buf_printf(o, "roottrace_store_commit_uploads_bucket{le=\"+Inf\"} %llu\n",
                              (unsigned long long)cum);
        }
        rt_buf_printf(o, "roottrace_store_commit_uploads_sum %llu\nroottrace_store_commit_uploads_count %llu\n",
                      (unsigned long long)st.commit_uploads, (unsigned long long)st.commits);
        rt_buf_printf(o, "# HELP roottrace_store_dict_entries Frames and stacks the in-memory "
                         "dictionary holds.\n# TYPE roottrace_store_dict_entries gauge\n"
                         "roottrace_store_dict_entries{kind=\"frame\"} %llu\n"
                         "roottrace_store_dict_entries{kind=\"stack\"} %llu\n",
                      (unsigned long long)st.dict_frames, (unsigned long long)st.dict_stacks);
        rt_buf_printf(o, "# HELP roottrace_store_dict_bytes Memory the dictionary holds.\n"
                         "# TYPE roottrace_store_dict_bytes gauge\n"
                         "roottrace_store_dict_bytes %llu\n"
                         "# HELP roottrace_store_dict_bound_bytes The dictionary's bound (0: "
                         "none).\n# TYPE roottrace_store_dict_bound_bytes gauge\n"
                         "roottrace_store_dict_bound_bytes %llu\n"
                         "# HELP roottrace_store_dict_resets_total Times the dictionary was "
                         "emptied to stay within its bound.\n"
                         "# TYPE roottrace_store_dict_resets_total counter\n"
                         "roottrace_store_dict_resets_total %llu\n",
                      (unsigned long long)st.dict_bytes, (unsigned long long)st.dict_budget,
                      (unsigned long long)st.dict_resets);
    }
    return 0;
}
