/* test_bulk.c - kmem_cache_alloc_bulk / kmem_cache_free_bulk / kfree_bulk
 * with the kernel's semantics. */
#include "check.h"
#include "helpers.h"
#include <kslab.h>
#include <pthread.h>
#include <stdint.h>

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void test_sizes(void)
{
    struct kmem_cache *c = kmem_cache_create("bulk_obj", 256, 0, SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
    void *p[600], *q[600];
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, 0, p), 0);
    static const int sizes[] = { 1, 2, 3, 4, 8, 16, 17, 30, 32, 34, 48, 64, 128, 158, 250, 600 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, (size_t)n, p), n);
        for (int i = 0; i < n; i++) {
            memset(p[i], i & 0xff, 256);
            CHECK_EQ((uintptr_t)p[i] % 64, 0);
        }
        memcpy(q, p, sizeof(void *) * (size_t)n);
        qsort(q, (size_t)n, sizeof *q, cmp_ptr);
        int overlap = 0, bad = 0;
        for (int i = 1; i < n; i++)
            overlap += (char *)q[i - 1] + 256 > (char *)q[i];
        for (int i = 0; i < n; i++)
            bad += ((unsigned char *)p[i])[255] != (i & 0xff);
        CHECK_EQ(overlap, 0);
        CHECK_EQ(bad, 0);
        CHECK_EQ(test_stats(c).active_objs, n);
        if (k % 2)
            kmem_cache_free_bulk(c, (size_t)n, p);
        else
            kfree_bulk((size_t)n, p);
        CHECK_EQ(test_stats(c).active_objs, 0);
    }
    /* __GFP_ZERO */
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, 100, p), 100);
    for (int i = 0; i < 100; i++)
        memset(p[i], 0xee, 256);
    kmem_cache_free_bulk(c, 100, p);
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL | __GFP_ZERO, 100, p), 100);
    int nz = 0;
    for (int i = 0; i < 100; i++)
        for (int j = 0; j < 256; j++)
            nz += ((unsigned char *)p[i])[j] != 0;
    CHECK_EQ(nz, 0);
    /* NULL entries are skipped; interleaved order still frees everything */
    void *keep = p[10];
    p[10] = NULL;
    kmem_cache_free_bulk(c, 100, p);
    CHECK_EQ(test_stats(c).active_objs, 1);
    kmem_cache_free(c, keep);
    CHECK_EQ(test_stats(c).active_objs, 0);
    kmem_cache_free_bulk(c, 0, p);
    kmem_cache_destroy(c);
}

static void test_kfree_bulk_mixed(void)
{
    struct kmem_cache *a = kmem_cache_create("bulk_a", 72, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *b = kmem_cache_create("bulk_b", 500, 0, SLAB_NO_MERGE, NULL);
    void *p[1000];
    size_t sizes[1000];
    for (int i = 0; i < 1000; i++) {
        switch (i % 5) {
        case 0: p[i] = kmem_cache_alloc(a, GFP_KERNEL); sizes[i] = 72; break;
        case 1: p[i] = kmem_cache_alloc(b, GFP_KERNEL); sizes[i] = 500; break;
        case 2: sizes[i] = 1 + (size_t)i % 8000; p[i] = kmalloc(sizes[i], GFP_KERNEL); break;
        case 3: sizes[i] = 10000 + (size_t)i * 37; p[i] = kmalloc(sizes[i], GFP_KERNEL); break; /* large */
        default: p[i] = i % 10 == 4 ? NULL : ZERO_SIZE_PTR; sizes[i] = 0; break;
        }
        if (sizes[i])
            memset(p[i], 0x11, sizes[i]);
    }
    kfree_bulk(1000, p);
    CHECK_EQ(test_stats(a).active_objs, 0);
    CHECK_EQ(test_stats(b).active_objs, 0);
    CHECK_EQ(test_stats(kslab_kmalloc_cache(32)).active_objs, 0);  /* large headers gone too */
    kmem_cache_destroy(a);
    kmem_cache_destroy(b);
}

static struct kmem_cache *xc;
static void *xobjs[5000];
static void *remote_free(void *arg)
{
    kmem_cache_free_bulk(xc, 5000, xobjs);
    return NULL;
}

static void test_cross_thread(void)
{
    xc = kmem_cache_create("bulk_x", 128, 0, SLAB_NO_MERGE, NULL);
    for (int round = 0; round < 20; round++) {
        CHECK_EQ(kmem_cache_alloc_bulk(xc, GFP_KERNEL, 5000, xobjs), 5000);
        for (int i = 0; i < 5000; i++)
            memset(xobjs[i], round, 128);
        pthread_t t;
        pthread_create(&t, NULL, remote_free, NULL);
        pthread_join(t, NULL);
        CHECK_EQ(test_stats(xc).active_objs, 0);
    }
    struct kslab_stats st = test_stats(xc);
    CHECK(st.free_slowpath + st.free_fastpath >= 20 * 5000);
    /* far fewer compare-and-swaps than objects: one per slab group */
    kmem_cache_shrink(xc);
    CHECK_EQ(test_stats(xc).num_slabs, 0);
    kmem_cache_destroy(xc);
}

static void test_oom_all_or_nothing(void)
{
    struct kmem_cache *c = kmem_cache_create("bulk_oom", 1000, 0, SLAB_NO_MERGE, NULL);
    static void *have[1 << 16];
    kslab_test_fail_map(-1);
    long n = 0;
    while (n < (1 << 16) && (have[n] = kmem_cache_alloc(c, GFP_KERNEL)))
        n++;
    /* nothing left: a bulk request fails whole, taking nothing */
    for (long i = 0; i < 300; i++)
        kmem_cache_free(c, have[--n]);     /* 300 free objects are available */
    uint64_t before = test_stats(c).active_objs;
    void *p[1000];
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, 1000, p), 0);
    CHECK_EQ(test_stats(c).active_objs, before);
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, 300, p), 300);  /* exactly what is there */
    kmem_cache_free_bulk(c, 300, p);
    kslab_test_fail_map(0);
    CHECK_EQ(kmem_cache_alloc_bulk(c, GFP_KERNEL, 1000, p), 1000);
    kmem_cache_free_bulk(c, 1000, p);
    kmem_cache_free_bulk(c, (size_t)n, have);
    CHECK_EQ(test_stats(c).active_objs, 0);
    kmem_cache_destroy(c);
}

/* bad pointers inside a bulk free are reported like single frees */
static void bulk_stack(void *a)
{
    void *p[3];
    int x = 0;
    kmem_cache_alloc_bulk(kslab_kmalloc_cache(64), GFP_KERNEL, 2, p);
    p[2] = p[1];
    p[1] = &x;
    kfree_bulk(3, p);
}
static void bulk_interior(void *a)
{
    void *p[4];
    struct kmem_cache *c = kmem_cache_create("bulk_int", 100, 0, SLAB_NO_MERGE, NULL);
    kmem_cache_alloc_bulk(c, GFP_KERNEL, 4, p);
    p[1] = (char *)p[1] + 4;
    kmem_cache_free_bulk(c, 4, p);
}
static void bulk_wrong_cache(void *a)
{
    void *p[4];
    struct kmem_cache *c = kmem_cache_create("bulk_c1", 100, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *d = kmem_cache_create("bulk_c2", 100, 0, SLAB_NO_MERGE, NULL);
    kmem_cache_alloc_bulk(c, GFP_KERNEL, 4, p);
    kmem_cache_free_bulk(d, 4, p);
}
static void bulk_double(void *a)
{
    void *p[4];
    struct kmem_cache *c = kmem_cache_create("bulk_dbl", 100, 0, SLAB_NO_MERGE, NULL);
    kmem_cache_alloc_bulk(c, GFP_KERNEL, 3, p);
    p[3] = p[2];
    kmem_cache_free_bulk(c, 4, p);
}
static void bulk_double_later(void *a)
{
    void *p[4], *q[1];
    struct kmem_cache *c = kmem_cache_create("bulk_dbl2", 100, 0, SLAB_NO_MERGE, NULL);
    (void)!kmem_cache_alloc(c, GFP_KERNEL);   /* a neighbour keeps the page alive (SLOB) */
    kmem_cache_alloc_bulk(c, GFP_KERNEL, 4, p);
    q[0] = p[0];                 /* freed last: the head of the cpu freelist */
    kmem_cache_free_bulk(c, 4, p);
    kmem_cache_free_bulk(c, 1, q);
}

int main(void)
{
    test_sizes();
    test_kfree_bulk_mixed();
    test_cross_thread();
    test_oom_all_or_nothing();
    CHECK_DEATH(bulk_stack, NULL, "kfree_bulk((any)): pointer", "was not allocated by kslab");
    CHECK_DEATH(bulk_interior, NULL, "kmem_cache_free_bulk(bulk_int): pointer", "is inside object");
    CHECK_DEATH(bulk_wrong_cache, NULL, "belongs to cache bulk_c1, not bulk_c2");
    CHECK_DEATH(bulk_double, NULL, "double free of object", "bulk_dbl");
    CHECK_DEATH(bulk_double_later, NULL, "double free of object", "bulk_dbl2");
    return check_done();
}
