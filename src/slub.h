/*
 * slub.h - SLUB's private header: its per-cache struct, and its fast paths,
 * inlined into the front doors (kmalloc.c) and nowhere else.
 *
 * Allocation: one TLS load, one load of the thread's cpu freelist, one test,
 * one load of the next free pointer, one store, one counter.  Free to the
 * thread's own cpu slab: a subtract, a multiply and a rotate that prove the
 * pointer is an object of the cpu slab (no lookup), one double-free compare,
 * two stores, one counter.  Neither takes a lock or does an atomic
 * read-modify-write.  Then the second fast paths (slub_sheaf_pop/push, the
 * thread's sheaf, when the cpu slab misses), and everything else in
 * __slub_alloc()/__slub_free().
 */
#ifndef KSLAB_SLUB_H
#define KSLAB_SLUB_H
#include "slab_common.h"

/* SLUB's private per-cache state (the kernel's slub_def.h); slob-seg, which
 * shares SLUB's slab geometry, uses min_partial too. */
struct barn_sheaf;
struct slub_cache {
    unsigned long min_partial; /* empty slabs kept before returning them to the OS */
    unsigned cpu_partial_slabs;/* limit of each thread's partial list */
    /* The barn (Linux 6.18): full and empty sheaves exchanged between
     * threads, under list_lock; nr_full is also read racily (relaxed) as
     * a hint.  slob-seg leaves it empty. */
    unsigned nr_full, nr_empty;
    struct barn_sheaf *barn_full, *barn_empty;
    struct slab *full;          /* debugged caches: the full slabs, for validation */
};
_Static_assert(sizeof(struct slub_cache) <= KSLAB_CACHE_PRIV, "fits in kmem_cache");
static inline struct slub_cache *slub_c(struct kmem_cache *s)
{
    return (struct slub_cache *)(void *)s->be_private;
}

/* Shared with slob-seg (same geometry, same partial list). */
int slub_cache_init(struct kmem_cache *s);
unsigned slub_calculate_order(unsigned size);
/* A new slab, initialised, then published (states: slub.c). */
enum new_slab_mode { NEW_SLAB_CPU, NEW_SLAB_FULL, NEW_SLAB_FREE, NEW_SLAB_LAZY };
struct slab *slub_new_slab(struct kmem_cache *s, enum new_slab_mode mode);
/* The cache's doubly linked partial list (list_lock held). */
void add_partial(struct kmem_cache *s, struct slab *slab);
void remove_partial(struct kmem_cache *s, struct slab *slab);
struct slab *partial_or_new(struct kmem_cache *s);
bool partial_release_empty(struct kmem_cache *s, struct slab *slab);
int slub_shrink(struct kmem_cache *s);
size_t slub_ksize(struct kmem_cache *s, const void *x);
long slub_destroy(struct kmem_cache *s);

/* Hardened free pointers (freepointer_key, slab_common.h): a pointer
 * forged by an overflow or a write after free decodes to garbage, and
 * garbage is caught: a decoded pointer must be NULL or inside the same
 * slab (SLUB's slabs are naturally aligned).  Cost: an xor, a bswap and an
 * and to store; those, an and and a compare to load. */
/* The stored pointer decoded, unchecked: slub_debug's walks, which check
 * and repair themselves. */
static inline void *get_freepointer_raw(const struct kmem_cache *s, void *object)
{
    void **slot = (void **)((char *)object + s->offset);
    return (void *)((uintptr_t)*slot ^ freepointer_key(s, slot));
}
/* A forged value decodes to 64 random bits, which land in the object's
 * own slab with odds of 2^-47 or less: the slab test alone catches it (an
 * and and a compare; the object-start test's multiply on the per-thread
 * pop cost the kmem_cache pair 50 %).  NULL ends a list; a garbage NULL is
 * as unlikely.  fp_swab 0 (KSLAB_HARDENED=0): no test. */
static inline bool freepointer_ok(const struct kmem_cache *s, const void *object, const void *fp)
{
    return !(((uintptr_t)fp ^ (uintptr_t)object) & s->slab_mask & s->fp_swab) || !fp;
}
static inline void *get_freepointer(const struct kmem_cache *s, void *object)
{
    void *fp = get_freepointer_raw(s, object);
    if (unlikely(!freepointer_ok(s, object, fp)))
        kslab_bad_freepointer((struct kmem_cache *)s, object, fp);
    return fp;
}
static inline void set_freepointer(const struct kmem_cache *s, void *object, void *fp)
{
    void **slot = (void **)((char *)object + s->offset);
    *slot = (void *)((uintptr_t)fp ^ freepointer_key(s, slot));
}

/* kmalloc_size is only passed on the slow call (0 for kmem_cache_alloc):
 * SLOB needs the request's real size. */
static inline void *slub_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    void *object = c->freelist;
    if (unlikely(!object))
        return kslab_alloc_slow(s, gfp, kmalloc_size);
    /* A bad free pointer goes to the slow path, which pops the same object
     * with the checking get_freepointer and reports: a tail call, not the
     * report's call inline (2 instructions less under callgrind). */
    void *fp = get_freepointer_raw(s, object);
    if (unlikely(!freepointer_ok(s, object, fp)))
        return kslab_alloc_slow(s, gfp, kmalloc_size);
    c->freelist = fp;
    counter_inc(&c->alloc_fast, 1);
    if (unlikely(gfp & __GFP_ZERO))
        return kslab_zero(s, object);
    return object;
}

/* Free x if it is an object of the thread's cpu slab of s; false if not
 * (then the caller validates x and takes the slow path).  The obj_index()
 * test alone proves x is an object start inside the cpu slab. */
static inline bool slub_free_fast(struct kmem_cache *s, void *x)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    if (unlikely(obj_index(s, (uintptr_t)x - c->slab_base) >= s->objects))
        return false;
    void *head = c->freelist;
    /* x freed last (head), or the one before it (free a, free b, free a) */
    if (unlikely(head == x || (head && get_freepointer_raw(s, head) == x)))
        kslab_double_free(s, x);
    set_freepointer(s, x, head);
    c->freelist = x;
    counter_inc(&c->free_fast, 1);
    return true;
}

/* The thread's sheaf of a cache: the object it gives out next (the one
 * freed last), and one object out or in, counting the event. */
#define SLOW_START 16   /* objects a thread takes one at a time first (slub.c) */
static inline void *sheaf_top(const struct kmem_cache_cpu_cold *cc)
{
    return cc->sheaf_count ? cc->sheaf[cc->sheaf_count - 1] : NULL;
}
static inline void *sheaf_take(struct kmem_cache_cpu_cold *cc)
{
    counter_inc(&cc->stat[ALLOC_SHEAF], 1);
    return cc->sheaf[--cc->sheaf_count];
}
static inline void sheaf_put(struct kmem_cache_cpu_cold *cc, void *x)
{
    cc->sheaf[cc->sheaf_count++] = x;
    counter_inc(&cc->stat[FREE_SHEAF], 1);
    counter_inc(&cc->stat[FREE_SLOWPATH], 1);
}

/*
 * The second fast paths: the thread's sheaf, when the cpu slab misses.  An
 * allocation whose cpu freelist is empty takes the object this thread freed
 * last; a free outside the cpu slab is validated as the slow path does
 * (kslab_slab_find: a live slab of s, x an object start) and pushed.  No
 * lock, no atomic read-modify-write, and none of the back-end call chain:
 * the larson-style server row spends most of its frees and many of its
 * allocations here.  Anything unusual (no thread state, no cpu slab yet:
 * slow start, a full or empty sheaf, a bad pointer, an immediate double
 * free, a back-end without sheaves: sheaf_cap 0) returns NULL/false and
 * the slow path handles and reports it.
 */
static inline void *slub_sheaf_pop(struct kmem_cache *s)
{
    struct kslab_thread *t = kslab_tls;
    struct kmem_cache_cpu_cold *cc;
    if (!s->sheaf_cap || !thread_is_real(t) || t->cpu[s->id].slab_base == NO_CPU_SLAB ||
        !(cc = kslab_cold_peek(t, s->id)) || !cc->sheaf_count)
        return NULL;
    counter_inc(&cc->stat[ALLOC_SLOWPATH], 1);
    return sheaf_take(cc);
}
static inline bool slub_sheaf_push(struct kmem_cache *s, void *x)
{
    struct kslab_thread *t = kslab_tls;
    struct kmem_cache_cpu_cold *cc;
    struct slab *slab;
    if (!s->sheaf_cap || !thread_is_real(t) || !(cc = kslab_cold_peek(t, s->id)))
        return false;
    if (unlikely(cc->sheaf_count >= s->sheaf_cap || !(slab = kslab_slab_find(s, x)) ||
                 sheaf_recent(cc, x) || slab_freelist(slab) == x))
        return false;
    sheaf_put(cc, x);
    return true;
}

/* Bulk fast paths on the thread's cpu slab: pop/push runs of objects with
 * one counter update.  Each returns how far it got; the rest is slow path. */
static inline size_t slub_alloc_bulk_fast(struct kmem_cache *s, size_t size, void **p)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    void *o = c->freelist;
    size_t i = 0;
    while (o && i < size) {
        p[i++] = o;
        o = get_freepointer(s, o);
    }
    /* Store only if something was taken: a thread without state (and every
     * thread on the other back-ends) reads the shared empty kslab_no_thread
     * entries, which must never be written. */
    if (i) {
        c->freelist = o;
        counter_inc(&c->alloc_fast, i);
    }
    return i;
}

/* Free p[size-1], p[size-2], ... while they are objects of the cpu slab;
 * returns how many entries are left.  account == false for objects already
 * counted as freed (a sheaf being flushed). */
static inline size_t slub_free_bulk_fast(struct kmem_cache *s, size_t size, void **p,
                                         bool account)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    void *head = c->freelist, *second = NULL;    /* second: head's successor, once known */
    size_t left = size;
    while (left) {
        void *x = p[left - 1];
        /* below KSLAB_MIN_OBJECT (NULL included): the slow path's (an
         * empty entry's slab_base 0 would take it for an object) */
        if ((uintptr_t)x < KSLAB_MIN_OBJECT ||
            obj_index(s, (uintptr_t)x - c->slab_base) >= s->objects)
            break;
        if (unlikely(x == head || x == second))      /* [.., a, b, a] too */
            kslab_double_free(s, x);
        set_freepointer(s, x, head);
        second = head;
        head = x;
        left--;
    }
    if (left != size) {                 /* never write kslab_no_thread (see above) */
        c->freelist = head;
        if (account)
            counter_inc(&c->free_fast, size - left);
    }
    return left;
}
#endif
