/*
 * kslab-rcu.h - the kernel's RCU frees of slab objects, on liburcu:
 * kfree_rcu(ptr, rhf), kvfree_rcu(ptr, rhf), kfree_rcu_mightsleep(ptr),
 * kvfree_rcu_mightsleep(ptr).  Link with libkslab-rcu (pkg-config
 * kslab-rcu, CMake kslab::kslab-rcu), which uses liburcu's default flavour
 * (urcu-memb, <urcu.h>): readers use rcu_read_lock()/rcu_read_unlock() of
 * that flavour and register with rcu_register_thread(), as with liburcu
 * alone.  rcu_barrier() waits for every kfree_rcu queued before it.
 *
 * Loading libkslab-rcu also gives the slab layer RCU (kslab_set_rcu_ops):
 * kmem_cache_shrink then gives a SLAB_TYPESAFE_BY_RCU cache's empty slabs
 * back after a grace period, and kmem_cache_destroy of such a cache waits
 * for rcu_barrier(), as in the kernel.
 */
#ifndef KSLAB_RCU_H
#define KSLAB_RCU_H

#include <urcu.h>
#include <kslab.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Frees the kslab object (or kmalloc block) that contains head after a
 * grace period.  Callable inside a read-side critical section; never
 * blocks; allocates nothing. */
KSLAB_API void kslab_kfree_rcu_head(struct rcu_head *head);
/* Waits for a grace period, then kvfree(p): must not be called inside a
 * read-side critical section.  NULL is fine. */
KSLAB_API void kslab_kvfree_rcu_mightsleep(const void *p);

/* kfree_rcu(ptr, rhf): ptr's struct has a struct rcu_head named rhf; the
 * object is freed after a grace period.  NULL ptr is a no-op. */
#define kfree_rcu(ptr, rhf)                                                      \
    do {                                                                         \
        __typeof__(ptr) kslab_rcu_p_ = (ptr);                                    \
        if (kslab_rcu_p_)                                                        \
            kslab_kfree_rcu_head(&kslab_rcu_p_->rhf);                            \
    } while (0)
#define kvfree_rcu(ptr, rhf) kfree_rcu(ptr, rhf)
#define kfree_rcu_mightsleep(ptr) kslab_kvfree_rcu_mightsleep(ptr)
#define kvfree_rcu_mightsleep(ptr) kslab_kvfree_rcu_mightsleep(ptr)
/* Waits for every kvfree_rcu queued before it (liburcu's rcu_barrier). */
#define kvfree_rcu_barrier() rcu_barrier()

#ifdef __cplusplus
}
#endif
#endif /* KSLAB_RCU_H */
