/*
 * kslab-replay - replay a .kst trace (kslab-record, trace.h) through every
 * kslab back-end and the peers, and report per allocator the time spent in
 * allocator calls, the memory held (peak and final), RSS, and fragmentation
 * (memory held / live bytes) over the trace, with a PNG plot.
 *
 *   kslab-replay [-a LIST] [-n RUNS] [-p PLOT.png] [-d DIR] [-m] TRACE.kst
 *
 * Each allocator runs in a child (this program again, with --run), loaded the
 * way `make bench` loads it: libkslab-malloc.so with KSLAB_ALLOCATOR for the
 * kslab back-ends, Debian's libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4
 * by LD_PRELOAD, glibc as is.  The child replays the records in their global
 * order, each on a thread of its own standing for the recorded one: one
 * thread runs at a time and hands over at each thread switch (futexes), an
 * exited thread is joined before the next record, and the child is pinned
 * to one CPU.  The order of every allocator call is therefore the same each
 * run, and so are the memory figures; the time is the sum of the calls
 * themselves with the first write to each new object (rdtsc around both:
 * a page fault costs the same whether the allocator or the program takes
 * it), not of the hand-overs.
 *
 * Memory held: for kslab, its page layer's count (slabs, large blocks, the
 * hot reserve, huge blocks and those cached; KSLAB_DECAY_MS=0, so nothing
 * goes back by the clock); for the peers, RSS (anonymous pages).  Both are
 * taken after the replayer's own tables are set up and counted from there.
 * Each object is written (a byte per page) when it is allocated, as the
 * program wrote it, and runs have no address randomization, so RSS repeats
 * too.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kslab-replay [-a LIST] [-n RUNS] [-p PLOT.png] [-d DIR] [-m] [-t SECS] TRACE.kst\n"
        "Replay a trace recorded by kslab-record through each allocator and compare them:\n"
        "time in allocator calls, memory held (peak, final), RSS, and fragmentation\n"
        "(memory held / live bytes requested) over the trace.\n"
        "  -a, --allocators LIST  comma-separated, of: slub slab slob slob-seg (kslab's\n"
        "                         back-ends) glibc jemalloc mimalloc tcmalloc; default all\n"
        "  -n, --runs N           runs per allocator (time: median; memory must agree)\n"
        "  -p, --plot FILE.png    plot memory held and fragmentation over the trace\n"
        "                         (needs gnuplot)\n"
        "  -d, --dir DIR          where the per-allocator series go (default: a temporary\n"
        "                         directory, removed)\n"
        "  -m, --markdown         print the table as Markdown\n"
        "  -t, --timeout SECONDS  give up on an allocator after this long (default 600)\n"
        "  -D, --dump             print the trace's records as text, replay nothing\n"
        "  -h, --help             this text\n"
        "Environment: KSLAB_MALLOC_LIB (libkslab-malloc.so), KSLAB_PEER_DIR (where the\n"
        "peers' libraries are; default /usr/lib/x86_64-linux-gnu).\n");
}

/* ======================= the replayer (--run) ============================= */

static struct kst_header H;
static int trace_fd;
static uint8_t *buf;
static size_t buf_len, buf_pos;
#define BUF_BYTES (1u << 20)

static void **obj;                  /* id -> the replayed object */
static uint64_t *obj_size;          /* id -> its requested size */
static uint64_t *free_ids;          /* trace.h's LIFO rule */
static uint64_t free_n, next_id;
static uint64_t live_bytes, records_done, calls;
static uint64_t tsc_in_calls;

struct sample { uint64_t record, live, held, rss, slab; };
static struct sample *samples;
static size_t nsamples, max_samples;
static uint64_t sample_every;
static long rss_base_pages, page_size;
static void (*kslab_memory_fn)(void *);
static uint64_t held_base, slab_base;

struct rthread {
    pthread_t th;
    _Atomic int go;                 /* 1: this thread holds the baton */
    int started;
};
static struct rthread *thr;
static atomic_int finished;
static int pending_join = -1;       /* a thread that exited: joined by the next holder */

static void *map_zero(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        perror("kslab-replay: mmap");
        exit(1);
    }
    return p;
}

static int fill(size_t need)
{
    if (buf_len - buf_pos >= need)
        return 1;
    memmove(buf, buf + buf_pos, buf_len - buf_pos);
    buf_len -= buf_pos;
    buf_pos = 0;
    while (buf_len < BUF_BYTES) {
        ssize_t n = read(trace_fd, buf + buf_len, BUF_BYTES - buf_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        buf_len += (size_t)n;
    }
    return buf_len - buf_pos > 0;
}

static uint64_t arg(void)
{
    uint64_t v = 0;
    const uint8_t *p = buf + buf_pos;
    if (!kst_get(&p, buf + buf_len, &v)) {
        fprintf(stderr, "kslab-replay: trace cut off\n");
        exit(1);
    }
    buf_pos = (size_t)(p - buf);
    return v;
}

/* Resident anonymous pages (smaps_rollup's Anonymous: what the allocator
 * and the program wrote, not the libraries' code).  statm's resident count
 * takes in file pages, which fault-around maps a varying number of under
 * load: glibc's peak read 16.76 and 16.77 MiB in two runs of one
 * invocation in CI, and so did runs on a CPU shared with 20 busy loops;
 * anonymous pages read the same in every such run. */
static uint64_t rss_pages(void)
{
    char b[4096];
    int fd = open("/proc/self/smaps_rollup", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    b[n] = 0;
    const char *rss = strstr(b, "\nAnonymous:");
    unsigned long kib = 0;
    if (rss)
        sscanf(rss + 11, "%lu", &kib);
    return kib * 1024 / (uint64_t)page_size;
}

/* kslab's memory (struct kslab_memory's fields, in order): held = slabs,
 * large blocks (pcp lists included), the hot reserve, huge blocks and those
 * cached; *slab = the slabs alone (the kernel's "Slab:" line) */
static uint64_t kslab_held(uint64_t *slab)
{
    uint64_t m[9] = { 0 };
    kslab_memory_fn(m);
    if (slab)
        *slab = m[0];
    return m[0] + m[1] + m[3] + m[4] + m[5];
}

static void sample(void)
{
    if (nsamples == max_samples)
        return;
    struct sample *s = &samples[nsamples++];
    s->record = records_done;
    s->live = live_bytes;
    long rss = (long)rss_pages() - rss_base_pages;
    s->rss = rss > 0 ? (uint64_t)rss * (uint64_t)page_size : 0;
    uint64_t slab = 0;
    s->held = kslab_memory_fn ? kslab_held(&slab) - held_base : s->rss;
    s->slab = slab > slab_base ? slab - slab_base : 0;
}

static long futex(_Atomic int *w, int op, int v)
{
    return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

static void wait_baton(int self)
{
    /* acquire: what the previous holder did happens before our records */
    while (!atomic_load_explicit(&thr[self].go, memory_order_acquire) &&
           !atomic_load_explicit(&finished, memory_order_acquire))
        futex(&thr[self].go, FUTEX_WAIT_PRIVATE, 0);
}

static void *thread_main(void *arg);

/* Give the baton to t (starting it if new); self keeps waiting unless it
 * is leaving. */
static void hand_to(int self, int t, int leaving)
{
    atomic_store_explicit(&thr[self].go, 0, memory_order_relaxed);
    if (!thr[t].started) {
        thr[t].started = 1;
        atomic_store_explicit(&thr[t].go, 1, memory_order_relaxed);
        if (pthread_create(&thr[t].th, NULL, thread_main, (void *)(intptr_t)t) != 0) {
            perror("kslab-replay: pthread_create");
            exit(1);
        }
    } else {
        /* release: our records happen before t's */
        atomic_store_explicit(&thr[t].go, 1, memory_order_release);
        futex(&thr[t].go, FUTEX_WAKE_PRIVATE, 1);
    }
    if (!leaving)
        wait_baton(self);
}

static void finish_all(void)
{
    atomic_store_explicit(&finished, 1, memory_order_release);
    for (uint32_t t = 0; t < H.threads; t++)
        if (thr[t].started)
            futex(&thr[t].go, FUTEX_WAKE_PRIVATE, 1);
}

#define TIMED(x) do { uint64_t t0_ = __rdtsc(); x; tsc_in_calls += __rdtsc() - t0_; calls++; } while (0)

/* Write the object as the program would have (a byte per page is enough to
 * make it resident): without it, an allocator whose metadata lives apart
 * from the objects would show untouched pages as memory not used. */
static void touch(void *p, uint64_t from, uint64_t to)
{
    volatile char *c = p;
    for (uint64_t o = from; o < to; o += 4096)
        c[o] = 1;
    if (to > from)
        c[to - 1] = 1;
}

static uint64_t new_id(void)
{
    return free_n ? free_ids[--free_n] : next_id++;
}

/* Replay records while this thread holds the baton; return when it exits
 * or the trace ends. */
static void replay(int self)
{
    for (;;) {
        if (atomic_load_explicit(&finished, memory_order_acquire))
            return;
        if (pending_join >= 0) {    /* the thread before us exited: wait it out */
            pthread_join(thr[pending_join].th, NULL);
            pending_join = -1;
        }
        if (!fill(32)) {
            finish_all();
            return;
        }
        int op = buf[buf_pos++];
        uint64_t a, b, id;
        void *p;
        switch (op) {
        case KST_MALLOC:
        case KST_CALLOC:
            a = arg();
            if (op == KST_MALLOC)
                TIMED(p = malloc(a); if (p) touch(p, 0, a));
            else
                TIMED(p = calloc(1, a); if (p) touch(p, 0, a));
            if (!p && a) {
                fprintf(stderr, "kslab-replay: out of memory at record %llu\n",
                        (unsigned long long)records_done);
                exit(1);
            }
            id = new_id();
            obj[id] = p;
            obj_size[id] = a;
            live_bytes += a;
            break;
        case KST_MEMALIGN:
            a = arg();
            b = arg();
            TIMED(p = aligned_alloc(a, (b + a - 1) / a * a); if (p) touch(p, 0, b));
            id = new_id();
            obj[id] = p;
            obj_size[id] = b;
            live_bytes += b;
            break;
        case KST_FREE:
            id = arg();
            TIMED(free(obj[id]));
            obj[id] = NULL;
            live_bytes -= obj_size[id];
            free_ids[free_n++] = id;
            break;
        case KST_REALLOC:
            id = arg();
            b = arg();
            TIMED(p = realloc(obj[id], b); if (p && b > obj_size[id]) touch(p, obj_size[id], b));
            if (p) {
                obj[id] = p;
                live_bytes += b - obj_size[id];
                obj_size[id] = b;
            }
            break;
        case KST_THREAD:
            a = arg();
            if ((int)a != self)
                hand_to(self, (int)a, 0);
            continue;               /* a switch is no record of the program's */
        case KST_EXIT:
            pending_join = self;
            if (!fill(1) || buf[buf_pos] != KST_THREAD) {
                finish_all();
                return;
            }
            buf_pos++;
            hand_to(self, (int)arg(), 1);
            return;
        case KST_END:
            finish_all();
            return;
        default:
            fprintf(stderr, "kslab-replay: bad record %d at byte %zu\n", op, buf_pos);
            exit(1);
        }
        if (++records_done % sample_every == 0)
            sample();
    }
}

static void *thread_main(void *arg)
{
    int self = (int)(intptr_t)arg;
    wait_baton(self);
    replay(self);
    return NULL;
}

static int run(const char *name, const char *trace, const char *series)
{
    trace_fd = open(trace, O_RDONLY);
    if (trace_fd < 0 || read(trace_fd, &H, sizeof H) != (ssize_t)sizeof H ||
        memcmp(H.magic, KST_MAGIC, 8) != 0 || H.version != KST_VERSION) {
        fprintf(stderr, "kslab-replay: %s is not a version %d .kst trace\n", trace, KST_VERSION);
        return 1;
    }
    lseek(trace_fd, H.header_size, SEEK_SET);
    /* one CPU: the same per-CPU caches every run */
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
        int first = 0;
        while (first < CPU_SETSIZE && !CPU_ISSET(first, &cpus))
            first++;
        CPU_ZERO(&cpus);
        CPU_SET(first, &cpus);
        sched_setaffinity(0, sizeof cpus, &cpus);
    }
    page_size = sysconf(_SC_PAGESIZE);
    buf = map_zero(BUF_BYTES);
    obj = map_zero((H.max_live + 1) * sizeof *obj);
    obj_size = map_zero((H.max_live + 1) * sizeof *obj_size);
    free_ids = map_zero((H.max_live + 1) * sizeof *free_ids);
    thr = map_zero((H.threads + 1) * sizeof *thr);
    max_samples = 1024;
    samples = map_zero(max_samples * sizeof *samples);
    sample_every = H.records / 500 + 1;
    kslab_memory_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "kslab_memory");
    if (kslab_memory_fn)
        held_base = kslab_held(&slab_base);
    rss_base_pages = (long)rss_pages();
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    uint64_t c0 = __rdtsc();
    thr[0].started = 1;
    atomic_store(&thr[0].go, 1);
    thr[0].th = pthread_self();
    replay(0);
    for (uint32_t t = 1; t < H.threads; t++)
        if (thr[t].started && (int)t != pending_join)
            pthread_join(thr[t].th, NULL);
    if (pending_join > 0)
        pthread_join(thr[pending_join].th, NULL);
    uint64_t c1 = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &w1);
    sample();                       /* the final state */
    double wall = (double)(w1.tv_sec - w0.tv_sec) * 1e9 + (double)(w1.tv_nsec - w0.tv_nsec);
    double ns = c1 > c0 ? (double)tsc_in_calls * wall / (double)(c1 - c0) : 0;
    uint64_t peak_held = 0, peak_rss = 0, peak_live = 0, peak_slab = 0;
    double frag_peak = 0, frag_sum = 0;
    size_t frag_n = 0;
    FILE *f = series ? fopen(series, "w") : NULL;
    for (size_t i = 0; i < nsamples; i++) {
        struct sample *s = &samples[i];
        if (s->held > peak_held)
            peak_held = s->held;
        if (s->rss > peak_rss)
            peak_rss = s->rss;
        if (s->slab > peak_slab)
            peak_slab = s->slab;
        if (s->live > peak_live) {
            peak_live = s->live;
            frag_peak = (double)s->held / (double)s->live;
        }
        if (s->live) {
            frag_sum += (double)s->held / (double)s->live;
            frag_n++;
        }
        if (f)
            fprintf(f, "%llu\t%llu\t%llu\t%llu\n", (unsigned long long)s->record,
                    (unsigned long long)s->live, (unsigned long long)s->held,
                    (unsigned long long)s->rss);
    }
    if (f)
        fclose(f);
    struct sample *last = &samples[nsamples - 1];
    printf("%s\t%.3f\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%.3f\t%.3f\t%llu\t%llu\n", name, ns / 1e6,
           (unsigned long long)calls, (unsigned long long)peak_held,
           (unsigned long long)last->held, (unsigned long long)peak_rss,
           (unsigned long long)last->rss, (unsigned long long)peak_live,
           (unsigned long long)last->live, frag_peak, frag_n ? frag_sum / frag_n : 0.0,
           (unsigned long long)peak_slab, (unsigned long long)last->slab);
    fflush(stdout);
    _exit(0);                       /* the objects still live are the program's at its end */
}

/* The records as text, one per line (--dump). */
static int dump(const char *trace)
{
    trace_fd = open(trace, O_RDONLY);
    if (trace_fd < 0 || read(trace_fd, &H, sizeof H) != (ssize_t)sizeof H ||
        memcmp(H.magic, KST_MAGIC, 8) != 0 || H.version != KST_VERSION) {
        fprintf(stderr, "kslab-replay: %s is not a version %d .kst trace\n", trace, KST_VERSION);
        return 1;
    }
    printf("# %s: %llu records, %llu allocations, %llu frees, %llu reallocs, %u threads, "
           "max live %llu objects / %llu bytes, %llu unknown frees\n", H.command,
           (unsigned long long)H.records, (unsigned long long)H.allocs,
           (unsigned long long)H.frees, (unsigned long long)H.reallocs, H.threads,
           (unsigned long long)H.max_live, (unsigned long long)H.max_live_bytes,
           (unsigned long long)H.unknown_frees);
    lseek(trace_fd, H.header_size, SEEK_SET);
    buf = map_zero(BUF_BYTES);
    free_ids = map_zero((H.max_live + 1) * sizeof *free_ids);
    for (;;) {
        if (!fill(32)) {
            fprintf(stderr, "kslab-replay: no KST_END\n");
            return 1;
        }
        int op = buf[buf_pos++];
        uint64_t a, b;
        switch (op) {
        case KST_MALLOC: a = arg(); printf("malloc %llu -> %llu\n", (unsigned long long)a, (unsigned long long)new_id()); break;
        case KST_CALLOC: a = arg(); printf("calloc %llu -> %llu\n", (unsigned long long)a, (unsigned long long)new_id()); break;
        case KST_MEMALIGN:
            a = arg(); b = arg();
            printf("memalign %llu %llu -> %llu\n", (unsigned long long)a, (unsigned long long)b,
                   (unsigned long long)new_id());
            break;
        case KST_FREE: a = arg(); printf("free %llu\n", (unsigned long long)a); free_ids[free_n++] = a; break;
        case KST_REALLOC:
            a = arg(); b = arg();
            printf("realloc %llu %llu\n", (unsigned long long)a, (unsigned long long)b);
            break;
        case KST_THREAD: printf("thread %llu\n", (unsigned long long)arg()); break;
        case KST_EXIT: printf("exit\n"); break;
        case KST_END: printf("end\n"); return 0;
        default: fprintf(stderr, "kslab-replay: bad record %d\n", op); return 1;
        }
    }
}

/* ========================= the driver ==================================== */

/* Every allocator the replayer runs, in the default run's order: its name
 * and the library preloaded for it (NULL: libkslab-malloc, with
 * KSLAB_ALLOCATOR set to the name; "": none, glibc's own malloc). */
static const struct alloc { const char *name, *lib; } ALL[] = {
    { "slub", NULL }, { "slab", NULL }, { "slob", NULL }, { "slob-seg", NULL },
    { "glibc", "" }, { "jemalloc", "libjemalloc.so.2" }, { "mimalloc", "libmimalloc.so.2" },
    { "tcmalloc", "libtcmalloc_minimal.so.4" } };
#define NALL (sizeof ALL / sizeof *ALL)

static const struct alloc *alloc_named(const char *a)
{
    for (size_t i = 0; i < NALL; i++)
        if (strcmp(a, ALL[i].name) == 0)
            return &ALL[i];
    return NULL;
}

static const char *kslab_malloc_lib(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("KSLAB_MALLOC_LIB");
    if (env)
        return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = 0;
    const char *dir = dirname(exe);
    const char *tries[] = { "%s/../libkslab-malloc.so", "%s/../lib/libkslab-malloc.so",
                            "%s/../lib/x86_64-linux-gnu/libkslab-malloc.so",
                            "%s/libkslab-malloc.so" };
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        snprintf(path, sizeof path, tries[i], dir);
        if (access(path, R_OK) == 0)
            return path;
    }
    return NULL;
}

static int is_kslab(const char *a)
{
    const struct alloc *x = alloc_named(a);
    return x && !x->lib;
}

/* The library to preload for allocator a: "" for glibc, NULL if missing. */
static const char *preload_of(const char *a, char *path, size_t len)
{
    const struct alloc *x = alloc_named(a);
    if (!x)
        return NULL;
    if (!x->lib)
        return kslab_malloc_lib();
    if (!*x->lib)
        return "";
    const char *dir = getenv("KSLAB_PEER_DIR") ? getenv("KSLAB_PEER_DIR")
                                               : "/usr/lib/x86_64-linux-gnu";
    snprintf(path, len, "%s/%s", dir, x->lib);
    return access(path, R_OK) == 0 ? path : NULL;
}

struct result {
    char name[32];
    int missing, varies, ok, timed_out;
    double ms[16];
    int runs;
    unsigned long long calls, peak_held, final_held, peak_rss, final_rss, peak_live, final_live;
    unsigned long long peak_slab, final_slab;
    double frag_peak, frag_mean;
};

static unsigned timeout_s = 600;

static int one_run(const char *self, const char *a, const char *pre, const char *trace,
                   const char *series, struct result *r)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        if (pre && *pre)
            setenv("LD_PRELOAD", pre, 1);
        else
            unsetenv("LD_PRELOAD");
        if (is_kslab(a))
            setenv("KSLAB_ALLOCATOR", a, 1);
        setenv("KSLAB_PUBLISH", "0", 1);   /* no snapshots in the measured calls */
        /* no memory given back by the clock (the decay tick, SLAB's reap):
         * a run slowed past a tick by load held less than one that was not */
        setenv("KSLAB_DECAY_MS", "0", 1);
        alarm(timeout_s);                  /* kept across exec: SIGALRM ends a run too long */
        personality(ADDR_NO_RANDOMIZE);    /* the same addresses: the same RSS each run */
        execl(self, self, "--run", a, "--series", series, trace, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char line[512] = "";
    FILE *f = fdopen(pfd[0], "r");
    if (!f || !fgets(line, sizeof line, f))
        line[0] = 0;
    if (f)
        fclose(f);
    int st;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
        r->timed_out = 1;
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !line[0]) {
        fprintf(stderr, "kslab-replay: the %s run failed\n", a);
        return -1;
    }
    char nm[32];
    double ms, fp, fm;
    unsigned long long v[9];
    if (sscanf(line, "%31s %lf %llu %llu %llu %llu %llu %llu %llu %lf %lf %llu %llu", nm, &ms,
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &fp, &fm, &v[7], &v[8]) != 13)
        return -1;
    /* held: kslab's own count, or the peers' RSS (kslab's RSS may differ by
     * a few pages between runs: its freelists' random order, seeded per
     * process, decides which pages the first objects touch) */
    if (r->runs && (v[1] != r->peak_held || v[2] != r->final_held))
        r->varies = 1;
    r->ms[r->runs < 16 ? r->runs : 15] = ms;
    r->runs++;
    r->calls = v[0];
    r->peak_held = v[1];
    r->final_held = v[2];
    r->peak_rss = v[3];
    r->final_rss = v[4];
    r->peak_live = v[5];
    r->final_live = v[6];
    r->peak_slab = v[7];
    r->final_slab = v[8];
    r->frag_peak = fp;
    r->frag_mean = fm;
    r->ok = 1;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void plot(const char *png, const char *dir, struct result *res, int n,
                 const struct kst_header *h)
{
    char script[PATH_MAX];
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    FILE *g = fopen(script, "w");
    if (!g)
        return;
    fprintf(g, "set terminal pngcairo size 1000,800 noenhanced\nset output '%s'\n", png);
    fprintf(g, "set multiplot layout 2,1 title 'kslab-replay: %.80s (%llu records)'\n",
            h->command, (unsigned long long)h->records);
    fprintf(g, "set key outside right\nset grid\nset xlabel 'records replayed (millions)'\n");
    fprintf(g, "set ylabel 'MiB'\nset title 'memory held (kslab: its page layer; peers: RSS)'\n");
    fprintf(g, "plot ");
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (!res[i].ok)
            continue;
        fprintf(g, "%s'%s/%s.tsv' using ($1/1e6):($3/1048576) with lines lw 2 lc %d title '%s'",
                first ? "" : ", ", dir, res[i].name, i + 1, res[i].name);
        if (first)
            fprintf(g, ", '%s/%s.tsv' using ($1/1e6):($2/1048576) with lines dt 2 lc "
                    "'black' title 'live bytes'", dir, res[i].name);
        first = 0;
    }
    fprintf(g, "\nset ylabel 'held / live'\nset title 'fragmentation: memory held / live "
               "bytes'\nset logscale y\nplot ");
    first = 1;
    for (int i = 0; i < n; i++) {
        if (!res[i].ok)
            continue;
        fprintf(g, "%s'%s/%s.tsv' using ($1/1e6):($2>0 ? $3/$2 : 1/0) with lines lw 2 lc %d "
                "title '%s'", first ? "" : ", ", dir, res[i].name, i + 1, res[i].name);
        first = 0;
    }
    fprintf(g, "\nunset multiplot\n");
    fclose(g);
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", script);
    if (system(cmd) != 0)
        fprintf(stderr, "kslab-replay: gnuplot failed (is it installed?): no plot\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "allocators", required_argument, 0, 'a' }, { "runs", required_argument, 0, 'n' },
        { "plot", required_argument, 0, 'p' }, { "dir", required_argument, 0, 'd' },
        { "markdown", no_argument, 0, 'm' }, { "timeout", required_argument, 0, 't' }, { "help", no_argument, 0, 'h' },
        { "dump", no_argument, 0, 'D' }, { "run", required_argument, 0, 'R' }, { "series", required_argument, 0, 'S' },
        { 0, 0, 0, 0 } };
    const char *list = NULL, *png = NULL, *dir = NULL, *run_name = NULL, *series = NULL;
    int runs = 1, md = 0, do_dump = 0, c;
    while ((c = getopt_long(argc, argv, "a:n:p:d:mt:Dh", opts, NULL)) != -1) {
        switch (c) {
        case 'a': list = optarg; break;
        case 'n': runs = atoi(optarg); break;
        case 'p': png = optarg; break;
        case 'd': dir = optarg; break;
        case 'm': md = 1; break;
        case 't': timeout_s = (unsigned)atoi(optarg); break;
        case 'D': do_dump = 1; break;
        case 'R': run_name = optarg; break;
        case 'S': series = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc || runs < 1 || runs > 16) {
        usage(stderr);
        return 2;
    }
    const char *trace = argv[optind];
    if (run_name)
        return run(run_name, trace, series);
    if (do_dump)
        return dump(trace);

    struct kst_header h;
    int fd = open(trace, O_RDONLY);
    if (fd < 0 || read(fd, &h, sizeof h) != (ssize_t)sizeof h ||
        memcmp(h.magic, KST_MAGIC, 8) != 0 || h.version != KST_VERSION) {
        fprintf(stderr, "kslab-replay: %s is not a version %d .kst trace\n", trace, KST_VERSION);
        return 1;
    }
    close(fd);
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = 0;
    const char *names[16];
    int n = 0;
    char lbuf[256];
    if (list) {
        snprintf(lbuf, sizeof lbuf, "%s", list);
        for (char *tok = strtok(lbuf, ","); tok && n < 16; tok = strtok(NULL, ","))
            names[n++] = tok;
    } else {
        for (size_t i = 0; i < NALL; i++)
            names[n++] = ALL[i].name;
    }
    for (int i = 0; i < n; i++)
        if (!alloc_named(names[i])) {
            fprintf(stderr, "kslab-replay: unknown allocator %s\n", names[i]);
            return 2;
        }
    /* made after the checks: an early return leaves no directory behind */
    char tmpdir[] = "/tmp/kslab-replay.XXXXXX";
    int own_dir = !dir;
    if (own_dir && !(dir = mkdtemp(tmpdir))) {
        perror("kslab-replay: mkdtemp");
        return 1;
    }
    struct result res[16];
    memset(res, 0, sizeof res);
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < n; i++) {
            char lib[PATH_MAX], ser[PATH_MAX + 4400];
            snprintf(res[i].name, sizeof res[i].name, "%s%s", is_kslab(names[i]) ? "kslab-" : "",
                     names[i]);
            const char *pre = preload_of(names[i], lib, sizeof lib);
            if (!pre) {
                res[i].missing = 1;
                continue;
            }
            if (res[i].timed_out)
                continue;                   /* once is enough */
            snprintf(ser, sizeof ser, "%s/%s.tsv", dir, res[i].name);
            one_run(self, names[i], pre, trace, ser, &res[i]);
        }
    }
    double mib = 1048576.0;
    printf(md ? "| allocator | ms in calls | calls | peak held MiB | final held MiB | peak slab MiB "
                "| final slab MiB | peak RSS MiB | final RSS MiB | held/live at peak live | "
                "mean held/live |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
              : "%-16s %10s %10s %9s %9s %9s %9s %9s %9s %9s %9s\n",
           "allocator", "ms-calls", "calls", "peak-held", "final-held", "peak-slab", "final-slab",
           "peak-RSS", "final-RSS", "frag@peak", "frag-mean");
    for (int i = 0; i < n; i++) {
        struct result *r = &res[i];
        if (!r->ok) {
            char why[64];
            snprintf(why, sizeof why, "%s", r->missing ? "missing (not installed)" : "failed");
            if (r->timed_out)
                snprintf(why, sizeof why, "did not finish in %u s", timeout_s);
            printf(md ? "| %s | %s | | | | | | | | | |\n" : "%-16s %s\n", r->name, why);
            continue;
        }
        qsort(r->ms, (size_t)(r->runs < 16 ? r->runs : 16), sizeof r->ms[0], cmp_d);
        double med = r->ms[(r->runs - 1) / 2];
        char ps[16] = "-", fs[16] = "-";
        if (strncmp(r->name, "kslab-", 6) == 0) {
            snprintf(ps, sizeof ps, "%.2f", r->peak_slab / mib);
            snprintf(fs, sizeof fs, "%.2f", r->final_slab / mib);
        }
        printf(md ? "| %s | %.1f | %llu | %.2f | %.2f | %s | %s | %.2f | %.2f | %.3f | %.3f |%s\n"
                  : "%-16s %10.1f %10llu %9.2f %9.2f %9s %9s %9.2f %9.2f %9.3f %9.3f%s\n",
               r->name, med, r->calls, r->peak_held / mib, r->final_held / mib, ps, fs,
               r->peak_rss / mib, r->final_rss / mib, r->frag_peak, r->frag_mean,
               r->varies ? (md ? " memory varied between runs" : "  (memory varied between runs)")
                         : "");
    }
    printf(md ? "\nLive bytes at the peak: %.2f MiB; at the end: %.2f MiB.\n"
              : "live bytes: peak %.2f MiB, end %.2f MiB\n",
           h.max_live_bytes / mib, res[0].ok ? res[0].final_live / mib : 0.0);
    if (png)
        plot(png, dir, res, n, &h);
    if (own_dir) {
        char cmd[PATH_MAX];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "kslab-replay: could not remove %s\n", dir);
    }
    return 0;
}
