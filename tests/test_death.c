/* test_death.c - bad input stops the program with one clear line naming what
 * happened, the address and the cache. */
#include "check.h"
#include <kslab.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

static void free_stack(void *a) { int x = 0; kfree(&x); }
static void free_libc(void *a) { void *m = malloc(64); memset(m, 0, 64); kfree(m); }
static void free_interior(void *a) { kfree((char *)a + 8); }
static void cache_free_interior(void *a)
{
    struct kmem_cache *c = kmem_cache_create("interior_obj", 100, 0, SLAB_NO_MERGE, NULL);
    char *p = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, p + 40);
}
/* Past slow start: the cache has its per-CPU sheaves (per-CPU mode). */
static void warm(struct kmem_cache *c)
{
    for (int i = 0; i < 32; i++)
        kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
}
/* The same for the kmalloc class that serves size. */
static void warm_kmalloc(size_t size)
{
    for (int i = 0; i < 32; i++)
        kfree(kmalloc(size, GFP_KERNEL));
}
/* SLAB colours its slabs (the first object colour_off bytes in, or a
 * multiple): a pointer into that gap, before a slab's first object, is no
 * object.  kfree's fast test (the array header's geometry, x's offset in
 * its slab less the colour) sees a "negative" offset there, which must
 * fail the test, not wrap into a valid index.  Found as an object whose
 * offset in its 4 KiB slab is under the object size but not 0 (200-byte
 * objects: 20 to a page, 96 bytes over, colours 0 and 64). */
static void colour_gap(void *a)
{
    struct kmem_cache *c = kmem_cache_create("colour_obj", 200, 0, SLAB_NO_MERGE, NULL);
    warm(c);
    for (int i = 0; i < 2000; i++) {
        char *p = kmem_cache_alloc(c, GFP_KERNEL);
        uintptr_t off = (uintptr_t)p & 4095;
        if (off >= 16 && off < 200) {
            /* the slab's start: an object's start were the colour
             * left out of the test */
            if (a)
                kfree(p - off);
            else
                kmem_cache_free(c, p - off);
            return;                     /* not reached: reported */
        }
    }
    fprintf(stderr, "colour_gap: no coloured slab found\n");
    exit(3);
}
/* Per-CPU mode: the free of p checks p's slab and leaves it as the CPU's
 * hint (percpu.h, rule 6); q + 40 is inside that slab but not an object's
 * start. */
static void hint_interior(void *a)
{
    struct kmem_cache *c = kmem_cache_create("hint_obj", 100, 0, SLAB_NO_MERGE, NULL);
    warm(c);
    char *p = kmem_cache_alloc(c, GFP_KERNEL), *q = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, p);
    kmem_cache_free(c, q + 40);
}
/* Every multiple of 8 inside an object of a cache whose size has an odd
 * factor (48 = 3 * 16, 320 = 5 * 64): the per-CPU pushes' object test
 * (percpu.h, PCPU_OBJECT_AT) must send each to the slow path, which
 * reports it -- offsets that are multiples of the odd factor (24 of 48:
 * the product alone gives index 8) and multiples of the power of two (16
 * of 48) alike.  The object is the first of its slab, where an index from
 * a wrong test is smallest (freelists are shuffled: any other object
 * would catch a wrong test only by chance): the lowest of a run of
 * objects-per-slab objects spaced one size apart, which neither size lets
 * cross from one slab into the next (their slabs leave a tail).  door 0:
 * kmem_cache_free after a free that set the CPU's hint (rule 6) to that
 * slab; 1: kfree (rule 9). */
struct sweep { unsigned size, off, door; };
static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}
static void sweep_interior(void *a)
{
    const struct sweep *w = a;
    char name[32];
    snprintf(name, sizeof name, "sweep_%u", w->size);
    struct kmem_cache *c = kmem_cache_create(name, w->size, 0, SLAB_NO_MERGE, NULL);
    warm(c);
    static char *o[4096];
    struct kslab_stats st;
    o[0] = kmem_cache_alloc(c, GFP_KERNEL);
    kslab_cache_stats(c, &st);
    size_t per = st.num_slabs ? st.num_objs / st.num_slabs : 1, n = 4 * per + 1, i = 0;
    if (n > 4096)
        n = 4096;
    for (size_t k = 1; k < n; k++)
        o[k] = kmem_cache_alloc(c, GFP_KERNEL);
    qsort(o, n, sizeof o[0], by_address);
    if (strcmp(kslab_allocator_name(), "slob") != 0) {  /* slob: no slabs */
        while (i + per <= n && (size_t)(o[i + per - 1] - o[i]) != (per - 1) * w->size)
            i++;
        if (i + per > n) {
            fprintf(stderr, "sweep_interior: no full slab of %s\n", name);
            exit(3);
        }
    }
    char *q = o[i], *p = o[i + 1];
    if (w->door == 0) {
        kmem_cache_free(c, p);
        kmem_cache_free(c, q + w->off);
    } else {
        kfree(p);
        kfree(q + w->off);
    }
}
static void sweep_all(void)
{
    static const unsigned sizes[] = { 48, 320 };
    for (unsigned i = 0; i < 2; i++)
        for (unsigned door = 0; door < 2; door++)
            for (unsigned off = 8; off < sizes[i]; off += 8) {
                struct sweep w = { sizes[i], off, door };
                char who[64];
                snprintf(who, sizeof who, "%s(sweep_%u)", door ? "kfree" : "kmem_cache_free",
                         sizes[i]);
                CHECK_DEATH(sweep_interior, &w, who, "is inside object", "not at its start");
            }
}
/* A slab is given back (shrink) and its page becomes a slab of another
 * cache of the same geometry (x_y: "hint_x", "hint_y").  p is freed with
 * kmem_cache_free (rule 6: its slab becomes the CPU's hint, which must not
 * vouch for the page once it is y's) or with kfree (whose map must then
 * name y), and so is the object of y found on that page: kmem_cache_free(x)
 * must report it as y's, kfree must give it to y. */
static void released_slab(const char *xn, const char *yn, bool by_kfree)
{
    struct kmem_cache *x = kmem_cache_create(xn, 256, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *y = kmem_cache_create(yn, 256, 0, SLAB_NO_MERGE, NULL);
    warm(x);
    warm(y);
    char *o[16];
    for (int i = 0; i < 16; i++)
        o[i] = kmem_cache_alloc(x, GFP_KERNEL);
    char *p = o[15];
    uintptr_t base = (uintptr_t)p & ~(uintptr_t)4095;
    for (int i = 0; i < 15; i++)    /* those of other slabs first */
        if (((uintptr_t)o[i] & ~(uintptr_t)4095) != base)
            kmem_cache_free(x, o[i]);
    /* then p's slab's, p last: by kmem_cache_free, the hint is p's slab */
    for (int i = 0; i < 16; i++)
        if (((uintptr_t)o[i] & ~(uintptr_t)4095) == base) {
            if (by_kfree)
                kfree(o[i]);
            else
                kmem_cache_free(x, o[i]);
        }
    kmem_cache_shrink(x);           /* the slab goes back to the page allocator */
    for (int i = 0; i < 100000; i++) {
        char *q = kmem_cache_alloc(y, GFP_KERNEL);
        if (((uintptr_t)q & ~(uintptr_t)4095) != base)
            continue;
        if (!by_kfree)
            kmem_cache_free(x, q);  /* dies here */
        kfree(q);                   /* must land in y */
        struct kslab_stats sx, sy;
        kslab_cache_stats(x, &sx);
        kslab_cache_stats(y, &sy);
        fprintf(stderr, "released_slab: x active %ld, y active %ld\n",
                (long)sx.active_objs, (long)sy.active_objs);
        abort();
    }
    fprintf(stderr, "released_slab: no object of %s reused the page\n", yn);
}
static void hint_released_slab(void *a) { released_slab("hint_x", "hint_y", false); }
static void kfree_released_slab(void *a) { released_slab("kfree_x", "kfree_y", true); }
/* kfree of a pointer inside a slab of kmalloc-128 just freed into (q + 40:
 * not at an object's start) must be reported. */
static void kfree_interior(void *a)
{
    warm_kmalloc(100);              /* kfree's per-CPU push */
    char *p = kmalloc(100, GFP_KERNEL), *q = kmalloc(100, GFP_KERNEL);
    kfree(p);
    kfree(q + 40);
}
static void wrong_cache(void *a)
{
    struct kmem_cache *x = kmem_cache_create("cache_x", 100, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *y = kmem_cache_create("cache_y", 100, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(x, GFP_KERNEL);
    kmem_cache_free(y, p);
}
static void wrong_cache_order(void *a)   /* caches with different slab orders */
{
    struct kmem_cache *x = kmem_cache_create("cache_small", 64, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *y = kmem_cache_create("cache_big", 3000, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(x, GFP_KERNEL);
    kmem_cache_free(y, p);
}
/* After a double free: the per-CPU mode's sheaves report the second copy
 * as it would be handed out again (percpu.h rule 8); the other modes and
 * back-ends reported at the free already. */
static void after_double_free(struct kmem_cache *c)
{
    for (int i = 0; i < 200; i++)
        (void)!kmem_cache_alloc(c, GFP_KERNEL);
}
/* Free x by kfree (how != NULL) or kmem_cache_free; p[0..n) by kfree_bulk
 * or kmem_cache_free_bulk, then after_double_free. */
static void free_how(struct kmem_cache *c, void *x, void *how)
{
    if (how)
        kfree(x);
    else
        kmem_cache_free(c, x);
}
static void free_bulk_how(struct kmem_cache *c, size_t n, void **p, void *how)
{
    if (how)
        kfree_bulk(n, p);
    else
        kmem_cache_free_bulk(c, n, p);
    after_double_free(c);
}
static void double_free_fast(void *a)
{
    void *keep = kmalloc(32, GFP_KERNEL);     /* a neighbour keeps the page alive (SLOB) */
    void *p = kmalloc(32, GFP_KERNEL);
    (void)keep;
    kfree(p);
    kfree(p);
    after_double_free(kslab_kmalloc_cache(32));
}
static void double_free_slow(void *a)
{
    /* p's slab is no longer the cpu slab when it is freed twice */
    struct kmem_cache *c = kmem_cache_create("df_obj", 256, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 100; i++)
        (void)!kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, p);
    kmem_cache_free(c, p);
    after_double_free(c);
}
/* Two objects a and b of c, once c is warm (past slow start, its per-CPU
 * or per-thread sheaves in use), and a third kept so that their page
 * stays (SLOB). */
static void warm_pair(struct kmem_cache *c, void **a, void **b)
{
    void *warm[200];
    for (int i = 0; i < 200; i++)
        warm[i] = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 200; i++)
        kmem_cache_free(c, warm[i]);
    *a = kmem_cache_alloc(c, GFP_KERNEL);
    *b = kmem_cache_alloc(c, GFP_KERNEL);
    (void)!kmem_cache_alloc(c, GFP_KERNEL);
}
/* free a, free b, free a, on a warm cache (past slow start, its per-CPU
 * or per-thread sheaves in use), by kmem_cache_free or (a != NULL) kfree */
static void double_free_aba(void *how)
{
    struct kmem_cache *c = kmem_cache_create("df_aba", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b;
    warm_pair(c, &a, &b);
    free_how(c, a, how);
    free_how(c, b, how);
    free_how(c, a, how);
    after_double_free(c);
}
/* kmem_cache_free_bulk (a != NULL: kfree_bulk) of [a, b, a] */
static void double_free_bulk_aba(void *how)
{
    struct kmem_cache *c = kmem_cache_create("df_bulk", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b;
    warm_pair(c, &a, &b);
    void *p[3] = { a, b, a };
    free_bulk_how(c, 3, p, how);
}
/* The same object freed by two threads, one after the other, each pinned
 * to its own CPU where there are two: in the per-CPU mode the two frees
 * push onto two different sheaves, which no sheaf-top test sees; the free
 * tag (percpu.h rule 8) does.  by_kfree: kfree, else kmem_cache_free. */
struct two_frees { struct kmem_cache *c; void *p; int cpu; bool by_kfree; };
static void *free_pinned(void *arg)
{
    struct two_frees *f = arg;
    pin_cpu(f->cpu);            /* best effort: one CPU is fine too */
    if (!f->p)                  /* allocate: the per-CPU mode reports here */
        after_double_free(f->c);
    else
        free_how(f->c, f->p, f->by_kfree ? "kfree" : NULL);
    return NULL;
}
static void double_free_cpus(void *how)
{
    struct kmem_cache *c = kmem_cache_create("df_cpus", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b;
    warm_pair(c, &a, &b);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* two frees, then allocations on each CPU: the per-CPU mode reports
     * when the second copy would be handed out */
    for (int i = 0; i < 4; i++) {
        struct two_frees f = { c, i < 2 ? a : NULL, (int)(i % (ncpu > 0 ? ncpu : 1)), how != NULL };
        pthread_t t;
        pthread_create(&t, NULL, free_pinned, &f);
        pthread_join(t, NULL);
    }
}
/* free a, then 40 other objects, then a again: far past any "freed
 * recently" test, still in a sheaf (the per-CPU mode's free tag). */
static void double_free_far(void *how)
{
    struct kmem_cache *c = kmem_cache_create("df_far", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b, *o[40];
    warm_pair(c, &a, &b);
    for (int i = 0; i < 40; i++)
        o[i] = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, a);
    for (int i = 0; i < 40; i++)
        kmem_cache_free(c, o[i]);
    free_how(c, a, how);
    after_double_free(c);
}
/* kmem_cache_free_bulk of [a, b, c, d, e, a]: a duplicate that is neither
 * adjacent nor among the last two, in one bulk call (more objects than a
 * bulk call frees one by one). */
static void double_free_bulk_far(void *how)
{
    struct kmem_cache *c = kmem_cache_create("df_bulk_far", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b;
    warm_pair(c, &a, &b);
    void *p[6] = { a, b };
    for (int i = 2; i < 5; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    p[5] = a;
    free_bulk_how(c, 6, p, how);
}
/* A write after free into the word a free object's tag lives in (SLUB
 * and SLAB's free pointer word: offset 0 here), then the allocation that
 * would hand the object out again. */
static void write_after_free(void *how)
{
    struct kmem_cache *c = kmem_cache_create("waf_obj", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b;
    warm_pair(c, &a, &b);
    free_how(c, a, how);
    memset(a, 0x41, 8);
    (void)!kmem_cache_alloc(c, GFP_KERNEL);
}
/* The same through kmalloc, whose pop claims with a compare where
 * kmem_cache_alloc's xors (percpu.h, enum pcpu_claim): each reports the
 * word as it found it. */
static void kmalloc_write_after_free(void *how)
{
    warm_kmalloc(64);
    uint64_t *volatile p = kmalloc(64, GFP_KERNEL);
    kfree(p);
    p[0] = 0x4141414141414141ull;
    (void)!kmalloc(64, GFP_KERNEL);
    (void)how;
}
/* An 8-byte overflow from an object into the free one after it, which the
 * next allocation would hand out. */
static void overflow_into_free(void *how)
{
    struct kmem_cache *c = kmem_cache_create("ovf_obj", 64, 0, SLAB_NO_MERGE, NULL);
    void *a, *b, *o[256];
    warm_pair(c, &a, &b);
    for (int i = 0; i < 256; i++)
        o[i] = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 255; i++)
        for (int j = 0; j < 256; j++)
            if ((char *)o[j] == (char *)o[i] + 64) {
                kmem_cache_free(c, o[j]);           /* the neighbour, free */
                memset((char *)o[i] + 64, 0x41, 8);  /* 8 bytes past o[i] */
                (void)!kmem_cache_alloc(c, GFP_KERNEL);
                return;
            }
    (void)how;
    fprintf(stderr, "no two adjacent objects\n");
}
static void double_free_large(void *a)
{
    void *p = kmalloc(100000, GFP_KERNEL);
    kfree(p);
    kfree(p);
}
static void large_interior(void *a)
{
    char *p = kmalloc(100000, GFP_KERNEL);
    kfree(p + 5000);
}
static void double_free_huge(void *a)
{
    void *p = kmalloc(9 << 20, GFP_KERNEL);
    kfree(p);
    kfree(p);
}
static void huge_interior(void *a)
{
    char *p = kmalloc(9 << 20, GFP_KERNEL);
    kfree(p + (5 << 20));
}
static void ksize_freed_large(void *a)
{
    void *p = kmalloc(50000, GFP_KERNEL);
    kfree(p);
    (void)!ksize(p);
}
static void bulk_large_interior(void *a)
{
    char *p = kmalloc(50000, GFP_KERNEL);
    void *v[2] = { kmalloc(32, GFP_KERNEL), p + 4096 };
    kfree_bulk(2, v);
}
static void large_into_cache(void *a)
{
    struct kmem_cache *c = kmem_cache_create("small_obj", 64, 0, SLAB_NO_MERGE, NULL);
    kmem_cache_free(c, kmalloc(100000, GFP_KERNEL));
}
static void after_destroy(void *a)
{
    struct kmem_cache *c = kmem_cache_create("gone_obj", 2000, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_destroy(c);
    kfree(p);
}
static void ksize_bad(void *a) { int x = 0; (void)ksize(&x); }
static void bad_allocator(void *a)
{
    char *argv[] = { (char *)a, (char *)"--noop", NULL };
    char *envp[] = { (char *)"KSLAB_ALLOCATOR=bogus", NULL };
    execve((char *)a, argv, envp);
    _exit(99);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--noop") == 0)
        return 0;
    CHECK_DEATH(free_stack, NULL, "kfree((any)): pointer 0x", "was not allocated by kslab");
    CHECK_DEATH(free_libc, NULL, "was not allocated by kslab");
    char *obj = kmalloc(64, GFP_KERNEL);
    char where[64], start[64];
    snprintf(where, sizeof where, "pointer %p is inside object", (void *)(obj + 8));
    snprintf(start, sizeof start, "object %p of cache kmalloc-64", (void *)obj);
    CHECK_DEATH(free_interior, obj, "kfree(kmalloc-64): ", where, start);
    kfree(obj);
    CHECK_DEATH(cache_free_interior, NULL, "kmem_cache_free(interior_obj)", "is inside object", "not at its start");
    CHECK_DEATH(hint_interior, NULL, "kmem_cache_free(hint_obj)", "is inside object", "not at its start");
    CHECK_DEATH(hint_released_slab, NULL, "kmem_cache_free(hint_x): object 0x",
                "belongs to cache hint_y, not hint_x");
    CHECK_DEATH(kfree_interior, NULL, "kfree(kmalloc-128)", "is inside object", "not at its start");
    sweep_all();
    if (strcmp(kslab_allocator_name(), "slab") == 0) {
        CHECK_DEATH(colour_gap, "kfree", "kfree(colour_obj)", "pointer 0x");
        CHECK_DEATH(colour_gap, NULL, "kmem_cache_free(colour_obj)", "pointer 0x");
    }
    CHECK_DEATH(kfree_released_slab, NULL, "released_slab: x active 0, y active");
    CHECK_DEATH(wrong_cache, NULL, "kmem_cache_free(cache_y): object 0x", "belongs to cache cache_x, not cache_y");
    CHECK_DEATH(wrong_cache_order, NULL, "belongs to cache cache_small, not cache_big");
    CHECK_DEATH(double_free_fast, NULL, "double free", "object 0x", "in cache kmalloc-32");
    CHECK_DEATH(double_free_slow, NULL, "double free", "object 0x", "in cache df_obj");
    CHECK_DEATH(double_free_aba, NULL, "double free", "object 0x", "in cache df_aba");
    CHECK_DEATH(double_free_aba, "kfree", "double free", "object 0x", "in cache df_aba");
    CHECK_DEATH(double_free_bulk_aba, NULL, "double free", "object 0x", "in cache df_bulk");
    CHECK_DEATH(double_free_bulk_aba, "kfree", "double free", "object 0x", "in cache df_bulk");
    /* double frees: every mode and back-end; the per-CPU mode's sheaves
     * report "double free or write after free of object ... in cache"
     * (percpu.h rule 8), the rest "double free of object ... in cache" */
    CHECK_DEATH(double_free_cpus, NULL, "double free", "object 0x", "in cache df_cpus");
    CHECK_DEATH(double_free_cpus, "kfree", "double free", "object 0x", "in cache df_cpus");
    if (strcmp(kslab_cpu_mode(), "percpu") == 0 && (strcmp(kslab_allocator_name(), "slub") == 0 ||
                                                    strcmp(kslab_allocator_name(), "slab") == 0)) {
        /* the free tag: however far back (the per-thread mode's sheaves
         * compare with their last two frees only; SLOB and slob-seg keep
         * none), and a write into a free object's tag word */
        CHECK_DEATH(double_free_far, NULL, "double free", "object 0x", "in cache df_far");
        CHECK_DEATH(double_free_far, "kfree", "double free", "object 0x", "in cache df_far");
        CHECK_DEATH(double_free_bulk_far, NULL, "double free", "object 0x", "in cache df_bulk_far");
        CHECK_DEATH(double_free_bulk_far, "kfree", "double free", "object 0x", "in cache df_bulk_far");
        CHECK_DEATH(write_after_free, NULL, "write after free of object 0x", "in cache waf_obj");
        CHECK_DEATH(write_after_free, "kfree", "write after free of object 0x", "in cache waf_obj");
        CHECK_DEATH(overflow_into_free, NULL, "write after free of object 0x", "in cache ovf_obj",
                    "is 0x4141414141414141, not its free tag");
        CHECK_DEATH(kmalloc_write_after_free, NULL, "write after free of object 0x",
                    "in cache kmalloc-64", "is 0x4141414141414141, not its free tag");
    }
    CHECK_DEATH(double_free_large, NULL, "kfree(): double free of large block 0x");
    CHECK_DEATH(large_interior, NULL, "inside the large block at 0x");
    CHECK_DEATH(large_into_cache, NULL, "is a large kmalloc block, not an object of cache small_obj");
    CHECK_DEATH(double_free_huge, NULL, "is in a freed huge block at 0x");
    CHECK_DEATH(huge_interior, NULL, "inside the huge block at 0x");
    CHECK_DEATH(ksize_freed_large, NULL, "ksize(): double free of large block 0x");
    CHECK_DEATH(bulk_large_interior, NULL, "kfree_bulk(): pointer 0x");
    CHECK_DEATH(after_destroy, NULL, "is not in a live slab");
    CHECK_DEATH(ksize_bad, NULL, "ksize((any)): pointer", "was not allocated by kslab");
    CHECK_DEATH(bad_allocator, argv[0], "KSLAB_ALLOCATOR=bogus", "valid: slub");
    /* the address printed is the one passed */
    {
        char buf[1024];
        int sig;
        run_child(free_stack, NULL, buf, sizeof buf, &sig);
        CHECK(strstr(buf, "kslab: ") == buf);             /* one line, prefixed */
        CHECK(strchr(buf, '\n') == buf + strlen(buf) - 1);
    }
    return check_done();
}
