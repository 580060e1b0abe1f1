/*
 * pages.c - the page allocator of the whole library, as the kernel's: every
 * slab and every large kmalloc block comes from here.
 *
 * Arenas.  Memory comes in 64 MiB arenas aligned to 64 MiB, cut from the
 * arena zone (below) or, past it, mapped one by one; all are marked in the
 * arena map (one load classifies an address).  An arena begins with its
 * descriptor table: one 48-byte struct slab per 4 KiB page.  The address
 * range stays reserved for ever, so arena marks never change after they
 * are set and kslab's mapping count is the zone's four plus one per arena
 * outside it plus one per live huge block plus a bounded cache: it cannot
 * run into vm.max_map_count however the program frees.
 *
 * The buddy.  The arena's pages are handed out in naturally aligned blocks
 * of 2^order pages, orders 0..10 (4 MiB), one free list per order, under
 * pages_lock.  Natural alignment is what lets kmem_cache_free() find a
 * slab's head page with a mask.  Every block on the free lists has been
 * given back to the OS (MADV_DONTNEED), so it reads as zeroes.
 *
 * Large blocks (kmalloc above 8 KiB, malloc above 8 KiB): a block of n
 * pages, n a page class (about four per doubling, pages.h), cut from a
 * buddy block of order ceil(log2 n), the tail beyond n going straight back
 * to the free lists (the kernel's alloc_pages_exact).  kmalloc asks for
 * 2^order pages, as the kernel's kmalloc_large; malloc for the class that
 * fits, so it wastes at most a quarter.  A large block's pages name no
 * cache (kfree() takes its slow branch) and its head is PG_LARGE.
 *
 * In front of the buddy, as the kernel's pcp lists and free-page reserve:
 *  - per thread, freed large blocks of up to 512 KiB, reused with no lock
 *    (struct pages_pcp);
 *  - globally, the hot reserve: freed blocks of any class (slabs and large
 *    blocks), still backed, reused LIFO: large blocks take their exact class
 *    only (cutting larger blocks fragmented it: measured 3x slower on mixed
 *    sizes), a new slab its class or else a piece of a larger hot block
 *    (hot_cut).  It holds at most hot_limit() pages (512 KiB + half of
 *    what is in use, and never less than 4 MiB); beyond, blocks are given
 *    back (largest first) until it is at half that.  A decay tick (at most
 *    once a second, KSLAB_DECAY_MS; checked every 64 global operations) gives back what the reserve did not need since the
 *    last tick: its low-water mark.  kslab_trim() gives back everything.
 * Blocks leave the reserve sorted by address and are released in as few
 * madvise calls as there are contiguous runs, then merged into the buddy.
 *
 * Huge blocks (above 4 MiB) are mappings of their own, 4 MiB aligned, named
 * in the chunk map; freed ones wait in a small cache (HUGE_CACHE_MAX,
 * HUGE_CACHE_BYTES) for reuse and leave it after a tick unused; resizing
 * moves pages with mremap.
 *
 * When the OS refuses: a failed madvise leaves the block in the hot reserve
 * (still backed, still usable) to be retried later; a failed munmap gives
 * the pages back with madvise and keeps the mapping in the huge cache for
 * reuse; both are counted (release_failures) and reported once.  Nothing is
 * lost track of.
 *
 * Lock order: a cache's list_lock is never held while calling in here;
 * pages_lock is innermost but for map_lock.  No system call runs under
 * pages_lock.
 */
#include "slab_common.h"
#include "percpu.h"

_Atomic(uintptr_t *) kslab_chunk_map[1u << MAP_L1_BITS] KSLAB_BIG_BSS;
uint8_t kslab_arena_map[ARENA_MAP_BYTES] KSLAB_BIG_BSS;

static kslab_lock_t pages_lock = KSLAB_LOCK_INIT;
static struct slab *free_area[MAX_PAGE_ORDER + 1];   /* buddy free lists (pages_lock) */
static struct arena *arenas;                          /* all arenas (pages_lock) */
static kslab_lock_t map_lock = KSLAB_LOCK_INIT;        /* serialises L2 table creation */

/* The hot reserve: per class, LIFO, linked by ->next (pages_lock). */
static struct slab *hot[PAGE_CLASSES];
static size_t hot_pages;
static size_t hot_min;                                 /* low-water mark since the last tick */
#define HOT_MIN_PAGES 128u                             /* 512 KiB, + half of what is in use */
/* ... but never less than the largest buddy block (4 MiB): under a smaller
 * bound a program that mallocs and frees one 2 or 4 MiB block in a loop
 * gave it back and faulted it in again every time, 6 us a pair (three
 * madvise calls) against 17-26 ns for glibc, which keeps up to twice its
 * largest freed block at the top of its heap for the same reason. */
#define HOT_FLOOR_PAGES (1u << MAX_PAGE_ORDER)
static uint64_t decay_ops, decay_last_ns, decay_tick_no;

/* The huge mapping cache (pages_lock), newest first. */
static struct huge_hdr *huge_cache;
static unsigned huge_cache_n;
static size_t huge_cache_bytes;

/* Statistics: relaxed atomics (pure counters, no ordering). */
static _Atomic uint64_t pages_in_use;                  /* slab pages */
static _Atomic uint64_t pages_peak;
static _Atomic uint64_t large_pages;                   /* large blocks, live or in pcp lists */
static uint64_t huge_bytes, huge_live;                 /* live huge blocks (pages_lock) */
static _Atomic uint64_t nr_arenas, nr_tables;
static _Atomic uint64_t release_failures;
static atomic_bool release_warned;

uint8_t pages_class_of[PCP_MAX_BYTES / PAGE_SIZE + 1];

void pages_init(void)
{
    for (size_t n = 1; n <= PCP_MAX_BYTES / PAGE_SIZE; n++)
        pages_class_of[n] = (uint8_t)page_class(pages_round(n));
}

uint64_t kslab_pages_in_use(void)
{
    return atomic_load_explicit(&pages_in_use, memory_order_relaxed);
}

uint64_t kslab_pages_peak(void)
{
    return atomic_load_explicit(&pages_peak, memory_order_relaxed);
}

static void release_failed(const char *what, void *p, size_t bytes)
{
    atomic_fetch_add_explicit(&release_failures, 1, memory_order_relaxed);
    if (!atomic_exchange_explicit(&release_warned, true, memory_order_relaxed))
        kslab_warn("%s(%p, %zu) refused by the OS; the memory is kept and will be retried "
                   "(reported once)", what, p, bytes);
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
                atomic_fetch_add_explicit(&nr_tables, 1, memory_order_relaxed);
                atomic_store_explicit(l1, l2, memory_order_release);
            }
            kslab_unlock(&map_lock);
        }
        __atomic_store_n(&l2[(a >> CHUNK_SHIFT) & ((1u << MAP_L2_BITS) - 1)], v, __ATOMIC_RELAXED);
    }
    return true;
}

/* pg_state is read without pages_lock (kfree, pcp transitions, walkers), so
 * it is always accessed with relaxed atomics: only its value matters; what
 * it guards is ordered by pages_lock or by the user's synchronisation. */
static inline void set_state(struct slab *b, uint8_t st)
{
    __atomic_store_n(&b->pg_state, st, __ATOMIC_RELAXED);
}
static inline uint8_t get_state(const struct slab *b)
{
    return __atomic_load_n(&b->pg_state, __ATOMIC_RELAXED);
}

/* ---- the buddy (pages_lock) ------------------------------------------------ */

static void buddy_push(struct slab *b, unsigned order)
{
    set_state(b, PG_FREE);
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

/* The arena zone (pages.h): one reservation (PROT_NONE, no memory), its
 * kfree map first, then the arenas, cut in address order, each made
 * read-write with its 128 KiB of the map when it is added.  ZONE_MAX (64
 * GiB, 1024 arenas) is tried first, then halves down to one arena: the
 * sanitizers' and valgrind's address spaces refuse larger reservations
 * (TSan refused 1 TiB here, valgrind 64 GiB), and a program under a small
 * RLIMIT_AS gets what fits.  When the zone is full or could not be
 * reserved, arenas are mapped one by one as before, with their own map:
 * still arenas (the arena map names them), whose frees take the lookup's
 * slower first test.  Adjacent read-write pieces merge: the zone is six
 * mappings however many arenas it holds (the granule map, the page map
 * and the arenas, each a read-write part and a reserved rest; five once
 * the arenas fill it), the slack its alignment left being unmapped. */
struct kslab_zone kslab_zone = { .base = (uintptr_t)1 << 63 };
static bool zone_tried;

static struct arena *zone_arena(void)
{
    if (!zone_tried) {
        zone_tried = true;
        /* KSLAB_ZONE_MB: a smaller zone (0: none), for a tight RLIMIT_AS
         * or to test the arenas outside it */
        size_t z = kslab_env_number("KSLAB_ZONE_MB", ZONE_MAX >> 20);
        z = (z > ZONE_MAX >> 20 ? ZONE_MAX : z << 20) & ~(ARENA_SIZE - 1);
        for (; z >= ARENA_SIZE; z = (z >> 1) & ~(ARENA_SIZE - 1)) {
            /* the map, the zone, and room to align the zone */
            size_t maps = ZONE_GMAP_BYTES + ZONE_PMAP_BYTES, all = maps + z + ARENA_SIZE;
            char *p = prim_map_none(all);
            if (p) {
                kslab_zone.base = ALIGN_UP((uintptr_t)p + maps, ARENA_SIZE);
                kslab_zone.size = z;
                /* the alignment's slack at both ends back: not a mapping
                 * of its own (a failed unmap leaves reserved address
                 * space, nothing else) */
                uintptr_t start = kslab_zone.base - maps, end = kslab_zone.base + z;
                if (start > (uintptr_t)p)
                    (void)prim_unmap(p, start - (uintptr_t)p);
                if ((uintptr_t)p + all > end)
                    (void)prim_unmap((void *)end, (uintptr_t)p + all - end);
                break;
            }
        }
    }
    uintptr_t used = atomic_load_explicit(&kslab_zone.used, memory_order_relaxed);
    if (used == kslab_zone.size)
        return NULL;
    struct arena *a = (struct arena *)(kslab_zone.base + used);
    if (!prim_commit(zone_gmap((uintptr_t)a), (ARENA_SIZE >> GMAP_SHIFT) * sizeof(uint64_t)) ||
        !prim_commit(zone_pmap((uintptr_t)a), ARENA_PAGES * sizeof(uint64_t)) ||
        !prim_commit(a, ARENA_SIZE))
        return NULL;        /* a map piece made read-write stays so: harmless */
    return a;
}

/* Arenas are carved lazily: a new arena's free pages join the buddy a
 * block at a time, in address order, as buddy_take needs them (arena_carve).
 * Pushing all of them when the arena was made wrote the descriptor of every
 * 4 MiB block's head, 48 KiB of table apart: 16 page faults in every process
 * that allocates at all (of the 183 of a `seq 1 5`).  Pages at or above
 * a->carved have zero descriptors (PG_META, no cache), which no merge, walker
 * or lookup takes for a free or live block; only the newest arena can have
 * such pages, since the next is made only once it is carved whole, and the
 * newest heads `arenas`. */

/* Put blocks of the newest arena's uncarved part on the buddy, lowest
 * first, until one of at least `order` is there; false if it has none
 * left (pages_lock). */
static bool arena_carve(unsigned order)
{
    struct arena *a = arenas;
    while (a && a->carved < ARENA_PAGES) {
        unsigned i = a->carved, k = MAX_PAGE_ORDER;
        while ((i & ((1u << k) - 1)) || i + (1u << k) > ARENA_PAGES)
            k--;
        buddy_push(&a->pages[i], k);
        a->carved = i + (1u << k);
        if (k >= order)
            return true;
    }
    return false;
}

/* Map a new arena; arena_carve then hands its pages to the buddy. */
static bool arena_grow(void)
{
    struct arena *a = zone_arena();
    bool zoned = a != NULL;
    if (!a)
        a = prim_map_aligned(ARENA_SIZE, ARENA_SIZE);
    if (!a)
        return false;
    uintptr_t ci = (uintptr_t)a >> ARENA_SHIFT;
    __atomic_store_n(&kslab_arena_map[ci], 1, __ATOMIC_RELAXED);
    a->meta_pages = (uint32_t)(ALIGN_UP(sizeof(struct arena), PAGE_SIZE) >> PAGE_SHIFT);
    /* Every page starts PG_META (zero) with cache == NULL; arena_carve
     * pushes block heads as PG_FREE when they are needed. */
    a->carved = a->meta_pages;
    a->next_arena = arenas;
    arenas = a;
    atomic_fetch_add_explicit(&nr_arenas, 1, memory_order_relaxed);
    /* release: a free that sees the larger bound finds the arena's header
     * written (its pointer came from a slab here, handed out after this;
     * the user's synchronisation orders that too, so a stale bound only
     * sends the free to the slower test, which finds the arena map set) */
    if (zoned)
        atomic_fetch_add_explicit(&kslab_zone.used, ARENA_SIZE, memory_order_release);
    return true;
}

/* A free block of exactly 2^order pages, split from a larger one if need
 * be (growing the arenas if none is free); NULL when out of memory. */
static struct slab *buddy_take(unsigned order)
{
    unsigned k = order;
    while (k <= MAX_PAGE_ORDER && !free_area[k])
        k++;
    if (k > MAX_PAGE_ORDER) {
        if (!arena_carve(order) && (!arena_grow() || !arena_carve(order)))
            return NULL;
        k = order;
        while (!free_area[k])
            k++;
    }
    struct slab *b = free_area[k];
    buddy_unlink(b, k);
    while (k > order) {             /* split: keep the low half, free the high half */
        k--;
        buddy_push(b + (1u << k), k);
    }
    set_state(b, PG_META);          /* no longer a free head; the caller names it */
    return b;
}

/* Put block b of 2^order pages on the free lists, merged with its buddy
 * while that is free and whole.  An absorbed head becomes PG_META.
 * Returns the order of the merged block (*bp: its head). */
static unsigned block_release(struct slab **bp, unsigned order)
{
    struct slab *b = *bp;
    struct arena *a = slab_arena(b);
    size_t idx = (size_t)(b - a->pages);
    while (order < MAX_PAGE_ORDER) {
        size_t bi = idx ^ (1u << order);
        if (bi < a->meta_pages || bi + (1u << order) > ARENA_PAGES)
            break;
        struct slab *buddy = &a->pages[bi];
        if (get_state(buddy) != PG_FREE || buddy->pg_order != order)
            break;
        buddy_unlink(buddy, order);
        set_state(buddy, PG_META);
        buddy->pg_order = 0;
        set_state(b, PG_META);
        b->pg_order = 0;
        if (bi < idx) {
            idx = bi;
            b = buddy;
        }
        order++;
    }
    buddy_push(b, order);
    *bp = b;
    return order;
}

/* The descriptors and kfree map entries inside a free block read as zero
 * (PG_META, no cache; no slab), so the whole table pages they fill can go
 * back to the OS too: 1.4 % of the memory a program freed.  Under
 * pages_lock (the block's descriptors must not be reused meanwhile): the
 * one system call made under it, for merged blocks of 1 MiB and up, a few
 * per release. */
#define DESC_RELEASE_ORDER 8
static void table_release(uintptr_t lo, uintptr_t hi)
{
    lo = ALIGN_UP(lo, PAGE_SIZE);
    hi &= ~(PAGE_SIZE - 1);
    if (hi > lo && !prim_release((void *)lo, hi - lo))
        release_failed("madvise", (void *)lo, hi - lo);   /* harmless: stays resident */
}
static void desc_release(struct slab *b, unsigned order)
{
    struct arena *a = slab_arena(b);
    size_t i = (size_t)(b - a->pages), n = (size_t)1 << order;
    table_release((uintptr_t)(b + 1), (uintptr_t)(b + n));
    _Atomic uint64_t *m = pmap_slot(a, i);     /* (slot i + n may be the next arena's) */
    table_release((uintptr_t)m, (uintptr_t)(m + n));
}

/* Pages [from, to) of the block at b, as the naturally aligned power-of-two
 * pieces they are made of (largest that fit first): fn(piece, order) for
 * each.  How a block of a page class is given back, trimmed or split. */
static void for_each_piece(struct slab *b, size_t from, size_t to,
                           void (*fn)(struct slab *, unsigned))
{
    size_t idx = (size_t)(b - slab_arena(b)->pages), off = from;
    while (off < to) {
        unsigned o = fls_sz(to - off), a = (unsigned)__builtin_ctzll(idx + off);
        if (a < o)
            o = a;
        fn(b + off, o);
        off += (size_t)1 << o;
    }
}

/* A piece to the free lists, merged; its descriptors' pages to the OS when
 * the merged block is big enough. */
static void release_piece(struct slab *h, unsigned order)
{
    unsigned merged = block_release(&h, order);
    if (merged >= DESC_RELEASE_ORDER)
        desc_release(h, merged);
}

/* ---- the hot reserve (pages_lock) ------------------------------------------- */

static size_t hot_limit(void)
{
    size_t n = HOT_MIN_PAGES + (atomic_load_explicit(&pages_in_use, memory_order_relaxed) +
                                atomic_load_explicit(&large_pages, memory_order_relaxed)) / 2;
    return n > HOT_FLOOR_PAGES ? n : HOT_FLOOR_PAGES;
}

static void hot_push(struct slab *b, size_t n)
{
    unsigned c = page_class(n);
    set_state(b, PG_HOT);
    b->pg_npages = (uint32_t)n;
    b->next = hot[c];
    hot[c] = b;
    hot_pages += n;
}

static struct slab *hot_pop(unsigned c)
{
    struct slab *b = hot[c];
    if (b) {
        hot[c] = b->next;
        hot_pages -= b->pg_npages;
        if (hot_pages < hot_min)
            hot_min = hot_pages;
    }
    return b;
}

/* Work to do once pages_lock is dropped: blocks to give back (linked by
 * ->prev) and huge mappings to unmap (linked by ->next). */
struct pending {
    struct slab *blocks;
    struct huge_hdr *maps;
};

/* Take at least `pages` pages of hot blocks, largest classes first. */
static void hot_take(struct pending *w, size_t pages)
{
    size_t got = 0;
    for (int c = PAGE_CLASSES - 1; c >= 0 && got < pages; c--)
        while (hot[c] && got < pages) {
            struct slab *b = hot_pop((unsigned)c);
            got += b->pg_npages;
            b->prev = w->blocks;
            w->blocks = b;
        }
}

/* After every global operation (pages_lock held): keep the reserve under
 * its limit, and run the decay tick. */
static void hot_trim(struct pending *w)
{
    size_t limit = hot_limit();
    if (hot_pages > limit)
        hot_take(w, hot_pages - limit / 2);
    if (++decay_ops & 63 || !kslab_opts.decay_ns)
        return;
    uint64_t now = prim_now_ns();
    if (now - decay_last_ns < kslab_opts.decay_ns)
        return;
    decay_last_ns = now;
    decay_tick_no++;
    hot_take(w, hot_min);           /* what sat unused for a whole tick */
    hot_min = hot_pages;
    for (struct huge_hdr **pp = &huge_cache; *pp;) {
        struct huge_hdr *h = *pp;
        if (h->tick + 1 < decay_tick_no) {
            *pp = h->next;
            huge_cache_n--;
            huge_cache_bytes -= h->size;
            h->next = w->maps;
            w->maps = h;
        } else {
            pp = &h->next;
        }
    }
}

/* Merge sort of a ->prev-linked block list by address. */
static struct slab *sort_blocks(struct slab *l)
{
    if (!l || !l->prev)
        return l;
    struct slab *a = NULL, *b = NULL;
    for (bool left = true; l; left = !left) {
        struct slab *nx = l->prev;
        if (left) {
            l->prev = a;
            a = l;
        } else {
            l->prev = b;
            b = l;
        }
        l = nx;
    }
    a = sort_blocks(a);
    b = sort_blocks(b);
    struct slab *head = NULL, **tail = &head;
    while (a && b) {
        struct slab **m = (uintptr_t)a < (uintptr_t)b ? &a : &b;
        *tail = *m;
        tail = &(*m)->prev;
        *m = (*m)->prev;
    }
    *tail = a ? a : b;
    return head;
}

static void huge_unmap(struct huge_hdr *h);

/* Give the pending blocks back to the OS, a contiguous run per madvise,
 * then to the buddy; unmap the pending huge mappings.  No lock held.  A
 * run the OS refuses goes back to the reserve, still backed. */
static void finish_work(struct pending *w)
{
    struct slab *run = sort_blocks(w->blocks), *ok = NULL, *failed = NULL;
    while (run) {
        struct slab *end = run;
        char *start = slab_address(run), *stop = start + ((size_t)run->pg_npages << PAGE_SHIFT);
        while (end->prev && slab_arena(end->prev) == slab_arena(run) &&
               (char *)slab_address(end->prev) == stop) {
            end = end->prev;
            stop += (size_t)end->pg_npages << PAGE_SHIFT;
        }
        struct slab *next = end->prev;
        struct slab **to = &ok;
        if (!prim_release(start, (size_t)(stop - start))) {
            release_failed("madvise", start, (size_t)(stop - start));
            to = &failed;
        }
        end->prev = *to;            /* the run [run .. end] joins its list */
        *to = run;
        run = next;
    }
    if (ok || failed) {
        kslab_lock(&pages_lock);
        while (ok) {
            struct slab *b = ok;
            ok = b->prev;
            for_each_piece(b, 0, b->pg_npages, release_piece);
        }
        while (failed) {
            struct slab *b = failed;
            failed = b->prev;
            hot_push(b, b->pg_npages);
        }
        kslab_unlock(&pages_lock);
    }
    while (w->maps) {
        struct huge_hdr *h = w->maps;
        w->maps = h->next;
        huge_unmap(h);
    }
}

/* Usually there is nothing to do: test that inline (every global page
 * operation ends here; the call cost 29 instructions). */
static inline void finish(struct pending *w)
{
    if (unlikely(w->blocks || w->maps))
        finish_work(w);
}

/* ---- slabs ----------------------------------------------------------------- */

static void block_set(struct slab *b, unsigned order, struct kmem_cache *cache)
{
    /* Every page names the cache (kfree() reads it from the page it lands
     * on); only the head is PG_NEW.  Written under pages_lock so that
     * pages_for_each_slab() reads them safely. */
    for (unsigned i = 0; i < (1u << order); i++) {
        b[i].pg_order = (uint8_t)order;
        set_state(&b[i], i ? PG_META : PG_NEW);
        b[i].cache = cache;
        b[i].pg_colour = 0;         /* every page: kfree reads it from x's (slab_colour_set) */
    }
}

static void count_pages(size_t n)
{
    uint64_t now = atomic_fetch_add_explicit(&pages_in_use, n, memory_order_relaxed) + n;
    uint64_t peak = atomic_load_explicit(&pages_peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&pages_peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
}

static void hot_push_piece(struct slab *b, unsigned order)
{
    hot_push(b, (size_t)1 << order);
}

/* A slab of 2^order pages cut from the smallest larger hot block aligned
 * for it; the rest goes back to the reserve as aligned pieces.  Backed
 * memory is reused before the buddy's given-back pages are touched:
 * python3's peak RSS 112.6 -> 107.9 MB, sqlite3's 34.4 -> 33.4 MB, the
 * mixed-size row unchanged.  Large blocks do not cut: tried, the mixed row's
 * peak grew 153 -> 178 MiB (the reserve fragments) and nothing else gained.
 * NULL if nothing fits. */
static struct slab *hot_cut(unsigned order)
{
    for (unsigned c = page_class((size_t)1 << order) + 1; c < PAGE_CLASSES; c++) {
        struct slab *b = hot[c];
        if (!b || ((size_t)(b - slab_arena(b)->pages) & (((size_t)1 << order) - 1)))
            continue;               /* empty, or not aligned for the slab */
        hot_pop(c);
        for_each_piece(b, (size_t)1 << order, b->pg_npages, hot_push_piece);
        return b;
    }
    return NULL;
}

struct slab *pages_alloc(unsigned order, struct kmem_cache *cache)
{
    kslab_lock(&pages_lock);
    struct slab *b = hot_pop(page_class((size_t)1 << order));
    if (!b)
        b = hot_cut(order);
    if (!b)
        b = buddy_take(order);
    if (b)
        block_set(b, order, cache);
    kslab_unlock(&pages_lock);
    if (b)
        count_pages((size_t)1 << order);
    return b;
}

/* The granule map's words for the block at b of `order` pages: e, or 0.
 * Only blocks of a granule or more in the zone have words of their own.
 * Written before the slab's objects are handed out, cleared after the last
 * one came back; release, as map_write's page words. */
static void gmap_set(struct slab *b, unsigned order, uint64_t e)
{
    uintptr_t addr = (uintptr_t)slab_address(b);
    if (order < GMAP_ORDER || addr - kslab_zone.base >= kslab_zone.size)
        return;
    _Atomic uint64_t *g = zone_gmap(addr);
    for (size_t i = 0; i < ((size_t)1 << (order - GMAP_ORDER)); i++)
        atomic_store_explicit(&g[i], e, memory_order_release);   /* as map_write's */
}

/* Slab head's map words: its cache's sheaf array where the cache has one
 * (percpu.h, rule 9; pages.h: alone where the colour and the tag offset
 * are 0), else the cache with the slab's colour. */
static void map_write(struct slab *head)
{
    struct arena *a = slab_arena(head);
    size_t first = (size_t)(head - a->pages);
    struct kmem_cache *s = head->cache;
    /* acquire: the array's header and caps before its address goes where
     * a free may load it (pairs with pcpu_create's release) */
    struct pcpu_sheaf *base = __atomic_load_n(&s->pcpu, __ATOMIC_ACQUIRE);
    uint64_t e = pcpu_cache(s) && base != pcpu_none
                         ? pmap_entry_base(base, head->pg_colour,
                                           head->pg_colour == 0 && s->offset == 0)
                         : pmap_entry(s, head->pg_colour);
    /* release (a plain store on x86): the array's header, read by a free
     * that finds base here, happened before (it was read with acquire
     * above); pairs with zone_entry's and addr_pmap's acquire */
    for (size_t i = 0; i < ((size_t)1 << head->pg_order); i++)
        atomic_store_explicit(pmap_slot(a, first + i), e, memory_order_release);
    gmap_set(head, head->pg_order, e);
}

/* Release: the back-end's initialisation of the block (headers, freelist,
 * constructors) is visible to a walker whose acquire load sees PG_SLAB. */
void pages_publish(struct slab *head)
{
    if (head->pg_colour >= 1u << (64 - PMAP_COLOUR_SHIFT))
        kslab_report("slab colour %u of cache %s does not fit the kfree map", head->pg_colour,
                     head->cache->name);
    map_write(head);
    __atomic_store_n(&head->pg_state, PG_SLAB, __ATOMIC_RELEASE);
}

/* x's slab (of s) gets its map words again, now that s has its sheaf
 * array (percpu.h, rule 9): a slab published before slow start, found by
 * kfree.  Under pages_lock, which pages_free holds while it clears a slab's
 * words: a slab given back meanwhile is no longer PG_SLAB of s here. */
void pages_map_upgrade(struct kmem_cache *s, const void *x)
{
    struct slab *head = kslab_slab_head(s, x);
    kslab_lock(&pages_lock);
    if (head->pg_state == PG_SLAB && head->cache == s)
        map_write(head);
    kslab_unlock(&pages_lock);
}

void pages_free(struct slab *b, unsigned order)
{
    struct pending w = { 0 };
    atomic_fetch_sub_explicit(&pages_in_use, (size_t)1 << order, memory_order_relaxed);
    kslab_lock(&pages_lock);
    gmap_set(b, order, 0);      /* under the lock: pages_map_upgrade */
    struct arena *a = slab_arena(b);
    for (unsigned i = 0; i < (1u << order); i++) {
        atomic_store_explicit(pmap_slot(a, (size_t)(b - a->pages) + i), 0, memory_order_relaxed);
        b[i].cache = NULL;
        b[i].pg_order = 0;
        set_state(&b[i], PG_META);
    }
    hot_push(b, (size_t)1 << order);
    hot_trim(&w);
    kslab_unlock(&pages_lock);
    finish(&w);
}

/* Calls fn on the head descriptor of every live slab of cache s, with
 * pages_lock held: fn must not call back into the page layer.  Steps over
 * whole blocks: a head's size is stable while pages_lock is held (a large
 * block keeps its page count in the lock-free pcp transitions). */
void pages_for_each_slab(struct kmem_cache *s, void (*fn)(struct slab *, void *), void *arg)
{
    kslab_lock(&pages_lock);
    for (struct arena *a = arenas; a; a = a->next_arena)
        for (unsigned i = a->meta_pages; i < a->carved;) {
            struct slab *b = &a->pages[i];
            uint8_t st = __atomic_load_n(&b->pg_state, __ATOMIC_ACQUIRE);
            if (st == PG_SLAB && b->cache == s)
                fn(b, arg);
            if (st == PG_FREE || st == PG_SLAB || st == PG_NEW)
                i += 1u << b->pg_order;
            else if (st == PG_HOT || st == PG_LARGE || st == PG_PCP)
                i += b->pg_npages;
            else
                i++;
        }
    kslab_unlock(&pages_lock);
}

/* ---- large blocks -------------------------------------------------------------- */

void *pages_large_alloc(struct pages_pcp *pcp, size_t n, unsigned align_order, bool zero)
{
    unsigned c = page_class(n), k = pages_order(n);
    struct slab *b;
    bool dirty = true;
    void *p;
    if (pcp && c < PCP_CLASSES && align_order <= k && (p = pages_pcp_pop(pcp, c))) {
        b = addr_desc((uintptr_t)p);
    } else {
        if (pcp && pcp->refused == c + 1)
            pcp->lone = (uint8_t)(c + 1);       /* refused, then wanted again: keep it next time */
        struct pending w = { 0 };
        kslab_lock(&pages_lock);
        b = align_order <= k ? hot_pop(c) : NULL;
        if (!b) {
            if (align_order > k)
                k = align_order;
            b = buddy_take(k);
            if (!b) {
                kslab_unlock(&pages_lock);
                return NULL;
            }
            /* The tail beyond n pages goes back at once, as aligned pieces
             * (their buddies are inside this block, so no merge is possible). */
            for_each_piece(b, n, (size_t)1 << k, buddy_push);
            b->pg_npages = (uint32_t)n;
            dirty = false;          /* buddy memory was given back: it reads as zero */
        }
        atomic_fetch_add_explicit(&large_pages, n, memory_order_relaxed);
        hot_trim(&w);
        kslab_unlock(&pages_lock);
        finish(&w);
    }
    b->next = NULL;
    b->pg_order = (uint8_t)c;       /* a large head keeps its class here */
    set_state(b, PG_LARGE);
    p = slab_address(b);
    if (zero && dirty)
        memset(p, 0, n << PAGE_SHIFT);
    return p;
}

/* Move the blocks of list `l` (linked by ->next) to the hot reserve. */
static void pcp_to_hot(struct slab *l, size_t pages)
{
    struct pending w = { 0 };
    kslab_lock(&pages_lock);
    atomic_fetch_sub_explicit(&large_pages, pages, memory_order_relaxed);
    while (l) {
        struct slab *b = l;
        l = b->next;
        hot_push(b, b->pg_npages);
    }
    hot_trim(&w);
    kslab_unlock(&pages_lock);
    finish(&w);
}

static void pcp_move(struct pages_pcp *pcp, unsigned k, unsigned count, struct slab **out,
                     size_t *pages)
{
    while (count-- && pcp->list[k]) {
        struct slab *b = pcp->list[k];
        pcp->list[k] = b->next;
        pcp->count[k]--;
        __atomic_store_n(&pcp->pages, pcp->pages - b->pg_npages, __ATOMIC_RELAXED);
        *pages += b->pg_npages;
        b->next = *out;
        *out = b;
    }
}

/* Make room in pcp for a block of class c and n pages: half of class c's
 * list if it is at PCP_HIGH (the kernel's pcp batch), then whole lists,
 * largest first, while the pages would exceed PCP_MAX_PAGES. */
static void pcp_spill(struct pages_pcp *pcp, unsigned c, size_t n)
{
    struct slab *out = NULL;
    size_t pages = 0;
    if (pcp->count[c] >= PCP_HIGH)
        pcp_move(pcp, c, (pcp->count[c] + 1u) / 2u, &out, &pages);
    for (int k = PCP_CLASSES - 1; k >= 0 && pcp->pages + n > PCP_MAX_PAGES; k--)
        pcp_move(pcp, (unsigned)k, ~0u, &out, &pages);
    if (out)
        pcp_to_hot(out, pages);
}

bool pages_large_free(struct pages_pcp *pcp, struct slab *b)
{
    /* One winner if two threads free the block at once (a double free):
     * relaxed, because the CAS only decides who owns the block; the user's
     * synchronisation ordered the block's contents before this free. */
    uint8_t expect = PG_LARGE;
    if (!__atomic_compare_exchange_n(&b->pg_state, &expect, PG_PCP, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return false;
    size_t n = b->pg_npages;
    unsigned c = b->pg_order;       /* its class */
    if (pcp && c < PCP_CLASSES) {
        pcp_spill(pcp, c, n);       /* after which the push fits */
        if (pages_pcp_push(pcp, b))
            return true;
    }
    b->next = NULL;
    pcp_to_hot(b, n);
    return true;
}

void pages_pcp_drain(struct pages_pcp *pcp)
{
    struct slab *out = NULL;
    size_t pages = 0;
    for (unsigned c = 0; c < PCP_CLASSES; c++)
        pcp_move(pcp, c, ~0u, &out, &pages);
    if (out)
        pcp_to_hot(out, pages);
}

/* For reports: the large block (live or in a pcp list) whose pages hold x,
 * found by walking back to its head. */
struct slab *pages_large_containing(const void *x)
{
    struct slab *d = addr_desc((uintptr_t)x);
    struct arena *a = slab_arena(d);
    for (size_t i = (size_t)(d - a->pages), back = 0; i >= a->meta_pages && back < 1024;
         i--, back++) {
        struct slab *h = &a->pages[i];
        uint8_t st = get_state(h);
        if (st == PG_LARGE || st == PG_PCP)
            return i + h->pg_npages > (size_t)(d - a->pages) ? h : NULL;
        if (st != PG_META || h->cache)
            return NULL;
        if (i == 0)
            break;
    }
    return NULL;
}

/* ---- huge blocks ------------------------------------------------------------------ */

static struct kmem_cache *huge_hdr_cache(void)
{
    return kslab_kmalloc_cache(sizeof(struct huge_hdr));
}

static void huge_cache_add(struct huge_hdr *h)     /* pages_lock held */
{
    __atomic_store_n(&h->cached, 1, __ATOMIC_RELAXED);
    h->tick = (uint32_t)decay_tick_no;
    h->next = huge_cache;
    huge_cache = h;
    huge_cache_n++;
    huge_cache_bytes += h->size;
}

/* Unmap a huge block's mapping (no lock held), its chunk entries first. */
static void huge_unmap(struct huge_hdr *h)
{
    if (prim_unmap(h->base, h->size)) {
        chunk_map_set(h->base, h->size, 0);
        kmem_cache_free(huge_hdr_cache(), h);
        return;
    }
    /* Refused (the mapping limit): give the memory back and keep the
     * mapping in the cache, over its bound, for reuse or a later try. */
    release_failed("munmap", h->base, h->size);
    (void)prim_release(h->base, h->size);
    kslab_lock(&pages_lock);
    huge_cache_add(h);
    kslab_unlock(&pages_lock);
}

/* A cached mapping keeps its chunk entries, marked cached, so reusing it
 * writes no table and a free of it is still recognised as a double free. */
void *huge_alloc(size_t bytes, size_t align, bool zero)
{
    if (align < CHUNK_SIZE)
        align = CHUNK_SIZE;
    struct huge_hdr *h = NULL;
    kslab_lock(&pages_lock);
    if (!zero) {                    /* a cached mapping is dirty: calloc maps fresh */
        struct huge_hdr **best = NULL;
        for (struct huge_hdr **pp = &huge_cache; *pp; pp = &(*pp)->next) {
            struct huge_hdr *c = *pp;
            if (c->size >= bytes && c->size - bytes <= bytes / 4 &&
                !((uintptr_t)c->base & (align - 1)) && (!best || c->size < (*best)->size))
                best = pp;
        }
        if (best) {
            h = *best;
            *best = h->next;
            huge_cache_n--;
            huge_cache_bytes -= h->size;
            __atomic_store_n(&h->cached, 0, __ATOMIC_RELAXED);
            huge_bytes += h->size;
            huge_live++;
        }
    }
    kslab_unlock(&pages_lock);
    if (h)
        return h->base;
    h = kmem_cache_alloc(huge_hdr_cache(), GFP_KERNEL);
    if (!h)
        return NULL;
    memset(h, 0, sizeof *h);
    h->base = prim_map_aligned(bytes, align);
    if (!h->base) {
        kmem_cache_free(huge_hdr_cache(), h);
        return NULL;
    }
    h->size = bytes;
    if (!chunk_map_set(h->base, h->size, (uintptr_t)h | CHUNK_HUGE)) {
        chunk_map_set(h->base, h->size, 0);
        if (!prim_unmap(h->base, h->size))
            release_failed("munmap", h->base, h->size);   /* address space only: untouched */
        kmem_cache_free(huge_hdr_cache(), h);
        return NULL;
    }
    kslab_lock(&pages_lock);
    huge_bytes += h->size;
    huge_live++;
    kslab_unlock(&pages_lock);
    return h->base;
}

/* Live mappings made by huge_alloc_realloc.  Relaxed: a bound on a count,
 * ordering nothing. */
static _Atomic unsigned realloc_maps;

void *huge_alloc_realloc(size_t bytes)
{
    unsigned n = atomic_load_explicit(&realloc_maps, memory_order_relaxed);
    do {
        if (n >= REALLOC_MAPS_MAX)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&realloc_maps, &n, n + 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    void *p = huge_alloc(bytes, CHUNK_SIZE, false);
    if (!p) {
        atomic_fetch_sub_explicit(&realloc_maps, 1, memory_order_relaxed);
        return NULL;
    }
    huge_of(p)->counted = 1;        /* the block is the caller's alone until returned */
    return p;
}

void huge_free(struct huge_hdr *h)
{
    struct pending w = { 0 };
    if (h->counted) {
        h->counted = 0;
        atomic_fetch_sub_explicit(&realloc_maps, 1, memory_order_relaxed);
    }
    kslab_lock(&pages_lock);
    huge_bytes -= h->size;
    huge_live--;
    if (huge_cache_n < HUGE_CACHE_MAX && huge_cache_bytes + h->size <= HUGE_CACHE_BYTES) {
        huge_cache_add(h);
    } else {
        h->next = NULL;
        w.maps = h;
    }
    hot_trim(&w);
    kslab_unlock(&pages_lock);
    finish(&w);
}

void *huge_resize(struct huge_hdr *h, size_t bytes)
{
    size_t old = h->size;
    uintptr_t tag = (uintptr_t)h | CHUNK_HUGE;
    if (bytes == old)
        return h->base;
    if (bytes < old) {              /* unmapping a tail never splits a mapping */
        if (!prim_unmap((char *)h->base + bytes, old - bytes))
            return NULL;
        size_t keep = ALIGN_UP(bytes, CHUNK_SIZE);
        if (keep < old)
            chunk_map_set((char *)h->base + keep, old - keep, 0);
        kslab_lock(&pages_lock);
        huge_bytes -= old - bytes;
        h->size = bytes;
        kslab_unlock(&pages_lock);
        return h->base;
    }
    if (prim_remap(h->base, old, bytes, NULL)) {          /* grown in place */
        if (!chunk_map_set(h->base, bytes, tag)) {
            (void)prim_remap(h->base, bytes, old, NULL);  /* shrinking in place cannot fail */
            return NULL;
        }
    } else {                        /* move the pages to a chunk-aligned range */
        void *to = prim_map_aligned(bytes, CHUNK_SIZE);
        if (!to)
            return NULL;
        if (!chunk_map_set(to, bytes, tag) || !prim_remap(h->base, old, bytes, to)) {
            chunk_map_set(to, bytes, 0);
            chunk_map_set(h->base, old, tag);             /* a shared chunk: restore ours */
            if (!prim_unmap(to, bytes))
                release_failed("munmap", to, bytes);
            return NULL;
        }
        chunk_map_set(h->base, old, 0);
        h->base = to;
    }
    kslab_lock(&pages_lock);
    huge_bytes += bytes - old;
    h->size = bytes;
    kslab_unlock(&pages_lock);
    return h->base;
}

/* ---- everything back -------------------------------------------------------------- */

size_t pages_release_all(void)
{
    struct pending w = { 0 };
    kslab_lock(&pages_lock);
    size_t bytes = (hot_pages << PAGE_SHIFT) + huge_cache_bytes;
    hot_take(&w, hot_pages);
    hot_min = 0;
    w.maps = huge_cache;
    huge_cache = NULL;
    huge_cache_n = 0;
    huge_cache_bytes = 0;
    kslab_unlock(&pages_lock);
    finish(&w);
    return bytes;
}

void pages_memory(struct kslab_memory *m)
{
    m->slab_bytes = kslab_pages_in_use() << PAGE_SHIFT;
    m->large_bytes = atomic_load_explicit(&large_pages, memory_order_relaxed) << PAGE_SHIFT;
    kslab_lock(&pages_lock);
    /* under pages_lock, as arena_grow counts both: the difference below is
     * never negative */
    uint64_t arenas_n = atomic_load_explicit(&nr_arenas, memory_order_relaxed);
    m->arena_bytes = arenas_n * ARENA_SIZE;
    m->huge_bytes = huge_bytes;
    m->hot_bytes = hot_pages << PAGE_SHIFT;
    m->huge_cached_bytes = huge_cache_bytes;
    /* the zone is six mappings (its granule map, its page map and its
     * arenas, each a read-write part and a PROT_NONE rest; five once its
     * arenas fill it); every other arena is one */
    uintptr_t zone_used = atomic_load_explicit(&kslab_zone.used, memory_order_relaxed);
    uint64_t zoned = zone_used / ARENA_SIZE;
    m->mappings = (kslab_zone.size ? 5 + (zone_used < kslab_zone.size) : 0) + (arenas_n - zoned) +
                  huge_live + huge_cache_n + atomic_load_explicit(&nr_tables, memory_order_relaxed);
    kslab_unlock(&pages_lock);
    m->release_failures = atomic_load_explicit(&release_failures, memory_order_relaxed);
}

/* ---- introspection, for the internal tests ------------------------------------------ */

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

unsigned pages_uncarved(const struct slab **first)
{
    kslab_lock(&pages_lock);
    struct arena *a = arenas;
    unsigned n = a ? ARENA_PAGES - a->carved : 0;
    if (first)
        *first = a && n ? &a->pages[a->carved] : NULL;
    kslab_unlock(&pages_lock);
    return n;
}

int pages_free_order(const void *p)
{
    struct arena *a = (struct arena *)((uintptr_t)p & ~(ARENA_SIZE - 1));
    kslab_lock(&pages_lock);
    int o = free_order_locked(a, ((uintptr_t)p >> PAGE_SHIFT) & (ARENA_PAGES - 1));
    kslab_unlock(&pages_lock);
    return o;
}

static bool on_list(struct slab *l, const struct slab *b)
{
    while (l && l != b)
        l = l->next;
    return l != NULL;
}

/* Check every arena: its pages are an exact partition into blocks (free
 * buddy blocks, naturally aligned; slabs; large, pcp and hot blocks of a
 * class size, aligned to their order), free blocks are on their order's
 * list, hot blocks on their class's list, every page inside a block is
 * PG_META (and names the slab's cache, or none), and no two free buddies
 * were left unmerged.  Returns the violations.  Call it with no thread
 * allocating. */
long pages_check(void)
{
    long bad = 0;
    kslab_lock(&pages_lock);
    for (struct arena *a = arenas; a; a = a->next_arena) {
        for (unsigned i = 0; i < a->meta_pages; i++)
            bad += a->pages[i].pg_state != PG_META;
        if (a->carved < a->meta_pages || a->carved > ARENA_PAGES ||
            (a->carved < ARENA_PAGES && a != arenas))
            bad++;                         /* only the newest arena is part carved */
        for (unsigned i = a->carved; i < ARENA_PAGES; i++)
            bad += a->pages[i].pg_state != PG_META || a->pages[i].cache != NULL;
        unsigned i = a->meta_pages;
        while (i < a->carved) {
            struct slab *b = &a->pages[i];
            uint8_t st = b->pg_state;
            size_t n, align;
            if (st == PG_FREE || st == PG_SLAB || st == PG_NEW) {
                n = align = (size_t)1 << b->pg_order;
                if (b->pg_order > MAX_PAGE_ORDER) {
                    bad++;
                    break;
                }
            } else if (st == PG_HOT || st == PG_LARGE || st == PG_PCP) {
                n = b->pg_npages;
                if (n == 0 || n > ((size_t)1 << MAX_PAGE_ORDER) || pages_round(n) != n) {
                    bad++;
                    break;
                }
                align = (size_t)1 << pages_order(n);
            } else {
                bad++;                     /* a page that heads nothing */
                break;
            }
            if ((i & (align - 1)) || i + n > a->carved) {
                bad++;
                break;
            }
            if (st == PG_FREE) {
                bad += !on_list(free_area[b->pg_order], b);
                size_t bi = i ^ n;
                if (b->pg_order < MAX_PAGE_ORDER && bi >= a->meta_pages && bi + n <= ARENA_PAGES &&
                    a->pages[bi].pg_state == PG_FREE && a->pages[bi].pg_order == b->pg_order)
                    bad++;                 /* unmerged buddies */
            }
            if (st == PG_HOT)
                bad += !on_list(hot[page_class(n)], b);
            if (st != PG_SLAB && st != PG_NEW)
                bad += b->cache != NULL;
            for (size_t k = 1; k < n; k++)
                bad += b[k].pg_state != PG_META ||
                       b[k].cache != ((st == PG_SLAB || st == PG_NEW) ? b->cache : NULL);
            i += (unsigned)n;
        }
    }
    kslab_unlock(&pages_lock);
    return bad;
}

void pages_atfork(int phase)
{
    kslab_lock_atfork(&pages_lock, phase);
    kslab_lock_atfork(&map_lock, phase);
}
