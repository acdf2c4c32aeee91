! A Fortran program (use mpi or use mpi_f08: binding.h) for mheta's interposer: a ring of
! isend/irecv/waitall, send/recv, sendrecv, bcast, reduce and allreduce,
! with mheta's iteration and stage markers (MPI_Pcontrol 100/101, 110/111).
! Prints a checksum that must not change when the interposer is loaded.
#include "binding.h"
program ring
  use MPI_MODULE
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, left, right, it, i
  REQUEST :: reqs(2)
  STATUS(status)
  double precision :: a(n), b(n), c(n), s, total, root_val

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  do i = 1, n
    a(i) = rank * n + i
  end do
  do it = 0, 5
    call MPI_Pcontrol(100)
    call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    call MPI_Sendrecv(b, n, MPI_DOUBLE_PRECISION, right, 2, c, n, MPI_DOUBLE_PRECISION, left, 2, &
                      MPI_COMM_WORLD, status, ierr)
    if (mod(rank, 2) == 0) then
      call MPI_Send(c, 10, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, ierr)
      call MPI_Recv(c, 10, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Recv(b, 10, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(c, 10, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, ierr)
      c(1:10) = b(1:10)
    end if
    call MPI_Pcontrol(110)
    do i = 1, n
      a(i) = 0.5d0 * (a(i) + c(i))
    end do
    call MPI_Pcontrol(111)
    root_val = a(1)
    call MPI_Bcast(root_val, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    s = sum(a) + 1d-6 * root_val
    call MPI_Reduce(s, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(s, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Pcontrol(101)
  end do
  if (rank == 0) write(*, '(A,I0,A,ES24.17)') 'fring np=', nprocs, ' checksum=', total
  call MPI_Finalize(ierr)
end program ring
