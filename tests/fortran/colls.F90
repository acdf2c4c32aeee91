! The rest of MPI's common calls from Fortran (use mpi or use mpi_f08:
! binding.h) for mheta's interposer: every blocking and non-blocking collective it wraps (with
! MPI_IN_PLACE where MPI allows it), the other send modes, probes,
! sendrecv_replace, and the Wait/Test family. Prints a checksum that must
! not change when the interposer is loaded; tests/tests/interpose.rs
! checks what each call recorded.
#include "binding.h"
program colls
  use MPI_MODULE
#ifdef F08
  use, intrinsic :: iso_c_binding, only : c_ptr
#endif
  implicit none
  integer :: ierr, rank, np, right, left, i, idx, outc, check, bsize
  STATUS(status)
  STATUSES(sts, 6)
  integer, allocatable :: a(:), b(:), c(:), cnt(:), dsp(:), one(:)
  integer, allocatable :: bbuf(:)
  REQUEST :: reqs(6)
  integer :: idxs(6), v(6), w(6), x
  logical :: flag
#ifdef F08
  type(c_ptr) :: bptr
#endif

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  right = mod(rank + 1, np)
  left = mod(rank + np - 1, np)
  allocate(a(4 * np), b(4 * np), c(4 * np), cnt(np), dsp(np), one(np))
  check = 0
  do i = 1, 4 * np
    a(i) = 100 * rank + i
  end do
  do i = 1, np
    one(i) = 1
    dsp(i) = i - 1
    cnt(i) = i
  end do

  ! ---- blocking collectives ----
  call MPI_Alltoall(a, 2, MPI_INTEGER, b, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(b(1:2 * np))
  call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(b(1:2 * np))
  call MPI_Alltoallv(a, one, dsp, MPI_INTEGER, b, one, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(b(1:np))
  call MPI_Allgather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(b(1:np))
  b(rank + 1) = rank
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(b(1:np))
  ! rank r gives r + 1 integers
  do i = 1, np
    dsp(i) = (i - 1) * i / 2
  end do
  call MPI_Allgatherv(a, rank + 1, MPI_INTEGER, c, cnt, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  check = check + sum(c(1:np * (np + 1) / 2))
  call MPI_Gather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) check = check + sum(b(1:np))
  call MPI_Gatherv(a, rank + 1, MPI_INTEGER, c, cnt, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) check = check + sum(c(1:np * (np + 1) / 2))
  call MPI_Scatter(a, 1, MPI_INTEGER, x, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  check = check + x
  call MPI_Scatterv(a, cnt, dsp, MPI_INTEGER, c, rank + 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  check = check + sum(c(1:rank + 1))
  call MPI_Reduce_scatter_block(a, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  check = check + x
  call MPI_Reduce_scatter(a, x, one, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  check = check + x

  ! ---- point-to-point: the other modes, probes, replace ----
  x = rank
  call MPI_Sendrecv_replace(x, 1, MPI_INTEGER, right, 5, left, 5, MPI_COMM_WORLD, status, ierr)
  check = check + x
  call MPI_Pack_size(1, MPI_INTEGER, MPI_COMM_WORLD, bsize, ierr)
  bsize = 4 * (bsize + MPI_BSEND_OVERHEAD)
  allocate(bbuf(bsize / 4 + 1))
  call MPI_Buffer_attach(bbuf, bsize, ierr)
  call MPI_Bsend(rank, 1, MPI_INTEGER, right, 6, MPI_COMM_WORLD, ierr)
  call MPI_Recv(x, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  check = check + x
  ! A ready send needs its receive posted: the barrier orders them.
  call MPI_Irecv(x, 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Rsend(rank, 1, MPI_INTEGER, right, 7, MPI_COMM_WORLD, ierr)
  call MPI_Wait(reqs(1), status, ierr)
  check = check + x
  call MPI_Send(rank, 1, MPI_INTEGER, right, 8, MPI_COMM_WORLD, ierr)
  call MPI_Probe(left, 8, MPI_COMM_WORLD, status, ierr)
  call MPI_Recv(x, 1, MPI_INTEGER, SOURCE(status), 8, MPI_COMM_WORLD, status, ierr)
  check = check + x
  call MPI_Send(rank, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Iprobe(left, 9, MPI_COMM_WORLD, flag, status, ierr)
  end do
  call MPI_Recv(x, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  check = check + x

  ! ---- the Wait/Test family: three receives (tags 21-23) from the left,
  ! three sends in the other non-blocking modes to the right ----
  do i = 1, 3
    call MPI_Irecv(v(i), 1, MPI_INTEGER, left, 20 + i, MPI_COMM_WORLD, reqs(i), ierr)
    w(i) = 10 * rank + i
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Issend(w(1), 1, MPI_INTEGER, right, 21, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Ibsend(w(2), 1, MPI_INTEGER, right, 22, MPI_COMM_WORLD, reqs(5), ierr)
  call MPI_Irsend(w(3), 1, MPI_INTEGER, right, 23, MPI_COMM_WORLD, reqs(6), ierr)
  call MPI_Waitany(3, reqs, idx, status, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(3, reqs, idx, flag, status, ierr)
  end do
  outc = 0
  do while (outc /= MPI_UNDEFINED)
    call MPI_Waitsome(3, reqs, outc, idxs, sts, ierr)
  end do
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(4), flag, status, ierr)
  end do
  outc = 0
  do while (outc /= MPI_UNDEFINED)
    call MPI_Testsome(2, reqs(5:6), outc, idxs, sts, ierr)
  end do
  check = check + sum(v(1:3))
#ifdef F08
  call MPI_Buffer_detach(bptr, bsize, ierr)
#else
  call MPI_Buffer_detach(bbuf, bsize, ierr)
#endif

  ! ---- non-blocking collectives, completed with Testall ----
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1), ierr)
  x = rank + 1
  call MPI_Ibcast(x, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Iallreduce(a, v(1), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Ireduce(a, v(2), 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Iallgather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, reqs(5), ierr)
  call MPI_Ialltoall(a, 1, MPI_INTEGER, c, 1, MPI_INTEGER, MPI_COMM_WORLD, reqs(6), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(6, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  check = check + x + v(1) + sum(b(1:np)) + sum(c(1:np))
  if (rank == 0) check = check + v(2)
  do i = 1, np
    dsp(i) = (i - 1) * i / 2
  end do
  call MPI_Iallgatherv(a, rank + 1, MPI_INTEGER, b, cnt, dsp, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
  do i = 1, np
    dsp(i) = i - 1
  end do
  call MPI_Ialltoallv(a, one, dsp, MPI_INTEGER, c, one, dsp, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  check = check + sum(b(1:np * (np + 1) / 2)) + sum(c(1:np))
  ! the rooted ones and the reduce-scatters (v counts: rank r has r + 1)
  do i = 1, np
    dsp(i) = (i - 1) * i / 2
  end do
  call MPI_Igather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Igatherv(a, rank + 1, MPI_INTEGER, c, cnt, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Iscatter(a, 1, MPI_INTEGER, v(1), 1, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Iscatterv(a, cnt, dsp, MPI_INTEGER, w, rank + 1, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Ireduce_scatter_block(a, v(2), 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(5), ierr)
  call MPI_Ireduce_scatter(a, v(3), one, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(6), ierr)
  call MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE, ierr)
  if (rank == 0) check = check + sum(b(1:np)) + sum(c(1:np * (np + 1) / 2))
  check = check + v(1) + sum(w(1:rank + 1)) + v(2) + v(3)

  call MPI_Allreduce(MPI_IN_PLACE, check, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write(*, '(A,I0,A,I0)') 'fcolls np=', np, ' checksum=', check
  call MPI_Finalize(ierr)
end program colls
