/* malloc_bulk.c - seed 001's fallback column for a peer: malloc N 256-byte
 * objects one by one, then free them.  Run under LD_PRELOAD=<peer>. */
#include "bench_common.h"

static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;
static const int sizes[] = { 1, 2, 3, 4, 8, 16, 30, 32, 34, 48, 64, 128, 158, 250 };

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *who = argc > 1 + quick ? argv[1 + quick] : "glibc";
    long total = quick ? 2000 : 8000000;
    int runs = quick ? 3 : 7;
    void *p[256];
    struct result r;
    MEASURE(r, runs, total, 1, {
        void *o = do_malloc(256);
        __asm__ volatile("" : : "r"(o) : "memory");
        do_free(o);
    });
    printf("%s\t0\tfastpath\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", who, r.ns, r.ns_min, r.ns_max,
           r.cyc, r.cyc_min, r.cyc_max);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k];
        MEASURE(r, runs, total / n, n, {
            for (int i = 0; i < n; i++)
                p[i] = do_malloc(256);
            __asm__ volatile("" : : "r"(p) : "memory");
            for (int i = 0; i < n; i++)
                do_free(p[i]);
        });
        printf("%s\t%d\tfallback\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", who, n, r.ns, r.ns_min,
               r.ns_max, r.cyc, r.cyc_min, r.cyc_max);
    }
    return 0;
}
