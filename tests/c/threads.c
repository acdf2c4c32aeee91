/* MPI_THREAD_MULTIPLE: THREADS threads per rank each exchange MSGS
 * messages with the partner rank (tag = thread), inside one marked
 * iteration. mheta must record every one of them.
 * Usage: threads THREADS MSGS (even number of ranks) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "mheta_markers.h"

static int rank, partner, msgs;

static void *work(void *arg) {
    int t = (int)(long)arg;
    for (int m = 0; m < msgs; m++) {
        int out = rank * 1000000 + t * 1000 + m, in = -1;
        MPI_Request r[2];
        MPI_Irecv(&in, 1, MPI_INT, partner, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_INT, partner, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (in != partner * 1000000 + t * 1000 + m) { fprintf(stderr, "bad message\n"); MPI_Abort(MPI_COMM_WORLD, 4); }
        MPI_Send(&out, 1, MPI_INT, partner, 1000 + t, MPI_COMM_WORLD);
        MPI_Recv(&in, 1, MPI_INT, partner, 1000 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size % 2 || argc < 3) {
        if (rank == 0) fprintf(stderr, "need MPI_THREAD_MULTIPLE, an even rank count, and THREADS MSGS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int threads = atoi(argv[1]);
    msgs = atoi(argv[2]);
    partner = rank ^ 1;
    pthread_t *th = malloc(threads * sizeof(pthread_t));
    mheta_iteration_begin();
    for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    mheta_iteration_end();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("threads np=%d threads=%d msgs=%d ok\n", size, threads, msgs);
    MPI_Finalize();
    return 0;
}
