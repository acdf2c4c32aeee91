/* The count types of a test program's calls: with -DLARGE_COUNT, MPI-4's
 * large-count forms (MPI_Send_c: counts of MPI_Count, displacements of
 * MPI_Aint), on an MPI that has them (MPICH 4); else the int forms.
 * tests/tests/interpose.rs builds ring.c, collectives.c, neighbors.c and
 * mpiio.c both ways where the MPI has both and checks that the interposer
 * records the same calls, peers and bytes. */
#ifndef MHETA_TEST_COUNT_H
#define MHETA_TEST_COUNT_H
#include <mpi.h>
#ifdef LARGE_COUNT
typedef MPI_Count count_t;
typedef MPI_Aint displ_t;
/* point to point */
#define MPI_Send MPI_Send_c
#define MPI_Isend MPI_Isend_c
#define MPI_Recv MPI_Recv_c
#define MPI_Irecv MPI_Irecv_c
#define MPI_Sendrecv MPI_Sendrecv_c
#define MPI_Mrecv MPI_Mrecv_c
#define MPI_Get_count MPI_Get_count_c
/* collectives */
#define MPI_Bcast MPI_Bcast_c
#define MPI_Reduce MPI_Reduce_c
#define MPI_Allreduce MPI_Allreduce_c
#define MPI_Gather MPI_Gather_c
#define MPI_Gatherv MPI_Gatherv_c
#define MPI_Scatter MPI_Scatter_c
#define MPI_Scatterv MPI_Scatterv_c
#define MPI_Allgather MPI_Allgather_c
#define MPI_Allgatherv MPI_Allgatherv_c
#define MPI_Alltoall MPI_Alltoall_c
#define MPI_Alltoallv MPI_Alltoallv_c
#define MPI_Alltoallw MPI_Alltoallw_c
#define MPI_Reduce_scatter MPI_Reduce_scatter_c
#define MPI_Reduce_scatter_block MPI_Reduce_scatter_block_c
#define MPI_Scan MPI_Scan_c
#define MPI_Exscan MPI_Exscan_c
#define MPI_Ibcast MPI_Ibcast_c
#define MPI_Ireduce MPI_Ireduce_c
#define MPI_Iallreduce MPI_Iallreduce_c
#define MPI_Igather MPI_Igather_c
#define MPI_Igatherv MPI_Igatherv_c
#define MPI_Iscatter MPI_Iscatter_c
#define MPI_Iscatterv MPI_Iscatterv_c
#define MPI_Iallgather MPI_Iallgather_c
#define MPI_Iallgatherv MPI_Iallgatherv_c
#define MPI_Ialltoall MPI_Ialltoall_c
#define MPI_Ialltoallv MPI_Ialltoallv_c
#define MPI_Ialltoallw MPI_Ialltoallw_c
#define MPI_Ireduce_scatter MPI_Ireduce_scatter_c
#define MPI_Ireduce_scatter_block MPI_Ireduce_scatter_block_c
#define MPI_Iscan MPI_Iscan_c
#define MPI_Iexscan MPI_Iexscan_c
#define MPI_Neighbor_allgather MPI_Neighbor_allgather_c
#define MPI_Neighbor_allgatherv MPI_Neighbor_allgatherv_c
#define MPI_Neighbor_alltoall MPI_Neighbor_alltoall_c
#define MPI_Neighbor_alltoallv MPI_Neighbor_alltoallv_c
#define MPI_Neighbor_alltoallw MPI_Neighbor_alltoallw_c
#define MPI_Ineighbor_allgather MPI_Ineighbor_allgather_c
#define MPI_Ineighbor_allgatherv MPI_Ineighbor_allgatherv_c
#define MPI_Ineighbor_alltoall MPI_Ineighbor_alltoall_c
#define MPI_Ineighbor_alltoallv MPI_Ineighbor_alltoallv_c
#define MPI_Ineighbor_alltoallw MPI_Ineighbor_alltoallw_c
/* MPI-IO */
#define MPI_File_read MPI_File_read_c
#define MPI_File_write MPI_File_write_c
#define MPI_File_read_at MPI_File_read_at_c
#define MPI_File_write_at MPI_File_write_at_c
#define MPI_File_read_all MPI_File_read_all_c
#define MPI_File_write_all MPI_File_write_all_c
#define MPI_File_read_at_all MPI_File_read_at_all_c
#define MPI_File_write_at_all MPI_File_write_at_all_c
#define MPI_File_iread MPI_File_iread_c
#define MPI_File_iread_at MPI_File_iread_at_c
#define MPI_File_iwrite MPI_File_iwrite_c
#define MPI_File_iwrite_at MPI_File_iwrite_at_c
#else
typedef int count_t;
typedef int displ_t;
#endif
#endif
