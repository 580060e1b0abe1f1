/* alloc_shim.h - "kmalloc or malloc": one benchmark source builds both ways.
 * Default: kslab's kmalloc/kfree (linked).  With -DUSE_MALLOC: malloc/free
 * through volatile pointers (so the compiler cannot elide the pairs), for
 * glibc and the peers under LD_PRELOAD.  BENCH_KSLAB is 1 in kslab builds,
 * for the parts only kslab has (caches, bulk calls, slab counters). */
#ifndef KSLAB_BENCH_ALLOC_SHIM_H
#define KSLAB_BENCH_ALLOC_SHIM_H
#include <stdlib.h>
#ifdef USE_MALLOC
#define BENCH_KSLAB 0
static void *(*volatile bench_malloc_fn)(size_t) = malloc;
static void (*volatile bench_free_fn)(void *) = free;
#define BENCH_ALLOC(n) bench_malloc_fn(n)
#define BENCH_FREE(p) bench_free_fn(p)
#define BENCH_ALLOC_NAME "malloc"
#define BENCH_FREE_NAME "free"
#define BENCH_WHO "glibc"
#else
#define BENCH_KSLAB 1
#include <kslab.h>
#define BENCH_ALLOC(n) kmalloc((n), GFP_KERNEL)
#define BENCH_FREE(p) kfree(p)
#define BENCH_ALLOC_NAME "kmalloc"
#define BENCH_FREE_NAME "kfree"
#define BENCH_WHO "kslab"
#endif
#endif
