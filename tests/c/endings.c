/* Bad endings for mheta's summary profiler. Every rank makes 10 sends and
 * 10 receives with its partner, then:
 *   endings abort  - rank 1 calls MPI_Abort;
 *   endings sleep  - rank 0 prints "ready" and every rank sleeps (to be
 *                    killed with SIGTERM). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>

int main(int argc, char **argv) {
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 10; i++) {
        if (rank == 0) { MPI_Send(&i, 1, MPI_INT, 1, 0, MPI_COMM_WORLD); MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        else if (rank == 1) { MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD); }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 3);
        sleep(30);
    } else {
        if (rank == 0) { printf("ready\n"); fflush(stdout); }
        sleep(60);
    }
    MPI_Finalize();
    return 0;
}
