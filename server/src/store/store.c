/* The store interface (rt/store.h): opening by URI, argument checks, dispatch to the backend,
 * and the committed frame/stack dictionary behind rt_store_stack and rt_store_frame_name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "rt/log.h"
#include "rt/str.h"
#include "rt/timeutil.h"
#include "store_int.h"

#define DB_FILE "roottrace.db"

/* Backends may write to err unconditionally: a NULL err is replaced by a local one. */
#define ERR_OR_LOCAL(err)                                                                  \
    struct rt_error err##_local_;                                                          \
    if (!(err))                                                                            \
    (err) = &err##_local_

/* mkdir -p with mode 0700 for each directory it creates. */
static int make_dirs(const char *dir, struct rt_error *err)
{
    char *p = strdup(dir);
    if (!p)
        return rt_error_set(err, RT_ENOMEM, "out of memory");
    int rc = 0;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q != '\0')
            continue;
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0700) == 0) {
            chmod(p, 0700); /* exact mode whatever the umask */
        } else if (errno != EEXIST) {
            rc = rt_error_set(err, RT_EIO, "cannot create directory %s: %s", p, strerror(errno));
            break;
        }
        *q = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

/* "sqlite:PATH": the file PATH (caller frees), creating its parent directory. */
static char *sqlite_uri_path(const char *uri, struct rt_error *err)
{
    const char *path = uri + 7;
    if (!*path) {
        rt_error_set(err, RT_EINVAL, "store URI \"%s\" names no file", uri);
        return NULL;
    }
    const char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        char *parent = strndup(path, (size_t)(slash - path));
        int rc = parent ? make_dirs(parent, err) : rt_error_set(err, RT_ENOMEM, "out of memory");
        free(parent);
        if (rc)
            return NULL;
    }
    char *r = strdup(path);
    if (!r)
        rt_error_set(err, RT_ENOMEM, "out of memory");
    return r;
}

/* The database path a URI names (caller frees), creating the data directory. */
static char *db_path(const char *uri, struct rt_error *err)
{
    if (strncmp(uri, "sqlite:", 7) == 0)
        return sqlite_uri_path(uri, err);
    if (strstr(uri, "://")) {
        rt_error_set(err, RT_EINVAL,
                     "store URI \"%s\": expected sqlite:PATH, a directory or "
                     "clickhouse:http://HOST:PORT/DB", uri);
        return NULL;
    }
    if (!*uri) {
        rt_error_set(err, RT_EINVAL, "empty store URI");
        return NULL;
    }
    if (make_dirs(uri, err))
        return NULL;
    size_t n = strlen(uri) + sizeof(DB_FILE) + 1;
    char *r = malloc(n);
    if (!r) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(r, n, "%s/%s", uri, DB_FILE);
    return r;
}

struct rt_store *rt_store_open(const char *uri, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!uri) {
        rt_error_set(err, RT_EINVAL, "no store URI");
        return NULL;
    }
    bool ch = rt_store_uri_is_remote(uri);
    char *path = ch ? strdup(uri) : db_path(uri, err);
    if (!path) {
        if (ch)
            rt_error_set(err, RT_ENOMEM, "out of memory");
        return NULL;
    }
    struct rt_store *s = calloc(1, sizeof(*s));
    if (!s) {
        rt_error_set(err, RT_ENOMEM, "out of memory");
        goto out_free_path;
    }
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int prc = pthread_rwlock_init(&s->dict_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    if (prc) {
        rt_error_set(err, RT_ENOMEM, "cannot create lock");
        goto out_free_store;
    }
    rt__store_dict_init(&s->dict, true);
    if (ch ? rt__ch_open(s, path, err) : rt__sqlite_open(s, path, err))
        goto out_destroy_lock;
    s->dict_budget = ch ? 0 : RT__STORE_DICT_BUDGET; /* ClickHouse: its id map, see store_int.h */
    free(path);
    return s;

out_destroy_lock:
    pthread_rwlock_destroy(&s->dict_lock);
out_free_store:
    free(s);
out_free_path:
    free(path);
    return NULL;
}

/* Warns when path is open to group or others (want: the mode it should have). */
static void warn_if_open(const char *path, const char *what, unsigned want)
{
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        rt_log(RT_LOG_WARN, "%s %s has mode %03o: group and others can read it (chmod %03o)",
               what, path, (unsigned)(st.st_mode & 0777), want);
}

void rt_store_warn_open_modes(const char *uri)
{
    if (!uri || rt_store_uri_is_remote(uri) || strncmp(uri, "sqlite:", 7) == 0)
        return;
    char db[4096];
    snprintf(db, sizeof(db), "%s/%s", uri, DB_FILE);
    warn_if_open(uri, "the data directory", 0700);
    warn_if_open(db, "the database", 0600);
}

bool rt_store_uri_is_remote(const char *uri)
{
    return uri && strncmp(uri, "clickhouse:", 11) == 0;
}

void rt_store_uri_redacted(const char *uri, char *out, size_t n)
{
    size_t o = 0;
    const char *p = uri ? uri : "";
    /* the user-info's password: scheme://user:PASSWORD@host */
    const char *auth = strstr(p, "://");
    auth = auth ? auth + 3 : NULL;
    size_t authlen = auth ? strcspn(auth, "/?#") : 0;
    const char *at = auth ? memchr(auth, '@', authlen) : NULL;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    for (; *p && o + 1 < n;) {
        if (colon && p == colon + 1) {
            o += (size_t)snprintf(out + o, n - o, "***");
            if (o >= n)
                o = n - 1;
            p = at;
            continue;
        }
        out[o++] = *p;
        bool key = (p[0] == '?' || p[0] == '&') && strncasecmp(p + 1, "password=", 9) == 0;
        p++;
        if (!key)
            continue;
        o += (size_t)snprintf(out + o, n - o, "%.9s***", p);
        if (o >= n)
            o = n - 1;
        p += strcspn(p, "&");
    }
    if (n)
        out[o < n ? o : n - 1] = '\0';
}

int rt_store_ping(struct rt_store *s, struct rt_error *err)
{
    return s->ops->ping ? s->ops->ping(s, err) : 0;
}

bool rt_store_is_shared(const struct rt_store *s)
{
    return s && s->ops->shared;
}

void rt_store_free(struct rt_store *s)
{
    if (!s)
        return;
    s->ops->free(s);
    rt__store_dict_cleanup(&s->dict);
    pthread_rwlock_destroy(&s->dict_lock);
    free(s);
}

int rt_store_put_profiles(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                          struct rt_store_put_result *res, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || (n && (!ps || !res)))
        return rt_error_set(err, RT_EINVAL, "rt_store_put_profiles: missing argument");
    for (size_t i = 0; i < n; i++) {
        const struct rt_profile *p = ps[i];
        if (!p || !p->service || !*p->service)
            return rt_error_set(err, RT_EINVAL, "profile %zu names no service", i);
        if (p->type != RT_PTYPE_CPU && p->type != RT_PTYPE_WALL)
            return rt_error_set(err, RT_EINVAL, "profile %zu has no valid type", i);
    }
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        ps[i]->content_hash = rt_profile_content_hash(ps[i]);
    int rc = s->ops->put_profiles(s, ps, n, res, err);
    for (size_t i = 0; !rc && i < n; i++) {
        struct rt_store_put_result *r = &res[i];
        r->conflict = r->duplicate && r->stored_hash && r->stored_hash != ps[i]->content_hash;
        if (!r->duplicate) {
            r->samples = ps[i]->samples;
            r->value_ns = ps[i]->value_ns;
        }
    }
    return rc;
}

void rt_store_cancel_reads(struct rt_store *s)
{
    if (s)
        atomic_store(&s->reads_cancelled, true);
}

#define CHECK_CANCELLED(c)                                                                 \
    do {                                                                                   \
        if (atomic_load_explicit(&(c)->s->reads_cancelled, memory_order_relaxed))          \
            return RT_ECANCELED;                                                           \
    } while (0)

int rt__store_checked_rows(void *ud, const struct rt_profile_meta *m,
                           const struct rt_store_row *rows, size_t nrows)
{
    struct rt__store_checked *c = ud;
    CHECK_CANCELLED(c);
    return c->profile_cb(c->ud, m, rows, nrows);
}

static int checked_profile(void *ud, const struct rt_profile_meta *m, double weight,
                           double samples, double value_ns)
{
    struct rt__store_checked *c = ud;
    CHECK_CANCELLED(c);
    return c->window_cb->profile(c->ud, m, weight, samples, value_ns);
}

static int checked_stack(void *ud, uint32_t stack_id, double samples, double value_ns)
{
    struct rt__store_checked *c = ud;
    CHECK_CANCELLED(c);
    return c->window_cb->stack(c->ud, stack_id, samples, value_ns);
}

static int checked_instance_leaf(void *ud, const char *instance, uint32_t frame_id,
                                 double value_ns)
{
    struct rt__store_checked *c = ud;
    CHECK_CANCELLED(c);
    return c->window_cb->instance_leaf(c->ud, instance, frame_id, value_ns);
}

static int checked_leaf_s2(void *ud, uint32_t frame_id, double s2)
{
    struct rt__store_checked *c = ud;
    CHECK_CANCELLED(c);
    return c->window_cb->leaf_s2(c->ud, frame_id, s2);
}

const struct rt_store_window_cb rt__store_checked_sums = {checked_profile, checked_stack,
                                                        checked_instance_leaf, checked_leaf_s2};

static int cancelled(struct rt_error *err)
{
    return rt_error_set(err, RT_ECANCELED, "query cancelled: the server is stopping; retry "
                                           "against a running server");
}

int rt_store_check_cancelled(struct rt_store *s, struct rt_error *err)
{
    return s && atomic_load(&s->reads_cancelled) ? cancelled(err) : 0;
}

/* The result of a scan, RT_ECANCELED with its message. A scan that finished is whole. */
static int scan_result(int rc, struct rt_error *err)
{
    return rc == RT_ECANCELED ? cancelled(err) : rc;
}

int rt_store_scan(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                  void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !f || !f->service || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan: missing argument");
    if (f->from_ns >= f->to_ns)
        return 0;
    struct rt__store_checked c = {s, cb, NULL, ud};
    if (rt_store_check_cancelled(s, err))
        return RT_ECANCELED;
    return scan_result(s->ops->scan(s, f, rt__store_checked_rows, &c, err), err);
}

bool rt_store_aggregates(const struct rt_store *s)
{
    return s && s->ops->scan_window;
}

int rt_store_scan_window(struct rt_store *s, const struct rt_store_filter *f,
                         const struct rt_store_window_cb *cb, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !f || !f->service || !cb || !cb->profile || !cb->stack || !cb->instance_leaf ||
        !cb->leaf_s2)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_window: missing argument");
    if (!s->ops->scan_window)
        return rt_error_set(err, RT_EINVAL, "the %s store does not aggregate windows",
                            s->ops->name);
    if (f->from_ns >= f->to_ns)
        return 0;
    struct rt__store_checked c = {s, NULL, cb, ud};
    if (rt_store_check_cancelled(s, err))
        return RT_ECANCELED;
    return scan_result(s->ops->scan_window(s, f, &rt__store_checked_sums, &c, err), err);
}

int rt_store_read_window(struct rt_store *s, const struct rt_store_filter *f,
                         const struct rt_store_window_reader *r, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!f || !r || !r->rows || !r->sums)
        return rt_error_set(err, RT_EINVAL, "rt_store_read_window: missing argument");
    if (f->from_ns >= f->to_ns)
        return 0;
    /* A store that sums windows itself (ClickHouse) reads every window through its rolled
     * read, which takes a small raw part as rows (docs/internals/clickhouse.md) */
    if (r->rollup && rt_store_has_rollups(s) &&
        (rt__store_window_has_hour(f) || rt_store_aggregates(s)))
        return rt__store_read_rolled(s, f, r, ud, err);
    return rt_store_aggregates(s) ? rt_store_scan_window(s, f, r->sums, ud, err)
                                  : rt_store_scan(s, f, r->rows, ud, err);
}

/* Copies stack id's frames from the dictionary into frames[0..cap); RT_ENOTFOUND when it is
 * not cached, RT_ETOOBIG when cap is short. */
static int dict_stack(struct rt_store *s, uint32_t id, uint32_t *frames, size_t cap,
                      size_t *depth)
{
    pthread_rwlock_rdlock(&s->dict_lock);
    int rc = rt__store_dict_stack(&s->dict, id, frames, cap, depth);
    pthread_rwlock_unlock(&s->dict_lock);
    return rc;
}

int rt_store_stack(struct rt_store *s, uint32_t stack_id, uint32_t *frames, size_t cap,
                   size_t *depth)
{
    if (!s || !frames || !depth)
        return RT_EINVAL;
    int rc = dict_stack(s, stack_id, frames, cap, depth);
    if (rc != RT_ENOTFOUND)
        return rc;
    /* Not cached: committed by another process, just committed by this one's writer and not
     * yet published, never loaded since open, or dropped by the dictionary's bound. */
    struct rt_error err;
    return s->ops->load_stack(s, stack_id, frames, cap, depth, &err);
}

const char *rt_store_frame_name(struct rt_store *s, uint32_t frame_id, struct rt_arena *a)
{
    if (!s || !a)
        return NULL;
    pthread_rwlock_rdlock(&s->dict_lock);
    const char *name = rt__store_dict_frame_name(&s->dict, frame_id);
    char *copy = name ? rt_arena_strndup(a, name, strlen(name)) : NULL;
    pthread_rwlock_unlock(&s->dict_lock);
    if (name)
        return copy;
    struct rt_error err;
    const char *loaded = NULL;
    return s->ops->load_frame(s, frame_id, a, &loaded, &err) ? NULL : loaded;
}

/* Empties s->dict when `extra` more bytes would take it past its budget (write lock held).
 * extra is an estimate (entries, not the doubling of arrays or a new arena block), so
 * over_budget checks again after the add. */
static void make_room(struct rt_store *s, size_t extra)
{
    if (!s->dict_budget || rt__store_dict_bytes(&s->dict) + extra <= s->dict_budget)
        return;
    rt__store_dict_cleanup(&s->dict);
    atomic_fetch_add_explicit(&s->dict_resets, 1, memory_order_relaxed);
}

/* After an add: true (and s->dict emptied) when it took the dictionary past its budget; the
 * caller adds again into the empty dictionary, so that the bound holds after every add unless
 * one add alone is larger. */
static bool over_budget(struct rt_store *s)
{
    if (!s->dict_budget || rt__store_dict_bytes(&s->dict) <= s->dict_budget ||
        (s->dict.nframes + s->dict.nstacks) <= 1)
        return false;
    make_room(s, SIZE_MAX / 2);
    return true;
}

int rt__store_cache_frame(struct rt_store *s, uint32_t id, const char *name, size_t len,
                          uint64_t h)
{
    pthread_rwlock_wrlock(&s->dict_lock);
    make_room(s, rt__store_dict_frame_cost(len));
    int rc = rt__store_dict_add_frame(&s->dict, id, name, len, h);
    if (!rc && over_budget(s))
        rc = rt__store_dict_add_frame(&s->dict, id, name, len, h);
    pthread_rwlock_unlock(&s->dict_lock);
    return rc;
}

int rt__store_cache_stack(struct rt_store *s, uint32_t id, const void *enc, size_t nbytes,
                          uint64_t h)
{
    pthread_rwlock_wrlock(&s->dict_lock);
    make_room(s, rt__store_dict_stack_cost(nbytes));
    int rc = rt__store_dict_add_stack_enc(&s->dict, id, enc, nbytes, h);
    if (!rc && over_budget(s))
        rc = rt__store_dict_add_stack_enc(&s->dict, id, enc, nbytes, h);
    pthread_rwlock_unlock(&s->dict_lock);
    return rc;
}

int rt__store_cache_merge(struct rt_store *s, const struct rt__store_dict *pending)
{
    size_t extra = 0;
    for (size_t i = 0; i < pending->nframes; i++)
        extra += rt__store_dict_frame_cost(pending->frames[i].len);
    for (size_t i = 0; i < pending->nstacks; i++)
        extra += rt__store_dict_stack_cost(pending->stacks[i].nbytes);
    pthread_rwlock_wrlock(&s->dict_lock);
    make_room(s, extra);
    int rc = rt__store_dict_merge(&s->dict, pending);
    if (!rc && over_budget(s))
        rc = rt__store_dict_merge(&s->dict, pending);
    pthread_rwlock_unlock(&s->dict_lock);
    return rc;
}

int64_t rt_store_poll_gap_ns(int64_t poll_interval_s)
{
    if (poll_interval_s <= 0)
        poll_interval_s = 10;
    if (poll_interval_s > RT_POLL_INTERVAL_MAX_S)
        poll_interval_s = RT_POLL_INTERVAL_MAX_S;
    return 3 * poll_interval_s * RT_NS_PER_S;
}

int rt_store_put_poll(struct rt_store *s, const char *service, const char *instance,
                      int64_t at_ns, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !service || !*service)
        return rt_error_set(err, RT_EINVAL, "rt_store_put_poll: no service");
    return s->ops->put_poll(s, service, instance ? instance : "", at_ns, err);
}

int rt_store_scan_liveness(struct rt_store *s, const char *service, int64_t from_ns,
                           int64_t to_ns, rt_store_liveness_cb cb, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !service || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_liveness: missing argument");
    if (from_ns >= to_ns)
        return 0;
    return s->ops->scan_liveness(s, service, from_ns, to_ns, cb, ud, err);
}

bool rt__store_observed_deploy(const struct rt_profile *p, int64_t now_ns, struct rt_deploy *d)
{
    if (!p->version)
        return false;
    *d = (struct rt_deploy){p->service, p->version, "observed", p->time_ns ? p->time_ns : now_ns};
    return true;
}

int rt_store_put_deploy(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !d || !d->service || !*d->service || !d->version || !d->source)
        return rt_error_set(err, RT_EINVAL, "a deploy needs a service, a version and a source");
    if (strcmp(d->source, "declared") != 0 && strcmp(d->source, "observed") != 0)
        return rt_error_set(err, RT_EINVAL, "deploy source \"%s\" is not declared or observed",
                            d->source);
    return s->ops->put_deploy(s, d, err);
}

int rt_store_scan_deploys(struct rt_store *s, const char *service, int64_t from_ns,
                          int64_t to_ns, rt_store_deploy_cb cb, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_deploys: missing argument");
    if (from_ns >= to_ns)
        return 0;
    return s->ops->scan_deploys(s, service, from_ns, to_ns, cb, ud, err);
}

int rt_store_put_issue(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                       struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !i || !i->service || !*i->service || !i->title || !id)
        return rt_error_set(err, RT_EINVAL, "an issue needs a service and a title");
    return s->ops->put_issue(s, i, id, err);
}

/* Stops a scan at its first issue (rt_store_set_issue_end checks that it exists). */
static int first_issue(void *ud, const struct rt_issue *i)
{
    *(struct rt_issue *)ud = *i;
    return 1;
}

/* The alert episode rule (DESIGN §13) in one place: the backends find, store and log. */
int rt_store_alert_issue(struct rt_store *s, const struct rt_issue *i, bool resolved,
                         int64_t now_ns, int64_t *id, bool *opened, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !i || !i->alert_key || !*i->alert_key || !i->source || !id || !opened)
        return rt_error_set(err, RT_EINVAL, "rt_store_alert_issue: missing argument");
    *opened = false;
    int64_t found = 0;
    int rc = s->ops->find_alert_issue(s, i->source, i->alert_key, &found, err);
    if (rc)
        return rc;
    if (!found && resolved) {
        *id = 0; /* a resolved alert never opens an issue */
        return 0;
    }
    if (!found) { /* opened with its first notification: never read without it */
        struct rt_issue first = *i;
        first.notified_at_ns = now_ns;
        if ((rc = rt_store_put_issue(s, &first, id, err)))
            return rc;
        *opened = true;
        return 0;
    }
    *id = found;
    return s->ops->put_issue_state(s, found, resolved ? RT_ISSUE_RESOLVED : RT_ISSUE_NOTIFIED,
                                   now_ns, resolved ? i->ended_at_ns : 0, err);
}

int rt_store_set_issue_end(struct rt_store *s, int64_t id, int64_t ended_at_ns,
                           struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || id <= 0 || ended_at_ns < 0)
        return rt_error_set(err, RT_EINVAL, "rt_store_set_issue_end: bad argument");
    struct rt_issue none;
    int rc = s->ops->scan_issues(s, id, first_issue, &none, err);
    if (rc < 0)
        return rc;
    return s->ops->put_issue_state(s, id, RT_ISSUE_SET_END, rt_time_now_ns(), ended_at_ns, err);
}

int rt_store_scan_issues(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                         struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_issues: missing argument");
    return s->ops->scan_issues(s, id, cb, ud, err);
}

int rt_store_scan_services(struct rt_store *s, rt_store_service_cb cb, void *ud,
                           struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_services: missing argument");
    return s->ops->scan_services(s, cb, ud, err);
}

int rt_store_scan_instances(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                            void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_instances: missing argument");
    return s->ops->scan_instances(s, service, cb, ud, err);
}

int rt_store_retain(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s)
        return rt_error_set(err, RT_EINVAL, "rt_store_retain: no store");
    int64_t n = 0;
    int rc = s->ops->retain(s, cutoff_ns, &n, err);
    if (deleted)
        *deleted = n;
    return rc;
}

int64_t rt_store_disk_bytes(struct rt_store *s)
{
    return s ? s->ops->disk_bytes(s) : -1;
}

int64_t rt_store_profile_count(struct rt_store *s)
{
    return s ? s->ops->profile_count(s) : -1;
}

const unsigned rt_store_commit_bucket_le[RT_STORE_COMMIT_BUCKETS - 1] = {1, 2, 4, 8, 16, 32};

void rt__store_count_commit(struct rt_store *s, size_t uploads)
{
    size_t b = 0;
    while (b < RT_STORE_COMMIT_BUCKETS - 1 && uploads > rt_store_commit_bucket_le[b])
        b++;
    atomic_fetch_add_explicit(&s->commits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->commit_uploads, uploads, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->commit_hist[b], 1, memory_order_relaxed);
}

void rt_store_stats(struct rt_store *s, struct rt_store_stats *out)
{
    *out = (struct rt_store_stats){0};
    if (!s)
        return;
    out->commits = atomic_load_explicit(&s->commits, memory_order_relaxed);
    out->commit_uploads = atomic_load_explicit(&s->commit_uploads, memory_order_relaxed);
    for (size_t b = 0; b < RT_STORE_COMMIT_BUCKETS; b++)
        out->commit_hist[b] = atomic_load_explicit(&s->commit_hist[b], memory_order_relaxed);
    pthread_rwlock_rdlock(&s->dict_lock);
    out->dict_frames = s->dict.nframes;
    out->dict_stacks = s->dict.nstacks;
    out->dict_bytes = rt__store_dict_bytes(&s->dict);
    pthread_rwlock_unlock(&s->dict_lock);
    out->dict_budget = s->dict_budget;
    out->dict_resets = atomic_load_explicit(&s->dict_resets, memory_order_relaxed);
}

const char *rt__store_config_type_text(enum rt_ptype t)
{
    return t ? rt_ptype_name(t) : "";
}

enum rt_ptype rt__store_config_type_of(const char *s, size_t n)
{
    char text[8];
    enum rt_ptype t;
    if (!s || n >= sizeof(text))
        return 0;
    memcpy(text, s, n);
    text[n] = '\0';
    return rt_ptype_parse(text, &t) ? t : 0;
}

enum rt_ptype rt__store_declared_type_of(int v)
{
    return v == RT_PTYPE_CPU || v == RT_PTYPE_WALL ? (enum rt_ptype)v : 0;
}

int rt_store_set_service_config(struct rt_store *s, const char *name,
                                const struct rt_service_config *cfg, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !name || !*name || !cfg)
        return rt_error_set(err, RT_EINVAL, "rt_store_set_service_config: missing argument");
    if (cfg->type && cfg->type != RT_PTYPE_CPU && cfg->type != RT_PTYPE_WALL)
        return rt_error_set(err, RT_EINVAL, "profile type must be cpu, wall or empty");
    if (cfg->sampling_interval_us < 0 || cfg->upload_interval_s < 0)
        return rt_error_set(err, RT_EINVAL, "intervals must not be negative");
    return s->ops->set_service_config(s, name, cfg, err);
}

int rt_store_scan_service_configs(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                  struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_service_configs: missing argument");
    return s->ops->scan_service_configs(s, cb, ud, err);
}

int rt_store_put_polls(struct rt_store *s, const struct rt_poll *polls, size_t n,
                       struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || (n && !polls))
        return rt_error_set(err, RT_EINVAL, "rt_store_put_polls: missing argument");
    for (size_t i = 0; i < n; i++) {
        if (!polls[i].service || !*polls[i].service)
            return rt_error_set(err, RT_EINVAL, "poll %zu names no service", i);
    }
    if (n == 0)
        return 0;
    return s->ops->put_polls(s, polls, n, err);
}

int rt_store_scan_instance_status(struct rt_store *s, const char *service,
                                  rt_store_instance_status_cb cb, void *ud,
                                  struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_instance_status: missing argument");
    return s->ops->scan_instance_status(s, service, cb, ud, err);
}

/* True for "admin", "read" or "ingest". */
static bool scope_is_valid(const char *scope)
{
    return scope && (strcmp(scope, "admin") == 0 || strcmp(scope, "read") == 0 ||
                     strcmp(scope, "ingest") == 0);
}

int rt_store_put_key(struct rt_store *s, const struct rt_key *k, int64_t *id,
                     struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !k || !id)
        return rt_error_set(err, RT_EINVAL, "rt_store_put_key: missing argument");
    if (!scope_is_valid(k->scope))
        return rt_error_set(err, RT_EINVAL, "key scope \"%s\" is not admin, read or ingest",
                            k->scope ? k->scope : "");
    return s->ops->put_key(s, k, id, err);
}

int rt_store_scan_keys(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_keys: missing argument");
    return s->ops->scan_keys(s, cb, ud, err);
}

int rt_store_revoke_key(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s)
        return rt_error_set(err, RT_EINVAL, "rt_store_revoke_key: no store");
    if (at_ns <= 0) /* 0 means active */
        return rt_error_set(err, RT_EINVAL, "a revocation needs a time");
    return s->ops->revoke_key(s, id, at_ns, err);
}

int rt_store_put_audit(struct rt_store *s, const struct rt_audit *a, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !a || !a->actor || !a->action || !a->target)
        return rt_error_set(err, RT_EINVAL, "an audit record needs an actor, action and target");
    return s->ops->put_audit(s, a, err);
}

int rt_store_scan_audit(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                        rt_store_audit_cb cb, void *ud, struct rt_error *err)
{
    ERR_OR_LOCAL(err);
    if (!s || !cb)
        return rt_error_set(err, RT_EINVAL, "rt_store_scan_audit: missing argument");
    if (from_ns >= to_ns)
        return 0;
    return s->ops->scan_audit(s, from_ns, to_ns, limit, cb, ud, err);
}
