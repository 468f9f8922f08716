/* Tests of export: pprof that ingest reads back to the same profile, folded text that ingest
 * reads back with unit=nanoseconds, and speedscope JSON checked with jansson. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt/buf.h"
#include "rt/err.h"
#include "rt/export.h"
#include "rt/ingest.h"
#include "test.h"

static struct rt_profile *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char body[2 << 20];
    size_t n = fread(body, 1, sizeof(body), f);
    fclose(f);
    struct rt_profile *out[2];
    size_t nout = 0;
    struct rt_error e;
    if (rt_ingest_parse(body, n, NULL, NULL, out, &nout, &e) || nout != 1) {
        fprintf(stderr, "%s: %s\n", path, e.msg);
        return NULL;
    }
    return out[0];
}

static struct rt_profile *reparse(const struct rt_buf *b, const char *type, const char *unit)
{
    struct rt_ingest_params q;
    rt_ingest_params_init(&q);
    q.type = type;
    q.unit = unit;
    if (unit) /* folded text, declared as text/plain is */
        q.format = RT_FMT_FOLDED;
    struct rt_profile *out[2];
    size_t nout = 0;
    struct rt_error e;
    if (rt_ingest_parse(b->data, b->len, &q, NULL, out, &nout, &e) || nout != 1) {
        fprintf(stderr, "reparse: %s\n", e.msg);
        return NULL;
    }
    return out[0];
}

/* Every stack of a is in b with the same frames (by name), samples and value. */
static int same_stacks(const struct rt_profile *a, const struct rt_profile *b)
{
    if (a->nstacks != b->nstacks)
        return 0;
    uint32_t ids[RT_MAX_STACK_DEPTH];
    for (size_t i = 0; i < a->nstacks; i++) {
        const struct rt_profile_stack *s = &a->stacks[i];
        for (uint32_t k = 0; k < s->depth; k++) {
            const char *name = rt_profile_frame(a, a->frame_ids[s->off + k]);
            int64_t id = rt_intern_find(&b->frames, rt_str_from(name));
            if (id < 0)
                return 0;
            ids[k] = (uint32_t)id;
        }
        size_t j = 0;
        for (; j < b->nstacks; j++)
            if (b->stacks[j].depth == s->depth &&
                memcmp(b->frame_ids + b->stacks[j].off, ids, s->depth * sizeof(*ids)) == 0)
                break;
        if (j == b->nstacks || b->stacks[j].value_ns != s->value_ns ||
            fabs(b->stacks[j].samples - s->samples) > 1e-9)
            return 0;
    }
    return 1;
}

static void check_pprof_roundtrip(const char *path, const char *type)
{
    struct rt_profile *p = load(path);
    CHECK(p != NULL);
    if (!p)
        return;
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_pprof(p, &b), 0);
    CHECK(rt_ingest_is_gzip(b.data, b.len));
    struct rt_profile *q = reparse(&b, NULL, NULL);
    CHECK(q != NULL);
    if (q) {
        CHECK_STR(rt_ptype_name(q->type), type);
        CHECK_INT(q->type, p->type);
        CHECK_INT(q->value_ns, p->value_ns);
        CHECK_NEAR(q->samples, p->samples, 0);
        CHECK_INT(q->has_counts, p->has_counts);
        CHECK_INT(q->period_ns, p->period_ns);
        CHECK_INT(q->time_ns, p->time_ns);
        CHECK_INT(q->duration_ns, p->duration_ns);
        CHECK_INT(q->frames.count, p->frames.count);
        CHECK(same_stacks(p, q));
        rt_profile_free(q);
    }
    rt_buf_cleanup(&b);
    rt_profile_free(p);
}

static void test_pprof_roundtrip(void)
{
    check_pprof_roundtrip(SHARED_DATA("pprof/parca__fib.pb.gz"), "cpu");
    check_pprof_roundtrip(SHARED_DATA("pprof/pprofutils__labelframes.in.pprof"), "cpu");
    check_pprof_roundtrip(SHARED_DATA("pprof/parca__fgprof.pb.gz"), "wall");
    check_pprof_roundtrip(SHARED_DATA("pprof/parca__node-profile.pb.gz"), "cpu");
    /* No counts and no period: exported with the value only, read back the same. */
    check_pprof_roundtrip(SHARED_DATA("pprof/parca__two-stacks.pb.gz"), "cpu");
}

/* A built profile: truncated stack, odd frame names, metadata. */
static struct rt_profile *built(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_WALL);
    p->time_ns = 1764464400000000000LL;
    p->duration_ns = 60000000000LL;
    p->period_ns = 20000000;
    p->has_counts = true;
    struct rt_str a[] = {RT_STR_LIT("main"), RT_STR_LIT("a;b"), RT_STR_LIT("say \"hi\"")};
    struct rt_str c[] = {RT_STR_LIT("main"), RT_STR_LIT("\xe4\xbd\xa0\xe5\xa5\xbd"),
                         RT_STR_LIT("caf\xc3\xa9")}; /* valid UTF-8: ingest repairs invalid */
    rt_profile_add_stack(p, a, 3, 2, 40000000);
    rt_profile_add_stack(p, c, 3, 1, 20000000);
    struct rt_str deep[2000];
    char names[2000][16];
    for (int i = 0; i < 2000; i++) {
        snprintf(names[i], sizeof(names[i]), "d%d", i);
        deep[i] = rt_str_from(names[i]);
    }
    rt_profile_add_stack(p, deep, 2000, 3, 60000000);
    return p;
}

static void test_pprof_built(void)
{
    struct rt_profile *p = built();
    CHECK_INT(p->truncated_stacks, 1);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_pprof(p, &b), 0);
    struct rt_profile *q = reparse(&b, "wall", NULL);
    CHECK(q != NULL);
    if (q) {
        CHECK_INT(q->type, RT_PTYPE_WALL);
        CHECK_INT(q->value_ns, 120000000);
        CHECK_NEAR(q->samples, 6, 0);
        CHECK_INT(q->period_ns, 20000000);
        CHECK_INT(q->time_ns, 1764464400000000000LL);
        CHECK_INT(q->duration_ns, 60000000000LL);
        CHECK_INT(q->truncated_stacks, 0); /* already cut: 1024 frames incl. (truncated) */
        CHECK(same_stacks(p, q));
        rt_profile_free(q);
    }
    /* type=cpu contradicts the exported wall profile. */
    struct rt_ingest_params qp;
    rt_ingest_params_init(&qp);
    qp.type = "cpu";
    struct rt_profile *out[2];
    size_t n = 0;
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(b.data, b.len, &qp, NULL, out, &n, &e), RT_ETYPE);
    rt_buf_cleanup(&b);
    rt_profile_free(p);
}

static void test_folded(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    struct rt_str a[] = {RT_STR_LIT("main"), RT_STR_LIT("a;b"), RT_STR_LIT("x\ny")};
    struct rt_str c[] = {RT_STR_LIT("main"), RT_STR_LIT("run")};
    rt_profile_add_stack(p, a, 3, 2, 25);
    rt_profile_add_stack(p, c, 2, 1, 10);
    rt_profile_add_stack(p, c, 1, 1, 0); /* zero value: not written */
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_folded(p, &b), 0);
    CHECK_STR(b.data, "main;a:b;x y 25\nmain;run 10\n");
    rt_profile_free(p);
    rt_buf_cleanup(&b);

    /* Round trip of a real profile through folded with unit=nanoseconds. */
    p = load(SHARED_DATA("pprof/parca__fib.pb.gz"));
    CHECK(p != NULL);
    if (!p)
        return;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_folded(p, &b), 0);
    struct rt_profile *q = reparse(&b, "cpu", "nanoseconds");
    CHECK(q != NULL);
    if (q) {
        CHECK_INT(q->value_ns, 29740000000LL);
        CHECK_INT(q->nstacks, p->nstacks);
        CHECK_INT(q->frames.count, p->frames.count);
        rt_profile_free(q);
    }
    rt_buf_cleanup(&b);
    rt_profile_free(p);
}

/* rt_export_folded_frame of name, as a string (static buffer). */
static const char *folded_name(const char *name, size_t n)
{
    static char out[512];
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_folded_frame(&b, name, n), 0);
    snprintf(out, sizeof(out), "%s", b.data ? b.data : "");
    rt_buf_cleanup(&b);
    return out;
}

/* What a folded reader would misread is written so that it reads back whole (issue #13, 3):
 * flamegraph.pl takes "ends with 77" in a leaf for a count (jonhoo/inferno#164: "numbers at
 * the end of a line confuse it ... I need to escape semicolons"). */
static void test_folded_names(void)
{
    CHECK_STR(folded_name("pkg.(*T).run", 12), "pkg.(*T).run");
    CHECK_STR(folded_name("ends with 77", 12), "ends with_77");
    CHECK_STR(folded_name("x 7.5", 5), "x_7.5");
    CHECK_STR(folded_name("x 7.", 4), "x_7.");
    CHECK_STR(folded_name("v1.2.3", 6), "v1.2.3"); /* no blank before it: no count */
    CHECK_STR(folded_name("a 1.2.3", 7), "a 1.2.3"); /* two dots: no count either */
    CHECK_STR(folded_name("a;b", 3), "a:b");
    CHECK_STR(folded_name("x\ny", 3), "x y");
    CHECK_STR(folded_name("#pragma", 7), "\\x23pragma");
    CHECK_STR(folded_name(" lead ", 6), "_lead_");
    CHECK_STR(folded_name("app.js:12", 9), "app.js_12");
    CHECK_STR(folded_name("copy_[k]", 8), "copy-[k]");
    CHECK_STR(folded_name("", 0), "[empty]");
    CHECK_STR(folded_name("[[vdso]]", 8), "[[vdso]]");
}

/* A small deterministic generator (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* Per-function values of p: self (by leaf) and total (once per stack), keyed by the name
 * mapped through the folded writer when mapped, in a JSON object {name: [self, total]}. */
static json_t *function_values(const struct rt_profile *p, bool mapped)
{
    json_t *o = json_object();
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct rt_profile_stack *s = &p->stacks[i];
        json_t *seen = json_object();
        for (uint32_t k = 0; k < s->depth; k++) {
            uint32_t f = p->frame_ids[s->off + k];
            const char *name = mapped ? folded_name(p->frames.strs[f], p->frames.lens[f])
                                      : p->frames.strs[f];
            json_t *v = json_object_get(o, name);
            if (!v) {
                v = json_pack("[I, I]", (json_int_t)0, (json_int_t)0);
                json_object_set_new(o, name, v);
            }
            if (k + 1 == s->depth)
                json_array_set_new(v, 0, json_integer(json_integer_value(json_array_get(v, 0)) +
                                                      s->value_ns));
            if (!json_object_get(seen, name)) {
                json_object_set_new(seen, name, json_true());
                json_array_set_new(v, 1, json_integer(json_integer_value(json_array_get(v, 1)) +
                                                      s->value_ns));
            }
        }
        json_decref(seen);
    }
    return o;
}

/* Round trips give identical per-function values, over random names with every ugly piece
 * (issue #13): pprof -> folded -> pprof (the names as the folded writer writes them), and
 * folded -> pprof -> folded (the same text, line for line). */
static void test_folded_roundtrip_property(void)
{
    static const char *const pieces[] = {
        "main", "pkg.fn", "a b", "ends with 77", "x 7.5", "#hash", "semi;colon", "new\nline",
        "tab\there", "[[vdso]]", "[0x7f3a] libc", "{\"k\"}", "\xc3\xbcn\xc3\xaf", " lead",
        "trail ", "77", "app.js:12", "copy_[k]", "", "caf\xe9", "del\x7f"};
    const size_t np = sizeof(pieces) / sizeof(pieces[0]);
    int failures = 0;
    for (int iter = 0; iter < 300; iter++) {
        struct rt_profile *p0 = rt_profile_new(RT_PTYPE_CPU);
        p0->time_ns = 1764464400000000000LL;
        p0->duration_ns = 10000000000LL;
        p0->period_ns = 10000000;
        p0->has_counts = true;
        size_t nst = 1 + rng() % 5;
        for (size_t s = 0; s < nst; s++) {
            struct rt_str fr[6];
            char bufs[6][64];
            size_t depth = 1 + rng() % 6;
            for (size_t k = 0; k < depth; k++) {
                const char *a = pieces[rng() % np], *b = pieces[rng() % np];
                int n = snprintf(bufs[k], sizeof(bufs[k]), "%s%s", a, rng() % 3 ? "" : b);
                fr[k] = (struct rt_str){bufs[k], (size_t)n};
                if (rng() % 7 == 0 && n > 2) /* a NUL inside, as a pprof name may hold */
                    bufs[k][1] = '\0';
            }
            int64_t count = 1 + (int64_t)(rng() % 50);
            rt_profile_add_stack(p0, fr, depth, (double)count, count * 10000000);
        }
        /* pprof -> the stored profile -> folded -> profile */
        struct rt_buf b;
        rt_buf_init(&b, 0);
        CHECK_INT(rt_export_pprof(p0, &b), 0);
        struct rt_profile *p1 = reparse(&b, NULL, NULL);
        rt_buf_cleanup(&b);
        rt_buf_init(&b, 0);
        CHECK_INT(p1 ? rt_export_folded(p1, &b) : -1, 0);
        struct rt_profile *p2 = reparse(&b, "cpu", "nanoseconds");
        json_t *want = p1 ? function_values(p1, true) : NULL, *got = p2 ? function_values(p2, false)
                                                                         : NULL;
        if (!want || !got || !json_equal(want, got)) {
            if (failures++ < 3) {
                char *w = want ? json_dumps(want, JSON_SORT_KEYS) : NULL;
                char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
                fprintf(stderr, "iteration %d:\n  folded %s\n  want %s\n  got  %s\n", iter,
                        b.data ? b.data : "", w ? w : "-", g ? g : "-");
                free(w);
                free(g);
            }
        }
        /* folded -> pprof -> folded: the same lines */
        struct rt_buf b2, b3;
        rt_buf_init(&b2, 0);
        rt_buf_init(&b3, 0);
        CHECK_INT(p2 ? rt_export_pprof(p2, &b2) : -1, 0);
        struct rt_profile *p3 = reparse(&b2, NULL, NULL);
        CHECK_INT(p3 ? rt_export_folded(p3, &b3) : -1, 0);
        struct rt_buf b4;
        rt_buf_init(&b4, 0);
        CHECK_INT(p2 ? rt_export_folded(p2, &b4) : -1, 0);
        if (!b3.data || !b4.data || strcmp(b3.data, b4.data) != 0 || strcmp(b4.data, b.data))
            failures++;
        json_decref(want);
        json_decref(got);
        rt_profile_free(p0);
        rt_profile_free(p1);
        rt_profile_free(p2);
        rt_profile_free(p3);
        rt_buf_cleanup(&b);
        rt_buf_cleanup(&b2);
        rt_buf_cleanup(&b3);
        rt_buf_cleanup(&b4);
    }
    CHECK_INT(failures, 0);
}

/* A name stored before ingest repaired UTF-8 is still written as valid JSON (U+FFFD). */
static void test_speedscope_repairs_utf8(void)
{
    struct rt_profile *p = rt_profile_new(RT_PTYPE_CPU);
    struct rt_str st[] = {RT_STR_LIT("main"), RT_STR_LIT("bad\xff")};
    CHECK_INT(rt_profile_add_stack(p, st, 2, 1, 10), 0);
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_speedscope(p, "x", &b), 0);
    json_t *root = json_loadb(b.data, b.len, 0, NULL);
    json_t *frames = json_object_get(json_object_get(root, "shared"), "frames");
    CHECK_STR(json_string_value(json_object_get(json_array_get(frames, 1), "name")),
              "bad\xef\xbf\xbd");
    json_decref(root);
    rt_buf_cleanup(&b);
    rt_profile_free(p);
}

static void test_speedscope(void)
{
    struct rt_profile *p = built();
    struct rt_buf b;
    rt_buf_init(&b, 0);
    CHECK_INT(rt_export_speedscope(p, "shop \"cpu\"", &b), 0);
    json_error_t je;
    json_t *root = json_loadb(b.data, b.len, 0, &je);
    CHECK(root != NULL);
    if (!root) {
        fprintf(stderr, "speedscope JSON: %s\n", je.text);
        rt_buf_cleanup(&b);
        rt_profile_free(p);
        return;
    }
    CHECK_STR(json_string_value(json_object_get(root, "$schema")),
              "https://www.speedscope.app/file-format-schema.json");
    CHECK_STR(json_string_value(json_object_get(root, "name")), "shop \"cpu\"");
    json_t *frames = json_object_get(json_object_get(root, "shared"), "frames");
    CHECK_INT(json_array_size(frames), p->frames.count);
    CHECK_STR(json_string_value(json_object_get(json_array_get(frames, 2), "name")),
              "say \"hi\"");
    CHECK_STR(json_string_value(json_object_get(json_array_get(frames, 4), "name")),
              "caf\xc3\xa9");
    json_t *prof = json_array_get(json_object_get(root, "profiles"), 0);
    CHECK_STR(json_string_value(json_object_get(prof, "type")), "sampled");
    CHECK_STR(json_string_value(json_object_get(prof, "unit")), "nanoseconds");
    CHECK_INT(json_integer_value(json_object_get(prof, "endValue")), 120000000);
    json_t *samples = json_object_get(prof, "samples");
    json_t *weights = json_object_get(prof, "weights");
    CHECK_INT(json_array_size(samples), 3);
    CHECK_INT(json_array_size(weights), 3);
    CHECK_INT(json_integer_value(json_array_get(weights, 0)), 40000000);
    /* Samples are frame indices root first. */
    json_t *s0 = json_array_get(samples, 0);
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(frames, (size_t)json_integer_value(json_array_get(s0, 0))),
                  "name")),
              "main");
    CHECK_INT(json_array_size(json_array_get(samples, 2)), RT_MAX_STACK_DEPTH);
    json_decref(root);
    rt_buf_cleanup(&b);
    rt_profile_free(p);
}

int main(void)
{
    RUN(test_pprof_roundtrip);
    RUN(test_pprof_built);
    RUN(test_folded);
    RUN(test_folded_names);
    RUN(test_folded_roundtrip_property);
    RUN(test_speedscope);
    RUN(test_speedscope_repairs_utf8);
    return TEST_DONE();
}
