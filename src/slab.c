/*
 * slab.c - the SLAB back-end, after the kernel's mm/slab.c (Linux 6.7 and
 * earlier).
 *
 * How it works
 * ------------
 * Objects are handed out from per-thread *array caches*: a LIFO array of free
 * object pointers per cache and thread (limit entries; refilled and drained
 * batchcount at a time).  Behind them, per cache, a *shared* array (limit
 * shared * batchcount) and three slab lists under list_lock: full, partial,
 * free.  A refill takes objects from the shared array first, then from
 * partial slabs, then free slabs, and grows the cache by one slab if it has
 * to.  A drain (array cache full) moves the oldest batchcount objects to the
 * shared array, or back into their slabs (free_block).
 *
 * A slab is 2^order pages: cache colouring shifts the first object by
 * colour_next * colour_off (cycling through the slab's spare bytes) so that
 * slabs spread their objects over different cache lines; the slab
 * descriptor's pg_colour holds the offset.  Each slab has a free-object
 * *index array*: freelist[active..num-1] are the indexes of free objects;
 * alloc takes freelist[active++], free puts freelist[--active].  Indexes are
 * bytes when a slab holds at most 256 objects (seed 000), 16-bit otherwise
 * (and 32-bit when KSLAB_SLAB_INDEX=int, to reproduce the "before" column).
 * The array lives in one of three places:
 *   OBJFREELIST  inside a free object (no ctor, no RCU, and the array fits in
 *                an object): costs no space at all; when the slab is full
 *                there is no array, and the first object freed hosts it;
 *   OFF_SLAB     in a kmalloc'ed block (objects >= 128 bytes, when the array
 *                does not fit in the slab's leftover space);
 *   ON_SLAB      at the end of the slab.
 *
 * States of a slab: on the full, partial or free list (pg_pad says which).
 * Empty slabs are destroyed when the cache holds more than free_limit free
 * objects in slabs; periodically (every 2 s, on a slow path) part of the
 * shared array is drained and free slabs trimmed; kmem_cache_shrink drains
 * the caller's array cache and the shared array and destroys every free slab.
 *
 * Private state: struct slab_cache (slab.h).  Lock order: s->list_lock ->
 * pages_lock; pages are freed and off-slab index
 * arrays allocated with list_lock dropped.  Flush, shrink and destroy free
 * off-slab arrays without creating thread state (free_offslab).
 */
#include "slab.h"
#include "percpu.h"
#include "slub_debug.h"

enum { OBJFREELIST = 0, OFF_SLAB = 1, ON_SLAB = 2 };
enum { LIST_FULL = 0, LIST_PARTIAL = 1, LIST_FREE = 2 };
#define SLAB_MAX_ORDER_HI 1           /* the kernel's slab_max_order on big machines */

/* ---- geometry --------------------------------------------------------------- */

/* Objects and leftover bytes of a 2^order slab for one placement. */
static unsigned estimate(size_t slab_bytes, unsigned size, unsigned idx, unsigned placement,
                         size_t *left)
{
    unsigned num = placement == ON_SLAB ? (unsigned)(slab_bytes / (size + idx))
                                        : (unsigned)(slab_bytes / size);
    size_t used = (size_t)num * size + (placement == ON_SLAB ? (size_t)num * idx : 0);
    *left = slab_bytes - used;
    return num;
}

/* calculate_slab_order(): the smallest order with at most 1/8 waste, up to
 * slab_max_order (and whatever one object needs). */
static unsigned slab_order(unsigned size, unsigned idx, unsigned placement, unsigned *num,
                           size_t *left)
{
    for (unsigned order = 0; order <= MAX_SLAB_ORDER; order++) {
        size_t bytes = PAGE_SIZE << order;
        *num = estimate(bytes, size, idx, placement, left);
        if (!*num)
            continue;
        if (*num > 65535) {            /* the counters hold 16 bits of objects */
            *num = 65535;
            *left = bytes - (size_t)*num * size;
        }
        if (order >= SLAB_MAX_ORDER_HI || *left * 8 <= bytes)
            return order;
    }
    return MAX_SLAB_ORDER + 1;
}

static int slab_cache_init(struct kmem_cache *s)
{
    struct slab_cache *sc = slab_c(s);
    bool debug = kslab_debugged(s);
    size_t size = ALIGN_UP(s->object_size, sizeof(void *));
    s->offset = 0;
    /* s->offset: the word of a free object the per-CPU sheaves may write
     * (their free tag, percpu.h rule 8).  SLAB keeps no link in a free
     * object, but a constructed or SLAB_TYPESAFE_BY_RCU object's contents
     * must survive while it is free: its word comes after it (or where
     * kmem_cache_args.freeptr_offset puts it), as SLUB's free pointer. */
    if (!debug && s->freeptr_req != FREEPTR_NONE && !(s->flags & SLAB_POISON)) {
        s->offset = s->freeptr_req;
    } else if (!debug && (s->ctor || (s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON)))) {
        s->offset = (uint32_t)size;
        size += sizeof(void *);
    }
    size = ALIGN_UP(size, s->align);
    if (debug)
        size = slub_debug_layout(s);    /* red zones, tracks, padding (no free pointer) */
    if (size > (PAGE_SIZE << MAX_SLAB_ORDER))
        return -1;
    s->size = (uint32_t)size;
    unsigned forced = kslab_opts.slab_index_int ? 4 : 0, num = 0, order;
    size_t left = 0;
    /* index width: bytes if a slab holds at most 256 objects */
    unsigned idx = forced ? forced : 1;
    if (!forced && (PAGE_SIZE << SLAB_MAX_ORDER_HI) / s->size > 256)
        idx = 2;
    /* placement, in the kernel's order of preference */
    unsigned placement = ON_SLAB;
    /* (a debugged object's bytes are red zone and poison, never an array) */
    if (!s->ctor && !debug && !(s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON))) {
        order = slab_order(s->size, idx, OBJFREELIST, &num, &left);
        if ((size_t)num * idx <= s->size)
            placement = OBJFREELIST;
    }
    if (placement == ON_SLAB && s->size >= 128) {
        order = slab_order(s->size, idx, OFF_SLAB, &num, &left);
        placement = left >= (size_t)num * idx ? ON_SLAB : OFF_SLAB;  /* fits: keep it on-slab */
    }
    if (placement == ON_SLAB)
        order = slab_order(s->size, idx, ON_SLAB, &num, &left);
    else
        order = slab_order(s->size, idx, placement, &num, &left);
    if (order > MAX_SLAB_ORDER)
        return -1;
    sc->placement = placement;
    sc->idx_size = idx;
    kslab_set_geometry(s, order, num);
    sc->colour_off = s->align > 64 ? s->align : 64;
    /* a debugged slab's colour is its first left red zone */
    sc->colour = debug ? 0 : (uint32_t)(left / sc->colour_off);
    sc->colour_next = 0;
    /* enable_cpucache(): limit by object size, batchcount half of it; a
     * debugged cache has no array caches (every object through the checks) */
    sc->limit = debug ? 0 : s->size > 131072 ? 1 : s->size > PAGE_SIZE ? 8 : s->size > 1024 ? 24
             : s->size > 256 ? 54 : 120;
    sc->batchcount = (sc->limit + 1) / 2;
    sc->shared = !debug && s->size <= PAGE_SIZE && prim_ncpus() > 1 ? 8 : 0;
    sc->shared_limit = sc->shared * sc->batchcount;
    sc->shared_array = NULL;
    if (sc->shared_limit) {
        sc->shared_array = prim_map(ALIGN_UP(sc->shared_limit * sizeof(void *), PAGE_SIZE));
        if (!sc->shared_array)
            return -1;
    }
    sc->free_limit = (1 + prim_ncpus()) * sc->batchcount + s->objects;
    /* the per-CPU mode's array caches: per CPU instead of per thread */
    s->pcpu_cap = sc->limit < PCPU_CAP_MAX ? sc->limit : PCPU_CAP_MAX;
    return 0;
}

/* ---- the index array --------------------------------------------------------- */

/* slab->freelist is the index array (OBJFREELIST: the free object that hosts
 * it), written under list_lock with slab_set_freelist(): the per-CPU free
 * path reads it without the lock to catch a free of the hosting, free,
 * object. */

static inline unsigned idx_get(const struct kmem_cache *s, const struct slab *slab, unsigned i)
{
    const void *a = slab->freelist;
    return slab_c(s)->idx_size == 1 ? ((const uint8_t *)a)[i]
         : slab_c(s)->idx_size == 2 ? ((const uint16_t *)a)[i] : ((const uint32_t *)a)[i];
}

static inline void idx_set(const struct kmem_cache *s, struct slab *slab, unsigned i, unsigned v)
{
    void *a = slab->freelist;
    if (slab_c(s)->idx_size == 1)
        ((uint8_t *)a)[i] = (uint8_t)v;
    else if (slab_c(s)->idx_size == 2)
        ((uint16_t *)a)[i] = (uint16_t)v;
    else
        ((uint32_t *)a)[i] = v;
}

static inline char *slab_mem(const struct slab *slab)
{
    return (char *)slab_address(slab) + slab->pg_colour;
}

/* slab_get_obj(): list_lock held, slab not full. */
static void *slab_get_obj(struct kmem_cache *s, struct slab *slab)
{
    unsigned active = slab->counters.inuse;
    void *obj = slab_mem(slab) + (size_t)idx_get(s, slab, active) * s->size;
    slab->counters.inuse = active + 1;
    if (slab_c(s)->placement == OBJFREELIST && active + 1 == s->objects)
        slab_set_freelist(slab, NULL); /* the array's host object was the last one */
    return obj;
}

static inline unsigned obj_idx(const struct kmem_cache *s, const struct slab *slab,
                               const void *obj)
{
    return (unsigned)(((const char *)obj - slab_mem(slab)) / s->size);
}

/* Is object idx free: among the index array's entries above inuse? */
static bool idx_is_free(const struct kmem_cache *s, const struct slab *slab, unsigned idx)
{
    for (unsigned i = slab->counters.inuse; i < s->objects; i++)
        if (idx_get(s, slab, i) == idx)
            return true;
    return false;
}

/* slab_put_obj(): list_lock held. */
static void slab_put_obj(struct kmem_cache *s, struct slab *slab, void *obj)
{
    unsigned active = slab->counters.inuse;
    if (unlikely(active == 0))
        kslab_double_free(s, obj);
    unsigned idx = obj_idx(s, slab, obj);
    if (slab_c(s)->placement == OBJFREELIST && !slab->freelist)
        slab_set_freelist(slab, obj);  /* a full slab: the freed object hosts the array */
    if (unlikely(idx_is_free(s, slab, idx)))   /* freed twice (not at the array top) */
        kslab_double_free(s, obj);
    slab->counters.inuse = active - 1;
    idx_set(s, slab, active - 1, idx);
}

/* ---- lists ---------------------------------------------------------------------- */

static struct slab **list_head(struct kmem_cache *s, unsigned which)
{
    return which == LIST_FULL ? &slab_c(s)->slabs_full : which == LIST_PARTIAL ? &s->partial
                                                                         : &slab_c(s)->slabs_free;
}

static void list_add_slab(struct kmem_cache *s, struct slab *slab, unsigned which)
{
    struct slab **h = list_head(s, which);
    slab->pg_pad = (uint16_t)which;
    slab->prev = NULL;
    slab->next = *h;
    if (*h)
        (*h)->prev = slab;
    *h = slab;
    if (which == LIST_PARTIAL)
        atomic_fetch_add_explicit(&s->nr_partial, 1, memory_order_relaxed);
}

static void list_del_slab(struct kmem_cache *s, struct slab *slab)
{
    if (slab->prev)
        slab->prev->next = slab->next;
    else
        *list_head(s, slab->pg_pad) = slab->next;
    if (slab->next)
        slab->next->prev = slab->prev;
    slab->next = slab->prev = NULL;
    if (slab->pg_pad == LIST_PARTIAL)
        atomic_fetch_sub_explicit(&s->nr_partial, 1, memory_order_relaxed);
}

/* Put the slab on the list its fill level says. */
static void list_fix(struct kmem_cache *s, struct slab *slab)
{
    unsigned want = slab->counters.inuse == 0 ? LIST_FREE
                  : slab->counters.inuse == s->objects ? LIST_FULL : LIST_PARTIAL;
    if (want != slab->pg_pad) {
        list_del_slab(s, slab);
        list_add_slab(s, slab, want);
    }
}

/* ---- growing and destroying slabs ----------------------------------------------- */

/* cache_grow(): a new slab, all objects free, put on the free list. */
static bool cache_grow(struct kmem_cache *s)
{
    struct slab_cache *sc = slab_c(s);
    void *offslab = NULL;
    if (sc->placement == OFF_SLAB) {
        offslab = kmalloc((size_t)s->objects * sc->idx_size, GFP_KERNEL);
        if (!offslab)
            return false;
    }
    struct slab *slab = pages_alloc(s->order, s);
    if (!slab) {
        kfree(offslab);
        return false;
    }
    char *base = slab_address(slab);
    kslab_lock(&s->list_lock);
    uint32_t colour = sc->colour_next;
    if (++sc->colour_next > sc->colour)
        sc->colour_next = 0;
    kslab_unlock(&s->list_lock);
    if (kslab_debugged(s))
        slub_debug_new_slab(s, slab);   /* colour: the left red zone; poison, padding */
    else
        slab_colour_set(slab, s->order, colour * sc->colour_off);
    char *mem = base + slab->pg_colour;
    if (s->ctor)
        for (unsigned i = 0; i < s->objects; i++)
            s->ctor(mem + (size_t)i * s->size);
    if (sc->placement == OFF_SLAB)
        slab_set_freelist(slab, offslab);
    else if (sc->placement == ON_SLAB)
        slab_set_freelist(slab, base + (PAGE_SIZE << s->order) - (size_t)s->objects * sc->idx_size);
    else                               /* hosted by the last object, allocated last */
        slab_set_freelist(slab, mem + (size_t)(s->objects - 1) * s->size);
    slab->counters.word = 0;
    slab->counters.objects = (uint16_t)s->objects;
    slab->counters.order = (uint8_t)s->order;
    /* the index array in kslab_shuffle's order; an OBJFREELIST slab's last
     * object hosts the array and is handed out last */
    unsigned n = s->objects - (sc->placement == OBJFREELIST);
    struct kslab_shuffle it;
    kslab_shuffle_start(&it, s, n);
    for (unsigned i = 0; i < n; i++)
        idx_set(s, slab, i, kslab_shuffle_next(&it));
    if (n < s->objects)
        idx_set(s, slab, n, n);
    if (kslab_debugged(s))
        slub_debug_slab_ready(s, slab);   /* every object free, for ASan or valgrind */
    pages_publish(slab);
    atomic_fetch_add_explicit(&s->nr_slabs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->total_objects, s->objects, memory_order_relaxed);
    kslab_count(s, ALLOC_SLAB, 1);
    kslab_lock(&s->list_lock);
    list_add_slab(s, slab, LIST_FREE);
    sc->free_objects += s->objects;
    kslab_unlock(&s->list_lock);
    return true;
}

static void free_offslab(void *x);

static void slab_destroy(struct kmem_cache *s, struct slab *slab)
{
    void *offslab = slab_c(s)->placement == OFF_SLAB ? slab->freelist : NULL;
    kslab_discard_slab(s, NULL, slab);
    if (offslab)
        free_offslab(offslab);
}

/* Take free slabs off the free list while more than `keep` free objects sit
 * in slabs (list_lock held); returns them linked by ->next. */
static struct slab *take_free_slabs(struct kmem_cache *s, unsigned long keep)
{
    struct slab_cache *sc = slab_c(s);
    struct slab *out = NULL;
    while (sc->slabs_free && sc->free_objects > keep) {
        struct slab *slab = sc->slabs_free;
        list_del_slab(s, slab);
        sc->free_objects -= s->objects;
        slab->next = out;
        out = slab;
    }
    return out;
}

static struct slab *trim_free_slabs(struct kmem_cache *s, unsigned long keep)
{
    if (s->flags & SLAB_TYPESAFE_BY_RCU)
        return NULL;                   /* its slabs stay: kslab_rcu_shrink */
    return take_free_slabs(s, keep);
}

/* Every free slab of an RCU cache, for kslab_rcu_shrink. */
static struct slab *take_rcu_free(struct kmem_cache *s)
{
    kslab_lock(&s->list_lock);
    struct slab *l = take_free_slabs(s, 0);
    kslab_unlock(&s->list_lock);
    return l;
}

static void destroy_list(struct kmem_cache *s, struct slab *list)
{
    while (list) {
        struct slab *slab = list;
        list = slab->next;
        slab_destroy(s, slab);
    }
}

/* free_block(): objects back into their slabs (list_lock held). */
static void free_block(struct kmem_cache *s, void **objs, unsigned n)
{
    /* The per-CPU mode: each object comes from a sheaf or the shared
     * array and carries its free tag (percpu.h rule 8), which is checked
     * and consumed here, as SLUB's link write consumes it: a copy of an
     * object freed twice whose other copy was handed out is reported, and
     * a stale copy left in a sheaf fails its pop. */
    bool tagged = pcpu_cache(s);
    for (unsigned i = 0; i < n; i++) {
        void *obj = objs[i];
        if (tagged)
            pcpu_tag_claim(s, obj);
        struct slab *slab = kslab_slab_head(s, obj);
        slab_put_obj(s, slab, obj);
        slab_c(s)->free_objects++;
        list_fix(s, slab);
    }
}

/* ---- periodic reaping ------------------------------------------------------------- */

/* cache_reap(), run from a slow path at most every 2 s (two of
 * KSLAB_DECAY_MS's ticks; never with 0): give a fifth of the
 * shared array back to the slabs and destroy free slabs beyond free_limit. */
static struct slab *maybe_reap(struct kmem_cache *s)
{
    struct slab_cache *sc = slab_c(s);
    if (!kslab_opts.decay_ns)
        return NULL;
    uint64_t now = prim_now_ns();
    if (now - sc->last_reap_ns < 2 * kslab_opts.decay_ns)
        return NULL;
    sc->last_reap_ns = now;
    unsigned n = (sc->limit + 4) / 5;
    if (n > sc->shared_avail)
        n = sc->shared_avail;
    if (n) {
        free_block(s, sc->shared_array, n);
        memmove(sc->shared_array, sc->shared_array + n, (sc->shared_avail - n) * sizeof(void *));
        set_shared_avail(sc, sc->shared_avail - n);
    }
    return trim_free_slabs(s, sc->free_limit);
}

/* ---- allocation ------------------------------------------------------------------ */

/* cache_alloc_refill(): up to want objects into p (an empty array cache,
 * or the per-CPU mode's buffer); how many (0: the cache cannot grow). */
static unsigned slab_refill(struct kmem_cache *s, void **p, unsigned want)
{
    /* the per-CPU mode: objects from the slabs go into a sheaf, tagged
     * (percpu.h rule 8); the shared array's carry their tags already */
    bool tag = pcpu_cache(s);
    struct slab_cache *sc = slab_c(s);
    unsigned got = 0;
    for (;;) {                         /* until we get objects or cannot grow */
        kslab_lock(&s->list_lock);
        struct slab *reap = maybe_reap(s);
        if (sc->shared_avail) {          /* the shared array first */
            unsigned n = sc->shared_avail < want ? sc->shared_avail : want;
            set_shared_avail(sc, sc->shared_avail - n);
            memcpy(p, sc->shared_array + sc->shared_avail, n * sizeof(void *));
            got = n;
        }
        while (got < want) {
            struct slab *slab = s->partial ? s->partial : sc->slabs_free;
            if (!slab)
                break;
            while (slab->counters.inuse < s->objects && got < want) {
                p[got] = slab_get_obj(s, slab);
                if (tag)
                    pcpu_tag_set(s, p[got]);
                got++;
                sc->free_objects--;
            }
            list_fix(s, slab);
        }
        kslab_unlock(&s->list_lock);
        destroy_list(s, reap);
        if (got)
            return got;
        if (!cache_grow(s))
            return 0;
    }
}

static bool cache_alloc_refill(struct kmem_cache *s, struct kmem_cache_cpu_cold *ac)
{
    ac->sheaf_count = slab_refill(s, ac->sheaf, slab_c(s)->batchcount);
    return ac->sheaf_count != 0;
}

/* A slab with a free object (partial first), the cache grown if it must
 * be: list_lock held on entry and on return; NULL (lock dropped) if no
 * memory. */
static struct slab *slab_with_free(struct kmem_cache *s)
{
    for (;;) {
        struct slab *slab = s->partial ? s->partial : slab_c(s)->slabs_free;
        if (slab)
            return slab;
        kslab_unlock(&s->list_lock);
        if (!cache_grow(s))
            return NULL;
        kslab_lock(&s->list_lock);
    }
}

/* One object of a slab with a free one, the slab relisted (list_lock held). */
static void *take_obj(struct kmem_cache *s, struct slab *slab)
{
    void *obj = slab_get_obj(s, slab);
    slab_c(s)->free_objects--;
    list_fix(s, slab);
    return obj;
}

/* One object without an array cache: a thread without state (its state
 * could not be mapped), or a debugged cache (limit 0), whose objects go
 * through the checks. */
static noinline void *alloc_unbuffered(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (kslab_debugged(s))
        return slub_debug_alloc(s, gfp, kmalloc_size);
    kslab_lock(&s->list_lock);
    struct slab *slab = slab_with_free(s);
    if (!slab)
        return NULL;
    void *obj = take_obj(s, slab);
    kslab_unlock(&s->list_lock);
    stat_add(s, NULL, ALLOC_SLOWPATH, 1);
    if (gfp & __GFP_ZERO)
        memset(obj, 0, s->object_size);
    return obj;
}

/* The thread's array cache is empty: refill it (or, without one, take an
 * object straight from the slabs). */
static noinline void *alloc_refill(struct kmem_cache *s, struct kmem_cache_cpu_cold *ac,
                                   gfp_t gfp, size_t kmalloc_size)
{
    if (unlikely(!slab_c(s)->limit))
        return alloc_unbuffered(s, gfp, kmalloc_size);
    if (!cache_alloc_refill(s, ac))
        return NULL;
    void *obj = ac->sheaf[--ac->sheaf_count];
    counter_inc(&ac->stat[ALLOC_SLOWPATH], 1);
    if (gfp & __GFP_ZERO)
        memset(obj, 0, s->object_size);
    return obj;
}

static void *slab_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    struct kslab_thread *t = kslab_thread_for(s);
    if (unlikely(!t))
        return alloc_unbuffered(s, gfp, kmalloc_size);
    struct kmem_cache_cpu_cold *ac = kslab_cold(t, s->id);
    if (unlikely(!ac->sheaf_count))
        return alloc_refill(s, ac, gfp, kmalloc_size);
    void *obj = ac->sheaf[--ac->sheaf_count];
    counter_inc(&t->cpu[s->id].alloc_fast, 1);
    if (gfp & __GFP_ZERO)
        memset(obj, 0, s->object_size);
    return obj;
}

/* ---- free ---------------------------------------------------------------------------- */

/* Objects back from an array cache: to the shared array if it has room
 * (some = true: as many as fit, else only if all n fit), otherwise all n
 * back to their slabs (free_block).  Returns how many were taken. */
static unsigned slab_give_back(struct kmem_cache *s, void *const *objs, unsigned n, bool some)
{
    struct slab_cache *sc = slab_c(s);
    kslab_lock(&s->list_lock);
    struct slab *reap = maybe_reap(s);
    unsigned room = sc->shared_limit - sc->shared_avail;
    if (room >= n || (some && room)) {
        if (n > room)
            n = room;
        memcpy(sc->shared_array + sc->shared_avail, objs, n * sizeof(void *));
        set_shared_avail(sc, sc->shared_avail + n);
    } else {
        free_block(s, (void **)objs, n);
        struct slab *more = trim_free_slabs(s, sc->free_limit);
        while (more) {
            struct slab *m = more;
            more = m->next;
            m->next = reap;
            reap = m;
        }
    }
    kslab_unlock(&s->list_lock);
    destroy_list(s, reap);
    return n;
}

/* cache_flusharray(): the oldest batchcount objects go to the shared array
 * (as many as it has room for), or back to their slabs. */
static void cache_flusharray(struct kmem_cache *s, struct kmem_cache_cpu_cold *ac)
{
    struct slab_cache *sc = slab_c(s);
    unsigned batch = sc->batchcount < ac->sheaf_count ? sc->batchcount : ac->sheaf_count;
    batch = slab_give_back(s, ac->sheaf, batch, true);
    memmove(ac->sheaf, ac->sheaf + batch, (ac->sheaf_count - batch) * sizeof(void *));
    ac->sheaf_count -= batch;
}

/* The per-CPU mode's refill (and slab_cpu_drain below): per-CPU array
 * caches in front of the same shared array and lists (no thread state). */
static unsigned slab_cpu_refill(struct kmem_cache *s, void **p, unsigned want, unsigned max)
{
    return slab_refill(s, p, want);
}

/* Objects straight back into their slabs, bypassing the array caches
 * (slab_put_obj catches an object freed twice). */
static void free_to_slabs(struct kmem_cache *s, void **objs, unsigned n)
{
    kslab_lock(&s->list_lock);
    free_block(s, objs, n);
    struct slab *reap = trim_free_slabs(s, slab_c(s)->free_limit);
    kslab_unlock(&s->list_lock);
    destroy_list(s, reap);
}

/* One object without an array cache (alloc_unbuffered's counterpart); x
 * validated (want and fn name the caller for the debug path's reports). */
static noinline void free_unbuffered(struct kmem_cache *want, struct kmem_cache *s, void *x,
                            const char *fn)
{
    if (kslab_debugged(s)) {
        slub_debug_free(want, s, x, fn);
        return;
    }
    if (pcpu_cache(s))
        pcpu_tag_set(s, x);     /* as if from a sheaf: free_block consumes it */
    free_to_slabs(s, &x, 1);
    stat_add(s, NULL, FREE_SLOWPATH, 1);
}

static void slab_cpu_drain(struct kmem_cache *s, void **p, unsigned n, bool whole)
{
    if (whole)
        slab_give_back(s, p, n, false);   /* a full per-CPU array cache */
    else
        free_to_slabs(s, p, n);           /* one object, or a shrink */
}

/* An off-slab index array is a kmalloc object; it is freed from flush,
 * shrink and destroy, which may run under the thread registry lock, so
 * this path must not create thread state (kfree() would). */
static void free_offslab(void *x)
{
    struct kmem_cache *s;
    kslab_object_slab(NULL, x, "kfree", &s);
    free_unbuffered(NULL, s, x, "kfree");    /* the debug path makes none either */
}

static void slab_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    kslab_slab_of(want, s, x, fn);
    struct kslab_thread *t = kslab_thread_for(s);
    if (unlikely(!t)) {
        free_unbuffered(want, s, x, fn);
        return;
    }
    struct kmem_cache_cpu_cold *ac = kslab_cold(t, s->id);
    if (unlikely(sheaf_recent(ac, x)))
        kslab_double_free(s, x);
    if (unlikely(ac->sheaf_count >= slab_c(s)->limit)) {
        if (unlikely(!slab_c(s)->limit)) {     /* no array cache: a debugged cache */
            free_unbuffered(want, s, x, fn);
            return;
        }
        cache_flusharray(s, ac);
    }
    ac->sheaf[ac->sheaf_count++] = x;
    counter_inc(&t->cpu[s->id].free_fast, 1);
}

static size_t slab_ksize(struct kmem_cache *s, const void *x)
{
    kslab_slab_of(NULL, s, x, "ksize");
    if (unlikely(kslab_debugged(s)))
        return slub_debug_ksize(s, (void *)x);
    return s->size;
}

/* ---- debugging (slub_debug.c's checks and reports on SLAB's slabs) ----------------- */

static struct slab **dbg_list(struct kmem_cache *s, unsigned i)
{
    return list_head(s, i);
}

/* The index array against inuse: every free index in range and listed
 * once.  A bad entry is dropped (its place taken by the lowest free entry,
 * inuse grows): what it stood for stays allocated, as a cut freelist's
 * objects do in SLUB. */
static int dbg_check_free(struct kmem_cache *s, struct slab *slab)
{
    unsigned n = s->objects, inuse = slab->counters.inuse, bad = 0;
    char info[96];
    if (inuse > n) {
        slub_debug_list_err(s, slab, "Wrong object count", "more objects in use than the slab has",
                            "Object count adjusted");
        slab->counters.inuse = (uint16_t)n;
        list_fix(s, slab);
        return 1;
    }
    uint64_t seen[65536 / 64];
    memset(seen, 0, (n + 63) / 64 * sizeof(uint64_t));
    for (unsigned i = n; i-- > inuse;) {
        for (;;) {
            unsigned v = idx_get(s, slab, i);
            if (v < n && !(seen[v / 64] >> (v % 64) & 1)) {
                seen[v / 64] |= 1ull << (v % 64);
                break;
            }
            bad++;                         /* out of range or listed twice: drop it */
            idx_set(s, slab, i, idx_get(s, slab, inuse));
            if (i == inuse++)
                break;
        }
    }
    if (!bad)
        return 0;
    snprintf(info, sizeof info, "%u free indexes out of range or listed twice", bad);
    char fix[64];
    snprintf(fix, sizeof fix, "%u entries dropped from the free list", bad);
    slub_debug_list_err(s, slab, "Freelist corrupt", info, fix);
    slab->counters.inuse = (uint16_t)inuse;
    slab_c(s)->free_objects -= bad;
    list_fix(s, slab);
    return 1;
}

static void *dbg_take(struct kmem_cache *s, struct slab *slab)
{
    dbg_check_free(s, slab);
    return slab->counters.inuse < s->objects ? take_obj(s, slab) : NULL;
}

static bool dbg_is_free(struct kmem_cache *s, struct slab *slab, void *x)
{
    return idx_is_free(s, slab, obj_idx(s, slab, x));
}

static struct slab *dbg_give(struct kmem_cache *s, struct slab *slab, void *x)
{
    /* a corrupt array could hide x among the free, or leave nothing in use */
    if (dbg_check_free(s, slab) && dbg_is_free(s, slab, x))
        return NULL;
    slab_put_obj(s, slab, x);
    slab_c(s)->free_objects++;
    list_fix(s, slab);
    return trim_free_slabs(s, slab_c(s)->free_limit);
}

static size_t dbg_meta_tail(struct kmem_cache *s)
{
    return slab_c(s)->placement == ON_SLAB ? (size_t)s->objects * slab_c(s)->idx_size : 0;
}

const struct kslab_debug_ops slab_debug_ops = {
    .freeptr = false,
    .nlists = 3,
    .list = dbg_list,
    .slab_for_alloc = slab_with_free,
    .take = dbg_take,
    .is_free = dbg_is_free,
    .check_free = dbg_check_free,
    .give = dbg_give,
    .discard = destroy_list,
    .meta_tail = dbg_meta_tail,
};

/* ---- flush, shrink, destroy, slabinfo ---------------------------------------------- */

static void slab_flush_thread(struct kslab_thread *t, struct kmem_cache *s)
{
    struct kmem_cache_cpu_cold *ac = kslab_cold_peek(t, s->id);
    if (!ac || !ac->sheaf_count)
        return;
    kslab_lock(&s->list_lock);
    free_block(s, ac->sheaf, ac->sheaf_count);
    struct slab *reap = trim_free_slabs(s, slab_c(s)->free_limit);
    kslab_unlock(&s->list_lock);
    ac->sheaf_count = 0;
    destroy_list(s, reap);
}

static int slab_shrink(struct kmem_cache *s)
{
    struct slab_cache *sc = slab_c(s);
    struct kslab_thread *t = kslab_tls;
    if (thread_is_real(t))
        slab_flush_thread(t, s);
    kslab_lock(&s->list_lock);
    if (sc->shared_avail)
        free_block(s, sc->shared_array, sc->shared_avail);
    set_shared_avail(sc, 0);
    struct slab *reap = trim_free_slabs(s, 0);
    kslab_unlock(&s->list_lock);
    destroy_list(s, reap);
    if (s->flags & SLAB_TYPESAFE_BY_RCU)
        kslab_rcu_shrink(s, take_rcu_free, destroy_list);
    pages_release_all();
    return 0;
}

static long slab_destroy_all(struct kmem_cache *s)
{
    struct slab_cache *sc = slab_c(s);
    s->partial = sc->slabs_full = sc->slabs_free = NULL;
    atomic_store_explicit(&s->nr_partial, 0, memory_order_relaxed);
    set_shared_avail(sc, 0);
    sc->free_objects = 0;
    struct slab *all = kslab_take_slabs(s);
    long n = 0;
    for (struct slab *d = all; d; d = d->next)
        n++;
    destroy_list(s, all);
    if (sc->shared_array)
        prim_unmap(sc->shared_array, ALIGN_UP(sc->shared_limit * sizeof(void *), PAGE_SIZE));
    sc->shared_array = NULL;
    return n;
}

static void slab_tunables(struct kmem_cache *s, unsigned out[4])
{
    struct slab_cache *sc = slab_c(s);
    out[0] = sc->limit;
    out[1] = sc->batchcount;
    out[2] = sc->shared;
    out[3] = __atomic_load_n(&sc->shared_avail, __ATOMIC_RELAXED);
}

const struct kslab_backend slab_backend = {
    .name = "slab",
    .cache_init = slab_cache_init,
    .alloc = slab_alloc,
    .free = slab_free,
    .ksize = slab_ksize,
    .alloc_bulk = kslab_alloc_bulk_each,
    .free_bulk = kslab_free_bulk_each,
    .flush_thread = slab_flush_thread,
    .shrink = slab_shrink,
    .destroy = slab_destroy_all,
    .tunables = slab_tunables,
    .cpu_refill = slab_cpu_refill,
    .cpu_drain = slab_cpu_drain,
    .debug = &slab_debug_ops,
};
