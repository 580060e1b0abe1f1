/*
 * slab.h - SLAB's private per-cache state (the kernel's slab_def.h and its
 * struct kmem_cache_node), kept in kmem_cache's back-end area.  Only slab.c
 * includes it.  The partial list and list_lock are the common node's.
 */
#ifndef KSLAB_SLAB_H
#define KSLAB_SLAB_H
#include "slab_common.h"

struct slab_cache {
    struct slab *slabs_full, *slabs_free;      /* list_lock */
    unsigned long free_objects;  /* free objects in slabs (not in array caches) */
    unsigned long free_limit;    /* free objects kept in slabs before empty slabs go */
    uint32_t colour, colour_off, colour_next;  /* cache colouring (colour_next: list_lock) */
    uint32_t limit, batchcount, shared;        /* tunables, as slabinfo shows them */
    uint32_t idx_size;           /* freelist index bytes: 1, 2 (or 4 for the experiment) */
    uint32_t placement;          /* where the index array lives: OBJFREELIST, OFF_SLAB, ON_SLAB */
    void **shared_array;         /* shared array cache (list_lock) */
    uint32_t shared_avail, shared_limit;
    uint64_t last_reap_ns;       /* list_lock */
};
_Static_assert(sizeof(struct slab_cache) <= KSLAB_CACHE_PRIV, "fits in kmem_cache");

static inline struct slab_cache *slab_c(const struct kmem_cache *s)
{
    return (struct slab_cache *)(void *)s->be_private;
}

/* shared_avail changes under the cache's list_lock; slabinfo (and the
 * publisher, which may run inside an allocation) reads it without the lock:
 * relaxed stores and a relaxed load give it an untorn value, all it needs. */
static inline void set_shared_avail(struct slab_cache *sc, unsigned v)
{
    __atomic_store_n(&sc->shared_avail, v, __ATOMIC_RELAXED);
}
#endif
