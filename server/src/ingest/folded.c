/* Folded ("collapsed") stacks: "root;...;leaf <count>" per line (RUNTIMES.md §6), in UTF-8 or
 * UTF-16 with a BOM, CRLF or LF, fractional counts; frames normalized per DESIGN §3. A line
 * with two counts is difffolded.pl's "stack <before> <after>": the profile is its after, as
 * flamegraph.pl and inferno draw it (docs/decisions.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"

struct rt_str rt_ingest_normalize_folded_frame(struct rt_str in)
{
    struct rt_str s = in;
    if (s.len > 4 && s.ptr[s.len - 4] == '_' && s.ptr[s.len - 3] == '[' &&
        s.ptr[s.len - 1] == ']' && strchr("kjiw", s.ptr[s.len - 2]) && s.ptr[s.len - 2])
        s.len -= 4;
    size_t d = s.len;
    while (d > 0 && s.ptr[d - 1] >= '0' && s.ptr[d - 1] <= '9')
        d--;
    if (d < s.len && d >= 2 && s.ptr[d - 1] == ':')
        s.len = d - 1;
    return s;
}

/* Converts UTF-16 (after its BOM) to UTF-8 in a new buffer. Unpaired surrogates become U+FFFD. */
static int utf16_to_utf8(const uint8_t *p, size_t len, bool big_endian, size_t limit,
                         struct rt_buf *out, struct rt_error *err)
{
    size_t n = len / 2;
    if (len % 2)
        return rt_error_set(err, RT_EMALFORMED, "UTF-16 body has an odd number of bytes");
    if (n > limit / 3)
        return rt_error_set(err, RT_ETOOBIG,
                            "UTF-16 body exceeds the limit of %zu bytes (max_decompressed) "
                            "once converted",
                            limit);
    if (rt_buf_reserve(out, n * 3))
        return rt_error_set(err, RT_ENOMEM, "out of memory converting UTF-16");
    uint8_t *o = (uint8_t *)out->data;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = big_endian ? (uint32_t)(p[2 * i] << 8 | p[2 * i + 1])
                                : (uint32_t)(p[2 * i + 1] << 8 | p[2 * i]);
        if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
            uint32_t lo = big_endian ? (uint32_t)(p[2 * i + 2] << 8 | p[2 * i + 3])
                                     : (uint32_t)(p[2 * i + 3] << 8 | p[2 * i + 2]);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                i++;
            }
        }
        if (c >= 0xd800 && c <= 0xdfff)
            c = 0xfffd;
        if (c < 0x80) {
            o[k++] = (uint8_t)c;
        } else if (c < 0x800) {
            o[k++] = (uint8_t)(0xc0 | c >> 6);
            o[k++] = (uint8_t)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            o[k++] = (uint8_t)(0xe0 | c >> 12);
            o[k++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
            o[k++] = (uint8_t)(0x80 | (c & 0x3f));
        } else {
            o[k++] = (uint8_t)(0xf0 | c >> 18);
            o[k++] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
            o[k++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
            o[k++] = (uint8_t)(0x80 | (c & 0x3f));
        }
    }
    out->len = k;
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses a count: digits with an optional fractional part ("12", "31.23", "7."). */
static bool parse_count(const char *s, size_t n, double *out)
{
    uint64_t mant = 0, div = 1;
    size_t digits = 0;
    bool dot = false;
    if (n == 0 || n > 19 || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.' && !dot) {
            dot = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            return false;
        mant = mant * 10 + (uint64_t)(s[i] - '0');
        div *= dot ? 10 : 1;
        digits++;
    }
    *out = (double)mant / (double)div;
    return digits > 0;
}

/* State of one folded parse. */
struct folded {
    struct rt_profile *p;
    const struct rt_ingest_limits *lim;
    bool ns;             /* unit=nanoseconds, else samples */
    int64_t period_ns;   /* 0 = absent */
    size_t nstacks;      /* lines with a non-zero count */
    struct rt_buf scratch; /* a line's normalized frames (rt__frame_normalize) */
    unsigned shapes;     /* frame shapes seen (RT__SHAPE_*) */
    bool lines;          /* format=lines: no counts, every line one sample */
    struct rt_error *err;
};

static int too_big(struct folded *f, size_t lineno)
{
    return rt_error_set(f->err, RT_ETOOBIG,
                        "line %zu: the profile's total value exceeds the limit of %lld ns "
                        "(2^62 ns, about 146 years) per profile",
                        lineno, (long long)RT_PROFILE_MAX_VALUE_NS);
}

/* Replaces frames that are not clean names by repaired copies (rt_str_dup_name: each invalid
 * byte U+FFFD, each control byte "\xHH"), recorded in fixed[] for the caller to free.
 * Returns 0 or RT_ENOMEM. */
static int repair_frames(struct rt_str *frames, size_t n, char **fixed, size_t *nfixed)
{
    for (size_t i = 0; i < n; i++) {
        if (rt_str_is_name(frames[i]))
            continue;
        char *c = rt_str_dup_name(frames[i], &frames[i].len);
        if (!c)
            return RT_ENOMEM;
        fixed[(*nfixed)++] = c;
        frames[i].ptr = c;
    }
    return 0;
}

/* Adds the stack part of line lineno (stack[0..len), non-empty) with its count. */
static int add_line(struct folded *f, size_t lineno, const char *stack, size_t len, double count)
{
    struct rt_str frames[RT_MAX_STACK_DEPTH + 1];
    char *fixed[RT_MAX_STACK_DEPTH + 1];
    size_t n = 0, end = len, nfixed = 0;
    /* Frames from the leaf backwards: only the RT_MAX_STACK_DEPTH + 1 leaf-side ones matter.
     * The names written go one after another into scratch: each at most RT__FRAME_SLACK bytes
     * longer than its frame, at most RT_MAX_STACK_DEPTH + 1 of them kept, the last written
     * with room for its slack too. */
    if (rt_buf_reserve(&f->scratch, len + 1 + (size_t)RT__FRAME_SLACK * (RT_MAX_STACK_DEPTH + 2)))
        return rt_error_set(f->err, RT_ENOMEM, "out of memory normalizing frames");
    char *w = f->scratch.data;
    for (size_t i = len + 1; i-- > 0 && n <= RT_MAX_STACK_DEPTH;) {
        if (i > 0 && stack[i - 1] != ';')
            continue;
        struct rt_str fr = rt__frame_normalize((struct rt_str){stack + i, end - i}, w,
                                               &f->shapes);
        if (fr.len)
            frames[n++] = fr;
        if (fr.ptr == w)
            w += fr.len;
        end = i ? i - 1 : 0;
    }
    if (n == 0)
        return rt_error_set(f->err, RT_EMALFORMED, "line %zu has no frames", lineno);
    for (size_t i = 0; i < n / 2; i++) {
        struct rt_str t = frames[i];
        frames[i] = frames[n - 1 - i];
        frames[n - 1 - i] = t;
    }
    double v = f->ns ? count : count * (double)f->period_ns, samples;
    if (!(v <= (double)RT_PROFILE_MAX_VALUE_NS))
        return too_big(f, lineno);
    if (f->ns)
        samples = f->period_ns > 0 ? count / (double)f->period_ns : 0;
    else
        samples = count;
    if (++f->nstacks > f->lim->max_samples)
        return rt_error_set(f->err, RT_ETOOBIG,
                            "folded stacks exceed the limit of %zu lines (max_samples)",
                            f->lim->max_samples);
    int rc = repair_frames(frames, n, fixed, &nfixed);
    rc = rc ? rc : rt_profile_add_stack(f->p, frames, n, samples, llround(v));
    for (size_t i = 0; i < nfixed; i++)
        free(fixed[i]);
    if (rc == RT_ETOOBIG)
        return too_big(f, lineno);
    if (rc)
        return rt_error_set(f->err, RT_ENOMEM, "out of memory adding folded stacks");
    if (f->p->frames.count > f->lim->max_strings)
        return rt_error_set(f->err, RT_ETOOBIG,
                            "folded stacks exceed the limit of %zu distinct frames (max_strings)",
                            f->lim->max_strings);
    return 0;
}

/* difffolded.pl's lines carry two counts, "stack <before> <after>": given the end of the
 * stack part before the last count, returns it before a first count when there is one (the
 * before profile's, which is not this profile's), else unchanged. */
static size_t before_count(const char *s, size_t ws)
{
    size_t b = ws;
    while (b > 0 && !is_space(s[b - 1]))
        b--;
    double before;
    if (b == 0 || b == ws || !parse_count(s + b, ws - b, &before))
        return ws;
    while (b > 0 && is_space(s[b - 1]))
        b--;
    return b > 0 ? b : ws;
}

/* The frame of samples whose stack is empty (pprof's sample without locations, py-spy's line
 * without frames). */
#define RT_UNKNOWN_STACK "[unknown]"

/* Parses one line (without its '\n'). */
static int parse_line(struct folded *f, size_t lineno, const char *s, size_t n)
{
    if (n && s[n - 1] == '\r')
        n--;
    while (n && is_space(s[n - 1]))
        n--;
    bool indented = n && is_space(*s);
    while (n && is_space(*s))
        s++, n--;
    if (n == 0 || s[0] == '#')
        return 0;
    if (memchr(s, '\0', n))
        return rt_error_set(f->err, RT_EMALFORMED, "line %zu contains a NUL byte", lineno);
    if (f->lines) /* Pyroscope's format=lines: a stack per line, one sample each */
        return add_line(f, lineno, s, n, 1);
    size_t ws = n;
    while (ws > 0 && !is_space(s[ws - 1]))
        ws--;
    double count;
    /* " 22": a count with an empty stack, as py-spy writes a sample without Python frames:
     * its samples count, under the unknown frame as in a pprof sample without locations */
    if (ws == 0 && indented && !f->lines && parse_count(s, n, &count))
        return count == 0 ? 0 : add_line(f, lineno, RT_UNKNOWN_STACK, strlen(RT_UNKNOWN_STACK),
                                         count);
    if (ws > 0 && s[ws] == '-' && parse_count(s + ws + 1, n - ws - 1, &count))
        return rt_error_set(f->err, RT_EMALFORMED,
                            "line %zu has a negative count (counts are samples or nanoseconds, "
                            ">= 0): \"%.*s\"",
                            lineno, (int)(n > 80 ? 80 : n), s);
    if (ws == 0 || !parse_count(s + ws, n - ws, &count))
        return rt_error_set(f->err, RT_EMALFORMED,
                            "line %zu has no count (expected \"frame;frame;... <count>\"): "
                            "\"%.*s\"",
                            lineno, (int)(n > 80 ? 80 : n), s);
    while (ws > 0 && is_space(s[ws - 1]))
        ws--;
    ws = before_count(s, ws);
    if (count == 0)
        return 0;
    return add_line(f, lineno, s, ws, count);
}

static int parse_lines(struct folded *f, const char *s, size_t len)
{
    size_t lineno = 1;
    while (len > 0) {
        const char *nl = memchr(s, '\n', len);
        size_t n = nl ? (size_t)(nl - s) : len;
        int rc = parse_line(f, lineno++, s, n);
        if (rc)
            return rc;
        s += nl ? n + 1 : n;
        len -= nl ? n + 1 : n;
    }
    return 0;
}

/* Checks unit and period_ns. */
static int check_params(const struct rt_ingest_params *params, struct folded *f)
{
    const char *unit = params->unit && *params->unit ? params->unit : "samples";
    f->period_ns = params->period_ns > 0 ? params->period_ns : 0;
    if (strcmp(unit, "nanoseconds") == 0) {
        f->ns = true;
        return 0;
    }
    if (strcmp(unit, "samples") != 0)
        return rt_error_set(f->err, RT_EMALFORMED,
                            "unit=%.40s: folded stacks take unit=samples or unit=nanoseconds",
                            unit);
    if (f->period_ns == 0)
        return rt_error_set(f->err, RT_EMALFORMED,
                            "folded stacks with unit=samples need period_ns (nanoseconds per "
                            "sample), or send unit=nanoseconds");
    return 0;
}

int rt__ingest_folded(const uint8_t *data, size_t len, const struct rt_ingest_params *params,
                      enum rt_ptype type, const struct rt_ingest_limits *lim,
                      struct rt_profile **out, unsigned *shapes, struct rt_error *err)
{
    struct folded f = {.lim = lim, .err = err, .lines = params->format == RT_FMT_LINES};
    struct rt_buf conv;
    rt_buf_init(&conv, 0);
    rt_buf_init(&f.scratch, 0);
    int rc = check_params(params, &f);
    if (rc)
        return rc;
    bool le = len >= 2 && data[0] == 0xff && data[1] == 0xfe;
    bool be = len >= 2 && data[0] == 0xfe && data[1] == 0xff;
    if (le || be) {
        rc = utf16_to_utf8(data + 2, len - 2, be, lim->max_decompressed, &conv, err);
        if (rc)
            goto out;
        data = (const uint8_t *)conv.data;
        len = conv.len;
    } else if (len >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf) {
        data += 3;
        len -= 3;
    }
    f.p = rt_profile_new(type);
    if (!f.p) {
        rc = rt_error_set(err, RT_ENOMEM, "out of memory");
        goto out;
    }
    f.p->period_ns = f.period_ns;
    f.p->has_counts = !f.ns || f.period_ns > 0;
    rc = parse_lines(&f, (const char *)data, len);
    if (rc == 0) {
        *out = f.p;
        *shapes = f.shapes;
    } else {
        rt_profile_free(f.p);
    }
out:
    rt_buf_cleanup(&f.scratch);
    rt_buf_cleanup(&conv);
    return rc;
}
