/* micro.c - the cost of one allocation + free pair on kslab's fast paths:
 * kmem_cache_alloc + kmem_cache_free of a 256-byte object (SLAB_HWCACHE_ALIGN,
 * the object seed 001 measures) and kmalloc(32) + kfree (seeds 003/004).
 * Prints tab-separated rows: who, what, ns median/min/max, cycles median/min/max.
 * Usage: micro [--quick] [label] */
#include "bench_common.h"
#include <kslab.h>

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *label = argc > 1 + quick ? argv[1 + quick] : "kslab";
    long iters = quick ? 1000 : 20000000;
    int runs = quick ? 3 : 7;
    struct kmem_cache *c = kmem_cache_create("bench_256", 256, 0, SLAB_HWCACHE_ALIGN, NULL);
    struct result r;
    /* warm up: the first slab and the thread state */
    kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
    kfree(kmalloc(32, GFP_KERNEL));
    MEASURE(r, runs, iters, 1, {
        void *p = kmem_cache_alloc(c, GFP_KERNEL);
        __asm__ volatile("" : : "r"(p) : "memory");
        kmem_cache_free(c, p);
    });
    print_result(label, "kmem_cache_alloc+free(256)", r);
    MEASURE(r, runs, iters, 1, {
        void *p = kmalloc(32, GFP_KERNEL);
        __asm__ volatile("" : : "r"(p) : "memory");
        kfree(p);
    });
    print_result(label, "kmalloc(32)+kfree", r);
    kmem_cache_destroy(c);
    return 0;
}
