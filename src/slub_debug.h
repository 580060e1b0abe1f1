/*
 * slub_debug.h - SLUB's debugging (slub_debug.c): the flags KSLAB_DEBUG
 * gives a cache, its object layout, and the locked alloc/free paths every
 * debugged cache takes.
 */
#ifndef KSLAB_SLUB_DEBUG_H
#define KSLAB_SLUB_DEBUG_H
#include "slab_common.h"

#define SLAB_USER_DEBUG_FLAGS (SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | \
                               SLAB_STORE_USER | SLAB_TRACE)
/* Internal: every cache has it while ASan or valgrind watches the program
 * (slub_debug.c, "sanitizers and valgrind"): objects take the debug paths,
 * which tell the tool what is allocated and what is not. */
#define SLAB_KSLAB_ANNOTATE 0x40000000u
#define SLAB_DEBUG_FLAGS (SLAB_USER_DEBUG_FLAGS | SLAB_KSLAB_ANNOTATE)

static inline bool kslab_debugged(const struct kmem_cache *s)
{
    return s->flags & SLAB_DEBUG_FLAGS;
}
/*
 * A back-end's slabs as the debug paths see them (SLUB's freelists in
 * slub_debug.c, SLAB's index arrays in slab.c).  Every call but discard
 * runs with the cache's list_lock held.
 */
struct kslab_debug_ops {
    bool freeptr;               /* free objects hold a free pointer (s->offset) */
    unsigned nlists;            /* slab lists validation walks */
    struct slab **(*list)(struct kmem_cache *s, unsigned i);
    /* A slab with a free object, growing the cache if it must (the lock may
     * be dropped meanwhile); NULL: out of memory, lock dropped. */
    struct slab *(*slab_for_alloc)(struct kmem_cache *s);
    /* Its next free object, the slab relisted; NULL: its free list proved
     * corrupt (reported, cut) and nothing is left in it: try again. */
    void *(*take)(struct kmem_cache *s, struct slab *slab);
    bool (*is_free)(struct kmem_cache *s, struct slab *slab, void *x);
    /* The free list against the slab's counters: errors found (each
     * reported and repaired: what a corrupt list loses stays allocated). */
    int (*check_free)(struct kmem_cache *s, struct slab *slab);
    /* x back on its free list, the slab relisted; slabs to discard, off
     * every list, linked by ->next. */
    struct slab *(*give)(struct kmem_cache *s, struct slab *slab, void *x);
    void (*discard)(struct kmem_cache *s, struct slab *list);   /* lock not held */
    size_t (*meta_tail)(struct kmem_cache *s);   /* bytes at the slab's end that hold metadata */
};
extern const struct kslab_debug_ops slub_debug_ops, slab_debug_ops;

/* The back-ends with debugging: SLUB, slob-seg (SLUB's slabs) and SLAB */
static inline bool kslab_debug_supported(void)
{
    return kslab_be->debug != NULL;
}

void kslab_debug_init(void);     /* KSLAB_DEBUG, KSLAB_DEBUG_PANIC, ASan or valgrind */
void kslab_debug_warm(void);                 /* backtrace() ready before the first report */
/* The flags a new cache called name gets: its own plus KSLAB_DEBUG's. */
slab_flags_t kslab_debug_flags(const char *name, slab_flags_t flags);

/* The back-ends call these for a debugged cache */
size_t slub_debug_layout(struct kmem_cache *s);          /* the slot size */
void slub_debug_new_slab(struct kmem_cache *s, struct slab *slab);   /* before ctor, links */
/* A corrupt free list (check_free): the report, counted; info says what was
 * found and fix what was done about it. */
void slub_debug_list_err(struct kmem_cache *s, struct slab *slab, const char *what,
                         const char *info, const char *fix);
void *slub_debug_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size);
void slub_debug_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn);
size_t slub_debug_ksize(struct kmem_cache *s, void *x);
/* krealloc within the object: the request size and red zone follow */
bool slub_debug_resize(struct kmem_cache *s, void *x, size_t new_size, gfp_t gfp);
size_t slub_debug_orig_size(struct kmem_cache *s, void *x);
void slub_debug_leaks(struct kmem_cache *s);
/* A debugged cache's slab: ready (every object free, to be poisoned for the
 * tool), and about to go back to the page layer (addressable again). */
void slub_debug_slab_ready(struct kmem_cache *s, struct slab *slab);
void slub_debug_slab_release(struct kmem_cache *s, struct slab *slab);
#endif
