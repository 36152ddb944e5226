/* SPDX-License-Identifier: MIT */
/*
 * Communication calls (docs/design/mpi-dropin.md §4.1, §4.7, §1.4, §6.3).
 *
 * Hot path of every call: count it, find the window (a miss is the MPI's
 * window or an invalid handle: PMPI_), find the datatypes (and op), call
 * librma. No allocation, no lock below MPI_THREAD_MULTIPLE, no MPI call.
 * Decoding on a type-cache miss, counts above INT_MAX and errors are out of line.
 *
 * put, get, accumulate, get_accumulate, fetch_and_op and compare_and_swap
 * (int counts) go further (issue 13): the last window used and predefined
 * types and ops (shim.h's fast lookups), below MULTIPLE, make a fast path of
 * a few loads and compares, a plain counter and the librma call; only the
 * return code is checked after that call (errors find the window again,
 * raiseRmaLast()). Anything else (another window, a derived type, MULTIPLE,
 * a user op) tail-calls the general path, which does all of the above.
 */
#include "shim.h"

#include <climits>
#include <type_traits>

namespace rmampi {

namespace {

/* ---- datatypes and ops -------------------------------------------------- */

[[gnu::cold, gnu::noinline]] const TypeEntry *typeMiss(MPI_Datatype type, ShimWin &w, const char *call, int &err)
{
	int rc = MPI_SUCCESS;
	std::string why;
	const TypeEntry *e = decodeType(type, rc, why);
	if (!e)
		err = raiseMpi(w, mpiCodeWithText(rc, call, "datatype: " + why), call);
	return e;
}

inline const TypeEntry *typeOf(MPI_Datatype type, ShimWin &w, const char *call, int &err)
{
	if (const TypeEntry *e = typeTable.find(handleKey(type))) [[likely]]
		return e;
	return typeMiss(type, w, call, err);
}

[[gnu::cold, gnu::noinline]] int opError(ShimWin &w, const char *call)
{
	return raiseMpi(w, mpiCodeWithText(MPI_ERR_OP, call, "only predefined operations are allowed in RMA calls"),
			call);
}

[[gnu::cold, gnu::noinline]] int opaqueError(ShimWin &w, const char *call)
{
	static const std::string what = "this predefined MPI datatype has no librma twin; only MPI_REPLACE and "
					"MPI_NO_OP accumulate it";
	return raiseMpi(w, mpiCodeWithText(MPI_ERR_TYPE, call, what), call);
}

/* The librma op of @op, and the check for opaque types (§4.2); RMA_OP_NULL after raising. */
inline rma_op opOf(MPI_Op op, ShimWin &w, const char *call, int &err, const TypeEntry *a, const TypeEntry *b,
		   const TypeEntry *c = nullptr)
{
	rma_op r = opTable.find(handleKey(op));
	if (!r) [[unlikely]] {
		err = opError(w, call);
		return RMA_OP_NULL;
	}
	if ((a->opaque || b->opaque || (c && c->opaque)) && r != RMA_REPLACE && r != RMA_NO_OP) [[unlikely]] {
		err = opaqueError(w, call);
		return RMA_OP_NULL;
	}
	return r;
}

/* The origin and target types from the fast table (shim.h); the target's is most often the origin's. */
inline bool fastTypes(MPI_Datatype otype, MPI_Datatype ttype, rma_datatype &ot, rma_datatype &tt) noexcept
{
	if (!fastType(otype, ot))
		return false;
	if (ttype == otype) {
		tt = ot;
		return true;
	}
	return fastType(ttype, tt);
}

/* get_accumulate's origin type; with MPI_NO_OP the origin may be MPI_DATATYPE_NULL, and is ignored (as doGetAcc). */
inline bool fastOriginType(MPI_Datatype otype, MPI_Op op, rma_datatype rt, rma_datatype &ot) noexcept
{
	if (otype == MPI_DATATYPE_NULL && op == MPI_NO_OP) {
		ot = rt;
		return true;
	}
	return fastType(otype, ot);
}

/* ---- counts ------------------------------------------------------------- */

/* A (count, type) pair librma takes: the same, or count 1 of a contiguous type above INT_MAX. */
struct Counted {
	rma_datatype type = RMA_DATATYPE_NULL;
	int count = 0;
	rma_datatype owned = RMA_DATATYPE_NULL;
	Counted() = default;
	Counted(const Counted &) = delete;
	Counted &operator=(const Counted &) = delete;
	~Counted()
	{
		if (owned != RMA_DATATYPE_NULL) [[unlikely]]
			rma_type_free(&owned);
	}
};

[[gnu::cold, gnu::noinline]] int widen(MPI_Count count, rma_datatype type, Counted &out)
{
	int rc = rma_type_contiguous_c(count, type, &out.owned);
	if (rc == RMA_SUCCESS)
		rc = rma_type_commit(&out.owned);
	out.type = out.owned;
	out.count = 1;
	return rc;
}

/* RMA_SUCCESS or a librma error; for int counts this compiles to two stores. */
template <typename Count> inline int narrow(Count count, const TypeEntry *e, Counted &out)
{
	if (count <= INT_MAX) [[likely]] {
		out.type = e->type;
		out.count = static_cast<int>(count);
		return RMA_SUCCESS;
	}
	return widen(count, e->type, out);
}

/* ---- generalized requests (§4.7) ----------------------------------------- */

int greqQuery(void *, MPI_Status *status)
{
	PMPI_Status_set_elements(status, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_UNDEFINED;
	status->MPI_TAG = MPI_UNDEFINED;
	return MPI_SUCCESS;
}
int greqFree(void *)
{
	return MPI_SUCCESS;
}

int greqCancel(void *, int)
{
	return MPI_SUCCESS;
}

/*
 * Local completion in librma never waits for the target, so the R* forms
 * wait for their librma request at once (under the window lock) and hand
 * MPI a generalized request that is already complete.
 */
[[gnu::noinline]] int completedRequest(ShimWin &w, MPI_Request *request, const char *call)
{
	int rc = PMPI_Grequest_start(greqQuery, greqFree, greqCancel, nullptr, request);
	if (rc == MPI_SUCCESS)
		rc = PMPI_Grequest_complete(*request);
	return rc == MPI_SUCCESS ? MPI_SUCCESS : raiseMpi(w, rc, call);
}

/* ---- the operations ----------------------------------------------------- */

/* put and get: the same steps, one librma call apart (@Addr is const void * for put, void * for get). */
template <typename Addr, typename Count>
[[gnu::always_inline]] inline int doTransfer(ShimWin &w, Addr oaddr, Count ocount, MPI_Datatype otype, int rank,
					     MPI_Aint disp, Count tcount, MPI_Datatype ttype, MPI_Request *request,
					     const char *call)
{
	constexpr bool isGet = !std::is_const_v<std::remove_pointer_t<Addr>>;
	int err = MPI_SUCCESS;
	const TypeEntry *ot = typeOf(otype, w, call, err);
	if (!ot) [[unlikely]]
		return err;
	const TypeEntry *tt = typeOf(ttype, w, call, err);
	if (!tt) [[unlikely]]
		return err;
	Counted o, t;
	int rc = narrow(ocount, ot, o);
	if (rc == RMA_SUCCESS) [[likely]]
		rc = narrow(tcount, tt, t);
	rma_request req = RMA_REQUEST_NULL;
	if (rc == RMA_SUCCESS) [[likely]] {
		WinGuard g(w);
		if constexpr (isGet)
			rc = request ? rma_rget(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, w.win,
						&req)
				     : rma_get(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, w.win);
		else
			rc = request ? rma_rput(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, w.win,
						&req)
				     : rma_put(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, w.win);
		if (rc == RMA_SUCCESS && request)
			rc = rma_wait(&req, RMA_STATUS_IGNORE);
	}
	if (rc != RMA_SUCCESS) [[unlikely]]
		return raiseRma(w, rc, call);
	return request ? completedRequest(w, request, call) : MPI_SUCCESS;
}

template <typename Count>
[[gnu::always_inline]] inline int doAcc(ShimWin &w, const void *oaddr, Count ocount, MPI_Datatype otype, int rank,
					MPI_Aint disp, Count tcount, MPI_Datatype ttype, MPI_Op mop,
					MPI_Request *request, const char *call)
{
	int err = MPI_SUCCESS;
	const TypeEntry *ot = typeOf(otype, w, call, err);
	if (!ot) [[unlikely]]
		return err;
	const TypeEntry *tt = typeOf(ttype, w, call, err);
	if (!tt) [[unlikely]]
		return err;
	rma_op op = opOf(mop, w, call, err, ot, tt);
	if (!op) [[unlikely]]
		return err;
	Counted o, t;
	int rc = narrow(ocount, ot, o);
	if (rc == RMA_SUCCESS) [[likely]]
		rc = narrow(tcount, tt, t);
	rma_request req = RMA_REQUEST_NULL;
	if (rc == RMA_SUCCESS) [[likely]] {
		WinGuard g(w);
		rc = request ? rma_raccumulate(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, op, w.win,
					       &req)
			     : rma_accumulate(oaddr, o.count, o.type, rmaRank(rank), disp, t.count, t.type, op, w.win);
		if (rc == RMA_SUCCESS && request)
			rc = rma_wait(&req, RMA_STATUS_IGNORE);
	}
	if (rc != RMA_SUCCESS) [[unlikely]]
		return raiseRma(w, rc, call);
	return request ? completedRequest(w, request, call) : MPI_SUCCESS;
}

template <typename Count>
[[gnu::always_inline]] inline int doGetAcc(ShimWin &w, const void *oaddr, Count ocount, MPI_Datatype otype, void *raddr,
					   Count rcount, MPI_Datatype rtype, int rank, MPI_Aint disp, Count tcount,
					   MPI_Datatype ttype, MPI_Op mop, MPI_Request *request, const char *call)
{
	int err = MPI_SUCCESS;
	/* With MPI_NO_OP the origin arguments are ignored: look its type up only if it is one. */
	const TypeEntry *rt = typeOf(rtype, w, call, err);
	if (!rt) [[unlikely]]
		return err;
	const TypeEntry *tt = typeOf(ttype, w, call, err);
	if (!tt) [[unlikely]]
		return err;
	const TypeEntry *ot = rt;
	if (otype != MPI_DATATYPE_NULL || mop != MPI_NO_OP) {
		ot = typeOf(otype, w, call, err);
		if (!ot) [[unlikely]]
			return err;
	}
	rma_op op = opOf(mop, w, call, err, ot, tt, rt);
	if (!op) [[unlikely]]
		return err;
	Counted o, r, t;
	int rc = narrow(ocount, ot, o);
	if (rc == RMA_SUCCESS) [[likely]]
		rc = narrow(rcount, rt, r);
	if (rc == RMA_SUCCESS) [[likely]]
		rc = narrow(tcount, tt, t);
	rma_request req = RMA_REQUEST_NULL;
	if (rc == RMA_SUCCESS) [[likely]] {
		WinGuard g(w);
		rc = request ? rma_rget_accumulate(oaddr, o.count, o.type, raddr, r.count, r.type, rmaRank(rank), disp,
						   t.count, t.type, op, w.win, &req)
			     : rma_get_accumulate(oaddr, o.count, o.type, raddr, r.count, r.type, rmaRank(rank), disp,
						  t.count, t.type, op, w.win);
		if (rc == RMA_SUCCESS && request)
			rc = rma_wait(&req, RMA_STATUS_IGNORE);
	}
	if (rc != RMA_SUCCESS) [[unlikely]]
		return raiseRma(w, rc, call);
	return request ? completedRequest(w, request, call) : MPI_SUCCESS;
}

/* The exported calls below count their fast path in gFastPathOps; these count the rest. */
/* ---- the general paths of the int-count calls -------------------------------- */

/* MPI_Put past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int putGeneral(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
				 int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
				 MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				target_datatype, win);
	return doTransfer(*w, static_cast<const void *>(origin_addr), origin_count, origin_datatype, target_rank,
			  target_disp, target_count, target_datatype, nullptr, "MPI_Put");
}

/* MPI_Get past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int getGeneral(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
				 MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				target_datatype, win);
	return doTransfer(*w, static_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank, target_disp,
			  target_count, target_datatype, nullptr, "MPI_Get");
}

/* MPI_Accumulate past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int accumulateGeneral(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
					int target_rank, MPI_Aint target_disp, int target_count,
					MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
				       target_count, target_datatype, op, win);
	return doAcc(*w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
		     target_datatype, op, nullptr, "MPI_Accumulate");
}

/* MPI_Fetch_and_op past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int fetchAndOpGeneral(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
					int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
	int err = MPI_SUCCESS;
	const TypeEntry *t = typeOf(datatype, *w, "MPI_Fetch_and_op", err);
	if (!t) [[unlikely]]
		return err;
	rma_op rop = opOf(op, *w, "MPI_Fetch_and_op", err, t, t);
	if (!rop) [[unlikely]]
		return err;
	int rc;
	{
		WinGuard g(*w);
		rc = rma_fetch_and_op(origin_addr, result_addr, t->type, rmaRank(target_rank), target_disp, rop,
				      w->win);
	}
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Fetch_and_op");
}

/* MPI_Compare_and_swap past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int compareAndSwapGeneral(const void *origin_addr, const void *compare_addr, void *result_addr,
					    MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp,
					     win);
	int err = MPI_SUCCESS;
	const TypeEntry *t = typeOf(datatype, *w, "MPI_Compare_and_swap", err);
	if (!t) [[unlikely]]
		return err;
	int rc;
	{
		WinGuard g(*w);
		rc = rma_compare_and_swap(origin_addr, compare_addr, result_addr, t->type, rmaRank(target_rank),
					  target_disp, w->win);
	}
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(*w, rc, "MPI_Compare_and_swap");
}

/* MPI_Get_accumulate past its fast path: other windows, derived types, MULTIPLE. */
[[gnu::noinline]] int getAccumulateGeneral(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
					   void *result_addr, int result_count, MPI_Datatype result_datatype,
					   int target_rank, MPI_Aint target_disp, int target_count,
					   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	countOp();
	ShimWin *w = findWinSlow(win);
	if (!w) [[unlikely]]
		return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					   result_datatype, target_rank, target_disp, target_count, target_datatype, op,
					   win);
	return doGetAcc(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
			target_rank, target_disp, target_count, target_datatype, op, nullptr, "MPI_Get_accumulate");
}

} /* namespace */

} /* namespace rmampi */

using namespace rmampi;

/* ---- int-count forms -------------------------------------------------------- */

RMAMPI_EXPORT int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
			  MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	const ShimWin *w;
	rma_datatype ot, tt;
	if ((w = fastWin(win)) && fastTypes(origin_datatype, target_datatype, ot, tt)) [[likely]] {
		gFastPathOps++;
		int rc = rma_put(origin_addr, origin_count, ot, rmaRank(target_rank), target_disp, target_count, tt,
				 w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Put");
	}
	return putGeneral(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			  target_datatype, win);
}

RMAMPI_EXPORT int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
			  MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	const ShimWin *w;
	rma_datatype ot, tt;
	if ((w = fastWin(win)) && fastTypes(origin_datatype, target_datatype, ot, tt)) [[likely]] {
		gFastPathOps++;
		int rc = rma_get(origin_addr, origin_count, ot, rmaRank(target_rank), target_disp, target_count, tt,
				 w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Get");
	}
	return getGeneral(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			  target_datatype, win);
}

RMAMPI_EXPORT int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
				 int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
				 MPI_Op op, MPI_Win win)
{
	const ShimWin *w;
	rma_datatype ot, tt;
	rma_op rop;
	if ((w = fastWin(win)) && fastTypes(origin_datatype, target_datatype, ot, tt) && fastOp(op, rop)) [[likely]] {
		gFastPathOps++;
		int rc = rma_accumulate(origin_addr, origin_count, ot, rmaRank(target_rank), target_disp, target_count,
					tt, rop, w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Accumulate");
	}
	return accumulateGeneral(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				 target_datatype, op, win);
}

RMAMPI_EXPORT int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
				     void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
				     MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
				     MPI_Win win)
{
	const ShimWin *w;
	rma_datatype ot, rt, tt;
	rma_op rop;
	if ((w = fastWin(win)) && fastTypes(result_datatype, target_datatype, rt, tt) && fastOp(op, rop) &&
	    fastOriginType(origin_datatype, op, rt, ot)) [[likely]] {
		gFastPathOps++;
		int rc = rma_get_accumulate(origin_addr, origin_count, ot, result_addr, result_count, rt,
					    rmaRank(target_rank), target_disp, target_count, tt, rop, w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Get_accumulate");
	}
	return getAccumulateGeneral(origin_addr, origin_count, origin_datatype, result_addr, result_count,
				    result_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
}

RMAMPI_EXPORT int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
				   MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
	const ShimWin *w;
	rma_datatype t;
	rma_op rop;
	if ((w = fastWin(win)) && fastType(datatype, t) && fastOp(op, rop)) [[likely]] {
		gFastPathOps++;
		int rc = rma_fetch_and_op(origin_addr, result_addr, t, rmaRank(target_rank), target_disp, rop, w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Fetch_and_op");
	}
	return fetchAndOpGeneral(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
}

RMAMPI_EXPORT int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
				       MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win)
{
	const ShimWin *w;
	rma_datatype t;
	if ((w = fastWin(win)) && fastType(datatype, t)) [[likely]] {
		gFastPathOps++;
		int rc = rma_compare_and_swap(origin_addr, compare_addr, result_addr, t, rmaRank(target_rank),
					      target_disp, w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Compare_and_swap");
	}
	return compareAndSwapGeneral(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win);
}

/* ---- request forms (§4.7) ---------------------------------------------------- */

RMAMPI_EXPORT int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
			   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
			   MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				 target_datatype, win, request);
	return doTransfer(*w, static_cast<const void *>(origin_addr), origin_count, origin_datatype, target_rank,
			  target_disp, target_count, target_datatype, request, "MPI_Rput");
}

RMAMPI_EXPORT int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
			   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
			   MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				 target_datatype, win, request);
	return doTransfer(*w, static_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank, target_disp,
			  target_count, target_datatype, request, "MPI_Rget");
}

RMAMPI_EXPORT int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
				  int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
				  MPI_Op op, MPI_Win win, MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
					target_count, target_datatype, op, win, request);
	return doAcc(*w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
		     target_datatype, op, request, "MPI_Raccumulate");
}

RMAMPI_EXPORT int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
				      void *result_addr, int result_count, MPI_Datatype result_datatype,
				      int target_rank, MPI_Aint target_disp, int target_count,
				      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					    result_datatype, target_rank, target_disp, target_count, target_datatype,
					    op, win, request);
	return doGetAcc(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
			target_rank, target_disp, target_count, target_datatype, op, request, "MPI_Rget_accumulate");
}

/* ---- large-count forms (§1.4; MPICH 4 only) ------------------------------------ */

#if RMAMPI_HAVE_LARGE_COUNT
RMAMPI_EXPORT int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
			    int target_rank, MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype,
			    MPI_Win win)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Put_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				  target_datatype, win);
	return doTransfer(*w, static_cast<const void *>(origin_addr), origin_count, origin_datatype, target_rank,
			  target_disp, target_count, target_datatype, nullptr, "MPI_Put_c");
}

RMAMPI_EXPORT int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank,
			    MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Get_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				  target_datatype, win);
	return doTransfer(*w, static_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank, target_disp,
			  target_count, target_datatype, nullptr, "MPI_Get_c");
}

RMAMPI_EXPORT int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
				   int target_rank, MPI_Aint target_disp, MPI_Count target_count,
				   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Accumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
					 target_count, target_datatype, op, win);
	return doAcc(*w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
		     target_datatype, op, nullptr, "MPI_Accumulate_c");
}

RMAMPI_EXPORT int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
				       void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype,
				       int target_rank, MPI_Aint target_disp, MPI_Count target_count,
				       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Get_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					     result_datatype, target_rank, target_disp, target_count, target_datatype,
					     op, win);
	return doGetAcc(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
			target_rank, target_disp, target_count, target_datatype, op, nullptr, "MPI_Get_accumulate_c");
}

RMAMPI_EXPORT int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
			     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
			     MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rput_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				   target_datatype, win, request);
	return doTransfer(*w, static_cast<const void *>(origin_addr), origin_count, origin_datatype, target_rank,
			  target_disp, target_count, target_datatype, request, "MPI_Rput_c");
}

RMAMPI_EXPORT int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype, int target_rank,
			     MPI_Aint target_disp, MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
			     MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rget_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				   target_datatype, win, request);
	return doTransfer(*w, static_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank, target_disp,
			  target_count, target_datatype, request, "MPI_Rget_c");
}

RMAMPI_EXPORT int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
				    int target_rank, MPI_Aint target_disp, MPI_Count target_count,
				    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Raccumulate_c(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
					  target_count, target_datatype, op, win, request);
	return doAcc(*w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
		     target_datatype, op, request, "MPI_Raccumulate_c");
}

RMAMPI_EXPORT int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
					void *result_addr, MPI_Count result_count, MPI_Datatype result_datatype,
					int target_rank, MPI_Aint target_disp, MPI_Count target_count,
					MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
	countOp();
	ShimWin *w = findWin(win);
	if (!w) [[unlikely]]
		return PMPI_Rget_accumulate_c(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					      result_datatype, target_rank, target_disp, target_count, target_datatype,
					      op, win, request);
	return doGetAcc(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
			target_rank, target_disp, target_count, target_datatype, op, request, "MPI_Rget_accumulate_c");
}
#endif
