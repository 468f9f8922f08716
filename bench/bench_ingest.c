/* Ingest benchmark: the shared real pprof files, repeated round-robin to a target of
 * compressed bytes, through (a) rt_ingest_parse + rt_store_put_profiles into a fresh SQLite
 * store, (b) rt_ingest_parse alone and (c) bare zlib gunzip, the reference, in one run; and
 * (d) bare libdeflate gunzip, the inflater rt_ingest_gunzip uses first, printed beside it;
 * and (e) the pass (a) again with the store on /dev/shm, where a commit has no disk to wait
 * for, so that the disk's part (the flushes, and the filesystem's work on the writes) is
 * measured apart from the store's own work. The passes run interleaved, a round of the
 * files at a time in an order shuffled per round (run_passes); --sequential runs each over
 * the whole schedule in turn. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <libdeflate.h>
#include <zlib.h>

#include "bench.h"
#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/memory.h"
#include "rt/profile.h"
#include "rt/store.h"

#define FILES BENCH_INGEST_FILES
#define TMPFS_DIR "/dev/shm"
#define NFILES BENCH_INGEST_NFILES

/* One input file, loaded once, and what each pass spent on it. */
struct input {
    const char *name;
    unsigned char *data;  /* the file as stored (gzip, or raw pprof) */
    size_t len;           /* compressed bytes (= raw bytes for a raw file) */
    size_t raw_len;       /* bytes after gunzip */
    bool gz;              /* starts with the gzip magic */
    size_t nprof;         /* profiles one parse yields (1, or 2 for cpu + wall) */
    size_t nstacks;       /* distinct stacks of the first profile */
    size_t uses;          /* uploads of this file in the run */
    int64_t gunzip_ns, parse_ns, store_ns, deflate_ns; /* summed over its uploads, per pass */
};

/* What each pass does with an upload. */
enum pass_kind { PASS_GUNZIP, PASS_LIBDEFLATE, PASS_PARSE, PASS_STORE };

/* One pass over the schedule: its totals for the summary table, and what it keeps from one
 * slice of the schedule to the next (pass_open .. pass_close). */
struct pass {
    const char *label;
    enum pass_kind kind;
    const char *base;     /* PASS_STORE: the store's parent directory; NULL: $TMPDIR */
    bool per_file;        /* PASS_STORE: add each upload's store time to its input's */
    int64_t ns;           /* wall time of the pass, summed over its slices */
    size_t uploads;       /* bodies handled */
    size_t profiles;      /* profiles produced (parse) or stored (store) */
    /* state */
    unsigned char *out;   /* the inflate passes' output buffer */
    size_t cap;
    z_stream z;
    bool z_open;
    struct libdeflate_decompressor *d;
    struct rt_store *s;   /* PASS_STORE: a fresh store in dir */
    char dir[4096];
    struct rt_ingest_limits lim;
};
static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--mb N] [--data DIR] [--only gunzip|libdeflate|parse|store]\n"
                    "          [--libc-malloc] [--sequential]\n"
                    "  --mb N      compressed megabytes to push through each pass (default 300)\n"
                    "  --data DIR  the shared pprof files (default $RT_BENCH_DATA or %s)\n"
                    "  --only P    run one pass alone (to profile it, e.g. under perf)\n"
                    "  --libc-malloc  glibc's malloc thresholds, not the server's (rt/memory.h)\n"
                    "  --sequential   each pass over the whole schedule in turn, not interleaved\n"
                    "                 a round of the files at a time\n",
            argv0, BENCH_DEFAULT_DATA);
    return 2;
}

/* Inflates a gzip body into out (cap bytes) with a reused stream; returns bytes or -1. */
static long inflate_into(z_stream *z, const unsigned char *in, size_t len, unsigned char *out,
                         size_t cap)
{
    if (inflateReset(z) != Z_OK)
        return -1;
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)len;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    int rc = inflate(z, Z_FINISH);
    if (rc != Z_STREAM_END)
        return -1;
    return (long)z->total_out;
}

/* Size of a gzip body once inflated (measured with a growing buffer). */
static size_t gunzip_size(const unsigned char *in, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return 0;
    unsigned char chunk[65536];
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    size_t total = 0;
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof(chunk);
        rc = inflate(&z, Z_NO_FLUSH);
        total += sizeof(chunk) - z.avail_out;
    } while (rc == Z_OK);
    inflateEnd(&z);
    return rc == Z_STREAM_END ? total : 0;
}

/* Upload i of an input: service "bench-ingest", the file as instance (bench.h). */
static void params_for(struct rt_ingest_params *q, const struct input *in, size_t i, char *id,
                       size_t idsize)
{
    bench_upload_params(q, "bench-ingest", in->name, i, id, idsize);
}

/* Loads the files and keeps those ingest accepts. Returns how many were kept. */
static size_t load_inputs(const char *dir, struct input *ins)
{
    struct rt_ingest_limits lim;
    rt_ingest_limits_default(&lim);
    size_t n = 0;
    for (size_t f = 0; f < NFILES; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, FILES[f]);
        struct input *in = &ins[n];
        memset(in, 0, sizeof(*in));
        in->name = FILES[f];
        in->data = bench_read_file(path, &in->len);
        if (!in->data) {
            printf("  skip %-34s cannot read %s: %s\n", FILES[f], path, strerror(errno));
            continue;
        }
        in->gz = rt_ingest_is_gzip(in->data, in->len);
        in->raw_len = in->gz ? gunzip_size(in->data, in->len) : in->len;
        struct rt_ingest_params q;
        char id[64];
        params_for(&q, in, 0, id, sizeof(id));
        struct rt_profile *ps[2];
        size_t np = 0;
        struct rt_error err = {0};
        int rc = rt_ingest_parse(in->data, in->len, &q, &lim, ps, &np, &err);
        if (rc) {
            printf("  skip %-34s rt_ingest_parse refuses it: %s: %s\n", FILES[f],
                   rt_err_name(rc), err.msg);
            free(in->data);
            continue;
        }
        in->nprof = np;
        in->nstacks = np ? ps[0]->nstacks : 0;
        printf("  load %-34s %9zu B %s -> %9zu B, %zu profile(s) (%s), %zu stacks\n", FILES[f],
               in->len, in->gz ? "gzip" : "raw ", in->raw_len, np,
               np ? rt_ptype_name(ps[0]->type) : "-", in->nstacks);
        for (size_t k = 0; k < np; k++)
            rt_profile_free(ps[k]);
        n++;
    }
    return n;
}

/* Readies pass p: (c) the reference, bare zlib inflate of the same bytes (memcpy for a raw
 * file) into a preallocated buffer, or (d) bare libdeflate, one call a body, what
 * rt_ingest_gunzip's first inflater costs without the server around it; (b) rt_ingest_parse
 * alone; (a) rt_ingest_parse + rt_store_put_profiles into a fresh store, under $TMPDIR or
 * p->base (the tmpfs pass). Returns 0, or -1 with the reason on stderr. */
static int pass_open(struct pass *p, const struct input *ins, size_t nin)
{
    rt_ingest_limits_default(&p->lim);
    if (p->kind == PASS_GUNZIP || p->kind == PASS_LIBDEFLATE) {
        for (size_t k = 0; k < nin; k++)
            p->cap = ins[k].raw_len > p->cap ? ins[k].raw_len : p->cap;
        p->out = malloc(p->cap ? p->cap : 1);
        if (p->kind == PASS_LIBDEFLATE)
            p->d = libdeflate_alloc_decompressor();
        else
            p->z_open = inflateInit2(&p->z, 16 + MAX_WBITS) == Z_OK;
        if (p->out && (p->d || p->z_open))
            return 0;
        fprintf(stderr, "%s: out of memory\n", p->label);
        return -1;
    }
    if (p->kind != PASS_STORE)
        return 0;
    if (!(p->base ? bench_mkdtemp_in(p->dir, sizeof(p->dir), p->base, "bench-ingest")
                  : bench_mkdtemp(p->dir, sizeof(p->dir), "bench-ingest"))) {
        perror("mkdtemp");
        return -1;
    }
    struct rt_error err = {0};
    p->s = rt_store_open(p->dir, &err);
    if (!p->s) {
        fprintf(stderr, "rt_store_open %s: %s\n", p->dir, err.msg);
        bench_rm_tree(p->dir);
        return -1;
    }
    return 0;
}

/* One upload through pass p: the time of its part goes to the input (per file). */
static int pass_upload(struct pass *p, struct input *in, size_t i)
{
    int rc = 0;
    if (p->kind == PASS_GUNZIP || p->kind == PASS_LIBDEFLATE) {
        bool ld = p->kind == PASS_LIBDEFLATE;
        int64_t a = bench_now_ns();
        size_t got = 0;
        if (!in->gz)
            memcpy(p->out, in->data, in->len);
        else if (ld)
            rc = libdeflate_gzip_decompress(p->d, in->data, in->len, p->out, p->cap, &got) ==
                         LIBDEFLATE_SUCCESS && got == in->raw_len ? 0 : -1;
        else
            rc = inflate_into(&p->z, in->data, in->len, p->out, p->cap) == (long)in->raw_len
                     ? 0 : -1;
        *(ld ? &in->deflate_ns : &in->gunzip_ns) += bench_now_ns() - a;
        p->profiles++;
        if (rc)
            fprintf(stderr, "%s %s: not inflated to its %zu bytes\n", p->label, in->name,
                    in->raw_len);
        return rc;
    }
    struct rt_ingest_params q;
    char id[64];
    params_for(&q, in, i, id, sizeof(id));
    struct rt_profile *out[2];
    struct rt_store_put_result res[2];
    size_t np = 0;
    struct rt_error err = {0};
    int64_t a = p->kind == PASS_PARSE ? bench_now_ns() : 0;
    rc = rt_ingest_parse(in->data, in->len, &q, &p->lim, out, &np, &err);
    if (rc) {
        fprintf(stderr, "parse %s: %s\n", in->name, err.msg);
        return -1;
    }
    if (p->kind == PASS_PARSE) {
        for (size_t k = 0; k < np; k++)
            rt_profile_free(out[k]);
        in->parse_ns += bench_now_ns() - a;
        p->profiles += np;
        return 0;
    }
    a = bench_now_ns();
    rc = rt_store_put_profiles(p->s, out, np, res, &err);
    in->store_ns += p->per_file ? bench_now_ns() - a : 0;
    for (size_t k = 0; k < np; k++) {
        p->profiles += rc == 0 && !res[k].duplicate;
        rt_profile_free(out[k]);
    }
    if (rc)
        fprintf(stderr, "rt_store_put_profiles %s: %s\n", in->name, err.msg);
    return rc ? -1 : 0;
}

/* Uploads [i0, i1) of the schedule through pass p, timed as a whole into p->ns. Not inlined:
 * `valgrind --tool=callgrind --toggle-collect=pass_run` collects an --only pass's uploads. */
__attribute__((noinline)) static int pass_run(struct pass *p, struct input *ins, size_t nin,
                                               size_t i0, size_t i1)
{
    int rc = 0;
    int64_t t0 = bench_now_ns();
    for (size_t i = i0; i < i1 && rc == 0; i++)
        rc = pass_upload(p, &ins[i % nin], i);
    p->ns += bench_now_ns() - t0;
    p->uploads += i1 - i0;
    return rc;
}

/* Frees what pass_open made (again: nothing); a store pass prints its size first (when ok). */
static void pass_close(struct pass *p, bool ok)
{
    free(p->out);
    p->out = NULL;
    if (p->d)
        libdeflate_free_decompressor(p->d);
    p->d = NULL;
    if (p->z_open)
        inflateEnd(&p->z);
    p->z_open = false;
    if (p->s) {
        if (ok)
            printf("  %s: %" PRId64 " profiles, %.1f MB on disk (%s)\n", p->label,
                   rt_store_profile_count(p->s), rt_store_disk_bytes(p->s) / 1e6, p->dir);
        rt_store_free(p->s);
        p->s = NULL;
        bench_rm_tree(p->dir);
    }
}

/* splitmix64: the rounds' orders, the same in every run. */
static uint64_t next_random(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Runs the passes over the schedule of nup uploads. Interleaved (slice < nup): in slices of
 * `slice` uploads, each slice through every pass in an order shuffled per slice (a fixed
 * seed), so that the machine's speed, which moves within seconds on a VM, weighs on every
 * pass alike, and each pass comes first, or after any other one that warmed or churned the
 * caches, about as often. Otherwise each pass opens, runs the whole schedule and closes in
 * turn (--sequential, the method before stop 61). ok[k] says which passes ran whole; one that
 * fails is reported and closed at once (a full /dev/shm freed), and when one of the first
 * `required` fails the run stops. */
static void run_passes(struct pass **ps, size_t npass, size_t required, bool *ok,
                       struct input *ins, size_t nin, size_t nup, size_t slice)
{
    if (slice >= nup) {
        for (size_t k = 0; k < npass; k++) {
            ok[k] = pass_open(ps[k], ins, nin) == 0 && pass_run(ps[k], ins, nin, 0, nup) == 0;
            pass_close(ps[k], ok[k]);
            if (!ok[k] && k < required)
                return;
        }
        return;
    }
    for (size_t k = 0; k < npass; k++)
        ok[k] = pass_open(ps[k], ins, nin) == 0;
    uint64_t seed = 42;
    size_t order[8];
    for (size_t i0 = 0; i0 < nup; i0 += slice) {
        size_t i1 = nup - i0 < slice ? nup : i0 + slice;
        for (size_t k = 0; k < npass; k++)
            order[k] = k;
        for (size_t k = npass - 1; k > 0; k--) { /* Fisher-Yates */
            size_t r = (size_t)(next_random(&seed) % (k + 1)), t = order[k];
            order[k] = order[r], order[r] = t;
        }
        bool stop = false;
        for (size_t j = 0; j < npass; j++) {
            size_t k = order[j];
            if (ok[k] && pass_run(ps[k], ins, nin, i0, i1) != 0) {
                ok[k] = false;
                pass_close(ps[k], false);
            }
            stop = stop || (!ok[k] && k < required);
        }
        if (stop)
            break;
    }
    for (size_t k = 0; k < npass; k++)
        pass_close(ps[k], ok[k]);
}

static void print_pass(const struct pass *p, double comp, double raw, const struct pass *ref)
{
    double s = p->ns / 1e9;
    printf("%-26s %8.2f %11.1f %11.1f %11.1f %13.1f %10.2fx\n", p->label, s, p->uploads / s,
           comp / 1e6 / s, raw / 1e6 / s, s * 1e6 / p->uploads, (double)p->ns / ref->ns);
}

/* Per file: mean microseconds per upload in each pass, and parse's ratio to gunzip. */
static void print_per_file(const struct input *ins, size_t nin)
{
    printf("\nper file (mean us per upload; ratio = parse / gunzip)\n");
    printf("%-34s %6s %9s %9s %10s %10s %10s %9s\n", "file", "uses", "comp KB", "gunzip",
           "libdeflate", "parse", "store", "ratio");
    for (size_t k = 0; k < nin; k++) {
        const struct input *in = &ins[k];
        double u = in->uses ? (double)in->uses : 1;
        printf("%-34s %6zu %9.1f %9.1f %10.1f %10.1f %10.1f %8.1fx\n", in->name, in->uses,
               in->len / 1e3, in->gunzip_ns / u / 1e3, in->deflate_ns / u / 1e3,
               in->parse_ns / u / 1e3, in->store_ns / u / 1e3,
               in->gunzip_ns ? (double)in->parse_ns / in->gunzip_ns : 0.0);
    }
}

/* --only: one pass alone, printed on its own (no ratio: the reference did not run). */
static int run_only(const char *only, struct input *ins, size_t nin, size_t nup, double comp,
                    double raw)
{
    struct pass p = {.label = only, .per_file = true};
    if (strcmp(only, "gunzip") == 0)
        p.kind = PASS_GUNZIP;
    else if (strcmp(only, "libdeflate") == 0)
        p.kind = PASS_LIBDEFLATE;
    else if (strcmp(only, "parse") == 0)
        p.kind = PASS_PARSE;
    else if (strcmp(only, "store") == 0)
        p.kind = PASS_STORE;
    else
        return usage("bench_ingest");
    struct pass *ps[] = {&p};
    bool ok = false;
    run_passes(ps, 1, 1, &ok, ins, nin, nup, nup);
    if (!ok)
        return 1;
    print_pass(&p, comp, raw, &p);
    return 0;
}

int main(int argc, char **argv)
{
    double mb = 300;
    const char *dir = bench_data_dir(), *only = NULL;
    bool libc_malloc = false, sequential = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc)
            mb = atof(argv[++i]);
        else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--libc-malloc") == 0)
            libc_malloc = true;
        else if (strcmp(argv[i], "--sequential") == 0)
            sequential = true;
        else
            return usage(argv[0]);
    }
    /* The server's malloc policy (rt/memory.h), unless asked to measure glibc's defaults. */
    if (!libc_malloc && rt_memory_policy()) {
        fprintf(stderr, "bench_ingest: the C library refused the malloc policy\n");
        return 1;
    }
    if (mb <= 0)
        return usage(argv[0]);

    printf("== bench_ingest: %s, target %.0f MB compressed per pass\n", dir, mb);
    struct input ins[NFILES];
    size_t nin = load_inputs(dir, ins);
    if (nin == 0) {
        fprintf(stderr, "bench_ingest: no input file accepted\n");
        return 1;
    }
    /* The schedule: uploads round-robin over the inputs until the target is reached. */
    double comp = 0, raw = 0, target = mb * 1e6;
    size_t nup = 0;
    while (comp < target) {
        struct input *in = &ins[nup % nin];
        comp += in->len, raw += in->raw_len, in->uses++;
        nup++;
    }
    printf("  schedule: %zu uploads, %.1f MB compressed, %.1f MB decompressed\n", nup,
           comp / 1e6, raw / 1e6);
    if (only)
        return run_only(only, ins, nin, nup, comp, raw);

    /* The tmpfs pass separates the disk's part of the store (its flushes, one fdatasync per
     * upload, and the filesystem's work on the writes) from the store's own work, where
     * /dev/shm is a tmpfs; else, or when the pass fails (no room there), it is left out, and
     * says why. */
    const char *tmp = getenv("TMPDIR");
    struct statfs fs;
    bool tmpfs = statfs(TMPFS_DIR, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
    if (!tmpfs)
        printf("  (no store pass on tmpfs: %s is not a tmpfs here)\n", TMPFS_DIR);
    else if (statfs(tmp && *tmp ? tmp : "/tmp", &fs) == 0 && fs.f_type == TMPFS_MAGIC)
        printf("  (no store pass on tmpfs: the durable pass's $TMPDIR is one already)\n"),
            tmpfs = false;
    struct pass pg = {.label = "gunzip (reference)", .kind = PASS_GUNZIP},
                pd = {.label = "gunzip (libdeflate)", .kind = PASS_LIBDEFLATE},
                pp = {.label = "parse", .kind = PASS_PARSE},
                pa = {.label = "parse+store", .kind = PASS_STORE, .per_file = true},
                pm = {.label = "parse+store (tmpfs)", .kind = PASS_STORE, .base = TMPFS_DIR};
    struct pass *ps[] = {&pg, &pd, &pp, &pa, &pm};
    bool ok[5] = {false};
    /* A slice is one round of the inputs (each file once: ~1.5 MB compressed, a few tens of
     * ms per pass), unless --sequential. */
    size_t slice = sequential ? nup : nin;
    printf("  passes %s\n", slice >= nup ? "one after the other"
                                         : "interleaved: each round of the files through every "
                                           "pass, in an order shuffled per round");
    run_passes(ps, tmpfs ? 5 : 4, 4, ok, ins, nin, nup, slice);
    if (!ok[0] || !ok[1] || !ok[2] || !ok[3])
        return 1;
    if (tmpfs && !ok[4])
        printf("  (the store pass on tmpfs failed, above: left out)\n"), tmpfs = false;

    printf("\n%-26s %8s %11s %11s %11s %13s %11s\n", "pass", "s", "profiles/s", "comp MB/s",
           "decomp MB/s", "us/profile", "vs gunzip");
    print_pass(&pg, comp, raw, &pg);
    print_pass(&pd, comp, raw, &pg);
    print_pass(&pp, comp, raw, &pg);
    print_pass(&pa, comp, raw, &pg);
    if (tmpfs)
        print_pass(&pm, comp, raw, &pg);
    printf("  (profiles/s = uploaded pprof bodies per second; they gave %zu stored profiles)\n",
           pa.profiles);
    print_per_file(ins, nin);
    printf("\nRATIO ingest parse/gunzip %.2f  parse+store/gunzip %.2f  "
           "(parse %.1f MB/s, parse+store %.1f MB/s compressed)\n",
           (double)pp.ns / pg.ns, (double)pa.ns / pg.ns, comp / 1e6 / (pp.ns / 1e9),
           comp / 1e6 / (pa.ns / 1e9));
    printf("RATIO ingest against libdeflate: parse/libdeflate %.2f  parse+store/libdeflate %.2f  "
           "(libdeflate/gunzip %.2f)\n",
           (double)pp.ns / pd.ns, (double)pa.ns / pd.ns, (double)pd.ns / pg.ns);
    if (tmpfs)
        printf("RATIO ingest with the store on tmpfs (%s, nothing to flush): "
               "parse+store/gunzip %.2f; the disk's part (flushes and writes) %.2f of the "
               "reference, %.2f ms per upload\n",
               TMPFS_DIR, (double)pm.ns / pg.ns, (double)(pa.ns - pm.ns) / pg.ns,
               (pa.ns - pm.ns) / 1e6 / nup);
    for (size_t k = 0; k < nin; k++)
        free(ins[k].data);
    return 0;
}
