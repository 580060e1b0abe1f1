/*
 * walk.c - what freelist randomization costs a program that walks its
 * objects in the order it allocated them (python3's cyclic collector does,
 * over every container object), under any malloc (kslab by LD_PRELOAD):
 *
 *   walk WHO SIZE[,SIZE...] [--quick]
 *
 * allocates 400 000 objects of SIZE bytes, links each to the next one
 * allocated, then chases the links after evicting the caches (64 MiB
 * written between walks).  Prints the fastest of 11 walks in ns a node:
 * WHO <tab> walk SIZE B <tab> ns.  In address order the hardware
 * prefetchers follow the walk; any randomized order, windowed or not,
 * defeats them for part of it.  Several sizes (up to 8): each object's
 * size drawn from them by a fixed pseudo-random sequence, so the walk
 * interleaves one stream per class, as python3's collector's list mixes
 * its container objects' classes.
 * Then frees every node in allocation order, from an array of the pointers
 * (so the free is the only access to a node), after evicting the caches
 * once more: WHO <tab> free SIZE B <tab> ns a node.  A free writes its tag
 * into the node, so the free pays what the walk pays.
 */
#include "bench_common.h"
#include <stdbool.h>

static void *(*volatile m_alloc)(size_t) = malloc;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s WHO SIZE[,SIZE...] [--quick]\n", argv[0]);
        return 2;
    }
    size_t sizes[8], k = 0;
    for (char *a = argv[2]; *a && k < 8; a += *a == ',') {
        char *end;
        sizes[k] = (size_t)strtoul(a, &end, 10);
        if (end == a) {
            fprintf(stderr, "walk: bad size list %s\n", argv[2]);
            return 2;
        }
        if (sizes[k] < sizeof(void *))
            sizes[k] = sizeof(void *);
        k++;
        a = end;
    }
    bool quick = argc > 3 && strcmp(argv[3], "--quick") == 0;
    size_t n = quick ? 20000 : 400000;
    uint32_t lcg = 1;
    void **first = NULL, **prev = NULL;
    void ***all = m_alloc(n * sizeof *all);
    if (!all) {
        fprintf(stderr, "walk: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        lcg = lcg * 1103515245u + 12345u;
        size_t size = sizes[(lcg >> 16) % k];
        void **p = m_alloc(size);
        if (!p) {
            fprintf(stderr, "walk: out of memory\n");
            return 1;
        }
        memset(p, 0, size);
        all[i] = p;
        if (prev)
            *prev = p;
        else
            first = p;
        prev = p;
    }
    size_t evict_bytes = (size_t)64 << 20;
    char *evict = quick ? NULL : m_alloc(evict_bytes);
    double best = 1e300;
    for (int r = 0; r < (quick ? 2 : 11); r++) {
        if (evict)
            memset(evict, r, evict_bytes);
        uint64_t t = now_ns();
        size_t count = 0;
        for (void **p = first; p; p = *p)
            count++;
        t = now_ns() - t;
        if (count != n) {
            fprintf(stderr, "walk: %zu nodes, not %zu\n", count, n);
            return 1;
        }
        if ((double)t < best)
            best = (double)t;
    }
    printf("%s\twalk %s B\t%.2f\n", argv[1], argv[2], best / (double)n);
    if (evict)
        memset(evict, 0xff, evict_bytes);
    uint64_t t = now_ns();
    for (size_t i = 0; i < n; i++)
        free(all[i]);
    t = now_ns() - t;
    printf("%s\tfree %s B\t%.2f\n", argv[1], argv[2], (double)t / (double)n);
    return 0;
}
