/*
 * pages.h - the page layer: 64 MiB arenas with their slab descriptor table
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
 * One descriptor per 4 KiB page, in a table at the start of each 64 MiB
 * arena, like the kernel's struct page array.  The head page's descriptor
 * describes the slab; the others only carry pg_order so that any address
 * finds its head in constant time.
 *
 * Size: 48 bytes (the kernel's is a 64-byte struct page).  freelist and
 * counters sit at offset 16 so that the pair is 16-byte aligned for
 * cmpxchg16b: the table is 16-byte aligned and 48 is a multiple of 16, so
 * the alignment is internal to the layout rather than padding (seeds
 * 003/004).  What kfree reads first (cache, state, colour) is the first 16
 * bytes, which no cache line boundary splits; at offset 0-15 and 32-47 it
 * split half the descriptors, and a random free read two lines.
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
    /* ---- what kfree reads first: one 16-byte-aligned quarter, so never
     *      split across cache lines (the table's stride is 48) ---- */
    struct kmem_cache *cache;       /* every page of a live slab: its cache; NULL otherwise */
    uint8_t pg_order;               /* every page of a block: order of the block it belongs to */
    uint8_t pg_state;               /* head page: PG_FREE, PG_HOT, PG_SLAB or PG_META */
    uint16_t pg_pad;                /* head page: the back-end's list tag (SLAB, SLOB) */
    union {
        uint32_t pg_colour;         /* slab head: offset of the first object (SLAB colouring) */
        uint32_t pg_npages;         /* head of a large, pcp or hot block: its pages */
    };
    /* ---- updated together with a double-word compare-and-swap ---- */
    void *freelist;                 /* objects freed to the slab (remote frees while frozen) */
    union slab_counters counters;
    /* ---- stable while the slab lives, or protected by a lock ---- */
    struct slab *next, *prev;       /* cache partial list / cpu partial list / buddy free list */
#if KSLAB_DESC_PAD
    char desc_pad[KSLAB_DESC_PAD];  /* bench only: the seeds' 64-byte descriptor */
#endif
} __attribute__((aligned(16)));

/*
 * pg_state of a page.  The invariant every walker and the buddy's merge rely
 * on: PG_FREE marks exactly the heads of the blocks on the buddy's free
 * lists, PG_LARGE exactly the heads of live large kmalloc blocks; a page
 * that heads nothing is PG_META.
 *   PG_META   metadata page, or a page inside a block (not its head)
 *   PG_FREE   head of a free buddy block (memory given back to the OS)
 *   PG_SLAB   head of a published slab (or SLOB page)
 *   PG_HOT    head of a freed block in the global reserve (still backed)
 *   PG_NEW    head of a slab a back-end has not yet published: walkers such
 *             as destroy and SLOB's page scan skip it until pages_publish()
 *   PG_LARGE  head of a live large kmalloc block (cache == NULL on its pages)
 *   PG_PCP    head of a freed large block in a thread's pcp list
 */
enum { PG_META = 0, PG_FREE = 1, PG_SLAB = 2, PG_HOT = 3, PG_NEW = 4, PG_LARGE = 5, PG_PCP = 6 };

#ifndef KSLAB_DESC_PAD
#define KSLAB_DESC_PAD 0
#endif
_Static_assert(sizeof(struct slab) == 48 + KSLAB_DESC_PAD, "struct slab is 48 bytes; seeds 003/004 care");
_Static_assert(offsetof(struct slab, freelist) % 16 == 0 && offsetof(struct slab, counters) == offsetof(struct slab, freelist) + 8, "the cmpxchg16b pair");

/* ---- pages: arenas, the buddy, page classes, large and huge blocks ------- */
/*
 * Arenas are 64 MiB, aligned to 64 MiB: a descriptor table (192 pages, 1.2 %)
 * and 16192 pages for the buddy, whose largest block is order 10 (4 MiB, the
 * kernel's MAX_PAGE_ORDER).  Huge blocks (above 4 MiB) are mappings of their
 * own, found through the chunk map at 4 MiB granularity.
 */
#define ARENA_SHIFT 26                         /* 64 MiB */
#define ARENA_SIZE  (1ul << ARENA_SHIFT)
#define ARENA_PAGES (ARENA_SIZE >> PAGE_SHIFT)  /* 16384 */
#define CHUNK_SHIFT 22                         /* chunk map granularity: 4 MiB */
#define CHUNK_SIZE  (1ul << CHUNK_SHIFT)
#define MAX_PAGE_ORDER 10                      /* largest buddy block: 4 MiB */
#define MAX_SLAB_ORDER 8                       /* largest slab (and cache object): 1 MiB */
#define SLUB_MAX_ORDER 3                       /* preferred largest slab (PAGE_ALLOC_COSTLY_ORDER) */

struct arena {
    struct arena *next_arena;
    uint64_t pad0;
    uint32_t meta_pages;
    uint32_t carved;                           /* pages below it are on the buddy (pages_lock) */
    uint32_t pad[10];                          /* header is 64 bytes */
    struct slab pages[ARENA_PAGES];
    /* kfree's map: one word per page of a published slab, its cache and
     * colour (pmap_entry); 0 for every other page.  8 bytes a page where
     * the descriptors take 48, so a free's lookup stays in cache (server
     * rows: the descriptor read was kfree's costliest load). */
    _Alignas(4096) _Atomic uint64_t pmap[ARENA_PAGES];   /* page-aligned: released by whole pages */
};

enum { CHUNK_NONE = 0, CHUNK_HUGE = 2 };

/* The chunk map: a two-level radix table from every 4 MiB chunk of the 47-bit
 * address space covered by a huge block to its tagged header.
 * Readers use relaxed loads: a block's chunk entries are written before the
 * block is handed out, and the user's own synchronisation orders that
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
    return (struct arena *)((uintptr_t)slab & ~(ARENA_SIZE - 1));
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
    return page_desc((struct arena *)(p & ~(ARENA_SIZE - 1)), (const void *)p);
}

/* A page's kfree map entry: the cache in the low 47 bits, the slab's colour
 * (the offset of its first object, below 2^17) above. */
#define PMAP_COLOUR_SHIFT 47
static inline uint64_t pmap_entry(const struct kmem_cache *s, uint32_t colour)
{
    return (uint64_t)(uintptr_t)s | ((uint64_t)colour << PMAP_COLOUR_SHIFT);
}
/* ... or the cache's sheaf array in its place (percpu.h, rule 9; arrays
 * and caches are 64-byte aligned, so bits 0 and 1 are free), in one of two
 * forms.  PMAP_BASE: the array alone, base + 1, for a slab whose first
 * object is at its start (colour 0) of a cache whose free tag is at
 * offset 0 -- every slab of SLUB's caches without a constructor or RCU,
 * the kmalloc and malloc classes among them -- so kfree pushes with
 * neither a colour to subtract nor a tag offset to load.  PMAP_BASE_COL:
 * the array with the slab's colour, for the rest (SLAB's coloured slabs,
 * caches whose tag word is elsewhere), whose push loads both. */
#define PMAP_BASE 1ull
#define PMAP_BASE_COL 2ull
static inline uint64_t pmap_entry_base(const void *base, uint32_t colour, bool plain)
{
    return plain ? (uint64_t)(uintptr_t)base | PMAP_BASE
                 : (uint64_t)(uintptr_t)base | PMAP_BASE_COL |
                           ((uint64_t)colour << PMAP_COLOUR_SHIFT);
}
static inline void *pmap_ptr(uint64_t e)    /* either form */
{
    return (void *)(uintptr_t)(e & ((1ull << PMAP_COLOUR_SHIFT) - 1) &
                               ~(PMAP_BASE | PMAP_BASE_COL));
}
static inline struct kmem_cache *pmap_cache(uint64_t e)   /* PMAP_BASE clear */
{
    return (struct kmem_cache *)(uintptr_t)(e & ((1ull << PMAP_COLOUR_SHIFT) - 1));
}
static inline uint32_t pmap_colour(uint64_t e)
{
    return (uint32_t)(e >> PMAP_COLOUR_SHIFT);
}

/* Arena map: one byte per 64 MiB of the 47-bit address space (2 MiB of
 * zero-fill bss, of which a page is touched per 256 GiB of address space in
 * use).  A non-zero byte means "this is an arena": one load and compare
 * tells kfree() that an address may be a slab object or a large block (a
 * bitmap took three instructions more: the word's index, the bit's, bt).
 * Bytes are set (relaxed atomic store) before anything in the arena is
 * handed out and never cleared. */
#define ARENA_MAP_BYTES (1ul << (47 - ARENA_SHIFT))
extern uint8_t kslab_arena_map[ARENA_MAP_BYTES];
static inline bool arena_bit(uintptr_t a)           /* a < 2^47 */
{
    return __atomic_load_n(&kslab_arena_map[a >> ARENA_SHIFT], __ATOMIC_RELAXED) != 0;
}
/* The arena zone (pages.c): arenas cut in address order from one
 * reservation, [base, base + size), below which sits the zone's kfree map,
 * one word per page of the zone (ZONE_PMAP_BYTES), in place of the arenas'
 * own.  An address in [base, base + used) is in an arena and its map entry
 * is one shift and load away: free() tells both in 7 instructions where the
 * arena map and the arena's own map take 17.  `used` only grows; relaxed:
 * a stale bound sends the caller to the arena map, which is always right.
 * base and size are written once, under pages_lock, before the first
 * arena is added (at start-up: the first allocation makes one); a pointer
 * from an arena was handed out after, so whoever frees it reads them
 * written.  No zone: base is 2^63, so that no address passes. */
#define ZONE_MAX        (1ul << 36)                            /* 64 GiB */
#define ZONE_PMAP_BYTES (ZONE_MAX >> (PAGE_SHIFT - 3))         /* 128 MiB */
/* The granule map, below the page map: one word per 64 KiB of the zone,
 * the page map's entry for a granule that one published slab of order
 * GMAP_ORDER or more covers (a buddy block of that order is aligned to
 * its size, so no other slab shares the granule), 0 for any other.  A
 * free into such a slab reads one word per 64 KiB instead of one per
 * page: 16 times fewer lines for the free paths to keep in cache. */
#define GMAP_SHIFT      16
#define GMAP_ORDER      (GMAP_SHIFT - PAGE_SHIFT)              /* 4 */
#define ZONE_GMAP_BYTES (ZONE_MAX >> (GMAP_SHIFT - 3))         /* 8 MiB */
struct kslab_zone {
    uintptr_t base;
    _Atomic uintptr_t used;         /* bytes given to arenas */
    uintptr_t size;                 /* bytes reserved (after base) */
};
extern struct kslab_zone kslab_zone;
/* The zone's two maps below it, by offset off from the zone's base: the
 * page map's word (one a page) and the granule map's (one per 64 KiB). */
static inline _Atomic uint64_t *pmap_word(uintptr_t base, uintptr_t off)
{
    return (_Atomic uint64_t *)(base - ZONE_PMAP_BYTES) + (off >> PAGE_SHIFT);
}
static inline _Atomic uint64_t *gmap_word(uintptr_t base, uintptr_t off)
{
    return (_Atomic uint64_t *)(base - ZONE_PMAP_BYTES - ZONE_GMAP_BYTES) + (off >> GMAP_SHIFT);
}
/* Address a's words of the zone's maps (a in the reservation). */
static inline _Atomic uint64_t *zone_pmap(uintptr_t a)
{
    return pmap_word(kslab_zone.base, a - kslab_zone.base);
}
static inline _Atomic uint64_t *zone_gmap(uintptr_t a)
{
    return gmap_word(kslab_zone.base, a - kslab_zone.base);
}
/* kfree's first test: is a in an arena of the zone?  If so, *e is its
 * page's map word -- with granule_first, its granule's where that is set,
 * else its page's.  base is read once (with the atomic load of the bound
 * between, GCC read it twice); the word is returned, not its address,
 * which would cost the caller a NULL test.  The granule's word first
 * (free: malloc's classes up to 1 KiB have 64 KiB slabs): one more
 * instruction for every free, one line in cache per 64 KiB of a large
 * slab instead of 16.  kfree reads the page's word alone: the kmalloc
 * classes up to 256 bytes have one-page slabs, whose granule word is 0,
 * and reading it first cost their kfree 6 instructions and two taken
 * jumps (the kmalloc(32) pair, rdtsc, fastest of 21-31 interleaved runs
 * in three series: 13.45 / 13.46 / 13.45 cycles against 13.80 / 13.42 /
 * 13.91 -- within the noise, with fewer instructions). */
static inline bool zone_entry(uintptr_t a, uint64_t *e, bool granule_first)
{
    uintptr_t base = kslab_zone.base, off = a - base;
    if (unlikely(off >= atomic_load_explicit(&kslab_zone.used, memory_order_relaxed)))
        return false;
    /* acquire (a plain load on x86): a word naming a sheaf array (percpu.h,
     * rule 9) may have been rewritten by another free, and the array's
     * header, which the free reads next, was written by whoever created
     * it: pairs with map_write's release */
    if (!granule_first) {
        *e = atomic_load_explicit(pmap_word(base, off), memory_order_acquire);
        return true;
    }
    uint64_t g = atomic_load_explicit(gmap_word(base, off), memory_order_acquire);
    /* The bit of a word naming a sheaf array (PMAP_BASE) is tested
     * first: kfree tests the same bit next, so its hot path is one test
     * (testing g for 0 first cost it a second) */
    if (likely(g & PMAP_BASE))
        *e = g;
    else
        *e = g ? g : atomic_load_explicit(pmap_word(base, off), memory_order_acquire);
    return true;
}
/* Page i's word of kfree's map: arena ar's own, or the zone's. */
static inline _Atomic uint64_t *pmap_slot(struct arena *ar, size_t i)
{
    uintptr_t a = (uintptr_t)ar + (i << PAGE_SHIFT);
    return a - kslab_zone.base < kslab_zone.size ? zone_pmap(a) : &ar->pmap[i];
}
/* Entries are written before the slab's objects are handed out and
 * cleared after the last one came back, as the descriptors' cache; acquire
 * (a plain load on x86) for a word rewritten to name a sheaf array, as in
 * zone_entry. */
static inline uint64_t addr_pmap(uintptr_t p)
{
    struct arena *a = (struct arena *)(p & ~(ARENA_SIZE - 1));
    return atomic_load_explicit(pmap_slot(a, (p >> PAGE_SHIFT) & (ARENA_PAGES - 1)),
                                memory_order_acquire);
}
static inline bool in_arena(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (unlikely(a >> 47))
        return false;
    return arena_bit(a);
}

/* ---- page classes: about four per doubling ---------------------------------- */
/*
 * 1..8 pages, then 10, 12, 14, 16, 20, 24, 28, 32, ... 896, 1024: a block of
 * a class wastes at most 25 % of it.  Every power of two is a class, so a
 * slab of any order and a kernel-style kmalloc_large block (2^order pages)
 * are class blocks too.  The hot reserve and the pcp lists are per class.
 */
#define PAGE_CLASSES 36                        /* classes of 1 .. 1024 pages */
static inline unsigned fls_sz(size_t x)        /* floor(log2(x)), x > 0 */
{
    return 63u - (unsigned)__builtin_clzll(x);
}
/* Round n (>= 1) pages up to the class grid, which continues past 1024
 * pages with four steps per doubling (huge blocks use it too). */
static inline size_t pages_round(size_t n)
{
    if (n <= 8)
        return n;
    size_t step = (size_t)1 << (fls_sz(n - 1) - 2);
    return (n + step - 1) & ~(step - 1);
}
/* Index of the class of n pages (n a class size, 1..1024). */
static inline unsigned page_class(size_t n)
{
    if (n <= 8)
        return (unsigned)n - 1;
    unsigned lg = fls_sz(n - 1);
    return 8 + (lg - 3) * 4 + (unsigned)((n - 1) >> (lg - 2)) - 4;
}
static inline unsigned class_pages(unsigned c)
{
    return c < 8 ? c + 1 : (4 + (c - 8) % 4 + 1) << ((c - 8) / 4 + 1);
}
/* ceil(log2(n)): the buddy order a block of n pages is cut from. */
static inline unsigned pages_order(size_t n)
{
    return n <= 1 ? 0 : fls_sz(n - 1) + 1;
}

/* ---- the per-thread page lists (the kernel's pcp lists) ---------------------- */
/*
 * Recently freed large blocks of every class (up to 1024 pages, 4 MiB),
 * kept by the thread that freed them and reused by it with no lock
 * and no atomic read-modify-write.  At most PCP_HIGH blocks per class and
 * PCP_MAX_PAGES pages in all; beyond, half a class list goes to the
 * global reserve at once (the kernel's pcp->batch).  512 KiB, not 2 MiB:
 * freed blocks a program is done with count in its RSS while they wait.
 * A block bigger than the budget is refused (to the reserve, which gives it
 * back soon) unless the thread showed it reuses its class: it asked for
 * that class again right after one was refused (pcp->lone).  Then one such
 * block may wait alone, so a 1, 2 or 4 MiB malloc+free loop stays here
 * (10 ns; 40 ns through the reserve and its lock, 6 us when the reserve
 * gave each block back), while a buffer grown by realloc through
 * 256 KiB, 512 KiB, 1 MiB leaves nothing parked (sqlite3's peak RSS).
 * Drained at thread exit and by kslab_trim().  The fast paths below are
 * inline; the rest is pages.c's.
 * A double free in sequence is caught (the head is PG_PCP, not PG_LARGE);
 * two threads freeing one block at the same instant are not, as for slab
 * objects on SLUB's fast path.
 */
#define PCP_CLASSES PAGE_CLASSES               /* every class, 1 .. 1024 pages */
#define PCP_HIGH 16
#define PCP_MAX_PAGES 128u                     /* 512 KiB per thread */
#define PCP_MAX_BYTES ((size_t)256 << PAGE_SHIFT)
struct pages_pcp {
    struct slab *list[PCP_CLASSES];            /* LIFO, linked by ->next */
    uint16_t count[PCP_CLASSES];
    uint32_t pages;                            /* owner writes; stats read (relaxed) */
    uint8_t refused;                           /* class + 1 of the last block over the budget */
    uint8_t lone;                              /* class + 1 that may be kept alone over it */
};

/* A block of 2^order pages owned by `owner`, unpublished (PG_NEW); NULL
 * when out of memory.  The back-end initialises it, then publishes it. */
struct slab *pages_alloc(unsigned order, struct kmem_cache *owner);
void pages_publish(struct slab *head);
/* x's slab of s gets its map words again, now that s has its sheaf array
 * (percpu.h, rule 9; kfree, for a slab published before). */
void pages_map_upgrade(struct kmem_cache *s, const void *x);
void pages_free(struct slab *head, unsigned order);
void pages_for_each_slab(struct kmem_cache *s, void (*fn)(struct slab *, void *), void *arg);

/* Large blocks: n pages (a class size, 1..1024) from the buddy, aligned to
 * 2^max(pages_order(n), align_order) pages, through pcp (may be NULL).
 * zero: the block reads as zeroes.  NULL when out of memory. */
void *pages_large_alloc(struct pages_pcp *pcp, size_t n, unsigned align_order, bool zero);
/* The head descriptor if x is the start of a live large block, else NULL;
 * d is x's page descriptor. */
static inline struct slab *pages_large_head_of(const void *x, struct slab *d)
{
    if ((uintptr_t)x & (PAGE_SIZE - 1))
        return NULL;
    return __atomic_load_n(&d->pg_state, __ATOMIC_RELAXED) == PG_LARGE ? d : NULL;
}
static inline struct slab *pages_large_head(const void *x)
{
    return pages_large_head_of(x, addr_desc((uintptr_t)x));
}
static inline size_t pages_large_size(const struct slab *head)
{
    return (size_t)head->pg_npages << PAGE_SHIFT;
}
/* The pcp fast paths: a block of class c from the thread's list (NULL if
 * empty), and a freed live block onto it (false if the list is full or the
 * class not cached: then pages_large_free). */
/* The page class of pages_round(n), for n = 1 .. 256 (filled by
 * pages_init): malloc's pcp fast path finds its class with one load.
 * A large block's head keeps its class in pg_order. */
extern uint8_t pages_class_of[PCP_MAX_BYTES / PAGE_SIZE + 1];
void pages_init(void);
static inline void *pages_pcp_pop(struct pages_pcp *pcp, unsigned c)
{
    struct slab *b = pcp->list[c];
    if (unlikely(!b))
        return NULL;
    pcp->list[c] = b->next;
    pcp->count[c]--;
    __atomic_store_n(&pcp->pages, pcp->pages - b->pg_npages, __ATOMIC_RELAXED);
    __atomic_store_n(&b->pg_state, PG_LARGE, __ATOMIC_RELAXED);
    return slab_address(b);
}
static inline bool pages_pcp_push(struct pages_pcp *pcp, struct slab *b)
{
    uint32_t n = b->pg_npages;
    unsigned c = b->pg_order;
    if (unlikely(c >= PCP_CLASSES || pcp->count[c] >= PCP_HIGH))
        return false;
    if (unlikely(pcp->pages + n > PCP_MAX_PAGES)) {
        if (pcp->pages || pcp->lone != c + 1) {
            pcp->refused = (uint8_t)(c + 1);
            return false;
        }
    }
    __atomic_store_n(&b->pg_state, PG_PCP, __ATOMIC_RELAXED);
    b->next = pcp->list[c];
    pcp->list[c] = b;
    pcp->count[c]++;
    __atomic_store_n(&pcp->pages, pcp->pages + n, __ATOMIC_RELAXED);
    return true;
}
/* Free a live large block (head from pages_large_head).  Returns false if
 * another thread freed it at the same moment (a double free). */
bool pages_large_free(struct pages_pcp *pcp, struct slab *head);
void pages_pcp_drain(struct pages_pcp *pcp);
/* The live large block whose pages hold x (x in an arena), or NULL: reports only. */
struct slab *pages_large_containing(const void *x);

/* Give every cached block back to the OS: the hot reserve and the huge
 * mapping cache.  Returns the bytes released. */
size_t pages_release_all(void);
/* kslab_memory()'s page-layer part (pcp_bytes is the caller's). */
struct kslab_memory;
void pages_memory(struct kslab_memory *m);
/* Introspection for the internal tests: the order of the free block holding
 * p (-1 if none), and the number of buddy invariant violations. */
int pages_free_order(const void *p);
long pages_check(void);
/* Pages of the newest arena not yet carved onto the buddy (*first, if not
 * NULL: the first one's descriptor, or NULL). */
unsigned pages_uncarved(const struct slab **first);
void pages_atfork(int phase);                   /* kslab_lock_atfork's phases */
uint64_t kslab_pages_in_use(void);

/* ---- huge blocks: mappings of their own ------------------------------------- */
/*
 * Above 4 MiB a block is its own mapping, 4 MiB aligned and named in the
 * chunk map.  Freed mappings are kept in a small cache (HUGE_CACHE_MAX
 * mappings, HUGE_CACHE_BYTES in all, released after a second unused) and
 * reused; resizing moves pages with mremap, never copies.
 */
struct huge_hdr {
    void *base;        /* the block: the start of its mapping, chunk aligned */
    size_t size;       /* bytes mapped (ksize) */
    struct huge_hdr *next;   /* mapping cache list */
    uint32_t tick;     /* when it entered the cache */
    uint8_t cached;    /* in the cache (its chunk entries stay): relaxed atomic */
    uint8_t counted;   /* made by huge_alloc_realloc: counted in its bound */
};
#define HUGE_CACHE_MAX 8
#define HUGE_CACHE_BYTES ((size_t)64 << 20)
/* Largest request kslab serves (64 TiB): larger sizes and alignments fail
 * with NULL before any arithmetic on them can wrap. */
#define KSLAB_MAX_ALLOC ((size_t)1 << 46)
/* bytes: a multiple of the page size; align: a power of two or 0. */
void *huge_alloc(size_t bytes, size_t align, bool zero);
/* A mapping for a block that realloc grows past REALLOC_MAP_MIN (malloc.c),
 * so that its next growths move pages (mremap) instead of copying them;
 * NULL when REALLOC_MAPS_MAX such mappings are live (the mapping count
 * stays bounded: the caller copies in the arenas) or the OS refuses. */
#define REALLOC_MAP_MIN  ((size_t)1 << 20)
#define REALLOC_MAPS_MAX 64u
void *huge_alloc_realloc(size_t bytes);
/* The huge block whose mapping holds x (live or cached), or NULL. */
static inline struct huge_hdr *huge_of(const void *x)
{
    uintptr_t e = chunk_entry(x);
    return (e & 3) == CHUNK_HUGE ? (struct huge_hdr *)(e & ~(uintptr_t)3) : NULL;
}
static inline bool huge_is_live(const struct huge_hdr *h)
{
    return !__atomic_load_n(&h->cached, __ATOMIC_RELAXED);
}
void huge_free(struct huge_hdr *h);
/* Resize h to bytes (a page multiple, > 4 MiB) without copying: in place,
 * or moved with mremap.  Returns the block's address, NULL if it cannot. */
void *huge_resize(struct huge_hdr *h, size_t bytes);

#endif
