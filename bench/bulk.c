/* bulk.c - seed 001's experiment: per-object cost of allocating and freeing
 * 256-byte objects at bulk sizes 1..250.  kslab build (SLAB_HWCACHE_ALIGN
 * cache): one by one (fallback), alloc_bulk + kmem_cache_free_bulk, and
 * alloc_bulk + kfree_bulk, plus the single-object fastpath.  malloc build
 * (malloc_bulk, -DUSE_MALLOC): the fastpath and fallback columns for a peer.
 * Rows: who, bulk, column, ns med/min/max, cycles med/min/max. */
#include "bench_common.h"
#include "alloc_shim.h"

static const int sizes[] = { 1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250 };

static void row(const char *who, int bulk, const char *col, struct result r)
{
    printf("%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", who, bulk, col, r.ns, r.ns_min,
           r.ns_max, r.cyc, r.cyc_min, r.cyc_max);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    long total = quick ? 2000 : 8000000;    /* objects per run */
    int runs = quick ? 3 : 7;
    void *p[256];
    struct result r;
#if BENCH_KSLAB
    const char *who = argc > 1 + quick ? argv[1 + quick] : kslab_allocator_name();
    struct kmem_cache *s = kmem_cache_create("bench_bulk_256", 256, 0,
                                             SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
#define OBJ_ALLOC() kmem_cache_alloc(s, GFP_KERNEL)
#define OBJ_FREE(o) kmem_cache_free(s, (o))
#else
    const char *who = argc > 1 + quick ? argv[1 + quick] : BENCH_WHO;
#define OBJ_ALLOC() BENCH_ALLOC(256)
#define OBJ_FREE(o) BENCH_FREE(o)
#endif
    OBJ_FREE(OBJ_ALLOC());
    MEASURE(r, runs, total, 1, {
        void *o = OBJ_ALLOC();
        __asm__ volatile("" : : "r"(o) : "memory");
        OBJ_FREE(o);
    });
    row(who, 0, "fastpath", r);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        long iters = total / n;
        MEASURE(r, runs, iters, n, {
            for (int i = 0; i < n; i++)
                p[i] = OBJ_ALLOC();
            __asm__ volatile("" : : "r"(p) : "memory");
            for (int i = 0; i < n; i++)
                OBJ_FREE(p[i]);
        });
        row(who, n, "fallback", r);
#if BENCH_KSLAB
        MEASURE(r, runs, iters, n, {
            if (kmem_cache_alloc_bulk(s, GFP_KERNEL, (size_t)n, p) != n)
                abort();
            kmem_cache_free_bulk(s, (size_t)n, p);
        });
        row(who, n, "kmem_cache_free_bulk", r);
        MEASURE(r, runs, iters, n, {
            if (kmem_cache_alloc_bulk(s, GFP_KERNEL, (size_t)n, p) != n)
                abort();
            kfree_bulk((size_t)n, p);
        });
        row(who, n, "kfree_bulk", r);
#endif
    }
#if BENCH_KSLAB
    kmem_cache_destroy(s);
#endif
    return 0;
}
