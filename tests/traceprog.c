/* traceprog.c - the program test_replay.sh records: a known sequence on the
 * main thread (sizes 123451..), three threads that hand objects to the main
 * thread to free (size 5555) and free what the main thread allocated for
 * them (size 6666), a fork child whose allocations (size 7777) must not be
 * recorded, and a program run through system() (not recorded either). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HIDE(p) __asm__ volatile("" : "+r"(p) : : "memory")
#define PER_THREAD 1000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handed[3 * PER_THREAD];
static int nhanded;

static void *worker(void *arg)
{
    void *mine = arg;                           /* allocated by main: freed here */
    for (int i = 0; i < PER_THREAD; i++) {
        void *p = malloc(5555);
        HIDE(p);
        pthread_mutex_lock(&lock);
        handed[nhanded++] = p;
        pthread_mutex_unlock(&lock);
    }
    free(mine);
    return NULL;
}

int main(void)
{
    /* the known sequence */
    char *a = malloc(123451);
    HIDE(a);
    a = realloc(a, 123452);
    char *b = calloc(3, 41151);                 /* 123453 bytes */
    void *c = NULL;
    if (posix_memalign(&c, 256, 123454) != 0)
        return 1;
    free(a);
    free(b);
    free(c);
    /* three threads, objects crossing between them and main */
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        void *m = malloc(6666);
        HIDE(m);
        pthread_create(&t[i], NULL, worker, m);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < nhanded; i++)
        free(handed[i]);
    /* not recorded: a fork child's allocations, a program system() runs */
    pid_t k = fork();
    if (k == 0) {
        for (int i = 0; i < 100; i++) {
            void *p = malloc(7777);
            HIDE(p);
            free(p);
        }
        _exit(0);
    }
    waitpid(k, NULL, 0);
    if (system("true") != 0)
        return 1;
    printf("traceprog done\n");
    return 0;
}
