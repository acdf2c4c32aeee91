! tests/c/neighbors.c in Fortran (use mpi or use mpi_f08: binding.h), call
! for call: the neighbourhood collectives on a periodic ring, a distributed
! graph and an open line, MPI_Scan, MPI_Exscan and MPI_Alltoallw, then the
! non-blocking forms of the first five and of those three, completed by
! one MPI_Waitall, in marked iterations (MPI_Pcontrol 100/101). Prints a
! checksum that must not change when the interposer is loaded.
#include "binding.h"
program neighbors
  use MPI_MODULE
  implicit none
#ifdef F08
  type(MPI_Comm) :: ring, line, graph
  type(MPI_Datatype) :: types(2)
  type(MPI_Datatype), allocatable :: at(:)
#else
  integer :: ring, line, graph
  integer :: types(2)
  integer, allocatable :: at(:)
#endif
  REQUEST :: r(8)
  integer :: rank, np, ierr, it, i, k, big
  integer :: dims(1), src(2), dst(2), cnt(2), dsp(2), rcnt(2), rdsp(2), wcnt(2), four(2), fd(2)
  integer, allocatable :: ac(:), ad(:)
  logical :: periodic(1), open(1)
  integer(kind=MPI_ADDRESS_KIND) :: wsd(2), wrd(2)
  double precision, allocatable :: a(:), b(:), c(:)
  double precision :: acc, total, s, t, u, v

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  dims(1) = np
  periodic(1) = .true.
  open(1) = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, .false., ring, ierr)
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, open, .false., line, ierr)
  dst = (/ mod(rank + 1, np), mod(rank + 2, np) /)
  src = (/ mod(rank + np - 1, np), mod(rank + np - 2, np) /)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., graph, ierr)
  big = 8 * np + 16
  allocate(a(2 * big), b(2 * big), c(16 * big), ac(np), ad(np), at(np))
  types(1) = MPI_DOUBLE_PRECISION
  types(2) = MPI_DOUBLE_PRECISION
  acc = 0
  do it = 0, 5
    call MPI_Pcontrol(100)
    do i = 1, 2 * big
      a(i) = rank + 0.001d0 * (i - 1) + it
    end do
    call MPI_Neighbor_alltoall(a, 8, MPI_DOUBLE_PRECISION, b, 8, MPI_DOUBLE_PRECISION, ring, ierr)
    acc = acc + b(8) + b(16)
    call MPI_Neighbor_allgather(a, 4, MPI_DOUBLE_PRECISION, b, 4, MPI_DOUBLE_PRECISION, ring, ierr)
    acc = acc + b(4) + b(8)
    cnt = (/ 1, 2 /)
    dsp = (/ 0, 1 /)
    rcnt = (/ 2, 1 /)
    rdsp = (/ 0, 2 /)
    call MPI_Neighbor_alltoallv(a, cnt, dsp, MPI_DOUBLE_PRECISION, b, rcnt, rdsp, MPI_DOUBLE_PRECISION, &
                                ring, ierr)
    acc = acc + b(1) + b(3)
    wcnt = (/ 1, 2 /)
    wsd = (/ 0, 8 /)
    wrd = wsd
    call MPI_Neighbor_alltoallw(a, wcnt, wsd, types, b, wcnt, wrd, types, graph, ierr)
    acc = acc + b(2)
    four = (/ 4, 4 /)
    fd = (/ 0, 4 /)
    call MPI_Neighbor_allgatherv(a, 4, MPI_DOUBLE_PRECISION, b, four, fd, MPI_DOUBLE_PRECISION, ring, ierr)
    acc = acc + b(6)
    b(1:6) = 0
    call MPI_Neighbor_alltoall(a, 3, MPI_DOUBLE_PRECISION, b, 3, MPI_DOUBLE_PRECISION, line, ierr)
    acc = acc + b(3) + b(6)
    call MPI_Neighbor_alltoall(a, 5, MPI_DOUBLE_PRECISION, b, 5, MPI_DOUBLE_PRECISION, graph, ierr)
    acc = acc + b(5) + b(10)
    s = rank + it
    t = 0
    call MPI_Scan(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    acc = acc + t
    t = 0
    call MPI_Exscan(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank > 0) acc = acc + t
    do k = 1, np
      ac(k) = 2
      ad(k) = 16 * (k - 1)
      at(k) = MPI_DOUBLE_PRECISION
    end do
    call MPI_Alltoallw(a, ac, ad, at, b, ac, ad, at, MPI_COMM_WORLD, ierr)
    acc = acc + b(2 * np)
    c = 0
    u = 0
    v = 0
    call MPI_Ineighbor_alltoall(a, 8, MPI_DOUBLE_PRECISION, c, 8, MPI_DOUBLE_PRECISION, ring, r(1), ierr)
    call MPI_Ineighbor_allgather(a, 4, MPI_DOUBLE_PRECISION, c(2 * big + 1), 4, MPI_DOUBLE_PRECISION, ring, &
                                 r(2), ierr)
    call MPI_Ineighbor_alltoallv(a, cnt, dsp, MPI_DOUBLE_PRECISION, c(4 * big + 1), rcnt, rdsp, &
                                 MPI_DOUBLE_PRECISION, ring, r(3), ierr)
    call MPI_Ineighbor_alltoallw(a, wcnt, wsd, types, c(6 * big + 1), wcnt, wrd, types, graph, r(4), ierr)
    call MPI_Ineighbor_allgatherv(a, 4, MPI_DOUBLE_PRECISION, c(8 * big + 1), four, fd, MPI_DOUBLE_PRECISION, &
                                  ring, r(5), ierr)
    call MPI_Iscan(s, u, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, r(6), ierr)
    call MPI_Iexscan(s, v, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, r(7), ierr)
    call MPI_Ialltoallw(a, ac, ad, at, c(10 * big + 1), ac, ad, at, MPI_COMM_WORLD, r(8), ierr)
    call MPI_Waitall(8, r, MPI_STATUSES_IGNORE, ierr)
    acc = acc + c(8) + c(16) + c(2 * big + 4) + c(4 * big + 3) + c(6 * big + 2) + c(8 * big + 6) + u &
          + c(10 * big + 2 * np)
    if (rank > 0) acc = acc + v
    call MPI_Pcontrol(101)
  end do
  call MPI_Allreduce(acc, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write(*, '(A,I0,A,ES24.17)') 'fneighbors np=', np, ' checksum=', total
  call MPI_Finalize(ierr)
end program neighbors
