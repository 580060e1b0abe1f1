/* test_malloc_stress.c - threads pass malloc'ed buffers to each other
 * (cross-thread free), realloc them, and verify every byte.  Run under
 * LD_PRELOAD=libkslab-malloc.so, and once more under valgrind. */
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define NT 4
#define CAP 256
static struct { pthread_mutex_t mu; unsigned char *q[CAP]; int n; } box[NT];
static long iters = 100000;
static atomic_long bad, done;

static void check_free(unsigned char *p)
{
    size_t n = *(uint32_t *)p;
    for (size_t i = 4; i < n; i++)
        if (p[i] != (unsigned char)(n + i)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    free(p);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t r = 77 + (uint64_t)me;
    for (long i = 0; i < iters; i++) {
        r = r * 6364136223846793005ull + 1;
        uint32_t n = 8 + (uint32_t)(r >> 40) % 2000;
        unsigned char *p = malloc(n / 2 + 4);
        p = realloc(p, n);                     /* grow, contents rewritten below */
        if (!p) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        *(uint32_t *)p = n;
        for (uint32_t k = 4; k < n; k++)
            p[k] = (unsigned char)(n + k);
        int to = (int)((r >> 20) % NT);
        pthread_mutex_lock(&box[to].mu);
        if (box[to].n < CAP) {
            box[to].q[box[to].n++] = p;
            p = NULL;
        }
        pthread_mutex_unlock(&box[to].mu);
        if (p)
            check_free(p);
        pthread_mutex_lock(&box[me].mu);
        unsigned char *got = box[me].n ? box[me].q[--box[me].n] : NULL;
        pthread_mutex_unlock(&box[me].mu);
        if (got)
            check_free(got);
    }
    atomic_fetch_add(&done, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = atol(argv[1]);
    for (int i = 0; i < NT; i++)
        pthread_mutex_init(&box[i].mu, NULL);
    pthread_t t[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NT; i++)
        while (box[i].n)
            check_free(box[i].q[--box[i].n]);
    CHECK_EQ(atomic_load(&bad), 0);
    return check_done();
}
