/*
 * slub.c - the SLUB back-end, after the kernel's mm/slub.c.
 *
 * How it works
 * ------------
 * A slab is 2^order naturally aligned pages cut into `objects` objects of
 * `size` bytes; there is no metadata inside it.  A free object holds the
 * pointer to the next free object at `offset`.  The slab's descriptor
 * (struct slab, in the arena's table) has the slab's own freelist and a
 * counters word (inuse, objects, frozen); the two are changed together with
 * one 16-byte compare-and-swap (cmpxchg16b).
 *
 * Each thread has, per cache, a cpu slab and a cpu freelist.  The cpu
 * freelist is private to the thread: the fast paths pop and push on it with
 * plain loads and stores.  Frees by other threads go to the slab's own
 * freelist with the double-word compare-and-swap and are collected by the
 * owner when its cpu freelist runs dry (ALLOC_REFILL).
 *
 * Sheaves (Linux 6.18)
 * --------------------
 * In front of the slabs each thread also keeps, per cache, a sheaf: a small
 * array of free objects.  A free that misses the cpu slab goes into the
 * sheaf (no atomic, the object is not even touched) and the allocation slow
 * path takes from the sheaf before it refills from slabs; a full sheaf gives
 * its older half back to the slabs with detached freelists.  This is what
 * keeps programs that free in random order (every free landing in a full
 * slab) off the compare-and-swap path.
 *
 * Slab states
 * -----------
 *   frozen       owned by one thread: its cpu slab, or on its cpu partial
 *                list.  Only the owner allocates from it; anybody may free
 *                to it without a lock.
 *   partial      not frozen, has free objects, on the cache's partial list
 *                (protected by list_lock).
 *   full         not frozen, no free objects, on no list.
 *   empty        a partial slab with inuse == 0: kept while the cache holds
 *                fewer than min_partial partial slabs, else returned to the
 *                page layer (and the OS).  Never for SLAB_TYPESAFE_BY_RCU.
 *
 * Transitions that change list membership of a non-frozen slab (full ->
 * partial, partial -> empty, unfreezing) happen with list_lock held around
 * the compare-and-swap, so list membership always agrees with the state.
 * A full slab that gets a free from a thread is frozen by that thread
 * (lock-free, full slabs are on no list) and put on its cpu partial list.
 *
 * Locks: s->list_lock only (see the lock-order block in slab_common.h);
 * it is dropped before slabs go back to the page layer, and a free that
 * must retry its compare-and-swap drops it first (as __slab_free does).
 * Invariant, checked where a slab enters or leaves the partial list: a
 * frozen slab is never on the cache's partial list.
 *
 * Double frees caught without debugging: x == the cpu freelist head (fast
 * path), x == the slab freelist head or the sheaf top (slow path and bulk),
 * x twice in one detached group, and inuse underflow.
 *
 * Call tree
 * ---------
 *   slub_alloc (slub.h) -> kslab_alloc_slow -> __slub_alloc (the contract's alloc)
 *       -> sheaf, or ___slub_alloc -> get_cpu_freelist -> get_freelist
 *                                                      -> get_partial_node
 *                                  -> slub_new_slab
 *   slub_free_fast (slub.h) -> kmem_cache_free_slow / kfree_to_backend
 *       -> slub_free (kslab_slab_of) -> __slub_free
 *       -> sheaf (sheaf_flush -> slub_free_bulk_account when full)
 *       -> slab_free_list -> put_cpu_partial -> unfreeze_partials
 *                         -> kslab_discard_slab
 *   slub_free_bulk -> slub_free_bulk_fast (slub.h), free_detached_group
 *       -> slub_free_detached -> slab_free_list
 *   slub_flush_thread -> deactivate_slab -> unfreeze_locked; unfreeze_partials
 *   slub_shrink, slub_destroy (shared with slob-seg)
 */
#include "slub.h"
#include "percpu.h"
#include "slub_debug.h"


/* ---- the double-word compare-and-swap ------------------------------------ */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KSLAB_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KSLAB_TSAN 1
#endif

typedef unsigned __int128 slab_pair_t __attribute__((may_alias));
static inline slab_pair_t *slab_pair(struct slab *slab)
{
    return (slab_pair_t *)(void *)&slab->freelist;
}

/* Full barrier on x86 (lock prefix).  It must be at least acq_rel: a freer
 * writes the object's free pointer and then publishes it (release); the
 * owner that takes the list then follows those pointers (acquire). */
static inline bool cmpxchg_double_slab(struct slab *slab, void *old_fl, uint64_t old_c,
                                       void *new_fl, uint64_t new_c)
{
#if defined(__x86_64__) && !defined(KSLAB_TSAN)
/* PREFIX: "lock " or nothing. */
#define CMPXCHG16B(prefix)                                                   \
    __asm__ __volatile__(prefix "cmpxchg16b %1"                              \
                         : "=@ccz"(ok), "+m"(*slab_pair(slab)),              \
                           "+a"(old_fl), "+d"(old_c)                         \
                         : "b"(new_fl), "c"(new_c)                           \
                         : "memory")
    bool ok;
    /* No other thread (prim.h): the same instruction without the lock
     * prefix, still one instruction (a signal cannot split it), and it does
     * not wait for the store buffer to drain. */
    if (prim_single_threaded())
        CMPXCHG16B("");
    else
        CMPXCHG16B("lock ");
#undef CMPXCHG16B
    return ok;
#else
    unsigned __int128 o = ((unsigned __int128)old_c << 64) | (uintptr_t)old_fl;
    unsigned __int128 n = ((unsigned __int128)new_c << 64) | (uintptr_t)new_fl;
    return __atomic_compare_exchange_n(slab_pair(slab), &o, n, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
#endif
}

/* The two halves are read separately (relaxed; slab_freelist in slub.h); a
 * torn pair only makes the following compare-and-swap fail and retry. */
static inline union slab_counters slab_counters(struct slab *slab)
{
    union slab_counters c;
    c.word = __atomic_load_n(&slab->counters.word, __ATOMIC_RELAXED);
    return c;
}

/* ---- layout and order ---------------------------------------------------- */

static unsigned get_order(size_t bytes)
{
    unsigned order = 0;
    while ((PAGE_SIZE << order) < bytes)
        order++;
    return order;
}

/*
 * Pick the slab order as the kernel's calculate_order() does: aim for at
 * least min_objects = 4 * (fls(ncpus) + 1) objects per slab, within
 * SLUB_MAX_ORDER, with at most 1/16 of the slab wasted at the end, relaxing
 * the waste bound (1/16, 1/8, 1/4) and then min_objects until something fits.
 * kmalloc-32 gets order 0 with 128 objects; kmalloc-8k order 3 with 4.
 */
unsigned slub_calculate_order(unsigned size)
{
    unsigned ncpus = prim_ncpus(), fls = 0;
    while (ncpus >> fls)
        fls++;
    unsigned min_objects = 4 * (fls + 1);
    unsigned max_objects = (unsigned)((PAGE_SIZE << SLUB_MAX_ORDER) / size);
    if (min_objects > max_objects)
        min_objects = max_objects;
    for (; min_objects >= 1; min_objects--) {
        for (unsigned fraction = 16; fraction >= 4; fraction /= 2) {
            for (unsigned order = get_order((size_t)min_objects * size); order <= SLUB_MAX_ORDER;
                 order++) {
                size_t slab_bytes = PAGE_SIZE << order;
                if (slab_bytes % size <= slab_bytes / fraction)
                    return order;
            }
        }
    }
    return get_order(size);  /* one object per slab, beyond SLUB_MAX_ORDER if need be */
}

/* The smallest order, from the first that holds four objects, whose slab
 * leaves at most 1/fraction of itself over; max if none below it does. */
static unsigned least_waste_order(unsigned size, unsigned fraction, unsigned max)
{
    unsigned order = get_order((size_t)4 * size);
    for (; order < max; order++)
        if ((PAGE_SIZE << order) % size <= (PAGE_SIZE << order) / fraction)
            break;
    return order;
}

/*
 * malloc's classes above 8 KiB (the kernel has no slab caches there): the
 * smallest order that holds at least four objects with at most 1/16 of the
 * slab left over, so the class's own rounding (under a ninth) is not
 * doubled by slab waste, up to the largest slab.  malloc-9216 gets order 4
 * with 7 objects (the kernel's rule would give order 3 with 3, 16 % lost);
 * malloc-131072 order 7 with 4.
 */
/*
 * malloc's classes up to 1 KiB: slabs of at least 64 KiB (order 4, as
 * mimalloc's small pages), where the kernel's rule gives 4 KiB to 16 KiB.
 * A program that walks its objects in the order it allocated them
 * (python3's cyclic collector does, over every container) walks each
 * slab's objects at one stride, which the hardware prefetcher follows;
 * every slab boundary breaks the stride (the gap at a slab's end, the next
 * slab elsewhere) and costs a miss.  A walk of 400 000 208-byte objects in
 * address order took 31 ns a node with slabs of 4 KiB, 18-20 with 32 KiB,
 * 16-20 with 64 KiB (glibc, whose chunks are contiguous, 15); python3's
 * collector 143-152 ms with 4 KiB, 131-140 with 32 KiB, 129-134 with
 * 64 KiB (gc.collect() over alloc_heavy.py's objects, best of 15; mimalloc
 * 115-121), and the whole alloc_heavy.py 1688 ms with 32 KiB, 1614 and
 * 1672 with 64 KiB in two series (task-clock medians of 15; mimalloc 1533,
 * 1553).  Lazy carving keeps the memory of small slabs: sqlite3's peak RSS
 * 29.6 MB with 4 or 32 KiB, 29.7 with 64 KiB, python3's 104.8 and 105.3.
 * The kernel API's kmalloc caches keep the kernel's geometry (the probes
 * and seeds depend on it).
 */
#define MALLOC_SMALL_ORDER 4

static unsigned slub_malloc_order(unsigned size)
{
    return least_waste_order(size, 16, MAX_SLAB_ORDER);
}

/*
 * malloc's exact caches (one hot size, kmalloc.c): the smallest order with
 * at least four objects that leaves at most 1/64 of the slab over, up to
 * order 4 (64 KiB); else the big classes' rule.  Exact size is worth nothing
 * if the slab's tail wastes it again: 4368-byte objects, 7 to a 32 KiB slab
 * (the kernel's rule), waste 6.7 %, as much as malloc-4608 does; 15 to a
 * 64 KiB slab waste 16 bytes.
 */
static unsigned slub_exact_order(unsigned size)
{
    unsigned order = least_waste_order(size, 64, 5);
    return order <= 4 ? order : slub_malloc_order(size);
}

/* The geometry SLUB and slob-seg share; carved: the back-end carves new
 * slabs lazily (SLUB in the per-CPU mode), so malloc's small classes may
 * have big slabs (MALLOC_SMALL_ORDER) at no cost in memory. */
static int cache_geometry(struct kmem_cache *s, bool carved)
{
    /* Object layout: [object (object_size) | pad to word | free pointer if it
     * cannot live inside the object | ... room for red zone and user track
     * (debug issue) ] rounded up to the alignment. */
    size_t size = ALIGN_UP(s->object_size, sizeof(void *));
    if (kslab_debugged(s)) {
        size = slub_debug_layout(s);    /* red zones, tracks, padding */
    } else if (s->freeptr_req != FREEPTR_NONE && !(s->flags & SLAB_POISON)) {
        /* kmem_cache_args.freeptr_offset: the user gave a word of the
         * object that may change while it is free (RCU caches only) */
        s->offset = s->freeptr_req;
    } else if (s->ctor || (s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON))) {
        /* the object's contents must survive while it is free */
        s->offset = (uint32_t)size;
        size += sizeof(void *);
    } else {
        s->offset = 0;
    }
    size = ALIGN_UP(size, s->align);
    if (size > (PAGE_SIZE << MAX_SLAB_ORDER))
        return -1;
    s->size = (uint32_t)size;
    bool big_malloc = s->is_kmalloc && s->object_size > KMALLOC_MAX_CACHE_SIZE;
    unsigned order = (s->flags & SLAB_KSLAB_EXACT) ? slub_exact_order(s->size)
                     : big_malloc ? slub_malloc_order(s->size)
                                  : slub_calculate_order(s->size);
    bool malloc_class = (s->flags & SLAB_KSLAB_EXACT) || kslab_malloc_class_of(s) < MALLOC_CLASSES;
    bool big_small_slabs = carved && kslab_malloc_class_of(s) < MALLOC_CLASSES &&
                           s->size <= 1024 && order < MALLOC_SMALL_ORDER && !kslab_debugged(s);
    if (big_small_slabs)
        order = MALLOC_SMALL_ORDER;
    kslab_set_geometry(s, order, (unsigned)((PAGE_SIZE << order) / s->size));
    /* min_partial as set_min_partial(): ilog2(size) / 2 within [5, 10].
     * malloc's classes above 1 KiB (and its exact caches) keep no empty
     * slab: it goes back to the page allocator's hot reserve, where any
     * class can reuse it, and which decays and gives memory back to the OS
     * (sqlite3's peak RSS: -0.5 MB for the big classes' slabs of 64 KiB ..
     * 1 MiB, one idle empty slab in each of several; -130 KB more for the
     * classes from 1 KiB to 8 KiB).  Those up to 1 KiB, whose slabs are
     * big (MALLOC_SMALL_ORDER), have 1, not 5 (5 of 32 KiB were ten
     * times the 4 KiB slabs' 20 KiB; sqlite3's peak RSS 29.6 -> 29.5 MB).
     * As in the kernel's __slab_free, a free that empties a slab on the
     * partial list counts that slab in nr_partial, so with 1 such a slab
     * always goes back (only unfreezing keeps one, when the cache has no
     * partial slab).  Keeping one (2) spared a shell's fork children the
     * slab they empty (86 055 faults against 93 118 in 2000 forks of
     * `sh`) but cost `seq` 3 (141 against 138): the page allocator gives
     * a slab given back to the next class that needs one, pages already
     * touched.  The kernel API's kmalloc caches keep the kernel's rule. */
    unsigned lg = 0;
    while ((1u << (lg + 1)) <= s->size)
        lg++;
    slub_c(s)->min_partial = lg / 2 < 5 ? 5 : lg / 2 > 10 ? 10 : lg / 2;
    if (malloc_class && s->size > 1024)
        slub_c(s)->min_partial = 0;
    else if (big_small_slabs)
        slub_c(s)->min_partial = 1;
    /* cpu partial limit as set_cpu_partial(), converted from objects to slabs. */
    unsigned nr_objects = s->size >= PAGE_SIZE ? 6 : s->size >= 1024 ? 24 : s->size >= 256 ? 52 : 120;
    slub_c(s)->cpu_partial_slabs = (nr_objects * 2 + s->objects - 1) / s->objects;
    if (slub_c(s)->cpu_partial_slabs < 2)
        slub_c(s)->cpu_partial_slabs = 2;
    return 0;
}

/* slob-seg's: it links every object of a new slab. */
int slub_cache_init(struct kmem_cache *s)
{
    return cache_geometry(s, false);
}

/* SLUB's own: the shared geometry, then the thread sheaf's capacity (slob-seg
 * shares the geometry and has no sheaves). */
static int slub_cache_init_sheaves(struct kmem_cache *s)
{
    if (cache_geometry(s, kslab_percpu))
        return -1;
    if (kslab_debugged(s))
        return 0;       /* no sheaves: every alloc and free goes through the checks */
    s->sheaf_cap = s->size <= 256 ? 64 : s->size <= 1024 ? 32 : s->size <= 4096 ? 16 : 8;
    /* a per-CPU sheaf serves every thread of its CPU: fuller than a thread's */
    s->pcpu_cap = s->size <= 1024 ? PCPU_CAP_MAX - 1 : s->size <= 4096 ? 30 : 8;
    return 0;
}

/* ---- the cache's partial list (list_lock held; slob-seg uses it too) -------- */

void add_partial(struct kmem_cache *s, struct slab *slab)
{
    if (unlikely(slab_counters(slab).frozen))
        kslab_report("cache %s: frozen slab %p put on the partial list", s->name,
                     slab_address(slab));
    slab->prev = NULL;
    slab->next = s->partial;
    if (slab->next)
        slab->next->prev = slab;
    s->partial = slab;
    atomic_store_explicit(&s->nr_partial,
                          atomic_load_explicit(&s->nr_partial, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The locked single-object paths (slob-seg, debugged caches): the first
 * partial slab, a new one added if there is none.  Called and returns with
 * list_lock held; NULL (lock dropped) if the page layer has none. */
struct slab *partial_or_new(struct kmem_cache *s)
{
    while (!s->partial) {
        kslab_unlock(&s->list_lock);
        struct slab *fresh = slub_new_slab(s, NEW_SLAB_FREE);
        if (!fresh)
            return NULL;
        kslab_count(s, ALLOC_SLAB, 1);
        kslab_lock(&s->list_lock);
        add_partial(s, fresh);
    }
    return s->partial;
}

/* A partial slab just emptied by a free: off the list if the cache keeps
 * enough empty slabs already (and may give slabs back); the caller then
 * discards it, list_lock dropped. */
bool partial_release_empty(struct kmem_cache *s, struct slab *slab)
{
    if (slab->counters.inuse || (s->flags & SLAB_TYPESAFE_BY_RCU) ||
        atomic_load_explicit(&s->nr_partial, memory_order_relaxed) <= slub_c(s)->min_partial)
        return false;
    remove_partial(s, slab);
    return true;
}

void remove_partial(struct kmem_cache *s, struct slab *slab)
{
    if (slab->prev)
        slab->prev->next = slab->next;
    else
        s->partial = slab->next;
    if (slab->next)
        slab->next->prev = slab->prev;
    slab->next = slab->prev = NULL;
    atomic_store_explicit(&s->nr_partial,
                          atomic_load_explicit(&s->nr_partial, memory_order_relaxed) - 1,
                          memory_order_relaxed);
}

static bool may_discard(struct kmem_cache *s)
{
    return !(s->flags & SLAB_TYPESAFE_BY_RCU) &&
           atomic_load_explicit(&s->nr_partial, memory_order_relaxed) >= slub_c(s)->min_partial;
}

/* ---- slabs ---------------------------------------------------------------- */

/* The last object of the non-empty freelist head (of one slab), *cnt its
 * length; bounded by the slab's object count, so a loop is reported, never
 * followed. */
static void *freelist_tail(struct kmem_cache *s, void *head, unsigned *cnt)
{
    void *tail = head;
    unsigned n = 1;
    for (void *p; (p = get_freepointer(s, tail)); tail = p, n++)
        if (unlikely(n == s->objects))
            kslab_freelist_loop(s, (void *)((uintptr_t)head & s->slab_mask));
    *cnt = n;
    return tail;
}

/* The slab's next object (its objects from base) in the order of it. */
static inline char *shuffle_object(struct kmem_cache *s, char *base, struct kslab_shuffle *it)
{
    return base + (size_t)kslab_shuffle_next(it) * s->size;
}

/* The next n (at least 1) objects in the order of it linked into a list ending
 * in NULL; returns the head, *tail the last. */
static void *link_next(struct kmem_cache *s, char *base, struct kslab_shuffle *it, uint32_t n,
                       void **tail)
{
    char *head = shuffle_object(s, base, it), *prev = head;
    while (--n) {
        char *p = shuffle_object(s, base, it);
        set_freepointer(s, prev, p);
        prev = p;
    }
    set_freepointer(s, prev, NULL);
    *tail = prev;
    return head;
}

/* Objects from..to-1 of a slab linked into a list in kslab_shuffle's order
 * (slab_common.c), ending in NULL; returns the head, *tail the last. */
static void *link_objects(struct kmem_cache *s, char *base, uint32_t from, uint32_t to,
                          void **tail)
{
    struct kslab_shuffle it;
    kslab_shuffle_range(&it, s, from, to);
    return link_next(s, base, &it, to - from, tail);
}

/*
 * Lazily carved slabs (mimalloc extends a page's free list the same way).
 * A slab of several pages that the per-CPU mode's refill creates links only
 * its first window of objects (kslab_shuffle); the refill takes the rest
 * straight from the uncarved part (take_uncarved), a sheaf's worth at a
 * time, linking only what is left of the last window it takes from.  Linking
 * writes a word into every object, so an
 * eagerly linked 64 KiB slab is resident as soon as it exists, however few
 * of its objects a program uses; carved, only what was handed out (and the
 * part after it) is.  That is what lets malloc's small classes have
 * 64 KiB slabs (cache_geometry) at about the memory of 4 KiB ones.
 *
 * The counters' `objects` is the number linked so far (the carved part,
 * objects 0..objects-1, whole windows of kslab_shuffle); inuse counts only
 * carved objects, so "empty" (inuse 0) and "full" keep their meaning over
 * the carved part.  Rules:
 *  - only the holder of list_lock carves a slab on the partial list
 *    (alloc_from_partial, freeze_slab); frees keep pushing without the lock
 *    (the carve's swap is a push of the new part: the same race);
 *  - a slab with an uncarved part always has a free object linked: the
 *    refill takes from the uncarved part only once it has taken every
 *    linked one, and leaves a window's rest (or the next window) linked, so
 *    such a slab is never full, never frozen by a free, and stays on the
 *    partial list;
 *  - a slab that is frozen (per-thread mode's cpu slab or cpu partial list)
 *    is carved whole first (freeze_slab): frozen slabs are always whole;
 *  - a free of a pointer into the uncarved part (an object start never
 *    handed out) is not caught in the default mode: the push writes its
 *    free tag like any other's, and once handed out it would be handed out
 *    again when its part is carved.  It is the bad free README's
 *    double-free table already names (a free of an object that is free on
 *    its slab, caught only if it is the freelist's head or the count goes
 *    below zero); catching it on the push would read the slab descriptor,
 *    the load kfree's map exists to avoid.  KSLAB_DEBUG caches never carve.
 * The kernel API's caches with constructors, debugged caches and the
 * per-thread mode link every object when the slab is made, as before.
 */
static bool carve_lazily(const struct kmem_cache *s)
{
    return s->order > 0 && !s->ctor && !kslab_debugged(s) && pcpu_cache(s);
}

/* Link the rest of slab's objects at the end of its freelist (the carver's
 * rules above; freeze_slab, which carves a slab whole before it freezes
 * it): after what is free already, so that objects go out in address
 * order of their windows as from an eagerly linked slab (pushed in front,
 * each part's leftover went out after the next part: the allocation-order
 * walk of 80-byte objects took 3x as long).  The list's tail is stable
 * under the lock: frees push at its head, only the holder pops. */
static void carve_whole(struct kmem_cache *s, struct slab *slab)
{
    char *base = slab_address(slab) + s->red_left_pad;
    uint32_t from = slab_counters(slab).objects, to = s->objects;
    void *tail, *head = link_objects(s, base, from, to, &tail);
    bool appended = false;
    for (;;) {
        /* acquire: the walk below follows links that freers published
         * with their release (the compare-and-swap), as the pop does */
        void *fl = __atomic_load_n(&slab->freelist, __ATOMIC_ACQUIRE);
        union slab_counters old = slab_counters(slab), new = old;
        new.objects = (uint16_t)to;
        if (fl && !appended) {
            unsigned n;
            set_freepointer(s, freelist_tail(s, fl, &n), head);
            appended = true;
        }
        if (cmpxchg_double_slab(slab, fl, old.word, fl ? fl : head, new.word))
            return;
        kslab_count(s, CMPXCHG_DOUBLE_FAIL, 1);
    }
}

/* The refill's take from a slab's uncarved part (list_lock held; the
 * caller took its linked objects all): up to `want` (maybe 0) objects straight
 * into p, in kslab_shuffle's order from the first uncarved window, with no
 * free pointer written or read.  The rest of the last window taken from is
 * linked as the slab's new freelist (*rest), and where the take ends on a
 * window's end with objects still uncarved, the next window is: a slab
 * with an uncarved part keeps a free object linked (the carver's rules).
 * *c gains the carved windows and the objects taken.  Linking each object
 * and popping it again cost a fresh object 27 + 20 instructions. */
static unsigned take_uncarved(struct kmem_cache *s, struct slab *slab, void **p, unsigned want,
                              union slab_counters *c, void **rest)
{
    uint32_t from = c->objects, left = s->objects - from, w = kslab_shuffle_window(s);
    uint32_t take = want < left ? want : left;
    uint32_t cover = (take + w - 1) / w * w;
    if (cover == take && cover < left)
        cover += w;                     /* the next window, linked */
    if (cover > left)
        cover = left;                   /* the slab's last window may be short */
    char *base = slab_address(slab) + s->red_left_pad;
    struct kslab_shuffle it;
    kslab_shuffle_range(&it, s, from, from + cover);
    for (uint32_t i = 0; i < take; i++)
        p[i] = shuffle_object(s, base, &it);
    void *tail;
    *rest = cover > take ? link_next(s, base, &it, cover - take, &tail) : NULL;
    c->objects = (uint16_t)(from + cover);
    c->inuse = (uint16_t)(c->inuse + take);
    return take;
}

/* A new slab from the page layer, initialised in one of four states and
 * then published:
 *   NEW_SLAB_CPU   objects linked (link_objects), frozen: the caller makes
 *                  it its cpu slab and takes the list from slab->freelist;
 *   NEW_SLAB_FULL  no freelist, full and unfrozen (on no list): alloc_bulk
 *                  hands every object out at once;
 *   NEW_SLAB_FREE  objects linked on the slab's own freelist, inuse 0,
 *                  unfrozen, on no list yet (slob-seg);
 *   NEW_SLAB_LAZY  as NEW_SLAB_FREE, but only the first part linked (the
 *                  lazily carved slabs above). */
struct slab *slub_new_slab(struct kmem_cache *s, enum new_slab_mode mode)
{
    struct slab *slab = pages_alloc(s->order, s);
    if (!slab)
        return NULL;
    char *base = slab_address(slab) + s->red_left_pad;
    char *last = base + (size_t)(s->objects - 1) * s->size;
    if (kslab_debugged(s))
        slub_debug_new_slab(s, slab);   /* colour, red zones, poison, padding */
    if (s->ctor)
        for (char *p = base; p <= last; p += s->size)
            s->ctor(p);
    void *head = base, *tail;
    uint32_t linked = s->objects;
    if (mode == NEW_SLAB_LAZY) {
        /* once: a page merge's window depends on the cache's slab count */
        uint32_t w = kslab_shuffle_window(s);
        if (s->objects > w)
            linked = w;                 /* the rest: take_uncarved */
    }
    if (mode != NEW_SLAB_FULL)
        head = link_objects(s, base, 0, linked, &tail);
    if (kslab_debugged(s))
        slub_debug_slab_ready(s, slab);   /* every object free, for ASan or valgrind */
    union slab_counters c = { .word = 0 };
    c.inuse = mode == NEW_SLAB_FREE || mode == NEW_SLAB_LAZY ? 0 : s->objects;
    c.objects = (uint16_t)linked;
    c.frozen = mode == NEW_SLAB_CPU;
    c.order = (uint8_t)s->order;
    slab->next = slab->prev = NULL;
    /* NEW_SLAB_CPU: the caller takes the list from here and clears it */
    slab_set_freelist(slab, mode == NEW_SLAB_FULL ? NULL : head);
    __atomic_store_n(&slab->counters.word, c.word, __ATOMIC_RELAXED);
    pages_publish(slab);
    atomic_fetch_add_explicit(&s->nr_slabs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->total_objects, s->objects, memory_order_relaxed);
    return slab;
}

/* Take the slab's whole freelist for the owning thread.  If it is empty the
 * slab is unfrozen in the same step (it is full: it needs no list). */
static void *get_freelist(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, struct slab *slab)
{
    for (;;) {
        void *fl = slab_freelist(slab);
        union slab_counters old = slab_counters(slab), new = old;
        new.inuse = old.objects;
        new.frozen = fl != NULL;
        if (cmpxchg_double_slab(slab, fl, old.word, NULL, new.word))
            return fl;
        stat_add(s, cc, CMPXCHG_DOUBLE_FAIL, 1);
    }
}

/* Freeze a slab from the cache's partial list (list_lock held).  With take,
 * its freelist goes to the caller (it becomes the cpu slab); otherwise it
 * stays on the slab (cpu partial list).  A lazily carved slab is carved
 * whole first: frozen slabs are whole. */
static void *freeze_slab(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, struct slab *slab,
                         bool take)
{
    if (slab_counters(slab).objects < s->objects)
        carve_whole(s, slab);
    for (;;) {
        void *fl = slab_freelist(slab);
        union slab_counters old = slab_counters(slab), new = old;
        if (unlikely(old.frozen))
            kslab_report("cache %s: slab %p on the partial list is frozen", s->name,
                         slab_address(slab));
        new.frozen = 1;
        if (take)
            new.inuse = old.objects;
        if (cmpxchg_double_slab(slab, fl, old.word, take ? NULL : fl, new.word))
            return fl;
        stat_add(s, cc, CMPXCHG_DOUBLE_FAIL, 1);
    }
}

/* Unfreeze a slab the thread owns (list_lock held) after splicing `cnt`
 * objects of the thread's list head..tail back into it.  Returns the slab if
 * the caller must discard it (after dropping list_lock). */
static struct slab *unfreeze_locked(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                    struct slab *slab, void *head, void *tail, unsigned cnt)
{
    void *fl;
    union slab_counters old, new;
    do {
        fl = slab_freelist(slab);
        old = slab_counters(slab);
        new = old;
        if (tail)
            set_freepointer(s, tail, fl);
        new.inuse = old.inuse - cnt;
        new.frozen = 0;
    } while (!cmpxchg_double_slab(slab, fl, old.word, head ? head : fl, new.word) &&
             (stat_add(s, cc, CMPXCHG_DOUBLE_FAIL, 1), true));
    if (new.inuse == 0 && may_discard(s)) {
        stat_add(s, cc, DEACTIVATE_EMPTY, 1);
        return slab;
    }
    if (head || fl) {
        add_partial(s, slab);
        stat_add(s, cc, new.inuse ? DEACTIVATE_PARTIAL : DEACTIVATE_EMPTY, 1);
    } else {
        stat_add(s, cc, DEACTIVATE_FULL, 1);
    }
    return NULL;
}

/* Give the cpu slab (and the thread's cpu freelist for it) back to the cache. */
static void deactivate_slab(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                            struct slab *slab, void *freelist)
{
    void *tail = NULL;
    unsigned cnt = 0;
    if (freelist)
        tail = freelist_tail(s, freelist, &cnt);
    kslab_lock(&s->list_lock);
    struct slab *discard = unfreeze_locked(s, cc, slab, freelist, tail, cnt);
    kslab_unlock(&s->list_lock);
    if (discard)
        kslab_discard_slab(s, cc, discard);
}

/* Move every slab of the thread's partial list to the cache's list. */
static void unfreeze_partials(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc)
{
    struct slab *list = cc->partial, *discard = NULL;
    if (!list)
        return;
    cc->partial = NULL;
    cc->nr_partial = 0;
    kslab_lock(&s->list_lock);
    while (list) {
        struct slab *slab = list;
        list = slab->next;
        struct slab *d = unfreeze_locked(s, cc, slab, NULL, NULL, 0);
        if (d) {
            d->next = discard;
            discard = d;
        }
    }
    kslab_unlock(&s->list_lock);
    stat_add(s, cc, CPU_PARTIAL_DRAIN, 1);
    while (discard) {
        struct slab *d = discard;
        discard = d->next;
        kslab_discard_slab(s, cc, d);
    }
}

static void put_cpu_partial(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, struct slab *slab)
{
    if (cc->nr_partial >= slub_c(s)->cpu_partial_slabs)
        unfreeze_partials(s, cc);
    slab->next = cc->partial;
    cc->partial = slab;
    cc->nr_partial++;
    stat_add(s, cc, CPU_PARTIAL_FREE, 1);
}

/* Take slabs from the cache's partial list: the first becomes the cpu slab
 * (its freelist is returned), up to half the cpu partial limit more go to the
 * thread's partial list, as get_partial_node() does. */
static void *get_partial_node(struct kmem_cache *s, struct kmem_cache_cpu *c,
                              struct kmem_cache_cpu_cold *cc)
{
    /* Racy peek (relaxed): a wrong answer only costs a new slab or a lock. */
    if (!atomic_load_explicit(&s->nr_partial, memory_order_relaxed))
        return NULL;
    void *freelist = NULL;
    kslab_lock(&s->list_lock);
    struct slab *slab;
    while ((slab = s->partial)) {
        remove_partial(s, slab);
        if (!freelist) {
            freelist = freeze_slab(s, cc, slab, true);
            c->slab_base = (uintptr_t)slab_address(slab);
            stat_add(s, cc, ALLOC_FROM_PARTIAL, 1);
        } else {
            freeze_slab(s, cc, slab, false);
            slab->next = cc->partial;
            cc->partial = slab;
            cc->nr_partial++;
        }
        if (cc->nr_partial * 2 >= slub_c(s)->cpu_partial_slabs)
            break;
    }
    kslab_unlock(&s->list_lock);
    return freelist;
}

/* ---- allocation slow path -------------------------------------------------- */

/* A freelist from slabs the cache already has, in SLUB's order: remote frees
 * to the cpu slab, the thread's partial list, the cache's partial list.  The
 * slab it comes from becomes the cpu slab.  NULL if there is none. */
static void *get_cpu_freelist(struct kmem_cache *s, struct kmem_cache_cpu *c,
                              struct kmem_cache_cpu_cold *cc)
{
    void *freelist;
    if (c->slab_base != NO_CPU_SLAB) {
        freelist = get_freelist(s, cc, addr_desc(c->slab_base));
        if (freelist) {
            stat_add(s, cc, ALLOC_REFILL, 1);
            return freelist;
        }
        c->slab_base = NO_CPU_SLAB;   /* full: get_freelist() unfroze it */
        stat_add(s, cc, DEACTIVATE_FULL, 1);
    }
    while (cc->partial) {
        struct slab *slab = cc->partial;
        cc->partial = slab->next;
        cc->nr_partial--;
        freelist = get_freelist(s, cc, slab);
        if (freelist) {
            c->slab_base = (uintptr_t)slab_address(slab);
            stat_add(s, cc, CPU_PARTIAL_ALLOC, 1);
            return freelist;
        }
    }
    return get_partial_node(s, c, cc);
}

/* Refill the empty cpu freelist and return its first object. */
static void *___slub_alloc(struct kmem_cache *s, struct kmem_cache_cpu *c,
                           struct kmem_cache_cpu_cold *cc)
{
    void *freelist = get_cpu_freelist(s, c, cc);
    if (!freelist) {
        struct slab *slab = slub_new_slab(s, NEW_SLAB_CPU);
        if (!slab)
            return NULL;
        stat_add(s, cc, ALLOC_SLAB, 1);
        c->slab_base = (uintptr_t)slab_address(slab);
        freelist = slab_freelist(slab);       /* linked by slub_new_slab, ours: frozen */
        slab_set_freelist(slab, NULL);
    }
    c->freelist = get_freepointer(s, freelist);
    return freelist;
}

/*
 * Slow start, after the kernel's alloc_single_from_partial() and
 * alloc_single_from_new_slab() (which it uses for debugged caches): a
 * thread's first SLOW_START objects of a cache come one at a time from the
 * cache's partial slabs, under list_lock, with no slab frozen onto the
 * thread.  A thread that allocates a few objects of many caches (an idle
 * worker, a short-lived helper) holds no slab of its own; one that keeps
 * allocating gets cpu slabs after SLOW_START objects, about a
 * microsecond in all.  Frees need nothing new: the slab is an ordinary
 * partial (or, once its last object is taken, full) slab.
 */
static struct slab *unfreeze_locked(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                    struct slab *slab, void *head, void *tail, unsigned cnt);
static bool barn_get(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc);
/* Up to `want` objects from the cache's partial slabs (a new slab if there
 * is none), one slab's objects at a time, under list_lock: slow start, and
 * the per-CPU mode's refill.  Returns how many (0: out of memory). */
static unsigned alloc_from_partial(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                   void **p, unsigned want)
{
    for (;;) {
        kslab_lock(&s->list_lock);
        struct slab *slab = s->partial;        /* partial slabs always have a free object */
        if (slab) {
            void *obj, *next;
            unsigned k;
            union slab_counters old, new;
            do {    /* frees push concurrently without the lock; only we pop */
                /* acquire: pairs with the freer's release (its compare-and-
                 * swap), so the free pointers read next are the ones it
                 * wrote; nobody else pops them, so they stay put */
                obj = __atomic_load_n(&slab->freelist, __ATOMIC_ACQUIRE);
                old = slab_counters(slab);
                new = old;
                next = obj;
                for (k = 0; k < want && next && new.inuse < new.objects; k++) {
                    p[k] = next;
                    next = get_freepointer(s, next);
                    new.inuse++;
                }
                /* a lazily carved slab whose linked objects are all taken:
                 * the rest from its uncarved part, and a window linked (even
                 * when none is wanted: the slab must not look full).  A
                 * retry after a racing free takes them again, its links
                 * unpublished. */
                if (new.objects < s->objects && new.inuse == new.objects)
                    k += take_uncarved(s, slab, p + k, want - k, &new, &next);
                /* Taking the last object freezes the slab in the same step:
                 * a freer that saw it full and unfrozen would freeze it onto
                 * its own partial list while it is still on the cache's.
                 * Frozen, frees only push; it leaves the list and is
                 * unfrozen below, still under list_lock. */
                new.frozen = new.inuse == new.objects;
            } while (!k || !cmpxchg_double_slab(slab, obj, old.word, next, new.word));
            if (new.frozen) {
                remove_partial(s, slab);
                unfreeze_locked(s, cc, slab, NULL, NULL, 0);   /* full, or partial again */
            }
            kslab_unlock(&s->list_lock);
            stat_add(s, cc, ALLOC_FROM_PARTIAL, 1);
            return k;
        }
        kslab_unlock(&s->list_lock);
        slab = slub_new_slab(s, carve_lazily(s) ? NEW_SLAB_LAZY : NEW_SLAB_FREE);
        if (!slab)
            return 0;
        stat_add(s, cc, ALLOC_SLAB, 1);
        kslab_lock(&s->list_lock);
        add_partial(s, slab);
        kslab_unlock(&s->list_lock);
    }
}

static void *alloc_single(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc)
{
    void *obj;
    return alloc_from_partial(s, cc, &obj, 1) ? obj : NULL;
}

/* The contract's alloc entry (kmalloc_size: SLUB's classes need no more). */
static void *__slub_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (unlikely(kslab_debugged(s)))
        return slub_debug_alloc(s, gfp, kmalloc_size);
    struct kslab_thread *t = kslab_thread_for(s);
    if (unlikely(!t))
        return NULL;
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = kslab_cold(t, s->id);
    bool reclaimed = false;
again:;
    /* Slow start (alloc_single) while the thread has no cpu slab and has
     * taken fewer than SLOW_START objects; then its first cpu slab, before
     * the sheaf: an alloc/free loop would otherwise cycle one object
     * through the sheaf for ever. */
    bool no_cpu_slab = c->slab_base == NO_CPU_SLAB;
    bool slow_start = no_cpu_slab && cc->stat[ALLOC_SLOWPATH] < SLOW_START;
    void *object = c->freelist;
    if (object) {
        c->freelist = get_freepointer(s, object);  /* refilled meanwhile */
    } else if ((slow_start || !no_cpu_slab) && (cc->sheaf_count || barn_get(s, cc))) {
        object = sheaf_take(cc);
    } else {
        object = slow_start && !cc->partial ? alloc_single(s, cc) : ___slub_alloc(s, c, cc);
        if (unlikely(!object)) {
            /* Out of memory: s's own spare memory first, as the kernel's
             * reclaim runs the slab shrinkers before an allocation fails.
             * Shrinking gives back the barn's sheaves (pages a new slab
             * cannot use), this thread's cpu state for s, the empty slabs,
             * and the page reserve, whose fragments merge in the buddy;
             * then one more try.  (The per-CPU mode's refill does the same
             * in pcpu_reclaim.) */
            if (reclaimed)
                return NULL;
            reclaimed = true;
            kslab_shrink(s);
            goto again;
        }
    }
    counter_inc(&cc->stat[ALLOC_SLOWPATH], 1);
    if (gfp & __GFP_ZERO)
        memset(object, 0, s->object_size);
    return object;
}

/* ---- free slow path ---------------------------------------------------------- */

/* Free the `cnt` objects head..tail (linked through their free pointers), all
 * in `slab`, as __slab_free() does.  cc is the calling thread's cold entry,
 * NULL if the thread has no state (then no slab is frozen onto it).
 * slab_free_list below tries the common case inline first. */
static noinline void slab_free_list_slow(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                         struct slab *slab, void *head, void *tail, unsigned cnt)
{
    bool locked = false;
    void *prior;
    union slab_counters old, new;
    for (;;) {
        /* As the kernel's __slab_free(): a retry starts unlocked, because
         * the slab may have changed state (a full slab is frozen below, and
         * a frozen slab must never reach the cache's partial list). */
        if (locked) {
            kslab_unlock(&s->list_lock);
            locked = false;
        }
        prior = slab_freelist(slab);
        old = slab_counters(slab);
        if (unlikely(prior == head || old.inuse < cnt))
            kslab_double_free(s, head);
        new = old;
        set_freepointer(s, tail, prior);
        new.inuse = old.inuse - cnt;
        if (!old.frozen) {
            if (!prior && cc) {
                new.frozen = 1;       /* full: freeze it onto our cpu partial list */
            } else if (!prior || new.inuse == 0) {
                /* the slab changes lists: the swap happens under list_lock,
                 * and succeeds only if the state read above still holds */
                kslab_lock(&s->list_lock);
                locked = true;
            }
        }
        if (cmpxchg_double_slab(slab, prior, old.word, head, new.word))
            break;
        stat_add(s, cc, CMPXCHG_DOUBLE_FAIL, 1);
    }
    if (!locked) {
        if (new.frozen && !old.frozen)
            put_cpu_partial(s, cc, slab);
        else if (old.frozen)
            stat_add(s, cc, FREE_FROZEN, 1);
        return;
    }
    struct slab *discard = NULL;
    if (!old.frozen) {
        if (!prior) {
            add_partial(s, slab);     /* full -> partial (thread without state) */
            stat_add(s, cc, FREE_ADD_PARTIAL, 1);
        }
        if (new.inuse == 0 && may_discard(s)) {
            remove_partial(s, slab);
            stat_add(s, cc, FREE_REMOVE_PARTIAL, 1);
            discard = slab;
        }
    }
    kslab_unlock(&s->list_lock);
    if (discard)
        kslab_discard_slab(s, cc, discard);
}

/* The common case inline: a slab that stays on its list (not frozen, not
 * full before, not empty after) takes the run with one swap and nothing
 * else (in the per-CPU drain, where runs are of one object, the call's
 * register saves were a third of the cost).  Anything else, or a lost
 * race: slab_free_list_slow does it all again, checks included. */
static inline void slab_free_list(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                  struct slab *slab, void *head, void *tail, unsigned cnt)
{
    void *prior = slab_freelist(slab);
    union slab_counters old = slab_counters(slab), new = old;
    if (prior && prior != head && !old.frozen && old.inuse > cnt) {
        set_freepointer(s, tail, prior);
        new.inuse = old.inuse - cnt;
        if (cmpxchg_double_slab(slab, prior, old.word, head, new.word))
            return;
    }
    slab_free_list_slow(s, cc, slab, head, tail, cnt);
}

/* Objects of a per-CPU sheaf or a barn sheaf back to their slabs.  Every
 * one was validated when it entered a sheaf (an object start of a live slab
 * of s, not its slab's free head, not the sheaf's top), and its slab cannot
 * leave the cache while it sits there (it counts as in use), so the drain
 * does not look each one up again as the bulk free does: it links each run
 * of one slab into a list and frees the run with one swap.  Random-order
 * frees make runs of one, where the bulk free's three-object lookahead and
 * per-object checks cost 3x the swap.  slab_free_list still checks the
 * in-use count: a double free that slipped past the sheaf's checks
 * underflows it and is reported. */
static void slub_drain_validated(struct kmem_cache *s, void **p, unsigned n)
{
    /* In the per-CPU mode every object here carries its free tag (percpu.h
     * rule 8) in the word its link is about to take: a copy of an object
     * freed twice whose other copy was handed out, or one written while
     * free, is reported before its slab takes it back (the read costs
     * nothing: the link's write brings the line in).  The claim consumes
     * the tag, so a stale copy left in a sheaf fails its pop. */
    bool tagged = pcpu_cache(s);
    while (n) {
        void *head = p[--n], *tail = head;
        uintptr_t base = (uintptr_t)head & s->slab_mask;
        unsigned cnt = 1;
        if (tagged)
            pcpu_tag_claim(s, head);
        for (; n && ((uintptr_t)p[n - 1] & s->slab_mask) == base; n--, cnt++) {
            if (unlikely(p[n - 1] == head))
                kslab_double_free(s, head);
            if (tagged)
                pcpu_tag_claim(s, p[n - 1]);
            set_freepointer(s, p[n - 1], head);
            head = p[n - 1];
        }
        slab_free_list(s, NULL, addr_desc(base), head, tail, cnt);
    }
}

/* defined with the bulk calls below; the sheaf flush frees through them */
static void __slub_free(struct kmem_cache *s, struct slab *slab, void *x);
static void slub_free_detached(struct kmem_cache *s, uintptr_t base, void *head, void *tail,
                               unsigned cnt, bool account);
static void slub_free_bulk_account(struct kmem_cache *want, size_t size, void **p, bool account);
static void slub_free_bulk(struct kmem_cache *want, size_t size, void **p);

/*
 * The barn (Linux 6.18's per-node barn).  A thread whose sheaf is full
 * puts the whole sheaf in the barn, in exchange for an empty one, under one
 * lock; a thread whose sheaf and cpu freelist are empty takes a full sheaf
 * from the barn before it touches a slab.  A producer/consumer pipeline then
 * moves whole sheaves between threads, not single objects through the
 * slabs' compare-and-swap.  The thread's sheaf is an array in its cold
 * entry, so a barn sheaf's objects are copied in and out (a 64-object sheaf
 * is 512 bytes).  At most BARN_MAX full and BARN_MAX empty sheaves per
 * cache; beyond, a full sheaf gives its older half back to the slabs as
 * before.  Objects in the barn are free as far as the counters go (they
 * were counted when they entered a sheaf); shrink gives them back to their
 * slabs, destroy drops them with the slabs.
 */
#define BARN_MAX 8
struct barn_sheaf {
    struct barn_sheaf *next;
    uint32_t count;
    void *objs[SHEAF_MAX];
};
/* Owner of the barn's pages: names no real cache (kfree of an address in
 * one is reported as not a slab object). */
static struct kmem_cache barn_pages = { .name = "barn", PCPU_NONE_INIT };

static struct barn_sheaf *barn_sheaf_new(void)
{
    struct slab *p = pages_alloc(0, &barn_pages);
    return p ? slab_address(p) : NULL;
}
static void barn_sheaf_free(struct barn_sheaf *b)
{
    pages_free(addr_desc((uintptr_t)b), 0);
}
_Static_assert(sizeof(struct barn_sheaf) <= PAGE_SIZE, "a barn sheaf fits a page");

/* n objects (a full sheaf) into the barn (list_lock held); false if the
 * barn is full or has no empty sheaf to give (b: a new empty one, or NULL). */
static bool barn_put_locked(struct slub_cache *sc, void *const *objs, unsigned n,
                            struct barn_sheaf *b)
{
    if (sc->nr_full >= BARN_MAX)
        return false;
    if (!b) {
        if (!(b = sc->barn_empty))
            return false;
        sc->barn_empty = b->next;
        sc->nr_empty--;
    }
    memcpy(b->objs, objs, n * sizeof(void *));
    b->count = n;
    b->next = sc->barn_full;
    sc->barn_full = b;
    __atomic_store_n(&sc->nr_full, sc->nr_full + 1, __ATOMIC_RELAXED);
    return true;
}

/* A full sheaf of n objects into the barn, in exchange for an empty one;
 * false if the barn is full (cc: the caller's entry for the count, or NULL). */
static noinline bool barn_put(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                              void *const *objs, unsigned n)
{
    struct slub_cache *sc = slub_c(s);
    kslab_lock(&s->list_lock);
    bool ok = barn_put_locked(sc, objs, n, NULL);
    bool room = sc->nr_full < BARN_MAX;
    kslab_unlock(&s->list_lock);
    if (!ok && room) {
        struct barn_sheaf *b = barn_sheaf_new();     /* no empty sheaf yet: make one */
        if (!b)
            return false;
        kslab_lock(&s->list_lock);
        ok = barn_put_locked(sc, objs, n, b);
        if (!ok && sc->nr_empty < BARN_MAX) {
            b->next = sc->barn_empty;
            sc->barn_empty = b;
            sc->nr_empty++;
            b = NULL;
        }
        kslab_unlock(&s->list_lock);
        if (!ok && b)
            barn_sheaf_free(b);
    }
    if (ok)
        stat_add(s, cc, BARN_PUT, 1);
    return ok;
}

/* A full sheaf from the barn into objs (room for max); how many objects
 * (0: none, or the top one holds more than max). */
static noinline unsigned barn_take(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                                   void **objs, unsigned max)
{
    struct slub_cache *sc = slub_c(s);
    if (!__atomic_load_n(&sc->nr_full, __ATOMIC_RELAXED))
        return 0;                   /* a hint: a wrong answer costs a slab refill */
    unsigned n = 0;
    kslab_lock(&s->list_lock);
    struct barn_sheaf *b = sc->barn_full;
    if (b && b->count <= max) {
        sc->barn_full = b->next;
        __atomic_store_n(&sc->nr_full, sc->nr_full - 1, __ATOMIC_RELAXED);
        n = b->count;
        memcpy(objs, b->objs, n * sizeof(void *));
        if (sc->nr_empty < BARN_MAX) {
            b->next = sc->barn_empty;
            sc->barn_empty = b;
            sc->nr_empty++;
            b = NULL;
        }
    } else {
        b = NULL;
    }
    kslab_unlock(&s->list_lock);
    if (b)
        barn_sheaf_free(b);
    if (n)
        stat_add(s, cc, BARN_GET, 1);
    return n;
}

/* The thread's empty sheaf refilled with a full one from the barn. */
static bool barn_get(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc)
{
    cc->sheaf_count = barn_take(s, cc, cc->sheaf, SHEAF_MAX);
    return cc->sheaf_count != 0;
}

/* Empty the barn (shrink: objects back to their slabs; destroy: objects go
 * with the slabs, give_back false).  Nobody may use s concurrently with
 * destroy; shrink takes list_lock. */
static void barn_drain(struct kmem_cache *s, bool give_back)
{
    struct slub_cache *sc = slub_c(s);
    kslab_lock(&s->list_lock);
    struct barn_sheaf *full = sc->barn_full, *empty = sc->barn_empty;
    sc->barn_full = sc->barn_empty = NULL;
    __atomic_store_n(&sc->nr_full, 0, __ATOMIC_RELAXED);
    sc->nr_empty = 0;
    kslab_unlock(&s->list_lock);
    while (full) {
        struct barn_sheaf *b = full;
        full = b->next;
        if (give_back)
            slub_drain_validated(s, b->objs, b->count);
        barn_sheaf_free(b);
    }
    while (empty) {
        struct barn_sheaf *b = empty;
        empty = b->next;
        barn_sheaf_free(b);
    }
}

/* Give the older half of a full sheaf back to its slabs. */
static noinline void sheaf_flush(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, unsigned n)
{
    unsigned keep = cc->sheaf_count - n;
    void *batch[SHEAF_MAX];
    memcpy(batch, cc->sheaf, n * sizeof(void *));
    memmove(cc->sheaf, cc->sheaf + n, keep * sizeof(void *));
    cc->sheaf_count = keep;
    slub_free_bulk_account(s, n, batch, false);   /* counted when they entered */
    counter_inc(&cc->stat[SHEAF_FLUSH], 1);
}

/* A free with no thread state to cache it in: straight to the slab. */
static noinline void free_stateless(struct kmem_cache *s, struct slab *slab, void *x)
{
    struct kslab_thread *t = kslab_thread_for(s);
    if (t) {
        __slub_free(s, slab, x);
        return;
    }
    slab_free_list(s, NULL, slab, x, x, 1);
    stat_add(s, NULL, FREE_SLOWPATH, 1);
}

/* Into the sheaf.  The rare branches (no thread state yet, a full sheaf)
 * are out of line so that this path needs no saved registers. */
static void __slub_free(struct kmem_cache *s, struct slab *slab, void *x)
{
    struct kslab_thread *t = kslab_tls;
    struct kmem_cache_cpu_cold *cc;
    if (unlikely(!thread_is_real(t) || !(cc = kslab_cold_peek(t, s->id)))) {
        free_stateless(s, slab, x);
        return;
    }
    /* The double frees a thread's recent frees show: x is one of the two
     * objects it put in its sheaf last, or (bulk free) the one it freed
     * straight to its slab last. */
    if (unlikely(sheaf_recent(cc, x) || slab_freelist(slab) == x))
        kslab_double_free(s, x);
    if (unlikely(cc->sheaf_count >= s->sheaf_cap)) {
        if (barn_put(s, cc, cc->sheaf, cc->sheaf_count))
            cc->sheaf_count = 0;
        else
            sheaf_flush(s, cc, cc->sheaf_count / 2);
    }
    sheaf_put(cc, x);
}

/* The object the calling thread's sheaf of s would give out next (the one
 * it freed last), or NULL. */
static void *slub_sheaf_top(struct kmem_cache *s)
{
    if (kslab_percpu)
        return kslab_pcpu_top(s);
    struct kslab_thread *t = kslab_tls;
    struct kmem_cache_cpu_cold *cc = thread_is_real(t) ? kslab_cold_peek(t, s->id) : NULL;
    return cc ? sheaf_top(cc) : NULL;
}

/* ---- flush, shrink, destroy ----------------------------------------------- */

static void slub_flush_thread(struct kslab_thread *t, struct kmem_cache *s)
{
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = kslab_cold_peek(t, s->id);
    if (!cc)
        return;                     /* t never held anything of s */
    if (cc->sheaf_count) {
        /* Not through sheaf_flush(): t may not be the calling thread, and
         * slub_free_detached() must not see t's cpu slab as the caller's. */
        for (unsigned i = 0; i < cc->sheaf_count; i++) {
            void *x = cc->sheaf[i];
            uintptr_t base = (uintptr_t)x & s->slab_mask;
            if (base == c->slab_base) {
                set_freepointer(s, x, c->freelist);
                c->freelist = x;
            } else {
                slab_free_list(s, cc, addr_desc(base), x, x, 1);
            }
        }
        cc->sheaf_count = 0;
    }
    if (c->slab_base != NO_CPU_SLAB) {
        struct slab *slab = addr_desc(c->slab_base);
        void *fl = c->freelist;
        c->slab_base = NO_CPU_SLAB;
        c->freelist = NULL;
        deactivate_slab(s, cc, slab, fl);
        stat_add(s, cc, CPUSLAB_FLUSH, 1);
    }
    unfreeze_partials(s, cc);
}

/* Take every empty slab off the cache's partial list (for shrink), linked
 * by ->next.  An empty non-frozen slab has no object anyone may free: safe. */
static struct slab *take_empty_partials(struct kmem_cache *s)
{
    struct slab *discard = NULL;
    kslab_lock(&s->list_lock);
    for (struct slab *slab = s->partial, *next; slab; slab = next) {
        next = slab->next;
        if (slab_counters(slab).inuse == 0) {
            remove_partial(s, slab);
            slab->next = discard;
            discard = slab;
        }
    }
    kslab_unlock(&s->list_lock);
    return discard;
}

static void discard_list(struct kmem_cache *s, struct slab *list)
{
    while (list) {
        struct slab *x = list;
        list = x->next;
        kslab_discard_slab(s, NULL, x);
    }
}

int slub_shrink(struct kmem_cache *s)
{
    struct kslab_thread *t = kslab_tls;
    barn_drain(s, true);            /* first: its frees may freeze slabs onto this thread */
    if (thread_is_real(t))
        slub_flush_thread(t, s);
    if (s->flags & SLAB_TYPESAFE_BY_RCU) {
        kslab_rcu_shrink(s, take_empty_partials, discard_list);
        return 0;
    }
    struct slab *discard = take_empty_partials(s);
    while (discard) {
        struct slab *d = discard;
        discard = d->next;
        kslab_discard_slab(s, NULL, d);
    }
    pages_release_all();
    return 0;
}

long slub_destroy(struct kmem_cache *s)
{
    long n = 0;
    barn_drain(s, false);           /* its objects go with their slabs */
    s->partial = NULL;
    atomic_store_explicit(&s->nr_partial, 0, memory_order_relaxed);
    for (struct slab *d = kslab_take_slabs(s), *next; d; d = next, n++) {
        next = d->next;
        kslab_discard_slab(s, NULL, d);
    }
    return n;
}

/* ---- bulk ------------------------------------------------------------------- */

/*
 * kmem_cache_alloc_bulk: pop the cpu freelist in one loop (one counter update
 * for the run), refill it a whole slab freelist at a time, and when at least
 * a slab's worth is still wanted take a whole new slab without building its
 * freelist at all.  All or nothing: on failure everything taken is freed.
 */
static int slub_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, size_t done, void **p)
{
    if (unlikely(kslab_debugged(s)))
        return kslab_alloc_bulk_each(s, gfp, size, done, p);
    struct kslab_thread *t = kslab_thread_for(s);
    if (unlikely(!t)) {
        slub_free_bulk(s, done, p);
        return 0;
    }
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = kslab_cold(t, s->id);
    size_t i = done, fast = 0, slow = 0;
    while (i < size) {
        void *o = c->freelist;
        while (o && i < size) {
            p[i++] = o;
            o = get_freepointer(s, o);
            fast++;
        }
        c->freelist = o;
        if (i == size)
            break;
        if (cc->sheaf_count) {
            size_t take = cc->sheaf_count < size - i ? cc->sheaf_count : size - i;
            cc->sheaf_count -= (uint32_t)take;
            memcpy(p + i, cc->sheaf + cc->sheaf_count, take * sizeof(void *));
            i += take;
            slow += take;
            counter_inc(&cc->stat[ALLOC_SHEAF], take);
            continue;
        }
        if (barn_get(s, cc))        /* a full sheaf from the barn: taken above */
            continue;
        o = get_cpu_freelist(s, c, cc);
        if (o) {
            c->freelist = o;
            continue;
        }
        if (size - i >= s->objects) {
            struct slab *slab = slub_new_slab(s, NEW_SLAB_FULL);
            if (!slab)
                goto fail;
            stat_add(s, cc, ALLOC_SLAB, 1);
            char *base = slab_address(slab);
            for (uint32_t k = 0; k < s->objects; k++)
                p[i++] = base + (size_t)k * s->size;
            slow += s->objects;
            continue;
        }
        o = ___slub_alloc(s, c, cc);
        if (!o)
            goto fail;
        p[i++] = o;
        slow++;
    }
    counter_inc(&c->alloc_fast, fast);
    counter_inc(&cc->stat[ALLOC_SLOWPATH], slow);
    if (gfp & __GFP_ZERO)
        for (size_t k = 0; k < size; k++)
            memset(p[k], 0, s->object_size);
    return (int)size;
fail:
    counter_inc(&c->alloc_fast, fast);
    counter_inc(&cc->stat[ALLOC_SLOWPATH], slow);
    slub_free_bulk(s, i, p);
    return 0;
}

/*
 * Free `cnt` objects already linked head..tail, all in the slab at base of
 * cache s: onto the cpu freelist if it is the thread's cpu slab, else with
 * one compare-and-swap on the slab (the kernel's detached freelist).
 */
static void slub_free_detached(struct kmem_cache *s, uintptr_t base, void *head, void *tail,
                               unsigned cnt, bool account)
{
    /* the per-CPU mode keeps no per-thread slabs: straight to the slab */
    struct kslab_thread *t = kslab_percpu ? NULL : kslab_thread_for(s);
    if (t) {
        struct kmem_cache_cpu *c = &t->cpu[s->id];
        if (base == c->slab_base) {
            if (unlikely(c->freelist == head || c->freelist == tail))
                kslab_double_free(s, c->freelist);
            set_freepointer(s, tail, c->freelist);
            c->freelist = head;
            if (account)
                counter_inc(&c->free_fast, cnt);
            return;
        }
    }
    struct kmem_cache_cpu_cold *cc = t ? kslab_cold(t, s->id) : NULL;
    slab_free_list(s, cc, addr_desc(base), head, tail, cnt);
    if (account)
        stat_add(s, cc, FREE_SLOWPATH, cnt);
}

/*
 * The kernel's build_detached_freelist(): take the last object, then scan
 * back through the array linking every object of the same slab into one
 * list (stopping after 3 objects of other slabs), and free the list at once.
 * Consumed entries are set to NULL, as in the kernel.  Returns how many
 * entries are still to do.  s == NULL (kfree_bulk): each object's cache
 * comes from its page; large allocations are freed one by one.
 */
static size_t free_detached_group(struct kmem_cache *want, size_t size, void **p, bool account)
{
    const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
    void *x;
    do {
        x = p[--size];
    } while (ZERO_OR_NULL_PTR(x) && size);
    if (ZERO_OR_NULL_PTR(x))
        return 0;
    p[size] = NULL;
    if (!want && (!in_arena(x) || !addr_desc((uintptr_t)x)->cache)) {
        kslab_free_nonslab(x, fn);      /* large or huge, or reported */
        return size;
    }
    struct kmem_cache *s;
    kslab_object_slab(want, x, fn, &s);
    uintptr_t base = (uintptr_t)x & s->slab_mask;
    /* the object this thread freed last (to its sheaf) freed again */
    void *top = slub_sheaf_top(s);
    if (unlikely(x == top))
        kslab_double_free(s, x);
    void *head = x, *tail = x, *second = NULL;   /* second: head's successor */
    unsigned cnt = 1, lookahead = 3;
    size_t first_skipped = 0;
    while (size) {
        void *y = p[--size];
        if (ZERO_OR_NULL_PTR(y))
            continue;
        if (((uintptr_t)y & s->slab_mask) != base) {
            if (!first_skipped)
                first_skipped = size + 1;
            if (!--lookahead)
                break;
            continue;
        }
        if (unlikely(!object_start(s, base, y)))
            kslab_bad_free(fn, want ? want : s, y);
        if (unlikely(y == head || y == second || y == top))   /* [.., a, b, a] too */
            kslab_double_free(s, y);
        set_freepointer(s, y, head);
        second = head;
        head = y;
        cnt++;
        p[size] = NULL;
    }
    slub_free_detached(s, base, head, tail, cnt, account);
    return first_skipped ? first_skipped : size;
}

static void slub_free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    slub_free_bulk_account(want, size, p, true);
}

static void slub_free_bulk_account(struct kmem_cache *want, size_t size, void **p, bool account)
{
    while (size) {
        struct kmem_cache *s = want;
        if (!s) {
            void *x = p[size - 1];
            if (!ZERO_OR_NULL_PTR(x) && in_arena(x))
                s = addr_desc((uintptr_t)x)->cache;
        }
        if (s && unlikely(kslab_debugged(s))) {   /* one at a time, through the checks */
            void *x = p[--size];
            if (!ZERO_OR_NULL_PTR(x))
                slub_debug_free(want, s, x, want ? "kmem_cache_free_bulk" : "kfree_bulk");
            continue;
        }
        if (s && !(size = slub_free_bulk_fast(s, size, p, account)))
            return;
        size = free_detached_group(want, size, p, account);
    }
}

/* ---- the per-CPU mode's refill and drain (percpu.c) ------------------------------- */

/* A whole full sheaf from the barn if one fits, else objects of the
 * partial slabs.  No thread state: cc NULL, events in the cache's totals. */
static unsigned slub_cpu_refill(struct kmem_cache *s, void **p, unsigned want, unsigned max)
{
    unsigned n = max > 1 ? barn_take(s, NULL, p, max) : 0;
    if (n)
        return n;                   /* a barn sheaf's objects carry their tags */
    n = alloc_from_partial(s, NULL, p, want);
    for (unsigned i = 0; i < n; i++)    /* free objects into a sheaf: rule 8 */
        pcpu_tag_set(s, p[i]);
    return n;
}

/* A full sheaf to the barn (whole), else every object back to its slab. */
static void slub_cpu_drain(struct kmem_cache *s, void **p, unsigned n, bool whole)
{
    if (whole && barn_put(s, NULL, p, n))
        return;
    slub_drain_validated(s, p, n);
}

/* ---- the contract's entries ---------------------------------------------------- */

/* Everything the inline fast path did not take: validate, then the sheaf or
 * the slab. */
static void slub_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    if (unlikely(kslab_debugged(s)))
        slub_debug_free(want, s, x, fn);
    else
        __slub_free(s, kslab_slab_of(want, s, x, fn), x);
}

size_t slub_ksize(struct kmem_cache *s, const void *x)
{
    kslab_slab_of(NULL, s, x, "ksize");
    if (unlikely(kslab_debugged(s)))
        return slub_debug_ksize(s, (void *)x);
    return s->size;
}

const struct kslab_backend slub_backend = {
    .name = "slub",
    .cache_init = slub_cache_init_sheaves,
    .alloc = __slub_alloc,
    .free = slub_free,
    .ksize = slub_ksize,
    .alloc_bulk = slub_alloc_bulk,
    .free_bulk = slub_free_bulk,
    .flush_thread = slub_flush_thread,
    .shrink = slub_shrink,
    .destroy = slub_destroy,
    .cpu_refill = slub_cpu_refill,
    .cpu_drain = slub_cpu_drain,
    .debug = &slub_debug_ops,
};
