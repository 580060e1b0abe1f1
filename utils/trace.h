/*
 * trace.h - the .kst trace format kslab-record writes and kslab-replay reads.
 *
 * A .kst file is a header then a stream of records, all little-endian.
 *
 * Header (struct kst_header, header_size bytes; fields may be appended in a
 * later minor revision, so a reader skips to header_size):
 *   magic "KSTRACE\0", version 1, header_size, then the counts below and the
 *   recorded command line (NUL-terminated, truncated to 256 bytes).
 *
 * Records: one op byte, then its operands as unsigned LEB128 varints.
 *   KST_MALLOC   size            malloc(size)
 *   KST_CALLOC   size            calloc(1, size)  (the product of calloc's two)
 *   KST_MEMALIGN align size      memalign/posix_memalign/aligned_alloc/valloc/pvalloc
 *   KST_FREE     id              free(object id)
 *   KST_REALLOC  id size         realloc(object id, size): the object keeps its id
 *   KST_THREAD   tid             the records that follow are thread tid's (until the
 *                                next KST_THREAD); a tid's first KST_THREAD starts it
 *   KST_EXIT                     the current thread exits; a KST_THREAD or KST_END follows
 *   KST_END                      end of the trace
 * The stream starts with KST_THREAD 0 (the main thread).
 *
 * Object ids are implicit: an allocation takes the most recently freed id
 * (a LIFO stack of free ids), or the next never-used id when none is free.
 * Reader and writer apply the same rule, so ids stay below max_live and a
 * replayer's table of live objects is max_live entries.
 *
 * Ordering: records are in one global order.  The recorder numbers each
 * free before it frees and each allocation after it returns, so a pointer's
 * free always precedes its reuse; replaying in this order, each record on its
 * own thread, keeps every ordering constraint the program had between an
 * object's allocation, reallocation and free.
 */
#ifndef KSLAB_TRACE_H
#define KSLAB_TRACE_H
#include <stddef.h>
#include <stdint.h>

#define KST_MAGIC "KSTRACE"
#define KST_VERSION 1

enum { KST_END = 0, KST_MALLOC, KST_CALLOC, KST_MEMALIGN, KST_FREE, KST_REALLOC, KST_THREAD,
       KST_EXIT };

struct kst_header {
    char magic[8];               /* "KSTRACE\0" */
    uint32_t version;            /* KST_VERSION */
    uint32_t header_size;        /* bytes before the first record */
    uint64_t records;            /* records in the stream, KST_END excluded */
    uint64_t allocs, frees, reallocs;
    uint64_t max_live;           /* most objects live at once: ids are below it */
    uint64_t max_live_bytes;     /* most requested bytes live at once */
    uint64_t unknown_frees;      /* frees of pointers allocated before recording began (skipped) */
    uint32_t threads;            /* distinct threads (tids 0 .. threads-1) */
    uint32_t pad;
    char command[256];           /* the recorded command line */
};

static inline size_t kst_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads a varint at *p (below end); 0 and *p unchanged if it is cut off. */
static inline int kst_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; *p + shift / 7 < end && shift < 64; shift += 7) {
        uint8_t b = (*p)[shift / 7];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p += shift / 7 + 1;
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* The raw stream the recorder writes while the program runs (private to
 * kslab-record): chunks, each a struct kst_raw_chunk then n events of one
 * thread in its own order. */
enum { RAW_MALLOC = 1, RAW_CALLOC, RAW_MEMALIGN, RAW_FREE, RAW_REALLOC_START, RAW_REALLOC_END,
       RAW_THREAD_EXIT };
struct kst_raw_chunk {
    uint32_t magic;              /* RAW_CHUNK_MAGIC */
    uint32_t tid;
    uint32_t n;
    uint32_t pad;
};
#define RAW_CHUNK_MAGIC 0x4b535243u
struct kst_raw_ev {
    uint64_t seq_op;             /* global sequence << 8 | RAW_* op */
    uint64_t ptr;                /* the object (REALLOC_START: the old one) */
    uint64_t size;
    uint64_t aux;                /* MEMALIGN: alignment; REALLOC_END: the old pointer */
};
#endif
