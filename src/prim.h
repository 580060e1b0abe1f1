/*
 * prim.h - the bottom layer: what the compiler and the OS give kslab.
 *
 * prim_linux.c is the only file that calls the OS or pthread: mappings,
 * environment, time, CPU count, stderr, abort, yield, the thread-exit hook
 * and the fork hooks.  The spinlock and the one-line reports live here too,
 * because every layer above uses them.
 */
#ifndef KSLAB_PRIM_H
#define KSLAB_PRIM_H

#include "kslab.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define noinline    __attribute__((__noinline__))
#define cold_fn     __attribute__((cold, __noinline__))
/* A function whose callers must not learn anything from its body (that it
 * never returns, which registers it leaves alone): GCC's noipa.  clang has
 * no such attribute and does less across calls; noinline there. */
#ifdef __clang__
#define noipa_fn    __attribute__((__noinline__))
#else
#define noipa_fn    __attribute__((__noipa__))
#endif
/* A fast path's entry: on a 64-byte boundary, so that its timing does not
 * move with the code laid out before it (identical malloc and free code
 * took 0.5 ns a pair more, 6.00 against 5.46, after an unrelated change
 * shifted them by 48 bytes). */
#define fastpath_fn __attribute__((aligned(64)))
/* A big zero-filled array of which a process touches a few pages (the
 * address maps, the id tables, the empty per-CPU and per-thread entries):
 * in .lbss, which the linker places after .bss, so that the small variables
 * every process writes (locks, counters, the boot caches) share a few
 * pages instead of being scattered between the arrays, a fault each at
 * start-up and a copy-on-write fault each in a fork child that writes
 * them.  GCC on x86-64 only: clang 14 makes .lbss PROGBITS (megabytes of
 * zeros in the file). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KSLAB_BIG_BSS __attribute__((section(".lbss")))
#else
#define KSLAB_BIG_BSS
#endif

#define PAGE_SHIFT 12
#define PAGE_SIZE  (1ul << PAGE_SHIFT)
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uintptr_t)(a) - 1))

/* ---- prim: the OS ------------------------------------------------------- */
void *prim_map(size_t bytes);                   /* anonymous RW mapping, NULL on failure */
void *prim_map_aligned(size_t bytes, size_t align);
/* The next three return false (errno kept) when the OS refuses: the caller
 * keeps the memory and retries or reports; nothing is dropped silently. */
bool prim_unmap(void *p, size_t bytes);
bool prim_release(void *p, size_t bytes);       /* give pages back, keep the range (MADV_DONTNEED) */
/* mremap: resize [p, p + old) to new bytes in place, or (to != NULL) move the
 * pages to `to`, replacing whatever is mapped there.  NULL if refused. */
void *prim_remap(void *p, size_t old, size_t new_bytes, void *to);
/* KFENCE's pool (kfence.c): a PROT_NONE reservation, pages made
 * accessible (rw) or not; false if the OS refuses. */
void *prim_map_none(size_t bytes);
bool prim_protect(void *p, size_t bytes, bool rw);
/* Make [p, p + bytes) of a prim_map_none reservation read-write (the
 * arena zone); false if the OS refuses, or a test injected a map failure. */
bool prim_commit(void *p, size_t bytes);
/* Install fn as SIGSEGV's first look: it gets the faulting address and
 * whether the access was a write, and returns only if the fault is not
 * its own; then the handler installed before runs (or the default). */
bool prim_on_fault(void (*fn)(void *addr, bool write));
const char *prim_getenv(const char *name);      /* no allocation: safe before malloc works */
int prim_getpid(void);                          /* a raw system call: no lazy binding */
unsigned prim_ncpus(void);
uint64_t prim_now_ns(void);                     /* CLOCK_MONOTONIC */
uint64_t prim_random_seed(void);                /* getrandom, else time and addresses */
void prim_write_stderr(const char *s, size_t n);
_Noreturn void prim_abort(void);
void prim_yield(void);                          /* sched_yield */
/* rseq (the per-CPU mode): the offset of the thread's struct rseq from the
 * thread pointer (KSLAB_RSEQ_NONE: no rseq for this process), the number of possible
 * CPUs, and the membarrier fence that aborts critical sections on a CPU. */
long prim_rseq_offset(void);
/* KSLAB_RSEQ_NONE: what prim_rseq_offset returns, and kslab_rseq_off
 * holds, where there is no per-CPU mode: 0, the thread pointer itself,
 * where x86-64's TCB keeps its own address, never a struct rseq.  An
 * offset may be negative: kslab's own area (below).  (0, not 1: the front
 * doors' mode test is then `test; jz`, as `off >= 0` was, where a compare
 * with 1 made the drop-in's malloc a byte longer and its pairs 1-2 %
 * slower, 6.95-7.00 cycles against main's 6.83-6.88.) */
#define KSLAB_RSEQ_NONE 0
/* Where glibc did not register rseq (before 2.35, glibc.pthread.rseq=0)
 * prim_rseq_offset gives the offset of a struct rseq of kslab's own
 * (negative) and registers nothing.  Once the per-CPU mode runs on it,
 * each thread registers it at its first per-CPU slow path (percpu.c,
 * pcpu_register, calls this: a no-op once the thread has tried), so that
 * where the per-CPU mode is not taken the area stays free for another
 * library.  Until then the thread's cpu_id is KSLAB_RSEQ_IDLE_CPU, whose
 * entry is cap 0 in every sheaf array (percpu.h), so each section misses
 * into a slow path. */
#define KSLAB_RSEQ_IDLE_CPU 1023
void prim_rseq_register(void);
unsigned prim_possible_cpus(void);
bool prim_rseq_fence_init(void);
void prim_rseq_fence(unsigned cpu);
/* Code patching (the free tag's immediates, percpu.c): make the pages of
 * [lo, hi) writable as well as executable (writable) or executable only
 * again; false if the system refuses (W^X policies).  prim_sync_core: every
 * thread of the process serializes its instruction stream before it next
 * runs (membarrier SYNC_CORE, where the kernel has it), so none can run
 * instructions it fetched before a patch. */
bool prim_text_writable(void *lo, void *hi, bool writable);
void prim_sync_core(void);
/* Thread exit: fn(arg) runs when a thread that called prim_thread_set(arg)
 * exits (a pthread key destructor).  Registered once. */
int prim_thread_exit_hook(void (*fn)(void *));
void prim_thread_set(void *arg);
/* Fork: prepare runs before fork, parent and child after it, in each. */
void prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* ---- reports: one line on stderr, "kslab: ..." (report.c) ---------------- */
_Noreturn void kslab_report(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
void kslab_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));

/* ---- locks --------------------------------------------------------------- */
/* Test-and-test-and-set spinlock with back-off to sched_yield.  lock() is an
 * acquire (the critical section may not move above it), unlock() a release
 * (writes inside are visible to the next owner).
 *
 * While the process has one thread (glibc's __libc_single_threaded, 2.32+:
 * set before pthread_create starts the first other thread and never set
 * back while it runs), nobody can contend: lock() is a plain load and
 * store, no locked instruction (about 20 cycles less; glibc's malloc skips
 * its arena locks the same way).  Ordering: the thread that pthread_create
 * starts happens after everything its creator did, so a lock taken or
 * released this way is seen by it as any other; the release store of
 * unlock() stays.  A lock found held while single-threaded can only be a
 * re-entry (a signal handler calling in): it goes to the slow path and
 * waits, as it always did.  Weak: without the flag (another libc), every
 * lock is a compare-and-swap.  Like glibc, this trusts that threads come
 * from pthread_create: a raw clone() sharing memory would not be seen. */
typedef struct { atomic_int v; } kslab_lock_t;
#define KSLAB_LOCK_INIT { 0 }
void kslab_lock_slow(kslab_lock_t *l);
extern char __libc_single_threaded __attribute__((weak));
static inline bool prim_single_threaded(void)
{
    return &__libc_single_threaded != NULL && __libc_single_threaded;
}
static inline void kslab_lock(kslab_lock_t *l)
{
    if (prim_single_threaded() && likely(!atomic_load_explicit(&l->v, memory_order_relaxed))) {
        atomic_store_explicit(&l->v, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_acquire);  /* the compiler keeps the section below */
        return;
    }
    int z = 0;
    if (likely(atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                     memory_order_relaxed)))
        return;
    kslab_lock_slow(l);
}
/* One attempt, no waiting: true if l is now held (acquire, as kslab_lock). */
static inline bool kslab_trylock(kslab_lock_t *l)
{
    int z = 0;
    return atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}
static inline void kslab_unlock(kslab_lock_t *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}
static inline void kslab_lock_reinit(kslab_lock_t *l) /* fork child only */
{
    atomic_store_explicit(&l->v, 0, memory_order_relaxed);
}
/* fork: phase 0 (prepare) takes l, 1 (parent) releases it, 2 (child)
 * resets it: the three steps every lock of kslab goes through. */
static inline void kslab_lock_atfork(kslab_lock_t *l, int phase)
{
    if (phase == 0)
        kslab_lock(l);
    else if (phase == 1)
        kslab_unlock(l);
    else
        kslab_lock_reinit(l);
}

#endif
