/* test_thread.c - thread exit gives a thread's slabs back to the caches;
 * fork() in a multi-threaded program leaves the child a working allocator. */
#include "check.h"
#include "helpers.h"
#include <kslab.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

static struct kmem_cache *cache;
static void *handoff[5000];

/* Short-lived threads in a row: the sanitized builds run fewer (TSan took
 * 12 s for the 200); a leak of two pages a thread still exceeds the bound. */
#ifdef TEST_SANITIZED
#define EXIT_ROUNDS 50
#else
#define EXIT_ROUNDS 200
#endif

static void *exiting_thread(void *arg)
{
    (void)arg;
    void *mine[5000];
    for (int i = 0; i < 5000; i++) {
        mine[i] = kmem_cache_alloc(cache, GFP_KERNEL);
        memset(mine[i], 0x3c, 128);
    }
    for (int i = 0; i < 5000; i++) {
        if (i % 2)
            kmem_cache_free(cache, mine[i]);    /* locally: its cpu slab and partials */
        else
            handoff[i] = mine[i];               /* main frees these after we exit */
    }
    return NULL;
}

static void test_thread_exit(void)
{
    cache = kmem_cache_create("exit_obj", 128, 0, SLAB_NO_MERGE, NULL);
    pthread_t t;
    pthread_create(&t, NULL, exiting_thread, NULL);
    pthread_join(t, NULL);
    struct kslab_stats st;
    kslab_cache_stats(cache, &st);
    if (strcmp(kslab_allocator_name(), "slub") == 0 && !test_percpu())
        CHECK(st.cpuslab_flush >= 1);         /* its cpu slab was flushed at exit */
    CHECK_EQ(st.active_objs, 2500);
    int bad = 0;
    for (int i = 0; i < 5000; i += 2) {
        unsigned char *p = handoff[i];
        for (int j = 8; j < 128; j++)
            bad += p[j] != 0x3c;
        kmem_cache_free(cache, p);
    }
    CHECK_EQ(bad, 0);
    kmem_cache_shrink(cache);
    kslab_cache_stats(cache, &st);
    CHECK_EQ(st.active_objs, 0);
    CHECK_EQ(st.num_slabs, 0);                /* nothing stayed frozen by a dead thread */

    /* Many short-lived threads: memory stays bounded. */
    uint64_t before = kslab_pages_in_use();
    for (int round = 0; round < EXIT_ROUNDS; round++) {
        pthread_create(&t, NULL, exiting_thread, NULL);
        pthread_join(t, NULL);
        for (int i = 0; i < 5000; i += 2)
            kmem_cache_free(cache, handoff[i]);
    }
    kmem_cache_shrink(cache);
    kslab_cache_stats(cache, &st);
    CHECK_EQ(st.num_slabs, 0);
    CHECK(kslab_pages_in_use() <= before + 64);
    kmem_cache_destroy(cache);
}

/* ---- fork ---- */

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* A fork while the process has one thread (before any other test makes
 * one): the child's allocator works, and the fork handlers write no cache's
 * descriptor.  With 300 caches, taking and releasing every list_lock made
 * the parent take a copy-on-write fault on each of their ~45 pages after
 * the fork (and the child as many); without, a couple (its stack). */
static void test_fork_single_threaded(void)
{
    enum { NC = 200 };
    static struct kmem_cache *c[NC];
    static void *obj[NC];
    for (int i = 0; i < NC; i++) {
        char name[32];
        snprintf(name, sizeof name, "fork1_%d", i);
        c[i] = kmem_cache_create(name, 32 + 8 * (unsigned)i, 0, SLAB_NO_MERGE, NULL);
        CHECK(c[i] != NULL);
        obj[i] = kmem_cache_alloc(c[i], GFP_KERNEL);
        CHECK(obj[i] != NULL);
        memset(obj[i], i & 0xff, 32);
    }
    long before = minor_faults();
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        for (int i = 0; i < NC; i++) {
            unsigned char *o = obj[i];
            for (int j = 0; j < 32; j++)
                bad += o[j] != (i & 0xff);
            kmem_cache_free(c[i], obj[i]);
            void *v[100];
            for (int k = 0; k < 100; k++)
                bad += !(v[k] = kmem_cache_alloc(c[i], GFP_KERNEL));
            for (int k = 0; k < 100; k++)
                kmem_cache_free(c[i], v[k]);
            /* drains the per-CPU sheaves: a membarrier fence, which
             * needs the registration the child inherits from the parent */
            kmem_cache_shrink(c[i]);
            kmem_cache_destroy(c[i]);
        }
        _exit(bad ? 1 : 0);
    }
    long parent_faults = minor_faults() - before;
    int st = -1;    /* not an exit status, if the fork failed */
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#ifndef TEST_SANITIZED
    /* the sanitizers' own fork handlers write their state */
    if (parent_faults >= 12)
        fprintf(stderr, "fork: %ld page faults in the parent\n", parent_faults);
    CHECK(parent_faults < 12);
#else
    (void)parent_faults;
#endif
    for (int i = 0; i < NC; i++) {
        kmem_cache_free(c[i], obj[i]);
        kmem_cache_destroy(c[i]);
    }
}

static atomic_int stop;
static struct kmem_cache *fcache;
static void *live_from_thread[100];
static atomic_int live_ready;

static void *busy(void *arg)
{
    int me = (int)(intptr_t)arg;
    if (me == 0) {
        for (int i = 0; i < 100; i++) {
            live_from_thread[i] = kmalloc(64, GFP_KERNEL);
            memset(live_from_thread[i], 0x42, 64);
        }
        atomic_store(&live_ready, 1);
    }
    void *ring[32] = { 0 };
    unsigned k = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        unsigned i = k++ % 32;
        if (ring[i])
            (k & 1) ? kfree(ring[i]) : kmem_cache_free(fcache, ring[i]);
        ring[i] = (k & 1) ? kmalloc(16 + k % 3000, GFP_KERNEL) : kmem_cache_alloc(fcache, GFP_KERNEL);
        if (k % 1000 == 0) {
            struct kmem_cache *tmp = kmem_cache_create("tmp", 72, 0, SLAB_NO_MERGE, NULL);
            kmem_cache_free(tmp, kmem_cache_alloc(tmp, GFP_KERNEL));
            kmem_cache_destroy(tmp);
        }
    }
    for (int i = 0; i < 32; i++)
        if (ring[i])
            kfree(ring[i]);
    return NULL;
}

static int child_work(void)
{
    int bad = 0;
    /* objects allocated by a thread that does not exist in the child */
    for (int i = 0; i < 100; i++) {
        unsigned char *p = live_from_thread[i];
        for (int j = 8; j < 64; j++)
            bad += p[j] != 0x42;
        kfree(p);
    }
    /* every kmalloc size up to 5 KiB; kept small: the child faults in all
     * it touches, and at 20 000 objects (15 us a fault, stop 59's host)
     * the 30 rounds took most of this test's time */
    void *v[4000];
    for (int i = 0; i < 4000; i++) {
        v[i] = i % 2 ? kmalloc(8 + (i * 37) % 5000, GFP_KERNEL) : kmem_cache_alloc(fcache, GFP_KERNEL);
        if (!v[i])
            return 3;
        memset(v[i], 1, 8);
    }
    for (int i = 0; i < 4000; i++)
        kfree(v[i]);
    struct kmem_cache *c = kmem_cache_create("child", 300, 0, SLAB_NO_MERGE, NULL);
    void *p = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, p);
    kmem_cache_destroy(c);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kslab_slabinfo(f);
    fclose(f);
    return bad ? 2 : (strstr(buf, "fork_obj") ? 0 : 4);
}

static void test_fork(void)
{
    fcache = kmem_cache_create("fork_obj", 200, 0, SLAB_NO_MERGE, NULL);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, busy, (void *)(intptr_t)i);
    while (!atomic_load(&live_ready))
        ;
    int failures = 0;
    for (int round = 0; round < 30; round++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(child_work());
        int st;
        waitpid(pid, &st, 0);
        failures += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "fork round %d: status 0x%x\n", round, st);
    }
    CHECK_EQ(failures, 0);
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 100; i++)
        kfree(live_from_thread[i]);
    struct kslab_stats st;
    kslab_cache_stats(fcache, &st);
    CHECK_EQ(st.active_objs, 0);
    kmem_cache_destroy(fcache);
}

/* Slow start (SLUB): a thread's first objects of a cache come from the
 * cache's partial slab, so a thread that takes a few objects freezes no slab
 * of its own: the cache keeps one slab for both threads' objects. */
static struct kmem_cache *ss_cache;
static void *take_five(void *arg)
{
    void **o = arg;
    for (int i = 0; i < 5; i++)
        o[i] = kmem_cache_alloc(ss_cache, GFP_KERNEL);
    return NULL;
}
static void test_slow_start(void)
{
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (be && strcmp(be, "slub") != 0)
        return;
    ss_cache = kmem_cache_create("slow_start", 64, 0, SLAB_NO_MERGE, NULL);
    void *mine[2], *theirs[5];
    for (int i = 0; i < 2; i++)
        mine[i] = kmem_cache_alloc(ss_cache, GFP_KERNEL);
    struct kslab_stats st;
    kslab_cache_stats(ss_cache, &st);
    CHECK_EQ(st.num_slabs, 1);
    pthread_t t;
    pthread_create(&t, NULL, take_five, theirs);
    pthread_join(t, NULL);
    kslab_cache_stats(ss_cache, &st);
    CHECK_EQ(st.num_slabs, 1);                /* the other thread froze no slab */
    CHECK_EQ(st.active_objs, 7);
    for (int i = 0; i < 5; i++)
        CHECK(theirs[i] != NULL && theirs[i] != mine[0] && theirs[i] != mine[1]);
    for (int i = 0; i < 5; i++)
        kmem_cache_free(ss_cache, theirs[i]);
    for (int i = 0; i < 2; i++)
        kmem_cache_free(ss_cache, mine[i]);
    kslab_cache_stats(ss_cache, &st);
    CHECK_EQ(st.active_objs, 0);
    /* slow start ends: an alloc/free loop then runs on the first fast path,
     * not one object cycling through the sheaf */
    uint64_t fast0 = st.alloc_fastpath;
    for (int i = 0; i < 1000; i++)
        kmem_cache_free(ss_cache, kmem_cache_alloc(ss_cache, GFP_KERNEL));
    kslab_cache_stats(ss_cache, &st);
    CHECK(st.alloc_fastpath - fast0 > 900);
    kmem_cache_destroy(ss_cache);
}

/* The barn (SLUB): a thread that only frees objects another thread
 * allocated hands its full sheaves to the barn; the allocating thread takes
 * them whole; every object comes back exactly once (no duplicate, none
 * lost), and shrink gives back what the barn still holds. */
static struct kmem_cache *barn_cache;
#define BARN_OBJS 20000
static void *barn_objs[BARN_OBJS];
static void *free_all(void *arg)
{
    for (long i = 0; i < BARN_OBJS; i++)
        kmem_cache_free(barn_cache, barn_objs[i]);
    return arg;
}
static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}
static void test_barn(void)
{
    const char *be = getenv("KSLAB_ALLOCATOR");
    bool slub = !be || strcmp(be, "slub") == 0;
    barn_cache = kmem_cache_create("barn_test", 64, 0, SLAB_NO_MERGE, NULL);
    for (long i = 0; i < BARN_OBJS; i++) {
        barn_objs[i] = kmem_cache_alloc(barn_cache, GFP_KERNEL);
        memset(barn_objs[i], 0x11, 64);
    }
    pthread_t t;
    pthread_create(&t, NULL, free_all, NULL);
    pthread_join(t, NULL);
    struct kslab_stats st;
    kslab_cache_stats(barn_cache, &st);
    if (slub)
        CHECK(st.barn_put > 0);                   /* the freeing thread's full sheaves */
    uint64_t got = st.barn_get;
    static void *again[BARN_OBJS];
    for (long i = 0; i < BARN_OBJS; i++)
        again[i] = kmem_cache_alloc(barn_cache, GFP_KERNEL);
    kslab_cache_stats(barn_cache, &st);
    if (slub)
        CHECK(st.barn_get > got);                 /* taken back whole */
    CHECK_EQ(st.active_objs, BARN_OBJS);
    qsort(again, BARN_OBJS, sizeof *again, cmp_ptr);
    long dup = 0;
    for (long i = 1; i < BARN_OBJS; i++)
        dup += again[i] == again[i - 1];
    CHECK_EQ(dup, 0);
    for (long i = 0; i < BARN_OBJS; i++)
        barn_objs[i] = again[i];
    pthread_create(&t, NULL, free_all, NULL);     /* into the barn again */
    pthread_join(t, NULL);
    kmem_cache_shrink(barn_cache);
    kslab_cache_stats(barn_cache, &st);
    CHECK_EQ(st.active_objs, 0);
    CHECK_EQ(st.num_slabs, 0);                    /* the barn gave everything back */
    kmem_cache_destroy(barn_cache);
}

int main(void)
{
    test_fork_single_threaded();    /* first: before any thread exists */
    test_barn();
    test_slow_start();
    test_thread_exit();
    test_fork();
    return check_done();
}
