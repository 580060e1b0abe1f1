/* large.c - the page allocator's benchmarks, for malloc (run under each
 * allocator with LD_PRELOAD; kslab through libkslab-malloc):
 *
 *   pair SIZE        malloc(SIZE) + touch its first byte + free, repeated:
 *                    ns per pair, median of 7 runs (min-max)
 *   realloc          one buffer grown from 4 KiB to 32 MB in 4 KiB realloc
 *                    steps, writing the last byte of each step: total ms
 *   mixed            10 000 live blocks of random sizes, log-uniform from 8 B
 *                    to 512 KiB; 2 M times a random block is freed and
 *                    replaced; first and last bytes written: ns per
 *                    replacement and peak RSS (KiB)
 *
 * Output: one tab-separated line: WHO ROW ns ns_min ns_max [peak_rss_kib]. */
#include "bench_common.h"
#include <stdbool.h>

static void *(*volatile m_alloc)(size_t) = malloc;
static void *(*volatile m_realloc)(void *, size_t) = realloc;
static void (*volatile m_free)(void *) = free;

static double pair_once(size_t size, long n)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        char *p = m_alloc(size);
        p[0] = (char)i;
        m_free(p);
    }
    return (double)(now_ns() - t0) / (double)n;
}

static double realloc_once(void)
{
    uint64_t t0 = now_ns();
    char *p = NULL;
    for (size_t sz = 4096; sz <= (32u << 20); sz += 4096) {
        p = m_realloc(p, sz);
        p[sz - 1] = 1;
    }
    m_free(p);
    return (double)(now_ns() - t0) / 1e6;
}

static uint64_t rng = 88172645463325252ull;
static inline uint64_t next_rand(void)
{
    return xorshift64(&rng);
}
static size_t mixed_size(void)
{
    /* log-uniform in [8, 512 KiB]: a random exponent 3..19, then a random
     * size within that doubling */
    unsigned e = 3 + (unsigned)(next_rand() % 16);
    size_t lo = (size_t)1 << e;
    return lo + (size_t)(next_rand() % lo);
}

static double mixed_once(long ops)
{
    enum { LIVE = 10000 };
    static char *live[LIVE];
    static size_t len[LIVE];
    for (int i = 0; i < LIVE; i++) {
        len[i] = mixed_size();
        live[i] = m_alloc(len[i]);
        live[i][0] = live[i][len[i] - 1] = 1;
    }
    uint64_t t0 = now_ns();
    for (long k = 0; k < ops; k++) {
        unsigned i = (unsigned)(next_rand() % LIVE);
        m_free(live[i]);
        len[i] = mixed_size();
        live[i] = m_alloc(len[i]);
        live[i][0] = live[i][len[i] - 1] = 1;
    }
    double ns = (double)(now_ns() - t0) / (double)ops;
    for (int i = 0; i < LIVE; i++)
        m_free(live[i]);
    return ns;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s WHO pair SIZE | realloc | mixed [--quick]\n", argv[0]);
        return 2;
    }
    const char *who = argv[1], *row = argv[2];
    bool quick = argc > 3 && strcmp(argv[argc - 1], "--quick") == 0;
    int runs = quick ? 1 : 7;
    double v[7];
    char name[64];
    if (strcmp(row, "pair") == 0 && argc > 3) {
        size_t size = strtoull(argv[3], NULL, 0);
        long n = quick ? 100 : size >= (1u << 20) ? 20000 : 200000;
        pair_once(size, n / 10);                  /* warm up */
        for (int r = 0; r < runs; r++)
            v[r] = pair_once(size, n);
        if (size >= (1u << 20))
            snprintf(name, sizeof name, "malloc(%zu MiB)+free", size >> 20);
        else
            snprintf(name, sizeof name, "malloc(%zu KiB)+free", size >> 10);
    } else if (strcmp(row, "realloc") == 0) {
        runs = quick ? 1 : 3;
        for (int r = 0; r < runs; r++)
            v[r] = realloc_once();
        snprintf(name, sizeof name, "realloc 4 KiB steps to 32 MB (ms)");
    } else if (strcmp(row, "mixed") == 0) {
        runs = 1;
        v[0] = mixed_once(quick ? 10000 : 2000000);
        printf("%s\tmixed 8 B-512 KiB, 10 000 live\t%.1f\t%.1f\t%.1f\t%ld\n", who, v[0], v[0], v[0],
               status_kb("VmHWM:"));
        return 0;
    } else {
        fprintf(stderr, "unknown row %s\n", row);
        return 2;
    }
    qsort(v, (size_t)runs, sizeof *v, cmp_double);
    printf("%s\t%s\t%.1f\t%.1f\t%.1f\n", who, name, v[runs / 2], v[0], v[runs - 1]);
    return 0;
}
