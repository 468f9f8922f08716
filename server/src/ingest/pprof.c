/* Builds profiles from a decoded pprof: resolves location and function ids, turns each
 * Location's Lines into frames (DESIGN §3), and adds every Sample's stack root first to one
 * profile per declared type (DESIGN §2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"

#define NO_ID UINT32_MAX

/* Maps a message id (uint64) to its index: a direct table when ids are dense, else hashing. */
struct id_index {
    uint32_t *direct;   /* direct[id] = index + 1, when ids are small */
    uint64_t ndirect;
    uint64_t *keys;     /* open addressing otherwise */
    uint32_t *vals;     /* index + 1, 0 = empty */
    size_t mask;
};

static void index_cleanup(struct id_index *ix)
{
    free(ix->direct);
    free(ix->keys);
    free(ix->vals);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Adds id -> idx. Returns 0, 1 on a duplicate or reserved id 0, or RT_ENOMEM. */
static int index_put(struct id_index *ix, uint64_t id, uint32_t idx)
{
    if (id == 0)
        return 1;
    if (ix->direct) {
        if (ix->direct[id])
            return 1;
        ix->direct[id] = idx + 1;
        return 0;
    }
    for (size_t i = mix(id) & ix->mask;; i = (i + 1) & ix->mask) {
        if (!ix->vals[i]) {
            ix->keys[i] = id;
            ix->vals[i] = idx + 1;
            return 0;
        }
        if (ix->keys[i] == id)
            return 1;
    }
}

/* Index of id, or NO_ID. */
static uint32_t index_get(const struct id_index *ix, uint64_t id)
{
    if (ix->direct)
        return id < ix->ndirect && ix->direct[id] ? ix->direct[id] - 1 : NO_ID;
    if (!ix->vals)
        return NO_ID;
    for (size_t i = mix(id) & ix->mask;; i = (i + 1) & ix->mask) {
        if (!ix->vals[i])
            return NO_ID;
        if (ix->keys[i] == id)
            return ix->vals[i] - 1;
    }
}

/* Sizes the index for n ids whose largest is max_id. */
static int index_init(struct id_index *ix, size_t n, uint64_t max_id)
{
    memset(ix, 0, sizeof(*ix));
    if (max_id <= 2 * (uint64_t)n + 1024) {
        ix->ndirect = max_id + 1;
        ix->direct = calloc(ix->ndirect, sizeof(*ix->direct));
        return ix->direct ? 0 : RT_ENOMEM;
    }
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    ix->keys = calloc(slots, sizeof(*ix->keys));
    ix->vals = calloc(slots, sizeof(*ix->vals));
    ix->mask = slots - 1;
    return ix->keys && ix->vals ? 0 : RT_ENOMEM;
}

/* Everything needed to turn samples into stacks. */
/* A location's frame slots: the first, and how many (>= 1: one per Line, or the unknown one). */
struct loc_frames {
    uint32_t off, n;
};

struct build {
    struct rt__pprof pp;
    struct id_index fn_ix, loc_ix, map_ix;
    struct loc_frames *loc;     /* each location's frame slots (together: one cache line) */
    struct loc_frames *loc_by_id; /* the same by location id when ids are small (n = 0: none) */
    struct rt_str *slot_name;   /* name of every frame slot, leaf first within a location */
    size_t nslots;
    char **repaired;            /* owned UTF-8 repairs of string table entries */
    size_t nrepaired, cap_repaired;
    unsigned shapes;            /* frame shapes seen in function names (RT__SHAPE_*) */
    struct rt_str *fn_name;     /* each function's frame name (name_functions) */
    struct rt_error *err;
};

static void build_cleanup(struct build *b)
{
    index_cleanup(&b->fn_ix);
    index_cleanup(&b->loc_ix);
    index_cleanup(&b->map_ix);
    free(b->loc);
    free(b->loc_by_id);
    free(b->slot_name);
    free(b->fn_name);
    for (size_t i = 0; i < b->nrepaired; i++)
        free(b->repaired[i]);
    free(b->repaired);
    rt__pprof_cleanup(&b->pp);
}

static int oom(struct build *b)
{
    return rt_error_set(b->err, RT_ENOMEM, "out of memory building the profile");
}

/* Replaces each string table entry that is not a clean name (rt_str_is_name) by its repaired
 * copy (rt_str_dup_name: invalid UTF-8 as U+FFFD, control bytes as "\xHH"), so frame names
 * (and messages naming types) are always valid JSON strings and never hold a NUL. The copies'
 * worst case (4 bytes per byte) counts against max_decompressed. */
static int repair_strings(struct build *b, const struct rt_ingest_limits *lim)
{
    size_t budget = lim->max_decompressed;
    for (size_t i = 0; i < b->pp.nstrings; i++) {
        struct rt_str s = b->pp.strings[i];
        if (rt_str_is_name(s))
            continue;
        if (s.len > budget / 4)
            return rt_error_set(b->err, RT_ETOOBIG,
                                "strings that are not clean UTF-8 exceed the limit of %zu bytes "
                                "(max_decompressed) once repaired",
                                lim->max_decompressed);
        budget -= s.len * 4;
        if (rt_array_grow((void **)&b->repaired, &b->cap_repaired, b->nrepaired + 1,
                          sizeof(*b->repaired)))
            return oom(b);
        char *fixed = rt_str_dup_name(s, &s.len);
        if (!fixed)
            return oom(b);
        b->repaired[b->nrepaired++] = fixed;
        b->pp.strings[i] = (struct rt_str){fixed, s.len};
    }
    return 0;
}

/* Keeps an owned copy of r (written into a scratch buffer) among b's repaired strings.
 * Returns the copy's view, or ptr NULL when out of memory. */
static struct rt_str keep_copy(struct build *b, struct rt_str r)
{
    char *copy = malloc(r.len + 1);
    if (!copy || rt_array_grow((void **)&b->repaired, &b->cap_repaired, b->nrepaired + 1,
                               sizeof(*b->repaired))) {
        free(copy);
        return (struct rt_str){NULL, 0};
    }
    memcpy(copy, r.ptr, r.len);
    copy[r.len] = '\0';
    b->repaired[b->nrepaired++] = copy;
    return (struct rt_str){copy, r.len};
}

/* Grows *scratch to n bytes. 0 or -1. */
static int scratch_room(char **scratch, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    free(*scratch);
    *cap = n * 2;
    *scratch = malloc(*cap);
    return *scratch ? 0 : -1;
}

/* Names every function `module.function` with no line number (DESIGN §3) into b->fn_name:
 * its name (else system_name) through rt__frame_normalize, each string once (@datadog/pprof
 * writes "./app.js:handle:12"); with file_module, prefixed by the module its Function.filename
 * names (py-spy's names lack it: "hot_loop" of burn.py is burn.hot_loop). Names that change
 * are copied; the copies count against max_decompressed. Shapes seen go to b->shapes. */
static int name_functions(struct build *b, bool file_module, const struct rt_ingest_limits *lim)
{
    struct rt__pprof *pp = &b->pp;
    uint8_t *done = calloc(pp->nstrings ? pp->nstrings : 1, 1);
    b->fn_name = calloc(pp->nfunctions ? pp->nfunctions : 1, sizeof(*b->fn_name));
    char *scratch = NULL;
    size_t cap = 0, budget = lim->max_decompressed;
    int rc = done && b->fn_name ? 0 : oom(b);
    for (size_t i = 0; i < pp->nfunctions && rc == 0; i++) {
        const struct rt__pprof_function *fn = &pp->functions[i];
        int64_t idx = pp->strings[fn->name].len ? fn->name : fn->system_name;
        struct rt_str s = pp->strings[idx];
        if (!done[idx] && s.len) {
            done[idx] = 1;
            if (scratch_room(&scratch, &cap, s.len + RT__FRAME_SLACK)) {
                rc = oom(b);
                break;
            }
            struct rt_str r = rt__frame_normalize(s, scratch, &b->shapes);
            if (r.ptr == scratch && !(r = keep_copy(b, r)).ptr)
                rc = oom(b);
            pp->strings[idx] = r;
            s = r;
        }
        struct rt_str file = pp->strings[fn->filename];
        if (rc || !file_module || !s.len || !file.len) {
            b->fn_name[i] = s;
            continue;
        }
        if (s.len + file.len + 1 > budget) {
            rc = rt_error_set(b->err, RT_ETOOBIG,
                              "function names with their modules exceed the limit of %zu bytes "
                              "(max_decompressed)", lim->max_decompressed);
            break;
        }
        budget -= s.len + file.len + 1;
        if (scratch_room(&scratch, &cap, s.len + file.len + 1)) {
            rc = oom(b);
            break;
        }
        struct rt_str r = rt__frame_with_file(s, file, scratch);
        b->fn_name[i] = r.ptr == scratch ? keep_copy(b, r) : r;
        if (!b->fn_name[i].ptr)
            rc = oom(b);
    }
    free(scratch);
    free(done);
    return rc;
}

static int build_indexes(struct build *b)
{
    const struct rt__pprof *pp = &b->pp;
    uint64_t mf = 0, ml = 0, mm = 0;
    for (size_t i = 0; i < pp->nfunctions; i++)
        mf = pp->functions[i].id > mf ? pp->functions[i].id : mf;
    for (size_t i = 0; i < pp->nlocations; i++)
        ml = pp->locations[i].id > ml ? pp->locations[i].id : ml;
    for (size_t i = 0; i < pp->nmappings; i++)
        mm = pp->mappings[i].id > mm ? pp->mappings[i].id : mm;
    if (index_init(&b->fn_ix, pp->nfunctions, mf) || index_init(&b->loc_ix, pp->nlocations, ml) ||
        index_init(&b->map_ix, pp->nmappings, mm))
        return oom(b);
    for (size_t i = 0; i < pp->nfunctions; i++) {
        int rc = index_put(&b->fn_ix, pp->functions[i].id, (uint32_t)i);
        if (rc)
            return rt_error_set(b->err, RT_EMALFORMED, "function id %llu is %s",
                                (unsigned long long)pp->functions[i].id,
                                pp->functions[i].id ? "duplicated" : "0 (reserved)");
    }
    for (size_t i = 0; i < pp->nlocations; i++) {
        int rc = index_put(&b->loc_ix, pp->locations[i].id, (uint32_t)i);
        if (rc)
            return rt_error_set(b->err, RT_EMALFORMED, "location id %llu is %s",
                                (unsigned long long)pp->locations[i].id,
                                pp->locations[i].id ? "duplicated" : "0 (reserved)");
    }
    for (size_t i = 0; i < pp->nmappings; i++)
        (void)index_put(&b->map_ix, pp->mappings[i].id, (uint32_t)i); /* first one wins */
    return 0;
}

/* "<mapping basename>.[unknown]", or "[unknown]" without a (known) mapping. */
static int unknown_frame(struct build *b, uint64_t mapping_id, struct rt_str *out)
{
    uint32_t m = mapping_id ? index_get(&b->map_ix, mapping_id) : NO_ID;
    struct rt_str file = m == NO_ID ? (struct rt_str){"", 0}
                                    : rt__pprof_str(&b->pp, b->pp.mappings[m].filename);
    if (file.len == 0) {
        *out = RT_STR_LIT("[unknown]");
        return 0;
    }
    struct rt__pprof_mapping *mp = &b->pp.mappings[m];
    if (!mp->unknown_frame) {
        const char *base = file.ptr;
        for (size_t i = 0; i < file.len; i++)
            if (file.ptr[i] == '/' && i + 1 < file.len)
                base = file.ptr + i + 1;
        size_t n = file.len - (size_t)(base - file.ptr);
        mp->unknown_frame = malloc(n + sizeof(".[unknown]"));
        if (!mp->unknown_frame)
            return oom(b);
        memcpy(mp->unknown_frame, base, n);
        memcpy(mp->unknown_frame + n, ".[unknown]", sizeof(".[unknown]"));
    }
    *out = rt_str_from(mp->unknown_frame);
    return 0;
}

/* Name of one Line: Function.name, else its system_name, else the mapping's unknown frame. */
static int line_name(struct build *b, const struct rt__pprof_location *loc, uint64_t fn_id,
                     struct rt_str *out)
{
    if (fn_id) {
        uint32_t f = index_get(&b->fn_ix, fn_id);
        if (f == NO_ID)
            return rt_error_set(b->err, RT_EMALFORMED,
                                "location %llu refers to missing function id %llu",
                                (unsigned long long)loc->id, (unsigned long long)fn_id);
        *out = b->fn_name[f];
        if (out->len)
            return 0;
    }
    return unknown_frame(b, loc->mapping_id, out);
}

/* Names every location's frames once: one slot per Line, or one for an unsymbolized location. */
static int name_frames(struct build *b)
{
    const struct rt__pprof *pp = &b->pp;
    size_t n = 0;
    for (size_t i = 0; i < pp->nlocations; i++)
        n += pp->locations[i].nlines ? pp->locations[i].nlines : 1;
    b->loc = calloc(pp->nlocations + 1, sizeof(*b->loc));
    b->slot_name = calloc(n + 1, sizeof(*b->slot_name));
    if (!b->loc || !b->slot_name)
        return oom(b);
    b->nslots = n;
    size_t s = 0;
    for (size_t i = 0; i < pp->nlocations; i++) {
        const struct rt__pprof_location *loc = &pp->locations[i];
        b->loc[i] = (struct loc_frames){(uint32_t)s, loc->nlines ? loc->nlines : 1};
        int rc = loc->nlines ? 0 : unknown_frame(b, loc->mapping_id, &b->slot_name[s++]);
        for (uint32_t k = 0; k < loc->nlines && !rc; k++)
            rc = line_name(b, loc, pp->line_fn[loc->line_off + k], &b->slot_name[s++]);
        if (rc)
            return rc;
    }
    /* Samples name their locations by id: with small ids, one load gives a location's
     * slots (loc_frames_of) where the index and then loc[] took two dependent ones. */
    if (b->loc_ix.direct) {
        b->loc_by_id = calloc(b->loc_ix.ndirect, sizeof(*b->loc_by_id));
        if (!b->loc_by_id)
            return oom(b);
        for (size_t i = 0; i < pp->nlocations; i++)
            b->loc_by_id[pp->locations[i].id] = b->loc[i];
    }
    return 0;
}

/* Location id's frame slots; n = 0 when no location has that id. */
static inline struct loc_frames loc_frames_of(const struct build *b, uint64_t id)
{
    if (b->loc_by_id)
        return id < b->loc_ix.ndirect ? b->loc_by_id[id] : (struct loc_frames){0, 0};
    uint32_t l = index_get(&b->loc_ix, id);
    return l == NO_ID ? (struct loc_frames){0, 0} : b->loc[l];
}

/* One output profile and its cache of frame slot -> interned id. */
struct out {
    struct rt_profile *p;
    struct rt__pprof_pick pick;
    uint32_t *slot_id;          /* NO_ID until interned */
};

/* The refusal of a sample that takes the profile's total value past RT_PROFILE_MAX_VALUE_NS. */
static int too_big(struct build *b, size_t i)
{
    return rt_error_set(b->err, RT_ETOOBIG,
                        "sample %zu: the profile's total value exceeds the limit of %lld ns "
                        "(2^62 ns, about 146 years) per profile",
                        i, (long long)RT_PROFILE_MAX_VALUE_NS);
}

/* Value (ns) and samples of one sample for one output. Returns 0, RT_EMALFORMED (negative)
 * or RT_ETOOBIG (over RT_PROFILE_MAX_VALUE_NS). */
static int sample_value(struct build *b, const struct out *o, size_t i, const int64_t *vals,
                        int64_t *value, double *samples)
{
    const struct rt__pprof_pick *pk = &o->pick;
    int64_t count = pk->count_idx >= 0 ? vals[pk->count_idx] : 0;
    int64_t raw = pk->value_idx >= 0 ? vals[pk->value_idx] : count;
    int64_t mul = pk->value_idx >= 0 ? pk->scale : pk->period_ns;
    if (count < 0 || raw < 0)
        return rt_error_set(b->err, RT_EMALFORMED, "sample %zu has a negative value", i);
    if (__builtin_mul_overflow(raw, mul, value) || *value > RT_PROFILE_MAX_VALUE_NS)
        return too_big(b, i);
    if (pk->count_idx >= 0)
        *samples = (double)count;
    else if (pk->period_ns > 0)
        *samples = round((double)*value / (double)pk->period_ns);
    else
        *samples = 0;
    return 0;
}

/* Adds sample i, whose leaf-first frame slots are slots[0..n), to output o. */
static int add_sample(struct build *b, struct out *o, size_t i, const uint32_t *slots, size_t n,
                      int64_t value, double samples)
{
    uint32_t ids[RT_MAX_STACK_DEPTH + 1];
    for (size_t k = 0; k < n; k++) {
        uint32_t s = slots[n - 1 - k];
        if (o->slot_id[s] == NO_ID &&
            rt_intern_get(&o->p->frames, b->slot_name[s], &o->slot_id[s]))
            return oom(b);
        ids[k] = o->slot_id[s];
    }
    int rc = rt_profile_add_stack_ids(o->p, ids, n, samples, value);
    if (rc == RT_ETOOBIG)
        return too_big(b, i);
    return rc ? oom(b) : 0;
}

/* Leaf-first frame slots of a sample, at most RT_MAX_STACK_DEPTH + 1 (more are cut anyway;
 * room for one more in slots). A sample without locations gets the unknown frame's slot
 * b->nslots. A leaf that its runtime injected above the frame it interrupted is dropped when a
 * frame lies beneath it: the sample is that frame's (rt__frame_is_injected_leaf). */
static int sample_slots(struct build *b, size_t i, const uint64_t *locs, size_t nlocs,
                        uint32_t *slots, size_t *n)
{
    size_t k = 0, max = RT_MAX_STACK_DEPTH;
    for (size_t j = 0; j < nlocs && k <= max; j++) {
        struct loc_frames lf = loc_frames_of(b, locs[j]);
        if (lf.n == 0)
            return rt_error_set(b->err, RT_EMALFORMED,
                                "sample %zu refers to missing location id %llu", i,
                                (unsigned long long)locs[j]);
        /* The first slot decides at once whether one more frame is kept beneath it. */
        if (k == 0 && rt__frame_is_injected_leaf(b->slot_name[lf.off]))
            max++;
        if (lf.n == 1) { /* most locations: one line, and k <= max leaves room for it */
            slots[k++] = lf.off;
            continue;
        }
        size_t take = lf.n <= max + 1 - k ? lf.n : max + 1 - k;
        for (size_t f = 0; f < take; f++)
            slots[k + f] = lf.off + (uint32_t)f;
        k += take;
    }
    if (k == 0)
        slots[k++] = (uint32_t)b->nslots;
    if (max > RT_MAX_STACK_DEPTH && k > 1) {
        memmove(slots, slots + 1, (k - 1) * sizeof(*slots));
        k--;
    }
    *n = k;
    return 0;
}

static int add_samples(struct build *b, struct out *outs, size_t nout)
{
    const struct rt__pprof *pp = &b->pp;
    size_t cap = pp->max_sample_len + 1;
    uint64_t *locs = malloc(cap * sizeof(*locs));
    int64_t vals[RT__PPROF_MAX_SAMPLE_TYPES];
    uint32_t slots[RT_MAX_STACK_DEPTH + 2];
    int rc = locs ? 0 : oom(b);
    for (size_t i = 0; i < pp->nsamples && rc == 0; i++) {
        size_t nlocs = 0, n = 0;
        rc = rt__pprof_sample(pp, i, locs, cap, &nlocs, vals, b->err);
        rc = rc ? rc : sample_slots(b, i, locs, nlocs, slots, &n);
        for (size_t o = 0; o < nout && rc == 0; o++) {
            int64_t value = 0;
            double samples = 0;
            rc = sample_value(b, &outs[o], i, vals, &value, &samples);
            if (rc == 0 && (value || samples))
                rc = add_sample(b, &outs[o], i, slots, n, value, samples);
        }
    }
    free(locs);
    return rc;
}

static int new_out(struct build *b, struct out *o, const struct rt__pprof_pick *pick)
{
    o->pick = *pick;
    o->p = rt_profile_new(pick->type);
    o->slot_id = malloc((b->nslots + 1) * sizeof(*o->slot_id));
    /* pprof writers give most stacks one sample: size the stack table for them at once; and
     * the names' slots, at most one per function or unsymbolized mapping (and per slot), plus
     * the unknown and truncated frames; what the samples did not use is given back after
     * them (rt_profile_fit) */
    size_t fns = b->pp.nfunctions + b->pp.nmappings;
    size_t names = (fns < b->nslots ? fns : b->nslots) + 2;
    if (!o->p || !o->slot_id || rt_profile_reserve_stacks(o->p, b->pp.nsamples) ||
        rt_intern_reserve(&o->p->frames, names))
        return oom(b);
    memset(o->slot_id, 0xff, (b->nslots + 1) * sizeof(*o->slot_id));
    o->p->time_ns = b->pp.time_nanos;
    o->p->duration_ns = b->pp.duration_nanos > 0 ? b->pp.duration_nanos : -1;
    o->p->period_ns = pick->period_ns;
    o->p->has_counts = pick->count_idx >= 0 || pick->period_ns > 0;
    return 0;
}

int rt__ingest_pprof(const uint8_t *data, size_t len, enum rt_ptype want, bool file_module,
                     const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                     unsigned *shapes, struct rt_error *err)
{
    struct build b;
    struct rt__pprof_pick picks[2];
    struct out outs[2];
    size_t npicks = 0;
    memset(&b, 0, sizeof(b));
    memset(outs, 0, sizeof(outs));
    b.err = err;
    int rc = rt__pprof_decode(data, len, lim, &b.pp, err);
    if (rc)
        return rc;
    if (b.pp.duration_nanos < 0)
        rc = rt_error_set(err, RT_EMALFORMED, "negative duration (duration_nanos = %lld)",
                          (long long)b.pp.duration_nanos);
    rc = rc ? rc : repair_strings(&b, lim);
    rc = rc ? rc : rt__pprof_resolve(&b.pp, want, picks, &npicks, err);
    rc = rc ? rc : name_functions(&b, file_module, lim);
    rc = rc ? rc : build_indexes(&b);
    rc = rc ? rc : name_frames(&b);
    if (rc == 0)
        b.slot_name[b.nslots] = RT_STR_LIT("[unknown]");
    for (size_t i = 0; i < npicks && rc == 0; i++)
        rc = new_out(&b, &outs[i], &picks[i]);
    rc = rc ? rc : add_samples(&b, outs, npicks);
    for (size_t i = 0; i < npicks; i++) {
        free(outs[i].slot_id);
        if (rc)
            rt_profile_free(outs[i].p);
        else
            rt_profile_fit(out[i] = outs[i].p); /* new_out's reservations were upper bounds */
    }
    if (rc == 0) {
        *nout = npicks;
        *shapes = b.shapes;
    }
    build_cleanup(&b);
    return rc;
}
