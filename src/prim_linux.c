/*
 * prim_linux.c - every call kslab makes to the operating system (and to
 * pthread): the prim layer of prim.h.
 *
 * Nothing here allocates from the C heap, so it is safe to use before (and
 * from inside) any malloc.
 */
#define _GNU_SOURCE
#include "prim.h"

#include <pthread.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Failure injection for the out-of-memory tests: the countdown is shared by
 * all threads; a relaxed RMW is enough because only its value matters. */
static atomic_int fail_countdown;

void kslab_test_fail_map(int n)
{
    atomic_store_explicit(&fail_countdown, n, memory_order_relaxed);
}


/* n > 0: the next n mappings fail; n < 0: all fail until disarmed. */
static bool injected_failure(void)
{
    int c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    if (likely(c == 0))
        return false;
    while (c > 0) {
        if (atomic_compare_exchange_weak_explicit(&fail_countdown, &c, c - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    }
    return c < 0;
}

void *prim_map(size_t bytes)
{
    if (unlikely(injected_failure()))
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    return p;
}

/* Map `bytes` at an address aligned to `align` (a power of two >= page):
 * over-map, then trim both ends. */
void *prim_map_aligned(size_t bytes, size_t align)
{
    size_t over = bytes + align - PAGE_SIZE;
    if (over < bytes)
        return NULL;
    char *p = prim_map(over);
    if (!p)
        return NULL;
    uintptr_t start = ALIGN_UP((uintptr_t)p, align);
    size_t head = start - (uintptr_t)p;
    size_t tail = over - head - bytes;
    if (head)
        munmap(p, head);
    if (tail)
        munmap((char *)start + bytes, tail);
    return (void *)start;
}

void prim_unmap(void *p, size_t bytes)
{
    munmap(p, bytes);
}

void prim_release(void *p, size_t bytes)
{
    madvise(p, bytes, MADV_DONTNEED);
}

const char *prim_getenv(const char *name)
{
    size_t n = strlen(name);
    if (!environ)
        return NULL;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

unsigned prim_ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_CONF);
    return n > 0 ? (unsigned)n : 1;
}

uint64_t prim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void prim_write_stderr(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(2, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

void prim_yield(void)
{
    sched_yield();
}

static pthread_key_t thread_key;

int prim_thread_exit_hook(void (*fn)(void *))
{
    return pthread_key_create(&thread_key, fn);
}

void prim_thread_set(void *arg)
{
    pthread_setspecific(thread_key, arg);
}

void prim_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    pthread_atfork(prepare, parent, child);
}

_Noreturn void prim_abort(void)
{
    abort();
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void kslab_lock_slow(kslab_lock_t *l)
{
    for (unsigned spins = 0;; spins++) {
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0) {
            int z = 0;
            if (atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                      memory_order_relaxed))
                return;
        }
        if (spins < 64)
            cpu_relax();
        else
            sched_yield();
    }
}
