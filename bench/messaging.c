/* messaging.c - seed 002's hackbench analog (hackbench's thread mode).
 * G groups of 20 sender and 20 receiver threads; each sender sends L
 * messages of 100 bytes to every receiver of its group: it allocates each
 * message, writes its pointer into the receiver's pipe, and the receiver
 * checks and frees it.  Allocation with kmalloc/kfree, or malloc/free when
 * built with -DUSE_MALLOC (the peers, under LD_PRELOAD).
 * Usage: messaging [--quick] [-g G] [-l L] label
 * Prints: label, seconds, slab kB after the run and at its peak (kslab
 *         only, else -), VmRSS kB after the run, VmHWM (peak RSS) kB. */
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

int main(int argc, char **argv)
{
    int groups = 4;
    const char *label = "kslab";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            groups = 1;
            loops = 5;
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
    printf("%s\t%.3f\t%s\t%ld\t%ld\n", label, secs, slab, status_kb("VmRSS:"), status_kb("VmHWM:"));
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
