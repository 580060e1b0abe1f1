/*
 * slub_debug.h - SLUB's debugging (slub_debug.c): the flags KSLAB_DEBUG
 * gives a cache, its object layout, and the locked alloc/free paths every
 * debugged cache takes.
 */
#ifndef KSLAB_SLUB_DEBUG_H
#define KSLAB_SLUB_DEBUG_H
#include "slab_common.h"

#define SLAB_DEBUG_FLAGS (SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | \
                          SLAB_STORE_USER | SLAB_TRACE)

static inline bool kslab_debugged(const struct kmem_cache *s)
{
    return s->flags & SLAB_DEBUG_FLAGS;
}
/* The back-ends with SLUB's slabs, which have the debugging */
static inline bool kslab_debug_supported(void)
{
    return kslab_be == &slub_backend || kslab_be == &slob_seg_backend;
}

void kslab_debug_init(void);                 /* KSLAB_DEBUG, KSLAB_DEBUG_PANIC */
void kslab_debug_warm(void);                 /* backtrace() ready before the first report */
/* The flags a new cache called name gets: its own plus KSLAB_DEBUG's. */
slab_flags_t kslab_debug_flags(const char *name, slab_flags_t flags);

/* SLUB (slub.c calls these for a debugged cache) */
size_t slub_debug_layout(struct kmem_cache *s);          /* the slot size */
void slub_debug_new_slab(struct kmem_cache *s, struct slab *slab);   /* before ctor, links */
void *slub_debug_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size);
void slub_debug_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn);
size_t slub_debug_ksize(struct kmem_cache *s, void *x);
/* krealloc within the object: the request size and red zone follow */
bool slub_debug_resize(struct kmem_cache *s, void *x, size_t new_size, gfp_t gfp);
size_t slub_debug_orig_size(struct kmem_cache *s, void *x);
void slub_debug_leaks(struct kmem_cache *s);
#endif
