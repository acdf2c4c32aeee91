/* F, a rank's lost work rate on a shared core: the CPU time a point of a
 * five-point stencil sweep (jacobi's stage, 2048 columns) takes on core
 * CORE alone, and beside a spinner (a CPU-bound process with almost no
 * memory, what `mheta load --proc hog` runs) time-shared with it on the
 * same core. Per round and per working set, in the order given: alone,
 * beside the spinner, alone again (the control). Each measurement sweeps
 * for MS milliseconds of the sweeper's CPU time. Prints one line a
 * measurement: round, working set (KiB of the two arrays), what ran
 * (alone, beside, again), ns of CPU time a point, and the sweeper's
 * involuntary context switches in it. See scripts/refill-cost.sh. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COLS 2048

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("refill-cost: sched_setaffinity");
        exit(1);
    }
}

static long nivcsw(void) {
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_nivcsw;
}

/* ns of CPU time a point over sweeps of `rows` rows taking `ms` ms. */
static double measure(double *u, double *v, long rows, double ms, long *switches) {
    long n = rows * COLS, points = 0;
    long s0 = nivcsw();
    double t0 = cpu_s(), t;
    do {
        for (long i = COLS; i < n - COLS; i++)
            v[i] = 0.25 * (u[i - 1] + u[i + 1] + u[i - COLS] + u[i + COLS]);
        double *w = u;
        u = v;
        v = w;
        points += n - 2 * COLS;
    } while ((t = cpu_s()) - t0 < ms * 1e-3);
    *switches = nivcsw() - s0;
    return (t - t0) / points * 1e9;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: refill-cost CORE ROUNDS MS KIB...\n");
        return 2;
    }
    int core = atoi(argv[1]), rounds = atoi(argv[2]);
    double ms = atof(argv[3]);
    pin(core);
    for (int r = 0; r < rounds; r++)
        for (int k = 4; k < argc; k++) {
            long kib = atol(argv[k]);
            long rows = kib * 1024 / (2 * 8 * COLS);
            if (rows < 3)
                rows = 3;
            double *u = malloc(sizeof(double) * rows * COLS);
            double *v = malloc(sizeof(double) * rows * COLS);
            if (!u || !v) {
                perror("refill-cost: malloc");
                return 1;
            }
            for (long i = 0; i < rows * COLS; i++)
                u[i] = v[i] = (double)(i % 97);
            long sw;
            measure(u, v, rows, ms / 4, &sw); /* first touch, warm */
            double alone = measure(u, v, rows, ms, &sw);
            printf("%d %ld alone %.4f %ld\n", r, kib, alone, sw);
            pid_t hog = fork();
            if (hog == 0) {
                pin(core);
                for (volatile unsigned long x = 0;; x++)
                    ;
            }
            usleep(20000);
            double beside = measure(u, v, rows, ms, &sw);
            printf("%d %ld beside %.4f %ld\n", r, kib, beside, sw);
            kill(hog, SIGKILL);
            waitpid(hog, NULL, 0);
            double again = measure(u, v, rows, ms, &sw);
            printf("%d %ld again %.4f %ld\n", r, kib, again, sw);
            fflush(stdout);
            free(u);
            free(v);
        }
    return 0;
}
