/* The dictionary of interned frames and stacks: an arena (rt/arena.h) whose memory never moves
 * (frame names are handed out as pointers into it), stacks as packed varints, open-addressing
 * tables by name and by stack hash at a load of at most 3/4, and direct indexes by id in pages
 * made as ids are met. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void rt__store_dict_init(struct rt__store_dict *d, bool by_id)
{
    memset(d, 0, sizeof(*d));
    rt_arena_init(&d->arena);
    d->by_id = by_id;
}

void rt__store_dict_cleanup(struct rt__store_dict *d)
{
    rt_arena_cleanup(&d->arena);
    free(d->frames);
    free(d->stacks);
    free(d->frame_slots);
    free(d->stack_slots);
    for (int k = 0; k < 2; k++) {
        struct rt__store_id_index *x = k ? &d->stack_by_id : &d->frame_by_id;
        for (size_t i = 0; i < x->npages; i++)
            free(x->pages[i]);
        free(x->pages);
    }
    rt__store_dict_init(d, d->by_id);
}

/* rt_array_grow, the new elements zeroed when zero is set; 0 or RT_ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem, bool zero)
{
    size_t old = *cap;
    if (rt_array_grow(arr, cap, need, elem))
        return RT_ENOMEM;
    if (zero && *cap > old)
        memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
    return 0;
}

/* True when a table of nslots slots must grow before it takes entry count + 1: past a load of
 * 3/4, where linear probing still finds a hit in ~2.5 probes (1.5 at 1/2). Measured under the
 * 30,000-instance load: 1/2 kept the stacks' table at a load of 0.29 (16 MiB for 1.2 million
 * stacks), 3/4 at 0.58 (8 MiB) (docs/performance.md, stop 31). */
static bool table_full(size_t count, size_t nslots)
{
    return (count + 1) * 4 > nslots * 3;
}

/* Rebuilds a slot table over count entries (hashes at hash_off in each elem-byte entry), with
 * room for count + 1 at a load of at most 1/2. */
static int rehash(uint32_t **slots, size_t *nslots, size_t count, const void *entries,
                  size_t elem, size_t hash_off)
{
    size_t n = *nslots ? *nslots * 2 : 256;
    while (n < count * 2 + 2)
        n *= 2;
    uint32_t *t = calloc(n, sizeof(*t));
    if (!t)
        return RT_ENOMEM;
    for (size_t i = 0; i < count; i++) {
        uint64_t h;
        memcpy(&h, (const char *)entries + i * elem + hash_off, sizeof(h));
        size_t j = (size_t)h & (n - 1);
        while (t[j])
            j = (j + 1) & (n - 1);
        t[j] = (uint32_t)(i + 1);
    }
    free(*slots);
    *slots = t;
    *nslots = n;
    return 0;
}

int64_t rt__store_dict_find_frame(const struct rt__store_dict *d, const char *name, size_t len,
                                  uint64_t h)
{
    if (!d->nframe_slots)
        return -1;
    size_t mask = d->nframe_slots - 1;
    for (size_t j = (size_t)h & mask; d->frame_slots[j]; j = (j + 1) & mask) {
        const struct rt__store_frame *f = &d->frames[d->frame_slots[j] - 1];
        if (f->hash == h && f->len == len && memcmp(f->name, name, len) == 0)
            return f->id;
    }
    return -1;
}

/* Bytes of frames[0..depth) as varints. */
static size_t stack_bytes(const uint32_t *frames, size_t depth)
{
    size_t n = depth;
    for (size_t k = 0; k < depth; k++)
        for (uint32_t v = frames[k] >> 7; v; v >>= 7)
            n++;
    return n;
}

int64_t rt__store_dict_find_stack(const struct rt__store_dict *d, const void *enc, size_t nbytes,
                                  uint64_t h)
{
    if (!d->nstack_slots)
        return -1;
    size_t mask = d->nstack_slots - 1;
    for (size_t j = (size_t)h & mask; d->stack_slots[j]; j = (j + 1) & mask) {
        const struct rt__store_stack *st = &d->stacks[d->stack_slots[j] - 1];
        if (st->hash == h && st->nbytes == nbytes && (!nbytes || !memcmp(st->enc, enc, nbytes)))
            return st->id;
    }
    return -1;
}

/* The slot of id in x, or NULL when its page is not made. */
static uint32_t *id_slot(const struct rt__store_id_index *x, uint32_t id)
{
    size_t page = id >> RT__STORE_ID_PAGE_BITS;
    if (page >= x->npages || !x->pages[page])
        return NULL;
    return &x->pages[page][id & (RT__STORE_ID_PAGE - 1)];
}

/* The index + 1 recorded for id, 0 when none. */
static uint32_t id_get(const struct rt__store_id_index *x, uint32_t id)
{
    const uint32_t *slot = id_slot(x, id);
    return slot ? *slot : 0;
}

/* Records index idx (0-based) for id, making its page; 0 or RT_ENOMEM. */
static int index_id(struct rt__store_id_index *x, uint32_t id, size_t idx)
{
    size_t page = id >> RT__STORE_ID_PAGE_BITS;
    if (grow((void **)&x->pages, &x->npages, page + 1, sizeof(*x->pages), true))
        return RT_ENOMEM;
    if (!x->pages[page]) {
        if (!(x->pages[page] = calloc(RT__STORE_ID_PAGE, sizeof(uint32_t))))
            return RT_ENOMEM;
        x->made++;
    }
    x->pages[page][id & (RT__STORE_ID_PAGE - 1)] = (uint32_t)(idx + 1);
    return 0;
}

static size_t id_index_bytes(const struct rt__store_id_index *x)
{
    return x->npages * sizeof(*x->pages) + x->made * RT__STORE_ID_PAGE * sizeof(uint32_t);
}

static void insert_slot(uint32_t *slots, size_t nslots, uint64_t h, size_t idx)
{
    size_t j = (size_t)h & (nslots - 1);
    while (slots[j])
        j = (j + 1) & (nslots - 1);
    slots[j] = (uint32_t)(idx + 1);
}

int rt__store_dict_add_frame(struct rt__store_dict *d, uint32_t id, const char *name, size_t len,
                             uint64_t h)
{
    if (d->by_id && id_get(&d->frame_by_id, id))
        return 0;
    if (len > UINT32_MAX || d->nframes >= UINT32_MAX - 1)
        return RT_ENOMEM;
    if (grow((void **)&d->frames, &d->cap_frames, d->nframes + 1, sizeof(*d->frames), false))
        return RT_ENOMEM;
    if (table_full(d->nframes, d->nframe_slots) &&
        rehash(&d->frame_slots, &d->nframe_slots, d->nframes, d->frames, sizeof(*d->frames),
               offsetof(struct rt__store_frame, hash)))
        return RT_ENOMEM;
    if (d->by_id && index_id(&d->frame_by_id, id, d->nframes))
        return RT_ENOMEM;
    char *copy = rt_arena_strndup(&d->arena, name, len);
    if (!copy) {
        if (d->by_id)
            *id_slot(&d->frame_by_id, id) = 0;
        return RT_ENOMEM;
    }
    d->frames[d->nframes] = (struct rt__store_frame){copy, (uint32_t)len, id, h};
    insert_slot(d->frame_slots, d->nframe_slots, h, d->nframes);
    d->nframes++;
    return 0;
}

/* Adds stack id, its varints enc[0..nbytes) written by write(enc, arg) into the arena. */
static int add_stack(struct rt__store_dict *d, uint32_t id, size_t nbytes, uint64_t h,
                     void (*write)(unsigned char *enc, const void *arg, size_t nbytes),
                     const void *arg)
{
    if (d->by_id && id_get(&d->stack_by_id, id))
        return 0;
    if (nbytes > UINT32_MAX || d->nstacks >= UINT32_MAX - 1)
        return RT_ENOMEM;
    if (grow((void **)&d->stacks, &d->cap_stacks, d->nstacks + 1, sizeof(*d->stacks), false))
        return RT_ENOMEM;
    if (table_full(d->nstacks, d->nstack_slots) &&
        rehash(&d->stack_slots, &d->nstack_slots, d->nstacks, d->stacks, sizeof(*d->stacks),
               offsetof(struct rt__store_stack, hash)))
        return RT_ENOMEM;
    if (d->by_id && index_id(&d->stack_by_id, id, d->nstacks))
        return RT_ENOMEM;
    unsigned char *enc = nbytes ? rt_arena_alloc_bytes(&d->arena, nbytes) : NULL;
    if (nbytes && !enc) {
        if (d->by_id)
            *id_slot(&d->stack_by_id, id) = 0;
        return RT_ENOMEM;
    }
    if (nbytes)
        write(enc, arg, nbytes);
    d->stacks[d->nstacks] = (struct rt__store_stack){enc, (uint32_t)nbytes, id, h};
    insert_slot(d->stack_slots, d->nstack_slots, h, d->nstacks);
    d->nstacks++;
    return 0;
}

/* write for add_stack: arg is the frame ids, nbytes their varints' length. */
static void write_frames(unsigned char *enc, const void *arg, size_t nbytes)
{
    const uint32_t *frames = arg;
    for (unsigned char *end = enc + nbytes; enc < end; frames++)
        enc = rt__store_put_frame_id(enc, *frames);
}

/* write for add_stack: arg is the encoded stack. */
static void write_copy(unsigned char *enc, const void *arg, size_t nbytes)
{
    memcpy(enc, arg, nbytes);
}

int rt__store_dict_add_stack(struct rt__store_dict *d, uint32_t id, const uint32_t *frames,
                             size_t depth, uint64_t h)
{
    if (depth > UINT32_MAX / 5)
        return RT_ENOMEM;
    return add_stack(d, id, stack_bytes(frames, depth), h, write_frames, frames);
}

int rt__store_dict_add_stack_enc(struct rt__store_dict *d, uint32_t id, const void *enc,
                                 size_t nbytes, uint64_t h)
{
    return add_stack(d, id, nbytes, h, write_copy, enc);
}

int rt__store_dict_hash(const struct rt__store_dict *d, bool stack, uint32_t id, uint64_t *h)
{
    uint32_t i = d->by_id ? id_get(stack ? &d->stack_by_id : &d->frame_by_id, id) : 0;
    if (!i)
        return RT_ENOTFOUND;
    *h = stack ? d->stacks[i - 1].hash : d->frames[i - 1].hash;
    return 0;
}

const char *rt__store_dict_frame_name(const struct rt__store_dict *d, uint32_t id)
{
    uint32_t i = d->by_id ? id_get(&d->frame_by_id, id) : 0;
    return i ? d->frames[i - 1].name : NULL;
}

int rt__store_dict_stack(const struct rt__store_dict *d, uint32_t id, uint32_t *frames,
                         size_t cap, size_t *depth)
{
    uint32_t i = d->by_id ? id_get(&d->stack_by_id, id) : 0;
    if (!i)
        return RT_ENOTFOUND;
    const struct rt__store_stack *st = &d->stacks[i - 1];
    const unsigned char *p = st->enc, *end = p + st->nbytes;
    size_t n = 0;
    for (uint64_t v; p < end && rt__store_get_uvarint(&p, end, &v); n++) {
        if (n == cap)
            return RT_ETOOBIG;
        frames[n] = (uint32_t)v;
    }
    *depth = n;
    return 0;
}

int rt__store_dict_merge(struct rt__store_dict *dst, const struct rt__store_dict *src)
{
    for (size_t i = 0; i < src->nframes; i++) {
        const struct rt__store_frame *f = &src->frames[i];
        if (rt__store_dict_add_frame(dst, f->id, f->name, f->len, f->hash))
            return RT_ENOMEM;
    }
    for (size_t i = 0; i < src->nstacks; i++) {
        const struct rt__store_stack *st = &src->stacks[i];
        if (add_stack(dst, st->id, st->nbytes, st->hash, write_copy, st->enc))
            return RT_ENOMEM;
    }
    return 0;
}

size_t rt__store_dict_bytes(const struct rt__store_dict *d)
{
    return d->arena.bytes + d->cap_frames * sizeof(*d->frames) +
           d->cap_stacks * sizeof(*d->stacks) +
           (d->nframe_slots + d->nstack_slots) * sizeof(uint32_t) +
           id_index_bytes(&d->frame_by_id) + id_index_bytes(&d->stack_by_id);
}

size_t rt__store_dict_frame_cost(size_t len)
{
    return len + 1 + sizeof(struct rt__store_frame) + 4 * sizeof(uint32_t);
}

size_t rt__store_dict_stack_cost(size_t nbytes)
{
    return nbytes + sizeof(struct rt__store_stack) + 4 * sizeof(uint32_t);
}
