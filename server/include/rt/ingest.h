/* Ingest: turns an uploaded body (pprof, gzip or raw; folded stacks) into one or two
 * profiles of a declared type, with frames normalized (DESIGN §2, §3, §4). */
#ifndef RT_INGEST_H
#define RT_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* What the body is, when the caller knows it (from Content-Type); gzip is always sniffed. */
enum rt_ingest_format { RT_FMT_AUTO = 0, RT_FMT_PPROF, RT_FMT_FOLDED };

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
};

/* Params with every field absent. */
void rt_ingest_params_init(struct rt_ingest_params *p);

/* Parses body into profiles. On success returns 0, sets out[0..*nout) (1 or 2 profiles:
 * a pprof holding both cpu and wall values gives two) which the caller owns and frees with
 * rt_profile_free. Metadata from params is copied into each profile, with its producer and
 * CPU factor settled (rt/producer.h, DESIGN §7).
 * Errors (err->msg says why, nothing is returned):
 *   RT_EMALFORMED  bad protobuf, truncated gzip, string index out of range, folded line
 *                  without a count, empty body, no sample type
 *   RT_ETOOBIG     a limit of lim (decompressed size, samples, locations, strings)
 *   RT_EFORMAT     legacy (pre-protobuf) pprof: convert with `go tool pprof -proto`
 *   RT_ETYPE       sample types that are neither cpu nor wall (named in the message), a
 *                  type= that contradicts the pprof, or no way to tell cpu from wall
 *   RT_EINVAL      thread_cpu_ns beyond the profile's duration, or process_cpu_ns beyond
 *                  1,024 times it (rt_producer_check_os_cpu) */
int rt_ingest_parse(const void *body, size_t len, const struct rt_ingest_params *params,
                    const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                    struct rt_error *err);

/* Inflates gzip data in into out (caller-initialized buffer, whose limit is enforced:
 * RT_ETOOBIG past it). Returns 0, RT_EMALFORMED (corrupt or truncated) or RT_ENOMEM. */
struct rt_buf;
int rt_ingest_gunzip(const void *in, size_t len, struct rt_buf *out, struct rt_error *err);

/* True when data starts with the gzip magic bytes 1f 8b. */
bool rt_ingest_is_gzip(const void *data, size_t len);

/* Normalizes a folded frame (DESIGN §3): drops the annotation suffixes _[k] _[j] _[i] _[w]
 * and a trailing ":<line>". Returns a substring of in. */
struct rt_str rt_ingest_normalize_folded_frame(struct rt_str in);

#endif
