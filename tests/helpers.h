/* helpers.h - what the tests repeat: a seeded random generator, a cache's
 * counters, time, and the soak length (KSLAB_TEST_SECONDS). */
#ifndef KSLAB_TEST_HELPERS_H
#define KSLAB_TEST_HELPERS_H
#include <kslab.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

/* xorshift64*: fast, seedable, good enough to pick operations */
static inline uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* The seed: KSLAB_TEST_SEED if set, else `dflt`; never 0. */
static inline uint64_t test_seed(uint64_t dflt)
{
    const char *s = getenv("KSLAB_TEST_SEED");
    uint64_t v = s ? strtoull(s, NULL, 0) : dflt;
    return v ? v : 1;
}

static inline struct kslab_stats test_stats(struct kmem_cache *s)
{
    struct kslab_stats st;
    memset(&st, 0, sizeof st);
    kslab_cache_stats(s, &st);
    return st;
}

/* The per-CPU (rseq) mode, or the per-thread one (KSLAB_PERCPU=0)? */
static inline int test_percpu(void)
{
    return strcmp(kslab_cpu_mode(), "percpu") == 0;
}

static inline uint64_t test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_seconds(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL);
}

/* The sanitizer flavours (make test's ASan and TSan builds), as GCC and
 * clang each say it: TEST_ASAN, TEST_TSAN, and TEST_SANITIZED for either,
 * which the tests that repeat work (threads, forks, operations) read to run
 * fewer repetitions of the same checks where every access is instrumented. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(TEST_ASAN) || defined(TEST_TSAN)
#define TEST_SANITIZED 1
#endif

/* The process's resident set now, KiB (/proc/self/statm); 0 if unreadable.
 * Under ASan, without ASan's shadow (the mappings that start in
 * [0x7fff8000, 0x10007fff8000), x86-64's shadow offset and its high
 * shadow's end), which is never given back: every check of an access reads
 * its shadow, and on a kernel that backs a read of untouched memory with a
 * page of its own (no shared zero page, as on this project's Zen 5 host)
 * test_maplimit's 90 MB of blocks left 17 MB of shadow resident after the
 * frees, against the 8 MiB its bound allows kslab. */
static inline long test_rss_kib(void)
{
#ifdef TEST_ASAN
    FILE *sf = fopen("/proc/self/smaps", "r");
    long kib = 0;
    if (sf) {
        char line[512];
        bool shadow = false;
        while (fgets(line, sizeof line, sf)) {
            unsigned long lo, hi, rss;
            if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
                shadow = lo >= 0x7fff8000ul && lo < 0x10007fff8000ul;
            else if (!shadow && sscanf(line, "Rss: %lu kB", &rss) == 1)
                kib += (long)rss;
        }
        fclose(sf);
    }
    return kib;
#endif
    long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* How long a stress phase runs: KSLAB_TEST_SECONDS (make soak raises it). */
static inline double test_seconds(double dflt)
{
    const char *s = getenv("KSLAB_TEST_SECONDS");
    return s ? atof(s) : dflt;
}
#endif
