/* Upload routes benchmark (DESIGN §12): the shared real pprof files, repeated round-robin to a
 * target of compressed bytes, uploaded through rt_api_dispatch into a fresh SQLite store by
 * each route: POST /api/v1/profiles (the SDKs'), POST /ingest with a multipart body (as
 * pyroscope-go sends it) and POST /push.v1.PusherService/Push with a protobuf envelope (as
 * pyroscope-io sends it); and bare zlib gunzip of the same files, the reference, in one run.
 * Prints each route's time per compressed MB and its ratios to gunzip and to /api/v1/profiles. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bench.h"
#include "push.pb-c.h"
#include "rt/api.h"
#include "rt/buf.h"
#include "rt/store.h"

enum route { R_PROFILES, R_INGEST, R_PUSH, NROUTES };
static const char *const ROUTE_NAMES[NROUTES] = {"POST /api/v1/profiles", "POST /ingest (multipart)",
                                                 "POST Push (protobuf)"};
#define BOUNDARY "8f1c0de9a3bench"

struct input {
    const char *name;
    unsigned char *data;  /* the file as stored (gzip or raw pprof) */
    size_t len;
    struct rt_buf multipart;
};

/* The multipart body pyroscope-go would send for in: its profile part. */
static int make_multipart(struct input *in)
{
    rt_buf_init(&in->multipart, 0);
    return rt_buf_printf(&in->multipart,
                         "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"profile\"; "
                         "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream"
                         "\r\n\r\n") ||
           rt_buf_append(&in->multipart, in->data, in->len) ||
           rt_buf_printf(&in->multipart, "\r\n--" BOUNDARY "--\r\n");
}

/* A PushRequest of one series (service_name, hostname = the file) with in as its one sample,
 * id its ID; returns a malloc'd body. */
static uint8_t *make_push(const struct input *in, const char *id, size_t *len)
{
    Roottrace__Push__LabelPair a = ROOTTRACE__PUSH__LABEL_PAIR__INIT,
                               b = ROOTTRACE__PUSH__LABEL_PAIR__INIT;
    a.name = "service_name", a.value = "bench";
    b.name = "hostname", b.value = (char *)in->name;
    Roottrace__Push__LabelPair *labels[] = {&a, &b};
    Roottrace__Push__RawSample s = ROOTTRACE__PUSH__RAW_SAMPLE__INIT;
    s.raw_profile = (ProtobufCBinaryData){in->len, in->data};
    s.id = (char *)id;
    Roottrace__Push__RawSample *samples[] = {&s};
    Roottrace__Push__RawProfileSeries series = ROOTTRACE__PUSH__RAW_PROFILE_SERIES__INIT;
    series.n_labels = 2, series.labels = labels, series.n_samples = 1, series.samples = samples;
    Roottrace__Push__RawProfileSeries *all[] = {&series};
    Roottrace__Push__PushRequest r = ROOTTRACE__PUSH__PUSH_REQUEST__INIT;
    r.n_series = 1, r.series = all;
    *len = roottrace__push__push_request__get_packed_size(&r);
    uint8_t *out = malloc(*len);
    if (out)
        roottrace__push__push_request__pack(&r, out);
    return out;
}

/* Upload i of in through route r; returns the HTTP status. */
static int upload(struct rt_api_ctx *ctx, enum route r, const struct input *in, size_t i)
{
    int64_t start_s = BENCH_T0_NS / 1000000000 + (int64_t)i * 10;
    char start[32], until[32], id[48], name[160];
    snprintf(start, sizeof(start), "%lld", (long long)start_s);
    snprintf(until, sizeof(until), "%lld", (long long)start_s + 10);
    snprintf(id, sizeof(id), "bench-%zu", i);
    snprintf(name, sizeof(name), "bench{hostname=%s}", in->name);
    struct rt_api_param p[5];
    struct rt_api_req req = {.method = "POST", .params = p, .no_hold = true, .peer = "-"};
    uint8_t *push = NULL;
    if (r == R_PROFILES) {
        p[0] = (struct rt_api_param){"service", "bench"};
        p[1] = (struct rt_api_param){"instance", in->name};
        p[2] = (struct rt_api_param){"start", start};
        p[3] = (struct rt_api_param){"duration_s", "10"};
        p[4] = (struct rt_api_param){"profile_id", id}; /* as the SDKs send one */
        req.nparams = 5, req.path = "/api/v1/profiles";
        req.content_type = "application/octet-stream", req.body = in->data, req.body_len = in->len;
    } else if (r == R_INGEST) {
        p[0] = (struct rt_api_param){"name", name};
        p[1] = (struct rt_api_param){"from", start};
        p[2] = (struct rt_api_param){"until", until};
        p[3] = (struct rt_api_param){"spyName", "gospy"};
        req.nparams = 4, req.path = "/ingest";
        req.content_type = "multipart/form-data; boundary=" BOUNDARY;
        req.body = in->multipart.data, req.body_len = in->multipart.len;
    } else {
        size_t len = 0;
        push = make_push(in, id, &len);
        req.path = "/push.v1.PusherService/Push", req.content_type = "application/proto";
        req.body = push, req.body_len = len;
    }
    struct rt_api_resp resp;
    rt_api_dispatch(ctx, &req, &resp);
    int status = resp.status;
    if (status >= 300)
        fprintf(stderr, "%s %s: %d %s\n", ROUTE_NAMES[r], in->name, status,
                resp.json ? json_string_value(json_object_get(resp.json, "message")) : "");
    rt_api_resp_cleanup(&resp);
    free(push);
    return status;
}

/* Times one route over the schedule into a fresh store; ns, or -1 on a failed upload. */
static int64_t run_route(enum route r, struct input *in, size_t nin, size_t uploads)
{
    char dir[128];
    if (!bench_mkdtemp(dir, sizeof(dir), "routes"))
        return -1;
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    if (!s) {
        fprintf(stderr, "store: %s\n", err.msg);
        return -1;
    }
    struct rt_api_ctx ctx;
    rt_api_ctx_init(&ctx, s, NULL);
    ctx.trusted = true;
    int64_t t0 = bench_now_ns();
    int ok = 1;
    for (size_t i = 0; i < uploads && ok; i++)
        ok = upload(&ctx, r, &in[i % nin], i) < 300;
    int64_t ns = bench_now_ns() - t0;
    rt_store_free(s);
    bench_rm_tree(dir);
    return ok ? ns : -1;
}

/* Bare gunzip (memcpy for a raw file) of the same schedule: the reference. */
static int64_t run_gunzip(const struct input *in, size_t nin, size_t uploads)
{
    size_t cap = 512 << 20;
    unsigned char *out = malloc(cap);
    if (!out)
        return -1;
    int64_t t0 = bench_now_ns();
    for (size_t i = 0; i < uploads; i++) {
        const struct input *x = &in[i % nin];
        if (x->len > 2 && x->data[0] == 0x1f && x->data[1] == 0x8b) {
            z_stream z = {0};
            inflateInit2(&z, 47);
            z.next_in = x->data, z.avail_in = (uInt)x->len;
            z.next_out = out, z.avail_out = (uInt)cap;
            inflate(&z, Z_FINISH);
            inflateEnd(&z);
        } else {
            memcpy(out, x->data, x->len);
        }
    }
    int64_t ns = bench_now_ns() - t0;
    free(out);
    return ns;
}

int main(int argc, char **argv)
{
    double mb = 20;
    int rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--mb") == 0)
            mb = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    if (rounds < 1 || rounds > 50 || !(mb > 0)) {
        fprintf(stderr, "usage: %s [--mb N (20)] [--rounds R (5)]\n", argv[0]);
        return 2;
    }
    struct input in[BENCH_INGEST_NFILES];
    size_t nin = 0, total = 0;
    for (size_t i = 0; i < BENCH_INGEST_NFILES; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", bench_data_dir(), BENCH_INGEST_FILES[i]);
        in[nin].name = BENCH_INGEST_FILES[i];
        in[nin].data = bench_read_file(path, &in[nin].len);
        if (!in[nin].data || make_multipart(&in[nin])) {
            fprintf(stderr, "bench_routes: cannot read %s\n", path);
            return 1;
        }
        total += in[nin++].len;
    }
    size_t uploads = (size_t)(mb * 1048576.0 / ((double)total / (double)nin)) + 1;
    double bytes = 0;
    for (size_t i = 0; i < uploads; i++)
        bytes += (double)in[i % nin].len;
    printf("== upload routes: %zu uploads of %zu real pprof files, %.1f MB compressed, %d rounds "
           "(each round runs every route, in a rotating order; medians)\n",
           uploads, nin, bytes / 1048576.0, rounds);
    /* each round: the reference, then the routes rotated, so that no route always runs first */
    double ref[50], ms[NROUTES][50], ratio[NROUTES][50];
    for (int k = 0; k < rounds; k++) {
        ref[k] = (double)run_gunzip(in, nin, uploads) / 1e6;
        double base = 0;
        for (int j = 0; j < NROUTES; j++) {
            int r = (j + k) % NROUTES;
            int64_t ns = run_route((enum route)r, in, nin, uploads);
            if (ns < 0)
                return 1;
            ms[r][k] = (double)ns / 1e6;
        }
        base = ms[R_PROFILES][k];
        for (int r = 0; r < NROUTES; r++)
            ratio[r][k] = ms[r][k] / base;
    }
    double mbs = bytes / 1048576.0, refm = bench_median(ref, (size_t)rounds);
    printf("%-28s %10s %12s %14s\n", "route", "ms/MB", "x gunzip", "x /profiles");
    printf("%-28s %10.2f %12s %14s\n", "gunzip (reference)", refm / mbs, "1.00", "-");
    for (int r = 0; r < NROUTES; r++) {
        double m = bench_median(ms[r], (size_t)rounds);
        printf("%-28s %10.2f %12.2f %14.2f\n", ROUTE_NAMES[r], m / mbs, m / refm,
               bench_median(ratio[r], (size_t)rounds));
    }
    for (size_t i = 0; i < nin; i++) {
        free(in[i].data);
        rt_buf_cleanup(&in[i].multipart);
    }
    return 0;
}
