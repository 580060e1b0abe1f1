/*
 * threads.c - the multi-threaded rows (issue 10), run under any malloc
 * (kslab through libkslab-malloc, or a peer by LD_PRELOAD):
 *
 *   server THREADS     a larson-style server: each thread keeps a live set of
 *                      2048 objects of random sizes 8..1000 bytes and replaces
 *                      a random one per step; one step in four hands the new
 *                      object to the next thread (a bounded ring), which frees
 *                      it.  All threads step for 0.3 s (larson's fixed time);
 *                      prints M ops/s (allocations) and peak RSS.
 *   pipeline THREADS   one producer, THREADS-1 consumers: the producer
 *                      allocates 64-byte objects and deals them round-robin
 *                      into one ring per consumer, which frees them.
 *                      Prints M objects/s and peak RSS.
 *   idle THREADS       THREADS threads each allocate and free one object in
 *                      each of 8 size classes, then wait: prints the process's
 *                      RSS (KiB) with all of them alive, before they exit.
 *
 * Output: WHO <tab> row <tab> value <tab> unit (the bench section takes the
 * peak RSS from bench/runcmd, which reads it when the process has exited).
 * --quick shrinks the work (the test suite runs every row that way).
 */
#include "bench_common.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

static void *(*volatile m_alloc)(size_t) = malloc;
static void (*volatile m_free)(void *) = free;
static bool quick;

/* A single-producer single-consumer ring of pointers.  The producer's
 * release store of tail publishes the slot it filled (and the object's
 * contents) to the consumer's acquire load; the consumer's release store of
 * head hands the slot back. */
#define RING 1024
struct ring {
    _Alignas(64) _Atomic unsigned long head;
    _Alignas(64) _Atomic unsigned long tail;
    _Alignas(64) void *slot[RING];
};
static bool ring_put(struct ring *r, void *p)
{
    unsigned long t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - atomic_load_explicit(&r->head, memory_order_acquire) == RING)
        return false;
    r->slot[t % RING] = p;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return true;
}
static void *ring_get(struct ring *r)
{
    unsigned long h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h == atomic_load_explicit(&r->tail, memory_order_acquire))
        return NULL;
    void *p = r->slot[h % RING];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return p;
}

/* ---- server ------------------------------------------------------------------ */

/* A fixed-time run, as larson's: every thread steps from one start barrier
 * until main raises `stop` a fixed time later, and the row is the steps
 * all of them took over that time.  (It was a fixed number of steps per
 * thread, timed until the last one finished: threads done early then
 * spun in sched_yield while the rest finished, and on 2 CPUs how long that
 * tail ran was up to the scheduler -- 2 000 to 111 000 context switches a
 * run of the same program, for kslab and tcmalloc alike -- so the 16-thread
 * row swung by 1.6x from run to run.  Now no thread waits for another
 * inside the time measured.) */
#define LIVE 2048
static int nthreads;
static struct ring *rings;            /* rings[i]: objects thread i must free */
static _Atomic bool stop;
static pthread_barrier_t start;

static void drain(struct ring *r)
{
    void *p;
    while ((p = ring_get(r)))
        m_free(p);
}

static void *server_thread(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    void **live = calloc(LIVE, sizeof *live);
    struct ring *out = &rings[(me + 1) % nthreads], *in = &rings[me];
    long i;
    pthread_barrier_wait(&start);
    for (i = 0;; i++) {
        xorshift64(&x);
        unsigned j = (unsigned)(x >> 20) % LIVE;
        size_t sz = 8 + (size_t)(x >> 40) % 993;
        char *p = m_alloc(sz);
        p[0] = (char)i;
        p[sz - 1] = (char)i;
        if ((x & 3) == 0 && nthreads > 1) {
            /* hand it over; if the neighbour is behind, free it here */
            if (!ring_put(out, p))
                m_free(p);
        } else {
            if (live[j])
                m_free(live[j]);
            live[j] = p;
        }
        if ((i & 63) == 0) {
            drain(in);
            /* relaxed: a flag read, ordering nothing; a thread sees it
             * within 64 steps of main's store */
            if (atomic_load_explicit(&stop, memory_order_relaxed))
                break;
        }
    }
    /* after the time measured: the live set back; what the rings still
     * hold main frees once every thread has stopped sending */
    for (unsigned j = 0; j < LIVE; j++)
        m_free(live[j]);
    free(live);
    return (void *)(intptr_t)(i + 1);
}

static double run_server(int n)
{
    nthreads = n;
    /* 0.3 s: steady state, not start-up (a slab's worth of warm-up is a
     * few ms); --quick, 20 ms */
    uint64_t span = quick ? 20000000ull : 300000000ull;
    rings = aligned_alloc(64, sizeof *rings * (size_t)n);
    memset(rings, 0, sizeof *rings * (size_t)n);
    atomic_store(&stop, false);
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, server_thread, (void *)(intptr_t)i);
    pthread_barrier_wait(&start);
    uint64_t t0 = now_ns();
    struct timespec ts = { (time_t)(span / 1000000000u), (long)(span % 1000000000u) };
    while (nanosleep(&ts, &ts))
        ;
    atomic_store_explicit(&stop, true, memory_order_relaxed);
    double s = (double)(now_ns() - t0) / 1e9;
    long total = 0;
    for (int i = 0; i < n; i++) {
        void *steps;
        pthread_join(t[i], &steps);
        total += (long)(intptr_t)steps;
    }
    for (int i = 0; i < n; i++)
        drain(&rings[i]);
    pthread_barrier_destroy(&start);
    free(t);
    free(rings);
    return (double)total / s / 1e6;
}

/* ---- pipeline ---------------------------------------------------------------- */

static _Atomic bool producing;

static void *consumer(void *arg)
{
    struct ring *r = arg;
    for (;;) {
        void *p = ring_get(r);
        if (p) {
            m_free(p);
            continue;
        }
        if (!atomic_load_explicit(&producing, memory_order_acquire)) {
            drain(r);
            return NULL;
        }
        sched_yield();
    }
}

static double run_pipeline(int n)
{
    int consumers = n > 1 ? n - 1 : 1;
    long objects = quick ? 20000 : 10000000;
    rings = aligned_alloc(64, sizeof *rings * (size_t)consumers);
    memset(rings, 0, sizeof *rings * (size_t)consumers);
    atomic_store(&producing, true);
    pthread_t *t = malloc(sizeof *t * (size_t)consumers);
    uint64_t t0 = now_ns();
    for (int i = 0; i < consumers; i++)
        pthread_create(&t[i], NULL, consumer, &rings[i]);
    for (long i = 0; i < objects; i++) {
        char *p = m_alloc(64);
        p[0] = (char)i;
        while (!ring_put(&rings[i % consumers], p))
            sched_yield();
    }
    atomic_store_explicit(&producing, false, memory_order_release);
    for (int i = 0; i < consumers; i++)
        pthread_join(t[i], NULL);
    double s = (double)(now_ns() - t0) / 1e9;
    free(t);
    free(rings);
    return (double)objects / s / 1e6;
}

/* ---- idle threads ----------------------------------------------------------- */

static pthread_barrier_t ready, leave;

static void *idle_thread(void *arg)
{
    static const size_t sizes[8] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
    for (int i = 0; i < 8; i++) {
        char *p = m_alloc(sizes[i]);
        p[0] = 1;
        m_free(p);
    }
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&leave);
    return arg;
}

static long run_idle(int n)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
    pthread_barrier_init(&leave, NULL, (unsigned)n + 1);
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &a, idle_thread, NULL)) {
            fprintf(stderr, "pthread_create %d failed\n", i);
            exit(1);
        }
    pthread_barrier_wait(&ready);
    long rss = status_kb("VmRSS:");
    pthread_barrier_wait(&leave);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    return rss;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s WHO server|pipeline|idle THREADS [--quick]\n", argv[0]);
        return 2;
    }
    quick = argc > 4 && strcmp(argv[4], "--quick") == 0;
    const char *who = argv[1], *row = argv[2];
    int n = atoi(argv[3]);
    if (n < 1)
        n = 1;
    if (strcmp(row, "server") == 0)
        printf("%s\tserver %d threads\t%.2f\tM ops/s\n", who, n, run_server(n));
    else if (strcmp(row, "pipeline") == 0)
        printf("%s\tpipeline %d threads\t%.2f\tM objects/s\n", who, n, run_pipeline(n));
    else if (strcmp(row, "idle") == 0)
        printf("%s\tidle %d threads\t%ld\tKiB RSS\n", who, n, run_idle(quick ? 50 : n));
    else
        return 2;
    return 0;
}
