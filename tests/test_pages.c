/* test_pages.c - internal unit tests, linked against the static library and
 * its internal headers: the buddy allocator (natural alignment, split, merge,
 * publication), the chunk map and arena bitmap, and obj_index() over every
 * object size and offset. */
#include "check.h"
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "slub.h"
#include "percpu.h"

static struct kmem_cache owner_a, owner_b;   /* opaque owners for the page layer */

static void test_buddy_orders(void)
{
    for (unsigned order = 0; order <= MAX_PAGE_ORDER; order++) {
        uint64_t before = kslab_pages_in_use();
        struct slab *b = pages_alloc(order, &owner_a);
        CHECK(b != NULL);
        if (!b)
            continue;
        char *mem = slab_address(b);
        CHECK_EQ((uintptr_t)mem % (PAGE_SIZE << order), 0);   /* naturally aligned */
        CHECK(in_arena(mem) && in_arena(mem + (PAGE_SIZE << order) - 1));
        CHECK_EQ(kslab_pages_in_use(), before + (1u << order));
        CHECK_EQ(b->pg_state, PG_NEW);                        /* not yet published */
        for (unsigned i = 0; i < (1u << order); i++) {
            CHECK(b[i].cache == &owner_a);
            CHECK_EQ(b[i].pg_order, order);
            CHECK(addr_desc((uintptr_t)mem + i * PAGE_SIZE) == &b[i]);
        }
        memset(mem, 0x5a, PAGE_SIZE << order);                /* the memory is ours */
        pages_publish(b);
        CHECK_EQ(b->pg_state, PG_SLAB);
        pages_free(b, order);
        CHECK_EQ(kslab_pages_in_use(), before);
        CHECK(b->cache == NULL);
    }
    pages_release_all();
}

/* Random splits and merges: after every release the arenas must be an exact
 * partition into aligned blocks, with no two free buddies left unmerged
 * (pages_check counts violations). */
static void test_buddy_split_merge(void)
{
    uint64_t rng = test_seed(12345);
    struct { struct slab *b; unsigned order; } held[256];
    unsigned n = 0;
    for (int round = 0; round < 2000; round++) {
        if (n < 256 && (n == 0 || test_rand(&rng) % 3)) {
            unsigned order = (unsigned)(test_rand(&rng) % (MAX_PAGE_ORDER + 1));
            if (order > 4 && test_rand(&rng) % 4)
                order = 0;                       /* mostly small blocks: many splits */
            struct slab *b = pages_alloc(order, &owner_a);
            CHECK(b != NULL);
            if (b) {
                pages_publish(b);
                held[n].b = b;
                held[n++].order = order;
            }
        } else {
            unsigned k = (unsigned)(test_rand(&rng) % n);
            pages_free(held[k].b, held[k].order);
            held[k] = held[--n];
        }
        if (round % 250 == 0) {
            pages_release_all();
            CHECK_EQ(pages_check(), 0);
        }
    }
    while (n) {
        n--;
        pages_free(held[n].b, held[n].order);
    }
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
    /* two order-0 halves of one block, freed separately, merge again */
    struct slab *x = pages_alloc(1, &owner_a);
    CHECK(x != NULL);
    char *xm = slab_address(x);
    pages_free(&x[0], 0);
    pages_free(&x[1], 0);
    pages_release_all();
    CHECK(pages_free_order(xm) >= 1);
    CHECK(pages_free_order(xm + PAGE_SIZE) >= 1);
    CHECK_EQ(pages_check(), 0);
}

/* Arenas are carved lazily: a fresh process's first allocation leaves
 * almost all of its arena off the buddy, with the descriptor table of that
 * part never written (not resident), and carving goes on block by block,
 * into a second arena, with the invariants kept.  Runs first. */
static void test_lazy_carve(void)
{
    const struct slab *first;
    struct slab *b = pages_alloc(0, &owner_a);
    CHECK(b != NULL);
    unsigned before = pages_uncarved(&first);
    CHECK(before > ARENA_PAGES - 2048);
    CHECK(first != NULL);
    if (first) {
        /* the table's pages past the carved part's: none resident */
        uintptr_t lo = ALIGN_UP((uintptr_t)first + sizeof *first, PAGE_SIZE);
        uintptr_t hi = ((uintptr_t)(first + before)) & ~(uintptr_t)(PAGE_SIZE - 1);
        size_t np = (hi - lo) / PAGE_SIZE, resident = 0;
        unsigned char *vec = malloc(np);
        CHECK(vec && mincore((void *)lo, hi - lo, vec) == 0);
        for (size_t i = 0; vec && i < np; i++)
            resident += vec[i] & 1;
        CHECK_EQ(resident, 0);
        free(vec);
    }
    struct slab *c = pages_alloc(0, &owner_a);
    CHECK(c != NULL);
    CHECK(pages_uncarved(NULL) + 16 > before);    /* a page costs a few small blocks */
    pages_publish(b);
    pages_publish(c);
    struct slab *big[24];
    for (int i = 0; i < 24; i++) {                /* more than one arena holds */
        big[i] = pages_alloc(MAX_PAGE_ORDER, &owner_b);
        CHECK(big[i] != NULL);
        if (big[i])
            pages_publish(big[i]);
    }
    CHECK_EQ(pages_check(), 0);
    CHECK(pages_uncarved(NULL) < ARENA_PAGES);    /* a second arena, part carved */
    for (int i = 0; i < 24; i++)
        if (big[i])
            pages_free(big[i], MAX_PAGE_ORDER);
    pages_free(b, 0);
    pages_free(c, 0);
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
}

static int walked;
static void count_slab(struct slab *s, void *arg) { walked++; }

/* Walkers see published blocks of their owner only. */
static void test_publish_walk(void)
{
    struct slab *a = pages_alloc(0, &owner_b), *b = pages_alloc(1, &owner_b),
                *c = pages_alloc(0, &owner_b);
    CHECK(a && b && c);
    pages_publish(a);
    pages_publish(b);
    walked = 0;
    pages_for_each_slab(&owner_b, count_slab, NULL);
    CHECK_EQ(walked, 2);                                      /* c is still PG_NEW */
    pages_publish(c);
    walked = 0;
    pages_for_each_slab(&owner_b, count_slab, NULL);   /* what destroy's kslab_take_slabs walks */
    CHECK_EQ(walked, 3);
    pages_free(a, 0);
    pages_free(b, 1);
    pages_free(c, 0);
    walked = 0;
    pages_for_each_slab(&owner_b, count_slab, NULL);
    CHECK_EQ(walked, 0);
    pages_release_all();
}

/* Page classes: four per doubling, every power of two a class, waste
 * under a quarter, and class <-> pages round trips. */
static void test_page_classes(void)
{
    size_t prev = 0;
    for (unsigned c = 0; c < PAGE_CLASSES; c++) {
        size_t n = class_pages(c);
        CHECK(n > prev);
        CHECK_EQ(page_class(n), c);
        CHECK_EQ(pages_round(n), n);
        prev = n;
    }
    CHECK_EQ(prev, (size_t)1 << MAX_PAGE_ORDER);
    for (size_t n = 1; n <= 4096; n++) {
        size_t r = pages_round(n);
        CHECK(r >= n && (r - n) * 5 < r + 5);           /* at most a fifth wasted (+1 page) */
        if (r <= 1024)
            CHECK_EQ(class_pages(page_class(r)), r);
    }
    for (unsigned o = 0; o <= MAX_PAGE_ORDER; o++)
        CHECK_EQ(pages_round((size_t)1 << o), (size_t)1 << o);
    CHECK_EQ(pages_order(1), 0);
    CHECK_EQ(pages_order(3), 2);
    CHECK_EQ(pages_order(1024), 10);
}

/* Large blocks: exact class sizes cut from the buddy (the tail goes back),
 * aligned, zeroed on request, named by their head only, freed once. */
static void test_large_blocks(void)
{
    static const size_t ns[] = { 1, 2, 3, 5, 7, 10, 12, 20, 112, 640, 1024 };
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        size_t n = ns[k];
        char *p = pages_large_alloc(NULL, n, 0, true);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(in_arena(p));
        CHECK_EQ((uintptr_t)p % (PAGE_SIZE << pages_order(n)), 0);
        struct slab *h = pages_large_head(p);
        CHECK(h != NULL);
        CHECK_EQ(pages_large_size(h), n * PAGE_SIZE);
        size_t nz = 0;
        for (size_t i = 0; i < n * PAGE_SIZE; i += 512)
            nz += p[i] != 0;
        CHECK_EQ(nz, 0);
        memset(p, 0xa5, n * PAGE_SIZE);
        for (size_t i = 0; i < n; i++)
            CHECK(addr_desc((uintptr_t)p + i * PAGE_SIZE)->cache == NULL);
        if (n > 1) {
            CHECK(pages_large_head(p + PAGE_SIZE) == NULL);
            CHECK(pages_large_containing(p + n * PAGE_SIZE - 1) == h);
        }
        CHECK(pages_large_head(p + 16) == NULL);
        if (((size_t)1 << pages_order(n)) != n)
            CHECK(pages_free_order(p + n * PAGE_SIZE) >= 0);   /* the tail went back */
        CHECK_EQ(pages_check(), 0);
        CHECK(pages_large_free(NULL, h));
        CHECK(!pages_large_free(NULL, h));                 /* a second free is refused */
        CHECK(pages_large_head(p) == NULL);
        CHECK_EQ(pages_check(), 0);
    }
    /* alignment beyond the size's own */
    char *q = pages_large_alloc(NULL, 3, 6, false);
    CHECK(q != NULL && (uintptr_t)q % (PAGE_SIZE << 6) == 0);
    CHECK(pages_large_free(NULL, pages_large_head(q)));
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
    struct kslab_memory m;
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, 0);
}

/* Slabs reuse backed memory first: with the reserve holding only a freed
 * 10-page large block, slabs of one and two pages are cut from it (not
 * from the buddy's given-back pages), and the rest stays in the reserve. */
static void test_hot_cut(void)
{
    pages_release_all();
    char *p = pages_large_alloc(NULL, 10, 0, false);
    CHECK(p != NULL);
    memset(p, 0x3c, 10 * PAGE_SIZE);
    CHECK(pages_large_free(NULL, pages_large_head(p)));     /* no pcp: to the reserve */
    struct kslab_memory m;
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, 10 * PAGE_SIZE);
    struct slab *s0 = pages_alloc(0, &owner_a), *s1 = pages_alloc(1, &owner_b);
    CHECK(s0 && s1);
    char *a0 = slab_address(s0), *a1 = slab_address(s1);
    CHECK(a0 >= p && a0 < p + 10 * PAGE_SIZE);
    CHECK(a1 >= p && a1 + 2 * PAGE_SIZE <= p + 10 * PAGE_SIZE);
    CHECK_EQ((uintptr_t)a1 % (2 * PAGE_SIZE), 0);
    CHECK_EQ((unsigned char)a0[0], 0x3c);                   /* the same, backed memory */
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, 7 * PAGE_SIZE);
    CHECK_EQ(pages_check(), 0);
    pages_publish(s0);
    pages_publish(s1);
    pages_free(s0, 0);
    pages_free(s1, 1);
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
}

/* The decay tick (KSLAB_DECAY_MS): a freed block the reserve does not need
 * for a whole tick goes back to the OS; with 0 nothing goes back by the
 * clock.  A one-page large block allocated and freed over and over (global
 * operations, which run the tick) keeps the reserve at 8 or 9 pages, so the
 * 8-page block below sits unused: gone after two ticks (the first sets the
 * low-water mark), kept for as long as this runs with the tick off. */
static int decay_spin(double seconds, size_t keep_pages)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        for (int i = 0; i < 64; i++) {
            char *q = pages_large_alloc(NULL, 1, 0, false);
            CHECK(q != NULL);
            q[0] = 1;
            CHECK(pages_large_free(NULL, pages_large_head(q)));
        }
        struct kslab_memory m;
        kslab_memory(&m);
        if (m.hot_bytes < keep_pages * PAGE_SIZE)
            return 1;                           /* given back */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
            return 0;
        usleep(2000);
    }
}

static void test_decay(void)
{
    CHECK_EQ(kslab_opts.decay_ns, 1000000000ull);   /* the default: 1 s */
    uint64_t saved = kslab_opts.decay_ns;
    for (int off = 1; off >= 0; off--) {
        pages_release_all();
        kslab_opts.decay_ns = off ? 0 : 20 * 1000000ull;
        char *p = pages_large_alloc(NULL, 8, 0, false);
        CHECK(p != NULL);
        memset(p, 0x2d, 8 * PAGE_SIZE);
        CHECK(pages_large_free(NULL, pages_large_head(p)));
        struct kslab_memory m;
        kslab_memory(&m);
        CHECK_EQ(m.hot_bytes, 8 * PAGE_SIZE);
        /* off: 0.3 s, 15 of the 20 ms ticks; on: up to 10 s for two */
        int gone = decay_spin(off ? 0.3 : 10, 8);
        CHECK_EQ(gone, !off);
        CHECK_EQ(pages_check(), 0);
    }
    kslab_opts.decay_ns = saved;
    pages_release_all();
}

/* The largest blocks are not bounced off the OS: a freed 4 MiB block with
 * nothing else in use stays in the reserve (its floor is 4 MiB) and the
 * next request of its class gets it back, still backed.  Before the floor,
 * each such free gave the block back and the next malloc faulted it in. */
static void test_hot_floor(void)
{
    pages_release_all();
    size_t n = (size_t)1 << MAX_PAGE_ORDER;
    char *p = pages_large_alloc(NULL, n, 0, false);
    CHECK(p != NULL);
    memset(p, 0x5e, n * PAGE_SIZE);
    CHECK(pages_large_free(NULL, pages_large_head(p)));
    struct kslab_memory m;
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, n * PAGE_SIZE);
    char *q = pages_large_alloc(NULL, n, 0, false);
    CHECK(q == p);
    CHECK_EQ((unsigned char)q[n * PAGE_SIZE - 1], 0x5e);    /* the same, backed memory */
    CHECK(pages_large_free(NULL, pages_large_head(q)));
    pages_release_all();
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, 0);
    CHECK_EQ(pages_check(), 0);
}

/* A block over the pcp budget (here 4 MiB, the largest class) is refused
 * the first time; once the thread asks for its class again, one such block
 * waits alone in the pcp list and is reused with no lock. */
static void test_pcp_lone(void)
{
    struct pages_pcp pcp;
    memset(&pcp, 0, sizeof pcp);
    size_t n = (size_t)1 << MAX_PAGE_ORDER;
    unsigned c = page_class(n);
    char *a = pages_large_alloc(&pcp, n, 0, false);
    CHECK(a != NULL);
    CHECK(pages_large_free(&pcp, pages_large_head(a)));
    CHECK_EQ(pcp.count[c], 0);                              /* refused: over the budget */
    CHECK_EQ(pcp.refused, c + 1);
    char *b = pages_large_alloc(&pcp, n, 0, false);         /* wanted again */
    CHECK(b != NULL);
    CHECK_EQ(pcp.lone, c + 1);
    CHECK(pages_large_free(&pcp, pages_large_head(b)));
    CHECK_EQ(pcp.count[c], 1);                              /* kept alone */
    CHECK_EQ(pcp.pages, n);
    char *d = pages_large_alloc(&pcp, n, 0, true);
    CHECK(d == b);
    CHECK(d[0] == 0 && d[n * PAGE_SIZE - 1] == 0);          /* zeroed on request */
    CHECK_EQ(pcp.pages, 0);
    CHECK(pages_large_free(&pcp, pages_large_head(d)));
    pages_pcp_drain(&pcp);
    CHECK_EQ(pcp.pages, 0);
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
}

/* The pcp lists: LIFO reuse by the owner, bounded per class and in all,
 * drained back; kzalloc-style requests still read zero on reuse. */
static void test_pcp(void)
{
    struct pages_pcp pcp;
    memset(&pcp, 0, sizeof pcp);
    char *a = pages_large_alloc(&pcp, 4, 0, false);
    CHECK(a != NULL);
    memset(a, 0x77, 4 * PAGE_SIZE);
    CHECK(pages_large_free(&pcp, pages_large_head(a)));
    CHECK_EQ(pcp.count[page_class(4)], 1);
    CHECK_EQ(pcp.pages, 4);
    char *b = pages_large_alloc(&pcp, 4, 0, true);
    CHECK(b == a);                                          /* reused, and zeroed */
    CHECK(b[0] == 0 && b[4 * PAGE_SIZE - 1] == 0);
    CHECK_EQ(pcp.pages, 0);
    CHECK(pages_large_free(&pcp, pages_large_head(b)));
    char *many[64];
    for (int i = 0; i < 64; i++)
        many[i] = pages_large_alloc(&pcp, 2, 0, false);
    for (int i = 0; i < 64; i++)
        CHECK(pages_large_free(&pcp, pages_large_head(many[i])));
    CHECK(pcp.count[page_class(2)] <= PCP_HIGH);
    char *big[8];
    for (int i = 0; i < 8; i++)
        big[i] = pages_large_alloc(&pcp, 112, 0, false);
    for (int i = 0; i < 8; i++)
        CHECK(pages_large_free(&pcp, pages_large_head(big[i])));
    CHECK(pcp.pages <= PCP_MAX_PAGES);
    unsigned sum = 0;
    for (unsigned c = 0; c < PCP_CLASSES; c++)
        sum += pcp.count[c] * class_pages(c);
    CHECK_EQ(sum, pcp.pages);
    CHECK_EQ(pages_check(), 0);
    pages_pcp_drain(&pcp);
    CHECK_EQ(pcp.pages, 0);
    pages_release_all();
    CHECK_EQ(pages_check(), 0);
}

/* Huge blocks: in the chunk map, not in the arena bitmap; resized with
 * mremap (contents kept), cached when freed, released on demand. */
static void test_huge(void)
{
    size_t sz = 5 * CHUNK_SIZE / 4;
    char *p = huge_alloc(ALIGN_UP(sz, PAGE_SIZE), 0, true);
    CHECK(p != NULL);
    CHECK(!in_arena(p));
    CHECK_EQ((uintptr_t)p % CHUNK_SIZE, 0);
    struct huge_hdr *h = huge_of(p);
    CHECK(h != NULL && h->base == p && h->size >= sz);
    CHECK(huge_of(p + sz - 1) == h);
    for (size_t i = 0; i < sz; i += 4096)
        p[i] = (char)(i >> 12);
    char *g = huge_resize(h, 10 * CHUNK_SIZE);               /* grow: no copy */
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK(h->base == g && h->size == 10 * CHUNK_SIZE);
    CHECK(huge_of(g + 10 * CHUNK_SIZE - 1) == h);
    long bad = 0;
    for (size_t i = 0; i < sz; i += 4096)
        bad += g[i] != (char)(i >> 12);
    CHECK_EQ(bad, 0);
    CHECK_EQ(g[9 * CHUNK_SIZE], 0);                          /* new pages read zero */
    CHECK(huge_resize(h, 2 * CHUNK_SIZE) == g);              /* shrink in place */
    CHECK(huge_of(g + 3 * CHUNK_SIZE) == NULL);
    CHECK_EQ(g[CHUNK_SIZE + 4096], (char)((CHUNK_SIZE + 4096) >> 12));
    huge_free(h);
    CHECK(huge_of(g) != NULL && !huge_is_live(huge_of(g)));   /* cached, marked */
    struct kslab_memory m;
    kslab_memory(&m);
    CHECK_EQ(m.huge_cached_bytes, 2 * CHUNK_SIZE);
    char *r = huge_alloc(2 * CHUNK_SIZE, 0, false);          /* the cached mapping again */
    CHECK(r == g);
    huge_free(huge_of(r));
    pages_release_all();
    kslab_memory(&m);
    CHECK_EQ(m.huge_cached_bytes, 0);
    int x;
    CHECK(huge_of(&x) == NULL);
    CHECK(!in_arena(&x));
    CHECK_EQ(chunk_entry((void *)(1ull << 50)), 0);            /* beyond 47 bits */
}

/* When the OS refuses madvise or munmap, nothing is lost: the blocks stay
 * in the reserve (the mappings in the cache), counted, and go back once
 * the OS agrees. */
static void test_release_failures(void)
{
    struct kslab_memory m0, m;
    pages_release_all();
    kslab_memory(&m0);
    char *p[16];
    for (int i = 0; i < 16; i++)
        p[i] = pages_large_alloc(NULL, 8, 0, false);
    for (int i = 0; i < 16; i++)
        memset(p[i], 1, 8 * PAGE_SIZE);
    struct huge_hdr *hh[HUGE_CACHE_MAX + 2];
    for (int i = 0; i < HUGE_CACHE_MAX + 2; i++)
        hh[i] = huge_of(huge_alloc(2 * CHUNK_SIZE, 0, false));
    kslab_test_fail_unmap(-1);
    for (int i = 0; i < 16; i++)
        pages_large_free(NULL, pages_large_head(p[i]));
    for (int i = 0; i < HUGE_CACHE_MAX + 2; i++)
        huge_free(hh[i]);
    pages_release_all();
    kslab_memory(&m);
    CHECK(m.release_failures > m0.release_failures);
    CHECK(m.hot_bytes >= 16 * 8 * PAGE_SIZE);               /* kept, still usable */
    CHECK_EQ(m.huge_cached_bytes, (HUGE_CACHE_MAX + 2) * 2 * CHUNK_SIZE);
    CHECK_EQ(pages_check(), 0);
    kslab_test_fail_unmap(0);
    pages_release_all();
    kslab_memory(&m);
    CHECK_EQ(m.hot_bytes, 0);
    CHECK_EQ(m.huge_cached_bytes, 0);
    CHECK_EQ(pages_check(), 0);
}

/* obj_index(s, off) < s->objects exactly when an object starts at off. */
static long check_geometry(struct kmem_cache *s, long step)
{
    long bad = 0;
    long slab = (long)(PAGE_SIZE << s->order);
    for (long off = -2 * (long)s->size; off < slab + 2 * (long)s->size; off += step) {
        bool want = off >= 0 && off % s->size == 0 && off / s->size < s->objects;
        bool got = obj_index(s, (uintptr_t)off) < s->objects;
        if (want != got && bad++ < 5)
            fprintf(stderr, "obj_index: size %u offset %ld: %d, want %d\n", s->size, off, got,
                    want);
        if (got && obj_index(s, (uintptr_t)off) != (uint64_t)(off / s->size))
            bad++;
    }
    /* the offsets next to every object start, and the starts themselves */
    for (long i = 0; i <= (long)s->objects; i++)
        for (long d = -9; d <= 9; d++) {
            long off = i * (long)s->size + d;
            bool want = off >= 0 && off % s->size == 0 && off / s->size < s->objects;
            bad += (obj_index(s, (uintptr_t)off) < s->objects) != want;
        }
    return bad;
}

static void test_obj_index(void)
{
    long bad = 0, sizes = 0;
    for (unsigned size = 8; size <= (1u << 20); size += size < 16384 ? 8 : 4096 + 8) {
        struct kmem_cache s;
        memset(&s, 0, sizeof s);
        s.object_size = size;
        s.align = 8;
        if (slub_cache_init(&s))
            continue;
        sizes++;
        bad += check_geometry(&s, size <= 4096 ? 1 : 7);
    }
    CHECK(sizes > 2000);
    CHECK_EQ(bad, 0);
}

/* The arena zone (pages.h): arenas cut from one reservation, whose frees
 * find their map entry in the zone's map; past it (KSLAB_ZONE_MB=64:
 * test_pages.zone64, one arena) or without it (KSLAB_ZONE_MB=0:
 * test_pages.nozone), arenas mapped one by one with their own map.  40
 * blocks of 4 MiB take three arenas at least. */
static void free_past_zone(void *arg)       /* reserved, not yet an arena */
{
    kfree((char *)kslab_zone.base + atomic_load(&kslab_zone.used) + 4096);
}
static void free_zone_map(void *arg)        /* the zone's own map */
{
    kfree((char *)kslab_zone.base - 4096);
}
/* KSLAB_ZONE_MB as kslab_env_number reads it: the empty string is unset */
static const char *zone_env(void)
{
    const char *env = getenv("KSLAB_ZONE_MB");
    return env && *env ? env : NULL;
}
/* zone_entry both ways (free's, the granule's word first; kfree's, the
 * page's alone): the same answer and the same word. */
static bool zone_entry2(uintptr_t a, uint64_t *e)
{
    uint64_t g = 0, p = 0;
    bool in_g = zone_entry(a, &g, true), in_p = zone_entry(a, &p, false);
    CHECK_EQ(in_g, in_p);
    if (in_g)
        CHECK_EQ(g, p);
    *e = g;
    return in_g;
}

static void test_zone(void)
{
    const char *env = zone_env();
    uintptr_t want = env ? (uintptr_t)atol(env) << 20 : ZONE_MAX;
    CHECK_EQ(kslab_zone.size, want);
    struct slab *b[40];
    unsigned in = 0, out = 0;
    for (unsigned i = 0; i < 40; i++) {
        b[i] = pages_alloc(MAX_PAGE_ORDER, &owner_a);
        CHECK(b[i] != NULL);
        if (!b[i])
            return;
        uintptr_t a = (uintptr_t)slab_address(b[i]);
        struct arena *ar = slab_arena(b[i]);
        size_t idx = (size_t)(b[i] - ar->pages);
        bool z = a - kslab_zone.base < kslab_zone.size;
        CHECK(in_arena((void *)a));
        uint64_t e;
        CHECK_EQ(zone_entry2(a, &e), z);             /* kfree's first test */
        CHECK(pmap_slot(ar, idx + 3) == (z ? zone_pmap(a + 3 * PAGE_SIZE) : &ar->pmap[idx + 3]));
        pages_publish(b[i]);
        CHECK_EQ(addr_pmap(a + 5 * PAGE_SIZE), pmap_entry(&owner_a, b[i]->pg_colour));
        in += z;
        out += !z;
    }
    if (!env)
        CHECK_EQ(out, 0);
    else if (want)
        CHECK(in > 0 && out > 0);
    else
        CHECK_EQ(in, 0);
    struct kslab_memory m;
    kslab_memory(&m);
    CHECK(m.mappings >= (uint64_t)(kslab_zone.size ? 5 : 0) + (out ? 1 : 0));
    if (kslab_zone.size) {
        /* the zone's own: its two maps and its arenas, each a read-write
         * part and a reserved rest, and no alignment slack beside them */
        uintptr_t lo = kslab_zone.base - ZONE_PMAP_BYTES - ZONE_GMAP_BYTES,
                  hi = kslab_zone.base + kslab_zone.size, a, b;
        unsigned vmas = 0, touching = 0;
        char line[512];
        FILE *f = fopen("/proc/self/maps", "r");
        CHECK(f != NULL);
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "%lx-%lx", &a, &b) == 2) {
                vmas += a >= lo && b <= hi;
                touching += (b == lo || a == hi) && strstr(line, "---p");
            }
        if (f)
            fclose(f);
        CHECK_EQ(vmas, atomic_load(&kslab_zone.used) < kslab_zone.size ? 6 : 5);
        CHECK_EQ(touching, 0);      /* slack trimmed (a reserved neighbour of ours) */
    }
    for (unsigned i = 0; i < 40; i++) {
        uintptr_t a = (uintptr_t)slab_address(b[i]);
        pages_free(b[i], MAX_PAGE_ORDER);
        CHECK_EQ(addr_pmap(a + 5 * PAGE_SIZE), 0);
    }
    pages_release_all();
    if (kslab_zone.size) {
        CHECK_DEATH(free_past_zone, NULL, "was not allocated by kslab");
        CHECK_DEATH(free_zone_map, NULL, "was not allocated by kslab");
    }
}

/* The granule map (pages.h): a published block of 16 pages or more in the
 * zone has its page-map entry in each of its 64 KiB granules, cleared when
 * it is freed; smaller blocks leave their granule 0, so the zone lookup
 * reads their page's entry.  Fails if a freed slab's granule kept its
 * cache (a kfree would reach a cache that no longer owns the memory) or if
 * a small slab's lookup stopped at its granule. */
static void test_granule_map(void)
{
    if (!kslab_zone.size)
        return;                         /* no zone: test_pages.nozone */
    unsigned zoned = 0;
    for (unsigned order = GMAP_ORDER; order <= GMAP_ORDER + 2; order++) {
        struct slab *b = pages_alloc(order, &owner_a);
        CHECK(b != NULL);
        if (!b)
            return;
        uintptr_t a = (uintptr_t)slab_address(b);
        CHECK_EQ(a % ((uintptr_t)1 << GMAP_SHIFT), 0);      /* a buddy block: aligned */
        pages_publish(b);
        if (a - kslab_zone.base >= kslab_zone.size) {       /* past the zone (zone64) */
            pages_free(b, order);
            continue;
        }
        zoned++;
        uint64_t want = pmap_entry(&owner_a, b->pg_colour), e = 0;
        for (uintptr_t off = 0; off < (PAGE_SIZE << order); off += PAGE_SIZE) {
            CHECK(zone_entry2(a + off, &e));
            CHECK_EQ(e, want);
        }
        for (size_t g = 0; g < ((size_t)1 << (order - GMAP_ORDER)); g++)
            CHECK_EQ(atomic_load(zone_gmap(a) + g), want);
        pages_free(b, order);
        for (size_t g = 0; g < ((size_t)1 << (order - GMAP_ORDER)); g++)
            CHECK_EQ(atomic_load(zone_gmap(a) + g), 0);
        CHECK(zone_entry2(a + PAGE_SIZE, &e));
        CHECK_EQ(e, 0);
    }
    /* small blocks of another owner: their granules stay 0 and each page
     * finds its own block's entry */
    enum { N = 64 };
    struct slab *s[N];
    for (unsigned i = 0; i < N; i++) {
        s[i] = pages_alloc(i % 4, &owner_b);
        CHECK(s[i] != NULL);
        if (!s[i])
            return;
        pages_publish(s[i]);
    }
    for (unsigned i = 0; i < N; i++) {
        uintptr_t a = (uintptr_t)slab_address(s[i]);
        uint64_t e = 0;
        if (a - kslab_zone.base >= kslab_zone.size)
            continue;
        zoned++;
        CHECK_EQ(atomic_load(zone_gmap(a)), 0);
        CHECK(zone_entry2(a + (PAGE_SIZE << (i % 4)) - 1, &e));
        CHECK_EQ(e, pmap_entry(&owner_b, s[i]->pg_colour));
    }
    for (unsigned i = 0; i < N; i++)
        pages_free(s[i], i % 4);
    pages_release_all();
    if (!zone_env())
        CHECK_EQ(zoned, 3 + N);         /* the whole zone: every block in it */
}

/* The sheaf arrays of different caches are a cache line apart modulo a
 * page (percpu.c, PCPU_COLOUR), so one CPU's sheaf headers of many caches
 * do not all fall in the same few L1 sets: packed 1 KiB apart, 64 caches'
 * CPU-0 headers were in 4 sets of 64. */
static void test_sheaf_colour(void)
{
    if (!kslab_percpu)
        return;                         /* no sheaves (no rseq here) */
    enum { N = 64 };
    struct kmem_cache *c[N];
    bool set[64] = { 0 };
    unsigned sets = 0, made = 0;
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "colour-%d", i);
        c[i] = kmem_cache_create(name, 64, 0, SLAB_NO_MERGE, NULL);
        CHECK(c[i] != NULL);
        for (int k = 0; k < 200; k++)   /* past slow start: its sheaves exist */
            kmem_cache_free(c[i], kmem_cache_alloc(c[i], GFP_KERNEL));
        struct pcpu_sheaf *b = pcpu_base(c[i]);
        if (b == pcpu_none)
            continue;
        made++;
        unsigned k = (unsigned)((uintptr_t)b % PAGE_SIZE / 64);
        sets += !set[k];
        set[k] = true;
    }
    CHECK_EQ(made, N);
    CHECK(sets >= N / 2);
    for (int i = 0; i < N; i++)
        kmem_cache_destroy(c[i]);
}

/* kfree's map names a cache's sheaf array once the cache has one
 * (percpu.h, rule 9): a new slab's words are written that way, those of a
 * slab made before slow start are rewritten by a kfree into it, the
 * array's header names the cache, each CPU's entry has its geometry, every word goes when
 * its slab does, and the array of a cache destroyed with objects left is
 * never given to another cache (a leaked slab's words still name it): its
 * caps stay 0, so a free there misses to the dead cache's checks. */
static void test_map_names_array(void)
{
    if (!kslab_percpu || strcmp(kslab_allocator_name(), "slub") != 0)
        return;                         /* sheaves: per-CPU mode (SLAB's too; one is enough) */
    enum { N = 2000 };
    static void *o[N];
    struct kmem_cache *c = kmem_cache_create("mapbase", 48, 0, SLAB_NO_MERGE, NULL);
    CHECK(c != NULL);
    o[0] = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(pcpu_base(c) == pcpu_none);   /* slow start: no array yet */
    uint64_t e0 = addr_pmap((uintptr_t)o[0]);
    CHECK(!(e0 & PMAP_BASE) && pmap_cache(e0) == c);
    int n = 1;
    while (n < N && pcpu_base(c) == pcpu_none)
        o[n++] = kmem_cache_alloc(c, GFP_KERNEL);
    struct pcpu_sheaf *b = pcpu_base(c);
    CHECK(b != pcpu_none && n >= 2);
    while (n < N)                       /* slabs made after it */
        o[n++] = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(pcpu_hdr_of(b)->s == c);
    for (unsigned cpu = 0; cpu < (unsigned)prim_possible_cpus(); cpu++) {
        const struct pcpu_sheaf *en = pcpu_entry(b, cpu);
        CHECK(en->off_mask == ~c->slab_mask && en->inv == c->inv && en->gshift == c->shift &&
              en->nobj == c->objects && en->toff == c->offset);
    }
    int based = 0;
    for (int i = 0; i < N; i++) {
        uint64_t e = addr_pmap((uintptr_t)o[i]);
        struct slab *d = addr_desc((uintptr_t)o[i]);
        const struct slab *head = d - ((uintptr_t)o[i] - ((uintptr_t)o[i] & c->slab_mask)) / PAGE_SIZE;
        /* SLUB, no constructor: colour 0 and the tag at 0, so the array
         * alone (PMAP_BASE), never the form with a colour */
        bool ok = !(e & PMAP_BASE_COL) &&
                  ((e & PMAP_BASE) ? pmap_ptr(e) == b && e == ((uint64_t)(uintptr_t)b | 1)
                                   : pmap_cache(e) == c && pmap_colour(e) == head->pg_colour);
        based += !!(e & PMAP_BASE);
        if (!ok) {
            CHECK(!"every word names the array alone, or the cache with its slab's colour");
            break;
        }
    }
    CHECK(based > N / 2);
    CHECK(((uintptr_t)o[0] & c->slab_mask) == ((uintptr_t)o[1] & c->slab_mask));
    CHECK(!(addr_pmap((uintptr_t)o[0]) & PMAP_BASE));
    kfree(o[1]);                        /* into the first slab: its words now name b */
    o[1] = NULL;
    e0 = addr_pmap((uintptr_t)o[0]);
    CHECK((e0 & PMAP_BASE) && pmap_ptr(e0) == b);
    uint64_t before = kslab_pages_in_use();
    for (int i = 0; i < N; i++)
        kfree(o[i]);
    kmem_cache_shrink(c);
    CHECK(kslab_pages_in_use() < before);
    for (int i = 0; i < N; i++)         /* given back: its words are 0 */
        if (o[i] && addr_desc((uintptr_t)o[i] & c->slab_mask)->pg_state != PG_SLAB)
            CHECK_EQ(addr_pmap((uintptr_t)o[i]), 0);
    kmem_cache_destroy(c);

    /* destroyed with an object left: the array is not reused */
    struct kmem_cache *l = kmem_cache_create("mapbase-leak", 48, 0, SLAB_NO_MERGE, NULL);
    n = 0;
    while (n < N && pcpu_base(l) == pcpu_none)
        o[n++] = kmem_cache_alloc(l, GFP_KERNEL);
    struct pcpu_sheaf *lb = pcpu_base(l);
    CHECK(lb != pcpu_none);
    for (int i = 1; i < n; i++)
        kmem_cache_free(l, o[i]);
    fprintf(stderr, "(a warning that mapbase-leak still has objects is expected)\n");
    kmem_cache_destroy(l);
    int cpu = sched_getcpu();
    CHECK_EQ(((struct pcpu_sheaf *)((char *)lb + (size_t)cpu * PCPU_STRIDE))->cap, 0);
    for (int k = 0; k < 8; k++) {
        struct kmem_cache *r = kmem_cache_create("mapbase-new", 48, 0, SLAB_NO_MERGE, NULL);
        void *p[300];
        for (int i = 0; i < 300; i++)
            p[i] = kmem_cache_alloc(r, GFP_KERNEL);
        CHECK(pcpu_base(r) != pcpu_none && pcpu_base(r) != lb);
        for (int i = 0; i < 300; i++)
            kmem_cache_free(r, p[i]);
        kmem_cache_destroy(r);
    }
}

/* The two forms of a word naming a sheaf array (pages.h): the array alone
 * (PMAP_BASE) exactly where the slab's colour and the cache's tag offset
 * are 0, else the array with the colour (PMAP_BASE_COL), whose kfree push
 * loads both.  A constructor keeps the object's contents, so its cache's
 * tag word is after the object: the second form on every slab, and kfree
 * leaves every object as the constructor made it.  SLAB colours its slabs
 * (test_pages.slab): the second form on the coloured ones. */
static void map_col_ctor(void *p)
{
    memset(p, 0x5a, 48);
}
static void map_forms(const char *name, unsigned size, void (*ctor)(void *))
{
    enum { N = 2000 };
    static unsigned char *o[N];
    struct kmem_cache *c = kmem_cache_create(name, size, 0, SLAB_NO_MERGE, ctor);
    CHECK(c != NULL && (!ctor || c->offset >= size));
    for (int i = 0; i < N; i++)
        CHECK((o[i] = kmem_cache_alloc(c, GFP_KERNEL)) != NULL);
    struct pcpu_sheaf *b = pcpu_base(c);
    CHECK(b != pcpu_none);
    for (int i = 0; i < N; i += 2)
        kfree(o[i]);                    /* rewrites the early slabs' words too */
    int right = 0, plain = 0;
    for (int i = 1; i < N; i += 2) {    /* their slabs live on */
        uint64_t e = addr_pmap((uintptr_t)o[i]);
        struct slab *d = addr_desc((uintptr_t)o[i]);
        bool want_plain = d->pg_colour == 0 && c->offset == 0;
        right += want_plain ? e == ((uint64_t)(uintptr_t)b | PMAP_BASE)
                            : (e & PMAP_BASE_COL) && !(e & PMAP_BASE) && pmap_ptr(e) == b &&
                                      pmap_colour(e) == d->pg_colour;
        plain += want_plain;
    }
    CHECK_EQ(right, N / 2);
    if (ctor)
        CHECK_EQ(plain, 0);
    else if (strcmp(kslab_allocator_name(), "slub") == 0)
        CHECK_EQ(plain, N / 2);
    else                                /* SLAB: 200-byte objects leave room for 2 colours */
        CHECK(plain > 0 && plain < N / 2);
    for (int i = 1; i < N; i += 2)
        kfree(o[i]);
    for (int i = 0; ctor && i < N; i++) {
        o[i] = kmem_cache_alloc(c, GFP_KERNEL);
        bool intact = o[i] != NULL;
        for (int k = 0; intact && k < 48; k++)
            intact = o[i][k] == 0x5a;
        if (!intact) {
            CHECK(!"an object freed by kfree came back as its constructor left it");
            break;
        }
    }
    for (int i = 0; ctor && i < N; i++)
        kmem_cache_free(c, o[i]);
    kmem_cache_destroy(c);
}
static void test_map_col(void)
{
    if (!kslab_percpu || (strcmp(kslab_allocator_name(), "slub") != 0 &&
                          strcmp(kslab_allocator_name(), "slab") != 0))
        return;                         /* the back-ends with sheaves */
    map_forms("mapform", 200, NULL);
    map_forms("mapcol", 48, map_col_ctor);
}

int main(void)
{
    kslab_allocator_name();   /* initialise */
    test_lazy_carve();
    test_buddy_orders();
    test_buddy_split_merge();
    test_publish_walk();
    test_page_classes();
    test_large_blocks();
    test_pcp();
    test_pcp_lone();
    test_hot_floor();
    test_decay();
    test_hot_cut();
    test_huge();
    test_release_failures();
    test_obj_index();
    test_zone();
    test_granule_map();
    test_sheaf_colour();
    test_map_names_array();
    test_map_col();
    return check_done();
}
