! A Fortran 2008 program (use mpi_f08) for mheta's interposer, whose
! bindings reach the MPI library past the interposer: it must run as
! without mheta and be told that nothing of it was seen.
program f08
  use mpi_f08
  implicit none
  integer :: rank, np, x
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  call MPI_Allreduce(rank, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) write(*, '(A,I0,A,I0)') 'f08 np=', np, ' sum=', x
  call MPI_Finalize()
end program f08
