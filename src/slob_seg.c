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
 * Shares SLUB's code for what is the same: cache_init (geometry),
 * slub_new_slab, the partial list helpers, ksize, shrink and destroy.
 * Locks: s->list_lock, never held while pages are freed or counters
 * updated (kslab_count never creates thread state, but the rule stands).
 */
#include "slub.h"
#include "slub_debug.h"

static void *seg_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (unlikely(kslab_debugged(s)))      /* SLUB's slabs, SLUB's debugging */
        return slub_debug_alloc(s, gfp, kmalloc_size);
    kslab_lock(&s->list_lock);
    struct slab *slab = partial_or_new(s);
    if (!slab)
        return NULL;
    void *o = slab->freelist;
    slab_set_freelist(slab, get_freepointer(s, o));
    slab->counters.inuse++;
    if (!slab->freelist)
        remove_partial(s, slab);          /* full: on no list */
    kslab_unlock(&s->list_lock);
    kslab_count(s, ALLOC_SLOWPATH, 1);
    if (gfp & __GFP_ZERO)
        memset(o, 0, s->object_size);
    return o;
}

static void seg_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    if (unlikely(kslab_debugged(s))) {
        slub_debug_free(want, s, x, fn);
        return;
    }
    struct slab *slab = kslab_slab_of(want, s, x, fn);
    struct slab *discard = NULL;
    kslab_lock(&s->list_lock);
    /* x freed last in its slab, or the one before (free a, free b, free a) */
    void *head = slab->freelist;
    if (head == x || slab->counters.inuse == 0 || (head && get_freepointer(s, head) == x)) {
        kslab_unlock(&s->list_lock);
        kslab_double_free(s, x);
    }
    bool was_full = slab->freelist == NULL;
    set_freepointer(s, x, slab->freelist);
    slab_set_freelist(slab, x);
    slab->counters.inuse--;
    if (was_full)
        add_partial(s, slab);
    if (partial_release_empty(s, slab))
        discard = slab;
    kslab_unlock(&s->list_lock);
    kslab_count(s, FREE_SLOWPATH, 1);
    if (discard)
        kslab_discard_slab(s, NULL, discard);
}

/* Geometry, ksize, shrink and destroy are SLUB's: the slabs are the same. */
const struct kslab_backend slob_seg_backend = {
    .name = "slob-seg",
    .cache_init = slub_cache_init,
    .alloc = seg_alloc,
    .free = seg_free,
    .ksize = slub_ksize,
    .alloc_bulk = kslab_alloc_bulk_each,
    .free_bulk = kslab_free_bulk_each,
    .shrink = slub_shrink,
    .destroy = slub_destroy,
    .debug = &slub_debug_ops,
};
