/* test_harden.c - the hardened freelists (issue 12): a forged free pointer
 * (an overflow into the free object after a live one, or a write into a
 * freed object) is reported, never allocated; a looping freelist (a double
 * free) is reported when walked, never followed for ever.  KSLAB_HARDENED=0
 * turns the defence off (encoding and checks): then the attacks hand out
 * the attacker's address or a live object again, and these tests fail. */
#include "check.h"
#include <kslab.h>
#include <stdbool.h>
#include <stdint.h>

static char target[256] __attribute__((aligned(64)));

/* The back-ends whose slab freelists are pointers in free objects: SLUB
 * and slob-seg (SLAB keeps index arrays in its slabs, classic SLOB unit
 * offsets, and pointers only on an RCU cache's list: rcu_list_attack). */
static bool pointer_freelists(void)
{
    const char *be = kslab_allocator_name();
    return strcmp(be, "slub") == 0 || strcmp(be, "slob-seg") == 0;
}

/* An object of c (64-byte objects, one-page slabs) whose neighbour in
 * memory, x + 64, is on the same page and free: the freelist order is
 * random, so a few are allocated and one that fits is taken. */
static char *with_free_neighbour(struct kmem_cache *c)
{
    enum { N = 8 };
    char *got[N];
    for (int n = 0; n < N; n++) {
        got[n] = kmem_cache_alloc(c, GFP_KERNEL);
        for (int i = 0; i <= n; i++) {
            char *x = got[i];
            bool free_next = ((uintptr_t)x + 64) % 4096 != 0;
            for (int j = 0; j <= n && free_next; j++)
                free_next = got[j] != x + 64;
            if (free_next) {
                __asm__("" : "+r"(x));  /* past x's end on purpose: the writes must stay */
                return x;
            }
        }
    }
    fprintf(stderr, "no object with a free neighbour\n");
    exit(4);
}

/* n allocations from c: the one that reads a forged pointer must stop the
 * program, and none may return `forged`. */
static _Noreturn void allocate_past(struct kmem_cache *c, const void *forged, int n)
{
    for (int i = 0; i < n; i++) {
        if (kmem_cache_alloc(c, GFP_KERNEL) == forged) {
            fprintf(stderr, "allocation %d returned the forged address %p\n", i, forged);
            exit(3);
        }
    }
    exit(0);    /* not reached when the forged pointer is caught */
}

/* a's neighbour, a free object of the slab, is overwritten in every word
 * (whatever the free pointer's offset) with the attacker's address, or
 * with a itself (self): a live object of the same slab, which without the
 * encoding would pass any range check, and two callers would own a;
 * encoded, it decodes to garbage. */
static void neighbour_attack(const char *name, bool self)
{
    struct kmem_cache *c = kmem_cache_create(name, 64, 0, SLAB_NO_MERGE, NULL);
    char *a = with_free_neighbour(c);
    void *forged = self ? (void *)a : (void *)target;
    void **b = (void **)(a + 64);
    for (int i = 0; i < 8; i++)
        b[i] = forged;
    allocate_past(c, forged, 200);
}
static void overflow_attack(void *arg) { neighbour_attack("harden64", false); }
static void overlap_attack(void *arg) { neighbour_attack("harden_overlap", true); }

/* The same through freed objects: c's first n objects allocated, the odd
 * ones freed (the even ones stay, so their slabs stay) and the sheaves
 * sent back to the slabs (the pointers are then in the objects); the
 * first `words` words of each freed one written after its free with the
 * attacker's address, or (self) with a live object of the cache; then c
 * allocates until a forged pointer is read. */
static _Noreturn void forge_freed(struct kmem_cache *c, int n, int words, bool self)
{
    enum { NMAX = 400 };
    void *p[NMAX];
    for (int i = 0; i < n; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    void *forged = self ? p[0] : (void *)target;
    for (int i = 1; i < n; i += 2)
        kmem_cache_free(c, p[i]);
    kmem_cache_shrink(c);
    for (int i = 1; i < n; i += 2) {
        void **q = p[i];
        __asm__("" : "+r"(q));  /* after its free on purpose */
        for (int k = 0; k < words; k++)
            q[k] = forged;
    }
    allocate_past(c, forged, n);
}
static void uaf_attack(void *arg)
{
    forge_freed(kmem_cache_create("harden_uaf", 64, 0, SLAB_NO_MERGE, NULL), 400, 8, false);
}

/* Classic SLOB keeps a SLAB_TYPESAFE_BY_RCU cache's freed objects on a
 * list of its own, linked through the word after each object: the same
 * attack there (the block's 9 words, that link's included). */
static void rcu_list_attack(void *self)
{
    forge_freed(kmem_cache_create("harden_rcu", 64, 0, SLAB_TYPESAFE_BY_RCU, NULL), 64, 9,
                self != NULL);
}

/* kmem_cache_free_bulk(c, 3, {a, b, a}): in the per-thread mode the
 * objects go onto the thread's cpu freelist, which then loops a -> b -> a
 * (the duplicate is not adjacent: not caught there).  kmem_cache_destroy
 * walks that freelist: reported (as the double free it is, or as a loop
 * when the walk meets it), never followed for ever. */
static void loop_destroy(void *arg)
{
    struct kmem_cache *c = kmem_cache_create("harden_loop", 64, 0, SLAB_NO_MERGE, NULL);
    void *a = kmem_cache_alloc(c, GFP_KERNEL), *b = kmem_cache_alloc(c, GFP_KERNEL);
    void *p[3] = { a, b, a };
    kmem_cache_free_bulk(c, 3, p);
    kmem_cache_destroy(c);
    exit(0);
}

/* With randomization, a fresh cache's objects are not handed out in
 * address order: in windows of 8 shuffled uniformly, the next object is
 * the one after the last in memory about one time in 8 (63 of 63 in
 * address order, KSLAB_HARDENED=0 or KSLAB_RANDOM_WINDOW=0).  The bound
 * of half the steps is more than 9 standard deviations above the mean. */
/* Steps, among a fresh cache's first N objects, to the next object in memory. */
static int ascending_steps(size_t size, int n)
{
    struct kmem_cache *c = kmem_cache_create("harden_order", (unsigned)size, 0, SLAB_NO_MERGE, NULL);
    char *p[64];
    int ascending = 0;
    for (int i = 0; i < n; i++) {
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
        if (i && p[i] - p[i - 1] == (long)size)
            ascending++;
    }
    for (int i = 0; i < n; i++)
        kmem_cache_free(c, p[i]);
    kmem_cache_destroy(c);
    return ascending;
}
/* Windows of 8 take their order from a table of 256 random permutations,
 * one picked at random for each window (slab_common.c): over a fresh
 * cache's first 512 objects, the windows' orders (each window's objects'
 * places in it, in allocation order) are mostly different.  Were one order
 * used for every window, only windows split between two sheaf refills
 * would differ. */
/* The first n objects of a fresh cache c of sz-byte objects into p, and
 * each one's slot, counted from the lowest address, into k. */
static void fresh_slots(struct kmem_cache *c, int n, size_t sz, char **p, long *k)
{
    uintptr_t lo = UINTPTR_MAX;
    for (int i = 0; i < n; i++) {
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
        lo = (uintptr_t)p[i] < lo ? (uintptr_t)p[i] : lo;
    }
    for (int i = 0; i < n; i++)
        k[i] = (long)(((uintptr_t)p[i] - lo) / sz);
}

static void test_window_orders(void)
{
    enum { N = 512, W = 8, SZ = 48 };       /* (8 of 48 bytes fit the small span) */
    struct kmem_cache *c = kmem_cache_create("harden_windows", SZ, 0, SLAB_NO_MERGE, NULL);
    static char *p[N];
    static long slot[N];
    fresh_slots(c, N, SZ, p, slot);
    /* window -> its objects' places (3 bits each) in allocation order */
    static uint32_t order[N], members[N];
    for (int i = 0; i < N; i++) {
        uintptr_t k = (uintptr_t)slot[i], w = k / W;
        if (w < N) {
            order[w] |= (uint32_t)(k % W) << (3 * members[w]);
            members[w]++;
        }
    }
    int whole = 0, distinct = 0;
    for (int w = 0; w < N; w++) {
        if (members[w] != W)
            continue;
        whole++;
        bool seen = false;
        for (int v = 0; v < w && !seen; v++)
            seen = members[v] == W && order[v] == order[w];
        distinct += !seen;
    }
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    kmem_cache_destroy(c);
    if (distinct <= whole / 2)
        fprintf(stderr, "%d whole windows, %d orders: windows share their order\n", whole, distinct);
    CHECK(whole >= 16);
    CHECK(distinct > whole / 2);
}

/* Objects below 128 bytes have windows under 512 bytes (slab_common.c,
 * KSLAB_RANDOM_SMALL_SPAN 448): 7 objects of 64 bytes, not 8.  A window's
 * objects go out one after another (a refill may hand a batch out last
 * first, which keeps them together), so splitting a fresh cache's first
 * slots into groups of the true window size, the group an allocation
 * lands in changes between consecutive allocations about once a window;
 * into groups of another size, each true window straddles a boundary and
 * its shuffled objects cross it back and forth.  Over the first 63 slots
 * (9 windows of 7, or 7 of 8 and 7 slots) of 64-byte objects, measured on
 * every back-end and mode: groups of 7 change 8 times and groups of 8
 * 19-29; with windows of 8 (KSLAB_RANDOM_SMALL_SPAN=0), 21-33 against 7. */
static int group_changes(const long *k, int n, int m, int slots)
{
    int changes = 0;
    for (int i = 1; i < n; i++)
        if (k[i] < slots && k[i - 1] < slots && k[i] / m != k[i - 1] / m)
            changes++;
    return changes;
}
static void test_small_span(void)
{
    enum { N = 256, SZ = 64, SLOTS = 63 };
    struct kmem_cache *c = kmem_cache_create("harden_small_span", SZ, 0, SLAB_NO_MERGE, NULL);
    static char *p[N];
    static long k[N];
    fresh_slots(c, N, SZ, p, k);
    int in = 0;
    for (int i = 0; i < N; i++)
        in += k[i] < SLOTS;
    int by7 = group_changes(k, N, 7, SLOTS), by8 = group_changes(k, N, 8, SLOTS);
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    kmem_cache_destroy(c);
    if (in < SLOTS || by7 >= by8)
        fprintf(stderr, "small span: %d of the first %d slots handed out; group changes: "
                "by 7 %d, by 8 %d\n", in, SLOTS, by7, by8);
    CHECK_EQ(in, SLOTS);
    CHECK(by7 < by8);
}

/* Objects from 96 bytes (up to half the span) are handed out in strides
 * (slab_common.c): each window (here 4 KiB, 16 objects: a small slab's)
 * from a random place at a random step of 2 to 9 prime to its size, so a
 * walk in allocation order runs one way through memory.  Over a fresh
 * cache's first 1024 256-byte objects, in each window one step (or its
 * negative: a sheaf hands a refill out last first) is most of the steps
 * between consecutive allocations -- not so in a shuffled window -- and
 * it differs from window to window: with one step for every window there
 * would be one value, in address order no window would count. */
static void test_stride_orders(void)
{
    enum { N = 1024, W = 16, SZ = 256, MAXW = 128 };
    struct kmem_cache *c = kmem_cache_create("harden_stride", SZ, 0, SLAB_NO_MERGE, NULL);
    static char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    /* each memory window (slabs are aligned to their size, a multiple of
     * 16 KiB) and its votes for each step between consecutive allocations
     * inside it */
    static uintptr_t key[MAXW];
    static int votes[MAXW][W];
    int nw = 0, ascending = 0;
    for (int i = 1; i < N; i++) {
        long d = (p[i] - p[i - 1]) / SZ;
        ascending += d == 1;
        uintptr_t k = (uintptr_t)p[i] / (SZ * W);
        if (k != (uintptr_t)p[i - 1] / (SZ * W))
            continue;
        int w = 0;
        while (w < nw && key[w] != k)
            w++;
        if (w == nw) {
            if (nw == MAXW)
                continue;
            key[nw++] = k;
        }
        votes[w][(d % W + W) % W]++;
    }
    int windows = 0, distinct = 0, steps[MAXW];
    for (int w = 0; w < nw; w++) {
        int best = 1;
        for (int d = 1; d < W; d++)
            best = votes[w][d] > votes[w][best] ? d : best;
        if (votes[w][best] < 8)
            continue;
        bool seen = false;
        for (int v = 0; v < windows && !seen; v++)
            seen = steps[v] == best || steps[v] == W - best;
        steps[windows++] = best;
        distinct += !seen;
    }
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, p[i]);
    kmem_cache_destroy(c);
    if (ascending >= N / 4 || windows < 8 || distinct < 2)
        fprintf(stderr, "stride: %d of %d steps ascending, %d windows, %d different steps\n",
                ascending, N - 1, windows, distinct);
    CHECK(ascending < N / 4);
    CHECK(windows >= 8);
    CHECK(distinct >= 2);
}

static void test_random_order(void)
{
    enum { N = 64 };
    int ascending = ascending_steps(64, N);
    if (ascending >= N / 2)
        fprintf(stderr, "%d of %d steps to the next object in memory: not randomized\n",
                ascending, N - 1);
    CHECK(ascending < N / 2);
    /* 1 KiB objects are strided where their slab gives a window 8 of them
     * (never a step to the neighbour) and otherwise shuffled in windows of
     * 4 (KSLAB_RANDOM_SPAN, 4 KiB: about one step in five to the
     * neighbour); 8 KiB ones are handed out in address order (the slab's 4
     * objects: at most 3 steps, the rest cross slabs).  Over 63 steps: in
     * address order 62-63 on every back-end; shuffled, SLAB (whose
     * one-page slabs keep their last object, which hosts the index array,
     * last: 3 objects shuffled in 4) 21 on average and at most 40 in 1000
     * fresh processes, SLUB and slob-seg at most 29.  (Over 31 steps with
     * a bound of 20, SLAB failed one run in a hundred.) */
    int kib = ascending_steps(1024, 64);
    if (kib >= 48)
        fprintf(stderr, "1 KiB objects: %d of 63 steps to the neighbour: not randomized\n", kib);
    CHECK(kib < 48);
    const char *span = getenv("KSLAB_RANDOM_SPAN");
    if (!span && strcmp(kslab_allocator_name(), "slob-seg") != 0)
        CHECK(ascending_steps(8192, 16) >= 8);
}

int main(void)
{
    /* randomization: every back-end with fixed-stride slabs (classic SLOB
     * has none) */
    if (strcmp(kslab_allocator_name(), "slob") != 0)
        test_random_order();
    const char *win = getenv("KSLAB_RANDOM_WINDOW");
    if (strcmp(kslab_allocator_name(), "slob") != 0 && (!win || strcmp(win, "8") == 0))
        test_window_orders();
    if (strcmp(kslab_allocator_name(), "slob") != 0 && !win && !getenv("KSLAB_RANDOM_SPAN") &&
        !getenv("KSLAB_RANDOM_STRIDE"))
        test_stride_orders();
    if (strcmp(kslab_allocator_name(), "slob") != 0 && !win &&
        !getenv("KSLAB_RANDOM_SMALL_SPAN"))
        test_small_span();
    if (strcmp(kslab_allocator_name(), "slob") == 0) {
        CHECK_DEATH(rcu_list_attack, NULL, "freelist corrupted in cache harden_rcu");
        CHECK_DEATH(rcu_list_attack, "self", "freelist corrupted in cache harden_rcu");
    }
    if (!pointer_freelists())
        return check_done();
    CHECK_DEATH(overflow_attack, NULL, "freelist corrupted in cache harden64");
    CHECK_DEATH(overlap_attack, NULL, "freelist corrupted in cache harden_overlap");
    CHECK_DEATH(uaf_attack, NULL, "freelist corrupted in cache harden_uaf");
    if (strcmp(kslab_allocator_name(), "slub") == 0)
        CHECK_DEATH(loop_destroy, NULL, "harden_loop", "double free");
    return check_done();
}
