/* kslabtop - slabtop for a process running on kslab: its slab caches, live,
 * from the region it publishes (kslab-publish.h).  See --help. */
#define _GNU_SOURCE
#include "pubread.h"

#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static char sort_key = 'o';

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kslabtop [-p PID] [-d SECONDS] [-s KEY] [-o]\n"
        "Show the slab caches of a process running on kslab, live, as slabtop does for the\n"
        "kernel, from the region the process publishes in /dev/shm/kslab.PID.  Without -p,\n"
        "the one process that publishes.\n"
        "  -p, --pid PID        the process to watch\n"
        "  -d, --delay SECONDS  refresh interval (default 3; fractions allowed)\n"
        "  -s, --sort KEY       sort by KEY (default o):\n"
        "        a active objects   b objects per slab   c cache size   l slabs\n"
        "        n name             o objects            p pages per slab\n"
        "        s object size      u utilization\n"
        "  -o, --once           print one screen and exit\n"
        "  -h, --help           this text\n"
        "Keys while running: a sort key above re-sorts, space refreshes, q quits.\n"
        "The process refreshes its region from its allocator's slow path every 100 ms\n"
        "(KSLAB_PUBLISH_MS); the header says how old the snapshot is.\n");
}

static uint64_t row_key(const struct kslab_pub_cache *r)
{
    switch (sort_key) {
    case 'a': return r->active_objs;
    case 'b': return r->objects;
    case 'c': return row_space(r);
    case 'l': return r->num_slabs;
    case 'p': return 1u << r->order;
    case 's': return r->size;
    case 'u': return r->num_objs ? 1000000 * r->active_objs / r->num_objs : 0;
    default: return r->num_objs;
    }
}

static int cmp_rows(const void *pa, const void *pb)
{
    const struct kslab_pub_cache *a = pa, *b = pb;
    if (sort_key == 'n')
        return strcmp(a->name, b->name);
    uint64_t x = row_key(a), y = row_key(b);
    return x < y ? 1 : x > y ? -1 : strcmp(a->name, b->name);
}

static void draw(struct pub_snap *s, int rows, int clear)
{
    uint64_t objs = 0, slots = 0, slabs = 0, full_slabs = 0, space = 0, used = 0;
    unsigned live = 0, minsz = ~0u, maxsz = 0;
    double sumsz = 0;
    for (unsigned i = 0; i < s->n; i++) {
        const struct kslab_pub_cache *r = &s->rows[i];
        objs += r->active_objs;
        slots += r->num_objs;
        slabs += r->num_slabs;
        full_slabs += r->num_slabs - r->partial_slabs;
        space += row_space(r);
        used += row_used(r);
        if (r->num_slabs) {
            live++;
            minsz = r->object_size < minsz ? r->object_size : minsz;
            maxsz = r->object_size > maxsz ? r->object_size : maxsz;
            sumsz += r->object_size;
        }
    }
    if (!live)
        minsz = 0;
    qsort(s->rows, s->n, sizeof *s->rows, cmp_rows);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double age = ((double)ts.tv_sec * 1e9 + ts.tv_nsec - (double)s->h.update_ns) / 1e9;
    char comm[64] = "?", path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", s->h.pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    if (clear)
        fputs("\033[H\033[2J", stdout);
    printf(" kslabtop - pid %d (%s): kslab %s, %s mode, snapshot %.1f s old, sort %c\n",
           s->h.pid, comm, s->h.allocator, s->h.cpu_mode, age < 0 ? 0 : age, sort_key);
    printf(" Active / Total Objects (%% used)    : %llu / %llu (%.1f%%)\n",
           (unsigned long long)objs, (unsigned long long)slots,
           slots ? 100.0 * objs / slots : 0.0);
    printf(" Active / Total Slabs (%% used)      : %llu / %llu (%.1f%%)\n",
           (unsigned long long)full_slabs, (unsigned long long)slabs,
           slabs ? 100.0 * full_slabs / slabs : 0.0);
    printf(" Active / Total Caches (%% used)     : %u / %u (%.1f%%)\n", live, s->n,
           s->n ? 100.0 * live / s->n : 0.0);
    printf(" Active / Total Size (%% used)       : %.2fK / %.2fK (%.1f%%)\n", used / 1024.0,
           space / 1024.0, space ? 100.0 * used / space : 0.0);
    printf(" Minimum / Average / Maximum Object : %.2fK / %.2fK / %.2fK\n", minsz / 1024.0,
           live ? sumsz / live / 1024.0 : 0.0, maxsz / 1024.0);
    printf("\n%8s %8s %4s %8s %7s %8s %10s %s\n", "OBJS", "ACTIVE", "USE", "OBJ SIZE", "SLABS",
           "OBJ/SLAB", "CACHE SIZE", "NAME");
    int left = rows > 0 ? rows - 9 : (int)s->n;
    for (unsigned i = 0; i < s->n && left > 0; i++, left--) {
        const struct kslab_pub_cache *r = &s->rows[i];
        printf("%8llu %8llu %3u%% %7.2fK %7llu %8u %9lluK %s\n", (unsigned long long)r->num_objs,
               (unsigned long long)r->active_objs,
               r->num_objs ? (unsigned)(100 * r->active_objs / r->num_objs) : 0, r->size / 1024.0,
               (unsigned long long)r->num_slabs, r->objects,
               (unsigned long long)(row_space(r) / 1024), r->name);
    }
    fflush(stdout);
}

static struct termios saved_tio;
static int tio_saved;

static void restore_tty(void)
{
    if (tio_saved)
        tcsetattr(0, TCSANOW, &saved_tio);
}

static void on_signal(int sig)
{
    restore_tty();
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pid", required_argument, 0, 'p' }, { "delay", required_argument, 0, 'd' },
        { "sort", required_argument, 0, 's' }, { "once", no_argument, 0, 'o' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    int pid = -1, once = 0, c;
    double delay = 3;
    while ((c = getopt_long(argc, argv, "p:d:s:oh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pid = atoi(optarg); break;
        case 'd': delay = atof(optarg); break;
        case 's':
            if (!optarg[0] || optarg[1] || !strchr("abclnopsu", optarg[0])) {
                fprintf(stderr, "kslabtop: unknown sort key '%s' (one of a b c l n o p s u)\n",
                        optarg);
                return 2;
            }
            sort_key = optarg[0];
            break;
        case 'o': once = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || delay < 0) {
        usage(stderr);
        return 2;
    }
    if (pid < 0 && (pid = pub_only_pid()) < 0)
        return 1;
    struct pub_map m;
    if (pub_open(pid, &m) != 0)
        return 1;
    struct pub_snap s = { 0 };
    int tty = !once && isatty(0) && isatty(1);
    /* One frame, one write: a terminal's stdout is line-buffered, and a
     * reader of the screen (a person, or tmux capture-pane) could otherwise
     * see the new header above the old frame's rows. */
    static char frame[1 << 16];
    if (!once)
        setvbuf(stdout, frame, _IOFBF, sizeof frame);
    if (tty && tcgetattr(0, &saved_tio) == 0) {
        struct termios t = saved_tio;
        t.c_lflag &= ~(unsigned)(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        tio_saved = tcsetattr(0, TCSANOW, &t) == 0;
        atexit(restore_tty);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
    }
    for (;;) {
        int rc = pub_read(&m, &s);
        if (rc == 1) {
            printf("\nprocess %d exited\n", pid);
            return 0;
        }
        if (rc < 0)
            return 1;
        int rows = 0;
        struct winsize ws;
        if (!once && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 10)
            rows = ws.ws_row;
        draw(&s, rows, !once);
        if (once)
            return 0;
        struct pollfd p = { .fd = 0, .events = POLLIN };
        int ms = (int)(delay * 1000);
        if (poll(&p, 1, ms) > 0 && (p.revents & POLLIN)) {
            char k;
            if (read(0, &k, 1) == 1) {
                if (k == 'q' || k == 'Q')
                    break;
                if (k >= 'A' && k <= 'Z')
                    k = (char)(k - 'A' + 'a');
                if (strchr("abclnopsu", k))
                    sort_key = k;
            } else if (!tty) {
                usleep((useconds_t)ms * 1000);   /* stdin at end of file: just wait */
            }
        }
    }
    pub_snap_free(&s);
    pub_close(&m);
    return 0;
}
