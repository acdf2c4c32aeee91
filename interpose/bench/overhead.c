/* Per-call cost of MPI calls, for mheta's interposer overhead benchmark.
 * Rank 0 and 1 ping-pong 8 bytes (ROUNDS round trips per batch), then each
 * rank calls MPI_Iprobe on nothing (CALLS per batch). With MARK=1 in the
 * environment the timed loops run inside a marked iteration (so the
 * recorder records them). Prints, on rank 0, the median over BATCHES of
 * "pingpong_rtt_ns iprobe_ns". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mheta_markers.h"

#define BATCHES 21
#define ROUNDS 2000
#define CALLS 20000

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rank, flag;
    char buf[8] = {0};
    double rtt[BATCHES], ip[BATCHES];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int mark = getenv("MARK") && atoi(getenv("MARK"));
    if (mark) mheta_iteration_begin();
    for (int w = 0; w < 2000; w++) { /* warm up */
        if (rank == 0) { MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        else if (rank == 1) { MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
    }
    for (int b = 0; b < BATCHES; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns();
        for (int r = 0; r < ROUNDS; r++) {
            if (rank == 0) { MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else if (rank == 1) { MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
        }
        rtt[b] = (now_ns() - t0) / ROUNDS;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (int c = 0; c < CALLS; c++) MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        ip[b] = (now_ns() - t0) / CALLS;
    }
    if (mark) mheta_iteration_end();
    qsort(rtt, BATCHES, sizeof(double), cmp);
    qsort(ip, BATCHES, sizeof(double), cmp);
    if (rank == 0) printf("%.2f %.2f\n", rtt[BATCHES / 2], ip[BATCHES / 2]);
    MPI_Finalize();
    return 0;
}
