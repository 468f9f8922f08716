/* bench/load: the loopback load test (docs/reliability.md "Load"). Starts `roottrace serve` on
 * a fresh data dir, turns profiling on for every simulated service, seeds a few minutes of
 * history, then runs: the realistic rate (every instance uploads every 60 s, as the SDKs do)
 * with diff clients beside it; compressed rates to find the capacity; slow clients; a flood of
 * oversized bodies. Prints tables (and JSON with --json FILE). Figures, not a test: it exits
 * non-zero only when something failed outright: a failed upload or diff, an oversized body
 * answered 2xx or with a 5xx other than 503, a server that died, or one that did not exit 0
 * on SIGTERM. */
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

#define MAX_PHASES 8

struct opts {
    const char *bin, *json, *store;
    double seconds, interval_s, cap_seconds, bg_interval_s;
    double cap_intervals[4];
    int ncap;
    int services, per_service, seed_minutes, queries, concurrency;
    int slow, big;
    double slow_seconds, slow_byte_s;
    double big_mib;
    bool hostile, keep;
};

/* One timed phase of uploads (and queries). */
struct phase {
    const char *name;
    double interval_s;
    struct load_drive d;
    struct load_stats up;
    struct load_queries q;
    bool has_q;
    double mem_mib[4]; /* at the phase's end, from /metrics (-1: absent); MEM_GAUGES */
};

/* The server's memory gauges read at each phase's end (docs/performance.md). */
static const char *const MEM_GAUGES[4] = {"process_resident_memory_bytes",
                                          "roottrace_heap_used_bytes",
                                          "roottrace_heap_free_bytes",
                                          "roottrace_store_dict_bytes"};

static struct load_server srv = {.token = "rt_load_admin_token_0123456789abcdef"};
static struct load_instance *inst;
static size_t ninst;
static char issue_ids[100][32];
static int64_t t0_wall;
static struct load_rss rss;

static void usage(void)
{
    fprintf(stderr,
            "usage: load [--bin PATH] [--seconds S] [--interval S] [--services N] "
            "[--per-service N]\n  [--seed-minutes N] [--queries N] [--capacity S,S,...] "
            "[--capacity-seconds S] [--bg-interval S]\n  [--slow N] [--slow-seconds S] "
            "[--slow-byte-every S] [--big N] [--big-mib M] [--no-hostile]\n  [--store URI] "
            "[--json FILE] [--keep]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.bin = "build/roottrace", .seconds = 60, .interval_s = 60,
                       .cap_seconds = 30, .bg_interval_s = 10, .cap_intervals = {5, 2, 1},
                       .ncap = 3, .services = 20, .per_service = 50, .seed_minutes = 5,
                       .queries = 4, .concurrency = 256, .slow = 500, .slow_seconds = 40,
                       .slow_byte_s = 5, .big = 50, .big_mib = 20, .hostile = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(flag, field)                                                                   \
    if (!strcmp(a, flag) && v) {                                                           \
        o->field = atof(v);                                                                \
        i++;                                                                               \
        continue;                                                                          \
    }
        NUM("--seconds", seconds) NUM("--interval", interval_s)
        NUM("--capacity-seconds", cap_seconds) NUM("--bg-interval", bg_interval_s)
        NUM("--services", services) NUM("--per-service", per_service)
        NUM("--seed-minutes", seed_minutes) NUM("--queries", queries)
        NUM("--concurrency", concurrency) NUM("--slow", slow)
        NUM("--slow-seconds", slow_seconds) NUM("--slow-byte-every", slow_byte_s)
        NUM("--big", big) NUM("--big-mib", big_mib)
#undef NUM
        if (!strcmp(a, "--bin") && v) {
            o->bin = argv[++i];
        } else if (!strcmp(a, "--json") && v) {
            o->json = argv[++i];
        } else if (!strcmp(a, "--store") && v) {
            o->store = argv[++i];
        } else if (!strcmp(a, "--capacity") && v) {
            o->ncap = 0;
            for (char *s = argv[++i], *e; *s && o->ncap < 4; s = *e ? e + 1 : e)
                o->cap_intervals[o->ncap++] = strtod(s, &e);
        } else if (!strcmp(a, "--no-hostile")) {
            o->hostile = false;
        } else if (!strcmp(a, "--keep")) {
            o->keep = true;
        } else {
            usage();
        }
    }
    if (o->services < 1 || o->services > 100 || o->per_service < 1 || o->seconds <= 0)
        usage();
}

/* Key, toggles, issues: what an operator does before the SDKs upload. */
static int setup(const struct opts *o)
{
    char *out = NULL, path[128], body[256];
    if (load_http(&srv, "POST", "/api/v1/keys", "{\"scope\":\"ingest\",\"name\":\"load\"}",
                  &out) != 201)
        goto fail;
    json_t *j = json_loads(out, 0, NULL);
    const char *key = json_string_value(json_object_get(j, "key"));
    snprintf(srv.ingest_key, sizeof(srv.ingest_key), "%s", key ? key : "");
    json_decref(j);
    free(out);
    out = NULL;
    time_t started = (time_t)(t0_wall / 1000000000) - o->seed_minutes * 30;
    char at[32];
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime(&started));
    for (int s = 0; s < o->services; s++) {
        snprintf(path, sizeof(path), "/api/v1/services/svc%02d/profiling", s);
        if (load_http(&srv, "PUT", path, "{\"enabled\":true}", NULL) != 200)
            goto fail;
        snprintf(body, sizeof(body),
                 "{\"service\":\"svc%02d\",\"title\":\"load: slower checkout\","
                 "\"started_at\":\"%s\"}", s, at);
        if (load_http(&srv, "POST", "/api/v1/issues", body, &out) != 201)
            goto fail;
        j = json_loads(out, 0, NULL);
        snprintf(issue_ids[s], sizeof(issue_ids[s]), "%s",
                 json_string_value(json_object_get(j, "id")) ?: "0");
        json_decref(j);
        free(out);
        out = NULL;
    }
    return 0;
fail:
    fprintf(stderr, "load: setup failed: %s\n", out ? out : "(no answer)");
    free(out);
    return -1;
}

static void phase_begin(struct phase *p, const struct opts *o, const char *name,
                        double interval_s, double seconds, bool queries)
{
    memset(p, 0, sizeof(*p));
    for (int g = 0; g < 4; g++)
        p->mem_mib[g] = -1;
    p->name = name;
    p->interval_s = interval_s;
    load_stats_init(&p->up);
    p->d = (struct load_drive){.srv = &srv, .inst = inst, .ninst = ninst,
                               .interval_s = interval_s, .seconds = seconds,
                               .concurrency = o->concurrency, .stats = &p->up};
    load_rss_phase(&rss, name);
    fprintf(stderr, "-- %s\n", name);
    if (queries && o->queries > 0) {
        p->has_q = true;
        p->q = (struct load_queries){.srv = &srv, .nservices = o->services,
                                     .issue_ids = issue_ids, .t0_ns = t0_wall,
                                     .nthreads = o->queries};
        load_queries_start(&p->q);
    }
}

/* Reads MEM_GAUGES from the server's /metrics into p->mem_mib. */
static void scrape_memory(struct phase *p)
{
    char *text = NULL;
    bool ok = load_http(&srv, "GET", "/metrics", NULL, &text) == 200 && text;
    for (int g = 0; g < 4; g++) {
        p->mem_mib[g] = -1;
        size_t n = strlen(MEM_GAUGES[g]);
        for (const char *l = ok ? text : NULL; l; l = strchr(l, '\n')) {
            l += *l == '\n';
            if (strncmp(l, MEM_GAUGES[g], n) == 0 && l[n] == ' ') {
                p->mem_mib[g] = strtod(l + n + 1, NULL) / 1048576.0;
                break;
            }
        }
    }
    free(text);
}

static void phase_end(struct phase *p)
{
    if (p->has_q)
        load_queries_stop(&p->q);
    scrape_memory(p);
}

static void print_memory(struct phase *ph, int n)
{
    printf("\n== server memory at each phase's end (MiB, its /metrics: resident; malloc's blocks "
           "in use; malloc's free memory kept; the frame/stack dictionary, part of the blocks)\n");
    printf("%-22s %9s %9s %9s %9s\n", "phase", "resident", "heap used", "heap free", "dict");
    for (int i = 0; i < n; i++)
        printf("%-22s %9.0f %9.0f %9.0f %9.0f\n", ph[i].name, ph[i].mem_mib[0],
               ph[i].mem_mib[1], ph[i].mem_mib[2], ph[i].mem_mib[3]);
}

static void *drive_thread(void *arg)
{
    load_drive_run(arg);
    return NULL;
}

static void print_kinds(const char *what, struct load_stats *s)
{
    for (size_t k = 0; k < s->nkinds; k++)
        printf("    %s error: %-40s x %llu\n", what, s->kinds[k],
               (unsigned long long)s->kind_count[k]);
}

static void print_uploads(struct phase *ph, int n)
{
    printf("\n== uploads (latency in ms; offered = uploads due; every instance has its own id)\n");
    printf("%-22s %9s %9s %8s %7s %8s %8s %8s %8s %8s\n", "phase", "offered/s", "uploads/s",
           "ok", "errors", "p50", "p90", "p99", "max", "RSS max");
    for (int i = 0; i < n; i++) {
        struct phase *p = &ph[i];
        long mx, first, last;
        load_rss_summary(&rss, p->name, &mx, &first, &last);
        double el = p->d.elapsed_s > 0 ? p->d.elapsed_s : 1;
        double offered = p->d.seed_per_instance ? 0 : (double)p->d.offered / p->d.seconds;
        printf("%-22s %9.1f %9.1f %8zu %7llu %8.1f %8.1f %8.1f %8.1f %6.0f M\n", p->name,
               offered, (double)p->up.n / el, p->up.n, (unsigned long long)p->up.errors,
               load_stats_quantile(&p->up, .5), load_stats_quantile(&p->up, .9),
               load_stats_quantile(&p->up, .99), load_stats_quantile(&p->up, 1), mx / 1024.0);
        print_kinds("upload", &p->up);
    }
    printf("\n== diff queries (issue diff and /api/v1/diff alternately, window 5 min; ms)\n");
    printf("%-22s %8s %9s %8s %7s %8s %8s %8s %8s\n", "phase", "clients", "queries/s", "ok",
           "errors", "p50", "p90", "p99", "max");
    for (int i = 0; i < n; i++) {
        struct phase *p = &ph[i];
        if (!p->has_q)
            continue;
        double el = (double)(p->q.end_ns - p->q.start_ns) / 1e9;
        printf("%-22s %8d %9.2f %8zu %7llu %8.1f %8.1f %8.1f %8.1f\n", p->name, p->q.nthreads,
               (double)p->q.stats.n / el, p->q.stats.n, (unsigned long long)p->q.stats.errors,
               load_stats_quantile(&p->q.stats, .5), load_stats_quantile(&p->q.stats, .9),
               load_stats_quantile(&p->q.stats, .99), load_stats_quantile(&p->q.stats, 1));
        print_kinds("diff", &p->q.stats);
    }
}

static void print_rss(void)
{
    printf("\n== server RSS (VmRSS every 1 s; MiB; one value per 5 s, phase changes marked)\n");
    const char *cur = NULL;
    int col = 0;
    for (size_t i = 0; i < rss.n; i++) {
        if (rss.v[i].phase != cur) {
            long mx, first, last;
            load_rss_summary(&rss, rss.v[i].phase, &mx, &first, &last);
            printf("%s  [%s from %.0f s: max %.0f]", i ? "\n" : "", rss.v[i].phase,
                   rss.v[i].t_s, mx / 1024.0);
            cur = rss.v[i].phase;
            col = 0;
        }
        if (i % 5 == 0)
            printf("%s%.0f", col++ % 16 ? " " : "\n   ", rss.v[i].kb / 1024.0);
    }
    long mx, first, last;
    load_rss_summary(&rss, NULL, &mx, &first, &last);
    printf("\n  max over the run: %.0f MiB (%zu samples)\n", mx / 1024.0, rss.n);
}

/* The JSON report: every phase's figures and the RSS series. */
static void write_json(const char *path, struct phase *ph, int n, json_t *hostile)
{
    json_t *root = json_object(), *phases = json_array(), *series = json_array();
    for (int i = 0; i < n; i++) {
        struct phase *p = &ph[i];
        json_t *o = json_pack("{s:s, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "name", p->name,
                              "interval_s", p->interval_s, "uploads_ok", (json_int_t)p->up.n,
                              "upload_errors", (json_int_t)p->up.errors, "uploads_per_s",
                              (double)p->up.n / (p->d.elapsed_s > 0 ? p->d.elapsed_s : 1),
                              "upload_p50_ms", load_stats_quantile(&p->up, .5),
                              "upload_p90_ms", load_stats_quantile(&p->up, .9),
                              "upload_p99_ms", load_stats_quantile(&p->up, .99),
                              "upload_max_ms", load_stats_quantile(&p->up, 1));
        if (p->has_q)
            json_object_set_new(o, "diffs", json_pack(
                "{s:I, s:I, s:f, s:f, s:f, s:f}", "ok", (json_int_t)p->q.stats.n, "errors",
                (json_int_t)p->q.stats.errors, "p50_ms", load_stats_quantile(&p->q.stats, .5),
                "p90_ms", load_stats_quantile(&p->q.stats, .9), "p99_ms",
                load_stats_quantile(&p->q.stats, .99), "max_ms",
                load_stats_quantile(&p->q.stats, 1)));
        json_array_append_new(phases, o);
    }
    for (size_t i = 0; i < rss.n; i++)
        json_array_append_new(series, json_pack("{s:f, s:I, s:s}", "t_s", rss.v[i].t_s, "kb",
                                                (json_int_t)rss.v[i].kb, "phase",
                                                rss.v[i].phase));
    json_object_set_new(root, "phases", phases);
    json_object_set_new(root, "rss", series);
    json_object_set_new(root, "hostile", hostile ? hostile : json_null());
    if (json_dump_file(root, path, JSON_INDENT(1)) != 0)
        fprintf(stderr, "load: cannot write %s\n", path);
    json_decref(root);
}

/* Slow clients and oversized bodies, each with uploads going on beside them. */
static json_t *hostile(const struct opts *o, struct phase *ph, int *nph, int *failures)
{
    json_t *h = json_object();
    pthread_t th;

    struct phase *p = &ph[(*nph)++];
    phase_begin(p, o, "beside slow clients", o->bg_interval_s, 1e9, false);
    volatile int stop = 0;
    p->d.stop = &stop;
    pthread_create(&th, NULL, drive_thread, &p->d);
    struct load_slow_result sr;
    long before = load_rss_kb(srv.pid);
    load_slowloris(srv.port, o->slow, o->slow_byte_s, o->slow_seconds, &sr);
    stop = 1;
    pthread_join(th, NULL);
    p->d.seconds = p->d.elapsed_s;
    long mx, first, last;
    load_rss_summary(&rss, p->name, &mx, &first, &last);
    printf("\n== slow clients: %d connections (half slow headers, half a slow body of 100 kB),"
           " a byte every %.0f s, for %.0f s\n", sr.opened, o->slow_byte_s, o->slow_seconds);
    printf("  closed by the server: %d (age at close: min %.1f s, median %.1f s, max %.1f s);"
           " still open at the end: %d\n", sr.closed_by_server, sr.close_min_s, sr.close_med_s,
           sr.close_max_s, sr.still_open);
    printf("  answered before the close: %d (first: %s)\n", sr.answered,
           sr.first_status[0] ? sr.first_status : "-");
    printf("  server RSS: %.0f MiB before, max %.0f MiB during\n", before / 1024.0, mx / 1024.0);
    json_object_set_new(h, "slow", json_pack(
        "{s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:I, s:I}", "opened", sr.opened, "closed",
        sr.closed_by_server, "still_open", sr.still_open, "answered", sr.answered,
        "close_min_s", sr.close_min_s, "close_med_s", sr.close_med_s, "close_max_s",
        sr.close_max_s, "rss_before_kb", (json_int_t)before, "rss_max_kb", (json_int_t)mx));

    p = &ph[(*nph)++];
    phase_begin(p, o, "beside oversized flood", o->bg_interval_s, 1e9, false);
    stop = 0;
    p->d.stop = &stop;
    pthread_create(&th, NULL, drive_thread, &p->d);
    before = load_rss_kb(srv.pid);
    size_t size = (size_t)(o->big_mib * 1048576);
    json_t *big = json_array();
    printf("\n== oversized bodies: %d concurrent uploads of %.0f MiB each (limit 16 MiB), "
           "per way of sending\n", o->big, o->big_mib);
    printf("  %-40s %5s %6s %6s %6s %11s %11s %7s %8s\n", "how", "413", "reason", "other",
           "reset", "sent med", "sent max", "time", "RSS max");
    for (int m = LOAD_BIG_HONEST; m <= LOAD_BIG_LYING; m++) {
        struct load_big_result br;
        load_rss_phase(&rss, "beside oversized flood");
        long pre = load_rss_kb(srv.pid), peak = pre;
        load_oversize(srv.port, srv.token, (enum load_big_mode)m, o->big, size, 120, &br);
        load_rss_summary(&rss, p->name, &peak, &first, &last);
        long now_kb = load_rss_kb(srv.pid);
        peak = peak > now_kb ? peak : now_kb;
        peak = peak > pre ? peak : pre;
        printf("  %-40s %5d %6d %6d %6d %7.2f MiB %7.2f MiB %6.1fs %6.0f M\n",
               load_big_mode_name((enum load_big_mode)m), br.got_413, br.with_reason,
               br.other_status, br.reset_or_closed, br.sent_med_mib, br.sent_max_mib,
               br.time_max_s, peak / 1024.0);
        if (br.other[0])
            printf("    first other answer: %s\n", br.other);
        if (br.wrong)
            printf("    FAILED: %d answered 2xx (stored) or with a 5xx other than 503\n", br.wrong);
        *failures += br.wrong;
        json_array_append_new(big, json_pack(
            "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:I}", "mode",
            load_big_mode_name((enum load_big_mode)m), "n", br.n, "got_413", br.got_413,
            "with_reason", br.with_reason, "other", br.other_status, "wrong", br.wrong, "reset",
            br.reset_or_closed, "sent_med_mib", br.sent_med_mib, "sent_max_mib",
            br.sent_max_mib, "time_max_s", br.time_max_s, "rss_max_kb", (json_int_t)peak));
    }
    sleep(2);
    stop = 1;
    pthread_join(th, NULL);
    p->d.seconds = p->d.elapsed_s;
    load_rss_summary(&rss, p->name, &mx, &first, &last);
    printf("  server RSS: %.0f MiB before, max %.0f MiB during the flood\n", before / 1024.0,
           mx / 1024.0);
    json_object_set_new(h, "oversize", big);
    return h;
}

int main(int argc, char **argv)
{
    struct opts o;
    parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ninst = (size_t)o.services * (size_t)o.per_service;
    int64_t tb = load_now_ns();
    if (!(inst = load_instances_new(o.services, o.per_service, 0x5eed)))
        return 1;
    size_t total = 0;
    for (size_t i = 0; i < ninst; i++)
        total += inst[i].len;
    printf("== machine: %ld CPUs (shared), load client and server on the same host, loopback\n",
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("== %zu instances (%d services x %d), profiles built in %.1f s: mean %.1f kB gzip "
           "pprof\n", ninst, o.services, o.per_service, (double)(load_now_ns() - tb) / 1e9,
           (double)total / (double)ninst / 1000);
    const char *extra[4] = {NULL};
    if (o.store)
        extra[0] = "--store", extra[1] = o.store;
    if (load_server_start(&srv, o.bin, extra))
        return 1;
    printf("== server: %s pid %d, data %s\n", o.bin, (int)srv.pid, srv.data_dir);
    t0_wall = load_wall_ns();
    load_rss_start(&rss, srv.pid);
    int rc = 1, nph = 0, failures = 0;
    struct phase ph[MAX_PHASES];
    json_t *hj = NULL;
    if (setup(&o))
        goto out;

    phase_begin(&ph[nph], &o, "seed (back-dated)", 0, 0, false);
    ph[nph].d.seed_per_instance = o.seed_minutes;
    ph[nph].d.seed_end_ns = t0_wall;
    ph[nph].d.concurrency = 16;
    load_drive_run(&ph[nph].d);
    phase_end(&ph[nph++]);

    static char names[5][48];
    snprintf(names[0], sizeof(names[0]), "realistic (every %.0f s)", o.interval_s);
    phase_begin(&ph[nph], &o, names[0], o.interval_s, o.seconds, true);
    load_drive_run(&ph[nph].d);
    phase_end(&ph[nph++]);
    for (int c = 0; c < o.ncap; c++) {
        snprintf(names[c + 1], sizeof(names[c + 1]), "compressed (every %g s)",
                 o.cap_intervals[c]);
        phase_begin(&ph[nph], &o, names[c + 1], o.cap_intervals[c], o.cap_seconds, true);
        load_drive_run(&ph[nph].d);
        phase_end(&ph[nph++]);
    }
    if (o.hostile)
        hj = hostile(&o, ph, &nph, &failures);
    load_rss_phase(&rss, "after");
    sleep(2);
    print_uploads(ph, nph);
    print_memory(ph, nph);
    print_rss();
    for (int i = 0; i < nph; i++)
        failures += (int)ph[i].up.errors + (ph[i].has_q ? (int)ph[i].q.stats.errors : 0);
    bool alive = load_server_running(&srv) &&
                 load_http(&srv, "GET", "/healthz", NULL, NULL) == 200;
    printf("\n== server alive at the end: %s; errors in all phases: %d\n", alive ? "yes" : "NO",
           failures);
    rc = alive && failures == 0 ? 0 : 1;
    if (o.json)
        write_json(o.json, ph, nph, hj);
    else
        json_decref(hj);
out:
    load_rss_stop(&rss);
    int st = load_server_stop(&srv, o.keep);
    bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (WIFEXITED(st))
        printf("== server stopped with SIGTERM: %s (status %d)\n",
               clean ? "exit 0" : "NOT a clean exit", WEXITSTATUS(st));
    else
        printf("== server stopped with SIGTERM: NOT a clean exit (signal %d)\n",
               WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (!clean)
        rc = 1; /* a sanitizer's report at exit (66), a crash, or a SIGKILL after 30 s */
    if (o.keep)
        printf("== kept: %s (log %s)\n", srv.data_dir, srv.log_path);
    for (int i = 0; i < nph; i++) {
        load_stats_cleanup(&ph[i].up);
        if (ph[i].has_q)
            load_stats_cleanup(&ph[i].q.stats);
    }
    load_rss_free(&rss);
    load_instances_free(inst, ninst);
    curl_global_cleanup();
    return rc;
}
