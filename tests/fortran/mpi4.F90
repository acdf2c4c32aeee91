! The first exchanges of tests/c/mpi4.c's MPI-4 build in Fortran (use mpi
! or use mpi_f08: binding.h): per marked iteration (MPI_Pcontrol
! 100/101), MPI_Isendrecv of 16 doubles (to the right, from the left, tag
! 7) and MPI_Isendrecv_replace of 4 (to the left, from the right, tag 9),
! each waited for; then MPI_Allreduce of 5 doubles and MPI_Bcast of 6 from
! rank 1, set up once with MPI_Allreduce_init and MPI_Bcast_init and begun
! together by MPI_Startall; then a partitioned exchange round the ring
! (4 partitions of 3 doubles, tag 11), set up once with MPI_Precv_init and
! MPI_Psend_init, begun by MPI_Startall, each partition marked by
! MPI_Pready, last first. Prints a checksum that must not change when the
! interposer is loaded.
#include "binding.h"
program mpi4
  use MPI_MODULE
  implicit none
  REQUEST :: x, r(2), pr(2)
  integer, parameter :: parts = 4, part = 3
  integer(kind=MPI_COUNT_KIND), parameter :: part_count = part
  integer :: rank, np, ierr, it, left, right, i
  double precision :: out(16), in(16), swap(4), a(5), b(5), bc(6), acc, total
  double precision :: pout(parts * part), pin(parts * part)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)
  call MPI_Allreduce_init(a, b, 5, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, r(1), ierr)
  call MPI_Bcast_init(bc, 6, MPI_DOUBLE_PRECISION, mod(1, np), MPI_COMM_WORLD, MPI_INFO_NULL, r(2), ierr)
  call MPI_Precv_init(pin, parts, part_count, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &
                      pr(1), ierr)
  call MPI_Psend_init(pout, parts, part_count, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &
                      pr(2), ierr)
  acc = 0
  do it = 0, 5
    call MPI_Pcontrol(100)
    do i = 1, 16
      out(i) = rank + 0.01d0 * i + it
    end do
    do i = 1, 4
      swap(i) = 10 * rank + i + it
    end do
    do i = 1, 5
      a(i) = rank + i + it
    end do
    do i = 1, 6
      bc(i) = merge(it + 0.5d0 * i, -1d0, rank == mod(1, np))
    end do
    do i = 1, parts * part
      pout(i) = rank - 0.5d0 * i + it
    end do
    call MPI_Isendrecv(out, 16, MPI_DOUBLE_PRECISION, right, 7, in, 16, MPI_DOUBLE_PRECISION, left, 7, &
                       MPI_COMM_WORLD, x, ierr)
    call MPI_Wait(x, MPI_STATUS_IGNORE, ierr)
    call MPI_Isendrecv_replace(swap, 4, MPI_DOUBLE_PRECISION, left, 9, right, 9, MPI_COMM_WORLD, x, ierr)
    call MPI_Wait(x, MPI_STATUS_IGNORE, ierr)
    call MPI_Startall(2, r, ierr)
    call MPI_Waitall(2, r, MPI_STATUSES_IGNORE, ierr)
    call MPI_Startall(2, pr, ierr)
    do i = parts - 1, 0, -1
      call MPI_Pready(i, pr(2), ierr)
    end do
    call MPI_Waitall(2, pr, MPI_STATUSES_IGNORE, ierr)
    acc = acc + in(16) + swap(4) + b(5) + bc(6) + pin(1) + pin(parts * part)
    call MPI_Pcontrol(101)
  end do
  call MPI_Request_free(r(1), ierr)
  call MPI_Request_free(r(2), ierr)
  call MPI_Request_free(pr(1), ierr)
  call MPI_Request_free(pr(2), ierr)
  call MPI_Allreduce(acc, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, es18.10)', 'mpi4 np=', np, ' checksum=', total
  call MPI_Finalize(ierr)
end program mpi4
