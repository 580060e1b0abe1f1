/*
 * slab_common.h - what every back-end shares (the kernel's mm/slab.h): the
 * common part of struct kmem_cache, the event counters, per-thread state,
 * the back-end contract, and the common layer's functions.
 *
 * Files of the common layer: slab_common.c (options, init, cache
 * lifecycle, merging), kmalloc.c (size classes and every front door:
 * kmem_cache_alloc/free, kmalloc/kfree/ksize/krealloc, the bulk calls),
 * thread.c (thread registry, thread exit, fork), stats.c (counters and
 * slabinfo), report.c (one-line reports, pointer validation).
 *
 * Lock order (every lock in kslab, outermost first)
 * ---------------------------------------------------
 *   init_lock      slab_common.c  first-use initialisation
 *   cache_lock     slab_common.c  the cache list, ids, refcounts
 *   threads_lock   thread.c       the thread registry (and stats readers)
 *   kslab_pcpu_lock percpu.c      per-CPU sheaf arrays; one drainer at a time
 *   s->list_lock   per cache      SLUB/slob-seg partial list; SLAB's three
 *                                 lists and shared array
 *   slob_lock      slob.c         all of SLOB's pages and lists
 *   pages_lock     pages.c        buddy lists, hot reserve, arena list
 *   map_lock       pages.c        creation of chunk-map L2 tables
 * A thread holds at most one list_lock at a time.  SLOB's destroy walker
 * nests slob_lock inside pages_lock (pages_for_each_slab); nothing takes
 * pages_lock under slob_lock.  fork's prepare handler takes them all in
 * this order.
 *
 * The rule about thread state: creating a thread's state
 * (kslab_thread_get) takes threads_lock, so it must never happen while any
 * kslab lock is held.  Only the user-facing alloc/free entry points create
 * it; everything reachable from flush, shrink, destroy, thread exit, fork,
 * counters (kslab_count) and reports uses the state only if it exists.
 */
#ifndef KSLAB_SLAB_COMMON_H
#define KSLAB_SLAB_COMMON_H

#include "pages.h"
#include <time.h>

/* Cache ids: 131 072 caches may exist at once.  Per-thread state is sized by
 * what a thread uses, not by this: the hot entries are a lazily touched
 * reservation (4 MiB of address space, a page per 128 ids touched), the
 * cold ones are created 64 at a time on first use (kslab_thread_for). */
#define KSLAB_MAX_CACHES (1u << 17)
#define KSLAB_NAME_LEN 48

/*
 * Event counters, per cache (the kernel's enum stat_item under
 * CONFIG_SLUB_STATS).  struct kslab_stats in kslab.h lists them in this
 * order.  Which back-ends count which events is said per item.
 */
enum stat_item {
    ALLOC_FASTPATH,      /* all: alloc without a lock or atomic (SLUB cpu freelist, SLAB array cache) */
    ALLOC_SLOWPATH,      /* all: any other allocation (SLOB, slob-seg: every one) */
    FREE_FASTPATH,       /* all: free without a lock or atomic (SLUB own cpu slab, SLAB array cache) */
    FREE_SLOWPATH,       /* all: any other free */
    FREE_FROZEN,         /* SLUB: slow free to a slab some thread owns (frozen) */
    FREE_ADD_PARTIAL,    /* SLUB: slow free moved a full slab onto the cache's partial list */
    FREE_REMOVE_PARTIAL, /* SLUB: slow free emptied a slab and took it off the partial list */
    ALLOC_FROM_PARTIAL,  /* SLUB: cpu slab (in slow start: one object) taken from the cache's partial list */
    ALLOC_SLAB,          /* all: new slab (SLOB: new page) from the page layer */
    ALLOC_REFILL,        /* SLUB: cpu freelist refilled from remote frees to the cpu slab */
    FREE_SLAB,           /* all: slab (page) given back to the page layer */
    CPUSLAB_FLUSH,       /* SLUB: cpu slab flushed (thread exit, destroy, shrink) */
    DEACTIVATE_FULL,     /* SLUB: cpu slab dropped because it was full */
    DEACTIVATE_EMPTY,    /* SLUB: deactivated slab was empty */
    DEACTIVATE_PARTIAL,  /* SLUB: deactivated slab went to the partial list */
    CMPXCHG_DOUBLE_FAIL, /* SLUB: (freelist, counters) compare-and-swap retried */
    CPU_PARTIAL_ALLOC,   /* SLUB: cpu slab taken from the thread's partial list */
    CPU_PARTIAL_FREE,    /* SLUB: slow free froze a full slab onto the thread's partial list */
    CPU_PARTIAL_DRAIN,   /* SLUB: thread's partial list drained to the cache's list */
    ALLOC_SHEAF,         /* SLUB: slow alloc served from the thread's sheaf */
    FREE_SHEAF,          /* SLUB: slow free put into the thread's sheaf */
    SHEAF_FLUSH,         /* SLUB: half of a full sheaf given back to its slabs */
    BARN_PUT,            /* SLUB: a full sheaf exchanged for an empty one at the barn */
    BARN_GET,            /* SLUB: an empty sheaf refilled with a full one from the barn */
    NR_STATS
};
_Static_assert(NR_STATS == KSLAB_NR_EVENT_STATS, "stats enum and struct agree");

/* Room for a back-end's private per-cache struct (slub.h, slab.h, slob.h
 * each assert that theirs fits). */
#define KSLAB_CACHE_PRIV 128

struct pcpu_sheaf;
#define FREEPTR_NONE UINT32_MAX
struct kmem_cache {
    /* ---- read by the fast paths and by pointer validation ---- */
    uint32_t id;               /* index into every thread's cpu arrays */
    uint32_t offset;           /* free pointer offset inside a free object */
    uint32_t size;             /* object stride, metadata included */
    uint32_t object_size;      /* what the user asked for */
    uintptr_t slab_mask;       /* ~(slab bytes - 1): slabs are naturally aligned */
    uint64_t inv;              /* inverse of size's odd part mod 2^64 (see obj_index) */
    uint32_t shift;            /* ctz(size) */
    uint32_t objects;          /* objects per slab (0: SLOB, whose blocks vary) */
    uint8_t order;             /* slab = 2^order pages */
    uint8_t pcpu_cap;          /* objects a per-CPU sheaf holds (0: no per-CPU sheaves) */
    uint16_t sheaf_cap;        /* SLUB: objects a thread's sheaf holds (0: other back-ends) */
    slab_flags_t flags;
    uint32_t align;
    /* CACHE_LIVE; CACHE_DEAD after destroy (kept until the slot is reused:
     * kmem_cache objects are type-safe).  Checked on every slow path, so it
     * sits on the line the fast paths already read. */
    uint32_t magic;
    /* Per-CPU mode (percpu.h): one sheaf per possible CPU, or pcpu_none
     * (release store when created, under kslab_pcpu_lock) */
    struct pcpu_sheaf *pcpu;
    /* The same array for kmem_cache_alloc's and kmem_cache_free's inline
     * paths, which write and claim the free tag at offset 0 with no load
     * of offset: pcpu where offset is 0, pcpu_none (every inline pop and
     * push misses) where a constructor, RCU or a free pointer offset put
     * the tag elsewhere (percpu.h, rule 10).  Set with pcpu. */
    struct pcpu_sheaf *pcpu_tag0;
    _Atomic uint32_t pcpu_uses;   /* slow-start allocations before the sheaves */
    /* Slabs given back so far, from 1 (percpu.h, rule 6): the per-CPU
     * hints' generation.  Atomic builtins; the inline free reads it plainly. */
    uint64_t pcpu_gen;
    void (*ctor)(void *);
    /* Hardened free pointers (slub.h, get_freepointer): a free object's
     * pointer is stored as fp ^ fp_key ^ (bswap(its own address) & fp_swab).
     * fp_key is random per cache; both 0 with KSLAB_HARDENED=0. */
    uint64_t fp_key, fp_swab;
    /* Debugging's object layout (slub_debug.c; offsets from the object,
     * 0: none): the left red zone before it, the object and right red zone
     * (inuse), the two tracks, the kmalloc request size, the metadata's end
     * (padding follows to the slot's end). */
    uint32_t red_left_pad, inuse, track_off, orig_off, meta_end;

    /* ---- the per-cache ("node") slab list: SLUB, slob-seg and SLAB ---- */
    kslab_lock_t list_lock;
    struct slab *partial;      /* doubly linked, protected by list_lock */
    _Atomic unsigned long nr_partial;  /* written under list_lock; read racily as a hint */

    /* ---- gauges and totals, relaxed atomics (pure counters, no ordering) ---- */
    _Atomic long nr_slabs;
    _Atomic long total_objects;
    _Atomic uint64_t stat_total[NR_STATS]; /* events of exited threads and thread-less paths */

    /* ---- lifecycle, protected by cache_lock ---- */
    int refcount;              /* 1 + number of merged aliases */
    bool is_kmalloc;
    uint8_t malloc_class;      /* malloc class i + 1 (kslab_malloc_class_of), or 0 */
    /* struct kmem_cache_args (kmem_cache_create's args form): the usercopy
     * window (recorded, never enforced: no copy_to_user here), the free
     * pointer's place inside the object of a SLAB_TYPESAFE_BY_RCU cache
     * (FREEPTR_NONE: after it), the per-CPU sheaves' capacity (0: kslab's) */
    uint32_t useroffset, usersize, freeptr_req, sheaf_req;
    char name[KSLAB_NAME_LEN];
    struct kmem_cache *next_cache;
    struct kmem_cache **pprev_cache;   /* &previous->next_cache or &cache_list: O(1) unlink */

    /* ---- the back-end's own per-cache state (its *_def struct) ---- */
    _Alignas(16) unsigned char be_private[KSLAB_CACHE_PRIV];
};

/* Hardened free pointers (CONFIG_SLAB_FREELIST_HARDENED): a pointer kept in
 * a free object is stored as fp ^ key, key = fp_key ^ bswap(where it is
 * stored) -- SLUB's and slob-seg's freelists (slub.h), classic SLOB's list
 * of an RCU cache's freed objects (slob.c). */
static inline uint64_t freepointer_key(const struct kmem_cache *s, const void *slot)
{
    return s->fp_key ^ (__builtin_bswap64((uint64_t)(uintptr_t)slot) & s->fp_swab);
}

#define CACHE_LIVE 0x6b6d656du   /* "kmem" */
#define CACHE_DEAD 0xdeadcac4u

/*
 * Index of the object starting at offset `off` of a slab, or a number >=
 * s->objects if no object starts there.  With size = d * 2^shift (d odd) and
 * inv = d^-1 mod 2^64: if off = q * size then off * inv = q * 2^shift exactly
 * and the rotate gives q; if size does not divide off, the low bits or the
 * modular product make the result exceed 2^(64-shift) / d >> objects.  One
 * multiply, one rotate, and the caller's single compare checks "inside the
 * slab" and "at an object's start" together (and off may be "negative").
 */
static inline uint64_t geo_index(uint64_t inv, unsigned shift, uintptr_t off)
{
    uint64_t v = (uint64_t)off * inv;
    return (v >> shift) | (v << ((64 - shift) & 63));
}
static inline uint64_t obj_index(const struct kmem_cache *s, uintptr_t off)
{
    return geo_index(s->inv, s->shift, off);
}

/* A fixed-stride cache's geometry (s->size already set): 2^order-page
 * slabs holding `objects` objects, and the constants obj_index() needs. */
static inline void kslab_set_geometry(struct kmem_cache *s, unsigned order, unsigned objects)
{
    s->order = order;
    s->objects = objects;
    s->slab_mask = ~((PAGE_SIZE << order) - 1);
    s->shift = (uint32_t)__builtin_ctz(s->size);
    uint64_t d = s->size >> s->shift, inv = d;   /* Newton: each step doubles the good bits */
    for (int i = 0; i < 5; i++)
        inv *= 2 - d * inv;
    s->inv = inv;
}

/* Is x the start of an object of s in the slab whose objects begin at base? */
static inline bool object_start(const struct kmem_cache *s, uintptr_t base, const void *x)
{
    return obj_index(s, (uintptr_t)x - base) < s->objects;
}

/* Per-thread, per-cache state.  Hot part: one 32-byte entry per cache
 * (two per cache line) for the fast paths. */
struct kmem_cache_cpu {
    void *freelist;            /* objects the owning thread may take with no atomic */
    uintptr_t slab_base;       /* address of the cpu slab (frozen), or NO_CPU_SLAB (0) */
    uint64_t alloc_fast;       /* ALLOC_FASTPATH events (relaxed atomic store by owner) */
    uint64_t free_fast;        /* FREE_FASTPATH events */
};
/* "No cpu slab": 0, so that an entry never written (zero-filled memory)
 * is empty and per-thread state needs no initialisation.  The inline free
 * test then sees x - 0 = x, which is an object offset (k * size with
 * k < objects) only for x below 1 MiB (KSLAB_MIN_OBJECT): kfree() only
 * tests arena addresses, and kmem_cache_free() sends x below that to its
 * slow path, which reports it. */
#define NO_CPU_SLAB ((uintptr_t)0)
#define KSLAB_MIN_OBJECT ((uintptr_t)PAGE_SIZE << MAX_SLAB_ORDER)
#define SHEAF_MAX 120   /* SLUB's sheaf and SLAB's array cache share it */
struct kmem_cache_cpu_cold {
    struct slab *partial;      /* frozen slabs with free objects, singly linked by ->next */
    uint32_t nr_partial;
    uint32_t sheaf_count;      /* objects in sheaf[] */
    uint64_t stat[NR_STATS];   /* slow-path events (ALLOC_FASTPATH/FREE_FASTPATH unused here) */
    void *sheaf[SHEAF_MAX];    /* free objects of any slab of the cache, owned by the thread */
};

/* x is one of a thread sheaf's (SLAB: array cache's) two top objects:
 * freed last, or the one before (free a, free b, free a) -- a double free. */
static inline bool sheaf_recent(const struct kmem_cache_cpu_cold *cc, const void *x)
{
    unsigned n = cc->sheaf_count;
    return (n && cc->sheaf[n - 1] == x) || (n >= 2 && cc->sheaf[n - 2] == x);
}

#define COLD_CHUNK_SHIFT 6                          /* cold entries come 64 at a time */
#define COLD_CHUNKS (KSLAB_MAX_CACHES >> COLD_CHUNK_SHIFT)
/* A chunk of 64 cold entries (about 84 KiB), mapped by the owner on first
 * use of one of its ids, and which of its entries the owner has used: only
 * those are ever read or written.  The others stay untouched, so a reader
 * that sums every thread's counters (slabinfo, the published snapshot)
 * and a thread's exit cost no memory for ids the thread never used.
 * Reading every entry of a used chunk cost 84 KiB of RSS a chunk on a
 * kernel that backs a read of untouched memory with a page of its own
 * (this project's Zen 5 host: no shared zero page): one snapshot of
 * test_many's 100 000 caches and 200 threads grew RSS by 104 MiB. */
struct kslab_cold_slot {
    /* release stores by the owner, chunk first; acquire loads by readers
     * under threads_lock: a reader that sees an entry's bit sees the chunk,
     * and sees the chunk zeroed (mmap) or written by the owner */
    _Atomic(struct kmem_cache_cpu_cold *) chunk;
    _Atomic uint64_t used;                          /* bit i: entry i is used */
};
struct kslab_thread {
    struct kmem_cache_cpu cpu[KSLAB_MAX_CACHES];   /* must stay first: see kslab_no_thread */
    struct kslab_cold_slot cold[COLD_CHUNKS];
    struct pages_pcp pcp;                          /* freed large blocks (pages.h) */
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
/* The calling thread's state, created on first use (NULL when out of
 * memory).  The test is inline: the slow paths call this on every object. */
struct kslab_thread *kslab_thread_create(void);
static inline struct kslab_thread *kslab_thread_get(void)
{
    struct kslab_thread *t = kslab_tls;
    return likely(thread_is_real(t)) ? t : kslab_thread_create();
}
/* id's entry in its chunk, and its bit in the chunk's used word */
static inline unsigned cold_index(unsigned id)
{
    return id & ((1u << COLD_CHUNK_SHIFT) - 1);
}
static inline uint64_t cold_bit(unsigned id)
{
    return 1ull << cold_index(id);
}
/* t's cold entry for id, or NULL if t never used it.  Any thread may ask
 * (others under threads_lock, while t is alive). */
static inline struct kmem_cache_cpu_cold *kslab_cold_peek(struct kslab_thread *t, unsigned id)
{
    struct kslab_cold_slot *k = &t->cold[id >> COLD_CHUNK_SHIFT];
    if (!(atomic_load_explicit(&k->used, memory_order_acquire) & cold_bit(id)))
        return NULL;
    return atomic_load_explicit(&k->chunk, memory_order_acquire) + cold_index(id);
}
/* The calling thread's state with its cold entry for s created (NULL when
 * out of memory): what every owner slow path starts with. */
struct kslab_thread *kslab_cold_create(struct kslab_thread *t, unsigned id);
static inline struct kslab_thread *kslab_thread_for(struct kmem_cache *s)
{
    struct kslab_thread *t = kslab_tls;
    /* relaxed: only this thread writes its bits */
    if (likely(thread_is_real(t) &&
               (atomic_load_explicit(&t->cold[s->id >> COLD_CHUNK_SHIFT].used,
                                     memory_order_relaxed) & cold_bit(s->id))))
        return t;
    return kslab_cold_create(t, s->id);
}
/* The cold entry of a thread that has it (after kslab_thread_for). */
static inline struct kmem_cache_cpu_cold *kslab_cold(struct kslab_thread *t, unsigned id)
{
    return atomic_load_explicit(&t->cold[id >> COLD_CHUNK_SHIFT].chunk, memory_order_relaxed) +
           cold_index(id);
}

/* The calling thread's pcp lists (pages.h), NULL if it has no state. */
static inline struct pages_pcp *kslab_pcp(void)
{
    struct kslab_thread *t = kslab_tls;
    return likely(thread_is_real(t)) ? &t->pcp : NULL;
}

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

/* ---- the back-end contract ------------------------------------------------ */
/*
 * Every back-end implements this; common code calls only these entries and
 * never asks which back-end runs.  The one exception is SLUB's inline fast
 * path (slub.h) in the front doors: the other back-ends never fill the
 * per-thread cpu entries, so it always misses for them and the call reaches
 * the slow path, which dispatches here.  Choosing a back-end costs SLUB's
 * fast path nothing.
 */
struct kslab_backend {
    const char *name;
    unsigned max_caches;        /* ids it can record (0: KSLAB_MAX_CACHES) */
    int (*cache_init)(struct kmem_cache *s);            /* layout and order; -1 if impossible */
    /* One object.  kmalloc_size: the request (kmalloc), 0 for kmem_cache_alloc. */
    void *(*alloc)(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size);
    /* Free x, which the front door has found in an arena.  s: the cache x
     * must belong to, not yet verified: the one its page descriptor names
     * (kfree: want is NULL) or the one the caller named (kmem_cache_free:
     * want == s).  The back-end verifies the rest (slab, object start,
     * double free); reports name fn. */
    void (*free)(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn);
    size_t (*ksize)(struct kmem_cache *s, const void *x);   /* s from x's page descriptor */
    /* Bulk: p[0..done) are already allocated (by the inline fast path);
     * all or nothing.  free_bulk: want as for free; NULL entries skipped;
     * large kmalloc blocks allowed when want is NULL. */
    int (*alloc_bulk)(struct kmem_cache *s, gfp_t gfp, size_t size, size_t done, void **p);
    void (*free_bulk)(struct kmem_cache *want, size_t size, void **p);
    /* Give t's cached objects and slabs of s back (t may be another thread,
     * stopped or exiting).  NULL: no per-thread state.  Must not create
     * thread state: it runs under cache_lock and threads_lock. */
    void (*flush_thread)(struct kslab_thread *t, struct kmem_cache *s);
    int (*shrink)(struct kmem_cache *s);
    long (*destroy)(struct kmem_cache *s);              /* frees every slab */
    /* slabinfo: tunables limit, batchcount, sharedfactor and sharedavail */
    void (*tunables)(struct kmem_cache *s, unsigned out[4]);
    /* fork: take / release / reset the back-end's own global locks (optional) */
    void (*atfork)(int phase);                  /* 0 prepare, 1 parent, 2 child */
    /* The per-CPU mode's refill and drain (for back-ends with pcpu_cap):
     * objects to and from the cache's shared structures, never touching
     * per-thread state.  cpu_refill gives up to `want` objects, or a whole
     * shared sheaf of up to `max` (0: out of memory); cpu_drain takes n
     * validated objects back (whole: a full sheaf, which may be kept
     * whole for another CPU).  Both move free objects, each carrying its
     * free tag (percpu.h rule 8): cpu_refill writes it on what it takes
     * from slabs, cpu_drain checks and consumes it on what it gives to
     * them. */
    unsigned (*cpu_refill)(struct kmem_cache *s, void **p, unsigned want, unsigned max);
    void (*cpu_drain)(struct kmem_cache *s, void **p, unsigned n, bool whole);
    /* kmalloc with an alignment no size class gives (optional: SLOB) */
    void *(*kmalloc_aligned)(size_t size, size_t align, gfp_t gfp);
    /* slub_debug.h: its slabs for the debug paths (NULL: no debugging) */
    const struct kslab_debug_ops *debug;
};
extern const struct kslab_backend *kslab_be;
extern const struct kslab_backend slub_backend, slab_backend, slob_backend, slob_seg_backend;

/* Private gfp bit: "malloc semantics", 16-byte alignment is enough (SLOB
 * otherwise aligns power-of-two kmalloc sizes naturally). */
#define KSLAB_GFP_MALLOC 0x80000000u

/* ---- common helpers for the back-ends ------------------------------------- */

_Noreturn void kslab_bad_free(const char *fn, struct kmem_cache *want, const void *x);
_Noreturn void kslab_double_free(struct kmem_cache *s, const void *x)
    __attribute__((cold));
/* A free object's free pointer decoded to fp, which is no object of the
 * object's slab: freelist corruption (an overflow or a write after free). */
_Noreturn void kslab_bad_freepointer(struct kmem_cache *s, const void *x, const void *fp)
    __attribute__((cold));
/* A free object's tag word (percpu.h, rule 8) was not its tag when a pop
 * took it: freed twice (its other copy was handed out), or written while
 * free (an overflow into it, a write after free). */
_Noreturn void kslab_bad_tag(struct kmem_cache *s, const void *x, uint64_t word)
    __attribute__((cold));
/* kslab_bad_tag for an object whose claim failed (percpu.h): never returns,
 * but is not declared so, so that an allocation's fast path reaches it by a
 * jump in tail position (a call to a _Noreturn function made every malloc
 * align its stack for the call: two instructions). */
void *kslab_claim_failed(struct kmem_cache *s, void *x);
/* A freelist longer than its slab's object count: a loop (a double free). */
_Noreturn void kslab_freelist_loop(struct kmem_cache *s, const void *slab_base)
    __attribute__((cold));
/* Freelist hardening on (default), or KSLAB_HARDENED=0 (slab_common.c). */
extern bool kslab_hardened;
/* Freelist randomization (slab_common.c): objects per shuffled window of a
 * new slab (KSLAB_RANDOM_WINDOW), and the order a new slab of s hands out
 * its first n objects in: kslab_shuffle_start, then kslab_shuffle_next n
 * times gives each index once (address order where s is not randomized). */
#define RANDOM_WINDOW_MAX 64
extern unsigned kslab_random_window;
struct kslab_shuffle {
    uint32_t n, w, w0, i, m;        /* objects, window, this window's start, next, size */
    uint32_t step, pos;             /* a stride window: its step (0: a permutation), next place */
    bool stride;                    /* windows are strides, not permutations */
    uint8_t merge;                  /* runs merged, KSLAB_RANDOM_PAGES (0: none) */
    uint8_t live;                   /* of a merge: runs with objects left (bits) */
    uint32_t mbase, mm;             /* of a merge: its window's start and size */
    uint16_t cur[8], end[8];        /* of a merge: each run's next and end */
    uint32_t rbytes;                /* random bytes left in r */
    uint64_t r;
    uint8_t idx[RANDOM_WINDOW_MAX]; /* this window's order */
};
/* Objects from..to-1 only (from a multiple of the window: SLUB's lazily
 * carved slabs link theirs a part at a time, kslab_shuffle_window objects
 * or a multiple); kslab_shuffle_start is the range 0..n-1. */
void kslab_shuffle_range(struct kslab_shuffle *it, const struct kmem_cache *s, uint32_t from,
                         uint32_t to);
static inline void kslab_shuffle_start(struct kslab_shuffle *it, const struct kmem_cache *s,
                                       uint32_t n)
{
    kslab_shuffle_range(it, s, 0, n);
}
/* Objects per shuffled window of s's new slabs (1: address order). */
unsigned kslab_shuffle_window(const struct kmem_cache *s);
void kslab_shuffle_window_next(struct kslab_shuffle *it);
/* inline: a new slab links every object through it (a call each cost
 * link_objects as much again) */
static inline uint32_t kslab_shuffle_next(struct kslab_shuffle *it)
{
    if (it->i == it->m)
        kslab_shuffle_window_next(it);
    if (it->step) {
        uint32_t p = it->pos;
        it->i++;
        it->pos += it->step;
        if (it->pos >= it->m)
            it->pos -= it->m;
        return it->w0 + p;
    }
    return it->w0 + it->idx[it->i++];
}
uint64_t kslab_random64(void);
/* KSLAB_ options.  A value an option does not take is never ignored in
 * silence: a warning names the variable and says what is used instead.
 * kslab_env_digits: v's leading decimal digits into *n, *rest after them;
 * false if v starts with none or they overflow. */
bool kslab_env_digits(const char *v, unsigned long *n, const char **rest);
/* A number (decimal digits only), or `unset` if absent or empty. */
unsigned long kslab_env_number(const char *name, unsigned long unset);
/* A switch: 0 or 1, or `unset` if absent or empty; any other value is
 * taken as 1, with a warning. */
int kslab_env_bool(const char *name, int unset);

/* The cache x's page descriptor names (x in an arena, on a page of a live
 * slab or SLOB page); otherwise the one-line report names fn, want and x.
 * The front doors' lookup: the back-ends get its result. */
static inline struct kmem_cache *kslab_page_cache(struct kmem_cache *want, const void *x,
                                                 const char *fn)
{
    if (unlikely(!in_arena(x)))
        kslab_bad_free(fn, want, x);
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (unlikely(!s))
        kslab_bad_free(fn, want, x);
    return s;
}

/* The head descriptor of the slab of s holding x (x in an arena),
 * validated: the slab is a live slab of s and x is at an object's start
 * (kslab_slab_find: NULL if not; kslab_slab_of: reported if not).
 * want: NULL, or s when the caller named s (for the report).  For every
 * back-end with fixed-stride slabs (SLUB, SLAB, slob-seg). */
static inline struct slab *kslab_slab_find_head(const struct kmem_cache *s, struct slab *d,
                                                const void *x);
/* The head descriptor of the slab of s that x would lie in: slabs are
 * naturally aligned, so it is the descriptor of x's slab base.  No check
 * that it is a live slab of s. */
static inline struct slab *kslab_slab_head(const struct kmem_cache *s, const void *x)
{
    return addr_desc((uintptr_t)x & s->slab_mask);
}
static inline struct slab *kslab_slab_find(const struct kmem_cache *s, const void *x)
{
    struct slab *slab = kslab_slab_head(s, x);
    return slab->cache == s ? kslab_slab_find_head(s, slab, x) : NULL;
}
/* A slab's colour (the offset of its first object) on each of its pages,
 * so that kfree can test an object start from x's own page descriptor. */
static inline void slab_colour_set(struct slab *head, unsigned order, uint32_t colour)
{
    for (unsigned i = 0; i < (1u << order); i++)
        head[i].pg_colour = colour;
}
/* The same for a one-page slab whose descriptor d (x's page) already
 * names s. */
static inline struct slab *kslab_slab_find_head(const struct kmem_cache *s, struct slab *d,
                                                const void *x)
{
    return d->pg_state == PG_SLAB &&
                   object_start(s, ((uintptr_t)x & s->slab_mask) + d->pg_colour, x) ? d : NULL;
}
static inline struct slab *kslab_slab_of(struct kmem_cache *want, struct kmem_cache *s,
                                         const void *x, const char *fn)
{
    struct slab *slab = kslab_slab_find(s, x);
    if (unlikely(!slab))
        kslab_bad_free(fn, want, x);
    return slab;
}

/* The slab's own freelist head (relaxed: a hint for the double-free test,
 * or the value a compare-and-swap then checks).  SLUB: the first free
 * object; SLAB: its index array, inside a free object when OBJFREELIST. */
static inline void *slab_freelist(struct slab *slab)
{
    return __atomic_load_n(&slab->freelist, __ATOMIC_RELAXED);
}
/* Its writer's side where the slab's lock (or its owner) orders the change:
 * relaxed, because the per-CPU inline free reads it without the lock. */
static inline void slab_set_freelist(struct slab *slab, void *head)
{
    __atomic_store_n(&slab->freelist, head, __ATOMIC_RELAXED);
}

/* Both: x validated from scratch; *sp is its cache. */
static inline struct slab *kslab_object_slab(struct kmem_cache *want, const void *x,
                                             const char *fn, struct kmem_cache **sp)
{
    struct kmem_cache *s = kslab_page_cache(want, x, fn);
    if (unlikely(want && s != want))
        kslab_bad_free(fn, want, x);
    *sp = s;
    return kslab_slab_of(want, s, x, fn);
}

/* Every live slab of s, linked by ->next (for destroy: nothing else may
 * use s).  A cache without slabs answers without the walk over every page
 * (programs that make and destroy many caches, most never used). */
struct slab *kslab_take_slabs(struct kmem_cache *s);
/* A slab leaves its cache: gauges, FREE_SLAB, pages back to the page layer.
 * cc: the calling thread's entry for s, or NULL. */
void kslab_discard_slab(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, struct slab *slab);
/* Count events for s (thread-local when the thread has state).  Never
 * creates thread state: callable under any lock. */
void kslab_count(struct kmem_cache *s, enum stat_item si, uint64_t n);
/* The generic bulk calls, one object at a time (SLAB, SLOB, slob-seg). */
int kslab_alloc_bulk_each(struct kmem_cache *s, gfp_t gfp, size_t size, size_t done, void **p);
void kslab_free_bulk_each(struct kmem_cache *want, size_t size, void **p);

/* A block that is no slab object (large or huge), freed; anything else is
 * reported naming fn.  For the bulk frees. */
void kslab_free_nonslab(const void *x, const char *fn);

/* ---- the common layer ------------------------------------------------------- */
/* kmalloc classes (kmalloc.c): kmalloc-8 ... kmalloc-8k with -96 and -192. */
enum { KMALLOC_CLASSES = 13 };
extern const uint32_t kmalloc_sizes[KMALLOC_CLASSES];
extern const char *const kmalloc_names[KMALLOC_CLASSES];
/* malloc classes: 88 sizes, 16 .. 128 KiB, each a cache of its own
 * (malloc-16 ... malloc-131072); larger requests are page-class blocks. */
enum { MALLOC_CLASSES = 88 };
#define MALLOC_MAX_CACHE_SIZE 131072u
/* Malloc class i's cache once set up (kslab_malloc_class_setup), else NULL.
 * Written under cache_lock with a release store. */
extern struct kmem_cache *_Atomic kslab_malloc_classes[MALLOC_CLASSES];
unsigned kslab_malloc_class_size(unsigned i);
void kslab_malloc_name(char name[KSLAB_NAME_LEN], unsigned size);   /* malloc-<size> */
/* kmalloc classes 0..12, the kmem_cache cache (13), malloc's unset class
 * (14), then from MALLOC_BOOT the malloc classes, in the order they are set
 * up (slab_common.c). */
enum { MALLOC_UNSET = KMALLOC_CLASSES + 1, MALLOC_BOOT = MALLOC_UNSET + 1,
       BOOT_CACHES = MALLOC_BOOT + MALLOC_CLASSES };
extern struct kmem_cache kslab_boot_caches[BOOT_CACHES];
/* What malloc's tables name for a class not set up yet (slab_common.c,
 * kslab_malloc_class_setup): no sheaves, an id no thread ever fills, so
 * every allocation from it reaches kslab_alloc_slow, which sets the class
 * up. */
#define kslab_malloc_unset (&kslab_boot_caches[MALLOC_UNSET])
/* Malloc class i, set up (on first use), or NULL if cache_lock is busy (or
 * the setup failed): the caller serves that one request elsewhere. */
struct kmem_cache *kslab_malloc_class_setup(unsigned i);
/* s has its sheaf array now (percpu.c): malloc's table names it (kmalloc.c) */
void kslab_malloc_pcpu_published(struct kmem_cache *s);
/* s's index among malloc's classes, or MALLOC_CLASSES if it is none (an
 * exact cache, a kmalloc cache, any other). */
static inline size_t kslab_malloc_class_of(const struct kmem_cache *s)
{
    return s->malloc_class ? s->malloc_class - 1u : MALLOC_CLASSES;
}
/* malloc's kmalloc (the malloc classes, then page classes). */
/* Internal cache flag: malloc's exact cache for a hot size (kmalloc.c),
 * whose slabs are sized for the least waste (slub_exact_order). */
#define SLAB_KSLAB_EXACT 0x20000000u
/* Internal: a copy of a kmalloc class (random kmalloc caches, kmalloc.c):
 * created as the kmalloc classes are (cache_setup's kmalloc). */
#define SLAB_KSLAB_KMALLOC 0x10000000u
void *kslab_malloc(size_t size, gfp_t flags);
void *kslab_malloc_plain(size_t size);      /* malloc's: GFP_KERNEL | KSLAB_GFP_MALLOC */
/* What an inline allocation calls when its pop misses (kmalloc.c). */
typedef void *(*kslab_alloc_miss_fn)(struct kmem_cache *s, gfp_t gfp, size_t size);
void *kslab_malloc_or(size_t size, kslab_alloc_miss_fn miss);
/* Above KMALLOC_MAX_CACHE_SIZE: large blocks and huge mappings (kmalloc.c). */
void *kslab_large_alloc(size_t size, size_t align, gfp_t flags);
/* Random kmalloc caches (KSLAB_RANDOM_KMALLOC; kmalloc.c), created at init. */
void kslab_random_kmalloc_init(void);
void *kslab_huge_resize(const void *x, size_t new_size, bool malloc_classes);
void *kslab_realloc_map(size_t n);

struct kslab_options {
    bool nomerge;
    bool slabinfo_at_exit;
    bool slab_index_int;    /* KSLAB_SLAB_INDEX=int: SLAB's 32-bit freelist indexes */
    /* KSLAB_DECAY_MS: the time base of what kslab gives back by itself --
     * the page layer's decay tick (pages.c, every decay_ns) and SLAB's
     * cache_reap (slab.c, every 2 ticks, the kernel's 2 s).  0: neither
     * runs; memory goes back through the reserve's bounds, shrink and
     * kslab_trim() only, so the same calls hold the same memory however
     * long they take (kslab-replay sets it). */
    uint64_t decay_ns;
};
/* init_on_alloc / init_on_free (KSLAB_INIT_ON_ALLOC=1, KSLAB_INIT_ON_FREE=1;
 * the kernel's boot options): every allocation zeroed, every freed object
 * zeroed before it is free.  Either one selects the per-thread mode, whose
 * out-of-line steps test these (the per-CPU sections do not zero). */
extern bool kslab_init_on_alloc, kslab_init_on_free;
/* Does init_on_free zero s's objects?  Not a constructor's (their state
 * must survive), not a SLAB_TYPESAFE_BY_RCU cache's (readers may still look),
 * not a poisoned one's (poison is the stronger fill): the kernel's rule. */
static inline bool kslab_wants_init_on_free(const struct kmem_cache *s)
{
    return kslab_init_on_free && !s->ctor &&
           !(s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON));
}
/* init_on_alloc likewise skips constructed caches, and RCU and poisoned ones
 * unless the caller asked for zeroes. */
static inline bool kslab_wants_init_on_alloc(const struct kmem_cache *s)
{
    return kslab_init_on_alloc && !s->ctor &&
           !(s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON));
}
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
/* The cache list (slab_common.c), protected by cache_lock. */
extern kslab_lock_t kslab_cache_lock;
/* publish.c: the shared-memory slabinfo for kslabtop/kslabinfo */
void kslab_publish_init(void);
bool kslab_publish_enabled(void);
void kslab_publish_tick_slow(void);
/* Called on every slow-path allocation: on a thread's first and then every
 * 16th, a time-stamp counter read against the next snapshot's deadline
 * (UINT64_MAX when publishing is off), so the clock is read only once per
 * interval.  Relaxed: the deadline is a hint.  Not on every one: rdtsc
 * costs 16 ns here (a VM; back-to-back reads, clock_gettime), and a slow
 * path that read it on every call spent most of its time there -- the
 * per-thread mode's 16-thread server row, where most allocations miss,
 * ran 1.51x as fast once the counter was read one call in 16 (paired
 * median of 5 rounds); a snapshot is then at most 15 slow paths late, on
 * a thread that has them at all (fast paths change no slab). */
extern uint64_t kslab_publish_next_tsc;
extern __thread uint8_t kslab_publish_skip __attribute__((tls_model("initial-exec")));
/* The time-stamp counter; where there is none, the coarse clock in ns (the
 * rate kslab_tsc_after then measures is 1). */
static inline uint64_t kslab_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}
/* The counter ns nanoseconds from now, at the rate measured since start-up
 * (publish.c); *now_ns, if not NULL, gets the coarse clock it read. */
uint64_t kslab_tsc_after(uint64_t ns, uint64_t *now_ns);
static inline void kslab_publish_tick(void)
{
    if (likely(kslab_publish_skip++ & 15))
        return;
    if (likely(kslab_rdtsc() < __atomic_load_n(&kslab_publish_next_tsc, __ATOMIC_RELAXED)))
        return;
    kslab_publish_tick_slow();
}
void kslab_publish_exit(void);
extern struct kmem_cache *kslab_cache_list;
struct kmem_cache *kslab_cache_by_id(unsigned id);      /* NULL if none */
/* Is s a live cache?  Reports (naming fn) if s is not a cache at all, or a
 * destroyed one.  Slow paths only. */
void kslab_check_cache(const char *fn, struct kmem_cache *s);
/* The head descriptor of the slab holding x (x in an arena), or NULL if x
 * is not in a live slab. */
static inline struct slab *arena_slab_of(const void *x)
{
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (!s)
        return NULL;
    struct slab *head = kslab_slab_head(s, x);
    return head->pg_state == PG_SLAB ? head : NULL;
}

void *slob_object_start(const void *x);            /* slob.c: kslab_object_start's SLOB case */
void kslab_nolock_drain(void);                     /* kmalloc.c: kfree_nolock's deferred blocks */
/* RCU, once libkslab-rcu registered it: whether it is, and fn(arg) after
 * a grace period (only when it is). */
bool kslab_rcu_registered(void);
void kslab_rcu_defer(void (*fn)(void *), void *arg);
/* A SLAB_TYPESAFE_BY_RCU cache's empty slabs back after a grace period
 * when RCU is registered (slab_common.c). */
void kslab_rcu_shrink(struct kmem_cache *s, struct slab *(*take)(struct kmem_cache *),
                      void (*discard)(struct kmem_cache *, struct slab *));
/* kmem_cache_shrink without the check: every CPU's sheaf, then the
 * back-end's shrink (never creates thread state; any lock order that
 * allows list_lock). */
int kslab_shrink(struct kmem_cache *s);
void *kslab_alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size);
/* x zeroed (__GFP_ZERO), out of line: a tail call keeps the inline fast
 * paths free of a stack frame. */
void *kslab_zero(struct kmem_cache *s, void *x) __attribute__((cold));
/* kmalloc() aligned to `align` (a power of two): the malloc drop-in's core. */
void *kslab_kmalloc_aligned(size_t size, size_t align, gfp_t gfp);
/* libkslab-malloc's free() (kmalloc.c): kfree, with 1 .. ZERO_SIZE_PTR bad frees. */
void kslab_free(void *x);

/* thread.c */
void kslab_threads_init(void);
void kslab_threads_atfork_init(void);
/* Fold t's counters for s into the cache's totals and clear its entries
 * (threads_lock held). */
void kslab_thread_fold(struct kslab_thread *t, struct kmem_cache *s);
/* Every thread's state, with threads_lock held (fn must not create state). */
void kslab_for_each_thread(void (*fn)(struct kslab_thread *, void *), void *arg);

/* stats.c */
uint64_t kslab_cache_active(struct kmem_cache *s);
/* Bytes of the slots of every cache's allocated objects (mallinfo2's). */
uint64_t kslab_active_bytes(void);

#endif
