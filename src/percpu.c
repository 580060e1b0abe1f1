/*
 * percpu.c - the cpu layer's per-CPU mode (the design and the rseq rules
 * are in percpu.h): the choice of mode, the per-CPU sheaf arrays, the slow
 * paths behind the inline fast paths, bulk allocation, draining (shrink),
 * and the event counts.
 *
 * Misses
 * ------
 *   alloc, sheaf empty    the back-end's cpu_refill gives a whole barn
 *                         sheaf (SLUB) or half a sheaf's worth from the
 *                         slabs (SLUB, SLAB), pushed in one section; one of
 *                         them is the allocation.
 *   free, sheaf full      the top half is popped in one section and given to
 *                         cpu_drain: the barn keeps it as one sheaf for a
 *                         CPU that allocates (a pipeline moves whole barn
 *                         sheaves), else its objects go back to their slabs.
 *                         Half each way, so a sheaf leaves a boundary in the
 *                         middle and a CPU that allocates and frees about
 *                         as much stays off the slow paths.
 *   draining (cap 0)      straight to or from the slabs, one object.
 *   slow start            a cache's first PCPU_SLOW_START allocations come
 *                         one at a time from the slabs; then its sheaves are
 *                         created.  The 100 000 caches a program may create
 *                         cost nothing per CPU until they are used.
 * None of this touches per-thread state: in this mode SLUB and SLAB never
 * create any (only the page layer's pcp lists are per thread).
 *
 * Locks: kslab_pcpu_lock (creation of sheaf arrays, one drainer at a time)
 * sits between threads_lock and the caches' list_locks in the lock order.
 */
#include "percpu.h"
#include "kfence.h"
#include <string.h>

long kslab_rseq_off = KSLAB_RSEQ_NONE;
/* (the placeholder every tag immediate is assembled with, until
 * kslab_percpu_init patches in a random key: the two agree in every mode) */
uint64_t kslab_tag_key = PCPU_TAG_PLACEHOLDER;
kslab_lock_t kslab_pcpu_lock = KSLAB_LOCK_INIT;
static unsigned nr_cpus;            /* possible CPUs */

/* Every entry empty with cap 0: what a cache without sheaves points at.
 * Zero-fill bss that is only ever read (the zero page). */
struct pcpu_sheaf pcpu_none[PCPU_MAX_CPUS] __attribute__((aligned(PCPU_STRIDE))) KSLAB_BIG_BSS;

#define PCPU_SLOW_START 16

static inline void slow_net_add(struct pcpu_sheaf *e, int64_t n)
{
    /* relaxed: a pure counter (readers want an untorn value, no ordering) */
    __atomic_fetch_add(&e->slow_net, n, __ATOMIC_RELAXED);
}

/* ---- the mode --------------------------------------------------------------- */

#ifdef PCPU_TAG_IMMEDIATE
/* The free tag's immediates (PCPU_TAG_SITE in percpu.h): the section's
 * bounds, from the linker; weak, so a link without a site has none. */
extern const int32_t __start_kslab_tag_sites[] __attribute__((weak, visibility("hidden")));
extern const int32_t __stop_kslab_tag_sites[] __attribute__((weak, visibility("hidden")));

static int32_t *tag_site(const int32_t *rec)
{
    return (int32_t *)((uintptr_t)rec + (intptr_t)*rec);
}

/* Write key into every immediate of the sections' tag instructions; false
 * (nothing written) if one of them does not hold the placeholder or the
 * text cannot be made writable.  Runs before the per-CPU mode starts, so
 * no thread runs a patched instruction while it changes. */
static bool tag_patch(int32_t key)
{
#ifdef KSLAB_FAKE_CPU
    /* the fake-CPU build runs under valgrind, which does not look for
     * changes in code read from a file: it keeps the placeholder */
    return false;
#endif
    const int32_t *a = __start_kslab_tag_sites, *z = __stop_kslab_tag_sites;
    if (!a || a == z)
        return false;
    int32_t *lo = tag_site(a), *hi = lo;
    for (const int32_t *r = a; r < z; r++) {
        int32_t *imm = tag_site(r), v;
        memcpy(&v, imm, sizeof(v));
        if (v != PCPU_TAG_PLACEHOLDER)
            return false;
        lo = imm < lo ? imm : lo;
        hi = imm > hi ? imm : hi;
    }
    if (!prim_text_writable(lo, hi + 1, true))
        return false;
    for (const int32_t *r = a; r < z; r++)
        memcpy(tag_site(r), &key, sizeof(key));
    if (!prim_text_writable(lo, hi + 1, false))
        kslab_warn("the free tag's code pages stay writable (mprotect refused)");
    prim_sync_core();
    return true;
}
#endif

/* The free tag's key (rule 8, percpu.h): random, odd so never 0, whatever
 * KSLAB_HARDENED says (it is a double-free test, not a secret only); 31
 * random bits where the sections carry it as an immediate (32-bit and
 * sign-extended), and where those cannot be patched the placeholder they
 * hold; the drop-in's, loaded from memory, 63. */
static void tag_init(void)
{
    uint64_t key = kslab_random64() | 1;
#ifdef PCPU_TAG_IMMEDIATE
    int32_t imm = (int32_t)key;
    key = (uint64_t)(int64_t)(tag_patch(imm) ? imm : PCPU_TAG_PLACEHOLDER);
#endif
    kslab_tag_key = key;
}

void kslab_percpu_init(void)
{
    int want = kslab_env_bool("KSLAB_PERCPU", -1);
    /* init_on_alloc/free: the per-thread mode (slab_common.h) */
    bool off = want == 0 || kslab_init_on_alloc || kslab_init_on_free;
#if defined(__x86_64__)
    long off_rseq = off ? KSLAB_RSEQ_NONE : prim_rseq_offset();
    nr_cpus = prim_possible_cpus();
    /* (kslab's own struct rseq, off_rseq < 0: KSLAB_RSEQ_IDLE_CPU is no CPU) */
    unsigned max_cpus = off_rseq < 0 ? KSLAB_RSEQ_IDLE_CPU : PCPU_MAX_CPUS;
    if (off_rseq != KSLAB_RSEQ_NONE && nr_cpus <= max_cpus && prim_rseq_fence_init()) {
        tag_init();                 /* before any section runs */
        kslab_rseq_off = off_rseq;
        return;
    }
#endif
    if (want == 1)
        kslab_warn(kslab_init_on_alloc || kslab_init_on_free
                       ? "KSLAB_PERCPU=1: KSLAB_INIT_ON_ALLOC/FREE run in the per-thread mode"
                       : "KSLAB_PERCPU=1: rseq or membarrier is not available here; "
                         "using the per-thread mode");
}

const char *kslab_cpu_mode(void)
{
    kslab_ensure_init();
    return kslab_percpu ? "percpu" : "thread";
}

noipa_fn void *kslab_claim_failed(struct kmem_cache *s, void *x)
{
    kslab_bad_tag(s, x, *pcpu_tag_word(s, x));   /* as the claim found it */
}

/* ---- the slow paths' critical sections (rules: percpu.h) --------------------------- */

enum pcpu_push_result pcpu_push_slow(struct kmem_cache *s, void *x, struct pcpu_sheaf **ep)
{
    uintptr_t e, w, t, r;
    pcpu_tsan_release(pcpu_base(s));
    __asm__ __volatile__(PCPU_RSEQ_CS
                         "movl $1, %k[r]\n\t"
                         PCPU_PUSH_ROOM("2f")
                         "movl $2, %k[r]\n\t"
                         PCPU_PUSH_NOT_TOP2("2f")
                         "xorl %k[r], %k[r]\n\t"
                         PCPU_PUSH_COMMIT
                         PCPU_RSEQ_ABORT
                         : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t), [r] "=&r"(r)
                         : [off] "r"(kslab_rseq_off), [base] "r"(pcpu_base(s)), [x] "r"(x)
                         : "memory", "cc");
    *ep = (struct pcpu_sheaf *)e;
    return (enum pcpu_push_result)r;
}

/* Pop up to n objects (the top ones) into dst; how many.  alloc: they are
 * allocations (bulk), counted in the commit word like the fast path's, so
 * the caller adjusts nothing; otherwise (a flush, slow_net -= n by the
 * caller) the count alone drops. */
unsigned pcpu_pop_batch(struct kmem_cache *s, void **dst, unsigned n, struct pcpu_sheaf **ep,
                        bool alloc)
{
    uint64_t mul = alloc ? PCPU_ALLOC_ONE - 1 : (uint64_t)-1;   /* per object popped */
    uintptr_t e, w, t, j, i, v;
    __asm__ __volatile__(PCPU_RSEQ_CS
                         "xorl %k[j], %k[j]\n\t"
                         "cmpl $0, " PCPU_STR(PCPU_CAP_OFF) "(%[e])\n\t"       /* draining */
                         "je 2f\n\t"
                         "movq %[t], %[j]\n\t"
                         "cmpq %[n], %[j]\n\t"
                         "jbe 5f\n\t"
                         "movq %[n], %[j]\n\t"        /* j = min(count, n) */
                         "5:\n\t"
                         "movq %[j], %[i]\n\t"
                         "6:\n\t"
                         "testq %[i], %[i]\n\t"
                         "jz 7f\n\t"
                         "subq $1, %[i]\n\t"
                         "subq $1, %[t]\n\t"
                         "movq " PCPU_STR(PCPU_OBJS_OFF) "(%[e],%[t],8), %[v]\n\t"
                         "movq %[v], (%[dst],%[i],8)\n\t"
                         "jmp 6b\n\t"
                         "7:\n\t"
                         "movq %[j], %[v]\n\t"
                         "imulq %[mul], %[v]\n\t"
                         "addq %[v], %[w]\n\t"
                         "movq %[w], (%[e])\n\t"      /* commit */
                         "2:\n\t"
                         PCPU_RSEQ_ABORT
                         : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t), [j] "=&r"(j),
                           [i] "=&r"(i), [v] "=&r"(v)
                         : [off] "r"(kslab_rseq_off), [base] "r"(pcpu_base(s)),
                           [dst] "r"(dst), [n] "r"((uintptr_t)n), [mul] "r"(mul)
                         : "memory", "cc");
    *ep = (struct pcpu_sheaf *)e;
    pcpu_tsan_acquire(pcpu_base(s));
    return (unsigned)j;
}

/* Push up to n objects of src (as many as fit); how many. */
unsigned pcpu_push_batch(struct kmem_cache *s, void *const *src, unsigned n,
                         struct pcpu_sheaf **ep)
{
    uintptr_t e, w, t, j, i, v;
    pcpu_tsan_release(pcpu_base(s));
    __asm__ __volatile__(PCPU_RSEQ_CS
                         "movl " PCPU_STR(PCPU_CAP_OFF) "(%[e]), %k[j]\n\t"
                         "cmpl %k[t], %k[j]\n\t"
                         "jbe 8f\n\t"                 /* full or draining */
                         "subl %k[t], %k[j]\n\t"      /* room */
                         "cmpq %[n], %[j]\n\t"
                         "jbe 5f\n\t"
                         "movq %[n], %[j]\n\t"        /* j = min(room, n) */
                         "5:\n\t"
                         "xorl %k[i], %k[i]\n\t"
                         "6:\n\t"
                         "cmpq %[j], %[i]\n\t"
                         "jae 7f\n\t"
                         "movq (%[src],%[i],8), %[v]\n\t"
                         "movq %[v], " PCPU_STR(PCPU_OBJS_OFF) "(%[e],%[t],8)\n\t"
                         "addq $1, %[i]\n\t"
                         "addq $1, %[t]\n\t"
                         "jmp 6b\n\t"
                         "7:\n\t"
                         "addq %[j], %[w]\n\t"
                         "movq %[w], (%[e])\n\t"      /* commit */
                         "2:\n\t"
                         "jmp 9f\n\t"
                         "8:\n\t"
                         "xorl %k[j], %k[j]\n\t"
                         "9:\n\t"
                         PCPU_RSEQ_ABORT
                         : [e] "=&r"(e), [w] "=&r"(w), [t] "=&r"(t), [j] "=&r"(j),
                           [i] "=&r"(i), [v] "=&r"(v)
                         : [off] "r"(kslab_rseq_off), [base] "r"(pcpu_base(s)),
                           [src] "r"(src), [n] "r"((uintptr_t)n)
                         : "memory", "cc");
    *ep = (struct pcpu_sheaf *)e;
    return (unsigned)j;
}

/* ---- sheaf arrays ------------------------------------------------------------------- */

/* Arrays of nr_cpus entries come from the page layer, several to a page
 * when they are small, and are kept on a free list for the next cache when
 * a cache is destroyed (kslab_pcpu_lock). */
static struct kmem_cache pcpu_pages = { .name = "percpu", PCPU_NONE_INIT };
static void *free_arrays;

/* Arrays are carved a cache line more than a whole multiple of the stride
 * apart, so the sheaves of different caches on one CPU fall in different
 * cache sets.  Packed at 1 KiB, four to a page, every cache's CPU-0 sheaf
 * header sat in one of 4 sets of the 64 an L1 has (8 ways): with the 60-odd
 * malloc classes a random-size program uses, the headers evicted each
 * other, and kfree's push and malloc's pop waited on L2 for them (cachegrind,
 * random sizes 8-1000 B, 2048 live: the two sections missed L1 0.65 times a
 * free+malloc step, coloured 0.14). */
#define PCPU_CHUNK (16u << 10)

/* An array and its header line (struct pcpu_hdr, rule 9), which is also
 * the cache line more than a whole multiple of the stride that colours
 * the arrays */
static size_t array_bytes(void)
{
    return sizeof(struct pcpu_hdr) + ((size_t)nr_cpus << PCPU_SHIFT);
}

/* Where kslab registers rseq itself (kslab_rseq_off < 0), a thread not
 * registered yet reads KSLAB_RSEQ_IDLE_CPU as its CPU (prim.h), and its
 * sections index that entry of every array, IDLE_SPAN bytes past the
 * array's start, far past its nr_cpus entries: it must read as cap 0 in
 * every array.  So there the arrays are carved from the first IDLE_SPAN
 * bytes of anonymous mappings of their own (IDLE_CHUNK), whose rest no one
 * writes: every array's idle entry lies in it, and reads as zero.  The
 * rest costs address space, and a page of memory where an idle entry is
 * read (a zero page, where the kernel has one). */
#define IDLE_SPAN ((size_t)KSLAB_RSEQ_IDLE_CPU << PCPU_SHIFT)
#define IDLE_CHUNK (2 * IDLE_SPAN + PCPU_STRIDE)

static struct pcpu_sheaf *array_alloc(void)
{
    static size_t carved;           /* arrays carved so far (under the lock) */
    size_t bytes = array_bytes(), step = bytes;
    if (!free_arrays) {
        char *chunk;
        size_t room;
        if (kslab_rseq_off < 0) {
            chunk = prim_map(IDLE_CHUNK);
            room = IDLE_SPAN;
        } else {
            unsigned order = 0;
            while ((PAGE_SIZE << order) < PAGE_SIZE + step || (PAGE_SIZE << order) < PCPU_CHUNK)
                order++;
            struct slab *p = pages_alloc(order, &pcpu_pages);
            chunk = p ? slab_address(p) : NULL;
            room = PAGE_SIZE << order;
        }
        if (!chunk)
            return NULL;
        /* each chunk goes on where the last one's colours stopped, as if
         * all the arrays were carved from one run: the k-th array's
         * header is in set k * step / 64 (mod the page), and step / 64
         * is odd, so 64 arrays in a row cover all 64 sets */
        size_t start = carved * step % PAGE_SIZE;
        if (room - start < step)
            start = 0;              /* an idle chunk's one array, near 1022 CPUs */
        size_t n = (room - start) / step;
        char *a = chunk + start;
        carved += n;
        while (n--) {               /* pushed last to first: handed out in order */
            *(void **)(a + n * step) = free_arrays;
            free_arrays = a + n * step;
        }
    }
    char *a = free_arrays;
    free_arrays = *(void **)a;
    memset(a, 0, bytes);
    return (struct pcpu_sheaf *)(a + sizeof(struct pcpu_hdr));
}

/* After slow start, s gets its sheaves (false: not yet, or no memory). */
static bool pcpu_create(struct kmem_cache *s)
{
    /* relaxed: a count; the array itself is published under the lock */
    if (atomic_fetch_add_explicit(&s->pcpu_uses, 1, memory_order_relaxed) < PCPU_SLOW_START)
        return false;
    kslab_lock(&kslab_pcpu_lock);
    if (s->pcpu == pcpu_none) {
        struct pcpu_sheaf *a = array_alloc();
        if (!a) {
            kslab_unlock(&kslab_pcpu_lock);
            return false;
        }
        for (unsigned c = 0; c < nr_cpus; c++) {
            struct pcpu_sheaf *e = pcpu_entry(a, c);
            e->cap = s->pcpu_cap;
            e->toff = s->offset;
            e->gshift = s->shift;
            e->off_mask = ~s->slab_mask;
            e->inv = s->inv;
            e->nobj = s->objects;
        }
        *(struct pcpu_hdr *)pcpu_hdr_of(a) = (struct pcpu_hdr){ .s = s };
        /* release: the caps and the header above before the pointers a
         * fast path may load; pcpu before pcpu_tag0 (rule 10), so that the
         * slow path of an inline pop or push that found the array there
         * finds it too (until then those miss on pcpu_none) */
        __atomic_store_n(&s->pcpu, a, __ATOMIC_RELEASE);
        __atomic_store_n(&s->pcpu_tag0, s->offset ? pcpu_none : a, __ATOMIC_RELEASE);
        kslab_malloc_pcpu_published(s);     /* malloc's table names a (rule 9) */
    }
    kslab_unlock(&kslab_pcpu_lock);
    return true;
}

/* ---- slow paths ------------------------------------------------------------------------ */

/* Does s have its sheaves (created here once slow start is over)? */
static bool pcpu_sheaves(struct kmem_cache *s)
{
    return pcpu_base(s) != pcpu_none || pcpu_create(s);
}

/* Bulk calls of at most this many objects take a section per object: it
 * beats a batch's setup (alloc_bulk + free_bulk of 1 object: 3.6x a single
 * pair through the batches, 2.4x this way). */
#define BULK_SINGLE 3

/* Out of memory: the objects other CPUs' sheaves hold are free too, and
 * the barn's sheaves hold pages.  Shrink s (every CPU's sheaf and the barn
 * back to the slabs, empty slabs to the page allocator) so that a retry can
 * use them; false if s has no sheaves (nothing to retry for). */
static bool pcpu_reclaim(struct kmem_cache *s)
{
    if (pcpu_base(s) == pcpu_none)
        return false;
    kslab_shrink(s);
    return true;
}

/* Where the per-CPU mode runs on kslab's own struct rseq (kslab_rseq_off <
 * 0, prim.h), the calling thread's registration at its first slow path:
 * its sections miss until then.  Inline, so that on glibc's registration
 * the slow paths pay one compare of the mode word, not a call. */
static inline void pcpu_register(void)
{
    if (kslab_rseq_off < 0)
        prim_rseq_register();
}

void *kslab_pcpu_alloc(struct kmem_cache *s, gfp_t gfp)
{
    void *x;
    pcpu_register();
    if (!pcpu_sheaves(s)) {
        if (!kslab_be->cpu_refill(s, &x, 1, 1))
            return NULL;
    } else {
        void *buf[PCPU_CAP_MAX];
        unsigned cap = s->pcpu_cap, n = kslab_be->cpu_refill(s, buf, (cap + 1) / 2, cap);
        if (!n && pcpu_reclaim(s))
            n = kslab_be->cpu_refill(s, buf, (cap + 1) / 2, cap);
        if (!n)
            return NULL;
        /* The sheaf is a stack: pushed in reverse, it gives the objects
         * out in the order the refill took them (a new slab's: address
         * order, or the randomized order within each page).  Pushed as
         * taken, each refill's run came out backwards, and a program that
         * walks its objects in allocation order (python3's collector)
         * chased pointers 6x slower (80-byte nodes, 200 000 of them:
         * 27.7 -> 4.x ns a node). */
        for (unsigned i = 0, j = n - 1; i < j; i++, j--) {
            void *t = buf[i];
            buf[i] = buf[j];
            buf[j] = t;
        }
        x = buf[--n];
        if (n) {
            struct pcpu_sheaf *e;
            /* (each carries its free tag: cpu_refill's contract) */
            unsigned k = pcpu_push_batch(s, buf, n, &e);
            if (k)
                slow_net_add(e, k);
            if (k < n)              /* refilled meanwhile, or draining */
                kslab_be->cpu_drain(s, buf + k, n - k, false);
        }
    }
    kslab_count(s, ALLOC_SLOWPATH, 1);
    pcpu_tag_claim(s, x);           /* rule 8: refilled objects carry their tags */
    if (gfp & __GFP_ZERO)
        memset(x, 0, s->object_size);
    return x;
}

/* The sheaf e (the current CPU's, just found full) gives its top half on:
 * to the barn as one sheaf, or back to the slabs.  Half, not all: a sheaf
 * left empty would take a full one back at its next allocation and sit at
 * a boundary for ever.  false if it is draining (cap 0): the caller sends
 * its objects straight to the slabs instead. */
static bool sheaf_make_room(struct kmem_cache *s, struct pcpu_sheaf *e)
{
    /* relaxed: only a hint; a stale non-zero cap costs the caller a retry */
    if (!__atomic_load_n(&e->cap, __ATOMIC_RELAXED))
        return false;
    void *half[PCPU_CAP_MAX];
    unsigned n = pcpu_pop_batch(s, half, (s->pcpu_cap + 1) / 2, &e, false);
    if (n) {
        slow_net_add(e, -(int64_t)n);
        kslab_be->cpu_drain(s, half, n, true);
        kslab_count(s, SHEAF_FLUSH, 1);
    }
    return true;
}

/* x validated: tagged (rule 8; a bulk free's are already, the same word),
 * onto the sheaf, making room if it is full, else straight to its slab. */
void kslab_pcpu_free(struct kmem_cache *s, void *x)
{
    pcpu_register();
    pcpu_tag_set(s, x);
    if (pcpu_base(s) != pcpu_none) {
        for (;;) {
            struct pcpu_sheaf *e;
            enum pcpu_push_result r = pcpu_push_slow(s, x, &e);
            if (r == PCPU_PUSHED) {
                slow_net_add(e, 1);
                kslab_count(s, FREE_SLOWPATH, 1);
                return;
            }
            if (r == PCPU_DUP)
                kslab_double_free(s, x);
            if (!sheaf_make_room(s, e))
                break;
        }
    }
    kslab_be->cpu_drain(s, &x, 1, false);
    kslab_count(s, FREE_SLOWPATH, 1);
}

/* Bulk allocation: what the current CPU's sheaf has, in one section (no
 * atomic: counted as fast allocations in the commit word), then the rest
 * straight from the slabs. */
int kslab_pcpu_alloc_bulk(struct kmem_cache *s, gfp_t gfp, size_t size, void **p)
{
    pcpu_register();
    size_t i = 0, fast;
    if (size <= BULK_SINGLE) {
        for (; i < size; i++) {
            if ((p[i] = pcpu_pop(s)))
                pcpu_tag_claim(s, p[i]);
            else if (!(p[i] = kslab_pcpu_alloc(s, 0)))
                goto fail_single;
        }
        goto zero;
    }
    /* a cache used only in bulk gets its sheaves after slow start too */
    if (pcpu_sheaves(s)) {
        while (i < size) {
            struct pcpu_sheaf *e;
            size_t want = size - i < PCPU_CAP_MAX ? size - i : PCPU_CAP_MAX;
            unsigned n = pcpu_pop_batch(s, p + i, (unsigned)want, &e, true);
            if (!n)
                break;
            i += n;
        }
    }
    fast = i;
    while (i < size) {
        size_t want = size - i < 65536 ? size - i : 65536;
        unsigned n = kslab_be->cpu_refill(s, p + i, (unsigned)want, (unsigned)want);
        if (!n && pcpu_reclaim(s))
            n = kslab_be->cpu_refill(s, p + i, (unsigned)want, (unsigned)want);
        if (!n) {                   /* all or nothing (still tagged: the drain claims them) */
            kslab_be->cpu_drain(s, p, (unsigned)i, false);
            if (fast)               /* counted as allocated when popped */
                kslab_count(s, FREE_SLOWPATH, fast);
            return 0;
        }
        i += n;
    }
    if (size > fast)
        kslab_count(s, ALLOC_SLOWPATH, size - fast);
    for (size_t k = 0; k < size; k++)   /* out of the sheaves and refills (rule 8) */
        pcpu_tag_claim(s, p[k]);
zero:
    if (gfp & __GFP_ZERO)
        for (size_t k = 0; k < size; k++)
            memset(p[k], 0, s->object_size);
    return (int)size;
fail_single:                        /* all or nothing: free (and count) what we got */
    while (i--)
        kslab_pcpu_free(s, p[i]);
    return 0;
}

/* Push n validated objects of s (flush on the caller's side): as many as
 * fit in one section, counted as fast frees by the count they add; when the
 * sheaf is full its top half goes on, as for a single free. */
static void drain_in_order(struct kmem_cache *s, void **buf, unsigned n)
{
    /* buf holds the caller's array last entry first: give it back in the
     * caller's order, so that (as with SLUB's detached freelists) its first
     * entry ends at the head of its slab's freelist, freed last */
    for (unsigned i = 0; i < n / 2; i++) {
        void *t = buf[i];
        buf[i] = buf[n - 1 - i];
        buf[n - 1 - i] = t;
    }
    kslab_be->cpu_drain(s, buf, n, false);
    kslab_count(s, FREE_SLOWPATH, n);
}

/* buf[0..n): validated and tagged (rule 8) by the caller. */
static void pcpu_push_all(struct kmem_cache *s, void **buf, unsigned n)
{
    if (n <= BULK_SINGLE) {
        for (unsigned i = 0; i < n; i++)
            if (!pcpu_push(s, buf[i]))
                kslab_pcpu_free(s, buf[i]);
        return;
    }
    if (pcpu_base(s) == pcpu_none) {          /* no sheaves yet: to the slabs */
        drain_in_order(s, buf, n);
        return;
    }
    void *top = kslab_pcpu_top(s);            /* the object freed last (racy: a hint) */
    if (unlikely(top == buf[0]))
        kslab_double_free(s, buf[0]);
    while (n) {
        struct pcpu_sheaf *e;
        unsigned k = pcpu_push_batch(s, buf, n, &e);
        buf += k;
        n -= k;
        if (!n)
            return;
        if (!sheaf_make_room(s, e)) {
            drain_in_order(s, buf, n);
            return;
        }
    }
}

/*
 * kmem_cache_free_bulk / kfree_bulk in the per-CPU mode: each object is
 * validated as a single free is (kfree_bulk: its cache from its page; large
 * blocks freed one by one), then runs of one cache are pushed onto the
 * current CPU's sheaf a section at a time, last entry first, so p[0] ends
 * on top as if freed last.  An object equal to the one pushed just before
 * it, to the sheaf's top, or to its slab's freelist head is a double free.
 * Caches without per-CPU sheaves go to their back-end one by one.
 */
void kslab_pcpu_free_bulk(struct kmem_cache *want, size_t size, void **p)
{
    pcpu_register();
    const char *fn = want ? "kmem_cache_free_bulk" : "kfree_bulk";
    void *buf[PCPU_CAP_MAX];
    unsigned nb = 0;
    struct kmem_cache *cur = NULL;
    struct slab *lslab = NULL;          /* the last object's slab, validated */
    uintptr_t lbase = 0;
    while (size--) {
        void *x = p[size];
        if (ZERO_OR_NULL_PTR(x))
            continue;
        /* another object of the slab just validated (bulk frees come in
         * runs of one slab): only "is x an object start" is left */
        if (lslab && nb && nb < PCPU_CAP_MAX && ((uintptr_t)x & cur->slab_mask) == lbase &&
            object_start(cur, lbase + lslab->pg_colour, x)) {
            if (unlikely(slab_freelist(lslab) == x || buf[nb - 1] == x))
                kslab_double_free(cur, x);
            pcpu_tag_set(cur, x);
            buf[nb++] = x;
            continue;
        }
        struct kmem_cache *s = want;
        if (!want && (!in_arena(x) || !(s = addr_desc((uintptr_t)x)->cache))) {
            kslab_free_nonslab(x, fn);       /* a large or huge block, or reported */
            continue;
        }
        if (want && unlikely(!in_arena(x))) {
            /* KFENCE's objects are met here, not by a pass of their own
             * over the array before the bulk free (which cost seed 001's
             * bulk rows 10-40 % with KSLAB_KFENCE on); !want: above */
            if (!kslab_kfence_owns(x))
                kslab_bad_free(fn, want, x);
            kslab_kfence_free(want, x, fn);
            continue;
        }
        if (s != cur || nb == PCPU_CAP_MAX) {
            pcpu_push_all(cur, buf, nb);
            nb = 0;
            cur = s;
        }
        if (!s->pcpu_cap) {                  /* the back-end validates */
            kslab_be->free(want, s, x, fn);
            continue;
        }
        struct slab *slab = kslab_slab_of(want, s, x, fn);
        if (unlikely(slab_freelist(slab) == x || (nb && buf[nb - 1] == x)))
            kslab_double_free(s, x);
        pcpu_tag_set(s, x);
        buf[nb++] = x;
        lslab = slab;
        lbase = (uintptr_t)x & s->slab_mask;
    }
    pcpu_push_all(cur, buf, nb);
}

/* ---- shrink, destroy, events ------------------------------------------------------------- */

/* Every CPU's sheaf of s back to the slabs (rule 4 of percpu.h). */
void kslab_pcpu_drain(struct kmem_cache *s)
{
    struct pcpu_sheaf *base = pcpu_base(s);
    if (base == pcpu_none)
        return;
    kslab_lock(&kslab_pcpu_lock);
    for (unsigned c = 0; c < nr_cpus; c++) {
        struct pcpu_sheaf *e = pcpu_entry(base, c);
        /* racy peek (relaxed): an empty sheaf needs no fence */
        if (!(__atomic_load_n(&e->word, __ATOMIC_RELAXED) & PCPU_COUNT_MASK))
            continue;
        uint32_t cap = __atomic_load_n(&e->cap, __ATOMIC_RELAXED);
        __atomic_store_n(&e->cap, 0, __ATOMIC_RELAXED);
        prim_rseq_fence(c);         /* orders the store above before what follows */
        pcpu_tsan_acquire(base);
        void *buf[PCPU_CAP_MAX];
        uint64_t w = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
        unsigned n = (unsigned)(w & PCPU_COUNT_MASK);
        memcpy(buf, e->objs, n * sizeof(void *));
        __atomic_store_n(&e->word, w - n, __ATOMIC_RELAXED);
        slow_net_add(e, -(int64_t)n);
        pcpu_tsan_release(base);
        /* release: the emptied entry before sections may use it again */
        __atomic_store_n(&e->cap, cap, __ATOMIC_RELEASE);
        if (n)
            kslab_be->cpu_drain(s, buf, n, false);
    }
    kslab_unlock(&kslab_pcpu_lock);
}

void *kslab_pcpu_top(struct kmem_cache *s)
{
    struct pcpu_sheaf *base = pcpu_base(s);
    if (base == pcpu_none)
        return NULL;
    uintptr_t tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    unsigned cpu = *(volatile uint32_t *)(tp + (uintptr_t)kslab_rseq_off + 4);
    struct pcpu_sheaf *e = pcpu_entry(base, cpu);
    unsigned n = (unsigned)(__atomic_load_n(&e->word, __ATOMIC_RELAXED) & PCPU_COUNT_MASK);
    return n && n <= PCPU_CAP_MAX ? __atomic_load_n(&e->objs[n - 1], __ATOMIC_RELAXED) : NULL;
}

static void entry_events(struct pcpu_sheaf *e, uint64_t *alloc, uint64_t *free)
{
    /* relaxed: counters; a reader racing with the owner CPU may be off by
     * the operations in flight, as any reader of live counters is */
    uint64_t w = __atomic_load_n(&e->word, __ATOMIC_RELAXED);
    int64_t net = __atomic_load_n(&e->slow_net, __ATOMIC_RELAXED);
    *alloc += w >> 16;
    *free += (w >> 16) + (w & PCPU_COUNT_MASK) - (uint64_t)net;
}

void kslab_pcpu_events(struct kmem_cache *s, uint64_t ev[NR_STATS])
{
    struct pcpu_sheaf *base = pcpu_base(s);
    if (base == pcpu_none)
        return;
    for (unsigned c = 0; c < nr_cpus; c++)
        entry_events(pcpu_entry(base, c), &ev[ALLOC_FASTPATH], &ev[FREE_FASTPATH]);
}

/* Nobody uses s any more: its sheaves' objects go with its slabs, their
 * events into the cache's totals, the array to the free list. */
void kslab_pcpu_destroy(struct kmem_cache *s, bool reuse)
{
    struct pcpu_sheaf *base = pcpu_base(s);
    atomic_store_explicit(&s->pcpu_uses, 0, memory_order_relaxed);
    if (base == pcpu_none)
        return;
    uint64_t a = 0, f = 0;
    for (unsigned c = 0; c < nr_cpus; c++)
        entry_events(pcpu_entry(base, c), &a, &f);
    atomic_fetch_add_explicit(&s->stat_total[ALLOC_FASTPATH], a, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->stat_total[FREE_FASTPATH], f, memory_order_relaxed);
    kslab_lock(&kslab_pcpu_lock);
    /* relaxed: nobody may use s any more (destroy's contract) */
    __atomic_store_n(&s->pcpu_tag0, pcpu_none, __ATOMIC_RELAXED);
    __atomic_store_n(&s->pcpu, pcpu_none, __ATOMIC_RELAXED);
    if (reuse) {
        char *a = (char *)base - sizeof(struct pcpu_hdr);
        *(void **)a = free_arrays;
        free_arrays = a;
    } else {
        /* s had objects left: their slabs' map words still name base (rule
         * 9), so it is never reused, and a free there misses to the dead
         * cache's checks */
        for (unsigned c = 0; c < nr_cpus; c++)
            pcpu_entry(base, c)->cap = 0;
    }
    kslab_unlock(&kslab_pcpu_lock);
}
