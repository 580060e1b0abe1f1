/* test_rcu.c - kslab-rcu.h on liburcu: kfree_rcu frees only after a grace
 * period (readers holding an object never see it reused), a
 * SLAB_TYPESAFE_BY_RCU cache's memory never becomes another cache's while
 * readers look, its empty slabs go back after a grace period on shrink,
 * rcu_barrier() before kmem_cache_destroy leaves nothing behind, and the
 * mightsleep and kvfree forms.
 *
 * Not run under ThreadSanitizer: liburcu-memb's grace periods (membarrier
 * and per-reader counters read by the writer) are invisible to TSan, which
 * then reports every reader/callback pair as a race. */
#include "check.h"
#include "helpers.h"
#include <kslab-rcu.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static atomic_int stop;
static atomic_long errors, reads;

/* ---- kfree_rcu: no reuse while a reader holds the object ---- */
struct node {
    uint64_t gen;
    char pad[40];
    struct rcu_head rh;
};
static struct node *gp;

/* A reader thread: until stop, one read-side critical section after
 * another, each running arg (a bool (*)(void): false when what it read was
 * wrong), counted in reads and errors. */
static void *reader(void *arg)
{
    bool (*read_ok)(void) = (bool (*)(void))arg;
    rcu_register_thread();
    while (!atomic_load(&stop)) {
        rcu_read_lock();
        if (!read_ok())
            atomic_fetch_add(&errors, 1);
        rcu_read_unlock();
        atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
    }
    rcu_unregister_thread();
    return NULL;
}

/* The object gp points at keeps its generation while the reader holds it. */
static bool gen_stable(void)
{
    struct node *p = rcu_dereference(gp);
    uint64_t g = __atomic_load_n(&p->gen, __ATOMIC_RELAXED);
    for (int i = 0; i < 200; i++)
        if (__atomic_load_n(&p->gen, __ATOMIC_RELAXED) != g)
            return false;
    return true;
}

static void test_kfree_rcu(void)
{
    rcu_register_thread();
    gp = kzalloc(sizeof *gp, GFP_KERNEL);
    pthread_t r[2];
    atomic_store(&stop, 0);
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, (void *)gen_stable);
    for (uint64_t g = 1; g <= 200000; g++) {
        struct node *n = kmalloc(sizeof *n, GFP_KERNEL);
        CHECK(n != NULL);
        __atomic_store_n(&n->gen, g, __ATOMIC_RELAXED);
        struct node *old = rcu_xchg_pointer(&gp, n);
        kfree_rcu(old, rh);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    printf("kfree_rcu: %ld reads, %ld saw their object reused\n", atomic_load(&reads),
           atomic_load(&errors));
    CHECK_EQ(atomic_load(&errors), 0);
    CHECK(atomic_load(&reads) > 0);
    struct node *last = gp;
    kfree_rcu(last, rh);
    struct node *none = NULL;
    kfree_rcu(none, rh);                                    /* NULL: nothing */
    rcu_barrier();
    CHECK(kslab_object_start(last) == NULL || kslab_object_start(last) == last);
    rcu_unregister_thread();
}

/* ---- SLAB_TYPESAFE_BY_RCU: type-stable memory, slabs back after a grace period ---- */
struct typed {
    uint32_t type;
    uint32_t pad[15];
};
static void ctor_a(void *p) { ((struct typed *)p)->type = 0xA; }
static void ctor_b(void *p) { ((struct typed *)p)->type = 0xB; }
static struct kmem_cache *ca, *cb;
static struct typed *gpa;

/* The object gpa points at stays a type-A object while the reader looks. */
static bool type_stable(void)
{
    struct typed *p = rcu_dereference(gpa);
    for (int i = 0; i < 200; i++)
        if (__atomic_load_n(&p->type, __ATOMIC_RELAXED) != 0xA)
            return false;
    return true;
}

static void *other_type(void *arg)
{
    (void)arg;
    void *o[256];
    while (!atomic_load(&stop)) {
        for (int i = 0; i < 256; i++)
            o[i] = kmem_cache_alloc(cb, GFP_KERNEL);
        for (int i = 0; i < 256; i++)
            if (o[i]) {
                memset(o[i], 0xbb, sizeof(struct typed));
                ((struct typed *)o[i])->type = 0xB;
                kmem_cache_free(cb, o[i]);
            }
        kmem_cache_shrink(cb);
    }
    return NULL;
}

/* c, all of whose objects are freed: after shrink and rcu_barrier it keeps
 * no slab (given back after the grace period) and no object (SLOB's, whose
 * pages are shared, too) */
static void check_given_back(struct kmem_cache *c, const char *what)
{
    kmem_cache_shrink(c);
    rcu_barrier();
    struct kslab_stats st;
    kslab_cache_stats(c, &st);
    printf("%s: %llu objects, %llu slabs kept after shrink and rcu_barrier\n", what,
           (unsigned long long)st.num_objs, (unsigned long long)st.num_slabs);
    CHECK_EQ(st.active_objs, 0);
    CHECK_EQ(st.num_slabs, 0);
    CHECK_EQ(st.num_objs, 0);
}

static void test_typesafe(void)
{
    ca = kmem_cache_create("rcu_type_a", sizeof(struct typed), 0, SLAB_TYPESAFE_BY_RCU, ctor_a);
    cb = kmem_cache_create("rcu_type_b", sizeof(struct typed), 0, SLAB_NO_MERGE, ctor_b);
    CHECK(ca && cb);
    rcu_register_thread();
    gpa = kmem_cache_alloc(ca, GFP_KERNEL);
    atomic_store(&stop, 0);
    atomic_store(&errors, 0);
    pthread_t r[2], o;
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, (void *)type_stable);
    pthread_create(&o, NULL, other_type, NULL);
    enum { BATCH = 512 };
    static struct typed *keep[BATCH];
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < BATCH; i++)                 /* fill slabs, then empty them */
            keep[i] = kmem_cache_alloc(ca, GFP_KERNEL);
        struct typed *n = keep[BATCH - 1];
        keep[BATCH - 1] = rcu_xchg_pointer(&gpa, n);
        for (int i = 0; i < BATCH; i++)
            kmem_cache_free(ca, keep[i]);               /* reused at once: type-safe */
        kmem_cache_shrink(ca);                          /* empty slabs: after a grace period */
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    pthread_join(o, NULL);
    printf("typesafe: %ld reads saw another type\n", atomic_load(&errors));
    CHECK_EQ(atomic_load(&errors), 0);
    kmem_cache_free(ca, gpa);
    check_given_back(ca, "typesafe");
    kmem_cache_destroy(ca);
    kmem_cache_destroy(cb);
    rcu_unregister_thread();
}

/* An RCU cache of objects above a page (SLOB gives them pages of their
 * own): freed ones wait for the cache, and shrink gives them back after a
 * grace period, on every back-end. */
static void test_typesafe_big(void)
{
    rcu_register_thread();
    struct kmem_cache *c = kmem_cache_create("rcu_big", 3 * 4096, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    CHECK(c != NULL);
    void *o[16];
    for (int i = 0; i < 16; i++) {
        o[i] = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(o[i] != NULL);
        memset(o[i], i, 3 * 4096);
    }
    for (int i = 0; i < 16; i++)
        kmem_cache_free(c, o[i]);
    check_given_back(c, "typesafe big");
    kmem_cache_destroy(c);
    rcu_unregister_thread();
}

/* A second free of an RCU object that shrink took off its cache and that
 * waits for the grace period: still reported (SLOB keeps such blocks
 * marked while they wait). */
static void rcu_wait_double_free(void *arg)
{
    (void)arg;
    rcu_register_thread();
    struct kmem_cache *c = kmem_cache_create("rcu_dfree", 48, 0, SLAB_TYPESAFE_BY_RCU, NULL);
    void *a = kmem_cache_alloc(c, GFP_KERNEL), *b = kmem_cache_alloc(c, GFP_KERNEL);
    kmem_cache_free(c, a);
    kmem_cache_free(c, b);
    rcu_read_lock();                    /* the grace period cannot end before the free below */
    kmem_cache_shrink(c);
    kmem_cache_free(c, a);
    rcu_read_unlock();
}

/* ---- rcu_barrier before destroy; mightsleep; kvfree_rcu ---- */
struct obj {
    long v[6];
    struct rcu_head rh;
};
static void test_barrier_and_forms(void)
{
    rcu_register_thread();
    struct kmem_cache *c = kmem_cache_create("rcu_objs", sizeof(struct obj), 0, 0, NULL);
    CHECK(c != NULL);
    for (int i = 0; i < 5000; i++) {
        struct obj *o = kmem_cache_alloc(c, GFP_KERNEL);
        CHECK(o != NULL);
        rcu_read_lock();                                /* allowed inside a reader */
        kfree_rcu(o, rh);
        rcu_read_unlock();
    }
    rcu_barrier();
    struct kslab_stats st;
    kslab_cache_stats(c, &st);
    CHECK_EQ(st.active_objs, 0);                        /* all freed: destroy finds none */
    kmem_cache_destroy(c);

    long *m = kmalloc(100, GFP_KERNEL);
    CHECK(kslab_object_start(m + 3) == m);
    kfree_rcu_mightsleep(m);
    CHECK(kslab_object_start(m) == NULL || kslab_object_start(m) == m);
    kvfree_rcu_mightsleep(NULL);

    struct big {
        struct rcu_head rh;
        char data[200000];
    } *b = kvmalloc(sizeof *b, GFP_KERNEL);
    CHECK(b != NULL);
    CHECK(kslab_object_start(&b->rh) == b);
    CHECK(kslab_object_start(b->data + 150000) == b);
    kvfree_rcu(b, rh);
    rcu_barrier();
    CHECK(kslab_object_start(b) == NULL);               /* the large block is gone */
    rcu_unregister_thread();
}

int main(void)
{
    test_kfree_rcu();
    test_typesafe();
    test_typesafe_big();
    /* where README's double-free table says a free of an object already
     * back on its slab is caught: SLOB and slob-seg (no sheaves) always;
     * SLUB and SLAB by the per-CPU mode's free tag */
    bool sheaves = strcmp(kslab_allocator_name(), "slob") != 0 &&
                   strcmp(kslab_allocator_name(), "slob-seg") != 0;
#ifdef KSLAB_NO_FREE_TAG
    bool tagged = false;
#else
    bool tagged = test_percpu();
#endif
    if (!sheaves || tagged)
        CHECK_DEATH(rcu_wait_double_free, NULL, "double free", "rcu_dfree");
    test_barrier_and_forms();
    return check_done();
}
