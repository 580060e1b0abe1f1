/*
 * rcu_hash.c - a kernel-style module on kslab: a hash table of fixed-size
 * entries with RCU lookups, written as it would be in the kernel (a
 * KMEM_CACHE for the entries, kmem_cache_zalloc, kfree_rcu on delete,
 * kcalloc'd buckets, rcu_read_lock around lookups), run by `make test`.
 *
 * Two reader threads look keys up while the main thread inserts, replaces
 * and deletes; a reader checks that every entry it finds is intact (its
 * value matches its key), which a premature free and reuse would break.
 */
#include <kslab-rcu.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct entry {
    struct entry *next;          /* RCU-protected chain */
    unsigned long key;
    unsigned long val;           /* always key * 3 while the entry is live */
    struct rcu_head rcu;
};

#define NBUCKETS 256
static struct entry **table;
static struct kmem_cache *entry_cache;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;   /* writers */

static struct entry *lookup(unsigned long key)      /* under rcu_read_lock */
{
    for (struct entry *e = rcu_dereference(table[key % NBUCKETS]); e; e = rcu_dereference(e->next))
        if (e->key == key)
            return e;
    return NULL;
}

static int insert(unsigned long key)
{
    struct entry *e = kmem_cache_zalloc(entry_cache, GFP_KERNEL);
    if (!e)
        return -1;
    e->key = key;
    e->val = key * 3;
    pthread_mutex_lock(&table_lock);
    e->next = table[key % NBUCKETS];
    rcu_assign_pointer(table[key % NBUCKETS], e);
    pthread_mutex_unlock(&table_lock);
    return 0;
}

static int delete(unsigned long key)
{
    pthread_mutex_lock(&table_lock);
    struct entry **pp = &table[key % NBUCKETS], *e;
    while ((e = *pp) && e->key != key)
        pp = &e->next;
    if (e)
        rcu_assign_pointer(*pp, e->next);
    pthread_mutex_unlock(&table_lock);
    if (!e)
        return -1;
    kfree_rcu(e, rcu);           /* readers may still hold it */
    return 0;
}

static atomic_int done;
static atomic_long found, corrupt;

static void *reader(void *arg)
{
    (void)arg;
    rcu_register_thread();
    unsigned long k = 1;
    while (!atomic_load(&done)) {
        k = k * 6364136223846793005ul + 1442695040888963407ul;
        rcu_read_lock();
        struct entry *e = lookup((k >> 33) % 4096);
        if (e) {
            atomic_fetch_add_explicit(&found, 1, memory_order_relaxed);
            if (e->val != e->key * 3)
                atomic_fetch_add(&corrupt, 1);
        }
        rcu_read_unlock();
    }
    rcu_unregister_thread();
    return NULL;
}

int main(void)
{
    entry_cache = KMEM_CACHE(entry, SLAB_HWCACHE_ALIGN);
    table = kcalloc(NBUCKETS, sizeof *table, GFP_KERNEL);
    if (!entry_cache || !table)
        return 1;
    rcu_register_thread();
    pthread_t r[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    unsigned long ops = 0;
    for (int round = 0; round < 50; round++)
        for (unsigned long key = 0; key < 4096; key++, ops++) {
            if (round & 1)
                delete(key);
            else if (insert(key))
                return 1;
        }
    atomic_store(&done, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    for (unsigned long key = 0; key < 4096; key++)
        delete(key);
    rcu_barrier();               /* every kfree_rcu done before the cache goes */
    kmem_cache_destroy(entry_cache);
    kfree(table);
    rcu_unregister_thread();
    printf("rcu_hash: %lu updates, %ld lookups found an entry, %ld corrupt\n", ops,
           atomic_load(&found), atomic_load(&corrupt));
    return atomic_load(&corrupt) != 0;
}
