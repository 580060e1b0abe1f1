/*
 * slub.h - SLUB's fast paths, inlined into the front doors (slab_common.c).
 *
 * Allocation: one TLS load, one load of the thread's cpu freelist, one test,
 * one load of the next free pointer, one store, one counter.  Free to the
 * thread's own cpu slab: a subtract, a multiply and a rotate that prove the
 * pointer is an object of the cpu slab (no lookup), one double-free compare,
 * two stores, one counter.  Neither takes a lock or does an atomic
 * read-modify-write.  Everything else is in __slub_alloc()/__slub_free().
 */
#ifndef KSLAB_SLUB_H
#define KSLAB_SLUB_H
#include "internal.h"

static inline void *get_freepointer(const struct kmem_cache *s, void *object)
{
    return *(void **)((char *)object + s->offset);
}
static inline void set_freepointer(const struct kmem_cache *s, void *object, void *fp)
{
    *(void **)((char *)object + s->offset) = fp;
}

/* kmalloc_size is only passed on the slow call (0 for kmem_cache_alloc):
 * SLOB needs the request's real size. */
static inline void *slub_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    void *object = c->freelist;
    if (unlikely(!object))
        return kslab_alloc_slow(s, gfp, kmalloc_size);
    c->freelist = get_freepointer(s, object);
    counter_inc(&c->alloc_fast, 1);
    if (unlikely(gfp & __GFP_ZERO))
        memset(object, 0, s->object_size);
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
    if (unlikely(head == x))
        kslab_report("double free of object %p in cache %s", x, s->name);
    set_freepointer(s, x, head);
    c->freelist = x;
    counter_inc(&c->free_fast, 1);
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
    c->freelist = o;
    counter_inc(&c->alloc_fast, i);
    return i;
}

/* Free p[size-1], p[size-2], ... while they are objects of the cpu slab;
 * returns how many entries are left.  account == false for objects already
 * counted as freed (a sheaf being flushed). */
static inline size_t slub_free_bulk_fast(struct kmem_cache *s, size_t size, void **p,
                                         bool account)
{
    struct kmem_cache_cpu *c = &kslab_tls->cpu[s->id];
    void *head = c->freelist;
    size_t left = size;
    while (left) {
        void *x = p[left - 1];
        if (obj_index(s, (uintptr_t)x - c->slab_base) >= s->objects)
            break;
        if (unlikely(x == head))
            kslab_report("double free of object %p in cache %s", x, s->name);
        set_freepointer(s, x, head);
        head = x;
        left--;
    }
    c->freelist = head;
    if (account)
        counter_inc(&c->free_fast, size - left);
    return left;
}
#endif
