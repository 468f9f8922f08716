/* Tests of the JFR decoder (rt__ingest_jfr): the real recordings of ../shared/data/other/jfr
 * against values the JDK's own `jfr` tool gives, and recordings built here for each rule and
 * each refusal. `test_jfr --seeds DIR` writes the built recordings as fuzz seeds instead
 * (tests/fuzz/corpus/fuzz_jfr/).
 *
 * Reference values: `python3 tests/unit/ingest/jfr_reference.py FILE` (Temurin 25's `jfr
 * print --json --events jdk.ExecutionSample`, `jfr summary`, `jfr print --events
 * jdk.ActiveSetting`, and the chunk header's bytes). It names frames by RootTrace's rule
 * (class name with '/' -> '.', as RecordedClass.getName; async-profiler's native symbols as
 * they are) from the JDK's parse, not from ours. `jfr` reads all four files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/ingest_internal.h"
#include "rt/buf.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "jfr_build.h"
#include "slurp.h"
#include "test.h"

#define JFR(f) SHARED_DATA("other/jfr/" f)
#define MS 1000000LL

/* ---- Running the decoder ---- */

struct run {
    struct rt_profile *p[2];
    size_t n;
    struct rt__jfr_skipped sk;
    struct rt_error err;
    int rc;
};

static void run_bytes(struct run *r, const void *data, size_t len, enum rt_ptype want,
                      int64_t hint, const struct rt_ingest_limits *lim)
{
    memset(r, 0, sizeof(*r));
    r->rc = rt__ingest_jfr(data, len, want, hint, lim, r->p, &r->n, &r->sk, &r->err);
    if (r->rc)
        r->n = 0;
}

/* Reads a file (gunzipped when it is gzip) into b. */
static int load(const char *path, struct rt_buf *b)
{
    size_t n = 0;
    char *raw = slurp(path, &n);
    rt_buf_init(b, (size_t)64 << 20);
    int rc = -1;
    if (raw && rt_ingest_is_gzip(raw, n))
        rc = rt_ingest_gunzip(raw, n, b, NULL);
    else if (raw)
        rc = rt_buf_append(b, raw, n);
    free(raw);
    return rc;
}

static void run_file(struct run *r, const char *path, enum rt_ptype want, int64_t hint)
{
    struct rt_buf b;
    if (load(path, &b)) {
        memset(r, 0, sizeof(*r));
        r->rc = -1;
        rt_buf_cleanup(&b);
        return;
    }
    run_bytes(r, b.data, b.len, want, hint, NULL);
    rt_buf_cleanup(&b);
}

static void done(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        rt_profile_free(r->p[i]);
    r->n = 0;
}

/* Samples whose leaf is frame name. */
static double self(const struct rt_profile *p, const char *name)
{
    double v = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        if (strcmp(rt_profile_frame(p, p->frame_ids[s->off + s->depth - 1]), name) == 0)
            v += s->samples;
    }
    return v;
}

static bool has_frame(const struct rt_profile *p, const char *name)
{
    return rt_intern_find(&p->frames, rt_str_from(name)) >= 0;
}

/* Frames that carry a line number (":" then a digit, ".java") or a JVM descriptor ("(" in a
 * frame that is not C++); C++ names keep their "::". */
static int line_numbers(const struct rt_profile *p)
{
    int bad = 0;
    for (uint32_t f = 0; f < p->frames.count; f++) {
        const char *s = rt_profile_frame(p, f);
        for (const char *c = strchr(s, ':'); c; c = strchr(c + 1, ':'))
            bad += c[1] >= '0' && c[1] <= '9';
        bad += strstr(s, ".java") != NULL || (strchr(s, '(') && !strstr(s, "::"));
    }
    return bad;
}

/* Whether some stack ends (root first) with caller then leaf. */
static bool ends_with(const struct rt_profile *p, const char *caller, const char *leaf)
{
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        if (s->depth < 2)
            continue;
        const uint32_t *f = &p->frame_ids[s->off + s->depth - 2];
        if (!strcmp(rt_profile_frame(p, f[0]), caller) && !strcmp(rt_profile_frame(p, f[1]), leaf))
            return true;
    }
    return false;
}

/* ---- Real recordings ---- */

/* async-profiler 2.9 via pyroscope-java, event=cpu, interval=0 (its default, not stated):
 * the period comes from the upload's sampleRate=100. jfr_reference.py: 478 ExecutionSample,
 * all STATE_RUNNABLE; self Pattern$Slice.match 46, Pattern$CharPropertyGreedy.match 45,
 * Pattern$GroupTail.match 29, "vtable stub" 15, "itable stub" 14, __vdso_clock_gettime 7;
 * header start 1691037274585412000 ns, duration 10050583000 ns; other events 89 (most:
 * jdk.NativeLibrary 30). jfr-parser's own expectation for this file
 * (parser/testdata/cortex-dev-01__kafka-0__cpu__0_0_process_cpu_cpu__nanoseconds_expected_
 * collapsed.txt.gz at sampleRate 100) sums to 4780000000 ns, 478 samples. */
static void test_kafka_cpu(void)
{
    struct run r;
    run_file(&r, JFR("jfr-parser__cortex-dev-01__kafka-0__cpu__0.jfr.gz"), 0, 10 * MS);
    CHECK_INT(r.rc, 0);
    CHECK_INT(r.n, 1);
    if (r.n != 1)
        return;
    struct rt_profile *p = r.p[0];
    CHECK_INT(p->type, RT_PTYPE_CPU);
    CHECK_NEAR(p->samples, 478, 0);
    CHECK_INT(p->value_ns, 4780000000LL);
    CHECK_INT(p->period_ns, 10 * MS);
    CHECK(p->has_counts);
    CHECK_INT(p->time_ns, 1691037274585412000LL);
    CHECK_INT(p->duration_ns, 10050583000LL);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$Slice.match"), 46, 0);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$CharPropertyGreedy.match"), 45, 0);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$GroupTail.match"), 29, 0);
    CHECK_NEAR(self(p, "vtable stub"), 15, 0);
    CHECK_NEAR(self(p, "itable stub"), 14, 0);
    CHECK_NEAR(self(p, "__vdso_clock_gettime"), 7, 0);
    /* Native and C++ frames keep their symbol, without the library async-profiler files
     * them under ("libc-2.31.so", "libjvm.so"). */
    CHECK(has_frame(p, "clock_gettime"));
    CHECK(has_frame(p, "G1Analytics::predict_scan_card_num"));
    CHECK(!has_frame(p, "libc-2.31.so.clock_gettime"));
    CHECK_INT(line_numbers(p), 0);
    CHECK_INT(r.sk.allocation, 0);
    CHECK_INT(r.sk.lock, 0);
    CHECK_INT(r.sk.other, 89);
    CHECK_STR(r.sk.other_names[0], "jdk.NativeLibrary");
    done(&r);

    /* Without sampleRate the recording states no period: refused, naming the fix. */
    run_file(&r, JFR("jfr-parser__cortex-dev-01__kafka-0__cpu__0.jfr.gz"), 0, 0);
    CHECK_INT(r.rc, RT_ETYPE);
    CHECK(strstr(r.err.msg, "sampleRate=") != NULL);
    /* It holds no wall samples. */
    run_file(&r, JFR("jfr-parser__cortex-dev-01__kafka-0__cpu__0.jfr.gz"), RT_PTYPE_WALL,
             10 * MS);
    CHECK_INT(r.rc, RT_ETYPE);
    CHECK(strstr(r.err.msg, "478 cpu samples") != NULL);
}

/* The same agent with alloc and lock on. jfr_reference.py: 554 ExecutionSample; self
 * CharPropertyGreedy.match 40, GroupTail.match 39, Slice.match 37, the snappy library 26
 * (a frame async-profiler names by the library); jfr summary: 766
 * jdk.ObjectAllocationInNewTLAB, 0 lock events (JavaMonitorEnter, ThreadPark), 91 other. */
static void test_kafka_cpu_lock_alloc(void)
{
    struct run r;
    run_file(&r, JFR("jfr-parser__cortex-dev-01__kafka-0__cpu_lock_alloc__0.jfr.gz"), 0,
             10 * MS);
    CHECK_INT(r.rc, 0);
    CHECK_INT(r.n, 1);
    if (r.n != 1)
        return;
    struct rt_profile *p = r.p[0];
    CHECK_NEAR(p->samples, 554, 0);
    CHECK_INT(p->value_ns, 5540000000LL);
    CHECK_INT(p->time_ns, 1691037380984154000LL);
    CHECK_INT(p->duration_ns, 10036829000LL);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$CharPropertyGreedy.match"), 40, 0);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$GroupTail.match"), 39, 0);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$Slice.match"), 37, 0);
    CHECK_NEAR(self(p, "/tmp/snappy-1.1.8-d1f9bd24-4cc8-4571-b71c-1698b83f1af1-libsnappyjava.so"),
               26, 0);
    CHECK_INT(line_numbers(p), 0);
    CHECK_INT(r.sk.allocation, 766);
    CHECK_INT(r.sk.lock, 0);
    CHECK_INT(r.sk.native_method, 0);
    CHECK_INT(r.sk.other, 91);
    done(&r);
}

/* dd-trace-java on the JDK's JFR: jdk.ActiveSetting of jdk.ExecutionSample (id 353) states
 * period "9 ms", which wins over the upload's hint. jfr_reference.py: 113 ExecutionSample;
 * self Matcher.reset 11, Formatter$FormatSpecifier.print 9,
 * Pattern$BmpCharPropertyGreedy.match 9, DecimalFormatSymbols.getInstance 6; jfr summary:
 * allocation 3827 (3725 in new TLAB, 93 outside, 9 OldObjectSample), lock 147 (122
 * ThreadPark, 25 JavaMonitorWait), other 1823, most of them jdk.BooleanFlag (650). */
static void test_dd_trace(void)
{
    struct run r;
    run_file(&r, JFR("jfr-parser__dd-trace-java.jfr.gz"), RT_PTYPE_CPU, 10 * MS);
    CHECK_INT(r.rc, 0);
    CHECK_INT(r.n, 1);
    if (r.n != 1)
        return;
    struct rt_profile *p = r.p[0];
    CHECK_NEAR(p->samples, 113, 0);
    CHECK_INT(p->period_ns, 9 * MS);
    CHECK_INT(p->value_ns, 113 * 9 * MS);
    CHECK_INT(p->time_ns, 1723014521604000000LL);
    CHECK_INT(p->duration_ns, 9123000064LL);
    CHECK_NEAR(self(p, "java.util.regex.Matcher.reset"), 11, 0);
    CHECK_NEAR(self(p, "java.util.Formatter$FormatSpecifier.print"), 9, 0);
    CHECK_NEAR(self(p, "java.util.regex.Pattern$BmpCharPropertyGreedy.match"), 9, 0);
    CHECK_NEAR(self(p, "java.text.DecimalFormatSymbols.getInstance"), 6, 0);
    CHECK_INT(line_numbers(p), 0);
    CHECK_INT(r.sk.allocation, 3827);
    CHECK_INT(r.sk.lock, 147);
    CHECK_INT(r.sk.other, 1823);
    CHECK_STR(r.sk.other_names[0], "jdk.BooleanFlag");
    done(&r);
}

/* JDK Flight Recorder (speedscope's heavy.jfr, format 2.1): `jfr view active-settings`:
 * Method Profiling Sample period 20 ms. jfr_reference.py: 346 ExecutionSample; self
 * DualPivotQuicksort.sort 211, DualPivotQuicksort.mixedInsertionSort 87,
 * AtomicLong.compareAndSet 25; the first event's stack is SliceOps$2$1.cancellationRequested
 * called by IntPipeline.forEachWithCancel; 44 jdk.NativeMethodSample, 40 allocation events
 * (25 ObjectAllocationSample, 15 OldObjectSample). A lambda frame keeps the hidden class's
 * name as JFR gives it, dotted. */
static void test_heavy(void)
{
    struct run r;
    run_file(&r, JFR("speedscope__heavy.jfr"), 0, 0);
    CHECK_INT(r.rc, 0);
    CHECK_INT(r.n, 1);
    if (r.n != 1)
        return;
    struct rt_profile *p = r.p[0];
    CHECK_NEAR(p->samples, 346, 0);
    CHECK_INT(p->period_ns, 20 * MS);
    CHECK_INT(p->value_ns, 346 * 20 * MS);
    CHECK_INT(p->time_ns, 1726599065597664600LL);
    CHECK_INT(p->duration_ns, 8586796500LL);
    CHECK_NEAR(self(p, "java.util.DualPivotQuicksort.sort"), 211, 0);
    CHECK_NEAR(self(p, "java.util.DualPivotQuicksort.mixedInsertionSort"), 87, 0);
    CHECK_NEAR(self(p, "java.util.concurrent.atomic.AtomicLong.compareAndSet"), 25, 0);
    CHECK(ends_with(p, "java.util.stream.IntPipeline.forEachWithCancel",
                    "java.util.stream.SliceOps$2$1.cancellationRequested"));
    /* `jfr print` names it Heavy$$Lambda+0x000001c39a007200.2136288211.getAsInt: the hidden
     * class's ids change with every run, so the frame is the lambda's (frames.c) */
    CHECK(has_frame(p, "Heavy$$Lambda.getAsInt"));
    CHECK(!has_frame(p, "Heavy$$Lambda+0x000001c39a007200.2136288211.getAsInt"));
    CHECK_INT(line_numbers(p), 0);
    CHECK_INT(r.sk.native_method, 44);
    CHECK_INT(r.sk.allocation, 40);
    done(&r);
}

/* A real async-profiler recording of allocation events only: the cpu_lock_alloc file cut by
 * the JDK's `jfr scrub --include-events 'jdk.ExecutionSample,jdk.ActiveSetting,
 * jdk.ObjectAllocationInNewTLAB' --include-threads data-plane-kafka-request-handler-7` (the
 * thread filter drops async-profiler's samples, which name a sampledThread, not an
 * eventThread); `jfr summary` of it: 49 jdk.ObjectAllocationInNewTLAB, nothing else. It is
 * also a fuzz seed. */
static void test_real_alloc_only(void)
{
    struct run r;
    run_file(&r, "tests/fuzz/corpus/fuzz_jfr/scrub-async-profiler-alloc-only.jfr", 0, 10 * MS);
    CHECK_INT(r.rc, RT_ETYPE);
    CHECK(strstr(r.err.msg, "holds no cpu or wall samples") != NULL);
    CHECK(strstr(r.err.msg, "49 allocation") != NULL);
    CHECK_INT(r.sk.allocation, 49);
    CHECK_INT(r.sk.other, 0);
}

/* Cut anywhere, a real recording is refused as malformed, never read past its end. */
static void test_real_truncated(void)
{
    struct rt_buf b;
    if (load(JFR("speedscope__heavy.jfr"), &b) != 0)
        return;
    size_t cuts[] = {0, 3, 10, 67, 68, 200, 30000, b.len / 2, b.len - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        struct run r;
        uint8_t *copy = malloc(cuts[i] + 1);
        memcpy(copy, b.data, cuts[i]);
        run_bytes(&r, copy, cuts[i], 0, 0, NULL);
        CHECK_INT(r.rc, RT_EMALFORMED);
        free(copy);
    }
    rt_buf_cleanup(&b);
}

/* ---- Recordings built here (jfr_build.h) ---- */

static void build(struct run *r, const struct opts *o, enum rt_ptype want, int64_t hint)
{
    struct w w = {NULL, 0, 0, true};
    chunk(&w, o);
    run_bytes(r, w.b, w.n, want, hint, NULL);
    free(w.b);
}

/* JDK style: period "10 ms"; frames root first; the native symbol by its name alone. */
static void test_built_cpu(void)
{
    for (int unc = 0; unc < 2; unc++) {
        struct opts o = {.uncompressed = unc, .exec1 = 3, .exec2 = 2, .period = "10 ms"};
        struct run r;
        build(&r, &o, 0, 0);
        CHECK_INT(r.rc, 0);
        CHECK_INT(r.n, 1);
        if (r.n != 1)
            continue;
        struct rt_profile *p = r.p[0];
        CHECK_INT(p->type, RT_PTYPE_CPU);
        CHECK_NEAR(p->samples, 5, 0);
        CHECK_INT(p->value_ns, 50 * MS);
        CHECK_INT(p->period_ns, 10 * MS);
        CHECK_INT(p->time_ns, 1700000000000000000LL);
        CHECK_INT(p->duration_ns, 10000000000LL);
        CHECK_INT(p->nstacks, 2);
        CHECK(ends_with(p, "java.lang.Thread.run", "com.shop.Cart.total"));
        CHECK(ends_with(p, "com.shop.Cart.total", "write"));
        CHECK_STR(rt_profile_frame(p, p->frame_ids[p->stacks[0].off]), "java.lang.Thread.run");
        CHECK_NEAR(self(p, "write"), 2, 0);
        CHECK_INT(line_numbers(p), 0);
        done(&r);
    }
}

/* Only allocation events: refused as no cpu or wall samples, naming what it held. */
static void test_built_alloc_only(void)
{
    struct opts o = {.alloc = 7};
    struct run r;
    build(&r, &o, 0, 10 * MS);
    CHECK_INT(r.rc, RT_ETYPE);
    CHECK(strstr(r.err.msg, "no cpu or wall samples") != NULL);
    CHECK(strstr(r.err.msg, "7 allocation") != NULL);
    CHECK_INT(r.sk.allocation, 7);
}

/* async-profiler modes: event=wall makes jdk.ExecutionSample wall; profiler.WallClockSample is
 * wall, worth its "samples", at the "wall" interval; sleeping threads are not cpu
 * (jfr-parser); a hardware-counter event measures no time. */
static void test_built_modes(void)
{
    struct run r;
    struct opts wall = {.exec1 = 2, .sleeping = 1, .event = "wall"};
    build(&r, &wall, 0, 20 * MS);
    CHECK_INT(r.rc, 0);
    CHECK(r.n == 1 && r.p[0]->type == RT_PTYPE_WALL && r.p[0]->samples == 3);
    done(&r);

    struct opts both = {.exec1 = 4, .sleeping = 2, .event = "cpu", .wall = "50000000",
                        .wall_events = 3, .wall_samples = 5};
    build(&r, &both, 0, 10 * MS);
    CHECK_INT(r.rc, 0);
    CHECK_INT(r.n, 2);
    if (r.n == 2) {
        CHECK(r.p[0]->type == RT_PTYPE_CPU && r.p[0]->samples == 4);
        CHECK_INT(r.p[0]->value_ns, 40 * MS);
        CHECK(r.p[1]->type == RT_PTYPE_WALL && r.p[1]->samples == 15);
        CHECK_INT(r.p[1]->value_ns, 15 * 50 * MS);
        CHECK_INT(r.p[1]->period_ns, 50 * MS);
    }
    CHECK_INT(r.sk.other, 2 + 2); /* the 2 sleeping samples and the 2 settings */
    done(&r);
    build(&r, &both, RT_PTYPE_WALL, 10 * MS);
    CHECK(r.rc == 0 && r.n == 1 && r.p[0]->type == RT_PTYPE_WALL);
    done(&r);

    struct opts cycles = {.exec1 = 3, .event = "cycles"};
    build(&r, &cycles, 0, 10 * MS);
    CHECK_INT(r.rc, RT_ETYPE);
    CHECK(strstr(r.err.msg, "cycles") != NULL);

    /* Sampling on but an idle JVM: an empty cpu profile, not a refusal (DESIGN §4). */
    struct opts idle = {.enabled = true, .period = "20ms"};
    build(&r, &idle, 0, 0);
    CHECK_INT(r.rc, 0);
    CHECK(r.n == 1 && r.p[0]->type == RT_PTYPE_CPU && r.p[0]->samples == 0);
    done(&r);
}

/* Two chunks: samples add up, time from the earliest start over the span of both. */
static void test_built_chunks(void)
{
    struct w w = {NULL, 0, 0, true};
    struct opts a = {.exec1 = 2, .period = "10 ms", .start_ns = 2000000000, .duration_ns = 5};
    struct opts b = {.exec2 = 3, .uncompressed = true, .start_ns = 1000000000,
                     .duration_ns = 500000000};
    chunk(&w, &a);
    chunk(&w, &b);
    struct run r;
    run_bytes(&r, w.b, w.n, 0, 0, NULL);
    CHECK_INT(r.rc, 0);
    if (r.n == 1) {
        CHECK_NEAR(r.p[0]->samples, 5, 0);
        CHECK_INT(r.p[0]->value_ns, 50 * MS); /* the period carries over to chunk 2 */
        CHECK_INT(r.p[0]->time_ns, 1000000000);
        CHECK_INT(r.p[0]->duration_ns, 1000000005);
    }
    done(&r);
    free(w.b);
}

/* A stack deeper than RT_MAX_STACK_DEPTH keeps its leaf side under "(truncated)". */
static void test_built_deep(void)
{
    struct opts o = {.deep = true, .period = "10 ms"};
    struct run r;
    build(&r, &o, 0, 0);
    CHECK_INT(r.rc, 0);
    if (r.n == 1) {
        CHECK_INT(r.p[0]->truncated_stacks, 1);
        CHECK_INT(r.p[0]->stacks[0].depth, RT_MAX_STACK_DEPTH);
        CHECK_STR(rt_profile_frame(r.p[0], r.p[0]->frame_ids[r.p[0]->stacks[0].off]),
                  RT_TRUNCATED_FRAME);
        CHECK_NEAR(self(r.p[0], "com.shop.Cart.total"), 1, 0);
    }
    done(&r);
}

/* Refusals: truncation at every byte, bad magic, a chunk past the end, a huge constant pool
 * count, limits, an old version. Each is an error, none reads out of bounds (SAN=1). */
static void truncations(bool uncompressed)
{
    struct opts o = {.uncompressed = uncompressed, .exec1 = 2, .exec2 = 1, .period = "10 ms"};
    size_t n;
    uint8_t *b = built(&o, &n);
    struct run r;
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *c = malloc(cut + 1);
        memcpy(c, b, cut);
        run_bytes(&r, c, cut, 0, 0, NULL);
        CHECK_INT(r.rc, RT_EMALFORMED);
        /* ... with the header's size made to fit, and without constant pools: cut inside
         * the metadata or the events */
        if (cut > 68) {
            set_be(c + 8, cut);
            run_bytes(&r, c, cut, 0, 0, NULL);
            CHECK_INT(r.rc, RT_EMALFORMED); /* the constant pool offset is past the cut */
            set_be(c + 16, 0);
            run_bytes(&r, c, cut, 0, 0, NULL);
            CHECK(r.rc == 0 || r.rc == RT_EMALFORMED || r.rc == RT_ETYPE);
            done(&r);
        }
        free(c);
    }
    free(b);
}

static void test_built_refusals(void)
{
    truncations(false);
    truncations(true); /* big-endian integers: a cut size field once read past the end */
    struct opts o = {.exec1 = 2, .exec2 = 1, .alloc = 1, .period = "10 ms"};
    size_t n;
    uint8_t *b = built(&o, &n);
    struct run r;
    b[3] = 1;
    run_bytes(&r, b, n, 0, 0, NULL);
    CHECK_INT(r.rc, RT_EMALFORMED);
    CHECK(strstr(r.err.msg, "magic") != NULL);
    b[3] = 0;
    set_be(b + 8, n + 1); /* chunk size one past the end */
    run_bytes(&r, b, n, 0, 0, NULL);
    CHECK_INT(r.rc, RT_EMALFORMED);
    CHECK(strstr(r.err.msg, "past the end") != NULL);
    set_be(b + 8, n);
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    lim.max_samples = 3;
    run_bytes(&r, b, n, 0, 0, &lim);
    CHECK_INT(r.rc, RT_ETOOBIG);
    CHECK(strstr(r.err.msg, "max_samples") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_locations = 2;
    run_bytes(&r, b, n, 0, 0, &lim);
    CHECK_INT(r.rc, RT_ETOOBIG);
    CHECK(strstr(r.err.msg, "max_locations") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_strings = 10;
    run_bytes(&r, b, n, 0, 0, &lim);
    CHECK_INT(r.rc, RT_ETOOBIG);
    CHECK(strstr(r.err.msg, "max_strings") != NULL);
    free(b);

    struct opts huge = {.exec1 = 1, .period = "10 ms", .huge_count = 0x7fffffff};
    build(&r, &huge, 0, 0);
    CHECK_INT(r.rc, RT_ETOOBIG);
    CHECK(strstr(r.err.msg, "max_strings") != NULL);
    huge.huge_count = 900000; /* under the limit, far past the bytes */
    build(&r, &huge, 0, 0);
    CHECK_INT(r.rc, RT_EMALFORMED);

    struct opts v0 = {.exec1 = 1, .period = "10 ms", .major = 0x7f};
    build(&r, &v0, 0, 0);
    CHECK_INT(r.rc, RT_EFORMAT);
}

/* Writes the built recordings as fuzz seeds into dir. */
static int write_seeds(const char *dir)
{
    static const struct {
        const char *name;
        struct opts o;
    } seeds[] = {
        {"tiny-cpu.jfr", {.exec1 = 1, .period = "10 ms"}},
        {"cpu-native.jfr", {.exec1 = 2, .exec2 = 2, .alloc = 1, .period = "20 ms"}},
        {"uncompressed.jfr", {.uncompressed = true, .exec1 = 1, .exec2 = 1, .period = "1 ms"}},
        {"wall-clock.jfr", {.exec1 = 1, .sleeping = 1, .event = "cpu", .wall = "0",
                            .wall_events = 2, .wall_samples = 3}},
        {"legacy-wall.jfr", {.exec1 = 1, .sleeping = 1, .event = "wall"}},
        {"alloc-only.jfr", {.alloc = 2}},
    };
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        char path[512];
        size_t n;
        uint8_t *b = built(&seeds[i].o, &n);
        snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(b, 1, n, f) != n) {
            perror(path);
            return 1;
        }
        fclose(f);
        free(b);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--seeds"))
        return write_seeds(argv[2]);
    RUN(test_kafka_cpu);
    RUN(test_kafka_cpu_lock_alloc);
    RUN(test_dd_trace);
    RUN(test_heavy);
    RUN(test_real_alloc_only);
    RUN(test_real_truncated);
    RUN(test_built_cpu);
    RUN(test_built_alloc_only);
    RUN(test_built_modes);
    RUN(test_built_chunks);
    RUN(test_built_deep);
    RUN(test_built_refusals);
    return TEST_DONE();
}
