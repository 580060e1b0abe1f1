/* test_percpu.c - the cpu layer: the mode chosen at start-up, threads that
 * migrate between CPUs in the middle of their alloc/free loops
 * (sched_setaffinity), and shrink draining every CPU's sheaf while other
 * threads allocate and free, and an out-of-memory refill that must find the
 * objects another CPU's sheaf holds.  Every object carries its owner's tag, checked
 * before it is freed: a sheaf that lost, duplicated or corrupted an object
 * shows up as a wrong tag or wrong counters.  Runs in both modes. */
#define _GNU_SOURCE
#include "check.h"
#include "helpers.h"
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <errno.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned int __rseq_size __attribute__((weak));

/* Does the kernel have rseq (valgrind's does not)?  A registration with a
 * NULL area is refused with EINVAL where it does, ENOSYS where not. */
static bool kernel_rseq(void)
{
    return syscall(__NR_rseq, NULL, 0, 0, 0) != 0 && errno != ENOSYS;
}

static bool glibc_rseq(void)
{
    return &__rseq_size && __rseq_size >= 16;
}

static void test_mode(void)
{
    const char *env = getenv("KSLAB_PERCPU");
    const char *mode = kslab_cpu_mode();
    if (env && strcmp(env, "0") == 0)
        CHECK(strcmp(mode, "thread") == 0);
#ifdef KSLAB_FAKE_CPU
    else                                /* rseq or not: the fake CPU 0 */
        CHECK(strcmp(mode, "percpu") == 0);
#else
    /* the per-CPU mode wherever the kernel has rseq: on glibc's
     * registration, or where glibc made none (glibc.pthread.rseq=0 in the
     * .glibc-norseq tests, glibc before 2.35) on kslab's own */
    else if (kernel_rseq() &&
             (syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) &
              MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) &&
             sysconf(_SC_NPROCESSORS_CONF) <= 1024)
        CHECK(strcmp(mode, "percpu") == 0);
    else if (!kernel_rseq())
        CHECK(strcmp(mode, "thread") == 0);      /* valgrind */
#endif
    printf("cpu mode: %s (rseq registered by %s)\n", mode,
           glibc_rseq() ? "glibc" : "kslab, where it can");
}

/* Where kslab registers rseq itself (glibc made no registration): a thread
 * that registered an area of its own first (as another library may) makes
 * kslab's registration fail with EBUSY; its cpu_id in kslab's area stays
 * at its initial 1023, whose entry is cap 0 in every sheaf array, and
 * everything it allocates and frees goes through the slow paths.
 * Objects cross between it and the main thread both ways, and every one
 * keeps its contents. */
static struct kmem_cache *busy_cache;
#define TAKEN_N 4096
static uint64_t *from_main[TAKEN_N], *to_main[TAKEN_N];
static uint64_t taken_val(int i, int round)
{
    return (uint64_t)i * 977 + (uint64_t)round;
}
static void *rseq_taken(void *arg)
{
    (void)arg;
    static __thread struct { uint32_t a, b; uint64_t cs; uint32_t flags, pad[3]; }
        mine __attribute__((aligned(32)));
    if (syscall(__NR_rseq, &mine, 32, 0, 0x12345678) != 0)     /* ours, first */
        return (void *)4;
    long bad = 0;
    /* its first calls are frees, of the main thread's objects */
    for (int i = 0; i < TAKEN_N; i++) {
        bad += from_main[i][0] != taken_val(i, -1);
        i % 2 ? kfree(from_main[i]) : kmem_cache_free(busy_cache, from_main[i]);
    }
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < TAKEN_N; i++) {
            uint64_t *o = i % 2 ? kmalloc(96, GFP_KERNEL) : kmem_cache_alloc(busy_cache, GFP_KERNEL);
            if (!o)
                return (void *)2;
            o[0] = o[11] = taken_val(i, round);
            to_main[i] = o;
        }
        if (round == 19)
            break;                      /* the last round's: the main thread frees them */
        for (int i = 0; i < TAKEN_N; i++) {
            bad += to_main[i][0] != to_main[i][11] || to_main[i][0] != taken_val(i, round);
            i % 2 ? kfree(to_main[i]) : kmem_cache_free(busy_cache, to_main[i]);
        }
        void *bulk[64];
        if (kmem_cache_alloc_bulk(busy_cache, GFP_KERNEL, 64, bulk) != 64)
            return (void *)3;
        kmem_cache_free_bulk(busy_cache, 64, bulk);
    }
    return (void *)(intptr_t)(bad ? 1 : 0);
}

static void test_rseq_taken(void)
{
    if (glibc_rseq() || !kernel_rseq() || strcmp(kslab_cpu_mode(), "percpu") != 0)
        return;                         /* glibc's registration: nothing of kslab's to refuse */
    busy_cache = kmem_cache_create("rseq_taken", 96, 0, SLAB_NO_MERGE, NULL);
    for (int i = 0; i < TAKEN_N; i++) {
        from_main[i] = i % 2 ? kmalloc(96, GFP_KERNEL) : kmem_cache_alloc(busy_cache, GFP_KERNEL);
        from_main[i][0] = taken_val(i, -1);
    }
    pthread_t t;
    void *r = (void *)5;
    CHECK(pthread_create(&t, NULL, rseq_taken, NULL) == 0);
    CHECK(pthread_join(t, &r) == 0);
    CHECK_EQ((long)(intptr_t)r, 0);
    long bad = 0;
    for (int i = 0; i < TAKEN_N && !r; i++) {
        bad += to_main[i][0] != to_main[i][11] || to_main[i][0] != taken_val(i, 19);
        i % 2 ? kfree(to_main[i]) : kmem_cache_free(busy_cache, to_main[i]);
    }
    CHECK_EQ(bad, 0);
    kmem_cache_shrink(busy_cache);
    struct kslab_stats st;
    kslab_cache_stats(busy_cache, &st);
    CHECK_EQ(st.active_objs, 0);
    /* its sections all missed: no fast allocation of its own (the main
     * thread's first TAKEN_N / 2 came before the sheaves, slow start) */
    CHECK(st.alloc_fastpath < TAKEN_N);
    kmem_cache_destroy(busy_cache);
    printf("a thread whose rseq kslab could not register: %s (%llu fast allocations)\n",
           r ? "failed" : "worked", (unsigned long long)st.alloc_fastpath);
}

/* Where kslab registers rseq itself, a new thread is registered at its
 * first miss, and from then on takes the fast paths. */
static void *own_thread(void *arg)
{
    struct kmem_cache *c = arg;
    for (int i = 0; i < 100000; i++)
        kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
    return NULL;
}

static void test_rseq_own_thread(void)
{
    const char *be = kslab_allocator_name();
    if (glibc_rseq() || !kernel_rseq() || strcmp(kslab_cpu_mode(), "percpu") != 0 ||
        (strcmp(be, "slub") != 0 && strcmp(be, "slab") != 0))
        return;                         /* SLOB and slob-seg: no sheaves, no sections */
    struct kmem_cache *c = kmem_cache_create("rseq_own", 64, 0, SLAB_NO_MERGE, NULL);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, own_thread, c) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    struct kslab_stats st;
    kslab_cache_stats(c, &st);
    CHECK(st.alloc_fastpath > 99000);
    printf("a thread kslab registered: %llu of 100000 allocations fast\n",
           (unsigned long long)st.alloc_fastpath);
    kmem_cache_destroy(c);
}

#define OBJ 96
#define LIVE 512
static struct kmem_cache *cache;
static atomic_int stop;
static atomic_long errors, migrations;

static void fill(uint64_t *o, uint64_t tag)
{
    for (unsigned i = 0; i < OBJ / 8; i++)
        o[i] = tag ^ i;
}
static int check(const uint64_t *o, uint64_t tag)
{
    for (unsigned i = 0; i < OBJ / 8; i++)
        if (o[i] != (tag ^ i))
            return 1;
    return 0;
}

static int ncpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        return 1;
    return CPU_COUNT(&set);
}

/* Alloc/free in random order with a live set of LIVE objects; every
 * `hop` operations move to the next allowed CPU (when migrate). */
struct worker { int id; int migrate; long ops; };
static void *worker(void *arg)
{
    struct worker *w = arg;
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int cpu = 0;
    uint64_t rng = test_seed(0x1234567ull + (uint64_t)w->id);
    uint64_t *live[LIVE] = { 0 };
    uint64_t tags[LIVE];
    uint64_t serial = (uint64_t)w->id << 40;
    for (long op = 0; op < w->ops && !atomic_load(&stop); op++) {
        if (w->migrate && op % 97 == 0) {
            do
                cpu = (cpu + 1) % CPU_SETSIZE;
            while (!CPU_ISSET(cpu, &allowed));
            if (pin_cpu(cpu) == 0)
                atomic_fetch_add(&migrations, 1);
        }
        unsigned k = (unsigned)(test_rand(&rng) % LIVE);
        if (live[k]) {
            if (check(live[k], tags[k]))
                atomic_fetch_add(&errors, 1);
            kmem_cache_free(cache, live[k]);
            live[k] = NULL;
        } else {
            live[k] = kmem_cache_alloc(cache, GFP_KERNEL);
            if (!live[k]) {
                atomic_fetch_add(&errors, 1);
                continue;
            }
            tags[k] = ++serial;
            fill(live[k], tags[k]);
        }
    }
    for (unsigned k = 0; k < LIVE; k++)
        if (live[k]) {
            if (check(live[k], tags[k]))
                atomic_fetch_add(&errors, 1);
            kmem_cache_free(cache, live[k]);
        }
    sched_setaffinity(0, sizeof allowed, &allowed);
    return NULL;
}

static void run_workers(int n, int migrate, long ops, int shrink)
{
    pthread_t t[8];
    struct worker w[8];
    atomic_store(&stop, 0);
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){ i, migrate, ops };
        pthread_create(&t[i], NULL, worker, &w[i]);
    }
    for (int i = 0; i < shrink; i++)
        kmem_cache_shrink(cache);       /* drains every CPU's sheaf under the workers */
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* (a constructor: the cache's free tag after the object, its pops and
 * pushes off the inline paths -- src/percpu.h, rule 10) */
static void mig_ctor(void *p)
{
    memset(p, 0x3c, OBJ);
}
static void test_migration(void (*ctor)(void *), long ops)
{
    cache = kmem_cache_create(ctor ? "percpu_mig_ctor" : "percpu_mig", OBJ, 0, SLAB_NO_MERGE,
                              ctor);
    atomic_store(&errors, 0);
    atomic_store(&migrations, 0);
    run_workers(4, 1, ops, 0);
    CHECK_EQ(atomic_load(&errors), 0);
    if (ncpus() > 1)
        CHECK(atomic_load(&migrations) > 1000);   /* the threads really moved */
    struct kslab_stats st = test_stats(cache);
    CHECK_EQ(st.active_objs, 0);
    CHECK_EQ(st.alloc_fastpath + st.alloc_slowpath, st.free_fastpath + st.free_slowpath);
    if (test_percpu() && strcmp(kslab_allocator_name(), "slob") != 0 &&
        strcmp(kslab_allocator_name(), "slob-seg") != 0)
        CHECK(st.alloc_fastpath > st.alloc_slowpath);   /* the sheaves served most */
    kmem_cache_shrink(cache);
    CHECK_EQ(test_stats(cache).num_slabs, 0);
    kmem_cache_destroy(cache);
}

static void test_shrink_under_load(void)
{
    cache = kmem_cache_create("percpu_shrink", OBJ, 0, SLAB_NO_MERGE, NULL);
    atomic_store(&errors, 0);
    run_workers(3, 1, 150000, 300);
    CHECK_EQ(atomic_load(&errors), 0);
    struct kslab_stats st = test_stats(cache);
    CHECK_EQ(st.active_objs, 0);
    kmem_cache_shrink(cache);
    CHECK_EQ(test_stats(cache).num_slabs, 0);    /* nothing was lost in a sheaf */
    kmem_cache_destroy(cache);
}

/* Threads that allocate once from several classes and exit leave no
 * objects behind and the objects they handed over stay intact. */
static void *short_lived(void *arg)
{
    void **out = arg;
    for (int i = 0; i < 8; i++) {
        out[i] = kmalloc(16u << i, GFP_KERNEL);
        memset(out[i], 0x5a, 16u << i);
    }
    return NULL;
}

static void test_thread_churn(void)
{
    static void *objs[200][8];
    for (int r = 0; r < 200; r += 20) {
        pthread_t t[20];
        for (int i = 0; i < 20; i++)
            pthread_create(&t[i], NULL, short_lived, objs[r + i]);
        for (int i = 0; i < 20; i++)
            pthread_join(t[i], NULL);
    }
    int bad = 0;
    for (int r = 0; r < 200; r++)
        for (int i = 0; i < 8; i++) {
            unsigned char *p = objs[r][i];
            for (unsigned j = 0; j < (16u << i); j++)
                bad += p[j] != 0x5a;
            kfree(p);
        }
    CHECK_EQ(bad, 0);
}

/* Out of memory, the objects freed on another CPU (some still in its
 * sheaf) must still be found: the refill drains every CPU's sheaf and
 * retries before it returns NULL. */
static int pin_to(const cpu_set_t *all, int nth)
{
    for (int c = 0, k = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, all) && k++ == nth)
            return pin_cpu(c);
    return -1;
}

static void test_oom_other_cpu(void)
{
    static void *objs[1 << 17];
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    if (CPU_COUNT(&allowed) < 2)
        return;
    struct kmem_cache *c = kmem_cache_create("percpu_oom", 2000, 0, SLAB_NO_MERGE, NULL);
    for (int i = 0; i < 100; i++)          /* past slow start: the sheaves exist */
        objs[i] = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 100; i++)
        kmem_cache_free(c, objs[i]);
    kslab_test_fail_map(-1);
    CHECK_EQ(pin_to(&allowed, 0), 0);
    long n = 0;
    while (n < (1 << 17) && (objs[n] = kmem_cache_alloc(c, GFP_KERNEL)) != NULL)
        n++;
    CHECK(n > 0 && n < (1 << 17));
    CHECK_EQ(pin_to(&allowed, 1), 0);
    for (long i = 0; i < n; i++)
        kmem_cache_free(c, objs[i]);
    CHECK_EQ(pin_to(&allowed, 0), 0);
    long again = 0;
    for (long i = 0; i < n; i++)
        again += (objs[i] = kmem_cache_alloc(c, GFP_KERNEL)) != NULL;
    CHECK_EQ(again, n);                     /* none stranded in CPU 1's sheaf */
    kslab_test_fail_map(0);
    sched_setaffinity(0, sizeof allowed, &allowed);
    for (long i = 0; i < n; i++)
        if (objs[i])
            kmem_cache_free(c, objs[i]);
    CHECK_EQ(test_stats(c).active_objs, 0);
    kmem_cache_destroy(c);
}

/* kfree and kmem_cache_free of objects on every page of multi-page slabs
 * (SLAB's coloured too) take the per-CPU fast path: kfree tests an object
 * start from x's own page descriptor, so each page must carry its slab's
 * colour; kmem_cache_free goes by the CPU's hint.  Misplaced frees would
 * still be correct, through the slow path: the counters tell them apart. */
static void test_fast_free_multipage(void)
{
    bool sheaves = test_percpu() && (strcmp(kslab_allocator_name(), "slub") == 0 ||
                                     strcmp(kslab_allocator_name(), "slab") == 0);
    static const unsigned sizes[] = { 1000, 1500, 2100 };
    for (unsigned k = 0; k < 3; k++) {
        struct kmem_cache *c = kmem_cache_create("percpu_multipage", sizes[k], 0,
                                                 SLAB_NO_MERGE, NULL);
        for (int i = 0; i < 64; i++)        /* past slow start */
            kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
        for (int round = 0; round < 2; round++) {
            void *p[16];
            for (int i = 0; i < 16; i++) {
                p[i] = kmem_cache_alloc(c, GFP_KERNEL);
                CHECK(p[i] != NULL);
                memset(p[i], 0x5a, sizes[k]);
            }
            uint64_t before = test_stats(c).free_fastpath;
            for (int i = 0; i < 16; i++) {
                if (round)
                    kmem_cache_free(c, p[i]);
                else
                    kfree(p[i]);
            }
            struct kslab_stats st = test_stats(c);
            if (sheaves)
                CHECK_EQ(st.free_fastpath - before, 16);
            CHECK_EQ(st.active_objs, 0);
        }
        kmem_cache_destroy(c);
    }
}

/* kfree in the per-CPU mode: frees alternating between caches, runs of
 * one cache, and a destroyed cache's struct reused by a new cache: every
 * object goes back to its own cache (each class's next allocations are of
 * its size, each cache's counts balance), and kfree's pushes take the fast
 * path. */
static void test_kfree_caches(void)
{
    bool sheaves = test_percpu() && (strcmp(kslab_allocator_name(), "slub") == 0 ||
                                     strcmp(kslab_allocator_name(), "slab") == 0);
    void *a[32], *b[32];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 32; i++) {
            a[i] = kmalloc(32, GFP_KERNEL);
            b[i] = kmalloc(64, GFP_KERNEL);
        }
        for (int i = 0; i < 32; i++) {      /* the cache changes on every free */
            kfree(a[i]);
            kfree(b[i]);
        }
        for (int i = 0; i < 32; i++) {
            a[i] = kmalloc(32, GFP_KERNEL);
            b[i] = kmalloc(64, GFP_KERNEL);
            CHECK_EQ(ksize(a[i]), 32);
            CHECK_EQ(ksize(b[i]), 64);
        }
        for (int i = 0; i < 32; i++)        /* runs of one cache */
            kfree(a[i]);
        for (int i = 0; i < 32; i++)
            kfree(b[i]);
    }
    /* kfrees into c, then c is destroyed (and its struct reused) */
    for (int k = 0; k < 3; k++) {
        struct kmem_cache *c = kmem_cache_create("percpu_kfree", 48, 0, SLAB_NO_MERGE, NULL);
        void *o[64];
        for (int i = 0; i < 64; i++)
            o[i] = kmem_cache_alloc(c, GFP_KERNEL);
        uint64_t before = test_stats(c).free_fastpath;
        for (int i = 0; i < 64; i++)
            kfree(o[i]);
        struct kslab_stats st = test_stats(c);
        CHECK_EQ(st.active_objs, 0);
        if (sheaves)
            CHECK(st.free_fastpath - before >= 48);   /* kfree's pushes */
        kmem_cache_destroy(c);
        void *p = kmalloc(48, GFP_KERNEL), *q = kmalloc(48, GFP_KERNEL);
        kfree(p);                           /* the last kfree was into the dead cache */
        kfree(q);
        void *r = kmalloc(48, GFP_KERNEL);
        CHECK(ksize(r) >= 48);
        if (sheaves)
            CHECK(r == q && ksize(r) == 64);   /* back on top of kmalloc-64's sheaf */
        kfree(r);
    }
}

/* Caches whose free tag is not at offset 0 (src/percpu.h, rule 10): a
 * constructor's and an RCU cache's (the tag after the object) and one
 * with a free pointer offset (the tag at that word).  The inline pop and
 * push write and claim the tag at offset 0, so these caches must miss
 * them and go through the out-of-line section.  Fails if one reached the
 * inline paths (a free would put the tag over the object's first word,
 * which the constructor or the caller set), if their pairs stopped being
 * served by the sheaves (the fast counts), or if a double free of one
 * (a, b, a) went unreported. */
#define TOFF_OBJ 64
#define TOFF_FP 16
static void toff_ctor(void *p)
{
    memset(p, 0xc5, TOFF_OBJ);
}
static struct kmem_cache *toff_cache(int kind)
{
    struct kmem_cache_args fp = { .freeptr_offset = TOFF_FP, .use_freeptr_offset = 1 };
    if (kind == 0)
        return kmem_cache_create("percpu_toff_ctor", TOFF_OBJ, 0, SLAB_NO_MERGE, toff_ctor);
    if (kind == 1)
        return kmem_cache_create("percpu_toff_rcu", TOFF_OBJ, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    return kmem_cache_create("percpu_toff_fp", TOFF_OBJ, &fp, SLAB_TYPESAFE_BY_RCU);
}
/* every byte of x as the constructor (kind 0) or the last owner left it,
 * but the free pointer word (kind 2) */
static bool toff_kept(int kind, const unsigned char *x, unsigned char v)
{
    for (int i = 0; i < TOFF_OBJ; i++)
        if (x[i] != v && !(kind == 2 && i >= TOFF_FP && i < TOFF_FP + 8))
            return false;
    return true;
}
#ifndef KSLAB_NO_FREE_TAG
static void toff_double(void *arg)
{
    struct kmem_cache *c = toff_cache(*(int *)arg);
    for (int i = 0; i < 100; i++)       /* past slow start: the sheaves */
        kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
    /* (keep: SLOB's page stays, so its header reports the third free) */
    void *volatile keep = kmem_cache_alloc(c, GFP_KERNEL);
    void *a = kmem_cache_alloc(c, GFP_KERNEL), *b = kmem_cache_alloc(c, GFP_KERNEL);
    (void)keep;
    kmem_cache_free(c, a);
    kmem_cache_free(c, b);
    kmem_cache_free(c, a);
    for (int i = 0; i < 3; i++) {
        void *volatile x = kmem_cache_alloc(c, GFP_KERNEL);   /* the third is a again */
        (void)x;
    }
}
#endif
static void test_tag_offset_caches(void)
{
    bool sheaves = test_percpu() && (strcmp(kslab_allocator_name(), "slub") == 0 ||
                                     strcmp(kslab_allocator_name(), "slab") == 0);
    for (int kind = 0; kind < 3; kind++) {
        struct kmem_cache *c = toff_cache(kind);
        CHECK(c != NULL);
        int bad = 0;
        for (int r = 0; r < 2000; r++) {
            unsigned char *x = kmem_cache_alloc(c, GFP_KERNEL);
            if (kind == 0)
                bad += !toff_kept(kind, x, 0xc5);
            else
                memset(x, r & 0xff, TOFF_OBJ);
            kmem_cache_free(c, x);
            if (kind) {                 /* the same object again, off the sheaf's top */
                unsigned char *y = kmem_cache_alloc(c, GFP_KERNEL);
                bad += y == x && !toff_kept(kind, y, r & 0xff);
                kmem_cache_free(c, y);
            }
        }
        CHECK_EQ(bad, 0);
        struct kslab_stats st = test_stats(c);
        if (sheaves)
            CHECK(st.alloc_fastpath > 1900 && st.free_fastpath > 1900);
        CHECK_EQ(st.active_objs, 0);
        kmem_cache_destroy(c);
#ifndef KSLAB_NO_FREE_TAG
        /* (every back-end and mode: the free tag, or SLOB's headers and
         * slob-seg's and the per-thread mode's own checks) */
        CHECK_DEATH(toff_double, &kind, "double free", "object 0x");
#endif
    }
}

/* The free tag's key (src/percpu.h, rule 8): in the per-CPU mode it is
 * random per process and written into every tag instruction's immediate
 * at start-up.  Fails if the patch is skipped (the key stays the
 * placeholder), if a site listed in kslab_tag_sites is left out (its
 * immediate differs), if a tag instruction is not listed (a free object's
 * word differs from the key: the push stored the placeholder), or if two
 * processes draw the same key. */
extern uint64_t kslab_tag_key;
extern const int32_t __start_kslab_tag_sites[] __attribute__((weak));
extern const int32_t __stop_kslab_tag_sites[] __attribute__((weak));
#define TAG_PLACEHOLDER 0x5a5a5a5b
/* The children below are this program run again (so kslab starts afresh)
 * with one argument: --tag-key runs pairs through every front door and
 * prints its key, --tag-double frees a, b, a and allocates on.  deny_wx:
 * under a filter refusing writable text (test_tag_key_wx), installed
 * before the exec, so before kslab's constructor. */
struct self_run {
    const char *self, *arg;
    bool deny_wx;
};
static void deny_wx_mprotect(void);
static void exec_self(void *p)
{
    const struct self_run *r = p;
    dup2(2, 1);                 /* its stdout into run_child's pipe too */
    if (r->deny_wx)
        deny_wx_mprotect();
    execl(r->self, r->self, r->arg, (char *)NULL);
    _exit(127);
}
/* The key a child drew, or its exit status in *st (77: seccomp missing) */
static uint64_t key_of_child(const char *self, bool deny_wx, int *st)
{
    char buf[512];
    int sig;
    struct self_run r = { self, "--tag-key", deny_wx };
    *st = run_child(exec_self, &r, buf, sizeof buf, &sig);
    return *st == 0 && sig == 0 ? strtoull(buf, NULL, 16) : 0;
}
static void test_tag_key(const char *self)
{
#ifdef KSLAB_NO_FREE_TAG
    return;                     /* the measurement build: no tag, no sites */
#endif
    if (strcmp(kslab_cpu_mode(), "percpu") != 0)
        return;
#ifdef KSLAB_FAKE_CPU
    /* the fake-CPU build, run under valgrind, keeps the placeholder
     * (percpu.c, tag_patch): every process the same key */
    const bool patched = false;
#else
    const bool patched = true;
#endif
    uint64_t key = kslab_tag_key;
    CHECK(patched ? key != (uint64_t)(int64_t)TAG_PLACEHOLDER
                  : key == (uint64_t)(int64_t)TAG_PLACEHOLDER);
    CHECK((int64_t)key == (int64_t)(int32_t)key && (key & 1));   /* a sign-extended odd imm32 */
    size_t sites = 0;
    for (const int32_t *r = __start_kslab_tag_sites; r && r < __stop_kslab_tag_sites; r++) {
        int32_t v;
        memcpy(&v, (const char *)r + *r, sizeof(v));
        CHECK(v == (int32_t)key);
        sites++;
    }
    CHECK(sites >= 4);          /* the pushes and both claims, at the least */
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (!be || !strcmp(be, "slub") || !strcmp(be, "slab")) {
        /* a free object in a sheaf holds the key in its tag word (offset 0
         * for a cache with no constructor), through each front door, and
         * the next allocation claims it */
        struct kmem_cache *c = kmem_cache_create("tagkey", 64, 0, SLAB_NO_MERGE, NULL);
        CHECK(c != NULL);
        void *warm[2][200];         /* past the slow start: the caches get sheaves */
        for (int r = 0; r < 4; r++) {
            for (int j = 0; j < 200; j++) {
                warm[0][j] = kmem_cache_alloc(c, GFP_KERNEL);
                warm[1][j] = kmalloc(64, GFP_KERNEL);
            }
            for (int j = 0; j < 200; j++) {
                kmem_cache_free(c, warm[0][j]);
                kfree(warm[1][j]);
            }
        }
        for (int i = 0; i < 3; i++) {
            uint64_t *x = i == 2 ? kmalloc(64, GFP_KERNEL) : kmem_cache_alloc(c, GFP_KERNEL);
            CHECK(x != NULL);
            x[0] = 0;
            if (i == 0)
                kmem_cache_free(c, x);
            else
                kfree(x);                           /* kfree of a cache object, of a kmalloc one */
            uint64_t w;
            memcpy(&w, x, sizeof(w));               /* a read after free: the test's own */
            CHECK(w == key);
            void *y = i == 2 ? kmalloc(64, GFP_KERNEL) : kmem_cache_alloc(c, GFP_KERNEL);
            CHECK(y == x);                          /* the sheaf's top, claimed */
            CHECK(((uint64_t *)y)[0] == 0);         /* the claim cleared it */
            if (i == 2)
                kfree(y);
            else
                kmem_cache_free(c, y);
        }
        kmem_cache_destroy(c);
    }
    int st1, st2;
    uint64_t k1 = key_of_child(self, false, &st1), k2 = key_of_child(self, false, &st2);
    CHECK(st1 == 0 && st2 == 0);
    if (patched) {
        CHECK(k1 != key && k2 != key && k1 != k2);
        CHECK(k1 != (uint64_t)(int64_t)TAG_PLACEHOLDER);
    } else {
        CHECK(k1 == key && k2 == key);
    }
    printf("tag key: %d sites, keys of 3 processes %s\n", (int)sites,
           patched ? "differ" : "the placeholder");
}

/* The fallback: a process whose text may not be made writable (a W^X
 * policy, here a seccomp filter refusing mprotect with both PROT_WRITE and
 * PROT_EXEC) keeps the placeholder as its key, every immediate agreeing
 * with it: allocations and frees through every front door go on, and a
 * double free is still reported. */
static void deny_wx_mprotect(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        _exit(77);
}
/* The children's side (exec_self) */
static int tag_child(bool twice)
{
    struct kmem_cache *c = kmem_cache_create("tagkey_child", 64, 0, SLAB_NO_MERGE, NULL);
    for (int r = 0; r < 1000; r++) {
        void *a = kmem_cache_alloc(c, GFP_KERNEL), *b = kmalloc(64, GFP_KERNEL);
        if (!a || !b)
            return 1;
        kmem_cache_free(c, a);
        kfree(b);
    }
    if (twice) {                    /* a, b, a: caught by the tag */
        void *a = kmalloc(64, GFP_KERNEL), *b = kmalloc(64, GFP_KERNEL);
        kfree(a);
        kfree(b);
        kfree(a);
        kfree(kmalloc(64, GFP_KERNEL));
        kfree(kmalloc(64, GFP_KERNEL));
        for (int i = 0; i < 3; i++) {
            void *volatile x = kmalloc(64, GFP_KERNEL);   /* the third is a again */
            (void)x;
        }
        return 0;                   /* not reached: reported */
    }
    printf("%llx\n", (unsigned long long)kslab_tag_key);
    return 0;
}
static void test_tag_key_wx(const char *self)
{
#ifdef KSLAB_NO_FREE_TAG
    return;
#endif
    if (strcmp(kslab_cpu_mode(), "percpu") != 0)
        return;
    const char *be = getenv("KSLAB_ALLOCATOR");
    if (be && strcmp(be, "slub") && strcmp(be, "slab"))
        return;                     /* sheaves: SLUB and SLAB */
    int st;
    uint64_t key = key_of_child(self, true, &st);
    if (st == 77) {
        printf("tag key without writable text: seccomp unavailable, skipped\n");
        return;
    }
    CHECK(st == 0);
    CHECK(key == (uint64_t)(int64_t)TAG_PLACEHOLDER);
    struct self_run twice = { self, "--tag-double", true };
    CHECK_DEATH(exec_self, &twice, "double free");
    printf("tag key without writable text: the placeholder, double frees still caught\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--tag-key") || !strcmp(argv[1], "--tag-double")))
        return tag_child(!strcmp(argv[1], "--tag-double"));
    test_mode();
    test_rseq_taken();
    test_rseq_own_thread();
    test_tag_key(argv[0]);
    test_tag_key_wx(argv[0]);

    test_fast_free_multipage();
    test_migration(NULL, 200000);
    test_migration(mig_ctor, 100000);
    test_shrink_under_load();
    test_thread_churn();
    test_kfree_caches();
    test_tag_offset_caches();
    test_oom_other_cpu();
    return check_done();
}
