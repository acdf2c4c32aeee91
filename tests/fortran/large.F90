! MPI-4's large-count forms from use mpi_f08 (counts of
! INTEGER(MPI_COUNT_KIND): mpi_send_f08ts_large_, ...), or with -DINT_COUNT
! the same calls with default INTEGER counts. Per marked iteration
! (MPI_Pcontrol 100/101): MPI_Irecv of 8 doubles from the left, MPI_Send
! of 8 to the right (tag 3), MPI_Wait, MPI_Allreduce in place of 8. Prints
! a checksum that must not change when the interposer is loaded.
program large
  use mpi_f08
  implicit none
  integer :: rank, np, it
#ifdef INT_COUNT
  integer :: n
#else
  integer(kind=MPI_COUNT_KIND) :: n
#endif
  double precision :: a(8), b(8), total
  type(MPI_Request) :: r
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  n = 8
  total = 0
  do it = 0, 5
    call MPI_Pcontrol(100)
    a = rank + it
    call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, mod(rank + np - 1, np), 3, MPI_COMM_WORLD, r)
    call MPI_Send(a, n, MPI_DOUBLE_PRECISION, mod(rank + 1, np), 3, MPI_COMM_WORLD)
    call MPI_Wait(r, MPI_STATUS_IGNORE)
    call MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    total = total + b(8)
    call MPI_Pcontrol(101)
  end do
  if (rank == 0) print '(a, i0, a, es18.10)', 'large np=', np, ' checksum=', total
  call MPI_Finalize()
end program large
