/* malloc_pair.c - the peers' malloc + free pair, for the same sizes as
 * micro.c.  Run with LD_PRELOAD=<peer> (glibc when nothing is preloaded).
 * Usage: malloc_pair [--quick] label */
#include "bench_common.h"

/* volatile function pointers: the compiler may not elide malloc/free pairs */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *label = argc > 1 + quick ? argv[1 + quick] : "glibc";
    long iters = quick ? 1000 : 20000000;
    int runs = quick ? 3 : 7;
    struct result r;
    do_free(do_malloc(256));
    do_free(do_malloc(32));
    MEASURE(r, runs, iters, 1, {
        void *p = do_malloc(256);
        __asm__ volatile("" : : "r"(p) : "memory");
        do_free(p);
    });
    print_result(label, "malloc+free(256)", r);
    MEASURE(r, runs, iters, 1, {
        void *p = do_malloc(32);
        __asm__ volatile("" : : "r"(p) : "memory");
        do_free(p);
    });
    print_result(label, "malloc(32)+free", r);
    return 0;
}
