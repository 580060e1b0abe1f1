/*
 * slub_debug.c - SLUB's debugging, as the kernel's slub_debug: red zones,
 * poisoning, the allocation and free tracks, consistency checks, on-demand
 * validation, and reports in the kernel's shape.
 *
 * Which caches: the creation flags (SLAB_CONSISTENCY_CHECKS, SLAB_RED_ZONE,
 * SLAB_POISON, SLAB_STORE_USER, SLAB_TRACE), or KSLAB_DEBUG with the
 * kernel's slub_debug= syntax: "FZPU" for every cache, "FZ,kmalloc-*" for
 * the caches a glob list names, blocks separated by ';', '-' for off.  A
 * debugged cache is never merged.
 *
 * Object layout (offsets from the object pointer x; the slot starts at
 * x - red_left_pad, and the left pads are the slab's "colour", so every
 * object-start test in kslab already knows them):
 *
 *   [left red zone] x: [object | right red zone to inuse] [free pointer]
 *   [alloc track | free track] [orig_size] [padding 0x5a to the slot's end]
 *
 * Red zones hold 0xbb while the object is free and 0xcc while it is
 * allocated; a kmalloc object's bytes from its requested size (orig_size)
 * to the class size are red zone too.  A poisoned free object holds 0x6b
 * with 0xa5 as its last byte.  With poisoning (or a constructor, or RCU)
 * the free pointer lives outside the object, after the right red zone.
 *
 * Where the checks run: a debugged cache has no per-CPU or per-thread
 * sheaves and no cpu slab, so every allocation and free of it comes here,
 * under the cache's list_lock (the kernel's debug caches also give up the
 * lockless paths).  Full slabs are kept on a full list, so validation walks
 * every slab under the same lock.  An error is reported, counted, and by
 * default repaired ("FIX ...: Restoring ..."), and the program goes on;
 * KSLAB_DEBUG_PANIC=1 aborts after the report.
 */
#define _GNU_SOURCE
#include "slub.h"
#include "slub_debug.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/auxv.h>
#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define HAVE_ASAN 1
#else
#define HAVE_ASAN 0
#endif
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define HAVE_VALGRIND 1
#else
#define HAVE_VALGRIND 0
#endif

enum {
    RED_INACTIVE = 0xbb, RED_ACTIVE = 0xcc,
    POISON_FREE = 0x6b, POISON_END = 0xa5, POISON_INUSE = 0x5a,
};

#define TRACK_DEPTH 16          /* the kernel's TRACK_ADDRS_COUNT: deep enough for an unoptimised build's frames */
struct track {
    void *stack[TRACK_DEPTH];   /* return addresses, innermost first; [0] NULL: never set */
    uint64_t when_ns;           /* CLOCK_MONOTONIC */
    int32_t tid, cpu;
};
enum track_item { TRACK_ALLOC, TRACK_FREE };

/* ---- KSLAB_DEBUG ---------------------------------------------------------------- */

#define MAX_BLOCKS 8
static struct {
    slab_flags_t flags;         /* 0 with off: '-' */
    bool off;
    char list[160];             /* cache names and globs, ',' separated */
} blocks[MAX_BLOCKS] KSLAB_BIG_BSS;
static unsigned nblocks;
static slab_flags_t global_flags;  /* a block without a list: every other cache */
static bool debug_panic;
static _Atomic long debug_errors;

static slab_flags_t parse_letters(const char *p, size_t n, bool *off)
{
    slab_flags_t f = 0;
    *off = false;
    if (n == 0)
        return SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER;
    for (size_t i = 0; i < n; i++) {
        switch (p[i] | 0x20) {          /* either case, as the kernel */
        case 'f': f |= SLAB_CONSISTENCY_CHECKS; break;
        case 'z': f |= SLAB_RED_ZONE; break;
        case 'p': f |= SLAB_POISON; break;
        case 'u': f |= SLAB_STORE_USER; break;
        case 't': f |= SLAB_TRACE; break;
        case '-' | 0x20: *off = true; break;
        default:
            kslab_warn("KSLAB_DEBUG: unknown flag '%c' ignored (valid: F Z P U T -)", p[i]);
        }
    }
    return *off ? 0 : f;
}

/* An address in the main program: its entry point (the aux vector's, so
 * that it works from a preloaded library too, where the linker's
 * __executable_start of the program is not visible). */
#define main_marker ((void *)getauxval(AT_ENTRY))

/* kslab's own object when it is a shared library (not the program): set
 * once by kslab_debug_init, read by the reports. */
static void *shared_base;

/* ---- sanitizers and valgrind ------------------------------------------------------
 *
 * Under ASan (a build with -fsanitize=address) or valgrind's memcheck
 * (detected at start-up; not its profilers), every cache gets SLAB_KSLAB_ANNOTATE and so takes
 * the debug paths below, whatever its other flags: no sheaves, no cpu
 * slab, so no fast path ever touches an object the tool thinks is off
 * limits.  There each object's slot is, for the tool:
 *   free       all of it off limits (ASan: poisoned; valgrind: freed with
 *              VALGRIND_FREELIKE_BLOCK, then no access);
 *   allocated  only [x, x + request) usable (ASan: the rest poisoned, so
 *              kmalloc(18) writing byte 18 is caught as ASan catches it on
 *              malloc; valgrind: a VALGRIND_MALLOCLIKE_BLOCK of that size).
 * kslab's own reads and writes (checks, poison, tracks, free pointers) open
 * the slot first and close it again in its state.  A normal build pays
 * nothing: the annotations live on the debug paths only, behind `tool`.
 * KSLAB_ASAN=0 / KSLAB_VALGRIND=0 turn them off.
 */
enum { TOOL_NONE, TOOL_ASAN, TOOL_VALGRIND };
static int tool;                /* set once by kslab_debug_init */

static void tool_init(void)
{
#if HAVE_ASAN
    if (kslab_env_bool("KSLAB_ASAN", 1))
        tool = TOOL_ASAN;
#endif
#if HAVE_VALGRIND
    /* memcheck only: GET_VBITS of a defined byte answers 1 there, and the
     * other tools (callgrind, cachegrind: profiling the fast paths) leave
     * the request unanswered (0) */
    uint8_t probe = 0, vbits;
    if (tool == TOOL_NONE && RUNNING_ON_VALGRIND && VALGRIND_GET_VBITS(&probe, &vbits, 1) == 1 &&
        kslab_env_bool("KSLAB_VALGRIND", 1))
        tool = TOOL_VALGRIND;
#endif
}

/* [p, p + n): kslab is about to read or write it */
static void tool_open(const void *p, size_t n)
{
#if HAVE_ASAN
    if (tool == TOOL_ASAN)
        __asan_unpoison_memory_region(p, n);
#endif
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND)
        VALGRIND_MAKE_MEM_DEFINED(p, n);
#endif
    (void)p, (void)n;
}

/* [p, p + n): off limits to the program */
static void tool_close(const void *p, size_t n)
{
#if HAVE_ASAN
    if (tool == TOOL_ASAN)
        __asan_poison_memory_region(p, n);
#endif
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS(p, n);
#endif
    (void)p, (void)n;
}

void kslab_debug_init(void)
{
    tool_init();
    Dl_info self, exe;
    if (dladdr((void *)kslab_debug_init, &self) && dladdr(main_marker, &exe) &&
        self.dli_fbase != exe.dli_fbase)
        shared_base = self.dli_fbase;
    debug_panic = kslab_env_bool("KSLAB_DEBUG_PANIC", 0);
    const char *v = prim_getenv("KSLAB_DEBUG");
    if (!v)
        return;
    while (*v) {
        const char *end = strchr(v, ';');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        const char *comma = memchr(v, ',', len);
        size_t nflags = comma ? (size_t)(comma - v) : len;
        bool off;
        slab_flags_t f = parse_letters(v, nflags, &off);
        if (!comma) {
            global_flags = f;
        } else if (nblocks < MAX_BLOCKS) {
            size_t n = len - nflags - 1;
            if (n >= sizeof blocks[0].list)
                kslab_warn("KSLAB_DEBUG: cache list too long, cut at %zu bytes",
                           sizeof blocks[0].list - 1);
            n = n < sizeof blocks[0].list - 1 ? n : sizeof blocks[0].list - 1;
            memcpy(blocks[nblocks].list, comma + 1, n);
            blocks[nblocks].list[n] = 0;
            blocks[nblocks].flags = f;
            blocks[nblocks].off = off;
            nblocks++;
        } else {
            kslab_warn("KSLAB_DEBUG: more than %d blocks; the rest ignored", MAX_BLOCKS);
        }
        if (!end)
            break;
        v = end + 1;
    }
}

/* '*' matches any run of characters; everything else itself. */
static bool glob_match(const char *pat, size_t plen, const char *name)
{
    if (plen == 0)
        return *name == 0;
    if (*pat == '*') {
        for (;; name++) {
            if (glob_match(pat + 1, plen - 1, name))
                return true;
            if (!*name)
                return false;
        }
    }
    return *name == *pat && glob_match(pat + 1, plen - 1, name + 1);
}

static bool list_match(const char *list, const char *name)
{
    while (*list) {
        const char *end = strchr(list, ',');
        size_t n = end ? (size_t)(end - list) : strlen(list);
        if (n && glob_match(list, n, name))
            return true;
        if (!end)
            break;
        list = end + 1;
    }
    return false;
}

slab_flags_t kslab_debug_flags(const char *name, slab_flags_t flags)
{
    bool named = false;
    for (unsigned i = 0; i < nblocks; i++) {
        if (!list_match(blocks[i].list, name))
            continue;
        named = true;
        flags = blocks[i].off ? flags & ~SLAB_USER_DEBUG_FLAGS : flags | blocks[i].flags;
    }
    /* (a SLAB_TYPESAFE_BY_RCU object may be read after its free, as the
     * kernel's KASAN leaves such objects unpoisoned: not annotated) */
    if (tool != TOOL_NONE && !(flags & SLAB_TYPESAFE_BY_RCU))
        flags |= SLAB_KSLAB_ANNOTATE;
    return named ? flags : flags | global_flags;
}

long kslab_debug_errors(void)
{
    return atomic_load_explicit(&debug_errors, memory_order_relaxed);
}

/* ---- layout -------------------------------------------------------------------- */

size_t slub_debug_layout(struct kmem_cache *s)
{
    slab_flags_t f = s->flags;
    size_t size = ALIGN_UP(s->object_size, sizeof(void *));
    if ((f & SLAB_RED_ZONE) && size == s->object_size)
        size += sizeof(void *);         /* a right red zone of at least a word */
    s->inuse = (uint32_t)size;
    if (kslab_be->debug->freeptr && (s->ctor || (f & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON)))) {
        s->offset = (uint32_t)size;     /* outside what poison or the user keeps */
        size += sizeof(void *);
    } else {
        s->offset = 0;
    }
    s->track_off = 0;
    if (f & SLAB_STORE_USER) {
        s->track_off = (uint32_t)size;
        size += 2 * sizeof(struct track);
    }
    s->orig_off = 0;
    if (s->is_kmalloc && (f & (SLAB_STORE_USER | SLAB_RED_ZONE | SLAB_KSLAB_ANNOTATE))) {
        s->orig_off = (uint32_t)size;
        size += sizeof(uint32_t);
    }
    s->meta_end = (uint32_t)size;
    s->red_left_pad = (f & SLAB_RED_ZONE) ? (uint32_t)ALIGN_UP(sizeof(void *), s->align) : 0;
    return ALIGN_UP(size + s->red_left_pad, s->align);
}

static inline uint8_t *obj_bytes(const void *x) { return (uint8_t *)(uintptr_t)x; }

static uint8_t *slab_first(struct kmem_cache *s, struct slab *slab)
{
    return (uint8_t *)slab_address(slab) + s->red_left_pad;
}
/* Every object x of a slab of s; every slab on the lists the debug paths
 * keep (list_lock held). */
#define for_each_object(s, slab, x)                                             \
    for (uint8_t *x = slab_first(s, slab), *x##_end = x + (size_t)(s)->objects * (s)->size; \
         x < x##_end; x += (s)->size)
#define for_each_listed_slab(ops, s, slab)                                      \
    for (unsigned l_ = 0; l_ < (ops)->nlists; l_++)                             \
        for (struct slab *slab = *(ops)->list(s, l_); slab; slab = slab->next)

static uint32_t get_orig_size(struct kmem_cache *s, void *x)
{
    if (!s->orig_off)
        return s->object_size;
    uint32_t v;
    memcpy(&v, obj_bytes(x) + s->orig_off, sizeof v);
    return v <= s->object_size ? v : s->object_size;
}

static void set_orig_size(struct kmem_cache *s, void *x, uint32_t n)
{
    if (s->orig_off)
        memcpy(obj_bytes(x) + s->orig_off, &n, sizeof n);
}

static struct track *get_track(struct kmem_cache *s, void *x, enum track_item t)
{
    return (struct track *)(void *)(obj_bytes(x) + s->track_off) + t;
}

/* A slot for the tool (see "sanitizers and valgrind"): open for kslab (all
 * of it: free, or about to be freed), closed as free, closed as allocated
 * (usable up to its request size). */
static uint8_t *slot_of(struct kmem_cache *s, void *x)
{
    return obj_bytes(x) - s->red_left_pad;
}
static void open_slot(struct kmem_cache *s, void *x)
{
    if (tool != TOOL_NONE)
        tool_open(slot_of(s, x), s->size);
}
static void close_free(struct kmem_cache *s, void *x)
{
    if (tool != TOOL_NONE)
        tool_close(slot_of(s, x), s->size);
}
/* An allocated object's slot but its usable bytes (whose contents and
 * definedness are the program's). */
static void open_allocated(struct kmem_cache *s, void *x)
{
    if (tool == TOOL_ASAN) {
        open_slot(s, x);
    } else if (tool == TOOL_VALGRIND) {
        tool_open(slot_of(s, x), s->red_left_pad);
        tool_open(obj_bytes(x) + s->object_size, s->size - s->red_left_pad - s->object_size);
        tool_open(obj_bytes(x) + get_orig_size(s, x), s->object_size - get_orig_size(s, x));
    }
}
static void close_allocated(struct kmem_cache *s, void *x)
{
    if (tool == TOOL_NONE)
        return;
    uint32_t orig = get_orig_size(s, x);
    if (tool == TOOL_ASAN) {
        tool_close(slot_of(s, x), s->size);
#if HAVE_ASAN
        __asan_unpoison_memory_region(x, orig);
#endif
    } else {
        tool_close(slot_of(s, x), s->red_left_pad);
        tool_close(obj_bytes(x) + orig, s->size - s->red_left_pad - orig);
    }
}
/* Is x free, as the tool sees it?  (A cache with no debug flag of its own
 * asks the tool instead of walking the slab's free list: O(1), where the
 * walk costs each free O(objects in the slab).) */
static bool tool_says_free(void *x)
{
#if HAVE_ASAN
    if (tool == TOOL_ASAN)
        return __asan_address_is_poisoned(x);
#endif
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND) {
        uint8_t vbits;
        return VALGRIND_GET_VBITS(x, &vbits, 1) == 3;   /* 3: not addressable */
    }
#endif
    (void)x;
    return false;
}

/* A free object's free pointer, read by a freelist walk */
static void *peek_freepointer(struct kmem_cache *s, void *x)
{
    if (tool == TOOL_NONE)
        return get_freepointer_raw(s, x);
    tool_open(obj_bytes(x) + s->offset, sizeof(void *));
    void *fp = get_freepointer_raw(s, x);
    tool_close(obj_bytes(x) + s->offset, sizeof(void *));
    return fp;
}

void slub_debug_slab_ready(struct kmem_cache *s, struct slab *slab)
{
    if (tool == TOOL_NONE)
        return;
    for_each_object(s, slab, x)
        close_free(s, x);
}

void slub_debug_slab_release(struct kmem_cache *s, struct slab *slab)
{
    if (tool != TOOL_NONE)
        tool_open(slab_address(slab), PAGE_SIZE << s->order);
}

/* ---- tracks ---------------------------------------------------------------------- */

static _Thread_local bool in_backtrace;   /* backtrace() may allocate the first time */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's track, taken before any lock (backtrace() may
 * allocate on its first call). */
static noinline void capture_track(struct kmem_cache *s, struct track *t)
{
    memset(t, 0, sizeof *t);
    if (!s->track_off)
        return;
    t->when_ns = now_ns();
    t->tid = (int32_t)syscall(SYS_gettid);
    t->cpu = sched_getcpu();
    if (!in_backtrace) {
        void *buf[TRACK_DEPTH + 4];
        in_backtrace = true;
        int n = backtrace(buf, TRACK_DEPTH + 4);
        in_backtrace = false;
        /* frame 0 is capture_track itself, 1 the debug alloc or free */
        for (int i = 2; i < n && i - 2 < TRACK_DEPTH; i++)
            t->stack[i - 2] = buf[i];
    }
}

static void set_track(struct kmem_cache *s, void *x, enum track_item item, const struct track *t)
{
    if (s->track_off)
        memcpy(get_track(s, x, item), t, sizeof *t);
}

/* kslab_init, once: with KSLAB_DEBUG, glibc's backtrace() loads its unwinder
 * now rather than inside the first allocation.  A cache that asks for U
 * itself takes that first call in capture_track, outside every kslab lock
 * (in_backtrace stops the allocation it makes from recursing). */
void kslab_debug_warm(void)
{
    if (!global_flags && !nblocks)
        return;
    void *buf[2];
    in_backtrace = true;
    backtrace(buf, 2);
    in_backtrace = false;
}

/* ---- reports (never allocate: fixed buffers, one write per line) ------------------- */

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    prim_write_stderr(buf, (size_t)n);
}

/* Is this frame one of kslab's own (the allocator's entry points and
 * internals), to be skipped when naming the caller? */
static bool own_frame(void *pc, const char **name, uintptr_t *off)
{
    Dl_info di;
    *name = NULL;
    *off = 0;
    if (!dladdr(pc, &di))
        return false;
    /* libkslab.so: every address in it, named or not (hidden functions have
     * no dynamic symbol); statically linked, the names of its global
     * functions (a static function resolves to the global one before it,
     * which is kslab's too) */
    if (shared_base && di.dli_fbase == shared_base)
        return true;
    if (!di.dli_sname)
        return false;
    *name = di.dli_sname;
    *off = (uintptr_t)pc - (uintptr_t)di.dli_saddr;
    static const char *const own[] = {        /* prefixes */
        "kslab_", "kmem_cache_", "kmalloc", "kzalloc", "kcalloc", "krealloc", "kfree", "ksize",
        "kmemdup", "kstrdup", "kvmalloc", "kvfree", "slub_", "pages_", "prim_", "pcpu_",
        "huge_", "add_partial", "remove_partial", "_Znw", "_Zdl", "_Zna", "_Zda",
    };
    static const char *const libc[] = {       /* whole names: the malloc drop-in's */
        "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
        "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
    };
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strncmp(di.dli_sname, own[i], strlen(own[i])) == 0)
            return true;
    for (size_t i = 0; i < sizeof libc / sizeof *libc; i++)
        if (strcmp(di.dli_sname, libc[i]) == 0)
            return true;
    return false;
}

static void print_track(const char *what, const struct track *t)
{
    if (!t->stack[0]) {
        out("%s: none", what);
        return;
    }
    /* The caller: the frame after kslab's innermost run of frames, which
     * ends at its last named frame (an entry point) before the first named
     * frame that is not kslab's; frames without a name (static functions,
     * of kslab or not) decide nothing. */
    int first = 0;
    const char *name;
    uintptr_t off;
    for (int i = 0; i < TRACK_DEPTH && t->stack[i]; i++) {
        bool own = own_frame(t->stack[i], &name, &off);
        if (own)
            first = i + 1;
        else if (name)
            break;
    }
    if (first >= TRACK_DEPTH || !t->stack[first])
        first = 0;
    own_frame(t->stack[first], &name, &off);
    uint64_t age_ms = (now_ns() - t->when_ns) / 1000000u;
    if (name)
        out("%s in %s+0x%lx age=%llu ms cpu=%d pid=%d", what, name, (unsigned long)off,
            (unsigned long long)age_ms, t->cpu, t->tid);
    else
        out("%s in %p age=%llu ms cpu=%d pid=%d", what, t->stack[first],
            (unsigned long long)age_ms, t->cpu, t->tid);
    for (int i = first; i < TRACK_DEPTH && t->stack[i]; i++) {
        Dl_info di;
        if (dladdr(t->stack[i], &di) && di.dli_sname)
            out(" %s+0x%lx (%s)", di.dli_sname,
                (unsigned long)((uintptr_t)t->stack[i] - (uintptr_t)di.dli_saddr),
                di.dli_fname ? di.dli_fname : "?");
        else
            out(" %p (%s)", t->stack[i], di.dli_fname ? di.dli_fname : "?");
    }
}

static void hex_dump(const char *label, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        char hex[16 * 3 + 1], asc[17];
        size_t k = n - i < 16 ? n - i : 16;
        uint8_t b[16];
        memcpy(b, p + i, k);
#if HAVE_VALGRIND
        VALGRIND_MAKE_MEM_DEFINED(b, k);   /* printing the program's undefined bytes is fine */
#endif
        for (size_t j = 0; j < 16; j++) {
            if (j < k) {
                snprintf(hex + 3 * j, 4, "%02x ", b[j]);
                asc[j] = b[j] >= 0x20 && b[j] < 0x7f ? (char)b[j] : '.';
            } else {
                memcpy(hex + 3 * j, "   ", 4);
                asc[j] = ' ';
            }
        }
        asc[16] = 0;
        out("%-8s %p: %s %s", label, (const void *)(p + i), hex, asc);
    }
}

static void slab_err_banner(struct kmem_cache *s, const char *what)
{
    out("=============================================================================");
    out("BUG %s (kslab): %s", s->name, what);
    out("-----------------------------------------------------------------------------");
    out("%s", "");
}

static void print_object(struct kmem_cache *s, struct slab *slab, void *x)
{
    uint8_t *p = obj_bytes(x);
    uint8_t *base = (uint8_t *)slab_address(slab);
    out("Slab %p objects=%u used=%u fp=%p", (void *)base, (unsigned)s->objects,
        (unsigned)slab->counters.inuse, slab_freelist(slab));
    if (kslab_be->debug->freeptr)
        out("Object %p @offset=%lu fp=%p", x, (unsigned long)(p - base), get_freepointer_raw(s, x));
    else
        out("Object %p @offset=%lu", x, (unsigned long)(p - base));
    out("%s", "");
    if (s->track_off) {
        print_track("Allocated", get_track(s, x, TRACK_ALLOC));
        print_track("Freed", get_track(s, x, TRACK_FREE));
        out("%s", "");
    }
    if (s->red_left_pad)
        hex_dump("Redzone", p - s->red_left_pad, s->red_left_pad);
    hex_dump("Object", p, s->object_size < 256 ? s->object_size : 256);
    if (s->flags & SLAB_RED_ZONE)
        hex_dump("Redzone", p + s->object_size, s->inuse - s->object_size);
    size_t pad = s->size - s->red_left_pad - s->meta_end;
    if (pad)
        hex_dump("Padding", p + s->meta_end, pad);
}

static void error_done(void)
{
    atomic_fetch_add_explicit(&debug_errors, 1, memory_order_relaxed);
    if (debug_panic)
        kslab_report("KSLAB_DEBUG_PANIC: stopping after the report above");
}

/* Bytes [start, start + n) should all be `value`: 0 if so; otherwise the
 * report (what, the range, the first wrong byte, the object), the repair,
 * and 1. */
/* The first byte of [p, p + n) that is not value, or n (the kernel's
 * memchr_inv: eight bytes at a time, which makes poison checks of big
 * objects affordable). */
static size_t first_not(const uint8_t *p, uint8_t value, size_t n)
{
    uint64_t pat = 0x0101010101010101ull * value;
    size_t i = 0;
    while (i < n && ((uintptr_t)(p + i) & 7))
        if (p[i] != value)
            return i;
        else
            i++;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != pat)
            break;
    }
    while (i < n && p[i] == value)
        i++;
    return i;
}

static int check_bytes(struct kmem_cache *s, struct slab *slab, void *x, const char *what,
                       uint8_t *start, uint8_t value, size_t n)
{
    size_t i = first_not(start, value, n);
    if (i == n)
        return 0;
    size_t end = n;
    while (end > i && start[end - 1] == value)
        end--;
    char banner[96];
    snprintf(banner, sizeof banner, "%s overwritten", what);
    slab_err_banner(s, banner);
    out("INFO: %p-%p @offset=%lu. First byte 0x%x instead of 0x%x", (void *)(start + i),
        (void *)(start + end - 1), (unsigned long)(start + i - (uint8_t *)slab_address(slab)),
        start[i], value);
    if (x)
        print_object(s, slab, x);
    out("FIX %s: Restoring %s %p-%p=0x%x", s->name, what, (void *)(start + i),
        (void *)(start + end - 1), value);
    out("%s", "");
    memset(start + i, value, end - i);
    error_done();
    return 1;
}

static void object_err(struct kmem_cache *s, struct slab *slab, void *x, const char *what)
{
    slab_err_banner(s, what);
    if (x)
        print_object(s, slab, x);
    out("%s", "");
    error_done();
}

/* ---- object states ------------------------------------------------------------- */

/* Free objects hold poison, unless what they hold must survive while free
 * (a constructor's state, or RCU readers'): the kernel's __OBJECT_POISON. */
static bool object_poisoned(const struct kmem_cache *s)
{
    return (s->flags & SLAB_POISON) && !s->ctor && !(s->flags & SLAB_TYPESAFE_BY_RCU);
}

static void init_object(struct kmem_cache *s, void *x, uint8_t val)
{
    uint8_t *p = obj_bytes(x);
    if (s->flags & SLAB_RED_ZONE) {
        memset(p - s->red_left_pad, val, s->red_left_pad);
        uint32_t from = val == RED_ACTIVE ? get_orig_size(s, x) : s->object_size;
        memset(p + from, val, s->inuse - from);
    }
    if (object_poisoned(s) && val == RED_INACTIVE) {
        memset(p, POISON_FREE, s->object_size - 1);
        p[s->object_size - 1] = POISON_END;
    }
}

/* An object's checks in state val (RED_ACTIVE: allocated); errors found. */
static int check_object(struct kmem_cache *s, struct slab *slab, void *x, uint8_t val)
{
    uint8_t *p = obj_bytes(x);
    int err = 0;
    if (s->flags & SLAB_RED_ZONE) {
        err += check_bytes(s, slab, x, "Left Redzone", p - s->red_left_pad, val,
                           s->red_left_pad);
        uint32_t from = val == RED_ACTIVE ? get_orig_size(s, x) : s->object_size;
        err += check_bytes(s, slab, x, val == RED_ACTIVE && from < s->object_size ?
                                           "kmalloc Redzone" : "Right Redzone",
                           p + from, val, s->inuse - from);
    }
    if (object_poisoned(s) && val == RED_INACTIVE) {
        err += check_bytes(s, slab, x, "Poison", p, POISON_FREE, s->object_size - 1);
        err += check_bytes(s, slab, x, "End Poison", p + s->object_size - 1, POISON_END, 1);
    }
    size_t pad = s->size - s->red_left_pad - s->meta_end;
    if (pad)
        err += check_bytes(s, slab, x, "Object padding", p + s->meta_end, POISON_INUSE, pad);
    return err;
}

static bool valid_pointer(struct kmem_cache *s, struct slab *slab, void *x)
{
    return x && object_start(s, (uintptr_t)slab_first(s, slab), x);
}

/* The bytes after the last slot of the slab, up to the metadata a back-end
 * keeps at its end (SLAB's on-slab index array). */
static int check_slab_tail(struct kmem_cache *s, struct slab *slab)
{
    uint8_t *base = (uint8_t *)slab_address(slab);
    size_t used = (size_t)s->objects * s->size;
    size_t end = (PAGE_SIZE << s->order) - kslab_be->debug->meta_tail(s);
    return used < end ? check_bytes(s, slab, NULL, "Slab padding", base + used, POISON_INUSE,
                                    end - used) : 0;
}

void slub_debug_list_err(struct kmem_cache *s, struct slab *slab, const char *what,
                         const char *info, const char *fix)
{
    slab_err_banner(s, what);
    out("INFO: Slab %p objects=%u used=%u: %s", slab_address(slab), (unsigned)s->objects,
        (unsigned)slab->counters.inuse, info);
    out("FIX %s: %s", s->name, fix);
    out("%s", "");
    error_done();
}

/* ---- SLUB's slabs: a free pointer in each free object ------------------------------ */

/* Walk the slab's freelist: is x on it (search, or NULL), and is it sane?
 * A corrupt free pointer cuts the list there (the objects after it stay
 * allocated for ever, as in the kernel) and fixes inuse.  list_lock held. */
static bool on_freelist(struct kmem_cache *s, struct slab *slab, void *search, int *errors)
{
    unsigned nr = 0;
    void *prev = NULL, *fp = slab_freelist(slab);
    while (fp && nr <= s->objects) {
        if (fp == search)
            return true;
        if (!valid_pointer(s, slab, fp)) {
            if (prev) {
                open_slot(s, prev);
                object_err(s, slab, prev, "Freechain corrupt");
                set_freepointer(s, prev, NULL);
                close_free(s, prev);
            } else {
                object_err(s, slab, NULL, "Freepointer corrupt");
                slab_set_freelist(slab, NULL);
            }
            out("FIX %s: Freelist cut at %p", s->name, prev);
            if (errors)
                ++*errors;
            break;
        }
        prev = fp;
        fp = peek_freepointer(s, fp);
        nr++;
    }
    if (nr > s->objects) {
        object_err(s, slab, NULL, "Freelist cycle");
        open_slot(s, prev);
        set_freepointer(s, prev, NULL);
        close_free(s, prev);
        if (errors)
            ++*errors;
        nr = s->objects;
    }
    if (!search && slab->counters.inuse != s->objects - nr) {
        char info[80];
        snprintf(info, sizeof info, "the freelist has %u free", nr);
        slub_debug_list_err(s, slab, "Wrong object count", info, "Object count adjusted");
        slab->counters.inuse = s->objects - nr;
        if (errors)
            ++*errors;
    }
    return false;
}

static bool slub_is_free(struct kmem_cache *s, struct slab *slab, void *x)
{
    return on_freelist(s, slab, x, NULL);
}

static int slub_check_free(struct kmem_cache *s, struct slab *slab)
{
    int errors = 0;
    on_freelist(s, slab, NULL, &errors);
    return errors;
}

/* A debugged cache keeps its full slabs on a list of their own, so that
 * validation finds them. */
static void add_full(struct kmem_cache *s, struct slab *slab)
{
    struct slub_cache *sc = slub_c(s);
    slab->prev = NULL;
    slab->next = sc->full;
    if (slab->next)
        slab->next->prev = slab;
    sc->full = slab;
}

static void remove_full(struct kmem_cache *s, struct slab *slab)
{
    if (slab->prev)
        slab->prev->next = slab->next;
    else
        slub_c(s)->full = slab->next;
    if (slab->next)
        slab->next->prev = slab->prev;
    slab->next = slab->prev = NULL;
}

static struct slab **slub_list(struct kmem_cache *s, unsigned i)
{
    return i ? &slub_c(s)->full : &s->partial;
}

static void *slub_take(struct kmem_cache *s, struct slab *slab)
{
    void *x = slab_freelist(slab);
    if (!valid_pointer(s, slab, x)) {
        /* the head itself is corrupt: report, cut, count the slab full */
        on_freelist(s, slab, NULL, NULL);
        if (!slab_freelist(slab)) {
            remove_partial(s, slab);
            add_full(s, slab);
        }
        return NULL;
    }
    open_slot(s, x);            /* for its free pointer (and the checks after) */
    void *next = get_freepointer_raw(s, x);
    if (next && !valid_pointer(s, slab, next)) {
        object_err(s, slab, x, "Freepointer corrupt");
        out("FIX %s: Freelist cut at %p", s->name, x);
        next = NULL;
        slab->counters.inuse = s->objects - 1;  /* the rest is lost, as in the kernel */
    }
    slab_set_freelist(slab, next);
    slab->counters.inuse++;
    if (!next) {
        remove_partial(s, slab);
        add_full(s, slab);
    }
    return x;
}

static struct slab *slub_give(struct kmem_cache *s, struct slab *slab, void *x)
{
    bool was_full = !slab_freelist(slab);
    set_freepointer(s, x, slab_freelist(slab));
    slab_set_freelist(slab, x);
    slab->counters.inuse--;
    if (was_full) {
        remove_full(s, slab);
        add_partial(s, slab);
    }
    if (!partial_release_empty(s, slab))
        return NULL;
    slab->next = NULL;
    return slab;
}

static void slub_discard(struct kmem_cache *s, struct slab *list)
{
    if (list)
        kslab_discard_slab(s, NULL, list);
}

static size_t slub_meta_tail(struct kmem_cache *s)
{
    return 0;
}

const struct kslab_debug_ops slub_debug_ops = {
    .freeptr = true,
    .nlists = 2,
    .list = slub_list,
    .slab_for_alloc = partial_or_new,
    .take = slub_take,
    .is_free = slub_is_free,
    .check_free = slub_check_free,
    .give = slub_give,
    .discard = slub_discard,
    .meta_tail = slub_meta_tail,
};

/* Before the back-end constructs and links the objects of a new slab: the
 * left red zone as the slab's colour, every object free (red zones,
 * poison, no tracks), padding and the slab's tail 0x5a. */
void slub_debug_new_slab(struct kmem_cache *s, struct slab *slab)
{
    slab_colour_set(slab, s->order, s->red_left_pad);
    uint8_t *base = (uint8_t *)slab_address(slab);
    memset(base, POISON_INUSE, PAGE_SIZE << s->order);
    for_each_object(s, slab, x) {
        memset(x, 0, s->meta_end);
        init_object(s, x, RED_INACTIVE);
    }
}

/* ---- allocation and free ------------------------------------------------------------ */

static void trace(struct kmem_cache *s, struct slab *slab, void *x, const char *what)
{
    if (!(s->flags & SLAB_TRACE))
        return;
    if (kslab_be->debug->freeptr)
        out("TRACE %s %s %p inuse=%u fp=%p", s->name, what, x, (unsigned)slab->counters.inuse,
            get_freepointer_raw(s, x));
    else
        out("TRACE %s %s %p inuse=%u", s->name, what, x, (unsigned)slab->counters.inuse);
}

void *slub_debug_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    const struct kslab_debug_ops *ops = kslab_be->debug;
    struct slab *slab;
    void *x;
    kslab_lock(&s->list_lock);
    do {
        if (!(slab = ops->slab_for_alloc(s)))
            return NULL;
    } while (!(x = ops->take(s, slab)));
    open_slot(s, x);
    if (s->flags & (SLAB_CONSISTENCY_CHECKS | SLAB_POISON | SLAB_RED_ZONE))
        check_object(s, slab, x, RED_INACTIVE);
    kslab_unlock(&s->list_lock);
    if (gfp & __GFP_ZERO)
        memset(x, 0, s->object_size);
    set_orig_size(s, x, (uint32_t)(kmalloc_size && kmalloc_size < s->object_size ?
                                   kmalloc_size : s->object_size));
    init_object(s, x, RED_ACTIVE);
    struct track t;
    capture_track(s, &t);
    set_track(s, x, TRACK_ALLOC, &t);
    trace(s, slab, x, "alloc");
#if HAVE_VALGRIND
    uint32_t orig = get_orig_size(s, x);    /* before its metadata closes */
#endif
    close_allocated(s, x);
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND) {
        VALGRIND_MALLOCLIKE_BLOCK(x, orig, 0, (gfp & __GFP_ZERO) != 0);
        if (s->ctor)            /* constructed: its contents are defined */
            VALGRIND_MAKE_MEM_DEFINED(x, orig);
    }
#endif
    stat_add(s, NULL, ALLOC_SLOWPATH, 1);
    return x;
}

void slub_debug_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    const struct kslab_debug_ops *ops = kslab_be->debug;
    struct slab *slab = kslab_slab_of(want, s, x, fn);
    struct track t;
    capture_track(s, &t);
    kslab_lock(&s->list_lock);
    if (s->flags & SLAB_USER_DEBUG_FLAGS ? ops->is_free(s, slab, x) : tool_says_free(x)) {
        open_slot(s, x);
        object_err(s, slab, x, "Object already free");
        close_free(s, x);
        kslab_unlock(&s->list_lock);
        return;                 /* nothing freed twice */
    }
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND)
        VALGRIND_FREELIKE_BLOCK(x, 0);   /* valgrind records the free's stack */
#endif
    open_slot(s, x);
    if (s->flags & (SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE))
        check_object(s, slab, x, RED_ACTIVE);
    trace(s, slab, x, "free");
    set_track(s, x, TRACK_FREE, &t);
    init_object(s, x, RED_INACTIVE);
    struct slab *discard = ops->give(s, slab, x);
    close_free(s, x);           /* (a discarded slab is opened whole again) */
    kslab_unlock(&s->list_lock);
    stat_add(s, NULL, FREE_SLOWPATH, 1);
    ops->discard(s, discard);
}

/* An allocated object's request size becomes n (ksize, krealloc in place):
 * the kmalloc red zone follows, the tools learn the new size. */
static void set_request(struct kmem_cache *s, void *x, uint32_t n, gfp_t gfp)
{
    open_allocated(s, x);
    uint32_t orig = get_orig_size(s, x);
    if ((gfp & __GFP_ZERO) && n > orig)
        memset(obj_bytes(x) + orig, 0, n - orig);
    set_orig_size(s, x, n);
    if ((s->flags & SLAB_RED_ZONE) && s->orig_off)
        memset(obj_bytes(x) + n, RED_ACTIVE, s->object_size - n);
    close_allocated(s, x);
#if HAVE_VALGRIND
    if (tool == TOOL_VALGRIND && n != orig)
        VALGRIND_RESIZEINPLACE_BLOCK(x, orig, n, 0);
#endif
}

size_t slub_debug_ksize(struct kmem_cache *s, void *x)
{
    /* the caller may now use every byte: no kmalloc red zone any more */
    set_request(s, x, s->object_size, 0);
    return s->object_size;
}

bool slub_debug_resize(struct kmem_cache *s, void *x, size_t new_size, gfp_t gfp)
{
    if (new_size > s->object_size)
        return false;
    set_request(s, x, (uint32_t)new_size, gfp);
    return true;
}

size_t slub_debug_orig_size(struct kmem_cache *s, void *x)
{
    open_allocated(s, x);
    uint32_t orig = get_orig_size(s, x);
    close_allocated(s, x);
    return orig;
}

/* ---- validation ------------------------------------------------------------------ */

static int validate_slab(struct kmem_cache *s, struct slab *slab)
{
    const struct kslab_debug_ops *ops = kslab_be->debug;
    int errors = ops->check_free(s, slab) + check_slab_tail(s, slab);
    for_each_object(s, slab, x) {
        if (ops->is_free(s, slab, x)) {
            open_slot(s, x);
            errors += check_object(s, slab, x, RED_INACTIVE);
            close_free(s, x);
        } else {
            open_allocated(s, x);
            errors += check_object(s, slab, x, RED_ACTIVE);
            close_allocated(s, x);
        }
    }
    return errors;
}

long kmem_cache_validate(struct kmem_cache *s)
{
    if (!s)
        return -1;
    kslab_check_cache("kmem_cache_validate", s);
    if (!kslab_debugged(s) || !kslab_debug_supported())
        return 0;               /* nothing to check without the layout */
    const struct kslab_debug_ops *ops = kslab_be->debug;
    long errors = 0;
    kslab_lock(&s->list_lock);
    for_each_listed_slab(ops, s, slab)
        errors += validate_slab(s, slab);
    kslab_unlock(&s->list_lock);
    if (errors) {
        /* the cache itself is repaired too, and counted, as the kernel counts
         * it (slub_kunit: one corruption validates to 2 errors) */
        out("FIX %s: Cache repaired after %ld errors", s->name, errors);
        out("%s", "");
        error_done();
        errors++;
    }
    return errors;
}

long kslab_validate_all(void)
{
    kslab_ensure_init();
    long errors = 0;
    kslab_lock(&kslab_cache_lock);
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        errors += kmem_cache_validate(s);
    kslab_unlock(&kslab_cache_lock);
    return errors;
}

/* Destroying a cache with objects left: the kernel's "Objects remaining"
 * report, one per object, with its allocation track. */
void slub_debug_leaks(struct kmem_cache *s)
{
    const struct kslab_debug_ops *ops = kslab_be->debug;
    kslab_lock(&s->list_lock);
    for_each_listed_slab(ops, s, slab)
        for_each_object(s, slab, x) {
            if (ops->is_free(s, slab, x))
                continue;
            out("INFO: Object %p @offset=%lu of %s remains at destroy", (void *)x,
                (unsigned long)(x - (uint8_t *)slab_address(slab)), s->name);
            open_allocated(s, x);
            if (s->track_off)
                print_track("Allocated", get_track(s, x, TRACK_ALLOC));
            close_allocated(s, x);
        }
    kslab_unlock(&s->list_lock);
}
