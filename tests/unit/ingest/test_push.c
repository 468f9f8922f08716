/* Tests of Pyroscope's Push envelope (push.c, DESIGN §12): a PushRequest packed by protobuf-c
 * itself and its Connect JSON form decode to the same series, labels and samples; gzip is
 * sniffed; malformed, mistyped and oversized envelopes are refused with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "push.pb-c.h"
#include "rt/ingest.h"
#include "test.h"

/* A PushRequest of two series: {__name__=process_cpu, service_name=shop} with samples
 * "AAA" (ID "id-1") and "BB" (no ID), and {service_name=other} with none. Caller frees. */
static uint8_t *pack_request(size_t *len)
{
    Roottrace__Push__LabelPair l1 = ROOTTRACE__PUSH__LABEL_PAIR__INIT,
                               l2 = ROOTTRACE__PUSH__LABEL_PAIR__INIT,
                               l3 = ROOTTRACE__PUSH__LABEL_PAIR__INIT;
    l1.name = "__name__", l1.value = "process_cpu";
    l2.name = "service_name", l2.value = "shop";
    l3.name = "service_name", l3.value = "other";
    Roottrace__Push__RawSample s1 = ROOTTRACE__PUSH__RAW_SAMPLE__INIT,
                               s2 = ROOTTRACE__PUSH__RAW_SAMPLE__INIT;
    s1.raw_profile = (ProtobufCBinaryData){3, (uint8_t *)"AAA"};
    s1.id = "id-1";
    s2.raw_profile = (ProtobufCBinaryData){2, (uint8_t *)"BB"};
    Roottrace__Push__LabelPair *ls1[] = {&l1, &l2}, *ls2[] = {&l3};
    Roottrace__Push__RawSample *ss1[] = {&s1, &s2};
    Roottrace__Push__RawProfileSeries a = ROOTTRACE__PUSH__RAW_PROFILE_SERIES__INIT,
                                      b = ROOTTRACE__PUSH__RAW_PROFILE_SERIES__INIT;
    a.n_labels = 2, a.labels = ls1, a.n_samples = 2, a.samples = ss1;
    b.n_labels = 1, b.labels = ls2;
    Roottrace__Push__RawProfileSeries *series[] = {&a, &b};
    Roottrace__Push__PushRequest r = ROOTTRACE__PUSH__PUSH_REQUEST__INIT;
    r.n_series = 2, r.series = series;
    *len = roottrace__push__push_request__get_packed_size(&r);
    uint8_t *out = malloc(*len);
    roottrace__push__push_request__pack(&r, out);
    return out;
}

static void check_request(const struct rt_ingest_push *p)
{
    CHECK_INT(p->nseries, 2);
    CHECK_INT(p->nsamples, 2);
    if (p->nseries != 2)
        return;
    const struct rt_ingest_push_series *s = &p->series[0];
    CHECK_STR(rt_ingest_push_label(s, "__name__"), "process_cpu");
    CHECK_STR(rt_ingest_push_label(s, "service_name"), "shop");
    CHECK(rt_ingest_push_label(s, "hostname") == NULL);
    CHECK_INT(s->nsamples, 2);
    if (s->nsamples == 2) {
        CHECK(s->samples[0].len == 3 && memcmp(s->samples[0].raw, "AAA", 3) == 0);
        CHECK_STR(s->samples[0].id, "id-1");
        CHECK(s->samples[1].len == 2 && s->samples[1].id == NULL);
    }
    CHECK_STR(rt_ingest_push_label(&p->series[1], "service_name"), "other");
    CHECK_INT(p->series[1].nsamples, 0);
}

static void test_proto_and_gzip(void)
{
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    size_t len;
    uint8_t *raw = pack_request(&len);
    struct rt_ingest_push p;
    struct rt_error e = {0};
    CHECK_INT(rt_ingest_push_decode(raw, len, false, &lim, &p, &e), 0);
    check_request(&p);
    rt_ingest_push_free(&p);
    /* gzip of the same */
    uLongf zlen = compressBound(len) + 32;
    uint8_t *gz = malloc(zlen);
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    z.next_in = raw, z.avail_in = (uInt)len, z.next_out = gz, z.avail_out = (uInt)zlen;
    deflate(&z, Z_FINISH);
    size_t glen = z.total_out;
    deflateEnd(&z);
    CHECK_INT(rt_ingest_push_decode(gz, glen, false, &lim, &p, &e), 0);
    check_request(&p);
    rt_ingest_push_free(&p);
    /* a decoding budget smaller than the message: refused, not allocated */
    lim.max_decompressed = 40;
    CHECK_INT(rt_ingest_push_decode(raw, len, false, &lim, &p, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "max_decompressed") != NULL);
    rt_ingest_limits_default(&lim);
    /* garbage and a truncated message */
    CHECK_INT(rt_ingest_push_decode("\xff\xff\xff", 3, false, &lim, &p, &e), RT_EMALFORMED);
    CHECK(strstr(e.msg, "PushRequest") != NULL);
    CHECK_INT(rt_ingest_push_decode(raw, len - 1, false, &lim, &p, &e), RT_EMALFORMED);
    /* a gzip cut short: refused, and nothing it inflated is kept (a fuzz find: it leaked) */
    CHECK_INT(rt_ingest_push_decode(gz, glen - 9, false, &lim, &p, &e), RT_EMALFORMED);
    rt_ingest_push_free(NULL);
    free(gz);
    free(raw);
}

static void test_json(void)
{
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    /* "AAA" and "BB" in base64; protobuf's JSON names (rawProfile, ID) */
    const char *doc =
        "{\"series\": [{\"labels\": [{\"name\": \"__name__\", \"value\": \"process_cpu\"},"
        " {\"name\": \"service_name\", \"value\": \"shop\"}],"
        " \"samples\": [{\"rawProfile\": \"QUFB\", \"ID\": \"id-1\"}, {\"raw_profile\": \"QkI=\"}]},"
        " {\"labels\": [{\"name\": \"service_name\", \"value\": \"other\"}]}]}";
    struct rt_ingest_push p;
    struct rt_error e = {0};
    CHECK_INT(rt_ingest_push_decode(doc, strlen(doc), true, &lim, &p, &e), 0);
    check_request(&p);
    rt_ingest_push_free(&p);
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"[1]", "a push is"},
        {"{\"series\": 3}", "a push is"},
        {"{\"series\": [{\"labels\": {}}]}", "arrays labels and samples"},
        {"{\"series\": [{\"labels\": [{\"name\": 1}]}]}", "label 0"},
        {"{\"series\": [{\"samples\": [{\"ID\": \"x\"}]}]}", "no rawProfile"},
        {"{\"series\": [{\"samples\": [{\"rawProfile\": \"%%%\"}]}]}", "not base64"},
        {"{\"series\": [", "not JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = rt_ingest_push_decode(bad[i].doc, strlen(bad[i].doc), true, &lim, &p, &e);
        if (rc != RT_EMALFORMED || !strstr(e.msg, bad[i].msg))
            fprintf(stderr, "case %zu: %d %s\n", i, rc, e.msg);
        CHECK_INT(rc, RT_EMALFORMED);
        CHECK(strstr(e.msg, bad[i].msg) != NULL);
    }
    /* 65 labels in one series: over the bound */
    char many[4096] = "{\"series\": [{\"labels\": [";
    for (int i = 0; i < 65; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many),
                 "%s{\"name\": \"l%d\", \"value\": \"v\"}", i ? ", " : "", i);
    strcat(many, "]}]}");
    CHECK_INT(rt_ingest_push_decode(many, strlen(many), true, &lim, &p, &e), RT_ETOOBIG);
    CHECK(strstr(e.msg, "64 labels") != NULL);
}

int main(void)
{
    RUN(test_proto_and_gzip);
    RUN(test_json);
    return TEST_DONE();
}
