/* A C program exercising the calls mheta's interposer wraps: a ring of
 * Isend/Irecv/Waitall, Sendrecv, Send/Recv, Mprobe/Mrecv, Wait and
 * Allreduce, with mheta's markers. Prints a checksum that must not change
 * when the interposer is loaded. */
#include <stdio.h>
#include <stdlib.h>
#include "mheta_markers.h"
#include "count.h"

#define N 1000

int main(int argc, char **argv) {
    int rank, size, it;
    double a[N], b[N], c[N], sum = 0.0, total = 0.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) a[i] = rank * N + i;
    for (it = 0; it < 6; it++) {
        MPI_Request req[2];
        MPI_Status st;
        MPI_Message msg;
        mheta_iteration_begin();
        MPI_Irecv(b, N, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(a, N, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        MPI_Sendrecv(b, N, MPI_DOUBLE, right, 2, c, N, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &st);
        if (rank % 2 == 0) {
            MPI_Send(c, 10, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
            MPI_Recv(c, 10, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 10, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(c, 10, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
            for (int i = 0; i < 10; i++) c[i] = b[i];
        }
        MPI_Request r;
        MPI_Isend(c, 5, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &r);
        MPI_Mprobe(left, 4, MPI_COMM_WORLD, &msg, &st);
        count_t count;
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        MPI_Mrecv(b, count, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        mheta_stage_begin();
        for (int i = 0; i < N; i++) a[i] = 0.5 * (a[i] + c[i]) + 1e-3 * b[i % 5];
        mheta_stage_end();
        sum = 0.0;
        for (int i = 0; i < N; i++) sum += a[i];
        MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        mheta_iteration_end();
    }
    MPI_Pcontrol(3); /* mpiP's report level: the summary writes this rank's report */
    if (rank == 0) printf("ring np=%d checksum=%.17g\n", size, total);
    MPI_Finalize();
    return 0;
}
