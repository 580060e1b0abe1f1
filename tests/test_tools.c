/* test_tools.c - ASan and valgrind see kslab's slab objects: a write to a
 * freed kmem_cache object, and a write one byte past a kmalloc(18) request,
 * are each stopped by the tool with a report that names the function that
 * made the access; a program that uses its objects correctly (every API
 * path, debug flags, validation, slabs made and given back) gets no report
 * at all, so kslab's own accesses to the objects it hides from the tool are
 * never blamed on the program.
 *
 *   test_tools            in an ASan build, each case in a child, checked;
 *                         elsewhere skipped (77): valgrind's runs are
 *                         test_valgrind.sh's
 *   test_tools CASE       one case (uaf, overflow, double, clean), for valgrind
 */
#define _GNU_SOURCE
#include "check.h"
#include <kslab.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HIDE(p) __asm__ volatile("" : "+r"(p) : : "memory")

/* global and never inlined: the tools' stacks name them */
void uaf_write(void *a);
void kmalloc_overflow(void *a);
void clean(void *a);
void double_free(void *a);

__attribute__((noinline)) void uaf_write(void *a)
{
    struct kmem_cache *s = kmem_cache_create("tools_uaf", 64, 0, 0, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    HIDE(p);
    ((volatile uint8_t *)p)[8] = 1;     /* after the free */
    HIDE(p);
}

__attribute__((noinline)) void kmalloc_overflow(void *a)
{
    uint8_t *p = kmalloc(18, GFP_KERNEL);
    HIDE(p);
    ((volatile uint8_t *)p)[18] = 1;    /* one past the request, inside kmalloc-32 */
    HIDE(p);
    kfree(p);
}

/* A double free: kslab's own report (asked of the tool, O(1)), nothing
 * freed twice, no report from the tool; exits 0 if the next two
 * allocations differ. */
__attribute__((noinline)) void double_free(void *a)
{
    struct kmem_cache *s = kmem_cache_create("tools_df", 64, 0, 0, NULL);
    void *keep = kmem_cache_alloc(s, GFP_KERNEL), *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    kmem_cache_free(s, p);
    void *x = kmem_cache_alloc(s, GFP_KERNEL), *y = kmem_cache_alloc(s, GFP_KERNEL);
    if (x == y)
        _exit(97);
    kmem_cache_free(s, x);
    kmem_cache_free(s, y);
    kmem_cache_free(s, keep);
}

static int ctor_calls;
static void ctor(void *p) { memset(p, 0x11, 40); ctor_calls++; }

__attribute__((noinline)) void clean(void *a)
{
    struct kmem_cache *plain = kmem_cache_create("tools_plain", 100, 0, 0, NULL);
    struct kmem_cache *dbg = kmem_cache_create("tools_dbg", 72, 0, SLAB_CONSISTENCY_CHECKS |
                                               SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER, NULL);
    struct kmem_cache *cted = kmem_cache_create("tools_ctor", 40, 0, 0, ctor);
    struct kmem_cache *rcu = kmem_cache_create("tools_rcu", 48, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    struct kmem_cache *const caches[4] = { plain, dbg, cted, rcu };
    static const size_t sizes[4] = { 100, 72, 40, 48 };
    static void *objs[3000];
    long sum = 0;
    for (int round = 0; round < 3; round++) {
        /* many slabs made, used to the last byte, emptied and given back */
        for (int i = 0; i < 3000; i++) {
            struct kmem_cache *s = caches[i % 4];
            uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
            if (!p)
                _exit(90);
            if (s == cted && p[39] != 0x11)   /* constructed (valgrind: defined) */
                _exit(96);
            memset(p, i & 0xff, sizes[i % 4]);
            objs[i] = p;
        }
        if (kmem_cache_validate(dbg) != 0)
            _exit(91);
        for (int i = 2999; i >= 0; i--) {
            struct kmem_cache *s = caches[i % 4];
            if (s == cted)
                memset(objs[i], 0x11, 40);     /* constructed state back, as a ctor cache must */
            kmem_cache_free(s, objs[i]);
        }
        kmem_cache_shrink(plain);
        kmem_cache_shrink(dbg);
    }
    /* kmalloc, every size class, kzalloc, ksize, krealloc up and down */
    for (size_t n = 1; n <= 8192; n += n / 3 + 1) {
        uint8_t *p = kmalloc(n, GFP_KERNEL), *z = kzalloc(n, GFP_KERNEL);
        if (!p || !z)
            _exit(92);
        memset(p, 1, n);
        for (size_t i = 0; i < n; i++)
            sum += z[i];
        size_t k = ksize(p);
        memset(p, 2, k);                       /* ksize's bytes are all usable */
        p = krealloc(p, n / 2 + 1, GFP_KERNEL);
        p[n / 2] = 3;
        p = krealloc(p, 2 * n, GFP_KERNEL);
        memset(p, 4, 2 * n);
        kfree(p);
        kfree(z);
    }
    /* bulk */
    void *bulk[64];
    if (kmem_cache_alloc_bulk(plain, GFP_KERNEL, 64, bulk) != 64)
        _exit(93);
    for (int i = 0; i < 64; i++)
        memset(bulk[i], 5, 100);
    kmem_cache_free_bulk(plain, 64, bulk);
    if (kslab_validate_all() != 0)
        _exit(94);
    kmem_cache_destroy(plain);
    kmem_cache_destroy(dbg);
    kmem_cache_destroy(cted);
    kmem_cache_destroy(rcu);
    _exit(sum == 0 && ctor_calls > 0 ? 0 : 95);   /* kzalloc's bytes all zero */
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        void (*fn)(void *) = strcmp(argv[1], "uaf") == 0 ? uaf_write
                           : strcmp(argv[1], "overflow") == 0 ? kmalloc_overflow
                           : strcmp(argv[1], "clean") == 0 ? clean
                           : strcmp(argv[1], "double") == 0 ? double_free : NULL;
        if (!fn)
            return 2;
        fn(NULL);
        return 0;
    }
#if defined(__SANITIZE_ADDRESS__)
    static char b[65536];
    int sig, st = run_child(uaf_write, NULL, b, sizeof b, &sig);
    CHECK(st != 0 && strstr(b, "AddressSanitizer: use-after-poison") &&
          strstr(b, "WRITE of size 1") && strstr(b, "in uaf_write"));
    if (!(st != 0 && strstr(b, "in uaf_write")))
        fprintf(stderr, "uaf: status %d signal %d:\n%s\n", st, sig, b);
    st = run_child(kmalloc_overflow, NULL, b, sizeof b, &sig);
    CHECK(st != 0 && strstr(b, "AddressSanitizer: use-after-poison") &&
          strstr(b, "in kmalloc_overflow"));
    if (!(st != 0 && strstr(b, "in kmalloc_overflow")))
        fprintf(stderr, "overflow: status %d signal %d:\n%s\n", st, sig, b);
    st = run_child(double_free, NULL, b, sizeof b, &sig);
    CHECK(st == 0 && strstr(b, "BUG tools_df (kslab): Object already free") &&
          !strstr(b, "AddressSanitizer"));
    if (st != 0 || !strstr(b, "Object already free"))
        fprintf(stderr, "double: status %d signal %d:\n%s\n", st, sig, b);
    st = run_child(clean, NULL, b, sizeof b, &sig);
    CHECK_EQ(st, 0);
    CHECK(!strstr(b, "AddressSanitizer"));
    if (st != 0 || strstr(b, "AddressSanitizer"))
        fprintf(stderr, "clean: status %d signal %d:\n%s\n", st, sig, b);
    return check_done();
#else
    return 77;                  /* no ASan here; valgrind's runs are test_valgrind.sh's */
#endif
}
