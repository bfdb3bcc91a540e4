! fortran_more: the wider coverage from Fortran. Each of `iters` laps: a
! ring exchange on persistent requests (MPI_SEND_INIT/MPI_RECV_INIT,
! MPI_STARTALL, MPI_WAITALL), the same started one by one (MPI_START), an
! MPI_IALLREDUCE with MPI_IN_PLACE completed by MPI_WAIT, and a matched
! probe and receive (MPI_MPROBE, MPI_MRECV), and exchanges completed by
! MPI_WAITANY and MPI_WAITSOME, whose indices must come back 1-based;
! once, a Cartesian ring (MPI_CART_CREATE) and MPI_REQUEST_FREE of the
! persistent requests. With a file name, each rank then writes its rank
! at offset 8 × rank through MPI-IO (MPI_FILE_OPEN, MPI_FILE_SET_VIEW with
! the 'native' representation, MPI_FILE_WRITE_AT, MPI_FILE_CLOSE).
!
! usage: mpirun -np N fortran_more [iters [file]]
! Rank 0 prints `calls MPI_<name>=<count per rank>`, `sum=` and
! `expected=` (equal when MPI_IN_PLACE worked), then `wall_s=`. A rank
! that sees an index out of 1..2 says so on stderr and aborts.
program fortran_more
  use mpi
  implicit none
  integer :: ierr, rank, size, iters, i, next, prev, nargs, cart, msg, req
  integer :: reqs(2), st(MPI_STATUS_SIZE), dims(1), more(2), idx, idxs(2), outc, left, k, fh
  integer(kind=MPI_OFFSET_KIND) :: disp, zero
  character(len=4096) :: fname
  logical :: periods(1)
  double precision :: out, in, total, t0, t1
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  iters = 10
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read(arg, *, iostat=ierr) iters
    if (ierr /= 0 .or. iters < 1) then
      if (rank == 0) write(0, '(a)') 'usage: fortran_more [iters >= 1]'
      call MPI_FINALIZE(ierr)
      stop 2
    end if
  end if
  fname = ''
  if (nargs >= 2) call get_command_argument(2, fname)
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)
  dims(1) = size
  periods(1) = .true.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_SEND_INIT(out, 1, MPI_DOUBLE_PRECISION, next, 1, cart, reqs(1), ierr)
  call MPI_RECV_INIT(in, 1, MPI_DOUBLE_PRECISION, prev, 1, cart, reqs(2), ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t0 = MPI_WTIME()
  do i = 1, iters
    out = rank
    call MPI_STARTALL(2, reqs, ierr)
    call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
    call MPI_START(reqs(2), ierr)
    call MPI_START(reqs(1), ierr)
    call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
    total = in
    call MPI_IALLREDUCE(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    call MPI_SEND(out, 1, MPI_DOUBLE_PRECISION, next, 2, MPI_COMM_WORLD, ierr)
    call MPI_MPROBE(prev, 2, MPI_COMM_WORLD, msg, st, ierr)
    call MPI_MRECV(in, 1, MPI_DOUBLE_PRECISION, msg, MPI_STATUS_IGNORE, ierr)
    call MPI_IRECV(in, 1, MPI_DOUBLE_PRECISION, prev, 3, MPI_COMM_WORLD, more(1), ierr)
    call MPI_ISEND(out, 1, MPI_DOUBLE_PRECISION, next, 3, MPI_COMM_WORLD, more(2), ierr)
    do k = 1, 2
      call MPI_WAITANY(2, more, idx, MPI_STATUS_IGNORE, ierr)
      call check_index(idx)
    end do
    call MPI_IRECV(in, 1, MPI_DOUBLE_PRECISION, prev, 4, MPI_COMM_WORLD, more(1), ierr)
    call MPI_ISEND(out, 1, MPI_DOUBLE_PRECISION, next, 4, MPI_COMM_WORLD, more(2), ierr)
    left = 2
    do while (left > 0)
      call MPI_WAITSOME(2, more, outc, idxs, MPI_STATUSES_IGNORE, ierr)
      do k = 1, outc
        call check_index(idxs(k))
      end do
      left = left - outc
    end do
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  t1 = MPI_WTIME()
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  call MPI_COMM_FREE(cart, ierr)
  if (len_trim(fname) > 0) then
    disp = 8 * rank
    zero = 0
    out = rank
    call MPI_FILE_OPEN(MPI_COMM_WORLD, trim(fname), MPI_MODE_CREATE + MPI_MODE_WRONLY, MPI_INFO_NULL, fh, ierr)
    if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
    call MPI_FILE_SET_VIEW(fh, disp, MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, 'native', MPI_INFO_NULL, ierr)
    call MPI_FILE_WRITE_AT(fh, zero, out, 1, MPI_DOUBLE_PRECISION, st, ierr)
    call MPI_FILE_CLOSE(fh, ierr)
    if (rank == 0) then
      write(*, '(a)') 'calls MPI_File_open=1'
      write(*, '(a)') 'calls MPI_File_set_view=1'
      write(*, '(a)') 'calls MPI_File_write_at=1'
      write(*, '(a)') 'calls MPI_File_close=1'
    end if
  end if
  if (rank == 0) then
    write(*, '(a)') 'calls MPI_Cart_create=1'
    write(*, '(a)') 'calls MPI_Send_init=1'
    write(*, '(a)') 'calls MPI_Recv_init=1'
    write(*, '(a,i0)') 'calls MPI_Startall=', iters
    write(*, '(a,i0)') 'calls MPI_Start=', 2 * iters
    write(*, '(a,i0)') 'calls MPI_Waitall=', 2 * iters
    write(*, '(a,i0)') 'calls MPI_Iallreduce=', iters
    write(*, '(a,i0)') 'calls MPI_Wait=', iters
    write(*, '(a,i0)') 'calls MPI_Mprobe=', iters
    write(*, '(a,i0)') 'calls MPI_Mrecv=', iters
    write(*, '(a)') 'calls MPI_Request_free=2'
    write(*, '(a,i0)') 'calls MPI_Waitany=', 2 * iters
    write(*, '(a,f0.1)') 'sum=', total
    write(*, '(a,f0.1)') 'expected=', dble(size) * dble(size - 1) / 2d0
    write(*, '(a,f0.6)') 'wall_s=', t1 - t0
  end if
  call MPI_FINALIZE(ierr)
contains
  subroutine check_index(j)
    integer, intent(in) :: j
    integer :: e
    if (j < 1 .or. j > 2) then
      write(0, '(a,i0)') 'fortran_more: request index out of 1..2: ', j
      call MPI_ABORT(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check_index
end program fortran_more
