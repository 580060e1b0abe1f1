/*
 * thread.c - per-thread state: the thread registry, creation on first use,
 * thread exit (a thread's cached objects and slabs go back to their caches),
 * and fork (locks taken before, reset in the child).
 *
 * A thread's state is one mapping holding the hot cpu entries (one 32-byte
 * entry per cache id, read by the fast paths; all-zero is empty, so the
 * mapping is never initialised and only the pages of ids the thread uses
 * are touched), plus chunks of 64 cold entries (partial lists, sheaves or
 * array caches, counters) mapped on first use of one of their ids.  A
 * thread that used 8 caches holds a few pages, whatever the number of
 * caches.  Until a thread allocates, kslab_tls points at kslab_no_thread,
 * whose entries are all empty, so the fast paths need no "initialised?"
 * test.  Creating state takes threads_lock: see the
 * rule in slab_common.h.
 */
#include "slab_common.h"
#include "percpu.h"

__thread struct kslab_thread *kslab_tls __attribute__((tls_model("initial-exec"))) =
    (struct kslab_thread *)kslab_no_thread;
struct kmem_cache_cpu kslab_no_thread[KSLAB_MAX_CACHES] KSLAB_BIG_BSS;   /* zero: empty (bss) */
#define COLD_CHUNK_BYTES (sizeof(struct kmem_cache_cpu_cold) << COLD_CHUNK_SHIFT)

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
    struct kslab_thread *t = prim_map(sizeof *t);     /* zeroed: every entry empty */
    if (!t)
        return NULL;
    kslab_lock(&threads_lock);
    thread_link(t);
    kslab_unlock(&threads_lock);
    kslab_tls = t;
    prim_thread_set(t);
    return t;
}

/* Mark id's cold entry used, mapping its chunk first if need be (the
 * calling thread's, t may be kslab_no_thread).  Only the owner writes its
 * slots: plain load and store, no read-modify-write; each store a release
 * (struct kslab_cold_slot). */
struct kslab_thread *kslab_cold_create(struct kslab_thread *t, unsigned id)
{
    if (!thread_is_real(t) && !(t = kslab_thread_create()))
        return NULL;
    struct kslab_cold_slot *k = &t->cold[id >> COLD_CHUNK_SHIFT];
    if (!atomic_load_explicit(&k->chunk, memory_order_relaxed)) {
        struct kmem_cache_cpu_cold *chunk = prim_map(COLD_CHUNK_BYTES);
        if (!chunk)
            return NULL;
        atomic_store_explicit(&k->chunk, chunk, memory_order_release);
    }
    uint64_t used = atomic_load_explicit(&k->used, memory_order_relaxed);
    atomic_store_explicit(&k->used, used | cold_bit(id), memory_order_release);
    return t;
}

/* Calls fn(t, s, arg) for each live cache whose cold entry t has used: the
 * caches t may hold state for (cache_lock held, so the ids stay bound to
 * their caches). */
static void for_each_used_cache(struct kslab_thread *t,
                                void (*fn)(struct kslab_thread *, struct kmem_cache *))
{
    for (unsigned k = 0; k < COLD_CHUNKS; k++) {
        /* acquire: pairs with the owner's release (a retiring thread's
         * own slots, or another's under threads_lock) */
        uint64_t used = atomic_load_explicit(&t->cold[k].used, memory_order_acquire);
        for (; used; used &= used - 1) {
            struct kmem_cache *s =
                kslab_cache_by_id((k << COLD_CHUNK_SHIFT) + (unsigned)__builtin_ctzll(used));
            if (s)
                fn(t, s);
        }
    }
}

static void unmap_cold(struct kslab_thread *t)
{
    for (unsigned k = 0; k < COLD_CHUNKS; k++) {
        struct kmem_cache_cpu_cold *c = atomic_load_explicit(&t->cold[k].chunk, memory_order_relaxed);
        if (c)
            prim_unmap(c, COLD_CHUNK_BYTES);
    }
}

/* threads_lock held, so stats readers see each event exactly once.  A
 * thread without a cold entry for s never held anything of it. */
void kslab_thread_fold(struct kslab_thread *t, struct kmem_cache *s)
{
    struct kmem_cache_cpu *c = &t->cpu[s->id];
    struct kmem_cache_cpu_cold *cc = kslab_cold_peek(t, s->id);
    if (!cc)
        return;
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
    if (kslab_be->flush_thread)
        for_each_used_cache(t, kslab_be->flush_thread);
    kslab_lock(&threads_lock);
    for_each_used_cache(t, kslab_thread_fold);
    thread_unlink(t);
    kslab_unlock(&threads_lock);
    kslab_unlock(&kslab_cache_lock);
    unmap_cold(t);
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
        kslab_lock(&kslab_pcpu_lock);
    }
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        kslab_lock_atfork(&s->list_lock, phase);
    if (kslab_be->atfork)
        kslab_be->atfork(phase);
    pages_atfork(phase);
    if (phase != 0) {
        kslab_lock_atfork(&kslab_pcpu_lock, phase);
        kslab_lock_atfork(&threads_lock, phase);
        kslab_lock_atfork(&kslab_cache_lock, phase);
    }
}

/* Whether this fork took the locks.  A process with one thread forks with
 * none of kslab's locks held by anyone else (the forking thread itself
 * holds one only if fork came from a signal handler that interrupted
 * kslab, and then taking it would hang), so it takes none: as glibc skips
 * its own malloc's locks.  Taking and releasing every cache's list_lock
 * wrote every cache's descriptor in parent and child after the fork, each
 * page a copy-on-write fault: about 38 per fork with malloc's 104 caches,
 * 18 % of the page faults of a shell script that forks seq and tr.
 * Written in prepare, read in parent and child: by the one forking thread. */
static bool fork_locked;

static void atfork_prepare(void)
{
    bool locked = !prim_single_threaded();
    if (fork_locked != locked)      /* a store every fork: a copy-on-write fault every fork */
        fork_locked = locked;
    if (locked)
        atfork_locks(0);
}

static void atfork_parent(void)
{
    if (fork_locked)
        atfork_locks(1);
}

/* The child has one thread.  Locks held by threads that vanished were taken
 * by our prepare handler, so the data they guard is consistent; reset them.
 * The vanished threads' own caches (cpu slabs, sheaves, array caches) are
 * another matter: a thread may have been forked in the middle of moving
 * objects between its private state and a shared list, so giving its cached
 * objects back could free an object twice.  The child abandons them (their
 * frozen slabs still take frees; the cached objects are leaked, in the child
 * only) and folds their counters.  Nothing else: a child that writes no
 * page of kslab's takes no copy-on-write fault here (the child inherits
 * the membarrier registration, prim_rseq_fence; the slabinfo publisher
 * finds the new pid at its first tick). */
static void atfork_child(void)
{
    if (fork_locked)
        atfork_locks(2);
    struct kslab_thread *self = kslab_tls, *t = threads, *next;
    for (; t; t = next) {
        next = t->next_thread;
        if (t != self) {
            for_each_used_cache(t, kslab_thread_fold);
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
    stat_add(s, thread_is_real(t) ? kslab_cold_peek(t, s->id) : NULL, si, n);
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
