/* Every collective mheta wraps, blocking and non-blocking, with results
 * folded into a checksum that must not change under the interposer. */
#include <stdio.h>
#include <stdlib.h>
#include "mheta_markers.h"
#include "count.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    count_t *counts = malloc(size * sizeof(count_t));
    displ_t *displs = malloc(size * sizeof(displ_t));
    double *all = malloc(size * 4 * sizeof(double)), *all2 = malloc(size * 4 * sizeof(double));
    double mine[4], x[4], acc = 0.0;
    for (int i = 0; i < size; i++) { counts[i] = 4; displs[i] = 4 * i; }
    for (int it = 0; it < 6; it++) {
        MPI_Request r[14];
        mheta_iteration_begin();
        for (int k = 0; k < 4; k++) mine[k] = rank + 0.25 * k + it;
        MPI_Barrier(MPI_COMM_WORLD);
        x[0] = rank == 0 ? 42.0 + it : 0.0;
        MPI_Bcast(x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); acc += x[0];
        MPI_Reduce(mine, x, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); if (rank == 0) acc += x[3];
        MPI_Allreduce(mine, x, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); acc += x[2];
        MPI_Gather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD); if (rank == 0) acc += all[4 * size - 1];
        MPI_Gatherv(mine, 4, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD); if (rank == 0) acc += all[1];
        MPI_Scatter(all, 4, MPI_DOUBLE, x, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD); acc += x[1];
        MPI_Scatterv(all, counts, displs, MPI_DOUBLE, x, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD); acc += x[0];
        MPI_Allgather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD); acc += all[4 * size - 2];
        MPI_Allgatherv(mine, 4, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD); acc += all[5 % (4 * size)];
        MPI_Alltoall(all, 4, MPI_DOUBLE, all2, 4, MPI_DOUBLE, MPI_COMM_WORLD); acc += all2[3];
        MPI_Alltoallv(all, counts, displs, MPI_DOUBLE, all2, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD); acc += all2[2];
        MPI_Reduce_scatter(all, x, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); acc += x[1];
        MPI_Reduce_scatter_block(all, x, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); acc += x[0];
        double y[14][4];
        MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
        y[1][0] = rank == 0 ? 7.0 : 0.0;
        MPI_Ibcast(y[1], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[1]);
        MPI_Ireduce(mine, y[2], 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r[2]);
        MPI_Iallreduce(mine, y[3], 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[3]);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        acc += y[1][0] + y[3][1] + (rank == 0 ? y[2][0] : 0.0);
        MPI_Igather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[4]);
        MPI_Wait(&r[4], MPI_STATUS_IGNORE); if (rank == 0) acc += all[2];
        MPI_Igatherv(mine, 4, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[5]);
        MPI_Wait(&r[5], MPI_STATUS_IGNORE);
        MPI_Iscatter(all, 4, MPI_DOUBLE, x, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[6]);
        MPI_Wait(&r[6], MPI_STATUS_IGNORE); acc += x[3];
        MPI_Iscatterv(all, counts, displs, MPI_DOUBLE, x, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[7]);
        MPI_Wait(&r[7], MPI_STATUS_IGNORE); acc += x[2];
        MPI_Iallgather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD, &r[8]);
        MPI_Wait(&r[8], MPI_STATUS_IGNORE); acc += all[1];
        MPI_Iallgatherv(mine, 4, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &r[9]);
        MPI_Wait(&r[9], MPI_STATUS_IGNORE);
        MPI_Ialltoall(all, 4, MPI_DOUBLE, all2, 4, MPI_DOUBLE, MPI_COMM_WORLD, &r[10]);
        MPI_Wait(&r[10], MPI_STATUS_IGNORE); acc += all2[0];
        MPI_Ialltoallv(all, counts, displs, MPI_DOUBLE, all2, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &r[11]);
        MPI_Wait(&r[11], MPI_STATUS_IGNORE);
        MPI_Ireduce_scatter(all, x, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[12]);
        MPI_Wait(&r[12], MPI_STATUS_IGNORE); acc += x[0];
        MPI_Ireduce_scatter_block(all, x, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[13]);
        MPI_Wait(&r[13], MPI_STATUS_IGNORE); acc += x[1];
        mheta_iteration_end();
    }
    double total;
    MPI_Allreduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("collectives np=%d checksum=%.17g\n", size, total);
    MPI_Finalize();
    return 0;
}
