! mpi_fortran08_test: the one-sided chapter through the mpi_f08 module, on
! 2 or more ranks: MPI_Win_allocate (TYPE(C_PTR) base), MPI_Win_create over
! a Fortran array (a choice buffer: an array descriptor), create_dynamic with
! attach, allocate_shared with shared_query; fence, PSCW with MPI_Win_test,
! lock/unlock, lock_all/flush; put, get, accumulate, fetch_and_op,
! compare_and_swap, rput; the predefined attributes, the group, an error
! returned through MPI_ERRORS_RETURN, calls that leave the optional
! ierror out, the window name (not under Open MPI 4.1, whose mpi_f08
! MPI_Win_get_name returns one character), MPI_BOTTOM, MPI_Alloc_mem, and
! with -DHAVE_LARGE_COUNT the INTEGER(MPI_ADDRESS_KIND) disp_unit form of
! MPI_Win_shared_query. A failed check prints "FAIL rank R: what" and aborts
! with status 1. Through rmampi every window is librma's (RMA_MPI_STATS:
! 5 windows).
program mpi_fortran08_test
  use mpi_f08
  use iso_c_binding
  implicit none
  integer, parameter :: n = 16
  integer :: ierr, rank, nprocs, i, r, target, old, one, res, cmpres, errclass, shrank, shsize, du
  integer(kind=MPI_ADDRESS_KIND) :: sz, tdisp, attr, dynaddr, msize
  type(MPI_Win) :: win, dwin, swin
  type(MPI_Group) :: group, wgroup, g0, others
  type(MPI_Comm) :: shcomm
  type(MPI_Request) :: req
  type(c_ptr) :: cp
  integer, pointer :: mem(:), shmem(:)
  integer, target :: arr(n), dyn(n)
  integer :: got(n)
  logical :: flag
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  character(len=MPI_MAX_OBJECT_NAME) :: wname
  integer :: vlen, namelen, marker
  type(MPI_Datatype) :: absint
  integer(kind=MPI_ADDRESS_KIND) :: absaddr(1), mptr
#ifdef HAVE_LARGE_COUNT
  integer(kind=MPI_ADDRESS_KIND) :: dul
#endif
  integer, pointer :: amem(:)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  if (nprocs < 2) call fail('needs 2 or more ranks')
  target = mod(rank + 1, nprocs)

  ! ---- allocate: attributes, fence put and get, passive fetch_and_op and CAS ----
  sz = 4 * n
  call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, cp, win, ierr)
  call ok(ierr, 'MPI_Win_allocate')
  call c_f_pointer(cp, mem, [n])
  mem = -1
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, attr, flag, ierr)
  if (.not. flag .or. attr /= sz) call fail('MPI_WIN_SIZE')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, attr, flag)
  if (.not. flag .or. attr /= 4) call fail('MPI_WIN_DISP_UNIT')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, attr, flag)
  if (.not. flag .or. attr /= transfer(cp, attr)) call fail('MPI_WIN_BASE')
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, attr, flag)
  if (.not. flag .or. attr /= MPI_WIN_FLAVOR_ALLOCATE) call fail('MPI_WIN_CREATE_FLAVOR')
  call MPI_Win_get_attr(win, MPI_WIN_MODEL, attr, flag)
  if (.not. flag .or. attr /= MPI_WIN_UNIFIED) call fail('MPI_WIN_MODEL')
  call MPI_Get_library_version(version, vlen)
  if (index(version(1:vlen), 'Open MPI') == 0) then
    call MPI_Win_set_name(win, 'f08 window  ')
    call MPI_Win_get_name(win, wname, namelen)
    if (namelen /= 10 .or. wname(1:namelen) /= 'f08 window') call fail('MPI_Win_get_name: "' // wname(1:namelen) // '"')
  end if
  call MPI_Win_get_group(win, wgroup)
  call MPI_Comm_group(MPI_COMM_WORLD, group)
  call MPI_Group_compare(group, wgroup, cmpres)
  if (cmpres /= MPI_IDENT) call fail('MPI_Win_get_group: not MPI_IDENT to the world group')
  call MPI_Group_free(wgroup)

  call MPI_Win_fence(0, win)
  one = 100 + rank
  tdisp = rank
  call MPI_Put(one, 1, MPI_INTEGER, target, tdisp, 1, MPI_INTEGER, win, ierr)
  call ok(ierr, 'MPI_Put')
  call MPI_Win_fence(0, win)
  r = mod(rank - 1 + nprocs, nprocs)
  call expect('fence: the put of the left neighbour', 100 + r, mem(r + 1))
  got = -5
  tdisp = rank
  call MPI_Get(got, 1, MPI_INTEGER, target, tdisp, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call expect('fence: MPI_Get of my own put', 100 + rank, got(1))

  if (rank == 0) mem(n) = 0
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Win_lock_all(0, win)
  one = 1
  tdisp = n - 1
  call MPI_Fetch_and_op(one, old, MPI_INTEGER, 0, tdisp, MPI_SUM, win, ierr)
  call ok(ierr, 'MPI_Fetch_and_op')
  call MPI_Win_flush(0, win)
  call MPI_Win_unlock_all(win)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call expect('MPI_Fetch_and_op: the counter', nprocs, mem(n))

  if (rank == 0) mem(n - 1) = 0
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win)
  one = rank + 1
  res = -1
  old = 0
  tdisp = n - 2
  call MPI_Compare_and_swap(one, old, res, MPI_INTEGER, 0, tdisp, win, ierr)
  call ok(ierr, 'MPI_Compare_and_swap')
  call MPI_Accumulate(one, 1, MPI_INTEGER, 0, tdisp - 1, 1, MPI_INTEGER, MPI_SUM, win)
  call MPI_Win_unlock(0, win)
  i = 0
  if (res == 0) i = 1
  call MPI_Allreduce(MPI_IN_PLACE, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call expect('MPI_Compare_and_swap: ranks that saw 0', 1, i)

  call MPI_Win_lock_all(0, win)
  one = 7 + rank
  tdisp = 5
  call MPI_Rput(one, 1, MPI_INTEGER, target, tdisp, 1, MPI_INTEGER, win, req, ierr)
  call ok(ierr, 'MPI_Rput')
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call MPI_Win_flush(target, win)
  call MPI_Get(res, 1, MPI_INTEGER, target, tdisp, 1, MPI_INTEGER, win)
  call MPI_Win_flush(target, win)
  call expect('MPI_Rput, read back', 7 + rank, res)
  call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN)
  call MPI_Put(one, 1, MPI_INTEGER, nprocs + 3, tdisp, 1, MPI_INTEGER, win, ierr)
  if (ierr == MPI_SUCCESS) call fail('MPI_Put to rank nprocs+3: expected an error')
  call MPI_Error_class(ierr, errclass)
  call expect('MPI_Put to rank nprocs+3: class', MPI_ERR_RANK, errclass)
  call MPI_Win_unlock_all(win)
  call MPI_Win_free(win)
  if (win /= MPI_WIN_NULL) call fail('MPI_Win_free: the handle is not MPI_WIN_NULL')

  ! ---- create over a Fortran array: PSCW with MPI_Win_test ----
  arr = 0
  sz = 4 * n
  call MPI_Win_create(arr, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call ok(ierr, 'MPI_Win_create')
  call MPI_Group_incl(group, 1, [0], g0)
  call MPI_Group_excl(group, 1, [0], others)
  if (rank == 0) then
    call MPI_Win_post(others, 0, win)
    flag = .false.
    do while (.not. flag)
      call MPI_Win_test(win, flag)
    end do
    do r = 1, min(nprocs, n) - 1
      call expect('PSCW: each origin''s put', 50 + r, arr(r + 1))
    end do
  else
    call MPI_Win_start(g0, 0, win)
    one = 50 + rank
    tdisp = rank
    if (rank < n) call MPI_Put(one, 1, MPI_INTEGER, 0, tdisp, 1, MPI_INTEGER, win)
    call MPI_Win_complete(win)
  end if
  ! MPI_BOTTOM with an absolute address: rank 1 puts `marker` into rank 0's last element
  call MPI_Win_fence(0, win)
  marker = 4242
  call MPI_Get_address(marker, absaddr(1))
  call MPI_Type_create_hindexed(1, [1], absaddr, MPI_INTEGER, absint)
  call MPI_Type_commit(absint)
  if (rank == 1) then
    tdisp = n - 1
    call MPI_Put(MPI_BOTTOM, 1, absint, 0, tdisp, 1, MPI_INTEGER, win, ierr)
    call ok(ierr, 'MPI_Put from MPI_BOTTOM')
  end if
  call MPI_Win_fence(0, win)
  if (rank == 0) call expect('MPI_Put from MPI_BOTTOM', 4242, arr(n))
  call MPI_Type_free(absint)
  call MPI_Group_free(g0)
  call MPI_Group_free(others)
  call MPI_Win_free(win)

  ! ---- MPI_Alloc_mem under MPI_Win_create ----
  call MPI_Alloc_mem(sz, MPI_INFO_NULL, cp, ierr)
  call ok(ierr, 'MPI_Alloc_mem')
  call c_f_pointer(cp, amem, [n])
  amem = 0
  call MPI_Win_create(amem, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  one = 31 + rank
  tdisp = rank
  if (rank < n) call MPI_Put(one, 1, MPI_INTEGER, 0, tdisp, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  if (rank == 0) then
    do r = 0, min(nprocs, n) - 1
      call expect('window over MPI_Alloc_mem: each rank''s put', 31 + r, amem(r + 1))
    end do
  end if
  call MPI_Win_free(win)
  call MPI_Free_mem(amem, ierr)
  call ok(ierr, 'MPI_Free_mem')

  ! ---- dynamic: attach, an address by broadcast ----
  call MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, dwin)
  dyn = 0
  call MPI_Win_attach(dwin, dyn, sz)
  call MPI_Get_address(dyn(1), dynaddr)
  call MPI_Bcast(dynaddr, 1, MPI_AINT, 0, MPI_COMM_WORLD)
  call MPI_Win_lock_all(0, dwin)
  if (rank == 1) then
    one = 99
    call MPI_Put(one, 1, MPI_INTEGER, 0, dynaddr + 8, 1, MPI_INTEGER, dwin)
    call MPI_Win_flush(0, dwin)
  end if
  call MPI_Win_unlock_all(dwin)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call expect('dynamic: the put at element 3', 99, dyn(3))
  call MPI_Win_detach(dwin, dyn)
  call MPI_Win_free(dwin)

  ! ---- allocate_shared + shared_query ----
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, shcomm)
  call MPI_Comm_rank(shcomm, shrank)
  call MPI_Comm_size(shcomm, shsize)
  call MPI_Win_allocate_shared(sz, 4, MPI_INFO_NULL, shcomm, cp, swin, ierr)
  call ok(ierr, 'MPI_Win_allocate_shared')
  call MPI_Win_shared_query(swin, 0, msize, du, cp, ierr)
  call ok(ierr, 'MPI_Win_shared_query')
  if (msize /= sz .or. du /= 4) call fail('MPI_Win_shared_query: size or disp_unit')
#ifdef HAVE_LARGE_COUNT
  msize = 0
  call MPI_Win_shared_query(swin, 0, msize, dul, cp, ierr)
  call ok(ierr, 'MPI_Win_shared_query (MPI_ADDRESS_KIND disp_unit)')
  if (msize /= sz .or. dul /= 4) call fail('MPI_Win_shared_query (MPI_ADDRESS_KIND disp_unit): size or disp_unit')
#endif
  call c_f_pointer(cp, shmem, [n])
  call MPI_Win_lock_all(MPI_MODE_NOCHECK, swin)
  if (shrank < n) shmem(shrank + 1) = 500 + shrank
  call MPI_Win_sync(swin)
  call MPI_Barrier(shcomm)
  call MPI_Win_sync(swin)
  do r = 0, min(shsize, n) - 1
    call expect('allocate_shared: each rank''s store', 500 + r, shmem(r + 1))
  end do
  call MPI_Win_unlock_all(swin)
  call MPI_Win_free(swin)
  call MPI_Comm_free(shcomm)
  call MPI_Group_free(group)

  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'mpi_fortran08_test: ', nprocs, ' ranks passed'
  call MPI_Finalize()

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (0, '(a,i0,a,a)') 'FAIL rank ', rank, ': ', what
    flush (0)
    call MPI_Abort(MPI_COMM_WORLD, 1)
    stop 1
  end subroutine

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    character(len=MPI_MAX_ERROR_STRING) :: s
    integer :: l
    if (code /= MPI_SUCCESS) then
      call MPI_Error_string(code, s, l)
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

end program
