/*
 * kfence.h - KFENCE (kfence.c): sampled slab objects on guarded pages.
 * Every lookup below is a range test against the pool, which is empty
 * (NULL..NULL) while KFENCE is off.
 */
#ifndef KSLAB_KFENCE_H
#define KSLAB_KFENCE_H
#include "slab_common.h"

extern char *kslab_kfence_start, *kslab_kfence_end;
extern unsigned long kslab_kfence_interval;

static inline bool kslab_kfence_owns(const void *x)
{
    return (const char *)x >= kslab_kfence_start && (const char *)x < kslab_kfence_end;
}
void kslab_kfence_init(void);
/* The slow path's sampling step: true once every KSLAB_KFENCE calls. */
bool kslab_kfence_due(void);
void *kslab_kfence_alloc(struct kmem_cache *s, size_t size, gfp_t gfp);
/* x owned by the pool: freed (reported if not a live object's start, or if
 * want names another cache), and its size. */
void kslab_kfence_free(struct kmem_cache *want, const void *x, const char *fn);
size_t kslab_kfence_ksize(const void *x, const char *fn);
/* The live KFENCE object holding x (owned by the pool), or NULL. */
void *kslab_kfence_start_of(const void *x);
#endif
