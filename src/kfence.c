/*
 * kfence.c - KFENCE (the kernel's Kernel Electric-Fence), for the slab
 * objects of every back-end: one slow-path allocation in KSLAB_KFENCE (N)
 * is served from a pool of KFENCE_OBJECTS pages, each between two guard
 * pages, the object at the page's right end (an overflow runs into the next
 * guard page) or its left end (an underflow runs into the one before), the
 * rest of the page filled with a canary checked on free.  A freed object's
 * page is made inaccessible until the slot is used again (the oldest freed
 * slot is used first), so a use after free faults too.  Faults in the pool
 * are reported by kslab's SIGSEGV handler, which hands every other fault to
 * the handler installed before it.
 *
 * Sampling, on the slow paths only (a sheaf refill in the per-CPU mode, a
 * cpu slab change in the per-thread one): KSLAB_KFENCE=N samples one in N
 * of them; KSLAB_KFENCE=Nms the first after each N milliseconds, as the
 * kernel's kfence.sample_interval (100 ms there), so that what KFENCE
 * costs does not grow with the allocation rate -- a time-stamp counter
 * read against a deadline per slow path, the clock once per interval.
 *
 * Cost: nothing on the fast paths; off (the default), one test of a global
 * on the slow path.
 */
#define _GNU_SOURCE
#include "kfence.h"

#include <stdio.h>
#include <stdlib.h>

char *kslab_kfence_start, *kslab_kfence_end;
unsigned long kslab_kfence_interval;     /* KSLAB_KFENCE: 0 off */
static unsigned long countdown;          /* racy on purpose: sampling is a rate */
/* KSLAB_KFENCE=Nms: the interval, and the counter's deadline for the next
 * sample (plain, racy on purpose as countdown: two threads past it may
 * both sample, which a rate allows) */
static uint64_t interval_ns, next_tsc;

#define KFENCE_OBJECTS 255
#define CANARY 0xaa
enum slot_state { SLOT_UNUSED, SLOT_ALLOCATED, SLOT_FREED };
struct kfence_meta {
    struct kmem_cache *cache;
    char *addr;              /* the object */
    size_t size;
    enum slot_state state;
};
static struct kfence_meta meta[KFENCE_OBJECTS] KSLAB_BIG_BSS;
/* slots not allocated, oldest freed first: a ring under kfence_lock */
static unsigned ring[KFENCE_OBJECTS] KSLAB_BIG_BSS, ring_head, ring_count;
static kslab_lock_t kfence_lock = KSLAB_LOCK_INIT;

/* Slot i to the ring's tail (kfence_lock held). */
static void ring_put(unsigned i)
{
    ring[(ring_head + ring_count++) % KFENCE_OBJECTS] = i;
}

static char *slot_page(unsigned i)
{
    return kslab_kfence_start + (2 * (size_t)i + 1) * PAGE_SIZE;
}

static void kfence_fault(void *addr, bool write);

void kslab_kfence_init(void)
{
    const char *v = prim_getenv("KSLAB_KFENCE"), *end;
    unsigned long n;
    if (!v || !*v)
        return;
    if (!kslab_env_digits(v, &n, &end) ||
        (*end && (strcmp(end, "ms") != 0 || n > UINT64_MAX / 1000000u))) {
        kslab_warn("KSLAB_KFENCE=%s: not N or Nms; KFENCE off", v);
        return;
    }
    if (!n)
        return;                 /* 0, 0ms: off */
    if (*end)
        interval_ns = (uint64_t)n * 1000000u;
    size_t bytes = (2 * (size_t)KFENCE_OBJECTS + 1) * PAGE_SIZE;
    char *pool = prim_map_none(bytes);
    if (!pool || !prim_on_fault(kfence_fault)) {
        kslab_warn("KSLAB_KFENCE: cannot set up the pool or the fault handler; KFENCE off");
        return;
    }
    for (unsigned i = 0; i < KFENCE_OBJECTS; i++)
        ring[i] = i;
    ring_count = KFENCE_OBJECTS;
    kslab_kfence_start = pool;
    kslab_kfence_end = pool + bytes;
    countdown = n;
    kslab_kfence_interval = n;
}

bool kslab_kfence_due(void)
{
    if (interval_ns) {
        if (kslab_rdtsc() < next_tsc)
            return false;
        next_tsc = kslab_tsc_after(interval_ns, NULL);
        return true;
    }
    if (--countdown)
        return false;
    countdown = kslab_kfence_interval;
    return true;
}

/* An object of s (size bytes: the request for kmalloc, else the object
 * size) from the pool, or NULL (too big, too aligned, the pool in use).
 * Out of line (LTO inlined it into the slow path): it is rare, and the
 * bench counts its calls under callgrind. */
noinline void *kslab_kfence_alloc(struct kmem_cache *s, size_t size, gfp_t gfp)
{
    size_t align = s->align ? s->align : sizeof(void *);
    /* not SLAB_TYPESAFE_BY_RCU caches (the kmem_cache structs' among them):
     * their freed objects must stay readable, and this page would not;
     * nor caches that asked for it with SLAB_SKIP_KFENCE */
    if (!size || size > PAGE_SIZE || align > PAGE_SIZE ||
        (s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_SKIP_KFENCE)))
        return NULL;
    kslab_lock(&kfence_lock);
    if (!ring_count) {
        kslab_unlock(&kfence_lock);
        return NULL;
    }
    unsigned i = ring[ring_head];
    ring_head = (ring_head + 1) % KFENCE_OBJECTS;
    ring_count--;
    char *page = slot_page(i);
    if (!prim_protect(page, PAGE_SIZE, true)) {
        ring_put(i);                    /* back, last */
        kslab_unlock(&kfence_lock);
        return NULL;
    }
    /* right end (overflows fault) or left end (underflows fault) */
    char *x = (kslab_random64() & 1)
                  ? (char *)((uintptr_t)(page + PAGE_SIZE - size) & ~(uintptr_t)(align - 1))
                  : page;
    memset(page, CANARY, PAGE_SIZE);
    meta[i] = (struct kfence_meta){ .cache = s, .addr = x, .size = size,
                                    .state = SLOT_ALLOCATED };
    kslab_unlock(&kfence_lock);
    if (s->ctor)
        s->ctor(x);
    else if (gfp & __GFP_ZERO)
        memset(x, 0, size);
    return x;
}

/* The slot of an object page of the pool (NULL for a guard page). */
static struct kfence_meta *slot_of(const void *x, unsigned *ip)
{
    size_t pg = (size_t)((const char *)x - kslab_kfence_start) / PAGE_SIZE;
    if (!(pg & 1))
        return NULL;
    *ip = (unsigned)(pg / 2);
    return &meta[pg / 2];
}

int kslab_kfence_object(const void *x)
{
    unsigned i;
    struct kfence_meta *m = kslab_kfence_owns(x) ? slot_of(x, &i) : NULL;
    return m && m->state == SLOT_ALLOCATED;
}

void *kslab_kfence_start_of(const void *x)
{
    unsigned i;
    struct kfence_meta *m = slot_of(x, &i);
    return m && m->state == SLOT_ALLOCATED && (const char *)x >= m->addr &&
                   (const char *)x < m->addr + m->size
               ? m->addr
               : NULL;
}

static const char *cache_name_of(const struct kfence_meta *m)
{
    return m->cache ? m->cache->name : "(none)";
}

size_t kslab_kfence_ksize(const void *x, const char *fn)
{
    unsigned i;
    struct kfence_meta *m = slot_of(x, &i);
    if (!m || m->state != SLOT_ALLOCATED || (const char *)x != m->addr)
        kslab_report("KFENCE: %s(): %p is not a live KFENCE object", fn, x);
    return m->size;
}
/* The first byte in [from, to) that is not the canary, or to: eight bytes
 * a compare (a byte at a time, a sampled free took 28 000 instructions). */
static char *not_canary(char *from, char *to)
{
    const uint64_t all = 0x0101010101010101ull * CANARY;
    char *c = from;
    for (; c < to && ((uintptr_t)c & 7); c++)
        if ((unsigned char)*c != CANARY)
            return c;
    for (uint64_t w; to - c >= 8; c += 8) {
        memcpy(&w, c, 8);
        if (w != all)
            break;
    }
    for (; c < to; c++)
        if ((unsigned char)*c != CANARY)
            return c;
    return to;
}

void kslab_kfence_free(struct kmem_cache *want, const void *x, const char *fn)
{
    unsigned i;
    kslab_lock(&kfence_lock);
    struct kfence_meta *m = slot_of(x, &i);
    if (!m || m->state == SLOT_UNUSED) {
        kslab_unlock(&kfence_lock);
        kslab_report("KFENCE: %s(): invalid free of %p (no object there)", fn, x);
    }
    if (m->state == SLOT_FREED) {
        kslab_unlock(&kfence_lock);
        kslab_report("KFENCE: %s(): double free of %p (kfence-#%u, cache %s)", fn, x, i,
                     cache_name_of(m));
    }
    if ((const char *)x != m->addr) {
        kslab_unlock(&kfence_lock);
        kslab_report("KFENCE: %s(): invalid free of %p: inside kfence-#%u [%p, +%zu) of cache %s",
                     fn, x, i, (void *)m->addr, m->size, cache_name_of(m));
    }
    if (want && want != m->cache) {
        kslab_unlock(&kfence_lock);
        kslab_report("%s(%s): object %p belongs to cache %s, not %s", fn, want->name, x,
                     cache_name_of(m), want->name);
    }
    char *page = slot_page(i);
    char *c = not_canary(page, m->addr);
    if (c == m->addr)
        c = not_canary(m->addr + m->size, page + PAGE_SIZE);
    if (c != page + PAGE_SIZE) {
        kslab_unlock(&kfence_lock);
        kslab_report("KFENCE: memory corruption at %p, %tdB %s kfence-#%u [%p, +%zu) "
                     "of cache %s (found when it was freed by %s())", (void *)c,
                     c < m->addr ? m->addr - c : c - (m->addr + m->size) + 1,
                     c < m->addr ? "left of" : "right of", i, (void *)m->addr, m->size,
                     cache_name_of(m), fn);
    }
    /* inaccessible until reused: a later access faults as a use after free
     * (if the OS refuses, the slot is only marked freed) */
    (void)prim_protect(page, PAGE_SIZE, false);
    m->state = SLOT_FREED;
    ring_put(i);
    kslab_unlock(&kfence_lock);
}

/* The SIGSEGV hook: a fault in the pool is reported (then abort); any
 * other returns to prim's handler, which hands it on. */
static void kfence_fault(void *addr, bool write)
{
    if (!kslab_kfence_owns(addr))
        return;
    const char *rw = write ? "write" : "read";
    char *a = addr;
    size_t pg = (size_t)(a - kslab_kfence_start) / PAGE_SIZE;
    if (pg & 1) {                       /* an object page, inaccessible: freed */
        struct kfence_meta *m = &meta[pg / 2];
        kslab_report("KFENCE: use-after-free %s at %p (offset %td of kfence-#%zu [%p, +%zu) "
                     "of cache %s, freed)", rw, addr, a - m->addr, pg / 2, (void *)m->addr,
                     m->size, cache_name_of(m));
    }
    /* a guard page: the nearer allocated neighbour's out-of-bounds access */
    struct kfence_meta *l = pg ? &meta[(pg - 1) / 2] : NULL;
    struct kfence_meta *r = pg / 2 < KFENCE_OBJECTS ? &meta[pg / 2] : NULL;
    size_t dl = l && l->state == SLOT_ALLOCATED ? (size_t)(a - (l->addr + l->size)) + 1 : SIZE_MAX;
    size_t dr = r && r->state == SLOT_ALLOCATED ? (size_t)(r->addr - a) : SIZE_MAX;
    if (dl == SIZE_MAX && dr == SIZE_MAX)
        kslab_report("KFENCE: out-of-bounds %s at %p (a guard page, no object near)", rw, addr);
    struct kfence_meta *m = dl <= dr ? l : r;
    kslab_report("KFENCE: out-of-bounds %s at %p (%zuB %s kfence-#%td [%p, +%zu) of cache %s)",
                 rw, addr, dl <= dr ? dl : dr, dl <= dr ? "right of" : "left of", m - meta,
                 (void *)m->addr, m->size, cache_name_of(m));
}
