/* Tests of pprof ingest on real files: every file of ../shared/data/pprof accepted or refused
 * for its documented reason, totals and top functions against `go tool pprof`, metadata.
 * Hand-built protobuf cases are in test_pprof_decode.c. */
#include <stdio.h>
#include <stdlib.h>

#include "rt/err.h"
#include "rt/ingest.h"
#include "slurp.h"
#include "test.h"

/* Ingests a file with an optional type=; returns the rt_ingest_parse code. */
static int ingest(const char *path, const char *type, struct rt_profile **out, size_t *nout,
                  struct rt_error *err)
{
    size_t n = 0;
    char *body = slurp(path, &n);
    struct rt_ingest_params params;
    rt_ingest_params_init(&params);
    params.type = type;
    *nout = 0;
    rt_error_clear(err);
    int rc = body ? rt_ingest_parse(body, n, &params, NULL, out, nout, err) : -1;
    free(body);
    return rc;
}

static void free_all(struct rt_profile **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rt_profile_free(p[i]);
}

/* Self value (ns) of frame name: the leaf of each stack, merged by name. */
static int64_t self_ns(const struct rt_profile *p, const char *name)
{
    int64_t v = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        if (strcmp(rt_profile_frame(p, p->frame_ids[s->off + s->depth - 1]), name) == 0)
            v += s->value_ns;
    }
    return v;
}

/* Total (cumulative) value: stacks containing name at least once. */
static int64_t total_ns(const struct rt_profile *p, const char *name)
{
    int64_t v = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        for (uint32_t k = 0; k < s->depth; k++)
            if (strcmp(rt_profile_frame(p, p->frame_ids[s->off + k]), name) == 0) {
                v += s->value_ns;
                break;
            }
    }
    return v;
}

/* The frame with the largest self value. */
static const char *top_self(const struct rt_profile *p)
{
    const char *best = "";
    int64_t bv = -1;
    for (uint32_t f = 0; f < p->frames.count; f++) {
        int64_t v = self_ns(p, rt_profile_frame(p, f));
        if (v > bv) {
            bv = v;
            best = rt_profile_frame(p, f);
        }
    }
    return best;
}

#define PP(f) SHARED_DATA("pprof/" f)

/* EXPECTED.md: parca__fib 2974 samples, 29.74e9 ns, math/big.addVV self 28.61 s. */
static void test_fib(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("parca__fib.pb.gz"), NULL, p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_INT(p[0]->type, RT_PTYPE_CPU);
    CHECK_NEAR(p[0]->samples, 2974, 0);
    CHECK_INT(p[0]->value_ns, 29740000000LL);
    CHECK(p[0]->has_counts);
    CHECK_INT(p[0]->period_ns, 10000000);
    CHECK_STR(top_self(p[0]), "math/big.addVV");
    CHECK_INT(self_ns(p[0], "math/big.addVV"), 28610000000LL);
    /* go tool pprof -top -symbolize=none parca__fib.pb.gz: cum of math/big.nat.add 29.13s,
     * fib.Fibonacci 29.20s, runtime.memclrNoHeapPointers flat 0.31s. */
    CHECK_INT(total_ns(p[0], "math/big.nat.add"), 29130000000LL);
    CHECK_INT(total_ns(p[0], "github.com/polarsignals/pprof-example-app-go/fib.Fibonacci"),
              29200000000LL);
    CHECK_INT(self_ns(p[0], "runtime.memclrNoHeapPointers"), 310000000);
    /* go tool pprof -raw: Time 2021-07-16 13:10:30.776293402 UTC, duration_nanos. */
    CHECK_INT(p[0]->time_ns, 1626441030776293402LL);
    CHECK_INT(p[0]->duration_ns, 30156835758LL);
    CHECK_INT(p[0]->truncated_stacks, 0);
    free_all(p, n);
}

/* EXPECTED.md: large.cpu 24029 samples / 240.29e9 ns; time.Now flat 205.17 s. */
static void test_large(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("google-pprof__large.cpu.pb.gz"), "cpu", p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_NEAR(p[0]->samples, 24029, 0);
    CHECK_INT(p[0]->value_ns, 240290000000LL);
    CHECK_STR(top_self(p[0]), "time.Now");
    CHECK_INT(self_ns(p[0], "time.Now"), 205170000000LL);
    CHECK_INT(self_ns(p[0], "time.now"), 22910000000LL);
    CHECK_INT(total_ns(p[0], "main.next"), 217070000000LL);
    CHECK_INT(total_ns(p[0], "runtime.main"), 217160000000LL);
    free_all(p, n);
}

/* EXPECTED.md: labelframes 27220 ms; fmt.(*fmt).fmtInteger flat 4360 ms, cum 6200 ms. Its
 * flat here is 4380 ms: `go tool pprof -traces` shows two 10 ms samples whose leaf is
 * runtime.asyncPreempt right above it, which are its own (Go's preemption frame,
 * docs/decisions.md); its cum is unchanged. */
static void test_labelframes(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("pprofutils__labelframes.in.pprof"), NULL, p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_INT(p[0]->value_ns, 27220000000LL);
    CHECK_NEAR(p[0]->samples, 2722, 0);
    CHECK_STR(top_self(p[0]), "fmt.(*fmt).fmtInteger");
    CHECK_INT(self_ns(p[0], "fmt.(*fmt).fmtInteger"), 4380000000LL);
    CHECK_INT(self_ns(p[0], "runtime.asyncPreempt"), 0);
    CHECK_INT(total_ns(p[0], "fmt.(*fmt).fmtInteger"), 6200000000LL);
    CHECK_INT(self_ns(p[0], "runtime.mallocgc"), 2750000000LL);
    CHECK_INT(total_ns(p[0], "runtime.mallocgc"), 4220000000LL);
    CHECK_INT(total_ns(p[0], "fmt.Fprintf"), 18140000000LL);
    free_all(p, n);
}

/* EXPECTED.md: node-profile 190 samples. Its only sample type is samples/count; period type
 * cpu/nanoseconds with period 52631578 declares cpu, so value = 190 x 52631578 ns. */
static void test_node_profile(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("parca__node-profile.pb.gz"), NULL, p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_INT(p[0]->type, RT_PTYPE_CPU);
    CHECK_NEAR(p[0]->samples, 190, 0);
    CHECK_INT(p[0]->value_ns, 190LL * 52631578);
    CHECK_INT(p[0]->period_ns, 52631578);
    CHECK(p[0]->has_counts);
    /* go tool pprof names it "LazyCompile:*fib /usr/src/app/main.js:1": the line is dropped
     * (DESIGN §3: a frame's name never carries a line number, whoever wrote it) */
    CHECK_INT(self_ns(p[0], "LazyCompile:*fib /usr/src/app/main.js"), 190LL * 52631578);
    /* go tool pprof -raw: the root location 17 is unsymbolized in mapping 4,
     * /lib/x86_64-linux-gnu/libc-2.31.so; natives in /usr/local/bin/node. */
    CHECK_INT(total_ns(p[0], "libc-2.31.so.[unknown]"), 190LL * 52631578);
    CHECK_INT(total_ns(p[0], "node.[unknown]"), 190LL * 52631578);
    const struct rt_profile_stack *s = &p[0]->stacks[0];
    CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off]), "libc-2.31.so.[unknown]");
    CHECK_INT(p[0]->frames.count, 5);
    free_all(p, n);
}

/* fgprof: samples/count + time/nanoseconds, period type wallclock: wall.
 * go tool pprof -top parca__fgprof.pb.gz: Total 2104.39s, runtime.gopark flat 2036.93s. */
static void test_fgprof_wall(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("parca__fgprof.pb.gz"), NULL, p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n != 1)
        return;
    CHECK_INT(p[0]->type, RT_PTYPE_WALL);
    CHECK_NEAR((double)p[0]->value_ns, 2104.39e9, 1e-5);
    CHECK_NEAR((double)self_ns(p[0], "runtime.gopark"), 2036.93e9, 1e-5);
    CHECK_INT(p[0]->period_ns, 10101010);
    CHECK(p[0]->has_counts);
    free_all(p, n);
    CHECK_INT(ingest(PP("parca__fgprof.pb.gz"), "cpu", p, &n, &e), RT_ETYPE);
    CHECK(strstr(e.msg, "contradicts") != NULL);
}

/* Inlined lines become frames: go tool pprof -top -cum google-pprof__sample.cpu.pb.gz:
 * 1760ms total, math.Abs (inline) flat 110ms, runtime.mapiternext flat 1280 cum 1370 ms. */
static void test_sample_cpu_inline(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("google-pprof__sample.cpu.pb.gz"), NULL, p, &n, &e), 0);
    if (n != 1)
        return;
    CHECK_INT(p[0]->value_ns, 1760000000);
    CHECK_NEAR(p[0]->samples, 176, 0);
    CHECK_INT(self_ns(p[0], "math.Abs"), 110000000);
    CHECK_INT(self_ns(p[0], "runtime.mapiternext"), 1280000000);
    CHECK_INT(total_ns(p[0], "runtime.mapiternext"), 1370000000);
    CHECK_INT(total_ns(p[0], "main.busyLoop"), 1760000000);
    CHECK_INT(total_ns(p[0], "runtime.mapassign_fast64"), 130000000);
    free_all(p, n);
}

/* Unsymbolized: go tool pprof -top: cppbench 7.12s, [cppbench_server_main] flat 7.08s;
 * stripped-cpu 9.58s all in [pprof-example-app-go-stripped]. */
static void test_unsymbolized(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("google-pprof__cppbench.cpu_no_samples_type.pb.gz"), NULL, p, &n, &e),
              0);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_CPU);
        CHECK_INT(p[0]->value_ns, 7120000000LL);
        /* No samples/count: samples = value / period (10 ms). */
        CHECK(p[0]->has_counts);
        CHECK_NEAR(p[0]->samples, 712, 0);
        CHECK_INT(self_ns(p[0], "cppbench_server_main.[unknown]"), 7080000000LL);
        CHECK_INT(self_ns(p[0], "libc-2.15.so.[unknown]"), 40000000);
        CHECK_INT(p[0]->duration_ns, -1);
        free_all(p, n);
    }
    CHECK_INT(ingest(PP("parca__stripped-cpu.stripped.pprof"), NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->value_ns, 9580000000LL);
        CHECK_INT(p[0]->frames.count, 1);
        CHECK_STR(rt_profile_frame(p[0], 0), "pprof-example-app-go-stripped.[unknown]");
        free_all(p, n);
    }
}

/* cpu/nanoseconds only with period 0: stored, but without counts. go tool pprof -top:
 * two-stacks 368.42ms, PcNotCovered 315.79ms; single-stack runtime.futex 52.63ms. */
static void test_value_without_counts(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(ingest(PP("parca__two-stacks.pb.gz"), NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_CPU);
        CHECK(!p[0]->has_counts);
        CHECK_NEAR(p[0]->samples, 0, 0);
        CHECK_INT(p[0]->value_ns, 368421046);
        CHECK_INT(self_ns(p[0], "PcNotCovered"), 315789468);
        CHECK_INT(total_ns(p[0], "unwind failed"), 368421046);
        free_all(p, n);
    }
    CHECK_INT(ingest(PP("parca__single-stack.pb.gz"), NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->value_ns, 52631578);
        CHECK_STR(top_self(p[0]), "runtime.futex");
        free_all(p, n);
    }
}

/* Every other file in ../shared/data/pprof: accepted, or refused with its documented reason. */
static void test_every_file_decision(void)
{
    static const struct {
        const char *file;
        const char *type;   /* type= of the upload */
        int rc;
        const char *msg;    /* substring of the message */
        double value_s;     /* total value when accepted (go tool pprof -top) */
    } cases[] = {
        /* Go CPU profiles (go tool pprof -top totals). */
        {"gdu__default.pgo", NULL, 0, NULL, 134.0},
        {"parca__labels.pb.gz", NULL, 0, NULL, 1.73},
        {"pprofutils__anon.in.pprof", NULL, 0, NULL, 63.85},
        /* Heap, allocation and contention profiles: refused naming their sample types. */
        {"google-pprof__go.nomappings.crash.pb.gz", NULL, RT_ETYPE, "alloc_objects/count", 0},
        {"parca__alloc_objects.pb.gz", NULL, RT_ETYPE, "alloc_space/bytes", 0},
        {"parca__alloc_space_delta.pb.gz", NULL, RT_ETYPE, "inuse_space/bytes", 0},
        {"pprofutils__heapage.in.pprof", NULL, RT_ETYPE, "inuse_objects/count", 0},
        {"pprofutils__avg.in.pprof", NULL, RT_ETYPE, "contentions/count, delay/nanoseconds", 0},
        {"parca__alloc_objects.pb.gz", "cpu", RT_ETYPE, "alloc_space/bytes", 0},
        /* samples/count with period 0: the values are unknown. */
        {"parca__no-python.pb.gz", NULL, RT_ETYPE, "period 0", 0},
        {"parca__profile-with-labels.pb.gz", NULL, RT_ETYPE, "period 0", 0},
        {"parca__no-python.pb.gz", "wall", RT_ETYPE, "contradicts", 0},
        /* Empty type and unit strings: nothing declared. */
        {"parca__normalizer-profile.pb.gz", NULL, RT_ETYPE, "undeclared", 0},
        {"parca__normalizer-profile.pb.gz", "cpu", RT_ETYPE, "undeclared", 0},
        /* samples/count, empty period type, period 0: type= would declare it, but no period. */
        {"pprofutils__folded.out.pprof", NULL, RT_ETYPE, "cannot tell cpu from wall", 0},
        {"pprofutils__folded.out.pprof", "cpu", RT_ETYPE, "period 0", 0},
        /* Legacy formats. */
        {"legacy/google-pprof__cppbench.cpu", NULL, RT_EFORMAT, "go tool pprof -proto", 0},
        {"legacy/google-pprof__gobench.cpu", NULL, RT_EFORMAT, "go tool pprof -proto", 0},
        {"legacy/google-pprof__java.cpu", "cpu", RT_EFORMAT, "go tool pprof -proto", 0},
        {"legacy/google-pprof__gobench.heap", NULL, RT_EFORMAT, "legacy", 0},
        {"legacy/google-pprof__java.heap", NULL, RT_EFORMAT, "legacy", 0},
        {"legacy/google-pprof__java.contention", NULL, RT_EFORMAT, "legacy", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[256];
        struct rt_profile *p[2];
        size_t n;
        struct rt_error e;
        snprintf(path, sizeof(path), "../shared/data/pprof/%s", cases[i].file);
        int rc = ingest(path, cases[i].type, p, &n, &e);
        if (rc != cases[i].rc)
            fprintf(stderr, "%s: rc %d (%s)\n", cases[i].file, rc, e.msg);
        CHECK_INT(rc, cases[i].rc);
        if (rc == 0) {
            CHECK_INT(n, 1);
            CHECK_NEAR((double)p[0]->value_ns, cases[i].value_s * 1e9, 1e-9);
            free_all(p, n);
        } else if (cases[i].msg && !strstr(e.msg, cases[i].msg)) {
            fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", cases[i].file, e.msg,
                    cases[i].msg);
            CHECK(0);
        }
    }
}

/* Params: metadata copied into each profile, start and duration override the pprof's. */
static void test_params_metadata(void)
{
    size_t len;
    char *body = slurp(PP("parca__fib.pb.gz"), &len);
    struct rt_ingest_params q;
    rt_ingest_params_init(&q);
    q.service = "shop";
    q.instance = "web-1";
    q.runtime = "go";
    q.runtime_version = "1.21";
    q.sdk_version = "0.1.0";
    q.version = "v42";
    q.profile_id = "4b1c2d3e-0000-4000-8000-000000000001";
    q.start_ns = 1700000000000000000LL;
    q.duration_ns = 60000000000LL;
    q.thread_cpu_ns = 123;
    q.process_cpu_ns = 456;
    struct rt_profile *p[2];
    size_t n = 0;
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(body, len, &q, NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_STR(p[0]->service, "shop");
        CHECK_STR(p[0]->instance, "web-1");
        CHECK_STR(p[0]->runtime, "go");
        CHECK_STR(p[0]->runtime_version, "1.21");
        CHECK_STR(p[0]->sdk_version, "0.1.0");
        CHECK_STR(p[0]->version, "v42");
        CHECK_STR(p[0]->profile_id, "4b1c2d3e-0000-4000-8000-000000000001");
        CHECK_INT(p[0]->time_ns, 1700000000000000000LL);
        CHECK_INT(p[0]->duration_ns, 60000000000LL);
        CHECK_INT(p[0]->thread_cpu_ns, 123);
        CHECK_INT(p[0]->process_cpu_ns, 456);
        free_all(p, n);
    }
    q.type = "heap";
    CHECK_INT(rt_ingest_parse(body, len, &q, NULL, p, &n, &e), RT_ETYPE);
    CHECK(strstr(e.msg, "heap") != NULL);
    free(body);
}

int main(void)
{
    RUN(test_fib);
    RUN(test_large);
    RUN(test_labelframes);
    RUN(test_node_profile);
    RUN(test_fgprof_wall);
    RUN(test_sample_cpu_inline);
    RUN(test_unsymbolized);
    RUN(test_value_without_counts);
    RUN(test_every_file_decision);
    RUN(test_params_metadata);
    return TEST_DONE();
}
