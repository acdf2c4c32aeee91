/* MPI-4's MPI_Isendrecv, MPI_Isendrecv_replace, persistent collectives and
 * partitioned point-to-point
 * for mheta's interposer, in marked iterations, with results folded into a
 * checksum that must not change under the interposer. Built with -DMPI4 it
 * calls them; built without, it does the same exchanges with their MPI-3
 * forms (MPI_Irecv + MPI_Isend + MPI_Waitall; MPI_Ibcast, ...), so that
 * the two builds must print the same checksum and the model must read the
 * same steps from their traces. Per iteration, in this order: a ring
 * exchange of 16 doubles (to the right, from the left, tag 7); a swap in
 * place of 4 doubles (to the left, from the right, tag 9); MPI_Barrier,
 * MPI_Bcast from rank 1 (6 doubles), MPI_Reduce to rank 0 (3 doubles),
 * MPI_Allgather (2 doubles), MPI_Alltoall (2 doubles a rank), each waited
 * for on its own; then MPI_Allreduce (5 doubles) and MPI_Neighbor_alltoall
 * on a 1-D periodic Cartesian ring (8 doubles a neighbour), begun together
 * (MPI_Startall) and waited for together; then a partitioned ring exchange
 * (PARTS partitions of PART doubles, to the right, from the left, tag 11;
 * each partition made ready on its own), set up once and started and
 * waited for together (without -DMPI4: MPI_Send_init and MPI_Recv_init of
 * the whole buffer). */
#include <stdio.h>
#include <stdlib.h>
#include "mheta_markers.h"

enum { RING = 16, SWAP = 4, BC = 6, RD = 3, AG = 2, A2A = 2, AR = 5, NB = 8, NREQ = 7,
       PARTS = 4, PART = 3 };

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size, periodic = 1;
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &p, &periodic, 0, &ring);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double out[RING], in[RING], swap[SWAP], bc[BC], rd[RD], rdo[RD], ag[AG], ago[AG * 64];
    double *a2a = calloc(A2A * size, sizeof(double)), *a2ao = calloc(A2A * size, sizeof(double));
    double ar[AR], aro[AR], nb[2 * NB], nbo[2 * NB];
    MPI_Request r[NREQ], pr[2];
    double pout[PARTS * PART], pin[PARTS * PART];
    (void)r;
#ifdef MPI4
    /* Set up once, started every iteration. */
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
    MPI_Bcast_init(bc, BC, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
    MPI_Reduce_init(rd, rdo, RD, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r[2]);
    MPI_Allgather_init(ag, AG, MPI_DOUBLE, ago, AG, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &r[3]);
    MPI_Alltoall_init(a2a, A2A, MPI_DOUBLE, a2ao, A2A, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL,
                      &r[4]);
    MPI_Allreduce_init(ar, aro, AR, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[5]);
    MPI_Neighbor_alltoall_init(nb, NB, MPI_DOUBLE, nbo, NB, MPI_DOUBLE, ring, MPI_INFO_NULL, &r[6]);
    MPI_Precv_init(pin, PARTS, PART, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[0]);
    MPI_Psend_init(pout, PARTS, PART, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[1]);
#else
    MPI_Recv_init(pin, PARTS * PART, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &pr[0]);
    MPI_Send_init(pout, PARTS * PART, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &pr[1]);
#endif
    double acc = 0.0;
    for (int it = 0; it < 6; it++) {
        mheta_iteration_begin();
        for (int i = 0; i < RING; i++) out[i] = rank + 0.01 * i + it;
        for (int i = 0; i < SWAP; i++) swap[i] = 10 * rank + i + it;
        for (int i = 0; i < BC; i++) bc[i] = rank == 1 % size ? it + 0.5 * i : -1.0;
        for (int i = 0; i < RD; i++) rd[i] = rank * (i + 1) + it;
        for (int i = 0; i < AG; i++) ag[i] = rank + 0.25 * i;
        for (int i = 0; i < A2A * size; i++) a2a[i] = 100 * rank + i + it;
        for (int i = 0; i < AR; i++) ar[i] = rank + i + it;
        for (int i = 0; i < 2 * NB; i++) nb[i] = rank + 0.125 * i + it;
        for (int i = 0; i < PARTS * PART; i++) pout[i] = rank - 0.5 * i + it;
#ifdef MPI4
        MPI_Request x;
        MPI_Isendrecv(out, RING, MPI_DOUBLE, right, 7, in, RING, MPI_DOUBLE, left, 7,
                      MPI_COMM_WORLD, &x);
        MPI_Wait(&x, MPI_STATUS_IGNORE);
        MPI_Isendrecv_replace(swap, SWAP, MPI_DOUBLE, left, 9, right, 9, MPI_COMM_WORLD, &x);
        MPI_Wait(&x, MPI_STATUS_IGNORE);
        for (int k = 0; k < 5; k++) {
            MPI_Start(&r[k]);
            MPI_Wait(&r[k], MPI_STATUS_IGNORE);
        }
        MPI_Startall(2, &r[5]);
        MPI_Waitall(2, &r[5], MPI_STATUSES_IGNORE);
#else
        MPI_Request x[2];
        MPI_Irecv(in, RING, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &x[0]);
        MPI_Isend(out, RING, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &x[1]);
        MPI_Waitall(2, x, MPI_STATUSES_IGNORE);
        double copy[SWAP];
        for (int i = 0; i < SWAP; i++) copy[i] = swap[i];
        MPI_Irecv(swap, SWAP, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &x[0]);
        MPI_Isend(copy, SWAP, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &x[1]);
        MPI_Waitall(2, x, MPI_STATUSES_IGNORE);
        MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Ibcast(bc, BC, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD, &r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Ireduce(rd, rdo, RD, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &r[2]);
        MPI_Wait(&r[2], MPI_STATUS_IGNORE);
        MPI_Iallgather(ag, AG, MPI_DOUBLE, ago, AG, MPI_DOUBLE, MPI_COMM_WORLD, &r[3]);
        MPI_Wait(&r[3], MPI_STATUS_IGNORE);
        MPI_Ialltoall(a2a, A2A, MPI_DOUBLE, a2ao, A2A, MPI_DOUBLE, MPI_COMM_WORLD, &r[4]);
        MPI_Wait(&r[4], MPI_STATUS_IGNORE);
        MPI_Iallreduce(ar, aro, AR, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[5]);
        MPI_Ineighbor_alltoall(nb, NB, MPI_DOUBLE, nbo, NB, MPI_DOUBLE, ring, &r[6]);
        MPI_Waitall(2, &r[5], MPI_STATUSES_IGNORE);
#endif
        MPI_Startall(2, pr);
#ifdef MPI4
        for (int k = PARTS - 1; k >= 0; k--) MPI_Pready(k, pr[1]);
#endif
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        acc += pin[0] + pin[PARTS * PART - 1];
        acc += in[RING - 1] + swap[SWAP - 1] + bc[BC - 1] + ago[AG * size - 1] + a2ao[A2A * size - 1]
               + aro[AR - 1] + nbo[NB - 1] + nbo[2 * NB - 1];
        if (rank == 0) acc += rdo[RD - 1];
        mheta_iteration_end();
    }
#ifdef MPI4
    for (int k = 0; k < NREQ; k++) MPI_Request_free(&r[k]);
#endif
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    double total = 0.0;
    MPI_Allreduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpi4 np=%d checksum=%.10e\n", size, total);
    MPI_Comm_free(&ring);
    free(a2a); free(a2ao);
    MPI_Finalize();
    return 0;
}
