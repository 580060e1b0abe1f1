/*
 * thread.c - per-thread state: the thread registry, creation on first use,
 * thread exit (a thread's cached objects and slabs go back to their caches),
 * and fork (locks taken before, reset in the child).
 *
 * A thread's state is one mapping: the hot cpu entries (one 32-byte entry per
 * cache, read by the fast paths) and the cold entries (partial lists,
 * sheaves or array caches, counters).  Until a thread allocates, kslab_tls
 * points at kslab_no_thread, whose entries are all empty, so the fast paths
 * need no "initialised?" test.  Creating state takes threads_lock: see the
 * rule in slab_common.h.
 */
#include "slab_common.h"

__thread struct kslab_thread *kslab_tls __attribute__((tls_model("initial-exec"))) =
    (struct kslab_thread *)kslab_no_thread;
struct kmem_cache_cpu kslab_no_thread[KSLAB_MAX_CACHES] = {
    [0 ... KSLAB_MAX_CACHES - 1] = { .slab_base = NO_CPU_SLAB }
};

static kslab_lock_t threads_lock = KSLAB_LOCK_INIT;  /* the thread registry */
static struct kslab_thread *threads;

static void thread_link(struct kslab_thread *t)
{
    t->prev_thread = NULL;
    t->next_thread = threads;
    if (threads)
        threads->prev_thread = t;
    threads = t;
}

static void thread_unlink(struct kslab_thread *t)
{
    if (t->prev_thread)
        t->prev_thread->next_thread = t->next_thread;
    else
        threads = t->next_thread;
    if (t->next_thread)
        t->next_thread->prev_thread = t->prev_thread;
}

struct kslab_thread *kslab_thread_create(void)
{
    kslab_ensure_init();
    struct kslab_thread *t = prim_map(sizeof *t);     /* zeroed; untouched cold entries cost no memory */
    if (!t)
        return NULL;
    for (int i = 0; i < KSLAB_MAX_CACHES; i++)
        t->cpu[i].slab_base = NO_CPU_SLAB;
    kslab_lock(&threads_lock);
    thread_link(t);
    kslab_unlock(&threads_lock);
    kslab_tls = t;
    prim_thread_set(t);
    return t;
}

/* threads_lock held, so stats readers see each event exactly once. */
void kslab_thread_fold(struct kslab_thread *t, struct kmem_cache *s)
{
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = &t->cold[s->id];
    cc->stat[ALLOC_FASTPATH] += c->alloc_fast;
    cc->stat[FREE_FASTPATH] += c->free_fast;
    for (int i = 0; i < NR_STATS; i++)
        if (cc->stat[i])
            atomic_fetch_add_explicit(&s->stat_total[i], cc->stat[i], memory_order_relaxed);
    memset(c, 0, sizeof *c);
    memset(cc, 0, sizeof *cc);
    c->slab_base = NO_CPU_SLAB;
}

/* Give all of t's slabs back to their caches and retire t (thread exit). */
static void thread_retire(struct kslab_thread *t)
{
    pages_pcp_drain(&t->pcp);       /* no lock held: it takes pages_lock */
    kslab_lock(&kslab_cache_lock);
    for (struct kmem_cache *s = kslab_cache_list; s && kslab_be->flush_thread; s = s->next_cache)
        kslab_be->flush_thread(t, s);
    kslab_lock(&threads_lock);
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        kslab_thread_fold(t, s);
    thread_unlink(t);
    kslab_unlock(&threads_lock);
    kslab_unlock(&kslab_cache_lock);
    prim_unmap(t, sizeof *t);
}

static void thread_destructor(void *arg)
{
    struct kslab_thread *t = arg;
    kslab_tls = (struct kslab_thread *)kslab_no_thread;
    thread_retire(t);
}

/* Every lock, in the lock order, for fork's prepare handler (phase 0);
 * released or reset (phases 1, 2) with cache_lock last, so the cache list is
 * walked while cache_lock is still held. */
static void atfork_locks(int phase)
{
    if (phase == 0) {
        kslab_lock(&kslab_cache_lock);
        kslab_lock(&threads_lock);
    }
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        kslab_lock_atfork(&s->list_lock, phase);
    if (kslab_be->atfork)
        kslab_be->atfork(phase);
    pages_atfork(phase);
    if (phase != 0) {
        kslab_lock_atfork(&threads_lock, phase);
        kslab_lock_atfork(&kslab_cache_lock, phase);
    }
}

static void atfork_prepare(void)
{
    atfork_locks(0);
}

static void atfork_parent(void)
{
    atfork_locks(1);
}

/* The child has one thread.  Locks held by threads that vanished were taken
 * by our prepare handler, so the data they guard is consistent; reset them.
 * The vanished threads' own caches (cpu slabs, sheaves, array caches) are
 * another matter: a thread may have been forked in the middle of moving
 * objects between its private state and a shared list, so giving its cached
 * objects back could free an object twice.  The child abandons them (their
 * frozen slabs still take frees; the cached objects are leaked, in the child
 * only) and folds their counters. */
static void atfork_child(void)
{
    atfork_locks(2);
    struct kslab_thread *self = kslab_tls, *t = threads, *next;
    for (; t; t = next) {
        next = t->next_thread;
        if (t != self) {
            for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
                kslab_thread_fold(t, s);
            thread_unlink(t);
        }
    }
}

void kslab_for_each_thread(void (*fn)(struct kslab_thread *, void *), void *arg)
{
    kslab_lock(&threads_lock);
    for (struct kslab_thread *t = threads; t; t = t->next_thread)
        fn(t, arg);
    kslab_unlock(&threads_lock);
}

/* Never creates thread state (that takes threads_lock): callable under any
 * lock.  A thread without state counts into the cache's atomic totals. */
void kslab_count(struct kmem_cache *s, enum stat_item si, uint64_t n)
{
    struct kslab_thread *t = kslab_tls;
    stat_add(s, thread_is_real(t) ? &t->cold[s->id] : NULL, si, n);
}

/* Called once from kslab_init(), when allocation already works: glibc's
 * pthread_atfork may call malloc, which (as libkslab-malloc) is us. */
void kslab_threads_init(void)
{
    if (prim_thread_exit_hook(thread_destructor))
        kslab_report("cannot create the thread-exit key");
}

void kslab_threads_atfork_init(void)
{
    prim_atfork(atfork_prepare, atfork_parent, atfork_child);
}
