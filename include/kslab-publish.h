/*
 * kslab-publish.h - the format of the region a process running on kslab
 * publishes its slabinfo in, for kslabtop and kslabinfo (or any reader).
 *
 * Where: the file /dev/shm/kslab.<pid>, mode 0600, created by the process
 * the first time its allocator takes a slow path, refreshed from the slow
 * path at most every KSLAB_PUBLISH_MS milliseconds (default 100) and at
 * exit, removed at exit.  KSLAB_PUBLISH=0 publishes nothing.  A process that
 * dies without exiting (SIGKILL) leaves its file behind; readers check that
 * the pid in the header is alive (kslab_pub_stale) and may remove it.
 *
 * Layout (little-endian, the process's own): a struct kslab_pub_header at
 * offset 0, then nr_rows rows of row_size bytes from offset header_size,
 * each beginning with a struct kslab_pub_cache.  The file may grow between
 * reads (more caches): map it again when its size changes.
 *
 * Versioning: `version` changes only for an incompatible layout.  New
 * fields are added at the end of the header or of a row, and header_size
 * and row_size grow with them; a reader uses the sizes from the header, so
 * an older reader keeps reading the fields it knows.
 *
 * Consistency: `seq` is a sequence lock.  The writer makes it odd, writes,
 * then makes it even (release).  A reader loads seq (acquire), retries while
 * it is odd, copies what it needs, loads seq again after an acquire fence and
 * retries if it changed.  kslab_pub_snapshot() does exactly this.
 */
#ifndef KSLAB_PUBLISH_H
#define KSLAB_PUBLISH_H

#include <stdint.h>
#include <string.h>

#define KSLAB_PUB_MAGIC "KSLABPUB"
#define KSLAB_PUB_VERSION 1
#define KSLAB_PUB_NAME_LEN 48
#define KSLAB_PUB_EVENTS 24         /* the event counters of struct kslab_stats */

struct kslab_pub_header {
    char magic[8];                  /* "KSLABPUB" */
    uint32_t version;               /* KSLAB_PUB_VERSION */
    uint32_t header_size;           /* bytes from the start to the first row */
    uint32_t row_size;              /* bytes per row */
    uint32_t nr_rows;               /* rows valid in this snapshot */
    uint64_t seq;                   /* sequence lock: odd while being written */
    int32_t pid;                    /* the publishing process */
    uint32_t interval_ms;           /* the refresh interval */
    uint64_t updates;               /* snapshots written so far */
    int64_t update_ns;              /* CLOCK_REALTIME of this snapshot */
    char allocator[16];             /* back-end: "slub", "slab", "slob", "slob-seg" */
    char cpu_mode[16];              /* "percpu" or "thread" */
    /* struct kslab_memory, field by field */
    uint64_t slab_bytes, large_bytes, pcp_bytes, hot_bytes, huge_bytes, huge_cached_bytes;
    uint64_t arena_bytes, mappings, release_failures;
    uint64_t pages_peak;            /* most 4 KiB pages slabs ever held */
};

struct kslab_pub_cache {
    char name[KSLAB_PUB_NAME_LEN];  /* as /proc/slabinfo shows it, NUL-terminated */
    uint32_t object_size;           /* what the user asked for */
    uint32_t size;                  /* stride: object plus metadata and padding */
    uint32_t objects;               /* objects per slab */
    uint32_t order;                 /* slab = 4 KiB << order */
    uint32_t flags;                 /* SLAB_* flags */
    uint32_t tunables[4];           /* limit, batchcount, sharedfactor, sharedavail (SLAB) */
    uint32_t pad;
    uint64_t active_objs, num_objs, num_slabs, partial_slabs;
    uint64_t events[KSLAB_PUB_EVENTS]; /* struct kslab_stats' events, in its order */
};

/* Copy a consistent snapshot of the region at `map` (`bytes` long) into
 * `out` (`out_bytes` long): the header then the rows, packed as the writer
 * laid them out.  Returns the bytes copied, 0 if the region is not a
 * kslab region of a version this reader knows, or -1 if no stable snapshot
 * came in `tries` attempts (the writer kept writing). */
static inline long kslab_pub_snapshot(const void *map, size_t bytes, void *out, size_t out_bytes,
                                      int tries)
{
    const struct kslab_pub_header *h = (const struct kslab_pub_header *)map;
    if (bytes < sizeof *h || memcmp(h->magic, KSLAB_PUB_MAGIC, 8) != 0 ||
        h->version != KSLAB_PUB_VERSION)
        return 0;
    while (tries-- > 0) {
        uint64_t s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1)
            continue;
        size_t n = (size_t)h->header_size + (size_t)h->nr_rows * h->row_size;
        if (n > bytes || n > out_bytes)
            n = bytes < out_bytes ? bytes : out_bytes;
        memcpy(out, map, n);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s1)
            return (long)n;
    }
    return -1;
}

#endif
