/*
 * pages.h - the page layer: 4 MiB arenas with their slab descriptor table
 * ("struct slab", one per page), the buddy page allocator, the chunk map,
 * large allocations.  Address -> descriptor -> cache in constant time.
 * Knows nothing of any back-end: a cache is an opaque owner here.
 */
#ifndef KSLAB_PAGES_H
#define KSLAB_PAGES_H

#include "prim.h"

struct kmem_cache;

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
/* Introspection for the internal tests: the order of the free block holding
 * p (-1 if none), and the number of buddy invariant violations. */
int pages_free_order(const void *p);
long pages_check(void);
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

#endif
