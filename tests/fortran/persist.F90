! Persistent requests from Fortran (use mpi or use mpi_f08: binding.h)
! for mheta's interposer: a ring of MPI_Recv_init/MPI_Send_init started
! with MPI_Startall and MPI_Start, completed with MPI_Waitall and
! MPI_Wait, then freed with MPI_Request_free. Prints a checksum that must
! not change when the interposer is loaded. The buffers are VOLATILE: MPI
! writes them in calls that do not name them.
#include "binding.h"
program persist
  use MPI_MODULE
  implicit none
  integer :: ierr, rank, nprocs, left, right, k
  REQUEST :: pr(2)
  STATUS(status)
  integer, volatile :: sendv, recvv
  integer :: check

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  sendv = rank
  recvv = -1
  check = 0
  call MPI_Recv_init(recvv, 1, MPI_INTEGER, left, 11, MPI_COMM_WORLD, pr(1), ierr)
  call MPI_Send_init(sendv, 1, MPI_INTEGER, right, 11, MPI_COMM_WORLD, pr(2), ierr)
  do k = 1, 3
    call MPI_Startall(2, pr, ierr)
    call MPI_Waitall(2, pr, MPI_STATUSES_IGNORE, ierr)
    check = check + recvv
    sendv = sendv + 1
    call MPI_Start(pr(1), ierr)
    call MPI_Send(sendv, 1, MPI_INTEGER, right, 11, MPI_COMM_WORLD, ierr)
    call MPI_Wait(pr(1), status, ierr)
    check = check + recvv
  end do
  call MPI_Request_free(pr(1), ierr)
  call MPI_Request_free(pr(2), ierr)
  call MPI_Allreduce(MPI_IN_PLACE, check, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write(*, '(A,I0,A,I0)') 'fpersist np=', nprocs, ' checksum=', check
  call MPI_Finalize(ierr)
end program persist
