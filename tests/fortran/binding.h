! The MPI binding a test program is built for: use mpi by default, use
! mpi_f08 with -DF08. tests/tests/interpose.rs builds each program both
! ways and checks that the interposer records the same calls.
#ifdef F08
#define MPI_MODULE mpi_f08
#define REQUEST type(MPI_Request)
#define STATUS(name) type(MPI_Status) :: name
#define STATUSES(name, n) type(MPI_Status) :: name(n)
#define SOURCE(s) s%MPI_SOURCE
#else
#define MPI_MODULE mpi
#define REQUEST integer
#define STATUS(name) integer :: name(MPI_STATUS_SIZE)
#define STATUSES(name, n) integer :: name(MPI_STATUS_SIZE, n)
#define SOURCE(s) s(MPI_SOURCE)
#endif
