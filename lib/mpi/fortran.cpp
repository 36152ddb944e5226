/* SPDX-License-Identifier: MIT */
/*
 * Fortran entry points (`include 'mpif.h'` and `use mpi`, docs/design/
 * mpi-dropin.md §2.1): the one-sided chapter and MPI_Init/MPI_Init_thread
 * under the names gfortran (and flang, ifort) give them, `mpi_put_` and so
 * on, every argument by reference, handles as MPI_Fint.
 *
 * Why the shim needs its own: Open MPI's Fortran bindings call PMPI_*
 * (never the shim's C entries), and MPICH's call MPI_* but the shim cannot
 * tell their windows apart from mpi_f08's, which call PMPI_* on them. With
 * these, a Fortran window is created by the shim's C path from the shim's
 * own code (so it is librma's when its communicator is on this host), and
 * every later call on it comes back here. Each entry converts the handles
 * (MPI_*_f2c / _c2f, the MPI's own), Fortran's MPI_BOTTOM and LOGICALs, and
 * calls the shim's C entry, which serves librma's windows and passes the
 * MPI's own through as before; the error handlers are the window's, raised
 * there, and *ierror gets the code.
 *
 * Passed to the MPI's Fortran binding (pmpi_*_) unchanged: MPI_Init (the
 * MPI's Fortran start-up must run; the shim's set-up follows it) and
 * MPI_Win_get_attr of anything but the five predefined attributes of a
 * librma window (Fortran attribute values follow the language of their
 * keyval, which only the MPI knows).
 *
 * mpi_f08 reaches these too: Open MPI's module calls this layer's
 * implementation functions (ompi_*_f, aliases at the end of this file),
 * MPICH's calls PMPI_* for creation and synchronization, so the shim defines
 * those subroutines of its (mpi_win_fence_f08_, ..., and the
 * INTEGER(MPI_ADDRESS_KIND) disp_unit forms *_f08_large_ where the MPI has
 * the _c entries). Windows the MPI's own Fortran code creates all the same
 * stay the MPI's (fromFortran() in win.cpp).
 */
#include "shim.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

/* The MPI's own Fortran bindings, present whenever a Fortran program calls these entries. */
extern "C" {
[[gnu::weak]] void pmpi_init_(MPI_Fint *ierror);
[[gnu::weak]] void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror);
#if !defined(OPEN_MPI) /* under Open MPI the shim defines it (below) and finds the MPI's with dlsym */
[[gnu::weak]] void pmpi_win_get_attr_(MPI_Fint *win, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
				      MPI_Fint *ierror);
#endif
}

namespace rmampi {

namespace {

/*
 * A predefined window attribute's Fortran keyval as C's. MPICH 4.0 numbers
 * them one above C's (mpif.h: MPI_WIN_BASE = 0x66000002; C's are odd),
 * later MPICH uses C's, as Open MPI does: both are taken.
 */
inline int cKeyval(int fortranKeyval)
{
#if defined(OPEN_MPI)
	return fortranKeyval;
#else
	return (fortranKeyval & 1) == 0 ? fortranKeyval - 1 : fortranKeyval;
#endif
}

/* Fortran's .TRUE. and .FALSE. as gfortran stores them (both MPIs configure the same). */
constexpr MPI_Fint kTrue = 1;
constexpr MPI_Fint kFalse = 0;

/*
 * Fortran's MPI_BOTTOM is a variable of the MPI's; a buffer argument that is
 * its address means MPI_BOTTOM. Open MPI: the common block
 * mpi_fortran_bottom_ (libmpi). MPICH: the address its Fortran set-up
 * (mpirinitf_, run lazily by its own bindings while MPIR_F_NeedInit is set,
 * as here) stores in MPIR_F_MPI_BOTTOM; mpi_f08's MPI_BOTTOM is the variable
 * MPIR_F08_MPI_BOTTOM itself.
 */
struct Bottom {
	void *address = nullptr;	 /* Open MPI; MPICH's mpi_f08 */
	void *const *variable = nullptr; /* MPICH's mpif.h / use mpi */
	int *needInit = nullptr;	 /* MPICH */
	void (*initFortran)() = nullptr; /* MPICH */
	Bottom()
	{
#if defined(OPEN_MPI)
		address = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
#else
		variable = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "MPIR_F_MPI_BOTTOM"));
		needInit = static_cast<int *>(dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit"));
		initFortran = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "mpirinitf_"));
		address = dlsym(RTLD_DEFAULT, "MPIR_F08_MPI_BOTTOM");
#endif
	}
};

inline const Bottom &bottom()
{
	static const Bottom b;
	return b;
}

/* A buffer argument of the mpif.h / use mpi entries. */
inline void *buf(void *p)
{
	const Bottom &b = bottom();
	if (b.variable) {
		/* MPICH: as its own bindings do, set Fortran's constants up on first use. */
		if (b.needInit && *b.needInit && b.initFortran) [[unlikely]] {
			b.initFortran();
			*b.needInit = 0;
		}
		return p && p == *b.variable ? MPI_BOTTOM : p;
	}
	return p && p == b.address ? MPI_BOTTOM : p;
}

#if !defined(OPEN_MPI)
/* A buffer argument of MPICH's mpi_f08 subroutines (the first word of its descriptor). */
inline void *bufF08(void *p)
{
	return p && p == bottom().address ? MPI_BOTTOM : p;
}
#endif

/* The MPI's own Fortran MPI_Win_get_attr, for every attribute the shim does not answer. */
using GetAttrFn = void(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
GetAttrFn *mpiGetAttr()
{
#if defined(OPEN_MPI)
	/* The next definition after the shim's own (which mpi_f08 reaches as pmpi_win_get_attr_). */
	static GetAttrFn *const fn = reinterpret_cast<GetAttrFn *>(dlsym(RTLD_NEXT, "pmpi_win_get_attr_"));
	return fn;
#else
	return pmpi_win_get_attr_;
#endif
}

inline MPI_Win win(const MPI_Fint *w)
{
	return PMPI_Win_f2c(*w);
}

inline MPI_Datatype type(const MPI_Fint *t)
{
	return PMPI_Type_f2c(*t);
}

inline MPI_Op op(const MPI_Fint *o)
{
	return PMPI_Op_f2c(*o);
}

inline MPI_Info info(const MPI_Fint *i)
{
	return PMPI_Info_f2c(*i);
}

inline MPI_Comm comm(const MPI_Fint *c)
{
	return PMPI_Comm_f2c(*c);
}

/* A Fortran CHARACTER argument as C text: trailing blanks are not part of it. */
std::string text(const char *s, size_t len)
{
	while (len > 0 && s[len - 1] == ' ')
		--len;
	return std::string(s, len);
}

/* *ierror = @rc; mpi_f08 (optional ierror) passes NULL when the program leaves it out. */
inline void done(MPI_Fint *ierror, int rc)
{
	if (ierror)
		*ierror = rc;
}

/*
 * The creation entries' ending, called after the C call (not around it:
 * the order in which arguments are evaluated is unspecified).
 */
void created(int rc, MPI_Win w, MPI_Fint *fwin, MPI_Fint *ierror)
{
	if (rc == MPI_SUCCESS)
		*fwin = PMPI_Win_c2f(w);
	done(ierror, rc);
}

} /* namespace */

} /* namespace rmampi */

using namespace rmampi;

#define RMAMPI_FORTRAN extern "C" __attribute__((visibility("default")))

/* ---- start-up ------------------------------------------------------------ */

RMAMPI_FORTRAN void mpi_init_(MPI_Fint *ierror)
{
	if (!pmpi_init_) {
		done(ierror, MPI_ERR_OTHER);
		return;
	}
	MPI_Fint rc = MPI_SUCCESS;
	pmpi_init_(&rc);
	if (rc == MPI_SUCCESS) {
		int provided = MPI_THREAD_SINGLE;
		PMPI_Query_thread(&provided);
		initAfterMpi(provided);
	}
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
	if (!pmpi_init_thread_) {
		done(ierror, MPI_ERR_OTHER);
		return;
	}
	MPI_Fint rc = MPI_SUCCESS;
	pmpi_init_thread_(required, provided, &rc);
	if (rc == MPI_SUCCESS)
		initAfterMpi(*provided);
	done(ierror, rc);
}

/* ---- memory and creation ------------------------------------------------- */

RMAMPI_FORTRAN void mpi_alloc_mem_(MPI_Aint *size, MPI_Fint *inf, MPI_Aint *baseptr, MPI_Fint *ierror)
{
	void *p = nullptr;
	const int rc = MPI_Alloc_mem(*size, info(inf), &p);
	done(ierror, rc);
	if (rc == MPI_SUCCESS)
		*baseptr = reinterpret_cast<MPI_Aint>(p);
}

/* `use mpi`'s TYPE(C_PTR) form: the same bits by reference. */
RMAMPI_FORTRAN void mpi_alloc_mem_cptr_(MPI_Aint *size, MPI_Fint *inf, MPI_Aint *baseptr, MPI_Fint *ierror)
{
	mpi_alloc_mem_(size, inf, baseptr, ierror);
}

RMAMPI_FORTRAN void mpi_free_mem_(void *base, MPI_Fint *ierror)
{
	const int rc = MPI_Free_mem(base);
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_create_(void *base, MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
				    MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	int rc = MPI_Win_create(buf(base), *size, *dispUnit, info(inf), comm(c), &w);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_(MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
				      MPI_Aint *baseptr, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	void *base = nullptr;
	int rc = MPI_Win_allocate(*size, *dispUnit, info(inf), comm(c), &base, &w);
	if (rc == MPI_SUCCESS)
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_cptr_(MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
					   MPI_Aint *baseptr, MPI_Fint *fwin, MPI_Fint *ierror)
{
	mpi_win_allocate_(size, dispUnit, inf, c, baseptr, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_shared_(MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
					     MPI_Aint *baseptr, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	void *base = nullptr;
	int rc = MPI_Win_allocate_shared(*size, *dispUnit, info(inf), comm(c), &base, &w);
	if (rc == MPI_SUCCESS)
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_shared_cptr_(MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
						  MPI_Aint *baseptr, MPI_Fint *fwin, MPI_Fint *ierror)
{
	mpi_win_allocate_shared_(size, dispUnit, inf, c, baseptr, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_create_dynamic_(MPI_Fint *inf, MPI_Fint *c, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	int rc = MPI_Win_create_dynamic(info(inf), comm(c), &w);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_attach_(MPI_Fint *w, void *base, MPI_Aint *size, MPI_Fint *ierror)
{
	const int rc = MPI_Win_attach(win(w), buf(base), *size);
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_detach_(MPI_Fint *w, void *base, MPI_Fint *ierror)
{
	const int rc = MPI_Win_detach(win(w), buf(base));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_free_(MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = win(fwin);
	const int rc = MPI_Win_free(&w);
	done(ierror, rc);
	*fwin = PMPI_Win_c2f(w);
}

RMAMPI_FORTRAN void mpi_win_shared_query_(MPI_Fint *w, MPI_Fint *rank, MPI_Aint *size, MPI_Fint *dispUnit,
					  MPI_Aint *baseptr, MPI_Fint *ierror)
{
	void *base = nullptr;
	int du = 0;
	MPI_Aint sz = 0;
	const int rc = MPI_Win_shared_query(win(w), *rank, &sz, &du, &base);
	done(ierror, rc);
	if (rc == MPI_SUCCESS) {
		*size = sz;
		*dispUnit = du;
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	}
}

RMAMPI_FORTRAN void mpi_win_shared_query_cptr_(MPI_Fint *w, MPI_Fint *rank, MPI_Aint *size, MPI_Fint *dispUnit,
					       MPI_Aint *baseptr, MPI_Fint *ierror)
{
	mpi_win_shared_query_(w, rank, size, dispUnit, baseptr, ierror);
}

/* ---- window object ------------------------------------------------------- */

RMAMPI_FORTRAN void mpi_win_get_attr_(MPI_Fint *w, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
				      MPI_Fint *ierror)
{
	ShimWin *s = findWin(win(w));
	if (s) {
		/* Fortran gets the values themselves (MPI_WIN_BASE: the address as an integer). */
		const int k = cKeyval(*keyval);
		bool known = true;
		if (k == MPI_WIN_BASE)
			*value = reinterpret_cast<MPI_Aint>(s->base);
		else if (k == MPI_WIN_SIZE)
			*value = s->size;
		else if (k == MPI_WIN_DISP_UNIT)
			*value = s->dispUnit;
		else if (k == MPI_WIN_CREATE_FLAVOR)
			*value = s->flavor;
		else if (k == MPI_WIN_MODEL)
			*value = s->model;
		else
			known = false;
		if (known) {
			*flag = kTrue;
			done(ierror, MPI_SUCCESS);
			return;
		}
	}
	GetAttrFn *mpi = mpiGetAttr();
	if (!mpi) {
		*flag = kFalse;
		done(ierror, MPI_ERR_OTHER);
		return;
	}
	mpi(w, keyval, value, flag, ierror);
}

RMAMPI_FORTRAN void mpi_win_get_group_(MPI_Fint *w, MPI_Fint *group, MPI_Fint *ierror)
{
	MPI_Group g = MPI_GROUP_NULL;
	const int rc = MPI_Win_get_group(win(w), &g);
	done(ierror, rc);
	if (rc == MPI_SUCCESS)
		*group = PMPI_Group_c2f(g);
}

RMAMPI_FORTRAN void mpi_win_get_info_(MPI_Fint *w, MPI_Fint *infoUsed, MPI_Fint *ierror)
{
	MPI_Info i = MPI_INFO_NULL;
	const int rc = MPI_Win_get_info(win(w), &i);
	done(ierror, rc);
	if (rc == MPI_SUCCESS)
		*infoUsed = PMPI_Info_c2f(i);
}

RMAMPI_FORTRAN void mpi_win_set_info_(MPI_Fint *w, MPI_Fint *inf, MPI_Fint *ierror)
{
	const int rc = MPI_Win_set_info(win(w), info(inf));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_set_name_(MPI_Fint *w, const char *name, MPI_Fint *ierror, size_t len)
{
	const int rc = MPI_Win_set_name(win(w), text(name, len).c_str());
	done(ierror, rc);
}

/* ---- synchronization ----------------------------------------------------- */

RMAMPI_FORTRAN void mpi_win_fence_(MPI_Fint *assert, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_fence(*assert, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_post_(MPI_Fint *group, MPI_Fint *assert, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_post(PMPI_Group_f2c(*group), *assert, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_start_(MPI_Fint *group, MPI_Fint *assert, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_start(PMPI_Group_f2c(*group), *assert, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_complete_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_complete(win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_wait_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_wait(win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_test_(MPI_Fint *w, MPI_Fint *flag, MPI_Fint *ierror)
{
	int f = 0;
	const int rc = MPI_Win_test(win(w), &f);
	done(ierror, rc);
	if (rc == MPI_SUCCESS)
		*flag = f ? kTrue : kFalse;
}

RMAMPI_FORTRAN void mpi_win_lock_(MPI_Fint *lockType, MPI_Fint *rank, MPI_Fint *assert, MPI_Fint *w,
				  MPI_Fint *ierror)
{
	const int rc = MPI_Win_lock(*lockType, *rank, *assert, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_unlock_(MPI_Fint *rank, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_unlock(*rank, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_lock_all_(MPI_Fint *assert, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_lock_all(*assert, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_unlock_all_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_unlock_all(win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_flush_(MPI_Fint *rank, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_flush(*rank, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_flush_local_(MPI_Fint *rank, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_flush_local(*rank, win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_flush_all_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_flush_all(win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_flush_local_all_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_flush_local_all(win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_win_sync_(MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Win_sync(win(w));
	done(ierror, rc);
}

/* ---- communication ------------------------------------------------------- */

RMAMPI_FORTRAN void mpi_put_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank, MPI_Aint *disp,
			     MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Put(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_get_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank, MPI_Aint *disp,
			     MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Get(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_accumulate_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank, MPI_Aint *disp,
				    MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *o, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Accumulate(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), op(o),
				 win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_get_accumulate_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, void *result,
					MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *rank, MPI_Aint *disp,
					MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *o, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Get_accumulate(buf(origin), *ocount, type(otype), buf(result), *rcount, type(rtype), *rank,
				     *disp, *tcount, type(ttype), op(o), win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_fetch_and_op_(void *origin, void *result, MPI_Fint *t, MPI_Fint *rank, MPI_Aint *disp,
				      MPI_Fint *o, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Fetch_and_op(buf(origin), buf(result), type(t), *rank, *disp, op(o), win(w));
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_compare_and_swap_(void *origin, void *compare, void *result, MPI_Fint *t, MPI_Fint *rank,
					  MPI_Aint *disp, MPI_Fint *w, MPI_Fint *ierror)
{
	const int rc = MPI_Compare_and_swap(buf(origin), buf(compare), buf(result), type(t), *rank, *disp, win(w));
	done(ierror, rc);
}

/* The request forms: MPI generalized requests (comm_ops.cpp), handed to Fortran as MPI_Fint. */
namespace {
void requested(int rc, MPI_Request r, MPI_Fint *request, MPI_Fint *ierror)
{
	if (rc == MPI_SUCCESS)
		*request = PMPI_Request_c2f(r);
	done(ierror, rc);
}
} /* namespace */

RMAMPI_FORTRAN void mpi_rput_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank, MPI_Aint *disp,
			      MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *w, MPI_Fint *request, MPI_Fint *ierror)
{
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = MPI_Rput(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), win(w), &r);
	requested(rc, r, request, ierror);
}

RMAMPI_FORTRAN void mpi_rget_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank, MPI_Aint *disp,
			      MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *w, MPI_Fint *request, MPI_Fint *ierror)
{
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = MPI_Rget(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), win(w), &r);
	requested(rc, r, request, ierror);
}

RMAMPI_FORTRAN void mpi_raccumulate_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, MPI_Fint *rank,
				     MPI_Aint *disp, MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *o, MPI_Fint *w,
				     MPI_Fint *request, MPI_Fint *ierror)
{
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = MPI_Raccumulate(buf(origin), *ocount, type(otype), *rank, *disp, *tcount, type(ttype), op(o), win(w),
				 &r);
	requested(rc, r, request, ierror);
}

RMAMPI_FORTRAN void mpi_rget_accumulate_(void *origin, MPI_Fint *ocount, MPI_Fint *otype, void *result,
					 MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *rank, MPI_Aint *disp,
					 MPI_Fint *tcount, MPI_Fint *ttype, MPI_Fint *o, MPI_Fint *w,
					 MPI_Fint *request, MPI_Fint *ierror)
{
	MPI_Request r = MPI_REQUEST_NULL;
	int rc = MPI_Rget_accumulate(buf(origin), *ocount, type(otype), buf(result), *rcount, type(rtype), *rank,
				     *disp, *tcount, type(ttype), op(o), win(w), &r);
	requested(rc, r, request, ierror);
}

/* A second name for a Fortran entry (the same arguments). */
#define RMAMPI_ALIAS(name, target) RMAMPI_FORTRAN decltype(target) name __attribute__((alias(#target)))

#if defined(OPEN_MPI)
/*
 * Open MPI's mpi_f08 module: its subroutines call the mpif.h layer's
 * implementation functions (ompi_put_f, ...) across libraries, so they
 * reach these too, with the same arguments (handles as MPI_Fint, ierror
 * always given). Its MPI_Win_test and MPI_Win_get_attr call the Fortran
 * profiling entries pmpi_win_test_ and pmpi_win_get_attr_ instead, so the
 * shim defines those two as well (mpi_win_get_attr_ above then reaches the
 * MPI's own through dlsym(RTLD_NEXT)).
 */
RMAMPI_ALIAS(ompi_init_f, mpi_init_);
RMAMPI_ALIAS(ompi_init_thread_f, mpi_init_thread_);
RMAMPI_ALIAS(ompi_alloc_mem_f, mpi_alloc_mem_);
RMAMPI_ALIAS(ompi_free_mem_f, mpi_free_mem_);
RMAMPI_ALIAS(ompi_win_create_f, mpi_win_create_);
RMAMPI_ALIAS(ompi_win_allocate_f, mpi_win_allocate_);
RMAMPI_ALIAS(ompi_win_allocate_shared_f, mpi_win_allocate_shared_);
RMAMPI_ALIAS(ompi_win_create_dynamic_f, mpi_win_create_dynamic_);
RMAMPI_ALIAS(ompi_win_attach_f, mpi_win_attach_);
RMAMPI_ALIAS(ompi_win_detach_f, mpi_win_detach_);
RMAMPI_ALIAS(ompi_win_free_f, mpi_win_free_);
RMAMPI_ALIAS(ompi_win_shared_query_f, mpi_win_shared_query_);
RMAMPI_ALIAS(ompi_win_get_group_f, mpi_win_get_group_);
RMAMPI_ALIAS(ompi_win_get_info_f, mpi_win_get_info_);
RMAMPI_ALIAS(ompi_win_set_info_f, mpi_win_set_info_);
RMAMPI_ALIAS(ompi_win_fence_f, mpi_win_fence_);
RMAMPI_ALIAS(ompi_win_post_f, mpi_win_post_);
RMAMPI_ALIAS(ompi_win_start_f, mpi_win_start_);
RMAMPI_ALIAS(ompi_win_complete_f, mpi_win_complete_);
RMAMPI_ALIAS(ompi_win_wait_f, mpi_win_wait_);
RMAMPI_ALIAS(pmpi_win_test_, mpi_win_test_);
RMAMPI_ALIAS(pmpi_win_get_attr_, mpi_win_get_attr_);
RMAMPI_ALIAS(ompi_win_lock_f, mpi_win_lock_);
RMAMPI_ALIAS(ompi_win_unlock_f, mpi_win_unlock_);
RMAMPI_ALIAS(ompi_win_lock_all_f, mpi_win_lock_all_);
RMAMPI_ALIAS(ompi_win_unlock_all_f, mpi_win_unlock_all_);
RMAMPI_ALIAS(ompi_win_flush_f, mpi_win_flush_);
RMAMPI_ALIAS(ompi_win_flush_local_f, mpi_win_flush_local_);
RMAMPI_ALIAS(ompi_win_flush_all_f, mpi_win_flush_all_);
RMAMPI_ALIAS(ompi_win_flush_local_all_f, mpi_win_flush_local_all_);
RMAMPI_ALIAS(ompi_win_sync_f, mpi_win_sync_);
RMAMPI_ALIAS(ompi_put_f, mpi_put_);
RMAMPI_ALIAS(ompi_get_f, mpi_get_);
RMAMPI_ALIAS(ompi_accumulate_f, mpi_accumulate_);
RMAMPI_ALIAS(ompi_get_accumulate_f, mpi_get_accumulate_);
RMAMPI_ALIAS(ompi_fetch_and_op_f, mpi_fetch_and_op_);
RMAMPI_ALIAS(ompi_compare_and_swap_f, mpi_compare_and_swap_);
RMAMPI_ALIAS(ompi_rput_f, mpi_rput_);
RMAMPI_ALIAS(ompi_rget_f, mpi_rget_);
RMAMPI_ALIAS(ompi_raccumulate_f, mpi_raccumulate_);
RMAMPI_ALIAS(ompi_rget_accumulate_f, mpi_rget_accumulate_);

/* mpi_f08 passes the name's length as a C int by value (mpif.h callers: gfortran's size_t). */
RMAMPI_FORTRAN void ompi_win_set_name_f(MPI_Fint *w, const char *name, MPI_Fint *ierror, int len)
{
	const int rc = MPI_Win_set_name(win(w), text(name, len > 0 ? static_cast<size_t>(len) : 0).c_str());
	done(ierror, rc);
}
#else
/*
 * MPICH's mpi_f08: its subroutines for creation and synchronization call
 * PMPI_* directly (its operations call MPI_Put & co., which reach the
 * shim's C entries anyway), so the shim defines those subroutines
 * themselves: the same arguments as mpif.h's (TYPE(MPI_Win) and friends
 * hold one MPI_Fint; TYPE(C_PTR) is the address), except that ierror is
 * OPTIONAL (NULL when left out: done() handles it) and MPI_Win_create's
 * buffer comes as an array descriptor, whose first member is the address
 * (gfortran's own descriptor and ISO_Fortran_binding.h's CFI_cdesc_t
 * alike).
 */
RMAMPI_ALIAS(mpi_alloc_mem_f08_, mpi_alloc_mem_);
RMAMPI_ALIAS(mpi_win_allocate_f08_, mpi_win_allocate_);
RMAMPI_ALIAS(mpi_win_allocate_shared_f08_, mpi_win_allocate_shared_);
RMAMPI_ALIAS(mpi_win_create_dynamic_f08_, mpi_win_create_dynamic_);
RMAMPI_ALIAS(mpi_win_free_f08_, mpi_win_free_);
RMAMPI_ALIAS(mpi_win_shared_query_f08_, mpi_win_shared_query_);
RMAMPI_ALIAS(mpi_win_get_group_f08_, mpi_win_get_group_);
RMAMPI_ALIAS(mpi_win_get_info_f08_, mpi_win_get_info_);
RMAMPI_ALIAS(mpi_win_set_info_f08_, mpi_win_set_info_);
RMAMPI_ALIAS(mpi_win_set_name_f08_, mpi_win_set_name_);
RMAMPI_ALIAS(mpi_win_fence_f08_, mpi_win_fence_);
RMAMPI_ALIAS(mpi_win_post_f08_, mpi_win_post_);
RMAMPI_ALIAS(mpi_win_start_f08_, mpi_win_start_);
RMAMPI_ALIAS(mpi_win_complete_f08_, mpi_win_complete_);
RMAMPI_ALIAS(mpi_win_wait_f08_, mpi_win_wait_);
RMAMPI_ALIAS(mpi_win_test_f08_, mpi_win_test_);
RMAMPI_ALIAS(mpi_win_lock_f08_, mpi_win_lock_);
RMAMPI_ALIAS(mpi_win_unlock_f08_, mpi_win_unlock_);
RMAMPI_ALIAS(mpi_win_lock_all_f08_, mpi_win_lock_all_);
RMAMPI_ALIAS(mpi_win_unlock_all_f08_, mpi_win_unlock_all_);
RMAMPI_ALIAS(mpi_win_flush_f08_, mpi_win_flush_);
RMAMPI_ALIAS(mpi_win_flush_local_f08_, mpi_win_flush_local_);
RMAMPI_ALIAS(mpi_win_flush_all_f08_, mpi_win_flush_all_);
RMAMPI_ALIAS(mpi_win_flush_local_all_f08_, mpi_win_flush_local_all_);
RMAMPI_ALIAS(mpi_win_sync_f08_, mpi_win_sync_);

namespace {
/* MPICH's own mpi_f08 subroutine @name (the next definition after the shim's). */
template<typename Fn>
Fn *mpichF08(const char *name)
{
	return reinterpret_cast<Fn *>(dlsym(RTLD_NEXT, name));
}
} /* namespace */

RMAMPI_FORTRAN void mpi_win_create_f08ts_(void *const *base, MPI_Aint *size, MPI_Fint *dispUnit, MPI_Fint *inf,
					  MPI_Fint *c, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	const int rc = MPI_Win_create(bufF08(base ? *base : nullptr), *size, *dispUnit, info(inf), comm(c), &w);
	created(rc, w, fwin, ierror);
}

#if RMAMPI_HAVE_LARGE_COUNT
/* The INTEGER(MPI_ADDRESS_KIND) disp_unit forms of mpi_f08 (MPICH calls PMPI_*_c from them). */
RMAMPI_FORTRAN void mpi_win_create_f08ts_large_(void *const *base, MPI_Aint *size, MPI_Aint *dispUnit,
						MPI_Fint *inf, MPI_Fint *c, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	const int rc = MPI_Win_create_c(bufF08(base ? *base : nullptr), *size, *dispUnit, info(inf), comm(c), &w);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_f08_large_(MPI_Aint *size, MPI_Aint *dispUnit, MPI_Fint *inf, MPI_Fint *c,
						MPI_Aint *baseptr, MPI_Fint *fwin, MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	void *base = nullptr;
	const int rc = MPI_Win_allocate_c(*size, *dispUnit, info(inf), comm(c), &base, &w);
	if (rc == MPI_SUCCESS)
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_allocate_shared_f08_large_(MPI_Aint *size, MPI_Aint *dispUnit, MPI_Fint *inf,
						       MPI_Fint *c, MPI_Aint *baseptr, MPI_Fint *fwin,
						       MPI_Fint *ierror)
{
	MPI_Win w = MPI_WIN_NULL;
	void *base = nullptr;
	const int rc = MPI_Win_allocate_shared_c(*size, *dispUnit, info(inf), comm(c), &base, &w);
	if (rc == MPI_SUCCESS)
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	created(rc, w, fwin, ierror);
}

RMAMPI_FORTRAN void mpi_win_shared_query_f08_large_(MPI_Fint *w, MPI_Fint *rank, MPI_Aint *size, MPI_Aint *dispUnit,
						    MPI_Aint *baseptr, MPI_Fint *ierror)
{
	void *base = nullptr;
	MPI_Aint du = 0, sz = 0;
	const int rc = MPI_Win_shared_query_c(win(w), *rank, &sz, &du, &base);
	done(ierror, rc);
	if (rc == MPI_SUCCESS) {
		*size = sz;
		*dispUnit = du;
		*baseptr = reinterpret_cast<MPI_Aint>(base);
	}
}
#endif

RMAMPI_FORTRAN void mpi_win_get_attr_f08_(MPI_Fint *w, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag,
					  MPI_Fint *ierror)
{
	static GetAttrFn *const mpi = mpichF08<GetAttrFn>("mpi_win_get_attr_f08_");
	ShimWin *s = findWin(win(w));
	if (!s && mpi) {
		mpi(w, keyval, value, flag, ierror);
		return;
	}
	/* A librma window: its five, else MPICH's Fortran attribute code through the mpif.h entry (ierror given). */
	MPI_Fint rc = MPI_SUCCESS;
	mpi_win_get_attr_(w, keyval, value, flag, &rc);
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_init_f08_(MPI_Fint *ierror)
{
	using Fn = void(MPI_Fint *);
	static Fn *const mpi = mpichF08<Fn>("mpi_init_f08_");
	if (!mpi) {
		done(ierror, MPI_ERR_OTHER);
		return;
	}
	MPI_Fint rc = MPI_SUCCESS;
	mpi(&rc);
	if (rc == MPI_SUCCESS) {
		int provided = MPI_THREAD_SINGLE;
		PMPI_Query_thread(&provided);
		initAfterMpi(provided);
	}
	done(ierror, rc);
}

RMAMPI_FORTRAN void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
	using Fn = void(MPI_Fint *, MPI_Fint *, MPI_Fint *);
	static Fn *const mpi = mpichF08<Fn>("mpi_init_thread_f08_");
	if (!mpi) {
		done(ierror, MPI_ERR_OTHER);
		return;
	}
	MPI_Fint rc = MPI_SUCCESS;
	mpi(required, provided, &rc);
	if (rc == MPI_SUCCESS)
		initAfterMpi(*provided);
	done(ierror, rc);
}
#endif
