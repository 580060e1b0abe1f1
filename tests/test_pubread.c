/* test_pubread.c - the tools' reader (utils/pubread.c) waits out a writer
 * that is preempted half-way through an update: a region whose sequence
 * stays odd for 30 ms (a loaded machine, or a writer under ThreadSanitizer)
 * still gives a snapshot, where 1000 quick attempts alone gave up and
 * kslabtop quit ("no stable snapshot").  A region that stays odd for ever
 * is still an error, not a hang.  The region is a fake one of this process
 * (which does not run on kslab), at /dev/shm/kslab.<pid>; a child process
 * plays the writer. */
#define _GNU_SOURCE
#include "check.h"
#include "pubread.h"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct kslab_pub_header *hdr;

int main(void)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/kslab.%d", (int)getpid());
    size_t bytes = 4096;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)bytes) == 0);
    hdr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(hdr != MAP_FAILED);
    memcpy(hdr->magic, KSLAB_PUB_MAGIC, 8);
    hdr->version = KSLAB_PUB_VERSION;
    hdr->header_size = sizeof *hdr;
    hdr->row_size = sizeof(struct kslab_pub_cache);
    hdr->nr_rows = 0;
    hdr->seq = 1;                               /* an update in progress */

    struct pub_map m;
    struct pub_snap s = { 0 };
    CHECK(pub_open((int)getpid(), &m) == 0);
    /* the writer: another process, as in real use (and out of a race
     * detector's sight, as there) */
    pid_t w = fork();
    CHECK(w >= 0);
    if (w == 0) {
        usleep(30000);
        /* release: the writer's end of the update (kslab-publish.h) */
        __atomic_store_n(&hdr->seq, 2, __ATOMIC_RELEASE);
        _exit(0);
    }
    CHECK_EQ(pub_read(&m, &s), 0);              /* waited for the writer */
    int st;
    CHECK(waitpid(w, &st, 0) == w && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(s.n, 0);

    __atomic_store_n(&hdr->seq, 3, __ATOMIC_RELEASE);   /* odd for ever */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK_EQ(pub_read(&m, &s), -1);             /* an error, in bounded time */
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK(b.tv_sec - a.tv_sec < 5);

    pub_snap_free(&s);
    pub_close(&m);
    munmap(hdr, bytes);
    close(fd);
    unlink(path);
    return check_done();
}
