/* An MPI program whose calls go past mheta's interposer: it initialises
 * and communicates through the profiling names (PMPI_*) alone, as a
 * binding the interposer does not wrap would. It must run as without
 * mheta, and each rank be told at exit that none of its calls were seen. */
#include <stdio.h>
#include <mpi.h>

int main(int argc, char **argv) {
    int rank, np, x;
    PMPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &np);
    PMPI_Allreduce(&rank, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("unseen np=%d sum=%d\n", np, x);
    PMPI_Finalize();
    return 0;
}
