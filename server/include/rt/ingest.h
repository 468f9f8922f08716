/* Ingest: turns an uploaded body (pprof, gzip or raw; folded stacks) into one or two
 * profiles of a declared type, with frames normalized (DESIGN §2, §3, §4). */
#ifndef RT_INGEST_H
#define RT_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/profile.h"
#include "rt/str.h"

/* Limits of DESIGN §4; each refusal is RT_ETOOBIG with a message naming the limit. */
struct rt_ingest_limits {
    size_t max_compressed;    /* body bytes as received (16 MiB) */
    size_t max_decompressed;  /* bytes after gunzip (256 MiB): gzip bombs stop here */
    size_t max_samples;       /* pprof Sample records / folded lines (10^6) */
    size_t max_locations;     /* pprof Location records (10^6) */
    size_t max_strings;       /* pprof string table entries (10^6) */
};

void rt_ingest_limits_default(struct rt_ingest_limits *lim);

/* What the body is, when the caller knows it (Content-Type, Pyroscope's format=); gzip is
 * always sniffed. LINES is Pyroscope's "lines": a stack per line, each one sample. */
enum rt_ingest_format { RT_FMT_AUTO = 0, RT_FMT_PPROF, RT_FMT_FOLDED, RT_FMT_LINES, RT_FMT_JFR };

/* What an upload held that no profile took, for the answer (written on success). */
struct rt_ingest_report {
    char skipped[240];       /* "" or e.g. "skipped 1200 allocation and 30 lock events" */
};

/* Query parameters of an upload (DESIGN §4). Strings are borrowed; NULL = absent. */
struct rt_ingest_params {
    const char *service, *instance, *runtime, *runtime_version, *sdk_version, *version;
    const char *profile_id;
    const char *type;        /* "cpu" / "wall" / NULL: must agree with what a pprof declares */
    const char *unit;        /* folded: "nanoseconds" or "samples" (default "samples") */
    int64_t period_ns;       /* folded with unit=samples: ns per sample; 0 = absent */
    int64_t start_ns;        /* overrides the pprof's time_nanos; 0 = absent */
    int64_t duration_ns;     /* overrides the pprof's duration_nanos; -1 = absent */
    int64_t thread_cpu_ns;   /* -1 = absent */
    int64_t process_cpu_ns;  /* -1 = absent */
    enum rt_ingest_format format;
    const char *spy;         /* a Pyroscope agent's spyName ("gospy", "pyspy"): names the
                                producer, which may store another type than declared (§12) */
    struct rt_ingest_report *report; /* optional: filled on success */
};

/* Params with every field absent. */
void rt_ingest_params_init(struct rt_ingest_params *p);

/* Parses body into profiles. On success returns 0, sets out[0..*nout) (1 or 2 profiles:
 * a pprof or JFR recording holding both cpu and wall samples gives two) which the caller owns
 * and frees with rt_profile_free. Metadata from params is copied into each profile, with its
 * producer and CPU factor settled (rt/producer.h, DESIGN §7, §12): the producer is the SDK
 * its runtime= names, else the agent its spy names, else py-spy or rbspy when every frame
 * shape says so; a producer that measured another type than it declared (py-spy's "cpu")
 * has its profile stored as that type with declared_type kept.
 * Errors (err->msg says why, nothing is returned):
 *   RT_EMALFORMED  bad protobuf, truncated gzip, string index out of range, folded line
 *                  without a count, empty body, no sample type
 *   RT_ETOOBIG     a limit of lim (decompressed size, samples, locations, strings)
 *   RT_EFORMAT     legacy (pre-protobuf) pprof: convert with `go tool pprof -proto`
 *   RT_ETYPE       sample types that are neither cpu nor wall (named in the message), a
 *                  type= that contradicts the pprof, or no way to tell cpu from wall
 *   RT_EINVAL      thread_cpu_ns beyond the profile's duration (1,024 times it for a
 *                  producer that sums threads, Java's JFR), or process_cpu_ns beyond
 *                  1,024 times it (rt_producer_check_os_cpu) */
int rt_ingest_parse(const void *body, size_t len, const struct rt_ingest_params *params,
                    const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                    struct rt_error *err);

/* ---- multipart/form-data (multipart.c; Pyroscope's /ingest, DESIGN §12) ---- */

/* One part of a multipart/form-data body; everything borrows the body. */
struct rt_ingest_part {
    struct rt_str name;          /* Content-Disposition's name ("profile", "jfr") */
    struct rt_str filename;      /* its filename, or empty */
    struct rt_str content_type;  /* the part's Content-Type, or empty */
    const uint8_t *data;         /* the part's bytes */
    size_t len;
};

/* True when content_type is multipart/form-data. */
bool rt_ingest_is_multipart(const char *content_type);

/* Splits body, of Content-Type content_type (multipart/form-data; boundary=...), into at most
 * max parts (parts[0..*nparts), borrowing body). Returns 0, RT_EMALFORMED (no or bad
 * boundary, a part without form-data name, a body cut before its closing boundary) or
 * RT_ETOOBIG (more than max parts), err saying which. */
int rt_ingest_multipart(const char *content_type, const void *body, size_t len,
                        struct rt_ingest_part *parts, size_t max, size_t *nparts,
                        struct rt_error *err);

/* The first part named name, or NULL. */
const struct rt_ingest_part *rt_ingest_part_named(const struct rt_ingest_part *parts, size_t n,
                                                  const char *name);

/* ---- Pyroscope's legacy /ingest parameters (pyroscope.c; DESIGN §12) ---- */

#define RT_INGEST_PYROSCOPE_MAX_LABELS 32

struct rt_ingest_pyroscope_label {
    char key[64];
    char value[201];
};

/* name=app.kind{key=value,...}: the service (the app part), the kind its suffix names, and
 * its labels. */
struct rt_ingest_pyroscope_name {
    char service[201];           /* "app": the name before a kind suffix and the labels */
    char kind[32];               /* "cpu", "itimer", "wall", "alloc_objects", ..., or "" */
    bool has_kind;               /* the suffix after the last '.' is a kind Pyroscope names */
    enum rt_ptype type;          /* the kind's profile type; 0 for kinds that are not time */
    struct rt_ingest_pyroscope_label labels[RT_INGEST_PYROSCOPE_MAX_LABELS];
    size_t nlabels;
};

/* Parses name (a NUL-terminated query value). A suffix that is not a kind Pyroscope names
 * ("my.app") stays part of the service. Returns 0, or RT_EINVAL with err saying why (not
 * clean UTF-8, no application part, a label without '=', over the bounds of the struct). */
int rt_ingest_pyroscope_name(const char *name, struct rt_ingest_pyroscope_name *out,
                             struct rt_error *err);

/* The value of label key of n, or NULL. */
const char *rt_ingest_pyroscope_label(const struct rt_ingest_pyroscope_name *n, const char *key);

/* Whether kind[0..len) is a profile kind Pyroscope names: 1 with *t its type (cpu: "cpu",
 * "itimer", "process_cpu"; wall: "wall"), -1 for a kind that is no time profile (heap,
 * allocations, locks, goroutines: *t = 0), 0 for a name it does not know. */
int rt_ingest_pyroscope_kind(const char *kind, size_t len, enum rt_ptype *t);

/* A time of /ingest's from= and until=: Unix seconds, milliseconds, microseconds or
 * nanoseconds, told apart by the digit count (up to 10, 13, 16, 19). Returns 0 with *ns, or
 * RT_EINVAL (empty, not digits, more than 19 digits, past int64 nanoseconds). */
int rt_ingest_pyroscope_time(const char *s, int64_t *ns);

/* ---- Pyroscope's Push envelope (push.c; DESIGN §12) ---- */

struct rt_ingest_push_label {
    const char *name, *value;    /* NUL-terminated, not validated */
};

struct rt_ingest_push_sample {
    const uint8_t *raw;          /* a pprof, raw or gzip (rt_ingest_parse) */
    size_t len;
    const char *id;              /* the agent's ID of the sample, or NULL */
};

struct rt_ingest_push_series {
    const struct rt_ingest_push_label *labels;
    size_t nlabels;
    const struct rt_ingest_push_sample *samples;
    size_t nsamples;
};

/* A decoded PushRequest; everything in it lives until rt_ingest_push_free. */
struct rt_ingest_push {
    struct rt_ingest_push_series *series;
    size_t nseries;
    struct rt_ingest_push_label *labels;    /* every series' labels */
    struct rt_ingest_push_sample *samples;  /* every series' samples */
    size_t nsamples;
    void *pb;                    /* the protobuf-c message (application/proto) */
    json_t *json;                /* the JSON document (application/json) */
    struct rt_buf inflated;      /* the body once gunzipped */
};

/* Decodes a Push request body (gzip sniffed, within lim's compressed and decompressed limits):
 * a push.v1.PushRequest protobuf, or with json its Connect JSON form ({"series": [{"labels":
 * [{"name", "value"}], "samples": [{"rawProfile": base64, "ID"}]}]}). Returns 0 (free out
 * with rt_ingest_push_free), RT_EMALFORMED or RT_ETOOBIG (at most 4,096 series, 4,096 samples
 * and 64 labels a series), err saying why; out is freed on error. */
int rt_ingest_push_decode(const void *body, size_t len, bool json,
                          const struct rt_ingest_limits *lim, struct rt_ingest_push *out,
                          struct rt_error *err);

/* Frees what rt_ingest_push_decode made; accepts NULL and a freed push. */
void rt_ingest_push_free(struct rt_ingest_push *p);

/* The value of label name of series s, or NULL. */
const char *rt_ingest_push_label(const struct rt_ingest_push_series *s, const char *name);

/* Inflates gzip data in into out (caller-initialized buffer, whose limit is enforced:
 * RT_ETOOBIG past it). Returns 0, RT_EMALFORMED (corrupt or truncated) or RT_ENOMEM. A member
 * using one of the few deflate codes libdeflate decodes and zlib refuses (length symbols
 * 286-287, distance codes 30-31, ...) is taken when its output matches its CRC-32 and length
 * (gzip.c). */
struct rt_buf;
int rt_ingest_gunzip(const void *in, size_t len, struct rt_buf *out, struct rt_error *err);

/* True when data starts with the gzip magic bytes 1f 8b. */
bool rt_ingest_is_gzip(const void *data, size_t len);

/* Normalizes a folded frame (DESIGN §3): drops the annotation suffixes _[k] _[j] _[i] _[w]
 * and a trailing ":<line>". Returns a substring of in. */
struct rt_str rt_ingest_normalize_folded_frame(struct rt_str in);

#endif
