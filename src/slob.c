/*
 * slob.c - the classic SLOB back-end, after the kernel's mm/slob.c (Linux 6.3
 * and earlier): a simple list-of-blocks allocator for small machines.
 *
 * How it works
 * ------------
 * Memory comes in 4 KiB pages shared by all caches.  A page is a sequence of
 * blocks measured in 8-byte units; free blocks are linked in address order
 * inside the page, and the page descriptor keeps the first free block and the
 * free unit count.  Pages with free space sit on one of three lists by the
 * size of the requests they serve: under 256 bytes, under 1024, the rest.
 * Allocation walks its list (next-fit: the search starts where the last one
 * succeeded), first-fit within a page honouring alignment, and takes a new
 * page when nothing fits.  Free puts the block back in address order and
 * coalesces it with its neighbours; a page that becomes entirely free goes
 * back to the page layer.  One lock (slob_lock) covers everything.
 *
 * Every block starts with an 8-byte header: its size in units, the id of the
 * cache it belongs to (the kmalloc class for kmalloc), and a tag (derived
 * from the block's address while it is allocated, a fixed value while free).
 * The kernel's SLOB keeps a header only on kmalloc blocks; kslab keeps one on
 * every block so that frees are validated (foreign, interior, wrong-cache,
 * double) like on the other back-ends.  Objects bigger than a page get pages
 * of their own.  A SLAB_TYPESAFE_BY_RCU cache never gives a block back to the
 * shared lists while it lives: its freed objects wait on a list of its own
 * (linked through a word after the object, a hardened free pointer, with
 * their headers tagged TAG_RCU_FREE) and are reused only by it; so do its
 * objects on pages of their own (their head descriptors on a second list,
 * pg_pad BIG_RCU_FREE).  It gives them back when destroyed, and on
 * kmem_cache_shrink after a grace period when RCU is registered.
 *
 * Page states: on a list (has free units), full (on no list), released.
 * Lock order: slob_lock -> pages_lock (pages are freed with it dropped).
 */
#include "slob.h"
#include "percpu.h"

#define UNIT 8u
#define PAGE_UNITS (PAGE_SIZE / UNIT)
#define NO_NEXT 0xffffu
#define TAG_FREE 0xf4eeu      /* even */
#define TAG_RCU_FREE 0xf4ecu  /* even: on its RCU cache's list of freed objects */
#define BIG_RCU_FREE 0xf4ecu  /* a big object's head pg_pad: the same (0: in use) */
#define TAG_USED 0x5a0bu
#define BREAK1 256u
#define BREAK2 1024u

struct slob_hdr {
    uint16_t units;   /* block size in units, header included */
    uint16_t next;    /* free block: unit index of the next free block, or NO_NEXT */
    uint16_t id;      /* cache id */
    uint16_t tag;
};
_Static_assert(sizeof(struct slob_hdr) == UNIT, "one unit of header");

static kslab_lock_t slob_lock = KSLAB_LOCK_INIT;
static struct slab *slob_lists[3];          /* small, medium, large (slob_lock) */

/* Pages shared by all caches name this pseudo cache in their descriptors:
 * objects == 0 makes SLUB's inline free test miss, so kfree() comes here. */
static struct kmem_cache slob_pages = {
    .name = "slob-pages", .objects = 0, .size = 8, .slab_mask = ~(PAGE_SIZE - 1),
    PCPU_NONE_INIT
};

/* Always odd, so it can never read as TAG_FREE. */
static inline uint16_t used_tag(const void *obj)
{
    return (uint16_t)((TAG_USED ^ ((uintptr_t)obj >> 3)) | 1);
}
static inline struct slob_hdr *unit_at(char *page, unsigned u)
{
    return (struct slob_hdr *)(page + (size_t)u * UNIT);
}
static inline unsigned list_of(size_t bytes)
{
    return bytes < BREAK1 ? 0 : bytes < BREAK2 ? 1 : 2;
}

/* The lists are circular, so next-fit is a rotation: starting the next search
 * at the page that just succeeded moves the pages skipped on the way to the
 * back, as the kernel's list_move_tail() of the list head does. */
static void page_list_add(struct slab *sp, unsigned which)
{
    struct slab *head = slob_lists[which];
    sp->pg_pad = (uint16_t)(which + 1);
    if (!head) {
        sp->next = sp->prev = sp;
    } else {                          /* in front of the head: the new head */
        sp->next = head;
        sp->prev = head->prev;
        head->prev->next = sp;
        head->prev = sp;
    }
    slob_lists[which] = sp;
}

static void page_list_del(struct slab *sp)
{
    unsigned which = sp->pg_pad - 1u;
    if (sp->next == sp) {
        slob_lists[which] = NULL;
    } else {
        sp->prev->next = sp->next;
        sp->next->prev = sp->prev;
        if (slob_lists[which] == sp)
            slob_lists[which] = sp->next;
    }
    sp->next = sp->prev = NULL;
    sp->pg_pad = 0;
}

/* slob_page_alloc(): first fit in one page; the object after the header is
 * aligned to `align`.  Returns the object or NULL (slob_lock held). */
static void *slob_page_alloc(struct slab *sp, unsigned units, unsigned align, uint16_t id)
{
    char *page = slab_address(sp);
    unsigned prev = NO_NEXT, cur = (unsigned)(uintptr_t)sp->freelist;
    while (cur != NO_NEXT) {
        struct slob_hdr *h = unit_at(page, cur);
        unsigned avail = h->units, next = h->next;
        /* units to skip so that the object (one unit in) is aligned */
        uintptr_t obj = (uintptr_t)(h + 1);
        unsigned delta = (unsigned)((ALIGN_UP(obj, align) - obj) / UNIT);
        if (avail >= delta + units) {
            if (delta) {               /* keep the leading fragment as a free block */
                h->units = (uint16_t)delta;
                h->next = (uint16_t)(cur + delta);
                prev = cur;
                cur += delta;
                h = unit_at(page, cur);
                avail -= delta;
            }
            if (avail > units) {       /* split: the tail stays free */
                struct slob_hdr *rest = unit_at(page, cur + units);
                rest->units = (uint16_t)(avail - units);
                rest->next = (uint16_t)next;
                rest->tag = TAG_FREE;
                next = cur + units;
            }
            if (prev == NO_NEXT)
                sp->freelist = (void *)(uintptr_t)next;
            else
                unit_at(page, prev)->next = (uint16_t)next;
            sp->counters.inuse -= units;   /* free units in the page */
            h->units = (uint16_t)units;
            h->next = 0;
            h->id = id;
            h->tag = used_tag(h + 1);
            return h + 1;
        }
        prev = cur;
        cur = next;
    }
    return NULL;
}

static void *slob_alloc_block(struct kmem_cache *s, size_t bytes, unsigned align)
{
    unsigned units = 1 + (unsigned)((bytes + UNIT - 1) / UNIT);
    unsigned which = list_of(bytes);
    if (align < UNIT)
        align = UNIT;
    kslab_lock(&slob_lock);
    struct slab *head = slob_lists[which], *sp = head;
    while (sp) {
        struct slab *next = sp->next == head ? NULL : sp->next;
        void *obj = sp->counters.inuse >= units
                        ? slob_page_alloc(sp, units, align, (uint16_t)s->id) : NULL;
        if (obj) {
            slob_lists[which] = sp;    /* next-fit: the next search starts here */
            if (sp->counters.inuse == 0)
                page_list_del(sp);     /* full */
            kslab_unlock(&slob_lock);
            return obj;
        }
        sp = next;
    }
    kslab_unlock(&slob_lock);
    sp = pages_alloc(0, &slob_pages);
    if (!sp)
        return NULL;
    kslab_count(s, ALLOC_SLAB, 1);
    /* The page is private until published: write its header first, so the
     * destroy walker (which parses every published page) never reads the
     * stale bytes of the page's previous life. */
    struct slob_hdr *h = (struct slob_hdr *)slab_address(sp);
    h->units = (uint16_t)PAGE_UNITS;
    h->next = NO_NEXT;
    h->tag = TAG_FREE;
    sp->freelist = (void *)(uintptr_t)0;
    sp->counters.word = 0;
    sp->counters.inuse = PAGE_UNITS;
    pages_publish(sp);
    kslab_lock(&slob_lock);
    /* allocate from the fresh page before another thread can take it */
    void *obj = slob_page_alloc(sp, units, align, (uint16_t)s->id);
    if (sp->counters.inuse)
        page_list_add(sp, which);
    kslab_unlock(&slob_lock);
    return obj;
}

/* Objects that do not fit a page get whole pages, named after their cache. */
static bool is_big(size_t bytes)
{
    return bytes + UNIT > PAGE_SIZE;
}

static inline void **rcu_link(struct kmem_cache *s, void *obj)
{
    return (void **)((char *)obj + ALIGN_UP(s->object_size, UNIT));
}
static inline void rcu_set_next(struct kmem_cache *s, void *obj, void *next)
{
    void **slot = rcu_link(s, obj);
    *slot = (void *)((uintptr_t)next ^ freepointer_key(s, slot));
}
/* The object after obj on s's list of RCU-freed objects (slob_lock held),
 * checked as it is read: NULL, or a block of a shared page that s freed
 * and has not handed out again.  A link forged by an overflow or a write
 * after free decodes to garbage and is reported, never handed out.
 * KSLAB_HARDENED=0 (fp_swab 0): neither encoded nor checked, as SLUB's. */
static void *rcu_next(struct kmem_cache *s, void *obj)
{
    void **slot = rcu_link(s, obj);
    void *next = (void *)((uintptr_t)*slot ^ freepointer_key(s, slot));
    if (!next || !s->fp_swab)
        return next;
    struct slob_hdr *h = (struct slob_hdr *)next - 1;
    if (!in_arena(next) || ((uintptr_t)next & (UNIT - 1)) ||
        addr_desc((uintptr_t)next)->cache != &slob_pages ||
        (uintptr_t)next - (uintptr_t)slab_address(addr_desc((uintptr_t)next)) < UNIT ||
        h->tag != TAG_RCU_FREE || h->id != s->id) {
        kslab_unlock(&slob_lock);
        kslab_bad_freepointer(s, obj, next);
    }
    return next;
}

static void *slob_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    size_t bytes = kmalloc_size ? kmalloc_size : s->object_size;
    if (s->flags & SLAB_TYPESAFE_BY_RCU) {
        kslab_lock(&slob_lock);
        void *obj = slob_c(s)->rcu_free;
        struct slab *big = slob_c(s)->rcu_big;
        if (obj) {
            slob_c(s)->rcu_free = rcu_next(s, obj);
            ((struct slob_hdr *)obj - 1)->tag = used_tag(obj);
        } else if (big) {
            slob_c(s)->rcu_big = big->next;
            big->pg_pad = 0;
            obj = slab_address(big);
        }
        kslab_unlock(&slob_lock);
        if (obj) {
            kslab_count(s, ALLOC_SLOWPATH, 1);
            if (gfp & __GFP_ZERO)
                memset(obj, 0, s->object_size);
            return obj;
        }
        bytes = ALIGN_UP(s->object_size, UNIT) + sizeof(void *);
    }
    /* kmalloc: power-of-two sizes naturally aligned, others 8 (malloc: 16);
     * caches: their own */
    unsigned align = !kmalloc_size ? s->align : (gfp & KSLAB_GFP_MALLOC) ? 16
                   : (bytes & (bytes - 1)) == 0 ? (unsigned)bytes : UNIT;
    void *obj;
    /* its own pages if it cannot fit a page with the worst alignment padding */
    bool big = is_big(bytes + (align > UNIT ? align - UNIT : 0));
    if (big && (gfp & KSLAB_GFP_MALLOC))
        /* malloc's classes reach 128 KiB; SLOB would round their blocks to
         * powers of two.  A page-class block wastes under a quarter, as
         * every malloc block above 128 KiB does (freed by kfree as such). */
        return kslab_large_alloc(kmalloc_size, 0, gfp);
    if (big) {
        /* blocks of 2^order pages are naturally aligned: big enough for
         * the object and for its alignment */
        unsigned order = 0;
        while ((PAGE_SIZE << order) < bytes || (PAGE_SIZE << order) < align)
            order++;
        if (order > MAX_SLAB_ORDER)
            return NULL;
        struct slab *sp = pages_alloc(order, s);
        if (!sp)
            return NULL;
        sp->counters.word = 0;
        sp->counters.order = (uint8_t)order;
        sp->pg_pad = 0;             /* in use (BIG_RCU_FREE: on its cache's list) */
        kslab_count(s, ALLOC_SLAB, 1);
        if (s->ctor)
            s->ctor(slab_address(sp));
        pages_publish(sp);
        obj = slab_address(sp);
    } else {
        obj = slob_alloc_block(s, bytes, align);
        if (!obj)
            return NULL;
        if (s->ctor)
            s->ctor(obj);
    }
    atomic_fetch_add_explicit(&s->total_objects, 1, memory_order_relaxed);
    kslab_count(s, ALLOC_SLOWPATH, 1);
    if (gfp & __GFP_ZERO)           /* all of ksize(), as the other back-ends do */
        memset(obj, 0, big ? PAGE_SIZE << addr_desc((uintptr_t)obj)->pg_order
                                     : (size_t)(((struct slob_hdr *)obj - 1)->units - 1) * UNIT);
    return obj;
}

/* The used block that contains x, or NULL (slob_lock held). */
static struct slob_hdr *block_containing(char *page, const void *x, bool *is_free)
{
    unsigned u = 0;
    while (u < PAGE_UNITS) {
        struct slob_hdr *h = unit_at(page, u);
        if (!h->units)
            return NULL;
        if ((const char *)x < (char *)h + (size_t)h->units * UNIT) {
            *is_free = h->tag == TAG_FREE || h->tag == TAG_RCU_FREE;
            return h;
        }
        u += h->units;
    }
    return NULL;
}

static const char *cache_name(unsigned id)
{
    struct kmem_cache *c = kslab_cache_by_id(id);
    return c ? c->name : "(destroyed cache)";
}

static _Noreturn void slob_bad(const char *fn, struct kmem_cache *want, void *x, char *page)
{
    const char *wn = want ? want->name : "(any)";
    bool is_free = false;
    struct slob_hdr *h = block_containing(page, x, &is_free);
    kslab_unlock(&slob_lock);
    if (!h || is_free)
        kslab_report("%s(%s): pointer %p is not in a live object (never allocated, or freed)",
                     fn, wn, x);
    kslab_report("%s(%s): pointer %p is inside object %p of cache %s, not at its start", fn,
                 cache_name(h->id), x, (void *)(h + 1), cache_name(h->id));
}

/* x is a big object (pages of its own, sp its page's descriptor): its head
 * descriptor, validated (x at the start, of want when not NULL). */
static struct slab *big_head(struct kmem_cache *want, const void *x, const char *fn,
                             const struct slab *sp)
{
    struct slab *head = addr_desc((uintptr_t)x & ~((PAGE_SIZE << sp->pg_order) - 1));
    if ((want && sp->cache != want) || head->pg_state != PG_SLAB ||
        (const void *)slab_address(head) != x)
        kslab_bad_free(fn, want, x);
    return head;
}

/* The header of the used block x of a shared page, validated (slob_lock
 * held; a report drops it).  freeing: a freed block's header survives
 * coalescing until its memory is handed out again, so TAG_FREE there means
 * this object was freed already; TAG_RCU_FREE, that it waits on its RCU
 * cache's list (free a, free b, free a is reported there too). */
static struct slob_hdr *used_block(struct kmem_cache *want, const void *x, const char *fn,
                                   char *page, bool freeing)
{
    struct slob_hdr *h = (struct slob_hdr *)x - 1;
    if ((const char *)x - page < (ptrdiff_t)UNIT || ((uintptr_t)x & (UNIT - 1)))
        slob_bad(fn, want, (void *)x, page);
    if (freeing && (h->tag == TAG_FREE || h->tag == TAG_RCU_FREE)) {
        kslab_unlock(&slob_lock);
        kslab_double_free(kslab_cache_by_id(h->id), x);
    }
    if (h->tag != used_tag(x))
        slob_bad(fn, want, (void *)x, page);
    return h;
}

/* kslab_object_start for SLOB's shared pages: the start of the used block
 * holding x, or NULL (x in a free block or a header). */
void *slob_object_start(const void *x)
{
    struct slab *sp = addr_desc((uintptr_t)x);
    if (sp->cache != &slob_pages)
        return NULL;
    char *page = slab_address(sp);
    bool is_free = true;
    kslab_lock(&slob_lock);
    struct slob_hdr *h = block_containing(page, x, &is_free);
    kslab_unlock(&slob_lock);
    if (!h || is_free || (const char *)x < (const char *)(h + 1))
        return NULL;
    return h + 1;
}

/* Who frees: a caller (an RCU cache's object then stays the cache's, for
 * stale readers), kmem_cache_destroy's walk, or the give-back of an RCU
 * cache's lists (rcu_give_back), whose objects' frees were counted when
 * they were listed. */
enum slob_free_by { BY_CALLER, BY_DESTROY, BY_GIVE_BACK };

static void slob_free_by(struct kmem_cache *want, void *x, const char *fn, enum slob_free_by by)
{
    /* SLOB's pages name slob_pages, not the object's cache: look it up */
    struct slab *sp = addr_desc((uintptr_t)x);
    struct kmem_cache *owner = sp->cache;
    if (!owner)
        kslab_bad_free(fn, want, x);
    if (owner != &slob_pages) {                   /* a big object's own pages */
        struct slab *head = big_head(want, x, fn, sp);
        if (by == BY_CALLER && (owner->flags & SLAB_TYPESAFE_BY_RCU)) {
            /* stays this cache's, as the small ones do (below) */
            kslab_lock(&slob_lock);
            if (head->pg_pad == BIG_RCU_FREE) {
                kslab_unlock(&slob_lock);
                kslab_double_free(owner, x);
            }
            head->pg_pad = BIG_RCU_FREE;
            head->next = slob_c(owner)->rcu_big;
            slob_c(owner)->rcu_big = head;
            kslab_unlock(&slob_lock);
            kslab_count(owner, FREE_SLOWPATH, 1);
            return;
        }
        atomic_fetch_sub_explicit(&owner->total_objects, 1, memory_order_relaxed);
        if (by != BY_GIVE_BACK)
            kslab_count(owner, FREE_SLOWPATH, 1);
        kslab_count(owner, FREE_SLAB, 1);
        pages_free(head, head->pg_order);
        return;
    }
    char *page = slab_address(sp);
    kslab_lock(&slob_lock);
    struct slob_hdr *h = used_block(want, x, fn, page, true);
    struct kmem_cache *s = want ? want : kslab_cache_by_id(h->id);
    if (want && h->id != want->id) {
        kslab_unlock(&slob_lock);
        kslab_report("%s(%s): object %p belongs to cache %s, not %s", fn, want->name, x,
                     cache_name(h->id), want->name);
    }
    if (by == BY_CALLER && s && (s->flags & SLAB_TYPESAFE_BY_RCU)) {
        /* stays this cache's: type-safe for stale readers (used_block
         * proved it a used block; its tag now says where it waits) */
        h->tag = TAG_RCU_FREE;
        rcu_set_next(s, x, slob_c(s)->rcu_free);
        slob_c(s)->rcu_free = x;
        kslab_unlock(&slob_lock);
        kslab_count(s, FREE_SLOWPATH, 1);
        return;
    }
    /* init_on_free: the block's bytes after its header (validated above) */
    if (unlikely(kslab_init_on_free) && s && kslab_wants_init_on_free(s))
        memset(x, 0, (size_t)(h->units - 1) * UNIT);
    /* put the block back in address order and coalesce */
    unsigned u = (unsigned)(((char *)h - page) / UNIT), units = h->units;
    bool was_full = sp->counters.inuse == 0;
    sp->counters.inuse += units;
    unsigned prev = NO_NEXT, cur = (unsigned)(uintptr_t)sp->freelist;
    if (was_full)
        cur = NO_NEXT;
    while (cur != NO_NEXT && cur < u) {
        prev = cur;
        cur = unit_at(page, cur)->next;
    }
    h->tag = TAG_FREE;
    h->next = (uint16_t)cur;
    if (cur != NO_NEXT && u + h->units == cur) {          /* merge with the next */
        struct slob_hdr *n = unit_at(page, cur);
        h->units = (uint16_t)(h->units + n->units);
        h->next = n->next;
    }
    if (prev != NO_NEXT) {
        struct slob_hdr *p = unit_at(page, prev);
        if (prev + p->units == u) {                        /* merge with the previous */
            p->units = (uint16_t)(p->units + h->units);
            p->next = h->next;
        } else {
            p->next = (uint16_t)u;
        }
    } else {
        sp->freelist = (void *)(uintptr_t)u;
    }
    struct slab *release = NULL;
    if (sp->counters.inuse == PAGE_UNITS) {               /* entirely free */
        if (!was_full)
            page_list_del(sp);
        release = sp;
    } else if (was_full) {
        page_list_add(sp, list_of((size_t)(units - 1) * UNIT));
    }
    kslab_unlock(&slob_lock);
    if (s) {
        atomic_fetch_sub_explicit(&s->total_objects, 1, memory_order_relaxed);
        if (by != BY_GIVE_BACK)
            kslab_count(s, FREE_SLOWPATH, 1);
        if (release)
            kslab_count(s, FREE_SLAB, 1);
    }
    if (release)
        pages_free(release, 0);
}

/* The back-end's free (SLOB's pages name slob_pages, not the cache: named
 * is not needed) */
static void slob_free(struct kmem_cache *want, struct kmem_cache *named, void *x, const char *fn)
{
    (void)named;
    slob_free_by(want, x, fn, BY_CALLER);
}

static size_t slob_ksize(struct kmem_cache *owner, const void *x)
{
    struct slab *sp = addr_desc((uintptr_t)x);
    if (owner != &slob_pages)
        return PAGE_SIZE << big_head(NULL, x, "ksize", sp)->pg_order;
    /* a block of the shared pages: its header is read under slob_lock (a
     * concurrent free may be coalescing it) */
    kslab_lock(&slob_lock);
    size_t n = (size_t)(used_block(NULL, x, "ksize", slab_address(sp), false)->units - 1) * UNIT;
    kslab_unlock(&slob_lock);
    return n;
}

static int slob_cache_init(struct kmem_cache *s)
{
    s->size = (uint32_t)ALIGN_UP(s->object_size, UNIT);
    /* As aligned as SLUB's stride makes a merged alias expect: the largest
     * power of two dividing the size (kmalloc-128 objects are 128-aligned). */
    unsigned low = s->size & -s->size;
    if (low > PAGE_SIZE)
        low = PAGE_SIZE;
    if (low > s->align)
        s->align = low;
    s->offset = 0;
    s->order = 0;
    s->objects = 0;                /* SLUB's inline free test always misses */
    s->slab_mask = ~(PAGE_SIZE - 1);
    s->inv = 1;
    s->shift = 0;
    /* every object must honour s->align: refuse what no block can give */
    return s->object_size > (PAGE_SIZE << MAX_SLAB_ORDER) ||
           s->align > (PAGE_SIZE << MAX_SLAB_ORDER) ? -1 : 0;
}

/* An RCU cache's freed objects, both lists, taken off it (rcu_take) and
 * given back to the shared pages and the page layer (rcu_give_back): by
 * kmem_cache_shrink once a grace period has passed, as SLUB and SLAB give
 * back an RCU cache's empty slabs, and by kmem_cache_destroy (after its
 * rcu_barrier).  Until then they stay tagged: a second free of one is
 * still a double free. */
struct slob_rcu_batch {
    struct kmem_cache *s;
    void *objs;
    struct slab *big;
};

/* s's lists into *b, s's emptied; whether there was anything */
static bool rcu_take(struct kmem_cache *s, struct slob_rcu_batch *b)
{
    kslab_lock(&slob_lock);
    *b = (struct slob_rcu_batch){ s, slob_c(s)->rcu_free, slob_c(s)->rcu_big };
    slob_c(s)->rcu_free = NULL;
    slob_c(s)->rcu_big = NULL;
    kslab_unlock(&slob_lock);
    return b->objs || b->big;
}

/* (fn: the caller, for the reports) */
static void rcu_give_back(struct slob_rcu_batch *b, const char *fn)
{
    struct kmem_cache *s = b->s;
    long left = atomic_load_explicit(&s->total_objects, memory_order_relaxed);
    for (void *o = b->objs, *next; o; o = next) {
        /* a used block again, then freed (the walk bounded by the objects
         * s has: a looping list is reported) */
        kslab_lock(&slob_lock);
        if (left-- <= 0) {
            kslab_unlock(&slob_lock);
            kslab_report("the RCU free list of cache %s is longer than its objects: a loop "
                         "(double free or a forged link)", s->name);
        }
        next = rcu_next(s, o);
        ((struct slob_hdr *)o - 1)->tag = used_tag(o);
        kslab_unlock(&slob_lock);
        slob_free_by(s, o, fn, BY_GIVE_BACK);
    }
    for (struct slab *h = b->big, *next; h; h = next) {
        kslab_lock(&slob_lock);
        next = h->next;
        h->pg_pad = 0;              /* (descriptors: no forged link to fear) */
        kslab_unlock(&slob_lock);
        slob_free_by(s, slab_address(h), fn, BY_GIVE_BACK);
    }
}

static void rcu_give_back_deferred(void *arg)
{
    rcu_give_back(arg, "kmem_cache_shrink");
    kfree(arg);
}

static int slob_shrink(struct kmem_cache *s)
{
    /* an RCU cache's freed objects: back after a grace period when RCU is
     * registered (libkslab-rcu); kept for the cache otherwise */
    if ((s->flags & SLAB_TYPESAFE_BY_RCU) && kslab_rcu_registered()) {
        struct slob_rcu_batch *b = kmalloc(sizeof *b, GFP_KERNEL);
        if (b && rcu_take(s, b))
            kslab_rcu_defer(rcu_give_back_deferred, b);
        else
            kfree(b);
    }
    pages_release_all();
    return 0;
}

/* Tear a cache down: free every block that still carries its id (its pages
 * are shared, so the blocks are found by walking the pages on the lists and
 * the full pages through the page layer). */
struct slob_walk { struct kmem_cache *s; void *objs[256]; unsigned n; long total; };

static void slob_collect_page(struct slab *sp, void *arg)
{
    struct slob_walk *w = arg;
    char *page = slab_address(sp);
    kslab_lock(&slob_lock);          /* pages_lock -> slob_lock: nobody nests the other way */
    for (unsigned u = 0; u < PAGE_UNITS && w->n < 256;) {
        struct slob_hdr *h = unit_at(page, u);
        if (!h->units)
            break;
        if (h->tag == used_tag(h + 1) && h->id == w->s->id)
            w->objs[w->n++] = h + 1;
        u += h->units;
    }
    kslab_unlock(&slob_lock);
}

static void slob_collect_big(struct slab *sp, void *arg)
{
    struct slob_walk *w = arg;
    if (w->n < 256)
        w->objs[w->n++] = slab_address(sp);
}

static long slob_destroy(struct kmem_cache *s)
{
    struct slob_walk w = { .s = s };
    /* the objects on its RCU lists first (the walk bounded by the objects
     * s has: a looping list is reported), then every block still its */
    struct slob_rcu_batch b;
    if (rcu_take(s, &b))
        rcu_give_back(&b, "kmem_cache_destroy");
    if (!atomic_load_explicit(&s->total_objects, memory_order_relaxed))
        return 0;                            /* no block carries its id: skip the walk */
    do {
        w.n = 0;
        pages_for_each_slab(&slob_pages, slob_collect_page, &w);
        pages_for_each_slab(s, slob_collect_big, &w);
        for (unsigned i = 0; i < w.n; i++)
            slob_free_by(s, w.objs[i], "kmem_cache_destroy", BY_DESTROY);
        w.total += w.n;
    } while (w.n == 256);
    return w.total;
}

/* malloc's aligned requests: one block of the exact size, aligned.  The
 * kmalloc class of the size names the block (for counters and messages). */
static void *slob_kmalloc_aligned(size_t size, size_t align, gfp_t gfp)
{
    size_t bytes = size;              /* >= 1, <= KSLAB_MAX_ALLOC (checked by the caller) */
    struct kmem_cache *s = kslab_kmalloc_cache(bytes <= KMALLOC_MAX_CACHE_SIZE ? bytes
                                                                             : KMALLOC_MAX_CACHE_SIZE);
    if (bytes + align + UNIT > PAGE_SIZE)   /* with the worst alignment padding */
        return kslab_large_alloc(ALIGN_UP(bytes, align), align, gfp);
    void *obj = slob_alloc_block(s, bytes, (unsigned)align);
    if (!obj)
        return NULL;
    atomic_fetch_add_explicit(&s->total_objects, 1, memory_order_relaxed);
    kslab_count(s, ALLOC_SLOWPATH, 1);
    if (gfp & __GFP_ZERO)
        memset(obj, 0, (size_t)(((struct slob_hdr *)obj - 1)->units - 1) * UNIT);
    return obj;
}

static void slob_atfork(int phase)
{
    kslab_lock_atfork(&slob_lock, phase);
}

const struct kslab_backend slob_backend = {
    .name = "slob",
    .max_caches = 1u << 16,         /* a block's header records its cache id in 16 bits */
    .cache_init = slob_cache_init,
    .alloc = slob_alloc,
    .free = slob_free,
    .ksize = slob_ksize,
    .alloc_bulk = kslab_alloc_bulk_each,
    .free_bulk = kslab_free_bulk_each,
    .shrink = slob_shrink,
    .destroy = slob_destroy,
    .tunables = NULL,
    .atfork = slob_atfork,
    .kmalloc_aligned = slob_kmalloc_aligned,
};
