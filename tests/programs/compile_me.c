#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *next; int key; char name[24]; };
static int cmp(const void *a, const void *b) { return strcmp(a, b); }
int main(int argc, char **argv)
{
    struct node *head = NULL;
    for (int i = 0; i < argc * 1000; i++) {
        struct node *n = malloc(sizeof *n);
        n->key = i;
        snprintf(n->name, sizeof n->name, "n%d", i * 7919 % 1000);
        n->next = head;
        head = n;
    }
    char names[100][24];
    int k = 0;
    for (struct node *n = head; n && k < 100; n = n->next)
        strcpy(names[k++], n->name);
    qsort(names, (size_t)k, 24, cmp);
    printf("%s %s\n", names[0], names[k - 1]);
    return 0;
}
