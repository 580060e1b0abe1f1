/*
 * slab_common.c - what all back-ends share (the kernel's mm/slab_common.c):
 * the front doors of the API, cache lifecycle and merging, the kmalloc size
 * classes, large allocations, per-thread state (creation, thread exit, fork),
 * options, statistics, slabinfo and error reports.
 */
#define _GNU_SOURCE
#include "slub.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

/* ---- options: one table, read once, no allocation ------------------------- */

struct kslab_options kslab_opts;

static const struct kslab_backend *const kslab_backends[] = {
    &slub_backend, &slab_backend, &slob_backend, &slob_seg_backend
};
const struct kslab_backend *kslab_be = &slub_backend;
bool kslab_slub = true;

static bool env_flag(const char *name)
{
    const char *v = prim_getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static void read_options(void)
{
    kslab_opts.nomerge = env_flag("KSLAB_NOMERGE");
    kslab_opts.slabinfo_at_exit = env_flag("KSLAB_SLABINFO");
    const char *a = prim_getenv("KSLAB_ALLOCATOR");
    if (a && *a) {
        const struct kslab_backend *be = NULL;
        for (size_t i = 0; i < sizeof kslab_backends / sizeof *kslab_backends; i++)
            if (strcmp(a, kslab_backends[i]->name) == 0)
                be = kslab_backends[i];
        if (!be)
            kslab_report("KSLAB_ALLOCATOR=%s is not a back-end of this build; valid: slub, slab, "
                         "slob, slob-seg", a);
        kslab_be = be;
        kslab_slub = be == &slub_backend;
    }
}

const char *kslab_allocator_name(void)
{
    kslab_ensure_init();
    return kslab_be->name;
}

void *kslab_alloc_slow(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    kslab_ensure_init();          /* first: it reads KSLAB_ALLOCATOR */
    if (unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_alloc", s);
    if (likely(kslab_slub))
        return __slub_alloc(s, gfp);
    for (;;) {
        void *p = kslab_be->alloc(s, gfp, kmalloc_size);
        if (likely(p) || !(gfp & __GFP_NOFAIL))
            return p;
    }
}

/* Never creates thread state (that takes threads_lock): callable under any
 * lock.  A thread without state counts into the cache's atomic totals. */
void kslab_count(struct kmem_cache *s, enum stat_item si, uint64_t n)
{
    struct kslab_thread *t = kslab_tls;
    stat_add(s, thread_is_real(t) ? &t->cold[s->id] : NULL, si, n);
}

/* ---- reports ---------------------------------------------------------------- */

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
    prim_abort();
}

void kslab_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}

/* ---- caches: the list, ids, the static boot caches -------------------------- */

static kslab_lock_t cache_lock = KSLAB_LOCK_INIT;   /* the cache list and ids */
static struct kmem_cache *cache_list;
static uint64_t cache_ids[KSLAB_MAX_CACHES / 64];
/* id -> cache, for back-ends that record ids in objects (SLOB).  Written
 * under cache_lock; read without it: acquire pairs with the release in
 * cache_setup(), so a reader that finds a cache sees it initialised. */
static _Atomic(struct kmem_cache *) caches_by_id[KSLAB_MAX_CACHES];


/* kmalloc classes: index -> size; the kernel's kmalloc-96 and -192 included. */
enum { KMALLOC_CLASSES = 13 };
static const uint32_t kmalloc_sizes[KMALLOC_CLASSES] = {
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192
};
static const char *const kmalloc_names[KMALLOC_CLASSES] = {
    "kmalloc-8", "kmalloc-16", "kmalloc-32", "kmalloc-64", "kmalloc-96", "kmalloc-128",
    "kmalloc-192", "kmalloc-256", "kmalloc-512", "kmalloc-1k", "kmalloc-2k", "kmalloc-4k",
    "kmalloc-8k"
};
/* Requests up to 192 bytes: class by (size - 1) / 8, as the kernel's
 * size_index[] table; above, by the power of two. */
static const uint8_t size_index[24] = {
    0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6
};

/* Boot caches are static so the kmalloc fast path never checks for
 * initialisation: ids are fixed; before kslab_init() runs, every thread sees
 * empty cpu entries and goes to the slow path, which initialises. */
static struct kmem_cache boot_caches[KMALLOC_CLASSES + 1];
static struct kmem_cache *const kmalloc_caches[KMALLOC_CLASSES] = {
    &boot_caches[0], &boot_caches[1], &boot_caches[2], &boot_caches[3], &boot_caches[4],
    &boot_caches[5], &boot_caches[6], &boot_caches[7], &boot_caches[8], &boot_caches[9],
    &boot_caches[10], &boot_caches[11], &boot_caches[12]
};
#define kmem_cache_cache (&boot_caches[KMALLOC_CLASSES])

static inline unsigned kmalloc_index(size_t size)
{
    if (size <= 192)
        return size_index[(size - 1) / 8];
    return (unsigned)(64 - __builtin_clzll(size - 1)) - 1;   /* fls(size - 1) - 1: 256 -> 7 */
}

struct kmem_cache *kslab_kmalloc_cache(size_t size)
{
    if (size == 0 || size > KMALLOC_MAX_CACHE_SIZE)
        return NULL;
    kslab_ensure_init();
    return kmalloc_caches[kmalloc_index(size)];
}

static int id_alloc(void)
{
    for (unsigned w = 0; w < KSLAB_MAX_CACHES / 64; w++)
        if (~cache_ids[w]) {
            unsigned b = (unsigned)__builtin_ctzll(~cache_ids[w]);
            cache_ids[w] |= 1ull << b;
            return (int)(w * 64 + b);
        }
    return -1;
}

static void id_free(unsigned id)
{
    cache_ids[id / 64] &= ~(1ull << (id % 64));
}

/* calculate_alignment(): hardware-cache alignment shrinks for small objects
 * so that several still share a line; never below the word size. */
static unsigned calculate_alignment(slab_flags_t flags, unsigned align, unsigned size)
{
    if (flags & SLAB_HWCACHE_ALIGN) {
        unsigned ralign = 64;
        while (size <= ralign / 2)
            ralign /= 2;
        if (ralign > align)
            align = ralign;
    }
    if (align < sizeof(void *))
        align = sizeof(void *);
    return (unsigned)ALIGN_UP(align, sizeof(void *));
}

static int cache_setup(struct kmem_cache *s, const char *name, unsigned size, unsigned align,
                       slab_flags_t flags, void (*ctor)(void *), int id)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->object_size = size;
    s->align = calculate_alignment(flags, align, size);
    s->flags = flags;
    s->ctor = ctor;
    s->id = (uint32_t)id;
    s->refcount = 1;
    if (kslab_be->cache_init(s))
        return -1;
    s->magic = CACHE_LIVE;
    s->next_cache = cache_list;
    cache_list = s;
    atomic_store_explicit(&caches_by_id[id], s, memory_order_release);
    return 0;
}

/* ---- per-thread state, thread exit, fork ------------------------------------- */

__thread struct kslab_thread *kslab_tls __attribute__((tls_model("initial-exec"))) =
    (struct kslab_thread *)kslab_no_thread;
struct kmem_cache_cpu kslab_no_thread[KSLAB_MAX_CACHES] = {
    [0 ... KSLAB_MAX_CACHES - 1] = { .slab_base = NO_CPU_SLAB }
};

static kslab_lock_t threads_lock = KSLAB_LOCK_INIT;  /* the thread registry */
static struct kslab_thread *threads;
static pthread_key_t thread_key;

static void thread_link(struct kslab_thread *t)
{
    t->prev_thread = NULL;
    t->next_thread = threads;
    if (threads)
        threads->prev_thread = t;
    threads = t;
}

static void thread_unlink(struct kslab_thread *t)
{
    if (t->prev_thread)
        t->prev_thread->next_thread = t->next_thread;
    else
        threads = t->next_thread;
    if (t->next_thread)
        t->next_thread->prev_thread = t->prev_thread;
}

struct kslab_thread *kslab_thread_get(void)
{
    struct kslab_thread *t = kslab_tls;
    if (likely(thread_is_real(t)))
        return t;
    kslab_ensure_init();
    t = prim_map(sizeof *t);     /* zeroed; untouched cold entries cost no memory */
    if (!t)
        return NULL;
    for (int i = 0; i < KSLAB_MAX_CACHES; i++)
        t->cpu[i].slab_base = NO_CPU_SLAB;
    kslab_lock(&threads_lock);
    thread_link(t);
    kslab_unlock(&threads_lock);
    kslab_tls = t;
    pthread_setspecific(thread_key, t);
    return t;
}

/* Fold t's counters for s into the cache's totals and clear its entries
 * (threads_lock held, so stats readers see each event exactly once). */
static void thread_fold(struct kslab_thread *t, struct kmem_cache *s)
{
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = &t->cold[s->id];
    cc->stat[ALLOC_FASTPATH] += c->alloc_fast;
    cc->stat[FREE_FASTPATH] += c->free_fast;
    for (int i = 0; i < NR_STATS; i++)
        if (cc->stat[i])
            atomic_fetch_add_explicit(&s->stat_total[i], cc->stat[i], memory_order_relaxed);
    memset(c, 0, sizeof *c);
    memset(cc, 0, sizeof *cc);
    c->slab_base = NO_CPU_SLAB;
}

/* Give all of t's slabs back to their caches and retire t (thread exit). */
static void thread_retire(struct kslab_thread *t)
{
    kslab_lock(&cache_lock);
    for (struct kmem_cache *s = cache_list; s && kslab_be->flush_thread; s = s->next_cache)
        kslab_be->flush_thread(t, s);
    kslab_lock(&threads_lock);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
        thread_fold(t, s);
    thread_unlink(t);
    kslab_unlock(&threads_lock);
    kslab_unlock(&cache_lock);
    prim_unmap(t, sizeof *t);
}

static void thread_destructor(void *arg)
{
    struct kslab_thread *t = arg;
    kslab_tls = (struct kslab_thread *)kslab_no_thread;
    thread_retire(t);
}

static void atfork_prepare(void)
{
    kslab_lock(&cache_lock);
    kslab_lock(&threads_lock);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
        kslab_lock(&s->list_lock);
    if (kslab_be->atfork)
        kslab_be->atfork(0);
    pages_atfork_prepare();
}

static void atfork_parent(void)
{
    pages_atfork_parent();
    if (kslab_be->atfork)
        kslab_be->atfork(1);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
        kslab_unlock(&s->list_lock);
    kslab_unlock(&threads_lock);
    kslab_unlock(&cache_lock);
}

/* The child has one thread.  Locks held by threads that vanished were taken
 * by our prepare handler, so the data they guard is consistent; reset them.
 * The vanished threads' own caches (cpu slabs, sheaves, array caches) are
 * another matter: a thread may have been forked in the middle of moving
 * objects between its private state and a shared list, so giving its cached
 * objects back could free an object twice.  The child abandons them (their
 * frozen slabs still take frees; the cached objects are leaked, in the child
 * only) and folds their counters. */
static void atfork_child(void)
{
    pages_atfork_child();
    if (kslab_be->atfork)
        kslab_be->atfork(2);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
        kslab_lock_reinit(&s->list_lock);
    kslab_lock_reinit(&threads_lock);
    kslab_lock_reinit(&cache_lock);
    struct kslab_thread *self = kslab_tls, *t = threads, *next;
    for (; t; t = next) {
        next = t->next_thread;
        if (t != self) {
            for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
                thread_fold(t, s);
            thread_unlink(t);
        }
    }
}

/* ---- initialisation ------------------------------------------------------------ */

atomic_int kslab_initialised;
static kslab_lock_t init_lock = KSLAB_LOCK_INIT;

void kslab_init(void)
{
    kslab_lock(&init_lock);
    if (atomic_load_explicit(&kslab_initialised, memory_order_relaxed)) {
        kslab_unlock(&init_lock);
        return;
    }
    read_options();
    if (pthread_key_create(&thread_key, thread_destructor))
        kslab_report("cannot create the thread-exit key");
    kslab_lock(&cache_lock);
    for (int i = KMALLOC_CLASSES - 1; i >= 0; i--) {
        unsigned size = kmalloc_sizes[i];
        id_alloc();
        /* power-of-two classes naturally aligned, as the kernel creates them */
        if (cache_setup(kmalloc_caches[i], kmalloc_names[i], size,
                        (size & (size - 1)) == 0 ? size : 0, 0, NULL,
                        KMALLOC_CLASSES - 1 - i) == 0)
            kmalloc_caches[i]->is_kmalloc = true;
    }
    id_alloc();
    /* Type-safe (the back-ends keep a free object's contents): a destroyed
     * cache keeps its id and CACHE_DEAD until its slot is reused, so use
     * after destroy is reported, not followed. */
    cache_setup(kmem_cache_cache, "kmem_cache", sizeof(struct kmem_cache), 64,
                SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE | SLAB_TYPESAFE_BY_RCU, NULL,
                KMALLOC_CLASSES);
    kslab_unlock(&cache_lock);
    /* release: everything above is visible to a thread that sees 1 */
    atomic_store_explicit(&kslab_initialised, 1, memory_order_release);
    /* Last, once allocation works: glibc's pthread_atfork may call malloc,
     * which (as libkslab-malloc) is us. */
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    kslab_unlock(&init_lock);
}

__attribute__((constructor)) static void kslab_ctor(void)
{
    kslab_ensure_init();
}

__attribute__((destructor)) static void kslab_dtor(void)
{
    if (kslab_opts.slabinfo_at_exit)
        kslab_slabinfo(stderr);
}

/* ---- cache lifecycle ------------------------------------------------------------ */

#define SLAB_NEVER_MERGE (SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER | SLAB_TYPESAFE_BY_RCU | \
                          SLAB_NO_MERGE | SLAB_CONSISTENCY_CHECKS)

/* find_mergeable(): an existing cache whose objects can serve this one. */
static struct kmem_cache *find_mergeable(unsigned size, unsigned align, slab_flags_t flags,
                                         void (*ctor)(void *))
{
    if (kslab_opts.nomerge || ctor || (flags & SLAB_NEVER_MERGE))
        return NULL;
    size = (unsigned)ALIGN_UP(size, sizeof(void *));
    align = calculate_alignment(flags, align, size);
    size = (unsigned)ALIGN_UP(size, align);
    struct kmem_cache *best = NULL;
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache) {
        if (s->ctor || (s->flags & SLAB_NEVER_MERGE))
            continue;
        if (size > s->size || (s->size & (align - 1)) || s->size - size >= sizeof(void *))
            continue;
        best = s;   /* the list is newest first: keep the oldest, as the kernel does */
    }
    return best;
}

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
                                     slab_flags_t flags, void (*ctor)(void *))
{
    kslab_ensure_init();
    struct kmem_cache *s = NULL;
    const char *why = NULL;
    if (!name || !*name)
        why = "no name";
    else if (size == 0 || size > (PAGE_SIZE << MAX_PAGE_ORDER) - sizeof(void *))
        why = "object size out of range";
    else if (align & (align - 1))
        why = "alignment is not a power of two";
    if (why)
        goto fail;
    kslab_lock(&cache_lock);
    s = find_mergeable(size, align, flags, ctor);
    if (s) {
        s->refcount++;
        kslab_unlock(&cache_lock);
        return s;
    }
    int id = id_alloc();
    if (id < 0) {
        kslab_unlock(&cache_lock);
        why = "too many caches";
        goto fail;
    }
    s = kmem_cache_alloc(kmem_cache_cache, GFP_KERNEL);
    if (!s || cache_setup(s, name, size, align, flags, ctor, id)) {
        id_free((unsigned)id);
        kslab_unlock(&cache_lock);
        if (s)
            kmem_cache_free(kmem_cache_cache, s);
        why = s ? "object too large" : "out of memory";
        s = NULL;
        goto fail;
    }
    kslab_unlock(&cache_lock);
    return s;
fail:
    if (flags & SLAB_PANIC)
        kslab_report("kmem_cache_create(%s): %s", name ? name : "(null)", why);
    return NULL;
}

static uint64_t cache_active(struct kmem_cache *s);

void kmem_cache_destroy(struct kmem_cache *s)
{
    if (!s)
        return;
    kslab_check_cache("kmem_cache_destroy", s);
    kslab_lock(&cache_lock);
    if (--s->refcount > 0) {
        kslab_unlock(&cache_lock);
        return;
    }
    if (s < boot_caches || s >= boot_caches + KMALLOC_CLASSES + 1) {
        /* Unlink, then take every thread's slabs of s back (kernel semantics:
         * nobody may use s concurrently with its destruction). */
        struct kmem_cache **pp = &cache_list;
        while (*pp != s)
            pp = &(*pp)->next_cache;
        *pp = s->next_cache;
        kslab_lock(&threads_lock);
        for (struct kslab_thread *t = threads; t && kslab_be->flush_thread; t = t->next_thread)
            kslab_be->flush_thread(t, s);
        kslab_unlock(&threads_lock);
        uint64_t live = cache_active(s);
        if (live)
            kslab_warn("kmem_cache_destroy %s: Slab cache still has objects (%llu)", s->name,
                       (unsigned long long)live);
        kslab_be->destroy(s);
        atomic_store_explicit(&caches_by_id[s->id], NULL, memory_order_relaxed);
        /* last: the steps above may count events in the threads' entries,
         * which must be clear before the id is reused */
        kslab_lock(&threads_lock);
        for (struct kslab_thread *t = threads; t; t = t->next_thread)
            thread_fold(t, s);
        kslab_unlock(&threads_lock);
        id_free(s->id);
        s->magic = CACHE_DEAD;
        kslab_unlock(&cache_lock);
        kmem_cache_free(kmem_cache_cache, s);
        return;
    }
    s->refcount = 1;   /* boot caches live for ever */
    kslab_unlock(&cache_lock);
}

int kmem_cache_shrink(struct kmem_cache *s)
{
    if (!s)
        return 0;
    kslab_check_cache("kmem_cache_shrink", s);
    return kslab_be->shrink(s);
}

unsigned int kmem_cache_size(struct kmem_cache *s)
{
    return s->object_size;
}

const char *kslab_cache_name(struct kmem_cache *s)
{
    return s ? s->name : NULL;
}

size_t kslab_slab_descriptor_size(void)
{
    return sizeof(struct slab);
}

/* ---- finding an object's slab, and bad frees ------------------------------------ */

/* The head descriptor of the slab holding x (x in an arena), or NULL if x
 * is not in a live slab. */
static inline struct slab *arena_slab_of(const void *x)
{
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (!s)
        return NULL;
    struct slab *head = addr_desc((uintptr_t)x & s->slab_mask);
    return head->pg_state == PG_SLAB ? head : NULL;
}

/* Is x the start of an object of s in the slab starting at base? */
static inline bool object_start(const struct kmem_cache *s, uintptr_t base, const void *x)
{
    return obj_index(s, (uintptr_t)x - base) < s->objects;
}

void kslab_bad_free(const char *fn, struct kmem_cache *s, const void *x)
{
    uintptr_t e = in_arena(x) ? CHUNK_ARENA : chunk_entry(x);
    const char *want = s ? s->name : "(any)";
    if ((e & 3) == CHUNK_LARGE) {
        struct large_hdr *h = (struct large_hdr *)(e & ~(uintptr_t)3);
        if (s)
            kslab_report("%s(%s): pointer %p is a large kmalloc allocation, not an object of "
                         "cache %s", fn, want, x, want);
        kslab_report("%s(): pointer %p is inside the large allocation at %p, not at its start",
                     fn, x, h->base);
    }
    if ((e & 3) != CHUNK_ARENA)
        kslab_report("%s(%s): pointer %p was not allocated by kslab", fn, want, x);
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

/* ---- the front doors ----------------------------------------------------------- */

void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
    return slub_alloc(s, flags, 0);
}

bool kslab_object_start(const struct kmem_cache *s, uintptr_t base, const void *x)
{
    return object_start(s, base, x);
}


/* Arena memory is always mapped (freed pages read as zero), so the magic of
 * anything in an arena can be read safely; a live cache is also the one its
 * id names. */
void kslab_check_cache(const char *fn, struct kmem_cache *s)
{
    bool boot = s >= boot_caches && s < boot_caches + KMALLOC_CLASSES + 1;
    if (!boot && !in_arena(s))
        kslab_report("%s(): %p is not a kmem_cache", fn, (void *)s);
    uint32_t m = __atomic_load_n(&s->magic, __ATOMIC_RELAXED);
    if (m == CACHE_DEAD)
        kslab_report("%s(%.*s): cache %p was destroyed", fn, KSLAB_NAME_LEN, s->name,
                     (void *)s);
    if (m != CACHE_LIVE || kslab_cache_by_id(s->id) != s)
        kslab_report("%s(): %p is not a kmem_cache", fn, (void *)s);
}

struct kmem_cache *kslab_cache_by_id(unsigned id)
{
    return id < KSLAB_MAX_CACHES
               ? atomic_load_explicit(&caches_by_id[id], memory_order_acquire) : NULL;
}

/* Everything but "x is in the thread's cpu slab of s": validate, then
 * SLUB's slow free. */
static noinline void kmem_cache_free_slow(struct kmem_cache *s, void *x, const char *fn,
                                          bool want)
{
    if (want && unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache(fn, s);
    if (unlikely(!kslab_slub)) {
        kslab_be->free(want ? s : NULL, x, fn);
        return;
    }
    if (unlikely(!in_arena(x)))
        kslab_bad_free(fn, s, x);
    uintptr_t base = (uintptr_t)x & s->slab_mask;
    struct slab *slab = addr_desc(base);
    if (unlikely(slab->cache != s || slab->pg_state != PG_SLAB || !object_start(s, base, x)))
        kslab_bad_free(fn, s, x);
    __slub_free(s, slab, x);
}

void kmem_cache_free(struct kmem_cache *s, void *x)
{
    if (unlikely(!x))
        return;
    if (likely(slub_free_fast(s, x)))
        return;
    kmem_cache_free_slow(s, x, "kmem_cache_free", true);
}

static cold_fn void *kmalloc_large(size_t size, gfp_t flags)
{
    kslab_ensure_init();
    for (;;) {
        void *p = large_alloc(size);
        if (p || !(flags & __GFP_NOFAIL))
            return p;   /* fresh mappings are zeroed: __GFP_ZERO needs nothing */
    }
}

void *kmalloc(size_t size, gfp_t flags)
{
    if (likely(size - 1 < KMALLOC_MAX_CACHE_SIZE))
        return slub_alloc(kmalloc_caches[kmalloc_index(size)], flags, size);
    if (size == 0)
        return ZERO_SIZE_PTR;
    return kmalloc_large(size, flags);
}

/* ---- bulk ---------------------------------------------------------------------- */

int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
    size_t done = slub_alloc_bulk_fast(s, size, p);
    if (likely(done == size && !(gfp & __GFP_ZERO)))
        return (int)size;       /* size == 0 returns 0 here */
    kslab_ensure_init();
    if (unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_alloc_bulk", s);
    if (likely(kslab_slub))
        return slub_alloc_bulk(s, gfp, size, done, p);
    for (; done < size; done++) {  /* other back-ends: one by one, all or nothing */
        p[done] = kslab_alloc_slow(s, gfp, 0);
        if (!p[done]) {
            kmem_cache_free_bulk(s, done, p);
            return 0;
        }
    }
    return (int)size;
}

/*
 * The kernel's build_detached_freelist(): take the last object, then scan
 * back through the array linking every object of the same slab into one
 * list (stopping after 3 objects of other slabs), and free the list at once.
 * Consumed entries are set to NULL, as in the kernel.  Returns how many
 * entries are still to do.  s == NULL (kfree_bulk): each object's cache
 * comes from its page; large allocations are freed one by one.
 */
static size_t free_detached_group(struct kmem_cache *want, size_t size, void **p, bool account)
{
    const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
    void *x;
    do {
        x = p[--size];
    } while (ZERO_OR_NULL_PTR(x) && size);
    if (ZERO_OR_NULL_PTR(x))
        return 0;
    p[size] = NULL;
    if (unlikely(!in_arena(x))) {
        if (!want && (chunk_entry(x) & 3) == CHUNK_LARGE) {
            kfree(x);
            return size;
        }
        kslab_bad_free(fn, want, x);
    }
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (unlikely(!s || (want && s != want)))
        kslab_bad_free(fn, want, x);
    uintptr_t base = (uintptr_t)x & s->slab_mask;
    if (unlikely(addr_desc(base)->pg_state != PG_SLAB || !object_start(s, base, x)))
        kslab_bad_free(fn, want, x);
    /* the object this thread freed last (to its sheaf) freed again */
    void *top = slub_sheaf_top(s);
    if (unlikely(x == top))
        kslab_report("double free of object %p in cache %s", x, s->name);
    void *head = x, *tail = x;
    unsigned cnt = 1, lookahead = 3;
    size_t first_skipped = 0;
    while (size) {
        void *y = p[--size];
        if (ZERO_OR_NULL_PTR(y))
            continue;
        if (((uintptr_t)y & s->slab_mask) != base) {
            if (!first_skipped)
                first_skipped = size + 1;
            if (!--lookahead)
                break;
            continue;
        }
        if (unlikely(!object_start(s, base, y)))
            kslab_bad_free(fn, want ? want : s, y);
        if (unlikely(y == head || y == top))
            kslab_report("double free of object %p in cache %s", y, s->name);
        set_freepointer(s, y, head);
        head = y;
        cnt++;
        p[size] = NULL;
    }
    slub_free_detached(s, base, head, tail, cnt, account);
    return first_skipped ? first_skipped : size;
}

void slub_free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    slub_free_bulk_account(want, size, p, true);
}

void slub_free_bulk_account(struct kmem_cache *want, size_t size, void **p, bool account)
{
    if (unlikely(!kslab_slub)) {     /* other back-ends: one by one */
        const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
        while (size--) {
            void *x = p[size];
            if (ZERO_OR_NULL_PTR(x))
                continue;
            if (in_arena(x))
                kslab_be->free(want, x, fn);
            else if (!want && (chunk_entry(x) & 3) == CHUNK_LARGE)
                kfree(x);
            else
                kslab_bad_free(fn, want, x);
        }
        return;
    }
    while (size) {
        struct kmem_cache *s = want;
        if (!s) {
            void *x = p[size - 1];
            if (!ZERO_OR_NULL_PTR(x) && in_arena(x))
                s = addr_desc((uintptr_t)x)->cache;
        }
        if (s && !(size = slub_free_bulk_fast(s, size, p, account)))
            return;
        size = free_detached_group(want, size, p, account);
    }
}

void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p)
{
    if (s && unlikely(s->magic != CACHE_LIVE))
        kslab_check_cache("kmem_cache_free_bulk", s);
    slub_free_bulk(s, size, p);
}

void kfree_bulk(size_t size, void **p)
{
    slub_free_bulk(NULL, size, p);
}

static noinline void kfree_slow(const void *x)
{
    uintptr_t e = chunk_entry(x);
    if ((e & 3) == CHUNK_LARGE) {
        large_free((struct large_hdr *)(e & ~(uintptr_t)3), x);
        return;
    }
    kslab_bad_free("kfree", NULL, x);
}

void kfree(const void *x)
{
    if (unlikely(ZERO_OR_NULL_PTR(x)))
        return;
    if (unlikely(!in_arena(x))) {
        kfree_slow(x);
        return;
    }
    struct kmem_cache *s = addr_desc((uintptr_t)x)->cache;
    if (unlikely(!s))
        kslab_bad_free("kfree", NULL, x);
    if (likely(slub_free_fast(s, (void *)x)))
        return;
    kmem_cache_free_slow(s, (void *)x, "kfree", false);
}

void *kslab_kmalloc_aligned(size_t size, size_t align, gfp_t gfp)
{
    if (align < 16)
        align = 16;                  /* what malloc promises: max_align_t */
    /* Size classes from 16 up are multiples of 16; a request rounded up to
     * a multiple of align lands in a class whose objects are aligned to it
     * (pow2 classes are naturally aligned, 96 and 192 to 32 and 64).  The
     * overflow check comes before any back-end sees the request. */
    size_t want = ALIGN_UP(size ? size : 1, align);
    if (unlikely(want < size || want > KSLAB_MAX_ALLOC || align > KSLAB_MAX_ALLOC))
        return NULL;
    kslab_ensure_init();
    if (kslab_be->kmalloc_aligned)
        return kslab_be->kmalloc_aligned(size ? size : 1, align, gfp);
    if (want <= KMALLOC_MAX_CACHE_SIZE)
        return kmalloc(want, gfp);
    return large_alloc_aligned(want, align > PAGE_SIZE ? align : 0);
}

size_t ksize(const void *x)
{
    if (ZERO_OR_NULL_PTR(x))
        return 0;
    uintptr_t e = in_arena(x) ? CHUNK_ARENA : chunk_entry(x);
    if (e == CHUNK_ARENA && !kslab_slub)
        return kslab_be->ksize(x);
    if (e == CHUNK_ARENA) {
        struct slab *slab = arena_slab_of(x);
        if (slab && object_start(slab->cache, (uintptr_t)slab_address(slab) + slab->pg_colour, x))
            return slab->cache->size;
    } else if ((e & 3) == CHUNK_LARGE) {
        struct large_hdr *h = (struct large_hdr *)(e & ~(uintptr_t)3);
        if (h->base == x)
            return h->size;
    }
    kslab_bad_free("ksize", NULL, x);
}

size_t kmalloc_size_roundup(size_t size)
{
    if (size == 0)
        return 0;
    if (size <= KMALLOC_MAX_CACHE_SIZE)
        return kmalloc_sizes[kmalloc_index(size)];
    if (size > SIZE_MAX - PAGE_SIZE)
        return size;
    return ALIGN_UP(size, PAGE_SIZE);
}

void *krealloc(const void *p, size_t new_size, gfp_t flags)
{
    if (unlikely(!new_size)) {
        kfree(p);
        return ZERO_SIZE_PTR;
    }
    if (ZERO_OR_NULL_PTR(p))
        return kmalloc(new_size, flags);
    size_t ks = ksize(p);
    if (ks >= new_size) {
        /* Fits in place.  With __GFP_ZERO, clear the tail so that a later
         * growth in place still reads zeroes (the kernel's contract). */
        if (flags & __GFP_ZERO)
            memset((char *)p + new_size, 0, ks - new_size);
        return (void *)p;
    }
    void *n = kmalloc(new_size, flags);
    if (!n)
        return NULL;        /* p is left alone */
    memcpy(n, p, ks);
    kfree(p);
    return n;
}

void kfree_sensitive(const void *p)
{
    if (ZERO_OR_NULL_PTR(p))
        return;
    explicit_bzero((void *)p, ksize(p));
    kfree(p);
}

char *kstrdup(const char *s, gfp_t gfp)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = kmalloc(n, gfp);
    if (d)
        memcpy(d, s, n);
    return d;
}

void *kmemdup(const void *src, size_t len, gfp_t gfp)
{
    void *d = kmalloc(len, gfp);
    if (d && !ZERO_OR_NULL_PTR(d))
        memcpy(d, src, len);
    return d;
}

/* ---- statistics and slabinfo ------------------------------------------------------- */

_Static_assert(offsetof(struct kslab_stats, sheaf_flush) == SHEAF_FLUSH * sizeof(uint64_t),
               "struct kslab_stats lists the events in enum stat_item order");

static void cache_events(struct kmem_cache *s, uint64_t ev[NR_STATS])
{
    for (int i = 0; i < NR_STATS; i++)
        ev[i] = atomic_load_explicit(&s->stat_total[i], memory_order_relaxed);
    kslab_lock(&threads_lock);
    for (struct kslab_thread *t = threads; t; t = t->next_thread) {
        struct kmem_cache_cpu *c = &t->cpu[s->id];
        struct kmem_cache_cpu_cold *cc = &t->cold[s->id];
        ev[ALLOC_FASTPATH] += __atomic_load_n(&c->alloc_fast, __ATOMIC_RELAXED);
        ev[FREE_FASTPATH] += __atomic_load_n(&c->free_fast, __ATOMIC_RELAXED);
        for (int i = 0; i < NR_STATS; i++)
            ev[i] += __atomic_load_n(&cc->stat[i], __ATOMIC_RELAXED);
    }
    kslab_unlock(&threads_lock);
}

static uint64_t events_active(const uint64_t ev[NR_STATS])
{
    return ev[ALLOC_FASTPATH] + ev[ALLOC_SLOWPATH] - ev[FREE_FASTPATH] - ev[FREE_SLOWPATH];
}

static uint64_t cache_active(struct kmem_cache *s)
{
    uint64_t ev[NR_STATS];
    cache_events(s, ev);
    return events_active(ev);
}

int kslab_cache_stats(struct kmem_cache *s, struct kslab_stats *out)
{
    if (!s || !out)
        return -1;
    uint64_t ev[NR_STATS];
    cache_events(s, ev);
    memcpy(out, ev, sizeof ev);
    out->active_objs = events_active(ev);
    out->num_objs = (uint64_t)atomic_load_explicit(&s->total_objects, memory_order_relaxed);
    out->num_slabs = (uint64_t)atomic_load_explicit(&s->nr_slabs, memory_order_relaxed);
    out->partial_slabs = atomic_load_explicit(&s->nr_partial, memory_order_relaxed);
    return 0;
}

void kslab_slabinfo(FILE *out)
{
    kslab_ensure_init();
    fprintf(out, "slabinfo - version: 2.1\n");
    fprintf(out, "# name            <active_objs> <num_objs> <objsize> <objperslab> "
                 "<pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata "
                 "<active_slabs> <num_slabs> <sharedavail>\n");
    kslab_lock(&cache_lock);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache) {
        struct kslab_stats st;
        unsigned tun[4] = { 0, 0, 0, 0 };
        kslab_cache_stats(s, &st);
        if (kslab_be->tunables)
            kslab_be->tunables(s, tun);
        fprintf(out, "%-17s %6llu %6llu %6u %4u %4u : tunables %4u %4u %4u : slabdata %6llu "
                     "%6llu %6u\n",
                s->name, (unsigned long long)st.active_objs, (unsigned long long)st.num_objs,
                s->size, s->objects, 1u << s->order, tun[0], tun[1], tun[2],
                (unsigned long long)st.num_slabs, (unsigned long long)st.num_slabs, tun[3]);
    }
    kslab_unlock(&cache_lock);
}
