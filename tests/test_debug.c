/* test_debug.c - slub_debug in user space: the kernel's slub_kunit cases
 * with the error counts validation must report (kmem_cache_validate: each
 * corruption found, plus one for repairing the cache when any was, as the
 * kernel counts them), a write after free caught at the next allocation, a
 * double free reported and survived, a report's lines against the kernel's
 * format, the KSLAB_DEBUG forms, KSLAB_DEBUG_PANIC, a cache destroyed with
 * objects left, and the back-ends without debugging saying so.
 *
 * Each case runs in a child whose stderr is captured; cases that need
 * KSLAB_DEBUG set before kslab starts re-run this program with it. */
#define _GNU_SOURCE
#include "check.h"
#include <kslab.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The objects these tests corrupt come from calls marked malloc: let them
 * escape, or the compiler may drop or move the stores (the kernel's test
 * uses OPTIMIZER_HIDE_VAR for the same reason). */
#define HIDE(p) __asm__ volatile("" : "+r"(p) : : "memory")
#define WRITE(p, i, v) do { HIDE(p); ((volatile uint8_t *)(p))[i] = (uint8_t)(v); HIDE(p); } while (0)

static bool is_backend(const char *name)
{
    return strcmp(kslab_allocator_name(), name) == 0;
}
static bool supported(void)     /* SLUB, its slabs under slob-seg, and SLAB */
{
    return is_backend("slub") || is_backend("slob-seg") || is_backend("slab");
}

/* ---- the slub_kunit cases: the child's exit status is what validation found ---- */

static void clobber_zone(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_RZ_alloc", 64, 0, SLAB_RED_ZONE, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    WRITE(p, 64, 0x12);
    long e = kmem_cache_validate(s);
    kmem_cache_free(s, p);
    kmem_cache_destroy(s);
    _exit((int)e);
}

static void next_pointer(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_next_ptr_free", 64, 0, SLAB_POISON, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    /* the free pointer sits after the object (poisoning keeps it outside) */
    uintptr_t *fp = (uintptr_t *)(p + 64), saved = *fp;
    WRITE(p, 64, ~p[64]);
    long e1 = kmem_cache_validate(s);   /* freechain corrupt, wrong count, the repair */
    HIDE(fp);
    *(volatile uintptr_t *)fp = saved;
    long e2 = kmem_cache_validate(s);   /* the count fixed above is wrong again, the repair */
    long e3 = kmem_cache_validate(s);   /* clean */
    kmem_cache_destroy(s);
    _exit((int)(e1 * 25 + e2 * 5 + e3));   /* an exit status is one byte */
}

/* SLAB keeps no pointer in a free object: its free list is the slab's
 * index array, for this cache (64-byte objects, poisoned, so the array is
 * never inside an object) at the end of a one-page slab: 4096 / (64 + 1)
 * = 63 objects and 63 one-byte indexes.  An index out of range is dropped
 * (its object stays allocated, as a cut SLUB freelist's): one error, plus
 * the repair, then the slab validates clean. */
static void slab_index(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlab_index", 64, 0, SLAB_POISON, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    uint8_t *page = (uint8_t *)((uintptr_t)p & ~(uintptr_t)4095);
    unsigned objects = 4096 / 65;
    uint8_t *idx = page + 4096 - objects;
    HIDE(idx);
    idx[objects - 1] = 200;
    long e1 = kmem_cache_validate(s);
    long e2 = kmem_cache_validate(s);
    /* every object but the dropped one can still be allocated, each once */
    void *got[64];
    unsigned n = 0;
    while (n < objects - 1 && (got[n] = kmem_cache_alloc(s, GFP_KERNEL)) &&
           ((uintptr_t)got[n] & ~(uintptr_t)4095) == (uintptr_t)page)
        n++;
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < i; j++)
            if (got[i] == got[j])
                _exit(99);
    _exit((int)(e1 * 10 + e2 + (n == objects - 1 ? 0 : 50)));
}

/* A 64-byte object of a new cache, freed, then byte `at` written: what
 * validation finds. */
static int write_after_free(const char *name, slab_flags_t flags, int at, uint8_t v)
{
    struct kmem_cache *s = kmem_cache_create(name, 64, 0, flags, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    WRITE(p, at, v);
    return (int)kmem_cache_validate(s);
}
static void first_word(void *a)
{
    _exit(write_after_free("TestSlub_1th_word_free", SLAB_POISON, 0, 0x78));
}
static void clobber_50th_byte(void *a)
{
    _exit(write_after_free("TestSlub_50th_word_free", SLAB_POISON, 50, 0x9a));
}
static void clobber_redzone_free(void *a)
{
    _exit(write_after_free("TestSlub_RZ_free", SLAB_RED_ZONE, 64, 0xab));
}

/* re-run with KSLAB_DEBUG=ZU,kmalloc-32: kmalloc(18) writing bytes 18, 19 */
static int kmalloc_redzone_access(void)
{
    volatile uint8_t *p = kmalloc(18, GFP_KERNEL);
    p[18] = 0xab;
    p[19] = 0xab;
    long e = kslab_validate_all();
    kfree((void *)p);
    return (int)e;
}

/* re-run with KSLAB_DEBUG=Z,kmalloc-32: krealloc shrinking re-arms the red
 * zone, so the old tail is red zone again */
static int krealloc_shrink(void)
{
    uint8_t *p = kmalloc(30, GFP_KERNEL);
    memset(p, 1, 30);
    uint8_t *q = krealloc(p, 18, GFP_KERNEL);
    if (q != p)
        return 100;             /* shrinking stays in place */
    long before = kslab_validate_all();
    volatile uint8_t *v = q;
    v[25] = 2;                  /* the old tail */
    long e = kslab_validate_all();
    q = krealloc(q, 28, GFP_KERNEL);   /* growing in place: 18..27 are object again */
    memset(q, 3, 28);
    long after = kslab_validate_all();
    kfree(q);
    return (int)(before * 100 + e * 10 + after);
}

/* ---- behaviour ---------------------------------------------------------------- */

static void use_after_free(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_UAF", 96, 0, SLAB_POISON | SLAB_STORE_USER,
                                             NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    long before = kslab_debug_errors();
    WRITE(p, 10, 0x55);               /* written after free */
    uint8_t *q = kmem_cache_alloc(s, GFP_KERNEL);   /* the same object: checked here */
    int bad = q != p;
    for (int i = 0; i < 96 && !bad; i++)   /* repaired: the poison is whole again */
        bad = i == 95 ? q[i] != 0xa5 : q[i] != 0x6b;
    _exit(bad ? 99 : (int)(kslab_debug_errors() - before));
}

static void double_free(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_DF", 40, 0, SLAB_CONSISTENCY_CHECKS, NULL);
    void *keep = kmem_cache_alloc(s, GFP_KERNEL), *p = kmem_cache_alloc(s, GFP_KERNEL);
    kmem_cache_free(s, p);
    long before = kslab_debug_errors();
    kmem_cache_free(s, p);      /* reported, not freed again */
    void *x = kmem_cache_alloc(s, GFP_KERNEL), *y = kmem_cache_alloc(s, GFP_KERNEL);
    int same = x == y;          /* p handed out once, not twice */
    kmem_cache_free(s, x);
    kmem_cache_free(s, y);
    kmem_cache_free(s, keep);
    _exit(same ? 99 : (int)(kslab_debug_errors() - before + 10 * kmem_cache_validate(s)));
}

/* global, and the program linked with -rdynamic: the tracks name them */
void report_format(void *a);
void leak_at_destroy(void *a);
void report_format(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_report", 64, 0,
                                             SLAB_RED_ZONE | SLAB_STORE_USER, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    WRITE(p, 64, 0x12);
    kmem_cache_free(s, p);      /* the check at free reports it */
    _exit(0);
}

void leak_at_destroy(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_leak", 48, 0, SLAB_STORE_USER, NULL);
    void *left = kmem_cache_alloc(s, GFP_KERNEL);
    (void)left;
    kmem_cache_destroy(s);
    _exit(0);
}

static void other_backend(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_other", 64, 0, SLAB_RED_ZONE, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    memset(p, 1, 64);
    kmem_cache_free(s, p);
    _exit((int)kmem_cache_validate(s));
}

/* A constructed cache keeps its constructor's state while objects are free:
 * poisoning must not overwrite it (the kernel poisons only without ctor). */
static void set_tag(void *p) { memset(p, 0x3c, 72); }
static void ctor_poison(void *a)
{
    struct kmem_cache *s = kmem_cache_create("TestSlub_ctor_poison", 72, 0,
                                             SLAB_POISON | SLAB_RED_ZONE, set_tag);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    int bad = 0;
    for (int i = 0; i < 72; i++)
        bad |= p[i] != 0x3c;
    kmem_cache_free(s, p);
    uint8_t *q = kmem_cache_alloc(s, GFP_KERNEL);   /* the same object, still constructed */
    for (int i = 0; i < 72; i++)
        bad |= q[i] != 0x3c;
    _exit(bad ? 99 : (int)(kslab_debug_errors() * 10 + kmem_cache_validate(s)));
}

/* ---- re-runs with KSLAB_DEBUG ---------------------------------------------------- */

/* Clobber the byte after a 64-byte object of a cache called name, then
 * validate: 2 if the cache has a red zone, 0 if not. */
static int clobbered(const char *name)
{
    struct kmem_cache *s = kmem_cache_create(name, 64, 0, 0, NULL);
    uint8_t *p = kmem_cache_alloc(s, GFP_KERNEL);
    HIDE(p);
    uint8_t keep = p[64];
    WRITE(p, 64, keep ^ 0x40);
    long e = kmem_cache_validate(s);
    if (!e)
        WRITE(p, 64, keep);           /* no red zone: that byte was another object's */
    return (int)e;
}

static int env_case(const char *which)
{
    if (strcmp(which, "kmalloc_rz") == 0)
        return kmalloc_redzone_access();
    if (strcmp(which, "krealloc") == 0)
        return krealloc_shrink();
    if (strcmp(which, "global") == 0)       /* KSLAB_DEBUG=FZPU */
        return clobbered("any_cache") * 10 + clobbered("other_cache");
    if (strcmp(which, "glob") == 0)         /* KSLAB_DEBUG=Z,foo*,bar */
        return clobbered("foo1") * 100 + clobbered("bar") * 10 + clobbered("baz");
    if (strcmp(which, "blocks") == 0)       /* KSLAB_DEBUG=Z,red;P,pois;-,red */
        return clobbered("red") * 10 + write_after_free("pois", 0, 0, 0x78);
    if (strcmp(which, "off") == 0)          /* KSLAB_DEBUG=Z;-,quiet */
        return clobbered("loud") * 10 + clobbered("quiet");
    if (strcmp(which, "nomerge") == 0) {    /* KSLAB_DEBUG=Z,dbg_cache: never merged */
        struct kmem_cache *a = kmem_cache_create("plain_cache", 64, 0, 0, NULL);
        struct kmem_cache *b = kmem_cache_create("dbg_cache", 64, 0, 0, NULL);
        return a == b ? 99 : clobbered("dbg_cache");
    }
    if (strcmp(which, "panic") == 0) {      /* KSLAB_DEBUG=Z KSLAB_DEBUG_PANIC=1 */
        clobbered("panic_cache");
        return 0;                           /* not reached */
    }
    return 98;
}

/* This program again, as run_child's child, with KSLAB_DEBUG (and
 * KSLAB_DEBUG_PANIC) set before kslab starts: argv[1] names the case. */
struct rerun_args { const char *which, *debug, *panic; };
static void exec_self(void *arg)
{
    const struct rerun_args *r = arg;
    setenv("KSLAB_DEBUG", r->debug, 1);
    if (r->panic)
        setenv("KSLAB_DEBUG_PANIC", r->panic, 1);
    execl("/proc/self/exe", "test_debug", r->which, (char *)NULL);
    _exit(97);
}
static int rerun(const char *which, const char *debug, const char *panic, char *buf, size_t n,
                 int *sig)
{
    struct rerun_args r = { which, debug, panic };
    return run_child(exec_self, &r, buf, n, sig);
}

#define CASE(fn, want)                                                              \
    do {                                                                            \
        char _b[16384];                                                             \
        int _sig, _st = run_child(fn, NULL, _b, sizeof _b, &_sig);                  \
        if (_st != (want))                                                          \
            fprintf(stderr, "%s: status %d (signal %d), want %d; stderr:\n%s\n", #fn,  \
                    _st, _sig, (want), _b);                                         \
        CHECK_EQ(_st, (want));                                                      \
    } while (0)
#define ENV_CASE(which, debug, want)                                                \
    do {                                                                            \
        char _b[16384];                                                             \
        int _sig, _st = rerun(which, debug, NULL, _b, sizeof _b, &_sig);            \
        if (_st != (want))                                                          \
            fprintf(stderr, "%s (KSLAB_DEBUG=%s): status %d (signal %d), want %d; "  \
                    "stderr:\n%s\n", which, debug, _st, _sig, (want), _b);          \
        CHECK_EQ(_st, (want));                                                      \
    } while (0)

int main(int argc, char **argv)
{
    if (argc > 1)
        return env_case(argv[1]);
    if (!supported()) {
        /* no debugging here: said once, the cache still works, nothing to validate */
        char b[4096];
        int sig, st = run_child(other_backend, NULL, b, sizeof b, &sig);
        CHECK_EQ(st, 0);
        CHECK(strstr(b, "needs the slub, slab or slob-seg back-end") != NULL);
        return check_done();
    }
    CASE(clobber_zone, 2);
    if (is_backend("slab"))
        CASE(slab_index, 20);
    else
        CASE(next_pointer, 3 * 25 + 2 * 5 + 0);
    CASE(first_word, 2);
    CASE(clobber_50th_byte, 2);
    CASE(clobber_redzone_free, 2);
    ENV_CASE("kmalloc_rz", "ZU,kmalloc-32", 2);
    ENV_CASE("krealloc", "Z,kmalloc-32", 20);
    CASE(use_after_free, 1);
    CASE(double_free, 1);
    CASE(ctor_poison, 0);

    /* the report's shape */
    char b[16384];
    int sig;
    CHECK_EQ(run_child(report_format, NULL, b, sizeof b, &sig), 0);
    const char *lines[] = {
        "=============================================================================\n"
        "BUG TestSlub_report (kslab): Right Redzone overwritten\n"
        "-----------------------------------------------------------------------------\n",
        "INFO: 0x", "@offset=", "First byte 0x12 instead of 0xcc",
        "Slab 0x", "Object 0x", "Allocated in report_format+0x", "Freed: none",
        "Redzone  0x", "Object   0x", "FIX TestSlub_report: Restoring Right Redzone 0x",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        if (!strstr(b, lines[i])) {
            fprintf(stderr, "report lacks \"%s\":\n%s\n", lines[i], b);
            CHECK(0);
        }
    CHECK_EQ(run_child(leak_at_destroy, NULL, b, sizeof b, &sig), 0);
    CHECK(strstr(b, "Slab cache still has objects (1)") && strstr(b, "remains at destroy") &&
          strstr(b, "Allocated in leak_at_destroy+0x"));

    /* KSLAB_DEBUG's forms */
    ENV_CASE("global", "FZPU", 22);
    ENV_CASE("glob", "Z,foo*,bar", 220);
    ENV_CASE("blocks", "Z,red;P,pois;-,red", 2);
    ENV_CASE("off", "Z;-,quiet", 20);
    ENV_CASE("nomerge", "Z,dbg_cache", 2);
    int st = rerun("panic", "Z", "1", b, sizeof b, &sig);
    CHECK(st == -1 && sig == SIGABRT && strstr(b, "KSLAB_DEBUG_PANIC"));
    return check_done();
}
