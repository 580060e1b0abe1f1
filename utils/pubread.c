/* pubread.c - see pubread.h */
#define _GNU_SOURCE
#include "pubread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pub_alive(int pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int pub_open(int pid, struct pub_map *m)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/kslab.%d", pid);
    memset(m, 0, sizeof *m);
    m->pid = pid;
    m->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (m->fd < 0) {
        if (!pub_alive(pid))
            fprintf(stderr, "no process %d\n", pid);
        else if (errno == ENOENT)
            fprintf(stderr, "process %d publishes no kslab slabinfo (%s missing): it does not "
                    "run on kslab, has not allocated yet, or runs with KSLAB_PUBLISH=0\n", pid,
                    path);
        else
            fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

void pub_close(struct pub_map *m)
{
    if (m->map)
        munmap(m->map, m->bytes);
    if (m->fd >= 0)
        close(m->fd);
    m->map = NULL;
    m->fd = -1;
}

int pub_read(struct pub_map *m, struct pub_snap *s)
{
    struct stat st;
    if (!pub_alive(m->pid))
        return 1;
    if (fstat(m->fd, &st) != 0 || st.st_nlink == 0)
        return 1;                   /* removed: the process exited */
    if ((size_t)st.st_size != m->bytes) {
        if (m->map)
            munmap(m->map, m->bytes);
        m->map = NULL;
        m->bytes = (size_t)st.st_size;
        if (m->bytes < sizeof(struct kslab_pub_header))
            return -1;
        m->map = mmap(NULL, m->bytes, PROT_READ, MAP_SHARED, m->fd, 0);
        if (m->map == MAP_FAILED) {
            m->map = NULL;
            return -1;
        }
    }
    if (s->cap < m->bytes) {
        free(s->buf);
        s->buf = malloc(m->bytes);
        s->cap = s->buf ? m->bytes : 0;
        if (!s->buf)
            return -1;
    }
    /* The writer may be preempted half-way through an update (its sequence
     * odd) for longer than 1000 quick attempts last: a loaded machine, or a
     * writer under ThreadSanitizer (kslabtop once quit on "no stable
     * snapshot" in a CI run).  Up to 200 rounds, a millisecond apart. */
    long n = -1;
    for (int round = 0; round < 200 && n < 0; round++) {
        if (round)
            usleep(1000);
        n = kslab_pub_snapshot(m->map, m->bytes, s->buf, s->cap, 1000);
    }
    if (n <= 0) {
        fprintf(stderr, "process %d: %s\n", m->pid, n == 0 ? "not a kslab region of version "
                "1" : "no stable snapshot (the writer kept writing)");
        return -1;
    }
    const struct kslab_pub_header *h = s->buf;
    memset(&s->h, 0, sizeof s->h);
    memcpy(&s->h, h, h->header_size < sizeof s->h ? h->header_size : sizeof s->h);
    size_t rsz = h->row_size, hsz = h->header_size;
    unsigned rows = h->nr_rows;
    if ((size_t)n < hsz)
        rows = 0;
    else if (rows > ((size_t)n - hsz) / rsz)
        rows = (unsigned)(((size_t)n - hsz) / rsz);
    free(s->rows);
    s->rows = calloc(rows + 1, sizeof *s->rows);
    if (!s->rows)
        return -1;
    for (unsigned i = 0; i < rows; i++)
        memcpy(&s->rows[i], (char *)s->buf + hsz + i * rsz,
               rsz < sizeof *s->rows ? rsz : sizeof *s->rows);
    s->n = rows;
    return 0;
}

void pub_snap_free(struct pub_snap *s)
{
    free(s->buf);
    free(s->rows);
    memset(s, 0, sizeof *s);
}

int pub_list(int *pids, int max, int remove_stale)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        char tail;
        if (sscanf(e->d_name, "kslab.%d%c", &pid, &tail) != 1)
            continue;
        if (!pub_alive(pid)) {
            if (remove_stale) {
                char path[300];
                snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
                if (unlink(path) == 0)
                    fprintf(stderr, "removed %s: process %d is gone\n", path, pid);
            }
            continue;
        }
        if (n < max)
            pids[n] = pid;
        n++;
    }
    closedir(d);
    return n;
}

int pub_only_pid(void)
{
    int pids[2];
    int n = pub_list(pids, 2, 0);
    if (n == 1)
        return pids[0];
    fprintf(stderr, n ? "several processes publish kslab slabinfo: pick one with -p PID "
                        "(kslabinfo -l lists them)\n"
                      : "no process publishes kslab slabinfo: give -p PID\n");
    return -1;
}

static const char *const event_names[KSLAB_PUB_EVENTS] = {
    "alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath", "free_frozen",
    "free_add_partial", "free_remove_partial", "alloc_from_partial", "alloc_slab",
    "alloc_refill", "free_slab", "cpuslab_flush", "deactivate_full", "deactivate_empty",
    "deactivate_partial", "cmpxchg_double_fail", "cpu_partial_alloc", "cpu_partial_free",
    "cpu_partial_drain", "alloc_sheaf", "free_sheaf", "sheaf_flush", "barn_put", "barn_get",
};

const char *pub_event_name(int i)
{
    return i >= 0 && i < KSLAB_PUB_EVENTS ? event_names[i] : "?";
}

const char *pub_human(uint64_t b, char buf[16])
{
    if (b < 10240)
        snprintf(buf, 16, "%lluB", (unsigned long long)b);
    else if (b < 10ull << 20)
        snprintf(buf, 16, "%.1fK", b / 1024.0);
    else if (b < 10ull << 30)
        snprintf(buf, 16, "%.1fM", b / 1048576.0);
    else
        snprintf(buf, 16, "%.1fG", b / 1073741824.0);
    return buf;
}
