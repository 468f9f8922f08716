/* Store internals shared by store.c and its backends: the backend operations table, the
 * dictionary of interned frames and stacks (the cache behind rt_store_stack), and the binary
 * encodings of stacks and of a profile's aggregated rows. Nothing outside store/ includes it. */
#ifndef RT_STORE_INT_H
#define RT_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/buf.h"
#include "rt/err.h"
#include "rt/store.h"

/* ---- Backend operations (the rt_store_* functions minus open, see store.h) ---- */

struct rt__store_ops {
    const char *name; /* "sqlite" or "clickhouse" */
    bool shared;      /* other processes (nodes) change the same state: see rt_store_is_shared */
    void (*free)(struct rt_store *s);
    int (*put_profiles)(struct rt_store *s, struct rt_profile *const *ps, size_t n,
                        struct rt_store_put_result *res, struct rt_error *err);
    int (*scan)(struct rt_store *s, const struct rt_store_filter *f, rt_store_profile_cb cb,
                void *ud, struct rt_error *err);
    /* Optional (NULL: the query layer aggregates rt_store_scan's rows): rt_store_scan_window. */
    int (*scan_window)(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_cb *cb, void *ud, struct rt_error *err);
    /* Reads stack id from the backend: its frames copied into frames[0..cap) (*depth), and
     * into s->dict when it has room (rt__store_cache_stack). Returns 0, RT_ENOTFOUND,
     * RT_EIO or RT_ETOOBIG (cap). */
    int (*load_stack)(struct rt_store *s, uint32_t id, uint32_t *frames, size_t cap,
                      size_t *depth, struct rt_error *err);
    /* Reads frame id's name from the backend into arena a (*name), and into s->dict as
     * load_stack does. Returns 0, RT_ENOTFOUND, RT_EIO or RT_ENOMEM. */
    int (*load_frame)(struct rt_store *s, uint32_t id, struct rt_arena *a, const char **name,
                      struct rt_error *err);
    int (*put_poll)(struct rt_store *s, const char *service, const char *instance, int64_t at_ns,
                    struct rt_error *err);
    int (*scan_liveness)(struct rt_store *s, const char *service, int64_t from_ns, int64_t to_ns,
                         rt_store_liveness_cb cb, void *ud, struct rt_error *err);
    int (*put_deploy)(struct rt_store *s, const struct rt_deploy *d, struct rt_error *err);
    int (*scan_deploys)(struct rt_store *s, const char *service, int64_t from_ns, int64_t to_ns,
                        rt_store_deploy_cb cb, void *ud, struct rt_error *err);
    int (*put_issue)(struct rt_store *s, const struct rt_issue *i, int64_t *id,
                     struct rt_error *err);
    int (*scan_issues)(struct rt_store *s, int64_t id, rt_store_issue_cb cb, void *ud,
                       struct rt_error *err);
    /* The id of the issue of (source, alert_key), or 0 when none is stored. */
    int (*find_alert_issue)(struct rt_store *s, const char *source, const char *alert_key,
                            int64_t *id, struct rt_error *err);
    /* Appends a state to issue id's log (ended_at_ns: RT_ISSUE_RESOLVED's and SET_END's). */
    int (*put_issue_state)(struct rt_store *s, int64_t id, enum rt_issue_state kind,
                           int64_t at_ns, int64_t ended_at_ns, struct rt_error *err);
    int (*scan_services)(struct rt_store *s, rt_store_service_cb cb, void *ud,
                         struct rt_error *err);
    int (*scan_instances)(struct rt_store *s, const char *service, rt_store_instance_cb cb,
                          void *ud, struct rt_error *err);
    int (*set_service_config)(struct rt_store *s, const char *name,
                              const struct rt_service_config *cfg, struct rt_error *err);
    int (*scan_service_configs)(struct rt_store *s, rt_store_service_config_cb cb, void *ud,
                                struct rt_error *err);
    int (*put_polls)(struct rt_store *s, const struct rt_poll *polls, size_t n,
                     struct rt_error *err);
    int (*scan_instance_status)(struct rt_store *s, const char *service,
                                rt_store_instance_status_cb cb, void *ud, struct rt_error *err);
    int (*put_key)(struct rt_store *s, const struct rt_key *k, int64_t *id,
                   struct rt_error *err);
    int (*scan_keys)(struct rt_store *s, rt_store_key_cb cb, void *ud, struct rt_error *err);
    int (*revoke_key)(struct rt_store *s, int64_t id, int64_t at_ns, struct rt_error *err);
    int (*put_audit)(struct rt_store *s, const struct rt_audit *a, struct rt_error *err);
    int (*scan_audit)(struct rt_store *s, int64_t from_ns, int64_t to_ns, size_t limit,
                      rt_store_audit_cb cb, void *ud, struct rt_error *err);
    int (*retain)(struct rt_store *s, int64_t cutoff_ns, int64_t *deleted, struct rt_error *err);
    /* Optional, all four or none (rt_store_has_rollups): rt_store_read_window over the
     * rollups of f's whole blocks plus the raw profiles they do not stand for;
     * rt_store_scan_rollup_pending; rt_store_put_rollup; rt_store_defer_rollup. */
    int (*scan_rolled)(struct rt_store *s, const struct rt_store_filter *f,
                       const struct rt_store_window_reader *r, void *ud, struct rt_error *err);
    int (*scan_rollup_pending)(struct rt_store *s, int64_t end_ns, int64_t now_ns, size_t limit,
                               int (*cb)(void *ud, const struct rt_rollup_block *b), void *ud,
                               struct rt_error *err);
    int (*put_rollup)(struct rt_store *s, const struct rt_rollup_block *b,
                      const struct rt_rollup_group *g, size_t n, struct rt_error *err);
    int (*defer_rollup)(struct rt_store *s, const struct rt_rollup_block *b, int64_t retry_ns,
                        struct rt_error *err);
    /* Optional (NULL: the keys are the ids): rt_store_keys for one kind, n > 0. */
    int (*keys)(struct rt_store *s, enum rt_store_key_kind kind, bool to_keys, uint64_t *v,
                size_t n, struct rt_error *err);
    int64_t (*disk_bytes)(struct rt_store *s);
    int (*ping)(struct rt_store *s, struct rt_error *err); /* NULL: always answers */
    int64_t (*profile_count)(struct rt_store *s);
};

/* ---- Dictionary of frames and stacks ---- */


/* One interned frame. */
struct rt__store_frame {
    const char *name; /* NUL-terminated, in the arena */
    uint32_t len;     /* bytes of name */
    uint32_t id;      /* the backend's frame id */
    uint64_t hash;    /* rt_hash of name */
};

/* One interned stack: its frame ids, root first, as unsigned LEB128 varints packed in the
 * arena (3 bytes a frame for a fleet's hundreds of thousands of frames, against 4 as an array:
 * a quarter of the dictionary's memory under the 30,000-instance load, docs/performance.md). */
struct rt__store_stack {
    const unsigned char *enc; /* the varints, in the arena (NULL when nbytes is 0) */
    uint32_t nbytes;          /* bytes of enc */
    uint32_t id;              /* the backend's stack id */
    uint64_t hash;            /* the hash the backend gave (rt__store_stack_hash, or its own) */
};

/* The id indexes' pages: 4,096 ids (16 KiB) each, made when an id in them is cached, so that
 * the index's memory follows the ids cached, not the largest one (a store that has made
 * billions of stacks caches its newest ones without a 4-byte slot for each older id). */
#define RT__STORE_ID_PAGE_BITS 12
#define RT__STORE_ID_PAGE ((size_t)1 << RT__STORE_ID_PAGE_BITS)

/* Frames and stacks found by id, by name (frames) and by content (stacks). Not thread-safe by
 * itself: the store guards its committed dictionary with dict_lock. */
struct rt__store_dict {
    struct rt_arena arena;               /* names and frame arrays (never move) */
    struct rt__store_frame *frames;      /* in insertion order */
    size_t nframes, cap_frames;
    struct rt__store_stack *stacks;      /* in insertion order */
    size_t nstacks, cap_stacks;
    uint32_t *frame_slots;               /* open addressing by name hash: index + 1 */
    size_t nframe_slots;                 /* power of two or 0 */
    uint32_t *stack_slots;               /* open addressing by stack hash: index + 1 */
    size_t nstack_slots;
    bool by_id;                          /* keep the id indexes below */
    struct rt__store_id_index {          /* id -> index + 1 (0 = not loaded), in pages of
                                            RT__STORE_ID_PAGE ids made as ids are met */
        uint32_t **pages;                /* directory: page id >> RT__STORE_ID_PAGE_BITS */
        size_t npages;                   /* its length (pages or NULL) */
        size_t made;                     /* pages made */
    } frame_by_id, stack_by_id;
};

/* A service config's type as the backends store it: "cpu", "wall", or "" for 0 (the
 * runtime's own). rt__store_config_type_of reads n bytes back; anything else reads as 0. */
const char *rt__store_config_type_text(enum rt_ptype t);
enum rt_ptype rt__store_config_type_of(const char *s, size_t n);

/* A profile's declared_type as the backends store it (its enum value, 0 none) read back:
 * anything but RT_PTYPE_CPU or RT_PTYPE_WALL reads as 0. */
enum rt_ptype rt__store_declared_type_of(int v);

/* The observed deploy profile p makes when its service reports p's version for the first
 * time (DESIGN §6): {service, version, "observed", at p's start, or now_ns when it has none}.
 * False when p names no version. The rule's one place: each backend only answers whether
 * the version is new for the service (in its own transaction or round). */
bool rt__store_observed_deploy(const struct rt_profile *p, int64_t now_ns, struct rt_deploy *d);

void rt__store_dict_init(struct rt__store_dict *d, bool by_id);
void rt__store_dict_cleanup(struct rt__store_dict *d);

/* Id of the frame named name[0..len) with hash h, or -1. */
int64_t rt__store_dict_find_frame(const struct rt__store_dict *d, const char *name, size_t len,
                                  uint64_t h);

/* The hash the backend gave frame or stack id (stack true) when it was added, into *h.
 * Returns 0, or RT_ENOTFOUND when id is not cached (or the dictionary keeps no id index). */
int rt__store_dict_hash(const struct rt__store_dict *d, bool stack, uint32_t id, uint64_t *h);

/* Id of the stack whose frame ids encode (rt__store_encode_stack) to enc[0..nbytes), with hash
 * h, or -1. */
int64_t rt__store_dict_find_stack(const struct rt__store_dict *d, const void *enc, size_t nbytes,
                                  uint64_t h);

/* Adds a copy of a frame (no-op when id is known already). Returns 0 or RT_ENOMEM. */
int rt__store_dict_add_frame(struct rt__store_dict *d, uint32_t id, const char *name, size_t len,
                             uint64_t h);

/* Adds a copy of a stack given by its frame ids, or by their encoding enc[0..nbytes)
 * (rt__store_encode_stack) (no-op when id is known already). Returns 0 or RT_ENOMEM. */
int rt__store_dict_add_stack(struct rt__store_dict *d, uint32_t id, const uint32_t *frames,
                             size_t depth, uint64_t h);
int rt__store_dict_add_stack_enc(struct rt__store_dict *d, uint32_t id, const void *enc,
                                 size_t nbytes, uint64_t h);

/* Frame name by id (needs by_id), or NULL. Valid until d is cleaned up. */
const char *rt__store_dict_frame_name(const struct rt__store_dict *d, uint32_t id);

/* Copies the frames of stack id (needs by_id), root first, into frames[0..cap) and their
 * number into *depth. 0, RT_ENOTFOUND when d does not hold it, RT_ETOOBIG when it has more
 * than cap frames. */
int rt__store_dict_stack(const struct rt__store_dict *d, uint32_t id, uint32_t *frames,
                         size_t cap, size_t *depth);

/* Copies every entry of src into dst (entries dst knows are skipped). Returns 0 or RT_ENOMEM
 * (dst then holds a subset, which is harmless: misses are loaded from the backend). */
int rt__store_dict_merge(struct rt__store_dict *dst, const struct rt__store_dict *src);

/* Bytes d holds: its arena and the capacity of its arrays and tables. */
size_t rt__store_dict_bytes(const struct rt__store_dict *d);

/* Bytes that adding a frame of len bytes (a stack of nbytes encoded) costs d at most,
 * amortized: its copy, its entry, three hash slots (the tables' load is kept between 3/8 and
 * 3/4) and an id slot. */
size_t rt__store_dict_frame_cost(size_t len);
size_t rt__store_dict_stack_cost(size_t nbytes);

/* ---- The store object ---- */

struct rt_store {
    const struct rt__store_ops *ops; /* the backend */
    void *be;                        /* backend state, owned (freed by ops->free) */
    pthread_rwlock_t dict_lock;      /* guards dict */
    struct rt__store_dict dict;      /* committed frames and stacks, loaded lazily */
    size_t dict_budget;              /* bytes dict may hold before it is emptied (0: no bound;
                                        SQLite's default RT__STORE_DICT_BUDGET) */
    atomic_uint_least64_t dict_resets; /* times dict was emptied to stay in its budget */
    atomic_bool reads_cancelled;     /* rt_store_cancel_reads was called */
    /* upload transactions committed, the uploads they held, and commits by uploads held
     * (rt_store_stats) */
    atomic_uint_least64_t commits, commit_uploads, commit_hist[RT_STORE_COMMIT_BUCKETS];
};

/* SQLite's bound on the dictionary's memory: it is a cache of the database's frames and stacks,
 * so when adding would take it past this many bytes it is emptied first, and what is used
 * again is read back from the database. It must hold the fleet's working set: at 64 MiB the
 * 30,000-instance load (~150 MiB of frames and stacks a minute) emptied it over and over and
 * fell behind (docs/performance.md) (docs/internals/store.md, "The frame and stack
 * cache"). ClickHouse's dictionary is its map of content hashes to this process's ids and is
 * not bounded (docs/internals/clickhouse.md). */
#define RT__STORE_DICT_BUDGET ((size_t)256 << 20)

/* A scan's callbacks and their data, called through the checks of rt_store_cancel_reads
 * (store.c): rt__store_checked_rows and rt__store_checked_sums take one as their ud, return
 * RT_ECANCELED once reads are cancelled, and else call the caller's with its ud. */
struct rt__store_checked {
    struct rt_store *s;
    rt_store_profile_cb profile_cb;
    const struct rt_store_window_cb *window_cb;
    void *ud;
};
int rt__store_checked_rows(void *ud, const struct rt_profile_meta *m,
                           const struct rt_store_row *rows, size_t nrows);
extern const struct rt_store_window_cb rt__store_checked_sums;

/* Adds committed entries to s->dict under its write lock, emptying it first when they would
 * take it past s->dict_budget (counted in dict_resets). 0 or RT_ENOMEM (the entry is then
 * simply not cached). The merge adds a transaction's pending dictionary. */
int rt__store_cache_frame(struct rt_store *s, uint32_t id, const char *name, size_t len,
                          uint64_t h);
int rt__store_cache_stack(struct rt_store *s, uint32_t id, const void *enc, size_t nbytes,
                          uint64_t h);
int rt__store_cache_merge(struct rt_store *s, const struct rt__store_dict *pending);

/* Counts a committed write transaction holding `uploads` rt_store_put_profiles calls. */
void rt__store_count_commit(struct rt_store *s, size_t uploads);

/* Opens the SQLite backend on the database file path into s (ops and be). */
int rt__sqlite_open(struct rt_store *s, const char *path, struct rt_error *err);

/* Opens the ClickHouse backend on "clickhouse:http://HOST:PORT/DB" into s (ops and be). */
int rt__ch_open(struct rt_store *s, const char *uri, struct rt_error *err);

/* ---- Encodings ---- */

/* Appends an unsigned LEB128 varint; b must have 10 bytes reserved. */
static inline void rt__store_put_uvarint(struct rt_buf *b, uint64_t v)
{
    unsigned char *p = (unsigned char *)b->data + b->len;
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    b->len = (size_t)(p - (unsigned char *)b->data);
}

/* Writes frame id v as rt__store_put_uvarint would, at p (5 bytes of room), and returns the
 * byte after it: the ids under 2^14 that most stores' frames have in one or two steps
 * without a loop. Callers keep p in a local, so that the compiler does not reload and store
 * a buffer's length per id (a store through the data could alias it). */
static inline unsigned char *rt__store_put_frame_id(unsigned char *p, uint32_t v)
{
    if (v < 0x80) {
        *p++ = (unsigned char)v;
    } else if (v < 0x4000) {
        p[0] = (unsigned char)(v | 0x80);
        p[1] = (unsigned char)(v >> 7);
        p += 2;
    } else {
        for (; v >= 0x80; v >>= 7)
            *p++ = (unsigned char)(v | 0x80);
        *p++ = (unsigned char)v;
    }
    return p;
}

/* Reads an unsigned varint from *p (< end), advancing *p. Returns false when malformed. */
static inline bool rt__store_get_uvarint(const unsigned char **p, const unsigned char *end,
                                         uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Encodes frames (root first) as varints into b (cleared first). Returns 0 or RT_ENOMEM. */
int rt__store_encode_stack(struct rt_buf *b, const uint32_t *frames, size_t depth);

/* Decodes a stack blob into *frames (malloc'd, caller frees) and *depth. Returns 0,
 * RT_EMALFORMED or RT_ENOMEM. */
int rt__store_decode_stack(const void *blob, size_t n, uint32_t **frames, size_t *depth);

/* Hash of an encoded stack (stable across runs and machines: it is stored). */
uint64_t rt__store_stack_hash(const void *blob, size_t n);

/* Encodes rows (sorted in place by stack id, equal ids merged) into b (cleared first).
 * period_ns predicts value_ns from integral samples so that value = samples * period costs a
 * byte. Returns 0, RT_ENOMEM, or RT_ETOOBIG (too many rows, or a stack's merged value_ns
 * past int64: rows and *nrows are then partly merged). */
int rt__store_encode_rows(struct rt_buf *b, struct rt_store_row *rows, size_t *nrows,
                          int64_t period_ns);

/* Decodes a rows blob into *rows (grown as needed; *cap its capacity) and *nrows.
 * Returns 0, RT_EMALFORMED or RT_ENOMEM. */
int rt__store_decode_rows(const void *blob, size_t n, struct rt_store_row **rows, size_t *cap,
                          size_t *nrows);

/* ---- Rollups (store_rollup.c) ---- */

/* True when [f->from_ns, f->to_ns) holds a whole hour (RT_ROLLUP_HOUR_NS-aligned). */
bool rt__store_window_has_hour(const struct rt_store_filter *f);

/* rt_store_read_window through the backend's scan_rolled, with the cancellation checks of
 * every scan. */
int rt__store_read_rolled(struct rt_store *s, const struct rt_store_filter *f,
                          const struct rt_store_window_reader *r, void *ud, struct rt_error *err);

#endif
