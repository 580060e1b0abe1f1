/*
 * pages.c - where slab pages come from.
 *
 * Memory is mapped in 4 MiB chunks aligned to 4 MiB.  A chunk is either an
 * arena (carved into slab pages) or part of one large allocation (kmalloc
 * above KMALLOC_MAX_CACHE_SIZE, mapped directly).  Arenas are marked in the
 * arena bitmap (one load to classify an address); large allocations in the
 * chunk map, a two-level radix table to their headers.
 *
 * An arena begins with its descriptor table: one 48-byte struct slab per
 * 4 KiB page (13 pages of metadata, 1.3 %).  The remaining pages are handed
 * out in naturally aligned blocks of 2^order pages by a buddy allocator with
 * one free list per order, under one lock.  Natural alignment is what lets
 * kmem_cache_free() find a slab's head page with a mask.
 *
 * A freed block first goes to a small LIFO reserve of recently freed blocks
 * (at most 2 MiB), so slab churn reuses warm pages; beyond that reserve, and
 * on kmem_cache_shrink(), blocks are given back to the OS (MADV_DONTNEED) and
 * merged with their free buddies.  The address range stays reserved, so arena
 * bits never change after they are set.
 *
 * Lock order: a cache's list_lock is never held while calling in here;
 * pages_lock is innermost.
 */
#include "slab_common.h"

_Atomic(uintptr_t *) kslab_chunk_map[1u << MAP_L1_BITS];
uint64_t kslab_arena_bits[ARENA_BITS_WORDS];

static kslab_lock_t pages_lock = KSLAB_LOCK_INIT;
static struct slab *free_area[MAX_PAGE_ORDER + 1];   /* buddy free lists (pages_lock) */
static struct arena *arenas;                          /* all arenas (pages_lock) */
static _Atomic uint64_t pages_in_use;                  /* relaxed: a statistic */
static _Atomic uint64_t pages_peak;                    /* relaxed: a statistic */

/* Recently freed blocks, still backed by memory, kept per order (LIFO,
 * linked by ->next) so that slab churn does not pay a page fault and zeroing
 * per slab: at most HOT_MAX_PAGES in all; beyond that, and on
 * pages_release_all() (kmem_cache_shrink), blocks go back to the OS. */
#define HOT_MAX_PAGES 512u                             /* 2 MiB */
static struct slab *hot[MAX_PAGE_ORDER + 1];           /* pages_lock */
static unsigned hot_pages;                             /* pages_lock */
static kslab_lock_t map_lock = KSLAB_LOCK_INIT;        /* serialises L2 table creation */

uint64_t kslab_pages_in_use(void)
{
    return atomic_load_explicit(&pages_in_use, memory_order_relaxed);
}

uint64_t kslab_pages_peak(void)
{
    return atomic_load_explicit(&pages_peak, memory_order_relaxed);
}

/* Set the entries of [p, p + bytes) to v.  Returns false if an L2 table
 * could not be mapped. */
static bool chunk_map_set(void *p, size_t bytes, uintptr_t v)
{
    uintptr_t a = (uintptr_t)p, end = a + bytes;
    for (; a < end; a += CHUNK_SIZE) {
        _Atomic(uintptr_t *) *l1 = &kslab_chunk_map[a >> (CHUNK_SHIFT + MAP_L2_BITS)];
        /* acquire: pairs with the release that published the L2 table, so
         * its zeroed contents are visible before we write into it. */
        uintptr_t *l2 = atomic_load_explicit(l1, memory_order_acquire);
        if (!l2) {
            kslab_lock(&map_lock);
            l2 = atomic_load_explicit(l1, memory_order_relaxed);
            if (!l2) {
                l2 = prim_map(sizeof(uintptr_t) << MAP_L2_BITS);
                if (!l2) {
                    kslab_unlock(&map_lock);
                    return false;
                }
                atomic_store_explicit(l1, l2, memory_order_release);
            }
            kslab_unlock(&map_lock);
        }
        __atomic_store_n(&l2[(a >> CHUNK_SHIFT) & ((1u << MAP_L2_BITS) - 1)], v, __ATOMIC_RELAXED);
    }
    return true;
}

static void buddy_push(struct slab *b, unsigned order)
{
    b->pg_state = PG_FREE;
    b->pg_order = (uint8_t)order;
    b->prev = NULL;
    b->next = free_area[order];
    if (b->next)
        b->next->prev = b;
    free_area[order] = b;
}

static void buddy_unlink(struct slab *b, unsigned order)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        free_area[order] = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->next = b->prev = NULL;
}

/* Map a new arena and put its free pages on the buddy lists (pages_lock held). */
static bool arena_grow(void)
{
    struct arena *a = prim_map_aligned(CHUNK_SIZE, CHUNK_SIZE);
    if (!a)
        return false;
    uintptr_t ci = (uintptr_t)a >> CHUNK_SHIFT;
    __atomic_fetch_or(&kslab_arena_bits[ci >> 6], 1ull << (ci & 63), __ATOMIC_RELAXED);
    a->meta_pages = (uint32_t)(ALIGN_UP(sizeof(struct arena), PAGE_SIZE) >> PAGE_SHIFT);
    /* Metadata pages keep pg_state == PG_META (zero) and cache == NULL. */
    unsigned i = a->meta_pages;
    while (i < ARENA_PAGES) {
        unsigned order = MAX_PAGE_ORDER;
        while ((i & ((1u << order) - 1)) || i + (1u << order) > ARENA_PAGES)
            order--;
        buddy_push(&a->pages[i], order);
        i += 1u << order;
    }
    a->next_arena = arenas;
    arenas = a;
    return true;
}

static void block_set(struct slab *b, unsigned order, struct kmem_cache *cache)
{
    /* Every page names the cache (kfree() reads it from the page it lands
     * on); only the head is PG_SLAB.  Written under pages_lock so that
     * pages_for_each_slab() reads them safely. */
    for (unsigned i = 0; i < (1u << order); i++) {
        b[i].pg_order = cache ? (uint8_t)order : 0;
        b[i].pg_state = !cache ? PG_FREE : i ? PG_META : PG_NEW;
        b[i].cache = cache;
    }
    b->pg_colour = 0;
}

struct slab *pages_alloc(unsigned order, struct kmem_cache *cache)
{
    kslab_lock(&pages_lock);
    struct slab *b = hot[order];
    if (b) {
        hot[order] = b->next;
        hot_pages -= 1u << order;
        goto found;
    }
    unsigned k = order;
    while (k <= MAX_PAGE_ORDER && !free_area[k])
        k++;
    if (k > MAX_PAGE_ORDER) {
        if (!arena_grow()) {
            kslab_unlock(&pages_lock);
            return NULL;
        }
        k = order;
        while (!free_area[k])
            k++;
    }
    b = free_area[k];
    buddy_unlink(b, k);
    while (k > order) {             /* split: keep the low half, free the high half */
        k--;
        buddy_push(b + (1u << k), k);
    }
found:
    block_set(b, order, cache);
    kslab_unlock(&pages_lock);
    uint64_t now = atomic_fetch_add_explicit(&pages_in_use, 1u << order, memory_order_relaxed) +
                   (1u << order);
    uint64_t peak = atomic_load_explicit(&pages_peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&pages_peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
    return b;
}

/* Give block b back to the OS and to the buddy lists (pages_lock held for
 * the buddy part; the madvise runs unlocked). */
static void block_release(struct slab *b, unsigned order)
{
    struct arena *a = slab_arena(b);
    size_t idx = (size_t)(b - a->pages);
    while (order < MAX_PAGE_ORDER) {  /* merge with the buddy while it is free and whole */
        size_t bi = idx ^ (1u << order);
        if (bi + (1u << order) > ARENA_PAGES)
            break;
        struct slab *buddy = &a->pages[bi];
        /* relaxed atomic: an allocated buddy may be publishing itself */
        if (__atomic_load_n(&buddy->pg_state, __ATOMIC_RELAXED) != PG_FREE ||
            buddy->pg_order != order || bi < a->meta_pages)
            break;
        buddy_unlink(buddy, order);
        if (bi < idx) {
            b->pg_state = PG_FREE;
            b->pg_order = 0;
            idx = bi;
            b = buddy;
        } else {
            buddy->pg_order = 0;
        }
        order++;
    }
    buddy_push(b, order);
}

/* Take every hot block (pages_lock held), linked through ->prev. */
static struct slab *hot_take_all(void)
{
    struct slab *list = NULL;
    for (unsigned o = 0; o <= MAX_PAGE_ORDER; o++)
        while (hot[o]) {
            struct slab *b = hot[o];
            hot[o] = b->next;
            b->pg_order = (uint8_t)o;  /* remembered for the release */
            b->prev = list;
            list = b;
        }
    hot_pages = 0;
    return list;
}

static void release_list(struct slab *list)
{
    for (struct slab *b = list; b; b = b->prev)
        prim_release(slab_address(b), PAGE_SIZE << b->pg_order);
    kslab_lock(&pages_lock);
    while (list) {
        struct slab *b = list;
        list = b->prev;
        unsigned order = b->pg_order;
        b->pg_order = 0;
        block_release(b, order);
    }
    kslab_unlock(&pages_lock);
}

/* Release: the back-end's initialisation of the block (headers, freelist,
 * constructors) is visible to a walker whose acquire load sees PG_SLAB. */
void pages_publish(struct slab *head)
{
    __atomic_store_n(&head->pg_state, PG_SLAB, __ATOMIC_RELEASE);
}

void pages_free(struct slab *b, unsigned order)
{
    atomic_fetch_sub_explicit(&pages_in_use, 1u << order, memory_order_relaxed);
    kslab_lock(&pages_lock);
    block_set(b, order, NULL);
    b->pg_state = PG_HOT;           /* not a buddy candidate while in the reserve */
    b->next = hot[order];
    hot[order] = b;
    hot_pages += 1u << order;
    struct slab *list = hot_pages > HOT_MAX_PAGES ? hot_take_all() : NULL;
    kslab_unlock(&pages_lock);
    if (list)
        release_list(list);
}

void pages_release_all(void)
{
    kslab_lock(&pages_lock);
    struct slab *list = hot_take_all();
    kslab_unlock(&pages_lock);
    release_list(list);
}

/* Calls fn on the head descriptor of every live slab of cache s, with
 * pages_lock held: fn must not call back into the page layer. */
void pages_for_each_slab(struct kmem_cache *s, void (*fn)(struct slab *, void *), void *arg)
{
    kslab_lock(&pages_lock);
    for (struct arena *a = arenas; a; a = a->next_arena)
        for (unsigned i = a->meta_pages; i < ARENA_PAGES; i++)
            if (__atomic_load_n(&a->pages[i].pg_state, __ATOMIC_ACQUIRE) == PG_SLAB &&
                a->pages[i].cache == s)
                fn(&a->pages[i], arg);
    kslab_unlock(&pages_lock);
}

static void take_slab(struct slab *slab, void *arg)
{
    struct slab **list = arg;
    slab->next = *list;
    *list = slab;
}

struct slab *pages_take_slabs(struct kmem_cache *s)
{
    struct slab *list = NULL;
    pages_for_each_slab(s, take_slab, &list);
    return list;
}

/* ---- introspection, for the internal tests ------------------------------- */

/* Order of the free buddy block containing p, or -1 (pages_lock). */
static int free_order_locked(struct arena *a, size_t idx)
{
    for (int o = MAX_PAGE_ORDER; o >= 0; o--) {
        size_t h = idx & ~(((size_t)1 << o) - 1);
        if (h >= a->meta_pages && a->pages[h].pg_state == PG_FREE && a->pages[h].pg_order == o)
            return o;
    }
    return -1;
}

int pages_free_order(const void *p)
{
    struct arena *a = (struct arena *)((uintptr_t)p & ~(CHUNK_SIZE - 1));
    kslab_lock(&pages_lock);
    int o = free_order_locked(a, ((uintptr_t)p >> PAGE_SHIFT) & (ARENA_PAGES - 1));
    kslab_unlock(&pages_lock);
    return o;
}

/* Check every arena: its pages are an exact partition into naturally aligned
 * blocks (free, hot or allocated), free blocks are on their order's list,
 * and no two free buddies were left unmerged.  Returns the violations. */
long pages_check(void)
{
    long bad = 0;
    kslab_lock(&pages_lock);
    for (struct arena *a = arenas; a; a = a->next_arena) {
        unsigned i = a->meta_pages;
        while (i < ARENA_PAGES) {
            struct slab *b = &a->pages[i];
            unsigned order = b->pg_order;
            if (b->pg_state == PG_HOT) {
                unsigned o = 0;            /* hot blocks: order from their list */
                for (; o <= MAX_PAGE_ORDER; o++) {
                    struct slab *h = hot[o];
                    while (h && h != b)
                        h = h->next;
                    if (h)
                        break;
                }
                order = o;
            }
            if (order > MAX_PAGE_ORDER || (i & ((1u << order) - 1)) ||
                i + (1u << order) > ARENA_PAGES) {
                bad++;
                break;
            }
            if (b->pg_state == PG_FREE) {
                struct slab *f = free_area[order];
                while (f && f != b)
                    f = f->next;
                bad += f == NULL;          /* a free block off its list */
                size_t bi = i ^ (1u << order);
                if (order < MAX_PAGE_ORDER && bi >= a->meta_pages &&
                    bi + (1u << order) <= ARENA_PAGES && a->pages[bi].pg_state == PG_FREE &&
                    a->pages[bi].pg_order == order)
                    bad++;                 /* unmerged buddies */
            } else if (b->pg_state == PG_SLAB || b->pg_state == PG_NEW) {
                for (unsigned k = 1; k < (1u << order); k++)
                    bad += b[k].pg_state != PG_META || b[k].cache != b->cache;
            } else if (b->pg_state != PG_HOT) {
                bad++;                     /* a page that heads nothing */
            }
            i += 1u << order;
        }
    }
    kslab_unlock(&pages_lock);
    return bad;
}

void pages_atfork_prepare(void) { kslab_lock(&map_lock); kslab_lock(&pages_lock); }
void pages_atfork_parent(void) { kslab_unlock(&pages_lock); kslab_unlock(&map_lock); }
void pages_atfork_child(void)
{
    kslab_lock_reinit(&pages_lock);
    kslab_lock_reinit(&map_lock);
}

/* ---- large allocations ---------------------------------------------------- */

/* The header lives in a small internal cache, so a large object is exactly
 * the pages it needs; its mapping starts on a chunk boundary (4 MiB) so power-
 * of-two sizes are naturally aligned, as the kernel's page allocator gives. */
static struct kmem_cache *large_hdr_cache(void)
{
    return kslab_kmalloc_cache(sizeof(struct large_hdr));
}

void *large_alloc(size_t size)
{
    return large_alloc_aligned(size, 0);
}

void *large_alloc_aligned(size_t size, size_t align)
{
    if (size > KSLAB_MAX_ALLOC || align > KSLAB_MAX_ALLOC)
        return NULL;
    if (size == 0)
        size = 1;                   /* a unique block, never an empty mapping */
    size_t bytes = ALIGN_UP(size, PAGE_SIZE);
    if (align < CHUNK_SIZE)
        align = CHUNK_SIZE;
    if ((size & (size - 1)) == 0 && size > align)
        align = size;
    struct large_hdr *h = kmem_cache_alloc(large_hdr_cache(), GFP_KERNEL);
    if (!h)
        return NULL;
    void *p = prim_map_aligned(bytes, align);
    if (!p) {
        kmem_cache_free(large_hdr_cache(), h);
        return NULL;
    }
    h->base = p;
    h->size = bytes;
    h->map = p;
    h->map_len = bytes;
    if (!chunk_map_set(p, bytes, (uintptr_t)h | CHUNK_LARGE)) {
        chunk_map_set(p, bytes, 0);
        prim_unmap(p, bytes);
        kmem_cache_free(large_hdr_cache(), h);
        return NULL;
    }
    return p;
}

void large_free(struct large_hdr *h, const void *p)
{
    if (unlikely(p != h->base))
        kslab_report("kfree(): pointer %p is inside the large allocation at %p (%zu bytes), "
                     "not at its start", p, h->base, h->size);
    chunk_map_set(h->map, h->map_len, 0);
    prim_unmap(h->map, h->map_len);
    kmem_cache_free(large_hdr_cache(), h);
}
