/*
 * slob_seg.c - seed 002's SLOB: "a lightweight SLUB".
 *
 * How it works
 * ------------
 * Each cache (the kmalloc classes included) keeps its own segregated list of
 * partially free slabs of same-size objects, with the same geometry as SLUB
 * (objects at a fixed stride from the slab start, the free pointer inside
 * the free object, calculate_order()), so merging works as for SLUB.  There
 * is no per-thread state at all: every allocation and free takes the cache's
 * one lock, pops or pushes the first partial slab's freelist and moves the
 * slab between the partial list and "full" (on no list).  Cost is bounded
 * and predictable: O(1) under one lock, no search.  Empty slabs beyond
 * min_partial go back to the page layer.
 *
 * States: partial (on s->partial), full (on no list), empty (discarded, or
 * kept on the partial list while the cache holds fewer than min_partial).
 * Lock order: s->list_lock -> pages_lock (pages are never freed under it).
 * Nothing that may create thread state (kslab_count) runs under list_lock:
 * that takes the thread registry lock, which fork's prepare handler holds
 * while it takes every list_lock.
 */
#include "internal.h"

static inline void *fp_get(const struct kmem_cache *s, void *o)
{
    return *(void **)((char *)o + s->offset);
}
static inline void fp_set(const struct kmem_cache *s, void *o, void *v)
{
    *(void **)((char *)o + s->offset) = v;
}

static int seg_cache_init(struct kmem_cache *s)
{
    return slub_backend.cache_init(s);   /* same geometry as SLUB */
}

static void seg_discard(struct kmem_cache *s, struct slab *slab)
{
    atomic_fetch_sub_explicit(&s->nr_slabs, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->total_objects, s->objects, memory_order_relaxed);
    kslab_count(s, FREE_SLAB, 1);
    pages_free(slab, s->order);
}

/* A new slab, its objects linked; not yet on any list. */
static struct slab *seg_new_slab(struct kmem_cache *s)
{
    struct slab *slab = pages_alloc(s->order, s);
    if (!slab)
        return NULL;
    char *base = slab_address(slab);
    char *last = base + (size_t)(s->objects - 1) * s->size;
    for (char *p = base; p <= last; p += s->size) {
        if (s->ctor)
            s->ctor(p);
        fp_set(s, p, p == last ? NULL : p + s->size);
    }
    slab->freelist = base;
    slab->counters.word = 0;
    slab->counters.objects = (uint16_t)s->objects;
    slab->counters.order = (uint8_t)s->order;
    pages_publish(slab);
    atomic_fetch_add_explicit(&s->nr_slabs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->total_objects, s->objects, memory_order_relaxed);
    kslab_count(s, ALLOC_SLAB, 1);
    return slab;
}

static void *seg_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    kslab_lock(&s->list_lock);
    struct slab *slab = s->partial;
    if (!slab) {
        kslab_unlock(&s->list_lock);
        struct slab *fresh = seg_new_slab(s);
        if (!fresh)
            return NULL;
        kslab_lock(&s->list_lock);
        add_partial(s, fresh);
        slab = s->partial;
    }
    void *o = slab->freelist;
    slab->freelist = fp_get(s, o);
    slab->counters.inuse++;
    if (!slab->freelist)
        remove_partial(s, slab);          /* full: on no list */
    kslab_unlock(&s->list_lock);
    kslab_count(s, ALLOC_SLOWPATH, 1);
    if (gfp & __GFP_ZERO)
        memset(o, 0, s->object_size);
    return o;
}

static void seg_free(struct kmem_cache *want, void *x, const char *fn)
{
    if (!in_arena(x))
        kslab_bad_free(fn, want, x);
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (!s || (want && s != want))
        kslab_bad_free(fn, want, x);
    uintptr_t base = (uintptr_t)x & s->slab_mask;
    struct slab *slab = addr_desc(base);
    if (slab->pg_state != PG_SLAB || !kslab_object_start(s, base, x))
        kslab_bad_free(fn, want, x);
    struct slab *discard = NULL;
    kslab_lock(&s->list_lock);
    if (slab->freelist == x || slab->counters.inuse == 0) {
        kslab_unlock(&s->list_lock);
        kslab_report("double free of object %p in cache %s", x, s->name);
    }
    bool was_full = slab->freelist == NULL;
    fp_set(s, x, slab->freelist);
    slab->freelist = x;
    slab->counters.inuse--;
    if (was_full)
        add_partial(s, slab);
    if (slab->counters.inuse == 0 && !(s->flags & SLAB_TYPESAFE_BY_RCU) &&
        atomic_load_explicit(&s->nr_partial, memory_order_relaxed) > s->min_partial) {
        remove_partial(s, slab);
        discard = slab;
    }
    kslab_unlock(&s->list_lock);
    kslab_count(s, FREE_SLOWPATH, 1);
    if (discard)
        seg_discard(s, discard);
}

static size_t seg_ksize(const void *x)
{
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    uintptr_t base = (uintptr_t)x & (s ? s->slab_mask : 0);
    if (!s || addr_desc(base)->pg_state != PG_SLAB || !kslab_object_start(s, base, x))
        kslab_bad_free("ksize", NULL, x);
    return s->size;
}

static int seg_shrink(struct kmem_cache *s)
{
    if (s->flags & SLAB_TYPESAFE_BY_RCU)
        return 0;
    struct slab *discard = take_empty_partials(s);
    while (discard) {
        struct slab *d = discard;
        discard = d->next;
        seg_discard(s, d);
    }
    pages_release_all();
    return 0;
}

static long seg_destroy(struct kmem_cache *s)
{
    long n = 0;
    s->partial = NULL;
    atomic_store_explicit(&s->nr_partial, 0, memory_order_relaxed);
    for (struct slab *d = pages_take_slabs(s), *next; d; d = next, n++) {
        next = d->next;
        seg_discard(s, d);
    }
    return n;
}

const struct kslab_backend slob_seg_backend = {
    .name = "slob-seg",
    .cache_init = seg_cache_init,
    .alloc = seg_alloc,
    .free = seg_free,
    .ksize = seg_ksize,
    .shrink = seg_shrink,
    .destroy = seg_destroy,
    .tunables = NULL,
};
