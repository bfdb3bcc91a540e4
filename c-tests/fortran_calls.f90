! fortran_calls: the Fortran counterpart of the C tests, for tracing Fortran
! programs. Each of `iters` laps: a token passed around a ring with MPI_SEND
! and MPI_RECV, a halo-like exchange with MPI_ISEND/MPI_IRECV/MPI_WAITALL,
! and an MPI_ALLREDUCE with MPI_IN_PLACE.
!
! usage: mpirun -np N fortran_calls [iters]
! Rank 0 prints `calls MPI_<name>=<count per rank>`, `sum=<value>` and
! `expected=<value>` (equal when MPI_IN_PLACE worked), then `wall_s=`.
program fortran_calls
  use mpi
  implicit none
  integer :: ierr, rank, size, iters, i, next, prev, nargs
  integer :: reqs(2), stats(MPI_STATUS_SIZE, 2), st(MPI_STATUS_SIZE)
  double precision :: token, halo_out, halo_in, total, t0, t1
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  iters = 100
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read(arg, *, iostat=ierr) iters
    if (ierr /= 0 .or. iters < 1) then
      if (rank == 0) write(0, '(a)') 'usage: fortran_calls [iters >= 1]'
      call MPI_FINALIZE(ierr)
      stop 2
    end if
  end if
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)
  token = 0d0
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t0 = MPI_WTIME()
  do i = 1, iters
    if (rank == 0) then
      call MPI_SEND(token, 1, MPI_DOUBLE_PRECISION, next, 0, MPI_COMM_WORLD, ierr)
      call MPI_RECV(token, 1, MPI_DOUBLE_PRECISION, prev, 0, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_RECV(token, 1, MPI_DOUBLE_PRECISION, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      token = token + 1d0
      call MPI_SEND(token, 1, MPI_DOUBLE_PRECISION, next, 0, MPI_COMM_WORLD, ierr)
    end if
    halo_out = rank
    call MPI_IRECV(halo_in, 1, MPI_DOUBLE_PRECISION, prev, 1, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_ISEND(halo_out, 1, MPI_DOUBLE_PRECISION, next, 1, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_WAITALL(2, reqs, stats, ierr)
    total = halo_in
    call MPI_ALLREDUCE(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t1 = MPI_WTIME()
  if (rank == 0) then
    write(*, '(a,i0)') 'calls MPI_Send=', iters
    write(*, '(a,i0)') 'calls MPI_Recv=', iters
    write(*, '(a,i0)') 'calls MPI_Isend=', iters
    write(*, '(a,i0)') 'calls MPI_Irecv=', iters
    write(*, '(a,i0)') 'calls MPI_Waitall=', iters
    write(*, '(a,i0)') 'calls MPI_Allreduce=', iters
    write(*, '(a,f0.1)') 'sum=', total
    write(*, '(a,f0.1)') 'expected=', dble(size) * dble(size - 1) / 2d0
    write(*, '(a,f0.6)') 'wall_s=', t1 - t0
  end if
  call MPI_FINALIZE(ierr)
end program fortran_calls
