/* A hand-written, zero-copy decoder of pprof's Profile message (profile.proto, RUNTIMES.md §6):
 * two passes over the top level (count, then fill), sub-messages decoded in place, repeated
 * scalars accepted packed and unpacked, every length and string index checked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"

#define MAX_SAMPLE_TYPES RT__PPROF_MAX_SAMPLE_TYPES
/* Line records allowed per location limit (inlining rarely exceeds a few per location). */
#define LINES_PER_LOCATION 4

enum {
    F_SAMPLE_TYPE = 1, F_SAMPLE = 2, F_MAPPING = 3, F_LOCATION = 4, F_FUNCTION = 5,
    F_STRING = 6, F_TIME = 9, F_DURATION = 10, F_PERIOD_TYPE = 11, F_PERIOD = 12,
};

/* Decoding context: the input's start for byte offsets in messages. */
struct dec {
    const uint8_t *base;
    struct rt_error *err;
};

static int bad(struct dec *d, const struct rt__pb *r, const char *what)
{
    return rt_error_set(d->err, RT_EMALFORMED,
                        "malformed protobuf: bad varint, field key or length in %s (near byte %zu)",
                        what, (size_t)(r->p - d->base));
}

static int bad_wire(struct dec *d, const struct rt__pb *r, const char *what, uint32_t wire)
{
    return rt_error_set(d->err, RT_EMALFORMED,
                        "malformed protobuf: %s has wire type %u (near byte %zu)", what, wire,
                        (size_t)(r->p - d->base));
}

/* Reads a varint-encoded scalar field's value. */
static int scalar(struct dec *d, struct rt__pb *r, uint32_t wire, const char *what, uint64_t *v)
{
    if (wire != RT__PB_VARINT)
        return bad_wire(d, r, what, wire);
    if (rt__pb_varint(r, v))
        return bad(d, r, what);
    return 0;
}

/* Reads a sub-message field's bytes. */
static int submsg(struct dec *d, struct rt__pb *r, uint32_t wire, const char *what,
                  struct rt__pb *sub)
{
    if (wire != RT__PB_LEN)
        return bad_wire(d, r, what, wire);
    if (rt__pb_len(r, sub))
        return bad(d, r, what);
    return 0;
}

static int check_str(struct dec *d, const struct rt__pprof *pp, int64_t i, const char *what)
{
    if (i < 0 || (uint64_t)i >= pp->nstrings)
        return rt_error_set(d->err, RT_EMALFORMED,
                            "string index %lld of %s is out of range (string_table has %zu "
                            "entries)",
                            (long long)i, what, pp->nstrings);
    return 0;
}

static int value_type(struct dec *d, struct rt__pb m, struct rt__pprof_vt *vt)
{
    uint32_t f, w;
    uint64_t v;
    memset(vt, 0, sizeof(*vt));
    while (m.p < m.end) {
        if (rt__pb_key(&m, &f, &w))
            return bad(d, &m, "ValueType");
        if (f == 1 || f == 2) {
            if (scalar(d, &m, w, "ValueType", &v))
                return RT_EMALFORMED;
            if (f == 1)
                vt->type = (int64_t)v;
            else
                vt->unit = (int64_t)v;
        } else if (rt__pb_skip(&m, w)) {
            return bad(d, &m, "ValueType");
        }
    }
    return 0;
}

static int mapping(struct dec *d, struct rt__pb m, struct rt__pprof_mapping *mp)
{
    uint32_t f, w;
    uint64_t v;
    memset(mp, 0, sizeof(*mp));
    while (m.p < m.end) {
        if (rt__pb_key(&m, &f, &w))
            return bad(d, &m, "Mapping");
        if (f == 1 || f == 5) {
            if (scalar(d, &m, w, "Mapping", &v))
                return RT_EMALFORMED;
            if (f == 1)
                mp->id = v;
            else
                mp->filename = (int64_t)v;
        } else if (rt__pb_skip(&m, w)) {
            return bad(d, &m, "Mapping");
        }
    }
    return 0;
}

static int function(struct dec *d, struct rt__pb m, struct rt__pprof_function *fn)
{
    uint32_t f, w;
    uint64_t v;
    memset(fn, 0, sizeof(*fn));
    while (m.p < m.end) {
        if (rt__pb_key(&m, &f, &w))
            return bad(d, &m, "Function");
        if (f >= 1 && f <= 4) {
            if (scalar(d, &m, w, "Function", &v))
                return RT_EMALFORMED;
            if (f == 1)
                fn->id = v;
            else if (f == 2)
                fn->name = (int64_t)v;
            else if (f == 3)
                fn->system_name = (int64_t)v;
            else
                fn->filename = (int64_t)v;
        } else if (rt__pb_skip(&m, w)) {
            return bad(d, &m, "Function");
        }
    }
    return 0;
}

/* Appends the function id of one Line message to pp->line_fn. */
static int line(struct dec *d, struct rt__pprof *pp, struct rt__pb m, size_t max_lines)
{
    uint32_t f, w;
    uint64_t fn = 0;
    while (m.p < m.end) {
        if (rt__pb_key(&m, &f, &w))
            return bad(d, &m, "Line");
        if (f == 1) {
            if (scalar(d, &m, w, "Line", &fn))
                return RT_EMALFORMED;
        } else if (rt__pb_skip(&m, w)) {
            return bad(d, &m, "Line");
        }
    }
    if (pp->nline_fn == pp->cap_line_fn) {
        if (pp->nline_fn >= max_lines)
            return rt_error_set(d->err, RT_ETOOBIG,
                                "location lines exceed the limit of %zu (%d x max_locations)",
                                max_lines, LINES_PER_LOCATION);
        size_t cap = pp->cap_line_fn ? pp->cap_line_fn * 2 : 1024;
        if (cap > max_lines)
            cap = max_lines;
        uint64_t *a = realloc(pp->line_fn, cap * sizeof(*a));
        if (!a)
            return rt_error_set(d->err, RT_ENOMEM, "out of memory decoding locations");
        pp->line_fn = a;
        pp->cap_line_fn = cap;
    }
    pp->line_fn[pp->nline_fn++] = fn;
    return 0;
}

static int location(struct dec *d, struct rt__pprof *pp, struct rt__pb m,
                    struct rt__pprof_location *loc, size_t max_lines)
{
    uint32_t f, w;
    uint64_t v;
    struct rt__pb sub;
    memset(loc, 0, sizeof(*loc));
    loc->line_off = (uint32_t)pp->nline_fn;
    while (m.p < m.end) {
        if (rt__pb_key(&m, &f, &w))
            return bad(d, &m, "Location");
        if (f == 1 || f == 2) {
            if (scalar(d, &m, w, "Location", &v))
                return RT_EMALFORMED;
            if (f == 1)
                loc->id = v;
            else
                loc->mapping_id = v;
        } else if (f == 4) {
            if (submsg(d, &m, w, "Location.line", &sub))
                return RT_EMALFORMED;
            int rc = line(d, pp, sub, max_lines);
            if (rc)
                return rc;
        } else if (rt__pb_skip(&m, w)) {
            return bad(d, &m, "Location");
        }
    }
    loc->nlines = (uint32_t)(pp->nline_fn - loc->line_off);
    return 0;
}

/* Counts for pass 2's allocations. */
struct counts {
    size_t sample_types, samples, mappings, locations, functions, strings;
};

static int too_many(struct dec *d, const char *what, size_t limit, const char *name)
{
    return rt_error_set(d->err, RT_ETOOBIG, "profile has more %s than the limit of %zu (%s)",
                        what, limit, name);
}

/* Pass 1: checks the top level's framing and counts the repeated message fields. */
static int count_fields(struct dec *d, struct rt__pb r, const struct rt_ingest_limits *lim,
                        struct counts *c)
{
    uint32_t f, w;
    bool seen_time = false;
    memset(c, 0, sizeof(*c));
    while (r.p < r.end) {
        if (rt__pb_key(&r, &f, &w))
            return bad(d, &r, "Profile");
        bool is_msg = f == F_SAMPLE_TYPE || f == F_SAMPLE || f == F_MAPPING ||
                      f == F_LOCATION || f == F_FUNCTION || f == F_STRING || f == F_PERIOD_TYPE;
        if (is_msg && w != RT__PB_LEN)
            return bad_wire(d, &r, "a Profile message or string field", w);
        if ((f == F_TIME || f == F_DURATION || f == F_PERIOD) && w != RT__PB_VARINT)
            return bad_wire(d, &r, "a Profile integer field", w);
        if (f == F_TIME && seen_time)
            return rt_error_set(d->err, RT_EMALFORMED,
                                "concatenated profiles detected (time_nanos appears twice)");
        seen_time |= f == F_TIME;
        c->sample_types += f == F_SAMPLE_TYPE;
        c->samples += f == F_SAMPLE;
        c->mappings += f == F_MAPPING;
        c->locations += f == F_LOCATION;
        c->functions += f == F_FUNCTION;
        c->strings += f == F_STRING;
        if (rt__pb_skip(&r, w))
            return bad(d, &r, "Profile");
    }
    if (c->samples > lim->max_samples)
        return too_many(d, "samples", lim->max_samples, "max_samples");
    if (c->locations > lim->max_locations)
        return too_many(d, "locations", lim->max_locations, "max_locations");
    if (c->functions > lim->max_locations)
        return too_many(d, "functions", lim->max_locations, "max_locations");
    if (c->mappings > lim->max_locations)
        return too_many(d, "mappings", lim->max_locations, "max_locations");
    if (c->strings > lim->max_strings)
        return too_many(d, "strings", lim->max_strings, "max_strings");
    if (c->sample_types > MAX_SAMPLE_TYPES)
        return too_many(d, "sample types", MAX_SAMPLE_TYPES, "64 sample types");
    return 0;
}

/* Room for n elements, not zeroed: pass 2 writes each element it counts before anything
 * reads it (the element decoders start by clearing theirs), so zeroing the arrays first
 * would only pass over their memory once more. */
static void *alloc_n(size_t n, size_t size)
{
    n = n ? n : 1;
    return n > SIZE_MAX / size ? NULL : malloc(n * size);
}

static int alloc_arrays(struct rt__pprof *pp, const struct counts *c)
{
    pp->sample_types = alloc_n(c->sample_types, sizeof(*pp->sample_types));
    pp->samples = alloc_n(c->samples, sizeof(*pp->samples));
    pp->mappings = alloc_n(c->mappings, sizeof(*pp->mappings));
    pp->locations = alloc_n(c->locations, sizeof(*pp->locations));
    pp->functions = alloc_n(c->functions, sizeof(*pp->functions));
    pp->strings = alloc_n(c->strings, sizeof(*pp->strings));
    if (!pp->sample_types || !pp->samples || !pp->mappings || !pp->locations ||
        !pp->functions || !pp->strings)
        return RT_ENOMEM;
    return 0;
}

/* Pass 2: decodes every top-level field into pp. */
static int fill(struct dec *d, struct rt__pb r, size_t max_lines, struct rt__pprof *pp)
{
    uint32_t f, w;
    uint64_t v = 0;
    struct rt__pb sub;
    int rc = 0;
    while (r.p < r.end && rc == 0) {
        if (rt__pb_key(&r, &f, &w))
            return bad(d, &r, "Profile");
        switch (f) {
        case F_SAMPLE_TYPE:
            rt__pb_len(&r, &sub);
            rc = value_type(d, sub, &pp->sample_types[pp->nsample_types++]);
            break;
        case F_SAMPLE:
            rt__pb_len(&r, &pp->samples[pp->nsamples]);
            sub = pp->samples[pp->nsamples++];
            if ((size_t)(sub.end - sub.p) > pp->max_sample_len)
                pp->max_sample_len = (size_t)(sub.end - sub.p);
            break;
        case F_MAPPING:
            rt__pb_len(&r, &sub);
            rc = mapping(d, sub, &pp->mappings[pp->nmappings++]);
            break;
        case F_LOCATION:
            rt__pb_len(&r, &sub);
            rc = location(d, pp, sub, &pp->locations[pp->nlocations++], max_lines);
            break;
        case F_FUNCTION:
            rt__pb_len(&r, &sub);
            rc = function(d, sub, &pp->functions[pp->nfunctions++]);
            break;
        case F_STRING:
            rt__pb_len(&r, &sub);
            pp->strings[pp->nstrings++] =
                (struct rt_str){(const char *)sub.p, (size_t)(sub.end - sub.p)};
            break;
        case F_PERIOD_TYPE:
            rt__pb_len(&r, &sub);
            rc = value_type(d, sub, &pp->period_type);
            break;
        case F_TIME:
        case F_DURATION:
        case F_PERIOD:
            rt__pb_varint(&r, &v);
            if (f == F_TIME)
                pp->time_nanos = (int64_t)v;
            else if (f == F_DURATION)
                pp->duration_nanos = (int64_t)v;
            else
                pp->period = (int64_t)v;
            break;
        default:
            rt__pb_skip(&r, w); /* framing checked by pass 1 */
        }
    }
    return rc;
}

/* Checks every string index that ingest reads. */
static int check_strings(struct dec *d, const struct rt__pprof *pp)
{
    if (pp->nstrings == 0)
        return rt_error_set(d->err, RT_EMALFORMED, "string_table is empty (string_table[0] "
                                                   "must be '')");
    if (pp->strings[0].len != 0)
        return rt_error_set(d->err, RT_EMALFORMED, "string_table[0] must be ''");
    int rc = 0;
    for (size_t i = 0; i < pp->nsample_types && !rc; i++) {
        rc = check_str(d, pp, pp->sample_types[i].type, "sample_type.type");
        rc = rc ? rc : check_str(d, pp, pp->sample_types[i].unit, "sample_type.unit");
    }
    rc = rc ? rc : check_str(d, pp, pp->period_type.type, "period_type.type");
    rc = rc ? rc : check_str(d, pp, pp->period_type.unit, "period_type.unit");
    for (size_t i = 0; i < pp->nmappings && !rc; i++)
        rc = check_str(d, pp, pp->mappings[i].filename, "Mapping.filename");
    for (size_t i = 0; i < pp->nfunctions && !rc; i++) {
        rc = check_str(d, pp, pp->functions[i].name, "Function.name");
        rc = rc ? rc : check_str(d, pp, pp->functions[i].system_name, "Function.system_name");
        /* filename is read only where a producer's names lack their module (py-spy): an index
         * out of range there is no file, as before it was read at all */
        if (pp->functions[i].filename < 0 || (uint64_t)pp->functions[i].filename >= pp->nstrings)
            pp->functions[i].filename = 0;
    }
    return rc;
}

int rt__pprof_decode(const uint8_t *data, size_t len, const struct rt_ingest_limits *lim,
                     struct rt__pprof *pp, struct rt_error *err)
{
    struct dec d = {data, err};
    struct rt__pb r = {data, data + len};
    struct counts c;
    memset(pp, 0, sizeof(*pp));
    int rc = count_fields(&d, r, lim, &c);
    if (rc)
        return rc;
    if (alloc_arrays(pp, &c)) {
        rt__pprof_cleanup(pp);
        return rt_error_set(err, RT_ENOMEM, "out of memory decoding the profile");
    }
    size_t max_lines = lim->max_locations < UINT32_MAX / LINES_PER_LOCATION
                           ? lim->max_locations * LINES_PER_LOCATION
                           : UINT32_MAX;
    rc = fill(&d, r, max_lines, pp);
    if (rc == 0)
        rc = check_strings(&d, pp);
    if (rc)
        rt__pprof_cleanup(pp);
    return rc;
}

void rt__pprof_cleanup(struct rt__pprof *pp)
{
    for (size_t i = 0; pp->mappings && i < pp->nmappings; i++)
        free(pp->mappings[i].unknown_frame);
    free(pp->strings);
    free(pp->sample_types);
    free(pp->samples);
    free(pp->mappings);
    free(pp->functions);
    free(pp->locations);
    free(pp->line_fn);
    memset(pp, 0, sizeof(*pp));
}

/* Reads a repeated varint field (packed or one unpacked element) into a[*n], up to cap. */
static int repeated(struct dec *d, struct rt__pb *r, uint32_t wire, const char *what,
                    uint64_t *a, size_t cap, size_t *n)
{
    struct rt__pb sub;
    if (wire == RT__PB_VARINT) {
        if (*n >= cap || rt__pb_varint(r, &a[*n]))
            return bad(d, r, what);
        (*n)++;
        return 0;
    }
    if (wire != RT__PB_LEN)
        return bad_wire(d, r, what, wire);
    if (rt__pb_len(r, &sub))
        return bad(d, r, what);
    size_t k = *n; /* in a register: a's stores could alias *n (both unsigned long) */
    while (sub.p < sub.end) {
        if (k >= cap || rt__pb_varint(&sub, &a[k])) {
            *n = k;
            return bad(d, &sub, what);
        }
        k++;
    }
    *n = k;
    return 0;
}

int rt__pprof_sample(const struct rt__pprof *pp, size_t i, uint64_t *locs, size_t cap,
                     size_t *nlocs, int64_t *vals, struct rt_error *err)
{
    struct rt_error e;
    struct dec d = {pp->samples[i].p, &e};
    struct rt__pb r = pp->samples[i];
    uint64_t v[MAX_SAMPLE_TYPES + 1];
    size_t nv = 0, nl = 0, vcap = MAX_SAMPLE_TYPES + 1;
    uint32_t f = 0, w;
    while (r.p < r.end) {
        int rc = 0;
        if (rt__pb_key(&r, &f, &w))
            rc = bad(&d, &r, "Sample");
        else if (f == 1)
            rc = repeated(&d, &r, w, "Sample.location_id", locs, cap, &nl);
        else if (f == 2)
            rc = repeated(&d, &r, w, "Sample.value", v, vcap, &nv);
        else if (rt__pb_skip(&r, w))
            rc = bad(&d, &r, "Sample");
        if (rc && f == 2 && nv == vcap)
            break; /* too many values: reported below */
        if (rc)
            return rt_error_set(err, RT_EMALFORMED, "sample %zu: %s", i, e.msg);
    }
    if (nv != pp->nsample_types)
        return rt_error_set(err, RT_EMALFORMED,
                            "sample %zu has %s%zu values but the profile declares %zu sample "
                            "types",
                            i, nv == vcap ? "more than " : "", nv == vcap ? nv - 1 : nv,
                            pp->nsample_types);
    for (size_t k = 0; k < nv; k++)
        vals[k] = (int64_t)v[k];
    *nlocs = nl;
    return 0;
}
