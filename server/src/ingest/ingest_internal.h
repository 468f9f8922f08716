/* Declarations shared by the ingest module's files: a protobuf reader, the decoded (zero-copy)
 * pprof Profile, type resolution, and the pprof and folded builders. Not a public header. */
#ifndef RT_INGEST_INTERNAL_H
#define RT_INGEST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/profile.h"
#include "rt/str.h"

/* ---- Protobuf wire reading (https://protobuf.dev/programming-guides/encoding/) ---- */

enum { RT__PB_VARINT = 0, RT__PB_I64 = 1, RT__PB_LEN = 2, RT__PB_I32 = 5 };

/* A bounded view of protobuf bytes; p advances as fields are read. */
struct rt__pb {
    const uint8_t *p;    /* next byte */
    const uint8_t *end;  /* one past the last byte */
};

/* Reads a varint into *v. Returns 0, or -1 when truncated or longer than 10 bytes. */
static inline int rt__pb_varint(struct rt__pb *r, uint64_t *v)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p < 0x80) {
        *v = *p;
        r->p = p + 1;
        return 0;
    }
    /* two bytes (values below 16,384: most location ids) without the loop */
    if (r->end - p > 1 && p[1] < 0x80) {
        *v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        r->p = p + 2;
        return 0;
    }
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= r->end)
            return -1;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return -1;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *v = x;
            r->p = p;
            return 0;
        }
    }
    return -1;
}

/* Reads a field key. Returns 0, or -1 on a bad varint, field number 0 or a group wire type. */
static inline int rt__pb_key(struct rt__pb *r, uint32_t *field, uint32_t *wire)
{
    uint64_t k;
    if (rt__pb_varint(r, &k) || (k >> 3) == 0 || (k >> 3) > UINT32_MAX)
        return -1;
    *field = (uint32_t)(k >> 3);
    *wire = (uint32_t)(k & 7);
    return (0xd8 >> *wire) & 1 ? -1 : 0; /* 3, 4 (groups), 6, 7: bits 3, 4, 6 and 7 */
}

/* Reads a length-delimited payload into *sub. Returns 0 or -1 when it overruns. */
static inline int rt__pb_len(struct rt__pb *r, struct rt__pb *sub)
{
    uint64_t n;
    if (rt__pb_varint(r, &n) || n > (uint64_t)(r->end - r->p))
        return -1;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

/* Skips a field's payload of wire type wire. Returns 0 or -1. */
static inline int rt__pb_skip(struct rt__pb *r, uint32_t wire)
{
    uint64_t v;
    struct rt__pb sub;
    switch (wire) {
    case RT__PB_VARINT:
        return rt__pb_varint(r, &v);
    case RT__PB_I64:
        if (r->end - r->p < 8)
            return -1;
        r->p += 8;
        return 0;
    case RT__PB_I32:
        if (r->end - r->p < 4)
            return -1;
        r->p += 4;
        return 0;
    case RT__PB_LEN:
        return rt__pb_len(r, &sub);
    default:
        return -1;
    }
}

/* Most sample types a Profile may declare (real producers write 1 to 4). */
#define RT__PPROF_MAX_SAMPLE_TYPES 64

/* ---- The decoded Profile (profile.proto, RUNTIMES.md §6); strings point into the input ---- */

struct rt__pprof_vt {
    int64_t type, unit;         /* string indices, validated */
};

struct rt__pprof_mapping {
    uint64_t id;
    int64_t filename;           /* string index */
    char *unknown_frame;        /* owned "<basename>.[unknown]", made on first use */
};

struct rt__pprof_function {
    uint64_t id;
    int64_t name, system_name, filename; /* string indices */
};

struct rt__pprof_location {
    uint64_t id;
    uint64_t mapping_id;        /* 0 = none */
    uint32_t line_off, nlines;  /* into rt__pprof.line_fn */
};

struct rt__pprof {
    struct rt_str *strings;     /* string_table; strings[0] is "" */
    size_t nstrings;
    struct rt__pprof_vt *sample_types;
    size_t nsample_types;
    struct rt__pprof_vt period_type;  /* 0/0 when absent */
    int64_t period;             /* in period_type units */
    int64_t time_nanos;         /* 0 = absent */
    int64_t duration_nanos;     /* 0 = absent */
    struct rt__pb *samples;     /* raw Sample messages, decoded one at a time */
    size_t nsamples;
    size_t max_sample_len;      /* longest Sample message, bounds its repeated fields */
    struct rt__pprof_mapping *mappings;
    size_t nmappings;
    struct rt__pprof_function *functions;
    size_t nfunctions;
    struct rt__pprof_location *locations;
    size_t nlocations;
    uint64_t *line_fn;          /* Line.function_id of every location's lines, concatenated */
    size_t nline_fn, cap_line_fn;
};

/* zlib's inflate of the gzip body in[0..len) into out, member after member: what
 * rt_ingest_gunzip (gzip.c) falls back to for a body libdeflate refuses, so that every refusal
 * is named by zlib. The same contract as rt_ingest_gunzip, but for the invalid codes zlib
 * refuses and libdeflate decodes; the fuzz target compares the two. */
struct rt_buf;
int rt__ingest_gunzip_zlib(const void *in, size_t len, struct rt_buf *out, struct rt_error *err);

/* Decodes a Profile message from data[0..len) (borrowed: the result points into it) and
 * validates its structure and string indices. Returns 0, RT_EMALFORMED, RT_ETOOBIG (limits
 * on samples, locations, strings) or RT_ENOMEM. pp is cleaned up on error. */
int rt__pprof_decode(const uint8_t *data, size_t len, const struct rt_ingest_limits *lim,
                     struct rt__pprof *pp, struct rt_error *err);

/* Frees what rt__pprof_decode allocated; accepts a zeroed struct. */
void rt__pprof_cleanup(struct rt__pprof *pp);

/* Reads one Sample: location ids into locs (room for cap, pp->max_sample_len suffices) and
 * exactly pp->nsample_types values into vals (room for RT__PPROF_MAX_SAMPLE_TYPES).
 * Returns 0 or RT_EMALFORMED. */
int rt__pprof_sample(const struct rt__pprof *pp, size_t i, uint64_t *locs, size_t cap,
                     size_t *nlocs, int64_t *vals, struct rt_error *err);

/* String i of the table (index validated by the decoder). */
static inline struct rt_str rt__pprof_str(const struct rt__pprof *pp, int64_t i)
{
    return pp->strings[i];
}

/* ---- Type resolution (DESIGN §2) ---- */

/* How to read one profile out of the pprof's sample values. */
struct rt__pprof_pick {
    enum rt_ptype type;
    int value_idx;       /* sample value giving the time, -1: count_idx x period_ns */
    int64_t scale;       /* ns per unit of that value */
    int count_idx;       /* samples/count value, -1 = none */
    int64_t period_ns;   /* sampling period in ns, 0 = unknown */
};

/* Decides which profiles (1 or 2) the pprof holds from its declared sample and period types
 * and the upload's type= (want: 0 = absent). Returns 0, RT_EMALFORMED (no sample type) or
 * RT_ETYPE (not cpu or wall, contradiction, values unknown), with a message naming types. */
int rt__pprof_resolve(const struct rt__pprof *pp, enum rt_ptype want,
                      struct rt__pprof_pick picks[2], size_t *npicks, struct rt_error *err);

/* ---- Frame rules (frames.c) ---- */

/* Shapes of frames that other producers write (DESIGN §3), as a bit set. */
enum {
    RT__SHAPE_LINE = 1,          /* a line number dropped ("main.go:12", "f (x.c:3)") */
    RT__SHAPE_OFFSET = 2,        /* perf's "func+0x1f" */
    RT__SHAPE_PYSPY = 4,         /* py-spy's "func (path/file.py:LINE)" */
    RT__SHAPE_RBSPY = 8,         /* rbspy's "func (path/file.rb:LINE)" */
    RT__SHAPE_PATH_FUNCTION = 16, /* "path:function:LINE" (austin, @datadog/pprof) */
    RT__SHAPE_LAMBDA = 32         /* a Java lambda's hidden class with its run's ids */
};

/* A Java lambda's frame without the ids of its hidden class, which change with every JVM run:
 * "Heavy$$Lambda+0x000001c39a007200.2136288211.getAsInt" (JDK 21+, as JFR names it) and
 * "com.shop.Cart$$Lambda$14.0x0000000800c03000.run" (JDK 17) read "Heavy$$Lambda.getAsInt"
 * and "com.shop.Cart$$Lambda.run", as Pyroscope merges them. Returns in itself, or a name
 * written into scratch (in.len bytes); ORs RT__SHAPE_LAMBDA into *shapes when it drops. */
struct rt_str rt__frame_java_lambda(struct rt_str in, char *scratch, unsigned *shapes);

/* How much longer than its frame a normalized name can be: @datadog/pprof's native ":name"
 * becomes "(native).name" (+8); every other shape keeps or shortens a name. */
#define RT__FRAME_SLACK 8

/* A frame of folded text (or a name of another producer's pprof) as `module.function` with no
 * line number (DESIGN §3): the folded suffix rules (rt_ingest_normalize_folded_frame), then
 * the shapes above. Returns a substring of in, or a name written into scratch, which must hold
 * in.len + RT__FRAME_SLACK bytes; ORs the shapes it saw into *shapes. */
struct rt_str rt__frame_normalize(struct rt_str in, char *scratch, unsigned *shapes);

/* "module.function" for a function named fn (no module of its own) in source file file: the
 * module as a Python or Ruby path names it (as in py-spy's frames); a file of another
 * language gives "file.fn" with the file's directories and extension dropped. Writes into
 * scratch (fn.len + file.len + 1 bytes); returns fn itself when file is empty. */
struct rt_str rt__frame_with_file(struct rt_str fn, struct rt_str file, char *scratch);

/* True for a frame that a runtime injects above the code it interrupts, whose samples as a
 * leaf belong to that code (Go's runtime.asyncPreempt): builders drop it from a stack's leaf
 * when a frame lies beneath it. */
bool rt__frame_is_injected_leaf(struct rt_str name);

/* ---- Builders ---- */

/* Builds profiles from a pprof body (raw protobuf, already gunzipped), function names through
 * rt__frame_normalize (with file_module, prefixed by the module of their Function.filename:
 * rt__frame_with_file); *shapes receives the frame shapes seen (RT__SHAPE_*). */
int rt__ingest_pprof(const uint8_t *data, size_t len, enum rt_ptype want, bool file_module,
                     const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                     unsigned *shapes, struct rt_error *err);

/* Builds one profile from folded stacks (UTF-8, or UTF-16 with a BOM), each frame through
 * rt__frame_normalize; *shapes receives the frame shapes seen (RT__SHAPE_*). */
int rt__ingest_folded(const uint8_t *data, size_t len, const struct rt_ingest_params *params,
                      enum rt_ptype type, const struct rt_ingest_limits *lim,
                      struct rt_profile **out, unsigned *shapes, struct rt_error *err);

/* ---- JFR (jfr*.c; their private header is jfr_internal.h) ---- */

/* What a JFR recording held besides the samples it was turned into (events skipped by kind). */
struct rt__jfr_skipped {
    uint64_t allocation;     /* allocation events: jdk.ObjectAllocationInNewTLAB, ...OutsideTLAB,
                                jdk.ObjectAllocationSample, jdk.OldObjectSample,
                                profiler.LiveObject, profiler.Malloc, profiler.Free */
    uint64_t lock;           /* lock events: jdk.JavaMonitorEnter, jdk.JavaMonitorWait,
                                jdk.ThreadPark, profiler.NativeLock */
    uint64_t native_method;  /* jdk.NativeMethodSample: threads in native methods, neither CPU
                                nor all of wall time (jfr.c says why) */
    uint64_t other;          /* every other event (settings, GC, OS, ...), and
                                jdk.ExecutionSample events that measured no time: sleeping
                                threads in cpu mode, a hardware-counter async-profiler event */
    char other_names[4][64]; /* the most frequent other event types, most first; "" unused */
};

/* Builds profiles from a JFR recording (one or more concatenated chunks, raw, already
 * gunzipped): jdk.ExecutionSample -> cpu (-> wall when async-profiler's event is "wall");
 * async-profiler's profiler.WallClockSample -> wall, each worth its "samples" field;
 * allocation, lock and other events are skipped and counted in *skipped. want: 0,
 * RT_PTYPE_CPU or RT_PTYPE_WALL (only that type is returned; RT_ETYPE if the recording has
 * none of it). period_hint_ns: the sampling period the uploader stated (Pyroscope's
 * sampleRate), 0 = none; used only when the recording does not state its own (jdk.ActiveSetting
 * "period", async-profiler's "interval" / "wall"). Frames are `package.Class.method` (native
 * frames their symbol), stacks root first, value = samples x period; time_ns is the earliest
 * chunk start, duration_ns the span of the chunks. A type whose sampling the recording turned
 * on but which holds no sample (an idle JVM) gives an empty profile.
 * out: up to 2 profiles (cpu first), owned by the caller; *nout their count. *skipped (may be
 * NULL) is written on success and with RT_ETYPE. lim NULL = rt_ingest_limits_default.
 * Errors (err->msg says what and, for malformed input, at which offset):
 *   RT_EMALFORMED  truncated or inconsistent chunk, metadata, constant pool or event
 *   RT_EFORMAT     a JFR version other than 1.x and 2.x
 *   RT_ETOOBIG     events past max_samples, constant pool entries or metadata strings of a
 *                  chunk past max_strings, methods, classes or stack traces of a chunk past
 *                  max_locations, more than 1,000 chunks, converted strings past
 *                  max_decompressed, a value past RT_PROFILE_MAX_VALUE_NS
 *   RT_ETYPE       no cpu or wall samples (the message names the events held), or samples
 *                  without a sampling period from the recording or period_hint_ns
 *   RT_ENOMEM */
int rt__ingest_jfr(const uint8_t *data, size_t len, enum rt_ptype want, int64_t period_hint_ns,
                   const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                   struct rt__jfr_skipped *skipped, struct rt_error *err);

#endif
