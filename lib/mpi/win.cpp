/* SPDX-License-Identifier: MIT */
/*
 * Window creation, routing and the window-object calls (docs/design/
 * mpi-dropin.md §4.1, §4.5, §4.8). A window librma serves gets a shadow: an
 * empty MPI window on MPI_COMM_SELF whose handle is the program's. Every
 * other window is the MPI's own (pass-through) and is not in winTable.
 */
#include "shim.h"

#include <dlfcn.h>

#include <climits>
#include <cstdio>
#include <cstring>

namespace rmampi {

int translateInfo(MPI_Info info, rma_info &out, std::string &engine)
{
	out = RMA_INFO_NULL;
	if (info == MPI_INFO_NULL)
		return MPI_SUCCESS;
	int n = 0;
	int rc = PMPI_Info_get_nkeys(info, &n);
	if (rc != MPI_SUCCESS)
		return rc;
	for (int i = 0; i < n; i++) {
		char key[MPI_MAX_INFO_KEY + 1] = {};
		int flag = 0;
		if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
			continue;
		/* MPICH refuses a NULL value even to ask for the length: read into the largest buffer. */
		std::string value(MPI_MAX_INFO_VAL + 1, '\0');
#if MPI_VERSION >= 4
		int len = MPI_MAX_INFO_VAL + 1;
		PMPI_Info_get_string(info, key, &len, value.data(), &flag);
#else
		PMPI_Info_get(info, key, MPI_MAX_INFO_VAL, value.data(), &flag);
#endif
		if (!flag)
			continue;
		value.resize(std::strlen(value.c_str()));
		if (std::strcmp(key, "librma_engine") == 0) {
			engine = value; /* consumed by the shim */
			continue;
		}
		if (out == RMA_INFO_NULL && rma_info_create(&out) != RMA_SUCCESS)
			return MPI_ERR_NO_MEM;
		rma_info_set(out, key, value.c_str());
	}
	return MPI_SUCCESS;
}

namespace {

enum class Flavor { Create, Allocate, Shared, Dynamic };

struct CreateArgs {
	Flavor flavor;
	void *base; /* create */
	MPI_Aint size;
	MPI_Aint dispUnit;
	MPI_Info info;
	MPI_Comm comm;
	void *baseptr; /* allocate, allocate_shared: where the base goes */
	MPI_Win *win;
	bool large; /* a _c entry: pass through to the _c PMPI call */
	const void *caller;
	const char *call;
};

/* The MPI's own window. */
int passThrough(const CreateArgs &a)
{
#if RMAMPI_HAVE_LARGE_COUNT
	if (a.large) {
		switch (a.flavor) {
		case Flavor::Create:
			return PMPI_Win_create_c(a.base, a.size, a.dispUnit, a.info, a.comm, a.win);
		case Flavor::Allocate:
			return PMPI_Win_allocate_c(a.size, a.dispUnit, a.info, a.comm, a.baseptr, a.win);
		case Flavor::Shared:
			return PMPI_Win_allocate_shared_c(a.size, a.dispUnit, a.info, a.comm, a.baseptr, a.win);
		case Flavor::Dynamic:
			break;
		}
	}
#endif
	int du = static_cast<int>(a.dispUnit);
	switch (a.flavor) {
	case Flavor::Create:
		return PMPI_Win_create(a.base, a.size, du, a.info, a.comm, a.win);
	case Flavor::Allocate:
		return PMPI_Win_allocate(a.size, du, a.info, a.comm, a.baseptr, a.win);
	case Flavor::Shared:
		return PMPI_Win_allocate_shared(a.size, du, a.info, a.comm, a.baseptr, a.win);
	case Flavor::Dynamic:
	default:
		return PMPI_Win_create_dynamic(a.info, a.comm, a.win);
	}
}

/* Counted once per window, by rank 0 of its communicator (§6.2). */
void countWindow(MPI_Comm comm, bool librma)
{
	int rank = -1;
	if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != 0)
		return;
	(librma ? shim().winLibrma : shim().winMpi).fetch_add(1, std::memory_order_relaxed);
}

int passThroughCounted(const CreateArgs &a)
{
	int rc = passThrough(a);
	if (rc == MPI_SUCCESS)
		countWindow(a.comm, false);
	return rc;
}

/*
 * Windows made from the MPI's own Fortran binding libraries stay the MPI's
 * (§2.1): MPICH's mpi_f08 calls PMPI_ on them. The shim's own Fortran entries
 * (fortran.cpp) call the C entries from the shim, so their windows are routed
 * like C's.
 */
bool fromFortran(const void *caller)
{
	Dl_info di = {};
	if (!caller || !dladdr(caller, &di) || !di.dli_fname)
		return false;
	const char *base = std::strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	for (const char *lib :
	     { "libmpichfort.so", "libmpi_mpifh.so", "libmpi_usempif08.so", "libmpi_usempi_ignore_tkr.so" })
		if (std::strncmp(base, lib, std::strlen(lib)) == 0)
			return true;
	return false;
}

int mpiFlavor(Flavor f)
{
	switch (f) {
	case Flavor::Create:
		return MPI_WIN_FLAVOR_CREATE;
	case Flavor::Allocate:
		return MPI_WIN_FLAVOR_ALLOCATE;
	case Flavor::Shared:
		return MPI_WIN_FLAVOR_SHARED;
	case Flavor::Dynamic:
	default:
		return MPI_WIN_FLAVOR_DYNAMIC;
	}
}

int rmaCreate(const CreateArgs &a, rma_info info, rma_comm comm, void *&base, rma_win &rw)
{
	int du = static_cast<int>(a.dispUnit);
	switch (a.flavor) {
	case Flavor::Create:
		base = a.base;
		return rma_win_create(a.base, a.size, du, info, comm, &rw);
	case Flavor::Allocate:
		return rma_win_allocate(a.size, du, info, comm, &base, &rw);
	case Flavor::Shared:
		return rma_win_allocate_shared(a.size, du, info, comm, &base, &rw);
	case Flavor::Dynamic:
	default:
		base = MPI_BOTTOM;
		return rma_win_create_dynamic(info, comm, &rw);
	}
}

/* Every creation entry: vote, agree over C, then librma + shadow or the MPI's window (§4.1). */
int createWindow(const CreateArgs &a)
{
	Shim &s = shim();
	if (!s.rmaUp || s.finalized)
		return passThroughCounted(a);
	/*
	 * Under MPI_THREAD_MULTIPLE two threads may create windows on two
	 * communicators at once: the MPI collectives below run without the
	 * control lock (holding it across one would deadlock with a peer whose
	 * threads took it in the other order); only the shim's tables take it.
	 */
	int inter = 0;
	if (a.comm == MPI_COMM_NULL || PMPI_Comm_test_inter(a.comm, &inter) != MPI_SUCCESS || inter)
		return passThroughCounted(a); /* the MPI reports what is wrong */
	int rc = MPI_SUCCESS;
	CommEntry *e = commEntry(a.comm, rc);
	if (!e)
		return passThroughCounted(a);

	std::string engine;
	rma_info info = RMA_INFO_NULL;
	int infoRc = translateInfo(a.info, info, engine);
	/*
	 * Across hosts only when asked (librma_engine=librma, or RMA_MPI_ENGINE=
	 * librma): librma's TCP transport then serves it; by default the MPI's
	 * own inter-node RMA does. Shared memory cannot span hosts either way.
	 */
	const bool acrossHosts = (engine == "librma" || (engine.empty() && s.forceLibrma)) && a.flavor != Flavor::Shared;
	int vote = infoRc == MPI_SUCCESS && engine != "mpi" && !fromFortran(a.caller) && (e->onHost || acrossHosts) &&
		   e->inWorld && a.dispUnit > 0 && a.dispUnit <= INT_MAX;
	MPI_Win shadow = MPI_WIN_NULL;
	if (vote) {
		void *unused = nullptr;
		vote = PMPI_Win_allocate(0, 1, MPI_INFO_NULL, MPI_COMM_SELF, &unused, &shadow) == MPI_SUCCESS;
	}
	int agree = 0;
	PMPI_Allreduce(&vote, &agree, 1, MPI_INT, MPI_MIN, e->dup);

	if (agree) {
		rma_win rw = RMA_WIN_NULL;
		void *base = nullptr;
		int rrc;
		{
			/*
			 * No control lock: librma serializes per communicator, not
			 * globally, and its creation waits for the peers (a lock held
			 * here would deadlock two threads creating on two comms).
			 */
			CollectiveScope scope(e->dup, e->worldRanks);
			rrc = ensureRmaComm(*e);
			if (rrc == RMA_SUCCESS)
				rrc = rmaCreate(a, info, e->rmaComm, base, rw);
		}
		/* librma's creation errors are collective; the second vote keeps the fallback so. */
		int ok = rrc == RMA_SUCCESS, all = 0;
		PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->dup);
		if (all) {
			auto *w = new ShimWin;
			w->shadow = shadow;
			w->win = rw;
			PMPI_Comm_group(e->dup, &w->group);
			if (s.multiple) {
				/*
				 * Its own: two threads may free two windows of C at
				 * once, and their collectives must not meet on one
				 * communicator.
				 */
				PMPI_Comm_dup(e->dup, &w->dup);
			} else {
				/* C's, kept alive by the count while C may be freed first. */
				ControlLock lock;
				w->dup = e->dup;
				w->entry = e;
				e->windows++;
			}
			w->worldRanks = e->worldRanks;
			w->base = base;
			w->size = a.flavor == Flavor::Dynamic ? 0 : a.size;
			w->dispUnit = a.flavor == Flavor::Dynamic ? 1 : static_cast<int>(a.dispUnit);
			w->flavor = mpiFlavor(a.flavor);
			w->model = MPI_WIN_UNIFIED;
			if (a.flavor == Flavor::Allocate || a.flavor == Flavor::Shared)
				*static_cast<void **>(a.baseptr) = base;
			{
				ControlLock lock;
				rma_win_set_errhandler(rw, RMA_ERRORS_RETURN);
				rma_win_get_group(rw, &w->winGroup);
				winTable.insert(handleKey(shadow), w);
			}
			if (!s.multiple)
				gLastWin = w; /* the program's next call most likely names it */
			*a.win = shadow;
			if (info != RMA_INFO_NULL) {
				/* Named at creation (info key rma_win_name): MPI_Win_get_name sees it too. */
				char name[RMA_MAX_OBJECT_NAME] = {};
				int flag = 0, len = 0;
				if (rma_info_get(info, "rma_win_name", sizeof name - 1, name, &flag) == RMA_SUCCESS && flag &&
				    rma_win_get_name(rw, name, &len) == RMA_SUCCESS && len > 0)
					PMPI_Win_set_name(shadow, name);
				rma_info_free(&info);
			}
			countWindow(a.comm, true);
			return MPI_SUCCESS;
		}
		/*
		 * Out of memory: the MPI may still manage, so it serves the window
		 * on every rank. Any other failure (a bad rma_* info value, say) is
		 * the program's error, raised on its communicator (§4.6).
		 */
		int noMem = rrc == RMA_SUCCESS || mpiClassOf(rrc) == MPI_ERR_NO_MEM, allNoMem = 0;
		PMPI_Allreduce(&noMem, &allNoMem, 1, MPI_INT, MPI_MIN, e->dup);
		if (!allNoMem) {
			if (info != RMA_INFO_NULL)
				rma_info_free(&info);
			if (shadow != MPI_WIN_NULL)
				PMPI_Win_free(&shadow);
			int code = rrc != RMA_SUCCESS
					   ? mpiCodeFor(rrc)
					   : mpiCodeWithText(MPI_ERR_OTHER, a.call,
							     "librma could not create the window on another member");
			return raiseOnComm(a.comm, code, a.call);
		}
		if (rrc != RMA_SUCCESS && e->rank == 0) {
			char text[RMA_MAX_ERROR_STRING] = {};
			int len = 0;
			rma_error_string(rrc, text, &len);
			std::fprintf(stderr, "librma-mpi: %s: librma refused the window (%s): the MPI serves it\n",
				     a.call, text);
		}
	} else if (engine == "librma" && e->rank == 0) {
		std::fprintf(stderr,
			     "librma-mpi: %s: librma_engine=librma, but librma cannot serve this window "
			     "(an allocate_shared window across hosts, one from the MPI's own Fortran binding, "
			     "not in MPI_COMM_WORLD, or not agreed): the MPI serves it\n",
			     a.call);
	}
	if (info != RMA_INFO_NULL)
		rma_info_free(&info);
	if (shadow != MPI_WIN_NULL)
		PMPI_Win_free(&shadow);
	return passThroughCounted(a);
}

} /* namespace */

} /* namespace rmampi */

using namespace rmampi;

/* ---- creation ------------------------------------------------------------- */

RMAMPI_EXPORT int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	return createWindow({ Flavor::Create, base, size, disp_unit, info, comm, nullptr, win, false,
			      __builtin_return_address(0), "MPI_Win_create" });
}

RMAMPI_EXPORT int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
				   MPI_Win *win)
{
	return createWindow({ Flavor::Allocate, nullptr, size, disp_unit, info, comm, baseptr, win, false,
			      __builtin_return_address(0), "MPI_Win_allocate" });
}

RMAMPI_EXPORT int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
					  MPI_Win *win)
{
	return createWindow({ Flavor::Shared, nullptr, size, disp_unit, info, comm, baseptr, win, false,
			      __builtin_return_address(0), "MPI_Win_allocate_shared" });
}

RMAMPI_EXPORT int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	return createWindow({ Flavor::Dynamic, nullptr, 0, 1, info, comm, nullptr, win, false,
			      __builtin_return_address(0), "MPI_Win_create_dynamic" });
}

#if RMAMPI_HAVE_LARGE_COUNT
RMAMPI_EXPORT int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
				   MPI_Win *win)
{
	return createWindow({ Flavor::Create, base, size, disp_unit, info, comm, nullptr, win, true,
			      __builtin_return_address(0), "MPI_Win_create_c" });
}

RMAMPI_EXPORT int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
				     MPI_Win *win)
{
	return createWindow({ Flavor::Allocate, nullptr, size, disp_unit, info, comm, baseptr, win, true,
			      __builtin_return_address(0), "MPI_Win_allocate_c" });
}

RMAMPI_EXPORT int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
					    void *baseptr, MPI_Win *win)
{
	return createWindow({ Flavor::Shared, nullptr, size, disp_unit, info, comm, baseptr, win, true,
			      __builtin_return_address(0), "MPI_Win_allocate_shared_c" });
}
#endif

/* ---- free ----------------------------------------------------------------- */

RMAMPI_EXPORT int MPI_Win_free(MPI_Win *win)
{
	ShimWin *w = win ? findWin(*win) : nullptr;
	if (!w)
		return PMPI_Win_free(win);
	int rc;
	{
		/* No control lock: rma_win_free waits for the peers (see createWindow). */
		CollectiveScope scope(w->dup, w->worldRanks);
		rc = rma_win_free(&w->win);
	}
	if (w->win != RMA_WIN_NULL) /* not freed (a pending operation, a failing callback): stays usable */
		return raiseRma(*w, rc, "MPI_Win_free");
	/* A member died: librma released the window anyway; tell the program, then free the shadow. */
	int code = rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Win_free");
	for (GroupCache *c : { &w->post, &w->start })
		if (c->group != RMA_GROUP_NULL)
			rma_group_free(&c->group);
	if (w->winGroup != RMA_GROUP_NULL)
		rma_group_free(&w->winGroup);
	if (w->group != MPI_GROUP_NULL)
		PMPI_Group_free(&w->group);
	if (w->entry)
		unshareEntry(*w->entry);
	else if (w->dup != MPI_COMM_NULL)
		PMPI_Comm_free(&w->dup);
	/* The program's attribute delete callbacks run here, with its handle, as on any MPI window. */
	uintptr_t key = handleKey(w->shadow);
	int mrc = PMPI_Win_free(win);
	{
		ControlLock lock;
		winTable.erase(key);
	}
	if (gLastWin == w) /* only ever set below MULTIPLE (shim.h) */
		gLastWin = nullptr;
	delete w;
	return code != MPI_SUCCESS ? code : mrc;
}

/* ---- memory --------------------------------------------------------------- */

RMAMPI_EXPORT int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_attach(win, base, size);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_attach(w->win, base, size);
	}
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Win_attach");
}

RMAMPI_EXPORT int MPI_Win_detach(MPI_Win win, const void *base)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_detach(win, base);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_detach(w->win, base);
	}
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Win_detach");
}

namespace {

int sharedQuery(ShimWin &w, int rank, MPI_Aint *size, MPI_Aint *dispUnit, void *baseptr, const char *call)
{
	rma_aint sz = 0;
	int du = 0;
	void *bp = nullptr;
	int rc;
	{
		WinGuard g(w);
		rc = rma_win_shared_query(w.win, rmaRank(rank), &sz, &du, &bp);
	}
	if (rc != RMA_SUCCESS)
		return raiseRma(w, rc, call);
	*size = sz;
	*dispUnit = du;
	*static_cast<void **>(baseptr) = bp;
	return MPI_SUCCESS;
}

} /* namespace */

RMAMPI_EXPORT int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
	MPI_Aint du = 0;
	int rc = sharedQuery(*w, rank, size, &du, baseptr, "MPI_Win_shared_query");
	if (rc == MPI_SUCCESS)
		*disp_unit = static_cast<int>(du);
	return rc;
}

#if RMAMPI_HAVE_LARGE_COUNT
RMAMPI_EXPORT int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit, void *baseptr)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_shared_query_c(win, rank, size, disp_unit, baseptr);
	return sharedQuery(*w, rank, size, disp_unit, baseptr, "MPI_Win_shared_query_c");
}
#endif

/* ---- group, info, name, attributes ----------------------------------------- */

RMAMPI_EXPORT int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_get_group(win, group);
	/* A new reference the caller frees: excluding nobody gives the same group. */
	return PMPI_Group_excl(w->group, 0, nullptr, group);
}

RMAMPI_EXPORT int MPI_Win_set_info(MPI_Win win, MPI_Info info)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_set_info(win, info);
	std::string engine;
	rma_info ri = RMA_INFO_NULL;
	int rc = translateInfo(info, ri, engine);
	if (rc != MPI_SUCCESS)
		return raiseMpi(*w, rc, "MPI_Win_set_info");
	if (ri == RMA_INFO_NULL)
		return MPI_SUCCESS;
	{
		WinGuard g(*w);
		rc = rma_win_set_info(w->win, ri);
	}
	rma_info_free(&ri);
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Win_set_info");
}

RMAMPI_EXPORT int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_get_info(win, info_used);
	rma_info ri = RMA_INFO_NULL;
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_get_info(w->win, &ri);
	}
	if (rc != RMA_SUCCESS)
		return raiseRma(*w, rc, "MPI_Win_get_info");
	rc = PMPI_Info_create(info_used);
	if (rc != MPI_SUCCESS) {
		rma_info_free(&ri);
		return raiseMpi(*w, rc, "MPI_Win_get_info");
	}
	int n = 0;
	rma_info_get_nkeys(ri, &n);
	for (int i = 0; i < n; i++) {
		char key[RMA_MAX_INFO_KEY + 1] = {};
		char value[RMA_MAX_INFO_VAL + 1] = {};
		int flag = 0, len = sizeof value;
		if (rma_info_get_nthkey(ri, i, key) != RMA_SUCCESS)
			continue;
		if (rma_info_get_string(ri, key, &len, value, &flag) == RMA_SUCCESS && flag)
			PMPI_Info_set(*info_used, key, value);
	}
	rma_info_free(&ri);
	PMPI_Info_set(*info_used, "librma_engine", "librma");
	return MPI_SUCCESS;
}

RMAMPI_EXPORT int MPI_Win_set_name(MPI_Win win, const char *win_name)
{
	int rc = PMPI_Win_set_name(win, win_name);
	ShimWin *w = findWin(win);
	if (w && rc == MPI_SUCCESS) {
		WinGuard g(*w);
		rma_win_set_name(w->win, win_name); /* for librma's own messages */
	}
	return rc;
}

RMAMPI_EXPORT int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
	ShimWin *w = findWin(win);
	if (!w || !attribute_val || !flag)
		return PMPI_Win_get_attr(win, win_keyval, attribute_val, flag);
	/* The predefined five come from librma's window; the pointers stay valid until MPI_Win_free. */
	void **out = static_cast<void **>(attribute_val);
	if (win_keyval == MPI_WIN_BASE)
		*out = w->base;
	else if (win_keyval == MPI_WIN_SIZE)
		*out = &w->size;
	else if (win_keyval == MPI_WIN_DISP_UNIT)
		*out = &w->dispUnit;
	else if (win_keyval == MPI_WIN_CREATE_FLAVOR)
		*out = &w->flavor;
	else if (win_keyval == MPI_WIN_MODEL)
		*out = &w->model;
	else
		return PMPI_Win_get_attr(win, win_keyval, attribute_val, flag);
	*flag = 1;
	return MPI_SUCCESS;
}
