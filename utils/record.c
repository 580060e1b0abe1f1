/*
 * record.c - libkslab-record.so, the LD_PRELOAD recorder kslab-record runs a
 * program under.  It interposes the malloc family, passes every call to
 * glibc's allocator (__libc_malloc and friends: no dlsym, no recursion) and
 * appends an event per call to its thread's buffer; a full buffer is one
 * chunk written with pwrite at an offset reserved by an atomic add, so
 * threads never wait on each other.  Memory: one buffer per thread.
 *
 * Set up by kslab-record through the environment: KSLAB_RECORD_RAW (the raw
 * file) and KSLAB_RECORD_PID (the process to record: programs it runs
 * inherit LD_PRELOAD but are not recorded).  A fork child stops recording.
 *
 * Ordering: a free takes its sequence number before calling free, an
 * allocation after its call returns.  If thread B's malloc returns what
 * thread A freed, glibc's own synchronization makes A's free happen before
 * B's malloc, so A's fetch-add happens before B's, and the atomic's single
 * modification order gives A the smaller number: relaxed is enough.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define EXPORT __attribute__((visibility("default")))
#define CHUNK_EVENTS 2047

struct tbuf {
    struct tbuf *next;            /* every buffer, for the flush at exit */
    atomic_flag busy;             /* the owner appending, or the exit flush */
    uint32_t tid;
    struct kst_raw_chunk hdr;     /* written with the events that follow it */
    struct kst_raw_ev ev[CHUNK_EVENTS];
};

static int raw_fd = -1;
static atomic_bool active;        /* relaxed: a late reader records one event more or less */
static _Atomic uint64_t seq;      /* relaxed: see above */
static _Atomic uint64_t file_off; /* relaxed: only reserves disjoint ranges */
static atomic_uint next_tid;      /* relaxed: only unique */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *all_bufs;
static pthread_key_t exit_key;
static __thread struct tbuf *my_buf;
static __thread bool in_recorder;

static void flush(struct tbuf *b)
{
    if (!b->hdr.n)
        return;
    size_t bytes = sizeof b->hdr + (size_t)b->hdr.n * sizeof b->ev[0];
    uint64_t off = atomic_fetch_add_explicit(&file_off, bytes, memory_order_relaxed);
    const char *p = (const char *)&b->hdr;
    while (bytes) {
        ssize_t w = pwrite(raw_fd, p, bytes, (off_t)off);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            atomic_store_explicit(&active, false, memory_order_relaxed);   /* disk full */
            break;
        }
        p += w;
        off += (uint64_t)w;
        bytes -= (size_t)w;
    }
    b->hdr.n = 0;
}

static struct tbuf *new_buf(void)
{
    struct tbuf *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        return NULL;
    atomic_flag_clear(&b->busy);
    b->tid = atomic_fetch_add_explicit(&next_tid, 1, memory_order_relaxed);
    b->hdr.magic = RAW_CHUNK_MAGIC;
    b->hdr.tid = b->tid;
    pthread_mutex_lock(&list_lock);
    b->next = all_bufs;
    all_bufs = b;
    pthread_mutex_unlock(&list_lock);
    in_recorder = true;               /* setspecific may allocate: not recorded */
    pthread_setspecific(exit_key, b);
    in_recorder = false;
    return b;
}

static void record(unsigned op, const void *ptr, size_t size, uint64_t aux)
{
    if (!atomic_load_explicit(&active, memory_order_relaxed) || in_recorder)
        return;
    uint64_t s = atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
    struct tbuf *b = my_buf;
    if (!b && !(b = my_buf = new_buf()))
        return;
    while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
        ;                             /* only the exit flush ever holds it */
    struct kst_raw_ev *e = &b->ev[b->hdr.n++];
    e->seq_op = s << 8 | op;
    e->ptr = (uint64_t)(uintptr_t)ptr;
    e->size = size;
    e->aux = aux;
    if (b->hdr.n == CHUNK_EVENTS)
        flush(b);
    atomic_flag_clear_explicit(&b->busy, memory_order_release);
}

/* A thread ends: its exit, then what it has (frees by later TLS
 * destructors still go to its buffer, flushed at process exit). */
static void thread_exit(void *arg)
{
    struct tbuf *b = arg;
    record(RAW_THREAD_EXIT, NULL, 0, 0);
    while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
        ;
    flush(b);
    atomic_flag_clear_explicit(&b->busy, memory_order_release);
}

static void fork_child(void)
{
    atomic_store_explicit(&active, false, memory_order_relaxed);
}

__attribute__((constructor)) static void rec_init(void)
{
    const char *raw = getenv("KSLAB_RECORD_RAW"), *pid = getenv("KSLAB_RECORD_PID");
    if (!raw || !pid || atoi(pid) != getpid())
        return;                       /* a program the recorded one ran: not recorded */
    raw_fd = open(raw, O_WRONLY | O_CLOEXEC);
    if (raw_fd < 0)
        return;
    pthread_key_create(&exit_key, thread_exit);
    pthread_atfork(NULL, NULL, fork_child);
    atomic_store_explicit(&active, true, memory_order_relaxed);
}

__attribute__((destructor)) static void rec_fini(void)
{
    if (!atomic_exchange_explicit(&active, false, memory_order_relaxed))
        return;
    pthread_mutex_lock(&list_lock);
    for (struct tbuf *b = all_bufs; b; b = b->next) {
        while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
            ;
        flush(b);
        atomic_flag_clear_explicit(&b->busy, memory_order_release);
    }
    pthread_mutex_unlock(&list_lock);
    close(raw_fd);
}

EXPORT void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (p)
        record(RAW_MALLOC, p, n, 0);
    return p;
}

EXPORT void free(void *p)
{
    if (p)
        record(RAW_FREE, p, 0, 0);
    __libc_free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
    void *p = __libc_calloc(n, m);
    if (p)
        record(RAW_CALLOC, p, n * m, 0);
    return p;
}

EXPORT void *realloc(void *old, size_t n)
{
    if (!old)
        return malloc(n);
    if (n == 0) {                     /* glibc frees and returns NULL */
        free(old);
        return NULL;
    }
    record(RAW_REALLOC_START, old, n, 0);
    void *p = __libc_realloc(old, n);
    record(RAW_REALLOC_END, p, n, (uint64_t)(uintptr_t)old);
    return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
    size_t b;
    if (__builtin_mul_overflow(n, m, &b)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, b);
}

static void *aligned(size_t align, size_t n, void *p)
{
    if (p)
        record(RAW_MEMALIGN, p, n, align);
    return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
    return aligned(align, n, __libc_memalign(align, n));
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n, __libc_memalign(align, n));
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = aligned(align, n, __libc_memalign(align, n));
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t n)
{
    return aligned(4096, n, __libc_valloc(n));
}

EXPORT void *pvalloc(size_t n)
{
    return aligned(4096, (n + 4095) & ~(size_t)4095, __libc_pvalloc(n));
}
