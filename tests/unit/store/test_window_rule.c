/* The window rule, once (DESIGN §6, issue #15): a backend that sums windows itself
 * (rt_store_scan_window: ClickHouse, in SQL) must give what the C path gives from the same
 * store's rows (rt_store_scan, each profile weighted by rt_profile_window_weight), on random
 * profiles and random windows: every profile's weight and weighted sums, every stack's, every
 * (instance, leaf)'s CPU and every leaf's overdispersion input, to 1e-9 relative (the sums are
 * made in another order). SQLite hands its rows to the query layer, which applies the rule
 * itself: there is nothing to compare there, and the test says so. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store_fixture.h"
#include "test.h"

#define S 1000000000LL
#define T0 (1767225600LL * S) /* 2026-01-01T00:00:00Z */
#define NPROFILES 40
#define NWINDOWS 25
#define CAP 256

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t below(int64_t n)
{
    return (int64_t)(next() % (uint64_t)n);
}

/* What one window adds up to, keyed by small handles (linear tables: the test's data is
 * small). */
struct sums {
    int np, ns, nl, nf;
    int64_t pid[CAP];
    double pw[CAP], psamples[CAP], pvalue[CAP];
    uint32_t stack[CAP];
    double ssamples[CAP], svalue[CAP];
    char linst[CAP][8];
    uint32_t lframe[CAP];
    double lvalue[CAP];
    uint32_t frame[CAP];
    double s2[CAP];
};

static int slot_u32(uint32_t *keys, int *n, uint32_t k)
{
    for (int i = 0; i < *n; i++)
        if (keys[i] == k)
            return i;
    keys[*n] = k;
    return (*n)++;
}

static void add_instance_leaf(struct sums *x, const char *inst, uint32_t frame, double v)
{
    int i = 0;
    while (i < x->nl && !(x->lframe[i] == frame && strcmp(x->linst[i], inst) == 0))
        i++;
    if (i == x->nl) {
        snprintf(x->linst[i], sizeof(x->linst[i]), "%s", inst);
        x->lframe[i] = frame;
        x->nl++;
    }
    x->lvalue[i] += v;
}

static uint32_t leaf_of(struct rt_store *s, uint32_t stack_id)
{
    uint32_t frames[RT_MAX_STACK_DEPTH + 1];
    size_t depth;
    if (rt_store_stack(s, stack_id, frames, RT_MAX_STACK_DEPTH + 1, &depth) || depth == 0)
        return UINT32_MAX;
    return frames[depth - 1];
}

struct ref_ctx {
    struct rt_store *s;
    struct sums *x;
    int64_t from, to;
};

/* The C path: each scanned profile weighted by rt_profile_window_weight. */
static int ref_profile(void *ud, const struct rt_profile_meta *m, const struct rt_store_row *rows,
                       size_t nrows)
{
    struct ref_ctx *c = ud;
    struct sums *x = c->x;
    double w = rt_profile_window_weight(m->time_ns, m->duration_ns, c->from, c->to);
    if (w <= 0)
        return 0;
    int p = x->np++;
    x->pid[p] = m->id;
    x->pw[p] = w;
    uint32_t leaves[CAP];
    double xs[CAP];
    int nleaves = 0;
    double n = 0;
    for (size_t r = 0; r < nrows; r++) {
        if (rows[r].samples == 0 && rows[r].value_ns == 0)
            continue;
        double sw = rows[r].samples * w, vw = (double)rows[r].value_ns * w;
        x->psamples[p] += sw;
        x->pvalue[p] += vw;
        int k = slot_u32(x->stack, &x->ns, rows[r].stack_id);
        x->ssamples[k] += sw;
        x->svalue[k] += vw;
        uint32_t leaf = leaf_of(c->s, rows[r].stack_id);
        add_instance_leaf(x, m->instance, leaf, vw * m->cpu_scale);
        int j = 0;
        while (j < nleaves && leaves[j] != leaf)
            j++;
        if (j == nleaves) {
            leaves[nleaves] = leaf;
            xs[nleaves++] = 0;
        }
        xs[j] += sw;
        n += sw;
    }
    for (int j = 0; n > 0 && j < nleaves; j++)
        x->s2[slot_u32(x->frame, &x->nf, leaves[j])] += xs[j] * xs[j] / n;
    return 0;
}

/* The backend's own sums, into the same tables. */
static int got_profile(void *ud, const struct rt_profile_meta *m, double weight, double samples,
                       double value_ns)
{
    struct sums *x = ud;
    int p = x->np++;
    x->pid[p] = m->id;
    x->pw[p] = weight;
    x->psamples[p] = samples;
    x->pvalue[p] = value_ns;
    return 0;
}

static int got_stack(void *ud, uint32_t stack_id, double samples, double value_ns)
{
    struct sums *x = ud;
    int k = slot_u32(x->stack, &x->ns, stack_id);
    x->ssamples[k] += samples;
    x->svalue[k] += value_ns;
    return 0;
}

static int got_instance_leaf(void *ud, const char *instance, uint32_t frame_id, double value_ns)
{
    add_instance_leaf(ud, instance, frame_id, value_ns);
    return 0;
}

static int got_leaf_s2(void *ud, uint32_t frame_id, double s2)
{
    struct sums *x = ud;
    x->s2[slot_u32(x->frame, &x->nf, frame_id)] += s2;
    return 0;
}

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Compares the backend's sums (got) with the C path's (want) for window k. */
static void compare(int k, const struct sums *want, const struct sums *got)
{
    int bad = 0;
    if (want->np != got->np || want->ns != got->ns || want->nl != got->nl)
        bad++;
    for (int i = 0; !bad && i < want->np; i++) {
        int j = 0;
        while (j < got->np && got->pid[j] != want->pid[i])
            j++;
        if (j == got->np || !near(want->pw[i], got->pw[j]) ||
            !near(want->psamples[i], got->psamples[j]) || !near(want->pvalue[i], got->pvalue[j]))
            bad++;
    }
    for (int i = 0; !bad && i < want->ns; i++) {
        int j = 0;
        while (j < got->ns && got->stack[j] != want->stack[i])
            j++;
        if (j == got->ns || !near(want->ssamples[i], got->ssamples[j]) ||
            !near(want->svalue[i], got->svalue[j]))
            bad++;
    }
    for (int i = 0; !bad && i < want->nl; i++) {
        int j = 0;
        while (j < got->nl &&
               !(got->lframe[j] == want->lframe[i] && !strcmp(got->linst[j], want->linst[i])))
            j++;
        if (j == got->nl || !near(want->lvalue[i], got->lvalue[j]))
            bad++;
    }
    /* leaves whose s2 is 0 may be absent on either side */
    for (int i = 0; !bad && i < want->nf; i++) {
        double g = 0;
        for (int j = 0; j < got->nf; j++)
            if (got->frame[j] == want->frame[i])
                g = got->s2[j];
        if (!near(want->s2[i], g))
            bad++;
    }
    if (bad)
        fprintf(stderr, "window %d: the backend's sums differ from the C path's (profiles %d/%d, "
                        "stacks %d/%d, instance leaves %d/%d)\n",
                k, got->np, want->np, got->ns, want->ns, got->nl, want->nl);
    CHECK_INT(bad, 0);
}

static void test_random_windows_agree_with_the_c_path(void)
{
    char *dir = fixture_tmpdir();
    struct rt_error err = {0};
    struct rt_store *s = fixture_open(dir, &err);
    CHECK(s != NULL);
    if (!s) {
        fixture_rmdir(dir);
        return;
    }
    if (!rt_store_aggregates(s)) {
        fprintf(stderr, "skip %s on sqlite: SQLite hands its rows to the query layer, which "
                        "applies rt_profile_window_weight itself; nothing to compare\n",
                __func__);
        rt_store_free(s);
        fixture_rmdir(dir);
        return;
    }
    static const char *pool[] = {"main;a", "main;a;b", "main;c", "main;b", "x;b", "main"};
    static const char *insts[] = {"i0", "i1", "i2"};
    for (int i = 0; i < NPROFILES; i++) {
        int64_t start = T0 + below(600) * S + below(S);
        int64_t dur = below(5) == 0 ? (below(2) ? 0 : -1) : 1 + below(90 * S);
        struct rt_profile *p =
            fixture_profile(RT_PTYPE_CPU, "w", insts[below(3)], NULL, NULL, start, dur);
        p->period_ns = 10000000;
        for (int k = 1 + (int)below(4); k > 0; k--) {
            double samples = below(6) == 0 ? 0 : (double)(1 + below(20));
            CHECK_INT(fixture_add(p, pool[below(6)], samples, (1 + below(30)) * 10000000), 0);
        }
        CHECK_INT(fixture_put(s, p, NULL), 0);
        rt_profile_free(p);
    }
    for (int k = 0; k < NWINDOWS; k++) {
        int64_t from = T0 - 60 * S + below(660) * S + below(S);
        int64_t to = from + 1 + below(400 * S);
        struct rt_store_filter f = {.service = "w", .type = RT_PTYPE_CPU, .from_ns = from,
                                    .to_ns = to};
        static struct sums want, got;
        memset(&want, 0, sizeof(want));
        memset(&got, 0, sizeof(got));
        struct ref_ctx rc = {s, &want, from, to};
        CHECK_INT(rt_store_scan(s, &f, ref_profile, &rc, &err), 0);
        const struct rt_store_window_cb cb = {got_profile, got_stack, got_instance_leaf,
                                              got_leaf_s2};
        CHECK_INT(rt_store_scan_window(s, &f, &cb, &got, &err), 0);
        compare(k, &want, &got);
    }
    rt_store_free(s);
    fixture_rmdir(dir);
}

int main(void)
{
    RUN(test_random_windows_agree_with_the_c_path);
    return TEST_DONE();
}
