/* seed000.c - seed 000's slabinfo experiment: allocate the seed's own
 * active-object counts in kmalloc-32 ... kmalloc-512, then print those caches'
 * slabinfo rows (tab-separated: label, name, active_objs, num_objs, objsize,
 * objperslab, pagesperslab, num_slabs).  Run with KSLAB_ALLOCATOR=slab,
 * KSLAB_SLAB_INDEX=int (the "before") and KSLAB_ALLOCATOR=slub. */
#include <kslab.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; unsigned size, count; } rows[] = {
    { "kmalloc-32", 32, 11200 }, { "kmalloc-64", 64, 2773 }, { "kmalloc-96", 96, 750 },
    { "kmalloc-128", 128, 660 }, { "kmalloc-192", 192, 1040 }, { "kmalloc-256", 256, 210 },
    { "kmalloc-512", 512, 527 },
};

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[argc - 1] : kslab_allocator_name();
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    size_t n = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        n += rows[i].count;
    void **objs = malloc(n * sizeof *objs);
    size_t k = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (unsigned j = 0; j < (quick ? 10 : rows[i].count); j++)
            objs[k++] = kmalloc(rows[i].size, GFP_KERNEL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kslab_slabinfo(f);
    fclose(f);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char key[40];
        snprintf(key, sizeof key, "\n%s ", rows[i].name);
        char *line = strstr(buf, key);
        unsigned long act, num, osz, per, pages, l, b, sf, as, ns;
        if (line && sscanf(line + strlen(key), "%lu %lu %lu %lu %lu : tunables %lu %lu %lu : slabdata %lu %lu",
                           &act, &num, &osz, &per, &pages, &l, &b, &sf, &as, &ns) == 10)
            printf("%s\t%s\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\n", label, rows[i].name, act, num, osz,
                   per, pages, ns);
    }
    free(buf);
    while (k)
        kfree(objs[--k]);
    free(objs);
    return 0;
}
