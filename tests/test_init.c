/*
 * test_init.c - init_on_alloc and init_on_free (issue 12), run by CTest
 * with KSLAB_INIT_ON_ALLOC=1 or KSLAB_INIT_ON_FREE=1 on every back-end:
 * objects handed out (init_on_alloc) or freed (init_on_free) hold zeroes,
 * through kmem_cache_alloc/free, kmalloc/kfree and the bulk calls, and a
 * constructor's objects keep what it wrote.  Without either variable every
 * check of zeroes fails (the filled bytes survive): run it so to see.
 */
#include "check.h"
#include <kslab.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { N = 64, SIZE = 100, FILL = 0xab };

/* Bytes of p[0..n) in [from, SIZE) that are not zero. */
static long nonzero(unsigned char **p, int n, size_t from)
{
    long bad = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = from; k < SIZE; k++)
            bad += p[i][k] != 0;
    return bad;
}

static void fill(unsigned char **p, int n)
{
    for (int i = 0; i < n; i++)
        memset(p[i], FILL, SIZE);
}

/* init_on_alloc: whatever was in them, objects come back zeroed. */
static void check_alloc(struct kmem_cache *c)
{
    unsigned char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    fill(p, N);
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    for (int i = 0; i < N; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(nonzero(p, N, 0) == 0);
    fill(p, N);
    kmem_cache_free_bulk(c, N, (void **)p);
    CHECK(kmem_cache_alloc_bulk(c, GFP_KERNEL, N, (void **)p) == N);
    CHECK(nonzero(p, N, 0) == 0);
    kmem_cache_free_bulk(c, N, (void **)p);
    for (int i = 0; i < N; i++)
        p[i] = kmalloc(SIZE, GFP_KERNEL);
    fill(p, N);
    for (int i = 0; i < N; i++)
        kfree(p[i]);
    for (int i = 0; i < N; i++)
        p[i] = kmalloc(SIZE, GFP_KERNEL);
    CHECK(nonzero(p, N, 0) == 0);
    for (int i = 0; i < N; i++)
        kfree(p[i]);
    /* a large block (the page allocator) too */
    unsigned char *big = kmalloc(64 << 10, GFP_KERNEL);
    memset(big, FILL, 64 << 10);
    kfree(big);
    big = kmalloc(64 << 10, GFP_KERNEL);
    long bad = 0;
    for (size_t k = 0; k < (64 << 10); k++)
        bad += big[k] != 0;
    CHECK(bad == 0);
    kfree(big);
}

/* init_on_free: a freed object's bytes are zero at once (its first word
 * may hold the free pointer: checked from byte 8), and zero when handed
 * out again.  Reading freed objects is the point of the test. */
static void check_free(struct kmem_cache *c)
{
    unsigned char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    fill(p, N);
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    CHECK(nonzero(p, N, 8) == 0);
    for (int i = 0; i < N; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(nonzero(p, N, 0) == 0);
    /* the bulk calls may clear the array's entries (the kernel's do): read
     * the freed objects through a copy */
    unsigned char *q[N];
    fill(p, N);
    memcpy(q, p, sizeof q);
    kmem_cache_free_bulk(c, N, (void **)p);
    CHECK(nonzero(q, N, 8) == 0);
    CHECK(kmem_cache_alloc_bulk(c, GFP_KERNEL, N, (void **)p) == N);
    CHECK(nonzero(p, N, 0) == 0);
    fill(p, N);
    memcpy(q, p, sizeof q);
    kfree_bulk(N, (void **)p);
    CHECK(nonzero(q, N, 8) == 0);
    for (int i = 0; i < N; i++)
        p[i] = kmalloc(SIZE, GFP_KERNEL);
    fill(p, N);
    for (int i = 0; i < N; i++)
        kfree(p[i]);
    CHECK(nonzero(p, N, 8) == 0);
}

/* Neither option touches a constructor's objects (the kernel's rule). */
static void ctor(void *x)
{
    memset(x, 0x5a, SIZE);
}
static void check_ctor(void)
{
    struct kmem_cache *c = kmem_cache_create("init_ctor", SIZE, 0, SLAB_NO_MERGE, ctor);
    unsigned char *p[N];
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++)
            p[i] = kmem_cache_alloc(c, GFP_KERNEL);
        long kept = 0;
        for (int i = 0; i < N; i++)
            for (size_t k = 0; k < SIZE; k++)
                kept += p[i][k] == 0x5a;
        CHECK(kept == (long)N * SIZE);
        for (int i = 0; i < N; i++)
            kmem_cache_free(c, p[i]);
    }
    kmem_cache_destroy(c);
}

int main(void)
{
    const char *a = getenv("KSLAB_INIT_ON_ALLOC"), *f = getenv("KSLAB_INIT_ON_FREE");
    bool on_alloc = a && strcmp(a, "0") != 0, on_free = f && strcmp(f, "0") != 0;
    struct kmem_cache *c = kmem_cache_create("init_obj", SIZE, 0, SLAB_NO_MERGE, NULL);
    /* either option selects the per-thread mode */
    CHECK(strcmp(kslab_cpu_mode(), "thread") == 0);
    if (on_alloc || !on_free)
        check_alloc(c);
    if (on_free || !on_alloc)
        check_free(c);
    check_ctor();
    kmem_cache_destroy(c);
    return check_done();
}
