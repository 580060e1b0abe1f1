/* test_stress.c - threads allocate, hand objects to each other and free the
 * objects they receive (cross-thread frees), verifying every object's
 * contents.  Run under TSan in `make test`. */
#include "check.h"
#include <kslab.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define NTHREADS 4
#define QCAP 1024

struct queue {
    pthread_mutex_t mu;
    void *items[QCAP];
    int head, tail, n;
};
static struct queue queues[NTHREADS];
static struct kmem_cache *caches[3];
static const unsigned sizes[3] = { 32, 256, 1000 };
static long per_thread = 200000;
static atomic_long bad, done_threads;

struct hdr { uint32_t from, seq, cache, size; };

static int push(struct queue *q, void *p)
{
    pthread_mutex_lock(&q->mu);
    int ok = q->n < QCAP;
    if (ok) {
        q->items[q->tail] = p;
        q->tail = (q->tail + 1) % QCAP;
        q->n++;
    }
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static void *pop(struct queue *q)
{
    void *p = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->n) {
        p = q->items[q->head];
        q->head = (q->head + 1) % QCAP;
        q->n--;
    }
    pthread_mutex_unlock(&q->mu);
    return p;
}

static void verify_free(void *p)
{
    struct hdr *h = p;
    unsigned char *b = p;
    unsigned char v = (unsigned char)(h->from * 31 + h->seq);
    for (uint32_t i = sizeof *h; i < h->size; i++)
        if (b[i] != v) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    if (h->cache < 3 && h->seq % 2)
        kmem_cache_free(caches[h->cache], p);
    else
        kfree(p);
}

static void drain(int me)
{
    void *p;
    while ((p = pop(&queues[me])))
        verify_free(p);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t r = 0x12345 + (uint64_t)me * 7919;
    void *keep[64] = { 0 };
    for (long seq = 0; seq < per_thread; seq++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t kind = (uint32_t)(r >> 33) % 4, size;
        void *p;
        if (kind < 3) {
            p = kmem_cache_alloc(caches[kind], GFP_KERNEL);
            size = sizes[kind];
        } else {
            size = 16 + (uint32_t)(r >> 40) % 3000;
            p = kmalloc(size, GFP_KERNEL);
        }
        if (!p) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        struct hdr *h = p;
        h->from = (uint32_t)me;
        h->seq = (uint32_t)seq;
        h->cache = kind;
        h->size = size;
        memset((char *)p + sizeof *h, (unsigned char)(me * 31 + (uint32_t)seq), size - sizeof *h);
        int dest = (int)((r >> 20) % NTHREADS);
        if (dest == me) {                 /* keep some locally for a while */
            int slot = (int)((r >> 50) % 64);
            if (keep[slot])
                verify_free(keep[slot]);
            keep[slot] = p;
        } else {
            while (!push(&queues[dest], p))
                drain(me);
        }
        if (seq % 16 == 0)
            drain(me);
    }
    for (int i = 0; i < 64; i++)
        if (keep[i])
            verify_free(keep[i]);
    atomic_fetch_add(&done_threads, 1);
    while (atomic_load(&done_threads) < NTHREADS)
        drain(me);
    drain(me);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        per_thread = atol(argv[1]);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "stress%d", i);
        caches[i] = kmem_cache_create(name, sizes[i], 0, SLAB_NO_MERGE, NULL);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_mutex_init(&queues[i].mu, NULL);
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        drain(i);
    CHECK_EQ(atomic_load(&bad), 0);
    for (int i = 0; i < 3; i++) {
        struct kslab_stats st;
        kslab_cache_stats(caches[i], &st);
        CHECK_EQ(st.active_objs, 0);
        if (strcmp(kslab_allocator_name(), "slub") == 0)
            CHECK(st.free_slowpath > 0);      /* cross-thread frees took the slow path */
        CHECK_EQ(st.alloc_fastpath + st.alloc_slowpath, st.free_fastpath + st.free_slowpath);
        printf("%s: fast %llu/%llu slow %llu/%llu cmpxchg_fail %llu slabs %llu\n",
               kslab_cache_name(caches[i]), (unsigned long long)st.alloc_fastpath,
               (unsigned long long)st.free_fastpath, (unsigned long long)st.alloc_slowpath,
               (unsigned long long)st.free_slowpath, (unsigned long long)st.cmpxchg_double_fail,
               (unsigned long long)st.num_slabs);
        kmem_cache_shrink(caches[i]);
        kslab_cache_stats(caches[i], &st);
        CHECK_EQ(st.num_slabs, 0);        /* exited threads gave their slabs back */
        kmem_cache_destroy(caches[i]);
    }
    return check_done();
}
