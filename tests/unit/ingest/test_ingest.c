/* Tests of server/src/ingest/ingest.c: the empty-body decision (DESIGN §4), and the formats
 * that are recognized and refused with a conversion hint (V8 .cpuprofile / JSON, JFR), on the
 * real files of ../shared/data. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/producer.h"
#include "slurp.h"
#include "test.h"

/* Parses body with format fmt and type (NULL = absent), expecting no stacks and the given
 * duration; frees what it returns; *samples (may be NULL) gets the samples. */
static int parse(const void *body, size_t len, enum rt_ingest_format fmt, const char *type,
                 struct rt_error *e, double *samples)
{
    struct rt_ingest_params q;
    struct rt_profile *out[2];
    size_t n = 0;
    rt_ingest_params_init(&q);
    q.format = fmt;
    q.type = type;
    q.unit = "samples";
    q.period_ns = 10000000;
    q.duration_ns = 60000000000LL;
    rt_error_clear(e);
    int rc = rt_ingest_parse(body, len, &q, NULL, out, &n, e);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (samples)
            *samples = out[i]->samples;
        CHECK_INT(out[i]->duration_ns, 60000000000LL);
        CHECK_INT(out[i]->nstacks, 0);
        rt_profile_free(out[i]);
    }
    return rc;
}

/* DESIGN §4: a well-formed zero-sample profile with a duration is stored. An empty (or
 * comments-only) folded body is one, given type= (it used to be refused "empty body"). An
 * empty protobuf is a valid Profile without a sample type: still refused, as is a body that
 * says neither what it is nor its type. */
static void test_empty_body(void)
{
    struct rt_error e;
    double samples = -1;
    CHECK_INT(parse("", 0, RT_FMT_FOLDED, "cpu", &e, &samples), 0);
    CHECK_NEAR(samples, 0, 0);
    CHECK_INT(parse(NULL, 0, RT_FMT_FOLDED, "wall", &e, NULL), 0);
    CHECK_INT(parse("", 0, RT_FMT_AUTO, "cpu", &e, NULL), 0);
    CHECK_INT(parse("# idle\n\n", 8, RT_FMT_FOLDED, "cpu", &e, NULL), 0);
    CHECK_INT(parse("", 0, RT_FMT_FOLDED, NULL, &e, NULL), RT_ETYPE);
    CHECK(strstr(e.msg, "type=cpu or type=wall") != NULL);
    CHECK_INT(parse("", 0, RT_FMT_AUTO, NULL, &e, NULL), RT_EMALFORMED);
    CHECK(strstr(e.msg, "empty body") != NULL);
    CHECK_INT(parse("", 0, RT_FMT_PPROF, "cpu", &e, NULL), RT_EMALFORMED);
    CHECK(strstr(e.msg, "empty body") != NULL);
    /* An empty gzip member is an empty body too. */
    static const unsigned char gz_empty[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3,
                                             3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_INT(parse(gz_empty, sizeof(gz_empty), RT_FMT_FOLDED, "cpu", &e, NULL), 0);
    CHECK_INT(parse(gz_empty, sizeof(gz_empty), RT_FMT_AUTO, NULL, &e, NULL), RT_EMALFORMED);
}

/* Every file of dir (relative to ../shared/data) whose name ends with suffix is refused with
 * RT_EFORMAT and a message containing want, undeclared and (unless only_sniffed) declared
 * folded, with or without type=; only_sniffed: declared folded, it is read as folded text
 * (which a JSON document is not: RT_EMALFORMED or, without type=, RT_ETYPE). */
static int refuse_dir(const char *dir, const char *suffix, const char *want, bool only_sniffed)
{
    char path[512];
    snprintf(path, sizeof(path), "../shared/data/%s", dir);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    int files = 0;
    for (struct dirent *de; d && (de = readdir(d));) {
        size_t nl = strlen(de->d_name), sl = strlen(suffix);
        if (nl < sl || strcmp(de->d_name + nl - sl, suffix) != 0)
            continue;
        snprintf(path, sizeof(path), "../shared/data/%s/%s", dir, de->d_name);
        size_t n = 0;
        char *body = slurp(path, &n);
        static const enum rt_ingest_format fmts[] = {RT_FMT_AUTO, RT_FMT_FOLDED};
        for (size_t f = 0; body && f < 2; f++)
            for (int t = 0; t < 2; t++) {
                struct rt_error e;
                int rc = parse(body, n, fmts[f], t ? "cpu" : NULL, &e, NULL);
                if (only_sniffed && fmts[f] == RT_FMT_FOLDED) {
                    CHECK_INT(rc, t ? RT_EMALFORMED : RT_ETYPE);
                    continue;
                }
                if (rc != RT_EFORMAT || !strstr(e.msg, want))
                    fprintf(stderr, "%s (format %d, type %d): %d %s\n", de->d_name, (int)fmts[f],
                            t, rc, e.msg);
                CHECK_INT(rc, RT_EFORMAT);
                CHECK(strstr(e.msg, want) != NULL);
            }
        free(body);
        files++;
    }
    if (d)
        closedir(d);
    return files;
}

/* A JFR recording is read as JFR whatever the upload declared (its magic "FLR\0" can be no
 * folded text nor pprof), gzip or not: every recording of ../shared/data/other/jfr gives
 * profiles (their values: test_jfr.c). format=jfr on a body that is no recording is malformed. */
static void test_jfr_sniffed(void)
{
    static const char *const files[] = {
        "jfr-parser__cortex-dev-01__kafka-0__cpu__0.jfr.gz",
        "jfr-parser__cortex-dev-01__kafka-0__cpu_lock_alloc__0.jfr.gz",
        "jfr-parser__dd-trace-java.jfr.gz", "speedscope__heavy.jfr"};
    static const enum rt_ingest_format fmts[] = {RT_FMT_AUTO, RT_FMT_FOLDED, RT_FMT_PPROF,
                                                 RT_FMT_JFR};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "../shared/data/other/jfr/%s", files[i]);
        size_t n = 0;
        char *body = slurp(path, &n);
        CHECK(body != NULL);
        for (size_t f = 0; body && f < 4; f++) {
            struct rt_ingest_params q;
            struct rt_profile *out[2];
            size_t nout = 0;
            struct rt_error e;
            rt_ingest_params_init(&q);
            q.format = fmts[f];
            q.period_ns = 10000000; /* the cpu_lock_alloc recording states none (test_jfr.c) */
            int rc = rt_ingest_parse(body, n, &q, NULL, out, &nout, &e);
            if (rc)
                fprintf(stderr, "%s (format %d): %s\n", files[i], (int)fmts[f], e.msg);
            CHECK_INT(rc, 0);
            CHECK(nout >= 1);
            for (size_t k = 0; k < nout; k++)
                rt_profile_free(out[k]);
        }
        free(body);
    }
    struct rt_ingest_params q;
    struct rt_profile *out[2];
    size_t nout = 0;
    struct rt_error e;
    rt_ingest_params_init(&q);
    q.format = RT_FMT_JFR;
    CHECK_INT(rt_ingest_parse("main;x 1\n", 9, &q, NULL, out, &nout, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "not a JFR recording") != NULL);
}

/* A Chrome/V8 .cpuprofile (JSON) said "folded stacks need type=" (or "line 1 has no count").
 * It now names the format and how to convert it. */
static void test_other_formats_refused(void)
{
    CHECK_INT(refuse_dir("cpuprofile", ".cpuprofile", "V8 .cpuprofile / JSON profiles are not "
                                                      "accepted", true),
              5);
    CHECK_INT(refuse_dir("other/chrome", ".json", "the Node SDK converts .cpuprofile to pprof",
                         true),
              1);
    struct rt_error e;
    CHECK_INT(parse("  [{\"a\": 1}]", 12, RT_FMT_AUTO, "cpu", &e, NULL), RT_EFORMAT);
    /* Folded stacks that merely start with a bracket are still folded stacks. */
    const char *brackets = "[unknown];main 5\n{anonymous};x 1\n";
    struct rt_ingest_params q;
    struct rt_profile *out[2];
    size_t n = 0;
    rt_ingest_params_init(&q);
    q.type = "cpu";
    q.unit = "nanoseconds";
    CHECK_INT(rt_ingest_parse(brackets, strlen(brackets), &q, NULL, out, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(out[0]->nstacks, 2);
        rt_profile_free(out[0]);
    }
    /* format=pprof: JSON is left to the protobuf decoder (no heuristics on declared pprof). */
    CHECK_INT(parse("{\"nodes\":[]}", 12, RT_FMT_PPROF, NULL, &e, NULL), RT_EMALFORMED);
    /* Declared folded text is never sniffed: stackcollapse-perf's "[0x7f3a] libc" and
     * "[[vdso]]" frames, and '{' then '"', looked like JSON (issue #13, 5). */
    const char *perf = "[0x7f3a] libc;work 3\n[[vdso]];clock 2\n{\"k\"};x 1\n";
    n = 0;
    CHECK_INT(rt_ingest_parse(perf, strlen(perf), &q, NULL, out, &n, &e), 0); /* undeclared */
    if (n == 1)
        rt_profile_free(out[0]);
    const char *obj = "{\"k\"};x 1\n"; /* undeclared, this does look like JSON */
    CHECK_INT(rt_ingest_parse(obj, strlen(obj), &q, NULL, out, &n, &e), RT_EFORMAT);
    q.format = RT_FMT_FOLDED;
    CHECK_INT(rt_ingest_parse(obj, strlen(obj), &q, NULL, out, &n, &e), 0);
    if (n == 1)
        rt_profile_free(out[0]);
    CHECK_INT(rt_ingest_parse(perf, strlen(perf), &q, NULL, out, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(out[0]->nstacks, 3);
        CHECK_STR(rt_profile_frame(out[0], out[0]->frame_ids[out[0]->stacks[0].off]),
                  "[0x7f3a] libc");
        rt_profile_free(out[0]);
    }
}

/* Parses folded text "main;work 4" (4 samples of 10 ms, 40 ms sampled) as a cpu upload from
 * runtime (NULL = absent) over duration_ns with the OS figures given (-1 = absent). */
static int parse_cpu(const char *runtime, int64_t duration_ns, int64_t thread_cpu_ns,
                     int64_t process_cpu_ns, struct rt_profile **out, struct rt_error *e)
{
    struct rt_ingest_params q;
    struct rt_profile *ps[2];
    size_t n = 0;
    rt_ingest_params_init(&q);
    q.format = RT_FMT_FOLDED;
    q.type = "cpu";
    q.period_ns = 10000000;
    q.runtime = runtime;
    q.duration_ns = duration_ns;
    q.thread_cpu_ns = thread_cpu_ns;
    q.process_cpu_ns = process_cpu_ns;
    rt_error_clear(e);
    int rc = rt_ingest_parse("main;work 4\n", 12, &q, NULL, ps, &n, e);
    if (rc == 0) {
        CHECK_INT(n, 1);
        *out = ps[0];
    }
    return rc;
}

/* Who sampled a profile and its CPU factor are settled at ingest (rt/producer.h, DESIGN §7):
 * a Node upload is scaled to its main thread's OS figure, a Go one only compared, an upload
 * of an unknown runtime neither; and OS figures past the wall clock are refused. */
static void test_producer_and_os_cpu(void)
{
    struct rt_error e;
    struct rt_profile *p = NULL;
    CHECK_INT(parse_cpu("node", 1000000000LL, 30000000, 90000000, &p, &e), 0);
    CHECK_STR(p->producer->name, "roottrace-node");
    CHECK_NEAR(p->cpu_scale, 0.75, 1e-15); /* 30 ms of thread CPU over 40 ms sampled */
    CHECK_INT(p->thread_cpu_ns, 30000000);
    CHECK_INT(p->process_cpu_ns, 90000000);
    rt_profile_free(p);
    CHECK_INT(parse_cpu("go", 1000000000LL, -1, 30000000, &p, &e), 0);
    CHECK_STR(p->producer->name, "roottrace-go");
    CHECK_NEAR(p->cpu_scale, 1, 0);
    rt_profile_free(p);
    CHECK_INT(parse_cpu(NULL, 1000000000LL, 30000000, -1, &p, &e), 0);
    CHECK_STR(p->producer->name, "");
    CHECK_NEAR(p->cpu_scale, 1, 0);
    rt_profile_free(p);
    /* a Node profile whose /proc read failed: sampled CPU, unchecked */
    CHECK_INT(parse_cpu("node", 1000000000LL, -1, 90000000, &p, &e), 0);
    CHECK_NEAR(p->cpu_scale, 1, 0);
    rt_profile_free(p);
    /* one thread cannot run 2 s in a 1 s profile; a process may, up to 1,024 CPUs */
    CHECK_INT(parse_cpu("node", 1000000000LL, 2000000000LL, -1, &p, &e), RT_EINVAL);
    CHECK(strstr(e.msg, "thread_cpu_ns 2000000000 exceeds") != NULL);
    CHECK_INT(parse_cpu("go", 1000000000LL, -1, 2000000000LL, &p, &e), 0);
    rt_profile_free(p);
    CHECK_INT(parse_cpu("go", 1000000000LL, -1, 1100LL * 1000000000LL, &p, &e), RT_EINVAL);
    CHECK(strstr(e.msg, "process_cpu_ns") != NULL);
    /* without a duration there is nothing to check against */
    CHECK_INT(parse_cpu("node", -1, 2000000000LL, -1, &p, &e), 0);
    rt_profile_free(p);
}

int main(void)
{
    RUN(test_empty_body);
    RUN(test_other_formats_refused);
    RUN(test_jfr_sniffed);
    RUN(test_producer_and_os_cpu);
    return TEST_DONE();
}
