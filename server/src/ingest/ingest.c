/* Ingest entry point: limits, gzip sniffing, refusal of legacy pprof formats, telling pprof
 * from folded text, and copying the upload's metadata into each profile (DESIGN §4). */
#include <string.h>

#include "ingest_internal.h"
#include "rt/buf.h"
#include "rt/producer.h"

void rt_ingest_limits_default(struct rt_ingest_limits *lim)
{
    lim->max_compressed = (size_t)16 << 20;
    lim->max_decompressed = (size_t)256 << 20;
    lim->max_samples = 1000000;
    lim->max_locations = 1000000;
    lim->max_strings = 1000000;
}

void rt_ingest_params_init(struct rt_ingest_params *p)
{
    memset(p, 0, sizeof(*p));
    p->duration_ns = -1;
    p->thread_cpu_ns = -1;
    p->process_cpu_ns = -1;
    p->format = RT_FMT_AUTO;
}

static bool starts_with(const uint8_t *d, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(d, prefix, n) == 0;
}

/* Word i of the legacy CPU header, as 32- or 64-bit, little or big endian. */
static uint64_t word(const uint8_t *d, size_t i, size_t size, bool be)
{
    uint64_t v = 0;
    for (size_t k = 0; k < size; k++)
        v |= (uint64_t)d[i * size + k] << (8 * (be ? size - 1 - k : k));
    return v;
}

/* Legacy pprof: the binary CPU format (header words 0, 3, ...) or a text format. A protobuf
 * cannot start with a zero byte (field number 0), so the binary check is unambiguous. */
static bool is_legacy(const uint8_t *d, size_t len)
{
    for (size_t size = 4; size <= 8; size += 4)
        for (int be = 0; be <= 1; be++)
            if (len >= 2 * size && word(d, 0, size, be) == 0 && word(d, 1, size, be) == 3)
                return true;
    while (len && (*d == ' ' || *d == '\t' || *d == '\r' || *d == '\n'))
        d++, len--;
    static const char *const text[] = {"--- ", "heap profile:", "heap_v2/", "growth profile:",
                                       "threadcreate profile:", "goroutine profile:",
                                       "contention:"};
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        if (starts_with(d, len, text[i]))
            return true;
    return false;
}

/* Length of the UTF-8 sequence starting at d[i] (1-4), or 0 if it is not valid UTF-8.
 * A sequence cut by the end of the inspected prefix counts as valid. */
static size_t utf8_len(const uint8_t *d, size_t i, size_t n)
{
    size_t k = d[i] < 0x80 ? 1 : (d[i] & 0xe0) == 0xc0 ? 2 : (d[i] & 0xf0) == 0xe0 ? 3
             : (d[i] & 0xf8) == 0xf0 ? 4 : 0;
    if (k == 0 || (k == 2 && d[i] < 0xc2))
        return 0;
    for (size_t j = 1; j < k && i + j < n; j++)
        if ((d[i + j] & 0xc0) != 0x80)
            return 0;
    return k;
}

/* Text (folded stacks) rather than protobuf: a UTF-16 BOM, or valid UTF-8 without control
 * bytes up front. A pprof often starts with 0x0a ('\n'), so UTF-8 validity decides. */
static bool looks_like_text(const uint8_t *d, size_t len)
{
    if (len >= 2 && ((d[0] == 0xff && d[1] == 0xfe) || (d[0] == 0xfe && d[1] == 0xff)))
        return true;
    size_t n = len < 4096 ? len : 4096;
    for (size_t i = 0, k; i < n; i += k) {
        if ((d[i] < 0x20 && d[i] != '\t' && d[i] != '\n' && d[i] != '\r') || d[i] == 0x7f)
            return false;
        if ((k = utf8_len(d, i, n)) == 0)
            return false;
    }
    return true;
}

/* A JSON profile (V8's .cpuprofile, Chrome's trace events): after blanks, '{' then '"' or '}',
 * or '[' then '{' or ']'. A folded stack may well begin with "[unknown];...", "[[vdso]]",
 * "[0x7f3a] libc" (stackcollapse-perf) or "{anonymous}...", never with '{"' or '[{'; a JSON
 * array of numbers or strings is no profile format. */
static bool looks_like_json(const uint8_t *d, size_t len)
{
    size_t i = 0;
    while (i < len && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n'))
        i++;
    if (i >= len || (d[i] != '{' && d[i] != '['))
        return false;
    uint8_t open = d[i++];
    while (i < len && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n'))
        i++;
    if (i >= len)
        return false;
    if (open == '{')
        return d[i] == '"' || d[i] == '}';
    return d[i] == '{' || d[i] == ']';
}

/* Formats that are recognizable but not accepted: RT_EFORMAT with how to convert them. A
 * declared type is never overridden: folded text is parsed as folded whatever it starts
 * with (stackcollapse-perf writes frames such as "[[vdso]]" and "[0x7f3a] libc"), and only
 * an undeclared body is sniffed for JSON. A JFR recording's magic ("FLR" and a NUL) and the
 * legacy binary header can be no folded text, so they are named whatever was declared. */
/* A JFR recording: its chunk magic "FLR" and a NUL, which no folded text or pprof starts
 * with (a protobuf's first byte 'F' is field 8, wire type 6, which does not exist). */
static bool is_jfr(const uint8_t *d, size_t len)
{
    return len >= 4 && starts_with(d, len, "FLR") && d[3] == 0;
}

/* What a JFR recording held that no profile took, for the answer (DESIGN §12: allocation and
 * lock events are skipped, and the answer says so): "" when nothing was. */
static void skipped_text(const struct rt__jfr_skipped *s, char *out, size_t n)
{
    out[0] = '\0';
    if (!s->allocation && !s->lock && !s->native_method && !s->other)
        return;
    int k = snprintf(out, n,
                     "skipped %llu allocation, %llu lock, %llu native-method and %llu other "
                     "events (RootTrace keeps CPU and wall-clock samples only)",
                     (unsigned long long)s->allocation, (unsigned long long)s->lock,
                     (unsigned long long)s->native_method, (unsigned long long)s->other);
    for (int i = 0; i < 4 && k > 0 && (size_t)k < n && s->other_names[i][0]; i++)
        k += snprintf(out + k, n - (size_t)k, "%s%.60s", i ? ", " : "; other: ",
                      s->other_names[i]);
}

/* A JFR recording (one or more chunks): cpu and wall samples, with what was skipped in the
 * report. params->period_ns is the period the uploader stated (Pyroscope's sampleRate). */
static int parse_jfr(const uint8_t *d, size_t len, const struct rt_ingest_params *params,
                     enum rt_ptype want, const struct rt_ingest_limits *lim,
                     struct rt_profile **out, size_t *nout, struct rt_error *err)
{
    if (!is_jfr(d, len))
        return rt_error_set(err, RT_EMALFORMED,
                            "format=jfr, but the body is not a JFR recording (it does not start "
                            "with the chunk magic FLR\\0)");
    struct rt__jfr_skipped skipped;
    int rc = rt__ingest_jfr(d, len, want, params->period_ns, lim, out, nout, &skipped, err);
    if (rc == 0 && params->report)
        skipped_text(&skipped, params->report->skipped, sizeof(params->report->skipped));
    return rc;
}

static int refuse_other_formats(const uint8_t *d, size_t len, enum rt_ingest_format fmt,
                                struct rt_error *err)
{
    if (fmt != RT_FMT_FOLDED && is_legacy(d, len))
        return rt_error_set(err, RT_EFORMAT,
                            "legacy (pre-protobuf) pprof format is not supported: convert with "
                            "`go tool pprof -proto FILE > FILE.pb.gz`");
    if (fmt == RT_FMT_AUTO && looks_like_json(d, len) && looks_like_text(d, len))
        return rt_error_set(err, RT_EFORMAT,
                            "V8 .cpuprofile / JSON profiles are not accepted: upload pprof or "
                            "folded stacks (the Node SDK converts .cpuprofile to pprof)");
    return 0;
}

/* Copies the upload's metadata into p; start and duration override the body's. */
static int apply_params(struct rt_profile *p, const struct rt_ingest_params *q)
{
    if (rt_profile_set_str(&p->service, q->service) ||
        rt_profile_set_str(&p->instance, q->instance) ||
        rt_profile_set_str(&p->runtime, q->runtime) ||
        rt_profile_set_str(&p->runtime_version, q->runtime_version) ||
        rt_profile_set_str(&p->sdk_version, q->sdk_version) ||
        rt_profile_set_str(&p->version, q->version) ||
        rt_profile_set_str(&p->profile_id, q->profile_id))
        return RT_ENOMEM;
    if (q->start_ns)
        p->time_ns = q->start_ns;
    if (q->duration_ns >= 0)
        p->duration_ns = q->duration_ns;
    p->thread_cpu_ns = q->thread_cpu_ns;
    p->process_cpu_ns = q->process_cpu_ns;
    return 0;
}

/* Who sampled a profile of declared type t (DESIGN §12): the SDK its runtime= names, else the
 * agent its spy names, else py-spy or rbspy where the frames are all in their shape (a file
 * of theirs uploaded as folded stacks), else the unknown producer. */
static const struct rt_producer *producer_of(const struct rt_ingest_params *q, enum rt_ptype t,
                                             unsigned shapes)
{
    const struct rt_producer *p = rt_producer_of_upload(q->runtime, t);
    if (!p->name[0] && q->spy)
        p = rt_producer_of_agent(q->spy, t);
    if (!p->name[0] && !q->runtime && !q->spy && (shapes & (RT__SHAPE_PYSPY | RT__SHAPE_RBSPY)))
        p = rt_producer_of_agent(shapes & RT__SHAPE_PYSPY ? RT_PRODUCER_SPY_PYSPY_FILE
                                                          : RT_PRODUCER_SPY_RBSPY_FILE, t);
    return p;
}

/* Who sampled p and the type it is stored as (a producer that measured another type than it
 * declared keeps the declared one in declared_type), its OS CPU figures checked against its
 * duration, and the factor capacity scales its CPU by (DESIGN §7, §12; the policy is
 * rt/producer.h's). Returns 0 or RT_EINVAL. */
static int settle_producer(struct rt_profile *p, const struct rt_ingest_params *q,
                           unsigned shapes, struct rt_error *err)
{
    p->producer = producer_of(q, p->type, shapes);
    int rc = rt_producer_check_os_cpu(p->producer, p->duration_ns, p->thread_cpu_ns,
                                      p->process_cpu_ns, err);
    if (rc)
        return rc;
    enum rt_ptype stored = rt_producer_stored_type(p->producer, p->type);
    if (stored != p->type) {
        p->declared_type = p->type;
        p->type = stored;
    }
    int64_t os = rt_producer_os_cpu_ns(p->producer, p->thread_cpu_ns, p->process_cpu_ns);
    p->cpu_scale = rt_producer_cpu_scale(p->producer, os, p->value_ns);
    return 0;
}

/* Two profiles of one upload relabelled into one type (a producer that measures only wall
 * time sent cpu and wall values): they would count its samples twice. RT_ETYPE. */
static int check_relabel(struct rt_profile **ps, size_t n, struct rt_error *err)
{
    if (n == 2 && ps[0]->type == ps[1]->type)
        return rt_error_set(err, RT_ETYPE,
                            "%s measures %s time only, and this upload declares both cpu and "
                            "wall values: send one of them",
                            rt_producer_agent(ps[0]->producer), rt_ptype_name(ps[0]->type));
    return 0;
}

/* Parses the body (already within max_compressed) once gunzipped; *shapes receives the frame
 * shapes seen (RT__SHAPE_*). */
static int parse_body(const uint8_t *d, size_t len, const struct rt_ingest_params *params,
                      enum rt_ptype want, const struct rt_ingest_limits *lim,
                      struct rt_profile **out, size_t *nout, unsigned *shapes,
                      struct rt_error *err)
{
    enum rt_ingest_format fmt = params->format;
    if (fmt == RT_FMT_JFR || is_jfr(d, len))
        return parse_jfr(d, len, params, want, lim, out, nout, err);
    /* Empty: an empty pprof declares no sample type, but an empty folded body is a well-formed
     * zero-sample profile (DESIGN §4), taken as folded when it is declared so or has type=. */
    if (len == 0 && (fmt == RT_FMT_PPROF || (fmt == RT_FMT_AUTO && !want)))
        return rt_error_set(err, RT_EMALFORMED,
                            "empty body (an empty folded profile needs type= and "
                            "Content-Type text/plain)");
    int rc = refuse_other_formats(d, len, fmt, err);
    if (rc)
        return rc;
    if (fmt == RT_FMT_AUTO)
        fmt = looks_like_text(d, len) ? RT_FMT_FOLDED : RT_FMT_PPROF;
    if (fmt == RT_FMT_PPROF)
        return rt__ingest_pprof(d, len, want,
                                rt_producer_of_agent(params->spy, want)->names_lack_module, lim,
                                out, nout, shapes, err);
    if (!want)
        return rt_error_set(err, RT_ETYPE,
                            "folded stacks need type=cpu or type=wall (the server never infers "
                            "the profile type)");
    *nout = 1;
    return rt__ingest_folded(d, len, params, want, lim, out, shapes, err);
}

/* Messages may quote the input (a folded line, sample type names) and be cut anywhere by
 * their buffer: any byte that is not valid UTF-8 becomes '?', so the answer stays JSON. */
static void repair_msg(struct rt_error *err)
{
    if (!err)
        return;
    unsigned char *m = (unsigned char *)err->msg;
    size_t n = strlen(err->msg);
    for (size_t i = 0, k; i < n; i += k ? k : 1)
        if ((k = rt_utf8_seq_len(m + i, n - i)) == 0)
            m[i] = '?';
}

int rt_ingest_parse(const void *body, size_t len, const struct rt_ingest_params *params,
                    const struct rt_ingest_limits *lim, struct rt_profile **out, size_t *nout,
                    struct rt_error *err)
{
    struct rt_ingest_limits deflim;
    struct rt_ingest_params defparams;
    struct rt_profile *res[2] = {NULL, NULL};
    size_t nres = 0;
    unsigned shapes = 0;
    enum rt_ptype want = 0;
    if (!lim) {
        rt_ingest_limits_default(&deflim);
        lim = &deflim;
    }
    if (!params) {
        rt_ingest_params_init(&defparams);
        params = &defparams;
    }
    if (params->report)
        params->report->skipped[0] = '\0';
    if (params->type && *params->type && !rt_ptype_parse(params->type, &want)) {
        rt_error_set(err, RT_ETYPE, "type=%.40s is neither cpu nor wall", params->type);
        repair_msg(err);
        return RT_ETYPE;
    }
    if (!body)
        len = 0;
    if (len > lim->max_compressed)
        return rt_error_set(err, RT_ETOOBIG,
                            "body of %zu bytes exceeds the limit of %zu bytes (max_compressed)",
                            len, lim->max_compressed);
    int rc;
    if (rt_ingest_is_gzip(body, len)) {
        struct rt_buf buf;
        rt_buf_init(&buf, lim->max_decompressed);
        rc = rt_ingest_gunzip(body, len, &buf, err);
        if (rc == 0)
            rc = parse_body(buf.data ? (const uint8_t *)buf.data : (const uint8_t *)"", buf.len,
                            params, want, lim, res, &nres, &shapes, err);
        rt_buf_cleanup(&buf);
    } else if (len > lim->max_decompressed) {
        rc = rt_error_set(err, RT_ETOOBIG,
                          "body of %zu bytes exceeds the limit of %zu bytes (max_decompressed)",
                          len, lim->max_decompressed);
    } else {
        rc = parse_body(body ? body : "", len, params, want, lim, res, &nres, &shapes, err);
    }
    for (size_t i = 0; i < nres && rc == 0; i++)
        rc = apply_params(res[i], params) ? rt_error_set(err, RT_ENOMEM, "out of memory")
                                          : settle_producer(res[i], params, shapes, err);
    if (rc == 0)
        rc = check_relabel(res, nres, err);
    if (rc) {
        for (size_t i = 0; i < nres; i++)
            rt_profile_free(res[i]);
        repair_msg(err);
        return rc;
    }
    for (size_t i = 0; i < nres; i++)
        out[i] = res[i];
    *nout = nres;
    return 0;
}
