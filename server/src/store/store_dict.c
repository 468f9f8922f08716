/* The dictionary of interned frames and stacks: an arena (rt/arena.h) whose memory never moves
 * (rt_store_stack and rt_store_frame_name hand out pointers into it), open-addressing tables
 * by name and by stack hash, and direct indexes by id in pages made as ids are met. */
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

/* Rebuilds a slot table of n slots over count entries whose hashes hash_of gives. */
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

int64_t rt__store_dict_find_stack(const struct rt__store_dict *d, const uint32_t *frames,
                                  size_t depth, uint64_t h)
{
    if (!d->nstack_slots)
        return -1;
    size_t mask = d->nstack_slots - 1;
    for (size_t j = (size_t)h & mask; d->stack_slots[j]; j = (j + 1) & mask) {
        const struct rt__store_stack *st = &d->stacks[d->stack_slots[j] - 1];
        if (st->hash == h && st->depth == depth &&
            memcmp(st->frames, frames, depth * sizeof(*frames)) == 0)
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
    if ((d->nframes + 1) * 2 > d->nframe_slots &&
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

int rt__store_dict_add_stack(struct rt__store_dict *d, uint32_t id, const uint32_t *frames,
                             size_t depth, uint64_t h)
{
    if (d->by_id && id_get(&d->stack_by_id, id))
        return 0;
    if (depth > UINT32_MAX / sizeof(*frames) || d->nstacks >= UINT32_MAX - 1)
        return RT_ENOMEM;
    if (grow((void **)&d->stacks, &d->cap_stacks, d->nstacks + 1, sizeof(*d->stacks), false))
        return RT_ENOMEM;
    if ((d->nstacks + 1) * 2 > d->nstack_slots &&
        rehash(&d->stack_slots, &d->nstack_slots, d->nstacks, d->stacks, sizeof(*d->stacks),
               offsetof(struct rt__store_stack, hash)))
        return RT_ENOMEM;
    if (d->by_id && index_id(&d->stack_by_id, id, d->nstacks))
        return RT_ENOMEM;
    uint32_t *copy = rt_arena_alloc(&d->arena, depth * sizeof(*frames) + 1);
    if (!copy) {
        if (d->by_id)
            *id_slot(&d->stack_by_id, id) = 0;
        return RT_ENOMEM;
    }
    if (depth)
        memcpy(copy, frames, depth * sizeof(*frames));
    d->stacks[d->nstacks] = (struct rt__store_stack){copy, (uint32_t)depth, id, h};
    insert_slot(d->stack_slots, d->nstack_slots, h, d->nstacks);
    d->nstacks++;
    return 0;
}

const char *rt__store_dict_frame_name(const struct rt__store_dict *d, uint32_t id)
{
    uint32_t i = d->by_id ? id_get(&d->frame_by_id, id) : 0;
    return i ? d->frames[i - 1].name : NULL;
}

const struct rt__store_stack *rt__store_dict_stack(const struct rt__store_dict *d, uint32_t id)
{
    uint32_t i = d->by_id ? id_get(&d->stack_by_id, id) : 0;
    return i ? &d->stacks[i - 1] : NULL;
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
        if (rt__store_dict_add_stack(dst, st->id, st->frames, st->depth, st->hash))
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
    return len + 1 + sizeof(struct rt__store_frame) + 3 * sizeof(uint32_t);
}

size_t rt__store_dict_stack_cost(size_t depth)
{
    return depth * sizeof(uint32_t) + 1 + sizeof(struct rt__store_stack) + 3 * sizeof(uint32_t);
}
