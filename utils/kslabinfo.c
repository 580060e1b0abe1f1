/* kslabinfo - a kslab process's slab caches, from the region it publishes
 * (kslab-publish.h): the /proc/slabinfo text, or a report in the spirit of
 * the kernel's tools/mm/slabinfo.  See --help. */
#define _GNU_SOURCE
#include "pubread.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kslabinfo [-p PID] [-i | -r NAME | -T] [-e] [-S]\n"
        "       kslabinfo -l\n"
        "Show the slab caches of a process running on kslab (linked, or through\n"
        "libkslab-malloc), read from the region it publishes in /dev/shm/kslab.PID.\n"
        "Without -p, the one process that publishes.\n"
        "  (default)       one line per cache: objects, object size, space, slabs,\n"
        "                  partial slabs, objects per slab, order, %%Fr (partial slabs of\n"
        "                  all), %%Ef (object bytes of the space), Loss (space not in\n"
        "                  live objects)\n"
        "  -i, --slabinfo  the /proc/slabinfo (version 2.1) text\n"
        "  -r, --report NAME  one cache in full: layout, slabs, loss, every counter\n"
        "  -T, --totals    totals over all caches, and where the process's memory is\n"
        "  -e, --empty     include caches that hold no slab\n"
        "  -S, --size      sort by space (default: by name)\n"
        "  -l, --list      the processes that publish (and remove dead ones' regions)\n"
        "  -h, --help      this text\n");
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct kslab_pub_cache *)a)->name,
                  ((const struct kslab_pub_cache *)b)->name);
}

static int by_space(const void *a, const void *b)
{
    uint64_t x = row_space(a), y = row_space(b);
    return x < y ? 1 : x > y ? -1 : by_name(a, b);
}

static void print_slabinfo(const struct pub_snap *s)
{
    printf("slabinfo - version: 2.1\n");
    printf("# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> "
           ": tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
           "<num_slabs> <sharedavail>\n");
    for (unsigned i = 0; i < s->n; i++) {
        const struct kslab_pub_cache *r = &s->rows[i];
        printf("%-17s %6llu %6llu %6u %4u %4u : tunables %4u %4u %4u : slabdata %6llu %6llu "
               "%6u\n", r->name, (unsigned long long)r->active_objs,
               (unsigned long long)r->num_objs, r->size, r->objects, 1u << r->order,
               r->tunables[0], r->tunables[1], r->tunables[2], (unsigned long long)r->num_slabs,
               (unsigned long long)r->num_slabs, r->tunables[3]);
    }
}

static void print_header(const struct pub_snap *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double age = ((double)ts.tv_sec * 1e9 + ts.tv_nsec - (double)s->h.update_ns) / 1e9;
    printf("pid %d: kslab %s, %s mode, snapshot %llu taken %.1f s ago (refresh %u ms)\n",
           s->h.pid, s->h.allocator, s->h.cpu_mode, (unsigned long long)s->h.updates,
           age < 0 ? 0 : age, s->h.interval_ms);
}

static void print_table(struct pub_snap *s, int empty, int size_sort)
{
    qsort(s->rows, s->n, sizeof *s->rows, size_sort ? by_space : by_name);
    print_header(s);
    printf("%-24s %9s %7s %8s %11s %4s %2s %4s %4s %8s\n", "Name", "Objects", "Objsize",
           "Space", "Slabs/Part", "O/S", "O", "%Fr", "%Ef", "Loss");
    for (unsigned i = 0; i < s->n; i++) {
        const struct kslab_pub_cache *r = &s->rows[i];
        if (!r->num_slabs && !empty)
            continue;
        char sp[16], loss[16], sl[24];
        uint64_t space = row_space(r), used = row_used(r);
        snprintf(sl, sizeof sl, "%llu/%llu", (unsigned long long)r->num_slabs,
                 (unsigned long long)r->partial_slabs);
        printf("%-24s %9llu %7u %8s %11s %4u %2u %4u %4u %8s\n", r->name,
               (unsigned long long)r->active_objs, r->object_size, pub_human(space, sp), sl,
               r->objects, r->order,
               r->num_slabs ? (unsigned)(100 * r->partial_slabs / r->num_slabs) : 0,
               space ? (unsigned)(100 * used / space) : 100,
               pub_human(space > used ? space - used : 0, loss));
    }
}

static void print_totals(const struct pub_snap *s)
{
    uint64_t objs = 0, slots = 0, slabs = 0, partial = 0, space = 0, used = 0, live = 0;
    for (unsigned i = 0; i < s->n; i++) {
        const struct kslab_pub_cache *r = &s->rows[i];
        objs += r->active_objs;
        slots += r->num_objs;
        slabs += r->num_slabs;
        partial += r->partial_slabs;
        space += row_space(r);
        used += row_used(r);
        live += r->num_slabs != 0;
    }
    char a[16], b[16], c[16];
    print_header(s);
    printf("Slabcache totals\n----------------\n");
    printf("Caches       %8u   in use %u (the others hold no slab)\n", s->n, (unsigned)live);
    printf("Objects      %8llu   of %llu slots (%.1f%% used)\n", (unsigned long long)objs,
           (unsigned long long)slots, slots ? 100.0 * objs / slots : 0.0);
    printf("Slabs        %8llu   partial %llu (%.1f%%)\n", (unsigned long long)slabs,
           (unsigned long long)partial, slabs ? 100.0 * partial / slabs : 0.0);
    printf("Memory       %8s   in live objects %s (%.1f%% efficient), loss %s\n",
           pub_human(space, a), pub_human(used, b), space ? 100.0 * used / space : 100.0,
           pub_human(space > used ? space - used : 0, c));
    printf("\nWhere the memory is (the page layer's counts)\n");
    printf("  slabs          %10s   peak %s\n", pub_human(s->h.slab_bytes, a),
           pub_human(s->h.pages_peak * 4096, b));
    printf("  large blocks   %10s   of them in pcp lists %s\n", pub_human(s->h.large_bytes, a),
           pub_human(s->h.pcp_bytes, b));
    printf("  hot reserve    %10s\n", pub_human(s->h.hot_bytes, a));
    printf("  huge blocks    %10s   cached for reuse %s\n", pub_human(s->h.huge_bytes, a),
           pub_human(s->h.huge_cached_bytes, b));
    printf("  arenas         %10s   address space, %llu mappings, %llu release failures\n",
           pub_human(s->h.arena_bytes, a), (unsigned long long)s->h.mappings,
           (unsigned long long)s->h.release_failures);
}

static int print_report(const struct pub_snap *s, const char *name)
{
    const struct kslab_pub_cache *r = NULL;
    for (unsigned i = 0; i < s->n && !r; i++)
        if (strcmp(s->rows[i].name, name) == 0)
            r = &s->rows[i];
    for (unsigned i = 0; i < s->n && !r; i++)      /* else the one the prefix names */
        if (strncmp(s->rows[i].name, name, strlen(name)) == 0)
            r = &s->rows[i];
    if (!r) {
        fprintf(stderr, "process %d has no cache named %s (kslabinfo -e -p %d lists them)\n",
                s->h.pid, name, s->h.pid);
        return 1;
    }
    char a[16], b[16], c[16];
    uint64_t space = row_space(r), used = row_used(r);
    print_header(s);
    printf("\nSlabcache: %-24s Aliases: -  Order: %2u  Objects: %llu\n", r->name, r->order,
           (unsigned long long)r->active_objs);
    printf("\nSizes (bytes)     Slabs              Memory\n");
    printf("------------------------------------------------\n");
    printf("Object : %7u  Total  : %7llu   Space  : %s\n", r->object_size,
           (unsigned long long)r->num_slabs, pub_human(space, a));
    printf("SlabObj: %7u  Partial: %7llu   Used   : %s (%.1f%%)\n", r->size,
           (unsigned long long)r->partial_slabs, pub_human(used, b),
           space ? 100.0 * used / space : 100.0);
    printf("SlabSiz: %7llu  Full   : %7llu   Loss   : %s (%.1f%%)\n",
           (unsigned long long)row_slab_bytes(r),
           (unsigned long long)(r->num_slabs - r->partial_slabs),
           pub_human(space > used ? space - used : 0, c),
           space ? 100.0 * (double)(space - (used < space ? used : space)) / space : 0.0);
    printf("Loss   : %7u  Slots  : %7llu   (per object: %u of metadata and padding)\n",
           r->size - r->object_size, (unsigned long long)r->num_objs, r->size - r->object_size);
    printf("Align  : flags 0x%08x  Objects per slab: %u  Free slots: %llu\n", r->flags,
           r->objects, (unsigned long long)(r->num_objs - r->active_objs));
    if (r->tunables[0] || r->tunables[1])
        printf("Tunables: limit %u batchcount %u sharedfactor %u sharedavail %u\n",
               r->tunables[0], r->tunables[1], r->tunables[2], r->tunables[3]);
    uint64_t allocs = r->events[0] + r->events[1], frees = r->events[2] + r->events[3];
    printf("\nSlab Perf Counter       Alloc     Free  %%Al  %%Fr\n");
    printf("--------------------------------------------------\n");
    printf("Fastpath          %9llu %9llu %4u %4u\n", (unsigned long long)r->events[0],
           (unsigned long long)r->events[2],
           allocs ? (unsigned)(100 * r->events[0] / allocs) : 0,
           frees ? (unsigned)(100 * r->events[2] / frees) : 0);
    printf("Slowpath          %9llu %9llu %4u %4u\n", (unsigned long long)r->events[1],
           (unsigned long long)r->events[3],
           allocs ? (unsigned)(100 * r->events[1] / allocs) : 0,
           frees ? (unsigned)(100 * r->events[3] / frees) : 0);
    printf("\nAll counters\n");
    for (int i = 0; i < KSLAB_PUB_EVENTS; i++)
        printf("  %-20s %12llu\n", pub_event_name(i), (unsigned long long)r->events[i]);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "pid", required_argument, 0, 'p' }, { "slabinfo", no_argument, 0, 'i' },
        { "report", required_argument, 0, 'r' }, { "totals", no_argument, 0, 'T' },
        { "empty", no_argument, 0, 'e' }, { "size", no_argument, 0, 'S' },
        { "list", no_argument, 0, 'l' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    int pid = -1, mode = 0, empty = 0, size_sort = 0, c;
    const char *report = NULL;
    while ((c = getopt_long(argc, argv, "p:ir:TeSlh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pid = atoi(optarg); break;
        case 'i': mode = 'i'; break;
        case 'r': mode = 'r'; report = optarg; break;
        case 'T': mode = 'T'; break;
        case 'e': empty = 1; break;
        case 'S': size_sort = 1; break;
        case 'l': mode = 'l'; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (mode == 'l') {
        int pids[4096];
        int n = pub_list(pids, 4096, 1);
        for (int i = 0; i < n && i < 4096; i++) {
            char comm[64] = "?", path[64];
            snprintf(path, sizeof path, "/proc/%d/comm", pids[i]);
            FILE *f = fopen(path, "r");
            if (f) {
                if (fgets(comm, sizeof comm, f))
                    comm[strcspn(comm, "\n")] = 0;
                fclose(f);
            }
            printf("%d\t%s\n", pids[i], comm);
        }
        return 0;
    }
    if (pid < 0 && (pid = pub_only_pid()) < 0)
        return 1;
    struct pub_map m;
    if (pub_open(pid, &m) != 0)
        return 1;
    struct pub_snap s = { 0 };
    int rc = pub_read(&m, &s);
    if (rc != 0) {
        if (rc == 1)
            fprintf(stderr, "process %d exited\n", pid);
        return 1;
    }
    rc = 0;
    if (mode == 'i')
        print_slabinfo(&s);
    else if (mode == 'r')
        rc = print_report(&s, report);
    else if (mode == 'T')
        print_totals(&s);
    else
        print_table(&s, empty, size_sort);
    pub_snap_free(&s);
    pub_close(&m);
    return rc;
}
