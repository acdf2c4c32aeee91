! apps/c/jacobi.f90: the C example's Jacobi (apps/c/jacobi.c) in Fortran,
! with mheta's Fortran module (capi/fortran/mheta.f90). Laplace on N x N
! interior points, boundary from u = x^3 - 3xy^2, rows GEN_BLOCK; a row of
! the C layout is a column u(0:n+1, row) here.
!
!   mpif90 -O2 -J build capi/fortran/mheta.f90 apps/c/jacobi.f90 \
!          -L target/release -lmheta -Wl,-rpath,$PWD/target/release -o jacobi-f
!   MHETA_CLUSTER=het2 MHETA_PROFILE=p.json \
!          mheta run -- mpirun -np 2 ./jacobi-f 2048 200 auto
!
! Arguments: N, iterations, and "auto" to let mheta plan and move. Rank 0
! prints one JSON line like the C example's.
program jacobi_f
  use mpi
  use mheta
  use iso_c_binding
  implicit none
  integer :: ierr, rank, np, n, iters, it, i, j, r, up, down, cur, nreq, planned_at, moved
  integer(c_int64_t) :: w, first, rows
  integer(c_int) :: ids(0:1)
  logical :: autoflag
  character(len=32) :: arg
  real(c_double), pointer :: u(:, :), un(:, :)
  real(c_double), allocatable :: top(:), bot(:), times(:)
  integer(c_int64_t), allocatable :: dist(:)
  integer :: req(4)
  double precision :: h, local, change, t0, t, tmax, err, err0, s, gerr, gsum, before, after

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  n = 1024
  iters = 100
  autoflag = .false.
  if (command_argument_count() >= 1) then
     call get_command_argument(1, arg)
     read (arg, *) n
  end if
  if (command_argument_count() >= 2) then
     call get_command_argument(2, arg)
     read (arg, *) iters
  end if
  if (command_argument_count() >= 3) then
     call get_command_argument(3, arg)
     autoflag = trim(arg) == 'auto'
  end if
  w = n + 2
  h = 1d0 / (n + 1)
  if (mheta_init('jacobi-f', int(n, c_int64_t)) /= 0) call die('mheta_init')
  ids(0) = mheta_array('u', w, .false., .true.)
  ids(1) = mheta_array('unew', w, .false., .true.)
  if (ids(0) < 0 .or. ids(1) < 0) call die('mheta_array')
  if (mheta_exchange(MHETA_HALO, MHETA_CONSTANT, 8 * w, 2) /= 0) call die('mheta_exchange')
  if (mheta_exchange(MHETA_REDUCTION, MHETA_CONSTANT, 8_c_int64_t, 1) /= 0) call die('mheta_exchange')
  first = mheta_first_row()
  rows = mheta_local_rows()
  do cur = 0, 1
     call mheta_rows(ids(cur), w, u)
     do i = 1, int(rows)
        u(:, i) = 0d0
        u(1, i) = exact(0d0, (first + i) * h)
        u(n + 2, i) = exact((n + 1) * h, (first + i) * h)
     end do
  end do
  allocate(top(n + 2), bot(n + 2), times(iters), dist(0:np - 1))
  err0 = 0d0
  do j = 1, n
     do i = 0, n - 1
        err0 = max(err0, abs(exact(j * h, (i + 1) * h)))
     end do
  end do
  cur = 0
  planned_at = -1
  do it = 0, iters - 1
     t0 = MPI_Wtime()
     call mheta_rows(ids(cur), w, u)
     call mheta_rows(ids(1 - cur), w, un)
     first = mheta_first_row()
     rows = mheta_local_rows()
     ierr = mheta_dist(dist)
     up = -1
     down = -1
     do r = rank - 1, 0, -1
        if (dist(r) > 0) then
           up = r
           exit
        end if
     end do
     do r = rank + 1, np - 1
        if (dist(r) > 0) then
           down = r
           exit
        end if
     end do
     ierr = mheta_iteration_begin()
     local = 0d0
     if (rows > 0) then
        nreq = 0
        if (up >= 0) then
           call MPI_Irecv(top, int(w), MPI_DOUBLE_PRECISION, up, 1, MPI_COMM_WORLD, req(nreq + 1), ierr)
           call MPI_Isend(u(:, 1), int(w), MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, req(nreq + 2), ierr)
           nreq = nreq + 2
        else
           call boundary_row(top, first - 1)
        end if
        if (down >= 0) then
           call MPI_Irecv(bot, int(w), MPI_DOUBLE_PRECISION, down, 2, MPI_COMM_WORLD, req(nreq + 1), ierr)
           call MPI_Isend(u(:, rows), int(w), MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, &
                req(nreq + 2), ierr)
           nreq = nreq + 2
        else
           call boundary_row(bot, first + rows)
        end if
        call MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE, ierr)
        ierr = mheta_stage_begin()
        ierr = mheta_work_begin()
        do i = 1, int(rows)
           un(1, i) = u(1, i)
           un(n + 2, i) = u(n + 2, i)
           do j = 2, n + 1
              s = 0.25d0 * (above(i, j) + below(i, j) + u(j - 1, i) + u(j + 1, i))
              local = local + (s - u(j, i))**2
              un(j, i) = s
           end do
        end do
        ierr = mheta_work_end()
        ierr = mheta_stage_end()
     end if
     call MPI_Allreduce(local, change, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
     ierr = mheta_iteration_end()
     cur = 1 - cur
     t = MPI_Wtime() - t0
     call MPI_Allreduce(t, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
     times(it + 1) = tmax
     if (autoflag) then
        moved = mheta_auto(int(it, c_int64_t), int(iters, c_int64_t))
        if (moved < 0) call die('mheta_auto')
        if (planned_at < 0 .and. len(mheta_report()) > 0) planned_at = it
     end if
  end do
  call mheta_rows(ids(cur), w, u)
  first = mheta_first_row()
  rows = mheta_local_rows()
  err = 0d0
  s = 0d0
  do i = 1, int(rows)
     do j = 2, n + 1
        err = max(err, abs(u(j, i) - exact((j - 1) * h, (first + i) * h)))
        s = s + u(j, i)
     end do
  end do
  call MPI_Reduce(err, gerr, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(s, gsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  ierr = mheta_dist(dist)
  if (rank == 0) then
     if (planned_at >= 0) then
        before = median(times(2:planned_at + 1))
        after = median(times(planned_at + 3:iters))
     else
        before = median(times(2:iters))
        after = 0d0
     end if
     write (*, '(a,i0,a,i0,a,i0,a)', advance='no') '{"app":"jacobi-f","n":', n, ',"iters":', iters, &
          ',"np":', np, ',"dist":['
     do r = 0, np - 1
        if (r > 0) write (*, '(a)', advance='no') ','
        write (*, '(i0)', advance='no') dist(r)
     end do
     write (*, '(a,es25.17,a,es25.17,a,es25.17,a,a,a,es16.9,a,es16.9,a)', advance='no') &
          '],"checksum":', gsum, ',"error":', gerr, ',"initial_error":', err0, &
          ',"verified":', trim(merge('true ', 'false', gerr <= err0)), &
          ',"iter_before_s":', before, ',"iter_after_s":', after, ',"auto":'
     if (len(mheta_report()) > 0) then
        write (*, '(a,a)') mheta_report(), '}'
     else
        write (*, '(a)') 'null}'
     end if
  end if
  ierr = mheta_finalize()
  call MPI_Finalize(ierr)

contains

  double precision function exact(x, y)
    double precision, intent(in) :: x, y
    exact = x**3 - 3d0 * x * y**2
  end function exact

  subroutine boundary_row(row, g)
    real(c_double), intent(out) :: row(:)
    integer(c_int64_t), intent(in) :: g
    integer :: jj
    do jj = 0, n + 1
       row(jj + 1) = exact(jj * h, (g + 1) * h)
    end do
  end subroutine boundary_row

  double precision function above(i, j)
    integer, intent(in) :: i, j
    if (i == 1) then
       above = top(j)
    else
       above = u(j, i - 1)
    end if
  end function above

  double precision function below(i, j)
    integer, intent(in) :: i, j
    if (i == rows) then
       below = bot(j)
    else
       below = u(j, i + 1)
    end if
  end function below

  double precision function median(v)
    double precision, intent(in) :: v(:)
    double precision :: c(size(v)), x
    integer :: a, b, m
    m = size(v)
    if (m == 0) then
       median = 0d0
       return
    end if
    c = v
    do a = 2, m
       x = c(a)
       b = a - 1
       do while (b >= 1)
          if (c(b) <= x) exit
          c(b + 1) = c(b)
          b = b - 1
       end do
       c(b + 1) = x
    end do
    if (mod(m, 2) == 1) then
       median = c(m / 2 + 1)
    else
       median = 0.5d0 * (c(m / 2) + c(m / 2 + 1))
    end if
  end function median

  subroutine die(what)
    character(len=*), intent(in) :: what
    write (0, '(a,a,a)') 'jacobi-f: ', what, ': '//mheta_error()
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end subroutine die
end program jacobi_f
