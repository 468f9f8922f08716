/* Diff benchmark: two adjacent 1 h windows of 600 gapless 6 s profiles each, derived from a
 * real pprof with seeded Poisson noise and one function grown by a known factor, timed
 * through rt_query_diff beside `go tool pprof -top -diff_base` on the windows merged. */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench.h"
#include "rt/buf.h"
#include "rt/err.h"
#include "rt/export.h"
#include "rt/ingest.h"
#include "rt/profile.h"
#include "rt/query.h"
#include "rt/store.h"

extern char **environ;

#define SERVICE "bench-diff"
#define T0_NS BENCH_T0_NS
#define PROFILE_NS BENCH_PROFILE_NS       /* each profile covers 6 s, back to back */
#define STORE_BATCH 100                  /* profiles per rt_store_put_profiles when building */

struct opts {
    const char *data, *file, *grow;
    size_t per_window;  /* profiles per window (600 = 1 h of 6 s profiles) */
    int runs;           /* timed rt_query_diff runs (median), after one warm-up */
    int ref_runs;       /* timed pprof runs (median), after one warm-up */
    double factor;      /* the grown function's weight in the current window */
    uint64_t seed;
    bool merge_ref;     /* also time `go tool pprof -proto` merging the 600 files */
};

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

/* Exports p as gzip pprof to path. */
static int export_to(const struct rt_profile *p, const char *path)
{
    struct rt_buf b;
    rt_buf_init(&b, 0);
    int rc = rt_export_pprof(p, &b);
    if (rc == 0)
        rc = write_file(path, b.data, b.len);
    rt_buf_cleanup(&b);
    return rc;
}

/* Builds the store: 2 * per_window profiles, baseline then current, batched. With filedir
 * set, each profile is also exported to filedir/{base,cur}-NNNN.pb.gz. */
static int build_store(struct rt_store *s, const struct bench_source *src, const struct opts *o,
                       const char *filedir, size_t *nrows)
{
    uint64_t rng = o->seed;
    struct rt_profile *batch[STORE_BATCH];
    struct rt_store_put_result res[STORE_BATCH];
    size_t nb = 0, total = 2 * o->per_window;
    struct rt_error err = {0};
    for (size_t k = 0; k < total; k++) {
        bool cur = k >= o->per_window;
        struct rt_profile *p = bench_derive(src, SERVICE, "bench-0", k, k, cur, o->factor, &rng);
        if (!p)
            return -1;
        batch[nb++] = p;
        *nrows += p->nstacks;
        if (filedir) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/%s-%04zu.pb.gz", filedir, cur ? "cur" : "base",
                     k % o->per_window);
            if (export_to(p, path))
                fprintf(stderr, "bench_diff: cannot export %s\n", path);
        }
        if (nb == STORE_BATCH || k + 1 == total) {
            int rc = rt_store_put_profiles(s, batch, nb, res, &err);
            for (size_t j = 0; j < nb; j++)
                rt_profile_free(batch[j]);
            nb = 0;
            if (rc) {
                fprintf(stderr, "bench_diff: rt_store_put_profiles: %s\n", err.msg);
                return -1;
            }
        }
    }
    return 0;
}

static void diff_req(struct rt_query_diff_req *r, const struct bench_source *src, size_t per_window)
{
    int64_t w = (int64_t)per_window * PROFILE_NS;
    memset(r, 0, sizeof(*r));
    r->service = SERVICE;
    r->type = src->p->type;
    r->base_from_ns = T0_NS;
    r->base_to_ns = T0_NS + w;
    r->cur_from_ns = T0_NS + w;
    r->cur_to_ns = T0_NS + 2 * w;
}

/* Times rt_query_diff (one warm-up, then the median of o->runs) and reports the ranking. */
static int time_diff(struct rt_store *s, const struct bench_source *src, const struct opts *o,
                     double *median_ms, bool *grown_first)
{
    struct rt_query_diff_req r;
    diff_req(&r, src, o->per_window);
    double ms[64];
    int runs = o->runs < 64 ? o->runs : 64;
    json_t *ans = NULL;
    for (int i = -1; i < runs; i++) {
        struct rt_error err = {0};
        json_decref(ans);
        int64_t a = bench_now_ns();
        ans = rt_query_diff(s, &r, &err);
        int64_t b = bench_now_ns();
        if (!ans) {
            fprintf(stderr, "bench_diff: rt_query_diff: %s\n", err.msg);
            return -1;
        }
        if (i >= 0)
            ms[i] = (b - a) / 1e6;
    }
    *median_ms = bench_median(ms, (size_t)runs);
    printf("  rt_query_diff runs (ms, sorted):");
    for (int i = 0; i < runs; i++)
        printf(" %.1f", ms[i]);
    printf("\n");
    json_t *fns = json_object_get(ans, "functions");
    const char *want = rt_profile_frame(src->p, src->grow_id);
    printf("  baseline %lld profiles, current %lld profiles, %zu functions\n",
           (long long)json_integer_value(json_object_get(json_object_get(ans, "baseline"),
                                                         "profiles")),
           (long long)json_integer_value(json_object_get(json_object_get(ans, "current"),
                                                         "profiles")),
           json_array_size(fns));
    *grown_first = false;
    for (size_t i = 0; i < json_array_size(fns) && i < 3; i++) {
        json_t *f = json_array_get(fns, i);
        json_t *sig = json_object_get(f, "significant");
        printf("  #%zu %-50s delta_pp %+7.2f  z %7.2f  significant %s\n", i + 1,
               json_string_value(json_object_get(f, "name")),
               json_number_value(json_object_get(f, "delta_pp")),
               json_number_value(json_object_get(f, "z")),
               json_is_true(sig) ? "yes" : json_is_false(sig) ? "no" : "null");
    }
    const char *first = json_string_value(json_object_get(json_array_get(fns, 0), "name"));
    *grown_first = first && strcmp(first, want) == 0;
    printf("  grown function %s ranked first by RootTrace: %s\n", want,
           *grown_first ? "yes" : "NO");
    json_decref(ans);
    return 0;
}

/* Merges one window with rt_query_merge and exports it to path; returns the merge ms. */
static double merge_window(struct rt_store *s, const struct bench_source *src, int64_t from,
                           int64_t to, const char *path)
{
    struct rt_store_filter f = {.service = SERVICE, .type = src->p->type, .from_ns = from,
                                .to_ns = to};
    struct rt_error err = {0};
    int64_t a = bench_now_ns();
    struct rt_profile *m = rt_query_merge(s, &f, &err);
    double ms = (bench_now_ns() - a) / 1e6;
    if (!m) {
        fprintf(stderr, "bench_diff: rt_query_merge: %s\n", err.msg);
        return -1;
    }
    int rc = export_to(m, path);
    rt_profile_free(m);
    return rc ? -1 : ms;
}

/* True when an executable named prog is on PATH. */
static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
        if (access(buf, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* Runs argv with stdout and stderr to out_path; returns wall ms, or -1 (exit status != 0). */
static double run_timed(char *const argv[], const char *out_path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int64_t a = bench_now_ns();
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    double ms = (bench_now_ns() - a) / 1e6;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? ms : -1;
}

/* Prints the first table rows of a pprof -top output (after the "flat  flat%" header). */
static void print_top_rows(const char *path, int rows)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    int in_table = 0;
    while (rows > 0 && fgets(line, sizeof(line), f)) {
        if (in_table) {
            printf("    %s", line);
            rows--;
        } else if (strstr(line, "flat%")) {
            in_table = 1;
            printf("    %s", line);
        }
    }
    fclose(f);
}

/* The pprof binary that `go tool pprof` runs (Go 1.24+ builds tools into the build cache
 * and `go tool -n` names the file), so its run can be timed without the go command's own
 * start-up. Returns 0 with path set, or -1 (older go, or not found). */
static int resolve_pprof(const char *dir, char *path, size_t size)
{
    char out[4200];
    snprintf(out, sizeof(out), "%s/go-tool-n.txt", dir);
    char *argv[] = {"go", "tool", "-n", "pprof", NULL};
    if (run_timed(argv, out) < 0)
        return -1;
    FILE *f = fopen(out, "r");
    if (!f)
        return -1;
    int rc = fgets(path, (int)size, f) ? 0 : -1;
    fclose(f);
    if (rc == 0)
        path[strcspn(path, "\r\n")] = 0;
    return rc == 0 && path[0] == '/' && access(path, X_OK) == 0 ? 0 : -1;
}

/* Median wall ms of argv over o->ref_runs runs after one warm-up; prints the runs. */
static int time_command(char *const argv[], const char *out, const char *label,
                        const struct opts *o, double *median_ms)
{
    double ms[16];
    int runs = o->ref_runs < 16 ? o->ref_runs : 16;
    for (int i = -1; i < runs; i++) {
        double t = run_timed(argv, out);
        if (t < 0) {
            fprintf(stderr, "bench_diff: %s failed (output in %s)\n", label, out);
            return -1;
        }
        if (i >= 0)
            ms[i] = t;
    }
    *median_ms = bench_median(ms, (size_t)runs);
    printf("  %s runs (ms, sorted):", label);
    for (int i = 0; i < runs; i++)
        printf(" %.1f", ms[i]);
    printf("\n");
    return 0;
}

/* The reference: `go tool pprof -top -diff_base=base cur` on the merged windows, and the
 * same arguments given straight to the pprof binary (*direct_ms -1 when not resolvable). */
static int time_reference(const char *dir, const struct opts *o, double *median_ms,
                          double *direct_ms)
{
    char base[4200], cur[4200], dbase[4300], out[4200], bin[4096];
    snprintf(base, sizeof(base), "%s/base.pb.gz", dir);
    snprintf(cur, sizeof(cur), "%s/cur.pb.gz", dir);
    snprintf(dbase, sizeof(dbase), "-diff_base=%s", base);
    snprintf(out, sizeof(out), "%s/pprof-top.txt", dir);
    char *argv[] = {"go", "tool", "pprof", "-top", dbase, cur, NULL};
    if (time_command(argv, out, "go tool pprof -top -diff_base", o, median_ms))
        return -1;
    printf("  pprof's top rows:\n");
    print_top_rows(out, 3);
    *direct_ms = -1;
    if (resolve_pprof(dir, bin, sizeof(bin)) == 0) {
        char *dargv[] = {bin, "-top", dbase, cur, NULL};
        if (time_command(dargv, out, "pprof binary (go tool -n pprof) -top -diff_base", o,
                         direct_ms))
            *direct_ms = -1;
    } else {
        printf("  `go tool -n pprof` does not name a binary: the direct run is skipped\n");
    }
    return 0;
}

/* Optional: `go tool pprof -proto` merging the 600 files of each window (timed once each),
 * what a user without RootTrace would run before the diff. Returns the summed ms. */
static double time_file_merge(const char *dir, const struct opts *o)
{
    size_t n = o->per_window;
    char **argv = calloc(n + 5, sizeof(*argv));
    char *paths = malloc(n * 4300);
    double total = 0;
    if (!argv || !paths) {
        total = -1;
        goto out;
    }
    for (int w = 0; w < 2 && total >= 0; w++) {
        const char *tag = w ? "cur" : "base";
        argv[0] = "go", argv[1] = "tool", argv[2] = "pprof", argv[3] = "-proto";
        for (size_t k = 0; k < n; k++) {
            argv[4 + k] = paths + k * 4300;
            snprintf(argv[4 + k], 4300, "%s/%s-%04zu.pb.gz", dir, tag, k);
        }
        argv[4 + n] = NULL;
        char out[4200];
        snprintf(out, sizeof(out), "%s/files-%s-merged.pb.gz", dir, tag);
        double t = run_timed(argv, out);
        total = t < 0 ? -1 : total + t;
    }
out:
    free(paths);
    free(argv);
    return total;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--file NAME] [--grow FRAME] [--factor F] [--profiles N] [--runs N]\n"
            "          [--ref-runs N] [--seed S] [--no-merge-ref] [--data DIR]\n"
            "  --file NAME     source pprof in the data directory (default gdu__default.pgo)\n"
            "  --grow FRAME    function grown in the current window (default: 5th by self)\n"
            "  --factor F      its weight in the current window (default 3)\n"
            "  --profiles N    6 s profiles per window (default 600 = 1 h)\n"
            "  --no-merge-ref  skip timing `go tool pprof -proto` over the per-profile files\n",
            argv0);
    return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.data = bench_data_dir(), .file = "gdu__default.pgo", .per_window = 600,
                       .runs = 5, .ref_runs = 3, .factor = 3, .seed = 42, .merge_ref = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-merge-ref") == 0) {
            o->merge_ref = false;
            continue;
        }
        if (!v)
            return usage(argv[0]);
        i++;
        if (strcmp(a, "--file") == 0)
            o->file = v;
        else if (strcmp(a, "--grow") == 0)
            o->grow = v;
        else if (strcmp(a, "--factor") == 0)
            o->factor = atof(v);
        else if (strcmp(a, "--profiles") == 0)
            o->per_window = (size_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--runs") == 0)
            o->runs = atoi(v);
        else if (strcmp(a, "--ref-runs") == 0)
            o->ref_runs = atoi(v);
        else if (strcmp(a, "--seed") == 0)
            o->seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--data") == 0)
            o->data = v;
        else
            return usage(argv[0]);
    }
    if (o->per_window < 1 || o->runs < 1 || o->ref_runs < 1 || !(o->factor > 0))
        return usage(argv[0]);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o))
        return 2;
    struct bench_source src = {0};
    if (bench_load_source(&src, o.data, o.file, o.grow))
        return 1;
    printf("== bench_diff: %s (%s, %zu stacks, %u frames), 2 windows x %zu profiles of 6 s\n",
           o.file, rt_ptype_name(src.p->type), src.p->nstacks, src.p->frames.count,
           o.per_window);
    printf("  grown in the current window: %s x %.2f (seed %" PRIu64 ")\n",
           rt_profile_frame(src.p, src.grow_id), o.factor, o.seed);

    int status = 1;
    char dir[4096];
    if (!bench_mkdtemp(dir, sizeof(dir), "bench-diff")) {
        perror("mkdtemp");
        goto out_free_src;
    }
    struct rt_error err = {0};
    struct rt_store *s = rt_store_open(dir, &err);
    if (!s) {
        fprintf(stderr, "bench_diff: rt_store_open: %s\n", err.msg);
        goto out_rm;
    }
    bool have_go = on_path("go");
    int64_t a = bench_now_ns();
    size_t nrows = 0;
    if (build_store(s, &src, &o, have_go && o.merge_ref ? dir : NULL, &nrows))
        goto out_close;
    printf("  store built in %.1f s: %" PRId64 " profiles, %zu stack rows, %.1f MB on disk\n",
           (bench_now_ns() - a) / 1e9, rt_store_profile_count(s), nrows,
           rt_store_disk_bytes(s) / 1e6);

    double diff_ms, ref_ms = -1, direct_ms = -1, files_ms = -1;
    bool first;
    if (time_diff(s, &src, &o, &diff_ms, &first))
        goto out_close;
    int64_t w = (int64_t)o.per_window * PROFILE_NS;
    char base[4200], cur[4200];
    snprintf(base, sizeof(base), "%s/base.pb.gz", dir);
    snprintf(cur, sizeof(cur), "%s/cur.pb.gz", dir);
    double mb = merge_window(s, &src, T0_NS, T0_NS + w, base);
    double mc = merge_window(s, &src, T0_NS + w, T0_NS + 2 * w, cur);
    if (mb < 0 || mc < 0)
        goto out_close;
    printf("  rt_query_merge: baseline %.1f ms, current %.1f ms (export not timed)\n", mb, mc);
    if (!have_go) {
        printf("  go not found on PATH: the go tool pprof reference is skipped\n");
    } else {
        if (time_reference(dir, &o, &ref_ms, &direct_ms))
            goto out_close;
        if (o.merge_ref)
            files_ms = time_file_merge(dir, &o);
    }

    printf("\n%-44s %10s\n", "diff of 2 x 1 h windows", "ms");
    printf("%-44s %10.1f\n", "RootTrace rt_query_diff (median)", diff_ms);
    if (ref_ms >= 0) {
        printf("%-44s %10.1f\n", "go tool pprof -top -diff_base, merged (median)", ref_ms);
        if (direct_ms >= 0)
            printf("%-44s %10.1f\n", "  the pprof binary alone, same args (median)", direct_ms);
        if (files_ms >= 0)
            printf("%-44s %10.1f\n", "  + go tool pprof -proto of the 2 x N files", files_ms);
        printf("\nRATIO diff rootrace/pprof %.2f  (%.1f ms vs %.1f ms; grown first: %s)\n",
               diff_ms / ref_ms, diff_ms, ref_ms, first ? "yes" : "NO");
        if (direct_ms >= 0)
            printf("RATIO diff rootrace/pprof-binary %.2f  (%.1f ms vs %.1f ms without the go "
                   "command's start-up)\n", diff_ms / direct_ms, diff_ms, direct_ms);
    } else {
        printf("\nRATIO diff rootrace/pprof skipped (no go)  (%.1f ms; grown first: %s)\n",
               diff_ms, first ? "yes" : "NO");
    }
    status = first ? 0 : 1;
out_close:
    rt_store_free(s);
out_rm:
    bench_rm_tree(dir);
out_free_src:
    rt_profile_free(src.p);
    return status;
}
