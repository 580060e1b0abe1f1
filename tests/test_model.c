/* test_model.c - a randomized model test: a million random operations over
 * many caches and sizes, against a model of what must be live.  Checks each
 * object's contents, no overlap, alignment, ksize >= size, and that the
 * counters and slabinfo agree with the model. */
#include "check.h"
#include "helpers.h"
#include <kslab.h>
#include <stdint.h>

#define NCACHES 12
#define MAXLIVE 20000

struct obj { unsigned char *p; size_t size; int cache; uint8_t tag; };
static struct obj live[MAXLIVE];
static int nlive;
static struct kmem_cache *caches[NCACHES];
static unsigned csize[NCACHES], calign[NCACHES];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    return test_rand(&rng);
}

static void ctor(void *p) { (void)p; }

static size_t kmalloc_size(void)
{
    uint64_t r = rnd() % 100;
    if (r < 60) return 1 + rnd() % 256;
    if (r < 90) return 1 + rnd() % 8192;
    if (r < 99) return 1 + rnd() % 2048;
    return 8193 + rnd() % 200000;           /* large */
}

static void fill(struct obj *o)
{
    memset(o->p, o->tag, o->size);
}

static int intact(const struct obj *o)
{
    for (size_t i = 0; i < o->size; i++)
        if (o->p[i] != o->tag)
            return 0;
    return 1;
}

static int cmp_obj(const void *a, const void *b)
{
    const struct obj *x = a, *y = b;
    return x->p < y->p ? -1 : x->p > y->p;
}

static void full_check(void)
{
    qsort(live, (size_t)nlive, sizeof *live, cmp_obj);
    int overlap = 0, bad = 0;
    for (int i = 0; i < nlive; i++) {
        bad += !intact(&live[i]);
        if (i && live[i - 1].p + ksize(live[i - 1].p) > live[i].p)
            overlap++;
    }
    CHECK_EQ(overlap, 0);
    CHECK_EQ(bad, 0);
    /* counters agree with the model, and slabinfo with the counters */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kslab_slabinfo(f);
    fclose(f);
    for (int c = 0; c < NCACHES; c++) {
        long want = 0;
        for (int i = 0; i < nlive; i++)
            want += live[i].cache == c;
        struct kslab_stats st;
        kslab_cache_stats(caches[c], &st);
        CHECK_EQ(st.active_objs, want);
        CHECK(st.num_objs >= st.active_objs);
        char key[64];
        snprintf(key, sizeof key, "\nmodel%d ", c);
        char *line = strstr(buf, key);
        unsigned long act, num, osz, per, pages, l, b, sf, as, ns, sa;
        CHECK(line && sscanf(line + strlen(key), "%lu %lu %lu %lu %lu : tunables %lu %lu %lu : slabdata %lu %lu %lu",
                             &act, &num, &osz, &per, &pages, &l, &b, &sf, &as, &ns, &sa) == 11);
        if (line) {
            CHECK_EQ(act, st.active_objs);
            CHECK_EQ(num, st.num_objs);
            CHECK_EQ(ns, st.num_slabs);
            if (strcmp(kslab_allocator_name(), "slob") != 0)   /* SLOB pages are shared */
                CHECK_EQ(num, per * ns);
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    /* one thread: under TSan (TEST_TSAN, helpers.h) there is no race to
     * find here, and a million operations took 60-110 s a run, half of
     * make test's TSan stage */
#ifdef TEST_TSAN
    long dflt = 200000;
#else
    long dflt = 1000000;
#endif
    long ops = argc > 1 ? atol(argv[1]) : dflt;
    rng = test_seed(rng);
    printf("seed 0x%llx, %ld operations\n", (unsigned long long)rng, ops);
    static const unsigned sizes[NCACHES] = { 8, 24, 40, 64, 100, 192, 250, 512, 700, 1500, 3000, 9000 };
    static const unsigned aligns[NCACHES] = { 0, 0, 16, 64, 0, 32, 0, 256, 8, 0, 64, 0 };
    for (int c = 0; c < NCACHES; c++) {
        char name[32];
        snprintf(name, sizeof name, "model%d", c);
        csize[c] = sizes[c];
        calign[c] = aligns[c];
        caches[c] = kmem_cache_create(name, sizes[c], aligns[c],
                                      SLAB_NO_MERGE | (c % 3 == 0 ? SLAB_HWCACHE_ALIGN : 0),
                                      c % 4 == 1 ? ctor : NULL);
        CHECK(caches[c] != NULL);
    }
    long misaligned = 0, small_ksize = 0, damaged = 0, nulls = 0;
    for (long op = 0; op < ops; op++) {
        uint64_t r = rnd() % 100;
        if ((r < 52 && nlive < MAXLIVE) || nlive == 0) {
            struct obj *o = &live[nlive];
            o->tag = (uint8_t)(rnd() | 1);
            if (rnd() % 2) {
                o->cache = (int)(rnd() % NCACHES);
                o->size = csize[o->cache];
                o->p = kmem_cache_alloc(caches[o->cache], GFP_KERNEL);
                unsigned a = calign[o->cache] ? calign[o->cache] : 8;
                misaligned += o->p && (uintptr_t)o->p % a;
            } else {
                o->cache = -1;
                o->size = kmalloc_size();
                o->p = rnd() % 8 ? kmalloc(o->size, GFP_KERNEL) : kzalloc(o->size, GFP_KERNEL);
                misaligned += o->p && (uintptr_t)o->p % 8;
                size_t k = o->size;   /* the kernel's guarantee: power-of-two sizes */
                if ((k & (k - 1)) == 0 && k <= 4096)
                    misaligned += o->p && (uintptr_t)o->p % k;
            }
            if (!o->p) {
                nulls++;
                continue;
            }
            small_ksize += ksize(o->p) < o->size;
            fill(o);
            nlive++;
        } else if (r < 97) {
            int i = (int)(rnd() % (uint64_t)nlive);
            struct obj *o = &live[i];
            damaged += !intact(o);
            if (o->cache >= 0 && rnd() % 2)
                kmem_cache_free(caches[o->cache], o->p);
            else
                kfree(o->p);
            live[i] = live[--nlive];
        } else {
            /* krealloc a kmalloc object: contents up to the smaller size survive */
            int i = (int)(rnd() % (uint64_t)nlive);
            struct obj *o = &live[i];
            if (o->cache >= 0)
                continue;
            size_t ns = kmalloc_size();
            damaged += !intact(o);
            unsigned char *np = krealloc(o->p, ns, GFP_KERNEL);
            if (!np) {
                nulls++;
                continue;
            }
            size_t keep = ns < o->size ? ns : o->size;
            for (size_t j = 0; j < keep; j++)
                damaged += np[j] != o->tag;
            o->p = np;
            o->size = ns;
            fill(o);
        }
        if (op % 250000 == 0)
            full_check();
    }
    full_check();
    CHECK_EQ(misaligned, 0);
    CHECK_EQ(small_ksize, 0);
    CHECK_EQ(damaged, 0);
    CHECK_EQ(nulls, 0);
    while (nlive) {
        struct obj *o = &live[--nlive];
        damaged += !intact(o);
        kfree(o->p);
    }
    CHECK_EQ(damaged, 0);
    for (int c = 0; c < NCACHES; c++) {
        struct kslab_stats st;
        kslab_cache_stats(caches[c], &st);
        CHECK_EQ(st.active_objs, 0);
        kmem_cache_shrink(caches[c]);
        kslab_cache_stats(caches[c], &st);
        CHECK_EQ(st.num_slabs, 0);
        kmem_cache_destroy(caches[c]);
    }
    return check_done();
}
