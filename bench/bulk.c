/* bulk.c - seed 001's experiment on kslab: per-object cost of allocating and
 * freeing 256-byte objects (SLAB_HWCACHE_ALIGN) at bulk sizes 1..250, three
 * ways: one by one (fallback), alloc_bulk + kmem_cache_free_bulk, and
 * alloc_bulk + kfree_bulk.  Also the single-object fastpath.
 * Rows: who, bulk, column, ns med/min/max, cycles med/min/max. */
#include "bench_common.h"
#include <kslab.h>

static const int sizes[] = { 1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250 };

static void row(const char *who, int bulk, const char *col, struct result r)
{
    printf("%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", who, bulk, col, r.ns, r.ns_min,
           r.ns_max, r.cyc, r.cyc_min, r.cyc_max);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *who = argc > 1 + quick ? argv[1 + quick] : kslab_allocator_name();
    long total = quick ? 2000 : 8000000;    /* objects per run */
    int runs = quick ? 3 : 7;
    struct kmem_cache *s = kmem_cache_create("bench_bulk_256", 256, 0,
                                             SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
    void *p[256];
    struct result r;
    kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
    MEASURE(r, runs, total, 1, {
        void *o = kmem_cache_alloc(s, GFP_KERNEL);
        __asm__ volatile("" : : "r"(o) : "memory");
        kmem_cache_free(s, o);
    });
    row(who, 0, "fastpath", r);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        long iters = total / n;
        MEASURE(r, runs, iters, n, {
            for (int i = 0; i < n; i++)
                p[i] = kmem_cache_alloc(s, GFP_KERNEL);
            __asm__ volatile("" : : "r"(p) : "memory");
            for (int i = 0; i < n; i++)
                kmem_cache_free(s, p[i]);
        });
        row(who, n, "fallback", r);
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
    }
    kmem_cache_destroy(s);
    return 0;
}
