/* The neighbourhood collectives, MPI_Scan, MPI_Exscan and MPI_Alltoallw
 * for mheta's interposer, in marked iterations, with results folded into a
 * checksum that must not change under the interposer. Per iteration, in
 * this order: on a 1-D periodic Cartesian ring, MPI_Neighbor_alltoall (8
 * doubles to each neighbour), _allgather (4 doubles) and _alltoallv (to
 * the left 1, to the right 2 doubles); on a distributed graph where rank r
 * sends to r + 1 and r + 2 (mod P), _alltoallw (1 and 2 doubles; MPICH
 * 4.0's use mpi_f08 binding refuses the w form on a Cartesian topology);
 * on the ring, _allgatherv (4 doubles); on a 1-D non-periodic line,
 * _alltoall of 3 doubles (the ends have one neighbour); on the graph,
 * _alltoall of 5 doubles; then MPI_Scan, MPI_Exscan and MPI_Alltoallw on
 * MPI_COMM_WORLD; then the non-blocking forms of the first five and of
 * those three, completed by one MPI_Waitall. */
#include <stdio.h>
#include <stdlib.h>
#include "mheta_markers.h"
#include "count.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p = size, periodic = 1, open = 0;
    MPI_Comm ring, line, graph;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &p, &periodic, 0, &ring);
    MPI_Cart_create(MPI_COMM_WORLD, 1, &p, &open, 0, &line);
    int dst[2] = {(rank + 1) % size, (rank + 2) % size};
    int src[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph);
    int big = 8 * size + 16; /* a buffer holds 2·big doubles */
    double *a = calloc(2 * big, sizeof(double)), *b = calloc(2 * big, sizeof(double));
    double acc = 0.0;
    count_t cnt[2], rcnt[2];
    displ_t dsp[2], rdsp[2];
    MPI_Aint wsd[2], wrd[2];
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE};
    for (int it = 0; it < 6; it++) {
        mheta_iteration_begin();
        for (int i = 0; i < 2 * big; i++) a[i] = rank + 0.001 * i + it;
        MPI_Neighbor_alltoall(a, 8, MPI_DOUBLE, b, 8, MPI_DOUBLE, ring); acc += b[7] + b[15];
        MPI_Neighbor_allgather(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, ring); acc += b[3] + b[7];
        cnt[0] = 1; cnt[1] = 2; dsp[0] = 0; dsp[1] = 1;
        rcnt[0] = 2; rcnt[1] = 1; rdsp[0] = 0; rdsp[1] = 2; /* from the left its 2, from the right its 1 */
        MPI_Neighbor_alltoallv(a, cnt, dsp, MPI_DOUBLE, b, rcnt, rdsp, MPI_DOUBLE, ring); acc += b[0] + b[2];
        /* the w form on the graph: 1 double to (and from) the first
         * neighbour, 2 to (and from) the second */
        count_t wcnt[2] = {1, 2};
        for (int k = 0; k < 2; k++) { wsd[k] = k * sizeof(double); wrd[k] = k * sizeof(double); }
        MPI_Neighbor_alltoallw(a, wcnt, wsd, types, b, wcnt, wrd, types, graph); acc += b[1];
        count_t four[2] = {4, 4};
        displ_t fd[2] = {0, 4};
        MPI_Neighbor_allgatherv(a, 4, MPI_DOUBLE, b, four, fd, MPI_DOUBLE, ring); acc += b[5];
        for (int i = 0; i < 6; i++) b[i] = 0.0;
        MPI_Neighbor_alltoall(a, 3, MPI_DOUBLE, b, 3, MPI_DOUBLE, line); acc += b[2] + b[5];
        MPI_Neighbor_alltoall(a, 5, MPI_DOUBLE, b, 5, MPI_DOUBLE, graph); acc += b[4] + b[9];
        double s = rank + it, t = 0.0;
        MPI_Scan(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); acc += t;
        t = 0.0;
        MPI_Exscan(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); if (rank > 0) acc += t;
        count_t *ac = malloc(size * sizeof(count_t));
        displ_t *ad = malloc(size * sizeof(displ_t));
        MPI_Datatype *at = malloc(size * sizeof(MPI_Datatype));
        for (int k = 0; k < size; k++) { ac[k] = 2; ad[k] = 2 * k * (displ_t)sizeof(double); at[k] = MPI_DOUBLE; }
        MPI_Alltoallw(a, ac, ad, at, b, ac, ad, at, MPI_COMM_WORLD); acc += b[2 * size - 1];
        /* the non-blocking forms on the ring, each into its own buffer,
         * completed together */
        MPI_Request r[8];
        double *c = calloc(8 * 2 * big, sizeof(double)), u = 0.0, v = 0.0;
        MPI_Ineighbor_alltoall(a, 8, MPI_DOUBLE, c, 8, MPI_DOUBLE, ring, &r[0]);
        MPI_Ineighbor_allgather(a, 4, MPI_DOUBLE, c + 2 * big, 4, MPI_DOUBLE, ring, &r[1]);
        MPI_Ineighbor_alltoallv(a, cnt, dsp, MPI_DOUBLE, c + 4 * big, rcnt, rdsp, MPI_DOUBLE, ring, &r[2]);
        MPI_Ineighbor_alltoallw(a, wcnt, wsd, types, c + 6 * big, wcnt, wrd, types, graph, &r[3]);
        MPI_Ineighbor_allgatherv(a, 4, MPI_DOUBLE, c + 8 * big, four, fd, MPI_DOUBLE, ring, &r[4]);
        MPI_Iscan(&s, &u, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[5]);
        MPI_Iexscan(&s, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[6]);
        MPI_Ialltoallw(a, ac, ad, at, c + 10 * big, ac, ad, at, MPI_COMM_WORLD, &r[7]);
        MPI_Waitall(8, r, MPI_STATUSES_IGNORE);
        acc += c[7] + c[15] + c[2 * big + 3] + c[4 * big + 2] + c[6 * big + 1] + c[8 * big + 5] + u
               + c[10 * big + 2 * size - 1];
        if (rank > 0) acc += v;
        free(c);
        free(ac); free(ad); free(at);
        mheta_iteration_end();
    }
    double total = 0.0;
    MPI_Allreduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("neighbors np=%d checksum=%.10e\n", size, total);
    MPI_Comm_free(&ring); MPI_Comm_free(&line); MPI_Comm_free(&graph);
    free(a); free(b);
    MPI_Finalize();
    return 0;
}
