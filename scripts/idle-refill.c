/* What a rank's wait costs its next sweep: a five-point stencil sweep
 * (jacobi's stage, 2048 columns) on core CORE, timed once right after
 * the thread has waited GAP ms without touching memory (it reads the
 * clock in a loop, as a rank polling MPI for a late message does), for
 * each working set and gap, in rounds; the gaps' order turns with the
 * round. A gap of 0 is one sweep right after another. Prints one line a
 * measurement: round, working set (KiB of the two arrays), gap (ms), ns
 * of CPU time a point of the sweep (the median of SAMPLES sweeps). See
 * scripts/idle-refill.sh. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define COLS 2048
#define SAMPLES 7

static double clock_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One sweep of u into v; ns of CPU time a point. */
static double sweep(const double *u, double *v, long n) {
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (long i = COLS; i < n - COLS; i++)
        v[i] = 0.25 * (u[i - 1] + u[i + 1] + u[i - COLS] + u[i + COLS]);
    return (clock_s(CLOCK_THREAD_CPUTIME_ID) - t0) / (n - 2 * COLS) * 1e9;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: idle-refill CORE ROUNDS KIB[,KIB...] GAP_MS[,GAP_MS...]\n");
        return 2;
    }
    int core = atoi(argv[1]), rounds = atoi(argv[2]);
    long kibs[64];
    double gaps[64];
    int nk = 0, ng = 0;
    for (char *s = argv[3]; nk < 64 && *s; s++) {
        kibs[nk++] = strtol(s, &s, 10);
        if (!*s)
            break;
    }
    for (char *s = argv[4]; ng < 64 && *s; s++) {
        gaps[ng++] = strtod(s, &s);
        if (!*s)
            break;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("idle-refill: sched_setaffinity");
        return 1;
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nk; k++) {
            long rows = kibs[k] * 1024 / (2 * 8 * COLS);
            if (rows < 3)
                rows = 3;
            long n = rows * COLS;
            double *u = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
            if (!u || !v) {
                perror("idle-refill: malloc");
                return 1;
            }
            for (long i = 0; i < n; i++)
                u[i] = v[i] = (double)(i % 97);
            for (int w = 0; w < 3; w++)
                sweep(u, v, n);
            for (int j = 0; j < ng; j++) {
                double gap = gaps[(j + r) % ng] * 1e-3, ns[SAMPLES];
                for (int s = 0; s < SAMPLES; s++) {
                    sweep(v, u, n); /* the arrays just touched */
                    double until = clock_s(CLOCK_MONOTONIC) + gap;
                    while (clock_s(CLOCK_MONOTONIC) < until)
                        ;
                    ns[s] = sweep(u, v, n);
                }
                qsort(ns, SAMPLES, sizeof ns[0], by_value);
                printf("%d %ld %g %.4f\n", r, kibs[k], gaps[(j + r) % ng], ns[SAMPLES / 2]);
            }
            fflush(stdout);
            free(u);
            free(v);
        }
    return 0;
}
