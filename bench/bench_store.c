/* Store benchmark: SQLite and ClickHouse side by side at multiples of the data of
 * bench_ingest and bench_diff. (a) Ingest: bench_ingest's uploads, parsed beforehand, through
 * rt_store_put_profiles alone (what a 201 costs beyond parsing), one upload per call from 1
 * and several threads; above 1x, 1x of them timed into a store prefilled with the rest.
 * (b) rt_query_diff over bench_diff's two 1 h windows, 1 instance per 1x (10 at 10x). */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_store.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/profile.h"
#include "rt/query.h"
#include "rt/store.h"

/* ---- Stores: open a fresh one per run, remove it afterwards ------------------------------ */

/* Where a run's store lives. */
struct place {
    enum backend be;
    char uri[4200];              /* what rt_store_open takes */
    char uri2[4200];             /* ClickHouse with --clickhouse2: the second node's, or "" */
    char dir[4096];              /* SQLite: the temporary directory */
    char db[96];                 /* ClickHouse: the database */
};

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p, (void)ud;
    return size * n;
}

/* Drops database db on the ClickHouse server of o (the store API has no drop); on every
 * server of the cluster when the settings name one (cluster=NAME is ours, not sent). */
static void ch_drop(const struct opts *o, const char *db)
{
    char url[2100], sql[240], settings[1024] = "", cluster[80] = "";
    for (const char *p = o->ch_settings; *p;) {
        size_t n = strcspn(p, "&");
        if (n > 8 && strncmp(p, "cluster=", 8) == 0)
            snprintf(cluster, sizeof(cluster), " ON CLUSTER %.*s", (int)(n - 8), p + 8);
        else if (n)
            snprintf(settings + strlen(settings), sizeof(settings) - strlen(settings), "%s%.*s",
                     *settings ? "&" : "", (int)n, p);
        p += n + (p[n] == '&');
    }
    snprintf(url, sizeof(url), "%s/%s%s", o->ch_base, *settings ? "?" : "", settings);
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s%s", db, cluster);
    CURL *c = curl_easy_init();
    if (!c)
        return;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, sql);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        fprintf(stderr, "bench_store: DROP DATABASE %s failed (HTTP %ld)\n", db, status);
    curl_easy_cleanup(c);
}

/* Makes a fresh place for backend be named by tag; 0 or -1. */
static int place_new(struct place *pl, enum backend be, const char *tag, const struct opts *o)
{
    memset(pl, 0, sizeof(*pl));
    pl->be = be;
    if (be == SQLITE) {
        if (!bench_mkdtemp(pl->dir, sizeof(pl->dir), "bench-store")) {
            perror("bench_store: mkdtemp");
            return -1;
        }
        snprintf(pl->uri, sizeof(pl->uri), "%s", pl->dir);
        return 0;
    }
    snprintf(pl->db, sizeof(pl->db), "rt_bench_%ld_%s", (long)getpid(), tag);
    ch_drop(o, pl->db);
    snprintf(pl->uri, sizeof(pl->uri), "clickhouse:%s/%s%s%s", o->ch_base, pl->db,
             *o->ch_settings ? "?" : "", o->ch_settings);
    if (*o->ch_base2)
        snprintf(pl->uri2, sizeof(pl->uri2), "clickhouse:%s/%s%s%s", o->ch_base2, pl->db,
                 *o->ch_settings ? "?" : "", o->ch_settings);
    return 0;
}

/* Removes what the place holds. */
static void place_remove(struct place *pl, const struct opts *o)
{
    if (pl->be == SQLITE)
        bench_rm_tree(pl->dir);
    else
        ch_drop(o, pl->db);
}

/* Opens the place's store (second: the second node's, NULL without one). */
static struct rt_store *place_open_uri(const char *uri)
{
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(uri, &err);
    if (!s)
        fprintf(stderr, "bench_store: rt_store_open %s: %s\n", uri, err.msg);
    return s;
}

static struct rt_store *place_open(const struct place *pl)
{
    return place_open_uri(pl->uri);
}

/* Prints the store's size: stored profiles and MB on disk. */
static void print_store_size(struct rt_store *s)
{
    printf("    store: %" PRId64 " profiles, %.1f MB on disk\n", rt_store_profile_count(s),
           rt_store_disk_bytes(s) / 1e6);
}

/* ---- (a) Ingest --------------------------------------------------------------------------- */

/* One upload body of the schedule, read once. */
struct upload {
    const char *name;            /* the file, also the instance */
    unsigned char *data;         /* the body as an SDK sends it */
    size_t len;                  /* its bytes (compressed) */
};

/* The ingest inputs and the schedule at one scale: upload i is ups[i % nup]; uploads
 * [0, prefill) are stored in batches, untimed, then [prefill, prefill + count) are timed. */
struct ingest_set {
    struct upload ups[BENCH_INGEST_NFILES];
    size_t nup;                  /* accepted files */
    size_t prefill;              /* uploads stored before the timing */
    size_t count;                /* uploads timed */
    double bytes;                /* compressed bytes of the timed uploads */
};

/* State shared by the writer threads of one run. */
struct ingest_run {
    struct rt_store *s;
    struct rt_store *s2;         /* --clickhouse2: the second node's store, odd writers' */
    const struct ingest_set *set;
    atomic_size_t next;          /* next upload to take, counted from set->prefill */
    atomic_bool failed;
    atomic_size_t stored;        /* profiles stored (not duplicates) */
    double *lat_ms;              /* per timed upload: rt_store_put_profiles wall ms */
};

/* One writer: its own parsed copy of every input, re-stamped per upload. */
struct writer {
    struct ingest_run *run;
    struct rt_store *s;          /* the node this writer uploads through */
    struct rt_profile *ps[BENCH_INGEST_NFILES][2];
    size_t np[BENCH_INGEST_NFILES];
    pthread_t tid;
};

/* Parses upload u into out (1 or 2 profiles); 0 or -1 with the reason printed. */
static int parse_upload(const struct upload *u, struct rt_profile **out, size_t *np)
{
    struct rt_ingest_limits lim;
    struct rt_ingest_params q;
    char id[64];
    rt_ingest_limits_default(&lim);
    bench_upload_params(&q, INGEST_SERVICE, u->name, 0, id, sizeof(id));
    struct rt_error err = {0};
    int rc = rt_ingest_parse(u->data, u->len, &q, &lim, out, np, &err);
    if (rc)
        printf("  skip %-34s rt_ingest_parse refuses it: %s: %s\n", u->name, rt_err_name(rc),
               err.msg);
    return rc ? -1 : 0;
}

/* Reads the ingest files that parse; 0, or -1 when none does. */
static int ingest_load(struct ingest_set *set, const char *dir)
{
    memset(set, 0, sizeof(*set));
    for (size_t f = 0; f < BENCH_INGEST_NFILES; f++) {
        char path[4096];
        struct upload *u = &set->ups[set->nup];
        snprintf(path, sizeof(path), "%s/%s", dir, BENCH_INGEST_FILES[f]);
        u->name = BENCH_INGEST_FILES[f];
        u->data = bench_read_file(path, &u->len);
        struct rt_profile *ps[2];
        size_t np = 0;
        if (!u->data) {
            printf("  skip %-34s cannot read %s: %s\n", u->name, path, strerror(errno));
            continue;
        }
        if (parse_upload(u, ps, &np)) {
            free(u->data);
            continue;
        }
        for (size_t k = 0; k < np; k++)
            rt_profile_free(ps[k]);
        set->nup++;
    }
    return set->nup ? 0 : -1;
}

/* Uploads from index first on until their compressed bytes reach target; *bytes gets them. */
static size_t uploads_for(const struct ingest_set *set, size_t first, double target,
                          double *bytes)
{
    size_t n = 0;
    *bytes = 0;
    while (*bytes < target)
        *bytes += set->ups[(first + n++) % set->nup].len;
    return n;
}

/* The schedule at scale: mb x scale compressed MB of uploads round-robin. Unless full, at
 * most mb of them are timed, on top of the rest stored beforehand in batches (so a 10x run
 * times 1x of uploads into a store already holding 9x). */
static void ingest_schedule(struct ingest_set *set, double mb, double scale, bool full)
{
    double timed = full || scale < 1 ? scale : 1, bytes;
    set->prefill = scale > timed ? uploads_for(set, 0, mb * (scale - timed) * 1e6, &bytes) : 0;
    set->count = uploads_for(set, set->prefill, mb * timed * 1e6, &set->bytes);
}

static void writer_cleanup(struct writer *w)
{
    for (size_t f = 0; f < BENCH_INGEST_NFILES; f++)
        for (size_t k = 0; k < w->np[f]; k++)
            rt_profile_free(w->ps[f][k]);
}

/* Parses the writer's copy of every input; 0 or -1. */
static int writer_parse(struct writer *w, struct ingest_run *run)
{
    w->run = run;
    for (size_t f = 0; f < run->set->nup; f++)
        if (parse_upload(&run->set->ups[f], w->ps[f], &w->np[f]))
            return -1;
    return 0;
}

/* Stamps the writer's copy of upload i's input as bench_ingest's upload i; 0 or ENOMEM. */
static int stamp(struct writer *w, size_t i, size_t f)
{
    char id[64];
    struct rt_ingest_params q;
    bench_upload_params(&q, INGEST_SERVICE, w->run->set->ups[f].name, i, id, sizeof(id));
    for (size_t k = 0; k < w->np[f]; k++) {
        if (rt_profile_set_str(&w->ps[f][k]->profile_id, id))
            return -1;
        w->ps[f][k]->time_ns = q.start_ns;
    }
    return 0;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct ingest_run *run = w->run;
    for (;;) {
        size_t j = atomic_fetch_add(&run->next, 1), i = run->set->prefill + j;
        if (j >= run->set->count || atomic_load(&run->failed))
            break;
        size_t f = i % run->set->nup;
        struct rt_store_put_result res[2];
        struct rt_error err = {0};
        int rc = stamp(w, i, f) ? RT_ENOMEM : 0;
        int64_t a = bench_now_ns();
        if (!rc)
            rc = rt_store_put_profiles(w->s, w->ps[f], w->np[f], res, &err);
        run->lat_ms[j] = (bench_now_ns() - a) / 1e6;
        if (rc) {
            fprintf(stderr, "bench_store: rt_store_put_profiles %s: %s\n",
                    run->set->ups[f].name, err.msg);
            atomic_store(&run->failed, true);
            break;
        }
        for (size_t k = 0; k < w->np[f]; k++)
            atomic_fetch_add(&run->stored, !res[k].duplicate);
    }
    return NULL;
}

/* Runs nthreads writers over the schedule into s; wall ns in *ns. 0 or -1. */
static int ingest_threads(struct ingest_run *run, int nthreads, int64_t *ns)
{
    struct writer *ws = calloc((size_t)nthreads, sizeof(*ws));
    if (!ws)
        return -1;
    int rc = 0, started = 0;
    for (int t = 0; t < nthreads && !rc; t++) {
        rc = writer_parse(&ws[t], run);
        ws[t].s = t % 2 && run->s2 ? run->s2 : run->s;
    }
    int64_t a = bench_now_ns();
    for (; started < nthreads && !rc; started++)
        rc = pthread_create(&ws[started].tid, NULL, writer_main, &ws[started]) ? -1 : 0;
    if (rc)
        atomic_store(&run->failed, true);
    for (int t = 0; t < started; t++)
        pthread_join(ws[t].tid, NULL);
    *ns = bench_now_ns() - a;
    for (int t = 0; t < nthreads; t++)
        writer_cleanup(&ws[t]);
    free(ws);
    return rc || atomic_load(&run->failed) ? -1 : 0;
}

/* Stores uploads [0, set->prefill) in batches of PREFILL_COPIES uploads of each input
 * (untimed: it only grows the store) and prints how long that took. 0 or -1. */
static int ingest_prefill(struct ingest_run *run)
{
    const struct ingest_set *set = run->set;
    struct writer *ws = calloc(PREFILL_COPIES, sizeof(*ws));
    struct rt_profile *batch[PREFILL_COPIES * BENCH_INGEST_NFILES * 2];
    struct rt_store_put_result res[PREFILL_COPIES * BENCH_INGEST_NFILES * 2];
    size_t per = PREFILL_COPIES * set->nup;
    int rc = ws ? 0 : -1;
    for (int c = 0; c < PREFILL_COPIES && !rc; c++)
        rc = writer_parse(&ws[c], run);
    int64_t a = bench_now_ns();
    for (size_t i0 = 0; i0 < set->prefill && !rc; i0 += per) {
        size_t nb = 0;
        for (size_t i = i0; i < i0 + per && i < set->prefill && !rc; i++) {
            struct writer *w = &ws[(i - i0) / set->nup];
            size_t f = i % set->nup;
            rc = stamp(w, i, f);
            for (size_t k = 0; k < w->np[f]; k++)
                batch[nb++] = w->ps[f][k];
        }
        struct rt_error err = {0};
        if (!rc && (rc = rt_store_put_profiles(run->s, batch, nb, res, &err)))
            fprintf(stderr, "bench_store: prefill: rt_store_put_profiles: %s\n", err.msg);
    }
    if (!rc)
        printf("    prefill: %zu uploads in batches of %zu, untimed, in %.1f s\n", set->prefill,
               per, (bench_now_ns() - a) / 1e9);
    for (int c = 0; ws && c < PREFILL_COPIES; c++)
        writer_cleanup(&ws[c]);
    free(ws);
    return rc ? -1 : 0;
}

/* One ingest run: a fresh store of backend be, the schedule of set by nthreads writers. */
static struct ingest_res ingest_run(enum backend be, const struct ingest_set *set, int nthreads,
                                    const char *tag, const struct opts *o)
{
    struct ingest_res r = {0};
    struct place pl;
    if (place_new(&pl, be, tag, o))
        return r;
    struct ingest_run run = {.set = set, .s = place_open(&pl)};
    /* the second node opens the schema the first made */
    if (run.s && *pl.uri2 && !(run.s2 = place_open_uri(pl.uri2))) {
        rt_store_free(run.s);
        run.s = NULL;
    }
    run.lat_ms = calloc(set->count, sizeof(*run.lat_ms));
    int64_t ns = 0;
    if (run.s && run.lat_ms && (!set->prefill || ingest_prefill(&run) == 0) &&
        ingest_threads(&run, nthreads, &ns) == 0) {
        double s = ns / 1e9;
        r.ok = true;
        r.profiles_s = atomic_load(&run.stored) / s;
        r.mb_s = set->bytes / 1e6 / s;
        r.p50_ms = bench_median(run.lat_ms, set->count); /* sorts */
        r.p99_ms = run.lat_ms[(size_t)(0.99 * (double)(set->count - 1))];
        printf("  %-10s %2d thread(s)%s: %zu uploads in %.1f s: %.1f profiles/s, %.1f MB/s; "
               "put p50 %.2f ms, p99 %.2f ms\n",
               BACKEND_NAME[be], nthreads, run.s2 ? " on 2 nodes" : "", set->count, s,
               r.profiles_s, r.mb_s, r.p50_ms, r.p99_ms);
        print_store_size(run.s);
    }
    rt_store_free(run.s);
    rt_store_free(run.s2);
    free(run.lat_ms);
    place_remove(&pl, o);
    return r;
}

/* ---- (b) Diff ----------------------------------------------------------------------------- */

/* bench_diff's data at one scale: ninst instances, each per_inst profiles per window. */
struct diff_shape {
    size_t ninst, per_inst;
};

static struct diff_shape diff_shape_of(double scale)
{
    struct diff_shape d;
    double n = scale < 1 ? 1 : scale;
    d.ninst = (size_t)(n + 0.5);
    d.per_inst = (size_t)(DIFF_PER_1X * scale / d.ninst + 0.5);
    if (d.per_inst < 1)
        d.per_inst = 1;
    return d;
}

/* Puts the batch into s and frees it; 0 or -1. */
static int put_batch(struct rt_store *s, struct rt_profile **batch, size_t *nb)
{
    struct rt_store_put_result res[BUILD_BATCH];
    struct rt_error err = {0};
    int rc = rt_store_put_profiles(s, batch, *nb, res, &err);
    if (rc)
        fprintf(stderr, "bench_store: rt_store_put_profiles: %s\n", err.msg);
    for (size_t j = 0; j < *nb; j++)
        rt_profile_free(batch[j]);
    *nb = 0;
    return rc ? -1 : 0;
}

/* Builds the two windows: per time slot, one profile per instance, the same draws (seed) for
 * every backend; *rows gets the stack rows stored. 0 or -1. */
static int diff_build(struct rt_store *s, const struct bench_source *src, struct diff_shape d,
                      size_t *rows)
{
    uint64_t rng = DIFF_SEED;
    struct rt_profile *batch[BUILD_BATCH];
    size_t nb = 0, slots = 2 * d.per_inst;
    *rows = 0;
    for (size_t slot = 0; slot < slots; slot++) {
        for (size_t i = 0; i < d.ninst; i++) {
            char inst[32];
            snprintf(inst, sizeof(inst), "bench-%zu", i);
            struct rt_profile *p = bench_derive(src, DIFF_SERVICE, inst, slot * d.ninst + i,
                                                slot, slot >= d.per_inst, DIFF_FACTOR, &rng);
            if (!p)
                return -1;
            batch[nb++] = p;
            *rows += p->nstacks;
            if (nb == BUILD_BATCH && put_batch(s, batch, &nb))
                return -1;
        }
    }
    return nb ? put_batch(s, batch, &nb) : 0;
}

/* One rt_query_diff of the two windows; wall ms, or -1. *ans (may be NULL) keeps the answer. */
static double diff_once(struct rt_store *s, const struct bench_source *src, struct diff_shape d,
                        json_t **ans)
{
    int64_t w = (int64_t)d.per_inst * BENCH_PROFILE_NS;
    struct rt_query_diff_req r = {.service = DIFF_SERVICE, .type = src->p->type,
                                  .base_from_ns = BENCH_T0_NS, .base_to_ns = BENCH_T0_NS + w,
                                  .cur_from_ns = BENCH_T0_NS + w,
                                  .cur_to_ns = BENCH_T0_NS + 2 * w};
    struct rt_error err = {0};
    int64_t a = bench_now_ns();
    json_t *j = rt_query_diff(s, &r, &err);
    double ms = (bench_now_ns() - a) / 1e6;
    if (!j) {
        fprintf(stderr, "bench_store: rt_query_diff: %s\n", err.msg);
        return -1;
    }
    if (ans)
        *ans = j;
    else
        json_decref(j);
    return ms;
}

/* The cold run (store just reopened), then the median of o->runs; fills r. 0 or -1. */
static int diff_time(struct rt_store *s, const struct bench_source *src, struct diff_shape d,
                     const struct opts *o, struct diff_res *r)
{
    json_t *ans = NULL;
    double ms[MAX_RUNS];
    int runs = o->runs < MAX_RUNS ? o->runs : MAX_RUNS;
    if ((r->cold_ms = diff_once(s, src, d, &ans)) < 0)
        return -1;
    json_t *top = json_array_get(json_object_get(ans, "functions"), 0);
    const char *name = json_string_value(json_object_get(top, "name"));
    r->grown_first = name && strcmp(name, rt_profile_frame(src->p, src->grow_id)) == 0;
    snprintf(r->top, sizeof(r->top), "%s", name ? name : "-");
    r->top_delta_pp = json_number_value(json_object_get(top, "delta_pp"));
    json_decref(ans);
    for (int i = 0; i < runs; i++)
        if ((ms[i] = diff_once(s, src, d, NULL)) < 0)
            return -1;
    r->median_ms = bench_median(ms, (size_t)runs);
    printf("    rt_query_diff: cold %.1f ms; then (ms, sorted):", r->cold_ms);
    for (int i = 0; i < runs; i++)
        printf(" %.1f", ms[i]);
    printf("\n    top function %s, delta_pp %+.2f (grown function first: %s)\n",
           r->top, r->top_delta_pp, r->grown_first ? "yes" : "NO");
    return 0;
}

/* One diff run: a fresh store of backend be with the windows at scale, closed and reopened,
 * then timed. */
static struct diff_res diff_run(enum backend be, const struct bench_source *src, double scale,
                                const char *tag, const struct opts *o)
{
    struct diff_res r = {0};
    struct diff_shape d = diff_shape_of(scale);
    struct place pl;
    if (place_new(&pl, be, tag, o))
        return r;
    struct rt_store *s = place_open(&pl);
    size_t rows = 0;
    int64_t a = bench_now_ns();
    if (!s || diff_build(s, src, d, &rows))
        goto out;
    r.build_s = (bench_now_ns() - a) / 1e9;
    printf("  %-10s built in %.1f s (%.0f profiles/s in batches of %d): %zu stack rows\n",
           BACKEND_NAME[be], r.build_s, 2.0 * d.per_inst * d.ninst / r.build_s, BUILD_BATCH,
           rows);
    print_store_size(s);
    rt_store_free(s); /* reopened: the first diff loads stacks and frames (cold) */
    if ((s = place_open(&pl)) && diff_time(s, src, d, o, &r) == 0)
        r.ok = true;
out:
    rt_store_free(s);
    place_remove(&pl, o);
    return r;
}

/* ---- Options and main --------------------------------------------------------------------- */

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--clickhouse http://HOST:PORT[?SETTINGS]] [--clickhouse2 http://HOST:PORT]\n"
            "          [--scales 1,10]\n"
            "          [--threads 1,4] [--mb 300] [--full] [--runs 5] [--only ingest|diff]\n"
            "          [--data DIR]\n"
            "  --clickhouse URL  a ClickHouse server (databases rt_bench_* made and dropped);\n"
            "                    without it only SQLite runs; ?cluster=NAME: on its cluster\n"
            "  --clickhouse2 URL another server of that cluster: the ingest writers alternate\n"
            "                    between the two, as two roottrace nodes (diffs use the first)\n"
            "  --scales LIST     multiples of the data of bench_ingest and bench_diff\n"
            "  --threads LIST    writer threads of the ingest runs (up to %d)\n"
            "  --mb N            compressed MB of uploads at 1x (bench_ingest's default)\n"
            "  --full            time every upload of a scale > 1 (default: 1x of them, into a\n"
            "                    store prefilled with the rest in batches, untimed)\n"
            "  --runs N          timed diffs after the cold one (median)\n",
            argv0, MAX_THREAD_COUNT);
    return 2;
}

/* Parses "a,b,c" into up to max doubles; the count, or 0 on a bad list. */
static size_t parse_list(const char *s, double *v, size_t max)
{
    size_t n = 0;
    while (*s && n < max) {
        char *end;
        v[n] = strtod(s, &end);
        if (end == s || !(v[n] > 0) || (*end && *end != ','))
            return 0;
        n++;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

/* "[clickhouse:]http://HOST:PORT[/][?SETTINGS]" into base[n] (no database: ours are made
 * per run); returns what follows '?' ("" when nothing), or NULL when v is not such a URL. */
static const char *parse_server(const char *v, char *base, size_t n)
{
    if (strncmp(v, "clickhouse:", 11) == 0)
        v += 11;
    const char *q = strchr(v, '?');
    size_t len = q ? (size_t)(q - v) : strlen(v);
    if (strncmp(v, "http://", 7) != 0 || len >= n)
        return NULL;
    snprintf(base, n, "%.*s", (int)len, v);
    while (len > 7 && base[len - 1] == '/')
        base[--len] = 0;
    return strchr(base + 7, '/') ? NULL : q ? q + 1 : "";
}

/* --clickhouse: base and settings. */
static int parse_ch(const char *v, struct opts *o)
{
    const char *settings = parse_server(v, o->ch_base, sizeof(o->ch_base));
    if (!settings)
        return -1;
    snprintf(o->ch_settings, sizeof(o->ch_settings), "%s", settings);
    return 0;
}

static int parse_threads(const char *v, struct opts *o)
{
    double t[MAX_THREADS];
    o->nthreads = parse_list(v, t, MAX_THREADS);
    for (size_t i = 0; i < o->nthreads; i++) {
        if (t[i] != (int)t[i] || t[i] > MAX_THREAD_COUNT)
            return -1;
        o->threads[i] = (int)t[i];
    }
    return o->nthreads ? 0 : -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.data = bench_data_dir(), .scales = {1, 10}, .nscales = 2,
                       .threads = {1, 4}, .nthreads = 2, .mb = 300, .runs = 5,
                       .ingest = true, .diff = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--full") == 0) {
            o->full = true;
            continue;
        }
        if (i + 1 < argc)
            v = argv[++i];
        int bad = 0;
        if (!v)
            bad = 1;
        else if (strcmp(a, "--clickhouse") == 0)
            bad = parse_ch(v, o);
        else if (strcmp(a, "--clickhouse2") == 0)
            bad = !parse_server(v, o->ch_base2, sizeof(o->ch_base2));
        else if (strcmp(a, "--scales") == 0)
            bad = !(o->nscales = parse_list(v, o->scales, MAX_SCALES));
        else if (strcmp(a, "--threads") == 0)
            bad = parse_threads(v, o);
        else if (strcmp(a, "--mb") == 0)
            bad = !((o->mb = atof(v)) > 0);
        else if (strcmp(a, "--runs") == 0)
            bad = (o->runs = atoi(v)) < 1;
        else if (strcmp(a, "--data") == 0)
            o->data = v;
        else if (strcmp(a, "--only") == 0 && strcmp(v, "ingest") == 0)
            o->diff = false;
        else if (strcmp(a, "--only") == 0 && strcmp(v, "diff") == 0)
            o->ingest = false;
        else
            bad = 1;
        if (bad)
            return usage(argv[0]);
    }
    return 0;
}

/* The ingest half at every scale, backend and thread count. 0 or -1 (a run failed). */
static int run_ingest(struct results *res, const struct opts *o, int nbe)
{
    struct ingest_set set;
    if (ingest_load(&set, o->data)) {
        fprintf(stderr, "bench_store: no ingest file accepted in %s\n", o->data);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < o->nscales; i++) {
        ingest_schedule(&set, o->mb, o->scales[i], o->full);
        printf("\n== ingest %gx: %zu uploads of %zu files timed, %.1f MB compressed, through "
               "rt_store_put_profiles alone,\n   one upload per call, after %zu uploads "
               "stored untimed\n",
               o->scales[i], set.count, set.nup, set.bytes / 1e6, set.prefill);
        for (size_t t = 0; t < o->nthreads; t++)
            for (int be = 0; be < nbe; be++) {
                char tag[48];
                snprintf(tag, sizeof(tag), "i%zu_t%zu", i, t);
                res->ing[i][be][t] = ingest_run((enum backend)be, &set, o->threads[t], tag, o);
                rc |= res->ing[i][be][t].ok ? 0 : -1;
            }
    }
    for (size_t f = 0; f < set.nup; f++)
        free(set.ups[f].data);
    return rc;
}

/* The diff half at every scale and backend. 0 or -1 (a run failed). */
static int run_diff(struct results *res, const struct opts *o, int nbe)
{
    struct bench_source src = {0};
    int rc = bench_load_source(&src, o->data, DIFF_FILE, NULL);
    for (size_t i = 0; !rc && i < o->nscales; i++) {
        struct diff_shape d = diff_shape_of(o->scales[i]);
        printf("\n== diff %gx: %s, %zu instance(s) x 2 windows x %zu profiles of 6 s "
               "(windows of %.1f min)\n",
               o->scales[i], DIFF_FILE, d.ninst, d.per_inst, d.per_inst * 6 / 60.0);
        for (int be = 0; be < nbe; be++) {
            char tag[48];
            snprintf(tag, sizeof(tag), "d%zu", i);
            res->diff[i][be] = diff_run((enum backend)be, &src, o->scales[i], tag, o);
            rc |= res->diff[i][be].ok ? 0 : -1;
        }
    }
    rt_profile_free(src.p);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int nbe = *o.ch_base ? NBACKENDS : 1;
    printf("== bench_store: %s%s%s, scales", BACKEND_NAME[SQLITE], nbe > 1 ? " and " : "",
           nbe > 1 ? BACKEND_NAME[CLICKHOUSE] : " only");
    for (size_t i = 0; i < o.nscales; i++)
        printf(" %gx", o.scales[i]);
    printf(" (1x = %.0f MB of uploads; 2 x %d profiles)\n", o.mb, DIFF_PER_1X);
    struct results *res = calloc(1, sizeof(*res));
    if (!res)
        return 1;
    int rc = 0;
    if (o.ingest)
        rc |= run_ingest(res, &o, nbe);
    if (o.diff)
        rc |= run_diff(res, &o, nbe);
    print_table(res, &o, nbe);
    free(res);
    curl_global_cleanup();
    return rc ? 1 : 0;
}
