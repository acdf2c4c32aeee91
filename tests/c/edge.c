/* Valid MPI programs' corner cases that a PMPI tool must pass through
 * unharmed: intercommunicator collectives with MPI_ROOT and MPI_PROC_NULL
 * roots, MPI_IN_PLACE with MPI_DATATYPE_NULL for the ignored arguments,
 * zero counts, MPI_COMM_SELF, dup'ed, split and freed communicators,
 * MPI_STATUS(ES)_IGNORE, MPI_REQUEST_NULL, persistent requests,
 * MPI_ANY_SOURCE, and a receive whose communicator is freed before it
 * completes. Rank 0 prints one line of results per rank, so that
 * runs with and without the interposer can be compared. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long check = 0;

    /* MPI_IN_PLACE with the ignored arguments as MPI_DATATYPE_NULL. */
    int all[64];
    for (int i = 0; i < size; i++) all[i] = (i == rank) ? rank * 10 + 1 : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) check += all[i];
    int counts[64], displs[64];
    for (int i = 0; i < size; i++) { counts[i] = 1; displs[i] = i; all[i] = (i == rank) ? rank + 5 : 0; }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) check += all[i];
    int v = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check += v;
    for (int i = 0; i < size; i++) all[i] = rank * 100 + i;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) check += all[i];
    int g[64] = {0};
    g[rank] = rank + 7;
    if (rank == 0)
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else
        MPI_Gather(&g[rank], 1, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    if (rank == 0) for (int i = 0; i < size; i++) check += g[i];
    if (rank == 0)
        MPI_Scatter(g, 1, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    else
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, &v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    check += v;

    /* Zero counts, MPI_COMM_SELF, MPI_STATUS(ES)_IGNORE, MPI_REQUEST_NULL. */
    MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    MPI_Sendrecv(&rank, 1, MPI_INT, 0, 3, &v, 1, MPI_INT, 0, 3, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    check += v;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);

    /* Dup'ed, split and freed communicators; a peer of MPI_ANY_SOURCE. */
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(dup, rank % 2, -rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    int right = (hr + 1) % hs, got = -1;
    MPI_Request r;
    MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 9, half, &r);
    MPI_Send(&rank, 1, MPI_INT, right, 9, half);
    MPI_Status st;
    MPI_Wait(&r, &st);
    check += got * 3 + st.MPI_SOURCE;
    MPI_Bcast(&got, 1, MPI_INT, hs - 1, half);
    check += got;

    /* Persistent requests around the split ring. */
    int out = rank, in = -1;
    MPI_Request pr[2];
    MPI_Recv_init(&in, 1, MPI_INT, MPI_ANY_SOURCE, 11, half, &pr[0]);
    MPI_Send_init(&out, 1, MPI_INT, right, 11, half, &pr[1]);
    for (int k = 0; k < 3; k++) {
        MPI_Startall(2, pr);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        check += in;
        out += 1;
        MPI_Start(&pr[0]);
        MPI_Send(&out, 1, MPI_INT, right, 11, half);
        MPI_Wait(&pr[0], MPI_STATUS_IGNORE);
        check += in;
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    /* A receive still pending when the program frees its communicator
     * (MPI keeps it until the receive completes): rank 1 frees it before
     * rank 0 sends, and new communicators made before the wait may take
     * the freed one's handle. The ranks run backwards in it, so rank 0
     * is its last rank. */
    if (size >= 2) {
        MPI_Comm rev;
        MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
        int pend = -1, ahead = 4711;
        MPI_Request rq = MPI_REQUEST_NULL;
        if (rank == 1) MPI_Irecv(&pend, 1, MPI_INT, MPI_ANY_SOURCE, 13, rev, &rq);
        if (rank != 0) MPI_Comm_free(&rev);
        MPI_Comm later[3];
        for (int k = 0; k < 3; k++) MPI_Comm_dup(MPI_COMM_WORLD, &later[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Ssend(&ahead, 1, MPI_INT, size - 2, 13, rev);
            MPI_Comm_free(&rev);
        }
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        for (int k = 0; k < 3; k++) MPI_Comm_free(&later[k]);
        check += pend * 7;
    }

    /* An intercommunicator between the even and the odd ranks: rooted
     * collectives with MPI_ROOT, MPI_PROC_NULL and a remote root. */
    if (size >= 2) {
        MPI_Comm local, inter;
        int color = rank % 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color ? 0 : 1, 5, &inter);
        int lr;
        MPI_Comm_rank(local, &lr);
        int x = (color == 0 && lr == 0) ? 4242 : -1;
        int root = color == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(&x, 1, MPI_INT, root, inter);
        if (color == 1) check += x;
        int sum = 0, mine = rank + 1;
        MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, root, inter);
        if (color == 0 && lr == 0) check += sum;
        int rsize;
        MPI_Comm_remote_size(inter, &rsize);
        int gath[64] = {0};
        MPI_Gather(&mine, 1, MPI_INT, gath, 1, MPI_INT, root, inter);
        if (color == 0 && lr == 0) for (int i = 0; i < rsize; i++) check += gath[i] * (i + 1);
        int a2a_s[64], a2a_r[64];
        for (int i = 0; i < rsize; i++) a2a_s[i] = rank * 1000 + i;
        MPI_Alltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, inter);
        for (int i = 0; i < rsize; i++) check += a2a_r[i];
        MPI_Barrier(inter);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }

    long checks[64];
    MPI_Gather(&check, 1, MPI_LONG, checks, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size; i++) printf("rank %d check %ld\n", i, checks[i]);
    MPI_Finalize();
    return 0;
}
