/*
 * rcu.c - libkslab-rcu: kfree_rcu and friends, and RCU for the slab layer,
 * on liburcu's default flavour (urcu-memb).  A separate library so that
 * kslab without RCU users neither links liburcu nor pays for it.
 */
#define _GNU_SOURCE
#include <urcu.h>
#include <kslab-rcu.h>

#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static void free_containing(struct rcu_head *head)
{
    void *obj = kslab_object_start(head);
    if (obj)
        kfree(obj);
    else
        fprintf(stderr, "kslab: kfree_rcu: rcu_head %p is not inside a live kslab object\n",
                (void *)head);
}

EXPORT void kslab_kfree_rcu_head(struct rcu_head *head)
{
    call_rcu(head, free_containing);
}

EXPORT void kslab_kvfree_rcu_mightsleep(const void *p)
{
    if (!p)
        return;
    synchronize_rcu();
    kvfree(p);
}

/* The slab layer's deferred work (kslab_set_rcu_ops): a node with its own
 * rcu_head per call, from kmalloc.  With no memory for one, wait for the
 * grace period here instead (the slab layer calls this from
 * kmem_cache_shrink, which may sleep). */
struct deferred {
    struct rcu_head head;
    void (*fn)(void *);
    void *arg;
};

static void run_deferred(struct rcu_head *head)
{
    struct deferred *d = caa_container_of(head, struct deferred, head);
    d->fn(d->arg);
    kfree(d);
}

static void slab_defer(void (*fn)(void *), void *arg)
{
    struct deferred *d = kmalloc(sizeof *d, GFP_KERNEL);
    if (!d) {
        synchronize_rcu();
        fn(arg);
        return;
    }
    d->fn = fn;
    d->arg = arg;
    call_rcu(&d->head, run_deferred);
}

static void slab_barrier(void)
{
    rcu_barrier();
}

__attribute__((constructor)) static void kslab_rcu_init(void)
{
    kslab_set_rcu_ops(slab_defer, slab_barrier);
}
