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
#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
    RED_INACTIVE = 0xbb, RED_ACTIVE = 0xcc,
    POISON_FREE = 0x6b, POISON_END = 0xa5, POISON_INUSE = 0x5a,
};

#define TRACK_DEPTH 8
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
} blocks[MAX_BLOCKS];
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

/* An address in the main program (dladdr's object for it), weak so that
 * it is only ever compared. */
extern char __executable_start[] __attribute__((weak));
#define main_marker (__executable_start)

/* kslab's own object when it is a shared library (not the program): set
 * once by kslab_debug_init, read by the reports. */
static void *shared_base;

void kslab_debug_init(void)
{
    Dl_info self, exe;
    if (dladdr((void *)kslab_debug_init, &self) && dladdr((void *)main_marker, &exe) &&
        self.dli_fbase != exe.dli_fbase)
        shared_base = self.dli_fbase;
    const char *pv = prim_getenv("KSLAB_DEBUG_PANIC");
    debug_panic = pv && *pv && strcmp(pv, "0") != 0;
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
        flags = blocks[i].off ? flags & ~SLAB_DEBUG_FLAGS : flags | blocks[i].flags;
    }
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
    if (s->ctor || (f & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON))) {
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
    if (s->is_kmalloc && (f & (SLAB_STORE_USER | SLAB_RED_ZONE))) {
        s->orig_off = (uint32_t)size;
        size += sizeof(uint32_t);
    }
    s->meta_end = (uint32_t)size;
    s->red_left_pad = (f & SLAB_RED_ZONE) ? (uint32_t)ALIGN_UP(sizeof(void *), s->align) : 0;
    return ALIGN_UP(size + s->red_left_pad, s->align);
}

static inline uint8_t *obj_bytes(const void *x) { return (uint8_t *)(uintptr_t)x; }

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
    if (!dladdr(pc, &di) || !di.dli_sname)
        return false;
    *name = di.dli_sname;
    *off = (uintptr_t)pc - (uintptr_t)di.dli_saddr;
    /* libkslab.so: every address in it; statically linked, the names of
     * its global functions (a static function resolves to the global one
     * before it, which is kslab's too) */
    if (shared_base && di.dli_fbase == shared_base)
        return true;
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
        for (size_t j = 0; j < 16; j++) {
            if (j < k) {
                snprintf(hex + 3 * j, 4, "%02x ", p[i + j]);
                asc[j] = p[i + j] >= 0x20 && p[i + j] < 0x7f ? (char)p[i + j] : '.';
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
    out("Object %p @offset=%lu fp=%p", x, (unsigned long)(p - base), get_freepointer(s, x));
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

static void *slab_first(struct kmem_cache *s, struct slab *slab)
{
    return (uint8_t *)slab_address(slab) + s->red_left_pad;
}

static bool valid_pointer(struct kmem_cache *s, struct slab *slab, void *x)
{
    return x && object_start(s, (uintptr_t)slab_first(s, slab), x);
}

/* The bytes after the last slot of the slab. */
static int check_slab_tail(struct kmem_cache *s, struct slab *slab)
{
    uint8_t *base = (uint8_t *)slab_address(slab);
    size_t used = (size_t)s->objects * s->size, all = PAGE_SIZE << s->order;
    return used < all ? check_bytes(s, slab, NULL, "Slab padding", base + used, POISON_INUSE,
                                    all - used) : 0;
}

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
                object_err(s, slab, prev, "Freechain corrupt");
                set_freepointer(s, prev, NULL);
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
        fp = get_freepointer(s, fp);
        nr++;
    }
    if (nr > s->objects) {
        object_err(s, slab, NULL, "Freelist cycle");
        set_freepointer(s, prev, NULL);
        if (errors)
            ++*errors;
        nr = s->objects;
    }
    if (!search && slab->counters.inuse != s->objects - nr) {
        slab_err_banner(s, "Wrong object count");
        out("INFO: counter says %u in use, the freelist has %u free of %u",
            (unsigned)slab->counters.inuse, nr, (unsigned)s->objects);
        out("FIX %s: Object count adjusted", s->name);
        slab->counters.inuse = s->objects - nr;
        error_done();
        if (errors)
            ++*errors;
    }
    return false;
}

/* ---- the slab lists of a debugged cache (list_lock held) ---------------------------- */

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

/* Before slub_new_slab constructs and links the objects: the left red
 * zone as the slab's colour, every object free (red zones, poison, no
 * tracks), padding and the slab's tail 0x5a. */
void slub_debug_new_slab(struct kmem_cache *s, struct slab *slab)
{
    if (s->red_left_pad)
        slab_colour_set(slab, s->order, s->red_left_pad);
    uint8_t *base = (uint8_t *)slab_address(slab);
    memset(base, POISON_INUSE, PAGE_SIZE << s->order);
    for (unsigned i = 0; i < s->objects; i++) {
        void *x = base + (size_t)i * s->size + s->red_left_pad;
        memset(x, 0, s->meta_end);
        init_object(s, x, RED_INACTIVE);
    }
}

/* ---- allocation and free ------------------------------------------------------------ */

static void trace(struct kmem_cache *s, struct slab *slab, void *x, const char *what)
{
    if (s->flags & SLAB_TRACE)
        out("TRACE %s %s %p inuse=%u fp=%p", s->name, what, x, (unsigned)slab->counters.inuse,
            get_freepointer(s, x));
}

void *slub_debug_alloc(struct kmem_cache *s, gfp_t gfp, size_t kmalloc_size)
{
    struct slab *slab;
    void *x;
    kslab_lock(&s->list_lock);
    for (;;) {
        if (!(slab = partial_or_new(s)))
            return NULL;
        x = slab_freelist(slab);
        if (valid_pointer(s, slab, x))
            break;
        /* the head itself is corrupt: report, cut, count the slab full */
        on_freelist(s, slab, NULL, NULL);
        if (!slab_freelist(slab)) {
            remove_partial(s, slab);
            add_full(s, slab);
        }
    }
    if (s->flags & (SLAB_CONSISTENCY_CHECKS | SLAB_POISON | SLAB_RED_ZONE))
        check_object(s, slab, x, RED_INACTIVE);
    void *next = get_freepointer(s, x);
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
    stat_add(s, NULL, ALLOC_SLOWPATH, 1);
    return x;
}

void slub_debug_free(struct kmem_cache *want, struct kmem_cache *s, void *x, const char *fn)
{
    struct slab *slab = kslab_slab_of(want, s, x, fn);
    struct slab *discard = NULL;
    struct track t;
    capture_track(s, &t);
    kslab_lock(&s->list_lock);
    if (on_freelist(s, slab, x, NULL)) {
        kslab_unlock(&s->list_lock);
        object_err(s, slab, x, "Object already free");
        return;                 /* nothing freed twice */
    }
    if (s->flags & (SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE))
        check_object(s, slab, x, RED_ACTIVE);
    trace(s, slab, x, "free");
    set_track(s, x, TRACK_FREE, &t);
    init_object(s, x, RED_INACTIVE);
    bool was_full = !slab_freelist(slab);
    set_freepointer(s, x, slab_freelist(slab));
    slab_set_freelist(slab, x);
    slab->counters.inuse--;
    if (was_full) {
        remove_full(s, slab);
        add_partial(s, slab);
    }
    if (partial_release_empty(s, slab))
        discard = slab;
    kslab_unlock(&s->list_lock);
    stat_add(s, NULL, FREE_SLOWPATH, 1);
    if (discard)
        kslab_discard_slab(s, NULL, discard);
}

size_t slub_debug_ksize(struct kmem_cache *s, void *x)
{
    /* the caller may now use every byte: no kmalloc red zone any more */
    set_orig_size(s, x, s->object_size);
    return s->object_size;
}

bool slub_debug_resize(struct kmem_cache *s, void *x, size_t new_size, gfp_t gfp)
{
    if (new_size > s->object_size)
        return false;
    uint32_t orig = get_orig_size(s, x);
    if ((gfp & __GFP_ZERO) && new_size > orig)
        memset(obj_bytes(x) + orig, 0, new_size - orig);
    set_orig_size(s, x, (uint32_t)new_size);
    if ((s->flags & SLAB_RED_ZONE) && s->orig_off)
        memset(obj_bytes(x) + new_size, RED_ACTIVE, s->object_size - new_size);
    return true;
}

size_t slub_debug_orig_size(struct kmem_cache *s, void *x)
{
    return get_orig_size(s, x);
}

/* ---- validation ------------------------------------------------------------------ */

static int validate_slab(struct kmem_cache *s, struct slab *slab)
{
    int errors = 0;
    on_freelist(s, slab, NULL, &errors);
    errors += check_slab_tail(s, slab);
    uint8_t *first = slab_first(s, slab);
    for (unsigned i = 0; i < s->objects; i++) {
        void *x = first + (size_t)i * s->size;
        bool free = on_freelist(s, slab, x, NULL);
        errors += check_object(s, slab, x, free ? RED_INACTIVE : RED_ACTIVE);
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
    long errors = 0;
    kslab_lock(&s->list_lock);
    for (struct slab *slab = s->partial; slab; slab = slab->next)
        errors += validate_slab(s, slab);
    for (struct slab *slab = slub_c(s)->full; slab; slab = slab->next)
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
    kslab_lock(&s->list_lock);
    for (int pass = 0; pass < 2; pass++)
        for (struct slab *slab = pass ? slub_c(s)->full : s->partial; slab; slab = slab->next) {
            uint8_t *first = slab_first(s, slab);
            for (unsigned i = 0; i < s->objects; i++) {
                void *x = first + (size_t)i * s->size;
                if (on_freelist(s, slab, x, NULL))
                    continue;
                out("INFO: Object %p @offset=%lu of %s remains at destroy", x,
                    (unsigned long)((uint8_t *)x - (uint8_t *)slab_address(slab)), s->name);
                if (s->track_off)
                    print_track("Allocated", get_track(s, x, TRACK_ALLOC));
            }
        }
    kslab_unlock(&s->list_lock);
}
