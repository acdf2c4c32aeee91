/* How much the CPU time of one and the same piece of work varies on this
 * machine: the noise floor under every in-core point of `mheta
 * experiment`. See scripts/cpu-noise.sh.
 *
 * Pinned to core CORE, it sweeps a ROWS x 2048 five-point stencil (two
 * arrays of doubles, the shape of jacobi's in-core stage; 512 rows are 16
 * MiB, beyond a core's L2) REPS times and times each sweep in this
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID, so waiting for the core does
 * not count), then prints the min, p10, median, p90 and max in ms and
 * p90 / p10. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int by_value(const void *x, const void *y) {
    double d = *(const double *)x - *(const double *)y;
    return d < 0 ? -1 : d > 0;
}
int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: cpu-noise ROWS REPS CORE LABEL\n");
        return 2;
    }
    const int rows = atoi(argv[1]), reps = atoi(argv[2]), core = atoi(argv[3]), n = 2048;
    if (rows < 1 || reps < 10) {
        fprintf(stderr, "cpu-noise: ROWS >= 1 and REPS >= 10\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        perror("cpu-noise: sched_setaffinity");
        return 1;
    }
    const long cells = (long)(rows + 2) * n;
    double *a = malloc(sizeof(double) * cells), *b = malloc(sizeof(double) * cells);
    double *t = malloc(sizeof(double) * reps);
    if (!a || !b || !t) {
        fprintf(stderr, "cpu-noise: out of memory\n");
        return 1;
    }
    for (long i = 0; i < cells; i++) {
        a[i] = (double)(i % 7);
        b[i] = 0.0;
    }
    for (int r = 0; r < reps; r++) {
        const double t0 = cpu();
        for (int i = 1; i <= rows; i++)
            for (int j = 1; j < n - 1; j++)
                b[(long)i * n + j] = 0.25 * (a[(long)(i - 1) * n + j] + a[(long)(i + 1) * n + j] +
                                             a[(long)i * n + j - 1] + a[(long)i * n + j + 1]);
        double *s = a;
        a = b;
        b = s;
        t[r] = cpu() - t0;
    }
    qsort(t, reps, sizeof(double), by_value);
    const double p10 = t[reps / 10], p90 = t[reps * 9 / 10];
    printf("%-12s %5d %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f\n", argv[4], core, t[0] * 1e3, p10 * 1e3,
           t[reps / 2] * 1e3, p90 * 1e3, t[reps - 1] * 1e3, p90 / p10);
    return 0;
}
