/* micro.c - the cost of one allocation + free pair on the fast paths.
 * kslab build: kmem_cache_alloc + kmem_cache_free of a 256-byte object
 * (SLAB_HWCACHE_ALIGN, the object seed 001 measures) and kmalloc(32) + kfree
 * (seeds 003/004).  malloc build (malloc_pair, -DUSE_MALLOC): malloc + free
 * of the same sizes, for the peers under LD_PRELOAD.
 * Prints tab-separated rows: who, what, ns median/min/max, cycles median/min/max.
 * Usage: micro [--quick] [label] */
#include "bench_common.h"
#include "alloc_shim.h"

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *label = argc > 1 + quick ? argv[1 + quick] : BENCH_WHO;
    long iters = quick ? 1000 : 20000000;
    int runs = quick ? 3 : 7;
    struct result r;
#if BENCH_KSLAB
    struct kmem_cache *c = kmem_cache_create("bench_256", 256, 0, SLAB_HWCACHE_ALIGN, NULL);
    /* warm up: the first slab and the thread state */
    kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
    MEASURE(r, runs, iters, 1, {
        void *p = kmem_cache_alloc(c, GFP_KERNEL);
        __asm__ volatile("" : : "r"(p) : "memory");
        kmem_cache_free(c, p);
    });
    print_result(label, "kmem_cache_alloc+free(256)", r);
    kmem_cache_destroy(c);
#else
    BENCH_FREE(BENCH_ALLOC(256));
    MEASURE(r, runs, iters, 1, {
        void *p = BENCH_ALLOC(256);
        __asm__ volatile("" : : "r"(p) : "memory");
        BENCH_FREE(p);
    });
    print_result(label, "malloc+free(256)", r);
#endif
    BENCH_FREE(BENCH_ALLOC(32));
    MEASURE(r, runs, iters, 1, {
        void *p = BENCH_ALLOC(32);
        __asm__ volatile("" : : "r"(p) : "memory");
        BENCH_FREE(p);
    });
    print_result(label, BENCH_KSLAB ? "kmalloc(32)+kfree" : "malloc(32)+free", r);
    return 0;
}
