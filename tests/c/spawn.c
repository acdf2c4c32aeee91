/* MPI_Comm_spawn: a parent job of N ranks starts a child job of 1 rank,
 * which sends each parent rank its rank + 100 over the intercommunicator
 * and the parent checks it. Prints "spawn ok" on parent rank 0. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parent == MPI_COMM_NULL) {
        MPI_Comm child;
        int errs[1];
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child, errs);
        int got = -1;
        MPI_Recv(&got, 1, MPI_INT, 0, 7, child, MPI_STATUS_IGNORE);
        int ok = got == rank + 100, all;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        MPI_Comm_disconnect(&child);
        if (rank == 0) printf(all ? "spawn ok\n" : "spawn WRONG\n");
    } else {
        int np;
        MPI_Comm_remote_size(parent, &np);
        for (int r = 0; r < np; r++) {
            int v = r + 100;
            MPI_Send(&v, 1, MPI_INT, r, 7, parent);
        }
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return 0;
}
