/* How long a window must be for two cores' speeds to compare: one
 * sweeper pinned to each of cores 0 and 1, both at once, each timing every
 * sweep of a 512 x 2048 five-point stencil (jacobi's in-core stage, 16
 * MiB) in its thread's CPU time for SECONDS seconds. Prints one line per
 * sweep: core, start (s from the start, wall clock), CPU ms of the sweep.
 * See scripts/core-windows.sh, which reads the lines. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROWS 512
#define COLS 2048
#define MAX_SWEEPS 2000000

static double clock_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct sweeper {
    int core;
    double seconds, t0;
    int n;
    double *start, *cpu_ms;
};

static void *sweep(void *p) {
    struct sweeper *s = p;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->core, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("core-windows: sched_setaffinity");
        exit(1);
    }
    double *u = malloc(sizeof(double) * ROWS * COLS), *v = malloc(sizeof(double) * ROWS * COLS);
    if (!u || !v) {
        perror("core-windows: malloc");
        exit(1);
    }
    for (int i = 0; i < ROWS * COLS; i++) {
        u[i] = i % 7;
        v[i] = 0;
    }
    s->n = 0;
    while (clock_s(CLOCK_MONOTONIC) - s->t0 < s->seconds && s->n < MAX_SWEEPS) {
        double w = clock_s(CLOCK_MONOTONIC), c = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 1; i < ROWS - 1; i++)
            for (int j = 1; j < COLS - 1; j++)
                v[i * COLS + j] = 0.25 * (u[(i - 1) * COLS + j] + u[(i + 1) * COLS + j] +
                                          u[i * COLS + j - 1] + u[i * COLS + j + 1]);
        double *t = u;
        u = v;
        v = t;
        s->start[s->n] = w - s->t0;
        s->cpu_ms[s->n] = (clock_s(CLOCK_THREAD_CPUTIME_ID) - c) * 1e3;
        s->n++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 || atof(argv[1]) <= 0) {
        fprintf(stderr, "usage: core-windows SECONDS\n");
        return 2;
    }
    struct sweeper s[2];
    pthread_t th[2];
    double t0 = clock_s(CLOCK_MONOTONIC);
    for (int k = 0; k < 2; k++) {
        s[k] = (struct sweeper){.core = k, .seconds = atof(argv[1]), .t0 = t0};
        s[k].start = malloc(sizeof(double) * MAX_SWEEPS);
        s[k].cpu_ms = malloc(sizeof(double) * MAX_SWEEPS);
        pthread_create(&th[k], NULL, sweep, &s[k]);
    }
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < s[k].n; i++)
            printf("%d %.6f %.6f\n", k, s[k].start[i], s[k].cpu_ms[i]);
    return 0;
}
