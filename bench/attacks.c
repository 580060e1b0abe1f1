/*
 * attacks.c - the heap attacks of issue 12, run against any malloc (kslab
 * through libkslab-malloc, or a peer by LD_PRELOAD) for the report's
 * security table.  One attack per process:
 *
 *   attacks NAME
 *
 * prints one line and exits 0 when the allocator did not stop the attack:
 *   "exploited: ..."  the allocator handed out an address the attacker
 *                     chose, or one block twice;
 *   "silent"          nothing stopped it and no such effect showed.
 * An allocator that stops the attack aborts or exits with its message
 * (bench/sections/85-security.sh tells a report from a crash by the signal
 * and the stderr text).
 *
 * Every attack uses 64-byte requests (a common size class everywhere) and
 * a sprayed set of blocks, so that it does not depend on one allocator's
 * placement: where it needs "the block after x in memory", it finds such a
 * pair among the sprayed blocks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

/* The attacker's target: where a forged free pointer points. */
static _Alignas(4096) char target[8192];
#define N 512
#define SZ 64
static void *(*volatile m_alloc)(size_t) = malloc;
static void (*volatile m_free)(void *) = free;

/* Allocate n blocks and report if any is near the target or equals one of
 * the live blocks `live` (nlive of them). */
static int hand_out(int n, void **live, int nlive)
{
    for (int i = 0; i < n; i++) {
        char *p = m_alloc(SZ);
        if (!p)
            break;
        if (p >= target && p < target + sizeof target) {
            printf("exploited: block %p handed out inside the attacker's buffer\n", (void *)p);
            return 1;
        }
        for (int j = 0; j < nlive; j++)
            if (p == live[j]) {
                printf("exploited: block %p handed out while still live\n", (void *)p);
                return 1;
            }
        live[nlive < N ? nlive++ : 0] = p;
    }
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    uintptr_t x = *(uintptr_t *)a, y = *(uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* A sprayed set, sorted by address; returns the index of a block whose
 * successor in memory is within 2 * SZ of it (the overflow's victim). */
static int spray_pair(void **p)
{
    for (int i = 0; i < N; i++)
        p[i] = m_alloc(SZ);
    qsort(p, N, sizeof *p, by_addr);
    for (int i = N / 2; i < N - 1; i++)
        if ((char *)p[i + 1] - (char *)p[i] <= 2 * SZ)
            return i;
    return -1;
}

/* Fill n bytes at q with the target's address (a forged pointer, whatever
 * word of the victim the allocator keeps its link in). */
static void forge(void *q, size_t n)
{
    uintptr_t t = (uintptr_t)(target + 1024);
    for (size_t o = 0; o + sizeof t <= n; o += sizeof t)
        memcpy((char *)q + o, &t, sizeof t);
}

/* Overflow x into the free block after it (freelist poisoning). */
static int fl_overflow(void)
{
    static void *p[N];
    int i = spray_pair(p);
    if (i < 0)
        return puts("silent"), 0;
    m_free(p[0]);           /* a block freed before the victim: its link is followed */
    m_free(p[i + 1]);
    forge((char *)p[i] + SZ, (size_t)((char *)p[i + 1] - (char *)p[i]));
    void *live[N];
    int nlive = 0;
    for (int j = 0; j < N; j++)
        if (j != i + 1 && j != 0)
            live[nlive++] = p[j];
    return hand_out(64, live, nlive) ? 0 : (puts("silent"), 0);
}

/* Write after free: a forged pointer into a freed block. */
static int uaf_write(void)
{
    static void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = m_alloc(SZ);
    m_free(p[0]);
    m_free(p[N / 2]);
    forge(p[N / 2], SZ);
    void *live[N];
    int nlive = 0;
    for (int j = 1; j < N; j++)
        if (j != N / 2)
            live[nlive++] = p[j];
    return hand_out(64, live, nlive) ? 0 : (puts("silent"), 0);
}

/* free(a) twice, then two allocations. */
static int double_free(void)
{
    void *a = m_alloc(SZ), *keep = m_alloc(SZ);
    m_free(a);
    m_free(a);
    void *live[N] = { keep };
    return hand_out(3, live, 1) ? 0 : (puts("silent"), 0);
}

/* free a, free b, free a: not caught by an "is it the last freed" test. */
static int double_free_aba(void)
{
    void *a = m_alloc(SZ), *b = m_alloc(SZ);
    m_free(a);
    m_free(b);
    m_free(a);
    void *live[N];
    return hand_out(4, live, 0) ? 0 : (puts("silent"), 0);
}

/* The same block freed by two threads, one after the other, on two
 * different CPUs where there are two (the harder case for a per-CPU front
 * end: the two frees land in different caches). */
static void *a_block;
static void *got[2][4];         /* what each CPU's thread was handed after */
static void pin(intptr_t cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(cpu % sysconf(_SC_NPROCESSORS_ONLN)), &set);
    sched_setaffinity(0, sizeof set, &set);     /* best effort */
}
static void *free_on(void *cpu)
{
    pin((intptr_t)cpu);
    m_free(a_block);
    return NULL;
}
/* The program goes on allocating, on both CPUs: where each free left the
 * block is where it could be handed out again. */
static void *alloc_on(void *cpu)
{
    pin((intptr_t)cpu);
    for (int i = 0; i < 4; i++)
        got[(intptr_t)cpu][i] = m_alloc(SZ);
    return NULL;
}
static int double_free_threads(void)
{
    a_block = m_alloc(SZ);
    pthread_t t;
    for (intptr_t cpu = 0; cpu < 2; cpu++) {
        pthread_create(&t, NULL, free_on, (void *)cpu);
        pthread_join(t, NULL);
    }
    for (intptr_t cpu = 0; cpu < 2; cpu++) {
        pthread_create(&t, NULL, alloc_on, (void *)cpu);
        pthread_join(t, NULL);
    }
    for (int i = 0; i < 8; i++)
        for (int j = i + 1; j < 8; j++)
            if (got[i / 4][i % 4] && got[i / 4][i % 4] == got[j / 4][j % 4]) {
                printf("exploited: block %p handed out twice\n", got[i / 4][i % 4]);
                return 0;
            }
    return puts("silent"), 0;
}

/* free of a pointer inside a block. */
static int free_interior(void)
{
    char *a = m_alloc(SZ);
    m_free(a + 16);
    void *live[N] = { a };
    return hand_out(4, live, 1) ? 0 : (puts("silent"), 0);
}

/* free of a pointer the allocator never gave out (the attacker's). */
static int free_foreign(void)
{
    m_free(target + 1024);
    void *live[N];
    return hand_out(4, live, 0) ? 0 : (puts("silent"), 0);
}

/* A one-byte overflow past the request (no forged pointer), then free:
 * only an allocator that checks the bytes past the block stops it. */
static int overflow_1(void)
{
    char *a = m_alloc(SZ - 8);
    a[SZ - 8] = 0x41;
    m_free(a);
    void *live[N];
    return hand_out(2, live, 0) ? 0 : (puts("silent"), 0);
}

/* A write before the block, then free. */
static int underflow_1(void)
{
    char *a = m_alloc(SZ);
    a[-1] = 0x41;
    m_free(a);
    void *live[N];
    return hand_out(2, live, 0) ? 0 : (puts("silent"), 0);
}

/* A one-byte write after free (no forged pointer: a byte in the middle),
 * then allocations that may reuse the block. */
static int uaf_byte(void)
{
    static void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = m_alloc(SZ);
    char *a = p[N / 2];
    m_free(a);
    a[SZ / 2] = 0x41;
    void *live[N];
    return hand_out(N, live, 0) ? 0 : (puts("silent"), 0);
}

static const struct {
    const char *name, *what;
    int (*fn)(void);
} attacks[] = {
    { "fl_overflow", "overflow into a free neighbour's freelist link (poisoning)", fl_overflow },
    { "uaf_write", "write a forged link into a freed block", uaf_write },
    { "double_free", "double free, immediate", double_free },
    { "double_free_aba", "double free, non-immediate (a, b, a)", double_free_aba },
    { "double_free_threads", "double free from two threads", double_free_threads },
    { "free_interior", "free of a pointer inside a block", free_interior },
    { "free_foreign", "free of a pointer never allocated", free_foreign },
    { "overflow_1", "one-byte overflow past the request, then free", overflow_1 },
    { "underflow_1", "one-byte write before the block, then free", underflow_1 },
    { "uaf_byte", "one-byte write after free, then reuse", uaf_byte },
};

int main(int argc, char **argv)
{
    size_t n = sizeof attacks / sizeof *attacks;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\t%s\n", attacks[i].name, attacks[i].what);
        return 0;
    }
    for (size_t i = 0; argc == 2 && i < n; i++)
        if (strcmp(argv[1], attacks[i].name) == 0) {
            setvbuf(stdout, NULL, _IONBF, 0);
            /* A program that has run a while: the class's caches are warm
             * (every allocator's per-thread or per-CPU front end in use). */
            static void *warm[N];
            for (int k = 0; k < N; k++)
                warm[k] = m_alloc(SZ);
            for (int k = 0; k < N; k++)
                m_free(warm[k]);
            for (int k = 0; k < N / 2; k++)
                warm[k] = m_alloc(SZ);
            return attacks[i].fn();
        }
    fprintf(stderr, "usage: %s --list | ATTACK\n", argv[0]);
    return 2;
}
