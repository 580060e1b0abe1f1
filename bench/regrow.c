/*
 * regrow.c - a program that frees everything and builds it up again, under
 * any malloc (kslab by LD_PRELOAD):
 *
 *   regrow WHO [SIZE] [ROUNDS]
 *
 * allocates 400 000 blocks of SIZE bytes (64), writing each, then frees
 * them all in the order they came, ROUNDS (10) times.  Prints the mean ns
 * a block of malloc + write over the rounds after the first (the first
 * round faults fresh memory in under every allocator), and the fastest
 * round's free, ns a block:
 *   WHO <tab> regrow SIZE B malloc <tab> ns
 *   WHO <tab> regrow SIZE B free <tab> ns
 * What it shows is what the allocator keeps of freed memory: one that
 * gives the pages back at once faults them in again the next round.
 */
#include "bench_common.h"

static void *(*volatile m_alloc)(size_t) = malloc;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s WHO [SIZE] [ROUNDS]\n", argv[0]);
        return 2;
    }
    size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    int rounds = argc > 3 ? atoi(argv[3]) : 10;
    size_t n = 400000;
    if (size < 1 || rounds < 2) {
        fprintf(stderr, "regrow: SIZE at least 1, ROUNDS at least 2\n");
        return 2;
    }
    void **all = m_alloc(n * sizeof *all);
    if (!all) {
        fprintf(stderr, "regrow: out of memory\n");
        return 1;
    }
    double alloc_ns = 0, free_best = 1e300;
    for (int r = 0; r < rounds; r++) {
        uint64_t t = now_ns();
        for (size_t i = 0; i < n; i++) {
            all[i] = m_alloc(size);
            if (!all[i]) {
                fprintf(stderr, "regrow: out of memory\n");
                return 1;
            }
            memset(all[i], (int)i, size);
        }
        t = now_ns() - t;
        if (r)
            alloc_ns += (double)t;
        t = now_ns();
        for (size_t i = 0; i < n; i++)
            free(all[i]);
        t = now_ns() - t;
        if ((double)t < free_best)
            free_best = (double)t;
    }
    printf("%s\tregrow %zu B malloc\t%.2f\n", argv[1], size, alloc_ns / (rounds - 1) / (double)n);
    printf("%s\tregrow %zu B free\t%.2f\n", argv[1], size, free_best / (double)n);
    return 0;
}
