/*
 * slob.h - SLOB's private per-cache state, in kmem_cache's back-end area.
 * SLOB's pages are shared by all caches, so a cache owns little: only the
 * freed objects a SLAB_TYPESAFE_BY_RCU cache keeps for itself.
 */
#ifndef KSLAB_SLOB_H
#define KSLAB_SLOB_H
#include "slab_common.h"

struct slob_cache {
    void *rcu_free;              /* freed objects of a SLAB_TYPESAFE_BY_RCU cache (slob_lock) */
    struct slab *rcu_big;        /* the same for objects on pages of their own: their heads,
                                    linked through ->next (slob_lock) */
};
_Static_assert(sizeof(struct slob_cache) <= KSLAB_CACHE_PRIV, "fits in kmem_cache");

static inline struct slob_cache *slob_c(const struct kmem_cache *s)
{
    return (struct slob_cache *)(void *)s->be_private;
}
#endif
