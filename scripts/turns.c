/* A time-shared core's turns, seen from a polling rank: a thread that
 * reads the clock in a loop on core CORE beside HOGS spinners pinned to
 * the same core, for SECONDS. Every gap between two readings longer than
 * 20 us is a turn away (the thread was off the core). Prints one line:
 * spinners, seconds, turns away, their total, their sum of squares (s,
 * s^2). See scripts/turns.sh. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("turns: sched_setaffinity");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: turns CORE SECONDS HOGS\n");
        return 2;
    }
    int core = atoi(argv[1]), hogs = atoi(argv[3]);
    double secs = atof(argv[2]);
    pid_t pid[16];
    if (hogs < 0 || hogs > 16) {
        fprintf(stderr, "turns: HOGS must be 0 to 16\n");
        return 2;
    }
    pin(core);
    for (int i = 0; i < hogs; i++)
        if ((pid[i] = fork()) == 0) {
            for (volatile unsigned long x = 0;; x++)
                ;
        }
    usleep(50000);
    double t0 = now(), last = t0, t, sum = 0, sum2 = 0;
    long n = 0;
    do {
        t = now();
        double gap = t - last;
        if (gap > 20e-6) {
            n++;
            sum += gap;
            sum2 += gap * gap;
        }
        last = t;
    } while (t - t0 < secs);
    for (int i = 0; i < hogs; i++) {
        kill(pid[i], SIGKILL);
        waitpid(pid[i], NULL, 0);
    }
    printf("%d %.6f %ld %.9f %.12f\n", hogs, t - t0, n, sum, sum2);
    return 0;
}
