! mpi_fortran_test: the one-sided chapter from Fortran (`use mpi`, or
! `include 'mpif.h'` when built with -DMPIF_H), on 2 or more ranks.
! Every window flavor; fence, PSCW (post/start/complete/wait and test),
! lock/unlock, lock_all/flush; put, get, accumulate, get_accumulate,
! fetch_and_op, compare_and_swap and their request forms; a derived
! datatype and MPI_BOTTOM with absolute addresses; the predefined
! attributes, the group, the name, shared_query, MPI_Alloc_mem, and an
! error returned through MPI_ERRORS_RETURN. A failed check prints
! "FAIL rank R: what: expected E, got G" and aborts the job with status 1.
! Through rmampi every window here is librma's (RMA_MPI_STATS: 5 windows).
program mpi_fortran_test
  use iso_c_binding
#ifdef MPIF_H
  implicit none
  include 'mpif.h'
#else
  use mpi
  implicit none
#endif
  integer, parameter :: n = 16
  integer :: ierr, rank, nprocs, win, i, r, disp_unit, flag_int
  integer(kind=MPI_ADDRESS_KIND) :: sz, baseptr, tdisp, attr, addr
  integer, pointer :: mem(:)
  integer :: buf(n), got(n), one, old, cmp, res
  logical :: flag
  integer :: group, wgroup, cmpres, req(4), others_group, dtype, errclass
  integer :: statuses(MPI_STATUS_SIZE, 4)
  double precision :: dmem(n), dbuf(n)
  integer :: shcomm, shrank, shsize, shwin, shdisp
  integer, pointer :: shmem(:)
  character(len=MPI_MAX_OBJECT_NAME) :: wname
  integer :: namelen, dynwin, target
  integer, target :: dyn(n)
  integer :: marker
  integer(kind=MPI_ADDRESS_KIND) :: dynaddr, absaddr(1)
  integer :: blens(1), absint
  integer(kind=MPI_ADDRESS_KIND) :: msize, mptr
  integer, pointer :: amem(:)
  integer :: awin
  type(c_ptr) :: cp

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs < 2) then
    if (rank == 0) print *, 'mpi_fortran_test: needs 2 or more ranks'
    call MPI_Abort(MPI_COMM_WORLD, 77, ierr)
  end if

  ! ---- MPI_Win_allocate: attributes, fence, put, get, accumulate ----
  sz = n * 4
  call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win, ierr)
  call ok(ierr, 'MPI_Win_allocate')
  cp = transfer(baseptr, cp)
  call c_f_pointer(cp, mem, [n])
  mem = -1
  call MPI_Win_get_attr(win, MPI_WIN_BASE, attr, flag, ierr)
  call ok(ierr, 'MPI_Win_get_attr(MPI_WIN_BASE)')
  call expect_true('MPI_WIN_BASE is set', flag)
  call expect8('MPI_WIN_BASE', baseptr, attr)
  flag = .false.
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, attr, flag, ierr)
  call ok(ierr, 'MPI_Win_get_attr(MPI_WIN_SIZE)')
  call expect_true('MPI_WIN_SIZE is set', flag)
  call expect8('MPI_WIN_SIZE', sz, attr)
  flag = .false.
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, attr, flag, ierr)
  call ok(ierr, 'MPI_Win_get_attr(MPI_WIN_DISP_UNIT)')
  call expect_true('MPI_WIN_DISP_UNIT is set', flag)
  call expect8('MPI_WIN_DISP_UNIT', 4_MPI_ADDRESS_KIND, attr)
  flag = .false.
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, attr, flag, ierr)
  call ok(ierr, 'MPI_Win_get_attr(MPI_WIN_CREATE_FLAVOR)')
  call expect_true('MPI_WIN_CREATE_FLAVOR is set', flag)
  call expect8('MPI_WIN_CREATE_FLAVOR', int(MPI_WIN_FLAVOR_ALLOCATE, MPI_ADDRESS_KIND), attr)
  flag = .false.
  call MPI_Win_get_attr(win, MPI_WIN_MODEL, attr, flag, ierr)
  call ok(ierr, 'MPI_Win_get_attr(MPI_WIN_MODEL)')
  call expect_true('MPI_WIN_MODEL is set', flag)
  call expect8('MPI_WIN_MODEL', int(MPI_WIN_UNIFIED, MPI_ADDRESS_KIND), attr)

  call MPI_Win_get_group(win, wgroup, ierr)
  call ok(ierr, 'MPI_Win_get_group')
  call MPI_Comm_group(MPI_COMM_WORLD, group, ierr)
  call MPI_Group_compare(group, wgroup, cmpres, ierr)
  call expect('MPI_Win_get_group: compared with MPI_COMM_WORLD''s group', MPI_IDENT, cmpres)
  call MPI_Group_free(wgroup, ierr)

  call MPI_Win_set_name(win, 'fortran window   ', ierr)
  call ok(ierr, 'MPI_Win_set_name')
  call MPI_Win_get_name(win, wname, namelen, ierr)
  call expect('MPI_Win_get_name: length', 14, namelen)
  if (wname(1:namelen) /= 'fortran window') call fail('MPI_Win_get_name: expected "fortran window", got "' &
      // wname(1:namelen) // '"')

  call MPI_Win_fence(0, win, ierr)
  call ok(ierr, 'MPI_Win_fence')
  do r = 0, nprocs - 1
    if (r /= rank) then
      one = 100 * (rank + 1)
      tdisp = rank
      call MPI_Put(one, 1, MPI_INTEGER, r, tdisp, 1, MPI_INTEGER, win, ierr)
      call ok(ierr, 'MPI_Put')
    end if
  end do
  call MPI_Win_fence(0, win, ierr)
  do r = 0, nprocs - 1
    if (r /= rank .and. r < n) call expect('fence epoch: the put of each other rank', 100 * (r + 1), mem(r + 1))
  end do
  ! get the right neighbour's slot 0 or 1, accumulate into rank 0's last slot
  target = mod(rank + 1, nprocs)
  got = -7
  tdisp = 0
  if (target == 0) tdisp = 1
  call MPI_Get(got, 1, MPI_INTEGER, target, tdisp, 1, MPI_INTEGER, win, ierr)
  call ok(ierr, 'MPI_Get')
  one = rank + 1
  tdisp = n - 1
  mem(n) = 0
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call expect('MPI_Get in a fence epoch', 100 * (int(tdisp_of(target)) + 1), got(1))
  call MPI_Accumulate(one, 1, MPI_INTEGER, 0, tdisp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call ok(ierr, 'MPI_Accumulate')
  call MPI_Win_fence(0, win, ierr)
  if (rank == 0) call expect('MPI_Accumulate SUM of rank+1 over every rank', nprocs * (nprocs + 1) / 2, mem(n))

  ! ---- passive target: lock_all + flush, fetch_and_op, compare_and_swap, get_accumulate ----
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) mem(1) = 0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock_all(0, win, ierr)
  call ok(ierr, 'MPI_Win_lock_all')
  one = 1
  tdisp = 0
  call MPI_Fetch_and_op(one, old, MPI_INTEGER, 0, tdisp, MPI_SUM, win, ierr)
  call ok(ierr, 'MPI_Fetch_and_op')
  call MPI_Win_flush(0, win, ierr)
  call ok(ierr, 'MPI_Win_flush')
  if (old < 0 .or. old >= nprocs) call expect('MPI_Fetch_and_op: an old value in 0..nprocs-1', 0, old)
  call MPI_Win_unlock_all(win, ierr)
  call ok(ierr, 'MPI_Win_unlock_all')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call expect('MPI_Fetch_and_op: the counter', nprocs, mem(1))
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! compare_and_swap: only one rank swaps 0 -> rank+1 at rank 0's slot 2
  if (rank == 0) mem(3) = 0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
  call ok(ierr, 'MPI_Win_lock(shared)')
  cmp = 0
  one = rank + 1
  res = -1
  tdisp = 2
  call MPI_Compare_and_swap(one, cmp, res, MPI_INTEGER, 0, tdisp, win, ierr)
  call ok(ierr, 'MPI_Compare_and_swap')
  call MPI_Win_unlock(0, win, ierr)
  call ok(ierr, 'MPI_Win_unlock')
  flag_int = 0
  if (res == 0) flag_int = 1
  call MPI_Allreduce(MPI_IN_PLACE, flag_int, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect('MPI_Compare_and_swap: ranks that saw 0 (exactly one)', 1, flag_int)

  ! get_accumulate with MPI_NO_OP reads; exclusive lock + put + unlock writes
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win, ierr)
  call ok(ierr, 'MPI_Win_lock(exclusive)')
  buf(1:4) = [1, 2, 3, 4] + 10 * rank
  tdisp = 8
  call MPI_Put(buf, 4, MPI_INTEGER, target, tdisp, 4, MPI_INTEGER, win, ierr)
  call MPI_Win_flush(target, win, ierr)
  got = -1
  call MPI_Get_accumulate(buf, 0, MPI_INTEGER, got, 4, MPI_INTEGER, target, tdisp, 4, MPI_INTEGER, MPI_NO_OP, win, ierr)
  call ok(ierr, 'MPI_Get_accumulate(MPI_NO_OP)')
  call MPI_Win_unlock(target, win, ierr)
  do i = 1, 4
    call expect('MPI_Get_accumulate(MPI_NO_OP) after the put', i + 10 * rank, got(i))
  end do

  ! request forms inside lock_all: rput, then rget of its two elements beside an raccumulate of a
  ! third (distinct locations, one MPI_Waitall), then rget_accumulate of the third
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock_all(0, win, ierr)
  buf(1:2) = [7, 8] + rank
  tdisp = 12
  call MPI_Rput(buf, 2, MPI_INTEGER, target, tdisp, 2, MPI_INTEGER, win, req(1), ierr)
  call ok(ierr, 'MPI_Rput')
  call MPI_Wait(req(1), statuses(:, 1), ierr)
  call MPI_Win_flush(target, win, ierr)
  got = -1
  call MPI_Rget(got, 2, MPI_INTEGER, target, tdisp, 2, MPI_INTEGER, win, req(1), ierr)
  call ok(ierr, 'MPI_Rget')
  one = 5
  call MPI_Raccumulate(one, 1, MPI_INTEGER, target, tdisp + 2, 1, MPI_INTEGER, MPI_SUM, win, req(2), ierr)
  call ok(ierr, 'MPI_Raccumulate')
  call MPI_Waitall(2, req, statuses, ierr)
  call ok(ierr, 'MPI_Waitall')
  call MPI_Win_flush(target, win, ierr)
  call MPI_Rget_accumulate(one, 1, MPI_INTEGER, res, 1, MPI_INTEGER, target, tdisp + 2, 1, MPI_INTEGER, &
      MPI_NO_OP, win, req(3), ierr)
  call ok(ierr, 'MPI_Rget_accumulate')
  call MPI_Wait(req(3), statuses(:, 3), ierr)
  call MPI_Win_unlock_all(win, ierr)
  call expect('MPI_Rget: first element', 7 + rank, got(1))
  call expect('MPI_Rget: second element', 8 + rank, got(2))
  ! the third element was -1 (never written before): -1 + 5
  call expect('MPI_Rget_accumulate: after MPI_Raccumulate of 5', 4, res)

  ! an error returned, not fatal: a rank outside the window
  call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN, ierr)
  call MPI_Win_lock_all(0, win, ierr)
  tdisp = 0
  call MPI_Put(one, 1, MPI_INTEGER, nprocs + 3, tdisp, 1, MPI_INTEGER, win, ierr)
  if (ierr == MPI_SUCCESS) call fail('MPI_Put to rank nprocs+3: expected an error, got MPI_SUCCESS')
  call MPI_Error_class(ierr, errclass, i)
  call expect('MPI_Put to rank nprocs+3: error class MPI_ERR_RANK', MPI_ERR_RANK, errclass)
  call MPI_Win_unlock_all(win, ierr)

  call MPI_Win_free(win, ierr)
  call ok(ierr, 'MPI_Win_free')
  call expect('MPI_Win_free sets MPI_WIN_NULL', MPI_WIN_NULL, win)

  ! ---- MPI_Win_create over a Fortran array: PSCW, vector type, MPI_BOTTOM ----
  dmem = 0.0d0
  sz = n * 8
  call MPI_Win_create(dmem, sz, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call ok(ierr, 'MPI_Win_create')
  call MPI_Comm_group(MPI_COMM_WORLD, group, ierr)
  call MPI_Group_excl(group, 1, [0], others_group, ierr)
  call MPI_Type_vector(2, 1, 3, MPI_DOUBLE_PRECISION, dtype, ierr)
  call MPI_Type_commit(dtype, ierr)
  if (rank == 0) then
    call MPI_Win_post(others_group, 0, win, ierr)
    call ok(ierr, 'MPI_Win_post')
    flag = .false.
    do while (.not. flag)
      call MPI_Win_test(win, flag, ierr)
      call ok(ierr, 'MPI_Win_test')
    end do
    ! each rank r wrote 1000r+1 and 1000r+2 at 3(r-1)... stride 3: slots 4r-4.. see below
    do r = 1, nprocs - 1
      if (4 * r > n) cycle
      call expectd('PSCW: vector put, first element', 1000.0d0 * r + 1, dmem(4 * (r - 1) + 1))
      call expectd('PSCW: vector put, second element', 1000.0d0 * r + 2, dmem(4 * (r - 1) + 4))
    end do
  else
    call MPI_Group_incl(group, 1, [0], wgroup, ierr)
    call MPI_Win_start(wgroup, 0, win, ierr)
    call ok(ierr, 'MPI_Win_start')
    dbuf(1) = 1000.0d0 * rank + 1
    dbuf(2) = 1000.0d0 * rank + 2
    tdisp = 4 * (rank - 1)
    if (4 * rank <= n) then
      call MPI_Put(dbuf, 2, MPI_DOUBLE_PRECISION, 0, tdisp, 1, dtype, win, ierr)
      call ok(ierr, 'MPI_Put with a vector target type')
    end if
    call MPI_Win_complete(win, ierr)
    call ok(ierr, 'MPI_Win_complete')
    call MPI_Group_free(wgroup, ierr)
  end if
  ! MPI_BOTTOM with an absolute address: rank 1 puts `marker` into rank 0's slot n
  call MPI_Win_fence(0, win, ierr)
  marker = 4242
  call MPI_Get_address(marker, absaddr(1), ierr)
  blens(1) = 1
  call MPI_Type_create_hindexed(1, blens, absaddr, MPI_INTEGER, absint, ierr)
  call MPI_Type_commit(absint, ierr)
  if (rank == 1) then
    tdisp = n - 1
    call MPI_Put(MPI_BOTTOM, 1, absint, 0, tdisp, 1, MPI_INTEGER, win, ierr)
    call ok(ierr, 'MPI_Put from MPI_BOTTOM')
  end if
  call MPI_Win_fence(0, win, ierr)
  if (rank == 0) call expect('MPI_Put from MPI_BOTTOM (the bits of marker)', 4242, transfer(dmem(n), marker))
  call MPI_Type_free(absint, ierr)
  call MPI_Type_free(dtype, ierr)
  call MPI_Group_free(others_group, ierr)
  call MPI_Group_free(group, ierr)
  call MPI_Win_free(win, ierr)

  ! ---- MPI_Win_create_dynamic: attach, the address by broadcast, detach ----
  call MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, dynwin, ierr)
  call ok(ierr, 'MPI_Win_create_dynamic')
  dyn = 0
  sz = n * 4
  call MPI_Win_attach(dynwin, dyn, sz, ierr)
  call ok(ierr, 'MPI_Win_attach')
  call MPI_Get_address(dyn(1), dynaddr, ierr)
  call MPI_Bcast(dynaddr, 1, MPI_AINT, 0, MPI_COMM_WORLD, ierr)
  call MPI_Win_lock_all(0, dynwin, ierr)
  if (rank == 1) then
    one = 99
    call MPI_Put(one, 1, MPI_INTEGER, 0, dynaddr + 4 * 5, 1, MPI_INTEGER, dynwin, ierr)
    call ok(ierr, 'MPI_Put to an attached region')
    call MPI_Win_flush(0, dynwin, ierr)
  end if
  call MPI_Win_unlock_all(dynwin, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call expect('dynamic window: the put at element 6', 99, dyn(6))
  call MPI_Win_detach(dynwin, dyn, ierr)
  call ok(ierr, 'MPI_Win_detach')
  call MPI_Win_free(dynwin, ierr)

  ! ---- MPI_Win_allocate_shared + shared_query, loads and stores ----
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, shcomm, ierr)
  call MPI_Comm_rank(shcomm, shrank, ierr)
  call MPI_Comm_size(shcomm, shsize, ierr)
  sz = 4 * n
  ! TYPE(C_PTR) base pointers: `use mpi` routes these to the _cptr_ forms (Open MPI)
  call MPI_Win_allocate_shared(sz, 4, MPI_INFO_NULL, shcomm, cp, shwin, ierr)
  call ok(ierr, 'MPI_Win_allocate_shared')
  if (.not. c_associated(cp)) call fail('MPI_Win_allocate_shared: a NULL base pointer')
  cp = c_null_ptr
  call MPI_Win_shared_query(shwin, 0, msize, shdisp, cp, ierr)
  call ok(ierr, 'MPI_Win_shared_query')
  call expect8('MPI_Win_shared_query: size', 4_MPI_ADDRESS_KIND * n, msize)
  call expect('MPI_Win_shared_query: disp_unit', 4, shdisp)
  if (.not. c_associated(cp)) call fail('MPI_Win_shared_query: a NULL base pointer')
  call c_f_pointer(cp, shmem, [n])
  call MPI_Win_lock_all(MPI_MODE_NOCHECK, shwin, ierr)
  if (shrank < n) shmem(shrank + 1) = 500 + shrank
  call MPI_Win_sync(shwin, ierr)
  call ok(ierr, 'MPI_Win_sync')
  call MPI_Barrier(shcomm, ierr)
  call MPI_Win_sync(shwin, ierr)
  do r = 0, min(shsize, n) - 1
    call expect('allocate_shared: a store of each rank, seen through shared_query', 500 + r, shmem(r + 1))
  end do
  call MPI_Win_unlock_all(shwin, ierr)
  call MPI_Win_free(shwin, ierr)
  call MPI_Comm_free(shcomm, ierr)

  ! ---- MPI_Alloc_mem under MPI_Win_create ----
  msize = 4 * n
  call MPI_Alloc_mem(msize, MPI_INFO_NULL, mptr, ierr)
  call ok(ierr, 'MPI_Alloc_mem')
  cp = transfer(mptr, cp)
  call c_f_pointer(cp, amem, [n])
  amem = 0
  call MPI_Win_create(amem, msize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, awin, ierr)
  call ok(ierr, 'MPI_Win_create over MPI_Alloc_mem')
  call MPI_Win_fence(0, awin, ierr)
  one = 31 + rank
  tdisp = rank
  if (rank < n) call MPI_Put(one, 1, MPI_INTEGER, 0, tdisp, 1, MPI_INTEGER, awin, ierr)
  call MPI_Win_fence(0, awin, ierr)
  if (rank == 0) then
    do r = 0, min(nprocs, n) - 1
      call expect('window over MPI_Alloc_mem: each rank''s put', 31 + r, amem(r + 1))
    end do
  end if
  call MPI_Win_free(awin, ierr)
  call MPI_Free_mem(amem, ierr)
  call ok(ierr, 'MPI_Free_mem')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'mpi_fortran_test: ', nprocs, ' ranks passed'
  call MPI_Finalize(ierr)

contains

  ! which slot of `target` the MPI_Get above read: slot 0, or 1 at rank 0 (its own slot is empty)
  integer function tdisp_of(t)
    integer, intent(in) :: t
    tdisp_of = 0
    if (t == 0) tdisp_of = 1
  end function

  subroutine fail(what)
    character(len=*), intent(in) :: what
    integer :: e
    write (0, '(a,i0,a,a)') 'FAIL rank ', rank, ': ', what
    flush (0)
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
    stop 1
  end subroutine

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    character(len=MPI_MAX_ERROR_STRING) :: s
    integer :: l, e
    if (code /= MPI_SUCCESS) then
      call MPI_Error_string(code, s, l, e)
      call fail(what // ': expected MPI_SUCCESS, got ' // s(1:l))
    end if
  end subroutine

  subroutine expect(what, e, g)
    character(len=*), intent(in) :: what
    integer, intent(in) :: e, g
    character(len=64) :: t
    if (e /= g) then
      write (t, '(a,i0,a,i0)') ': expected ', e, ', got ', g
      call fail(what // trim(t))
    end if
  end subroutine

  subroutine expect8(what, e, g)
    character(len=*), intent(in) :: what
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: e, g
    character(len=64) :: t
    if (e /= g) then
      write (t, '(a,i0,a,i0)') ': expected ', e, ', got ', g
      call fail(what // trim(t))
    end if
  end subroutine

  subroutine expectd(what, e, g)
    character(len=*), intent(in) :: what
    double precision, intent(in) :: e, g
    character(len=80) :: t
    if (e /= g) then
      write (t, '(a,f0.1,a,f0.1)') ': expected ', e, ', got ', g
      call fail(what // trim(t))
    end if
  end subroutine

  subroutine expect_true(what, f)
    character(len=*), intent(in) :: what
    logical, intent(in) :: f
    if (.not. f) call fail(what // ': expected .true., got .false.')
  end subroutine

end program
