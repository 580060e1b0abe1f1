/*
 * report.c - kslab's reports: one line on stderr, "kslab: ...", naming the
 * function, the cache and the address; fatal reports then abort.  Reports
 * never allocate (a fixed buffer, then one write).
 */
#define _GNU_SOURCE
#include "slab_common.h"

#include <stdarg.h>
#include <stdio.h>

static void vreport(const char *fmt, va_list ap)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "kslab: ");
    n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    prim_write_stderr(buf, (size_t)n);
}

void kslab_report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    kslab_publish_exit();           /* no exit handler runs after abort */
    prim_abort();
}

void kslab_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

_Noreturn void kslab_double_free(struct kmem_cache *s, const void *x)
{
    kslab_report("double free of object %p in cache %s", x, s ? s->name : "(destroyed cache)");
}

_Noreturn void kslab_bad_freepointer(struct kmem_cache *s, const void *x, const void *fp)
{
    kslab_report("freelist corrupted in cache %s: free object %p points to %p, not an "
                 "object of its slab (overflow or write after free)", s->name, x, fp);
}

_Noreturn void kslab_bad_tag(struct kmem_cache *s, const void *x, uint64_t word)
{
    kslab_report("double free or write after free of object %p in cache %s: its word at "
                 "offset %u is %#llx, not its free tag, as it leaves a sheaf (freed twice, an "
                 "overflow into it, or a write after free)", x, s->name, s->offset,
                 (unsigned long long)word);
}

_Noreturn void kslab_freelist_loop(struct kmem_cache *s, const void *slab_base)
{
    kslab_report("freelist of slab %p in cache %s is longer than its %u objects: "
                 "a loop (double free)", slab_base, s->name, s->objects);
}

/* Why x is not a valid object (of `want` when not NULL): the one-line
 * report every back-end's validation ends in. */
_Noreturn void kslab_bad_free(const char *fn, struct kmem_cache *s, const void *x)
{
    const char *want = s ? s->name : "(any)";
    if (!in_arena(x)) {
        struct huge_hdr *h = huge_of(x);
        if (!h)
            kslab_report("%s(%s): pointer %p was not allocated by kslab", fn, want, x);
        if (!huge_is_live(h))
            kslab_report("%s(): pointer %p is in a freed huge block at %p (%zu bytes): double "
                         "free or use after free", fn, x, h->base, h->size);
        if (s)
            kslab_report("%s(%s): pointer %p is a huge kmalloc block, not an object of cache %s",
                         fn, want, x, want);
        kslab_report("%s(): pointer %p is inside the huge block at %p (%zu bytes), not at its "
                     "start", fn, x, h->base, h->size);
    }
    if (!addr_desc((uintptr_t)x)->cache) {
        struct slab *h = pages_large_containing(x);
        if (!h)
            kslab_report("%s(%s): pointer %p is not in a live slab or large block (never "
                         "allocated, or freed)", fn, want, x);
        void *base = slab_address(h);
        if (s)
            kslab_report("%s(%s): pointer %p is a large kmalloc block, not an object of cache "
                         "%s", fn, want, x, want);
        if (x != base)
            kslab_report("%s(): pointer %p is inside the large block at %p (%zu bytes), not at "
                         "its start", fn, x, base, pages_large_size(h));
        kslab_report("%s(): double free of large block %p (%zu bytes)", fn, x,
                     pages_large_size(h));
    }
    struct slab *slab = arena_slab_of(x);
    if (!slab)
        kslab_report("%s(%s): pointer %p is not in a live slab (never allocated, or its slab "
                     "was freed)", fn, want, x);
    struct kmem_cache *real = slab->cache;
    if (s && real != s)
        kslab_report("%s(%s): object %p belongs to cache %s, not %s", fn, want, x, real->name,
                     want);
    uintptr_t base = (uintptr_t)slab_address(slab) + slab->pg_colour;
    uintptr_t idx = ((uintptr_t)x - base) / real->size;
    kslab_report("%s(%s): pointer %p is inside object %p of cache %s, not at its start", fn,
                 real->name, x, (void *)(base + idx * real->size), real->name);
}
