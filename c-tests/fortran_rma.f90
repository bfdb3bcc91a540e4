! fortran_rma: one-sided communication from Fortran (`use mpi`). Each of
! `iters` laps: a fence epoch with MPI_PUT into the right neighbour and
! MPI_ACCUMULATE into rank 0, an exclusive MPI_WIN_LOCK epoch on rank 0
! with MPI_ACCUMULATE and MPI_GET, and a PSCW epoch (MPI_WIN_POST to the
! left neighbour, MPI_WIN_START on the right one, MPI_PUT, complete, wait).
! Then MPI_WIN_ALLOCATE and MPI_WIN_FREE of a second window.
!
! usage: mpirun -np N fortran_rma [iters]
! Rank 0 prints `check=ok` when both counters are iters × N (else aborts),
! then `wall_s=`.
program fortran_rma
  use mpi
  implicit none
  integer :: ierr, rank, size, iters, i, right, left, nargs, win, win2, world, left_g, right_g
  integer(kind=MPI_ADDRESS_KIND) :: winsize, disp, base2
  double precision :: one, got, t0, t1
  ! The window: MPI writes it behind the compiler's back.
  double precision, volatile :: buf(4)
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  iters = 50
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read(arg, *, iostat=ierr) iters
    if (ierr /= 0 .or. iters < 1) then
      if (rank == 0) write(0, '(a)') 'usage: fortran_rma [iters >= 1]'
      call MPI_FINALIZE(ierr)
      stop 2
    end if
  end if
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  buf = 0d0
  one = 1d0
  winsize = 4 * 8
  call MPI_WIN_CREATE(buf, winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_COMM_GROUP(MPI_COMM_WORLD, world, ierr)
  call MPI_GROUP_INCL(world, 1, (/ left /), left_g, ierr)
  call MPI_GROUP_INCL(world, 1, (/ right /), right_g, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t0 = MPI_WTIME()
  do i = 1, iters
    call MPI_WIN_FENCE(MPI_MODE_NOPRECEDE, win, ierr)
    disp = 2
    call MPI_PUT(dble(rank), 1, MPI_DOUBLE_PRECISION, right, disp, 1, MPI_DOUBLE_PRECISION, win, ierr)
    disp = 0
    call MPI_ACCUMULATE(one, 1, MPI_DOUBLE_PRECISION, 0, disp, 1, MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr)
    call MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, win, ierr)
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    disp = 1
    call MPI_ACCUMULATE(one, 1, MPI_DOUBLE_PRECISION, 0, disp, 1, MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr)
    call MPI_GET(got, 1, MPI_DOUBLE_PRECISION, 0, disp, 1, MPI_DOUBLE_PRECISION, win, ierr)
    call MPI_WIN_UNLOCK(0, win, ierr)
    call MPI_WIN_POST(left_g, 0, win, ierr)
    call MPI_WIN_START(right_g, 0, win, ierr)
    disp = 3
    call MPI_PUT(dble(rank), 1, MPI_DOUBLE_PRECISION, right, disp, 1, MPI_DOUBLE_PRECISION, win, ierr)
    call MPI_WIN_COMPLETE(win, ierr)
    call MPI_WIN_WAIT(win, ierr)
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t1 = MPI_WTIME()
  if (rank == 0) then
    if (buf(1) /= dble(iters * size) .or. buf(2) /= dble(iters * size)) then
      write(0, '(a, 2f12.1)') 'fortran_rma: wrong counters ', buf(1), buf(2)
      call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
    end if
    write(*, '(a)') 'check=ok'
  end if
  if (buf(3) /= dble(left) .or. buf(4) /= dble(left)) then
    write(0, '(a, i0)') 'fortran_rma: wrong neighbour value on rank ', rank
    call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
  end if
  call MPI_GROUP_FREE(left_g, ierr)
  call MPI_GROUP_FREE(right_g, ierr)
  call MPI_GROUP_FREE(world, ierr)
  call MPI_WIN_FREE(win, ierr)
  winsize = 64
  call MPI_WIN_ALLOCATE(winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base2, win2, ierr)
  call MPI_WIN_FREE(win2, ierr)
  if (rank == 0) write(*, '(a, f0.6)') 'wall_s=', t1 - t0
  call MPI_FINALIZE(ierr)
end program fortran_rma
