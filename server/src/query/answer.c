/* The profile and diff answers (DESIGN §11): the store scans that feed the aggregation, and
 * the JSON assembled from a finished context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/json_text.h"
#include "rt/producer.h"
#include "rt/timeutil.h"

/* The one rule for writing ns (both forms below): null when not finite; past the int64
 * range a real (llround is undefined there: it gave negative self_ns; 2^63 is exact); else
 * the nearest integer. */
enum ns_form { NS_NULL, NS_REAL, NS_INT };

static enum ns_form ns_form(double ns, double *real, json_int_t *integer)
{
    if (!isfinite(ns))
        return NS_NULL;
    if (fabs(ns) >= 9223372036854775808.0) {
        *real = round(ns);
        return NS_REAL;
    }
    *integer = (json_int_t)llround(ns);
    return NS_INT;
}

json_t *rt__query_ns_json(double ns)
{
    double r;
    json_int_t i;
    switch (ns_form(ns, &r, &i)) {
    case NS_REAL: return json_real(r);
    case NS_INT: return json_integer(i);
    default: return json_null();
    }
}

int rt__query_ns_text(struct rt_buf *b, double ns)
{
    double r;
    json_int_t i;
    switch (ns_form(ns, &r, &i)) {
    case NS_REAL: return rt_json_text_real(b, r);
    case NS_INT: return rt_json_text_int(b, (int64_t)i);
    default: return rt_buf_append(b, "null", 4);
    }
}

json_t *rt__query_str_json(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j || !s)
        return j;
    char *fixed = rt_str_dup_utf8(rt_str_from(s), NULL);
    j = fixed ? json_string(fixed) : NULL;
    free(fixed);
    return j;
}

int rt__query_str_text(struct rt_buf *b, const char *s)
{
    struct rt_str str = rt_str_from(s ? s : "");
    if (rt_str_is_utf8(str))
        return rt_json_text_string(b, str.ptr, str.len);
    size_t len;
    char *fixed = rt_str_dup_utf8(str, &len);
    int rc = fixed ? rt_json_text_string(b, fixed, len) : RT_ENOMEM;
    free(fixed);
    return rc;
}

/* "samples" of window w: null when it has profiles and none carries real sample counts (the
 * zeros would read as "no samples"; significance_unavailable says why in a diff). */
static json_t *samples_json(const struct rt__query_win *w)
{
    return w->profiles > 0 && !w->any_counts ? json_null() : json_real(w->samples);
}

json_t *rt__query_time_json(int64_t ns)
{
    char buf[RT_TIME_BUFSZ];
    return json_string(rt_time_format(ns, buf));
}

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

/* Per-function vCPU-hours of window k, or json null (wall, or capacity unavailable). */
static json_t *fn_vcpu_json(const struct rt__query_ctx *c, const struct rt__query_fn *f, int k)
{
    const struct rt__query_win *w = &c->win[k];
    if (c->type != RT_PTYPE_CPU || !w->cap.available)
        return json_null();
    return real_or_null(rt__query_vcpu_hours(f->cap_v[k], w->cap.window_s));
}

/* ---- profile answer ---- */

/* self_ns descending (as output, rounded), ties by name. */
static int cmp_self(const void *a, const void *b, void *ud)
{
    const struct rt__query_ctx *c = ud;
    const struct rt__query_fn *x = &c->fns[*(const uint32_t *)a];
    const struct rt__query_fn *y = &c->fns[*(const uint32_t *)b];
    double rx = round(x->self_v[0]), ry = round(y->self_v[0]);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    int d = strcmp(x->name, y->name);
    return d ? d : (x->frame_id > y->frame_id) - (x->frame_id < y->frame_id);
}

static json_t *profile_fn_json(const struct rt__query_ctx *c, const struct rt__query_fn *f)
{
    const struct rt__query_win *w = &c->win[0];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", rt__query_str_json(f->name));
    json_object_set_new(o, "self_ns", rt__query_ns_json(f->self_v[0]));
    json_object_set_new(o, "total_ns", rt__query_ns_json(f->total_v[0]));
    json_object_set_new(o, "self_share", json_real(pct(f->self_v[0], w->value_ns)));
    json_object_set_new(o, "total_share", json_real(pct(f->total_v[0], w->value_ns)));
    json_object_set_new(o, "self_samples", json_real(f->self_s[0]));
    json_object_set_new(o, "total_samples", json_real(f->total_s[0]));
    json_object_set_new(o, "vcpu_hours_per_month", fn_vcpu_json(c, f, 0));
    return o;
}

/* Sets "functions" and "truncated" of a profile answer. Returns 0 or RT_ENOMEM. */
static int profile_functions(const struct rt__query_ctx *c, size_t limit, json_t *out)
{
    uint32_t *order = malloc((c->nfns ? c->nfns : 1) * sizeof(*order));
    json_t *arr = json_array();
    if (!order || !arr) {
        free(order);
        json_decref(arr);
        return RT_ENOMEM;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < c->nfns; i++)
        if (c->fns[i].total_s[0] != 0 || c->fns[i].total_v[0] != 0)
            order[n++] = i;
    qsort_r(order, n, sizeof(*order), cmp_self, (void *)c);
    for (size_t i = 0; i < n && i < limit; i++)
        json_array_append_new(arr, profile_fn_json(c, &c->fns[order[i]]));
    free(order);
    json_object_set_new(out, "functions", arr);
    json_object_set_new(out, "truncated", json_boolean(n > limit));
    return 0;
}

static void set_capacity_one(const struct rt__query_ctx *c, json_t *out)
{
    const struct rt__query_cap *cap = &c->win[0].cap;
    if (c->type != RT_PTYPE_CPU || !cap->available) {
        json_object_set_new(out, "capacity", json_null());
        json_object_set_new(out, "capacity_unavailable",
                            json_string(c->type != RT_PTYPE_CPU ? RT__QUERY_REASON_WALL
                                                                : cap->reason));
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "vcpu_hours_per_month", real_or_null(cap->vcpu_hours_per_month));
    json_object_set_new(o, "inputs", rt__query_cap_inputs_json(cap, c->win[0].inst_cap,
                                                               c->insts.count, &c->insts));
    json_object_set_new(out, "capacity", o);
    json_object_set_new(out, "capacity_unavailable", json_null());
}

/* Warnings about one window's data (DESIGN §6), appended to arr; which = "baseline", ... */
static void window_warnings(const struct rt__query_win *w, const char *which, json_t *arr)
{
    char msg[200];
    if (w->profiles > 0 && isfinite(w->cap.coverage) && w->cap.coverage < RT__QUERY_LOW_COVERAGE) {
        snprintf(msg, sizeof(msg), "coverage below 50%% in the %s window", which);
        json_array_append_new(arr, json_string(msg));
    }
    if (w->profiles > 0 && !w->any_counts) {
        snprintf(msg, sizeof(msg),
                 "no profile in the %s window carries sample counts (a value without "
                 "samples/count or a period): its samples are null",
                 which);
        json_array_append_new(arr, json_string(msg));
    }
    if (w->cap.instances_unprofiled > 0) {
        snprintf(msg, sizeof(msg),
                 "%u instance(s) alive in the %s window sent no profiles (profiling off, "
                 "unavailable or declined): their CPU is not included",
                 w->cap.instances_unprofiled, which);
        json_array_append_new(arr, json_string(msg));
    }
}

static json_t *window_json(const struct rt__query_win *w)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "from", rt__query_time_json(w->from_ns));
    json_object_set_new(o, "to", rt__query_time_json(w->to_ns));
    json_object_set_new(o, "profiles", json_integer(w->profiles));
    json_object_set_new(o, "samples", samples_json(w));
    json_object_set_new(o, "value_ns", rt__query_ns_json(w->value_ns));
    return o;
}

/* Who sampled the answer's profiles (DESIGN §12): [{"agent", "method", "note",
 * "declared_type", "profiles"}], most profiles first, then by agent; declared_type null unless the producer's declared type was
 * relabelled; an entry {"agent": "others", ...} counts producers past the list's bound. */
static int cmp_producer(const void *a, const void *b)
{
    const struct rt__query_producer *x = a, *y = b;
    if (x->profiles != y->profiles)
        return x->profiles > y->profiles ? -1 : 1;
    int d = strcmp(rt_producer_agent(x->producer), rt_producer_agent(y->producer));
    if (d)
        return d;
    return x->declared_type < y->declared_type ? -1 : x->declared_type > y->declared_type;
}

static json_t *producers_json(const struct rt__query_ctx *c)
{
    json_t *arr = json_array();
    /* most profiles first, then by agent: the same order whatever order the store read them
     * in (rollups are read after raw profiles, docs/internals/rollups.md) */
    struct rt__query_producer sorted[RT__QUERY_MAX_PRODUCERS];
    memcpy(sorted, c->producers, c->nproducers * sizeof(*sorted));
    qsort(sorted, c->nproducers, sizeof(*sorted), cmp_producer);
    for (uint32_t i = 0; arr && i < c->nproducers; i++) {
        const struct rt__query_producer *q = &sorted[i];
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:o, s:i}", "agent", rt_producer_agent(q->producer),
                           "method", q->producer->method, "note", q->producer->note,
                           "declared_type",
                           q->declared_type ? json_string(rt_ptype_name(q->declared_type))
                                            : json_null(),
                           "profiles", (int)q->profiles));
    }
    if (arr && c->producers_other)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:n, s:i}", "agent", "others",
                                             "method", "several other producers", "note", "",
                                             "declared_type", "profiles",
                                             (int)c->producers_other));
    return arr;
}

static void set_header(const struct rt__query_ctx *c, const char *service, json_t *out)
{
    json_object_set_new(out, "service", rt__query_str_json(service));
    json_object_set_new(out, "type", json_string(rt_ptype_name(c->type)));
    json_object_set_new(out, "type_note", json_string(rt_ptype_note(c->type)));
    json_object_set_new(out, "producers", producers_json(c));
}

json_t *rt__query_profile_json(const struct rt__query_ctx *c, const char *service,
                               size_t limit)
{
    const struct rt__query_win *w = &c->win[0];
    json_t *out = json_object();
    if (!out)
        return NULL;
    set_header(c, service, out);
    json_object_set_new(out, "from", rt__query_time_json(w->from_ns));
    json_object_set_new(out, "to", rt__query_time_json(w->to_ns));
    json_object_set_new(out, "window_s", json_real((double)(w->to_ns - w->from_ns) / 1e9));
    json_object_set_new(out, "profiles", json_integer(w->profiles));
    json_object_set_new(out, "samples", samples_json(w));
    json_object_set_new(out, "value_ns", rt__query_ns_json(w->value_ns));
    json_t *flame = NULL;
    int frc = c->flame_text ? rt__query_flame_text(c, false, RT__QUERY_MAX_FLAME_NODES,
                                                   c->flame_text)
                            : !(flame = rt__query_flame_json(c, false, RT__QUERY_MAX_FLAME_NODES));
    json_t *quality = rt__query_quality_json(c, 0), *warnings = json_array();
    if (profile_functions(c, limit, out) || frc || !quality || !warnings) {
        json_decref(flame);
        json_decref(quality);
        json_decref(warnings);
        json_decref(out);
        return NULL;
    }
    if (flame)
        json_object_set_new(out, "flamegraph", flame);
    set_capacity_one(c, out);
    json_object_set_new(out, "cpu_agreement", rt__query_agreement_json(c, 0));
    window_warnings(w, "queried", warnings);
    json_object_set_new(quality, "warnings", warnings);
    json_object_set_new(out, "quality", quality);
    return out;
}

/* ---- diff answer ---- */

static json_t *diff_fn_json(const struct rt__query_ctx *c, const struct rt__query_diff_row *r)
{
    const struct rt__query_fn *f = &c->fns[r->fn];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", rt__query_str_json(f->name));
    json_object_set_new(o, "base_share", json_real(r->base_share));
    json_object_set_new(o, "cur_share", json_real(r->cur_share));
    json_object_set_new(o, "delta_pp", json_real(r->delta_pp));
    json_object_set_new(o, "base_total_share", json_real(r->base_total_share));
    json_object_set_new(o, "cur_total_share", json_real(r->cur_total_share));
    json_object_set_new(o, "base_samples", json_real(f->self_s[0]));
    json_object_set_new(o, "cur_samples", json_real(f->self_s[1]));
    json_object_set_new(o, "base_self_ns", rt__query_ns_json(f->self_v[0]));
    json_object_set_new(o, "cur_self_ns", rt__query_ns_json(f->self_v[1]));
    json_object_set_new(o, "z", r->has_z ? real_or_null(r->z) : json_null());
    json_object_set_new(o, "significant",
                        r->significant < 0 ? json_null() : json_boolean(r->significant));
    json_object_set_new(o, "new", json_boolean(r->is_new));
    json_t *vcpu = json_null();
    if (c->type == RT_PTYPE_CPU) {
        vcpu = json_object();
        json_object_set_new(vcpu, "base", fn_vcpu_json(c, f, 0));
        json_object_set_new(vcpu, "cur", fn_vcpu_json(c, f, 1));
    }
    json_object_set_new(o, "vcpu_hours_per_month", vcpu);
    return o;
}

static const char *counts_missing_reason(const struct rt__query_ctx *c)
{
    for (int k = 0; k < 2; k++)
        if (c->win[k].profiles > 0 && !c->win[k].all_counts)
            return "some profiles in the windows carry no sample counts (samples/count, or "
                   "a value with its period), so no significance test can be made";
    return NULL;
}

static void set_capacity_two(const struct rt__query_ctx *c, json_t *out)
{
    const struct rt__query_cap *b = &c->win[0].cap, *cur = &c->win[1].cap;
    if (c->type != RT_PTYPE_CPU) {
        json_object_set_new(out, "capacity", json_null());
        json_object_set_new(out, "capacity_unavailable", json_string(RT__QUERY_REASON_WALL));
        return;
    }
    char msg[300];
    if (!b->available && !cur->available) {
        if (strcmp(b->reason, cur->reason) == 0)
            snprintf(msg, sizeof(msg), "%s", cur->reason);
        else
            snprintf(msg, sizeof(msg), "baseline: %s; current: %s", b->reason, cur->reason);
        json_object_set_new(out, "capacity", json_null());
        json_object_set_new(out, "capacity_unavailable", json_string(msg));
        return;
    }
    json_t *o = json_object(), *v = json_object(), *in = json_object();
    json_object_set_new(v, "base", b->available ? real_or_null(b->vcpu_hours_per_month)
                                                : json_null());
    json_object_set_new(v, "cur", cur->available ? real_or_null(cur->vcpu_hours_per_month)
                                                 : json_null());
    json_object_set_new(in, "base", rt__query_cap_inputs_json(b, c->win[0].inst_cap,
                                                              c->insts.count, &c->insts));
    json_object_set_new(in, "cur", rt__query_cap_inputs_json(cur, c->win[1].inst_cap,
                                                             c->insts.count, &c->insts));
    json_object_set_new(o, "vcpu_hours_per_month", v);
    json_object_set_new(o, "inputs", in);
    json_object_set_new(out, "capacity", o);
    if (b->available && cur->available)
        json_object_set_new(out, "capacity_unavailable", json_null());
    else {
        snprintf(msg, sizeof(msg), "%s: %s", b->available ? "current" : "baseline",
                 b->available ? cur->reason : b->reason);
        json_object_set_new(out, "capacity_unavailable", json_string(msg));
    }
}

/* Warnings that the two windows are not alike in length or in how long the service lived in
 * them: shares still compare, but capacity is a rate over each window (DESIGN §7), so a
 * window in which instances lived only part of the time reads low (docs/decisions.md). */
static void length_warnings(const struct rt__query_ctx *c, json_t *arr)
{
    char msg[300];
    static const char *names[2] = {"baseline", "current"};
    double len[2];
    for (int k = 0; k < 2; k++)
        len[k] = (double)(c->win[k].to_ns - c->win[k].from_ns) / 1e9;
    double longer = len[0] > len[1] ? len[0] : len[1];
    if (len[0] > 0 && len[1] > 0 && fabs(len[0] - len[1]) > 0.1 * longer) {
        snprintf(msg, sizeof(msg),
                 "the windows differ in length (baseline %.0f s, current %.0f s): the current "
                 "window ends before uploads still in flight; capacity is a rate and compares, "
                 "sample counts do not",
                 len[0], len[1]);
        json_array_append_new(arr, json_string(msg));
    }
    /* the service, not each instance: a deploy replaces one instance by another and the
     * service stays alive throughout (an average per instance warned of every restart) */
    for (int k = 0; k < 2 && c->type == RT_PTYPE_CPU; k++) {
        const struct rt__query_cap *cap = &c->win[k].cap;
        if (c->win[k].profiles > 0 && cap->window_s > 0 && cap->instances_alive > 0 &&
            cap->service_alive_s < 0.5 * cap->window_s) {
            snprintf(msg, sizeof(msg),
                     "in the %s window the service was alive for %.0f s of %.0f s: its "
                     "capacity figure averages over the whole window",
                     names[k], cap->service_alive_s, cap->window_s);
            json_array_append_new(arr, json_string(msg));
        }
    }
}

static json_t *diff_quality(const struct rt__query_ctx *c)
{
    json_t *q = json_object(), *warnings = json_array();
    if (!q || !warnings) {
        json_decref(q);
        json_decref(warnings);
        return NULL;
    }
    json_object_set_new(q, "baseline", rt__query_quality_json(c, 0));
    json_object_set_new(q, "current", rt__query_quality_json(c, 1));
    if (c->win[0].profiles == 0)
        json_array_append_new(warnings,
                              json_string("no baseline data: nothing can be ranked as grown"));
    if (c->win[1].profiles == 0)
        json_array_append_new(warnings,
                              json_string("no current data: nothing can be ranked as shrunk"));
    window_warnings(&c->win[0], "baseline", warnings);
    window_warnings(&c->win[1], "current", warnings);
    length_warnings(c, warnings);
    json_object_set_new(q, "warnings", warnings);
    return q;
}

/* Sets "functions", "truncated", "baseline_missing", "significance_unavailable". */
static int diff_functions(const struct rt__query_ctx *c, size_t limit, json_t *out)
{
    bool baseline_missing = c->win[0].profiles == 0;
    const char *no_counts = counts_missing_reason(c);
    struct rt__query_diff_row *rows;
    size_t n;
    int rc = rt__query_diff_rows(c, baseline_missing, no_counts != NULL, &rows, &n);
    json_t *arr = rc ? NULL : json_array();
    if (!arr) {
        if (!rc)
            free(rows);
        return RT_ENOMEM;
    }
    for (size_t i = 0; i < n && i < limit; i++)
        json_array_append_new(arr, diff_fn_json(c, &rows[i]));
    free(rows);
    json_object_set_new(out, "functions", arr);
    json_object_set_new(out, "truncated", json_boolean(n > limit));
    json_object_set_new(out, "baseline_missing", json_boolean(baseline_missing));
    json_object_set_new(out, "significance_unavailable",
                        no_counts ? json_string(no_counts) : json_null());
    return 0;
}

json_t *rt__query_diff_json(const struct rt__query_ctx *c, const char *service, size_t limit,
                            json_t *issue, json_t *deploys)
{
    json_t *out = json_object();
    if (!out)
        return NULL;
    set_header(c, service, out);
    json_object_set_new(out, "issue", issue ? json_incref(issue) : json_null());
    json_object_set_new(out, "window_s",
                        json_real((double)(c->win[1].to_ns - c->win[1].from_ns) / 1e9));
    json_object_set_new(out, "baseline", window_json(&c->win[0]));
    json_object_set_new(out, "current", window_json(&c->win[1]));
    json_t *flame = NULL;
    int frc = c->flame_text ? rt__query_flame_text(c, true, RT__QUERY_MAX_FLAME_NODES,
                                                   c->flame_text)
                            : !(flame = rt__query_flame_json(c, true, RT__QUERY_MAX_FLAME_NODES));
    json_t *quality = diff_quality(c), *agree = json_object();
    if (diff_functions(c, limit, out) || frc || !quality || !agree) {
        json_decref(flame);
        json_decref(quality);
        json_decref(agree);
        json_decref(out);
        return NULL;
    }
    if (flame)
        json_object_set_new(out, "flamegraph", flame);
    json_object_set_new(out, "deploys", deploys ? json_incref(deploys) : json_array());
    set_capacity_two(c, out);
    json_object_set_new(agree, "baseline", rt__query_agreement_json(c, 0));
    json_object_set_new(agree, "current", rt__query_agreement_json(c, 1));
    if (json_is_null(json_object_get(agree, "baseline")) &&
        json_is_null(json_object_get(agree, "current"))) {
        json_decref(agree);
        agree = json_null();
    }
    json_object_set_new(out, "cpu_agreement", agree);
    json_object_set_new(out, "quality", quality);
    return out;
}

/* ---- entry points ---- */

/* Ends the scans of c: functions, names, capacity (RT_ENOMEM), then RT_ECANCELED when the
 * server began to stop meanwhile, so that a stop does not wait for the answer's building. */
static int finish(struct rt__query_ctx *c, struct rt_store *s, struct rt_error *err)
{
    if (rt__query_finish(c))
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    return rt_store_check_cancelled(s, err);
}

static bool valid_type(enum rt_ptype t)
{
    return t == RT_PTYPE_CPU || t == RT_PTYPE_WALL;
}

json_t *rt_query_profile(struct rt_store *s, const struct rt_query_profile_req *req,
                         struct rt_error *err)
{
    if (!req->service || !valid_type(req->type) || req->to_ns <= req->from_ns) {
        rt_error_set(err, RT_EINVAL, "a profile query needs a service, a type (cpu or wall) "
                                     "and a window with from < to");
        return NULL;
    }
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, rt__query_src_store(s), req->type, 1);
    struct rt_store_filter f = {req->service, req->type, req->from_ns,
                                req->to_ns,   req->version, req->instance};
    json_t *out = NULL;
    if (rt__query_scan(&c, 0, s, &f, err) || finish(&c, s, err))
        goto out;
    c.flame_text = req->flamegraph_text;
    out = rt__query_profile_json(&c, req->service,
                                 req->limit ? req->limit : RT_QUERY_DEFAULT_LIMIT);
    if (!out)
        rt_error_set(err, RT_ENOMEM, "out of memory building the answer");
out:
    rt__query_ctx_cleanup(&c);
    return out;
}

static int deploy_cb(void *ud, const struct rt_deploy *d)
{
    json_t *o = json_object();
    if (!o)
        return RT_ENOMEM;
    json_object_set_new(o, "version", rt__query_str_json(d->version));
    json_object_set_new(o, "at", rt__query_time_json(d->at_ns));
    json_object_set_new(o, "source", rt__query_str_json(d->source));
    return json_array_append_new(ud, o) ? RT_ENOMEM : 0;
}

/* Deploys of the diff's span [min from, max to) (DESIGN §6), or NULL with err set. */
static json_t *diff_deploys(struct rt_store *s, const struct rt_query_diff_req *req,
                            struct rt_error *err)
{
    int64_t from = req->base_from_ns < req->cur_from_ns ? req->base_from_ns : req->cur_from_ns;
    int64_t to = req->base_to_ns > req->cur_to_ns ? req->base_to_ns : req->cur_to_ns;
    json_t *arr = json_array();
    if (!arr) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    int rc = rt_store_scan_deploys(s, req->service, from, to, deploy_cb, arr, err);
    if (rc) {
        json_decref(arr);
        if (rc == RT_ENOMEM)
            rt_error_set(err, RT_ENOMEM, "out of memory listing deploys");
        else if (!err || err->code != rc)
            rt_error_set(err, rc < 0 ? rc : RT_EIO, "store error listing deploys");
        return NULL;
    }
    return arr;
}

json_t *rt_query_diff(struct rt_store *s, const struct rt_query_diff_req *req,
                      struct rt_error *err)
{
    if (!req->service || !valid_type(req->type) || req->base_to_ns < req->base_from_ns ||
        req->cur_to_ns < req->cur_from_ns) {
        rt_error_set(err, RT_EINVAL, "a diff needs a service, a type (cpu or wall) and two "
                                     "windows with from <= to");
        return NULL;
    }
    struct rt__query_ctx c;
    rt__query_ctx_init(&c, rt__query_src_store(s), req->type, 2);
    const char *bv = req->base_version ? req->base_version : req->version;
    const char *cv = req->cur_version ? req->cur_version : req->version;
    struct rt_store_filter fb = {req->service, req->type, req->base_from_ns,
                                 req->base_to_ns, bv, req->instance};
    struct rt_store_filter fc = {req->service, req->type, req->cur_from_ns,
                                 req->cur_to_ns,  cv, req->instance};
    json_t *out = NULL, *deploys = NULL;
    if (rt__query_scan_pair(&c, s, &fb, &fc, err) || finish(&c, s, err))
        goto out;
    deploys = diff_deploys(s, req, err);
    if (!deploys)
        goto out;
    c.flame_text = req->flamegraph_text;
    out = rt__query_diff_json(&c, req->service, req->limit ? req->limit : RT_QUERY_DEFAULT_LIMIT,
                              req->issue, deploys);
    if (!out)
        rt_error_set(err, RT_ENOMEM, "out of memory building the answer");
out:
    json_decref(deploys);
    rt__query_ctx_cleanup(&c);
    return out;
}
