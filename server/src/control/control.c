/* The control plane's state: per-service toggles and overrides held in memory and written
 * through to the store, the SDK config they give each runtime (DESIGN §5), change
 * notification, and the audit log. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_int.h"
#include "rt/timeutil.h"

/* Defaults by runtime (DESIGN §5): sampling interval and the type the runtime produces. */
static const struct {
    const char *runtime;
    int64_t sampling_interval_us;
    enum rt_ptype type;
} runtime_defaults[] = {
    {"node", 10000, RT_PTYPE_CPU}, {"python", 20000, RT_PTYPE_WALL},
    {"java", 50000, RT_PTYPE_WALL}, {"php", 10000, RT_PTYPE_CPU}, {"go", 10000, RT_PTYPE_CPU},
};
#define DEFAULT_INTERVAL_US 10000
#define DEFAULT_UPLOAD_S 60
#define MAX_STACK_DEPTH 256

static int cmp_service(const void *key, const void *elem)
{
    return strcmp(key, ((const struct rt__control_service *)elem)->name);
}

/* The service named name, or NULL; caller holds the lock. */
static struct rt__control_service *find_service(struct rt_control *c, const char *name)
{
    if (!c->nservices)
        return NULL;
    return bsearch(name, c->services, c->nservices, sizeof(*c->services), cmp_service);
}

/* Inserts or updates name's config in the sorted array; caller holds the write lock. */
static int put_service(struct rt_control *c, const char *name, const struct rt_service_config *cfg)
{
    struct rt__control_service *svc = find_service(c, name);
    if (svc) {
        svc->cfg = *cfg;
        return 0;
    }
    if (c->nservices == c->cap_services) {
        size_t cap = c->cap_services ? c->cap_services * 2 : 32;
        struct rt__control_service *s = realloc(c->services, cap * sizeof(*s));
        if (!s)
            return RT_ENOMEM;
        c->services = s;
        c->cap_services = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return RT_ENOMEM;
    size_t at = 0;
    while (at < c->nservices && strcmp(c->services[at].name, name) < 0)
        at++;
    if (at < c->nservices)
        memmove(&c->services[at + 1], &c->services[at],
                (c->nservices - at) * sizeof(*c->services));
    c->services[at].name = copy;
    c->services[at].cfg = *cfg;
    c->nservices++;
    return 0;
}

static int service_cb(void *ud, const char *name, const struct rt_service_config *cfg)
{
    return put_service(ud, name, cfg);
}

struct rt_control *rt_control_new(struct rt_store *store, int64_t poll_interval_s,
                                  struct rt_error *err)
{
    if (sodium_init() < 0) {
        rt_error_set(err, RT_EIO, "libsodium failed to initialize");
        return NULL;
    }
    struct rt_control *c = calloc(1, sizeof(*c));
    if (!c) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    c->store = store;
    c->poll_interval_s = poll_interval_s > 0 ? poll_interval_s : 10;
    pthread_rwlock_init(&c->lock, NULL);
    pthread_mutex_init(&c->poll_mu, NULL);
    pthread_cond_init(&c->poll_cond, NULL);
    pthread_mutex_init(&c->alert_mu, NULL);
    pthread_cond_init(&c->alert_cond, NULL);
    if (rt__control_load_keys(c, err) < 0 ||
        rt_store_scan_service_configs(store, service_cb, c, err) < 0 ||
        rt__control_polls_start(c, err) || rt__control_alerts_start(c, err)) {
        rt_control_free(c);
        return NULL;
    }
    return c;
}

void rt_control_free(struct rt_control *c)
{
    if (!c)
        return;
    rt__control_alerts_stop(c);
    rt__control_polls_stop(c);
    for (size_t i = 0; i < c->nservices; i++)
        free(c->services[i].name);
    free(c->services);
    free(c->keys);
    pthread_cond_destroy(&c->poll_cond);
    pthread_mutex_destroy(&c->poll_mu);
    pthread_cond_destroy(&c->alert_cond);
    pthread_mutex_destroy(&c->alert_mu);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

int64_t rt_control_poll_interval_s(const struct rt_control *c)
{
    return c->poll_interval_s;
}

void rt_control_service_config(struct rt_control *c, const char *service,
                               struct rt_service_config *out)
{
    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&c->lock);
    const struct rt__control_service *svc = service ? find_service(c, service) : NULL;
    if (svc)
        *out = svc->cfg;
    pthread_rwlock_unlock(&c->lock);
}

bool rt_control_profiling_enabled(struct rt_control *c, const char *service)
{
    struct rt_service_config cfg;
    rt_control_service_config(c, service, &cfg);
    return cfg.enabled;
}

void rt_control_sdk_config(struct rt_control *c, const char *service, const char *runtime,
                           struct rt_sdk_config *out)
{
    struct rt_service_config cfg;
    rt_control_service_config(c, service, &cfg);
    memset(out, 0, sizeof(*out));
    out->enabled = cfg.enabled;
    out->sampling_interval_us = DEFAULT_INTERVAL_US;
    out->type = RT_PTYPE_CPU;
    for (size_t i = 0; runtime && i < sizeof(runtime_defaults) / sizeof(runtime_defaults[0]); i++)
        if (strcmp(runtime, runtime_defaults[i].runtime) == 0) {
            out->sampling_interval_us = runtime_defaults[i].sampling_interval_us;
            out->type = runtime_defaults[i].type;
        }
    if (cfg.type)
        out->type = cfg.type;
    if (cfg.sampling_interval_us > 0)
        out->sampling_interval_us = cfg.sampling_interval_us;
    out->upload_interval_s = cfg.upload_interval_s > 0 ? cfg.upload_interval_s : DEFAULT_UPLOAD_S;
    out->max_stack_depth = MAX_STACK_DEPTH;
    out->poll_interval_s = c->poll_interval_s;
    char text[256];
    int n = snprintf(text, sizeof(text), "%d|%s|%lld|%lld|%lld|%lld", out->enabled,
                     rt_ptype_name(out->type),
                     (long long)out->sampling_interval_us, (long long)out->upload_interval_s,
                     (long long)out->max_stack_depth, (long long)out->poll_interval_s);
    uint8_t h[8];
    crypto_generichash(h, sizeof(h), (const unsigned char *)text, (size_t)n, NULL, 0);
    sodium_bin2hex(out->etag, sizeof(out->etag), h, sizeof(h));
}

json_t *rt_control_sdk_config_json(const struct rt_sdk_config *cfg)
{
    return json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:s}", "enabled", cfg->enabled, "type",
                     rt_ptype_name(cfg->type), "sampling_interval_us", (json_int_t)cfg->sampling_interval_us,
                     "upload_interval_s", (json_int_t)cfg->upload_interval_s, "max_stack_depth",
                     (json_int_t)cfg->max_stack_depth, "poll_interval_s",
                     (json_int_t)cfg->poll_interval_s, "etag", cfg->etag);
}

void rt_control_on_change(struct rt_control *c, void (*fn)(void *ud, const char *service),
                          void *ud)
{
    pthread_rwlock_wrlock(&c->lock);
    c->on_change = fn;
    c->on_change_ud = ud;
    pthread_rwlock_unlock(&c->lock);
}

/* The overrides as the API shows them: {"type", "sampling_interval_us", "upload_interval_s"},
 * null where the runtime's default applies. */
static json_t *overrides_json(const struct rt_service_config *cfg)
{
    return json_pack("{s:o, s:o, s:o}", "type",
                     cfg->type ? json_string(rt_ptype_name(cfg->type)) : json_null(),
                     "sampling_interval_us",
                     cfg->sampling_interval_us ? json_integer(cfg->sampling_interval_us)
                                               : json_null(),
                     "upload_interval_s",
                     cfg->upload_interval_s ? json_integer(cfg->upload_interval_s) : json_null());
}

json_t *rt_control_set_profiling(struct rt_control *c, const char *service,
                                 const struct rt_service_config *cfg,
                                 const struct rt_principal *by, struct rt_error *err)
{
    struct rt_service_config before;
    rt_control_service_config(c, service, &before);
    if (rt_store_set_service_config(c->store, service, cfg, err))
        return NULL;
    pthread_rwlock_wrlock(&c->lock);
    int rc = put_service(c, service, cfg);
    c->gen++;
    void (*fn)(void *, const char *) = c->on_change;
    void *ud = c->on_change_ud;
    pthread_rwlock_unlock(&c->lock);
    if (rc) {
        rt_error_set(err, rc, "out of memory");
        return NULL;
    }
    char detail[200];
    snprintf(detail, sizeof(detail), "enabled %s -> %s; type %s; sampling_interval_us %lld; "
             "upload_interval_s %lld", before.enabled ? "true" : "false",
             cfg->enabled ? "true" : "false", cfg->type ? rt_ptype_name(cfg->type) : "default",
             (long long)cfg->sampling_interval_us, (long long)cfg->upload_interval_s);
    rt_control_audit(c, by, cfg->enabled ? "profiling.enable" : "profiling.disable", service,
                     detail, NULL);
    if (fn)
        fn(ud, service);
    return json_pack("{s:s, s:b, s:o}", "name", service, "profiling_enabled", cfg->enabled,
                     "config", overrides_json(cfg));
}

/* Service configs as read from the store by a refresh. */
struct config_list {
    char **names;
    struct rt_service_config *cfgs;
    size_t n, cap;
};

static int collect_config(void *ud, const char *name, const struct rt_service_config *cfg)
{
    struct config_list *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        char **names = realloc(l->names, cap * sizeof(*names));
        if (!names)
            return RT_ENOMEM;
        l->names = names;
        struct rt_service_config *cfgs = realloc(l->cfgs, cap * sizeof(*cfgs));
        if (!cfgs)
            return RT_ENOMEM;
        l->cfgs = cfgs;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name)))
        return RT_ENOMEM;
    l->cfgs[l->n++] = *cfg;
    return 0;
}

static bool config_equal(const struct rt_service_config *a, const struct rt_service_config *b)
{
    return a->enabled == b->enabled && a->type == b->type &&
           a->sampling_interval_us == b->sampling_interval_us &&
           a->upload_interval_s == b->upload_interval_s;
}

/* Applies configs read by a refresh; names of the services that changed are moved to the
 * front of l (their count in *nchanged). Caller holds the write lock. */
static int apply_configs(struct rt_control *c, struct config_list *l, size_t *nchanged)
{
    *nchanged = 0;
    for (size_t i = 0; i < l->n; i++) {
        /* an unknown service has the zero config (rt_control_service_config) */
        static const struct rt_service_config none;
        const struct rt__control_service *svc = find_service(c, l->names[i]);
        if (config_equal(svc ? &svc->cfg : &none, &l->cfgs[i]))
            continue;
        int rc = put_service(c, l->names[i], &l->cfgs[i]);
        if (rc)
            return rc;
        char *t = l->names[*nchanged];
        l->names[(*nchanged)++] = l->names[i];
        l->names[i] = t;
    }
    return 0;
}

int rt__control_refresh(struct rt_control *c, struct rt_error *err)
{
    pthread_rwlock_rdlock(&c->lock);
    uint64_t gen = c->gen;
    pthread_rwlock_unlock(&c->lock);
    struct config_list l = {0};
    struct rt__control_keyset ks = {0};
    size_t nchanged = 0;
    int rc = rt_store_scan_service_configs(c->store, collect_config, &l, err);
    if (rc == RT_ENOMEM)
        rt_error_set(err, rc, "out of memory reading service configs");
    if (!rc)
        rc = rt__control_read_keys(c, &ks, err);
    void (*fn)(void *, const char *) = NULL;
    void *ud = NULL;
    if (!rc) {
        pthread_rwlock_wrlock(&c->lock);
        if (c->gen == gen) { /* else a local change raced the reads: next second */
            rc = apply_configs(c, &l, &nchanged);
            free(c->keys);
            c->keys = ks.keys;
            c->nkeys = ks.n;
            c->cap_keys = ks.cap;
            ks.keys = NULL;
        }
        fn = c->on_change;
        ud = c->on_change_ud;
        pthread_rwlock_unlock(&c->lock);
        if (rc)
            rt_error_set(err, rc, "out of memory applying service configs");
    }
    for (size_t i = 0; i < l.n; i++) {
        if (fn && i < nchanged)
            fn(ud, l.names[i]);
        free(l.names[i]);
    }
    free(l.names);
    free(l.cfgs);
    free(ks.keys);
    return rc;
}

int rt_control_audit(struct rt_control *c, const struct rt_principal *by, const char *action,
                     const char *target, const char *detail, struct rt_error *err)
{
    struct rt_audit a = {rt_time_now_ns(), by ? by->actor : "server", action, target, detail};
    return rt_store_put_audit(c->store, &a, err);
}
