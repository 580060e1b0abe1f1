/*
 * kmalloc.c - the front doors: kmem_cache_alloc/free, the kmalloc family,
 * ksize, krealloc, the bulk calls, and the kmalloc size classes.
 *
 * Each front door is an inline fast path -- the current CPU's sheaf in the
 * per-CPU mode (percpu.h), SLUB's cpu freelist in the per-thread mode
 * (slub.h); a handful of instructions, no lock, no atomic -- and one
 * out-of-line call into the cpu layer or the back-end contract for
 * everything else.  Nothing here asks which back-end runs: for back-ends
 * without per-CPU sheaves (SLOB, slob-seg) the per-CPU test always misses,
 * and in the per-thread mode SLUB's does for all but SLUB.
 */
#define _GNU_SOURCE
#include "slub.h"
#include "percpu.h"
#include "slub_debug.h"
#include "kfence.h"

#include <errno.h>

/*
 * The two modes' inline fast paths.  Per-CPU (percpu.h): pop or push the
 * current CPU's sheaf in a restartable sequence, a freed pointer validated
 * first: kmem_cache_free by the CPU's hint (percpu.h, rule 6) or the full
 * check (pcpu_free_hinted), kfree from kfree's map (pcpu_kfree).
 * Per-thread (slub.h): the thread's cpu freelist.  The mode is one
 * predictable branch on a global set once at start-up.
 */
/* Does init_on_free zero s's objects here?  Back-ends with fixed-stride
 * slabs (classic SLOB zeroes its blocks itself); debugged caches poison or
 * check instead. */
static bool init_on_free_zeroes(const struct kmem_cache *s)
{
    return s->objects && kslab_wants_init_on_free(s) && !kslab_debugged(s);
}

/* init_on_free's other half (the kernel's maybe_wipe_obj_freeptr): an
 * object zeroed when freed then carried its free pointer; wipe it when it
 * is handed out. */
static void init_on_free_wipe(struct kmem_cache *s, void *x)
{
    if (init_on_free_zeroes(s) && s->offset + sizeof(void *) <= s->object_size)
        memset((char *)x + s->offset, 0, sizeof(void *));
}

/* init_on_alloc/free run in this mode only (slab_common.h): every back-end
 * and path zeroes for __GFP_ZERO, the debug paths within the request. */
static noinline void *thread_alloc_init(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (kslab_init_on_alloc && kslab_wants_init_on_alloc(s))
        gfp |= __GFP_ZERO;
    void *x = slub_alloc(s, gfp, kmalloc_size);
    if (kslab_init_on_free && x)
        init_on_free_wipe(s, x);
    return x;
}

/* The per-thread pop, apart: with the hardened free pointer's decode and
 * check it needs two registers more than the caller-saved ones, and inline
 * it made every per-CPU allocation save and restore them too (4
 * instructions on the default mode's path, to spare the fallback mode a
 * jump). */
static noinline void *thread_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    /* both tail calls: no frame of its own (the debug reports skip frames
     * by name, and a static function has none of its own) */
    if (unlikely(kslab_init_on_alloc | kslab_init_on_free))
        return thread_alloc_init(s, gfp, kmalloc_size);
    return slub_alloc(s, gfp, kmalloc_size);
}

/* x, just popped from s's sheaf: its free tag claimed at toff in the
 * form how (percpu.h, rule 8; a report if it was not there), zeroed for
 * __GFP_ZERO. */
static inline __attribute__((always_inline)) void *
popped(struct kmem_cache *s, void *x, gfp_t gfp, uintptr_t toff, enum pcpu_claim how)
{
    if (unlikely(pcpu_tag_unclaimed_at(x, toff, how)))
        return kslab_claim_failed(s, x);
    if (unlikely(gfp & __GFP_ZERO))
        return kslab_zero(s, x);
    return x;
}

/* The inline allocation: the per-CPU pop through s->pcpu_tag0, the free
 * tag claimed at offset 0 (percpu.h, rules 8 and 10), else a tail call to
 * pcpu_miss (sheaf empty, or a cache whose tag is elsewhere) or
 * thread_miss (the per-thread mode). */
static inline __attribute__((always_inline)) void *
fast_alloc_or(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size, kslab_alloc_miss_fn pcpu_miss,
              kslab_alloc_miss_fn thread_miss, enum pcpu_claim how)
{
    long off = kslab_rseq_off;
    if (likely(off != KSLAB_RSEQ_NONE)) {       /* kslab_percpu */
        void *x = pcpu_pop_tag0(s, off);
        if (unlikely(!x))
            return pcpu_miss(s, gfp, kmalloc_size);
        return popped(s, x, gfp, 0, how);
    }
    return thread_miss(s, gfp, kmalloc_size);
}

static inline __attribute__((always_inline)) void *fast_alloc(struct kmem_cache *s, gfp_t gfp,
                                                            size_t kmalloc_size)
{
    return fast_alloc_or(s, gfp, kmalloc_size, kslab_alloc_slow, thread_alloc, PCPU_CLAIM_CMP);
}

/* kfree's per-CPU push.  x's page is a page of a published slab of s
 * (kfree's map said so, with the slab's colour), so only "an object's
 * start" is left to test.  The sheaf-top test in the push catches the
 * immediate double free, the free tag (percpu.h, rule 8) the others when
 * the object would be handed out again; a one-page slab's free-head test is no longer
 * made here: it read the page descriptor, 48 bytes a page, which the map
 * exists to avoid (its cost: the server rows' costliest load).  false: the
 * slow path decides. */
static inline __attribute__((always_inline)) bool pcpu_kfree(struct kmem_cache *s,
                                                             uint32_t colour, void *x)
{
    /* x an object of s.  A cache without sheaves (debugged, slob-seg) is
     * its back-end's, and x's tag word its own (percpu.h, rule 8): its
     * sheaves' cap is 0, so the push misses before it writes the tag. */
    if (!object_start(s, ((uintptr_t)x & s->slab_mask) + colour, x))
        return false;
    return pcpu_push(s, x);
}

/* Everything the inline paths did not take, to the cpu layer (per-CPU
 * mode, back-ends with per-CPU sheaves) or the back-end. */
static void *backend_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (pcpu_cache(s))
        return kslab_pcpu_alloc(s, gfp);
    return kslab_be->alloc(s, gfp, kmalloc_size);
}

/* init_on_free: x (an object of s, validated first: never a write through
 * a bad pointer) zeroed before it is free. */
static noinline void init_on_free(struct kmem_cache *want, struct kmem_cache *s, void *x,
                                  const char *fn)
{
    if (init_on_free_zeroes(s)) {
        kslab_slab_of(want, s, x, fn);
        memset(x, 0, s->object_size);
    }
}

static void backend_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    if (unlikely(kslab_init_on_free))
        init_on_free(want, s, x, fn);
    if (pcpu_cache(s)) {
        if (slab_freelist(kslab_slab_of(want, s, x, fn)) == x)
            kslab_double_free(s, x);
        kslab_pcpu_free(s, x);
        return;
    }
    if (slub_sheaf_push(s, x))      /* checks that x is an object of s */
        return;
    kslab_be->free(want, s, x, fn);
}

/* kmalloc classes: index -> size; the kernel's kmalloc-96 and -192 included. */
const uint32_t kmalloc_sizes[KMALLOC_CLASSES] = {
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192
};
const char *const kmalloc_names[KMALLOC_CLASSES] = {
    "kmalloc-8", "kmalloc-16", "kmalloc-32", "kmalloc-64", "kmalloc-96", "kmalloc-128",
    "kmalloc-192", "kmalloc-256", "kmalloc-512", "kmalloc-1k", "kmalloc-2k", "kmalloc-4k",
    "kmalloc-8k"
};
/* Requests up to 192 bytes: class by (size - 1) / 8, as the kernel's
 * size_index[] table; above, by the power of two. */
static const uint8_t size_index[24] = {
    0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6
};

/* The boot caches (slab_common.c) are static, so the kmalloc fast path
 * loads from a constant table and never checks for initialisation (one load:
 * cheaper than scaling an index by sizeof(struct kmem_cache)). */
static struct kmem_cache *const kmalloc_caches[KMALLOC_CLASSES] = {
    &kslab_boot_caches[0], &kslab_boot_caches[1], &kslab_boot_caches[2],
    &kslab_boot_caches[3], &kslab_boot_caches[4], &kslab_boot_caches[5],
    &kslab_boot_caches[6], &kslab_boot_caches[7], &kslab_boot_caches[8],
    &kslab_boot_caches[9], &kslab_boot_caches[10], &kslab_boot_caches[11],
    &kslab_boot_caches[12]
};

/* malloc classes (the drop-in's): 16 .. 128 by 16, then eight per doubling
 * up to 128 KiB (144, 160, ... 256, 288, ... 1024, 1152, ... 131072), so a
 * block wastes at most a ninth of itself; class i is
 * kslab_malloc_class_size(i).  Above 8 KiB they serve what tcmalloc's and
 * jemalloc's small classes serve: a 16 KiB or 128 KiB malloc+free pair takes
 * the slab fast path, not the page allocator's pcp lists (10.5 -> ~6 ns).
 * Each is a boot cache of its own, malloc-16 ... malloc-131072, kept apart
 * from the kmalloc classes so slabinfo shows what the program's malloc
 * holds; each is set up on its first allocation (slab_common.c,
 * kslab_malloc_class_setup), and malloc finds it through the two tables
 * below. */

unsigned kslab_malloc_class_size(unsigned i)
{
    if (i < 8)
        return 16 * (i + 1);
    return (8u + (i - 8) % 8 + 1) << ((i - 8) / 8 + 4);
}

/* A malloc cache's name, malloc-<size>: the classes' (kslab_init, where
 * snprintf for 88 names was 127 000 instructions of every process's start)
 * and the exact caches' alike. */
void kslab_malloc_name(char name[KSLAB_NAME_LEN], unsigned size)
{
    static const char prefix[] = "malloc-";
    char digits[10];
    unsigned nd = 0;
    do
        digits[nd++] = (char)('0' + size % 10);
    while (size /= 10);
    memcpy(name, prefix, sizeof prefix - 1);
    for (unsigned k = 0; k < nd; k++)
        name[sizeof prefix - 1 + k] = digits[nd - 1 - k];
    name[sizeof prefix - 1 + nd] = '\0';
}

/* malloc's class of n, 1 <= n <= 128 KiB: 16-byte steps to 128, then
 * eight classes per doubling, 8 + (lg - 7) * 8 + ((n - 1) >> (lg - 3)) % 8
 * with lg = floor(log2(n - 1)); kslab_malloc_class_size() is its inverse.
 * Only a class's first allocation computes it (malloc_unset_alloc):
 * malloc finds its cache in the two tables below. */
static unsigned malloc_class_index(size_t n)
{
    if (n <= 128)
        return (unsigned)((n - 1) >> 4);
    unsigned lg = 63u - (unsigned)__builtin_clzll(n - 1);
    return 8 + (lg - 7) * 8 + (unsigned)(((n - 1) >> (lg - 3)) & 7);
}

/* Requests up to 1 KiB (most of any program's) find their cache in a table
 * of cache pointers, one entry per 16 bytes (every class boundary below
 * 1 KiB is a multiple of 16): one load instead of the formula's bsr and
 * shifts (about twenty instructions), and one load, not two, as a table of
 * class numbers indexing a table of caches took (malloc's chain of
 * dependent loads, size to object, is the table, the cache's per-CPU base,
 * the sheaf's header, its slot: in python3 each of them showed in the
 * profile as a stall).  Both tables start naming kslab_malloc_unset for
 * every class: a class is set up on its first allocation, which then names
 * it in them (malloc_unset_alloc). */
static struct kmem_cache *_Atomic malloc_small_cache[64] = {
    [0 ... 63] = kslab_malloc_unset
};
/* ... and, beside it, each entry's sheaf array (percpu.h, rule 9), so
 * that malloc's pop starts from the table's word with no load of the
 * cache's line and of s->pcpu between (rdtsc, random sizes 8-1000 B, 2048
 * live, one thread: 43.2 -> 42.6 cycles a free+malloc step).  pcpu_none
 * (every pop misses, to the slow path with the cache from the table
 * above) until the class has its array.  malloc's pop claims the free
 * tag at offset 0, where every class has it or has no sheaves (the one
 * guard, in cache_setup).  Set under kslab_pcpu_lock, after the entry
 * above names the class. */
static struct pcpu_sheaf *_Atomic malloc_small_pcpu[64] = {
    [0 ... 63] = pcpu_none
};
/* malloc's small classes (1 .. 1024 bytes): one table load */
#define MALLOC_SMALL_MAX 1024
static inline struct kmem_cache *malloc_small_at(size_t i)
{
    /* acquire (a plain load on x86): pairs with the release that named a
     * class set up on first use (malloc_unset_alloc) */
    return atomic_load_explicit(&malloc_small_cache[i], memory_order_acquire);
}
static inline struct kmem_cache *malloc_small(size_t size)
{
    return malloc_small_at((size - 1) >> 4);
}
/* Name s's array in malloc_small_pcpu where malloc_small_cache names s,
 * if s has one (kslab_pcpu_lock held): when pcpu_create has made the
 * array, and when malloc_unset_alloc names s. */
void kslab_malloc_pcpu_published(struct kmem_cache *s)
{
    struct pcpu_sheaf *base = pcpu_base(s);
    if (base == pcpu_none)
        return;
    for (size_t k = 0; k < 64; k++)
        if (atomic_load_explicit(&malloc_small_cache[k], memory_order_relaxed) == s)
            /* release: the array's caps (and the entry naming s, for a
             * claim's report) before a pop that finds the array here */
            atomic_store_explicit(&malloc_small_pcpu[k], base, memory_order_release);
}

/* fast_alloc_or for malloc's small table entry i: the pop from the
 * entry's array (malloc_small_pcpu), the tag at offset 0, and the cache
 * itself loaded only where a miss or a report needs it. */
static inline __attribute__((always_inline)) void *
fast_alloc_small(size_t i, gfp_t gfp, size_t kmalloc_size, kslab_alloc_miss_fn pcpu_miss,
                 kslab_alloc_miss_fn thread_miss)
{
    long off = kslab_rseq_off;
    if (likely(off != KSLAB_RSEQ_NONE)) {       /* kslab_percpu */
        /* acquire (a plain load on x86): kslab_malloc_pcpu_published's release */
        struct pcpu_sheaf *base = atomic_load_explicit(&malloc_small_pcpu[i], memory_order_acquire);
        void *x = pcpu_pop_base(base, off);
        if (unlikely(!x))
            return pcpu_miss(malloc_small_at(i), gfp, kmalloc_size);
        /* (a report names the cache from the array's header, which a pop
         * that found an object proves there: i is then dead, and x stays
         * in the return register with no copy) */
        if (unlikely(pcpu_tag_unclaimed_at(x, 0, PCPU_CLAIM_XOR)))   /* percpu.h, rule 8 */
            return kslab_claim_failed(pcpu_hdr_of(base)->s, x);
        if (unlikely(gfp & __GFP_ZERO))
            return kslab_zero(malloc_small_at(i), x);
        return x;
    }
    return thread_miss(malloc_small_at(i), gfp, kmalloc_size);
}

/* Above 1 KiB, where every class boundary is a multiple of 128, a table
 * with one entry per 128 bytes gives the cache itself: one load where the
 * formula took nine instructions (bsr and shifts), and where the split
 * test (below) took four more and a taken branch.  The entries name the
 * classes once set up; a split rewrites those of its class: buckets
 * wholly at or under its size name the exact cache, and the bucket its
 * size falls inside names the class with bit 0 set (the split's limit
 * decides there).  Entries up to 1 KiB are unused. */
static struct kmem_cache *_Atomic malloc_mid_cache[MALLOC_MAX_CACHE_SIZE / 128] = {
    [0 ... MALLOC_MAX_CACHE_SIZE / 128 - 1] = kslab_malloc_unset
};

/* Class i's entries in a table of one entry per `step` bytes (entry k
 * covers sizes step k + 1 .. step k + step), from entry `first`: *k0 ..
 * *k1 - 1, none if the class ends at or below entry first.  Class i holds
 * sizes kslab_malloc_class_size(i - 1) + 1 .. its own. */
static void malloc_class_entries(unsigned i, unsigned step, unsigned first, unsigned *k0,
                                 unsigned *k1)
{
    unsigned lo = i ? kslab_malloc_class_size(i - 1) / step : 0;
    *k0 = lo > first ? lo : first;
    *k1 = kslab_malloc_class_size(i) / step;
}
/* ... in malloc_mid_cache (none for the classes up to 1 KiB) */
static void malloc_mid_buckets(unsigned i, unsigned *b0, unsigned *b1)
{
    malloc_class_entries(i, 128, MALLOC_SMALL_MAX / 128, b0, b1);
}

static inline unsigned kmalloc_index(size_t size)
{
    if (size <= 192)
        return size_index[(size - 1) / 8];
    return (unsigned)(64 - __builtin_clzll(size - 1)) - 1;   /* fls(size - 1) - 1: 256 -> 7 */
}

struct kmem_cache *kslab_kmalloc_cache(size_t size)
{
    if (size == 0 || size > KMALLOC_MAX_CACHE_SIZE)
        return NULL;
    kslab_ensure_init();
    return kmalloc_caches[kmalloc_index(size)];
}

/* __GFP_NOFAIL: retry the back-end until memory comes back. */
static cold_fn void *alloc_nofail(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    for (;;) {
        void *p = backend_alloc(s, gfp, kmalloc_size);
        if (p)
            return p;
        prim_yield();
    }
}

void *kslab_zero(struct kmem_cache *s, void *x)
{
    memset(x, 0, s->object_size);
    return x;
}

/* The slow half of every allocation: a tail call into the back-end.
 * noinline, not cold: it is SLUB's refill and sheaf path, and every
 * allocation of the other back-ends (cold would optimise it for size). */
static inline void *alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    void *x = kslab_percpu ? NULL : slub_sheaf_pop(s);  /* a dead cache's: emptied */
    if (x) {
        if (unlikely(gfp & __GFP_ZERO))
            memset(x, 0, s->object_size);
        return x;
    }
    kslab_ensure_init();          /* first: it reads KSLAB_ALLOCATOR */
    if (unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_alloc", s);
    if (unlikely(gfp & __GFP_NOFAIL))
        return alloc_nofail(s, gfp, kmalloc_size);
    return backend_alloc(s, gfp, kmalloc_size);
}

/* malloc's failures set errno here, on the slow paths, so that malloc is a
 * tail call into kslab_malloc (no wrapper around its fast path). */
static inline void *malloc_errno(void *x, gfp_t gfp)
{
    if (unlikely(!x) && (gfp & KSLAB_GFP_MALLOC))
        errno = ENOMEM;
    return x;
}

/* ---- exact classes for a program's hot sizes ------------------------------------ */
/*
 * Above 1 KiB the malloc classes are an eighth apart, so a program whose
 * blocks are mostly one size just past a class wastes up to a ninth of that
 * memory: sqlite3's pages are 1032 and 4368 bytes (1 KiB and 4 KiB pages
 * plus headers), 12 % and 5 % short of malloc-1152 and malloc-4608, 2 MB of
 * its 25 MB peak.  So each class above 1 KiB learns: once it holds
 * SPLIT_MIN_BYTES of slabs, every refill of its sheaf (one malloc in a
 * sheaf's worth, on the slow path) votes with the size it was asked for,
 * rounded to 16 (Boyer-Moore majority: a candidate and a count).  After
 * SPLIT_SAMPLES votes, if one size won clearly (count at least
 * SPLIT_MAJORITY, so it was most of them) and the class wastes at
 * least a 32nd of itself on it, the class gets an exact cache of that size
 * (an ordinary cache, "malloc-1040" in slabinfo), and from then on malloc
 * sends the sizes between the class below and that size there; otherwise
 * the vote starts again.  At most one exact cache per class, never
 * destroyed; frees need nothing (the page names its cache).  Cost: a
 * load and a compare for mallocs above 1 KiB; the vote is on the slow path.
 * The vote's fields are relaxed atomics: racing votes can be lost, which
 * only delays a decision; one thread creates the cache (busy).
 */
#define SPLIT_SAMPLES 8u
#define SPLIT_MAJORITY 6u
#define SPLIT_MIN_BYTES ((size_t)64 << 10)
struct malloc_split {
    _Atomic size_t limit;               /* 0, or the exact cache's size */
    struct kmem_cache *_Atomic cache;
    _Atomic uint32_t cand, votes, samples;
    atomic_int busy;
};
static struct malloc_split malloc_splits[MALLOC_CLASSES];

/* n's bucket holds its class's split size: the split's limit decides
 * between the split's exact cache and the class, and malloc takes it.  Out
 * of line and reached by a tail call: called from the inline path, the
 * lookup made every malloc above 1 KiB set up a stack frame for it (2
 * instructions), which a tail call spares them. */
static noinline void *malloc_mid_split_alloc(size_t n, struct kmem_cache *class, gfp_t flags)
{
    struct malloc_split *sp = &malloc_splits[kslab_malloc_class_of(class)];
    struct kmem_cache *c = class;
    /* acquire: pairs with the release that published limit after cache */
    if (n <= atomic_load_explicit(&sp->limit, memory_order_acquire))
        c = atomic_load_explicit(&sp->cache, memory_order_relaxed);
    return fast_alloc(c, flags, n);
}

/* n's bucket (n above 1 KiB): the cache malloc(n) takes, or its class + 1
 * where a split cuts the bucket (malloc_mid_split_alloc decides). */
static inline uintptr_t malloc_mid_bucket(size_t n)
{
    /* acquire (a plain load on x86): pairs with the release that put an
     * exact cache there, so the cache is seen initialised */
    return (uintptr_t)atomic_load_explicit(&malloc_mid_cache[(n - 1) >> 7], memory_order_acquire);
}

/* A new split of class i at size (a multiple of 16): the table's buckets of
 * the class up to size send there, the one size falls inside to the test. */
static void malloc_mid_retarget(unsigned i, struct kmem_cache *split, unsigned size)
{
    struct kmem_cache *class = atomic_load_explicit(&kslab_malloc_classes[i], memory_order_relaxed);
    unsigned b0, b1;
    malloc_mid_buckets(i, &b0, &b1);
    for (unsigned b = b0; b < b1; b++) {
        unsigned lo = 128 * b, hi = lo + 128;            /* sizes lo + 1 .. hi */
        if (hi <= size)
            atomic_store_explicit(&malloc_mid_cache[b], split, memory_order_release);
        else if (lo < size)
            atomic_store_explicit(&malloc_mid_cache[b],
                                  (struct kmem_cache *)((uintptr_t)class | 1),
                                  memory_order_release);
    }
}

static cold_fn void malloc_split_create(struct kmem_cache *class, struct malloc_split *sp,
                                        unsigned size)
{
    int idle = 0;
    if (!atomic_compare_exchange_strong_explicit(&sp->busy, &idle, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return;
    if (!atomic_load_explicit(&sp->limit, memory_order_relaxed)) {
        char name[KSLAB_NAME_LEN];
        kslab_malloc_name(name, size);
        struct kmem_cache *c = kmem_cache_create(name, size, 16, SLAB_NO_MERGE | SLAB_KSLAB_EXACT,
                                                 NULL);
        if (c) {
            atomic_store_explicit(&sp->cache, c, memory_order_relaxed);
            /* release: the cache pointer before the limit that sends sizes to it */
            atomic_store_explicit(&sp->limit, size, memory_order_release);
            malloc_mid_retarget((unsigned)(sp - malloc_splits), c, size);
            /* The class's sheaves and barn hold objects freed while the
             * split size still came here; its slabs would stay pinned by
             * them (sqlite3: 140 free malloc-1152 objects, 160 KB, at the
             * peak): back to their slabs, and empty slabs to the pages. */
            kmem_cache_shrink(class);
        }
    }
    atomic_store_explicit(&sp->busy, 0, memory_order_release);
}

/* A refill of malloc class s, asked for n bytes, votes. */
static void malloc_split_vote(struct kmem_cache *s, size_t n)
{
    /* the size first: most refills are of classes up to 1 KiB, and the
     * class number is a load from the descriptor's cold part */
    if (n <= MALLOC_SMALL_MAX)
        return;                         /* the small table's: no splits */
    size_t i = kslab_malloc_class_of(s);
    if (i >= MALLOC_CLASSES)
        return;                         /* not a class (an exact cache) */
    struct malloc_split *sp = &malloc_splits[i];
    if (atomic_load_explicit(&sp->limit, memory_order_relaxed))
        return;
    /* relaxed: a gauge; only a class holding SPLIT_MIN_BYTES of slabs
     * votes (a few blocks of a size are not worth a cache and its slabs) */
    if ((size_t)atomic_load_explicit(&s->total_objects, memory_order_relaxed) * s->size <
        SPLIT_MIN_BYTES)
        return;
    uint32_t r = (uint32_t)ALIGN_UP(n, 16);
    uint32_t cand = atomic_load_explicit(&sp->cand, memory_order_relaxed);
    uint32_t votes = atomic_load_explicit(&sp->votes, memory_order_relaxed);
    if (r == cand)
        votes++;
    else if (votes == 0)
        cand = r, votes = 1;
    else
        votes--;
    atomic_store_explicit(&sp->cand, cand, memory_order_relaxed);
    atomic_store_explicit(&sp->votes, votes, memory_order_relaxed);
    uint32_t n_samples = atomic_load_explicit(&sp->samples, memory_order_relaxed) + 1;
    atomic_store_explicit(&sp->samples, n_samples, memory_order_relaxed);
    if (n_samples < SPLIT_SAMPLES)
        return;
    unsigned class_size = s->object_size;
    if (votes >= SPLIT_MAJORITY && cand < class_size && (class_size - cand) * 32 >= class_size) {
        malloc_split_create(s, sp, cand);
        return;
    }
    atomic_store_explicit(&sp->samples, 0, memory_order_relaxed);   /* again */
    atomic_store_explicit(&sp->votes, 0, memory_order_relaxed);
}

static noinline void *malloc_alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    malloc_split_vote(s, kmalloc_size);
    return malloc_errno(alloc_slow(s, gfp, kmalloc_size), gfp);
}

/* A malloc of n bytes (1 .. 128 KiB) whose class is not set up yet (its
 * table entries name kslab_malloc_unset): set it up (slab_common.c), name
 * it in both tables (release: the cache is initialised before a thread
 * that finds it there uses it), and allocate from it.  If cache_lock was
 * busy, this one block comes from the kmalloc class or the page allocator,
 * which every free, ksize and realloc take as they take any block. */
static cold_fn void *kmalloc_large(size_t size, gfp_t flags);
static cold_fn noinline void *malloc_unset_alloc(gfp_t gfp, size_t n)
{
    unsigned i = malloc_class_index(n);
    struct kmem_cache *s = kslab_malloc_class_setup(i);
    if (!s) {
        if (n <= KMALLOC_MAX_CACHE_SIZE)
            return fast_alloc(kmalloc_caches[kmalloc_index(n)], gfp, n);
        return kmalloc_large(n, gfp);
    }
    unsigned b0, b1;
    if (n <= MALLOC_SMALL_MAX) {
        malloc_class_entries(i, 16, 0, &b0, &b1);
        /* under kslab_pcpu_lock: a pcpu_create of s either sees these
         * entries, or comes first and s's array is named here */
        kslab_lock(&kslab_pcpu_lock);
        for (unsigned k = b0; k < b1; k++)
            atomic_store_explicit(&malloc_small_cache[k], s, memory_order_release);
        kslab_malloc_pcpu_published(s);
        kslab_unlock(&kslab_pcpu_lock);
    }
    malloc_mid_buckets(i, &b0, &b1);
    for (unsigned b = b0; b < b1; b++)
        atomic_store_explicit(&malloc_mid_cache[b], s, memory_order_release);
    return fast_alloc(s, gfp, n);
}

/* ---- kmalloc_nolock / kfree_nolock (6.18) ------------------------------------------- */
/*
 * For any context, a signal handler included (the kernel's: NMI and
 * tracing): no lock, no system call, nothing that can deadlock with the
 * code it interrupted.  kmalloc_nolock only pops the current CPU's sheaf of
 * the kmalloc class (an rseq section: an interrupted one restarts), so it
 * returns NULL when that is empty, in the per-thread mode (whose freelists
 * an interrupted owner may be half-way through), and for debugged caches.
 * kfree_nolock pushes onto the CPU's sheaf when it can; otherwise (full,
 * per-thread mode, a large block, a debugged cache) the block goes on a
 * lock-free stack, linked through its first word, that the next slow-path
 * allocation (or kslab_trim) frees with kfree -- as the kernel defers to
 * irq_work.  Double frees are reported then.
 */
static _Atomic(void *) nolock_deferred;

void kslab_nolock_drain(void)
{
    /* acquire: pairs with the release push, so each link is visible */
    void *x = atomic_exchange_explicit(&nolock_deferred, NULL, memory_order_acquire);
    while (x) {
        void *next = *(void **)x;
        kfree(x);
        x = next;
    }
}

void *kmalloc_nolock(size_t size, gfp_t gfp, int node)
{
    (void)node;
    /* (init_on_alloc/free run in the per-thread mode: nothing to do here) */
    if (size - 1 >= KMALLOC_MAX_CACHE_SIZE || !kslab_percpu ||
        !atomic_load_explicit(&kslab_initialised, memory_order_acquire))
        return NULL;
    struct kmem_cache *s = kmalloc_caches[kmalloc_index(size)];
    if (kslab_debugged(s))
        return NULL;
    void *x = pcpu_pop(s);
    if (x)
        pcpu_tag_claim(s, x);
    if (x && (gfp & __GFP_ZERO))
        memset(x, 0, s->object_size);
    return x;
}

void kfree_nolock(const void *p)
{
    void *x = (void *)p;
    if (ZERO_OR_NULL_PTR(x))
        return;
    uintptr_t a = (uintptr_t)x;
    if (kslab_percpu && a < (1ul << 47) && arena_bit(a)) {
        uint64_t e = addr_pmap(a);         /* kfree_in's lookup, with no slow path */
        if (e & PMAP_BASE) {
            if (pcpu_kfree_push0(e, x))
                return;
        } else if (e & PMAP_BASE_COL) {
            if (pcpu_kfree_push(pmap_ptr(e), pmap_colour(e), x))
                return;
        } else {
            struct kmem_cache *s = e ? pmap_cache(e) : NULL;
            if (s && !kslab_debugged(s) && pcpu_kfree(s, pmap_colour(e), x))
                return;
        }
    }
    void *old = atomic_load_explicit(&nolock_deferred, memory_order_relaxed);
    do
        *(void **)x = old;
    /* release: the link before the push that publishes x */
    while (!atomic_compare_exchange_weak_explicit(&nolock_deferred, &old, x,
                                                  memory_order_release, memory_order_relaxed));
}

/* (the kernel API's path stays a chain of tail calls: no frame of its own
 * in a debugged cache's allocation track) */
noinline void *kslab_alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (unlikely(s == kslab_malloc_unset))
        return malloc_unset_alloc(gfp, kmalloc_size);
    if (unlikely(atomic_load_explicit(&nolock_deferred, memory_order_relaxed)))
        kslab_nolock_drain();
    kslab_publish_tick();           /* once per interval: a snapshot for kslabtop */
    /* KFENCE samples here, off the fast paths (kfence.c) */
    if (unlikely(kslab_kfence_interval) && kslab_kfence_due()) {
        void *x = kslab_kfence_alloc(s, kmalloc_size ? kmalloc_size : s->object_size, gfp);
        if (x)
            return x;
    }
    if (gfp & KSLAB_GFP_MALLOC)
        return malloc_alloc_slow(s, gfp, kmalloc_size);
    return alloc_slow(s, gfp, kmalloc_size);
}

/* kmem_cache_alloc's per-CPU miss.  A cache whose free tag is not at
 * offset 0 (a constructor, RCU, a free pointer offset) misses every
 * inline pop (its pcpu_tag0 is pcpu_none: percpu.h, rule 10), and pops
 * here from its sheaves, claiming the tag at s->offset, before the slow
 * path -- which plain caches reach as they did, by a tail call. */
static noinline void *cache_alloc_miss(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    if (unlikely(s->offset)) {
        void *x = pcpu_pop(s);
        if (likely(x))
            return popped(s, x, gfp, s->offset, PCPU_CLAIM_XOR);
    }
    return kslab_alloc_slow(s, gfp, kmalloc_size);
}

fastpath_fn void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
    return fast_alloc_or(s, flags, 0, cache_alloc_miss, thread_alloc, PCPU_CLAIM_XOR);
}

/* Everything but "x is in the thread's cpu slab of s" (the inline test):
 * the back-end validates and frees.  noinline, not cold, for the reason
 * kslab_alloc_slow gives; kfree's is a bare tail call (no frame). */
static noinline void kmem_cache_free_slow(struct kmem_cache *s, void *x)
{
    if (unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_free", s);
    if (unlikely(!in_arena(x))) {
        if (kslab_kfence_owns(x)) {
            kslab_kfence_free(s, x, "kmem_cache_free");
            return;
        }
        kslab_bad_free("kmem_cache_free", s, x);
    }
    backend_free(s, s, x, "kmem_cache_free");
}

static noinline void kfree_to_backend(struct kmem_cache *s, const void *x)
{
    backend_free(NULL, s, (void *)x, "kfree");
}

/* The per-CPU free whose hint did not vouch for x (percpu.h): apart, so
 * that kmem_cache_free's own path saves no register. */
static noinline void kmem_cache_free_check(struct kmem_cache *s, void *x)
{
    if (!pcpu_free_checked(s, x))
        kmem_cache_free_slow(s, x);
}

/* kmem_cache_free's per-CPU miss: a cache whose free tag is not at offset
 * 0 misses every inline push (percpu.h, rule 10) and pushes here, the tag
 * at s->offset; then, as for every cache, the slow path. */
static noinline void kmem_cache_free_miss(struct kmem_cache *s, void *x)
{
    if (unlikely(s->offset)) {
        enum pcpu_free_result r = pcpu_free_hinted(s, x, false);
        if (likely(r == PCPU_FREE_PUSHED))
            return;
        if (r == PCPU_FREE_CHECK) {
            kmem_cache_free_check(s, x);
            return;
        }
    }
    kmem_cache_free_slow(s, x);
}

fastpath_fn void kmem_cache_free(struct kmem_cache *s, void *x)
{
    /* One compare for NULL and for what the inline test must not see: an
     * empty cpu entry (slab_base 0) would take x below 1 MiB as an object. */
    if (unlikely((uintptr_t)x < KSLAB_MIN_OBJECT)) {
        if (x)
            kmem_cache_free_slow(s, x);
        return;
    }
    if (likely(kslab_percpu)) {
        enum pcpu_free_result r = pcpu_free_hinted(s, x, true);
        if (likely(r == PCPU_FREE_PUSHED))
            return;
        if (r == PCPU_FREE_CHECK)
            kmem_cache_free_check(s, x);
        else
            kmem_cache_free_miss(s, x);
        return;
    } else if (likely(!kslab_init_on_free && slub_free_fast(s, x))) {
        return;
    }
    kmem_cache_free_slow(s, x);
}

/*
 * Everything above KMALLOC_MAX_CACHE_SIZE: the page allocator.  Up to 4 MiB
 * a large block from the buddy: 2^order pages for kmalloc (the kernel's
 * kmalloc_large, naturally aligned), the page class that fits for malloc
 * (KSLAB_GFP_MALLOC).  Above, a huge block: its own mapping, page-rounded
 * for kmalloc, class-rounded for malloc (so realloc growth remaps rarely).
 * align: a power of two (a page or less: nothing beyond what the size gives).
 */
void *kslab_large_alloc(size_t size, size_t align, gfp_t flags)
{
    if (unlikely(size > KSLAB_MAX_ALLOC || align > KSLAB_MAX_ALLOC))
        return NULL;
    kslab_ensure_init();
    size_t n = (size + PAGE_SIZE - 1) >> PAGE_SHIFT;
    if (n == 0)
        n = 1;                      /* size 0 (aligned requests): a unique block */
    bool zero = (flags & __GFP_ZERO) || kslab_init_on_alloc;
    if (n <= ((size_t)1 << MAX_PAGE_ORDER) && align <= (PAGE_SIZE << MAX_PAGE_ORDER)) {
        n = (flags & KSLAB_GFP_MALLOC) ? pages_round(n) : (size_t)1 << pages_order(n);
        unsigned ao = align > PAGE_SIZE ? fls_sz(align) - PAGE_SHIFT : 0;
        struct kslab_thread *t = kslab_thread_get();   /* the pcp lists live there */
        return pages_large_alloc(t ? &t->pcp : NULL, n, ao, zero);
    }
    if (flags & KSLAB_GFP_MALLOC)
        n = pages_round(n);
    else if (!(size & (size - 1)) && size > align)
        align = size;               /* kmalloc: power-of-two sizes naturally aligned */
    return huge_alloc(n << PAGE_SHIFT, align, zero);
}

static cold_fn void *kmalloc_large(size_t size, gfp_t flags)
{
    for (;;) {
        void *p = kslab_large_alloc(size, 0, flags);
        if (p || !(flags & __GFP_NOFAIL))
            return malloc_errno(p, flags);
        prim_yield();
    }
}

/*
 * Random kmalloc caches (the kernel's CONFIG_RANDOM_KMALLOC_CACHES;
 * KSLAB_RANDOM_KMALLOC=N, 1..15): N copies of every kmalloc class
 * (kmalloc-rnd-01-32, ...), never merged, and each kmalloc call site (its
 * return address, hashed with a per-process random seed) always served by
 * one of the N + 1 (0: the class itself).  Objects of different call sites
 * then rarely share slabs, so a spray from one site cannot place an
 * attacker's objects next to another site's.  kmalloc's fast path pays
 * nothing for it: its size test compares with kmalloc_fast_max (one
 * instruction, as against the constant before), which random caches set
 * to 0, so that every request takes kmalloc_other.
 */
/* A private copy of every kmalloc class, named PREFIX-SIZE (kmalloc-rnd-01-32,
 * msg_msg-96): never merged, aligned as the classes, kmalloc caches (krealloc
 * and ksize treat their objects as kmalloc's).  The usercopy window is
 * clipped to each class as the kernel's kmem_buckets_create does.  false
 * (and nothing left created) if a cache cannot be made. */
static bool kmalloc_copies(struct kmem_cache *out[KMALLOC_CLASSES], const char *prefix,
                           slab_flags_t flags, unsigned useroffset, unsigned usersize,
                           void (*ctor)(void *))
{
    for (unsigned i = 0; i < KMALLOC_CLASSES; i++) {
        char name[KSLAB_NAME_LEN];
        unsigned size = kmalloc_sizes[i];
        snprintf(name, sizeof name, "%s-%s", prefix, kmalloc_names[i] + 8);
        struct kmem_cache_args a = { .align = (size & (size - 1)) ? 0 : size, .ctor = ctor };
        if (usersize && useroffset < size) {
            a.useroffset = useroffset;
            a.usersize = size - useroffset < usersize ? size - useroffset : usersize;
        }
        out[i] = __kmem_cache_create_args(name, size, &a,
                                          flags | SLAB_NO_MERGE | SLAB_KSLAB_KMALLOC);
        if (!out[i]) {
            while (i--)
                kmem_cache_destroy(out[i]);
            return false;
        }
    }
    return true;
}

#define RANDOM_KMALLOC_MAX 15
static size_t kmalloc_fast_max = KMALLOC_MAX_CACHE_SIZE;
static unsigned random_kmalloc;             /* N; release-stored after the copies */
static uint64_t random_kmalloc_seed;
static struct kmem_cache *kmalloc_rnd[RANDOM_KMALLOC_MAX][KMALLOC_CLASSES] KSLAB_BIG_BSS;

void kslab_random_kmalloc_init(void)
{
    unsigned long n = kslab_env_number("KSLAB_RANDOM_KMALLOC", 0);
    if (!n)
        return;
    if (n > RANDOM_KMALLOC_MAX) {
        kslab_warn("KSLAB_RANDOM_KMALLOC=%lu: at most %d copies; using %d", n,
                   RANDOM_KMALLOC_MAX, RANDOM_KMALLOC_MAX);
        n = RANDOM_KMALLOC_MAX;
    }
    for (unsigned k = 0; k < n; k++) {
        char prefix[24];
        snprintf(prefix, sizeof prefix, "kmalloc-rnd-%02u", k + 1);
        if (!kmalloc_copies(kmalloc_rnd[k], prefix, 0, 0, 0, NULL)) {
            kslab_warn("KSLAB_RANDOM_KMALLOC: cannot create the %s caches; random caches off",
                       prefix);
            return;
        }
    }
    random_kmalloc_seed = kslab_random64();
    /* release: the copies and the seed before any thread that reads N */
    __atomic_store_n(&random_kmalloc, (unsigned)n, __ATOMIC_RELEASE);
    /* relaxed: a thread that still compares with the old bound serves the
     * class itself, which is one of the N + 1 anyway */
    __atomic_store_n(&kmalloc_fast_max, 0, __ATOMIC_RELAXED);
}

/* The class cache for a request of size (1 .. KMALLOC_MAX_CACHE_SIZE) from
 * call site caller: the class, or its random copy. */
static inline struct kmem_cache *kmalloc_cache_at(size_t size, uintptr_t caller)
{
    unsigned i = kmalloc_index(size);
    /* acquire: pairs with the release above (the copies are visible) */
    unsigned n = __atomic_load_n(&random_kmalloc, __ATOMIC_ACQUIRE);
    if (!n)
        return kmalloc_caches[i];
    uint64_t h = (caller ^ random_kmalloc_seed) * 0x9e3779b97f4a7c15ull;
    unsigned k = (unsigned)(((unsigned __int128)h * (n + 1)) >> 64);   /* 0 .. n */
    return k ? kmalloc_rnd[k - 1][i] : kmalloc_caches[i];
}

/* Everything kmalloc's fast test does not take: size 0, large and huge
 * requests, and every request while random caches are on. */
static noinline void *kmalloc_other(size_t size, gfp_t flags, uintptr_t caller)
{
    if (size == 0)
        return ZERO_SIZE_PTR;
    if (size <= KMALLOC_MAX_CACHE_SIZE)
        return fast_alloc(kmalloc_cache_at(size, caller), flags, size);
    return kmalloc_large(size, flags);
}

/* kmalloc for a named call site (krealloc, kmemdup, kstrdup pass their
 * callers', as the kernel's _RET_IP_). */
static inline void *kmalloc_at(size_t size, gfp_t flags, uintptr_t caller)
{
    if (likely(size - 1 < __atomic_load_n(&kmalloc_fast_max, __ATOMIC_RELAXED)))
        return fast_alloc(kmalloc_caches[kmalloc_index(size)], flags, size);
    return kmalloc_other(size, flags, caller);
}

/* kmalloc_at's body again, not a call to it: inlined, the return address
 * was loaded on the fast path too (one instruction per kmalloc); spelled
 * here, the compiler loads it only on the way to kmalloc_other. */
fastpath_fn void *kmalloc(size_t size, gfp_t flags)
{
    if (likely(size - 1 < __atomic_load_n(&kmalloc_fast_max, __ATOMIC_RELAXED)))
        return fast_alloc(kmalloc_caches[kmalloc_index(size)], flags, size);
    return kmalloc_other(size, flags, (uintptr_t)__builtin_return_address(0));
}

/* ---- kmem_buckets: a private set of kmalloc classes ------------------------ */

_Static_assert(KSLAB_KMALLOC_CLASSES == KMALLOC_CLASSES, "kmem_buckets has a cache per class");

kmem_buckets *kmem_buckets_create(const char *name, slab_flags_t flags, unsigned int useroffset,
                                  unsigned int usersize, void (*ctor)(void *))
{
    kslab_ensure_init();
    if (!name || !*name || strlen(name) + 4 >= KSLAB_NAME_LEN)
        return NULL;
    kmem_buckets *b = kmalloc(sizeof *b, GFP_KERNEL);
    if (b && !kmalloc_copies(*b, name, flags & ~SLAB_KSLAB_KMALLOC, useroffset, usersize, ctor)) {
        kfree(b);
        b = NULL;
    }
    return b;
}

void *kslab_buckets_alloc_caller(kmem_buckets *b, size_t size, gfp_t flags, unsigned long caller)
{
    if (!b)
        return kmalloc_at(size, flags, (uintptr_t)caller);
    if (size == 0)
        return ZERO_SIZE_PTR;
    if (size > KMALLOC_MAX_CACHE_SIZE)
        return kmalloc_large(size, flags);   /* the page allocator's, as the kernel's */
    return fast_alloc((*b)[kmalloc_index(size)], flags, size);
}

void *kmem_buckets_alloc(kmem_buckets *b, size_t size, gfp_t flags)
{
    return kslab_buckets_alloc_caller(b, size, flags,
                                      (unsigned long)__builtin_return_address(0));
}

void *kslab_kmalloc_caller(size_t size, gfp_t flags, unsigned long caller)
{
    return kmalloc_at(size, flags, (uintptr_t)caller);
}

/* malloc above 128 KiB: the thread's pcp list of the page class (one load
 * finds the class), else the page allocator.  0 gets a unique 16-byte
 * object.  Cost: about 30 instructions on a pcp hit. */
static noinline void *kslab_malloc_large(size_t size, gfp_t flags)
{
    if (likely(size - 1 < PCP_MAX_BYTES)) {
        size_t n = ((size - 1) >> PAGE_SHIFT) + 1;
        struct pages_pcp *pcp = kslab_pcp();
        void *p;
        if (likely(pcp) && (p = pages_pcp_pop(pcp, pages_class_of[n]))) {
            if (unlikely(flags & __GFP_ZERO))
                memset(p, 0, pages_large_size(addr_desc((uintptr_t)p)));
            return p;
        }
    }
    if (size == 0)
        return fast_alloc(malloc_small(16), flags, 16);
    return kmalloc_large(size, flags | KSLAB_GFP_MALLOC);
}

/* malloc's kmalloc: the malloc classes, then the page classes. */
static inline __attribute__((always_inline)) void *malloc_classes(size_t size, gfp_t flags)
{
    if (likely(size - 1 < MALLOC_SMALL_MAX))
        return fast_alloc_small((size - 1) >> 4, flags, size, kslab_alloc_slow, thread_alloc);
    if (likely(size - 1 < MALLOC_MAX_CACHE_SIZE)) {
        uintptr_t c = malloc_mid_bucket(size);
        if (unlikely(c & 1))
            return malloc_mid_split_alloc(size, (struct kmem_cache *)(c - 1), flags);
        return fast_alloc((struct kmem_cache *)c, flags, size);
    }
    return kslab_malloc_large(size, flags);
}

fastpath_fn void *kslab_malloc(size_t size, gfp_t flags)
{
    return malloc_classes(size, flags);
}

/* malloc for a caller whose failure is not NULL (C++ operator new,
 * malloc.c): the small classes' per-CPU pop inline, and everything else --
 * a larger size (s NULL), an empty sheaf, the per-thread mode -- a tail
 * call to miss(s, flags, size), which allocates by kslab_malloc and
 * handles its failure.  Testing malloc's result instead made the caller keep the size
 * across the call: operator new cost 4 cycles a pair more than malloc. */
fastpath_fn void *kslab_malloc_or(size_t size, kslab_alloc_miss_fn miss)
{
    const gfp_t flags = GFP_KERNEL | KSLAB_GFP_MALLOC;
    if (likely(size - 1 < MALLOC_SMALL_MAX))
        return fast_alloc_small((size - 1) >> 4, flags, size, miss, miss);
    return miss(NULL, flags, size);
}

/* malloc itself: its flags are constants, so no __GFP_ZERO test after the
 * pop (two instructions a malloc). */
fastpath_fn void *kslab_malloc_plain(size_t size)
{
    return malloc_classes(size, GFP_KERNEL | KSLAB_GFP_MALLOC);
}
#ifdef KSLAB_DROPIN
/* libkslab-malloc's malloc is this function itself, not a jump to it
 * (malloc.c) */
void *malloc(size_t size) __attribute__((alias("kslab_malloc_plain"), visibility("default")));
#endif

/* ---- bulk ---------------------------------------------------------------------- */

static inline int alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
    size_t done = kslab_percpu ? 0 : slub_alloc_bulk_fast(s, size, p);
    if (likely(done == size && !(gfp & __GFP_ZERO)))
        return (int)size;       /* size == 0 returns 0 here */
    kslab_ensure_init();
    if (unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_alloc_bulk", s);
    if (pcpu_cache(s))
        return kslab_pcpu_alloc_bulk(s, gfp, size, p);
    return kslab_be->alloc_bulk(s, gfp, size, done, p);
}

/* The bulk allocation under init_on_alloc or init_on_free (slab_common.h). */
static noinline int alloc_bulk_init(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
    if (kslab_init_on_alloc && kslab_wants_init_on_alloc(s))
        gfp |= __GFP_ZERO;
    int n = alloc_bulk(s, gfp, size, p);
    for (int i = 0; kslab_init_on_free && i < n; i++)
        init_on_free_wipe(s, p[i]);
    return n;
}

int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
    if (unlikely(kslab_init_on_alloc | kslab_init_on_free))
        return alloc_bulk_init(s, gfp, size, p);
    return alloc_bulk(s, gfp, size, p);
}

/* The generic bulk calls: one object at a time through the back-end. */
int kslab_alloc_bulk_each(struct kmem_cache *s, gfp_t gfp, size_t size, size_t done, void **p)
{
    for (; done < size; done++) {      /* all or nothing */
        p[done] = kslab_alloc_slow(s, gfp, 0);
        if (!p[done]) {
            kslab_be->free_bulk(s, done, p);
            return 0;
        }
    }
    return (int)size;
}

void kslab_free_bulk_each(struct kmem_cache *want, size_t size, void **p)
{
    const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
    while (size--) {
        void *x = p[size];
        if (ZERO_OR_NULL_PTR(x))
            continue;
        if (!want && (!in_arena(x) || !addr_desc((uintptr_t)x)->cache))
            kslab_free_nonslab(x, fn);
        else
            backend_free(want, want ? want : kslab_page_cache(NULL, x, fn), x, fn);
    }
}

/* init_on_free for the bulk frees: each slab object validated and zeroed
 * first (large and huge blocks of kfree_bulk are left to their own path). */
static noinline void init_on_free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
    for (size_t i = 0; i < size; i++) {
        void *x = p[i];
        if (ZERO_OR_NULL_PTR(x) || !in_arena(x) || (!want && !addr_desc((uintptr_t)x)->cache))
            continue;
        struct kmem_cache *s = kslab_page_cache(want, x, fn);
        if (!want || s == want)             /* another cache's: the free reports it */
            init_on_free(want, s, x, fn);
    }
}

/* KFENCE's objects of a bulk free: freed one by one, their entries cleared
 * (the bulk paths skip NULL entries). */
static noinline void kfence_free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    for (size_t i = 0; i < size; i++)
        if (kslab_kfence_owns(p[i])) {
            kslab_kfence_free(want, p[i], want ? "kmem_cache_free_bulk" : "kfree_bulk");
            p[i] = NULL;
        }
}

/* Both bulk frees, once the cache is checked and init_on_free done: the
 * per-CPU mode's bulk free meets KFENCE's objects where a pointer is not in
 * an arena (kslab_pcpu_free_bulk); the back-ends' bulk frees, which expect
 * slab objects, get them freed and cleared first. */
static void free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    if (kslab_percpu && kslab_be->cpu_drain) {  /* no init check: an object implies it */
        kslab_pcpu_free_bulk(want, size, p);
        return;
    }
    if (unlikely(kslab_kfence_interval))
        kfence_free_bulk(want, size, p);
    kslab_be->free_bulk(want, size, p);
}

void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p)
{
    if (s && unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_free_bulk", s);
    if (unlikely(kslab_init_on_free))
        init_on_free_bulk(s, size, p);
    free_bulk(s, size, p);
}

void kfree_bulk(size_t size, void **p)
{
    if (unlikely(kslab_init_on_free))
        init_on_free_bulk(NULL, size, p);
    free_bulk(NULL, size, p);
}

/* A block that is no slab object: a large block in an arena (its pages
 * name no cache) or a huge block (in the chunk map); anything else is
 * reported, naming fn. */
noinline void kslab_free_nonslab(const void *x, const char *fn)
{
    if (in_arena(x)) {
        struct slab *h = pages_large_head(x);
        if (likely(h) && pages_large_free(kslab_pcp(), h))
            return;
    } else if (kslab_kfence_owns(x)) {
        kslab_kfence_free(NULL, x, fn);
        return;
    } else {
        struct huge_hdr *h = huge_of(x);
        if (likely(h && h->base == x && huge_is_live(h))) {
            huge_free(h);
            return;
        }
    }
    kslab_bad_free(fn, NULL, x);
}

/* noinline, not cold: marking it cold costs kfree one register move (49 -> 50
 * instructions a call in callgrind); noinline alone keeps LTO out. */
static noinline void kfree_slow(const void *x)
{
    kslab_free_nonslab(x, "kfree");
}

/* free()'s pointer below ZERO_SIZE_PTR + 1 or above 2^47.  noipa: GCC
 * must not learn that it may not return, or free_lookup would align its
 * stack on entry for a call here (push/pop: 2 instructions every free)
 * instead of jumping. */
static noipa_fn void free_out_of_range(const void *x)
{
    if (!ZERO_OR_NULL_PTR(x))
        kfree_slow(x);
    else if (x)
        kslab_bad_free("free", NULL, x);
}

/* x is in an arena but its page (descriptor d) names no cache: a large
 * block on the pcp fast path, or the rest.  Out of line: inlined, it costs
 * kfree's slab fast path 9 instructions (47 -> 56) for no measured gain. */
static noinline void kfree_nocache(const void *x, struct slab *d)
{
    struct slab *h = pages_large_head_of(x, d);
    struct pages_pcp *pcp = kslab_pcp();
    if (likely(h && pcp && pages_pcp_push(pcp, h)))
        return;
    kslab_free_nonslab(x, "kfree");
}

/* x is in an arena but kfree's map has no slab for its page: its
 * descriptor decides (a large block, a slab not yet published, metadata,
 * or a bad pointer: the back-end reports those). */
static noinline void kfree_unmapped(const void *x)
{
    struct slab *d = addr_desc((uintptr_t)x);
    struct kmem_cache *s = d->cache;
    if (!s)
        kfree_nocache(x, d);
    else
        kfree_to_backend(s, x);
}

/* kfree's map names s, but s has its sheaf array now: x's slab was
 * published before (percpu.h, rule 9), and its words are rewritten first,
 * while x is the caller's, so that its slab cannot be given back
 * meanwhile.  Apart, and a tail call: a call inside kfree_in made it save
 * three registers on every free. */
static noinline void kfree_upgrade(struct kmem_cache *s, uint32_t colour, const void *x)
{
    pages_map_upgrade(s, x);
    if (!pcpu_kfree(s, colour, (void *)x))
        kfree_to_backend(s, x);
}

/* The per-thread mode's kfree after the lookup, apart: the per-CPU mode
 * (the default) has kfree_in to itself. */
static noinline void thread_kfree(struct kmem_cache *s, const void *x)
{
    if (likely(!kslab_init_on_free && slub_free_fast(s, (void *)x)))
        return;
    kfree_to_backend(s, x);
}

/* kfree and libkslab-malloc's free: x looked up in kfree's map (its
 * cache and its slab's colour), and in the per-CPU mode validated and
 * pushed, in one function (split in two, the call and its argument moves
 * cost every random-size free 4 instructions).  free's 1 .. ZERO_SIZE_PTR
 * are bad frees (malloc.c), kfree's the kernel's no-ops: both are tested on
 * the lookup's slow branch, so neither pays a compare of its own.
 * There is no guess of x's cache ahead of the lookup (percpu.h, rule 7). */
static inline __attribute__((always_inline)) void kfree_in(const void *x, bool from_free)
{
    uintptr_t a = (uintptr_t)x;
    uint64_t e;
    if (!zone_entry(a, &e, from_free)) {
        /* one compare for NULL, ZERO_SIZE_PTR and anything at or above
         * 2^47; free()'s small values other than NULL are pointers malloc
         * never gave (malloc.c), kfree's are the kernel's no-ops */
        const uintptr_t low = (uintptr_t)ZERO_SIZE_PTR + 1;
        if (unlikely(a - low >= (1ul << 47) - low)) {
            if (from_free)
                free_out_of_range(x);
            else if (!ZERO_OR_NULL_PTR(x))
                kfree_slow(x);
            return;
        }
        if (unlikely(!arena_bit(a))) {      /* an arena outside the zone? */
            kfree_slow(x);
            return;
        }
        e = addr_pmap(a);
    }
    if (likely(e & PMAP_BASE)) {      /* (tested first: 0 has it clear) */
        /* a page of a published slab of a cache whose sheaf array is
         * e - 1, colour 0, tag at offset 0 (pages.h; percpu.h, rule 9;
         * the per-CPU mode's alone) */
        if (likely(pcpu_kfree_push0(e, (void *)x)))
            return;
        kfree_to_backend(pcpu_hdr_of(pmap_ptr(e))->s, x);
        return;
    }
    if (unlikely(!e)) {
        kfree_unmapped(x);          /* a large block, a new slab, or a bad pointer */
        return;
    }
    if (e & PMAP_BASE_COL) {
        /* the same with the slab's colour and the cache's tag offset */
        if (likely(pcpu_kfree_push(pmap_ptr(e), pmap_colour(e), (void *)x)))
            return;
        kfree_to_backend(pcpu_hdr_of(pmap_ptr(e))->s, x);
        return;
    }
    /* a page of a published slab of s */
    struct kmem_cache *s = pmap_cache(e);
    if (unlikely(!kslab_percpu)) {
        thread_kfree(s, x);
        return;
    }
    if (unlikely(pcpu_base(s) != pcpu_none)) {
        kfree_upgrade(s, pmap_colour(e), x);
        return;
    }
    if (likely(pcpu_kfree(s, pmap_colour(e), (void *)x)))
        return;
    kfree_to_backend(s, x);
}

fastpath_fn void kfree(const void *x)
{
    kfree_in(x, false);
}

void kslab_free(void *x)
{
    kfree_in(x, true);
}

void *kslab_kmalloc_aligned(size_t size, size_t align, gfp_t gfp)
{
    if (align < 16)
        align = 16;                  /* what malloc promises: max_align_t */
    /* Size classes from 16 up are multiples of 16; a request rounded up to
     * a multiple of align lands in a class whose objects are aligned to it
     * (pow2 classes are naturally aligned, 96 and 192 to 32 and 64).  The
     * overflow check comes before any back-end sees the request. */
    size_t want = ALIGN_UP(size ? size : 1, align);
    if (unlikely(want < size || want > KSLAB_MAX_ALLOC || align > KSLAB_MAX_ALLOC))
        return NULL;
    kslab_ensure_init();
    if (kslab_be->kmalloc_aligned)
        return kslab_be->kmalloc_aligned(size ? size : 1, align, gfp);
    if (want <= KMALLOC_MAX_CACHE_SIZE)
        return kmalloc_at(want, gfp, (uintptr_t)__builtin_return_address(0));
    return kslab_large_alloc(want, align, gfp);
}

size_t ksize(const void *x)
{
    if (ZERO_OR_NULL_PTR(x))
        return 0;
    if (in_arena(x)) {
        if (likely(addr_desc((uintptr_t)x)->cache))
            return kslab_be->ksize(kslab_page_cache(NULL, x, "ksize"), x);
        struct slab *h = pages_large_head(x);
        if (h)
            return pages_large_size(h);
    } else if (kslab_kfence_owns(x)) {
        return kslab_kfence_ksize(x, "ksize");
    } else {
        struct huge_hdr *h = huge_of(x);
        if (h && h->base == x && huge_is_live(h))
            return h->size;
    }
    kslab_bad_free("ksize", NULL, x);
}

size_t kmalloc_size_roundup(size_t size)
{
    if (size == 0)
        return 0;
    if (size <= KMALLOC_MAX_CACHE_SIZE)
        return kmalloc_sizes[kmalloc_index(size)];
    if (size <= (PAGE_SIZE << MAX_PAGE_ORDER))
        return PAGE_SIZE << pages_order((size + PAGE_SIZE - 1) >> PAGE_SHIFT);
    if (size > KSLAB_MAX_ALLOC)
        return size;
    return ALIGN_UP(size, PAGE_SIZE);
}

/* Resize a huge block (a mapping of its own: above 4 MiB, or grown there
 * by realloc) to hold new_size (at least REALLOC_MAP_MIN) without copying:
 * mremap in place or to a new range, or unmap the tail.  NULL if x is no
 * huge block or the OS refuses; the caller then copies. */
void *kslab_huge_resize(const void *x, size_t new_size, bool malloc_classes)
{
    if (new_size < REALLOC_MAP_MIN || new_size > KSLAB_MAX_ALLOC || in_arena(x))
        return NULL;
    struct huge_hdr *h = huge_of(x);
    if (!h || h->base != x || !huge_is_live(h))
        return NULL;
    size_t n = (new_size + PAGE_SIZE - 1) >> PAGE_SHIFT;
    return huge_resize(h, (malloc_classes ? pages_round(n) : n) << PAGE_SHIFT);
}

/* realloc's mapping for a block outgrowing REALLOC_MAP_MIN: page classes,
 * as the large blocks' (pages.h), so it wastes at most a quarter. */
void *kslab_realloc_map(size_t n)
{
    return huge_alloc_realloc(pages_round((n + PAGE_SIZE - 1) >> PAGE_SHIFT) << PAGE_SHIFT);
}

/* krealloc_node_align (6.17+): krealloc whose result is aligned to align
 * (a power of two); the block stays when it fits and is aligned. */
void *krealloc_node_align(const void *p, size_t new_size, unsigned long align, gfp_t flags,
                          int nid)
{
    (void)nid;
    if (align & (align - 1))
        return NULL;
    if (align <= 8 || (!ZERO_OR_NULL_PTR(p) && !((uintptr_t)p & (align - 1))))
        return krealloc(p, new_size, flags);
    if (unlikely(!new_size)) {
        kfree(p);
        return ZERO_SIZE_PTR;
    }
    void *n = kslab_kmalloc_aligned(new_size, align, flags);
    if (!n)
        return NULL;                /* p is left alone */
    if (!ZERO_OR_NULL_PTR(p)) {
        size_t old = ksize(p);
        memcpy(n, p, old < new_size ? old : new_size);
        kfree(p);
    }
    return n;
}

void *kvmalloc_node_align(size_t size, unsigned long align, gfp_t flags, int node)
{
    (void)node;
    if (align & (align - 1))
        return NULL;
    return size ? kslab_kmalloc_aligned(size, align, flags) : ZERO_SIZE_PTR;
}

void *krealloc(const void *p, size_t new_size, gfp_t flags)
{
    if (unlikely(!new_size)) {
        kfree(p);
        return ZERO_SIZE_PTR;
    }
    if (ZERO_OR_NULL_PTR(p))
        return kmalloc_at(new_size, flags, (uintptr_t)__builtin_return_address(0));
    struct kmem_cache *ds = in_arena(p) ? addr_desc((uintptr_t)p)->cache : NULL;
    size_t ks;
    if (ds && kslab_debugged(ds) && ds->orig_off) {
        /* A debugged kmalloc object keeps its request size: in place, the
         * red zone follows the new size (ksize would open the whole
         * object); a copy moves only what was requested. */
        kslab_slab_of(NULL, ds, p, "krealloc");
        if (slub_debug_resize(ds, (void *)p, new_size, flags))
            return (void *)p;
        ks = slub_debug_orig_size(ds, (void *)p);
    } else if ((ks = ksize(p)) >= new_size) {
        /* Fits in place.  With __GFP_ZERO, clear the tail so that a later
         * growth in place still reads zeroes (the kernel's contract). */
        if (flags & __GFP_ZERO)
            memset((char *)p + new_size, 0, ks - new_size);
        return (void *)p;
    }
    void *n = kslab_huge_resize(p, new_size, false);   /* pages added by mremap read zero */
    if (n)
        return n;
    n = kmalloc_at(new_size, flags, (uintptr_t)__builtin_return_address(0));
    if (!n)
        return NULL;        /* p is left alone */
    memcpy(n, p, ks);
    kfree(p);
    return n;
}

void kfree_sensitive(const void *p)
{
    if (ZERO_OR_NULL_PTR(p))
        return;
    explicit_bzero((void *)p, ksize(p));
    kfree(p);
}

char *kstrdup(const char *s, gfp_t gfp)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = kmalloc_at(n, gfp, (uintptr_t)__builtin_return_address(0));
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The first len bytes of s and a NUL, charged to caller: kmemdup_nul's and
 * kstrndup's body. */
static char *dup_nul(const char *s, size_t len, gfp_t gfp, uintptr_t caller)
{
    if (len == SIZE_MAX)
        return NULL;
    char *d = kmalloc_at(len + 1, gfp, caller);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

char *kmemdup_nul(const char *s, size_t len, gfp_t gfp)
{
    return s ? dup_nul(s, len, gfp, (uintptr_t)__builtin_return_address(0)) : NULL;
}

char *kstrndup(const char *s, size_t max, gfp_t gfp)
{
    return s ? dup_nul(s, strnlen(s, max), gfp, (uintptr_t)__builtin_return_address(0)) : NULL;
}

void *kmemdup(const void *src, size_t len, gfp_t gfp)
{
    void *d = kmalloc_at(len, gfp, (uintptr_t)__builtin_return_address(0));
    if (d && !ZERO_OR_NULL_PTR(d))
        memcpy(d, src, len);
    return d;
}
