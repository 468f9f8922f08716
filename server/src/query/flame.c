/* Flame graph trees from the aggregated stacks: the plain one of a window and the
 * differential one of a diff, pruned to a node budget (smallest totals go first) and
 * emitted flat, as preorder node columns. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query_internal.h"
#include "rt/buf.h"
#include "rt/json_text.h"

#define NONE UINT32_MAX

struct node {
    uint32_t fn;                       /* function index; NONE for the root */
    uint32_t parent;                   /* node index; NONE for the root */
    uint32_t first_child, next_sibling; /* NONE = none */
    uint32_t depth;                    /* root 0 */
    uint32_t out;                      /* preorder index in the answer, once emitted */
    double total[2], self[2], samples[2]; /* per window, weighted */
    bool keep;                         /* emitted */
};

struct tree {
    const struct rt__query_ctx *c;
    bool diff;
    struct node *nodes;
    uint32_t n, cap;
    double win_total[2];               /* window totals (ns), for shares */
};

/* Appends a node of function fn under parent (NONE: the root), first among its siblings. The
 * caller made room (t->cap). Returns its index. */
static uint32_t new_node(struct tree *t, uint32_t parent, uint32_t fn)
{
    struct node *nd = &t->nodes[t->n];
    memset(nd, 0, sizeof(*nd));
    nd->fn = fn;
    nd->parent = parent;
    nd->first_child = NONE;
    nd->next_sibling = NONE;
    if (parent != NONE) {
        nd->depth = t->nodes[parent].depth + 1;
        nd->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = t->n;
    }
    return t->n++;
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

/* Stacks x and y (indexes) in the order of their frames, as words of function indexes: a
 * stack before those it is a prefix of. */
static int cmp_frames(const void *a, const void *b, void *ud)
{
    const struct rt__query_ctx *c = ud;
    const struct rt__query_stack *x = &c->stacks[*(const uint32_t *)a];
    const struct rt__query_stack *y = &c->stacks[*(const uint32_t *)b];
    const uint32_t *fx = c->fpool + x->off, *fy = c->fpool + y->off;
    uint32_t n = x->depth < y->depth ? x->depth : y->depth;
    for (uint32_t j = 0; j < n; j++)
        if (fx[j] != fy[j])
            return fx[j] < fy[j] ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The tree of every stack with a value: a node per distinct path from the root. Made in two
 * passes, with no lookup of a node by (parent, function):
 * 1. the stacks in cmp_frames order, where those that share a path lie next to one another:
 *    each adds a node for every frame past what it shares with the stack before it (shape:
 *    parent and function), and notes the shapes of its path where its frames lie (spath);
 * 2. the stacks in their own order, each path root first: a node met for the first time gets
 *    the next index, first among its siblings, and every node its values.
 * So the nodes, their order, their sibling lists and every sum's order of additions are those
 * of adding the stacks one by one, each frame looked up by (parent, function) and made when
 * absent, as the tree was built before stop 50 (one hash probe per frame: a third of a diff
 * of 20,000 stacks). */
static int build(struct tree *t)
{
    const struct rt__query_ctx *c = t->c;
    int nwin = t->diff ? 2 : 1;
    struct shape {
        uint32_t parent, fn; /* parent's shape index (0: the root) */
    } *sh = NULL;
    uint32_t *order = malloc(((size_t)c->nstacks + 1) * sizeof(*order));
    uint32_t *path = NULL, *final = NULL, *spath = NULL, m = 0, deepest = 1;
    size_t frames = 1;
    for (uint32_t s = 0; order && s < c->nstacks; s++) {
        const struct rt__query_stack *st = &c->stacks[s];
        bool any = false;
        for (int k = 0; k < nwin; k++)
            any = any || st->value[k] != 0 || st->samples[k] != 0;
        if (any) {
            order[m++] = s;
            frames += st->depth;
            deepest = st->depth > deepest ? st->depth : deepest;
        }
    }
    size_t cap_sh = 0;
    int rc = order && frames < NONE ? 0 : RT_ENOMEM;
    if (!rc) {
        path = malloc((size_t)deepest * sizeof(*path));
        spath = malloc(((size_t)c->nfpool + 1) * sizeof(*spath)); /* shapes, as c->fpool */
        rc = path && spath ? rt_array_grow((void **)&sh, &cap_sh, 1, sizeof(*sh)) : RT_ENOMEM;
    }
    if (rc)
        goto out;
    qsort_r(order, m, sizeof(*order), cmp_frames, (void *)c);
    uint32_t nsh = 1, prev_depth = 0;
    const uint32_t *prev = NULL;
    sh[0] = (struct shape){NONE, NONE};
    for (uint32_t i = 0; !rc && i < m; i++) {
        const struct rt__query_stack *st = &c->stacks[order[i]];
        const uint32_t *fp = c->fpool + st->off;
        uint32_t same = 0;
        while (prev && same < st->depth && same < prev_depth && fp[same] == prev[same])
            same++;
        if ((rc = rt_array_grow((void **)&sh, &cap_sh, (size_t)nsh + st->depth - same,
                                sizeof(*sh))))
            break;
        for (uint32_t j = same; j < st->depth; j++) {
            sh[nsh] = (struct shape){j ? path[j - 1] : 0, fp[j]};
            path[j] = nsh++;
        }
        memcpy(spath + st->off, path, st->depth * sizeof(*path));
        prev = fp;
        prev_depth = st->depth;
    }
    /* the nodes: as many as shapes (frames shared by stacks made one shape) */
    if (!rc) {
        final = malloc((size_t)nsh * sizeof(*final));
        t->nodes = malloc((size_t)nsh * sizeof(*t->nodes));
        t->cap = nsh;
        rc = final && t->nodes ? 0 : RT_ENOMEM;
    }
    if (rc)
        goto out;
    memset(final, 0xff, nsh * sizeof(*final));
    final[0] = new_node(t, NONE, NONE);
    for (uint32_t s = 0; s < c->nstacks; s++) {
        const struct rt__query_stack *st = &c->stacks[s];
        bool any = false;
        for (int k = 0; k < nwin; k++)
            any = any || st->value[k] != 0 || st->samples[k] != 0;
        if (!any)
            continue;
        add_to(&t->nodes[0], st, nwin, false);
        const uint32_t *sp = spath + st->off;
        for (uint32_t j = 0; j < st->depth; j++) {
            uint32_t x = sp[j];
            if (final[x] == NONE)
                final[x] = new_node(t, final[sh[x].parent], sh[x].fn);
            add_to(&t->nodes[final[x]], st, nwin, j + 1 == st->depth);
        }
    }
out:
    free(order);
    free(spath);
    free(sh);
    free(path);
    free(final);
    return rc;
}

/* A node's pruning key: the larger of its totals (one window's, or a diff's two); a NaN
 * (which sums of stored values do not make) as -inf, so that the order stays total. */
static double prune_key(const struct node *nd)
{
    double k = fmax(nd->total[0], nd->total[1]);
    return isnan(k) ? -INFINITY : k;
}

/* Pruning order: biggest key first, then shallower, then by the names along their paths
 * (leaf first): the same whatever order the store read the profiles in (rollups change it)
 * and whatever ids the frames have (ClickHouse's are the process's own); a child never
 * precedes its parent (its total is at most the parent's, its depth larger). */
static int cmp_prune(const void *a, const void *b, void *ud)
{
    const struct tree *t = ud;
    const struct node *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];
    double kx = prune_key(x), ky = prune_key(y);
    if (kx != ky)
        return kx > ky ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    while (x != y && x->fn != NONE && y->fn != NONE) { /* equal depths: the paths align */
        int d = strcmp(t->c->fns[x->fn].name, t->c->fns[y->fn].name);
        if (d)
            return d;
        x = &t->nodes[x->parent];
        y = &t->nodes[y->parent];
    }
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* The key of rank k (0 = the largest) among keys[0..n), k < n; reorders keys. A quickselect
 * with three-way partitions (many nodes share a total, and a run of equal keys ends the
 * search); past 64 rounds the rest is sorted, so that no input makes it quadratic. */
static double kth_largest(double *keys, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* the rank-k key is in keys[lo, hi) */
    for (int round = 0; round < 64; round++) {
        double a = keys[lo], b = keys[lo + (hi - lo) / 2], c = keys[hi - 1];
        double pivot = fmax(fmin(a, b), fmin(fmax(a, b), c)); /* median of three */
        size_t gt = lo, i = lo, lt = hi; /* [lo,gt) > pivot, [gt,i) == pivot, [lt,hi) < */
        while (i < lt) {
            double v = keys[i];
            if (v > pivot) {
                keys[i++] = keys[gt];
                keys[gt++] = v;
            } else if (v < pivot) {
                keys[i] = keys[--lt];
                keys[lt] = v;
            } else {
                i++;
            }
        }
        if (k < gt)
            hi = gt;
        else if (k < lt)
            return pivot;
        else
            lo = lt;
    }
    qsort(keys + lo, hi - lo, sizeof(*keys), cmp_desc);
    return keys[k];
}

/* Marks the nodes to emit: the first max_nodes of the root's descendants in cmp_prune's
 * order. Sorting them all cost a third of a diff of 20,000 stacks (its tree ~10^5 nodes), so
 * the key of rank max_nodes - 1 is selected first: every node above it is kept, and only the
 * nodes that share it are sorted. Returns true when some were pruned (-1 on ENOMEM). */
static int prune(struct tree *t, size_t max_nodes)
{
    size_t n = (size_t)t->n - 1;
    for (uint32_t i = 0; i < t->n; i++) /* all, or the root alone to begin with */
        t->nodes[i].keep = n <= max_nodes || i == 0;
    if (n <= max_nodes)
        return 0;
    if (!max_nodes)
        return 1;
    double *keys = malloc(n * sizeof(*keys));
    uint32_t *ties = malloc(n * sizeof(*ties));
    if (!keys || !ties) {
        free(keys);
        free(ties);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = prune_key(&t->nodes[i + 1]);
    double cut = kth_largest(keys, n, max_nodes - 1);
    size_t kept = 0, nties = 0;
    for (uint32_t i = 1; i < t->n; i++) {
        double key = prune_key(&t->nodes[i]);
        if (key > cut) {
            t->nodes[i].keep = true;
            kept++;
        } else if (key == cut) {
            ties[nties++] = i;
        }
    }
    qsort_r(ties, nties, sizeof(*ties), cmp_prune, t);
    for (size_t i = 0; kept < max_nodes && i < nties; i++, kept++)
        t->nodes[ties[i]].keep = true;
    free(keys);
    free(ties);
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

/* Node columns of each answer kind, in "nodes" (docs/internals/query.md). */
static const char *const plain_cols[] = {"parent", "depth", "name", "total_ns", "self_ns",
                                         "samples"};
static const char *const diff_cols[] = {"parent", "depth", "name", "base_ns", "cur_ns",
                                        "base_share", "cur_share", "delta_pp"};
#define MAX_COLS 8

/* The flat answer under construction, in one of two forms: jansson values (one array per
 * node column), or JSON text (one buffer per column, joined at the end) for the HTTP server,
 * which writes the same bytes either way (rt__query_flame_text). */
struct flat {
    const struct tree *t;       /* while the tree is walked */
    bool text, diff;
    json_t *obj;                /* {"truncated", "names", "nodes"} (jansson form) */
    json_t *names;              /* distinct node names, index = name id */
    json_t *col[MAX_COLS];      /* borrowed from obj's "nodes" */
    struct rt_buf tnames;       /* text form: "names" elements, comma-separated */
    struct rt_buf tcol[MAX_COLS]; /* text form: each column's elements */
    size_t ncols;
    struct rt_intern name_ids;  /* node name -> name id */
    uint32_t *fn_name;          /* function index -> name id, NONE until first emitted */
    uint32_t count;             /* nodes emitted so far */
};

/* Starts the answer with empty columns. Returns 0 or RT_ENOMEM (fl is cleaned up either
 * way by the caller: flat_cleanup). */
static int flat_init(struct flat *fl, const struct tree *t, bool text)
{
    const char *const *keys = t->diff ? diff_cols : plain_cols;
    memset(fl, 0, sizeof(*fl));
    fl->t = t;
    fl->text = text;
    fl->diff = t->diff;
    fl->ncols = t->diff ? sizeof(diff_cols) / sizeof(*diff_cols)
                        : sizeof(plain_cols) / sizeof(*plain_cols);
    rt_intern_init(&fl->name_ids);
    rt_buf_init(&fl->tnames, 0);
    for (size_t i = 0; i < MAX_COLS; i++)
        rt_buf_init(&fl->tcol[i], 0);
    fl->fn_name = malloc(((size_t)t->c->nfns + 1) * sizeof(*fl->fn_name));
    if (!fl->fn_name)
        return RT_ENOMEM;
    memset(fl->fn_name, 0xff, ((size_t)t->c->nfns + 1) * sizeof(*fl->fn_name));
    if (text)
        return 0;
    fl->obj = json_object();
    fl->names = json_array();
    json_t *nodes = json_object();
    /* json_object_set_new takes the value even on failure (a NULL object included) */
    int rc = json_object_set_new(fl->obj, "truncated", json_false()); /* set at the end */
    rc |= json_object_set_new(fl->obj, "names", fl->names);
    rc |= json_object_set_new(fl->obj, "nodes", nodes);
    for (size_t i = 0; !rc && i < fl->ncols; i++) {
        fl->col[i] = json_array();
        rc = json_object_set_new(nodes, keys[i], fl->col[i]);
    }
    return rc ? RT_ENOMEM : 0;
}

static void flat_cleanup(struct flat *fl)
{
    json_decref(fl->obj);
    rt_intern_cleanup(&fl->name_ids);
    free(fl->fn_name);
    rt_buf_cleanup(&fl->tnames);
    for (size_t i = 0; i < MAX_COLS; i++)
        rt_buf_cleanup(&fl->tcol[i]);
}

/* The text form's `"flamegraph":{"truncated":..,"names":[..],"nodes":{"parent":[..],..}}`,
 * keys in the jansson form's order. */
static int flat_text(struct flat *fl, bool truncated, struct rt_buf *out)
{
    const char *const *keys = fl->diff ? diff_cols : plain_cols;
    int rc = rt_buf_puts(out, truncated ? "\"flamegraph\":{\"truncated\":true,\"names\":["
                                        : "\"flamegraph\":{\"truncated\":false,\"names\":[");
    rc = rc ? rc : rt_buf_append(out, fl->tnames.data, fl->tnames.len);
    rc = rc ? rc : rt_buf_puts(out, "],\"nodes\":{");
    for (size_t i = 0; !rc && i < fl->ncols; i++) {
        rc = rt_buf_printf(out, "%s\"%s\":[", i ? "," : "", keys[i]);
        rc = rc ? rc : rt_buf_append(out, fl->tcol[i].data, fl->tcol[i].len);
        rc = rc ? rc : rt_buf_append(out, "]", 1);
    }
    return rc ? rc : rt_buf_puts(out, "}}");
}

/* Id of the node's name in "names", adding it on first use (a function's, once found, kept
 * by its index: most names recur on many nodes). */
static int name_id(struct flat *fl, const struct node *nd, uint32_t *id)
{
    if (nd->fn != NONE && fl->fn_name[nd->fn] != NONE) {
        *id = fl->fn_name[nd->fn];
        return 0;
    }
    const char *name = node_name(fl->t, nd);
    size_t before = fl->name_ids.count;
    if (rt_intern_get(&fl->name_ids, rt_str_from(name), id))
        return RT_ENOMEM;
    if (nd->fn != NONE)
        fl->fn_name[nd->fn] = *id;
    if (fl->name_ids.count == before)
        return 0;
    if (fl->text)
        return (before && rt_buf_append(&fl->tnames, ",", 1)) ||
                       rt__query_str_text(&fl->tnames, name)
                   ? RT_ENOMEM
                   : 0;
    return json_array_append_new(fl->names, rt__query_str_json(name)) ? RT_ENOMEM : 0;
}

/* One node column's value: an integer, nanoseconds (rt__query_ns_json) or a real. */
enum cell_kind { CELL_INT, CELL_NS, CELL_REAL };
struct cell {
    enum cell_kind kind;
    double x;
};

/* Appends one node to every column; its parent must have been emitted already. */
static int emit(struct flat *fl, struct node *nd)
{
    const struct tree *t = fl->t;
    uint32_t name;
    if (name_id(fl, nd, &name))
        return RT_ENOMEM;
    nd->out = fl->count++;
    struct cell v[MAX_COLS];
    size_t n = 0;
    v[n++] = (struct cell){CELL_INT, nd->parent == NONE ? -1.0 : (double)t->nodes[nd->parent].out};
    v[n++] = (struct cell){CELL_INT, nd->depth};
    v[n++] = (struct cell){CELL_INT, name};
    if (!t->diff) {
        v[n++] = (struct cell){CELL_NS, nd->total[0]};
        v[n++] = (struct cell){CELL_NS, nd->self[0]};
        v[n++] = (struct cell){CELL_REAL, nd->samples[0]};
    } else {
        double bs = pct(nd->total[0], t->win_total[0]), cs = pct(nd->total[1], t->win_total[1]);
        v[n++] = (struct cell){CELL_NS, nd->total[0]};
        v[n++] = (struct cell){CELL_NS, nd->total[1]};
        v[n++] = (struct cell){CELL_REAL, bs};
        v[n++] = (struct cell){CELL_REAL, cs};
        v[n++] = (struct cell){CELL_REAL, cs - bs};
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (fl->text) {
            struct rt_buf *b = &fl->tcol[i];
            if (nd->out && (rc = rt_buf_append(b, ",", 1)))
                break;
            rc = v[i].kind == CELL_INT    ? rt_json_text_int(b, (int64_t)v[i].x)
                 : v[i].kind == CELL_NS   ? rt__query_ns_text(b, v[i].x)
                                          : rt_json_text_real(b, v[i].x);
        } else { /* each append takes the value, even on failure */
            json_t *j = v[i].kind == CELL_INT  ? json_integer((json_int_t)v[i].x)
                        : v[i].kind == CELL_NS ? rt__query_ns_json(v[i].x)
                                               : json_real(v[i].x);
            rc = json_array_append_new(fl->col[i], j) ? RT_ENOMEM : 0;
        }
    }
    return rc;
}

/* Emits the kept nodes in preorder, each node's children in cmp_child order, with an
 * explicit stack (stacks are up to RT_MAX_STACK_DEPTH deep; no recursion). */
static int walk(struct flat *fl, struct tree *t)
{
    uint32_t *stack = malloc((size_t)t->n * sizeof(*stack)); /* each node is pushed once */
    if (!stack)
        return RT_ENOMEM;
    size_t sp = 0;
    stack[sp++] = 0;
    int rc = 0;
    while (sp && !rc) {
        struct node *nd = &t->nodes[stack[--sp]];
        rc = emit(fl, nd);
        size_t base = sp;
        for (uint32_t ch = nd->first_child; ch != NONE; ch = t->nodes[ch].next_sibling)
            if (t->nodes[ch].keep)
                stack[sp++] = ch;
        qsort_r(stack + base, sp - base, sizeof(*stack), cmp_child, t);
        for (size_t i = base, j = sp; i + 1 < j; i++, j--) { /* first child on top */
            uint32_t tmp = stack[i];
            stack[i] = stack[j - 1];
            stack[j - 1] = tmp;
        }
    }
    free(stack);
    return rc;
}

/* Builds, prunes and walks the tree into fl (form: text or not). Returns 1 when pruned, 0,
 * or an error code (< 0). */
static int flame(const struct rt__query_ctx *c, bool diff, size_t max_nodes, bool text,
                 struct flat *fl)
{
    struct tree t = {.c = c, .diff = diff && c->nwin == 2};
    t.win_total[0] = c->win[0].value_ns;
    t.win_total[1] = c->nwin == 2 ? c->win[1].value_ns : 0;
    int rc = flat_init(fl, &t, text);
    rc = rc ? rc : build(&t);
    int pruned = rc ? 0 : prune(&t, max_nodes);
    if (!rc && pruned < 0)
        rc = RT_ENOMEM;
    rc = rc ? rc : walk(fl, &t);
    fl->t = NULL; /* t ends here */
    free(t.nodes);
    return rc ? rc : pruned;
}

json_t *rt__query_flame_json(const struct rt__query_ctx *c, bool diff, size_t max_nodes)
{
    struct flat fl;
    json_t *out = NULL;
    int pruned = flame(c, diff, max_nodes, false, &fl);
    if (pruned >= 0 && !json_object_set_new(fl.obj, "truncated", json_boolean(pruned))) {
        out = fl.obj;
        fl.obj = NULL;
    }
    flat_cleanup(&fl);
    return out;
}

int rt__query_flame_text(const struct rt__query_ctx *c, bool diff, size_t max_nodes,
                         struct rt_buf *out)
{
    struct flat fl;
    int pruned = flame(c, diff, max_nodes, true, &fl);
    int rc = pruned < 0 ? pruned : 0;
    if (!rc)
        rc = flat_text(&fl, pruned, out);
    flat_cleanup(&fl);
    return rc;
}
