/* JFR stack traces into profile stacks: the frames of a stack trace read from its constant
 * pool, each named once per method (DESIGN §3: `package.Class.method`, no line number, no
 * descriptor; async-profiler's native frames by their symbol) and added root first. */
#include <stdlib.h>
#include <string.h>

#include "ingest_internal.h"
#include "jfr_internal.h"
#include "rt/profile.h"

static int oom(struct rt__jfr_stacks *s)
{
    return rt_error_set(s->err, RT_ENOMEM, "out of memory building the JFR profile");
}

/* The frame name of method entry mv into s->scratch: `package.Class.method` with the class's
 * binary name dotted as RecordedClass.getName does, or a native symbol as it is. */
static int frame_name(struct rt__jfr_stacks *s, const struct rt__jfr_val *mv, bool native,
                      struct rt_str *out)
{
    struct rt_str method = RT_STR_LIT(""), cls = RT_STR_LIT("");
    rt__jfr_str(s->pools, s->meta, mv[1], &method);
    if (!native && mv[0].kind == RT__JV_REF && mv[0].n == s->meta->special[RT__JFR_T_CLASS]) {
        const struct rt__jfr_val *cv = rt__jfr_pool_get(s->pools, RT__JFR_T_CLASS, mv[0].u,
                                                        NULL);
        if (cv)
            rt__jfr_str(s->pools, s->meta, cv[0], &cls);
    }
    size_t need = cls.len + 1 + method.len;
    if (need > s->cap_scratch) {
        char *b = realloc(s->scratch, need);
        if (!b)
            return oom(s);
        s->scratch = b;
        s->cap_scratch = need;
    }
    size_t n = 0;
    for (size_t i = 0; i < cls.len; i++)
        s->scratch[n++] = cls.ptr[i] == '/' ? '.' : cls.ptr[i];
    if (cls.len && method.len)
        s->scratch[n++] = '.';
    memcpy(s->scratch + n, method.ptr, method.len);
    *out = (struct rt_str){s->scratch, n + method.len};
    /* a lambda's hidden class: its ids change with every run (frames.c), written in place */
    unsigned shapes = 0;
    struct rt_str l = rt__frame_java_lambda(*out, s->scratch, &shapes);
    if (shapes)
        *out = l;
    if (out->len == 0)
        *out = RT_STR_LIT("[unknown]");
    return 0;
}

/* Interns name into o's profile, repaired first when it is not a clean name (as pprof.c). */
static int intern(struct rt__jfr_stacks *s, struct rt__jfr_out *o, struct rt_str name,
                  uint32_t *id)
{
    if (rt_str_is_name(name))
        return rt_intern_get(&o->p->frames, name, id) ? oom(s) : 0;
    size_t len;
    char *fixed = rt_str_dup_name(name, &len);
    int rc = fixed ? rt_intern_get(&o->p->frames, (struct rt_str){fixed, len}, id) : RT_ENOMEM;
    free(fixed);
    return rc ? oom(s) : 0;
}

/* Whether a frame is native code that async-profiler names by its symbol: the descriptor it
 * gives native symbols, "()L;" or "(Lk;)L;", or frame type C++ or Kernel (src/lookup.cpp,
 * Lookup::fillNativeMethodInfo). The JDK's "Native" frames are Java native methods. Cached
 * per method entry ix and per frame type. */
static bool is_native(struct rt__jfr_stacks *s, uint32_t ix, const struct rt__jfr_val *mv,
                      const struct rt__jfr_val *ft)
{
    struct rt_str t;
    if (s->mnative[ix] < 0)
        s->mnative[ix] = rt__jfr_str(s->pools, s->meta, mv[2], &t) &&
                         (rt_str_eq_cstr(t, "()L;") || rt_str_eq_cstr(t, "(Lk;)L;"));
    if (s->mnative[ix])
        return true;
    if (ft->kind != RT__JV_REF || ft->n != s->meta->special[RT__JFR_T_FRAMETYPE])
        return false;
    for (int i = 0; i < s->nft; i++)
        if (s->ft_key[i] == ft->u)
            return s->ft_native[i];
    const struct rt__jfr_val *e = rt__jfr_pool_get(s->pools, RT__JFR_T_FRAMETYPE, ft->u, NULL);
    bool native = e && rt__jfr_str(s->pools, s->meta, e[0], &t) &&
                  (rt_str_eq_cstr(t, "C++") || rt_str_eq_cstr(t, "Kernel"));
    if (s->nft < 8) {
        s->ft_key[s->nft] = ft->u;
        s->ft_native[s->nft++] = native;
    }
    return native;
}

/* Frame id in o of a frame (method and frame type references), cached per method entry. */
static int frame_id(struct rt__jfr_stacks *s, struct rt__jfr_out *o, const struct rt__jfr_val *fr,
                    uint32_t *id)
{
    uint32_t ix = RT__JFR_NONE;
    const struct rt__jfr_val *mv = NULL;
    if (fr[0].kind == RT__JV_REF && fr[0].n == s->meta->special[RT__JFR_T_METHOD])
        mv = rt__jfr_pool_get(s->pools, RT__JFR_T_METHOD, fr[0].u, &ix);
    if (!mv) {
        if (o->unknown == RT__JFR_NONE && intern(s, o, RT_STR_LIT("[unknown]"), &o->unknown))
            return RT_ENOMEM;
        *id = o->unknown;
        return 0;
    }
    bool native = is_native(s, ix, mv, &fr[1]);
    uint32_t *slot = &o->mcache[(size_t)ix * 2 + native];
    if (*slot == RT__JFR_NONE) {
        struct rt_str name;
        int rc = frame_name(s, mv, native, &name);
        rc = rc ? rc : intern(s, o, name, slot);
        if (rc)
            return rc;
    }
    *id = *slot;
    return 0;
}

int rt__jfr_read_frames(struct rt__jfr_stacks *s, bool has_key, uint64_t key, size_t *n)
{
    *n = 0;
    const struct rt__jfr_val *st =
        has_key ? rt__jfr_pool_get(s->pools, RT__JFR_T_STACKTRACE, key, NULL) : NULL;
    const struct rt__jfr_field *f = s->frames_field;
    if (!st || !f || f->cp || st[0].kind != RT__JV_ARRAY)
        return 0;
    struct rt__jfr_in r = {s->data + st[0].u, s->chunk_end, s->data, s->compressed, 0, NULL, 0};
    size_t count = st[0].n < RT_MAX_STACK_DEPTH + 1 ? st[0].n : RT_MAX_STACK_DEPTH + 1;
    for (size_t i = 0; i < count && !r.rc; i++) {
        struct rt__jfr_val v[RT__JFR_MAX_ROLES];
        memset(v, 0, sizeof(v));
        rt__jfr_read_obj(s->meta, &r, f->cls, s->arena, v);
        s->frames[i][0] = v[0];
        s->frames[i][1] = v[1];
    }
    if (r.rc)
        return rt__jfr_in_error(&r, "stack trace", s->err);
    *n = count;
    return 0;
}

int rt__jfr_add_stack(struct rt__jfr_stacks *s, struct rt__jfr_out *o, size_t nf, uint64_t n,
                      int64_t value)
{
    if (!o->p && !(o->p = rt_profile_new(o->type)))
        return oom(s);
    for (size_t i = 0; i < nf; i++) {
        int rc = frame_id(s, o, s->frames[i], &s->ids[nf - 1 - i]);
        if (rc)
            return rc;
    }
    if (nf == 0) {
        struct rt__jfr_val none[2] = {{{0}, 0, 0}, {{0}, 0, 0}};
        if (frame_id(s, o, none, &s->ids[0]))
            return RT_ENOMEM;
        nf = 1;
    }
    int rc = rt_profile_add_stack_ids(o->p, s->ids, nf, (double)n, value);
    if (rc == RT_ETOOBIG)
        return rt_error_set(s->err, RT_ETOOBIG,
                            "the JFR recording's %s samples exceed the limit of %lld ns "
                            "(2^62 ns, about 146 years) per profile",
                            rt_ptype_name(o->type), (long long)RT_PROFILE_MAX_VALUE_NS);
    return rc ? oom(s) : 0;
}

int rt__jfr_stacks_chunk(struct rt__jfr_stacks *s, struct rt__jfr_out *outs, size_t nouts)
{
    uint32_t st = s->meta->special[RT__JFR_T_STACKTRACE];
    s->frames_field = NULL;
    for (uint32_t i = 0; st != RT__JFR_NONE && i < s->meta->classes[st].nfields; i++)
        if (s->meta->fields[s->meta->classes[st].field_off + i].role == 0)
            s->frames_field = &s->meta->fields[s->meta->classes[st].field_off + i];
    if (!s->frames && !(s->frames = malloc((RT_MAX_STACK_DEPTH + 1) * sizeof(*s->frames))))
        return oom(s);
    if (!s->ids && !(s->ids = malloc((RT_MAX_STACK_DEPTH + 1) * sizeof(*s->ids))))
        return oom(s);
    size_t n = 2 * s->pools->pool[RT__JFR_T_METHOD].n + 2;
    if (n > s->cap_mnative) {
        int8_t *c = realloc(s->mnative, n);
        if (!c)
            return oom(s);
        s->mnative = c;
        s->cap_mnative = n;
    }
    memset(s->mnative, 0xff, n);
    s->nft = 0;
    for (size_t k = 0; k < nouts; k++) {
        struct rt__jfr_out *o = &outs[k];
        if (n > o->cap_mcache) {
            uint32_t *c = realloc(o->mcache, n * sizeof(*c));
            if (!c)
                return oom(s);
            o->mcache = c;
            o->cap_mcache = n;
        }
        memset(o->mcache, 0xff, n * sizeof(*o->mcache));
    }
    return 0;
}

void rt__jfr_stacks_cleanup(struct rt__jfr_stacks *s)
{
    free(s->frames);
    free(s->ids);
    free(s->scratch);
    free(s->mnative);
}
