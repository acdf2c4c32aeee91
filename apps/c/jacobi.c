/* apps/c/jacobi.c: a user's own C MPI code with mheta's C API (mheta.h).
 *
 * Jacobi on the 2-D Laplace equation, N x N interior points, rows GEN_BLOCK,
 * boundary values from u = x^3 - 3xy^2 (harmonic, and exact for the
 * 5-point stencil, so the iterates converge to it). Each iteration: a halo
 * exchange with the nearest ranks that own rows, one stage (the update),
 * one allreduce. With --auto, mheta plans on the recorded iterations and
 * moves both arrays when the move pays.
 *
 *   mpicc -O2 -I capi/include apps/c/jacobi.c -L target/release -lmheta \
 *         -Wl,-rpath,$PWD/target/release -o jacobi-c
 *   MHETA_CLUSTER=het2 MHETA_PROFILE=p.json \
 *         mheta run -- mpirun -np 2 ./jacobi-c --n 2048 --iters 200 --auto
 *
 * Rank 0 prints one JSON line: the final distribution, checksum (sum of u),
 * max error against the exact solution before and after, verified (the
 * error did not grow: Jacobi is a max-norm contraction here), median
 * iteration times before and after the plan, and mheta's report.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mheta.h"

static double exact(double x, double y) { return x * x * x - 3.0 * x * y * y; }

static void die(const char *what) {
    fprintf(stderr, "jacobi-c: %s: %s\n", what, mheta_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    if (n <= 0) return 0.0;
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Global row g (0-based interior row; -1 and n are the boundary). */
static void boundary_row(double *row, long g, int n) {
    double h = 1.0 / (n + 1);
    for (int j = 0; j <= n + 1; j++) row[j] = exact(j * h, (g + 1) * h);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 1024, iters = 100, autoflag = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--auto")) autoflag = 1;
        else {
            if (rank == 0) fprintf(stderr, "jacobi-c: unknown argument %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (n < 2 || iters < 1) {
        if (rank == 0) fprintf(stderr, "jacobi-c: need --n >= 2 and --iters >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int w = n + 2;
    const double h = 1.0 / (n + 1);
    if (mheta_init("jacobi-c", (uint64_t)n, NULL)) die("mheta_init");
    int ids[2] = {mheta_array("u", w, 0, 1), mheta_array("unew", w, 0, 1)};
    if (ids[0] < 0 || ids[1] < 0) die("mheta_array");
    if (mheta_exchange(MHETA_HALO, MHETA_CONSTANT, 8 * (uint64_t)w, 2) ||
        mheta_exchange(MHETA_REDUCTION, MHETA_CONSTANT, 8, 1))
        die("mheta_exchange");
    /* Initial guess: 0 inside, the exact values on the side columns. */
    for (int a = 0; a < 2; a++) {
        double *u = mheta_data(ids[a]);
        long first = (long)mheta_first_row(), rows = (long)mheta_local_rows();
        for (long i = 0; i < rows; i++) {
            memset(u + i * w, 0, sizeof(double) * w);
            u[i * w] = exact(0.0, (first + i + 1) * h);
            u[i * w + n + 1] = exact((n + 1) * h, (first + i + 1) * h);
        }
    }
    double *top = malloc(sizeof(double) * w), *bot = malloc(sizeof(double) * w);
    uint64_t *dist = malloc(sizeof(uint64_t) * size);
    double *times = malloc(sizeof(double) * iters);
    if (!top || !bot || !dist || !times) MPI_Abort(MPI_COMM_WORLD, 2);
    double err0 = 0.0;
    for (int j = 1; j <= n; j++)
        for (int i = 0; i < n; i++) err0 = fmax(err0, fabs(exact(j * h, (i + 1) * h)));
    int cur = 0, planned_at = -1;
    for (int it = 0; it < iters; it++) {
        double t0 = MPI_Wtime();
        double *u = mheta_data(ids[cur]), *un = mheta_data(ids[1 - cur]);
        long first = (long)mheta_first_row(), rows = (long)mheta_local_rows();
        if (mheta_dist(dist)) die("mheta_dist");
        /* Nearest ranks that own rows. */
        int up = -1, down = -1;
        for (int r = rank - 1; r >= 0; r--)
            if (dist[r]) { up = r; break; }
        for (int r = rank + 1; r < size; r++)
            if (dist[r]) { down = r; break; }
        mheta_iteration_begin();
        double local = 0.0;
        if (rows > 0) {
            MPI_Request req[4];
            int nr = 0;
            if (up >= 0) {
                MPI_Irecv(top, w, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[nr++]);
                MPI_Isend(u, w, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, &req[nr++]);
            } else {
                boundary_row(top, first - 1, n);
            }
            if (down >= 0) {
                MPI_Irecv(bot, w, MPI_DOUBLE, down, 2, MPI_COMM_WORLD, &req[nr++]);
                MPI_Isend(u + (rows - 1) * w, w, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[nr++]);
            } else {
                boundary_row(bot, first + rows, n);
            }
            MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
            mheta_stage_begin();
            mheta_work_begin();
            for (long i = 0; i < rows; i++) {
                const double *a = i ? u + (i - 1) * w : top;
                const double *b = i + 1 < rows ? u + (i + 1) * w : bot;
                const double *m = u + i * w;
                double *o = un + i * w;
                o[0] = m[0];
                o[n + 1] = m[n + 1];
                for (int j = 1; j <= n; j++) {
                    o[j] = 0.25 * (a[j] + b[j] + m[j - 1] + m[j + 1]);
                    double d = o[j] - m[j];
                    local += d * d;
                }
            }
            mheta_work_end();
            mheta_stage_end();
        }
        double change;
        MPI_Allreduce(&local, &change, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        mheta_iteration_end();
        cur = 1 - cur;
        double t = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[it] = tmax;
        if (autoflag) {
            int moved = mheta_auto((uint64_t)it, (uint64_t)iters);
            if (moved < 0) die("mheta_auto");
            if (planned_at < 0 && strlen(mheta_report()) > 0) planned_at = it;
        }
    }
    /* The answer: max error and checksum over the final rows. */
    double *u = mheta_data(ids[cur]);
    long first = (long)mheta_first_row(), rows = (long)mheta_local_rows();
    double err = 0.0, sum = 0.0;
    for (long i = 0; i < rows; i++)
        for (int j = 1; j <= n; j++) {
            double x = u[i * w + j];
            err = fmax(err, fabs(x - exact(j * h, (first + i + 1) * h)));
            sum += x;
        }
    double gerr, gsum;
    MPI_Reduce(&err, &gerr, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (mheta_dist(dist)) die("mheta_dist");
    if (rank == 0) {
        /* Medians: before the plan (iterations 1.., the recorded ones
         * included), and after the move (skipping the one after it). */
        int split = planned_at >= 0 ? planned_at + 1 : iters;
        double before = median(times + 1, split - 1 > 0 ? split - 1 : 0);
        int from = planned_at >= 0 ? planned_at + 2 : iters;
        double after = from < iters ? median(times + from, iters - from) : 0.0;
        const char *rep = mheta_report();
        printf("{\"app\":\"jacobi-c\",\"n\":%d,\"iters\":%d,\"np\":%d,\"dist\":[", n, iters, size);
        for (int r = 0; r < size; r++) printf("%s%llu", r ? "," : "", (unsigned long long)dist[r]);
        printf("],\"checksum\":%.17g,\"error\":%.17g,\"initial_error\":%.17g,\"verified\":%s,"
               "\"iter_before_s\":%.9g,\"iter_after_s\":%.9g,\"auto\":%s}\n",
               gsum, gerr, err0, gerr <= err0 ? "true" : "false", before, after,
               strlen(rep) ? rep : "null");
    }
    free(top);
    free(bot);
    free(dist);
    free(times);
    mheta_finalize();
    MPI_Finalize();
    return 0;
}
