/* test_oom.c - when the OS refuses memory (injected mmap failure), every
 * allocation returns NULL, nothing already allocated is touched, and the
 * caches work again once memory is back. */
#include "check.h"
#include <errno.h>
#include <kslab.h>
#include <pthread.h>
#include <stdint.h>

#define MAXOBJ (1 << 20)
static void *objs[MAXOBJ], *small[MAXOBJ];

static void *thread_alloc(void *arg)
{
    return kmalloc(64, GFP_KERNEL);     /* needs thread state: a mapping */
}

int main(void)
{
    struct kmem_cache *c = kmem_cache_create("oom_obj", 2000, 0, SLAB_NO_MERGE, NULL);
    /* huge allocations (their own mapping) fail cleanly */
    kslab_test_fail_map(1);
    CHECK(kmalloc(64 << 20, GFP_KERNEL) == NULL);
    void *big = kmalloc(64 << 20, GFP_KERNEL);
    CHECK(big != NULL);
    kfree(big);
    kslab_trim();          /* the cached mapping (and its header's slab) go back */

    /* exhaust: with every mapping refused, allocate until NULL (after one
     * allocation, so that this thread's state for c, mapped on first use,
     * exists) */
    kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
    /* a sheaf prefilled now must hand out every object once memory is gone
     * (its own cache: c's counts are checked below) */
    struct kmem_cache *cs = kmem_cache_create("oom_sheaf", 512, 0, SLAB_NO_MERGE, NULL);
    CHECK(cs != NULL);
    struct slab_sheaf *sh = kmem_cache_prefill_sheaf(cs, GFP_KERNEL, 20);
    CHECK(sh != NULL);
    unsigned in_sheaf = kmem_cache_sheaf_size(sh);
    CHECK(in_sheaf >= 20);
    kslab_test_fail_map(-1);
    long n = 0;
    while (n < MAXOBJ && (objs[n] = kmem_cache_alloc(c, GFP_KERNEL)) != NULL) {
        memset(objs[n], (int)(n & 0xff), 2000);
        n++;
    }
    CHECK(n < MAXOBJ);                      /* it did run out */
    CHECK(kmem_cache_alloc(c, GFP_KERNEL) == NULL);
    /* the sheaf's guarantee: nothing it holds can fail; a new one, or a
     * refill past what it holds, fails cleanly and changes nothing */
    CHECK(kmem_cache_prefill_sheaf(cs, GFP_KERNEL, 2000) == NULL);
    struct slab_sheaf *before = sh;
    CHECK_EQ(kmem_cache_refill_sheaf(cs, GFP_KERNEL, &sh, in_sheaf + 2000), -ENOMEM);
    CHECK(sh == before && kmem_cache_sheaf_size(sh) == in_sheaf);
    void *from_sheaf[64];
    unsigned took = 0;
    while (took < 64 && (from_sheaf[took] = kmem_cache_alloc_from_sheaf(cs, GFP_KERNEL, sh)))
        took++;
    CHECK_EQ(took, in_sheaf < 64 ? in_sheaf : 64);
    CHECK(kmalloc(1 << 16, GFP_KERNEL) == NULL);
    CHECK(kmem_cache_create("oom_new", 5000, 0, SLAB_NO_MERGE, NULL) == NULL ||
          kmem_cache_alloc(c, GFP_KERNEL) == NULL);
    /* small blocks may remain in the buddy when no slab of c fits: use them
     * up, so that the thread below fails for want of memory on every
     * back-end (SLUB also for want of its thread state) */
    long ns = 0;
    while (ns < MAXOBJ && (small[ns] = kmalloc(64, GFP_KERNEL)) != NULL)
        ns++;
    pthread_t t;
    void *tr = (void *)1;
    pthread_create(&t, NULL, thread_alloc, NULL);
    pthread_join(t, &tr);
    CHECK(tr == NULL);                      /* a new thread's state could not be mapped */
    struct kslab_stats st;
    kslab_cache_stats(c, &st);
    CHECK_EQ(st.active_objs, n);            /* counters still consistent */
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += ((unsigned char *)objs[i])[1999] != (i & 0xff);
    CHECK_EQ(bad, 0);
    /* frees work while memory is short, and the memory is reused */
    for (long i = 0; i < n; i += 2)
        kmem_cache_free(c, objs[i]);
    long again = 0;
    for (long i = 0; i < n; i += 2) {
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
        again += objs[i] != NULL;
        if (objs[i])
            memset(objs[i], (int)(i & 0xff), 2000);
    }
    CHECK_EQ(again, (n + 1) / 2);
    /* __GFP_NOFAIL retries until memory comes back (here: after 3 refusals) */
    kslab_test_fail_map(3);
    void *nf = kmalloc(300000, GFP_KERNEL | __GFP_NOFAIL);
    CHECK(nf != NULL);
    kfree(nf);
    kslab_test_fail_map(0);
    void *more = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(more != NULL);
    kmem_cache_free(c, more);
    bad = 0;
    for (long i = 0; i < n; i++) {
        bad += ((unsigned char *)objs[i])[1999] != (i & 0xff);
        kmem_cache_free(c, objs[i]);
    }
    CHECK_EQ(bad, 0);
    while (ns)
        kfree(small[--ns]);
    kslab_cache_stats(c, &st);
    CHECK_EQ(st.active_objs, 0);
    kmem_cache_destroy(c);
    for (unsigned i = 0; i < took; i++)
        kmem_cache_free(cs, from_sheaf[i]);
    kmem_cache_return_sheaf(cs, GFP_KERNEL, sh);
    kslab_cache_stats(cs, &st);
    CHECK_EQ(st.active_objs, 0);
    kmem_cache_destroy(cs);
    printf("ran out after %ld objects\n", n);
    return check_done();
}
