/*
 * publish.c - the process's slabinfo, published in shared memory for
 * kslabtop and kslabinfo (format: include/kslab-publish.h).
 *
 * No thread of its own: the allocator's slow path calls kslab_publish_tick()
 * (slab_common.h), a time-stamp counter read compared with a deadline; once
 * per interval (KSLAB_PUBLISH_MS, default 100 ms) the deadline passes, the
 * coarse clock confirms it and a snapshot is written.  A program that stays on the fast paths
 * changes no slab, so its rows stay true; only its event counters age (the
 * header says when the snapshot was taken).  The last snapshot is written at
 * exit, just before the file is removed.
 *
 * The snapshot takes the locks slabinfo takes (the cache list, then each
 * cache's per-thread and per-CPU counters, then the page layer's counts).
 * The slow path can be reached with some of them held (a cache created
 * under the cache list's lock allocates; a signal handler can interrupt any
 * of them), so the cache list lock is only tried, and a thread that is
 * already publishing never publishes again.
 */
#define _GNU_SOURCE
#include "slab_common.h"
#include "pages.h"
#include "kslab-publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* relaxed everywhere below: publish_on, publish_next and publish_pid are hints (a
 * stale value costs a late or an extra snapshot); the snapshot itself is
 * serialized by publish_busy. */
static bool publish_on;
static uint64_t publish_interval_ns = 100 * 1000000ull;
static _Atomic uint64_t publish_next;   /* coarse-clock ns of the next snapshot */
static atomic_int publish_pid;          /* the process publish_next was set for (0: none yet) */
uint64_t kslab_publish_next_tsc = UINT64_MAX;  /* slab_common.h: the cheap gate */
__thread uint8_t kslab_publish_skip __attribute__((tls_model("initial-exec")));
static uint64_t tsc0, ns0;              /* the counter's rate: ticks since ns0 */
static atomic_flag publish_busy = ATOMIC_FLAG_INIT;
static __thread bool publishing;

static struct {
    int pid;                            /* whose region this is (fork: not the child's) */
    struct kslab_pub_header *h;
    size_t bytes;
    char path[64];
} region;

static uint64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The first snapshot waits one interval from `now` (a process's start, a
 * fork child's birth): a process that lives less (a shell's seq, tr,
 * sed...) never creates, fills and removes a file no reader could have
 * caught. */
static void publish_first_after(uint64_t now)
{
    atomic_store_explicit(&publish_next, now + publish_interval_ns, memory_order_relaxed);
}

void kslab_publish_init(void)
{
    publish_on = kslab_env_bool("KSLAB_PUBLISH", 1);
    unsigned long ms = kslab_env_number("KSLAB_PUBLISH_MS", 100);
    publish_interval_ns = (ms ? ms : 1) * 1000000ull;
    ns0 = coarse_ns();
    tsc0 = kslab_rdtsc();
    publish_first_after(ns0);
    /* the gate opens at once: the first slow path sets its real deadline */
    __atomic_store_n(&kslab_publish_next_tsc, publish_on ? 0 : UINT64_MAX, __ATOMIC_RELAXED);
}


static void region_drop(bool unlink_file)
{
    if (region.h) {
        if (unlink_file)
            unlink(region.path);
        munmap(region.h, region.bytes);
    }
    region.h = NULL;
    region.bytes = 0;
}

/* A process that dies without exiting (SIGKILL, or a fork child's _exit)
 * leaves its region behind: each new region first removes those of
 * processes that are gone, so /dev/shm holds about one per live process. */
static void sweep_dead(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char tail, path[300];
        int pid;
        if (sscanf(e->d_name, "kslab.%d%c", &pid, &tail) != 1 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Make the region at least `bytes` long, this process's own.  After fork the
 * child still maps its parent's file: it drops that mapping (the parent's
 * file stays) and creates its own. */
static bool region_fit(size_t bytes)
{
    int pid = prim_getpid();
    if (region.h && region.pid != pid)
        region_drop(false);
    if (region.h && region.bytes >= bytes)
        return true;
    bytes = (bytes + 65535) & ~(size_t)65535;
    int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW;
    if (!region.h) {
        /* a new file of our own: whatever has the name (a dead process's
         * region, or anyone's file) is removed first, and O_EXCL makes sure
         * the file written is the one created here (/dev/shm is sticky: no
         * one else can then replace it) */
        sweep_dead();
        snprintf(region.path, sizeof region.path, "/dev/shm/kslab.%d", pid);
        unlink(region.path);
        flags |= O_CREAT | O_EXCL;
    }
    int fd = open(region.path, flags, 0600);
    if (fd < 0)
        return false;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        close(fd);
        return false;
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return false;
    if (region.h)
        munmap(region.h, region.bytes);
    region.h = m;
    region.bytes = bytes;
    region.pid = pid;
    return true;
}

static void fill_row(struct kslab_pub_cache *r, struct kmem_cache *s)
{
    struct kslab_stats st;
    kslab_cache_stats(s, &st);
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%.*s", (int)sizeof r->name - 1, s->name);
    r->object_size = s->object_size;
    r->size = s->size;
    r->objects = s->objects;
    r->order = s->order;
    r->flags = (uint32_t)s->flags;
    if (kslab_be->tunables)
        kslab_be->tunables(s, r->tunables);
    r->active_objs = st.active_objs;
    r->num_objs = st.num_objs;
    r->num_slabs = st.num_slabs;
    r->partial_slabs = st.partial_slabs;
    _Static_assert(KSLAB_PUB_EVENTS == KSLAB_NR_EVENT_STATS, "the row carries every event");
    memcpy(r->events, &st, sizeof r->events);
}

/* Write one snapshot; false if the cache list was busy or the region
 * could not be made. */
static bool snapshot(void)
{
    /* the region is sized with the cache list unlocked: making it allocates
     * (opendir, in the sweep), and allocation may create caches */
    if (!kslab_trylock(&kslab_cache_lock))
        return false;
    size_t rows = 0;
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        rows++;
    kslab_unlock(&kslab_cache_lock);
    size_t hsz = sizeof(struct kslab_pub_header), rsz = sizeof(struct kslab_pub_cache);
    if (!region_fit(hsz + (rows + 16) * rsz) || !kslab_trylock(&kslab_cache_lock))
        return false;
    size_t cap = (region.bytes - hsz) / rsz;
    struct kslab_pub_header *h = region.h;
    /* seqlock writer: odd, then a release fence so no row store passes it */
    uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&h->seq, seq | 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    unsigned n = 0;
    for (struct kmem_cache *s = kslab_cache_list; s && n < cap; s = s->next_cache)
        fill_row((struct kslab_pub_cache *)((char *)h + hsz + n++ * rsz), s);
    kslab_unlock(&kslab_cache_lock);
    struct kslab_memory m;
    kslab_memory(&m);
    memcpy(h->magic, KSLAB_PUB_MAGIC, 8);
    h->version = KSLAB_PUB_VERSION;
    h->header_size = (uint32_t)hsz;
    h->row_size = (uint32_t)rsz;
    h->nr_rows = n;
    h->pid = region.pid;
    h->interval_ms = (uint32_t)(publish_interval_ns / 1000000);
    h->updates++;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->update_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    snprintf(h->allocator, sizeof h->allocator, "%s", kslab_be->name);
    snprintf(h->cpu_mode, sizeof h->cpu_mode, "%s", kslab_cpu_mode());
    h->slab_bytes = m.slab_bytes;
    h->large_bytes = m.large_bytes;
    h->pcp_bytes = m.pcp_bytes;
    h->hot_bytes = m.hot_bytes;
    h->huge_bytes = m.huge_bytes;
    h->huge_cached_bytes = m.huge_cached_bytes;
    h->arena_bytes = m.arena_bytes;
    h->mappings = m.mappings;
    h->release_failures = m.release_failures;
    h->pages_peak = kslab_pages_peak();
    /* release: every store above before the even value a reader checks */
    __atomic_store_n(&h->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
    return true;
}

static bool kslab_publish_now(void);

int kslab_publish(void)
{
    kslab_ensure_init();
    return kslab_publish_now() ? 0 : -1;
}

static bool kslab_publish_now(void)
{
    if (!publish_on || publishing || atomic_flag_test_and_set_explicit(&publish_busy,
                                                                        memory_order_acquire))
        return false;
    publishing = true;
    bool ok = snapshot();
    publishing = false;
    atomic_flag_clear_explicit(&publish_busy, memory_order_release);
    return ok;
}

/* slab_common.h: until 1 ms has passed, one tick a ns.  For deadlines a
 * slow path tests with one counter read: the publish tick's, KFENCE's
 * time-based sampling. */
uint64_t kslab_tsc_after(uint64_t ns, uint64_t *now_ns)
{
    uint64_t now = coarse_ns(), tsc = kslab_rdtsc();
    double per_ns = now > ns0 + 1000000 && tsc > tsc0 ? (double)(tsc - tsc0) / (double)(now - ns0)
                                                      : 1.0;
    if (now_ns)
        *now_ns = now;
    return tsc + (uint64_t)(per_ns * (double)ns);
}

void kslab_publish_tick_slow(void)
{
    if (!publish_on)
        return;
    uint64_t now;
    /* the gate's next deadline: one interval of counter ticks */
    __atomic_store_n(&kslab_publish_next_tsc, kslab_tsc_after(publish_interval_ns, &now),
                     __ATOMIC_RELAXED);
    /* A process's first tick, a fork child's too: its first snapshot waits
     * an interval from here (most children exec or exit before that).
     * Found here, once an interval, not set by the fork handler: that
     * write cost every child a copy-on-write fault. */
    int pid = prim_getpid();
    if (atomic_load_explicit(&publish_pid, memory_order_relaxed) != pid) {
        atomic_store_explicit(&publish_pid, pid, memory_order_relaxed);
        publish_first_after(now);
        return;
    }
    uint64_t next = atomic_load_explicit(&publish_next, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong_explicit(
                          &publish_next, &next, now + publish_interval_ns,
                          memory_order_relaxed, memory_order_relaxed))
        return;
    kslab_publish_now();
}

/* At exit (and before kslab aborts on a report): the final snapshot is of no
 * use to anyone once the file is gone, so just remove it. */
void kslab_publish_exit(void)
{
    if (region.h && region.pid == prim_getpid())
        region_drop(true);
}

bool kslab_publish_enabled(void)
{
    return publish_on;
}

const char *kslab_publish_path(void)
{
    return region.h && region.pid == prim_getpid() ? region.path : NULL;
}
