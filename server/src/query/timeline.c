/* Samples over time (GET /api/v1/timeline): [from, to) cut into n equal buckets, each
 * profile's samples and value spread over the buckets by the weighting of DESIGN §6 (its
 * overlap with the bucket divided by its duration). One scan of the store answers what one
 * GET /api/v1/profile per bucket would (the UI's timelines drew 30 of those). */
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/query.h"

/* A timeline's buckets while the scan runs. */
struct timeline {
    int64_t from_ns, to_ns;
    size_t n;
    struct bucket {
        int64_t from_ns, to_ns;
        uint64_t profiles;
        double samples, value_ns;
        bool any_counts;
    } *b;
};

/* The start of bucket k of n over [from, to): from + span * k / n, without overflow. */
static int64_t edge(int64_t from, int64_t to, size_t n, size_t k)
{
    uint64_t span = (uint64_t)to - (uint64_t)from;
    return (int64_t)((uint64_t)from + span / n * k + span % n * k / n);
}

/* Adds one profile whose rows sum to samples and value_ns (unweighted) to every bucket it
 * overlaps. */
static void add_profile(struct timeline *t, const struct rt_profile_meta *m, double samples,
                        double value_ns)
{
    /* the buckets before the profile's start are skipped by search: edges are increasing */
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->b[mid].to_ns <= m->time_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < t->n; k++) {
        struct bucket *b = &t->b[k];
        double w = rt_profile_window_weight(m->time_ns, m->duration_ns, b->from_ns, b->to_ns);
        if (!(w > 0))
            break; /* buckets are contiguous and at least 1 ns: past the profile's end */
        b->profiles++;
        b->samples += samples * w;
        b->value_ns += value_ns * w;
        b->any_counts = b->any_counts || m->has_counts;
    }
}

static int scan_cb(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                   size_t nrows)
{
    double samples = 0, value_ns = 0;
    for (size_t r = 0; r < nrows; r++) {
        samples += rows[r].samples;
        value_ns += (double)rows[r].value_ns;
    }
    add_profile(ud, m, samples, value_ns);
    return 0;
}

/* The store's sums are weighted by the whole range; weight > 0 for every profile it yields. */
static int agg_profile_cb(void *ud, const struct rt_profile_meta *m, double weight,
                          double samples, double value_ns)
{
    if (weight > 0)
        add_profile(ud, m, samples / weight, value_ns / weight);
    return 0;
}

#define PROFILES_DONE 1 /* returned by the first stack: the profiles all came before it */

/* The stack, leaf and s2 sums come after every profile and are not needed: the first of
 * them stops the scan. */
static int agg_stack_cb(void *ud, uint32_t stack_id, double samples, double value_ns)
{
    (void)ud, (void)stack_id, (void)samples, (void)value_ns;
    return PROFILES_DONE;
}

static int agg_leaf_cb(void *ud, const char *instance, uint32_t frame_id, double value_ns)
{
    (void)ud, (void)instance, (void)frame_id, (void)value_ns;
    return PROFILES_DONE;
}

static int agg_s2_cb(void *ud, uint32_t frame_id, double s2)
{
    (void)ud, (void)frame_id, (void)s2;
    return PROFILES_DONE;
}

static json_t *answer(const struct rt_query_timeline_req *req, const struct timeline *t)
{
    json_t *out = json_object(), *list = json_array();
    if (!out || !list) {
        json_decref(out);
        json_decref(list);
        return NULL;
    }
    json_object_set_new(out, "service", json_string(req->service));
    json_object_set_new(out, "type", json_string(rt_ptype_name(req->type)));
    json_object_set_new(out, "from", rt__query_time_json(t->from_ns));
    json_object_set_new(out, "to", rt__query_time_json(t->to_ns));
    for (size_t k = 0; k < t->n; k++) {
        const struct bucket *b = &t->b[k];
        json_t *o = json_object();
        if (!o || json_array_append_new(list, o) != 0) {
            json_decref(out);
            json_decref(list);
            return NULL;
        }
        json_object_set_new(o, "from", rt__query_time_json(b->from_ns));
        json_object_set_new(o, "to", rt__query_time_json(b->to_ns));
        json_object_set_new(o, "profiles", json_integer((json_int_t)b->profiles));
        /* as /api/v1/profile's "samples": null when no profile carries real counts */
        json_object_set_new(o, "samples",
                            b->profiles > 0 && !b->any_counts ? json_null() : json_real(b->samples));
        json_object_set_new(o, "value_ns", rt__query_ns_json(b->value_ns));
    }
    json_object_set_new(out, "buckets", list);
    return out;
}

json_t *rt_query_timeline(struct rt_store *s, const struct rt_query_timeline_req *req,
                          struct rt_error *err)
{
    if (!s || !req || !req->service || req->buckets < 1 ||
        req->buckets > RT_QUERY_TIMELINE_MAX_BUCKETS || req->from_ns >= req->to_ns) {
        rt_error_set(err, RT_EINVAL, "rt_query_timeline: a service, 1..%d buckets and from "
                     "before to are required", RT_QUERY_TIMELINE_MAX_BUCKETS);
        return NULL;
    }
    if ((uint64_t)req->to_ns - (uint64_t)req->from_ns < req->buckets) {
        rt_error_set(err, RT_EINVAL, "%zu buckets do not fit in a range of %lld ns: each bucket "
                     "is at least 1 ns", req->buckets, (long long)(req->to_ns - req->from_ns));
        return NULL;
    }
    struct timeline t = {req->from_ns, req->to_ns, req->buckets,
                         calloc(req->buckets, sizeof(*t.b))};
    if (!t.b) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t k = 0; k < t.n; k++) {
        t.b[k].from_ns = edge(t.from_ns, t.to_ns, t.n, k);
        t.b[k].to_ns = edge(t.from_ns, t.to_ns, t.n, k + 1);
    }
    struct rt_store_filter f = {req->service, req->type, req->from_ns, req->to_ns,
                                req->version, req->instance};
    static const struct rt_store_window_cb cbs = {agg_profile_cb, agg_stack_cb, agg_leaf_cb,
                                                 agg_s2_cb};
    static const struct rt_store_window_reader reader = {scan_cb, &cbs, NULL}; /* raw */
    rt_error_clear(err);
    rt__query_contexts(1); /* a query, though it needs no context (scan_pair.c's rule) */
    int rc = rt_store_read_window(s, &f, &reader, &t, err);
    rt__query_contexts(-1);
    json_t *j = NULL;
    if (rc == 0 || rc == PROFILES_DONE) {
        j = answer(req, &t);
        if (!j)
            rt_error_set(err, RT_ENOMEM, "out of memory");
    } else if (!err || err->code != rc) {
        rt_error_set(err, rc < 0 ? rc : RT_EIO, "store error while reading profiles");
    }
    free(t.b);
    return j;
}
