/* pubread.h - kslabtop's and kslabinfo's side of kslab-publish.h: find a
 * process's region, take consistent snapshots of it, and the figures both
 * tools derive from a row. */
#ifndef KSLAB_PUBREAD_H
#define KSLAB_PUBREAD_H
#include <kslab-publish.h>
#include <stddef.h>
#include <stdint.h>

struct pub_map {
    int pid;
    int fd;
    void *map;
    size_t bytes;
};

struct pub_snap {
    struct kslab_pub_header h;      /* the fields this reader knows */
    struct kslab_pub_cache *rows;   /* h.nr_rows of them */
    unsigned n;
    void *buf;                      /* the raw copy */
    size_t cap;
};

/* 0, or -1 with a message on stderr naming the pid and why. */
int pub_open(int pid, struct pub_map *m);
void pub_close(struct pub_map *m);
/* A consistent snapshot: 0; 1 if the process is gone; -1 on error. */
int pub_read(struct pub_map *m, struct pub_snap *s);
void pub_snap_free(struct pub_snap *s);
/* Is the process alive (and the region not a dead one's leftover)? */
int pub_alive(int pid);
/* The pids publishing now, at most max; stale regions (dead pids) are
 * removed when remove_stale and reported on stderr. */
int pub_list(int *pids, int max, int remove_stale);
/* The one process publishing, or -1 (none or several, said on stderr). */
int pub_only_pid(void);

/* Derived figures of a row. */
static inline uint64_t row_slab_bytes(const struct kslab_pub_cache *r)
{
    return (uint64_t)4096 << r->order;
}
static inline uint64_t row_space(const struct kslab_pub_cache *r)
{
    return r->num_slabs * row_slab_bytes(r);
}
static inline uint64_t row_used(const struct kslab_pub_cache *r)
{
    return r->active_objs * r->object_size;
}
const char *pub_event_name(int i);
const char *pub_human(uint64_t bytes, char buf[16]);
#endif
