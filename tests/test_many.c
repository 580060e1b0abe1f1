/* test_many.c - no fixed cache limit, cheap threads (issue 10):
 *  - 100 000 caches exist at once, each usable (classic SLOB: up to its
 *    16-bit id, then kmem_cache_create returns NULL);
 *  - a thread's state follows the caches it used: 200 threads that each
 *    used 2 of those caches add little RSS, and leave none when they exit;
 *  - 2000 threads alive at once, each with its own objects of a shared
 *    cache and of kmalloc, every object checked while all are alive. */
#include "check.h"
#include "helpers.h"
#include <kslab.h>
#include <pthread.h>
#include <stdbool.h>

/* Sanitized builds run 20 000 (each creation and destroy is instrumented;
 * TSan alone took minutes for 100 000) and skip the RSS bound (their
 * shadow memory is per thread too). */
#ifdef TEST_SANITIZED
#define NCACHES 20000
#else
#define NCACHES 100000
#endif

static struct kmem_cache **caches;
static long made;

static void test_many_caches(bool slob)
{
    caches = calloc(NCACHES, sizeof *caches);
    for (made = 0; made < NCACHES; made++) {
        char name[32];
        snprintf(name, sizeof name, "many-%ld", made);
        caches[made] = kmem_cache_create(name, 24 + (made % 8) * 8, 0, SLAB_NO_MERGE, NULL);
        if (!caches[made])
            break;
    }
    if (slob && NCACHES > 65536)
        CHECK(made > 60000 && made < NCACHES);     /* its 16-bit ids, then NULL */
    else
        CHECK_EQ(made, NCACHES);
    long bad = 0;
    for (long i = 0; i < made; i += 97) {
        unsigned size = 24 + (unsigned)(i % 8) * 8;
        unsigned char *o[3];
        for (int k = 0; k < 3; k++) {
            o[k] = kmem_cache_alloc(caches[i], GFP_KERNEL);
            CHECK(o[k] != NULL);
            memset(o[k], (int)(i + k) & 0xff, size);
        }
        for (int k = 0; k < 3; k++) {
            bad += o[k][size - 1] != ((i + k) & 0xff);
            kmem_cache_free(caches[i], o[k]);
        }
    }
    CHECK_EQ(bad, 0);
}

/* Threads that each used two caches at far-apart ids. */
static pthread_barrier_t b_all, b_leave;
static void *use_two(void *arg)
{
    long i = (long)(intptr_t)arg;
    for (int k = 0; k < 2; k++) {
        struct kmem_cache *s = caches[(i * 7919 + k * (made / 2)) % made];
        kmem_cache_free(s, kmem_cache_alloc(s, GFP_KERNEL));
    }
    pthread_barrier_wait(&b_all);
    pthread_barrier_wait(&b_leave);
    return NULL;
}

static void test_thread_state(void)
{
    enum { T = 200 };
    pthread_t t[T];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_barrier_init(&b_all, NULL, T + 1);
    pthread_barrier_init(&b_leave, NULL, T + 1);
    /* The published snapshot (publish.c) is one row per cache, 30 MiB for
     * these 100 000, written first 100 ms after start-up: let it exist
     * before the baseline, or it lands in the threads' figure whenever the
     * first one falls between the two readings (on a fast host it did:
     * 150 KiB of the 256 a thread).  It is the caches' memory, not the
     * threads'.  (-1, nothing made, with KSLAB_PUBLISH=0.) */
    kslab_publish();
    long before = test_rss_kib();
    for (long i = 0; i < T; i++)
        CHECK(pthread_create(&t[i], &a, use_two, (void *)(intptr_t)i) == 0);
    pthread_barrier_wait(&b_all);
    long during = test_rss_kib();
    /* A snapshot with the threads alive reads each thread's counters of
     * each cache: of the entries it used only.  Reading the others cost
     * 670 KiB a thread on a kernel that backs a read of untouched memory
     * with a page of its own (slab_common.h, struct kslab_cold_slot).
     * ctest sets KSLAB_PUBLISH_MS to an hour, so this snapshot is the
     * first with the threads alive. */
    kslab_publish();
    long read = (test_rss_kib() - during) / T;
    if (read > 64)
        fprintf(stderr, "a snapshot read %ld KiB per thread\n", read);
    pthread_barrier_wait(&b_leave);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    /* each thread: its stack's touched pages, a few pages of cpu entries and
     * cold entries, two slabs; far below the 4 MiB of entries it reserves
     * (one per cache id) and independent of the 100 000 caches */
    long per = (during - before) / T;
    if (per > 256)
        fprintf(stderr, "%ld KiB per thread\n", per);
#ifndef TEST_SANITIZED
    CHECK(per <= 256);
    CHECK(read <= 64);
#endif
}

static struct kmem_cache *shared;
#define PER 16
static void *check_own(void *arg)
{
    long me = (long)(intptr_t)arg;
    unsigned char *o[PER], *k[PER];
    for (int i = 0; i < PER; i++) {
        o[i] = kmem_cache_alloc(shared, GFP_KERNEL);
        k[i] = kmalloc(40 + (size_t)(me % 50), GFP_KERNEL);
        if (!o[i] || !k[i])
            return (void *)1;
        memset(o[i], (int)(me + i) & 0xff, 48);
        memset(k[i], (int)(me * 3 + i) & 0xff, 40);
    }
    pthread_barrier_wait(&b_all);      /* all alive, all objects live */
    long bad = 0;
    for (int i = 0; i < PER; i++) {
        for (int j = 0; j < 48; j++)
            bad += o[i][j] != ((me + i) & 0xff);
        for (int j = 0; j < 40; j++)
            bad += k[i][j] != ((me * 3 + i) & 0xff);
        kmem_cache_free(shared, o[i]);
        kfree(k[i]);
    }
    return (void *)(intptr_t)(bad ? 2 : 0);
}

/* Sanitized builds start 400: each thread's start and exit is instrumented,
 * and TSan took 35-42 s for the 2000. */
#ifdef TEST_SANITIZED
#define MANY_THREADS 400
#else
#define MANY_THREADS 2000
#endif

static void test_2000_threads(void)
{
    enum { T = MANY_THREADS };
    static pthread_t t[T];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    shared = kmem_cache_create("shared48", 48, 0, SLAB_NO_MERGE, NULL);
    CHECK(shared != NULL);
    pthread_barrier_init(&b_all, NULL, T);
    long started = 0, failed = 0;
    for (long i = 0; i < T; i++)
        if (pthread_create(&t[i], &a, check_own, (void *)(intptr_t)i) == 0)
            started++;
    CHECK_EQ(started, T);
    for (long i = 0; i < started; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed += r != NULL;
    }
    CHECK_EQ(failed, 0);
    struct kslab_stats st;
    kslab_cache_stats(shared, &st);
    CHECK_EQ(st.active_objs, 0);
    kmem_cache_destroy(shared);
}

int main(void)
{
    const char *be = getenv("KSLAB_ALLOCATOR");
    bool slob = be && strcmp(be, "slob") == 0;
    test_many_caches(slob);
    test_thread_state();
    for (long i = 0; i < made; i++)
        kmem_cache_destroy(caches[i]);
    /* ids are free again: as many caches can be made as before */
    struct kmem_cache *again = kmem_cache_create("again", 64, 0, SLAB_NO_MERGE, NULL);
    CHECK(again != NULL);
    kmem_cache_destroy(again);
    free(caches);
    test_2000_threads();
    return check_done();
}
