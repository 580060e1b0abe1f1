/*
 * kslab.h - the Linux kernel's slab allocator API, in user space.
 *
 * Names and semantics follow include/linux/slab.h: kmem_cache_create() and
 * friends for typed object caches, kmalloc() and friends for general
 * allocations, kfree() that needs no cache pointer.  Every object kslab hands
 * out maps back to its slab descriptor and cache in constant time.
 *
 * Beyond the kernel API this header adds the kslab_* observability calls:
 * slabinfo text, per-cache counters (modelled on CONFIG_SLUB_STATS).
 */
#ifndef KSLAB_H
#define KSLAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KSLAB_API __attribute__((visibility("default")))
#define KSLAB_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define KSLAB_API
#define KSLAB_MALLOC_ATTR
#endif

/* ---- allocation flags (gfp_t) ------------------------------------------ */
typedef unsigned int gfp_t;

/* In user space nothing sleeps on reclaim, so GFP_KERNEL, GFP_ATOMIC and
 * GFP_NOWAIT behave alike; they exist so kernel-style code compiles
 * unchanged.  __GFP_ZERO zeroes the object, __GFP_NOFAIL retries on
 * out-of-memory until it succeeds instead of returning NULL. */
#define __GFP_ZERO    0x100u
#define __GFP_NOFAIL  0x200u
#define __GFP_NOWARN  0x400u
#define GFP_KERNEL    0x001u
#define GFP_ATOMIC    0x002u
#define GFP_NOWAIT    0x004u
/* Accepted and without effect in user space, so today's kernel code
 * compiles unchanged: __GFP_NOWARN (kslab prints no allocation-failure
 * warning anyway), __GFP_RETRY_MAYFAIL (there is no reclaim to retry: a
 * failure returns NULL at once, which is what the flag permits),
 * __GFP_ACCOUNT (no memory cgroups to charge).  GFP_NOFS and GFP_NOIO
 * limit reclaim's recursion into filesystems and I/O, of which there is
 * none here: they are GFP_KERNEL. */
#define __GFP_RETRY_MAYFAIL 0x800u
#define __GFP_ACCOUNT       0x1000u
#define GFP_KERNEL_ACCOUNT  (GFP_KERNEL | __GFP_ACCOUNT)
#define GFP_NOFS            GFP_KERNEL
#define GFP_NOIO            GFP_KERNEL

/* NUMA: one node here.  The _node calls accept any node and ignore it. */
#define NUMA_NO_NODE (-1)

/* ---- cache flags (slab_flags_t) ----------------------------------------- */
typedef unsigned int slab_flags_t;

/* Debugging (SLUB; README "Debugging"): also KSLAB_DEBUG='FZPU,name,...' */
#define SLAB_CONSISTENCY_CHECKS 0x00000100u /* F: check objects and freelists on alloc/free */
#define SLAB_RED_ZONE           0x00000400u /* Z: guard bytes around objects */
#define SLAB_POISON             0x00000800u /* P: poison free objects, check at allocation */
#define SLAB_HWCACHE_ALIGN      0x00002000u /* align objects to cache lines */
#define SLAB_STORE_USER         0x00010000u /* U: record the last alloc and free call sites */
#define SLAB_TRACE              0x00200000u /* T: print every alloc and free of the cache */
#define SLAB_PANIC              0x00040000u /* abort if kmem_cache_create fails */
#define SLAB_TYPESAFE_BY_RCU    0x00080000u /* slabs stay mapped while the cache lives */
#define SLAB_NO_MERGE           0x01000000u /* never merge this cache with another */
/* Accepted, no effect: no memory cgroups (SLAB_ACCOUNT) and no reclaim
 * statistics (SLAB_RECLAIM_ACCOUNT) in user space.  Neither stops merging. */
#define SLAB_ACCOUNT            0x04000000u
#define SLAB_RECLAIM_ACCOUNT    0x00020000u
#define SLAB_TEMPORARY          SLAB_RECLAIM_ACCOUNT
/* Accepted, no effect: no DMA zones (SLAB_CACHE_DMA, SLAB_CACHE_DMA32), no
 * debugobjects, kmemleak, fault injection, KASAN cache flags or slab
 * object extensions in user space. */
#define SLAB_CACHE_DMA          0x00004000u
#define SLAB_CACHE_DMA32        0x00008000u
#define SLAB_DEBUG_OBJECTS      0x00400000u
#define SLAB_NOLEAKTRACE        0x00800000u
#define SLAB_FAILSLAB           0x02000000u
#define SLAB_KASAN              0x08000000u
#define SLAB_NO_USER_FLAGS      0x00100000u
#define SLAB_NO_OBJ_EXT         0x00000200u
/* KFENCE never samples this cache's objects. */
#define SLAB_SKIP_KFENCE        0x00001000u

/* ---- caches ------------------------------------------------------------- */
struct kmem_cache;

KSLAB_API struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
                                               unsigned int align, slab_flags_t flags,
                                               void (*ctor)(void *));
/* kmem_cache_create's second form (Linux 6.12+): kmem_cache_create(name,
 * size, &args, flags), or NULL args for every default.  align and ctor as
 * in the first form; useroffset/usersize: the hardened-usercopy window,
 * recorded (there is no copy_to_user to check here); freeptr_offset with
 * use_freeptr_offset: a SLAB_TYPESAFE_BY_RCU cache keeps a free object's
 * free pointer in that word of the object (aligned, inside it) instead of
 * growing the object by one; sheaf_capacity: the objects each per-CPU
 * sheaf of the cache holds (at most 59; 0: kslab's choice).  A cache with
 * a usercopy window, a placed free pointer or its own sheaf capacity is
 * never merged. */
struct kmem_cache_args {
    unsigned int align;
    unsigned int useroffset;
    unsigned int usersize;
    unsigned int freeptr_offset;
#ifdef __cplusplus
    bool use_freeptr_offset;
#else
    _Bool use_freeptr_offset;
#endif
    void (*ctor)(void *);
    unsigned int sheaf_capacity;
};
KSLAB_API struct kmem_cache *__kmem_cache_create_args(const char *name, unsigned int size,
                                                      struct kmem_cache_args *args,
                                                      slab_flags_t flags);
static inline struct kmem_cache *__kmem_cache_default_args(const char *name, unsigned int size,
                                                           struct kmem_cache_args *args,
                                                           slab_flags_t flags)
{
    (void)args;
    return __kmem_cache_create_args(name, size, (struct kmem_cache_args *)0, flags);
}
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* The third argument picks the form, as in the kernel's slab.h. */
#define kmem_cache_create(__name, __object_size, __args, ...)                    \
    _Generic((__args),                                                           \
        struct kmem_cache_args *: __kmem_cache_create_args,                      \
        void *: __kmem_cache_default_args,                                       \
        default: kmem_cache_create)(__name, __object_size, __args, __VA_ARGS__)
#endif
KSLAB_API struct kmem_cache *kmem_cache_create_usercopy(const char *name, unsigned int size,
                                                        unsigned int align, slab_flags_t flags,
                                                        unsigned int useroffset,
                                                        unsigned int usersize,
                                                        void (*ctor)(void *));
#define KMEM_CACHE(__struct, __flags)                                            \
    kmem_cache_create(#__struct, sizeof(struct __struct),                        \
                      _Alignof(struct __struct), (__flags), NULL)
#define KMEM_CACHE_USERCOPY(__struct, __flags, __field)                          \
    kmem_cache_create_usercopy(#__struct, sizeof(struct __struct),               \
                               _Alignof(struct __struct), (__flags),             \
                               offsetof(struct __struct, __field),               \
                               sizeof(((struct __struct *)0)->__field), NULL)
KSLAB_API void kmem_cache_destroy(struct kmem_cache *s);
KSLAB_API int kmem_cache_shrink(struct kmem_cache *s);
KSLAB_API void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags) KSLAB_MALLOC_ATTR;
KSLAB_API void kmem_cache_free(struct kmem_cache *s, void *objp);
KSLAB_API unsigned int kmem_cache_size(struct kmem_cache *s);
/* Bulk: kmem_cache_alloc_bulk returns size, or 0 after freeing whatever it
 * had taken (all or nothing).  kmem_cache_free_bulk with s == NULL looks each
 * object's cache up from its address (that is kfree_bulk, which also takes
 * large kmalloc allocations).  NULL entries are skipped; the free calls may
 * overwrite entries of the array (with NULL), as the kernel's do. */
KSLAB_API int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t flags, size_t size, void **p);
KSLAB_API void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p);
KSLAB_API void kfree_bulk(size_t size, void **p);

/* Sheaves (Linux 6.18): objects reserved ahead of a section that must not
 * fail.  kmem_cache_prefill_sheaf returns a sheaf holding at least `size`
 * objects of s (NULL when memory is short: all or nothing); every
 * kmem_cache_alloc_from_sheaf then succeeds until the sheaf is empty
 * (NULL after), with __GFP_ZERO honoured; kmem_cache_refill_sheaf tops it
 * up to `size` (0, or -ENOMEM with the sheaf as it was), replacing *sheafp
 * when `size` exceeds its capacity; kmem_cache_return_sheaf frees the
 * objects left and the sheaf.  A sheaf's capacity is the cache's
 * sheaf_capacity (kmem_cache_args) or per-CPU sheaf size; a larger request
 * gets an oversize sheaf of its own.  Objects in a sheaf count as
 * allocated.  A sheaf is not thread-safe: one user at a time. */
struct slab_sheaf;
KSLAB_API struct slab_sheaf *kmem_cache_prefill_sheaf(struct kmem_cache *s, gfp_t gfp,
                                                      unsigned int size);
KSLAB_API int kmem_cache_refill_sheaf(struct kmem_cache *s, gfp_t gfp,
                                      struct slab_sheaf **sheafp, unsigned int size);
KSLAB_API void *kmem_cache_alloc_from_sheaf(struct kmem_cache *s, gfp_t gfp,
                                            struct slab_sheaf *sheaf);
KSLAB_API void kmem_cache_return_sheaf(struct kmem_cache *s, gfp_t gfp, struct slab_sheaf *sheaf);
KSLAB_API unsigned int kmem_cache_sheaf_size(struct slab_sheaf *sheaf);

static inline void *kmem_cache_zalloc(struct kmem_cache *s, gfp_t flags)
{
    return kmem_cache_alloc(s, flags | __GFP_ZERO);
}
static inline void *kmem_cache_alloc_node(struct kmem_cache *s, gfp_t flags, int node)
{
    (void)node;
    return kmem_cache_alloc(s, flags);
}
/* The kernel charges the object to a list_lru's memory cgroup; there are
 * none here, so the lru is accepted and not used. */
struct list_lru;
static inline void *kmem_cache_alloc_lru(struct kmem_cache *s, struct list_lru *lru, gfp_t flags)
{
    (void)lru;
    return kmem_cache_alloc(s, flags);
}

/* ---- kmalloc ------------------------------------------------------------ */
/* kmalloc(0) returns ZERO_SIZE_PTR: not NULL, never dereferenceable,
 * accepted by kfree() and ksize(). */
#define ZERO_SIZE_PTR ((void *)16)
#define ZERO_OR_NULL_PTR(x) ((unsigned long)(x) <= (unsigned long)ZERO_SIZE_PTR)

#define KMALLOC_MAX_CACHE_SIZE 8192u   /* larger requests are mapped directly */

KSLAB_API void *kmalloc(size_t size, gfp_t flags) KSLAB_MALLOC_ATTR;
KSLAB_API void *krealloc(const void *p, size_t new_size, gfp_t flags) __attribute__((warn_unused_result));
KSLAB_API void kfree(const void *objp);
KSLAB_API void kfree_sensitive(const void *objp);
KSLAB_API size_t ksize(const void *objp);
KSLAB_API size_t kmalloc_size_roundup(size_t size);
KSLAB_API char *kstrdup(const char *s, gfp_t gfp) KSLAB_MALLOC_ATTR;
KSLAB_API void *kmemdup(const void *src, size_t len, gfp_t gfp) KSLAB_MALLOC_ATTR;

static inline void *kzalloc(size_t size, gfp_t flags)
{
    return kmalloc(size, flags | __GFP_ZERO);
}
static inline void *kmalloc_array(size_t n, size_t size, gfp_t flags)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    return kmalloc(bytes, flags);
}
static inline void *kcalloc(size_t n, size_t size, gfp_t flags)
{
    return kmalloc_array(n, size, flags | __GFP_ZERO);
}
/* krealloc of n * size bytes; NULL (p untouched) when that overflows. */
static inline __attribute__((warn_unused_result)) void *
krealloc_array(void *p, size_t new_n, size_t new_size, gfp_t flags)
{
    size_t bytes;
    if (__builtin_mul_overflow(new_n, new_size, &bytes))
        return NULL;
    return krealloc(p, bytes, flags);
}
/* The first len bytes of s (which need not hold a NUL) and a NUL after
 * them; kstrndup: s up to its NUL or max bytes, NUL-terminated.  NULL s
 * gives NULL. */
KSLAB_API char *kmemdup_nul(const char *s, size_t len, gfp_t gfp) KSLAB_MALLOC_ATTR;
KSLAB_API char *kstrndup(const char *s, size_t max, gfp_t gfp) KSLAB_MALLOC_ATTR;

/* The _node variants: one node, so the node is ignored. */
/* kmalloc_track_caller: kmalloc charged to the caller's call site (the
 * return address of the function that calls it, as the kernel's _RET_IP_):
 * what random kmalloc caches and KSLAB_DEBUG's user tracking see. */
KSLAB_API void *kslab_kmalloc_caller(size_t size, gfp_t flags, unsigned long caller)
    KSLAB_MALLOC_ATTR;
#define kmalloc_track_caller(size, flags)                                        \
    kslab_kmalloc_caller((size), (flags), (unsigned long)__builtin_return_address(0))
#define kmalloc_node_track_caller(size, flags, node)                             \
    ((void)(node), kmalloc_track_caller((size), (flags)))
/* Always true here: slabs work from the first call. */
static inline int slab_is_available(void)
{
    return 1;
}
/* Memory cgroups do not exist here: charging always succeeds. */
static inline _Bool kmem_cache_charge(void *objp, gfp_t gfpflags)
{
    (void)objp;
    (void)gfpflags;
    return 1;
}
/* The aligned forms (6.17+): align a power of two (else NULL); node ignored.
 * kvrealloc_node_align is krealloc_node_align. */
KSLAB_API void *krealloc_node_align(const void *p, size_t new_size, unsigned long align,
                                    gfp_t flags, int nid) __attribute__((warn_unused_result));
KSLAB_API void *kvmalloc_node_align(size_t size, unsigned long align, gfp_t flags, int node)
    KSLAB_MALLOC_ATTR;
#define kvrealloc_node_align(p, size, align, flags, nid)                         \
    krealloc_node_align((p), (size), (align), (flags), (nid))
/* kmalloc_nolock/kfree_nolock (6.18): callable from any context, a signal
 * handler included -- no lock, no system call.  kmalloc_nolock may fail
 * where kmalloc would not (it only takes what the current CPU's sheaf of
 * the class holds; NULL in the per-thread mode); kfree_nolock frees at once
 * when it can, else defers the free to the next slow-path allocation. */
KSLAB_API void *kmalloc_nolock(size_t size, gfp_t gfp_flags, int node) KSLAB_MALLOC_ATTR;
KSLAB_API void kfree_nolock(const void *objp);
/* Prints what kslab knows of the object holding p (cache, start, offset,
 * size) on stderr; false if p is in no live kslab object. */
KSLAB_API _Bool kmem_dump_obj(void *p);

static inline void *kmalloc_node(size_t size, gfp_t flags, int node)
{
    (void)node;
    return kmalloc(size, flags);
}
static inline void *kzalloc_node(size_t size, gfp_t flags, int node)
{
    return kmalloc_node(size, flags | __GFP_ZERO, node);
}
static inline void *kmalloc_array_node(size_t n, size_t size, gfp_t flags, int node)
{
    (void)node;
    return kmalloc_array(n, size, flags);
}
static inline void *kcalloc_node(size_t n, size_t size, gfp_t flags, int node)
{
    return kmalloc_array_node(n, size, flags | __GFP_ZERO, node);
}

/* kvmalloc: the kernel falls back from kmalloc to vmalloc for sizes the
 * buddy cannot give contiguously.  kslab's kmalloc already serves any size
 * (slab, page allocator, then a mapping of its own), so kvmalloc is kmalloc
 * and kvfree is kfree; every kv* block is also a k* block (ksize, krealloc
 * and kfree take it).  kvrealloc has 6.12's form (p, size, flags). */
static inline void *kvmalloc(size_t size, gfp_t flags)
{
    return kmalloc(size, flags);
}
static inline void *kvzalloc(size_t size, gfp_t flags)
{
    return kmalloc(size, flags | __GFP_ZERO);
}
static inline void *kvmalloc_node(size_t size, gfp_t flags, int node)
{
    return kmalloc_node(size, flags, node);
}
static inline void *kvzalloc_node(size_t size, gfp_t flags, int node)
{
    return kmalloc_node(size, flags | __GFP_ZERO, node);
}
static inline void *kvmalloc_array(size_t n, size_t size, gfp_t flags)
{
    return kmalloc_array(n, size, flags);
}
static inline void *kvcalloc(size_t n, size_t size, gfp_t flags)
{
    return kmalloc_array(n, size, flags | __GFP_ZERO);
}
static inline void *kvmalloc_array_node(size_t n, size_t size, gfp_t flags, int node)
{
    return kmalloc_array_node(n, size, flags, node);
}
static inline void *kvcalloc_node(size_t n, size_t size, gfp_t flags, int node)
{
    return kmalloc_array_node(n, size, flags | __GFP_ZERO, node);
}
static inline __attribute__((warn_unused_result)) void *kvrealloc(const void *p, size_t size,
                                                                  gfp_t flags)
{
    return krealloc(p, size, flags);
}
static inline void kvfree(const void *p)
{
    kfree(p);
}
/* Zeroes the block (all of it, as kfree_sensitive; len is the caller's
 * idea of its length and is not needed) before freeing it. */
static inline void kvfree_sensitive(const void *p, size_t len)
{
    (void)len;
    kfree_sensitive(p);
}

/* Scope-based freeing, the kernel's <linux/cleanup.h> for the slab calls:
 *     char *buf __free(kfree) = kmalloc(n, GFP_KERNEL);
 * frees buf when it goes out of scope unless no_free_ptr(buf) or
 * return_ptr(buf) took it.  Defined here only if the program has not
 * defined its own cleanup helpers. */
#if defined(__GNUC__) && !defined(__cplusplus) && !defined(DEFINE_FREE)
#define DEFINE_FREE(_name, _type, _free)                                         \
    static inline void __free_##_name(void *p) { _type _T = *(_type *)p; _free; }
#define __free(_name) __attribute__((cleanup(__free_##_name)))
#define no_free_ptr(p) ({ __typeof__(p) __ptr = (p); (p) = NULL; __ptr; })
#define return_ptr(p) return no_free_ptr(p)
#define KSLAB_IS_ERR_OR_NULL(p) (!(p) || (unsigned long)(p) >= (unsigned long)-4095)
DEFINE_FREE(kfree, void *, if (!KSLAB_IS_ERR_OR_NULL(_T)) kfree(_T))
DEFINE_FREE(kvfree, void *, if (!KSLAB_IS_ERR_OR_NULL(_T)) kvfree(_T))
DEFINE_FREE(kfree_sensitive, void *, if (_T) kfree_sensitive(_T))
#endif

/* kmem_buckets (the kernel's CONFIG_SLAB_BUCKETS): a private copy of every
 * kmalloc class, named NAME-8 .. NAME-8k, never merged and visible in
 * slabinfo, so that objects a subsystem sizes from user input do not share
 * slabs with everyone else's kmalloc objects (cross-cache heap grooming).
 * kmem_buckets_alloc(b, size, gfp) is kmalloc from b's classes (NULL b:
 * plain kmalloc; above 8 KiB the page allocator, as kmalloc); the objects
 * are kmalloc objects for kfree, ksize and krealloc.  useroffset/usersize
 * give each class's usercopy window, clipped to it; ctor runs as a cache
 * ctor.  As in the kernel there is no destroy: buckets last. */
#define KSLAB_KMALLOC_CLASSES 13
typedef struct kmem_cache *kmem_buckets[KSLAB_KMALLOC_CLASSES];
KSLAB_API kmem_buckets *kmem_buckets_create(const char *name, slab_flags_t flags,
                                            unsigned int useroffset, unsigned int usersize,
                                            void (*ctor)(void *));
KSLAB_API void *kmem_buckets_alloc(kmem_buckets *b, size_t size, gfp_t flags) KSLAB_MALLOC_ATTR;
/* kmem_buckets_alloc charged to a call site (random kmalloc caches pick by
 * it when b is NULL): _track_caller passes its caller's, as
 * kmalloc_track_caller does. */
KSLAB_API void *kslab_buckets_alloc_caller(kmem_buckets *b, size_t size, gfp_t flags,
                                           unsigned long caller) KSLAB_MALLOC_ATTR;
#define kmem_buckets_alloc_track_caller(b, size, flags)                          \
    kslab_buckets_alloc_caller((b), (size), (flags),                             \
                               (unsigned long)__builtin_return_address(0))
/* kvmalloc from b: kmem_buckets_alloc, as kvmalloc is kmalloc here */
static inline void *kmem_buckets_valloc(kmem_buckets *b, size_t size, gfp_t flags)
{
    return kmem_buckets_alloc(b, size, flags);
}

/* The start of the live object or block (slab object, large or huge
 * kmalloc block, KFENCE object) that contains p, or NULL.  What the
 * kernel's kfree_rcu gets from its rcu_head's offset: kslab-rcu.h's
 * callbacks are given the rcu_head inside the object. */
KSLAB_API void *kslab_object_start(const void *p);
/* Registers RCU for the slab layer (libkslab-rcu does it when loaded):
 * defer(fn, arg) runs fn(arg) after a grace period, barrier() waits for
 * every deferred call.  Then kmem_cache_shrink gives a SLAB_TYPESAFE_BY_RCU
 * cache's empty slabs back after a grace period (without RCU they stay
 * until the cache is destroyed), and kmem_cache_destroy of such a cache
 * calls barrier() first, as the kernel's calls rcu_barrier(). */
KSLAB_API void kslab_set_rcu_ops(void (*defer)(void (*fn)(void *), void *arg),
                                 void (*barrier)(void));

/* ---- observability ------------------------------------------------------ */

/* Print every cache in the /proc/slabinfo version 2.1 format. */
KSLAB_API void kslab_slabinfo(FILE *out);

/* Validation, as slabinfo -v: walk every slab of a debugged cache (or of
 * all caches) and check each object, reporting and repairing what is
 * wrong.  Returns the number of errors found (0 for a cache without
 * debugging); -1 if s is NULL. */
KSLAB_API long kmem_cache_validate(struct kmem_cache *s);
KSLAB_API long kslab_validate_all(void);
/* Errors the debug checks have reported since start-up. */
KSLAB_API long kslab_debug_errors(void);

/* Per-cache event counters, modelled on the kernel's enum stat_item
 * (CONFIG_SLUB_STATS).  Each counts events since the cache was created. */
struct kslab_stats {
    uint64_t alloc_fastpath;      /* alloc served from the thread's cpu freelist, no lock, no atomic */
    uint64_t alloc_slowpath;      /* alloc that had to refill the cpu freelist */
    uint64_t free_fastpath;       /* free onto the thread's own cpu slab, no lock, no atomic */
    uint64_t free_slowpath;       /* free to any other slab (double-word cmpxchg) */
    uint64_t free_frozen;         /* slow free to a slab owned (frozen) by some thread */
    uint64_t free_add_partial;    /* slow free moved a full slab onto the cache's partial list */
    uint64_t free_remove_partial; /* slow free emptied a slab and took it off the partial list */
    uint64_t alloc_from_partial;  /* cpu slab taken from the cache's (locked) partial list */
    uint64_t alloc_slab;          /* new slab allocated from the page layer */
    uint64_t alloc_refill;        /* cpu freelist refilled from remote frees to the cpu slab */
    uint64_t free_slab;           /* slab given back to the page layer (and the OS) */
    uint64_t cpuslab_flush;       /* cpu slab flushed (thread exit, destroy, shrink) */
    uint64_t deactivate_full;     /* cpu slab dropped because it was full */
    uint64_t deactivate_empty;    /* deactivated cpu slab was empty */
    uint64_t deactivate_partial;  /* deactivated cpu slab went to the partial list */
    uint64_t cmpxchg_double_fail; /* (freelist, counters) compare-and-swap retried */
    uint64_t cpu_partial_alloc;   /* cpu slab taken from the thread's partial list */
    uint64_t cpu_partial_free;    /* slow free froze a full slab onto the thread's partial list */
    uint64_t cpu_partial_drain;   /* thread's partial list drained to the cache's list */
    uint64_t alloc_sheaf;         /* slow alloc served from the thread's sheaf (no atomic) */
    uint64_t free_sheaf;          /* slow free put in the thread's sheaf (no atomic) */
    uint64_t sheaf_flush;         /* half a full sheaf freed back to its slabs */
    uint64_t barn_put;            /* a full sheaf exchanged for an empty one at the barn */
    uint64_t barn_get;            /* an empty sheaf refilled with a full one from the barn */
    /* gauges (not events) */
    uint64_t active_objs;         /* objects allocated and not yet freed */
    uint64_t num_objs;            /* object slots in all slabs of the cache */
    uint64_t num_slabs;           /* slabs the cache holds */
    uint64_t partial_slabs;       /* slabs on the cache's partial list */
};
#define KSLAB_NR_EVENT_STATS 24

/* Fill *out for cache s (summing all threads).  Returns 0, or -1 if s is NULL. */
KSLAB_API int kslab_cache_stats(struct kmem_cache *s, struct kslab_stats *out);
/* The name slabinfo shows for s (for merged caches, the cache it merged into). */
KSLAB_API const char *kslab_cache_name(struct kmem_cache *s);
/* The kmalloc cache that serves a request of `size` bytes, NULL if none. */
KSLAB_API struct kmem_cache *kslab_kmalloc_cache(size_t size);
/* Size in bytes of the slab descriptor ("struct slab") in this build. */
KSLAB_API size_t kslab_slab_descriptor_size(void);
/* Pages (4 KiB) currently held by slabs of all caches: the "Slab:" line. */
KSLAB_API uint64_t kslab_pages_in_use(void);
/* The most pages slabs ever held at once. */
KSLAB_API uint64_t kslab_pages_peak(void);
/* Where kslab's memory is (bytes), from the page layer's own counts. */
struct kslab_memory {
    uint64_t slab_bytes;          /* pages held by slabs */
    uint64_t large_bytes;         /* large kmalloc blocks (4 KiB .. 4 MiB), live or in pcp lists */
    uint64_t pcp_bytes;           /* of those, freed blocks in threads' pcp lists */
    uint64_t hot_bytes;           /* freed blocks in the global reserve, not yet given back */
    uint64_t huge_bytes;          /* live huge blocks (above 4 MiB, or grown past 1 MiB by
                                     realloc), each its own mapping */
    uint64_t huge_cached_bytes;   /* freed huge mappings kept for reuse */
    uint64_t arena_bytes;         /* address space reserved in 64 MiB arenas */
    uint64_t mappings;            /* kslab's mappings: arenas, huge blocks, cache, tables */
    uint64_t release_failures;    /* munmap/madvise calls the OS refused (memory kept, retried) */
};
KSLAB_API void kslab_memory(struct kslab_memory *out);
/* Give every empty slab and every cached block back to the OS (malloc_trim).
 * Returns the bytes given back. */
KSLAB_API size_t kslab_trim(void);
/* Testing hook: make the next n mappings of memory from the OS fail (n > 0),
 * all of them until disarmed (n < 0), or none (0).  Reaches the
 * out-of-memory paths in tests. */
KSLAB_API void kslab_test_fail_map(int n);
KSLAB_API void kslab_test_fail_unmap(int n);   /* munmap and madvise, the same way */
/* The shared-memory slabinfo kslabtop and kslabinfo read (kslab-publish.h):
 * write a snapshot now (0), or -1 if publishing is off (KSLAB_PUBLISH=0),
 * another thread is writing one, or the region could not be made.  Without
 * this call a snapshot is written from the slow path once per
 * KSLAB_PUBLISH_MS (100 ms). */
KSLAB_API int kslab_publish(void);
/* The region's file (/dev/shm/kslab.<pid>), NULL before the first snapshot
 * or when publishing is off. */
KSLAB_API const char *kslab_publish_path(void);
/* Name of the back-end in use ("slub"). */
KSLAB_API const char *kslab_allocator_name(void);
/* Where the fast paths' caches live: "percpu" (rseq per-CPU sheaves, the
 * default where available) or "thread" (per-thread; KSLAB_PERCPU=0). */
KSLAB_API const char *kslab_cpu_mode(void);
/* Is p a live object of KFENCE's pool (KSLAB_KFENCE=N: one slow-path
 * allocation in N lands there, between guard pages)? */
KSLAB_API int kslab_kfence_object(const void *p);

#ifdef __cplusplus
}
/* C++ has no _Generic: the args form is an overload. */
static inline struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
                                                   struct kmem_cache_args *args,
                                                   slab_flags_t flags)
{
    return __kmem_cache_create_args(name, size, args, flags);
}
#endif
#endif /* KSLAB_H */
