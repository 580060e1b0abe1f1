/*
 * test_rndkmalloc.c - random kmalloc caches (KSLAB_RANDOM_KMALLOC=15, set
 * by CTest): the copies exist (slabinfo names them), and kmalloc calls from
 * different call sites are served by different caches, so their objects
 * share no page, where without the option (all in kmalloc-64) every two
 * sites' interleaved objects share pages.  Classic SLOB keeps every cache's
 * objects on shared pages: the page test does not apply there.
 */
#define _GNU_SOURCE
#include "check.h"
#include <kslab.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SITES = 8, PER = 32 };
typedef void *(*site_fn)(void);
#define SITE(n) static __attribute__((noinline)) void *site##n(void) \
    { void *p = kmalloc(64, GFP_KERNEL); __asm__ volatile("" : : "r"(p) : "memory"); return p; }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static const site_fn sites[SITES] = { site0, site1, site2, site3, site4, site5, site6, site7 };

static bool share_page(void **a, void **b)
{
    for (int i = 0; i < PER; i++)
        for (int j = 0; j < PER; j++)
            if ((uintptr_t)a[i] >> 12 == (uintptr_t)b[j] >> 12)
                return true;
    return false;
}

int main(void)
{
    const char *v = getenv("KSLAB_RANDOM_KMALLOC");
    bool on = v && atoi(v) > 0;
    char *info = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&info, &len);
    kslab_slabinfo(f);
    fclose(f);
    CHECK(on == (strstr(info, "kmalloc-rnd-15-64") != NULL));
    CHECK(on == (strstr(info, "kmalloc-rnd-01-8k") != NULL));
    free(info);

    static void *p[SITES][PER];
    for (int i = 0; i < PER; i++)               /* interleaved: site 0, 1, ..., 7, 0, ... */
        for (int s = 0; s < SITES; s++)
            p[s][i] = sites[s]();
    if (strcmp(kslab_allocator_name(), "slob") != 0) {
        int apart = 0;
        for (int a = 0; a < SITES; a++)
            for (int b = a + 1; b < SITES; b++)
                apart += !share_page(p[a], p[b]);
        if (on != (apart > 0))
            fprintf(stderr, "%d of %d site pairs on pages of their own\n", apart,
                    SITES * (SITES - 1) / 2);
        CHECK(on == (apart > 0));
    }
    /* the copies' objects are kmalloc's in every other way */
    for (int s = 0; s < SITES; s++)
        for (int i = 0; i < PER; i++) {
            CHECK(ksize(p[s][i]) >= 64);
            if (i == 0) {
                p[s][i] = krealloc(p[s][i], 200, GFP_KERNEL);
                CHECK(p[s][i] && ksize(p[s][i]) >= 200);
            }
            kfree(p[s][i]);
        }
    return check_done();
}
