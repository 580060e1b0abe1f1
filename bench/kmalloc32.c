/* kmalloc32.c - seeds 003/004: 16.8 M kmalloc(32)/kfree pairs, two ways.
 *   loop:   alloc then free at once, 16.8 M times (the seed's loop).
 *   random: a working set of 1 M live 32-byte objects (32 MiB, 8192 slabs);
 *           each pair frees a random live object and allocates a new one, so
 *           every kfree looks up a random slab descriptor (virt_to_slab()).
 * kslab build: kmalloc/kfree; malloc build (-DUSE_MALLOC): malloc/free, for
 * the peers under LD_PRELOAD.
 * KSLAB_K32_LIVE (objects, a power of two) and KSLAB_K32_PAIRS scale the
 * random mode (the seeds 003/004 section's descriptor-table run).
 * Usage: kmalloc32 [--quick] loop|random label
 * Prints: label, mode, pairs, ns/pair, cycles/pair. */
#include "bench_common.h"
#include "alloc_shim.h"
#define ALLOC32() BENCH_ALLOC(32)
#define FREE(p) BENCH_FREE(p)

#define LIVE (1u << 20)

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *mode = argc > 1 + quick ? argv[1 + quick] : "loop";
    const char *who = argc > 2 + quick ? argv[2 + quick] : "kslab";
    int random_mode = strcmp(mode, "random") == 0;
    long pairs = quick ? 10000 : 16800000;
    unsigned live = quick ? 1024 : random_mode ? LIVE : 1;
    const char *e = getenv("KSLAB_K32_LIVE");
    if (random_mode && e && !quick)
        live = (unsigned)strtoul(e, NULL, 0);
    if ((e = getenv("KSLAB_K32_PAIRS")) && !quick)
        pairs = strtol(e, NULL, 0);
    void **slot = calloc(live, sizeof *slot);
    for (unsigned i = 0; i < live; i++)
        slot[i] = ALLOC32();
    uint64_t r = 88172645463325252ull;
    uint64_t t0 = now_ns(), c0 = cycles();
    for (long i = 0; i < pairs && !random_mode; i++) {
        void *p = ALLOC32();
        __asm__ volatile("" : : "r"(p) : "memory");
        FREE(p);
    }
    for (long i = 0; i < pairs && random_mode; i++) {
        xorshift64(&r);
        unsigned k = (unsigned)(r & (live - 1));
        FREE(slot[k]);
        slot[k] = ALLOC32();
    }
    uint64_t c1 = cycles(), t1 = now_ns();
    printf("%s\t%s\t%ld\t%.2f\t%.1f\n", who, mode, pairs, (double)(t1 - t0) / (double)pairs,
           (double)(c1 - c0) / (double)pairs);
    for (unsigned i = 0; i < live; i++)
        FREE(slot[i]);
    free(slot);
    return 0;
}
