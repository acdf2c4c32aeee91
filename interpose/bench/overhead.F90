! Per-call cost of MPI calls from Fortran, for mheta's interposer overhead
! benchmark: interpose/bench/overhead.c's loops, built for use mpi or, with
! -DF08, use mpi_f08 (tests/fortran/binding.h). Rank 0 and 1 ping-pong 8
! bytes (ROUNDS round trips per batch), then each rank calls MPI_Iprobe on
! nothing (CALLS per batch). With MARK=1 in the environment the timed
! loops run inside a marked iteration (MPI_Pcontrol 100/101, so the
! recorder records them). Prints, on rank 0, the median over BATCHES of
! "pingpong_rtt_ns iprobe_ns".
#include "binding.h"
program overhead
  use MPI_MODULE
  implicit none
  integer, parameter :: BATCHES = 21, ROUNDS = 2000, CALLS = 20000
  integer :: rank, ierr, b, r, c, w
  integer(8) :: buf
  logical :: flag, mark
  character(len=8) :: env
  double precision :: rtt(BATCHES), ip(BATCHES), t0

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_environment_variable("MARK", env)
  mark = trim(env) == "1"
  if (mark) call MPI_Pcontrol(100)
  buf = 0
  do w = 1, 2000
    call pingpong()
  end do
  do b = 1, BATCHES
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    t0 = MPI_Wtime()
    do r = 1, ROUNDS
      call pingpong()
    end do
    rtt(b) = (MPI_Wtime() - t0) * 1d9 / ROUNDS
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    t0 = MPI_Wtime()
    do c = 1, CALLS
      call MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
    end do
    ip(b) = (MPI_Wtime() - t0) * 1d9 / CALLS
  end do
  if (mark) call MPI_Pcontrol(101)
  if (rank == 0) write(*, '(F0.2,1X,F0.2)') median(rtt), median(ip)
  call MPI_Finalize(ierr)

contains

  subroutine pingpong()
    if (rank == 0) then
      call MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else if (rank == 1) then
      call MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, ierr)
    end if
  end subroutine pingpong

  double precision function median(v)
    double precision, intent(in) :: v(:)
    double precision :: s(size(v)), x
    integer :: i, j
    s = v
    do i = 2, size(s)
      x = s(i)
      j = i - 1
      do while (j >= 1)
        if (s(j) <= x) exit
        s(j + 1) = s(j)
        j = j - 1
      end do
      s(j + 1) = x
    end do
    median = s(size(s) / 2 + 1)
  end function median
end program overhead
