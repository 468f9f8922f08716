/* Pyroscope's Connect unary Push envelope (DESIGN §12): a PushRequest of series, each with its
 * labels and raw pprof samples, as application/proto (decoded by protobuf-c from
 * server/proto/push.proto) or application/json (Connect's JSON mapping, raw_profile in base64),
 * gzip or not. The pprof inside is left to rt_ingest_parse. */
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "push.pb-c.h"
#include "rt/buf.h"
#include "rt/ingest.h"

/* Bounds of one request, beyond the body's own (DESIGN §4). */
#define MAX_SERIES 4096
#define MAX_LABELS 64
#define MAX_SAMPLES 4096 /* over all series */

/* protobuf-c's allocator, with a budget: a hostile envelope cannot make the decoder allocate
 * more than the body's decompressed limit. */
struct budget {
    size_t left;
};

static void *budget_alloc(void *ud, size_t n)
{
    struct budget *b = ud;
    size_t need = n + sizeof(max_align_t);
    if (need < n || need > b->left)
        return NULL;
    max_align_t *p = malloc(need);
    if (!p)
        return NULL;
    b->left -= need;
    memcpy(p, &need, sizeof(need));
    return p + 1;
}

static void budget_free(void *ud, void *p)
{
    struct budget *b = ud;
    if (!p)
        return;
    max_align_t *h = (max_align_t *)p - 1;
    size_t need;
    memcpy(&need, h, sizeof(need));
    b->left += need;
    free(h);
}

void rt_ingest_push_free(struct rt_ingest_push *p)
{
    if (!p)
        return;
    if (p->pb) {
        struct budget bud = {SIZE_MAX / 2};
        ProtobufCAllocator a = {budget_alloc, budget_free, &bud};
        /* every block carries its own size: the budget is only a counter here */
        roottrace__push__push_request__free_unpacked(p->pb, &a);
    }
    json_decref(p->json);
    for (size_t i = 0; i < p->nsamples; i++)
        if (p->json)
            free((void *)p->samples[i].raw);
    free(p->series);
    free(p->labels);
    free(p->samples);
    rt_buf_cleanup(&p->inflated);
    memset(p, 0, sizeof(*p));
}

/* Sizes the arrays of out for nseries series, nlabels labels and nsamples samples in all. */
static int alloc_arrays(struct rt_ingest_push *out, size_t nseries, size_t nlabels,
                        size_t nsamples, struct rt_error *err)
{
    if (nseries > MAX_SERIES || nsamples > MAX_SAMPLES)
        return rt_error_set(err, RT_ETOOBIG,
                            "a push holds at most %d series and %d samples (this one: %zu and "
                            "%zu)", MAX_SERIES, MAX_SAMPLES, nseries, nsamples);
    out->series = calloc(nseries ? nseries : 1, sizeof(*out->series));
    out->labels = calloc(nlabels ? nlabels : 1, sizeof(*out->labels));
    out->samples = calloc(nsamples ? nsamples : 1, sizeof(*out->samples));
    if (!out->series || !out->labels || !out->samples)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    return 0;
}

static int decode_proto(const uint8_t *d, size_t len, size_t budget_bytes,
                        struct rt_ingest_push *out, struct rt_error *err)
{
    struct budget bud = {budget_bytes};
    ProtobufCAllocator a = {budget_alloc, budget_free, &bud};
    Roottrace__Push__PushRequest *m = roottrace__push__push_request__unpack(&a, len, d);
    if (!m)
        return rt_error_set(err, bud.left < len ? RT_ETOOBIG : RT_EMALFORMED,
                            bud.left < len ? "the push request decodes past the limit of %zu "
                                             "bytes (max_decompressed)"
                                           : "the body is not a PushRequest protobuf (push.v1)",
                            budget_bytes);
    out->pb = m;
    size_t nl = 0, ns = 0;
    for (size_t i = 0; i < m->n_series; i++) {
        if (m->series[i]->n_labels > MAX_LABELS)
            return rt_error_set(err, RT_ETOOBIG, "series %zu has more than %d labels", i,
                                MAX_LABELS);
        nl += m->series[i]->n_labels;
        ns += m->series[i]->n_samples;
    }
    int rc = alloc_arrays(out, m->n_series, nl, ns, err);
    nl = ns = 0;
    for (size_t i = 0; !rc && i < m->n_series; i++) {
        const Roottrace__Push__RawProfileSeries *s = m->series[i];
        struct rt_ingest_push_series *o = &out->series[out->nseries++];
        o->labels = out->labels + nl;
        o->samples = out->samples + ns;
        for (size_t k = 0; k < s->n_labels; k++)
            out->labels[nl++] = (struct rt_ingest_push_label){s->labels[k]->name,
                                                              s->labels[k]->value};
        for (size_t k = 0; k < s->n_samples; k++)
            out->samples[ns++] = (struct rt_ingest_push_sample){
                s->samples[k]->raw_profile.data, s->samples[k]->raw_profile.len,
                s->samples[k]->id && *s->samples[k]->id ? s->samples[k]->id : NULL};
        o->nlabels = s->n_labels;
        o->nsamples = s->n_samples;
    }
    out->nsamples = ns;
    return rc;
}

/* A string member of a JSON object under either of two names (protobuf's JSON mapping accepts
 * the field's name and its lowerCamelCase). */
static const char *json_str2(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (!v && b)
        v = json_object_get(o, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Decodes one JSON sample {"rawProfile": base64, "ID": "..."} into *o. */
static int json_sample(json_t *js, size_t i, struct rt_ingest_push_sample *o,
                       struct rt_error *err)
{
    const char *b64 = json_str2(js, "rawProfile", "raw_profile");
    if (!json_is_object(js) || !b64)
        return rt_error_set(err, RT_EMALFORMED, "sample %zu has no rawProfile (base64)", i);
    size_t n = strlen(b64), got = 0;
    uint8_t *raw = malloc(n / 4 * 3 + 3);
    if (!raw)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    if (sodium_base642bin(raw, n / 4 * 3 + 3, b64, n, NULL, &got, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(raw);
        return rt_error_set(err, RT_EMALFORMED, "sample %zu: rawProfile is not base64", i);
    }
    const char *id = json_str2(js, "ID", "id");
    *o = (struct rt_ingest_push_sample){raw, got, id && *id ? id : NULL};
    return 0;
}

static int decode_json(const uint8_t *d, size_t len, struct rt_ingest_push *out,
                       struct rt_error *err)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)d, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rt_error_set(err, RT_EMALFORMED, "the body is not JSON: %s", je.text);
    out->json = root;
    json_t *series = json_object_get(root, "series");
    if (!json_is_object(root) || (series && !json_is_array(series)))
        return rt_error_set(err, RT_EMALFORMED,
                            "a push is {\"series\": [{\"labels\": [...], \"samples\": [...]}]}");
    size_t nl = 0, ns = 0, i;
    json_t *s;
    json_array_foreach(series, i, s) {
        json_t *labels = json_object_get(s, "labels"), *samples = json_object_get(s, "samples");
        if (!json_is_object(s) || (labels && !json_is_array(labels)) ||
            (samples && !json_is_array(samples)))
            return rt_error_set(err, RT_EMALFORMED,
                                "series %zu must be an object with arrays labels and samples", i);
        if (json_array_size(labels) > MAX_LABELS)
            return rt_error_set(err, RT_ETOOBIG, "series %zu has more than %d labels", i,
                                MAX_LABELS);
        nl += json_array_size(labels);
        ns += json_array_size(samples);
    }
    int rc = alloc_arrays(out, json_array_size(series), nl, ns, err);
    nl = 0;
    json_array_foreach(series, i, s) {
        if (rc)
            break;
        struct rt_ingest_push_series *o = &out->series[out->nseries++];
        o->labels = out->labels + nl;
        o->samples = out->samples + out->nsamples;
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(s, "labels"), k, v) {
            const char *name = json_str2(v, "name", NULL), *value = json_str2(v, "value", NULL);
            if (!name || !value) {
                rc = rt_error_set(err, RT_EMALFORMED,
                                  "series %zu, label %zu: {\"name\", \"value\"} strings", i, k);
                break;
            }
            out->labels[nl++] = (struct rt_ingest_push_label){name, value};
            o->nlabels++;
        }
        json_array_foreach(json_object_get(s, "samples"), k, v) {
            if (rc || (rc = json_sample(v, out->nsamples, &out->samples[out->nsamples], err)))
                break;
            out->nsamples++;
            o->nsamples++;
        }
    }
    return rc;
}

int rt_ingest_push_decode(const void *body, size_t len, bool json,
                          const struct rt_ingest_limits *lim, struct rt_ingest_push *out,
                          struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    rt_buf_init(&out->inflated, lim->max_decompressed);
    const uint8_t *d = body ? body : (const uint8_t *)"";
    if (len > lim->max_compressed)
        return rt_error_set(err, RT_ETOOBIG,
                            "body of %zu bytes exceeds the limit of %zu bytes (max_compressed)",
                            len, lim->max_compressed);
    int rc = 0;
    if (rt_ingest_is_gzip(d, len)) {
        rc = rt_ingest_gunzip(d, len, &out->inflated, err);
        d = out->inflated.data ? (const uint8_t *)out->inflated.data : (const uint8_t *)"";
        len = out->inflated.len;
    }
    if (rc == 0)
        rc = json ? decode_json(d, len, out, err)
                  : decode_proto(d, len, lim->max_decompressed, out, err);
    if (rc)
        rt_ingest_push_free(out);
    return rc;
}

const char *rt_ingest_push_label(const struct rt_ingest_push_series *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].name && strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}
