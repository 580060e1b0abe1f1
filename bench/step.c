/*
 * step.c - the one-thread free+malloc step under any malloc (kslab by
 * LD_PRELOAD): what the fast paths cost where many size classes compete
 * for the caches, as in the server row of section 70 without its threads.
 *
 *   malloc_step WHO LIVE MAXSIZE [--one] [--quick]
 *
 * keeps LIVE blocks of random sizes 8..MAXSIZE (--one: all MAXSIZE) and,
 * per step, frees a random one and allocates a block of a random size in
 * its place, writing its first byte.  The random indices and sizes are
 * drawn before the timed loop (a table of 2^20), so the loop is the
 * allocator's and a store.  Pinned to one CPU (the last allowed one).
 * Prints the fastest of 5 timed runs of 4 M steps in rdtsc cycles a step:
 * WHO <tab> step LIVE x 8-MAXSIZE B <tab> cycles.
 */
#include "bench_common.h"
#include <sched.h>
#include <stdbool.h>

static void *(*volatile m_alloc)(size_t) = malloc;
static void (*volatile m_free)(void *) = free;


static void pin_last_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &set)) {
            CPU_ZERO(&set);
            CPU_SET(c, &set);
            sched_setaffinity(0, sizeof(set), &set);
            return;
        }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s WHO LIVE MAXSIZE [--one] [--quick]\n", argv[0]);
        return 2;
    }
    size_t live = (size_t)atol(argv[2]), maxsz = (size_t)atol(argv[3]);
    bool one = false, quick = false;
    for (int i = 4; i < argc; i++) {
        one |= strcmp(argv[i], "--one") == 0;
        quick |= strcmp(argv[i], "--quick") == 0;
    }
    if (live < 1 || maxsz < 8) {
        fprintf(stderr, "step: LIVE >= 1, MAXSIZE >= 8\n");
        return 2;
    }
    size_t minsz = one ? maxsz : 8, steps = quick ? 100000 : 4000000;
    uint64_t rng = 88172645463325252ull;
    enum { TABLE = 1 << 20 };
    void **p = calloc(live, sizeof(void *));
    uint32_t *idx = malloc(TABLE * sizeof(uint32_t)), *sz = malloc(TABLE * sizeof(uint32_t));
    if (!p || !idx || !sz) {
        fprintf(stderr, "step: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < TABLE; i++) {
        idx[i] = (uint32_t)(xorshift64(&rng) % live);
        sz[i] = (uint32_t)(minsz + xorshift64(&rng) % (maxsz - minsz + 1));
    }
    pin_last_cpu();
    for (size_t i = 0; i < live; i++)
        if (!(p[i] = m_alloc(minsz + xorshift64(&rng) % (maxsz - minsz + 1)))) {
            fprintf(stderr, "step: out of memory\n");
            return 1;
        }
    double best = 0;
    for (int run = 0; run < (quick ? 1 : 6); run++) {   /* run 0 warms up */
        uint64_t t0 = cycles();
        for (size_t i = 0; i < steps; i++) {
            size_t k = idx[i & (TABLE - 1)];
            m_free(p[k]);
            if (!(p[k] = m_alloc(sz[i & (TABLE - 1)]))) {
                fprintf(stderr, "step: out of memory\n");
                return 1;
            }
            *(volatile char *)p[k] = 0;
        }
        double c = (double)(cycles() - t0) / (double)steps;
        if ((run > 0 || quick) && (best == 0 || c < best))
            best = c;
    }
    for (size_t i = 0; i < live; i++)
        m_free(p[i]);
    printf("%s\tstep %zu x %zu-%zu B\t%.2f\n", argv[1], live, minsz, maxsz, best);
    return 0;
}
