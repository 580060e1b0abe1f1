/*
 * malloc.c - libkslab-malloc.so: the C allocation functions (and the C++
 * operator new/delete family) on top of kslab's kmalloc, so any program runs
 * on it with LD_PRELOAD.  The back-end is chosen by KSLAB_ALLOCATOR as usual.
 *
 * Conventions follow glibc's: every pointer is 16-byte aligned; malloc(0)
 * returns a unique pointer; realloc(p, 0) frees p and returns NULL; failures
 * set errno to ENOMEM; posix_memalign with a bad alignment returns EINVAL and
 * leaves *memptr alone; memalign rounds a non-power-of-two alignment up.
 * Bad frees (double, foreign, interior) are reported like kfree()'s.
 *
 * It is safe before constructors run (kslab initialises itself on first use
 * and reads its options without allocating), inside TLS destructors and
 * atexit handlers, across fork, and with dlopen: kslab's static TLS is one
 * 8-byte initial-exec pointer (the thread's state).
 */
#define _GNU_SOURCE
#include "slab_common.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static inline void *enomem(void *p)
{
    if (unlikely(!p))
        errno = ENOMEM;
    return p;
}

/* malloc is kslab_malloc_plain itself, an alias made in kmalloc.c, where
 * it is defined (its slow paths set errno) */

/* kfree's rule that pointers up to ZERO_SIZE_PTR are no-ops is the
 * kernel's; malloc never returns one, so free((void *)1) .. 16 is a bad
 * free here, reported as any pointer kslab never gave out (glibc: "free():
 * invalid pointer").  Every deallocation below (free, free_sized, operator
 * delete) is free(), kslab_free inlined into it, which tests that on its
 * lookup's slow branch; realloc tests it here. */
static inline bool never_given(const void *p)
{
    return unlikely((uintptr_t)p - 1 < (uintptr_t)ZERO_SIZE_PTR);
}

/* noinline: the other deallocations jump here, and kslab_free, called
 * from here alone, is inlined into it (jumping on to kslab_free cost a
 * malloc+free pair 0.2 - 0.5 ns) */
EXPORT noinline fastpath_fn void free(void *p)
{
    kslab_free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return kslab_malloc(bytes, GFP_KERNEL | __GFP_ZERO | KSLAB_GFP_MALLOC);
}

EXPORT void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (never_given(p))
        kslab_bad_free("realloc", NULL, p);
    if (n == 0) {                       /* glibc: frees and returns NULL */
        kfree(p);
        return NULL;
    }
    size_t have = ksize(p);
    if (n <= have && (n >= have / 2 || have <= 16))
        return p;                       /* fits, and not wasting more than half */
    void *q = kslab_huge_resize(p, n, true);   /* huge to huge: mremap, no copy */
    if (q)
        return q;
    /* A block that grows past REALLOC_MAP_MIN (and up to the largest page
     * class) moves to a mapping of its own, copied this once: its next
     * growths are mremaps, as glibc's above its mmap threshold (sqlite3's
     * sorter doubles a buffer from 64 KiB to 2 MiB: copying each step cost
     * it 1000 page faults and 4 MiB of copies a run). */
    if (n > have && n >= REALLOC_MAP_MIN && n <= (PAGE_SIZE << MAX_PAGE_ORDER))
        q = kslab_realloc_map(n);
    if (!q)
        q = malloc(n);
    if (!q)
        return NULL;                    /* p is left alone */
    memcpy(q, p, n < have ? n : have);
    kfree(p);
    return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, bytes);
}

static inline bool pow2(size_t a)
{
    return a && !(a & (a - 1));
}

EXPORT int posix_memalign(void **memptr, size_t align, size_t n)
{
    if (!pow2(align) || align % sizeof(void *))
        return EINVAL;                  /* *memptr untouched */
    void *p = kslab_kmalloc_aligned(n, align, GFP_KERNEL | KSLAB_GFP_MALLOC);
    if (!p)
        return ENOMEM;
    *memptr = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (!pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return enomem(kslab_kmalloc_aligned(n, align, GFP_KERNEL | KSLAB_GFP_MALLOC));
}

EXPORT void *memalign(size_t align, size_t n)
{
    if (!pow2(align)) {                 /* glibc rounds up to a power of two */
        size_t a = 1;
        while (a < align && a)
            a <<= 1;
        if (!a) {
            errno = EINVAL;
            return NULL;
        }
        align = a;
    }
    return enomem(kslab_kmalloc_aligned(n, align, GFP_KERNEL | KSLAB_GFP_MALLOC));
}

EXPORT void *valloc(size_t n)
{
    return memalign(PAGE_SIZE, n);
}

EXPORT void *pvalloc(size_t n)
{
    size_t r = ALIGN_UP(n ? n : 1, PAGE_SIZE);
    if (r < n) {
        errno = ENOMEM;
        return NULL;
    }
    return memalign(PAGE_SIZE, r);
}

/* Every empty slab and every cached block back to the OS: 1 if any memory
 * was given back, as glibc's. */
EXPORT int malloc_trim(size_t pad)
{
    return kslab_trim() > 0;
}

EXPORT size_t malloc_usable_size(void *p)
{
    return p ? ksize(p) : 0;
}

EXPORT void free_sized(void *p, size_t n)
{
    free(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n)
{
    free(p);
}

/* ---- glibc's statistics ---------------------------------------------------- */

/* mallinfo2 in kslab's figures (left to glibc, it would describe glibc's
 * own heap, which nothing here uses).  glibc's fields, mapped:
 *   arena     memory kslab holds in its arenas: slab pages, large blocks
 *             (live or in the threads' pcp lists), freed pages in the
 *             global reserve;
 *   uordblks  of it, in use: the slots of allocated slab objects and the
 *             live large blocks;
 *   fordblks  of it, free: the rest (uordblks + fordblks = arena, as in
 *             glibc);
 *   hblkhd    live huge blocks, each its own mapping (glibc's mmapped
 *             chunks); hblks is not counted (0);
 *   keepcost  freed memory held that malloc_trim gives back without
 *             touching a slab: the global reserve and cached huge
 *             mappings.
 * The counters are read one after another, not at one instant; each is
 * clamped so the sums hold. */
EXPORT struct mallinfo2 mallinfo2(void)
{
    struct kslab_memory m;
    kslab_memory(&m);
    uint64_t slab_used = kslab_active_bytes();
    if (slab_used > m.slab_bytes)
        slab_used = m.slab_bytes;
    uint64_t pcp = m.pcp_bytes < m.large_bytes ? m.pcp_bytes : m.large_bytes;
    struct mallinfo2 mi = {
        .arena = m.slab_bytes + m.large_bytes + m.hot_bytes,
        .uordblks = slab_used + (m.large_bytes - pcp),
        .hblkhd = m.huge_bytes,
        .keepcost = m.hot_bytes + m.huge_cached_bytes,
    };
    mi.fordblks = mi.arena - mi.uordblks;
    return mi;
}

/* The old form: int fields, each clamped (glibc's wrap). */
EXPORT struct mallinfo mallinfo(void)
{
    struct mallinfo2 m2 = mallinfo2();
#define MI_INT(v) ((v) > INT_MAX ? INT_MAX : (int)(v))
    struct mallinfo mi = {
        .arena = MI_INT(m2.arena), .ordblks = MI_INT(m2.ordblks), .smblks = MI_INT(m2.smblks),
        .hblks = MI_INT(m2.hblks), .hblkhd = MI_INT(m2.hblkhd), .usmblks = MI_INT(m2.usmblks),
        .fsmblks = MI_INT(m2.fsmblks), .uordblks = MI_INT(m2.uordblks),
        .fordblks = MI_INT(m2.fordblks), .keepcost = MI_INT(m2.keepcost),
    };
#undef MI_INT
    return mi;
}

/* glibc's summary on stderr, in its layout, kslab's figures (for every
 * cache, kslab_slabinfo). */
EXPORT void malloc_stats(void)
{
    struct mallinfo2 m = mallinfo2();
    fprintf(stderr, "Arena 0:\nsystem bytes     = %10zu\nin use bytes     = %10zu\n"
                    "Total (incl. mmap):\nsystem bytes     = %10zu\nin use bytes     = %10zu\n"
                    "max mmap regions = %10d\nmax mmap bytes   = %10lu\n",
            m.arena, m.uordblks, m.arena + m.hblkhd, m.uordblks + m.hblkhd, 0, 0ul);
}

/* ---- glibc's other names -------------------------------------------------- */

/* glibc exports its allocator under these names too, and some programs and
 * libraries call them directly (malloc wrappers that want "the real
 * malloc", profilers, old code).  Left to glibc, they would hand out
 * glibc's blocks, which kslab's free reports as never given out, and
 * __libc_free would give kslab's blocks to glibc's free, which stops with
 * "free(): invalid pointer" or corrupts its heap.  jemalloc, mimalloc and
 * tcmalloc take them over the same way. */
EXPORT void *__libc_malloc(size_t n) { return malloc(n); }
EXPORT void __libc_free(void *p) { free(p); }
EXPORT void *__libc_calloc(size_t n, size_t m) { return calloc(n, m); }
EXPORT void *__libc_realloc(void *p, size_t n) { return realloc(p, n); }
EXPORT void *__libc_memalign(size_t align, size_t n) { return memalign(align, n); }
EXPORT void *__libc_valloc(size_t n) { return valloc(n); }
EXPORT void *__libc_pvalloc(size_t n) { return pvalloc(n); }

/* ---- C++ operator new / delete (Itanium ABI names) ------------------------ */

typedef void (*new_handler_t)(void);
extern new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* operator new never returns NULL: on failure it calls the new-handler (which
 * may free memory or throw) and retries; with no handler it throws
 * std::bad_alloc through libstdc++'s std::__throw_bad_alloc (this file is
 * built with -fexceptions so the exception unwinds through it). */
static noinline void *cxx_new(size_t n, size_t align)
{
    for (;;) {
        void *p = align ? kslab_kmalloc_aligned(n, align, GFP_KERNEL | KSLAB_GFP_MALLOC)
                        : kslab_malloc(n, GFP_KERNEL | KSLAB_GFP_MALLOC);
        if (likely(p))
            return p;
        new_handler_t h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
        if (h) {
            h();
            continue;
        }
        if (_ZSt17__throw_bad_allocv)
            _ZSt17__throw_bad_allocv();
        kslab_report("operator new(%zu): out of memory", n);
    }
}

/* operator new without an alignment: malloc's inline pop, and everything
 * else here (kslab_malloc_or; the s it passes is not needed) */
static void *cxx_new_miss(struct kmem_cache *s, gfp_t gfp, size_t n)
{
    return cxx_new(n, 0);
}

static void *cxx_new_nothrow(size_t n, size_t align)
{
    return align ? kslab_kmalloc_aligned(n, align, GFP_KERNEL | KSLAB_GFP_MALLOC) : malloc(n);
}

typedef struct { char c; } nothrow_t;

EXPORT void *_Znwm(size_t n) { return kslab_malloc_or(n, cxx_new_miss); }
EXPORT void *_Znam(size_t n) { return kslab_malloc_or(n, cxx_new_miss); }
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *t) { return cxx_new_nothrow(n, 0); }
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *t) { return cxx_new_nothrow(n, 0); }
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a); }
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new(n, a); }
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) { return cxx_new_nothrow(n, a); }
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) { return cxx_new_nothrow(n, a); }
EXPORT void _ZdlPv(void *p) { free(p); }
EXPORT void _ZdaPv(void *p) { free(p); }
EXPORT void _ZdlPvm(void *p, size_t n) { free(p); }
EXPORT void _ZdaPvm(void *p, size_t n) { free(p); }
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *t) { free(p); }
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *t) { free(p); }
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) { free(p); }
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a) { free(p); }
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { free(p); }
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { free(p); }
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) { free(p); }
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) { free(p); }
