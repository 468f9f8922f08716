/* Tests of the pprof decoder and type rules on hand-built protobuf: packed and unpacked
 * repeated fields, inlined lines, cpu+wall in one profile, type= contradictions, malformed
 * wire data, missing ids, deep stacks, and the limits. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/ingest_internal.h"
#include "pb_build.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "test.h"

static void free_all(struct rt_profile **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rt_profile_free(p[i]);
}

/* ---- Hand-built profiles ---- */

static const char *const STRS[] = {
    "", "samples", "count", "cpu", "nanoseconds", "main", "work", "leaf", "/usr/bin/app",
    "wall", "microseconds", "alloc_space", "bytes",
};
enum { S_SAMPLES = 1, S_COUNT, S_CPU, S_NS, S_MAIN, S_WORK, S_LEAF, S_APP, S_WALL, S_US,
       S_ALLOC, S_BYTES };

/* Variants of the hand-built profile. */
struct variant {
    int packed;
    int types;          /* 0 count+cpu, 1 cpu only, 2 count only, 3 count+cpu+wall(us), 4 alloc */
    int period_type;    /* 0 cpu/ns, 1 none, 2 wall/ns */
    uint64_t period;
    const char *str0;   /* replaces string_table[0] */
    int missing_fn;     /* location 1 calls function 9 */
    int missing_loc;    /* a sample calls location 9 */
    int bad_str;        /* function 1's name is string 99 */
    int extra_value;    /* a sample has one value too many */
};

/* Functions main, work, leaf; location 1 = leaf inlined into work, location 2 = main,
 * location 3 = unsymbolized in /usr/bin/app. Samples (leaf first): [1 2] x3, [3 2] x1. */
static void build(struct rt_buf *b, const struct variant *v)
{
    static const uint64_t fns1[] = {3, 2}, fns2[] = {1};
    uint64_t s1[] = {1, 2}, s2[] = {v->missing_loc ? 9 : 3, 2};
    uint64_t vals1[4], vals2[4];
    size_t nv = 0;
    rt_buf_init(b, 0);
    if (v->types == 0 || v->types == 2 || v->types == 3) {
        pb_value_type(b, 1, S_SAMPLES, S_COUNT);
        vals1[nv] = 3;
        vals2[nv++] = 1;
    }
    if (v->types == 0 || v->types == 1 || v->types == 3) {
        pb_value_type(b, 1, S_CPU, S_NS);
        vals1[nv] = 30000000;
        vals2[nv++] = 10000000;
    }
    if (v->types == 3) {
        pb_value_type(b, 1, S_WALL, S_US);
        vals1[nv] = 45000;
        vals2[nv++] = 15000;
    }
    if (v->types == 4) {
        pb_value_type(b, 1, S_ALLOC, S_BYTES);
        vals1[nv] = 4096;
        vals2[nv++] = 512;
    }
    pb_sample(b, s1, 2, vals1, nv + (v->extra_value ? 1 : 0), v->packed);
    pb_sample(b, s2, 2, vals2, nv, v->packed);
    pb_mapping(b, 1, S_APP);
    pb_location(b, 1, 1, v->missing_fn ? (const uint64_t[]){9} : fns1, v->missing_fn ? 1 : 2);
    pb_location(b, 2, 1, fns2, 1);
    pb_location(b, 3, 1, NULL, 0);
    pb_function(b, 1, v->bad_str ? 99 : S_MAIN);
    pb_function(b, 2, S_WORK);
    pb_function(b, 3, S_LEAF);
    if (v->str0)
        pb_bytes(b, 6, v->str0, strlen(v->str0));
    pb_strings(b, STRS + (v->str0 ? 1 : 0), sizeof(STRS) / sizeof(STRS[0]) - (v->str0 ? 1 : 0));
    pb_uint(b, 9, 1700000000000000000ULL);
    pb_uint(b, 10, 10000000000ULL);
    if (v->period_type != 1)
        pb_value_type(b, 11, v->period_type == 2 ? S_WALL : S_CPU, S_NS);
    pb_uint(b, 12, v->period);
}

static int parse_variant(const struct variant *v, const char *type, struct rt_profile **p,
                         size_t *n, struct rt_error *e)
{
    struct rt_buf b;
    struct rt_ingest_params q;
    build(&b, v);
    rt_ingest_params_init(&q);
    q.type = type;
    q.format = RT_FMT_PPROF;
    *n = 0;
    int rc = rt_ingest_parse(b.data, b.len, &q, NULL, p, n, e);
    rt_buf_cleanup(&b);
    return rc;
}

/* Checks the stacks of the hand-built profile: main;work;leaf x3 and main;app.[unknown] x1. */
static void check_basic(const struct rt_profile *p, int64_t unit_ns)
{
    CHECK_INT(p->nstacks, 2);
    if (p->nstacks != 2)
        return;
    const struct rt_profile_stack *s = &p->stacks[0];
    CHECK_INT(s->depth, 3);
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off]), "main");
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + 1]), "work");
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + 2]), "leaf");
    CHECK_INT(s->value_ns, 3 * unit_ns);
    s = &p->stacks[1];
    CHECK_INT(s->depth, 2);
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off]), "main");
    CHECK_STR(rt_profile_frame(p, p->frame_ids[s->off + 1]), "app.[unknown]");
    CHECK_INT(s->value_ns, unit_ns);
    CHECK_NEAR(p->samples, 4, 0);
    CHECK_INT(p->time_ns, 1700000000000000000LL);
    CHECK_INT(p->duration_ns, 10000000000LL);
}

static void test_packed_and_unpacked(void)
{
    for (int packed = 0; packed <= 1; packed++) {
        struct variant v = {.packed = packed, .period = 10000000};
        struct rt_profile *p[2];
        size_t n;
        struct rt_error e;
        CHECK_INT(parse_variant(&v, NULL, p, &n, &e), 0);
        CHECK_INT(n, 1);
        if (n == 1) {
            CHECK_INT(p[0]->type, RT_PTYPE_CPU);
            check_basic(p[0], 10000000);
            free_all(p, n);
        }
    }
}

static void test_cpu_and_wall(void)
{
    struct variant v = {.packed = 1, .types = 3, .period = 10000000};
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), 0);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_INT(p[0]->type, RT_PTYPE_CPU);
        CHECK_INT(p[1]->type, RT_PTYPE_WALL);
        check_basic(p[0], 10000000);
        check_basic(p[1], 15000000); /* 15000 microseconds */
        CHECK(p[1]->has_counts);
        free_all(p, n);
    }
    CHECK_INT(parse_variant(&v, "wall", p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_WALL);
        CHECK_INT(p[0]->value_ns, 60000000);
        free_all(p, n);
    }
    CHECK_INT(parse_variant(&v, "cpu", p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_CPU);
        CHECK_INT(p[0]->value_ns, 40000000);
        free_all(p, n);
    }
}

static void test_type_rules(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    /* count + cpu declared; type=wall contradicts it. */
    struct variant v = {.period = 10000000};
    CHECK_INT(parse_variant(&v, "wall", p, &n, &e), RT_ETYPE);
    CHECK(strstr(e.msg, "type=wall contradicts") != NULL);
    /* Count only, period type cpu: value = count x period. */
    v = (struct variant){.types = 2, .period = 20000000};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_CPU);
        check_basic(p[0], 20000000);
        CHECK_INT(p[0]->period_ns, 20000000);
        free_all(p, n);
    }
    CHECK_INT(parse_variant(&v, "wall", p, &n, &e), RT_ETYPE);
    /* Count only, period type wall. */
    v.period_type = 2;
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_WALL);
        free_all(p, n);
    }
    /* Count only, no period type: type= declares it; without it, refused. */
    v.period_type = 1;
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_ETYPE);
    CHECK_INT(parse_variant(&v, "wall", p, &n, &e), 0);
    if (n == 1) {
        CHECK_INT(p[0]->type, RT_PTYPE_WALL);
        check_basic(p[0], 20000000);
        free_all(p, n);
    }
    /* Count only with period 0: values unknown. */
    v = (struct variant){.types = 2, .period = 0};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_ETYPE);
    /* cpu only: samples = value / period. */
    v = (struct variant){.types = 1, .period = 10000000};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), 0);
    if (n == 1) {
        CHECK(p[0]->has_counts);
        CHECK_NEAR(p[0]->samples, 4, 0);
        CHECK_NEAR(p[0]->stacks[0].samples, 3, 0);
        free_all(p, n);
    }
    /* Other kinds: refused naming them. */
    v = (struct variant){.types = 4, .period = 1};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_ETYPE);
    CHECK(strstr(e.msg, "alloc_space/bytes") != NULL);
}

static void test_malformed_variants(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    struct variant v = {.period = 10000000, .missing_fn = 1};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "missing function id 9") != NULL);
    v = (struct variant){.period = 10000000, .missing_loc = 1};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "missing location id 9") != NULL);
    v = (struct variant){.period = 10000000, .bad_str = 1};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "string index 99 of Function.name is out of range") != NULL);
    v = (struct variant){.period = 10000000, .str0 = "x"};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "string_table[0] must be ''") != NULL);
    v = (struct variant){.period = 10000000, .extra_value = 1, .packed = 1};
    CHECK_INT(parse_variant(&v, NULL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "sample 0 has 3 values but the profile declares 2") != NULL);
}

static int parse_raw(const void *b, size_t len, struct rt_error *e)
{
    struct rt_profile *p[2];
    size_t n = 0;
    struct rt_ingest_params q;
    rt_ingest_params_init(&q);
    q.format = RT_FMT_PPROF;
    int rc = rt_ingest_parse(b, len, &q, NULL, p, &n, e);
    free_all(p, rc ? 0 : n);
    return rc;
}

static void test_malformed_wire(void)
{
    struct rt_error e;
    /* Empty body. */
    CHECK_INT(parse_raw("", 0, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "empty body") != NULL);
    /* A valid but empty sample_type list: no sample type. */
    struct rt_buf b;
    rt_buf_init(&b, 0);
    pb_bytes(&b, 6, "", 0);
    pb_uint(&b, 12, 10);
    CHECK_INT(parse_raw(b.data, b.len, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "no sample type") != NULL);
    rt_buf_cleanup(&b);
    /* Bad varint: eleven continuation bytes. */
    static const uint8_t badvar[] = {0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_INT(parse_raw(badvar, sizeof(badvar), &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "bad varint") != NULL);
    /* A varint cut off by the end of the body. */
    static const uint8_t cutvar[] = {0x60, 0x80};
    CHECK_INT(parse_raw(cutvar, sizeof(cutvar), &e), RT_EMALFORMED);
    /* A length running past the end. */
    static const uint8_t overrun[] = {0x0a, 0x7f, 0x08, 0x01};
    CHECK_INT(parse_raw(overrun, sizeof(overrun), &e), RT_EMALFORMED);
    /* Group wire type and field number 0. */
    static const uint8_t group[] = {0x0b, 0x0c};
    CHECK_INT(parse_raw(group, sizeof(group), &e), RT_EMALFORMED);
    /* Wrong wire type for sample. */
    static const uint8_t wrongwire[] = {0x10, 0x01};
    CHECK_INT(parse_raw(wrongwire, sizeof(wrongwire), &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "wire type 0") != NULL);
    /* Bad varint inside a Sample's packed values. */
    struct variant v = {.period = 10000000, .packed = 1};
    build(&b, &v);
    /* The first Sample: 12 <len> 0a 02 01 02 12 <len> ...: break the value bytes. */
    uint8_t *d = (uint8_t *)b.data;
    size_t i = 0;
    while (i < b.len && d[i] != 0x12)
        i++;
    CHECK(i + 8 < b.len);
    d[i + 7] = 0xff; /* makes the packed value run past its field */
    d[i + 8] = 0xff;
    CHECK_INT(parse_raw(b.data, b.len, &e), RT_EMALFORMED);
    rt_buf_cleanup(&b);
    /* Concatenated profiles: time_nanos twice. */
    build(&b, &v);
    pb_uint(&b, 9, 5);
    CHECK_INT(parse_raw(b.data, b.len, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "concatenated") != NULL);
    rt_buf_cleanup(&b);
    /* Every prefix of a valid profile is refused or parsed, never crashes. */
    build(&b, &v);
    int ok = 0;
    for (size_t len = 1; len < b.len; len++)
        ok += parse_raw(b.data, len, &e) == 0;
    CHECK(ok < (int)b.len);
    /* Every single-byte corruption is handled. */
    d = (uint8_t *)b.data;
    for (size_t k = 0; k < b.len; k++) {
        uint8_t old = d[k];
        d[k] ^= 0x5a;
        (void)parse_raw(b.data, b.len, &e);
        d[k] = old;
    }
    rt_buf_cleanup(&b);
}

/* A 10,000-frame pprof stack is stored truncated at the root side. */
static void test_deep_stack(void)
{
    enum { DEPTH = 10000 };
    static const char *const strs[] = {"", "samples", "count", "cpu", "nanoseconds"};
    struct rt_buf b;
    rt_buf_init(&b, 0);
    pb_value_type(&b, 1, 1, 2);
    pb_value_type(&b, 1, 3, 4);
    uint64_t *locs = malloc(DEPTH * sizeof(*locs));
    for (int i = 0; i < DEPTH; i++)
        locs[i] = (uint64_t)i + 1; /* leaf first: location 1 is the leaf */
    uint64_t vals[] = {1, 10000000};
    pb_sample(&b, locs, DEPTH, vals, 2, 1);
    char name[16];
    char (*names)[16] = malloc(DEPTH * sizeof(*names));
    for (int i = 0; i < DEPTH; i++) {
        uint64_t fn = (uint64_t)i + 1;
        pb_location(&b, fn, 0, &fn, 1);
        pb_function(&b, fn, 5 + (uint64_t)i);
        snprintf(names[i], sizeof(names[i]), "f%d", i + 1);
    }
    pb_strings(&b, strs, 5);
    for (int i = 0; i < DEPTH; i++)
        pb_bytes(&b, 6, names[i], strlen(names[i]));
    pb_value_type(&b, 11, 3, 4);
    pb_uint(&b, 12, 10000000);
    struct rt_profile *p[2];
    size_t n = 0;
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, NULL, p, &n, &e), 0);
    if (n == 1) {
        const struct rt_profile_stack *s = &p[0]->stacks[0];
        CHECK_INT(p[0]->truncated_stacks, 1);
        CHECK_INT(s->depth, RT_MAX_STACK_DEPTH);
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off]), RT_TRUNCATED_FRAME);
        snprintf(name, sizeof(name), "f%d", RT_MAX_STACK_DEPTH - 1);
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + 1]), name);
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + s->depth - 1]), "f1");
        CHECK_INT(p[0]->value_ns, 10000000);
        free_all(p, n);
    }
    free(names);
    free(locs);
    rt_buf_cleanup(&b);
}

static void test_limits(void)
{
    struct variant v = {.period = 10000000, .packed = 1};
    struct rt_buf b;
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    struct rt_ingest_limits lim;
    build(&b, &v);
    rt_ingest_limits_default(&lim);
    CHECK_INT(lim.max_compressed, 16 << 20);
    CHECK_INT(lim.max_decompressed, 256 << 20);
    CHECK_INT(lim.max_samples, 1000000);
    CHECK_INT(lim.max_locations, 1000000);
    CHECK_INT(lim.max_strings, 1000000);
    lim.max_samples = 1;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, &lim, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_samples") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_locations = 2;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, &lim, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_locations") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_strings = 5;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, &lim, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_strings") != NULL);
    rt_ingest_limits_default(&lim);
    lim.max_compressed = b.len - 1;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, &lim, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_compressed") != NULL);
    lim.max_compressed = b.len;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, &lim, p, &n, &e), 0);
    free_all(p, n);
    rt_buf_cleanup(&b);
}

/* ---- A minimal cpu/nanoseconds profile: functions named n1 and n2, one sample each ---- */

static int parse_mini_lim(const char *n1, const char *n2, uint64_t v1, uint64_t v2,
                          uint64_t duration, const struct rt_ingest_limits *lim,
                          struct rt_profile **p, size_t *n, struct rt_error *e)
{
    const char *strs[] = {"", "cpu", "nanoseconds", n1, n2};
    uint64_t l1 = 1, l2 = 2, f1 = 1, f2 = 2;
    struct rt_buf b;
    rt_buf_init(&b, 0);
    pb_value_type(&b, 1, 1, 2);
    pb_sample(&b, &l1, 1, &v1, 1, 1);
    pb_sample(&b, &l2, 1, &v2, 1, 1);
    pb_location(&b, 1, 0, &f1, 1);
    pb_location(&b, 2, 0, &f2, 1);
    pb_function(&b, 1, 3);
    pb_function(&b, 2, 4);
    pb_strings(&b, strs, 5);
    pb_uint(&b, 9, 1700000000000000000ULL);
    pb_uint(&b, 10, duration);
    pb_value_type(&b, 11, 1, 2);
    pb_uint(&b, 12, 10000000);
    struct rt_ingest_params q;
    rt_ingest_params_init(&q);
    *n = 0;
    rt_error_clear(e);
    int rc = rt_ingest_parse(b.data, b.len, &q, lim, p, n, e);
    rt_buf_cleanup(&b);
    return rc;
}

static int parse_mini(const char *n1, const char *n2, uint64_t v1, uint64_t v2,
                      uint64_t duration, struct rt_profile **p, size_t *n, struct rt_error *e)
{
    return parse_mini_lim(n1, n2, v1, v2, duration, NULL, p, n, e);
}

/* Two samples of INT64_MAX cpu/nanoseconds were accepted with value_ns saturated at INT64_MAX
 * (and windows then showed negative self_ns); a profile's total is now bounded by 2^62 ns. */
static void test_value_limit(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(parse_mini("a", "b", INT64_MAX, INT64_MAX, 10, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "sample 0") && strstr(e.msg, "4611686018427387904 ns (2^62 ns"));
    uint64_t half = (uint64_t)RT_PROFILE_MAX_VALUE_NS / 2;
    CHECK_INT(parse_mini("a", "b", half + 1, half, 10, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "sample 1") != NULL);
    CHECK_INT(parse_mini("a", "b", half, half, 10, p, &n, &e), 0);
    if (n == 1) {
        CHECK(p[0]->value_ns == RT_PROFILE_MAX_VALUE_NS);
        free_all(p, n);
    }
    /* A negative value stays malformed. */
    CHECK_INT(parse_mini("a", "b", (uint64_t)-5, 1, 10, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "negative value") != NULL);
}

/* A negative duration_nanos was stored as "unknown duration" with a 201. */
static void test_negative_duration(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(parse_mini("a", "b", 1, 1, (uint64_t)-60000000000LL, p, &n, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "negative duration") != NULL);
    CHECK_INT(parse_mini("a", "b", 1, 1, 0, p, &n, &e), 0); /* 0 = absent: unknown */
    if (n == 1) {
        CHECK_INT(p[0]->duration_ns, -1);
        free_all(p, n);
    }
}

/* A string table entry that is not valid UTF-8 ("caf\xe9", Latin-1) was stored as is and then
 * failed every JSON answer; names are repaired at ingest, each invalid byte U+FFFD. */
static void test_invalid_utf8_names(void)
{
    struct rt_profile *p[2];
    size_t n;
    struct rt_error e;
    CHECK_INT(parse_mini("caf\xe9", "ok\xc3\x28x", 10, 20, 10, p, &n, &e), 0);
    if (n == 1) {
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[p[0]->stacks[0].off]),
                  "caf\xef\xbf\xbd");
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[p[0]->stacks[1].off]),
                  "ok\xef\xbf\xbd(x");
        free_all(p, n);
    }
    /* Valid multi-byte names are untouched. */
    CHECK_INT(parse_mini("\xe4\xbd\xa0\xe5\xa5\xbd", "\xf0\x9f\x98\x80", 10, 20, 10, p, &n, &e), 0);
    if (n == 1) {
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[p[0]->stacks[0].off]),
                  "\xe4\xbd\xa0\xe5\xa5\xbd");
        free_all(p, n);
    }
    /* Repairs count against max_decompressed at 3 bytes per byte, before allocating: a
     * 170-byte body with a 70-byte invalid name fits 200 bytes, its repair (210) does not. */
    char bad[71];
    memset(bad, 0xff, 70);
    bad[70] = '\0';
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    lim.max_decompressed = 200;
    CHECK_INT(parse_mini_lim(bad, "b", 1, 1, 10, &lim, p, &n, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_decompressed") != NULL);
    lim.max_decompressed = 400;
    CHECK_INT(parse_mini_lim(bad, "b", 1, 1, 10, &lim, p, &n, &e), 0);
    free_all(p, n);
}

/* Go's preemption frame (frames.c): runtime.asyncPreempt as a leaf is the sample of the frame
 * beneath it; alone, or above deeper runtime frames, it stays. Three samples, leaf first:
 * [asyncPreempt, hot, main] x2, [asyncPreempt] x1, [asyncPreempt2, asyncPreempt, hot, main] x1;
 * and a 1,100-frame stack under an asyncPreempt leaf is still cut at 1,024. */
static void test_preempt_leaf(void)
{
    static const char *const strs[] = {"",     "cpu",  "nanoseconds", "runtime.asyncPreempt",
                                       "main.hot", "main.main", "runtime.asyncPreempt2"};
    struct rt_buf b;
    rt_buf_init(&b, 0);
    pb_value_type(&b, 1, 1, 2);
    uint64_t s1[] = {1, 2, 3}, s2[] = {1}, s3[] = {4, 1, 2, 3};
    uint64_t v2 = 20000000, v1 = 10000000;
    pb_sample(&b, s1, 3, &v2, 1, 1);
    pb_sample(&b, s2, 1, &v1, 1, 1);
    pb_sample(&b, s3, 4, &v1, 1, 1);
    for (uint64_t i = 1; i <= 4; i++) {
        pb_location(&b, i, 0, &i, 1);
        pb_function(&b, i, i == 4 ? 6 : i + 2);
    }
    pb_strings(&b, strs, 7);
    pb_value_type(&b, 11, 1, 2);
    pb_uint(&b, 12, 10000000);
    struct rt_profile *p[2];
    size_t n = 0;
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, NULL, p, &n, &e), 0);
    rt_buf_cleanup(&b);
    if (n != 1)
        return;
    CHECK_INT(p[0]->nstacks, 3);
    const struct rt_profile_stack *s = &p[0]->stacks[0];
    CHECK_INT(s->depth, 2);
    CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + 1]), "main.hot");
    CHECK_INT(s->value_ns, 20000000);
    s = &p[0]->stacks[1];
    CHECK_INT(s->depth, 1);
    CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off]), "runtime.asyncPreempt");
    s = &p[0]->stacks[2];
    CHECK_INT(s->depth, 4);
    CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + 2]), "runtime.asyncPreempt");
    CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + 3]), "runtime.asyncPreempt2");
    CHECK_INT(p[0]->value_ns, 40000000);
    free_all(p, n);

    enum { DEPTH = 1100 };
    static const char *const deep[] = {"", "cpu", "nanoseconds", "runtime.asyncPreempt", "f"};
    rt_buf_init(&b, 0);
    pb_value_type(&b, 1, 1, 2);
    uint64_t locs[DEPTH];
    for (int i = 0; i < DEPTH; i++)
        locs[i] = i == 0 ? 1 : 2;
    pb_sample(&b, locs, DEPTH, &v1, 1, 1);
    uint64_t f1 = 1, f2 = 2;
    pb_location(&b, 1, 0, &f1, 1);
    pb_location(&b, 2, 0, &f2, 1);
    pb_function(&b, 1, 3);
    pb_function(&b, 2, 4);
    pb_strings(&b, deep, 5);
    CHECK_INT(rt_ingest_parse(b.data, b.len, NULL, NULL, p, &n, &e), 0);
    rt_buf_cleanup(&b);
    if (n == 1) {
        s = &p[0]->stacks[0];
        CHECK_INT(p[0]->truncated_stacks, 1);
        CHECK_INT(s->depth, RT_MAX_STACK_DEPTH);
        CHECK_STR(rt_profile_frame(p[0], p[0]->frame_ids[s->off + s->depth - 1]), "f");
        free_all(p, n);
    }
}

/* One varint: its value and the bytes it took, or -1; read with only its bytes there and
 * with more bytes after it. */
static int read_varint(const uint8_t *b, size_t n, bool padded, uint64_t *v, size_t *used)
{
    uint8_t buf[32] = {0};
    memcpy(buf, b, n);
    struct rt__pb r = {buf, buf + (padded ? sizeof(buf) : n)};
    int rc = rt__pb_varint(&r, v);
    *used = (size_t)(r.p - buf);
    return rc;
}

static void test_varint_edges(void)
{
    const uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, (1ull << 21) - 1, 1ull << 35,
                             (1ull << 56) - 1, 1ull << 56, (1ull << 63) - 1, 1ull << 63,
                             UINT64_MAX};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        uint8_t b[10];
        size_t n = 0;
        for (uint64_t x = vals[i];; x >>= 7) {
            b[n++] = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0));
            if (x <= 0x7f)
                break;
        }
        for (int padded = 0; padded < 2; padded++) {
            uint64_t v = 0;
            size_t used = 0;
            CHECK_INT(read_varint(b, n, padded, &v, &used), 0);
            CHECK(v == vals[i]);
            CHECK_INT(used, n);
        }
    }
    /* a tenth byte above 1, ending the varint or going on (an eleventh byte cannot be
     * reached), and a varint cut short: refused either way */
    static const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0};
    uint64_t v;
    size_t used;
    for (int padded = 0; padded < 2; padded++) {
        CHECK_INT(read_varint(big, sizeof(big), padded, &v, &used), -1);
        CHECK_INT(read_varint(eleven, sizeof(eleven), padded, &v, &used), -1);
    }
    CHECK_INT(read_varint(big, 9, false, &v, &used), -1);
    /* the two-byte path: cut after its first byte is refused; a redundant zero byte is read
     * as protobuf's decoders read it */
    static const uint8_t two[] = {0xff, 0x00};
    CHECK_INT(read_varint(two, 1, false, &v, &used), -1);
    CHECK_INT(read_varint(two, 2, false, &v, &used), 0);
    CHECK(v == 127 && used == 2);
    /* keys of field 1 with each wire type: 0, 1, 2 and 5 read; 3, 4 (groups), 6, 7 refused */
    for (uint8_t w = 0; w < 8; w++) {
        uint8_t key = (uint8_t)(1 << 3 | w);
        struct rt__pb r = {&key, &key + 1};
        uint32_t field = 0, wire = 9;
        int rc = rt__pb_key(&r, &field, &wire);
        CHECK_INT(rc, w == 0 || w == 1 || w == 2 || w == 5 ? 0 : -1);
        CHECK_INT(field, 1);
        CHECK_INT(wire, w);
    }
}

/* A profile whose counts promise many names and stacks, and whose samples use few (5,000
 * empty mappings, a location of 5,000 empty lines no sample calls, 600 more samples of value
 * 0), keeps tables for what it holds: the reservations are given back after the samples
 * (rt_profile_fit). */
static void test_reservation_given_back(void)
{
    struct variant v = {.period = 10000000, .packed = 1};
    struct rt_buf b, loc;
    build(&b, &v);
    rt_buf_init(&loc, 0);
    pb_uint(&loc, 1, 4);
    for (int i = 0; i < 5000; i++) {
        pb_bytes(&loc, 4, "", 0);
        pb_bytes(&b, 3, "", 0);
    }
    for (int i = 0; i < 600; i++) /* reserve 2,048 stack slots; add no stack */
        pb_sample(&b, (const uint64_t[]){1, 2}, 2, (const uint64_t[]){0, 0}, 2, 1);
    pb_bytes(&b, 4, loc.data, loc.len);
    struct rt_profile *p[2];
    size_t n = 0;
    struct rt_ingest_params q;
    rt_ingest_params_init(&q);
    q.format = RT_FMT_PPROF;
    q.type = "cpu";
    struct rt_error e;
    CHECK_INT(rt_ingest_parse(b.data, b.len, &q, NULL, p, &n, &e), 0);
    CHECK_INT(n, 1);
    if (n == 1) {
        check_basic(p[0], 10000000);
        CHECK_INT(p[0]->frames.nslots, 64);
        CHECK_INT(p[0]->nstack_slots, 256);
    }
    free_all(p, n);
    rt_buf_cleanup(&loc);
    rt_buf_cleanup(&b);
}

int main(void)
{
    RUN(test_packed_and_unpacked);
    RUN(test_cpu_and_wall);
    RUN(test_type_rules);
    RUN(test_malformed_variants);
    RUN(test_malformed_wire);
    RUN(test_deep_stack);
    RUN(test_limits);
    RUN(test_value_limit);
    RUN(test_negative_duration);
    RUN(test_invalid_utf8_names);
    RUN(test_preempt_leaf);
    RUN(test_varint_edges);
    RUN(test_reservation_given_back);
    return TEST_DONE();
}
