/* check.h - the smallest test harness that can fail: CHECK counts, main
 * returns non-zero if any check failed, and death tests run a function in a
 * child process and check its signal and stderr. */
#ifndef KSLAB_CHECK_H
#define KSLAB_CHECK_H
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int check_pass, check_fail;
#define CHECK(c)                                                                   \
    do {                                                                           \
        if (c)                                                                     \
            check_pass++;                                                          \
        else {                                                                     \
            check_fail++;                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);  \
        }                                                                          \
    } while (0)
#define CHECK_EQ(a, b)                                                             \
    do {                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                        \
        if (_a == _b)                                                              \
            check_pass++;                                                          \
        else {                                                                     \
            check_fail++;                                                          \
            fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %lld != %lld\n",      \
                    __FILE__, __LINE__, #a, #b, _a, _b);                           \
        }                                                                          \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", check_pass, check_fail);
    return check_fail ? 1 : 0;
}

/* Run the calling thread on cpu alone; sched_setaffinity's result. */
static inline int pin_cpu(int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one);
}

/* Run fn in a child; return its stderr in buf and whether it died by sig.
 * pin: the child stays on the CPU it starts on (CHECK_DEATH).  A double
 * free whose two frees push onto two CPUs' sheaves is reported when a copy
 * leaves them (src/percpu.h, rule 8), which a death test that ends at its
 * second free never reaches: a migration between the two frees, seen under
 * make test -j2, made such a test pass or fail by chance.  Death tests
 * that mean two CPUs pin their threads to them (test_death's
 * double_free_cpus). */
static inline int run_child_on(void (*fn)(void *), void *arg, char *buf, size_t n, int *sig,
                               int pin)
{
    int p[2];
    *sig = 0;
    buf[0] = 0;
    if (pipe(p))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        int cpu = pin ? sched_getcpu() : -1;
        if (cpu >= 0)
            pin_cpu(cpu);
        dup2(p[1], 2);
        close(p[0]);
        fn(arg);
        _exit(0);
    }
    close(p[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(p[0], buf + got, n - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static inline int run_child(void (*fn)(void *), void *arg, char *buf, size_t n, int *sig)
{
    return run_child_on(fn, arg, buf, n, sig, 0);
}

/* The child must die of SIGABRT and its stderr must contain every needle. */
#define CHECK_DEATH(fn, arg, ...)                                                  \
    do {                                                                           \
        char _buf[4096];                                                           \
        int _sig;                                                                  \
        run_child_on(fn, arg, _buf, sizeof _buf, &_sig, 1);                        \
        const char *_needles[] = { __VA_ARGS__, NULL };                            \
        int _ok = _sig == SIGABRT;                                                 \
        for (int _i = 0; _needles[_i]; _i++)                                       \
            _ok &= strstr(_buf, _needles[_i]) != NULL;                             \
        if (_ok)                                                                   \
            check_pass++;                                                          \
        else {                                                                     \
            check_fail++;                                                          \
            fprintf(stderr, "%s:%d: death test %s: signal %d, stderr: %s\n",       \
                    __FILE__, __LINE__, #fn, _sig, _buf);                          \
        }                                                                          \
    } while (0)
#endif
