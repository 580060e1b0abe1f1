/* runcmd.c - run a command, print its wall seconds, peak RSS (KiB) and CPU
 * seconds (user + system, the command's and its waited-for children's):
 * "seconds<TAB>maxrss<TAB>cpu".  The benchmark's stopwatch for whole
 * programs.  The CPU seconds leave out the time the command waited for a
 * CPU, which on a shared machine is other tenants' load, not the
 * allocator's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: runcmd CMD [ARGS...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int st;
    struct rusage ru;
    wait4(pid, &st, 0, &ru);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    printf("%.3f\t%ld\t%.3f\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, ru.ru_maxrss,
           cpu);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
