/*
 * kslab-record - record every allocation and free of a program into a .kst
 * trace (trace.h) that kslab-replay replays on every allocator.
 *
 *   kslab-record -o trace.kst PROGRAM ARGS...
 *
 * The program runs under libkslab-record.so (LD_PRELOAD), which streams raw
 * per-thread chunks to trace.kst.raw; when the program ends, the chunks are
 * merged into one global order (a heap over the threads' streams: one chunk
 * per thread in memory) and every pointer becomes an object id, then the raw
 * file is removed.  Exit status: the program's.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kslab-record -o TRACE.kst [-q] PROGRAM [ARGS...]\n"
        "Run PROGRAM and record every malloc, calloc, realloc, memalign-family call and\n"
        "free it makes (size, alignment, thread, global order) into TRACE.kst, a compact\n"
        "binary trace (format: kslab's utils/trace.h, README \"The slab lab\") that\n"
        "kslab-replay replays on every kslab back-end and on the peers.\n"
        "Programs that PROGRAM runs are not recorded; a fork child stops recording.\n"
        "  -o, --output FILE   the trace to write (required)\n"
        "  -q, --quiet         no summary on stderr\n"
        "  -h, --help          this text\n"
        "Environment: KSLAB_RECORD_LIB overrides where libkslab-record.so is.\n");
}

/* ---- libkslab-record.so: beside this program, or in ../lib ---------------- */
static const char *find_lib(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("KSLAB_RECORD_LIB");
    if (env)
        return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = 0;
    const char *dir = dirname(exe);
    const char *tries[] = { "%s/libkslab-record.so", "%s/../lib/libkslab-record.so",
                            "%s/../lib/x86_64-linux-gnu/libkslab-record.so" };
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        snprintf(path, sizeof path, tries[i], dir);
        if (access(path, R_OK) == 0)
            return realpath(path, NULL);
    }
    return NULL;
}

/* ---- the pointer -> id map (open addressing, linear probing) -------------- */
struct slot { uint64_t ptr; uint64_t id; uint64_t size; };
static struct slot *tab;
static size_t tab_cap, tab_n;

static struct slot *find(uint64_t p)
{
    size_t i = (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull) & (tab_cap - 1);
    while (tab[i].ptr && tab[i].ptr != p)
        i = (i + 1) & (tab_cap - 1);
    return &tab[i];
}

static void grow(void);
static void put(uint64_t p, uint64_t id, uint64_t size)
{
    if ((tab_n + 1) * 2 > tab_cap)
        grow();
    struct slot *s = find(p);
    if (!s->ptr)
        tab_n++;
    s->ptr = p;
    s->id = id;
    s->size = size;
}

static void grow(void)
{
    struct slot *old = tab;
    size_t oc = tab_cap;
    tab_cap = oc ? oc * 2 : 1 << 16;
    tab = calloc(tab_cap, sizeof *tab);
    if (!tab) {
        perror("kslab-record");
        exit(1);
    }
    tab_n = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].ptr)
            put(old[i].ptr, old[i].id, old[i].size);
    free(old);
}

/* Remove p (backward-shift deletion); returns 0 if absent. */
static int take(uint64_t p, uint64_t *id, uint64_t *size)
{
    if (!tab_cap)
        return 0;
    struct slot *s = find(p);
    if (!s->ptr)
        return 0;
    *id = s->id;
    *size = s->size;
    size_t i = (size_t)(s - tab), j = i;
    tab[i].ptr = 0;
    tab_n--;
    for (;;) {
        j = (j + 1) & (tab_cap - 1);
        if (!tab[j].ptr)
            break;
        size_t k = (size_t)((tab[j].ptr >> 4) * 0x9e3779b97f4a7c15ull) & (tab_cap - 1);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            tab[i] = tab[j];
            tab[j].ptr = 0;
            i = j;
        }
    }
    return 1;
}

/* ---- ids: the LIFO rule of trace.h ---------------------------------------- */
static uint64_t *free_ids;
static size_t free_n, free_cap;
static uint64_t next_id;

static uint64_t id_get(void)
{
    return free_n ? free_ids[--free_n] : next_id++;
}

static void id_put(uint64_t id)
{
    if (free_n == free_cap) {
        free_cap = free_cap ? free_cap * 2 : 4096;
        free_ids = realloc(free_ids, free_cap * sizeof *free_ids);
        if (!free_ids) {
            perror("kslab-record");
            exit(1);
        }
    }
    free_ids[free_n++] = id;
}

/* ---- the output stream ---------------------------------------------------- */
static FILE *out;
static struct kst_header hdr;
static uint64_t live, live_bytes;
static uint32_t cur_tid = UINT32_MAX;

static void emit(uint32_t tid, int op, int nargs, uint64_t a, uint64_t b)
{
    uint8_t buf[32];
    size_t n = 0;
    if (tid != cur_tid) {
        buf[n++] = KST_THREAD;
        n += kst_put(buf + n, tid);
        cur_tid = tid;
        hdr.records++;
    }
    buf[n++] = (uint8_t)op;
    if (nargs > 0)
        n += kst_put(buf + n, a);
    if (nargs > 1)
        n += kst_put(buf + n, b);
    fwrite(buf, 1, n, out);
    hdr.records++;
}

static void alloc_ev(uint32_t tid, int op, uint64_t ptr, uint64_t size, uint64_t align)
{
    uint64_t id = id_get(), oid, osize;
    if (take(ptr, &oid, &osize)) {      /* a pointer live twice: the free was not seen */
        id_put(oid);                    /* (freed by a path the recorder does not wrap) */
        live--;
        live_bytes -= osize;
    }
    put(ptr, id, size);
    if (op == KST_MEMALIGN)
        emit(tid, op, 2, align, size);
    else
        emit(tid, op, 1, size, 0);
    hdr.allocs++;
    live++;
    live_bytes += size;
    if (live > hdr.max_live)
        hdr.max_live = live;
    if (live_bytes > hdr.max_live_bytes)
        hdr.max_live_bytes = live_bytes;
}

/* ---- merging the raw chunks ----------------------------------------------- */
struct stream {
    uint32_t tid;
    uint64_t *chunks;           /* file offsets of this thread's chunks, in order */
    size_t nchunks, next_chunk, cap;
    struct kst_raw_ev *ev;      /* the current chunk */
    uint32_t n, i;
    int exited;
};
static struct stream *streams;
static uint32_t nstreams;
static int raw_fd;

static int load_chunk(struct stream *s)
{
    if (s->next_chunk == s->nchunks)
        return 0;
    struct kst_raw_chunk ch;
    uint64_t off = s->chunks[s->next_chunk++];
    if (pread(raw_fd, &ch, sizeof ch, (off_t)off) != (ssize_t)sizeof ch)
        return 0;
    size_t bytes = (size_t)ch.n * sizeof *s->ev;
    s->ev = realloc(s->ev, bytes ? bytes : 1);
    if (!s->ev || pread(raw_fd, s->ev, bytes, (off_t)(off + sizeof ch)) != (ssize_t)bytes)
        return 0;
    s->n = ch.n;
    s->i = 0;
    return 1;
}

static uint64_t head_seq(struct stream *s) { return s->ev[s->i].seq_op >> 8; }

/* a min-heap of the streams that have an event, by its sequence number */
static struct stream **heap;
static size_t heap_n;
static void heap_down(size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < heap_n && head_seq(heap[l]) < head_seq(heap[m]))
            m = l;
        if (l + 1 < heap_n && head_seq(heap[l + 1]) < head_seq(heap[m]))
            m = l + 1;
        if (m == i)
            return;
        struct stream *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static int convert(const char *raw, const char *path)
{
    raw_fd = open(raw, O_RDONLY);
    if (raw_fd < 0) {
        fprintf(stderr, "kslab-record: %s: %s\n", raw, strerror(errno));
        return -1;
    }
    /* pass 1: where each thread's chunks are */
    struct stat st;
    fstat(raw_fd, &st);
    uint64_t off = 0;
    while (off + sizeof(struct kst_raw_chunk) <= (uint64_t)st.st_size) {
        struct kst_raw_chunk ch;
        if (pread(raw_fd, &ch, sizeof ch, (off_t)off) != (ssize_t)sizeof ch ||
            ch.magic != RAW_CHUNK_MAGIC)
            break;
        if (ch.tid >= nstreams) {
            uint32_t nn = ch.tid + 1;
            streams = realloc(streams, nn * sizeof *streams);
            memset(streams + nstreams, 0, (nn - nstreams) * sizeof *streams);
            for (uint32_t t = nstreams; t < nn; t++)
                streams[t].tid = t;
            nstreams = nn;
        }
        struct stream *s = &streams[ch.tid];
        if (s->nchunks == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 16;
            s->chunks = realloc(s->chunks, s->cap * sizeof *s->chunks);
        }
        s->chunks[s->nchunks++] = off;
        off += sizeof ch + (uint64_t)ch.n * sizeof(struct kst_raw_ev);
    }
    out = fopen(path, "wb");
    if (!out) {
        fprintf(stderr, "kslab-record: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fwrite(&hdr, sizeof hdr, 1, out);   /* rewritten at the end */
    heap = calloc(nstreams + 1, sizeof *heap);
    for (uint32_t t = 0; t < nstreams; t++)
        if (load_chunk(&streams[t]) && streams[t].n)
            heap[heap_n++] = &streams[t];
    for (size_t i = heap_n; i-- > 0;)
        heap_down(i);
    /* the main thread is tid 0 (it allocated first): start the stream there */
    fputc(KST_THREAD, out);
    fputc(0, out);
    cur_tid = 0;
    hdr.records++;
    while (heap_n) {
        struct stream *s = heap[0];
        struct kst_raw_ev e = s->ev[s->i];
        unsigned op = (unsigned)(e.seq_op & 0xff);
        uint64_t id, size;
        switch (op) {
        case RAW_MALLOC: alloc_ev(s->tid, KST_MALLOC, e.ptr, e.size, 0); break;
        case RAW_CALLOC: alloc_ev(s->tid, KST_CALLOC, e.ptr, e.size, 0); break;
        case RAW_MEMALIGN: alloc_ev(s->tid, KST_MEMALIGN, e.ptr, e.size, e.aux); break;
        case RAW_FREE:
            if (take(e.ptr, &id, &size)) {
                emit(s->tid, KST_FREE, 1, id, 0);
                id_put(id);
                hdr.frees++;
                live--;
                live_bytes -= size;
            } else {
                hdr.unknown_frees++;
            }
            break;
        case RAW_REALLOC_START:
            /* the old pointer leaves the map now (it may be reused before the
             * realloc returns); its id travels in a side entry keyed by the
             * old pointer with the top bit set, until REALLOC_END */
            if (take(e.ptr, &id, &size)) {
                emit(s->tid, KST_REALLOC, 2, id, e.size);
                put(e.ptr | (1ull << 63), id, size);
                hdr.reallocs++;
            } else {
                hdr.unknown_frees++;        /* realloc of an unknown block: its result */
                put(e.ptr | (1ull << 63), UINT64_MAX, 0);  /* becomes a new object */
            }
            break;
        case RAW_REALLOC_END:
            if (take(e.aux | (1ull << 63), &id, &size)) {
                if (id == UINT64_MAX) {
                    if (e.ptr)
                        alloc_ev(s->tid, KST_MALLOC, e.ptr, e.size, 0);
                } else if (e.ptr) {
                    put(e.ptr, id, e.size);
                    live_bytes += e.size - size;
                    if (live_bytes > hdr.max_live_bytes)
                        hdr.max_live_bytes = live_bytes;
                } else {
                    put(e.aux, id, size);   /* failed: the old block stays */
                }
            }
            break;
        case RAW_THREAD_EXIT:
            s->exited = 1;
            break;
        }
        if (++s->i == s->n && !(load_chunk(s) && s->n)) {
            if (s->exited && s->tid != 0)
                emit(s->tid, KST_EXIT, 0, 0, 0), cur_tid = UINT32_MAX;
            heap[0] = heap[--heap_n];
        }
        heap_down(0);
    }
    fputc(KST_END, out);
    memcpy(hdr.magic, KST_MAGIC, 8);
    hdr.version = KST_VERSION;
    hdr.header_size = sizeof hdr;
    hdr.threads = nstreams ? nstreams : 1;
    rewind(out);
    fwrite(&hdr, sizeof hdr, 1, out);
    if (fclose(out) != 0) {
        fprintf(stderr, "kslab-record: writing %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(raw_fd);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "quiet", no_argument, 0, 'q' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *path = NULL;
    int quiet = 0, c;
    while ((c = getopt_long(argc, argv, "+o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': path = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!path || optind == argc) {
        usage(stderr);
        return 2;
    }
    const char *lib = find_lib();
    if (!lib) {
        fprintf(stderr, "kslab-record: libkslab-record.so not found (set KSLAB_RECORD_LIB)\n");
        return 1;
    }
    char raw[PATH_MAX];
    snprintf(raw, sizeof raw, "%s.raw", path);
    int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "kslab-record: %s: %s\n", raw, strerror(errno));
        return 1;
    }
    close(fd);
    size_t cl = 0;
    for (int i = optind; i < argc && cl < sizeof hdr.command - 1; i++)
        cl += (size_t)snprintf(hdr.command + cl, sizeof hdr.command - cl, "%s%s",
                               i > optind ? " " : "", argv[i]);
    pid_t pid = fork();
    if (pid < 0) {
        perror("kslab-record: fork");
        return 1;
    }
    if (pid == 0) {
        char pre[PATH_MAX * 2], pidbuf[16];
        const char *old = getenv("LD_PRELOAD");
        snprintf(pre, sizeof pre, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
        snprintf(pidbuf, sizeof pidbuf, "%d", (int)getpid());
        setenv("LD_PRELOAD", pre, 1);
        setenv("KSLAB_RECORD_RAW", raw, 1);
        setenv("KSLAB_RECORD_PID", pidbuf, 1);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "kslab-record: %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (convert(raw, path) != 0)
        return 1;
    unlink(raw);
    if (!quiet) {
        struct stat st;
        stat(path, &st);
        fprintf(stderr, "kslab-record: %s: %llu records (%llu allocations, %llu frees, %llu "
                "reallocs), %u thread(s), at most %llu objects / %llu bytes live, %llu frees of "
                "unrecorded blocks skipped; %lld bytes\n", path,
                (unsigned long long)hdr.records, (unsigned long long)hdr.allocs,
                (unsigned long long)hdr.frees, (unsigned long long)hdr.reallocs, hdr.threads,
                (unsigned long long)hdr.max_live, (unsigned long long)hdr.max_live_bytes,
                (unsigned long long)hdr.unknown_frees, (long long)st.st_size);
    }
    return rc;
}
