/* test_api.c - the kernel API, function by function, with kernel semantics. */
#include "check.h"
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "helpers.h"
#include <kslab.h>
#include <stdint.h>
#include <sys/mman.h>

static int is_slub(void) { return strcmp(kslab_allocator_name(), "slub") == 0; }

struct foo { long a; int b; char c[20]; };

static int ctor_calls;
static void ctor(void *p) { ctor_calls++; memset(p, 0xAB, 40); }

static void test_kmalloc_classes(void)
{
    /* kmalloc_size_roundup and ksize agree with the kernel's classes. */
    static const size_t req[] = { 1, 8, 9, 16, 17, 32, 33, 64, 65, 96, 97, 128, 129, 192,
                                  193, 256, 257, 512, 1000, 1024, 2000, 2048, 4000, 4096,
                                  5000, 8192 };
    static const size_t cls[] = { 8, 8, 16, 16, 32, 32, 64, 64, 96, 96, 128, 128, 192, 192,
                                  256, 256, 512, 512, 1024, 1024, 2048, 2048, 4096, 4096,
                                  8192, 8192 };
    for (size_t i = 0; i < sizeof req / sizeof *req; i++) {
        CHECK_EQ(kmalloc_size_roundup(req[i]), cls[i]);
        char *p = kmalloc(req[i], GFP_KERNEL);
        CHECK(p != NULL);
        if (strcmp(kslab_allocator_name(), "slob") == 0)
            CHECK(ksize(p) >= req[i] && ksize(p) <= cls[i]);   /* SLOB: the block's own size */
        else
            CHECK_EQ(ksize(p), cls[i]);
        memset(p, 0x5a, req[i]);
        /* power-of-two sizes are naturally aligned (and, except on SLOB,
         * power-of-two classes), all at least 8 */
        size_t c = cls[i];
        if ((c & (c - 1)) == 0 && strcmp(kslab_allocator_name(), "slob") != 0)
            CHECK_EQ((uintptr_t)p % c, 0);
        if ((req[i] & (req[i] - 1)) == 0)
            CHECK_EQ((uintptr_t)p % req[i], 0);
        CHECK_EQ((uintptr_t)p % 8, 0);
        CHECK(kslab_kmalloc_cache(req[i]) != NULL);
        kfree(p);
    }
    CHECK(strcmp(kslab_cache_name(kslab_kmalloc_cache(96)), "kmalloc-96") == 0);
    CHECK(strcmp(kslab_cache_name(kslab_kmalloc_cache(150)), "kmalloc-192") == 0);
    CHECK(strcmp(kslab_cache_name(kslab_kmalloc_cache(8192)), "kmalloc-8k") == 0);
    CHECK(kslab_kmalloc_cache(8193) == NULL);
    CHECK_EQ(kmalloc_size_roundup(0), 0);
    CHECK_EQ(kmalloc_size_roundup(8193), 16384);   /* the kernel's: PAGE_SIZE << get_order() */
    CHECK_EQ(kmalloc_size_roundup(5u << 20), 5u << 20);   /* huge: page-rounded */
}

static void test_kmalloc_zero_and_null(void)
{
    void *z = kmalloc(0, GFP_KERNEL);
    CHECK(z == ZERO_SIZE_PTR);
    CHECK_EQ(ksize(z), 0);
    kfree(z);
    kfree(NULL);
    kfree_sensitive(NULL);
    kfree_sensitive(ZERO_SIZE_PTR);
    CHECK_EQ(ksize(NULL), 0);
    CHECK(kzalloc(0, GFP_KERNEL) == ZERO_SIZE_PTR);
}

static void test_kzalloc_kcalloc(void)
{
    for (int round = 0; round < 2; round++) {
        /* dirty an object, free it, zalloc must still return zeroes */
        unsigned char *p = kmalloc(100, GFP_KERNEL);
        memset(p, 0xff, 100);
        kfree(p);
        unsigned char *q = kzalloc(100, GFP_KERNEL);
        int nz = 0;
        for (size_t i = 0; i < ksize(q); i++)
            nz += q[i] != 0;
        CHECK_EQ(nz, 0);
        kfree(q);
    }
    int *a = kcalloc(50, sizeof(int), GFP_KERNEL);
    CHECK(a != NULL);
    int nz = 0;
    for (int i = 0; i < 50; i++)
        nz += a[i] != 0;
    CHECK_EQ(nz, 0);
    kfree(a);
    CHECK(kcalloc(SIZE_MAX / 2, 4, GFP_KERNEL) == NULL);
    CHECK(kmalloc_array(SIZE_MAX / 8 + 1, 16, GFP_KERNEL) == NULL);
    long *m = kmalloc_array(10, sizeof(long), GFP_KERNEL);
    CHECK(m != NULL && ksize(m) >= 80);
    kfree(m);
}

static void test_large(void)
{
    size_t sizes[] = { 8193, 12288, 65536, 100000, 1 << 20, (1 << 22) + 5, 1 << 23 };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = kmalloc(sizes[i], GFP_KERNEL);
        CHECK(p != NULL);
        CHECK_EQ((uintptr_t)p % 4096, 0);
        if ((sizes[i] & (sizes[i] - 1)) == 0)
            CHECK_EQ((uintptr_t)p % sizes[i], 0);
        CHECK(ksize(p) >= sizes[i]);
        CHECK_EQ(ksize(p) % 4096, 0);
        p[0] = 1;
        p[sizes[i] - 1] = 2;
        kfree(p);
    }
    unsigned char *z = kzalloc(50000, GFP_KERNEL);
    int nz = 0;
    for (int i = 0; i < 50000; i++)
        nz += z[i] != 0;
    CHECK_EQ(nz, 0);
    kfree(z);
}

static void test_krealloc(void)
{
    char *p = krealloc(NULL, 20, GFP_KERNEL);     /* NULL: like kmalloc */
    CHECK(p != NULL && ksize(p) >= 20);
    strcpy(p, "hello, slab");
    size_t had = ksize(p);
    char *q = krealloc(p, 24, GFP_KERNEL);         /* fits: same object */
    CHECK(q == p && had >= 24);
    char *r = krealloc(q, 1000, GFP_KERNEL);       /* grows: moves, keeps contents */
    CHECK(r != NULL && r != q && strcmp(r, "hello, slab") == 0 && ksize(r) >= 1000);
    char *big = krealloc(r, 20000, GFP_KERNEL);    /* into a large allocation */
    CHECK(big != NULL && strcmp(big, "hello, slab") == 0 && ksize(big) >= 20000);
    char *small = krealloc(big, 10, GFP_KERNEL);   /* shrinking keeps it in place */
    CHECK(small == big);
    CHECK(krealloc(small, 0, GFP_KERNEL) == ZERO_SIZE_PTR); /* 0: frees */
    /* __GFP_ZERO: growth in place reads zeroes past the shrunk size */
    unsigned char *z = kzalloc(64, GFP_KERNEL);
    memset(z, 7, 64);
    z = krealloc(z, 10, GFP_KERNEL | __GFP_ZERO);
    z = krealloc(z, 64, GFP_KERNEL | __GFP_ZERO);
    CHECK(z[9] == 7 && z[10] == 0 && z[63] == 0);
    kfree(z);
}

static void test_strdup_memdup_sensitive(void)
{
    char *s = kstrdup("kmem_cache", GFP_KERNEL);
    CHECK(s && strcmp(s, "kmem_cache") == 0);
    CHECK(kstrdup(NULL, GFP_KERNEL) == NULL);
    int src[5] = { 1, 2, 3, 4, 5 };
    int *d = kmemdup(src, sizeof src, GFP_KERNEL);
    CHECK(d && memcmp(d, src, sizeof src) == 0 && (void *)d != (void *)src);
    kfree(d);
    /* kfree_sensitive wipes the object before freeing: the next allocation
     * of the same class on this thread gets the same object back, zeroed
     * except for the free pointer word. */
    struct kmem_cache *c32 = kslab_kmalloc_cache(32);
    char *secret = kmalloc(32, GFP_KERNEL);
    memset(secret, 'S', 32);
    kfree_sensitive(secret);
    char *again = kmalloc(32, GFP_KERNEL);
    CHECK(again == secret);
    int left = 0;
    for (int i = 8; i < 32; i++)
        left += again[i] == 'S';
    CHECK_EQ(left, 0);
    kfree(again);
    kfree(s);
    (void)c32;
}

/* Today's allocation family (6.18 slab.h): kvmalloc and friends are k*
 * blocks of any size, the _node and _lru calls ignore what has no meaning
 * here, the string helpers terminate, the overflow checks return NULL. */
static void test_kv_node_family(void)
{
    char *v = kvmalloc(3u << 20, GFP_KERNEL);                   /* a large block (buddy) */
    CHECK(v != NULL);
    memset(v, 0x11, 3u << 20);
    CHECK(ksize(v) >= (3u << 20));
    char *w = kvrealloc(v, 6u << 20, GFP_KERNEL);               /* to a huge block, contents kept */
    CHECK(w != NULL);
    CHECK(w[0] == 0x11 && w[(3u << 20) - 1] == 0x11);
    kvfree(w);
    unsigned char *z = kvzalloc(100000, GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
    CHECK(z != NULL);
    size_t nz = 0;
    for (size_t i = 0; i < 100000; i++)
        nz += z[i] != 0;
    CHECK_EQ(nz, 0);
    kvfree_sensitive(z, 100000);
    int *c = kvcalloc(1000, sizeof(int), GFP_KERNEL);
    CHECK(c != NULL && c[0] == 0 && c[999] == 0);
    kvfree(c);
    CHECK(kvmalloc_array(SIZE_MAX / 2, 4, GFP_KERNEL) == NULL);   /* overflow */
    CHECK(kvcalloc(SIZE_MAX / 8, 16, GFP_KERNEL) == NULL);
    kvfree(NULL);
    kvfree(ZERO_SIZE_PTR);

    int *a = kmalloc_node(40, GFP_KERNEL, 0);
    CHECK(a != NULL && ksize(a) >= 40);
    int *b = krealloc_array(a, 100, sizeof(int), GFP_KERNEL);
    CHECK(b != NULL && ksize(b) >= 400);
    CHECK(krealloc_array(b, SIZE_MAX / 2, 3, GFP_KERNEL) == NULL);   /* b untouched */
    b[99] = 7;
    kfree(b);
    char *zn = kzalloc_node(64, GFP_KERNEL, NUMA_NO_NODE);
    CHECK(zn != NULL && zn[0] == 0 && zn[63] == 0);
    kfree(zn);
    long *an = kcalloc_node(8, sizeof(long), GFP_KERNEL, 1);
    CHECK(an != NULL && an[7] == 0);
    kfree(an);
    CHECK(kmalloc_array_node(SIZE_MAX, 2, GFP_KERNEL, 0) == NULL);

    char *m = kmemdup_nul("abcdef", 3, GFP_KERNEL);
    CHECK(m != NULL && strcmp(m, "abc") == 0);
    kfree(m);
    char raw[4] = { 'w', 'x', 'y', 'z' };                       /* no NUL in the source */
    m = kmemdup_nul(raw, 4, GFP_KERNEL);
    CHECK(m != NULL && strcmp(m, "wxyz") == 0);
    kfree(m);
    CHECK(kmemdup_nul(NULL, 3, GFP_KERNEL) == NULL);
    m = kstrndup("hello", 3, GFP_KERNEL);
    CHECK(m != NULL && strcmp(m, "hel") == 0);
    kfree(m);
    m = kstrndup("hi", 100, GFP_KERNEL);
    CHECK(m != NULL && strcmp(m, "hi") == 0 && ksize(m) < 100);
    kfree(m);
    CHECK(kstrndup(NULL, 5, GFP_KERNEL) == NULL);

    struct kmem_cache *s = kmem_cache_create("acct", 72, 0, SLAB_ACCOUNT | SLAB_RECLAIM_ACCOUNT, NULL);
    CHECK(s != NULL);
    void *o1 = kmem_cache_alloc_node(s, GFP_KERNEL, NUMA_NO_NODE);
    void *o2 = kmem_cache_alloc_lru(s, (struct list_lru *)NULL, GFP_KERNEL | __GFP_ZERO);
    CHECK(o1 && o2 && o1 != o2);
    CHECK(((char *)o2)[0] == 0 && ((char *)o2)[71] == 0);
    kmem_cache_free(s, o1);
    kmem_cache_free(s, o2);
    kmem_cache_destroy(s);
}

/* The rest of slab.h: track_caller, dump_obj, the accepted flags. */
static void test_misc_api(void)
{
    void *a = kmalloc_track_caller(70, GFP_KERNEL);
    void *b = kmalloc_node_track_caller(70, GFP_KERNEL | __GFP_ZERO, NUMA_NO_NODE);
    CHECK(a && b && ((char *)b)[69] == 0 && ksize(a) >= 70);
    CHECK(slab_is_available());
    CHECK(kmem_cache_charge(a, GFP_KERNEL));
    CHECK(kmem_dump_obj((char *)a + 5));
    int local;
    CHECK(!kmem_dump_obj(&local));
    CHECK(kslab_object_start((char *)a + 5) == a);
    CHECK(kslab_object_start(&local) == NULL);
    kfree(a);
    kfree(b);
    char *al = kvmalloc_node_align(100, 256, GFP_KERNEL, 0);
    CHECK(al != NULL && ((uintptr_t)al & 255) == 0);
    memcpy(al, "aligned", 8);
    char *al2 = krealloc_node_align(al, 3000, 1024, GFP_KERNEL, NUMA_NO_NODE);
    CHECK(al2 != NULL && ((uintptr_t)al2 & 1023) == 0 && strcmp(al2, "aligned") == 0);
    char *al3 = kvrealloc_node_align(al2, 20000, 4096, GFP_KERNEL, 0);
    CHECK(al3 != NULL && ((uintptr_t)al3 & 4095) == 0 && strcmp(al3, "aligned") == 0);
    CHECK(krealloc_node_align(al3, 10, 48, GFP_KERNEL, 0) == NULL);   /* not a power of two */
    kvfree(al3);
    slab_flags_t accepted[] = { SLAB_CACHE_DMA, SLAB_CACHE_DMA32, SLAB_DEBUG_OBJECTS,
                                SLAB_NOLEAKTRACE, SLAB_FAILSLAB, SLAB_KASAN, SLAB_NO_USER_FLAGS,
                                SLAB_NO_OBJ_EXT, SLAB_SKIP_KFENCE, SLAB_TEMPORARY };
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        struct kmem_cache *c = kmem_cache_create("flags", 56, 0, accepted[i], NULL);
        CHECK(c != NULL);
        void *o = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(o != NULL);
        kmem_cache_free(c, o);
        kmem_cache_destroy(c);
    }
}

/* kmalloc_nolock/kfree_nolock: from a signal handler while the program
 * allocates; NULL in the per-thread mode; deferred frees happen. */
static atomic_long nolock_got, nolock_calls;
static void nolock_handler(int sig)
{
    (void)sig;
    atomic_fetch_add(&nolock_calls, 1);
    unsigned char *p = kmalloc_nolock(64, __GFP_ZERO, NUMA_NO_NODE);
    if (p) {
        atomic_fetch_add(&nolock_got, 1);
        if (p[0] == 0 && p[63] == 0)
            memset(p, 0x42, 64);
        kfree_nolock(p);
    }
}
static void test_nolock(void)
{
    /* per-CPU sheaves: the per-CPU mode of SLUB and SLAB (SLOB, slob-seg: none) */
    const char *be = kslab_allocator_name();
    bool percpu = strcmp(kslab_cpu_mode(), "percpu") == 0 &&
                  (!strcmp(be, "slub") || !strcmp(be, "slab"));
    void *warm[32];
    for (int i = 0; i < 32; i++)
        warm[i] = kmalloc(64, GFP_KERNEL);
    for (int i = 0; i < 32; i++)
        kfree(warm[i]);
    void *a = kmalloc_nolock(60, GFP_KERNEL, 0);
    CHECK(percpu ? a != NULL : a == NULL);
    kfree_nolock(a);
    CHECK(kmalloc_nolock(0, GFP_KERNEL, 0) == NULL);
    CHECK(kmalloc_nolock(100000, GFP_KERNEL, 0) == NULL);       /* only slab classes */
    kfree_nolock(NULL);
    char *big = kmalloc(100000, GFP_KERNEL);
    CHECK(kslab_object_start(big) == big);
    kfree_nolock(big);                                          /* deferred */
    kslab_trim();
    CHECK(kslab_object_start(big) == NULL);                     /* and done */

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = nolock_handler;
    sigaction(SIGUSR1, &sa, &old);
    struct kslab_stats st0, st;
    struct kmem_cache *k64 = kslab_kmalloc_cache(64);
    kslab_cache_stats(k64, &st0);
    void *live[64] = { 0 };
    for (int i = 0; i < 20000; i++) {
        int j = i & 63;
        kfree(live[j]);
        live[j] = kmalloc(40 + (i & 15), GFP_KERNEL);
        if ((i & 7) == 0)
            raise(SIGUSR1);
    }
    for (int j = 0; j < 64; j++)
        kfree(live[j]);
    sigaction(SIGUSR1, &old, NULL);
    kslab_trim();
    kslab_cache_stats(k64, &st);
    printf("nolock: %ld of %ld handler calls got an object (%s mode)\n",
           atomic_load(&nolock_got), atomic_load(&nolock_calls), kslab_cpu_mode());
    CHECK_EQ(atomic_load(&nolock_calls), 2500);
    if (percpu)
        CHECK(atomic_load(&nolock_got) > 0);
    CHECK_EQ(st.active_objs, st0.active_objs);                  /* nothing lost */
}

/* __free(kfree): freed at the end of the scope unless taken. */
static void *scoped_keep(void)
{
    char *p __free(kfree) = kmalloc(48, GFP_KERNEL);
    if (!p)
        return NULL;
    p[0] = 'k';
    return_ptr(p);
}
static void test_cleanup_helpers(void)
{
    struct kslab_stats before, after;
    struct kmem_cache *k48 = kslab_kmalloc_cache(48);
    CHECK(kslab_cache_stats(k48, &before) == 0);
    {
        char *q __free(kfree) = kmalloc(48, GFP_KERNEL);
        CHECK(q != NULL);
        char *e __free(kfree) = (char *)(uintptr_t)-12;          /* an ERR_PTR: not freed */
        char *n __free(kvfree) = NULL;
        (void)e;
        (void)n;
    }
    char *kept = scoped_keep();
    CHECK(kept != NULL && kept[0] == 'k');
    CHECK(kslab_cache_stats(k48, &after) == 0);
    CHECK_EQ(after.active_objs, before.active_objs + 1);          /* q freed, kept alive */
    kfree(kept);
}

/* kmem_cache_create's args form: defaults through NULL, align and ctor
 * from the struct, freeptr_offset placing an RCU cache's free pointer in
 * the object (no growth, nothing else written), its refusals, the
 * usercopy window, and sheaf_capacity sizing the per-CPU sheaves. */
struct fp_obj {
    long a, b;
    long fp;                 /* may change while the object is free */
    long rest[5];
};
static int args_ctor_calls;
static void args_ctor(void *p)
{
    memset(p, 0x5a, 48);
    args_ctor_calls++;
}
static uint64_t sheaf_events(struct kmem_cache *s)
{
    struct kslab_stats st;
    CHECK(kslab_cache_stats(s, &st) == 0);
    return st.sheaf_flush + st.barn_put + st.barn_get + st.alloc_slowpath;
}
static void sheaf_churn(struct kmem_cache *s)
{
    void *o[40];
    for (int r = 0; r < 50; r++) {
        for (int i = 0; i < 40; i++)
            CHECK((o[i] = kmem_cache_alloc(s, GFP_KERNEL)) != NULL);
        for (int i = 0; i < 40; i++)
            kmem_cache_free(s, o[i]);
    }
}
static void test_cache_args(void)
{
    struct kmem_cache *d = kmem_cache_create("args-null", 40, NULL, 0);
    CHECK(d != NULL);
    void *x = kmem_cache_alloc(d, GFP_KERNEL);
    CHECK(x != NULL && ((uintptr_t)x & 7) == 0);
    kmem_cache_free(d, x);
    kmem_cache_destroy(d);

    struct kmem_cache_args a = { .align = 256, .ctor = args_ctor };
    struct kmem_cache *c = kmem_cache_create("args-align", 48, &a, SLAB_NO_MERGE);
    CHECK(c != NULL);
    unsigned char *y = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(y != NULL && ((uintptr_t)y & 255) == 0);
    CHECK(args_ctor_calls > 0 && y[0] == 0x5a && y[47] == 0x5a);
    kmem_cache_free(c, y);
    kmem_cache_destroy(c);

    /* freeptr_offset: the stride stays sizeof(struct fp_obj), and a freed
     * object's bytes outside the fp word are what the user left */
    struct kmem_cache_args f = { .freeptr_offset = offsetof(struct fp_obj, fp),
                                 .use_freeptr_offset = 1 };
    struct kmem_cache *r = kmem_cache_create("args-rcu-fp", sizeof(struct fp_obj), &f,
                                             SLAB_TYPESAFE_BY_RCU);
    CHECK(r != NULL);
    enum { NO = 32 };
    struct fp_obj *o[NO];
    uintptr_t gap = UINTPTR_MAX;
    for (int i = 0; i < NO; i++) {
        o[i] = kmem_cache_alloc(r, GFP_KERNEL);
        CHECK(o[i] != NULL);
        memset(o[i], 0xab, sizeof *o[i]);
        for (int j = 0; j < i; j++) {
            uintptr_t g = (uintptr_t)o[i] > (uintptr_t)o[j] ? (uintptr_t)o[i] - (uintptr_t)o[j]
                                                            : (uintptr_t)o[j] - (uintptr_t)o[i];
            if (g < gap)
                gap = g;
        }
    }
    /* not grown by a word (SLOB places each object in a block of its own
     * choosing: no fixed stride to check) */
    if (strcmp(kslab_allocator_name(), "slob") != 0)
        CHECK_EQ(gap, sizeof(struct fp_obj));
    for (int i = 0; i < NO; i++)
        kmem_cache_free(r, o[i]);
    long bad = 0;
    for (int i = 0; i < NO; i++) {                       /* type-safe: still readable */
        const unsigned char *b = (const unsigned char *)o[i];
        for (size_t k = 0; k < sizeof *o[i]; k++)
            if ((k < offsetof(struct fp_obj, fp) || k >= offsetof(struct fp_obj, rest)) &&
                b[k] != 0xab)
                bad++;
    }
    CHECK_EQ(bad, 0);
    kmem_cache_destroy(r);

    /* refusals, as the kernel's: not an RCU cache, a misaligned word, a
     * word past the object */
    CHECK(kmem_cache_create("args-fp-norcu", 64, &f, 0) == NULL);
    f.freeptr_offset = 12;
    CHECK(kmem_cache_create("args-fp-odd", 64, &f, SLAB_TYPESAFE_BY_RCU) == NULL);
    f.freeptr_offset = 64;
    CHECK(kmem_cache_create("args-fp-out", 64, &f, SLAB_TYPESAFE_BY_RCU) == NULL);

    /* usercopy: recorded, and never merged */
    struct uc { int hdr; char buf[32]; int tail; };
    struct kmem_cache *u1 = KMEM_CACHE_USERCOPY(uc, 0, buf);
    struct kmem_cache *u2 = kmem_cache_create_usercopy("uc2", sizeof(struct uc), 0, 0,
                                                       offsetof(struct uc, buf), 32, NULL);
    CHECK(u1 != NULL && u2 != NULL && u1 != u2);
    void *ux = kmem_cache_alloc(u1, GFP_KERNEL);
    CHECK(ux != NULL);
    kmem_cache_free(u1, ux);
    kmem_cache_destroy(u1);
    kmem_cache_destroy(u2);

    /* sheaf_capacity: a 4-object sheaf overflows where kslab's own does not */
    struct kmem_cache_args sc = { .sheaf_capacity = 4 };
    struct kmem_cache *small = kmem_cache_create("args-sheaf4", 64, &sc, 0);
    struct kmem_cache *dflt = kmem_cache_create("args-sheaf-default", 64, 0, SLAB_NO_MERGE, NULL);
    CHECK(small != NULL && dflt != NULL);
    sheaf_churn(small);                                  /* past slow start */
    sheaf_churn(dflt);
    uint64_t e0 = sheaf_events(small), d0 = sheaf_events(dflt);
    sheaf_churn(small);
    sheaf_churn(dflt);
    uint64_t es = sheaf_events(small) - e0, ed = sheaf_events(dflt) - d0;
    printf("sheaf events in 4000 pairs: capacity 4 %llu, default %llu (%s mode)\n",
           (unsigned long long)es, (unsigned long long)ed, kslab_cpu_mode());
    /* (per-CPU sheaves front SLUB and SLAB; SLOB and slob-seg have none) */
    const char *be = kslab_allocator_name();
    if (strcmp(kslab_cpu_mode(), "percpu") == 0 && (!strcmp(be, "slub") || !strcmp(be, "slab")))
        CHECK(es > ed + 50);
    kmem_cache_destroy(small);
    kmem_cache_destroy(dflt);
}

/* The sheaf API: prefilled objects come out one by one, distinct and
 * zeroed on request, NULL once empty; refill in place and beyond the
 * capacity (objects kept); oversize sheaves; return gives every object
 * back. */
static void test_sheaves(void)
{
    struct kmem_cache *s = kmem_cache_create("sheaf-user", 96, 0, SLAB_NO_MERGE, NULL);
    CHECK(s != NULL);
    struct kslab_stats st0, st;
    CHECK(kslab_cache_stats(s, &st0) == 0);
    struct slab_sheaf *sh = kmem_cache_prefill_sheaf(s, GFP_KERNEL, 10);
    CHECK(sh != NULL);
    unsigned n = kmem_cache_sheaf_size(sh);
    CHECK(n >= 10);
    CHECK(kslab_cache_stats(s, &st) == 0);
    CHECK_EQ(st.active_objs, st0.active_objs + n);      /* the caller's now */
    void *got[64];
    unsigned k = 0;
    for (; k < n && k < 64; k++) {
        unsigned char *x = kmem_cache_alloc_from_sheaf(s, GFP_KERNEL | __GFP_ZERO, sh);
        CHECK(x != NULL);
        CHECK(x && x[0] == 0 && x[95] == 0);
        if (x)
            memset(x, 0x77, 96);
        got[k] = x;
        for (unsigned j = 0; j < k; j++)
            CHECK(got[j] != x);
    }
    CHECK_EQ(kmem_cache_sheaf_size(sh), n - k);
    while (kmem_cache_sheaf_size(sh))
        kmem_cache_free(s, kmem_cache_alloc_from_sheaf(s, GFP_KERNEL, sh));
    CHECK(kmem_cache_alloc_from_sheaf(s, GFP_KERNEL, sh) == NULL);  /* empty */
    /* refill in place, then beyond the capacity: objects kept */
    CHECK_EQ(kmem_cache_refill_sheaf(s, GFP_KERNEL, &sh, 3), 0);
    CHECK_EQ(kmem_cache_sheaf_size(sh), 3);
    void *mark = kmem_cache_alloc_from_sheaf(s, GFP_KERNEL, sh);
    CHECK(mark != NULL);
    kmem_cache_free(s, mark);
    CHECK_EQ(kmem_cache_refill_sheaf(s, GFP_KERNEL, &sh, 300), 0);
    CHECK_EQ(kmem_cache_sheaf_size(sh), 300);
    CHECK_EQ(kmem_cache_refill_sheaf(s, GFP_KERNEL, &sh, 200), 0);   /* already holds it */
    CHECK_EQ(kmem_cache_sheaf_size(sh), 300);
    kmem_cache_return_sheaf(s, GFP_KERNEL, sh);
    for (unsigned j = 0; j < k; j++)
        kmem_cache_free(s, got[j]);
    struct slab_sheaf *big = kmem_cache_prefill_sheaf(s, GFP_KERNEL, 1000);   /* oversize */
    CHECK(big != NULL && kmem_cache_sheaf_size(big) == 1000);
    kmem_cache_return_sheaf(s, GFP_KERNEL, big);
    kmem_cache_return_sheaf(s, GFP_KERNEL, NULL);
    CHECK(kslab_cache_stats(s, &st) == 0);
    CHECK_EQ(st.active_objs, st0.active_objs);          /* everything came back */
    CHECK_EQ(kmem_cache_sheaf_size(NULL), 0);
    kmem_cache_destroy(s);
}

/* kmem_buckets: a private copy of each kmalloc class, in slabinfo, serving
 * kmem_buckets_alloc by size; NULL buckets are kmalloc; large sizes go to
 * the page allocator; the objects are kmalloc objects for ksize, krealloc
 * and kfree. */
static int bucket_ctor_calls;
static void bucket_ctor(void *p)
{
    (void)p;
    bucket_ctor_calls++;
}
static void test_buckets(void)
{
    kmem_buckets *b = kmem_buckets_create("msgb", 0, 16, 1000, NULL);
    CHECK(b != NULL);
    if (!b)
        return;
    CHECK(strcmp(kslab_cache_name((*b)[3]), "msgb-64") == 0);
    CHECK(strcmp(kslab_cache_name((*b)[4]), "msgb-96") == 0);
    CHECK(strcmp(kslab_cache_name((*b)[KSLAB_KMALLOC_CLASSES - 1]), "msgb-8k") == 0);
    char info[1 << 16];
    FILE *f = fmemopen(info, sizeof info, "w");
    kslab_slabinfo(f);
    fclose(f);
    info[sizeof info - 1] = 0;
    CHECK(strstr(info, "msgb-64 ") != NULL && strstr(info, "msgb-8k ") != NULL);
    struct kslab_stats mine0, mine, km0, km;
    kslab_cache_stats((*b)[3], &mine0);
    kslab_cache_stats(kslab_kmalloc_cache(50), &km0);
    char *p = kmem_buckets_alloc(b, 50, GFP_KERNEL | __GFP_ZERO);
    CHECK(p != NULL && p[0] == 0 && p[49] == 0);
    kslab_cache_stats((*b)[3], &mine);
    kslab_cache_stats(kslab_kmalloc_cache(50), &km);
    CHECK_EQ(mine.active_objs, mine0.active_objs + 1);      /* from the private class */
    CHECK_EQ(km.active_objs, km0.active_objs);              /* not from kmalloc-64 */
    CHECK(ksize(p) >= 50 && ksize(p) <= 64);              /* (SLOB keeps a header) */
    memcpy(p, "bucket", 7);
    char *q = krealloc(p, 300, GFP_KERNEL);
    CHECK(q != NULL && strcmp(q, "bucket") == 0);
    kfree(q);
    CHECK(kmem_buckets_alloc(b, 0, GFP_KERNEL) == ZERO_SIZE_PTR);
    void *big = kmem_buckets_alloc(b, 100000, GFP_KERNEL);
    CHECK(big != NULL && ksize(big) >= 100000);
    kfree(big);
    void *t = kmem_buckets_alloc_track_caller(b, 8000, GFP_KERNEL);
    CHECK(t != NULL && ksize(t) >= 8000);
    kfree(t);
    void *v = kmem_buckets_valloc(NULL, 40, GFP_KERNEL);     /* NULL buckets: kmalloc */
    CHECK(v != NULL && ksize(v) >= 40);
    kfree(v);
    kmem_buckets *c = kmem_buckets_create("ctorb", 0, 0, 0, bucket_ctor);
    CHECK(c != NULL);
    void *cx = kmem_buckets_alloc(c, 20, GFP_KERNEL);
    CHECK(cx != NULL && bucket_ctor_calls > 0);
    kfree(cx);
    CHECK(kmem_buckets_create("", 0, 0, 0, NULL) == NULL);
}

static void test_cache_basics(void)
{
    struct kmem_cache *c = kmem_cache_create("test_obj", 200, 0, SLAB_NO_MERGE, NULL);
    CHECK(c != NULL);
    CHECK_EQ(kmem_cache_size(c), 200);
    CHECK(strcmp(kslab_cache_name(c), "test_obj") == 0);
    void *objs[1000];
    for (int i = 0; i < 1000; i++) {
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(objs[i] != NULL);
        memset(objs[i], i & 0xff, 200);
        CHECK_EQ(ksize(objs[i]), 200);
    }
    int bad = 0;
    for (int i = 0; i < 1000; i++)
        for (int j = 0; j < 200; j++)
            bad += ((unsigned char *)objs[i])[j] != (i & 0xff);
    CHECK_EQ(bad, 0);
    struct kslab_stats st = test_stats(c);
    CHECK_EQ(st.active_objs, 1000);
    CHECK(st.num_objs >= 1000);
    CHECK(st.alloc_slab >= 1000 / 20);
    for (int i = 0; i < 1000; i++)
        kmem_cache_free(c, objs[i]);
    st = test_stats(c);
    CHECK_EQ(st.active_objs, 0);
    CHECK_EQ(st.alloc_fastpath + st.alloc_slowpath, 1000);
    CHECK_EQ(st.free_fastpath + st.free_slowpath, 1000);
    CHECK(st.free_slab > 0);                 /* beyond min_partial, empties go back */
    if (is_slub() && !test_percpu())
        CHECK(st.free_sheaf > 0 && st.sheaf_flush > 0);   /* frees off the cpu slab hit the sheaf */
    if (test_percpu() && (is_slub() || strcmp(kslab_allocator_name(), "slab") == 0))
        CHECK(st.free_fastpath > 0 && st.sheaf_flush > 0);  /* full per-CPU sheaves moved on */
    kmem_cache_free(c, NULL);                /* no-op */
    /* random-order frees then allocations: served by the sheaf, LIFO */
    for (int i = 0; i < 1000; i++)
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, objs[3]);
    kmem_cache_free(c, objs[500]);
    uint64_t sheaf_allocs = test_stats(c).alloc_sheaf;
    void *a1 = kmem_cache_alloc(c, GFP_KERNEL), *a2 = kmem_cache_alloc(c, GFP_KERNEL);
    if (is_slub() && !test_percpu()) {   /* per-CPU: LIFO too, unless the thread migrates */
        CHECK(test_stats(c).alloc_sheaf == sheaf_allocs + 2);
        CHECK(a1 == objs[500] && a2 == objs[3]);    /* LIFO */
    }
    for (int i = 0; i < 1000; i++)
        if (i != 3 && i != 500)
            kmem_cache_free(c, objs[i]);
    kmem_cache_free(c, a1);
    kmem_cache_free(c, a2);
    CHECK_EQ(test_stats(c).active_objs, 0);
    /* shrink: everything empty goes back to the page layer */
    uint64_t before = kslab_pages_in_use();
    CHECK_EQ(kmem_cache_shrink(c), 0);
    st = test_stats(c);
    CHECK_EQ(st.num_slabs, 0);
    if (strcmp(kslab_allocator_name(), "slob") == 0)
        CHECK(kslab_pages_in_use() <= before);   /* SLOB released them at once */
    else
        CHECK(kslab_pages_in_use() < before);
    /* zalloc */
    unsigned char *z = kmem_cache_zalloc(c, GFP_KERNEL);
    int nz = 0;
    for (int j = 0; j < 200; j++)
        nz += z[j] != 0;
    CHECK_EQ(nz, 0);
    kmem_cache_free(c, z);
    kmem_cache_destroy(c);
    kmem_cache_destroy(NULL);
}

static void test_ctor_and_layout(void)
{
    ctor_calls = 0;
    struct kmem_cache *c = kmem_cache_create("ctor_obj", 40, 0, 0, ctor);
    void *p = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(ctor_calls > 0);                   /* the ctor runs when a slab is made... */
    unsigned char *b = p;
    int ok = 1;
    for (int i = 0; i < 40; i++)
        ok &= b[i] == 0xAB;
    CHECK(ok);
    kmem_cache_free(c, p);
    void *q = kmem_cache_alloc(c, GFP_KERNEL);
    b = q;
    ok = 1;
    for (int i = 0; i < 40; i++)                 /* ...and free objects keep their */
        ok &= b[i] == 0xAB;                      /* constructed state */
    CHECK(ok);
    kmem_cache_free(c, q);
    kmem_cache_destroy(c);

    /* alignment: explicit and hardware-cache */
    struct kmem_cache *a = kmem_cache_create("al128", 40, 128, 0, NULL);
    struct kmem_cache *h = kmem_cache_create("hw", 100, 0, SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
    struct kmem_cache *h2 = kmem_cache_create("hw_small", 20, 0, SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
    for (int i = 0; i < 100; i++) {
        void *x = kmem_cache_alloc(a, GFP_KERNEL), *y = kmem_cache_alloc(h, GFP_KERNEL);
        void *w = kmem_cache_alloc(h2, GFP_KERNEL);
        CHECK_EQ((uintptr_t)x % 128, 0);
        CHECK_EQ((uintptr_t)y % 64, 0);
        CHECK_EQ((uintptr_t)w % 32, 0);         /* 20 bytes: line shared by two */
        kmem_cache_free(a, x);
        kmem_cache_free(h, y);
        kmem_cache_free(h2, w);
    }
    kmem_cache_destroy(a);
    kmem_cache_destroy(h);
    kmem_cache_destroy(h2);
    struct foo *f;
    struct kmem_cache *fc = KMEM_CACHE(foo, SLAB_NO_MERGE);
    CHECK(fc && strcmp(kslab_cache_name(fc), "foo") == 0 && kmem_cache_size(fc) == sizeof(struct foo));
    f = kmem_cache_alloc(fc, GFP_KERNEL);
    CHECK_EQ((uintptr_t)f % _Alignof(struct foo), 0);
    kmem_cache_free(fc, f);
    kmem_cache_destroy(fc);
}

static void test_merging(void)
{
    struct kmem_cache *a = kmem_cache_create("merge_a", 124, 0, 0, NULL);
    struct kmem_cache *b = kmem_cache_create("merge_b", 121, 0, 0, NULL);
    CHECK(a == b);                                   /* fits: alias */
    CHECK(strcmp(kslab_cache_name(a), "kmalloc-128") == 0); /* merged into kmalloc-128 */
    struct kmem_cache *x = kmem_cache_create("merge_x", 200, 0, 0, NULL);
    struct kmem_cache *y = kmem_cache_create("merge_y", 196, 0, 0, NULL);
    CHECK(x == y && strcmp(kslab_cache_name(y), "merge_x") == 0);
    CHECK(x != kslab_kmalloc_cache(256));            /* 256 - 200 >= 8: own cache */
    kmem_cache_destroy(y);
    kmem_cache_destroy(x);
    struct kmem_cache *n = kmem_cache_create("merge_no", 120, 0, SLAB_NO_MERGE, NULL);
    CHECK(n != a);
    struct kmem_cache *ct = kmem_cache_create("merge_ctor", 120, 0, 0, ctor);
    CHECK(ct != a && ct != n);
    struct kmem_cache *far = kmem_cache_create("merge_far", 100, 0, 0, NULL);
    CHECK(far != a);                                 /* 128 - 104 >= 8: not merged */
    CHECK(kmem_cache_create("merge_120", 120, 0, 0, NULL) != a); /* 128 - 120 = 8: not merged */
    void *p = kmem_cache_alloc(a, GFP_KERNEL);
    kmem_cache_destroy(b);                           /* drops the alias only */
    kmem_cache_free(a, p);
    kmem_cache_destroy(a);
    kmem_cache_destroy(n);
    kmem_cache_destroy(ct);
    kmem_cache_destroy(far);
    void *q = kmalloc(128, GFP_KERNEL);             /* kmalloc-128 still fine */
    CHECK(q != NULL);
    kfree(q);
}

static void test_create_errors(void)
{
    CHECK(kmem_cache_create(NULL, 10, 0, 0, NULL) == NULL);
    CHECK(kmem_cache_create("zero", 0, 0, 0, NULL) == NULL);
    CHECK(kmem_cache_create("huge", 1u << 30, 0, 0, NULL) == NULL);
    CHECK(kmem_cache_create("badalign", 10, 24, 0, NULL) == NULL);
}

static void test_big_objects(void)
{
    struct kmem_cache *c = kmem_cache_create("big_obj", 100000, 0, 0, NULL);
    CHECK(c != NULL);
    void *p[5];
    for (int i = 0; i < 5; i++) {
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(p[i] != NULL);
        memset(p[i], i, 100000);
    }
    for (int i = 0; i < 5; i++) {
        CHECK(((unsigned char *)p[i])[99999] == i);
        kfree(p[i]);                                  /* kfree works on any cache */
    }
    kmem_cache_destroy(c);
}

/* free x, free x, of an RCU cache's object above a page */
static void rcu_big_double_free(void *arg)
{
    (void)arg;
    struct kmem_cache *c = kmem_cache_create("rcu_big2", 8192, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    void *keep = kmem_cache_alloc(c, GFP_KERNEL), *x = kmem_cache_alloc(c, GFP_KERNEL);
    (void)keep;
    kmem_cache_free(c, x);
    kmem_cache_free(c, x);
    (void)!kmem_cache_alloc(c, GFP_KERNEL);
    (void)!kmem_cache_alloc(c, GFP_KERNEL);
}

static void test_rcu_cache(void)
{
    struct kmem_cache *c = kmem_cache_create("rcu_obj", 64, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    CHECK(c != kslab_kmalloc_cache(64));          /* never merged */
    void *objs[2000];
    for (int i = 0; i < 2000; i++)
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 2000; i++) {
        memset(objs[i], 0x77, 64);
        kmem_cache_free(c, objs[i]);
    }
    kmem_cache_shrink(c);
    struct kslab_stats st = test_stats(c);
    CHECK_EQ(st.free_slab, 0);                     /* slabs stay while the cache lives */
    /* a stale pointer still reads memory of the same type: the object's
     * contents outside the free pointer are intact */
    CHECK(((unsigned char *)objs[0])[0] == 0x77);
    kmem_cache_destroy(c);

    /* Objects above a page (classic SLOB gives them pages of their own):
     * freed, they stay this cache's too -- no other cache, no kmalloc gets
     * their memory -- until it is destroyed. */
    enum { NB = 8, NO = 64 };
    struct kmem_cache *big = kmem_cache_create("rcu_big", 8192, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    struct kmem_cache *other = kmem_cache_create("rcu_big_other", 8192, 0, SLAB_NO_MERGE, NULL);
    void *bo[NB], *oo[NO], *ko[NO];
    for (int i = 0; i < NB; i++)
        bo[i] = kmem_cache_alloc(big, GFP_KERNEL);
    for (int i = 0; i < NB; i++) {
        memset(bo[i], 0x66, 8192);
        kmem_cache_free(big, bo[i]);
    }
    kmem_cache_shrink(big);
    int reused = 0;
    for (int i = 0; i < NO; i++) {
        oo[i] = kmem_cache_alloc(other, GFP_KERNEL);
        ko[i] = kmalloc(8192, GFP_KERNEL);
        for (int j = 0; j < NB; j++)
            reused += oo[i] == bo[j] || ko[i] == bo[j];
    }
    CHECK_EQ(reused, 0);
    CHECK(((unsigned char *)bo[NB - 1])[0] == 0x66);
    for (int i = 0; i < NO; i++) {
        kmem_cache_free(other, oo[i]);
        kfree(ko[i]);
    }
    void *again = kmem_cache_alloc(big, GFP_KERNEL);   /* its own memory back */
    CHECK(again != NULL);
    kmem_cache_free(big, again);
    kmem_cache_destroy(big);
    kmem_cache_destroy(other);
    CHECK_DEATH(rcu_big_double_free, NULL, "double free", "in cache rcu_big2");
}

static void test_slabinfo_and_descriptor(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct kmem_cache *c = kmem_cache_create("info_obj", 256, 0, SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE, NULL);
    void *objs[20];
    for (int i = 0; i < 20; i++)
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
    kslab_slabinfo(f);
    fclose(f);
    CHECK(strncmp(buf, "slabinfo - version: 2.1\n# name", 30) == 0);
    char *line = strstr(buf, "\ninfo_obj ");
    CHECK(line != NULL);
    unsigned long act = 0, num = 0, osz = 0, per = 0, pages = 0, l = 0, b = 0, sf = 0, as = 0, ns = 0, sa = 0;
    CHECK(line && sscanf(line + 1, "info_obj %lu %lu %lu %lu %lu : tunables %lu %lu %lu : slabdata %lu %lu %lu",
                         &act, &num, &osz, &per, &pages, &l, &b, &sf, &as, &ns, &sa) == 11);
    CHECK_EQ(act, 20);
    CHECK_EQ(osz, 256);
    if (strcmp(kslab_allocator_name(), "slab") == 0) {
        CHECK(l == 120 && b == 60);            /* SLAB's tunables for objects <= 256 */
    } else {
        CHECK(l == 0 && b == 0 && sf == 0);
    }
    CHECK_EQ(per * osz <= pages * 4096, 1);
    if (strcmp(kslab_allocator_name(), "slob") != 0)   /* SLOB's pages are shared */
        CHECK_EQ(num, per * ns);
    CHECK(strstr(buf, "\nkmalloc-32 ") && strstr(buf, "\nkmalloc-96 ") && strstr(buf, "\nkmalloc-8k "));
    /* kmalloc-32 in one 4 KiB page: SLUB 128 objects; SLAB with byte
     * indexes at least 124 (seed 000's figure) */
    line = strstr(buf, "\nkmalloc-32 ");
    CHECK(line && sscanf(line + 1, "kmalloc-32 %lu %lu %lu %lu %lu", &act, &num, &osz, &per, &pages) == 5);
    const char *idx = getenv("KSLAB_SLAB_INDEX");
    if (strcmp(kslab_allocator_name(), "slab") == 0 && idx && strcmp(idx, "int") == 0)
        CHECK_EQ(per, 113);                    /* 4-byte indexes: 4096 / (32 + 4) */
    else if (strcmp(kslab_allocator_name(), "slab") == 0)
        CHECK_EQ(per, 124);                    /* byte indexes: 4096 / (32 + 1) */
    else if (strcmp(kslab_allocator_name(), "slob") != 0)
        CHECK_EQ(per, 128);
    CHECK_EQ(pages, 1);
    free(buf);
    for (int i = 0; i < 20; i++)
        kmem_cache_free(c, objs[i]);
    kmem_cache_destroy(c);
    CHECK_EQ(kslab_slab_descriptor_size(), 48);
    const char *be = getenv("KSLAB_ALLOCATOR");
    CHECK(strcmp(kslab_allocator_name(), be && *be ? be : "slub") == 0);
}

static void test_destroy_with_objects(void *arg)
{
    struct kmem_cache *c = kmem_cache_create("leaky", 64, 0, SLAB_NO_MERGE, NULL);
    for (int i = 0; i < 3; i++)
        CHECK(kmem_cache_alloc(c, GFP_KERNEL) != NULL);
    kmem_cache_destroy(c);
    /* the cache is gone, its pages too: a new cache works */
    struct kmem_cache *d = kmem_cache_create("after", 64, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(d, GFP_KERNEL);
    kmem_cache_free(d, p);
    kmem_cache_destroy(d);
    fprintf(stderr, "survived\n");
}

static void panic_create(void *arg)
{
    kmem_cache_create("panicky", 0, 0, SLAB_PANIC, NULL);
}

/* SLUB's lazily carved slabs (slub.c): in the per-CPU mode a new slab of
 * several pages links only its first part, so its last page stays
 * untouched (not resident) while few of its objects are in use; and every
 * object of every slab is handed out once, carved or not, on every
 * back-end. */
static void test_lazy_carve(void)
{
    kslab_trim();                   /* free pages back to the OS: a new slab's are fresh */
    struct kmem_cache *c = kmem_cache_create("carve_obj", 1000, 0, SLAB_NO_MERGE, NULL);
    CHECK(c != NULL);
    char *first = kmem_cache_alloc(c, GFP_KERNEL);
    CHECK(first != NULL);
    struct kslab_stats st = test_stats(c);
    bool slub = strcmp(kslab_allocator_name(), "slub") == 0;
    if (slub && test_percpu() && st.num_slabs == 1) {
        size_t per = st.num_objs, bytes = 4096;
        while (bytes < per * 1000)
            bytes *= 2;
        CHECK(bytes >= 3 * 4096);   /* a slab of several pages (order 2 here) */
        uintptr_t base = (uintptr_t)first & ~(uintptr_t)(bytes - 1);
        unsigned char vec[64];
        CHECK_EQ(mincore((void *)base, bytes, vec), 0);
        CHECK((vec[0] & 1) == 1);                   /* the first part: linked */
        CHECK((vec[bytes / 4096 - 1] & 1) == 0);    /* the last page: not yet */
    }
    enum { N = 400 };
    static char *o[N];
    o[0] = first;
    for (int i = 1; i < N; i++) {
        o[i] = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(o[i] != NULL);
        memset(o[i], i & 0xff, 1000);
    }
    memset(first, 0, 1000);
    int dup = 0;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            dup += o[i] == o[j] || (o[i] < o[j] ? o[j] - o[i] : o[i] - o[j]) < 1000;
    CHECK_EQ(dup, 0);
    for (int i = 1; i < N; i++)        /* nothing handed out twice wrote over another */
        if (o[i][0] != (char)(i & 0xff) || o[i][999] != (char)(i & 0xff)) {
            CHECK(!"an object's contents changed");
            break;
        }
    CHECK_EQ(test_stats(c).active_objs, N);
    for (int i = 0; i < N; i++)
        kmem_cache_free(c, o[i]);
    kmem_cache_shrink(c);
    CHECK_EQ(test_stats(c).active_objs, 0);
    kmem_cache_destroy(c);
}

int main(void)
{
    test_kmalloc_classes();
    test_kmalloc_zero_and_null();
    test_kzalloc_kcalloc();
    test_large();
    test_krealloc();
    test_strdup_memdup_sensitive();
    test_kv_node_family();
    test_cleanup_helpers();
    test_cache_args();
    test_sheaves();
    test_buckets();
    test_misc_api();
    test_nolock();
    test_cache_basics();
    test_ctor_and_layout();
    test_merging();
    test_create_errors();
    test_big_objects();
    test_rcu_cache();
    test_slabinfo_and_descriptor();
    test_lazy_carve();
    {
        char buf[1024];
        int sig;
        int rc = run_child(test_destroy_with_objects, NULL, buf, sizeof buf, &sig);
        CHECK_EQ(rc, 0);
        CHECK(strstr(buf, "kmem_cache_destroy leaky: Slab cache still has objects (3)") != NULL);
        CHECK(strstr(buf, "survived") != NULL);
    }
    CHECK_DEATH(panic_create, NULL, "kmem_cache_create(panicky)");
    return check_done();
}
