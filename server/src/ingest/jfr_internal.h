/* Declarations shared by the JFR decoder's files (jfr.c: chunks, events, the result;
 * jfr_meta.c: metadata; jfr_pool.c: values and constant pools; jfr_settings.c: periods and
 * modes; jfr_stack.c: frames): a bounded reader of JFR integers and strings, the metadata's
 * types, extracted values, constant pools, settings and stack building. Not a public header;
 * rt__ingest_jfr is declared in ingest_internal.h.
 * Format sources: the JDK's jdk.jfr.internal.consumer (ChunkHeader, ChunkParser,
 * RecordingInput, StringParser, ParserFactory) and jdk.jfr.internal.MetadataReader (JDK 25
 * src.zip); JMC's parser.v1 (ChunkLoaderV1, SeekableInputStream: uncompressed integers);
 * grafana/jfr-parser parser/ (header.go, metadata.go, cpool.go), commit 1d06ce37e983. */
#ifndef RT_JFR_INTERNAL_H
#define RT_JFR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/err.h"
#include "rt/ingest.h"
#include "rt/profile.h"
#include "rt/str.h"

#define RT__JFR_HEADER_SIZE 68   /* chunk header bytes (ChunkHeader.HEADER_SIZE) */
#define RT__JFR_MAX_CHUNKS 1000  /* chunks read from one recording */
#define RT__JFR_MAX_DEPTH 32     /* nesting of metadata elements and of inline values */
#define RT__JFR_NONE UINT32_MAX  /* "no index" */

/* ---- Reading ---- */

/* A bounded view of JFR bytes. A failed read sets rc (sticky), moves p to end and returns 0,
 * so loops end; the caller reports rc, why and fail_at once. */
struct rt__jfr_in {
    const uint8_t *p;        /* next byte */
    const uint8_t *end;      /* one past the last byte this reader may read */
    const uint8_t *base;     /* start of the recording, for offsets in messages */
    bool compressed;         /* LEB128 integers (header features bit 0), else big-endian */
    int rc;                  /* 0, or the first failure's RT_E* code */
    const char *why;         /* what failed ("truncated", ...) */
    size_t fail_at;          /* offset of the failure in the recording */
};

/* Records the first failure of r and stops it. */
static inline void rt__jfr_fail(struct rt__jfr_in *r, int rc, const char *why)
{
    if (!r->rc) {
        r->rc = rc;
        r->why = why;
        r->fail_at = (size_t)(r->p - r->base);
    }
    r->p = r->end;
}

/* Offset of r's next byte in the recording. */
static inline size_t rt__jfr_off(const struct rt__jfr_in *r)
{
    return (size_t)(r->p - r->base);
}

static inline uint8_t rt__jfr_u8(struct rt__jfr_in *r)
{
    if (r->p < r->end)
        return *r->p++;
    rt__jfr_fail(r, RT_EMALFORMED, "truncated");
    return 0;
}

/* Bytes left in r (0 when a caller moved end below p). */
static inline size_t rt__jfr_left(const struct rt__jfr_in *r)
{
    return r->p < r->end ? (size_t)(r->end - r->p) : 0;
}

/* Big-endian unsigned integer of n (1..8) bytes. */
static inline uint64_t rt__jfr_be(struct rt__jfr_in *r, unsigned n)
{
    if (rt__jfr_left(r) < n) {
        rt__jfr_fail(r, RT_EMALFORMED, "truncated");
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | r->p[i];
    r->p += n;
    return v;
}

/* A compressed integer as RecordingInput.readLong reads it: 7 bits a byte, low first, the 9th
 * byte whole. */
static inline uint64_t rt__jfr_var(struct rt__jfr_in *r)
{
    const uint8_t *p = r->p;
    if (p < r->end && *p < 0x80) {
        r->p = p + 1;
        return *p;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 56; shift += 7) {
        if (p >= r->end) {
            rt__jfr_fail(r, RT_EMALFORMED, "truncated");
            return 0;
        }
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            r->p = p;
            return v;
        }
    }
    if (p >= r->end) {
        rt__jfr_fail(r, RT_EMALFORMED, "truncated");
        return 0;
    }
    v |= (uint64_t)*p++ << 56;
    r->p = p;
    return v;
}

/* A Java long (8 bytes uncompressed). */
static inline uint64_t rt__jfr_long(struct rt__jfr_in *r)
{
    return r->compressed ? rt__jfr_var(r) : rt__jfr_be(r, 8);
}

/* A Java int (4 bytes uncompressed); compressed, the low 32 bits as the JDK's (int) cast. */
static inline uint32_t rt__jfr_int(struct rt__jfr_in *r)
{
    return r->compressed ? (uint32_t)rt__jfr_var(r) : (uint32_t)rt__jfr_be(r, 4);
}

/* Skips a compressed integer without decoding it (at most 9 bytes, the 9th whole). */
static inline void rt__jfr_skip_var(struct rt__jfr_in *r)
{
    const uint8_t *p = r->p;
    if (rt__jfr_left(r) >= 9) {
        for (int i = 0; i < 8; i++)
            if (!(*p++ & 0x80)) {
                r->p = p;
                return;
            }
        r->p = p + 1;
        return;
    }
    rt__jfr_var(r);
}

/* Skips n bytes. */
static inline void rt__jfr_skip(struct rt__jfr_in *r, uint64_t n)
{
    if (rt__jfr_left(r) < n)
        rt__jfr_fail(r, RT_EMALFORMED, "truncated");
    else
        r->p += n;
}

/* ---- Memory for converted strings (Latin-1 and UTF-16 as UTF-8) ---- */

struct rt__jfr_block;

/* Blocks freed together; total bytes bounded by budget. */
struct rt__jfr_arena {
    struct rt__jfr_block *head;  /* newest block first */
    size_t used;                 /* bytes handed out */
    size_t budget;               /* most bytes that may be handed out (max_decompressed) */
};

/* n bytes valid until rt__jfr_arena_cleanup, or NULL (RT_ETOOBIG past the budget, else
 * RT_ENOMEM, in *rc). */
char *rt__jfr_arena_alloc(struct rt__jfr_arena *a, size_t n, int *rc);

/* Frees every block; accepts a zeroed arena. */
void rt__jfr_arena_cleanup(struct rt__jfr_arena *a);

/* ---- Maps from 64-bit keys (JFR ids) to indices ---- */

/* Open addressing, keys any uint64, values < UINT32_MAX. */
struct rt__jfr_map {
    uint64_t *keys;
    uint32_t *vals;  /* value + 1, 0 = empty slot */
    size_t mask;     /* slots - 1; 0 while unallocated */
    size_t n;        /* keys held */
};

/* Value of key, or RT__JFR_NONE. */
uint32_t rt__jfr_map_get(const struct rt__jfr_map *m, uint64_t key);

/* Sets key to val. Returns 0 or RT_ENOMEM. */
int rt__jfr_map_put(struct rt__jfr_map *m, uint64_t key, uint32_t val);

/* Makes room for n keys. Returns 0 or RT_ENOMEM. */
int rt__jfr_map_reserve(struct rt__jfr_map *m, size_t n);

/* Forgets every key, keeping the storage unless it is mostly empty. */
void rt__jfr_map_clear(struct rt__jfr_map *m);

void rt__jfr_map_cleanup(struct rt__jfr_map *m);

/* ---- Metadata: the types a chunk declares (MetadataReader) ---- */

/* How a value of a type is encoded. */
enum rt__jfr_kind {
    RT__JFR_COMPOSITE = 0, /* its fields in order */
    RT__JFR_BOOLEAN,
    RT__JFR_BYTE,
    RT__JFR_CHAR,
    RT__JFR_SHORT,
    RT__JFR_INT,
    RT__JFR_LONG,
    RT__JFR_FLOAT,
    RT__JFR_DOUBLE,
    RT__JFR_STRING
};

/* Types the decoder reads by name; the first nine have constant pools it keeps. */
enum rt__jfr_special {
    RT__JFR_T_STRING,      /* java.lang.String */
    RT__JFR_T_SYMBOL,      /* jdk.types.Symbol: string */
    RT__JFR_T_CLASS,       /* java.lang.Class: name */
    RT__JFR_T_METHOD,      /* jdk.types.Method: type, name, descriptor */
    RT__JFR_T_FRAMETYPE,   /* jdk.types.FrameType: description */
    RT__JFR_T_THREADSTATE, /* jdk.types.ThreadState: name */
    RT__JFR_T_STACKTRACE,  /* jdk.types.StackTrace: frames */
    RT__JFR_NPOOLS,
    RT__JFR_T_STACKFRAME = RT__JFR_NPOOLS, /* jdk.types.StackFrame: method, type */
    RT__JFR_T_EXEC,        /* jdk.ExecutionSample: stackTrace, state */
    RT__JFR_T_WALLCLOCK,   /* profiler.WallClockSample: stackTrace, state, samples */
    RT__JFR_T_SETTING,     /* jdk.ActiveSetting: id, name, value */
    RT__JFR_NSPECIAL
};

#define RT__JFR_MAX_ROLES 3

/* What an event type is to the decoder. */
enum rt__jfr_category {
    RT__JFR_EV_OTHER = 0,
    RT__JFR_EV_EXEC,       /* cpu (or async-profiler's legacy wall) samples */
    RT__JFR_EV_WALLCLOCK,  /* async-profiler's wall-clock samples */
    RT__JFR_EV_SETTING,    /* recording settings (periods, async-profiler's mode) */
    RT__JFR_EV_ALLOC,      /* allocation samples: skipped */
    RT__JFR_EV_LOCK,       /* lock samples: skipped */
    RT__JFR_EV_NATIVE      /* jdk.NativeMethodSample: skipped */
};

/* Steps of a skip plan: an integer (compressed, else of that width) or raw bytes. */
enum rt__jfr_op { RT__JFR_OP_INT2 = 1, RT__JFR_OP_INT4, RT__JFR_OP_INT8, RT__JFR_OP_RAW1,
                  RT__JFR_OP_RAW4, RT__JFR_OP_RAW8 };

#define RT__JFR_MAX_OPS 14

struct rt__jfr_field {
    struct rt_str name;
    uint64_t type_id;   /* as declared ("class" attribute) */
    uint32_t cls;       /* index of that type */
    bool cp;            /* a constant pool key, not the value */
    bool array;         /* dimension 1: an int count, then the elements */
    int8_t role;        /* slot in the values read from its class, -1 = skipped */
};

struct rt__jfr_class {
    uint64_t id;
    struct rt_str name;
    uint32_t field_off;    /* first field in rt__jfr_meta.fields */
    uint32_t nfields;
    uint8_t kind;          /* enum rt__jfr_kind */
    uint8_t category;      /* enum rt__jfr_category, for events */
    uint8_t empty;         /* composite whose values take no bytes: 0 unknown, 1 no, 2 yes */
    bool event;            /* superType jdk.jfr.Event */
    uint8_t flat;          /* skip plan: 0 unknown, 1 none, 2 ops below are valid */
    uint8_t nops;          /* skip plan of a composite of numbers only: */
    uint8_t ops[RT__JFR_MAX_OPS]; /* enum rt__jfr_op, its fields flattened in order */
};

struct rt__jfr_meta {
    struct rt_str *strings;          /* the metadata's string table */
    size_t nstrings;
    struct rt__jfr_class *classes;
    size_t nclasses, cap_classes;
    struct rt__jfr_field *fields;
    size_t nfields, cap_fields;
    struct rt__jfr_map by_id;        /* class id -> index */
    uint32_t special[RT__JFR_NSPECIAL]; /* class index of each special type, or RT__JFR_NONE */
};

/* Reads the metadata event at r (r->end: the chunk's end) into m, which must be zeroed or
 * cleaned up; names of converted strings go to a. Returns 0, RT_EMALFORMED, RT_ETOOBIG
 * (strings past lim->max_strings) or RT_ENOMEM, with err set. */
int rt__jfr_meta_read(struct rt__jfr_meta *m, struct rt__jfr_in *r,
                      const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                      struct rt_error *err);

/* Frees what rt__jfr_meta_read allocated and zeroes m. */
void rt__jfr_meta_cleanup(struct rt__jfr_meta *m);

/* Copies s into dst (cap >= 1 bytes, NUL-terminated, cut to fit) with every byte that is not
 * printable ASCII as '?': names from a recording go into messages and JSON answers, and event
 * type names are Java identifiers. */
void rt__jfr_printable(char *dst, size_t cap, struct rt_str s);

/* Sets err to RT_EMALFORMED, "JFR: <what> at offset <off>"; returns RT_EMALFORMED. */
int rt__jfr_malformed(struct rt_error *err, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports r's failure in err: "JFR <where>: <why> at offset N" with r's code. */
int rt__jfr_in_error(const struct rt__jfr_in *r, const char *where, struct rt_error *err);

/* ---- Values ---- */

enum rt__jfr_vkind {
    RT__JV_NONE = 0, /* absent, or of a shape not extracted */
    RT__JV_NULL,     /* a null string */
    RT__JV_INT,      /* u: an integer or boolean */
    RT__JV_STR,      /* ptr, n bytes of UTF-8 */
    RT__JV_STRREF,   /* u: key in the java.lang.String pool */
    RT__JV_REF,      /* u: constant pool key of class n */
    RT__JV_ARRAY     /* u: offset of the first element, n elements */
};

/* One value extracted from a field with a role. */
struct rt__jfr_val {
    union {
        uint64_t u;
        const char *ptr;
    };
    uint32_t n;
    uint8_t kind;    /* enum rt__jfr_vkind */
};

/* Reads a string (encoding byte then payload, StringParser) into *v; Latin-1 and UTF-16 are
 * converted into a. Failures go to r. */
void rt__jfr_read_string(struct rt__jfr_in *r, struct rt__jfr_arena *a, struct rt__jfr_val *v);

/* Skips one value of field f (all its elements when an array). depth counts inline nesting. */
void rt__jfr_skip_field(const struct rt__jfr_meta *m, struct rt__jfr_in *r,
                        const struct rt__jfr_field *f, int depth);

/* Reads a value of composite class c, storing each field with a role into vals[role] (which
 * the caller zeroes) and skipping the others. */
void rt__jfr_read_obj(const struct rt__jfr_meta *m, struct rt__jfr_in *r, uint32_t c,
                      struct rt__jfr_arena *a, struct rt__jfr_val *vals);

/* ---- Constant pools (checkpoint events) ---- */

/* The entries of one special type in one chunk. */
struct rt__jfr_pool {
    struct rt__jfr_map index;    /* key -> entry */
    struct rt__jfr_val *vals;    /* RT__JFR_MAX_ROLES per entry */
    size_t n, cap;
};

/* The constant pools of a chunk that the decoder keeps. */
struct rt__jfr_pools {
    struct rt__jfr_pool pool[RT__JFR_NPOOLS];
    size_t entries;               /* constant pool entries read in this chunk (every type) */
};

/* Reads the checkpoint chain of the chunk [chunk, chunk + size) starting at cp_off (0: none)
 * into ps (cleared first). Limits: entries of every type against lim->max_strings, methods,
 * classes and stack traces each against lim->max_locations. Returns 0, RT_EMALFORMED,
 * RT_ETOOBIG or RT_ENOMEM with err set. */
int rt__jfr_pools_read(struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                       const struct rt__jfr_in *chunk, uint64_t cp_off,
                       const struct rt_ingest_limits *lim, struct rt__jfr_arena *a,
                       struct rt_error *err);

/* Frees the pools. */
void rt__jfr_pools_cleanup(struct rt__jfr_pools *ps);

/* The values of entry key of special pool t, or NULL. */
const struct rt__jfr_val *rt__jfr_pool_get(const struct rt__jfr_pools *ps, int t, uint64_t key,
                                           uint32_t *index);

/* The string v stands for (inline, a String pool entry or a Symbol), false when null or not a
 * string. */
bool rt__jfr_str(const struct rt__jfr_pools *ps, const struct rt__jfr_meta *m,
                 struct rt__jfr_val v, struct rt_str *out);

/* ---- Settings (jfr_settings.c) ---- */

/* What async-profiler's "event" setting makes of jdk.ExecutionSample. */
enum rt__jfr_mode { RT__JFR_MODE_CPU, RT__JFR_MODE_WALL, RT__JFR_MODE_OTHER };

/* The event type a setting is for. */
enum { RT__JFR_FOR_OTHER, RT__JFR_FOR_EXEC, RT__JFR_FOR_WALLCLOCK };

/* Settings of jdk.ActiveSetting events that concern samples; what a chunk states replaces
 * what the previous chunk stated, the rest carries over. */
struct rt__jfr_settings {
    int64_t exec_period;   /* JDK "period" of jdk.ExecutionSample, ns; 0 = not stated */
    int64_t exec_interval; /* async-profiler "interval" of jdk.ExecutionSample, ns */
    int64_t exec_wall;     /* async-profiler 3+ "wall" (wall-clock interval), ns; 0 = default */
    int64_t wall_period;   /* "period" or "interval" of profiler.WallClockSample, ns */
    bool exec_enabled;     /* jdk.ExecutionSample "enabled" is true */
    bool wall_enabled;     /* a "wall" setting, or profiler.WallClockSample "enabled" true */
    bool has_event;        /* async-profiler stated its "event" */
    char event[32];        /* that event ("cpu", "itimer", "wall", "cycles", ...), cut */
    unsigned stated;       /* what the current chunk stated (bits), zeroed at each chunk */
};

/* Applies one setting name = value of an event type (RT__JFR_FOR_*): a numeric one stated
 * twice in a chunk keeps the smallest positive value (the JDK samples at the shortest period
 * any of its recordings asks). */
void rt__jfr_setting(struct rt__jfr_settings *s, int target, struct rt_str name,
                     struct rt_str value);

/* What jdk.ExecutionSample measures: async-profiler's "event" cpu, itimer, ctimer or
 * cpu-clock (and JDK recordings, which state none) sample CPU time; wall samples all threads
 * on a wall-clock timer; any other event (hardware counters, tracepoints, instrumented
 * methods) counts no time. */
enum rt__jfr_mode rt__jfr_mode_of(const struct rt__jfr_settings *s);

/* Sampling period in ns the recording states for jdk.ExecutionSample as cpu (which 0), as
 * wall (1), or for profiler.WallClockSample (2), else hint (0 = none). async-profiler's wall
 * interval is its "interval" when its event is wall, else its "wall" (src/wallClock.cpp,
 * WallClock::start). */
int64_t rt__jfr_period(const struct rt__jfr_settings *s, int which, int64_t hint);

/* ---- Stacks into profiles (jfr_stack.c) ---- */

/* One profile being built, with its frame cache for the current chunk. */
struct rt__jfr_out {
    struct rt_profile *p;     /* NULL until its first sample */
    enum rt_ptype type;
    uint32_t *mcache;         /* frame id of method pool entry i: [2i] as Java, [2i+1] native;
                                 RT__JFR_NONE until named */
    size_t cap_mcache;
    uint32_t unknown;         /* id of "[unknown]", RT__JFR_NONE until interned */
    int64_t period;           /* first sampling period used, ns */
    uint64_t samples;         /* samples of this type in the recording, returned or not */
    bool enabled;             /* the recording turned this sampling on (an idle one has none) */
};

/* What names the current chunk's stack traces; pointers borrowed from the decoder. */
struct rt__jfr_stacks {
    const uint8_t *data;                  /* the recording */
    const uint8_t *chunk_end;             /* the current chunk's end */
    bool compressed;                      /* its integer encoding */
    const struct rt__jfr_meta *meta;      /* its metadata */
    const struct rt__jfr_pools *pools;    /* its constant pools */
    struct rt__jfr_arena *arena;          /* for converted strings */
    const struct rt__jfr_field *frames_field; /* jdk.types.StackTrace.frames, or NULL */
    struct rt__jfr_val (*frames)[2];      /* method and frame type of one stack, leaf first */
    uint32_t *ids;                        /* its frame ids, root first */
    char *scratch;                        /* a frame name being built */
    size_t cap_scratch;
    int8_t *mnative;                      /* per method entry: its descriptor marks native
                                             code (1), not (0), not looked at yet (-1) */
    size_t cap_mnative;
    uint64_t ft_key[8];                   /* frame types looked up in this chunk ... */
    bool ft_native[8];                    /* ... and whether they are C++ or Kernel */
    int nft;
    struct rt_error *err;
};

/* Readies s (chunk_end and compressed set by the caller) and the n outputs' caches for the
 * chunk whose metadata and pools s points to. Returns 0 or RT_ENOMEM. */
int rt__jfr_stacks_chunk(struct rt__jfr_stacks *s, struct rt__jfr_out *outs, size_t n);

/* Reads the frames of stack trace key (none when !has_key, or not in the pools) into
 * s->frames, leaf first, at most RT_MAX_STACK_DEPTH + 1 (deeper stacks are cut anyway);
 * their count in *n. Returns 0 or RT_EMALFORMED / RT_ETOOBIG / RT_ENOMEM with s->err set. */
int rt__jfr_read_frames(struct rt__jfr_stacks *s, bool has_key, uint64_t key, size_t *n);

/* Adds n samples worth value ns of the stack in s->frames[0..nf) (nf 0: "[unknown]") to o,
 * root first, making o's profile on first use. A method's frame is
 * `package.Class.method` (the class's binary name dotted, as RecordedClass.getName), or the
 * symbol of async-profiler's native code. Returns 0, RT_ETOOBIG (past
 * RT_PROFILE_MAX_VALUE_NS) or RT_ENOMEM, with s->err set. */
int rt__jfr_add_stack(struct rt__jfr_stacks *s, struct rt__jfr_out *o, size_t nf, uint64_t n,
                      int64_t value);

/* Frees what s allocated. */
void rt__jfr_stacks_cleanup(struct rt__jfr_stacks *s);

#endif
