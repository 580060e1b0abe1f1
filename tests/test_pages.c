/* test_pages.c - internal unit tests, linked against the static library and
 * its internal headers: the buddy allocator (natural alignment, split, merge,
 * publication), the chunk map and arena bitmap, and obj_index() over every
 * object size and offset. */
#include "check.h"
#include "helpers.h"
#include "slub.h"

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
    struct slab *list = pages_take_slabs(&owner_b);
    int n = 0;
    for (struct slab *s = list; s; s = s->next)
        n++;
    CHECK_EQ(n, 3);
    pages_free(a, 0);
    pages_free(b, 1);
    pages_free(c, 0);
    walked = 0;
    pages_for_each_slab(&owner_b, count_slab, NULL);
    CHECK_EQ(walked, 0);
    pages_release_all();
}

/* Large allocations: in the chunk map, not in the arena bitmap. */
static void test_chunk_map(void)
{
    static const size_t sizes[] = { 8193, 100000, CHUNK_SIZE, CHUNK_SIZE + 1, 3 * CHUNK_SIZE };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        char *p = large_alloc(sizes[k]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(!in_arena(p));
        for (size_t off = 0; off < sizes[k]; off += CHUNK_SIZE / 2) {
            uintptr_t e = chunk_entry(p + off);
            CHECK_EQ(e & 3, CHUNK_LARGE);
            struct large_hdr *h = (struct large_hdr *)(e & ~(uintptr_t)3);
            CHECK(h->base == p && h->size >= sizes[k]);
        }
        CHECK_EQ(chunk_entry(p + sizes[k] - 1) & 3, CHUNK_LARGE);
        struct large_hdr *h = (struct large_hdr *)(chunk_entry(p) & ~(uintptr_t)3);
        large_free(h, p);
        CHECK_EQ(chunk_entry(p), 0);
    }
    int x;
    CHECK_EQ(chunk_entry(&x), 0);
    CHECK(!in_arena(&x));
    CHECK_EQ(chunk_entry((void *)(1ull << 50)), 0);            /* beyond 47 bits */
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

int main(void)
{
    kslab_allocator_name();   /* initialise */
    test_buddy_orders();
    test_buddy_split_merge();
    test_publish_walk();
    test_chunk_map();
    test_obj_index();
    return check_done();
}
