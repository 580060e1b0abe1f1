/* micro.c - the cost of one allocation + free pair on the fast paths.
 * kslab build: kmem_cache_alloc + kmem_cache_free of a 256-byte object
 * (SLAB_HWCACHE_ALIGN, the object seed 001 measures) and kmalloc(32) + kfree
 * (seeds 003/004).  malloc build (malloc_pair, -DUSE_MALLOC): malloc + free
 * of the same sizes, and C++'s operator new(32) + delete, for the peers
 * under LD_PRELOAD.
 * Prints tab-separated rows: who, what, ns median/min/max, cycles median/min/max.
 * Usage: micro [--quick] [label]; BENCH_ITERS=N sets the pairs per run;
 * BENCH_CHUNKS=N prints the fastest 2000-pair chunk of N instead. */
#include "bench_common.h"
#include "alloc_shim.h"
#include <dlfcn.h>

#if BENCH_KSLAB
static void bench_ctor(void *p)
{
    *(long *)p = 1;
}
#endif

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *label = argc > 1 + quick ? argv[1 + quick] : BENCH_WHO;
    /* BENCH_ITERS: pairs per run, for the slow configurations (ASan) */
    const char *it = getenv("BENCH_ITERS");
    long iters = it ? atol(it) : quick ? 1000 : 20000000;
    int runs = quick ? 3 : 7;
    struct result r;
#if BENCH_KSLAB
    struct kmem_cache *c = kmem_cache_create("bench_256", 256, 0, SLAB_HWCACHE_ALIGN, NULL);
#define OBJ_ALLOC() kmem_cache_alloc(c, GFP_KERNEL)
#define OBJ_FREE(p) kmem_cache_free(c, (p))
#define OBJ_PAIR "kmem_cache_alloc+free(256)"
#else
#define OBJ_ALLOC() BENCH_ALLOC(256)
#define OBJ_FREE(p) BENCH_FREE(p)
#define OBJ_PAIR "malloc+free(256)"
#endif
    /* warm up (the thread state, SLUB's slow start of 16 objects, the first
     * cpu slabs) on lines of their own, so callgrind counts the timed calls
     * apart (bench/sections/05-*) */
    for (int w = 0; w < 32; w++) {
        OBJ_FREE(OBJ_ALLOC());
        BENCH_FREE(BENCH_ALLOC(32));
    }
    /* BENCH_CHUNKS=N: instead, the fewest cycles a pair took in any of N
     * chunks of 2000 (MEASURE_MIN_CHUNK), one line a pair: WHO, what, cycles */
    const char *ch = getenv("BENCH_CHUNKS");
    long chunks = ch ? atol(ch) : 0;
/* one pair: the object kept in a register, so neither call is elided */
#define PAIR_BODY(ALLOC, FREE)                                             \
    {                                                                      \
        void *p = ALLOC;                                                   \
        __asm__ volatile("" : : "r"(p) : "memory");                        \
        FREE(p);                                                           \
    }
#define MEASURE_PAIR(what, ALLOC, FREE)                                    \
    do {                                                                   \
        if (chunks > 0) {                                                  \
            double cy;                                                     \
            MEASURE_MIN_CHUNK(cy, chunks, 2000, PAIR_BODY(ALLOC, FREE));   \
            printf("%s\t%s\t%.3f\n", label, what, cy);                    \
        } else {                                                           \
            MEASURE(r, runs, iters, 1, PAIR_BODY(ALLOC, FREE));            \
            print_result(label, what, r);                                  \
        }                                                                  \
    } while (0)
    MEASURE_PAIR(OBJ_PAIR, OBJ_ALLOC(), OBJ_FREE);
    MEASURE_PAIR(BENCH_KSLAB ? "kmalloc(32)+kfree" : "malloc(32)+free", BENCH_ALLOC(32), BENCH_FREE);
#if BENCH_KSLAB
    /* a cache with a constructor (its free tag after the object, where a
     * free keeps the object's contents): the same pair, for what the
     * per-CPU paths cost such a cache (percpu.h, rule 10).  Not in --quick
     * runs: callgrind's counts per call (bench/sections/05) are of the
     * plain cache's pairs alone. */
    if (!quick) {
        struct kmem_cache *cc = kmem_cache_create("bench_256_ctor", 256, 0,
                                                  SLAB_HWCACHE_ALIGN, bench_ctor);
#define CTOR_FREE(p) kmem_cache_free(cc, (p))
        for (int w = 0; w < 32; w++)
            CTOR_FREE(kmem_cache_alloc(cc, GFP_KERNEL));
        MEASURE_PAIR("kmem_cache_alloc+free(256, ctor)", kmem_cache_alloc(cc, GFP_KERNEL),
                     CTOR_FREE);
        kmem_cache_destroy(cc);
    }
#else
    /* C++'s operator new and delete (the allocator's own under LD_PRELOAD,
     * else libstdc++'s over malloc), looked up at run time: this program
     * is C.  A malloc whose new takes a detour shows here. */
    dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    void *(*volatile cxx_new)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
    void (*volatile cxx_delete)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
    if (cxx_new && cxx_delete) {
        cxx_delete(cxx_new(32));
        MEASURE_PAIR("operator new(32)+delete", cxx_new(32), cxx_delete);
    }
#endif
#if BENCH_KSLAB
    kmem_cache_destroy(c);
#endif
    return 0;
}
