/* Flame graph trees from the aggregated stacks: the plain one of a window and the
 * differential one of a diff, pruned to a node budget (smallest totals go first). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"

#define NONE UINT32_MAX

struct node {
    uint32_t fn;                       /* function index; NONE for the root */
    uint32_t first_child, next_sibling; /* NONE = none */
    uint32_t depth;                    /* root 0 */
    double total[2], self[2], samples[2]; /* per window, weighted */
    bool keep;                         /* emitted */
};

struct tree {
    const struct rt__query_ctx *c;
    bool diff;
    struct node *nodes;
    uint32_t n, cap;
    struct rt__query_map children;     /* (parent << 32 | fn) -> node */
    double win_total[2];               /* window totals (ns), for shares */
};

static int child_of(struct tree *t, uint32_t parent, uint32_t fn, uint32_t *out)
{
    uint64_t key = ((uint64_t)parent << 32) | fn;
    if (rt__query_map_find(&t->children, key, out))
        return 0;
    if (t->n == t->cap) {
        if (t->cap > UINT32_MAX / 4)
            return RT_ENOMEM;
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        struct node *nodes = realloc(t->nodes, (size_t)cap * sizeof(*nodes));
        if (!nodes)
            return RT_ENOMEM;
        t->nodes = nodes;
        t->cap = cap;
    }
    int rc = rt__query_map_put(&t->children, key, t->n);
    if (rc)
        return rc;
    struct node *nd = &t->nodes[t->n];
    memset(nd, 0, sizeof(*nd));
    nd->fn = fn;
    nd->first_child = NONE;
    nd->depth = parent == NONE ? 0 : t->nodes[parent].depth + 1;
    if (parent != NONE) {
        nd->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = t->n;
    } else {
        nd->next_sibling = NONE;
    }
    *out = t->n++;
    return 0;
}

static void add_to(struct node *nd, const struct rt__query_stack *st, int nwin, bool leaf)
{
    for (int k = 0; k < nwin; k++) {
        nd->total[k] += st->value[k];
        nd->samples[k] += st->samples[k];
        if (leaf)
            nd->self[k] += st->value[k];
    }
}

static int build(struct tree *t)
{
    const struct rt__query_ctx *c = t->c;
    int nwin = t->diff ? 2 : 1;
    uint32_t root;
    int rc = child_of(t, NONE, NONE, &root);
    for (uint32_t s = 0; !rc && s < c->nstacks; s++) {
        const struct rt__query_stack *st = &c->stacks[s];
        bool any = false;
        for (int k = 0; k < nwin; k++)
            any = any || st->value[k] != 0 || st->samples[k] != 0;
        if (!any)
            continue;
        add_to(&t->nodes[root], st, nwin, false);
        uint32_t at = root;
        for (uint32_t j = 0; !rc && j < st->depth; j++) {
            rc = child_of(t, at, c->fpool[st->off + j], &at);
            if (!rc)
                add_to(&t->nodes[at], st, nwin, j + 1 == st->depth);
        }
    }
    return rc;
}

/* Pruning order: biggest total first, then shallower, then older; a child never precedes
 * its parent (its total is at most the parent's, its depth larger). */
static int cmp_prune(const void *a, const void *b, void *ud)
{
    const struct node *nodes = ud;
    const struct node *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];
    double kx = fmax(x->total[0], x->total[1]), ky = fmax(y->total[0], y->total[1]);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
    return ia < ib ? -1 : ia > ib;
}

/* Marks the nodes to emit; returns true when some were pruned (-1 on ENOMEM). */
static int prune(struct tree *t, size_t max_nodes)
{
    for (uint32_t i = 0; i < t->n; i++)
        t->nodes[i].keep = true;
    if ((size_t)t->n - 1 <= max_nodes)
        return 0;
    uint32_t *order = malloc(((size_t)t->n - 1) * sizeof(*order));
    if (!order)
        return -1;
    for (uint32_t i = 1; i < t->n; i++) {
        order[i - 1] = i;
        t->nodes[i].keep = false;
    }
    qsort_r(order, t->n - 1, sizeof(*order), cmp_prune, t->nodes);
    for (size_t i = 0; i < max_nodes; i++)
        t->nodes[order[i]].keep = true;
    free(order);
    return 1;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

static const char *node_name(const struct tree *t, const struct node *nd)
{
    return nd->fn == NONE ? "root" : t->c->fns[nd->fn].name;
}


/* Children: total descending (in a diff: current, then baseline), then name. */
static int cmp_child(const void *a, const void *b, void *ud)
{
    const struct tree *t = ud;
    const struct node *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];
    int k = t->diff ? 1 : 0;
    double rx = round(x->total[k]), ry = round(y->total[k]);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    if (t->diff) {
        rx = round(x->total[0]);
        ry = round(y->total[0]);
        if (rx != ry)
            return rx > ry ? -1 : 1;
    }
    return strcmp(node_name(t, x), node_name(t, y));
}

static json_t *node_fields(const struct tree *t, const struct node *nd)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", json_string(node_name(t, nd)));
    if (!t->diff) {
        json_object_set_new(o, "total_ns", rt__query_ns_json(nd->total[0]));
        json_object_set_new(o, "self_ns", rt__query_ns_json(nd->self[0]));
        json_object_set_new(o, "samples", json_real(nd->samples[0]));
        return o;
    }
    double bs = pct(nd->total[0], t->win_total[0]), cs = pct(nd->total[1], t->win_total[1]);
    json_object_set_new(o, "base_ns", rt__query_ns_json(nd->total[0]));
    json_object_set_new(o, "cur_ns", rt__query_ns_json(nd->total[1]));
    json_object_set_new(o, "base_share", json_real(bs));
    json_object_set_new(o, "cur_share", json_real(cs));
    json_object_set_new(o, "delta_pp", json_real(cs - bs));
    return o;
}

static json_t *node_json(const struct tree *t, uint32_t at)
{
    const struct node *nd = &t->nodes[at];
    json_t *o = node_fields(t, nd), *kids = json_array();
    size_t n = 0;
    for (uint32_t ch = nd->first_child; ch != NONE; ch = t->nodes[ch].next_sibling)
        n += t->nodes[ch].keep;
    uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
    if (!o || !kids || !order)
        goto fail;
    n = 0;
    for (uint32_t ch = nd->first_child; ch != NONE; ch = t->nodes[ch].next_sibling)
        if (t->nodes[ch].keep)
            order[n++] = ch;
    qsort_r(order, n, sizeof(*order), cmp_child, (void *)t);
    for (size_t i = 0; i < n; i++) {
        json_t *kid = node_json(t, order[i]);
        if (!kid || json_array_append_new(kids, kid))
            goto fail;
    }
    free(order);
    json_object_set_new(o, "children", kids);
    return o;
fail:
    free(order);
    json_decref(kids);
    json_decref(o);
    return NULL;
}

json_t *rt__query_flame_json(const struct rt__query_ctx *c, bool diff, size_t max_nodes)
{
    struct tree t = {.c = c, .diff = diff && c->nwin == 2};
    rt__query_map_init(&t.children);
    t.win_total[0] = c->win[0].value_ns;
    t.win_total[1] = c->nwin == 2 ? c->win[1].value_ns : 0;
    json_t *root = NULL;
    if (build(&t))
        goto out;
    int pruned = prune(&t, max_nodes);
    if (pruned < 0)
        goto out;
    root = node_json(&t, 0);
    if (root)
        json_object_set_new(root, "truncated", json_boolean(pruned));
out:
    free(t.nodes);
    rt__query_map_cleanup(&t.children);
    return root;
}
