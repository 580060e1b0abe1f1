/* bench_common.h - timing helpers shared by the benchmark programs:
 * rdtsc cycles and CLOCK_MONOTONIC nanoseconds, median over runs. */
#ifndef KSLAB_BENCH_COMMON_H
#define KSLAB_BENCH_COMMON_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Marsaglia's xorshift64 (13, 7, 17): the benchmarks' random numbers, each
 * program with its own state and seed (never 0), so every run draws the
 * same sequence. */
static inline uint64_t xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* The TSC, read after every earlier instruction has finished (lfence)
 * and before any later one starts.  Not rdtscp: a virtual machine may run
 * it but leave it out of CPUID (this project's Zen 5 host does), and
 * valgrind then stops the program at it with SIGILL, which cost the
 * report its callgrind rows (sections 05, 20, 21, 86). */
static inline uint64_t cycles(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

/* A line of /proc/self/status, e.g. status_kb("VmRSS:"), in kB; -1 if
 * missing. */
static inline long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = atol(line + strlen(key));
    if (f)
        fclose(f);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One measurement: median and spread (min, max) of per-item ns and cycles. */
struct result { double ns, ns_min, ns_max, cyc, cyc_min, cyc_max; };

static inline struct result summarize(double *ns, double *cyc, int runs)
{
    struct result r;
    qsort(ns, (size_t)runs, sizeof *ns, cmp_double);
    qsort(cyc, (size_t)runs, sizeof *cyc, cmp_double);
    r.ns = ns[runs / 2];
    r.ns_min = ns[0];
    r.ns_max = ns[runs - 1];
    r.cyc = cyc[runs / 2];
    r.cyc_min = cyc[0];
    r.cyc_max = cyc[runs - 1];
    return r;
}

/* Time `body` (a statement run `iters` times per run) over `runs` runs. */
#define MEASURE(res, runs, iters, per, body)                                          \
    do {                                                                              \
        double _ns[64], _cy[64];                                                      \
        for (int _r = 0; _r < (runs); _r++) {                                         \
            uint64_t _t0 = now_ns(), _c0 = cycles();                                  \
            for (long _i = 0; _i < (iters); _i++) {                                   \
                body;                                                                 \
            }                                                                         \
            uint64_t _c1 = cycles(), _t1 = now_ns();                                  \
            _ns[_r] = (double)(_t1 - _t0) / ((double)(iters) * (per));               \
            _cy[_r] = (double)(_c1 - _c0) / ((double)(iters) * (per));               \
        }                                                                             \
        (res) = summarize(_ns, _cy, (runs));                                          \
    } while (0)

/* The fastest chunk: `chunks` chunks of `per` iterations of body, and
 * the fewest rdtsc cycles an iteration took in any one chunk.  A chunk
 * lasts some microseconds, so on a shared machine some chunks run with
 * no neighbour in the way, where a run of seconds rarely does.  On a
 * quiet host the minimum of 15 processes repeated to 0.3 % (9.045 and
 * 9.015 cycles, the per-CPU kmem_cache pair, two series); while a
 * neighbour loads the core for the whole run it strays like any timing. */
#define MEASURE_MIN_CHUNK(res_cycles, chunks, per, body)                              \
    do {                                                                              \
        double _best = 1e300;                                                         \
        for (long _k = 0; _k < (chunks); _k++) {                                      \
            uint64_t _c0 = cycles();                                                  \
            for (long _i = 0; _i < (per); _i++) {                                     \
                body;                                                                 \
            }                                                                         \
            double _c = (double)(cycles() - _c0) / (double)(per);                     \
            if (_c < _best)                                                           \
                _best = _c;                                                           \
        }                                                                             \
        (res_cycles) = _best;                                                         \
    } while (0)

static inline void print_result(const char *who, const char *what, struct result r)
{
    printf("%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", who, what, r.ns, r.ns_min, r.ns_max,
           r.cyc, r.cyc_min, r.cyc_max);
}
#endif
