! module mheta: the Fortran interface to libmheta.so, the calls of
! capi/include/mheta.h. Strings are passed as Fortran strings (the module
! adds the NUL); mheta_rows gives an array's rows as x(values_per_row, rows),
! each row of the C layout one column here.
module mheta
  use iso_c_binding
  implicit none
  private
  integer(c_int), parameter, public :: MHETA_HALO = 0, MHETA_ALLGATHER = 1, &
       MHETA_REDUCTION = 2, MHETA_PIPELINE = 3
  integer(c_int), parameter, public :: MHETA_CONSTANT = 0, MHETA_SENDER_ROWS = 1
  public :: mheta_init, mheta_array, mheta_rows, mheta_first_row, mheta_local_rows, &
       mheta_dist, mheta_exchange, mheta_iteration_begin, mheta_iteration_end, mheta_stage_begin, &
       mheta_stage_end, mheta_work_begin, mheta_work_end, mheta_auto, mheta_plan, &
       mheta_move, mheta_report, mheta_error, mheta_finalize

  interface
     integer(c_int) function c_init(app, rows, dist) bind(C, name="mheta_init")
       import :: c_int, c_char, c_int64_t, c_ptr
       character(kind=c_char), dimension(*), intent(in) :: app
       integer(c_int64_t), value :: rows
       type(c_ptr), value :: dist
     end function c_init
     integer(c_int) function c_array(name, width, read_only, halo) bind(C, name="mheta_array")
       import :: c_int, c_char, c_int64_t
       character(kind=c_char), dimension(*), intent(in) :: name
       integer(c_int64_t), value :: width
       integer(c_int), value :: read_only, halo
     end function c_array
     type(c_ptr) function c_data(id) bind(C, name="mheta_data")
       import :: c_int, c_ptr
       integer(c_int), value :: id
     end function c_data
     integer(c_int64_t) function mheta_first_row() bind(C, name="mheta_first_row")
       import :: c_int64_t
     end function mheta_first_row
     integer(c_int64_t) function mheta_local_rows() bind(C, name="mheta_local_rows")
       import :: c_int64_t
     end function mheta_local_rows
     integer(c_int) function mheta_dist(dist) bind(C, name="mheta_dist")
       import :: c_int, c_int64_t
       integer(c_int64_t), dimension(*), intent(out) :: dist
     end function mheta_dist
     integer(c_int) function mheta_exchange(kind, scaling, bytes, per_iteration) &
          bind(C, name="mheta_exchange")
       import :: c_int, c_int64_t, c_int32_t
       integer(c_int), value :: kind, scaling
       integer(c_int64_t), value :: bytes
       integer(c_int32_t), value :: per_iteration
     end function mheta_exchange
     integer(c_int) function mheta_iteration_begin() bind(C, name="mheta_iteration_begin")
       import :: c_int
     end function mheta_iteration_begin
     integer(c_int) function mheta_iteration_end() bind(C, name="mheta_iteration_end")
       import :: c_int
     end function mheta_iteration_end
     integer(c_int) function mheta_stage_begin() bind(C, name="mheta_stage_begin")
       import :: c_int
     end function mheta_stage_begin
     integer(c_int) function mheta_stage_end() bind(C, name="mheta_stage_end")
       import :: c_int
     end function mheta_stage_end
     integer(c_int) function mheta_work_begin() bind(C, name="mheta_work_begin")
       import :: c_int
     end function mheta_work_begin
     integer(c_int) function mheta_work_end() bind(C, name="mheta_work_end")
       import :: c_int
     end function mheta_work_end
     integer(c_int) function mheta_auto(it, iters) bind(C, name="mheta_auto")
       import :: c_int, c_int64_t
       integer(c_int64_t), value :: it, iters
     end function mheta_auto
     integer(c_int) function mheta_plan(remaining, moves, dist) bind(C, name="mheta_plan")
       import :: c_int, c_int64_t
       integer(c_int64_t), value :: remaining
       integer(c_int), intent(out) :: moves
       integer(c_int64_t), dimension(*), intent(out) :: dist
     end function mheta_plan
     integer(c_int) function mheta_move(dist) bind(C, name="mheta_move")
       import :: c_int, c_int64_t
       integer(c_int64_t), dimension(*), intent(in) :: dist
     end function mheta_move
     type(c_ptr) function c_report() bind(C, name="mheta_report")
       import :: c_ptr
     end function c_report
     type(c_ptr) function c_error() bind(C, name="mheta_error")
       import :: c_ptr
     end function c_error
     integer(c_int) function mheta_finalize() bind(C, name="mheta_finalize")
       import :: c_int
     end function mheta_finalize
     integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
       import :: c_size_t, c_ptr
       type(c_ptr), value :: s
     end function c_strlen
  end interface

contains

  !> Start mheta on MPI_COMM_WORLD with Block rows (after MPI_Init).
  integer(c_int) function mheta_init(app, rows)
    character(len=*), intent(in) :: app
    integer(c_int64_t), intent(in) :: rows
    mheta_init = c_init(trim(app)//c_null_char, rows, c_null_ptr)
  end function mheta_init

  !> Declare a distributed array of width doubles per row; its id.
  integer(c_int) function mheta_array(name, width, read_only, halo)
    character(len=*), intent(in) :: name
    integer(c_int64_t), intent(in) :: width
    logical, intent(in) :: read_only, halo
    mheta_array = c_array(trim(name)//c_null_char, width, merge(1, 0, read_only), &
         merge(1, 0, halo))
  end function mheta_array

  !> This rank's rows of array id as x(width, local rows); re-take after a move.
  subroutine mheta_rows(id, width, x)
    integer(c_int), intent(in) :: id
    integer(c_int64_t), intent(in) :: width
    real(c_double), pointer, intent(out) :: x(:, :)
    call c_f_pointer(c_data(id), x, [width, mheta_local_rows()])
  end subroutine mheta_rows

  function to_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: c(:)
    integer :: n, i
    n = int(c_strlen(p))
    call c_f_pointer(p, c, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
       s(i:i) = c(i)
    end do
  end function to_string

  !> The last plan as one JSON line.
  function mheta_report() result(s)
    character(len=:), allocatable :: s
    s = to_string(c_report())
  end function mheta_report

  !> Why the last failing call failed.
  function mheta_error() result(s)
    character(len=:), allocatable :: s
    s = to_string(c_error())
  end function mheta_error
end module mheta
