/*
 * stats.c - the counters (struct kslab_stats, the kernel's
 * CONFIG_SLUB_STATS) and the /proc/slabinfo text.
 */
#include "slab_common.h"
#include "percpu.h"

#include <stdio.h>

_Static_assert(offsetof(struct kslab_stats, barn_get) == BARN_GET * sizeof(uint64_t),
               "struct kslab_stats lists the events in enum stat_item order");

struct events_walk { unsigned id; uint64_t *ev; };

static void add_thread_events(struct kslab_thread *t, void *arg)
{
    struct events_walk *w = arg;
    struct kmem_cache_cpu *c = &t->cpu[w->id];
    struct kmem_cache_cpu_cold *cc = kslab_cold_peek(t, w->id);
    if (!cc)
        return;                     /* no events: the thread never used the id */
    /* relaxed: each counter is written by its owner alone; a reader needs
     * an untorn value, not ordering */
    w->ev[ALLOC_FASTPATH] += __atomic_load_n(&c->alloc_fast, __ATOMIC_RELAXED);
    w->ev[FREE_FASTPATH] += __atomic_load_n(&c->free_fast, __ATOMIC_RELAXED);
    for (int i = 0; i < NR_STATS; i++)
        w->ev[i] += __atomic_load_n(&cc->stat[i], __ATOMIC_RELAXED);
}

/* The cache's totals plus every live thread's entries, under threads_lock
 * (thread exit folds under it too: each event is seen exactly once). */
static void cache_events(struct kmem_cache *s, uint64_t ev[NR_STATS])
{
    for (int i = 0; i < NR_STATS; i++)
        ev[i] = atomic_load_explicit(&s->stat_total[i], memory_order_relaxed);
    struct events_walk w = { s->id, ev };
    kslab_for_each_thread(add_thread_events, &w);
    kslab_pcpu_events(s, ev);       /* the per-CPU sheaves' fast paths */
}

static uint64_t events_active(const uint64_t ev[NR_STATS])
{
    return ev[ALLOC_FASTPATH] + ev[ALLOC_SLOWPATH] - ev[FREE_FASTPATH] - ev[FREE_SLOWPATH];
}

uint64_t kslab_cache_active(struct kmem_cache *s)
{
    uint64_t ev[NR_STATS];
    cache_events(s, ev);
    return events_active(ev);
}

uint64_t kslab_active_bytes(void)
{
    uint64_t sum = 0;
    kslab_ensure_init();
    kslab_lock(&kslab_cache_lock);
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache)
        sum += kslab_cache_active(s) * s->size;
    kslab_unlock(&kslab_cache_lock);
    return sum;
}

int kslab_cache_stats(struct kmem_cache *s, struct kslab_stats *out)
{
    if (!s || !out)
        return -1;
    uint64_t ev[NR_STATS];
    cache_events(s, ev);
    memcpy(out, ev, sizeof ev);
    out->active_objs = events_active(ev);
    out->num_objs = (uint64_t)atomic_load_explicit(&s->total_objects, memory_order_relaxed);
    out->num_slabs = (uint64_t)atomic_load_explicit(&s->nr_slabs, memory_order_relaxed);
    out->partial_slabs = atomic_load_explicit(&s->nr_partial, memory_order_relaxed);
    return 0;
}

void kslab_slabinfo(FILE *out)
{
    kslab_ensure_init();
    fprintf(out, "slabinfo - version: 2.1\n");
    fprintf(out, "# name            <active_objs> <num_objs> <objsize> <objperslab> "
                 "<pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata "
                 "<active_slabs> <num_slabs> <sharedavail>\n");
    kslab_lock(&kslab_cache_lock);
    for (struct kmem_cache *s = kslab_cache_list; s; s = s->next_cache) {
        struct kslab_stats st;
        unsigned tun[4] = { 0, 0, 0, 0 };
        kslab_cache_stats(s, &st);
        if (kslab_be->tunables)
            kslab_be->tunables(s, tun);
        fprintf(out, "%-17s %6llu %6llu %6u %4u %4u : tunables %4u %4u %4u : slabdata %6llu "
                     "%6llu %6u\n",
                s->name, (unsigned long long)st.active_objs, (unsigned long long)st.num_objs,
                s->size, s->objects, 1u << s->order, tun[0], tun[1], tun[2],
                (unsigned long long)st.num_slabs, (unsigned long long)st.num_slabs, tun[3]);
    }
    kslab_unlock(&kslab_cache_lock);
}

static void add_pcp(struct kslab_thread *t, void *arg)
{
    *(uint64_t *)arg += __atomic_load_n(&t->pcp.pages, __ATOMIC_RELAXED);
}

void kslab_memory(struct kslab_memory *m)
{
    memset(m, 0, sizeof *m);
    pages_memory(m);
    uint64_t pcp = 0;
    kslab_for_each_thread(add_pcp, &pcp);
    m->pcp_bytes = pcp << PAGE_SHIFT;
}
