/*
 * internal.h - kslab's internal types and cross-file functions.
 *
 * Layers (bottom up): prim_linux.c (the only file that talks to the OS) ->
 * pages.c (chunks, arenas, the slab descriptor table, the buddy page
 * allocator, large allocations) -> slub.c (the back-end) -> slab_common.c
 * (cache lifecycle, merging, kmalloc, options, stats, slabinfo, reports).
 */
#ifndef KSLAB_INTERNAL_H
#define KSLAB_INTERNAL_H

#include "kslab.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define noinline    __attribute__((__noinline__))
#define cold_fn     __attribute__((cold, __noinline__))
#define KSLAB_HIDDEN __attribute__((visibility("hidden")))

#define PAGE_SHIFT 12
#define PAGE_SIZE  (1ul << PAGE_SHIFT)
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uintptr_t)(a) - 1))

/* ---- prim: the OS ------------------------------------------------------- */
void *prim_map(size_t bytes);                   /* anonymous RW mapping, NULL on failure */
void *prim_map_aligned(size_t bytes, size_t align);
void prim_unmap(void *p, size_t bytes);
void prim_release(void *p, size_t bytes);       /* give pages back, keep the range (MADV_DONTNEED) */
const char *prim_getenv(const char *name);      /* no allocation: safe before malloc works */
unsigned prim_ncpus(void);
uint64_t prim_now_ns(void);                     /* CLOCK_MONOTONIC */
void prim_write_stderr(const char *s, size_t n);
_Noreturn void prim_abort(void);


/* ---- locks --------------------------------------------------------------- */
/* Test-and-test-and-set spinlock with back-off to sched_yield.  lock() is an
 * acquire (the critical section may not move above it), unlock() a release
 * (writes inside are visible to the next owner). */
typedef struct { atomic_int v; } kslab_lock_t;
#define KSLAB_LOCK_INIT { 0 }
void kslab_lock_slow(kslab_lock_t *l);
static inline void kslab_lock(kslab_lock_t *l)
{
    int z = 0;
    if (likely(atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                     memory_order_relaxed)))
        return;
    kslab_lock_slow(l);
}
static inline void kslab_unlock(kslab_lock_t *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}
static inline void kslab_lock_reinit(kslab_lock_t *l) /* fork child only */
{
    atomic_store_explicit(&l->v, 0, memory_order_relaxed);
}

/* ---- the slab descriptor ("struct slab") ------------------------------- */
/*
 * One descriptor per 4 KiB page, in a table at the start of each 4 MiB
 * arena, like the kernel's struct page array.  The head page's descriptor
 * describes the slab; the others only carry pg_order so that any address
 * finds its head in constant time.
 *
 * Size: 48 bytes (the kernel's is a 64-byte struct page).  freelist and
 * counters come first so that the pair is 16-byte aligned for cmpxchg16b:
 * the table is 16-byte aligned and 48 is a multiple of 16, so the alignment
 * is internal to the layout rather than padding (seeds 003/004).
 */
union slab_counters {
    uint64_t word;
    struct {
        uint32_t inuse;   /* objects not on slab->freelist (all of them while a thread owns it) */
        uint16_t objects; /* objects in the slab */
        uint8_t frozen;   /* owned by one thread: its cpu slab or on its cpu partial list */
        uint8_t order;    /* slab is 2^order pages */
    };
};

struct slab {
    /* ---- updated together with a double-word compare-and-swap ---- */
    void *freelist;                 /* objects freed to the slab (remote frees while frozen) */
    union slab_counters counters;
    /* ---- stable while the slab lives, or protected by a lock ---- */
    struct kmem_cache *cache;       /* every page of a live slab: its cache; NULL otherwise */
    struct slab *next, *prev;       /* cache partial list / cpu partial list / buddy free list */
    uint8_t pg_order;               /* every page of a block: order of the block it belongs to */
    uint8_t pg_state;               /* head page: PG_FREE, PG_HOT, PG_SLAB or PG_META */
    uint16_t pg_pad;
    uint32_t pg_colour;             /* head page: offset of the first object (SLAB colouring) */
#if KSLAB_DESC_PAD
    char desc_pad[KSLAB_DESC_PAD];  /* bench only: the seeds' 64-byte descriptor */
#endif
} __attribute__((aligned(16)));

/* PG_NEW: allocated by a back-end that has not yet published it (walkers
 * such as destroy and SLOB's page scan skip it until pages_publish()). */
enum { PG_META = 0, PG_FREE = 1, PG_SLAB = 2, PG_HOT = 3 /* freed, in the reserve */, PG_NEW = 4 };

#ifndef KSLAB_DESC_PAD
#define KSLAB_DESC_PAD 0
#endif
_Static_assert(sizeof(struct slab) == 48 + KSLAB_DESC_PAD, "struct slab is 48 bytes; seeds 003/004 care");

/* ---- pages: chunks, arenas, page blocks, large allocations -------------- */
#define CHUNK_SHIFT 22                         /* 4 MiB */
#define CHUNK_SIZE  (1ul << CHUNK_SHIFT)
#define ARENA_PAGES (CHUNK_SIZE >> PAGE_SHIFT)  /* 1024 */
#define MAX_PAGE_ORDER 8                       /* largest block: 1 MiB */
#define SLUB_MAX_ORDER 3                       /* preferred largest slab (PAGE_ALLOC_COSTLY_ORDER) */

struct arena {
    struct arena *next_arena;
    uint64_t pad0;
    uint32_t meta_pages;
    uint32_t pad[11];                          /* header is 64 bytes */
    struct slab pages[ARENA_PAGES];
};

enum { CHUNK_NONE = 0, CHUNK_ARENA = 1, CHUNK_LARGE = 2 };

/* The chunk map: a two-level radix table from every 4 MiB chunk of the 47-bit
 * address space covered by a large allocation to its tagged header.
 * Readers use relaxed loads: an object's chunk entry is written before the
 * object is handed out, and the user's own synchronisation orders that
 * hand-out before any free of it by another thread. */
#define MAP_L1_BITS 13
#define MAP_L2_BITS (47 - CHUNK_SHIFT - MAP_L1_BITS)   /* 12 */
extern _Atomic(uintptr_t *) kslab_chunk_map[1u << MAP_L1_BITS];

static inline uintptr_t chunk_entry(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (unlikely(a >> 47))
        return 0;
    uintptr_t *l2 = atomic_load_explicit(&kslab_chunk_map[a >> (CHUNK_SHIFT + MAP_L2_BITS)],
                                         memory_order_relaxed);
    if (unlikely(!l2))
        return 0;
    return __atomic_load_n(&l2[(a >> CHUNK_SHIFT) & ((1u << MAP_L2_BITS) - 1)], __ATOMIC_RELAXED);
}

static inline struct arena *slab_arena(const struct slab *slab)
{
    return (struct arena *)((uintptr_t)slab & ~(CHUNK_SIZE - 1));
}
static inline void *slab_address(const struct slab *slab)
{
    struct arena *a = slab_arena(slab);
    return (char *)a + ((size_t)(slab - a->pages) << PAGE_SHIFT);
}
/* The descriptor of the page holding p, p inside arena a. */
static inline struct slab *page_desc(struct arena *a, const void *p)
{
    return &a->pages[((uintptr_t)p >> PAGE_SHIFT) & (ARENA_PAGES - 1)];
}
static inline struct slab *addr_desc(uintptr_t p)
{
    return page_desc((struct arena *)(p & ~(CHUNK_SIZE - 1)), (const void *)p);
}

/* Arena bitmap: one bit per 4 MiB chunk of the 47-bit address space (4 MiB
 * of zero-fill bss, of which a page is touched per 128 GiB of address space
 * in use).  A set bit means "this chunk is an arena": one load tells kfree()
 * that an address may be a slab object.  Bits are set (relaxed atomic OR)
 * before any object of the arena is handed out and never cleared. */
#define ARENA_BITS_WORDS (1ul << (47 - CHUNK_SHIFT - 6))
extern uint64_t kslab_arena_bits[ARENA_BITS_WORDS];
static inline bool in_arena(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (unlikely(a >> 47))
        return false;
    return (__atomic_load_n(&kslab_arena_bits[a >> (CHUNK_SHIFT + 6)], __ATOMIC_RELAXED) >>
            ((a >> CHUNK_SHIFT) & 63)) & 1;
}

/* A block of 2^order pages owned by `owner`, unpublished (PG_NEW); NULL
 * when out of memory.  The back-end initialises it, then publishes it. */
struct slab *pages_alloc(unsigned order, struct kmem_cache *owner);
void pages_publish(struct slab *head);
void pages_free(struct slab *head, unsigned order);
void pages_release_all(void);                   /* give the reserve of free blocks to the OS */
void pages_for_each_slab(struct kmem_cache *s, void (*fn)(struct slab *, void *), void *arg);
/* Every live slab of s, linked by ->next (for destroy: nothing else may use s). */
struct slab *pages_take_slabs(struct kmem_cache *s);
void pages_atfork_prepare(void);
void pages_atfork_parent(void);
void pages_atfork_child(void);
uint64_t kslab_pages_in_use(void);

struct large_hdr {
    void *base;        /* what kmalloc returned */
    size_t size;       /* bytes mapped for the object (ksize) */
    void *map;         /* start of the mapping */
    size_t map_len;
};
/* Largest request kslab serves (64 TiB): larger sizes and alignments fail
 * with NULL before any arithmetic on them can wrap. */
#define KSLAB_MAX_ALLOC ((size_t)1 << 46)
void *large_alloc(size_t size);
void *large_alloc_aligned(size_t size, size_t align);   /* align: a power of two */
void large_free(struct large_hdr *h, const void *p);

/* ---- caches ---------------------------------------------------------------- */
#define KSLAB_MAX_CACHES 1024
#define KSLAB_NAME_LEN 48

enum stat_item {
    ALLOC_FASTPATH, ALLOC_SLOWPATH, FREE_FASTPATH, FREE_SLOWPATH, FREE_FROZEN,
    FREE_ADD_PARTIAL, FREE_REMOVE_PARTIAL, ALLOC_FROM_PARTIAL, ALLOC_SLAB,
    ALLOC_REFILL, FREE_SLAB, CPUSLAB_FLUSH, DEACTIVATE_FULL, DEACTIVATE_EMPTY,
    DEACTIVATE_PARTIAL, CMPXCHG_DOUBLE_FAIL, CPU_PARTIAL_ALLOC, CPU_PARTIAL_FREE,
    CPU_PARTIAL_DRAIN, ALLOC_SHEAF, FREE_SHEAF, SHEAF_FLUSH, NR_STATS
};
_Static_assert(NR_STATS == KSLAB_NR_EVENT_STATS, "stats enum and struct agree");

struct kmem_cache {
    /* ---- read by the fast paths ---- */
    uint32_t id;               /* index into every thread's cpu arrays */
    uint32_t offset;           /* free pointer offset inside a free object */
    uint32_t size;             /* object stride, metadata included */
    uint32_t object_size;      /* what the user asked for */
    uintptr_t slab_mask;       /* ~(slab bytes - 1): slabs are naturally aligned */
    uint64_t inv;              /* inverse of size's odd part mod 2^64 (see obj_index) */
    uint32_t shift;            /* ctz(size) */
    uint32_t objects;          /* objects per slab */
    uint32_t order;            /* slab = 2^order pages */
    slab_flags_t flags;
    uint32_t align;
    void (*ctor)(void *);

    /* ---- the per-cache ("node") partial list ---- */
    kslab_lock_t list_lock;
    struct slab *partial;      /* doubly linked, protected by list_lock */
    _Atomic unsigned long nr_partial;  /* written under list_lock; read racily as a hint */
    unsigned long min_partial; /* empty slabs kept before returning them to the OS */
    unsigned cpu_partial_slabs;/* limit of each thread's partial list */
    unsigned sheaf_capacity;   /* objects a thread's sheaf holds before it is flushed */

    /* ---- SLAB's node (slab.c); the partial list is ->partial ---- */
    struct slab *slabs_full, *slabs_free;
    unsigned long free_objects;  /* free objects in slabs (not in array caches) */
    unsigned long free_limit;    /* free objects kept in slabs before empty slabs go */
    uint32_t colour, colour_off, colour_next;  /* cache colouring */
    uint32_t limit, batchcount, shared;        /* tunables, as slabinfo shows them */
    uint32_t idx_size;           /* freelist index bytes: 1, 2 (or 4 for the experiment) */
    uint32_t placement;          /* where the index array lives (slab.c) */
    void **shared_array;         /* shared array cache (list_lock) */
    uint32_t shared_avail, shared_limit;
    uint64_t last_reap_ns;
    void *rcu_free;              /* SLOB: freed objects of a SLAB_TYPESAFE_BY_RCU cache */

    /* ---- gauges and totals, relaxed atomics (pure counters, no ordering) ---- */
    _Atomic long nr_slabs;
    _Atomic long total_objects;
    _Atomic uint64_t stat_total[NR_STATS]; /* events of exited threads and thread-less paths */

    /* ---- lifecycle, protected by the cache list mutex ---- */
    uint32_t magic;            /* CACHE_LIVE, CACHE_DEAD after destroy (kept until the
                                * slot is reused: kmem_cache objects are type-safe) */
    int refcount;              /* 1 + number of merged aliases */
    bool is_kmalloc;
    char name[KSLAB_NAME_LEN];
    struct kmem_cache *next_cache;
};

#define CACHE_LIVE 0x6b6d656du   /* "kmem" */
#define CACHE_DEAD 0xdeadcac4u
/* Is s a live cache?  Reports (naming fn) if s is not a cache at all, or a
 * destroyed one.  Costs a bit test and a descriptor load: slow paths only. */
void kslab_check_cache(const char *fn, struct kmem_cache *s);

/*
 * Index of the object starting at offset `off` of a slab, or a number >=
 * s->objects if no object starts there.  With size = d * 2^shift (d odd) and
 * inv = d^-1 mod 2^64: if off = q * size then off * inv = q * 2^shift exactly
 * and the rotate gives q; if size does not divide off, the low bits or the
 * modular product make the result exceed 2^(64-shift) / d >> objects.  One
 * multiply, one rotate, and the caller's single compare checks "inside the
 * slab" and "at an object's start" together (and off may be "negative").
 */
static inline uint64_t obj_index(const struct kmem_cache *s, uintptr_t off)
{
    uint64_t v = (uint64_t)off * s->inv;
    return (v >> s->shift) | (v << ((64 - s->shift) & 63));
}

/* Per-thread, per-cache state.  Hot part: one 32-byte entry per cache
 * (two per cache line) for the fast paths. */
struct kmem_cache_cpu {
    void *freelist;            /* objects the owning thread may take with no atomic */
    uintptr_t slab_base;       /* address of the cpu slab (frozen), or NO_CPU_SLAB */
    uint64_t alloc_fast;       /* ALLOC_FASTPATH events (relaxed atomic store by owner) */
    uint64_t free_fast;        /* FREE_FASTPATH events */
};
/* "No cpu slab": a non-canonical address, so x - slab_base is never the
 * offset of an object for any pointer a program can hold. */
#define NO_CPU_SLAB ((uintptr_t)1 << 63)
#define SHEAF_MAX 120   /* SLUB's sheaf and SLAB's array cache share it */
struct kmem_cache_cpu_cold {
    struct slab *partial;      /* frozen slabs with free objects, singly linked by ->next */
    uint32_t nr_partial;
    uint32_t sheaf_count;      /* objects in sheaf[] */
    uint64_t stat[NR_STATS];   /* slow-path events (ALLOC_FASTPATH/FREE_FASTPATH unused here) */
    void *sheaf[SHEAF_MAX];    /* free objects of any slab of the cache, owned by the thread */
};

struct kslab_thread {
    struct kmem_cache_cpu cpu[KSLAB_MAX_CACHES];   /* must stay first: see kslab_no_thread */
    struct kmem_cache_cpu_cold cold[KSLAB_MAX_CACHES];
    struct kslab_thread *next_thread, *prev_thread;
};

/* The calling thread's state.  Until a thread allocates, this points at
 * kslab_no_thread, whose cpu entries are all empty: the fast paths then fail
 * their single test and the slow path creates the real thread state, so the
 * fast paths need no separate "initialised?" check. */
extern __thread struct kslab_thread *kslab_tls __attribute__((tls_model("initial-exec")));
extern struct kmem_cache_cpu kslab_no_thread[KSLAB_MAX_CACHES];
static inline bool thread_is_real(const struct kslab_thread *t)
{
    return (const void *)t != (const void *)kslab_no_thread;
}
struct kslab_thread *kslab_thread_get(void);   /* creates it; NULL when out of memory */

/* Relaxed load + store, not an atomic RMW: only the owning thread writes a
 * per-thread counter; readers (stats) may run concurrently and need only a
 * value that is not torn. */
static inline void counter_inc(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline void stat_add(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc,
                            enum stat_item si, uint64_t n)
{
    if (cc)
        counter_inc(&cc->stat[si], n);
    else
        atomic_fetch_add_explicit(&s->stat_total[si], n, memory_order_relaxed);
}

/* ---- back-end contract ------------------------------------------------------ */
/*
 * SLUB's fast paths are inlined in the front doors (slub.h).  The other
 * back-ends never fill the per-thread cpu entries, so those fast paths always
 * miss for them and every call reaches a slow path, which dispatches here:
 * choosing a back-end costs SLUB's fast path nothing.
 */
struct kslab_backend {
    const char *name;
    int (*cache_init)(struct kmem_cache *s);            /* layout and order; -1 if impossible */
    void *(*alloc)(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size); /* 0: not kmalloc */
    /* Free x.  want: the cache the caller named (kmem_cache_free), or NULL
     * (kfree).  Bad pointers are reported with fn's name. */
    void (*free)(struct kmem_cache *want, void *x, const char *fn);
    size_t (*ksize)(const void *x);                     /* x is in an arena */
    void (*flush_thread)(struct kslab_thread *t, struct kmem_cache *s); /* NULL: no per-thread state */
    int (*shrink)(struct kmem_cache *s);
    long (*destroy)(struct kmem_cache *s);              /* frees every slab */
    /* slabinfo: tunables limit, batchcount, sharedfactor and sharedavail */
    void (*tunables)(struct kmem_cache *s, unsigned out[4]);
    /* fork: take / release / reset the back-end's own global locks (optional) */
    void (*atfork)(int phase);                  /* 0 prepare, 1 parent, 2 child */
    /* kmalloc with an alignment no size class gives (optional: SLOB) */
    void *(*kmalloc_aligned)(size_t size, size_t align, gfp_t gfp);
};
/* Private gfp bit: "malloc semantics", 16-byte alignment is enough (SLOB
 * otherwise aligns power-of-two kmalloc sizes naturally). */
#define KSLAB_GFP_MALLOC 0x80000000u
/* kmalloc() aligned to `align` (a power of two): the malloc drop-in's core. */
void *kslab_kmalloc_aligned(size_t size, size_t align, gfp_t gfp);
extern const struct kslab_backend *kslab_be;
extern bool kslab_slub;                                 /* kslab_be is SLUB */
extern const struct kslab_backend slub_backend, slab_backend, slob_backend, slob_seg_backend;
unsigned slub_calculate_order(unsigned size);          /* shared by slob-seg */
/* The cache's doubly linked partial list (list_lock held): SLUB and slob-seg. */
void add_partial(struct kmem_cache *s, struct slab *slab);
void remove_partial(struct kmem_cache *s, struct slab *slab);
struct slab *take_empty_partials(struct kmem_cache *s);   /* for shrink */
void *kslab_alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size);
/* Count one allocation or free for the stats (thread-local when possible). */
void kslab_count(struct kmem_cache *s, enum stat_item si, uint64_t n);
struct kmem_cache *kslab_cache_by_id(unsigned id);      /* NULL if none */
bool kslab_object_start(const struct kmem_cache *s, uintptr_t base, const void *x);

/* ---- SLUB ---------------------------------------------------------------- */
void *__slub_alloc(struct kmem_cache *s, gfp_t gfp);
void __slub_free(struct kmem_cache *s, struct slab *slab, void *x);
void *slub_sheaf_top(struct kmem_cache *s);
int slub_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, size_t done, void **p);
void slub_free_detached(struct kmem_cache *s, uintptr_t base, void *head, void *tail,
                        unsigned cnt, bool account);
void slub_free_bulk(struct kmem_cache *s, size_t size, void **p);  /* = kmem_cache_free_bulk */
/* account == false: the objects were already counted as freed (sheaf flush) */
void slub_free_bulk_account(struct kmem_cache *s, size_t size, void **p, bool account);

/* ---- common ------------------------------------------------------------- */
struct kslab_options {
    bool nomerge;
    bool slabinfo_at_exit;
};
extern struct kslab_options kslab_opts;
void kslab_init(void);
extern atomic_int kslab_initialised;
static inline void kslab_ensure_init(void)
{
    /* acquire: pairs with the release at the end of kslab_init(), so a thread
     * that sees 1 also sees the caches it set up. */
    if (unlikely(!atomic_load_explicit(&kslab_initialised, memory_order_acquire)))
        kslab_init();
}
void kslab_for_each_thread(void (*fn)(struct kslab_thread *, void *), void *arg);
_Noreturn void kslab_report(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
void kslab_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
_Noreturn void kslab_bad_free(const char *fn, struct kmem_cache *s, const void *x);

#endif
