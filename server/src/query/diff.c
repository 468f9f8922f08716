/* The diff's ranking and significance test (DESIGN §6): shares per window, delta_pp, and a
 * two-proportion z test on self sample counts with overdispersion phi and Bonferroni. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

double rt__query_chi2(double s2, double x, double n)
{
    if (!(n > 0) || !(x > 0) || x >= n)
        return 0;
    double p = x / n;
    /* sum_i (x_i - n_i p)^2 / (n_i p (1-p)) over every profile, zeros included, expands to
     * (sum_i x_i^2/n_i - 2 x p + p^2 n) / (p (1-p)) = (s2 - x p) / (p (1-p)) since x = n p. */
    double chi2 = (s2 - x * p) / (p * (1 - p));
    return chi2 > 0 ? chi2 : 0;
}

double rt__query_phi(double chi2, uint32_t profiles)
{
    if (profiles < 3)
        return 1;
    double phi = chi2 / (double)(profiles - 2);
    return phi > 1 ? phi : 1;
}

bool rt__query_z(double x_b, double n_b, double x_c, double n_c, double phi, double *z)
{
    if (!(n_b > 0) || !(n_c > 0))
        return false;
    double pbar = (x_b + x_c) / (n_b + n_c);
    if (!(pbar > 0) || !(pbar < 1))
        return false;
    double se = sqrt(phi * pbar * (1 - pbar) * (1 / n_b + 1 / n_c));
    if (!(se > 0))
        return false;
    *z = (x_c / n_c - x_b / n_b) / se;
    return isfinite(*z);
}

double rt__query_pvalue(double z)
{
    return erfc(fabs(z) / sqrt(2.0));
}

/* delta_pp descending, ties by name (qsort_r: queries run on several threads at once). */
static int cmp_row(const void *a, const void *b, void *ud)
{
    const struct rt__query_ctx *c = ud;
    const struct rt__query_diff_row *x = a, *y = b;
    if (x->delta_pp != y->delta_pp)
        return x->delta_pp > y->delta_pp ? -1 : 1;
    int d = strcmp(c->fns[x->fn].name, c->fns[y->fn].name);
    uint32_t fx = c->fns[x->fn].frame_id, fy = c->fns[y->fn].frame_id;
    return d ? d : (fx > fy) - (fx < fy); /* two frames of one name: by stable store id */
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

static void fill_row(const struct rt__query_ctx *c, uint32_t i, struct rt__query_diff_row *r)
{
    const struct rt__query_fn *f = &c->fns[i];
    const struct rt__query_win *b = &c->win[0], *cur = &c->win[1];
    r->fn = i;
    r->base_share = pct(f->self_v[0], b->value_ns);
    r->cur_share = pct(f->self_v[1], cur->value_ns);
    r->delta_pp = r->cur_share - r->base_share;
    r->base_total_share = pct(f->total_v[0], b->value_ns);
    r->cur_total_share = pct(f->total_v[1], cur->value_ns);
    r->is_new = f->total_s[0] == 0 && f->total_v[0] == 0;
}

/* z and the test for one row, m functions tested. */
static void test_row(const struct rt__query_ctx *c, struct rt__query_diff_row *r, size_t m)
{
    const struct rt__query_fn *f = &c->fns[r->fn];
    const struct rt__query_win *b = &c->win[0], *cur = &c->win[1];
    double chi2 = rt__query_chi2(f->s2[0], f->self_s[0], b->samples) +
                  rt__query_chi2(f->s2[1], f->self_s[1], cur->samples);
    double phi = rt__query_phi(chi2, b->profiles_sampled + cur->profiles_sampled);
    r->has_z = rt__query_z(f->self_s[0], b->samples, f->self_s[1], cur->samples, phi, &r->z);
    r->significant = r->has_z && rt__query_pvalue(r->z) < RT__QUERY_ALPHA / (double)m &&
                     fabs(r->delta_pp) >= RT__QUERY_MIN_DELTA_PP;
}

int rt__query_diff_rows(const struct rt__query_ctx *c, bool baseline_missing,
                        bool counts_missing, struct rt__query_diff_row **rows, size_t *n)
{
    struct rt__query_diff_row *out = calloc(c->nfns ? c->nfns : 1, sizeof(*out));
    if (!out)
        return RT_ENOMEM;
    size_t m = 0;
    for (uint32_t i = 0; i < c->nfns; i++) {
        const struct rt__query_fn *f = &c->fns[i];
        if (f->total_s[0] == 0 && f->total_v[0] == 0 && f->total_s[1] == 0 &&
            f->total_v[1] == 0)
            continue; /* only in zero-weight rows */
        fill_row(c, i, &out[m++]);
    }
    for (size_t i = 0; i < m; i++) {
        out[i].has_z = false;
        if (counts_missing)
            out[i].significant = -1;
        else if (baseline_missing)
            out[i].significant = 0;
        else
            test_row(c, &out[i], m);
    }
    qsort_r(out, m, sizeof(*out), cmp_row, (void *)c);
    *rows = out;
    *n = m;
    return 0;
}
