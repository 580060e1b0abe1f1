/*
 * slab_common.c - the kernel's mm/slab_common.c: options (read once, no
 * allocation), the choice of back-end, initialisation, and the cache
 * lifecycle (create, merge, destroy, shrink), ids, and the helpers the
 * back-ends share.  The other common files are listed in slab_common.h.
 */
#define _GNU_SOURCE
#include "slab_common.h"
#include "percpu.h"
#include "slub_debug.h"
#include "kfence.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- options: one table, read once, no allocation ------------------------- */

struct kslab_options kslab_opts;

static const struct kslab_backend *const kslab_backends[] = {
    &slub_backend, &slab_backend, &slob_backend, &slob_seg_backend
};
const struct kslab_backend *kslab_be = &slub_backend;

bool kslab_env_digits(const char *v, unsigned long *n, const char **rest)
{
    unsigned long x = 0;
    const char *p = v;
    if (*p < '0' || *p > '9')
        return false;           /* strtoul took "-5" as 2^64 - 5, " 7" as 7 */
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (x > (ULONG_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *n = x;
    *rest = p;
    return true;
}

unsigned long kslab_env_number(const char *name, unsigned long unset)
{
    const char *v = prim_getenv(name), *rest;
    unsigned long n;
    if (!v || !*v)
        return unset;
    if (kslab_env_digits(v, &n, &rest) && !*rest)
        return n;
    kslab_warn("%s=%s: not a number (decimal digits, below 2^64); using %lu", name, v, unset);
    return unset;
}

int kslab_env_bool(const char *name, int unset)
{
    const char *v = prim_getenv(name);
    if (!v || !*v)
        return unset;
    if (strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "1") != 0)
        kslab_warn("%s=%s: takes 0 or 1; taken as 1", name, v);
    return 1;
}

bool kslab_init_on_alloc, kslab_init_on_free;

/* Freelist hardening: on unless KSLAB_HARDENED=0 (for measurement). */
bool kslab_hardened = true;

/* kslab's random numbers: splitmix64 over a seed from the OS, under no
 * lock (a relaxed fetch-add per number: two racing callers get different
 * numbers). */
static _Atomic uint64_t random_state;
#define SPLITMIX_STEP 0x9e3779b97f4a7c15ull
static uint64_t splitmix_out(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
uint64_t kslab_random64(void)
{
    return splitmix_out(atomic_fetch_add_explicit(&random_state, SPLITMIX_STEP,
                                                  memory_order_relaxed) + SPLITMIX_STEP);
}

/* Freelist randomization (CONFIG_SLAB_FREELIST_RANDOM; off with
 * KSLAB_HARDENED=0 or KSLAB_RANDOM_WINDOW=0, and in debugged caches, whose
 * reports read better in address order), for SLUB's and slob-seg's
 * freelists and SLAB's index arrays: a new slab's objects are handed out
 * one window of kslab_random_window (8) consecutive objects at a time, in
 * address order of the windows, the objects of each in a random order
 * (one of 256 permutations, each drawn at its first use, perm8 below;
 * Fisher-Yates for windows above 8).  The next object handed out
 * after x is x's neighbour in memory (an overflow's victim) one time in 8,
 * not always, and where each object comes differs in every window of
 * every slab.
 * Why windows and not the whole slab, as the kernel shuffles: objects
 * allocated together are used together, and programs walk them in
 * allocation order (python3's cyclic collector does, over every container
 * object).  A walk of 200 000 80-byte nodes in allocation order took 4.9
 * ns a node in address order, 7.5 with windows of 8, 31 with each page
 * shuffled (minimum of 5 runs); python3's alloc_heavy.py took 1.19 s,
 * 1.23 s and 1.61 s (medians of 13).
 * A window also spans at most kslab_random_span (4 KiB) of objects: 8 up
 * to 512 bytes, 3 of 1040 (sqlite3's pages), 2 of 2 KiB, none above; and
 * objects below 128 bytes at most kslab_small_span (448 bytes, below).
 * Shuffling large objects cost sqlite3 6 % (107 against 101 ms, median of
 * 15; 100 with this bound, glibc 99), where python3's small ones cost it
 * 4-6 % either way. */
unsigned kslab_random_window = 8;
static unsigned long kslab_random_span = 4096;

/* Objects below SMALL_SPAN_BELOW (128) bytes, the ones left in shuffled
 * windows (strides start at 96), have windows under 512 bytes as well:
 * kslab_small_span (448; KSLAB_RANDOM_SMALL_SPAN, 0 = no bound) -- 8
 * objects up to 56 bytes, 7 of 64, 5 of 80.  A walk in allocation order
 * over objects of several classes interleaved (python3's collector's list
 * mixes its lists, dicts, tuples and instances) pays for every window that
 * spans 8 cache lines or more: bench/walk.c, sizes 32,48,56,64,80, ns a
 * node: address order 2.75, windows of 8 6.21, these bounds 3.12, 384
 * bytes 3.05, 256 bytes 2.61 (README, "Windows under 512 bytes").  The
 * object after x is x's neighbour one time in 7 at 64 bytes (8 before),
 * one in 5 at 80. */
#define SMALL_SPAN_BELOW 128
static unsigned long kslab_small_span = 448;

/* Strides (KSLAB_RANDOM_STRIDE, the smallest object size strided; 0: none):
 * from 96 bytes up to the size where a window holds 8 objects (1 KiB),
 * a window is up to kslab_stride_span
 * (8 KiB; KSLAB_STRIDE_SPAN) of objects -- at most a quarter of a slab
 * above a page, so a lazily carved slab keeps most of its pages untouched
 * -- and its order is not a permutation but a stride: from a random
 * object, a random step of 2 to 9 prime to the window's size, wrapping.
 * A walk in allocation order then runs one way through memory, which the
 * prefetchers follow, where a shuffled window of these sizes broke them:
 * bench/walk.c, ns a node, windows of 8 -> strides (address order):
 * 96 B 30.6 -> 22.3 (8.5), 128 B 46.9 -> 19.5 (14.0), 208 B 79.3 -> 25.0
 * (16.6), 512 B 158 -> 83.5 (17.4).  16 KiB windows walked faster (512 B
 * 24.5) but touch more pages: sqlite3's peak RSS went over issue 9's bound
 * (README, "Strides from 96 bytes").  The next object handed out is never
 * x's neighbour (the step is at least 2); the neighbour comes 1/step (mod
 * the window) allocations later, dozens for most windows, where a window
 * of 8 puts it within 7.  A window's order is one of (objects x steps),
 * about what the kernel gives a whole slab (one of `objects`).  Windows of
 * fewer than 8 objects stay permutations. */
static unsigned long kslab_stride_min = 96, kslab_stride_span = 8192;
#define STRIDE_MIN_OBJECTS 8

/* Page merges (KSLAB_RANDOM_PAGES=k, 2 to 8, the default 8; 0: none), for
 * the classes below the strides whose slabs span k pages or more (malloc's
 * small classes: 64 KiB), once the cache holds RANDOM_PAGES_FROM_SLABS
 * slabs (1 MiB of them; before, windows): a window is k pages of objects,
 * each page's an ascending run, and each object handed out is the next of
 * a run picked at random.  The next object is its predecessor's neighbour
 * one time in k (in 8 with k = 8; a window of 7 64-byte objects: one in 7),
 * and each page is walked one way, in address order.
 * Why the default (stop 63; until then an option): python3's
 * alloc_heavy.py (200 000) took 0.91-0.98 of KSLAB_HARDENED=0's time with
 * k = 8, windows 1.00-1.04 against issue 12's budget of 1.02.  Its
 * collector's walks lose with any order that is not ascending inside a
 * page, even a fixed swap of each two 64-byte neighbours (1.031; 448-byte
 * windows each handed out backwards 1.123, each page backwards 1.062), and
 * the gain is the collector's: with gc.disable() windows and merges read
 * alike (1.044, 1.049).  sqlite3, gcc and a perl script of hashes and
 * arrays read as with windows (perl 1.030 against 1.023, 11 rounds; the
 * bound keeps short programs' first objects on one page: without it gcc
 * touched 351 more pages, 1.044).  The price: bench/walk.c's
 * chase of one class's objects in allocation order takes 2.5-3x as long
 * (64 B: 4.8 ns a node against 2.0 with windows, address order 1.6; glibc
 * 1.9, scudo 42), so a program that builds long lists of one small class
 * and chases them in that order may want KSLAB_RANDOM_PAGES=0 (README,
 * "Page merges"). */
#define RANDOM_PAGES_MAX 8
#define RANDOM_PAGES_DEFAULT 8
static unsigned kslab_random_pages = RANDOM_PAGES_DEFAULT;
#define RANDOM_PAGES_FROM_SLABS 16

/* (the window's object count, STRIDE_MIN_OBJECTS, sets the upper end:
 * 1 KiB with 8 KiB windows) */
static bool stride_cache(const struct kmem_cache *s)
{
    return kslab_stride_min && s->size >= kslab_stride_min;
}

/* Objects per window of s's new slabs, and whether they are strides or
 * page merges (*merge: the runs, else 0): the one place that decides. */
static unsigned window_of(const struct kmem_cache *s, bool *stride, uint8_t *merge)
{
    *stride = false;
    *merge = 0;
    if (!kslab_hardened || kslab_debugged(s) || kslab_random_window < 2)
        return 1;
    if (kslab_random_pages && !stride_cache(s) && (1u << s->order) >= kslab_random_pages &&
        atomic_load_explicit(&s->nr_slabs, memory_order_relaxed) >= RANDOM_PAGES_FROM_SLABS) {
        /* relaxed: a count read as a hint; a window decided on a stale
         * one is another valid order of the same objects */
        *merge = (uint8_t)kslab_random_pages;
        return (unsigned)(kslab_random_pages * PAGE_SIZE / s->size);
    }
    if (stride_cache(s)) {
        /* a quarter of the slab at most: a lazily carved slab keeps most
         * of its pages untouched until its objects are wanted */
        unsigned long span = (PAGE_SIZE << s->order) / 4;
        span = span > PAGE_SIZE ? span : PAGE_SIZE;
        unsigned long w = (kslab_stride_span < span ? kslab_stride_span : span) / s->size;
        if (w >= STRIDE_MIN_OBJECTS) {
            *stride = true;
            return w > 0xffff ? 0xffff : (unsigned)w;
        }
    }
    unsigned long span = kslab_random_span ? kslab_random_span : ~0ul;
    if (s->size < SMALL_SPAN_BELOW && kslab_small_span && kslab_small_span < span)
        span = kslab_small_span;
    unsigned long fit = span / s->size;
    unsigned w = fit < kslab_random_window ? (unsigned)fit : kslab_random_window;
    return w ? w : 1;
}

unsigned kslab_shuffle_window(const struct kmem_cache *s)
{
    bool stride;
    uint8_t merge;
    return window_of(s, &stride, &merge);
}

/* idx[0..m) := a uniformly random permutation of 0..m-1, its random words
 * a splitmix64 sequence from one kslab_random64 (one fetch-add on the
 * shared state, not one per 8 swaps) */
static void shuffle(uint8_t *idx, uint32_t m)
{
    uint64_t r = 0, seed = kslab_random64();
    for (uint32_t i = 0; i < m; i++)
        idx[i] = (uint8_t)i;
    for (uint32_t i = m - 1, used = 8; m && i > 0; i--, used++) {
        if (used == 8) {
            r = splitmix_out(seed += SPLITMIX_STEP);
            used = 0;
        }
        uint32_t j = (uint32_t)(((r & 0xff) * (i + 1)) >> 8);   /* 0 .. i */
        uint8_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        r >>= 8;
    }
}

/* Windows of up to 8 objects (the default's, and every window that the
 * span bounds) take their order from a table of PERM8 permutations of
 * 0..7, one picked by a random byte per window: the objects of a smaller
 * window m in the order the table's entry lists 0..m-1 (the relative
 * order of m of a uniformly random permutation's elements is a uniformly
 * random permutation of them).  A window's order is one of 256, each
 * equally likely, where the kernel's CONFIG_SLAB_FREELIST_RANDOM gives a
 * whole slab one of `objects` orders (one precomputed sequence per cache,
 * entered at a random place).
 * With Fisher-Yates for every window, linking a fresh object took 45
 * instructions; with the table, 27 (callgrind, python3 alloc_heavy.py
 * 100000: carving's link_objects 32.4 M -> 19.1 M, the whole run 3 236 M
 * -> 3 222 M).
 * Each entry is drawn the first time a window picks it (0: not yet; a
 * permutation of 0..7 has bytes 1..7 in it, so it is never 0).  Drawing
 * all 256 when kslab started cost every process 48 000 instructions
 * (callgrind, `seq 1 5`: 8 % of its run under kslab), where a short-lived
 * one links a few dozen windows. */
#define PERM8 256
static uint64_t perm8[PERM8];       /* byte k: the k-th index of the window */

static uint64_t perm8_entry(unsigned e)
{
    /* relaxed, load and store: an entry is a value, not a publication of
     * other data.  Two threads that both find it 0 each draw one; either
     * store leaves a uniformly random permutation, and a window that read
     * the other is no less random. */
    uint64_t v = __atomic_load_n(&perm8[e], __ATOMIC_RELAXED);
    if (unlikely(!v)) {
        uint8_t idx[8];
        shuffle(idx, 8);
        for (unsigned k = 0; k < 8; k++)
            v |= (uint64_t)idx[k] << (8 * k);
        __atomic_store_n(&perm8[e], v, __ATOMIC_RELAXED);
    }
    return v;
}

void kslab_shuffle_range(struct kslab_shuffle *it, const struct kmem_cache *s, uint32_t from,
                         uint32_t to)
{
    it->n = to;
    it->w = window_of(s, &it->stride, &it->merge);
    it->live = 0;
    it->mbase = from;
    it->mm = 0;
    it->step = 0;
    it->w0 = from;
    it->i = it->m = 0;
    it->rbytes = 0;
}

/* A page merge's next object (kslab_random_pages above), as a window of
 * one object for kslab_shuffle_next, whose inline part, run for every
 * object linked, then tests nothing new.  With the option off, python3's
 * alloc_heavy.py 100000 ran 3 368.8 M instructions (callgrind,
 * KSLAB_PUBLISH=0, PYTHONHASHSEED=0) against 3 367.9-3 369.1 M in three
 * runs before it.  At a merge window's start, its k runs (object ranges of
 * about a page each); then the next object of a run picked uniformly among
 * those with objects left, by a random byte. */
static void merge_next(struct kslab_shuffle *it)
{
    if (!it->live) {
        it->mbase += it->mm;
        it->mm = it->n - it->mbase < it->w ? it->n - it->mbase : it->w;
        for (unsigned j = 0; j < it->merge; j++) {
            it->cur[j] = (uint16_t)(j * it->mm / it->merge);
            it->end[j] = (uint16_t)((j + 1) * it->mm / it->merge);
            if (it->cur[j] < it->end[j])
                it->live |= (uint8_t)(1u << j);
        }
    }
    if (!it->rbytes) {
        it->r = kslab_random64();
        it->rbytes = 8;
    }
    unsigned pick = (unsigned)(((it->r & 0xff) * (unsigned)__builtin_popcount(it->live)) >> 8);
    it->r >>= 8;
    it->rbytes--;
    unsigned j = (unsigned)__builtin_ctz(it->live);
    for (unsigned left = it->live & (it->live - 1u); pick; pick--, left &= left - 1u)
        j = (unsigned)__builtin_ctz(left);  /* the pick-th run with objects left */
    uint32_t o = it->cur[j]++;
    if (it->cur[j] == it->end[j])
        it->live &= (uint8_t)~(1u << j);
    it->w0 = it->mbase + o;             /* a window of one: step 1 from it */
    it->m = 1;
    it->i = 0;
    it->step = 1;
    it->pos = 0;
}

void kslab_shuffle_window_next(struct kslab_shuffle *it)
{
    if (it->merge) {
        merge_next(it);
        return;
    }
    it->w0 += it->m;
    it->i = 0;
    if (it->w == 1) {
        /* address order (KSLAB_HARDENED=0, KSLAB_RANDOM_WINDOW=0, debugged
         * caches, objects above the span): the rest of the range as one
         * window of step 1, so a slab's objects cost one call here, not
         * one each (34 samples of a python3 profile's 1001 in kslab) */
        it->m = it->n - it->w0;
        it->step = 1;
        it->pos = 0;
        return;
    }
    it->m = it->n - it->w0 < it->w ? it->n - it->w0 : it->w;
    if (it->stride) {
        /* a random start and a random step 2..9 prime to m, not m - 1 (a
         * step back: a sheaf, which hands a refill out last first, would
         * turn it into address order).  None for m of 3 or less, 4 and 6
         * (a slab's short last window) and multiples of 210: such a
         * window is a permutation, as below, if it fits one; else step 1 */
        uint64_t r = kslab_random64();
        uint32_t m = it->m, step = 1;
        it->pos = m ? (uint32_t)((r & 0xffffffff) % m) : 0;
        for (unsigned k = 0, first = (unsigned)(r >> 32) & 7; m > 3 && k < 8; k++) {
            uint32_t c = (2 + (first + k) % 8) % m, a = c, b = m;
            while (a) {                 /* b := gcd(c, m) */
                uint32_t t = b % a;
                b = a;
                a = t;
            }
            if (c > 1 && c < m - 1 && b == 1) {
                step = c;
                break;
            }
        }
        it->step = step == 1 && m <= RANDOM_WINDOW_MAX ? 0 : step;
        if (it->step)
            return;
    }
    if (it->m > 8) {
        shuffle(it->idx, it->m);
        return;
    }
    if (it->m < 2) {
        it->idx[0] = 0;                 /* a window of one (or address order) */
        return;
    }
    if (!it->rbytes) {
        it->r = kslab_random64();
        it->rbytes = 8;
    }
    uint64_t p = perm8_entry((unsigned)(it->r & (PERM8 - 1)));
    it->r >>= 8;
    it->rbytes--;
    if (it->m == 8) {                   /* the usual window: the entry itself */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(it->idx, &p, 8);         /* byte k is the k-th index: one store */
#else
        for (unsigned k = 0; k < 8; k++)
            it->idx[k] = (uint8_t)(p >> (8 * k));
#endif
        return;
    }
    /* the entry's bytes below m, in order: each byte is stored and kept
     * (j moves on) only if it is below m -- no branch on the random byte.
     * With the branch this loop held most of the function's samples in a
     * free-all-and-rebuild profile (bench/regrow.c), and cachegrind's
     * branch model counted 109 000 mispredicts in this function over
     * python3's alloc_heavy.py 50000; without it, 22 000. */
    for (unsigned k = 0, j = 0; k < 8; k++, p >>= 8) {
        it->idx[j] = (uint8_t)p;
        j += (p & 0xff) < it->m;
    }
}

static void read_options(void)
{
    kslab_hardened = kslab_env_bool("KSLAB_HARDENED", 1);
    unsigned long w = kslab_env_number("KSLAB_RANDOM_WINDOW", kslab_random_window);
    kslab_random_window = w > RANDOM_WINDOW_MAX ? RANDOM_WINDOW_MAX : (unsigned)w;
    kslab_random_span = kslab_env_number("KSLAB_RANDOM_SPAN", kslab_random_span);
    kslab_small_span = kslab_env_number("KSLAB_RANDOM_SMALL_SPAN", kslab_small_span);
    kslab_stride_min = kslab_env_number("KSLAB_RANDOM_STRIDE", kslab_stride_min);
    kslab_stride_span = kslab_env_number("KSLAB_STRIDE_SPAN", kslab_stride_span);
    unsigned long k = kslab_env_number("KSLAB_RANDOM_PAGES", RANDOM_PAGES_DEFAULT);
    if (k == 1 || k > RANDOM_PAGES_MAX)
        kslab_warn("KSLAB_RANDOM_PAGES=%lu: takes 0 or 2 to %d; using %d", k, RANDOM_PAGES_MAX,
                   k == 1 ? 0 : RANDOM_PAGES_MAX);
    kslab_random_pages = k == 1 ? 0 : k > RANDOM_PAGES_MAX ? RANDOM_PAGES_MAX : (unsigned)k;
    atomic_store_explicit(&random_state, prim_random_seed(), memory_order_relaxed);
    kslab_init_on_alloc = kslab_env_bool("KSLAB_INIT_ON_ALLOC", 0);
    kslab_init_on_free = kslab_env_bool("KSLAB_INIT_ON_FREE", 0);
    kslab_opts.nomerge = kslab_env_bool("KSLAB_NOMERGE", 0);
    kslab_opts.slabinfo_at_exit = kslab_env_bool("KSLAB_SLABINFO", 0);
    /* at most about 290 years a tick: SLAB's reap's two ticks still fit */
    unsigned long long decay_ms = kslab_env_number("KSLAB_DECAY_MS", 1000);
    kslab_opts.decay_ns = (decay_ms < UINT64_MAX / 2000000 ? decay_ms : UINT64_MAX / 2000000) *
                          1000000ull;
    const char *ix = prim_getenv("KSLAB_SLAB_INDEX");
    kslab_opts.slab_index_int = ix && strcmp(ix, "int") == 0;
    if (ix && *ix && !kslab_opts.slab_index_int)
        kslab_warn("KSLAB_SLAB_INDEX=%s: takes only \"int\"; ignored", ix);
    kslab_publish_init();
    kslab_debug_init();
    const char *a = prim_getenv("KSLAB_ALLOCATOR");
    if (a && *a) {
        const struct kslab_backend *be = NULL;
        for (size_t i = 0; i < sizeof kslab_backends / sizeof *kslab_backends; i++)
            if (strcmp(a, kslab_backends[i]->name) == 0)
                be = kslab_backends[i];
        if (!be)
            kslab_report("KSLAB_ALLOCATOR=%s is not a back-end of this build; valid: slub, slab, "
                         "slob, slob-seg", a);
        kslab_be = be;
    }
}

const char *kslab_allocator_name(void)
{
    kslab_ensure_init();
    return kslab_be->name;
}

/* ---- caches: the list, ids, the static boot caches -------------------------- */

kslab_lock_t kslab_cache_lock = KSLAB_LOCK_INIT;   /* the cache list and ids */
struct kmem_cache *kslab_cache_list;
#define cache_lock kslab_cache_lock
#define cache_list kslab_cache_list
static uint64_t cache_ids[KSLAB_MAX_CACHES / 64] KSLAB_BIG_BSS;
/* id -> cache, for back-ends that record ids in objects (SLOB).  Written
 * under cache_lock; read without it: acquire pairs with the release in
 * cache_setup(), so a reader that finds a cache sees it initialised. */
static _Atomic(struct kmem_cache *) caches_by_id[KSLAB_MAX_CACHES] KSLAB_BIG_BSS;

/* The boot caches: the kmalloc classes (kmalloc.c indexes them), the
 * cache of kmem_cache structs, malloc's unset class and malloc's classes.
 * Static, with fixed ids, so that before kslab_init() every thread sees
 * empty cpu entries and reaches the slow path, which initialises.  64-byte
 * aligned, as kmem_cache_create's descriptors are: a descriptor's
 * fast-path fields (its first 64 bytes) on one cache line, not two (the
 * array's place in .bss had left them 32 bytes off). */
struct kmem_cache kslab_boot_caches[BOOT_CACHES] __attribute__((aligned(64)));
#define kmem_cache_cache (&kslab_boot_caches[KMALLOC_CLASSES])

static bool is_boot_cache(const struct kmem_cache *s)
{
    return s >= kslab_boot_caches && s < kslab_boot_caches + BOOT_CACHES;
}


static int id_alloc(void)
{
    for (unsigned w = 0; w < KSLAB_MAX_CACHES / 64; w++)
        if (~cache_ids[w]) {
            unsigned b = (unsigned)__builtin_ctzll(~cache_ids[w]);
            cache_ids[w] |= 1ull << b;
            return (int)(w * 64 + b);
        }
    return -1;
}

static void id_free(unsigned id)
{
    cache_ids[id / 64] &= ~(1ull << (id % 64));
}

/* calculate_alignment(): hardware-cache alignment shrinks for small objects
 * so that several still share a line; never below the word size. */
static unsigned calculate_alignment(slab_flags_t flags, unsigned align, unsigned size)
{
    if (flags & SLAB_HWCACHE_ALIGN) {
        unsigned ralign = 64;
        while (size <= ralign / 2)
            ralign /= 2;
        if (ralign > align)
            align = ralign;
    }
    if (align < sizeof(void *))
        align = sizeof(void *);
    return (unsigned)ALIGN_UP(align, sizeof(void *));
}

/* malloc_class: malloc class i + 1 (kslab_malloc_class_setup), or 0 */
static int cache_setup(struct kmem_cache *s, const char *name, unsigned size, unsigned align,
                       slab_flags_t flags, void (*ctor)(void *), int id, bool kmalloc,
                       unsigned malloc_class, const struct kmem_cache_args *args)
{
    memset(s, 0, sizeof *s);
    s->malloc_class = (uint8_t)malloc_class;
    s->freeptr_req = FREEPTR_NONE;
    if (args) {
        s->useroffset = args->useroffset;
        s->usersize = args->usersize;
        if (args->use_freeptr_offset)
            s->freeptr_req = args->freeptr_offset;
        s->sheaf_req = args->sheaf_capacity;
    }
    s->pcpu = s->pcpu_tag0 = pcpu_none;     /* per-CPU sheaves come after slow start */
    s->pcpu_gen = 1;                /* never an entry's hint_gen 0: no hint yet */
    s->is_kmalloc = kmalloc;        /* before cache_init: it may pick the geometry by it */
    if (kslab_hardened) {
        s->fp_key = kslab_random64();
        s->fp_swab = ~0ull;
    }
    /* (s is zeroed: the copy is terminated; not snprintf, which with
     * malloc's names was 127 000 instructions of kslab_init: see
     * kslab_malloc_name) */
    memcpy(s->name, name, strnlen(name, sizeof s->name - 1));
    s->object_size = size;
    flags = kslab_debug_flags(name, flags);
    if ((flags & SLAB_DEBUG_FLAGS) && !kslab_debug_supported()) {
        static _Atomic bool warned;     /* once: relaxed, a flag for a message */
        if ((flags & SLAB_USER_DEBUG_FLAGS) &&
            !atomic_exchange_explicit(&warned, true, memory_order_relaxed))
            kslab_warn("debugging (SLAB_RED_ZONE, SLAB_POISON, SLAB_STORE_USER, "
                       "SLAB_CONSISTENCY_CHECKS, KSLAB_DEBUG) needs the slub, slab or slob-seg back-end; "
                       "caches of %s run without it", kslab_be->name);
        flags &= ~SLAB_DEBUG_FLAGS;
    }
    s->align = calculate_alignment(flags, align, size);
    s->flags = flags;
    s->ctor = ctor;
    s->id = (uint32_t)id;
    s->refcount = 1;
    if (kslab_be->cache_init(s))
        return -1;
    if (s->sheaf_req && s->pcpu_cap)
        s->pcpu_cap = (uint8_t)(s->sheaf_req < PCPU_CAP_MAX ? s->sheaf_req : PCPU_CAP_MAX);
    /* malloc's pops claim the free tag at offset 0 from the array its
     * small table names (kmalloc.c), which is s->pcpu, not s->pcpu_tag0
     * (percpu.h, rule 10): a cache with no constructor, not RCU and no
     * freeptr_offset has its word there in every back-end's layout, or
     * here gets no sheaves.  The one guard of that rule. */
    if (!ctor && !(flags & SLAB_TYPESAFE_BY_RCU) && s->freeptr_req == FREEPTR_NONE && s->offset)
        s->pcpu_cap = 0;
    s->magic = CACHE_LIVE;
    s->next_cache = cache_list;
    s->pprev_cache = &cache_list;
    if (cache_list)
        cache_list->pprev_cache = &s->next_cache;
    cache_list = s;
    atomic_store_explicit(&caches_by_id[id], s, memory_order_release);
    return 0;
}

/* ---- initialisation ------------------------------------------------------------ */

atomic_int kslab_initialised;
static kslab_lock_t init_lock = KSLAB_LOCK_INIT;

void kslab_init(void)
{
    kslab_lock(&init_lock);
    if (atomic_load_explicit(&kslab_initialised, memory_order_relaxed)) {
        kslab_unlock(&init_lock);
        return;
    }
    read_options();
    kslab_kfence_init();            /* the pool and the fault handler, if asked for */
    kslab_percpu_init();            /* the mode, once, before any cache is used */
    pages_init();
    kslab_threads_init();
    kslab_lock(&cache_lock);
    for (int i = KMALLOC_CLASSES - 1; i >= 0; i--) {
        unsigned size = kmalloc_sizes[i];
        id_alloc();
        /* power-of-two classes naturally aligned, as the kernel creates them */
        cache_setup(&kslab_boot_caches[i], kmalloc_names[i], size,
                    (size & (size - 1)) == 0 ? size : 0, 0, NULL, KMALLOC_CLASSES - 1 - i, true,
                    0, NULL);
    }
    id_alloc();
    /* Type-safe (the back-ends keep a free object's contents): a destroyed
     * cache keeps its id and CACHE_DEAD until its slot is reused, so use
     * after destroy is reported, not followed. */
    cache_setup(kmem_cache_cache, "kmem_cache", sizeof(struct kmem_cache), 64,
                SLAB_HWCACHE_ALIGN | SLAB_NO_MERGE | SLAB_TYPESAFE_BY_RCU, NULL,
                KMALLOC_CLASSES, false, 0, NULL);
    /* malloc's unset class (kslab_malloc_class_setup) and the ids of the
     * boot slots the classes take on first use: each its boot index, as
     * id_alloc hands ids out in order from an empty bitmap (MALLOC_UNSET,
     * then MALLOC_BOOT ...) */
    struct kmem_cache *unset = kslab_malloc_unset;
    memcpy(unset->name, "malloc-unset", sizeof "malloc-unset");
    unset->pcpu = unset->pcpu_tag0 = pcpu_none;
    unset->id = (uint32_t)id_alloc();
    for (unsigned i = 0; i < MALLOC_CLASSES; i++)
        id_alloc();
    kslab_unlock(&cache_lock);
    /* release: everything above is visible to a thread that sees 1 */
    atomic_store_explicit(&kslab_initialised, 1, memory_order_release);
    kslab_random_kmalloc_init();    /* creates caches: after the store above */
    /* Last, once allocation works: glibc's pthread_atfork may call malloc,
     * which (as libkslab-malloc) is us. */
    kslab_threads_atfork_init();
    kslab_debug_warm();             /* malloc works now: backtrace() may use it once */
    kslab_unlock(&init_lock);
}

/*
 * malloc's classes are set up on first use.  Setting up all 88 in
 * kslab_init wrote 50 KiB of kmem_cache structs (14 pages, each a fault
 * in every process), and a short-lived process such as `seq` uses a
 * dozen classes.  Until then malloc's tables (kmalloc.c) name
 * kslab_malloc_unset, so a class's first allocation reaches
 * kslab_alloc_slow, which calls this and then names the class in the
 * tables.  Each class takes the next free boot slot after the unset one,
 * so the classes a process uses sit together after the kmalloc classes
 * (`seq`: their structs on 4 pages, not 14), with the slot's id, reserved
 * in kslab_init.  It is a boot cache like the others, and joins the cache
 * list (slabinfo, shrink, fork) when set up.
 *
 * cache_lock is only tried: a thread may hold it and call malloc (a
 * slabinfo writer's fprintf, a thread exiting), and cache_lock comes
 * before every other lock, which a malloc's caller may hold.  When it is
 * busy the caller serves that one request from a kmalloc class or the page
 * allocator (kmalloc.c), and the next malloc of the class tries again.
 */
struct kmem_cache *_Atomic kslab_malloc_classes[MALLOC_CLASSES];
static unsigned malloc_slots_used;      /* boot slots from MALLOC_BOOT taken (cache_lock) */

struct kmem_cache *kslab_malloc_class_setup(unsigned i)
{
    kslab_ensure_init();
    if (!kslab_trylock(&cache_lock))
        return NULL;
    /* relaxed: written under cache_lock, which we hold */
    struct kmem_cache *s = atomic_load_explicit(&kslab_malloc_classes[i], memory_order_relaxed);
    if (!s) {
        char name[KSLAB_NAME_LEN];
        unsigned size = kslab_malloc_class_size(i), slot = MALLOC_BOOT + malloc_slots_used;
        kslab_malloc_name(name, size);
        s = &kslab_boot_caches[slot];
        if (cache_setup(s, name, size, 16, 0, NULL, (int)slot, true, i + 1, NULL)) {
            s = NULL;
        } else {
            malloc_slots_used++;
            /* release: the cache initialised before a reader finds it */
            atomic_store_explicit(&kslab_malloc_classes[i], s, memory_order_release);
        }
    }
    kslab_unlock(&cache_lock);
    return s;
}

__attribute__((constructor)) static void kslab_ctor(void)
{
    kslab_ensure_init();
}

__attribute__((destructor)) static void kslab_dtor(void)
{
    if (kslab_opts.slabinfo_at_exit)
        kslab_slabinfo(stderr);
    kslab_publish_exit();
}

/* Arena memory is always mapped (freed pages read as zero), so the magic of
 * anything in an arena can be read safely; a live cache is also the one its
 * id names. */
void kslab_check_cache(const char *fn, struct kmem_cache *s)
{
    if (!is_boot_cache(s) && !in_arena(s))
        kslab_report("%s(): %p is not a kmem_cache", fn, (void *)s);
    uint32_t m = __atomic_load_n(&s->magic, __ATOMIC_RELAXED);
    if (m == CACHE_DEAD)
        kslab_report("%s(%.*s): cache %p was destroyed", fn, KSLAB_NAME_LEN, s->name,
                     (void *)s);
    if (m != CACHE_LIVE || kslab_cache_by_id(s->id) != s)
        kslab_report("%s(): %p is not a kmem_cache", fn, (void *)s);
}

struct kmem_cache *kslab_cache_by_id(unsigned id)
{
    return id < KSLAB_MAX_CACHES
               ? atomic_load_explicit(&caches_by_id[id], memory_order_acquire) : NULL;
}

/* ---- helpers the back-ends share ------------------------------------------------ */

static void take_slab(struct slab *slab, void *arg)
{
    struct slab **list = arg;
    slab->next = *list;
    *list = slab;
}

struct slab *kslab_take_slabs(struct kmem_cache *s)
{
    struct slab *list = NULL;
    if (atomic_load_explicit(&s->nr_slabs, memory_order_relaxed))
        pages_for_each_slab(s, take_slab, &list);
    return list;
}

void kslab_discard_slab(struct kmem_cache *s, struct kmem_cache_cpu_cold *cc, struct slab *slab)
{
    if (kslab_debugged(s))
        slub_debug_slab_release(s, slab);   /* ASan, valgrind: its memory usable again */
    atomic_fetch_sub_explicit(&s->nr_slabs, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->total_objects, s->objects, memory_order_relaxed);
    stat_add(s, cc, FREE_SLAB, 1);
    /* release: the per-CPU hints (percpu.h, rule 6) see the slab gone
     * before its pages can serve anything else */
    __atomic_fetch_add(&s->pcpu_gen, 1, __ATOMIC_RELEASE);
    pages_free(slab, s->order);
}

/* The start of the object or block containing p, for kfree_rcu (kslab-rcu.h:
 * an rcu_head inside the object is all the callback gets). */
void *kslab_object_start(const void *p)
{
    kslab_ensure_init();
    if (!p)
        return NULL;
    if (kslab_kfence_owns(p))
        return kslab_kfence_start_of(p);
    if (!in_arena(p)) {
        struct huge_hdr *h = huge_of(p);
        return h && huge_is_live(h) ? h->base : NULL;
    }
    struct slab *d = addr_desc((uintptr_t)p);
    struct kmem_cache *s = d->cache;
    if (!s) {                                           /* a live large block's */
        struct slab *h = pages_large_containing(p);
        return h && __atomic_load_n(&h->pg_state, __ATOMIC_RELAXED) == PG_LARGE
                   ? slab_address(h) : NULL;
    }
    if (!s->objects) {                                  /* SLOB */
        void *x = slob_object_start(p);
        if (x)
            return x;
        return (void *)((uintptr_t)p & ~((PAGE_SIZE << d->pg_order) - 1));   /* a big block */
    }
    struct slab *slab = arena_slab_of(p);
    if (!slab)
        return NULL;
    uintptr_t base = (uintptr_t)slab_address(slab) + slab->pg_colour;
    if ((uintptr_t)p < base)
        return NULL;
    uintptr_t idx = ((uintptr_t)p - base) / s->size;
    return idx < s->objects ? (void *)(base + idx * s->size) : NULL;
}

bool kmem_dump_obj(void *p)
{
    void *start = kslab_object_start(p);
    if (!start)
        return false;
    struct slab *d = in_arena(p) && !kslab_kfence_owns(p) ? addr_desc((uintptr_t)p) : NULL;
    struct kmem_cache *s = d ? d->cache : NULL;
    bool slob = s && !s->objects;               /* SLOB: its pages name no single cache */
    fprintf(stderr, " %s%s start %p pointer offset %zu size %zu\n",
            slob ? "slob object" : s ? "slab " : kslab_kfence_owns(p) ? "kfence object"
                                                                      : "kmalloc block",
            s && !slob ? s->name : "", start, (size_t)((char *)p - (char *)start), ksize(start));
    return true;
}

/* RCU, once libkslab-rcu registered it (kslab_set_rcu_ops): what runs
 * after a grace period, and the barrier that waits for all of it.  Stored
 * with release and read with acquire: libkslab-rcu may be dlopen'd while
 * other threads shrink caches, and its code must be seen whole. */
static void (*rcu_defer)(void (*fn)(void *), void *arg);
static void (*rcu_barrier_fn)(void);

/* A SLAB_TYPESAFE_BY_RCU cache's empty slabs, given back after a grace
 * period (readers may still be looking at their objects) when RCU is
 * registered; kept otherwise.  take() unlinks them (->next list), called
 * only once the node that carries them through the grace period exists. */
struct rcu_discard {
    struct kmem_cache *s;
    struct slab *slabs;
    void (*discard)(struct kmem_cache *, struct slab *);
};
static void rcu_discard_now(void *arg)
{
    struct rcu_discard *d = arg;
    d->discard(d->s, d->slabs);
    kfree(d);
}
bool kslab_rcu_registered(void)
{
    return __atomic_load_n(&rcu_defer, __ATOMIC_ACQUIRE) != NULL;
}
void kslab_rcu_defer(void (*fn)(void *), void *arg)
{
    __atomic_load_n(&rcu_defer, __ATOMIC_ACQUIRE)(fn, arg);
}
void kslab_rcu_shrink(struct kmem_cache *s, struct slab *(*take)(struct kmem_cache *),
                      void (*discard)(struct kmem_cache *, struct slab *))
{
    if (!kslab_rcu_registered())
        return;
    struct rcu_discard *d = kmalloc(sizeof *d, GFP_KERNEL);
    if (!d)
        return;
    d->s = s;
    d->discard = discard;
    d->slabs = take(s);
    if (!d->slabs) {
        kfree(d);
        return;
    }
    kslab_rcu_defer(rcu_discard_now, d);
}

void kslab_set_rcu_ops(void (*defer)(void (*fn)(void *), void *arg), void (*barrier)(void))
{
    __atomic_store_n(&rcu_barrier_fn, barrier, __ATOMIC_RELEASE);
    __atomic_store_n(&rcu_defer, defer, __ATOMIC_RELEASE);
}

/* ---- cache lifecycle ------------------------------------------------------------ */

/* (a cache annotated for ASan or valgrind has metadata in its slots too:
 * the tool sees each cache's objects at their own size) */
#define SLAB_NEVER_MERGE (SLAB_DEBUG_FLAGS | SLAB_TYPESAFE_BY_RCU | SLAB_NO_MERGE)

/* find_mergeable(): an existing cache whose objects can serve this one. */
static struct kmem_cache *find_mergeable(unsigned size, unsigned align, slab_flags_t flags,
                                         void (*ctor)(void *))
{
    if (kslab_opts.nomerge || ctor || (flags & SLAB_NEVER_MERGE))
        return NULL;
    size = (unsigned)ALIGN_UP(size, sizeof(void *));
    align = calculate_alignment(flags, align, size);
    size = (unsigned)ALIGN_UP(size, align);
    struct kmem_cache *best = NULL;
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache) {
        if (s->ctor || (s->flags & SLAB_NEVER_MERGE))
            continue;
        /* s->align too: SLAB's colouring places objects at multiples of
         * the cache's alignment, not of the stride */
        if (size > s->size || (s->size & (align - 1)) || s->align < align ||
            s->size - size >= sizeof(void *))
            continue;
        best = s;   /* the list is newest first: keep the oldest, as the kernel does */
    }
    return best;
}

/* Both forms of kmem_cache_create; args NULL for the legacy one. */
static struct kmem_cache *cache_create(const char *name, unsigned int size, unsigned int align,
                                       slab_flags_t flags, void (*ctor)(void *),
                                       struct kmem_cache_args *args)
{
    kslab_ensure_init();
    struct kmem_cache *s = NULL;
    const char *why = NULL;
    if (!name || !*name)
        why = "no name";
    else if (size == 0 || size > (PAGE_SIZE << MAX_SLAB_ORDER) - sizeof(void *))
        why = "object size out of range";
    else if (align & (align - 1))
        why = "alignment is not a power of two";
    else if (args && args->use_freeptr_offset &&
             (!(flags & SLAB_TYPESAFE_BY_RCU) || args->freeptr_offset % sizeof(void *) ||
              args->freeptr_offset > size - sizeof(void *)))
        why = "freeptr_offset needs SLAB_TYPESAFE_BY_RCU and an aligned word inside the object";
    if (why)
        goto fail;
    if (args && (args->usersize > size || args->useroffset > size - args->usersize ||
                 (!args->usersize && args->useroffset))) {
        /* the kernel WARNs and drops the window */
        kslab_warn("kmem_cache_create(%s): usercopy window %u+%u outside the object (%u): dropped",
                   name, args->useroffset, args->usersize, size);
        args->useroffset = args->usersize = 0;
    }
    flags = kslab_debug_flags(name, flags);     /* a debugged cache is never merged */
    kslab_lock(&cache_lock);
    /* the kernel merges no cache with a usercopy window, a free pointer
     * placed by hand or a sheaf capacity of its own */
    bool own = args && (args->usersize || args->use_freeptr_offset || args->sheaf_capacity);
    s = own ? NULL : find_mergeable(size, align, flags, ctor);
    if (s) {
        s->refcount++;
        kslab_unlock(&cache_lock);
        return s;
    }
    int id = id_alloc();
    if (id >= 0 && kslab_be->max_caches && (unsigned)id >= kslab_be->max_caches) {
        id_free((unsigned)id);
        id = -1;
    }
    if (id < 0) {
        kslab_unlock(&cache_lock);
        why = "too many caches";
        goto fail;
    }
    s = kmem_cache_alloc(kmem_cache_cache, GFP_KERNEL);
    if (!s || cache_setup(s, name, size, align, flags & ~SLAB_KSLAB_KMALLOC, ctor, id,
                          flags & SLAB_KSLAB_KMALLOC, 0, args)) {
        id_free((unsigned)id);
        kslab_unlock(&cache_lock);
        if (s)
            kmem_cache_free(kmem_cache_cache, s);
        why = s ? "object too large" : "out of memory";
        s = NULL;
        goto fail;
    }
    kslab_unlock(&cache_lock);
    return s;
fail:
    if (flags & SLAB_PANIC)
        kslab_report("kmem_cache_create(%s): %s", name ? name : "(null)", why);
    return NULL;
}

/* (the parentheses keep <kslab.h>'s two-form macro off the definition) */
struct kmem_cache *(kmem_cache_create)(const char *name, unsigned int size, unsigned int align,
                                       slab_flags_t flags, void (*ctor)(void *))
{
    return cache_create(name, size, align, flags, ctor, NULL);
}

struct kmem_cache *__kmem_cache_create_args(const char *name, unsigned int size,
                                            struct kmem_cache_args *args, slab_flags_t flags)
{
    struct kmem_cache_args none = { 0 };
    if (!args)
        args = &none;
    return cache_create(name, size, args->align, flags, args->ctor, args);
}

struct kmem_cache *kmem_cache_create_usercopy(const char *name, unsigned int size,
                                              unsigned int align, slab_flags_t flags,
                                              unsigned int useroffset, unsigned int usersize,
                                              void (*ctor)(void *))
{
    struct kmem_cache_args a = { .align = align, .useroffset = useroffset,
                                 .usersize = usersize, .ctor = ctor };
    return cache_create(name, size, align, flags, ctor, &a);
}

static void flush_one(struct kslab_thread *t, void *s)
{
    kslab_be->flush_thread(t, s);
}

static void fold_one(struct kslab_thread *t, void *s)
{
    kslab_thread_fold(t, s);
}

void kmem_cache_destroy(struct kmem_cache *s)
{
    if (!s)
        return;
    kslab_check_cache("kmem_cache_destroy", s);
    /* as the kernel's: slabs of the cache waiting for a grace period are
     * given back before the cache goes */
    void (*barrier)(void) = __atomic_load_n(&rcu_barrier_fn, __ATOMIC_ACQUIRE);
    if ((s->flags & SLAB_TYPESAFE_BY_RCU) && barrier)
        barrier();
    kslab_lock(&cache_lock);
    if (--s->refcount > 0) {
        kslab_unlock(&cache_lock);
        return;
    }
    if (!is_boot_cache(s)) {
        /* Unlink, then take every thread's slabs of s back (kernel semantics:
         * nobody may use s concurrently with its destruction). */
        *s->pprev_cache = s->next_cache;
        if (s->next_cache)
            s->next_cache->pprev_cache = s->pprev_cache;
        if (kslab_be->flush_thread)
            kslab_for_each_thread(flush_one, s);   /* flush never creates thread state */
        uint64_t live = kslab_cache_active(s);
        if (live) {
            kslab_warn("kmem_cache_destroy %s: Slab cache still has objects (%llu)", s->name,
                       (unsigned long long)live);
            if (kslab_debugged(s))
                slub_debug_leaks(s);
        }
        kslab_pcpu_destroy(s, !live);   /* the sheaves' objects go with the slabs */
        kslab_be->destroy(s);
        atomic_store_explicit(&caches_by_id[s->id], NULL, memory_order_relaxed);
        /* last: the steps above may count events in the threads' entries,
         * which must be clear before the id is reused */
        kslab_for_each_thread(fold_one, s);
        id_free(s->id);
        s->magic = CACHE_DEAD;
        kslab_unlock(&cache_lock);
        kmem_cache_free(kmem_cache_cache, s);
        return;
    }
    s->refcount = 1;   /* boot caches live for ever */
    kslab_unlock(&cache_lock);
}

int kmem_cache_shrink(struct kmem_cache *s)
{
    if (!s)
        return 0;
    kslab_check_cache("kmem_cache_shrink", s);
    return kslab_shrink(s);
}

/* Every CPU's sheaf (as the kernel flushes them), then the back-end's
 * shrink: kmem_cache_shrink, malloc_trim, and an allocation out of memory. */
int kslab_shrink(struct kmem_cache *s)
{
    kslab_pcpu_drain(s);
    return kslab_be->shrink(s);
}

unsigned int kmem_cache_size(struct kmem_cache *s)
{
    return s->object_size;
}

const char *kslab_cache_name(struct kmem_cache *s)
{
    return s ? s->name : NULL;
}

size_t kslab_slab_descriptor_size(void)
{
    return sizeof(struct slab);
}


/* malloc_trim: every cache's empty slabs, the calling thread's pcp lists,
 * the hot reserve and the huge mapping cache back to the OS.  Other
 * threads' pcp lists (at most PCP_MAX_PAGES each) are theirs until they
 * free more or exit.  The thread's state is created first, so that nothing
 * below creates it under cache_lock. */
size_t kslab_trim(void)
{
    kslab_ensure_init();
    kslab_nolock_drain();
    struct kslab_memory a, b;
    kslab_memory(&a);
    struct kslab_thread *t = kslab_thread_get();
    if (t)
        pages_pcp_drain(&t->pcp);
    kslab_lock(&cache_lock);
    for (struct kmem_cache *s = cache_list; s; s = s->next_cache)
        kslab_shrink(s);
    kslab_unlock(&cache_lock);
    pages_release_all();
    kslab_memory(&b);
    uint64_t held_a = a.slab_bytes + a.pcp_bytes + a.hot_bytes + a.huge_cached_bytes;
    uint64_t held_b = b.slab_bytes + b.pcp_bytes + b.hot_bytes + b.huge_cached_bytes;
    return held_a > held_b ? (size_t)(held_a - held_b) : 0;
}
