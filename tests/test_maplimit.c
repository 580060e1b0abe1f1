/* test_maplimit.c - the mapping-limit test: a program keeps 80 000 live
 * 9000-byte blocks, frees them all, and repeats: three rounds (each faults
 * in 700 MiB, 3 s on a host whose faults take 15 us).  kslab's RSS
 * must come back to its baseline after every round and its mapping count
 * stay under a bound, whatever the back-end.
 *
 *   test_maplimit kmalloc   through the kernel API (linked with kslab)
 *   test_maplimit malloc    through malloc (run under libkslab-malloc)
 *
 * The bound on mappings: at most one per 64 MiB arena (80 000 blocks of
 * 16 KiB are 1.25 GiB: 20 arenas, or up to twice that with the pieces the
 * buddy keeps free between blocks; the arena zone's arenas share its six),
 * a few chunk-map tables and thread states: baseline + 64.  The bound on RSS after the frees, without malloc_trim: the hot
 * reserve (at most 4 MiB when nothing is in use), a
 * thread's pcp lists (1 MiB), and slab pages that kslab keeps (min_partial):
 * baseline + 8 MiB; after kslab_trim(): baseline + 2 MiB.
 * KSLAB_MAPLIMIT_BLOCKS lowers the block count (the sanitizer flavours);
 * KSLAB_MAPLIMIT_NO_RSS=1 skips the RSS bounds (TSan, whose shadow memory
 * for every byte ever touched stays resident). */
#define _GNU_SOURCE
#include "check.h"
#include "helpers.h"
#include <dlfcn.h>
#include <stdbool.h>
#include <kslab.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long map_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int c;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static bool use_malloc;
static size_t (*trim_fn)(void);

#ifdef MAPLIMIT_MALLOC_ONLY        /* the drop-in build: no link to kslab */
#define kmalloc(n, gfp) malloc(n)
#define kfree(p) free(p)
#define kslab_trim NULL
#endif
static void *alloc(size_t n) { return use_malloc ? malloc(n) : kmalloc(n, GFP_KERNEL); }
static void release(void *p) { if (use_malloc) free(p); else kfree(p); }

int main(int argc, char **argv)
{
    use_malloc = argc > 1 && strcmp(argv[1], "malloc") == 0;
    trim_fn = use_malloc ? (size_t (*)(void))dlsym(RTLD_DEFAULT, "kslab_trim") : kslab_trim;
    CHECK(trim_fn != NULL);             /* malloc mode: libkslab-malloc must be preloaded */
    if (!trim_fn)
        return check_done();
    long nblocks = 80000;
    const char *e = getenv("KSLAB_MAPLIMIT_BLOCKS");
    if (e && atol(e) > 0)
        nblocks = atol(e);
    void **blk = calloc((size_t)nblocks, sizeof *blk);
    memset(blk, 1, (size_t)nblocks * sizeof *blk);   /* resident before the baseline */
    /* warm up (thread state, caches), then the baseline */
    for (int i = 0; i < 100; i++)
        blk[i] = alloc(9000);
    for (int i = 0; i < 100; i++)
        release(blk[i]);
    trim_fn();
    bool check_rss = !getenv("KSLAB_MAPLIMIT_NO_RSS");
    long rss0 = test_rss_kib(), maps0 = map_count();
    for (int round = 0; round < 3; round++) {
        for (long i = 0; i < nblocks; i++) {
            blk[i] = alloc(9000);
            if (!blk[i])
                break;
            memset(blk[i], (int)(i + round), 9000);
        }
        long maps = map_count(), rss = test_rss_kib();
        CHECK(maps - maps0 <= 64);
        CHECK(rss - rss0 >= nblocks * 9000 / 1024 * 9 / 10);   /* the blocks are really there */
        long bad = 0;
        for (long i = 0; i < nblocks; i++) {
            bad += !blk[i] || ((unsigned char *)blk[i])[8999] != (unsigned char)(i + round);
            release(blk[i]);
        }
        CHECK_EQ(bad, 0);
        long after = test_rss_kib(), maps_after = map_count();
        printf("round %d: %ld blocks, maps +%ld at peak, +%ld after; RSS +%ld KiB at peak, "
               "+%ld KiB after the frees\n", round, nblocks, maps - maps0, maps_after - maps0,
               rss - rss0, after - rss0);
        if (check_rss)
            CHECK(after - rss0 <= 8 * 1024);
        CHECK(maps_after - maps0 <= 64);
    }
    trim_fn();
    long rss_end = test_rss_kib();
    printf("after trim: RSS +%ld KiB, maps +%ld\n", rss_end - rss0, map_count() - maps0);
    if (check_rss)
        CHECK(rss_end - rss0 <= 2 * 1024);
    free(blk);
    return check_done();
}
