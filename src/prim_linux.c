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
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Failure injection for the out-of-memory tests: mappings (mmap) and
 * returns (munmap, madvise) each have a countdown shared by all threads; a
 * relaxed RMW is enough because only its value matters. */
static atomic_int fail_map_countdown, fail_unmap_countdown;

void kslab_test_fail_map(int n)
{
    atomic_store_explicit(&fail_map_countdown, n, memory_order_relaxed);
}

void kslab_test_fail_unmap(int n)
{
    atomic_store_explicit(&fail_unmap_countdown, n, memory_order_relaxed);
}

/* n > 0: the next n calls fail; n < 0: all fail until disarmed. */
static bool injected(atomic_int *countdown)
{
    int c = atomic_load_explicit(countdown, memory_order_relaxed);
    if (likely(c == 0))
        return false;
    while (c > 0) {
        if (atomic_compare_exchange_weak_explicit(countdown, &c, c - 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    }
    return c < 0;
}
#define injected_failure() injected(&fail_map_countdown)

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
 * over-map, then trim both ends.  Trimming the head can fail at the mapping
 * limit (it splits nothing, but the kernel checks before it knows); then the
 * whole over-mapping stays, and its spare address space is never touched:
 * costs address space, not memory, and no mapping is lost track of. */
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
        (void)munmap(p, head);
    if (tail)
        (void)munmap((char *)start + bytes, tail);
    return (void *)start;
}

bool prim_unmap(void *p, size_t bytes)
{
    if (unlikely(injected(&fail_unmap_countdown)))
        return false;
    return munmap(p, bytes) == 0;
}

/* MADV_DONTNEED, not MADV_FREE: the pages leave the process's RSS at once
 * (MADV_FREE leaves them counted until the kernel is short of memory, so a
 * program's RSS would not show what kslab gave back), and a later touch
 * reads zeroes, which large kzalloc blocks rely on. */
bool prim_release(void *p, size_t bytes)
{
    if (unlikely(injected(&fail_unmap_countdown)))
        return false;
    for (int tries = 0; tries < 3; tries++) {
        if (madvise(p, bytes, MADV_DONTNEED) == 0)
            return true;
        if (errno != EAGAIN)
            break;
    }
    return false;
}

void *prim_remap(void *p, size_t old, size_t new_bytes, void *to)
{
    if (unlikely(injected_failure()))
        return NULL;
    void *r = to ? mremap(p, old, new_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to)
                 : mremap(p, old, new_bytes, 0);
    return r == MAP_FAILED ? NULL : r;
}

void *prim_map_none(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool prim_protect(void *p, size_t bytes, bool rw)
{
    return mprotect(p, bytes, rw ? PROT_READ | PROT_WRITE : PROT_NONE) == 0;
}

bool prim_commit(void *p, size_t bytes)
{
    return !injected_failure() && prim_protect(p, bytes, true);
}

static void (*fault_fn)(void *addr, bool write);
static struct sigaction fault_old;

static void fault_handler(int sig, siginfo_t *info, void *ctx)
{
    bool write = false;
#if defined(__x86_64__)
    write = ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_ERR] & 2;
#endif
    fault_fn(info->si_addr, write);     /* returns only if the fault is not its own */
    if (fault_old.sa_flags & SA_SIGINFO) {
        fault_old.sa_sigaction(sig, info, ctx);
    } else if (fault_old.sa_handler == SIG_DFL || fault_old.sa_handler == SIG_IGN) {
        /* the default action: restore it; the access faults again on return */
        signal(sig, SIG_DFL);
    } else {
        fault_old.sa_handler(sig);
    }
}

bool prim_on_fault(void (*fn)(void *addr, bool write))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    fault_fn = fn;
    return sigaction(SIGSEGV, &sa, &fault_old) == 0;
}

const char *prim_getenv(const char *name)
{
    size_t n = strlen(name);
    if (!environ)
        return NULL;
    /* the first byte first: kslab_init asks for a dozen names, and a
     * strncmp call on every entry for each was 32 000 of the 585 000
     * instructions `seq 1 5` ran under kslab */
    for (char **e = environ; *e; e++)
        if ((*e)[0] == name[0] && strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* Asked once: glibc's sysconf(_SC_NPROCESSORS_CONF) opens and reads
 * /sys/devices/system/cpu/possible each time, and every cache set-up asked
 * (71 opens before sqlite3's main, about 2 ms).  Relaxed: racing first
 * callers compute the same value. */
unsigned prim_ncpus(void)
{
    static unsigned cached;
    unsigned c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!c) {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        c = n > 0 ? (unsigned)n : 1;
        __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    }
    return c;
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

/* ---- rseq (the per-CPU mode) -------------------------------------------- */

/* glibc 2.35+ registers a struct rseq for every thread and exports where it
 * is.  Weak: with an older glibc the symbols are absent (address NULL). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static inline uintptr_t thread_pointer(void)
{
    uintptr_t tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    return tp;
}

/* The offset of glibc's struct rseq for this thread, or -1 where it
 * cannot be used */
static long glibc_rseq_offset(void)
{
    /* 16 bytes: cpu_id_start, cpu_id and rseq_cs, all the per-CPU mode uses.
     * __rseq_size is 0 when registration failed (valgrind, which has no
     * rseq; glibc.pthread.rseq=0).  The calling thread must also have a CPU
     * number: cpu_id is -1 or -2 when it is not registered. */
    if (!&__rseq_offset || !&__rseq_size || __rseq_size < 16)
        return KSLAB_RSEQ_NONE;
    int cpu = *(volatile int *)(thread_pointer() + (uintptr_t)__rseq_offset + 4);
    return cpu >= 0 ? (long)__rseq_offset : KSLAB_RSEQ_NONE;
}

/* kslab's own struct rseq (the kernel's uapi layout; 32 bytes, 32-byte
 * aligned), for glibc that did not register one: before 2.35, or told
 * not to (glibc.pthread.rseq=0).  Initial-exec, so its offset from the
 * thread pointer is the same in every thread (negative: below the TCB).
 * cpu_id starts at KSLAB_RSEQ_IDLE_CPU in every new thread, not the
 * kernel's -1 for "not registered" (the sections zero-extend it, a movl;
 * sign-extending cost the drop-in's pairs 2-4 %): that entry is cap 0 in
 * every sheaf array (percpu.c), so an unregistered thread misses into the
 * slow paths, which register it (prim_rseq_register).  The area is
 * the thread's static TLS, which lives until the thread has exited, and
 * the kernel writes it only while the thread runs; a fork's child
 * inherits the registration with the address. */
struct kslab_rseq_area {
    uint32_t cpu_id_start;
    uint32_t cpu_id;
    uint64_t rseq_cs;
    uint32_t flags;
    uint32_t pad[3];
};
static __thread struct kslab_rseq_area own_rseq
    __attribute__((aligned(32), tls_model("initial-exec"))) = { .cpu_id = KSLAB_RSEQ_IDLE_CPU };
static __thread bool own_tried __attribute__((tls_model("initial-exec")));
#define KSLAB_RSEQ_SIG 0x53053053   /* the sections' abort signature (percpu.h) */

/* The calling thread's registration of kslab's own area, tried once.
 * EBUSY (another library registered an area for this thread first) or any
 * other failure leaves cpu_id at KSLAB_RSEQ_IDLE_CPU: the thread's sections
 * keep missing, and its objects go to and from the slabs through the slow
 * paths, which work without a CPU. */
void prim_rseq_register(void)
{
    if (own_tried)
        return;
    own_tried = true;
    syscall(__NR_rseq, &own_rseq, (uint32_t)sizeof own_rseq, 0, KSLAB_RSEQ_SIG);
}

/* Does the kernel have rseq?  A registration of no area is refused with
 * EINVAL (or EBUSY, where the thread has one) where it does, ENOSYS where
 * not (valgrind's). */
static bool kernel_rseq(void)
{
    return syscall(__NR_rseq, NULL, 0, 0, 0) != 0 && errno != ENOSYS;
}

#ifdef KSLAB_FAKE_CPU
/* The fake-CPU build (cmake -DKSLAB_FAKE_CPU=ON), for measurement under
 * valgrind only, where glibc could not register rseq: glibc still keeps
 * the thread's struct rseq (at __rseq_offset, past the thread pointer, as
 * the sections' addressing needs), unregistered, and here the calling
 * thread's cpu_id is set to 0 in it.  The per-CPU sections then run on CPU
 * 0 and never abort: the kernel does not know the area.  That is sound
 * while one thread allocates (valgrind runs one thread at a time but may
 * switch threads inside a section; any other thread's cpu_id stays -2, and
 * its first section faults on an entry far outside the array; and glibc's
 * pthread_create, reading cpu_id 0, takes rseq to work and stops the
 * program when the new thread's registration fails), so the
 * build is for one-thread programs -- python3, sqlite3, the micro
 * benchmarks -- and is never installed: it lets callgrind and cachegrind
 * count the per-CPU paths, the default mode's, not the per-thread mode's. */
static bool faking;                 /* set once, by kslab_init's thread */
#endif

long prim_rseq_offset(void)
{
    long off = glibc_rseq_offset();
    /* glibc registered none: kslab's own, where the kernel has rseq (not
     * under valgrind); registered thread by thread once the per-CPU mode
     * runs on it (prim_rseq_register), this one too */
    if (off == KSLAB_RSEQ_NONE && (!&__rseq_size || __rseq_size == 0) && kernel_rseq())
        return (long)((uintptr_t)&own_rseq - thread_pointer());
#ifdef KSLAB_FAKE_CPU
    if (off == KSLAB_RSEQ_NONE && &__rseq_offset && __rseq_offset > 0) {
        uint32_t *ids = (uint32_t *)(thread_pointer() + (uintptr_t)__rseq_offset);
        ids[0] = ids[1] = 0;        /* cpu_id_start, cpu_id */
        faking = true;
        off = (long)__rseq_offset;
    }
#endif
    return off;
}

/* Highest possible CPU number + 1 ("possible" covers hot-plug), from
 * /sys/devices/system/cpu/possible ("0-127", "0,2-3"); read without malloc. */
unsigned prim_possible_cpus(void)
{
    char buf[256];
    int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    unsigned max = 0, v = 0;
    bool digits = false;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            v = v * 10 + (unsigned)(buf[i] - '0');
            digits = true;
        } else {
            if (digits && v > max)
                max = v;
            v = 0;
            digits = false;
        }
    }
    if (digits && v > max)
        max = v;
    return n > 0 ? max + 1 : prim_ncpus();
}

/* membarrier(PRIVATE_EXPEDITED_RSEQ): after prim_rseq_fence(cpu) returns,
 * every rseq critical section that was running on cpu has completed or been
 * aborted (it restarts and sees what was stored before the fence), and the
 * fence is a full barrier there.  Registration is per address space:
 * kslab_init registers, and a fork child inherits it (the kernel copies the
 * mm's membarrier state; exec clears it).  kslab's fork handler used to
 * register the child again, a system call and a page fault in every child;
 * should a kernel not carry it over, the child's first fence fails with
 * EPERM, registers and fences again. */
bool prim_rseq_fence_init(void)
{
#ifdef KSLAB_FAKE_CPU
    if (faking)
        return true;                /* one thread: no section in flight elsewhere */
#endif
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0;
}

static bool rseq_fence_once(unsigned cpu)
{
    return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
                   MEMBARRIER_CMD_FLAG_CPU, (int)cpu) == 0 ||
           syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0;
}

void prim_rseq_fence(unsigned cpu)
{
#ifdef KSLAB_FAKE_CPU
    if (faking)
        return;
#endif
    if (rseq_fence_once(cpu))
        return;
    if (errno == EPERM && prim_rseq_fence_init() && rseq_fence_once(cpu))
        return;                     /* a child not registered by its fork */
    kslab_report("membarrier(PRIVATE_EXPEDITED_RSEQ) failed: per-CPU sheaves cannot be "
                 "drained safely");
}

bool prim_text_writable(void *lo, void *hi, bool writable)
{
    uintptr_t a = (uintptr_t)lo & ~(PAGE_SIZE - 1);
    uintptr_t z = ((uintptr_t)hi + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
    /* executable throughout: another thread may be running other code on
     * these pages (never the patched instructions: they run only in the
     * per-CPU mode, which starts after the patch) */
    return mprotect((void *)a, z - a,
                    PROT_READ | PROT_EXEC | (writable ? PROT_WRITE : 0)) == 0;
}

void prim_sync_core(void)
{
    /* Registration, then the fence; either may be missing (kernels before
     * 4.16): x86 keeps instruction fetch coherent with stores, and a thread
     * reaches the patched code only through the mode's release (kslab_init),
     * so the fence is the rule for cross-modified code, not a need seen.
     * Where the process has one thread (glibc says so: kslab_init runs at
     * the first allocation, nearly always before any thread exists) there
     * is no other instruction stream to serialize. */
    if (__libc_single_threaded)
        return;
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
        (void)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

/* getpid as the bare system call: libc's getpid, first called from a
 * library loaded with lazy binding, cost the process a symbol lookup (1 700
 * instructions) for one call. */
int prim_getpid(void)
{
#if defined(__x86_64__)
    long r;
    __asm__ __volatile__("syscall" : "=a"(r) : "0"((long)SYS_getpid) : "rcx", "r11", "memory");
    return (int)r;
#else
    return (int)getpid();
#endif
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

/* 64 random bits for kslab's secrets (freelist keys, freelist shuffles):
 * the kernel's, else (no getrandom: a sandbox, an old kernel) the clock,
 * the stack's and the code's addresses (ASLR) and the process id. */
uint64_t prim_random_seed(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    uint64_t local;
    return prim_now_ns() ^ ((uint64_t)(uintptr_t)&local << 17) ^
           (uint64_t)(uintptr_t)&prim_random_seed ^ ((uint64_t)getpid() << 40);
}
