/* messaging.c - seed 002's hackbench analog (hackbench's thread mode).
 * G groups of 20 sender and 20 receiver threads; each sender sends L
 * messages of 100 bytes to every receiver of its group: it allocates each
 * message, writes its pointer into the receiver's pipe, and the receiver
 * checks and frees it.  Allocation with kmalloc/kfree, or malloc/free when
 * built with -DUSE_MALLOC (the peers, under LD_PRELOAD).
 * -b builds a boot-like resident heap first (boot_heap()), as the kernel's
 * slab heap is when hackbench starts: the seed's SLOB walked it on every
 * allocation.
 * Usage: messaging [--quick] [-b [-f N]] [-g G] [-l L] label
 * Prints: label, seconds, slab kB after the run and at its peak (kslab
 *         only, else -), VmRSS kB after the run, VmHWM (peak RSS) kB, and
 *         slab kB and VmRSS kB after boot (before the messages; - without -b). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include "alloc_shim.h"
#include "bench_common.h"
#define MSG_ALLOC(n) BENCH_ALLOC(n)
#define MSG_FREE(p) BENCH_FREE(p)

#define PER_GROUP 20
#define MSG_SIZE 100

struct group { int fds[PER_GROUP][2]; int id; };
struct sender { struct group *g; int id; };
static long loops = 100;
static long errors;
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;

static void *sender(void *arg)
{
    struct sender *s = arg;
    for (long i = 0; i < loops; i++)
        for (int r = 0; r < PER_GROUP; r++) {
            unsigned char *m = MSG_ALLOC(MSG_SIZE);
            memset(m, (s->id + (int)i) & 0xff, MSG_SIZE);
            if (write(s->g->fds[r][1], &m, sizeof m) != sizeof m)
                abort();
        }
    return NULL;
}

static void *receiver(void *arg)
{
    int fd = (int)(intptr_t)arg;
    long want = loops * PER_GROUP, bad = 0;
    unsigned char *batch[64];
    while (want > 0) {
        ssize_t n = read(fd, batch, sizeof batch);
        if (n <= 0)
            abort();
        for (ssize_t k = 0; k < n / (ssize_t)sizeof *batch; k++) {
            unsigned char *m = batch[k];
            bad += m[0] != m[MSG_SIZE - 1];
            MSG_FREE(m);
            want--;
        }
    }
    if (bad) {
        pthread_mutex_lock(&err_mu);
        errors += bad;
        pthread_mutex_unlock(&err_mu);
    }
    return NULL;
}

/*
 * The resident heap: seed 000's kmalloc-32 ... kmalloc-512 active-object
 * counts (a booted kernel's) times BOOT_SCALE, plus objects of four
 * dedicated caches sized like dentry, inode, buffer_head and vm_area_struct,
 * allocated interleaved in a fixed pseudo-random order (as boot interleaves
 * subsystems), then one object in four (-f N: in N) freed at random: about
 * 9.6 MB allocated, 7.2 MB left live, every page partly free.  kslab: the dedicated
 * caches are kmem_caches (mergeable, as the kernel's are); peers: malloc.
 */
#define BOOT_SCALE 5
static const struct { const char *name; unsigned size, count; } boot_mix[] = {
    { NULL, 32, 11200 * BOOT_SCALE }, { NULL, 64, 2773 * BOOT_SCALE },
    { NULL, 96, 750 * BOOT_SCALE },   { NULL, 128, 660 * BOOT_SCALE },
    { NULL, 192, 1040 * BOOT_SCALE }, { NULL, 256, 210 * BOOT_SCALE },
    { NULL, 512, 527 * BOOT_SCALE },
    { "dentry", 192, 8000 }, { "inode_cache", 600, 2000 }, { "buffer_head", 104, 4000 },
    { "vm_area_struct", 200, 3000 },
};
#define BOOT_KINDS (sizeof boot_mix / sizeof *boot_mix)

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
    return xorshift64(&rng);
}

static unsigned boot_free_one_in = 4;

static void boot_heap(void)
{
    size_t total = 0;
    for (size_t k = 0; k < BOOT_KINDS; k++)
        total += boot_mix[k].count;
    unsigned char *kind = malloc(total);       /* the harness's own: never freed through the shim */
    void **obj = malloc(total * sizeof *obj);
    size_t n = 0;
    for (size_t k = 0; k < BOOT_KINDS; k++)
        for (unsigned i = 0; i < boot_mix[k].count; i++)
            kind[n++] = (unsigned char)k;
    for (size_t i = total - 1; i > 0; i--) {   /* interleave the kinds */
        size_t j = next_rand() % (i + 1);
        unsigned char t = kind[i];
        kind[i] = kind[j];
        kind[j] = t;
    }
#if BENCH_KSLAB
    struct kmem_cache *cache[BOOT_KINDS] = { 0 };
    for (size_t k = 0; k < BOOT_KINDS; k++)
        if (boot_mix[k].name)
            cache[k] = kmem_cache_create(boot_mix[k].name, boot_mix[k].size, 0, 0, NULL);
#endif
    for (size_t i = 0; i < total; i++) {
        unsigned size = boot_mix[kind[i]].size;
#if BENCH_KSLAB
        obj[i] = cache[kind[i]] ? kmem_cache_alloc(cache[kind[i]], GFP_KERNEL)
                                : kmalloc(size, GFP_KERNEL);
#else
        obj[i] = BENCH_ALLOC(size);
#endif
        if (!obj[i])
            abort();
        memset(obj[i], 0x5a, size);
    }
    for (size_t i = 0; i < total; i++) {       /* one in four, at random */
        if (next_rand() % boot_free_one_in)
            continue;
#if BENCH_KSLAB
        if (cache[kind[i]])
            kmem_cache_free(cache[kind[i]], obj[i]);
        else
            kfree(obj[i]);
#else
        BENCH_FREE(obj[i]);
#endif
    }
    /* the rest stays live for the whole run, like a booted kernel's */
    free(kind);
    free(obj);
}

int main(int argc, char **argv)
{
    int groups = 4, boot = 0;
    const char *label = "kslab";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            groups = 1;
            loops = 5;
        } else if (strcmp(argv[i], "-b") == 0) {
            boot = 1;
        } else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc) {
            boot_free_one_in = (unsigned)atoi(argv[++i]);
            if (boot_free_one_in < 1)
                boot_free_one_in = 1;
        } else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc) {
            groups = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
            loops = atol(argv[++i]);
        } else {
            label = argv[i];
        }
    }
    struct group *g = calloc((size_t)groups, sizeof *g);
    pthread_t *th = calloc((size_t)groups * PER_GROUP * 2, sizeof *th);
    struct sender *snd = calloc((size_t)groups * PER_GROUP, sizeof *snd);
    char after_boot[64] = "-\t-";
    if (boot) {
        boot_heap();
#if BENCH_KSLAB
        snprintf(after_boot, sizeof after_boot, "%llu\t%ld",
                 (unsigned long long)kslab_pages_in_use() * 4, status_kb("VmRSS:"));
#else
        snprintf(after_boot, sizeof after_boot, "-\t%ld", status_kb("VmRSS:"));
#endif
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int nt = 0;
    for (int k = 0; k < groups; k++) {
        g[k].id = k;
        for (int r = 0; r < PER_GROUP; r++) {
            if (pipe(g[k].fds[r]))
                abort();
            /* one page of pointers in flight per receiver (512 messages), so
             * memory depends on the allocator, not on how far senders race ahead */
            fcntl(g[k].fds[r][1], F_SETPIPE_SZ, 4096);
            pthread_create(&th[nt++], NULL, receiver, (void *)(intptr_t)g[k].fds[r][0]);
        }
        for (int s = 0; s < PER_GROUP; s++) {
            snd[k * PER_GROUP + s] = (struct sender){ &g[k], k * PER_GROUP + s };
            pthread_create(&th[nt++], NULL, sender, &snd[k * PER_GROUP + s]);
        }
    }
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
#if BENCH_KSLAB
    char slab[64];
    snprintf(slab, sizeof slab, "%llu\t%llu", (unsigned long long)kslab_pages_in_use() * 4,
             (unsigned long long)kslab_pages_peak() * 4);
#else
    const char *slab = "-\t-";
#endif
    printf("%s\t%.3f\t%s\t%ld\t%ld\t%s\n", label, secs, slab, status_kb("VmRSS:"),
           status_kb("VmHWM:"), after_boot);
    for (int k = 0; k < groups; k++)
        for (int r = 0; r < PER_GROUP; r++) {
            close(g[k].fds[r][0]);
            close(g[k].fds[r][1]);
        }
    if (errors) {
        fprintf(stderr, "messaging: %ld damaged messages\n", errors);
        return 1;
    }
    return 0;
}
