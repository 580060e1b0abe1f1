/* test_malloc.c - the drop-in's API and glibc's conventions.  Run under
 * LD_PRELOAD=libkslab-malloc.so (CTest sets it); checks first that malloc
 * really is kslab's. */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <kslab.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static volatile size_t huge = SIZE_MAX / 2;     /* no compile-time size warnings */

static void *(*volatile vmalloc_)(size_t) = malloc;   /* keep calls real */

/* What the preloaded library's kslab_allocator_name or kslab_cpu_mode
 * (fn) says: "" where there is no such function. */
static const char *kslab_says(const char *fn)
{
    const char *(*f)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, fn);
    return f ? f() : "";
}

static void test_is_kslab(void)
{
    uint64_t (*pages)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT, "kslab_pages_in_use");
    CHECK(pages != NULL);
    if (!pages) {
        fprintf(stderr, "libkslab-malloc.so is not preloaded\n");
        exit(1);
    }
    void *p[1000];
    for (int i = 0; i < 1000; i++)
        p[i] = vmalloc_(100);
    CHECK(pages() > 0);
    void (*slabinfo)(FILE *) = (void (*)(FILE *))dlsym(RTLD_DEFAULT, "kslab_slabinfo");
    CHECK(slabinfo != NULL);
    for (int i = 0; i < 1000; i++)
        free(p[i]);
}

static void test_malloc_free(void)
{
    void *z1 = vmalloc_(0), *z2 = vmalloc_(0);
    CHECK(z1 && z2 && z1 != z2);                  /* glibc: unique pointers */
    free(z1);
    free(z2);
    free(NULL);
    for (size_t n = 1; n < 70000; n = n * 3 / 2 + 1) {
        unsigned char *p = vmalloc_(n);
        CHECK(p != NULL);
        CHECK_EQ((uintptr_t)p % 16, 0);
        CHECK(malloc_usable_size(p) >= n);
        memset(p, 0xa5, n);
        free(p);
    }
    CHECK_EQ(malloc_usable_size(NULL), 0);
    errno = 0;
    CHECK(vmalloc_(huge) == NULL && errno == ENOMEM);
}

/* glibc's __libc_ names are kslab's too: a block from either family goes
 * back through the other.  Left to glibc, the first free below would be
 * reported as a pointer kslab never gave out, and __libc_free would hand
 * kslab's block to glibc's free.  (Looked up as the dynamic linker binds a
 * program's call: the first definition in the global scope.) */
#define LIBC_FN(name, type) __typeof__(type) name = (__typeof__(type))dlsym(RTLD_DEFAULT, #name); \
    CHECK(name != NULL)
static void test_libc_names(void)
{
    LIBC_FN(__libc_malloc, void *(*)(size_t));
    LIBC_FN(__libc_free, void (*)(void *));
    LIBC_FN(__libc_calloc, void *(*)(size_t, size_t));
    LIBC_FN(__libc_realloc, void *(*)(void *, size_t));
    LIBC_FN(__libc_memalign, void *(*)(size_t, size_t));
    LIBC_FN(__libc_valloc, void *(*)(size_t));
    LIBC_FN(__libc_pvalloc, void *(*)(size_t));
    if (!__libc_malloc || !__libc_free || !__libc_calloc || !__libc_realloc || !__libc_memalign ||
        !__libc_valloc || !__libc_pvalloc)
        return;
    unsigned char *p = __libc_malloc(100);
    CHECK(p && malloc_usable_size(p) >= 100);
    memset(p, 1, 100);
    free(p);
    p = vmalloc_(200);
    CHECK(p != NULL);
    __libc_free(p);
    p = __libc_calloc(10, 30);
    CHECK(p && p[0] == 0 && p[299] == 0);
    p = __libc_realloc(p, 5000);
    CHECK(p && p[299] == 0);
    p = realloc(p, 70);
    CHECK(p && p[69] == 0);
    __libc_free(p);
    void *a[3] = { __libc_memalign(256, 100), __libc_valloc(10), __libc_pvalloc(5000) };
    CHECK(a[0] && (uintptr_t)a[0] % 256 == 0);
    CHECK(a[1] && (uintptr_t)a[1] % 4096 == 0);
    CHECK(a[2] && (uintptr_t)a[2] % 4096 == 0 && malloc_usable_size(a[2]) >= 8192);
    for (int i = 0; i < 3; i++)
        free(a[i]);
    __libc_free(NULL);
}

/* mallinfo2, mallinfo and malloc_stats in kslab's figures: left to glibc,
 * they would describe its own unused heap, and none of the growth below
 * would show. */
static void print_stats(void *arg)
{
    malloc_stats();
}
static void test_mallinfo(void)
{
    enum { N = 2000 };
    static void *p[N];
    struct mallinfo2 a = mallinfo2();
    CHECK_EQ(a.uordblks + a.fordblks, a.arena);
    for (int i = 0; i < N; i++)
        p[i] = vmalloc_(1000);
    void *large = vmalloc_(200000), *huge16 = vmalloc_(16 << 20);
    struct mallinfo2 b = mallinfo2();
    CHECK(b.uordblks >= a.uordblks + N * 1000 + 200000);
    CHECK_EQ(b.uordblks + b.fordblks, b.arena);
    CHECK(b.hblkhd >= a.hblkhd + (16 << 20));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo old = mallinfo();   /* glibc's old form: int fields */
#pragma GCC diagnostic pop
    CHECK(b.arena < INT_MAX && (size_t)old.uordblks >= (size_t)a.uordblks + N * 1000);
    for (int i = 0; i < N; i++)
        free(p[i]);
    free(large);
    free(huge16);
    struct mallinfo2 c = mallinfo2();
    CHECK(c.uordblks + N * 1000 + 200000 <= b.uordblks);
    CHECK(c.hblkhd + (16 << 20) <= b.hblkhd);
    CHECK_EQ(c.uordblks + c.fordblks, c.arena);
    char buf[1024];
    int sig;
    run_child(print_stats, NULL, buf, sizeof buf, &sig);
    unsigned long sys = 0, used = 0;
    const char *at = strstr(buf, "Arena 0:\nsystem bytes     =");
    CHECK(at && sscanf(at, "Arena 0:\nsystem bytes = %lu\nin use bytes = %lu", &sys, &used) == 2);
    CHECK(sys > 0 && used > 0 && used <= sys);
}

static void test_calloc_realloc(void)
{
    unsigned char *d = vmalloc_(1000);
    memset(d, 0xff, 1000);
    free(d);
    unsigned char *c = calloc(250, 4);
    int nz = 0;
    for (int i = 0; i < 1000; i++)
        nz += c[i] != 0;
    CHECK_EQ(nz, 0);
    free(c);
    errno = 0;
    CHECK(calloc(huge, 3) == NULL && errno == ENOMEM);
    char *r = realloc(NULL, 10);                   /* NULL: malloc */
    CHECK(r != NULL);
    strcpy(r, "kslab!");
    r = realloc(r, 5000);
    CHECK(r && strcmp(r, "kslab!") == 0);
    r = realloc(r, 100000);
    CHECK(r && strcmp(r, "kslab!") == 0);
    r = realloc(r, 7);                             /* shrink keeps the prefix */
    CHECK(r && memcmp(r, "kslab!", 7) == 0);
    CHECK(realloc(r, 0) == NULL);                  /* glibc: frees, returns NULL */
    errno = 0;
    void *keep = vmalloc_(8);
    CHECK(realloc(keep, huge) == NULL && errno == ENOMEM);
    free(keep);                                    /* still valid */
    errno = 0;
    CHECK(reallocarray(NULL, huge, 4) == NULL && errno == ENOMEM);
    int *a = reallocarray(NULL, 100, sizeof(int));
    CHECK(a != NULL);
    free(a);
}

static void test_aligned(void)
{
    void *p = (void *)0x1234;
    CHECK_EQ(posix_memalign(&p, 24, 100), EINVAL);
    CHECK(p == (void *)0x1234);                    /* untouched */
    CHECK_EQ(posix_memalign(&p, 4, 100), EINVAL);  /* not a multiple of sizeof(void *) */
    for (size_t al = 8; al <= (1u << 22); al <<= 1)
        for (size_t n = 1; n <= 20000; n = n * 7 + 3) {
            void *q = NULL;
            CHECK_EQ(posix_memalign(&q, al, n), 0);
            CHECK(q && (uintptr_t)q % al == 0 && malloc_usable_size(q) >= n);
            memset(q, 1, n);
            free(q);
        }
    static volatile size_t align24 = 24, align48 = 48;   /* no compile-time alignment warnings */
    errno = 0;
    CHECK(aligned_alloc(align24, 48) == NULL && errno == EINVAL);
    void *q = aligned_alloc(64, 100);
    CHECK(q && (uintptr_t)q % 64 == 0);
    free(q);
    q = memalign(align48, 100);                    /* rounded up to 64 */
    CHECK(q && (uintptr_t)q % 64 == 0);
    free(q);
    q = valloc(10);
    CHECK(q && (uintptr_t)q % 4096 == 0);
    free(q);
    q = pvalloc(5000);
    CHECK(q && (uintptr_t)q % 4096 == 0 && malloc_usable_size(q) >= 8192);
    free(q);
    /* C23's free_sized / free_aligned_sized (glibc 2.36 has neither) */
    void (*fs)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    void (*fas)(void *, size_t, size_t) =
        (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    CHECK(fs && fas);
    if (fs && fas) {
        q = vmalloc_(300);
        fs(q, 300);
        q = aligned_alloc(256, 512);
        fas(q, 256, 512);
    }
}

/* allocation in TLS destructors, at thread exit, and in atexit handlers */
static pthread_key_t key;
static void tls_dtor(void *v)
{
    free(v);
    void *again = vmalloc_(64);                    /* allocate inside a TLS destructor */
    memset(again, 1, 64);
    free(again);
}
static __thread char *tls_buf;
static void *thread_fn(void *arg)
{
    pthread_setspecific(key, vmalloc_(128));
    tls_buf = vmalloc_(4096);
    for (int i = 0; i < 1000; i++)
        free(vmalloc_(i * 7 + 1));
    free(tls_buf);
    return vmalloc_(32);                           /* freed by the main thread */
}
static void at_exit(void)
{
    char *p = vmalloc_(1000);
    memset(p, 2, 1000);
    free(p);
}

static void test_threads_fork_dlopen(void)
{
    pthread_key_create(&key, tls_dtor);
    atexit(at_exit);
    for (int round = 0; round < 20; round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, thread_fn, NULL);
        for (int i = 0; i < 4; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            free(ret);
        }
    }
    pid_t pid = fork();
    if (pid == 0) {
        void *v[1000];
        for (int i = 0; i < 1000; i++)
            v[i] = vmalloc_(i + 1);
        for (int i = 0; i < 1000; i++)
            free(v[i]);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    void *h = dlopen("libz.so.1", RTLD_NOW);
    if (!h)
        h = dlopen("libm.so.6", RTLD_NOW);
    CHECK(h != NULL);
    if (h)
        dlclose(h);
}

/* Issue 8, cases 1 and 2: aligned requests of size 0 are unique blocks (they
 * once returned another live allocation's address), and a size that wraps
 * when aligned fails on every back-end. */
static void test_aligned_edges(void)
{
    static const size_t aligns[] = { 16, 4096, 16384, 32768, 1u << 20, 1u << 22 };
    for (size_t k = 0; k < sizeof aligns / sizeof *aligns; k++) {
        size_t big = 100000;
        unsigned char *live = vmalloc_(big);
        memset(live, 0xa5, big);
        void *p = NULL, *q;
        CHECK_EQ(posix_memalign(&p, aligns[k], 0), 0);
        q = aligned_alloc(aligns[k], 0);
        CHECK(p && q && p != q && (uintptr_t)p % aligns[k] == 0 && (uintptr_t)q % aligns[k] == 0);
        /* not inside the live block, and freeing them leaves it alone */
        CHECK(!((unsigned char *)p >= live && (unsigned char *)p < live + big));
        CHECK(!((unsigned char *)q >= live && (unsigned char *)q < live + big));
        free(p);
        free(q);
        size_t bad = 0;
        for (size_t i = 0; i < big; i++)
            bad += live[i] != 0xa5;
        CHECK_EQ(bad, 0);
        free(live);
        void *r = (void *)0x1;
        CHECK_EQ(posix_memalign(&r, aligns[k], SIZE_MAX), ENOMEM);
        CHECK_EQ(posix_memalign(&r, aligns[k], SIZE_MAX - aligns[k] + 2), ENOMEM);
        CHECK(r == (void *)0x1);
        errno = 0;
        volatile size_t huge = SIZE_MAX;
        CHECK(aligned_alloc(aligns[k], huge) == NULL && errno == ENOMEM);
    }
}

/* kslab's slabinfo into buf (through dlsym: the library may be the
 * preloaded one); false when there is none to read. */
static bool slabinfo_text(char *buf, size_t size)
{
    void (*slabinfo)(FILE *) = (void (*)(FILE *))dlsym(RTLD_DEFAULT, "kslab_slabinfo");
    FILE *f = slabinfo ? fmemopen(buf, size, "w") : NULL;
    if (!f)
        return false;
    slabinfo(f);
    fclose(f);
    return true;
}

/* malloc's classes are set up on first use (kslab_malloc_class_setup): a
 * class no one has asked for is not in slabinfo, and its first malloc sets
 * it up.  A malloc while this thread holds kslab's cache lock (here: a
 * slabinfo writer whose stream mallocs, as any stdio stream may) cannot
 * set a class up; it gets a block from a kmalloc class or the page
 * allocator, which free and malloc_usable_size take as any other, and the
 * class is set up by the next malloc.  With the lock taken instead of tried,
 * the second part deadlocks. */
static size_t lazy_in_lock_usable;
static int lazy_in_lock_calls;
static ssize_t lazy_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    /* a cache's row: slabinfo holds the cache lock while it writes them */
    if (!lazy_in_lock_calls && memmem(buf, n, ": tunables", 10) && !memmem(buf, n, "<limit>", 7)) {
        lazy_in_lock_calls++;
        unsigned char *p = vmalloc_(30000);         /* malloc-30720, not set up */
        CHECK(p != NULL);
        if (p) {
            memset(p, 0x5a, 30000);
            lazy_in_lock_usable = malloc_usable_size(p);
            free(p);
        }
    }
    return (ssize_t)n;
}

/* Threads that make a class's first mallocs at once: one sets it up; the
 * others find it set up or, finding the cache lock busy, take that block
 * from the page allocator (rare here: the setup is short; the slabinfo
 * writer below makes the busy case every time).  Every block is whole and
 * frees. */
enum { LAZY_THREADS = 8, LAZY_ROUNDS = 50 };
static pthread_barrier_t lazy_barrier;
static atomic_long lazy_bad;
static void *lazy_first_use(void *arg)
{
    size_t n = 100000 + (size_t)(uintptr_t)arg;     /* malloc-106496 */
    pthread_barrier_wait(&lazy_barrier);
    unsigned char *q[LAZY_ROUNDS];
    for (int r = 0; r < LAZY_ROUNDS; r++) {
        q[r] = vmalloc_(n);
        if (!q[r] || malloc_usable_size(q[r]) < n) {
            atomic_fetch_add(&lazy_bad, 1);
            q[r] = NULL;
            continue;
        }
        memset(q[r], r, n);
    }
    for (int r = 0; r < LAZY_ROUNDS; r++) {
        if (!q[r])
            continue;
        if (q[r][0] != r || q[r][n - 1] != r)
            atomic_fetch_add(&lazy_bad, 1);
        free(q[r]);
    }
    return NULL;
}

static void test_lazy_classes(void)
{
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (be && strcmp(be, "slob") == 0)
        return;                             /* classic SLOB has no classes */
    static char buf[1 << 16];
    CHECK(slabinfo_text(buf, sizeof buf));
    CHECK(strstr(buf, "\nmalloc-112 ") != NULL);       /* test_is_kslab's */
    CHECK(strstr(buf, "\nmalloc-53248 ") == NULL);
    CHECK(strstr(buf, "\nmalloc-30720 ") == NULL);
    void *p = vmalloc_(50000);
    CHECK(p != NULL);
    CHECK_EQ(malloc_usable_size(p), 53248);
    CHECK(slabinfo_text(buf, sizeof buf));
    CHECK(strstr(buf, "\nmalloc-53248 ") != NULL);
    free(p);

    void (*slabinfo)(FILE *) = (void (*)(FILE *))dlsym(RTLD_DEFAULT, "kslab_slabinfo");
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = lazy_write });
    CHECK(slabinfo != NULL && f != NULL);
    if (!slabinfo || !f)
        return;
    setvbuf(f, NULL, _IONBF, 0);            /* every row reaches lazy_write as printed */
    slabinfo(f);
    fclose(f);
    CHECK_EQ(lazy_in_lock_calls, 1);
    CHECK(lazy_in_lock_usable >= 30000 && lazy_in_lock_usable != 30720);
    CHECK(slabinfo_text(buf, sizeof buf));
    CHECK(strstr(buf, "\nmalloc-30720 ") == NULL);
    p = vmalloc_(30000);
    CHECK_EQ(malloc_usable_size(p), 30720);
    free(p);
    CHECK(slabinfo_text(buf, sizeof buf));
    CHECK(strstr(buf, "\nmalloc-30720 ") != NULL);

    CHECK(strstr(buf, "\nmalloc-106496 ") == NULL);
    pthread_t th[LAZY_THREADS];
    pthread_barrier_init(&lazy_barrier, NULL, LAZY_THREADS);
    for (int i = 0; i < LAZY_THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, lazy_first_use, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < LAZY_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&lazy_barrier);
    CHECK_EQ(atomic_load(&lazy_bad), 0);
    /* the class is set up (and, asked for one size 400 times, has split:
     * an exact cache of that size serves it, as test_exact_classes shows) */
    p = vmalloc_(100000);
    CHECK(malloc_usable_size(p) >= 100000 && malloc_usable_size(p) <= 106496);
    free(p);
    CHECK(slabinfo_text(buf, sizeof buf));
    CHECK(strstr(buf, "\nmalloc-106496 ") != NULL);
}

/* A class above 1 KiB asked mostly for one size gets an exact cache for it
 * (sqlite3's 1032-byte pages: malloc-1040, not malloc-1152); a class asked
 * for many sizes does not. */
static void test_exact_classes(void)
{
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (be && strcmp(be, "slob") == 0)
        return;                             /* classic SLOB has no classes */
    enum { N = 3000 };
    static void *p[N];
    for (int i = 0; i < N; i++)
        CHECK((p[i] = vmalloc_(1032)) != NULL);
    CHECK_EQ(malloc_usable_size(p[N - 1]), 1040);
    CHECK_EQ(malloc_usable_size(p[0]), 1152);        /* before the class had decided */
    for (int i = 0; i < N; i++)
        free(p[i]);
    /* malloc's table has one entry per 128 bytes: 1025 .. 1152 is the
     * entry the split size falls inside (its limit decides there), the
     * next one is the next class's */
    for (size_t n = 1025; n <= 1280; n++) {
        void *q = vmalloc_(n);
        size_t want = n <= 1040 ? 1040 : n <= 1152 ? 1152 : 1280;
        if (malloc_usable_size(q) != want) {
            fprintf(stderr, "malloc(%zu) after the split: usable %zu, not %zu\n", n,
                    malloc_usable_size(q), want);
            CHECK(0);
        }
        free(q);
    }
    /* sizes spread over malloc-2560's range (2305 .. 2560): no exact cache */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = 2305 + (size_t)(x % 256);
        CHECK((p[i] = vmalloc_(n)) != NULL);
        if (malloc_usable_size(p[i]) != 2560) {
            fprintf(stderr, "malloc(%zu): usable %zu, not malloc-2560\n", n, malloc_usable_size(p[i]));
            CHECK(0);
            break;
        }
    }
    for (int i = 0; i < N; i++)
        free(p[i]);
    char buf[1 << 16];
    if (slabinfo_text(buf, sizeof buf))
        CHECK(strstr(buf, "\nmalloc-1040 ") != NULL);
}

/* malloc's own classes (eight per doubling), page classes above 128 KiB (four),
 * huge blocks above 4 MiB: usable sizes waste at most a quarter, the classes
 * show in slabinfo, realloc of a huge block keeps its contents (mremap),
 * calloc reads zero even on a reused block, and malloc_trim gives back. */
static void test_classes_large(void)
{
    /* classic SLOB keeps its own block sizes: exact below a page, whole
     * power-of-two pages above (the kernel's SLOB); the classes are the
     * slab back-ends' */
    const char *be = getenv("KSLAB_ALLOCATOR");
    bool classes = !be || strcmp(be, "slob") != 0;
    for (size_t n = 17; n < (12u << 20); n = n * 9 / 8 + 1) {
        unsigned char *p = vmalloc_(n);
        CHECK(p != NULL);
        size_t u = malloc_usable_size(p);
        CHECK(u >= n);
        CHECK((u - n) * 4 <= u + 4096 * 4);          /* a quarter, or a page for tiny */
        if (classes && n > 128 && n <= 131072)
            CHECK((u - n) * 9 < u);                   /* the malloc classes: under a ninth */
        p[0] = 1;
        p[n - 1] = 2;
        free(p);
    }
    /* Every size up to 128 KiB lands in the smallest class that holds it:
     * 16 .. 128 by 16, then eight per doubling (malloc reads two tables of
     * its own, below and above 1 KiB; this is their check against the
     * formula).  Above 4 KiB a class holds few objects a slab, so even one
     * block of each size refills it often enough to split it (below): there
     * the block may come from the split's smaller exact cache, never from a
     * larger class. */
    for (size_t n = 1; classes && n <= 131072; n++) {
        size_t lg = 0;
        while (((size_t)2 << lg) <= n - 1)
            lg++;                                     /* floor(log2(n - 1)) */
        size_t step = n <= 128 ? 16 : (size_t)1 << (lg - 3);
        size_t want = (n + step - 1) / step * step;
        void *p = vmalloc_(n);
        CHECK(p != NULL);
        size_t u = malloc_usable_size(p);
        if (n <= 4096 ? u != want : u < n || u > want) {
            fprintf(stderr, "malloc(%zu): usable %zu, class %zu\n", n, malloc_usable_size(p), want);
            CHECK(0);
        }
        free(p);
    }
    CHECK_EQ(malloc_usable_size(vmalloc_(80)), 80);   /* malloc-80, not kmalloc-96 (leaked: 80 B) */
    if (classes)
        CHECK_EQ(malloc_usable_size(vmalloc_(1032)), 1152);   /* sqlite3's page (leaked) */
    char buf[1 << 16];
    if (slabinfo_text(buf, sizeof buf)) {
        CHECK(strstr(buf, "malloc-80 ") != NULL);
        CHECK(strstr(buf, "malloc-320 ") != NULL);
    }
    /* realloc: growth from slab to large to huge and back keeps contents */
    size_t sz = 100;
    unsigned char *r = vmalloc_(sz);
    for (size_t i = 0; i < sz; i++)
        r[i] = (unsigned char)(i * 7);
    long bad = 0;
    for (size_t next = 300; next < (40u << 20); next = next * 3) {
        unsigned char *was = r;
        r = realloc(r, next);
        CHECK(r != NULL);
        long b0 = bad;
        for (size_t i = 0; i < sz; i++)
            bad += r[i] != (unsigned char)(i * 7);
        if (bad != b0)
            fprintf(stderr, "realloc(%p, %zu) from %zu: %p, %ld bytes differ\n", (void *)was,
                    next, sz, (void *)r, bad - b0);
        for (size_t i = sz; i < next; i++)
            r[i] = (unsigned char)(i * 7);
        sz = next;
    }
    r = realloc(r, 5u << 20);                          /* huge shrinks in place */
    for (size_t i = 0; i < (5u << 20); i += 4093)
        bad += r[i] != (unsigned char)(i * 7);
    CHECK_EQ(bad, 0);
    free(r);
    /* calloc after a dirty free of the same class: zero */
    for (size_t n = 20000; n < (20u << 20); n *= 4) {
        unsigned char *d = vmalloc_(n);
        memset(d, 0xee, n);
        free(d);
        unsigned char *c = calloc(1, n);
        long nz = 0;
        for (size_t i = 0; i < n; i += 64)
            nz += c[i] != 0;
        CHECK_EQ(nz, 0);
        free(c);
    }
    /* huge and large blocks freed, then trimmed: something given back */
    void *h = vmalloc_(9u << 20);
    memset(h, 1, 9u << 20);
    free(h);
    CHECK_EQ(malloc_trim(0), 1);
}

/* realloc's own mappings (issue 9): a block grown past 1 MiB moves to a
 * mapping of its own, whose later growths are mremaps; at most 64 such are
 * live (the mapping count stays bounded), the rest grow by copying in the
 * arenas, and every block keeps its contents either way. */
static void test_realloc_maps(void)
{
    void (*mem)(struct kslab_memory *) =
        (void (*)(struct kslab_memory *))dlsym(RTLD_DEFAULT, "kslab_memory");
    CHECK(mem != NULL);
    if (!mem)
        return;
    enum { N = 80, MAPS = 64 };
    static unsigned char *b[N];
    size_t sizes[] = { 64 << 10, 600 << 10, 1500 << 10, 3 << 20 };
    struct kslab_memory m0, m1;
    mem(&m0);
    long bad = 0;
    for (unsigned k = 0; k < 4; k++) {
        size_t was = k ? sizes[k - 1] : 0;
        for (unsigned i = 0; i < N; i++) {
            b[i] = k ? realloc(b[i], sizes[k]) : malloc(sizes[k]);
            CHECK(b[i] != NULL);
            for (size_t j = 0; j < was; j += 4093)
                bad += b[i][j] != (unsigned char)(i + j);
            for (size_t j = was - was % 4093; j < sizes[k]; j += 4093)
                b[i][j] = (unsigned char)(i + j);
        }
        mem(&m1);
        size_t mapped = 0;
        for (unsigned i = 0; i < MAPS; i++)
            mapped += malloc_usable_size(b[i]);
        if (k < 2)
            CHECK_EQ(m1.huge_bytes, m0.huge_bytes);        /* large blocks, in the arenas */
        else
            CHECK_EQ(m1.huge_bytes - m0.huge_bytes, mapped);   /* the first 64 only */
    }
    CHECK_EQ(bad, 0);
    for (unsigned i = 0; i < N; i++)
        free(b[i]);
    mem(&m1);
    CHECK_EQ(m1.huge_bytes, m0.huge_bytes);
    /* the bound counts live mappings: freed, they make room again */
    unsigned char *r = realloc(malloc(600 << 10), 1500 << 10);
    mem(&m1);
    CHECK_EQ(m1.huge_bytes - m0.huge_bytes, malloc_usable_size(r));
    free(r);
}

/* Issue 8, case 3: interior and freed pointers reach kslab's report. */
static void usable_interior(void *a) { char *p = vmalloc_(100); (void)malloc_usable_size(p + 8); }
static void realloc_interior(void *a)
{
    char *p = vmalloc_(100), *volatile q = p + 8;
    (void)!realloc(q, 300);
}

/* free of a pointer inside an object of a malloc class whose slabs are
 * 64 KiB (the zone's granule map finds its cache): reported, never pushed */
static void free_interior(void *a)
{
    for (int i = 0; i < 64; i++)        /* past slow start: the per-CPU push */
        free(vmalloc_(100));
    char *p = vmalloc_(100), *volatile q = p + 16;
    free(q);
}
static void bad_free(void *a) { int x = 0; void *volatile px = &x; free(px); }
static void double_free(void *a) { void *k = vmalloc_(48), *p = vmalloc_(48); (void)k; free(p); free(p); }
/* A write into a freed malloc block, then mallocs of its class: stopped
 * before the block is handed out again, in malloc's class (the per-CPU
 * pop's claim at offset 0 -- percpu.h, rules 8 and 9 -- or SLUB's and
 * slob-seg's hardened freelist). */
static void malloc_write_after_free(void *a)
{
    for (int i = 0; i < 300; i++)       /* past slow start: the class's sheaves */
        free(vmalloc_(40));
    uint64_t *volatile p = vmalloc_(40);
    free(p);
    p[0] = 0x4141414141414141ull;
    for (int i = 0; i < 2; i++)
        (void)vmalloc_(40);
}
/* kfree's "up to ZERO_SIZE_PTR is a no-op" is the kernel API's; malloc
 * never returns those, so free and realloc report them (issue 12) */
static void free_small(void *a) { void *volatile p = (void *)1; free(p); }
static void free_sixteen(void *a) { void *volatile p = (void *)16; free(p); }
/* operator delete (its Itanium name, from C) and free_sized take free's path */
static void delete_small(void *a)
{
    void (*del)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
    void *volatile p = (void *)8;
    if (del)
        del(p);
    else
        free(p);
}
static void realloc_small(void *a) { void *volatile p = (void *)8; (void)!realloc(p, 100); }

/* Run with KSLAB_DEBUG=ZU,malloc-48,malloc-1536 (CTest's
 * test_malloc_debug.*): malloc's own classes get slub_debug through the
 * drop-in.  malloc(40) is in malloc-48: byte 40 is red zone (the request
 * size is kept), caught and repaired when the block is freed; the tracks'
 * backtraces run inside malloc without recursing.  malloc-1536, debugged,
 * has no sheaves, so every free reaches its slab: a malloc class above
 * 1 KiB keeps no empty slab on SLUB and slob-seg (min_partial 0; the
 * kmalloc caches keep the kernel's 5 and more), so when all its blocks are
 * freed it holds none. */
static void free_it(void *p) { free(p); }

static int debug_case(void)
{
    long (*errors)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "kslab_debug_errors");
    long (*validate)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "kslab_validate_all");
    CHECK(errors && validate);
    if (!errors || !validate)
        return check_done();
    volatile char *p = vmalloc_(40);
    memset((char *)p, 1, 40);
    CHECK_EQ(errors(), 0);
    CHECK_EQ(validate(), 0);
    p[40] = 7;                          /* one past the request */
    /* the report, from a child that frees p first: its allocation track
     * starts in this program, not in a frame of the library (every one of
     * those is skipped) */
    char rep[8192];
    int sig;
    run_child(free_it, (void *)p, rep, sizeof rep, &sig);
    const char *alloc = strstr(rep, "Allocated in ");
    const char *frame = alloc ? strchr(alloc, '\n') : NULL;   /* the first frame's line */
    const char *feol = frame ? strchr(frame + 1, '\n') : NULL;
    CHECK(feol && strstr(rep, "kmalloc Redzone overwritten"));
    if (feol && memmem(frame, (size_t)(feol - frame), "libkslab", 8)) {
        fprintf(stderr, "the track starts inside kslab:\n%s\n", rep);
        CHECK(0);
    }
    free((void *)p);
    CHECK_EQ(errors(), 1);
    CHECK_EQ(validate(), 0);            /* repaired at the free */
    char *q = vmalloc_(40);
    CHECK(malloc_usable_size(q) >= 40);
    q[44] = 1;                          /* usable now: no red zone after malloc_usable_size */
    free(q);
    CHECK_EQ(errors(), 1);
    enum { N = 300 };
    void *b[N];
    for (int i = 0; i < N; i++)
        CHECK((b[i] = vmalloc_(1500)) != NULL);
    for (int i = 0; i < N; i++)
        free(b[i]);
    char buf[1 << 16];
    const char *row = slabinfo_text(buf, sizeof buf) ? strstr(buf, "\nmalloc-1536 ") : NULL;
    unsigned long slabs = ~0ul;
    CHECK(row && sscanf(row, " %*s %*u %*u %*u %*u %*u : tunables %*u %*u %*u : slabdata %*u %lu",
                        &slabs) == 1);
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (be && strcmp(be, "slab") == 0)
        return check_done();            /* SLAB keeps its node's free_limit, as the kernel's */
    if (slabs != 0)
        fprintf(stderr, "malloc-1536 keeps %lu empty slabs:\n%.200s\n", slabs, row ? row : "");
    CHECK_EQ(slabs, 0);
    return check_done();
}

/* malloc's classes up to 1 KiB have 64 KiB slabs where SLUB carves them
 * lazily (the per-CPU mode), the kernel's geometry elsewhere (slob-seg,
 * SLAB, the per-thread mode): slabinfo's <pagesperslab> of malloc-208. */
static void test_small_class_slabs(void)
{
    const char *allocator = kslab_says("kslab_allocator_name");
    const char *mode = kslab_says("kslab_cpu_mode");
    void (*slabinfo)(FILE *) = (void (*)(FILE *))dlsym(RTLD_DEFAULT, "kslab_slabinfo");
    CHECK(*allocator && *mode && slabinfo);
    if (!*allocator || !*mode || !slabinfo || strcmp(allocator, "slob") == 0)
        return;                         /* SLOB has no classes of its own */
    void *p = vmalloc_(200);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    slabinfo(f);
    fclose(f);
    const char *row = strstr(text, "\nmalloc-208 ");
    unsigned objs = 0, pages = 0;
    CHECK(row && sscanf(row, " malloc-208 %*u %*u %*u %u %u", &objs, &pages) == 2);
    bool carved = strcmp(allocator, "slub") == 0 && strcmp(mode, "percpu") == 0;
    CHECK_EQ(pages, carved ? 16 : 1);
    CHECK_EQ(objs, carved ? 315 : 19);
    free(text);
    free(p);
}

/* Page merges (slab_common.c; the default, KSLAB_RANDOM_PAGES=8): once
 * malloc-64 holds 16 slabs, its new objects come from 8 pages at a time,
 * each page's in ascending order, the next from a page picked at random:
 * consecutive objects share a page about one time in 8, and no page's
 * objects go out backwards.  With KSLAB_RANDOM_PAGES=0 (windows of 7
 * shuffled objects; test_malloc.slub.windows) it is the other way round:
 * consecutive objects almost always share a page, and steps back within
 * one are common.  SLUB's carved slabs only (64 KiB; the others' slabs are
 * a page). */
static int cmp_page_seq(const void *a, const void *b)
{
    const uintptr_t *x = a, *y = b;    /* {page, seq, address} */
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static void test_page_merge(void)
{
    const char *pages = getenv("KSLAB_RANDOM_PAGES"), *hard = getenv("KSLAB_HARDENED");
    if (strcmp(kslab_says("kslab_allocator_name"), "slub") != 0 ||
        strcmp(kslab_says("kslab_cpu_mode"), "percpu") != 0 ||
        (hard && strcmp(hard, "0") == 0) || getenv("KSLAB_RANDOM_WINDOW") ||
        getenv("KSLAB_RANDOM_SMALL_SPAN"))
        return;
    bool merge = !pages || strcmp(pages, "8") == 0;
    if (!merge && strcmp(pages, "0") != 0)
        return;
    cpu_set_t old;
    CHECK_EQ(sched_getaffinity(0, sizeof old, &old), 0);
    pin_cpu(sched_getcpu());                    /* one CPU's slabs */
    enum { FILL = 20 * 1024, N = 4096 };
    static void *fill[FILL], *p[N];
    static uintptr_t rec[N][3];
    for (int i = 0; i < FILL; i++)
        fill[i] = vmalloc_(64);                  /* past the 16 slabs */
    for (int i = 0; i < N; i++)
        p[i] = vmalloc_(64);
    int same = 0, back = 0, within = 0;
    for (int i = 0; i < N; i++) {
        rec[i][0] = (uintptr_t)p[i] >> 12;
        rec[i][1] = (uintptr_t)i;
        rec[i][2] = (uintptr_t)p[i];
        same += i && rec[i][0] == rec[i - 1][0];
    }
    qsort(rec, N, sizeof rec[0], cmp_page_seq);
    for (int i = 1; i < N; i++)
        if (rec[i][0] == rec[i - 1][0]) {
            within++;
            back += rec[i][2] < rec[i - 1][2];
        }
    fprintf(stderr, "page merge %s: %d of %d consecutive objects share a page, %d of %d steps "
            "within a page go back\n", merge ? "on" : "off", same, N - 1, back, within);
    if (merge) {
        CHECK(same < N / 4);                     /* expected about N / 8 */
        CHECK(back < within / 50);               /* expected none */
    } else {
        CHECK(same > N * 3 / 4);
        CHECK(back > within / 10);               /* expected about 3 in 7 */
    }
    for (int i = 0; i < N; i++)
        free(p[i]);
    for (int i = 0; i < FILL; i++)
        free(fill[i]);
    sched_setaffinity(0, sizeof old, &old);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "debug") == 0)
        return debug_case();
    test_is_kslab();
    test_lazy_classes();
    test_malloc_free();
    test_calloc_realloc();
    test_libc_names();
    test_mallinfo();
    test_realloc_maps();
    test_aligned();
    test_aligned_edges();
    test_classes_large();
    test_exact_classes();
    test_small_class_slabs();
    test_page_merge();
    CHECK_DEATH(usable_interior, NULL, "ksize(", "inside object");
    CHECK_DEATH(realloc_interior, NULL, "ksize(", "inside object");
    test_threads_fork_dlopen();
    CHECK_DEATH(free_interior, NULL, "(malloc-112)", "is inside object", "not at its start");
    CHECK_DEATH(bad_free, NULL, "kfree((any)): pointer", "was not allocated by kslab");
    CHECK_DEATH(double_free, NULL, "double free of object");
    /* (SLAB's per-thread array caches, as classic SLOB, keep nothing in a
     * free block to check: the per-CPU mode's tag covers SLAB) */
    const char *be = getenv("KSLAB_ALLOCATOR"), *pc = getenv("KSLAB_PERCPU");
    bool percpu = !pc || strcmp(pc, "0") != 0;
#ifdef KSLAB_NO_FREE_TAG
    bool tag = false;                   /* the measurement build: no claim */
#else
    bool tag = true;
#endif
    if ((!be || strcmp(be, "slob") != 0) && (percpu ? tag : !be || strcmp(be, "slab") != 0))
        CHECK_DEATH(malloc_write_after_free, NULL, "in cache malloc-48");
    /* SLUB's and SLAB's per-CPU sheaves: the claim (the drop-in's xor
     * form) reports the word as it found it (slob-seg's freelist reports
     * first) */
    if ((!be || strcmp(be, "slub") == 0 || strcmp(be, "slab") == 0) && tag &&
        strcmp(kslab_says("kslab_cpu_mode"), "percpu") == 0)
        CHECK_DEATH(malloc_write_after_free, NULL, "in cache malloc-48",
                    "is 0x4141414141414141, not its free tag");
    CHECK_DEATH(free_small, NULL, "free((any)): pointer 0x1 was not allocated by kslab");
    CHECK_DEATH(free_sixteen, NULL, "free((any)): pointer 0x10 was not allocated by kslab");
    CHECK_DEATH(delete_small, NULL, "free((any)): pointer 0x8 was not allocated by kslab");
    CHECK_DEATH(realloc_small, NULL, "realloc((any)): pointer 0x8 was not allocated by kslab");
    free(NULL);                         /* still nothing */
    return check_done();
}
