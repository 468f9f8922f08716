/* State shared by the files of control/ (module-internal). */
#ifndef RT_CONTROL_INT_H
#define RT_CONTROL_INT_H

#include <pthread.h>

#include "rt/control.h"

/* An API key as held in memory: the hash only, never the secret. */
struct rt__control_key {
    int64_t id;
    enum rt_scope scope;
    char service[201];      /* bound service or "" */
    char name[96];
    uint8_t hash[32];
    int64_t created_at_ns, revoked_at_ns;
};

/* One service's toggle and overrides. */
struct rt__control_service {
    char *name;
    struct rt_service_config cfg;
};

struct rt_control {
    struct rt_store *store;
    int64_t poll_interval_s;
    pthread_rwlock_t lock;              /* guards keys and services */
    struct rt__control_key *keys;
    size_t nkeys, cap_keys;
    struct rt__control_service *services; /* sorted by name */
    size_t nservices, cap_services;
    void (*on_change)(void *ud, const char *service);
    void *on_change_ud;
    uint64_t gen;                       /* bumped by each local change of keys or services
                                         * (under lock): a refresh read before it is dropped */

    /* Poll writer: polls queue here and a thread writes them each second. */
    pthread_mutex_t poll_mu;
    pthread_cond_t poll_cond;
    struct rt_poll *polls;              /* owned copies */
    size_t npolls, cap_polls;
    uint64_t polls_dropped;             /* queue full */
    bool stopping;
    bool writer_started;
    pthread_t writer;

    /* Alert worker (alerts.c): notifications queue here and a thread applies them in order. */
    pthread_mutex_t alert_mu;
    pthread_cond_t alert_cond;
    struct rt__control_queued_alert *alerts; /* owned copies, in arrival order */
    size_t nalerts, cap_alerts;
    size_t alerts_applying;             /* taken by the worker, not yet applied */
    uint64_t alerts_received[2];        /* per source: alertmanager, grafana */
    uint64_t issues_opened[2];
    bool alerts_stopping;
    bool alert_thread_started;
    pthread_t alert_thread;
};

/* Starts and stops the alert worker (alerts.c); stop applies what is queued. */
int rt__control_alerts_start(struct rt_control *c, struct rt_error *err);
void rt__control_alerts_stop(struct rt_control *c);

/* Loads keys from the store into c (called once at start). */
int rt__control_load_keys(struct rt_control *c, struct rt_error *err);

/* Keys as read from the store, before they replace the ones in memory. */
struct rt__control_keyset {
    struct rt__control_key *keys;
    size_t n, cap;
};

/* Reads every key from the store into ks (caller frees ks->keys). */
int rt__control_read_keys(struct rt_control *c, struct rt__control_keyset *ks,
                          struct rt_error *err);

/* Re-reads service configs and keys from a shared store (ClickHouse: another node may have
 * changed them), replaces the ones in memory unless a local change came in meanwhile, and
 * notifies held polls of each service whose config changed. Run each second by the poll
 * writer thread when rt_store_is_shared (DESIGN §5: every node notices within 1 s). */
int rt__control_refresh(struct rt_control *c, struct rt_error *err);

/* Starts / stops the poll writer thread. */
int rt__control_polls_start(struct rt_control *c, struct rt_error *err);
void rt__control_polls_stop(struct rt_control *c);

/* "admin"/"read"/"ingest" to a scope (RT_SCOPE_NONE otherwise). */
enum rt_scope rt__control_scope_parse(const char *s);

#endif
