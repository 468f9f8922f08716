/* Builds cpu and wall profiles from a JFR recording (DESIGN §2, §3, §12): reads each chunk's
 * header, metadata and constant pools, counts sample events by stack trace, and adds each
 * stack trace once per chunk, root first, with frames named `package.Class.method`.
 *
 * Which event is which type (by what was measured, DESIGN §12), after grafana/jfr-parser
 * (pprof/parser.go, commit 1d06ce37e983), async-profiler (src/flightRecorder.cpp,
 * src/wallClock.cpp) and the JDK 25 event descriptions (`jfr metadata`, JDK-8361175):
 * - jdk.ExecutionSample: cpu. "Snapshot of a thread executing Java code"; async-profiler
 *   writes it in its cpu, itimer and ctimer modes. With async-profiler's event "wall" (before
 *   4.0, and 4.x's nobatch) it holds wall samples instead: wall. A sample of a thread in
 *   STATE_SLEEPING is not cpu (jfr-parser drops it too) and one of a non-time event
 *   (cycles, cache-misses, ...) is neither type: both count as skipped "other".
 * - profiler.WallClockSample (async-profiler 4.0+): wall, worth its "samples" field (a batch
 *   of samples of an idle thread), as jfr-parser values it. jfr-parser also counts its
 *   STATE_RUNNABLE samples as cpu in wall mode; not here: a thread-state guess is not CPU time.
 * - jdk.NativeMethodSample: skipped. It is a "snapshot of a thread in native code, executing
 *   or waiting": mostly threads blocked in I/O or epoll, so not CPU time, and not a wall
 *   profile either (threads blocked in Java code are in neither event). jfr-parser has no
 *   parser for it and Pyroscope ingests nothing from it.
 * - Allocation and lock events are skipped and counted; so is everything else (jdk.CPULoad,
 *   settings, GC...), including JDK 25's experimental jdk.CPUTimeSample and dd-trace-java's
 *   own datadog.ExecutionSample / datadog.MethodSample, which no test file holds yet.
 * The sampling period is the recording's own (jfr_settings.c), else the uploader's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"
#include "jfr_internal.h"

enum { OUT_CPU, OUT_WALL, NOUT };

/* Samples of one stack trace in the current chunk. */
struct agg {
    uint64_t key;    /* stack trace key */
    bool has_key;    /* false: the events named no stack trace */
    uint64_t run;    /* jdk.ExecutionSample events, thread running (or state unknown) */
    uint64_t sleep;  /* jdk.ExecutionSample events, thread in STATE_SLEEPING */
    uint64_t wall;   /* profiler.WallClockSample samples (its "samples" field) */
};

/* An event type skipped as "other", for the answer. */
struct other {
    char name[64];
    uint64_t n;
};

struct dec {
    const uint8_t *data;
    const struct rt_ingest_limits *lim;
    struct rt_error *err;
    enum rt_ptype want;
    int64_t hint;                  /* period_hint_ns */
    bool compressed;               /* the current chunk's integer encoding */
    const uint8_t *chunk_end;
    struct rt__jfr_meta meta;      /* the current chunk's */
    struct rt__jfr_pools pools;
    struct rt__jfr_arena arena;
    struct rt__jfr_map agg_ix;     /* stack trace key -> aggs index */
    struct agg *aggs;
    size_t naggs, cap_aggs;
    uint32_t nostack;              /* aggs index of samples without a stack trace */
    uint64_t *class_count;         /* events of each class in the current chunk */
    uint64_t state_key;            /* last thread state looked up, and whether it sleeps */
    int state_sleeping;            /* -1 = none looked up in this chunk */
    struct rt__jfr_settings set;   /* in force: carried over chunks, restated by each */
    struct rt__jfr_stacks st;      /* names the current chunk's stacks */
    struct rt__jfr_out out[NOUT];
    struct rt__jfr_skipped skipped; /* copied to the caller's at the end */
    struct other *others;          /* names of other event types, with counts */
    size_t nothers, cap_others;
    struct rt__jfr_map other_ix;   /* hash of a name -> others index */
    uint64_t exec_untimed;         /* jdk.ExecutionSample of an event that measures no time */
    size_t events;                 /* events read, against max_samples */
    int64_t t0, t1;                /* earliest chunk start, latest chunk end, Unix ns */
};

static int oom(struct dec *d)
{
    return rt_error_set(d->err, RT_ENOMEM, "out of memory building the JFR profile");
}

static bool wanted(const struct dec *d, int o)
{
    return d->want == 0 || d->want == d->out[o].type;
}

/* ---- Settings ---- */

static void on_setting(struct dec *d, const struct rt__jfr_val *v)
{
    struct rt_str name, value = RT_STR_LIT("");
    if (v[0].kind != RT__JV_INT || !rt__jfr_str(&d->pools, &d->meta, v[1], &name))
        return;
    rt__jfr_str(&d->pools, &d->meta, v[2], &value);
    uint32_t c = rt__jfr_map_get(&d->meta.by_id, v[0].u);
    int target = c == RT__JFR_NONE                              ? RT__JFR_FOR_OTHER
                 : c == d->meta.special[RT__JFR_T_EXEC]      ? RT__JFR_FOR_EXEC
                 : c == d->meta.special[RT__JFR_T_WALLCLOCK] ? RT__JFR_FOR_WALLCLOCK
                                                             : RT__JFR_FOR_OTHER;
    rt__jfr_setting(&d->set, target, name, value);
}

/* ---- Events ---- */

/* Index of the aggregate for stack trace reference v, made on first use; RT__JFR_NONE on
 * ENOMEM. */
static uint32_t agg_of(struct dec *d, const struct rt__jfr_val *v)
{
    bool has = v->kind == RT__JV_REF && v->n == d->meta.special[RT__JFR_T_STACKTRACE];
    uint32_t i = has ? rt__jfr_map_get(&d->agg_ix, v->u) : d->nostack;
    if (i != RT__JFR_NONE)
        return i;
    if (rt_array_grow((void **)&d->aggs, &d->cap_aggs, d->naggs + 1, sizeof(*d->aggs)))
        return RT__JFR_NONE;
    i = (uint32_t)d->naggs;
    if (has && rt__jfr_map_put(&d->agg_ix, v->u, i))
        return RT__JFR_NONE;
    d->aggs[d->naggs++] = (struct agg){.key = has ? v->u : 0, .has_key = has};
    if (!has)
        d->nostack = i;
    return i;
}

/* Whether thread state reference v is STATE_SLEEPING. */
static bool sleeping(struct dec *d, const struct rt__jfr_val *v)
{
    if (v->kind != RT__JV_REF || v->n != d->meta.special[RT__JFR_T_THREADSTATE])
        return false;
    if (d->state_sleeping >= 0 && d->state_key == v->u)
        return d->state_sleeping;
    const struct rt__jfr_val *e = rt__jfr_pool_get(&d->pools, RT__JFR_T_THREADSTATE, v->u, NULL);
    struct rt_str name;
    d->state_key = v->u;
    d->state_sleeping = e && rt__jfr_str(&d->pools, &d->meta, e[0], &name) &&
                        rt_str_eq_cstr(name, "STATE_SLEEPING");
    return d->state_sleeping;
}

/* Reads one event of class c whose fields are at r. */
static int on_event(struct dec *d, struct rt__jfr_in *r, uint32_t c)
{
    struct rt__jfr_val v[RT__JFR_MAX_ROLES];
    uint8_t cat = d->meta.classes[c].category;
    d->class_count[c]++;
    if (cat != RT__JFR_EV_EXEC && cat != RT__JFR_EV_WALLCLOCK && cat != RT__JFR_EV_SETTING)
        return 0;
    memset(v, 0, sizeof(v));
    rt__jfr_read_obj(&d->meta, r, c, &d->arena, v);
    if (r->rc)
        return rt__jfr_in_error(r, "event", d->err);
    if (cat == RT__JFR_EV_SETTING) {
        on_setting(d, v);
        return 0;
    }
    uint32_t i = agg_of(d, &v[0]);
    if (i == RT__JFR_NONE)
        return oom(d);
    struct agg *a = &d->aggs[i];
    if (cat == RT__JFR_EV_WALLCLOCK) /* jfr-parser: value = the event's "samples" */
        a->wall += v[2].kind == RT__JV_INT ? (uint32_t)v[2].u : 1;
    else if (sleeping(d, &v[1]))
        a->sleep++;
    else
        a->run++;
    return 0;
}

/* Reads the events of the chunk [chunk, chunk_end) after its header. */
static int read_events(struct dec *d, const uint8_t *chunk)
{
    const uint8_t *p = chunk + RT__JFR_HEADER_SIZE, *end = d->chunk_end;
    while (p < end) {
        struct rt__jfr_in r = {p, end, d->data, d->compressed, 0, NULL, 0};
        uint32_t size = rt__jfr_int(&r);
        uint64_t type = rt__jfr_long(&r);
        if (r.rc)
            return rt__jfr_in_error(&r, "event", d->err);
        if (size < (size_t)(r.p - p) || size > (size_t)(end - p))
            return rt__jfr_malformed(d->err, (size_t)(p - d->data),
                                     "event size %u past its chunk's end", size);
        r.end = p + size;
        p += size;
        if (type <= 1) /* metadata and checkpoint events, read already */
            continue;
        if (++d->events > d->lim->max_samples)
            return rt_error_set(d->err, RT_ETOOBIG,
                                "the JFR recording holds more than %zu events, over the limit "
                                "(max_samples)", d->lim->max_samples);
        uint32_t c = rt__jfr_map_get(&d->meta.by_id, type);
        int rc = c == RT__JFR_NONE ? 0 : on_event(d, &r, c);
        if (c == RT__JFR_NONE)
            d->skipped.other++; /* an undeclared type: the JDK skips it too */
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- Skipped events ---- */

/* Counts n events of an other type; its name is kept for the answer (the first 4096 names,
 * far more than the JDK's some 200 event types). */
static void count_other(struct dec *d, struct rt_str name, uint64_t n)
{
    if (n == 0)
        return;
    d->skipped.other += n;
    char text[sizeof(d->others[0].name)];
    rt__jfr_printable(text, sizeof(text), name);
    uint64_t h = rt_hash(text, strlen(text));
    uint32_t i = rt__jfr_map_get(&d->other_ix, h);
    if (i != RT__JFR_NONE) {
        d->others[i].n += n;
        return;
    }
    if (d->nothers == 4096 ||
        rt_array_grow((void **)&d->others, &d->cap_others, d->nothers + 1, sizeof(*d->others)) ||
        rt__jfr_map_put(&d->other_ix, h, (uint32_t)d->nothers))
        return; /* only a name in a message is lost */
    memcpy(d->others[d->nothers].name, text, sizeof(text));
    d->others[d->nothers++].n = n;
}

/* Adds the current chunk's events that no profile takes to *skipped. */
static void count_skipped(struct dec *d)
{
    for (size_t c = 0; c < d->meta.nclasses; c++) {
        uint64_t n = d->class_count[c];
        switch (d->meta.classes[c].category) {
        case RT__JFR_EV_ALLOC:
            d->skipped.allocation += n;
            break;
        case RT__JFR_EV_LOCK:
            d->skipped.lock += n;
            break;
        case RT__JFR_EV_NATIVE:
            d->skipped.native_method += n;
            break;
        case RT__JFR_EV_EXEC:
        case RT__JFR_EV_WALLCLOCK:
            break;
        default:
            count_other(d, d->meta.classes[c].name, n);
        }
    }
}

/* ---- Chunk end: samples into profiles ---- */

static int no_period(struct dec *d, const char *type, const char *event)
{
    return rt_error_set(d->err, RT_ETYPE,
                        "the JFR recording states no sampling period for its %s samples (%s "
                        "has no period or interval setting) and the upload gave none: give the "
                        "sampling rate (sampleRate=<Hz> on /ingest, e.g. 100 for 10 ms; "
                        "--period_ns with `roottrace ingest`)",
                        type, event);
}

/* n samples times period ns into *v, checked. */
static int times(struct dec *d, uint64_t n, int64_t period, int64_t *v)
{
    int64_t x;
    if (n > (uint64_t)INT64_MAX || __builtin_mul_overflow((int64_t)n, period, &x) ||
        __builtin_add_overflow(*v, x, v) || *v > RT_PROFILE_MAX_VALUE_NS)
        return rt_error_set(d->err, RT_ETOOBIG,
                            "the JFR recording's samples exceed the limit of %lld ns (2^62 ns, "
                            "about 146 years) per profile", (long long)RT_PROFILE_MAX_VALUE_NS);
    return 0;
}

/* Periods of this chunk's samples, checked where samples need one: [0] cpu, [1] wall from
 * jdk.ExecutionSample, [2] wall from profiler.WallClockSample. */
static int chunk_periods(struct dec *d, enum rt__jfr_mode mode, int64_t p[3])
{
    uint64_t run = 0, sleep = 0, wall = 0;
    for (size_t i = 0; i < d->naggs; i++) {
        run += d->aggs[i].run;
        sleep += d->aggs[i].sleep;
        wall += d->aggs[i].wall;
    }
    const char *exec = "jdk.ExecutionSample", *wallc = "profiler.WallClockSample";
    uint64_t cpu_n = mode == RT__JFR_MODE_CPU ? run : 0;
    uint64_t wexec_n = mode == RT__JFR_MODE_WALL ? run + sleep : 0;
    d->out[OUT_CPU].samples += cpu_n;
    d->out[OUT_WALL].samples += wexec_n + wall;
    d->exec_untimed += mode == RT__JFR_MODE_OTHER ? run + sleep : 0;
    count_other(d, RT_STR_LIT("jdk.ExecutionSample"),
                mode == RT__JFR_MODE_CPU ? sleep : mode == RT__JFR_MODE_OTHER ? run + sleep : 0);
    for (int k = 0; k < 3; k++)
        p[k] = rt__jfr_period(&d->set, k, d->hint);
    if (wanted(d, OUT_CPU) && cpu_n && !p[0])
        return no_period(d, "cpu", exec);
    if (wanted(d, OUT_WALL) && wexec_n && !p[1])
        return no_period(d, "wall", exec);
    if (wanted(d, OUT_WALL) && wall && !p[2])
        return no_period(d, "wall", wallc);
    return 0;
}

/* Adds the chunk's aggregated samples to the profiles and starts the next chunk afresh. */
static int flush(struct dec *d)
{
    enum rt__jfr_mode mode = rt__jfr_mode_of(&d->set);
    int64_t p[3];
    int rc = chunk_periods(d, mode, p);
    for (size_t i = 0; i < d->naggs && rc == 0; i++) {
        const struct agg *a = &d->aggs[i];
        uint64_t wexec = mode == RT__JFR_MODE_WALL ? a->run + a->sleep : 0;
        uint64_t n[NOUT] = {mode == RT__JFR_MODE_CPU ? a->run : 0, wexec + a->wall};
        int64_t v[NOUT] = {0, 0};
        rc = times(d, n[OUT_CPU], p[0], &v[OUT_CPU]);
        rc = rc ? rc : times(d, wexec, p[1], &v[OUT_WALL]);
        rc = rc ? rc : times(d, a->wall, p[2], &v[OUT_WALL]);
        bool need = (wanted(d, OUT_CPU) && n[OUT_CPU]) || (wanted(d, OUT_WALL) && n[OUT_WALL]);
        size_t nf = 0;
        rc = rc || !need ? rc : rt__jfr_read_frames(&d->st, a->has_key, a->key, &nf);
        for (int o = 0; o < NOUT && rc == 0; o++)
            if (wanted(d, o) && n[o])
                rc = rt__jfr_add_stack(&d->st, &d->out[o], nf, n[o], v[o]);
    }
    int64_t used[NOUT] = {p[0], mode == RT__JFR_MODE_WALL ? p[1] : p[2]};
    for (int o = 0; o < NOUT && rc == 0; o++)
        if (!d->out[o].period && d->out[o].p)
            d->out[o].period = used[o];
    d->out[OUT_CPU].enabled |= d->set.exec_enabled && mode == RT__JFR_MODE_CPU;
    d->out[OUT_WALL].enabled |=
        (d->set.exec_enabled && mode == RT__JFR_MODE_WALL) || d->set.wall_enabled;
    count_skipped(d);
    rt__jfr_map_clear(&d->agg_ix);
    d->naggs = 0;
    d->nostack = RT__JFR_NONE;
    return rc;
}

/* ---- Chunks ---- */

struct header {
    uint64_t size, cp, meta;  /* chunk size; constant pool and metadata offsets in it */
    int64_t start, duration;  /* Unix ns */
    bool compressed;
};

/* Reads and checks the chunk header at off (ChunkHeader; JMC's ChunkStructure for features). */
static int read_header(struct dec *d, size_t len, size_t off, int n, struct header *h)
{
    const uint8_t *p = d->data + off;
    size_t left = len - off;
    if (left < 4 || memcmp(p, "FLR\0", 4) != 0)
        return rt__jfr_malformed(d->err, off, "%s has no FLR magic (not a JFR recording)",
                                 n ? "chunk" : "data");
    if (left < RT__JFR_HEADER_SIZE)
        return rt__jfr_malformed(d->err, off, "chunk %d: truncated header (%zu of %d bytes)",
                                 n + 1, left, RT__JFR_HEADER_SIZE);
    struct rt__jfr_in r = {p + 4, p + RT__JFR_HEADER_SIZE, d->data, false, 0, NULL, 0};
    unsigned major = (unsigned)rt__jfr_be(&r, 2), minor = (unsigned)rt__jfr_be(&r, 2);
    if (major != 1 && major != 2)
        return rt_error_set(d->err, RT_EFORMAT, "JFR file version %u.%u: only versions 1.x and "
                            "2.x are read", major, minor);
    h->size = rt__jfr_be(&r, 8);
    h->cp = rt__jfr_be(&r, 8);
    h->meta = rt__jfr_be(&r, 8);
    uint64_t start = rt__jfr_be(&r, 8), dur = rt__jfr_be(&r, 8);
    rt__jfr_be(&r, 8); /* start ticks */
    rt__jfr_be(&r, 8); /* ticks per second */
    h->compressed = rt__jfr_be(&r, 4) & 1;
    if (h->size < RT__JFR_HEADER_SIZE || h->size > left)
        return rt__jfr_malformed(d->err, off, "chunk %d: size %llu runs past the end of the "
                                 "data (%zu bytes left)", n + 1, (unsigned long long)h->size,
                                 left);
    if (h->meta < RT__JFR_HEADER_SIZE || h->meta >= h->size ||
        (h->cp && (h->cp < RT__JFR_HEADER_SIZE || h->cp >= h->size)))
        return rt__jfr_malformed(d->err, off, "chunk %d: metadata offset %llu or constant pool "
                                 "offset %llu outside the chunk", n + 1,
                                 (unsigned long long)h->meta, (unsigned long long)h->cp);
    if (start > INT64_MAX || dur > INT64_MAX - start)
        return rt__jfr_malformed(d->err, off, "chunk %d: start %llu ns or duration %llu ns out "
                                 "of range", n + 1, (unsigned long long)start,
                                 (unsigned long long)dur);
    h->start = (int64_t)start;
    h->duration = (int64_t)dur;
    return 0;
}

static int read_chunk(struct dec *d, size_t len, size_t off, int n, size_t *size)
{
    struct header h;
    memset(&h, 0, sizeof(h));
    int rc = read_header(d, len, off, n, &h);
    if (rc)
        return rc;
    const uint8_t *chunk = d->data + off;
    d->compressed = h.compressed;
    d->chunk_end = chunk + h.size;
    rt__jfr_meta_cleanup(&d->meta);
    struct rt__jfr_in r = {chunk + h.meta, d->chunk_end, d->data, h.compressed, 0, NULL, 0};
    rc = rt__jfr_meta_read(&d->meta, &r, d->lim, &d->arena, d->err);
    struct rt__jfr_in whole = {chunk, d->chunk_end, d->data, h.compressed, 0, NULL, 0};
    rc = rc ? rc : rt__jfr_pools_read(&d->pools, &d->meta, &whole, h.cp, d->lim, &d->arena,
                                      d->err);
    if (rc)
        return rc;
    d->st.chunk_end = d->chunk_end;
    d->st.compressed = h.compressed;
    rc = rt__jfr_stacks_chunk(&d->st, d->out, NOUT);
    if (rc)
        return rc;
    free(d->class_count);
    d->class_count = calloc(d->meta.nclasses + 1, sizeof(*d->class_count));
    if (!d->class_count)
        return oom(d);
    d->set.stated = 0;
    d->state_sleeping = -1;
    rc = read_events(d, chunk);
    rc = rc ? rc : flush(d);
    if (rc)
        return rc;
    d->t0 = n == 0 || h.start < d->t0 ? h.start : d->t0;
    d->t1 = n == 0 || h.start + h.duration > d->t1 ? h.start + h.duration : d->t1;
    *size = (size_t)h.size;
    return 0;
}

/* ---- The result ---- */

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = n < 0 ? cap : *len + (size_t)n;
}

/* RT_ETYPE naming what the recording held instead of the samples wanted. */
static int no_samples(struct dec *d, const struct rt__jfr_skipped *s)
{
    char msg[400];
    size_t n = 0;
    const char *what = d->want == RT_PTYPE_CPU    ? "cpu samples (jdk.ExecutionSample)"
                       : d->want == RT_PTYPE_WALL ? "wall samples"
                                                  : "cpu or wall samples";
    append(msg, sizeof(msg), &n, "the JFR recording holds no %s; it holds", what);
    if (d->want == RT_PTYPE_WALL && d->out[OUT_CPU].samples)
        append(msg, sizeof(msg), &n, " %llu cpu samples,",
               (unsigned long long)d->out[OUT_CPU].samples);
    if (d->want == RT_PTYPE_CPU && d->out[OUT_WALL].samples)
        append(msg, sizeof(msg), &n, " %llu wall samples,",
               (unsigned long long)d->out[OUT_WALL].samples);
    append(msg, sizeof(msg), &n, " %llu allocation, %llu lock, %llu jdk.NativeMethodSample "
           "and %llu other events", (unsigned long long)s->allocation,
           (unsigned long long)s->lock, (unsigned long long)s->native_method,
           (unsigned long long)s->other);
    for (int i = 0; i < 4 && s->other_names[i][0]; i++)
        append(msg, sizeof(msg), &n, "%s%s", i ? ", " : " (", s->other_names[i]);
    append(msg, sizeof(msg), &n, "%s", s->other_names[0][0] ? ")" : "");
    if (d->exec_untimed)
        append(msg, sizeof(msg), &n, "; its jdk.ExecutionSample events count async-profiler "
               "event \"%s\", not time", d->set.event);
    return rt_error_set(d->err, RT_ETYPE, "%s", msg);
}

/* The most frequent other event names into s. */
static void name_others(struct dec *d, struct rt__jfr_skipped *s)
{
    for (int k = 0; k < 4; k++) {
        size_t best = d->nothers;
        for (size_t i = 0; i < d->nothers; i++)
            if (d->others[i].n && (best == d->nothers || d->others[i].n > d->others[best].n))
                best = i;
        if (best == d->nothers)
            return;
        memcpy(s->other_names[k], d->others[best].name, sizeof(s->other_names[k]));
        d->others[best].n = 0;
    }
}

/* Hands out the profiles (cpu first), or refuses with RT_ETYPE when none is wanted. */
static int finish(struct dec *d, struct rt_profile **out, size_t *nout)
{
    struct rt__jfr_skipped *s = &d->skipped;
    name_others(d, s);
    size_t k = 0;
    for (int o = 0; o < NOUT; o++) {
        struct rt__jfr_out *r = &d->out[o];
        if (!wanted(d, o) || (!r->p && !r->enabled))
            continue;
        if (!r->p && !(r->p = rt_profile_new(r->type)))
            return oom(d);
        r->p->time_ns = d->t0;
        r->p->duration_ns = d->t1 > d->t0 ? d->t1 - d->t0 : -1;
        r->p->period_ns = r->period;
        r->p->has_counts = true;
        k++;
    }
    if (k == 0)
        return no_samples(d, s);
    k = 0;
    for (int o = 0; o < NOUT; o++)
        if (d->out[o].p) {
            out[k++] = d->out[o].p;
            d->out[o].p = NULL;
        }
    *nout = k;
    return 0;
}

static void dec_cleanup(struct dec *d)
{
    rt__jfr_meta_cleanup(&d->meta);
    rt__jfr_pools_cleanup(&d->pools);
    rt__jfr_arena_cleanup(&d->arena);
    rt__jfr_map_cleanup(&d->agg_ix);
    free(d->aggs);
    free(d->class_count);
    rt__jfr_stacks_cleanup(&d->st);
    free(d->others);
    rt__jfr_map_cleanup(&d->other_ix);
    for (int o = 0; o < NOUT; o++) {
        rt_profile_free(d->out[o].p);
        free(d->out[o].mcache);
    }
}

int rt__ingest_jfr(const uint8_t *data, size_t len, enum rt_ptype want, int64_t period_hint_ns,
                   const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                   struct rt__jfr_skipped *skipped, struct rt_error *err)
{
    struct rt_ingest_limits defaults;
    if (!lim) {
        rt_ingest_limits_default(&defaults);
        lim = &defaults;
    }
    struct dec d;
    memset(&d, 0, sizeof(d));
    d.data = data;
    d.lim = lim;
    d.err = err;
    d.want = want;
    d.hint = period_hint_ns > 0 ? period_hint_ns : 0;
    d.nostack = RT__JFR_NONE;
    d.arena.budget = lim->max_decompressed;
    d.st = (struct rt__jfr_stacks){.data = data, .meta = &d.meta, .pools = &d.pools,
                                   .arena = &d.arena, .err = err};
    for (int o = 0; o < NOUT; o++) {
        d.out[o].type = o == OUT_CPU ? RT_PTYPE_CPU : RT_PTYPE_WALL;
        d.out[o].unknown = RT__JFR_NONE;
    }
    int rc = 0;
    if (len == 0)
        rc = rt_error_set(err, RT_EMALFORMED, "JFR: empty body");
    size_t off = 0;
    for (int n = 0; rc == 0 && off < len; n++) {
        size_t size = 0;
        if (n == RT__JFR_MAX_CHUNKS)
            rc = rt_error_set(err, RT_ETOOBIG, "the JFR recording has more than %d chunks, "
                              "over the limit", RT__JFR_MAX_CHUNKS);
        else
            rc = read_chunk(&d, len, off, n, &size);
        off += size;
    }
    rc = rc ? rc : finish(&d, out, nout);
    if (skipped && (rc == 0 || rc == RT_ETYPE)) /* RT_ETYPE: what it held instead */
        *skipped = d.skipped;
    dec_cleanup(&d);
    return rc;
}
