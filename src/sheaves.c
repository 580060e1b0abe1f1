/*
 * sheaves.c - the kernel's sheaf API (Linux 6.18): a caller reserves
 * objects ahead of a section that must not fail (under a lock, in a path
 * that cannot handle -ENOMEM), then takes them one by one.
 *
 * A user's sheaf is a kmalloc'd array of objects already allocated from
 * the cache with kmem_cache_alloc_bulk (all or nothing), so taking one
 * cannot fail and costs an array pop.  Capacity: the cache's per-CPU sheaf
 * capacity (its sheaf_capacity if it was created with one), or the size
 * asked for when that is larger: then the sheaf is "oversize", as the
 * kernel's, and is freed when returned rather than kept.  kslab keeps no
 * returned sheaves (the kernel parks them in the barn): the objects go back
 * through kmem_cache_free_bulk, which puts them on the per-CPU sheaves.
 *
 * While in a user's sheaf the objects count as allocated (slabinfo's
 * active_objs, kmem_cache_destroy's leak report): they are the caller's.
 */
#include "slab_common.h"

#include <errno.h>

struct slab_sheaf {
    struct kmem_cache *cache;
    unsigned int capacity;
    unsigned int size;              /* objects objs[0 .. size) */
    bool oversize;
    void *objs[];
};

/* The cache's per-CPU sheaf size (its sheaf_capacity, when it has sheaves,
 * is already in pcpu_cap); for back-ends without sheaves, the capacity
 * asked for, or 32. */
static unsigned sheaf_capacity_of(struct kmem_cache *s)
{
    if (s->pcpu_cap)
        return s->pcpu_cap;
    return s->sheaf_req ? s->sheaf_req : 32;
}

static struct slab_sheaf *sheaf_new(struct kmem_cache *s, gfp_t gfp, unsigned size)
{
    unsigned cap = sheaf_capacity_of(s);
    bool over = size > cap;
    if (over)
        cap = size;
    struct slab_sheaf *sh = kmalloc(sizeof *sh + (size_t)cap * sizeof(void *),
                                    gfp & ~__GFP_ZERO);
    if (!sh)
        return NULL;
    sh->cache = s;
    sh->capacity = cap;
    sh->size = 0;
    sh->oversize = over;
    return sh;
}

/* Fill sh up to `size` objects (size <= capacity): all or nothing. */
static int sheaf_fill(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sh, unsigned size)
{
    if (sh->size >= size)
        return 0;
    unsigned want = size - sh->size;
    if (kmem_cache_alloc_bulk(s, gfp & ~__GFP_ZERO, want, sh->objs + sh->size) != (int)want)
        return -ENOMEM;
    sh->size = size;
    return 0;
}

static void sheaf_check(const char *fn, struct kmem_cache *s, struct slab_sheaf *sh)
{
    if (unlikely(!sh || sh->cache != s))
        kslab_report("%s(%s): sheaf %p belongs to cache %s", fn, s ? s->name : "(null)",
                     (void *)sh, sh && sh->cache ? sh->cache->name : "(none)");
}

struct slab_sheaf *kmem_cache_prefill_sheaf(struct kmem_cache *s, gfp_t gfp, unsigned int size)
{
    kslab_ensure_init();
    kslab_check_cache("kmem_cache_prefill_sheaf", s);
    struct slab_sheaf *sh = sheaf_new(s, gfp, size);
    if (!sh)
        return NULL;
    /* not oversize: filled to capacity, as the kernel hands out full
     * sheaves; at least `size` either way */
    if (sheaf_fill(s, gfp, sh, sh->oversize ? size : sh->capacity) &&
        sheaf_fill(s, gfp, sh, size)) {
        kfree(sh);
        return NULL;
    }
    return sh;
}

int kmem_cache_refill_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf **sheafp,
                            unsigned int size)
{
    struct slab_sheaf *sh = *sheafp;
    sheaf_check("kmem_cache_refill_sheaf", s, sh);
    if (sh->size >= size)
        return 0;
    if (size <= sh->capacity)
        return sheaf_fill(s, gfp, sh, size);
    /* it does not fit: a new sheaf, the old one's objects moved over */
    struct slab_sheaf *nw = sheaf_new(s, gfp, size);
    if (!nw)
        return -ENOMEM;
    memcpy(nw->objs, sh->objs, (size_t)sh->size * sizeof(void *));
    nw->size = sh->size;
    if (sheaf_fill(s, gfp, nw, size)) {
        kfree(nw);                  /* the old sheaf keeps its objects */
        return -ENOMEM;
    }
    kfree(sh);
    *sheafp = nw;
    return 0;
}

void *kmem_cache_alloc_from_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sh)
{
    sheaf_check("kmem_cache_alloc_from_sheaf", s, sh);
    if (!sh->size)
        return NULL;
    void *x = sh->objs[--sh->size];
    if ((gfp & __GFP_ZERO) || (kslab_init_on_alloc && kslab_wants_init_on_alloc(s)))
        memset(x, 0, s->object_size);
    return x;
}

void kmem_cache_return_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sh)
{
    (void)gfp;
    if (!sh)
        return;
    sheaf_check("kmem_cache_return_sheaf", s, sh);
    if (sh->size)
        kmem_cache_free_bulk(s, sh->size, sh->objs);
    sh->cache = NULL;
    kfree(sh);
}

unsigned int kmem_cache_sheaf_size(struct slab_sheaf *sh)
{
    return sh ? sh->size : 0;
}
