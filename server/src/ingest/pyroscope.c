/* The parameters of Pyroscope's legacy POST /ingest (DESIGN §12): the application name with
 * its type suffix and labels ("app.cpu{version=1.0,hostname=web-1}"), times whose unit is
 * told by their digit count, and the profile kinds Pyroscope names. */
#include <string.h>

#include "rt/ingest.h"
#include "rt/str.h"
#include "rt/timeutil.h"

/* Pyroscope's profile kinds: as a name's suffix ("app.cpu"), a Push series' __name__
 * ("process_cpu") or a JFR event (pyroscope-java's "itimer"). Only cpu and wall time are
 * stored (DESIGN §2); the others are named in the refusal. */
static const struct {
    const char *kind;
    enum rt_ptype type; /* 0: not a time profile */
} kinds[] = {
    {"cpu", RT_PTYPE_CPU},        {"itimer", RT_PTYPE_CPU},
    {"process_cpu", RT_PTYPE_CPU}, {"wall", RT_PTYPE_WALL},
    {"alloc_objects", 0},          {"alloc_space", 0},
    {"inuse_objects", 0},          {"inuse_space", 0},
    {"goroutines", 0},             {"goroutine", 0},
    {"mutex_count", 0},            {"mutex_duration", 0},
    {"block_count", 0},            {"block_duration", 0},
    {"lock_count", 0},             {"lock_duration", 0},
    {"alloc_in_new_tlab_objects", 0}, {"alloc_in_new_tlab_bytes", 0},
    {"alloc_outside_tlab_objects", 0}, {"alloc_outside_tlab_bytes", 0},
    {"memory", 0},                 {"block", 0},
    {"mutex", 0},                  {"exceptions", 0},
    {"live", 0},                   {"malloc", 0},
};

int rt_ingest_pyroscope_kind(const char *kind, size_t len, enum rt_ptype *t)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strlen(kinds[i].kind) == len && memcmp(kinds[i].kind, kind, len) == 0) {
            *t = kinds[i].type;
            return kinds[i].type ? 1 : -1;
        }
    return 0;
}

/* Copies s[0..n) into out[cap] when it fits (NUL-terminated). */
static bool copy(char *out, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

/* Parses "k=v,k2=v2" (inside the braces) into out's labels. */
static int parse_labels(const char *s, size_t n, struct rt_ingest_pyroscope_name *out,
                        struct rt_error *err)
{
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        while (end < n && s[end] != ',')
            end++;
        const char *eq = memchr(s + i, '=', end - i);
        if (end > i) {
            if (!eq || eq == s + i)
                return rt_error_set(err, RT_EINVAL,
                                    "name's labels are {key=value,...}: \"%.*s\" has no key or "
                                    "'='", (int)(end - i > 60 ? 60 : end - i), s + i);
            if (out->nlabels == RT_INGEST_PYROSCOPE_MAX_LABELS)
                return rt_error_set(err, RT_EINVAL, "name has more than %d labels",
                                    RT_INGEST_PYROSCOPE_MAX_LABELS);
            struct rt_ingest_pyroscope_label *l = &out->labels[out->nlabels++];
            if (!copy(l->key, sizeof(l->key), s + i, (size_t)(eq - s - i)) ||
                !copy(l->value, sizeof(l->value), eq + 1, (size_t)(s + end - eq - 1)))
                return rt_error_set(err, RT_EINVAL,
                                    "a label of name is too long (keys up to %zu bytes, values "
                                    "up to %zu)", sizeof(l->key) - 1, sizeof(l->value) - 1);
        }
        i = end + 1;
    }
    return 0;
}

int rt_ingest_pyroscope_name(const char *name, struct rt_ingest_pyroscope_name *out,
                             struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    size_t n = strlen(name);
    if (!rt_str_is_clean_utf8(name, n))
        return rt_error_set(err, RT_EINVAL, "name must be UTF-8 without control characters");
    const char *brace = memchr(name, '{', n);
    size_t app = brace ? (size_t)(brace - name) : n;
    if (brace) {
        if (name[n - 1] != '}')
            return rt_error_set(err, RT_EINVAL,
                                "name is app.kind{key=value,...}: its labels lack the closing "
                                "'}'");
        int rc = parse_labels(brace + 1, n - app - 2, out, err);
        if (rc)
            return rc;
    }
    while (app > 0 && name[app - 1] == ' ')
        app--;
    /* "app.cpu": the suffix after the last '.' is a kind when Pyroscope names one */
    const char *dot = NULL;
    for (size_t i = app; i-- > 0;)
        if (name[i] == '.') {
            dot = name + i;
            break;
        }
    size_t service = app;
    if (dot && dot > name) {
        size_t klen = app - (size_t)(dot + 1 - name);
        if (rt_ingest_pyroscope_kind(dot + 1, klen, &out->type) != 0) {
            copy(out->kind, sizeof(out->kind), dot + 1, klen);
            out->has_kind = true;
            service = (size_t)(dot - name);
        }
    }
    if (service == 0 || !copy(out->service, sizeof(out->service), name, service))
        return rt_error_set(err, RT_EINVAL,
                            "name's application part must be 1 to %zu bytes (app.kind{labels})",
                            sizeof(out->service) - 1);
    return 0;
}

const char *rt_ingest_pyroscope_label(const struct rt_ingest_pyroscope_name *n, const char *key)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

int rt_ingest_pyroscope_time(const char *s, int64_t *ns)
{
    size_t n = strlen(s);
    if (n == 0 || n > 19 || strspn(s, "0123456789") != n)
        return RT_EINVAL;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
            return RT_EINVAL;
    /* 10 digits or fewer are seconds (until 2286), 13 milliseconds, 16 microseconds, 19
     * nanoseconds; the lengths between round up to the next unit */
    int64_t mul = n <= 10 ? RT_NS_PER_S : n <= 13 ? 1000000 : n <= 16 ? 1000 : 1;
    if (v > INT64_MAX / mul)
        return RT_EINVAL;
    *ns = v * mul;
    return 0;
}
