/*
 * test_kfence.c - KFENCE (issue 12), run by CTest with KSLAB_KFENCE=1 (every
 * slow-path allocation sampled) on every back-end and in both modes: an
 * overflow, an underflow and a use after free of a sampled object each
 * fault and are reported with the object, its cache and the distance; an
 * overflow that stays inside the page is found by the canary when the
 * object is freed; double and interior frees are reported; and sampled
 * objects work as any other through kfree, kmem_cache_free, ksize, krealloc
 * and both bulk frees.  Without KSLAB_KFENCE nothing is sampled and every
 * check fails.
 */
#include "check.h"
#include <kslab.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A sampled kmalloc(size) object at the right (right != 0) or left end of
 * its page; NULL if none came in many tries (KFENCE off). */
static char *sampled(size_t size, int right)
{
    for (int i = 0; i < 20000; i++) {
        char *p = kmalloc(size, GFP_KERNEL);
        if (kslab_kfence_object(p) && (((uintptr_t)p % 4096 != 0) == (right != 0)))
            return p;
        /* kept: freeing would feed the sheaves, and the next allocation
         * would not take the slow path that samples */
    }
    return NULL;
}

static void overflow(void *a)
{
    char *p = sampled(64, 1);
    if (p)
        p[64] = 1;
}
static void underflow(void *a)
{
    char *p = sampled(64, 0);
    if (p)
        ((volatile char *)p)[-1];       /* a read */
}
static void use_after_free(void *a)
{
    char *p = sampled(64, 1);
    if (!p)
        return;
    kfree(p);
    p[8] = 1;
}
static void canary(void *a)
{
    char *p = sampled(60, 1);           /* 60 bytes at the page's end, 4 of canary after */
    if (!p)
        return;
    p[60] = 1;                          /* inside the page: no fault */
    kfree(p);
}
/* corruption farther from the object (the check compares 8 bytes at a
 * time: the report must still name the first bad byte) */
static void canary_far_left(void *a)
{
    char *p = sampled(64, 1);           /* at the page's end: canary before */
    if (!p)
        return;
    p[-100] = 1;
    kfree(p);
}
static void canary_far_right(void *a)
{
    char *p = sampled(64, 0);           /* at the page's start: canary after */
    if (!p)
        return;
    p[64 + 37] = 1;
    p[64 + 45] = 1;                     /* the first one is reported */
    kfree(p);
}
static void double_free(void *a)
{
    char *p = sampled(64, 1);
    if (!p)
        return;
    kfree(p);
    kfree(p);
}
static void interior_free(void *a)
{
    char *p = sampled(64, 0);
    if (p)
        kfree(p + 8);
}

/* Sampled objects as any others: contents kept, every free path. */
static void works(void)
{
    struct kmem_cache *c = kmem_cache_create("kfence_obj", 100, 0, SLAB_NO_MERGE, NULL);
    enum { N = 64 };
    void *p[N];
    int seen = 0;
    for (int i = 0; i < N; i++) {
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
        seen += kslab_kfence_object(p[i]);
        memset(p[i], i, 100);
    }
    CHECK(seen > 0);
    for (int i = 0; i < N; i++) {
        unsigned char *b = p[i];
        CHECK(b[0] == i && b[99] == i);
        CHECK(ksize(p[i]) >= 100);
    }
    kmem_cache_free_bulk(c, N / 2, p);
    for (int i = N / 2; i < N; i++)
        kmem_cache_free(c, p[i]);
    seen = 0;
    for (int i = 0; i < N; i++) {
        p[i] = kmalloc(40, GFP_KERNEL);
        seen += kslab_kfence_object(p[i]);
        memset(p[i], 7, 40);
        p[i] = krealloc(p[i], 300, GFP_KERNEL);       /* moves out of a 40-byte object */
        CHECK(p[i] && ((unsigned char *)p[i])[39] == 7 && ksize(p[i]) >= 300);
    }
    CHECK(seen > 0);
    kfree_bulk(N / 2, p);
    for (int i = N / 2; i < N; i++)
        kfree(p[i]);
    kmem_cache_destroy(c);
}

/* SLAB_SKIP_KFENCE: never sampled; kslab_object_start and kmem_dump_obj
 * know sampled objects. */
static void skip_and_lookup(void)
{
    struct kmem_cache *c = kmem_cache_create("kfence_skip", 100, 0,
                                             SLAB_NO_MERGE | SLAB_SKIP_KFENCE, NULL);
    enum { N = 64 };
    void *p[N];
    int seen = 0;
    for (int i = 0; i < N; i++)
        seen += kslab_kfence_object(p[i] = kmem_cache_alloc(c, GFP_KERNEL));
    CHECK_EQ(seen, 0);
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    kmem_cache_destroy(c);
    char *k = NULL;
    for (int i = 0; i < 64 && !k; i++) {
        char *x = kmalloc(48, GFP_KERNEL);
        if (kslab_kfence_object(x))
            k = x;
        else
            p[i] = x;
    }
    CHECK(k != NULL);
    CHECK(kslab_object_start(k + 20) == k);
    CHECK(kmem_dump_obj(k + 20));
    kfree(k);
}

/* KSLAB_KFENCE=Nms (argv: --time N): the first slow-path allocation after
 * each N ms is sampled.  kmalloc(64) objects are allocated (and kept, so
 * that slow paths keep coming) for about 400 ms: the samples must be about
 * 400 / N -- at least 2, at most twice that -- where
 * sampling by count (KSLAB_KFENCE=N) would take one slow path in N and fill
 * the pool. */
static int by_time(unsigned ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned sampled = 0;
    double elapsed = 0;
    while (elapsed < 400) {
        for (int i = 0; i < 1000; i++) {
            void *p = kmalloc(64, GFP_KERNEL);
            sampled += kslab_kfence_object(p) ? 1 : 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        elapsed = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
    }
    /* (twice the intervals: the counter's rate is measured as the process
     * runs, so the first deadlines may come early) */
    unsigned most = 2 * (unsigned)(elapsed / ms) + 2;
    printf("KSLAB_KFENCE=%ums: %u sampled in %.0f ms (bounds 2..%u)\n", ms, sampled, elapsed, most);
    CHECK(sampled >= 2 && sampled <= most);
    return check_done();
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--time") == 0)
        return by_time((unsigned)strtoul(argv[2], NULL, 10));
    works();
    skip_and_lookup();
    CHECK_DEATH(overflow, NULL, "KFENCE: out-of-bounds write at 0x", "1B right of kfence-#",
                "of cache kmalloc-64");
    CHECK_DEATH(underflow, NULL, "KFENCE: out-of-bounds read at 0x", "1B left of kfence-#",
                "of cache kmalloc-64");
    CHECK_DEATH(use_after_free, NULL, "KFENCE: use-after-free write at 0x", "offset 8 of kfence-#",
                "of cache kmalloc-64, freed");
    CHECK_DEATH(canary, NULL, "KFENCE: memory corruption at 0x", "1B right of kfence-#",
                "of cache kmalloc-64 (found when it was freed by kfree())");
    CHECK_DEATH(canary_far_left, NULL, "KFENCE: memory corruption at 0x", "100B left of kfence-#");
    CHECK_DEATH(canary_far_right, NULL, "KFENCE: memory corruption at 0x", "38B right of kfence-#");
    CHECK_DEATH(double_free, NULL, "KFENCE: kfree(): double free of 0x");
    CHECK_DEATH(interior_free, NULL, "KFENCE: kfree(): invalid free of 0x", "inside kfence-#");
    return check_done();
}
