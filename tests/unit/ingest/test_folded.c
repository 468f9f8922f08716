/* Tests of folded-stack ingest: every file of ../shared/data/collapsed with type=cpu,
 * unit=samples, period_ns=10000000 (totals from SOURCES.md), encodings, frame normalization,
 * units, and refusals naming the line. */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "slurp.h"
#include "test.h"

static void params_cpu(struct rt_ingest_params *q)
{
    rt_ingest_params_init(q);
    q->type = "cpu";
    q->unit = "samples";
    q->period_ns = 10000000;
}

/* Parses text with q; *p gets the profile (NULL on error). */
static int parse(const char *text, size_t len, const struct rt_ingest_params *q,
                 struct rt_profile **p, struct rt_error *e)
{
    struct rt_profile *out[2] = {NULL, NULL};
    size_t n = 0;
    rt_error_clear(e);
    int rc = rt_ingest_parse(text, len, q, NULL, out, &n, e);
    *p = rc == 0 && n == 1 ? out[0] : NULL;
    return rc;
}

static int parse_str(const char *text, const struct rt_ingest_params *q, struct rt_profile **p,
                     struct rt_error *e)
{
    return parse(text, strlen(text), q, p, e);
}

/* Value of the stack equal to the ';'-joined frames, -1 when absent. */
static int64_t stack_value(const struct rt_profile *p, const char *joined)
{
    char buf[512];
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        size_t n = 0;
        buf[0] = '\0';
        for (uint32_t k = 0; k < s->depth && n < sizeof(buf); k++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", k ? ";" : "",
                                  rt_profile_frame(p, p->frame_ids[s->off + k]));
        if (strcmp(buf, joined) == 0)
            return s->value_ns;
    }
    return -1;
}

static uint32_t max_depth(const struct rt_profile *p)
{
    uint32_t d = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        d = p->stacks[i].depth > d ? p->stacks[i].depth : d;
    return d;
}

/* SOURCES.md stats: samples = sum of counts, max_depth in frames. */
static void test_every_file(void)
{
    static const struct {
        const char *file;
        int rc;
        double samples;
        unsigned max_depth;
        const char *msg;
    } cases[] = {
        {"flamegraph__perf-iperf-stacks-pidtid-01-collapsed-addrs.txt", 0, 200, 37, NULL},
        {"flamegraph__perf-java-stacks-01-collapsed-all.txt", 0, 45, 70, NULL},
        {"flamegraph__perf-js-stacks-01-collapsed-jit.txt", 0, 2, 19, NULL},
        {"flamegraph__perf-numa-stacks-01-collapsed-tid.txt", 0, 199, 24, NULL},
        {"flamegraph__perf-rust-Yamakaky-dcpu-collapsed-all.txt", 0, 6850637, 37, NULL},
        {"flamegraph__perf-vertx-stacks-01-collapsed-all.txt", 0, 285, 69, NULL},
        {"inferno__collapse-dtrace_results_rust-names.txt", 0, 6, 17, NULL},
        {"inferno__collapse-ghcprof_results_utf8.txt", 0, 1000, 2, NULL},
        {"inferno__collapse-perf_results_cpp-stacks-std-function-collapsed.txt", 0, 80567950, 14,
         NULL},
        {"inferno__collapse-perf_results_example-perf-stacks-collapsed.txt", 0, 1315, 74, NULL},
        {"inferno__collapse-perf_results_go-stacks-collapsed.txt", 0, 1250000, 23, NULL},
        {"inferno__collapse-perf_results_java-inline-collapsed.txt", 0, 222222220, 25, NULL},
        {"inferno__diff-folded_after.txt", 0, 80, 8, NULL},
        {"inferno__diff-folded_before.txt", 0, 65, 8, NULL},
        /* SOURCES.md says 24264, counting "# duration: 23873" and "# interval: 100" as stacks;
         * '#' lines are comments here: 24264 - 23873 - 100 = 291 (105 + 186). */
        {"inferno__flamegraph_austin_flames.txt", 0, 291, 13, NULL},
        {"inferno__flamegraph_colors_async-profiler-collapsed-part.txt", 0, 3279, 117, NULL},
        {"inferno__flamegraph_fractional-samples_fractional.txt", 0, 334.618, 10, NULL},
        {"inferno__flamegraph_fractional-samples_tricky-stack.txt", 0, 3, 3, NULL},
        {"inferno__flamegraph_fractional-samples_with-space.txt", 0, 334.618, 10, NULL},
        {"speedscope__simple.txt", 0, 14, 3, NULL},
        {"speedscope__simple-crlf.txt", 0, 14, 3, NULL},
        {"speedscope__simple-utf16-le.txt", 0, 14, 3, NULL},
        {"speedscope__simple-utf16-be.txt", 0, 14, 3, NULL},
        {"speedscope__tall.txt", 0, 1, 26, NULL},
        {"inferno__flamegraph_bad-lines_bad-lines.txt", RT_EMALFORMED, 0, 0, "line 3 has no count"},
        {"speedscope__simple-with-invalids.txt", RT_EMALFORMED, 0, 0, "line 2 has no count"},
        /* 0 bytes: a well-formed zero-sample profile (DESIGN §4), no longer "empty body". */
        {"inferno__flamegraph_empty_empty.txt", 0, 0, 0, NULL},
    };
    struct rt_ingest_params q;
    params_cpu(&q);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[256];
        size_t n = 0;
        struct rt_profile *p;
        struct rt_error e;
        snprintf(path, sizeof(path), "../shared/data/collapsed/%s", cases[i].file);
        char *body = slurp(path, &n);
        int rc = parse(body, n, &q, &p, &e);
        if (rc != cases[i].rc)
            fprintf(stderr, "%s: rc %d (%s)\n", cases[i].file, rc, e.msg);
        CHECK_INT(rc, cases[i].rc);
        if (rc == 0 && p) {
            CHECK_INT(p->type, RT_PTYPE_CPU);
            CHECK(p->has_counts);
            CHECK_INT(p->period_ns, 10000000);
            CHECK_NEAR(p->samples, cases[i].samples, 1e-12);
            CHECK_NEAR((double)p->value_ns, cases[i].samples * 1e7, 1e-12);
            if (max_depth(p) != cases[i].max_depth)
                fprintf(stderr, "%s: depth %u\n", cases[i].file, max_depth(p));
            CHECK_INT(max_depth(p), cases[i].max_depth);
            rt_profile_free(p);
        } else if (rc && (!cases[i].msg || !strstr(e.msg, cases[i].msg))) {
            fprintf(stderr, "%s: \"%s\" lacks \"%s\"\n", cases[i].file, e.msg,
                    cases[i].msg ? cases[i].msg : "(success)");
            CHECK(0);
        }
        free(body);
    }
}

/* simple.txt: a;b;c 1 / a;b;c 1 / a;b;d 4 / a;b;c 3 / a;b 5, in four encodings. */
static void test_simple_encodings(void)
{
    static const char *const files[] = {"speedscope__simple.txt", "speedscope__simple-crlf.txt",
                                        "speedscope__simple-utf16-le.txt",
                                        "speedscope__simple-utf16-be.txt"};
    struct rt_ingest_params q;
    params_cpu(&q);
    for (size_t i = 0; i < 4; i++) {
        char path[256];
        size_t n = 0;
        struct rt_profile *p;
        struct rt_error e;
        snprintf(path, sizeof(path), "../shared/data/collapsed/%s", files[i]);
        char *body = slurp(path, &n);
        CHECK_INT(parse(body, n, &q, &p, &e), 0);
        if (p) {
            CHECK_INT(p->nstacks, 3);
            CHECK_INT(p->frames.count, 4);
            CHECK_INT(stack_value(p, "a;b;c"), 50000000);
            CHECK_INT(stack_value(p, "a;b;d"), 40000000);
            CHECK_INT(stack_value(p, "a;b"), 50000000);
            rt_profile_free(p);
        }
        free(body);
    }
}

/* Non-ASCII frames survive; zero-count lines are skipped. */
static void test_utf8_and_zero(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    size_t n = 0;
    params_cpu(&q);
    char *body = slurp(SHARED_DATA("collapsed/inferno__collapse-ghcprof_results_utf8.txt"), &n);
    CHECK_INT(parse(body, n, &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->nstacks, 2);
        CHECK_INT(stack_value(p, "MAIN.MAIN"), 260000000);
        CHECK_INT(stack_value(p, "MAIN.MAIN;Lib.\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c"),
                  9740000000LL);
        rt_profile_free(p);
    }
    free(body);
}

static void test_normalize(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"vfs_read_[k]", "vfs_read"},
        {"Interpreter_[j]", "Interpreter"},
        {"inlined_[i]", "inlined"},
        {"wakeup_[w]", "wakeup"},
        {"LazyCompile:_tickDomainCallback node.js:387_[j]",
         "LazyCompile:_tickDomainCallback node.js"},
        {"<frozen importlib._bootstrap>:_find_and_load:1007",
         "<frozen importlib._bootstrap>:_find_and_load"},
        {"main.go:12", "main.go"},
        {"std::vector<int>::push_back", "std::vector<int>::push_back"},
        {"foo_[x]", "foo_[x]"},
        {"_[k]", "_[k]"},
        {":12", ":12"},
        {"java-?/10992", "java-?/10992"},
        {"a:", "a:"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rt_str r = rt_ingest_normalize_folded_frame(rt_str_from(cases[i].in));
        char buf[128];
        snprintf(buf, sizeof(buf), "%.*s", (int)r.len, r.ptr);
        CHECK_STR(buf, cases[i].out);
        CHECK(r.ptr == cases[i].in);
    }
}

/* py-spy writes a sample without Python frames as a line of only a count (" 22"); it was
 * refused as "line 1 has no count". It counts, under the unknown frame. A line "22" without
 * the leading blank is still a frame without a count. */
static void test_empty_stack_line(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str(" 22\n<module> (burn2.py:28);main (burn2.py:24) 5\n 0\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->nstacks, 2);
        CHECK_INT(stack_value(p, "[unknown]"), 220000000);
        CHECK_INT(stack_value(p, "burn2.<module>;burn2.main"), 50000000);
        CHECK_NEAR(p->samples, 27, 0);
        rt_profile_free(p);
    }
    CHECK_INT(parse_str("22\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "no count") != NULL);
}

static void test_frames_normalized_in_profile(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str("java;Foo.bar_[j];sys_read_[k] 2\njava;Foo.bar;sys_read 3\n"
                        "py;mod:fn:12;mod:fn:40 1\n",
                        &q, &p, &e),
              0);
    if (p) {
        CHECK_INT(p->nstacks, 2);
        CHECK_INT(stack_value(p, "java;Foo.bar;sys_read"), 50000000);
        CHECK_INT(stack_value(p, "py;mod:fn;mod:fn"), 10000000);
        rt_profile_free(p);
    }
}

/* Script-less frames of @datadog/pprof grow when named (":w" is "(native).w"): a line of
 * nothing else, deeper than RT_MAX_STACK_DEPTH, keeps every name whole (fuzz_ingest_params
 * found them written over each other and past the buffer, ASan's heap-buffer-overflow). */
static void test_growing_frames(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str(":a;:b;:Node.js;:c 2\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(stack_value(p, "(native).a;(native).b;(Node.js);(native).c"), 20000000);
        rt_profile_free(p);
    }
    struct rt_buf b;
    rt_buf_init(&b, 0);
    for (int i = 0; i < RT_MAX_STACK_DEPTH + 40; i++)
        rt_buf_printf(&b, "%s:%c", i ? ";" : "", 'a' + i % 26);
    rt_buf_puts(&b, " 1\n");
    CHECK_INT(parse(b.data, b.len, &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->truncated_stacks, 1);
        /* frames 0..1063, frame i is ':' + 'a' + i % 26: the leaf 1063 ('x') and the 1,022
         * before it are kept, from 41 ('p') on, under the truncation marker */
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off + 1]), "(native).p");
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off + RT_MAX_STACK_DEPTH - 1]),
                  "(native).x");
        rt_profile_free(p);
    }
    rt_buf_cleanup(&b);
}

static void test_fractional_and_spaces(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str("  a b;c d\t 1.5 \r\n\n# comment 12\na b;c d 0.25\nx 7.\n", &q, &p, &e), 0);
    if (p) {
        CHECK_NEAR(p->samples, 8.75, 1e-12);
        CHECK_INT(stack_value(p, "a b;c d"), 17500000);
        CHECK_NEAR(p->stacks[0].samples, 1.75, 1e-12);
        CHECK_INT(stack_value(p, "x"), 70000000);
        rt_profile_free(p);
    }
    /* Rounding of count x period: 0.3333333 x 3 ns = 0.9999999 -> 1. */
    q.period_ns = 3;
    CHECK_INT(parse_str("a 0.3333333\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->value_ns, 1);
        rt_profile_free(p);
    }
}

static void test_units(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    rt_ingest_params_init(&q);
    q.type = "wall";
    q.unit = "nanoseconds";
    CHECK_INT(parse_str("a;b 2500\na 500\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->type, RT_PTYPE_WALL);
        CHECK_INT(p->value_ns, 3000);
        CHECK(!p->has_counts);
        CHECK_NEAR(p->samples, 0, 0);
        rt_profile_free(p);
    }
    q.period_ns = 500;
    CHECK_INT(parse_str("a;b 2500\na 500\n", &q, &p, &e), 0);
    if (p) {
        CHECK(p->has_counts);
        CHECK_NEAR(p->samples, 6, 1e-12);
        CHECK_NEAR(p->stacks[0].samples, 5, 1e-12);
        CHECK_INT(p->period_ns, 500);
        rt_profile_free(p);
    }
    /* unit=samples without a period: refused with the reason. */
    q.unit = NULL;
    q.period_ns = 0;
    CHECK_INT(parse_str("a 1\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "period_ns") != NULL);
    q.unit = "bytes";
    q.period_ns = 10;
    CHECK_INT(parse_str("a 1\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "unit=bytes") != NULL);
    /* No type: refused (the server never infers it); an unknown type likewise. */
    q.unit = "samples";
    q.type = NULL;
    CHECK_INT(parse_str("a 1\n", &q, &p, &e), RT_ETYPE);
    CHECK(strstr(e.msg, "type=cpu or type=wall") != NULL);
    q.type = "heap";
    CHECK_INT(parse_str("a 1\n", &q, &p, &e), RT_ETYPE);
}

static void test_bad_lines(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str("a;b 1\nc;d\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "line 2 has no count") != NULL);
    CHECK_INT(parse_str("a;b 1\n\n\na 12V.43\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "line 4") != NULL);
    CHECK_INT(parse_str("a -3\n", &q, &p, &e), RT_EMALFORMED);
    CHECK_INT(parse_str("a 1e5\n", &q, &p, &e), RT_EMALFORMED);
    CHECK_INT(parse_str("a 1.2.3\n", &q, &p, &e), RT_EMALFORMED);
    CHECK_INT(parse_str("5\n", &q, &p, &e), RT_EMALFORMED);
    CHECK_INT(parse_str(";;; 5\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "no frames") != NULL);
    CHECK_INT(parse("a\0b 1\n", 6, &q, &p, &e), RT_EMALFORMED);
    /* Only comments and blank lines: an empty profile, stored. */
    CHECK_INT(parse_str("# nothing\n\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->nstacks, 0);
        rt_profile_free(p);
    }
    /* A count whose value exceeds RT_PROFILE_MAX_VALUE_NS: too big, naming the limit. */
    CHECK_INT(parse_str("a 9999999999999999\n", &q, &p, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "line 1") && strstr(e.msg, "2^62 ns"));
}

/* "a;b;c -10" said "has no count"; it has one, and it is negative. */
static void test_negative_count(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse_str("a;b 1\na;b;c -10\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "line 2 has a negative count") != NULL);
    CHECK(strstr(e.msg, "no count") == NULL);
    CHECK_INT(parse_str("a;b;c -0.5\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "negative count") != NULL);
    /* A lone '-' or "-x" is still no count. */
    CHECK_INT(parse_str("a;b;c -\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "has no count") != NULL);
}

/* The total value of a profile is bounded by 2^62 ns (RT_PROFILE_MAX_VALUE_NS): two lines of
 * 3e18 ns each used to be accepted and saturate; now the second is refused, naming it. */
static void test_total_value_limit(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    q.unit = "nanoseconds";
    CHECK_INT(parse_str("a 3000000000000000000\nb 3000000000000000000\n", &q, &p, &e),
              RT_ETOOBIG);
    CHECK(strstr(e.msg, "line 2") && strstr(e.msg, "4611686018427387904 ns"));
    CHECK_INT(parse_str("a 4611686018427387904\n", &q, &p, &e), 0); /* exactly the limit */
    if (p) {
        CHECK(p->value_ns == RT_PROFILE_MAX_VALUE_NS);
        rt_profile_free(p);
    }
}

/* Frames that are not valid UTF-8 are stored repaired: each invalid byte becomes U+FFFD (as
 * export writes), so every later JSON answer can carry them. Messages quoting bad bytes are
 * repaired too ('?'). */
static void test_invalid_utf8_frames(void)
{
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    q.format = RT_FMT_FOLDED;
    CHECK_INT(parse_str("ok;bad\xc3\x28" "frame 10\nok;caf\xe9 1\nok;\xe2\x82 1\n", &q, &p,
                        &e),
              0);
    if (p) {
        CHECK_INT(stack_value(p, "ok;bad\xef\xbf\xbd(frame"), 100000000);
        CHECK_INT(stack_value(p, "ok;caf\xef\xbf\xbd"), 10000000);
        CHECK_INT(stack_value(p, "ok;\xef\xbf\xbd\xef\xbf\xbd"), 10000000);
        for (uint32_t i = 0; i < p->frames.count; i++)
            CHECK(rt_str_is_utf8((struct rt_str){p->frames.strs[i], p->frames.lens[i]}));
        rt_profile_free(p);
    }
    CHECK_INT(parse_str("caf\xe9;x\n", &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "caf?;x") != NULL);
    CHECK(rt_str_is_utf8(rt_str_from(e.msg)));
}

static void test_utf16_surrogates(void)
{
    /* UTF-16LE BOM, "\U0001F600;x 2\r\n" (a surrogate pair), then an unpaired surrogate. */
    static const unsigned char le[] = {0xff, 0xfe, 0x3d, 0xd8, 0x00, 0xde, ';', 0, 'x', 0,
                                       ' ', 0, '2', 0, '\r', 0, '\n', 0, 0x00, 0xd8, ' ', 0,
                                       '1', 0};
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse((const char *)le, sizeof(le), &q, &p, &e), 0);
    if (p) {
        CHECK_INT(stack_value(p, "\xf0\x9f\x98\x80;x"), 20000000);
        CHECK_INT(stack_value(p, "\xef\xbf\xbd"), 10000000);
        rt_profile_free(p);
    }
    CHECK_INT(parse((const char *)le, sizeof(le) - 1, &q, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "odd") != NULL);
}

static void test_deep_line_truncated(void)
{
    enum { DEPTH = 10000 };
    struct rt_buf b;
    rt_buf_init(&b, 0);
    for (int i = 0; i < DEPTH; i++)
        rt_buf_printf(&b, "%sf%d", i ? ";" : "", i);
    rt_buf_puts(&b, " 3\n");
    struct rt_ingest_params q;
    struct rt_profile *p;
    struct rt_error e;
    params_cpu(&q);
    CHECK_INT(parse(b.data, b.len, &q, &p, &e), 0);
    if (p) {
        CHECK_INT(p->truncated_stacks, 1);
        CHECK_INT(p->stacks[0].depth, RT_MAX_STACK_DEPTH);
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off]), RT_TRUNCATED_FRAME);
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off + 1]), "f8977");
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off + RT_MAX_STACK_DEPTH - 1]),
                  "f9999");
        CHECK_INT(p->value_ns, 30000000);
        rt_profile_free(p);
    }
    rt_buf_cleanup(&b);
}

static void test_limits_and_format(void)
{
    struct rt_ingest_params q;
    struct rt_ingest_limits lim;
    struct rt_profile *out[2];
    size_t n = 0;
    struct rt_error e;
    params_cpu(&q);
    rt_ingest_limits_default(&lim);
    lim.max_samples = 2;
    const char *three = "a 1\nb 1\nc 1\n";
    CHECK_INT(rt_ingest_parse(three, strlen(three), &q, &lim, out, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_samples") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_strings = 2;
    CHECK_INT(rt_ingest_parse(three, strlen(three), &q, &lim, out, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_strings") != NULL);
    /* format=pprof on text: the protobuf decoder refuses it. */
    q.format = RT_FMT_PPROF;
    CHECK_INT(rt_ingest_parse(three, strlen(three), &q, NULL, out, &n, &e), RT_EMALFORMED);
    /* Metadata and times from params. */
    q.format = RT_FMT_FOLDED;
    q.service = "api";
    q.start_ns = 1764464400000000000LL;
    q.duration_ns = 60000000000LL;
    CHECK_INT(rt_ingest_parse(three, strlen(three), &q, NULL, out, &n, &e), 0);
    if (n == 1) {
        CHECK_STR(out[0]->service, "api");
        CHECK_INT(out[0]->time_ns, 1764464400000000000LL);
        CHECK_INT(out[0]->duration_ns, 60000000000LL);
        rt_profile_free(out[0]);
    }
    /* Gzip-compressed folded text is sniffed and parsed. */
    unsigned char gz[256];
    z_stream zs = {0};
    deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (unsigned char *)three;
    zs.avail_in = (uInt)strlen(three);
    zs.next_out = gz;
    zs.avail_out = sizeof(gz);
    CHECK_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t gzlen = zs.total_out;
    deflateEnd(&zs);
    q.format = RT_FMT_AUTO;
    CHECK_INT(rt_ingest_parse(gz, gzlen, &q, NULL, out, &n, &e), 0);
    if (n == 1) {
        CHECK_NEAR(out[0]->samples, 3, 0);
        rt_profile_free(out[0]);
    }
}

/* A line with two counts is difffolded.pl's "stack <before> <after>": the profile is the
 * after one, as flamegraph.pl and inferno draw it (issue #13, 3: "main;parse 5 6" was a frame
 * "parse 5" with 6 samples). Checked on inferno's own diff-folded inputs: their difffolded
 * merge (each stack of either file with both counts, 0 where it is absent) reads back as
 * after.txt, stack by stack. */
static void test_difffolded_lines(void)
{
    struct rt_ingest_params q;
    params_cpu(&q);
    struct rt_error e;
    struct rt_profile *p;
    CHECK_INT(parse_str("main;parse 5 6\nmain;x 7\nmain;y 0 3\nmain;z 4 0\n", &q, &p, &e), 0);
    if (p) {
        CHECK_INT(stack_value(p, "main;parse"), 60000000);
        CHECK_INT(stack_value(p, "main;parse 5"), -1);
        CHECK_INT(stack_value(p, "main;x"), 70000000);
        CHECK_INT(stack_value(p, "main;y"), 30000000);
        CHECK_INT(stack_value(p, "main;z"), -1); /* 0 after: not in this profile */
        rt_profile_free(p);
    }
    size_t nb = 0, na = 0;
    char *before = slurp("../shared/data/collapsed/inferno__diff-folded_before.txt", &nb);
    char *after = slurp("../shared/data/collapsed/inferno__diff-folded_after.txt", &na);
    CHECK(before && after);
    struct rt_profile *pb = NULL, *pa = NULL;
    CHECK_INT(parse(before, nb, &q, &pb, &e), 0);
    CHECK_INT(parse(after, na, &q, &pa, &e), 0);
    struct rt_buf diff;
    rt_buf_init(&diff, 0);
    char joined[4096];
    for (int side = 0; pb && pa && side < 2; side++) {
        const struct rt_profile *x = side ? pa : pb, *y = side ? pb : pa;
        for (size_t i = 0; i < x->nstacks; i++) {
            size_t n = 0;
            for (uint32_t k = 0; k < x->stacks[i].depth; k++)
                n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%s", k ? ";" : "",
                                      rt_profile_frame(x, x->frame_ids[x->stacks[i].off + k]));
            int64_t other = stack_value(y, joined);
            if (side && other >= 0)
                continue; /* written from the before side already */
            int64_t b = side ? 0 : x->stacks[i].value_ns, a = side ? x->stacks[i].value_ns
                                                                    : (other > 0 ? other : 0);
            rt_buf_printf(&diff, "%s %lld %lld\n", joined, (long long)(b / 10000000),
                          (long long)(a / 10000000));
        }
    }
    struct rt_profile *pd = NULL;
    CHECK_INT(parse(diff.data ? diff.data : "", diff.len, &q, &pd, &e), 0);
    if (pd && pa) {
        CHECK_INT(pd->value_ns, pa->value_ns);
        CHECK_INT(pd->value_ns, 800000000); /* after.txt's 80 samples (SOURCES.md) */
        CHECK_INT(pd->nstacks, pa->nstacks);
        for (size_t i = 0; i < pa->nstacks; i++) {
            size_t n = 0;
            for (uint32_t k = 0; k < pa->stacks[i].depth; k++)
                n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%s", k ? ";" : "",
                                      rt_profile_frame(pa, pa->frame_ids[pa->stacks[i].off + k]));
            CHECK_INT(stack_value(pd, joined), pa->stacks[i].value_ns);
        }
    }
    rt_profile_free(pb);
    rt_profile_free(pa);
    rt_profile_free(pd);
    rt_buf_cleanup(&diff);
    free(before);
    free(after);
}

int main(void)
{
    RUN(test_every_file);
    RUN(test_simple_encodings);
    RUN(test_utf8_and_zero);
    RUN(test_normalize);
    RUN(test_frames_normalized_in_profile);
    RUN(test_empty_stack_line);
    RUN(test_growing_frames);
    RUN(test_fractional_and_spaces);
    RUN(test_units);
    RUN(test_bad_lines);
    RUN(test_negative_count);
    RUN(test_total_value_limit);
    RUN(test_invalid_utf8_frames);
    RUN(test_utf16_surrogates);
    RUN(test_deep_line_truncated);
    RUN(test_limits_and_format);
    RUN(test_difffolded_lines);
    return TEST_DONE();
}
