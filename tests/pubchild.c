/* pubchild.c - the live process test_watch.sh watches with kslabinfo and
 * kslabtop.  It keeps 1000 objects of "watched_cache" (200 bytes) and churns
 * another cache so its slow path runs (and publishes) every few ms; SIGUSR1
 * frees 500 of the watched objects; SIGUSR2 forks a child that keeps 300
 * objects of "forked_cache" and exits after 2 s.
 * It prints its pid (and a forked child's) on stdout and exits after 60 s or on SIGTERM. */
#define _GNU_SOURCE
#include <kslab.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t do_free, do_fork;
static void on_usr1(int sig) { (void)sig; do_free = 1; }
static void on_usr2(int sig) { (void)sig; do_fork = 1; }

static void churn(struct kmem_cache *c)
{
    static void *p[2000];
    for (int i = 0; i < 2000; i++)
        p[i] = kmem_cache_alloc(c, GFP_KERNEL);
    for (int i = 0; i < 2000; i++)
        kmem_cache_free(c, p[i]);
}

int main(void)
{
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, on_usr2);
    struct kmem_cache *w = kmem_cache_create("watched_cache", 200, 0, SLAB_NO_MERGE, NULL);
    struct kmem_cache *c = kmem_cache_create("churn_cache", 64, 0, SLAB_NO_MERGE, NULL);
    static void *obj[1000];
    for (int i = 0; i < 1000; i++)
        obj[i] = kmem_cache_alloc(w, GFP_KERNEL);
    printf("%d\n", (int)getpid());
    fflush(stdout);
    for (int t = 0; t < 6000; t++) {
        churn(c);
        if (do_free) {
            do_free = 0;
            for (int i = 0; i < 500; i++)
                kmem_cache_free(w, obj[i]);
        }
        if (do_fork) {
            do_fork = 0;
            pid_t k = fork();
            if (k == 0) {
                struct kmem_cache *f = kmem_cache_create("forked_cache", 100, 0, SLAB_NO_MERGE,
                                                         NULL);
                for (int i = 0; i < 300; i++)
                    if (!kmem_cache_alloc(f, GFP_KERNEL))
                        _exit(3);
                for (int i = 0; i < 200; i++)   /* 2 s */
                    churn(c), usleep(10000);
                exit(0);                        /* an exit: the region goes */
            }
            printf("%d\n", (int)k);
            fflush(stdout);
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        usleep(10000);
    }
    return 0;
}
