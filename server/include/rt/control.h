/* The control plane (DESIGN §5, §9): API keys and scopes, per-service profiling toggles and
 * the SDK config they produce, SDK polls (batched off the request path), change
 * notification for held polls, and the audit log. Hot paths (authenticate, config of a
 * poll) read memory only; changes are written through to the store. Thread-safe. */
#ifndef RT_CONTROL_H
#define RT_CONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt/err.h"
#include "rt/store.h"

struct rt_control;

/* Scopes, ordered: a scope allows what the ones below it allow, except that ingest allows
 * only uploads and config polls (DESIGN §9). */
enum rt_scope { RT_SCOPE_NONE = 0, RT_SCOPE_INGEST, RT_SCOPE_READ, RT_SCOPE_ADMIN };

/* "admin", "read", "ingest" (or "none"). */
const char *rt_control_scope_name(enum rt_scope s);

/* Who a request comes from. */
struct rt_principal {
    enum rt_scope scope;
    int64_t key_id;        /* 0 for the local CLI */
    char service[201];     /* an ingest key's bound service, or "" */
    char actor[128];       /* for the audit log: "key 3 (ci)", "local cli" */
};

/* The SDK config of one (service, runtime) (docs/control-plane.md). */
struct rt_sdk_config {
    bool enabled;
    enum rt_ptype type;             /* RT_PTYPE_CPU or RT_PTYPE_WALL */
    int64_t sampling_interval_us;
    int64_t upload_interval_s;
    int64_t max_stack_depth;
    int64_t poll_interval_s;
    char etag[17];                  /* 16 hex digits of a hash of the fields above */
};

/* Loads keys and service configs from store (borrowed; must outlive the control plane) and
 * starts the thread that writes polls. poll_interval_s is what SDKs are told (DESIGN §5:
 * 10 s). NULL with err set on failure. */
struct rt_control *rt_control_new(struct rt_store *store, int64_t poll_interval_s,
                                  struct rt_error *err);

/* Flushes queued polls, stops the writer thread, frees c; accepts NULL. */
void rt_control_free(struct rt_control *c);

/* Makes sure an admin key exists (DESIGN §9). Only when no active admin key exists (the first
 * start, or every admin revoked): env_token (ROOTTRACE_BOOTSTRAP_TOKEN, at least 16
 * characters) becomes one unless it was revoked before (RT_EINVAL), else a random one is
 * made and *shown receives it, to print once (caller frees). Otherwise nothing changes and
 * env_token is ignored. Audited. */
int rt_control_bootstrap(struct rt_control *c, const char *env_token, char **shown,
                         struct rt_error *err);

/* Checks a bearer token in constant time against every active key. Returns true and fills
 * who when it matches one. */
bool rt_control_authenticate(struct rt_control *c, const char *token, struct rt_principal *who);

/* A principal with every right, for the CLI working on the data directory itself. */
void rt_control_local_principal(struct rt_principal *who);

/* Creates a key. scope "admin"|"read"|"ingest"; service binds an ingest key (NULL = any).
 * Answer {"id", "scope", "service", "name", "key", "created_at"}: the secret appears only
 * here. Audited. NULL with err set (RT_EINVAL for a bad scope). */
json_t *rt_control_create_key(struct rt_control *c, const char *scope, const char *service,
                              const char *name, const struct rt_principal *by,
                              struct rt_error *err);

/* Keys without secrets: [{"id", "scope", "service", "name", "created_at", "revoked_at"}]. */
json_t *rt_control_list_keys(struct rt_control *c, struct rt_error *err);

/* Revokes key id (RT_ENOTFOUND if none active). Audited. */
int rt_control_revoke_key(struct rt_control *c, int64_t id, const struct rt_principal *by,
                          struct rt_error *err);

/* The config an SDK of this runtime gets for service (defaults per runtime, DESIGN §5). */
void rt_control_sdk_config(struct rt_control *c, const char *service, const char *runtime,
                           struct rt_sdk_config *out);

/* The config as the JSON an SDK receives. */
json_t *rt_control_sdk_config_json(const struct rt_sdk_config *cfg);

/* True when the service's profiling is on. */
bool rt_control_profiling_enabled(struct rt_control *c, const char *service);

/* Sets a service's toggle and overrides (creating an unknown service), audits the change,
 * and notifies held polls. Answer {"name", "profiling_enabled", "config"}. */
json_t *rt_control_set_profiling(struct rt_control *c, const char *service,
                                 const struct rt_service_config *cfg,
                                 const struct rt_principal *by, struct rt_error *err);

/* The per-service overrides currently set (zeroed config for an unknown service). */
void rt_control_service_config(struct rt_control *c, const char *service,
                               struct rt_service_config *out);

/* Registers fn, called (from the thread making a change) with the service whose config
 * changed. One listener: the HTTP server's held polls. */
void rt_control_on_change(struct rt_control *c, void (*fn)(void *ud, const char *service),
                          void *ud);

/* Queues a poll for the store (copied); written within a second by the poll writer. */
void rt_control_record_poll(struct rt_control *c, const struct rt_poll *p);

/* Writes queued polls now (tests, shutdown). */
int rt_control_flush_polls(struct rt_control *c, struct rt_error *err);

/* Appends to the audit log. */
int rt_control_audit(struct rt_control *c, const struct rt_principal *by, const char *action,
                     const char *target, const char *detail, struct rt_error *err);

/* One notification of an alert from an alerting system (DESIGN §13), for the control plane's
 * alert worker. Strings are copied by rt_control_queue_alerts. */
struct rt_alert_item {
    const char *source;         /* "alertmanager" or "grafana" */
    const char *fingerprint;    /* the alert's, for the audit log */
    struct rt_issue issue;      /* service, title, started_at_ns, alert_key, alert JSON;
                                   ended_at_ns when resolved */
    bool resolved;              /* the alert's status is resolved */
    const char *unmatched;      /* non-NULL: no service could be named, why; audited, opens
                                   nothing */
    int64_t received_ns;        /* when the webhook received it */
};

/* Queues n notifications, applied in order by the alert worker within moments: each through
 * rt_store_alert_issue, an unmatched one audited. All or none: RT_EBUSY when the bounded queue
 * (10,000) cannot take them all (the webhook answers 503 and its sender retries), RT_ENOMEM. */
int rt_control_queue_alerts(struct rt_control *c, const struct rt_alert_item *items, size_t n,
                            const struct rt_principal *by, struct rt_error *err);

/* Applies the queued notifications now, in the caller's thread (tests, shutdown). Returns 0 or
 * the first error (each failure is logged; the others are still applied). */
int rt_control_flush_alerts(struct rt_control *c, struct rt_error *err);

/* Notifications received and issues opened by alerts of source, since the start (/metrics). */
void rt_control_alert_counts(struct rt_control *c, const char *source, uint64_t *received,
                             uint64_t *opened);

/* The most SDK polls that wait for the poll writer (it writes them each second): past it a
 * poll is dropped and counted, so the queue's memory stays bounded however many instances
 * poll (a queued poll holds its strings: ~200 bytes plus the names). */
#define RT_CONTROL_MAX_QUEUED_POLLS 100000

/* Polls waiting for the writer now, and polls dropped because the queue was full, since the
 * start (/metrics). */
void rt_control_poll_counts(struct rt_control *c, uint64_t *queued, uint64_t *dropped);

/* The poll interval SDKs are told, seconds. */
int64_t rt_control_poll_interval_s(const struct rt_control *c);

#endif
