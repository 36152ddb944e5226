/* SPDX-License-Identifier: MIT */
/*
 * Synchronization calls (docs/design/mpi-dropin.md §4.4, §6.1): fence,
 * post/start/complete/wait/test, lock/unlock(_all), flush*, sync. MPI
 * assertions and lock types are mapped to librma's by name.
 */
#include "shim.h"

#include <sched.h>

namespace rmampi {

namespace {

[[gnu::cold, gnu::noinline]] int assertError(ShimWin &w, int mpiAssert, const char *call)
{
	char text[128];
	std::snprintf(text, sizeof text, "%s: assert %#x has bits that are not MPI_MODE_* of this call", call,
		      static_cast<unsigned>(mpiAssert));
	return raiseMpi(w, mpiCodeWithText(MPI_ERR_ASSERT, text), call);
}

/* Raised after the window lock is released: the program's handler may call MPI on the window. */
inline int done(ShimWin &w, int rc, const char *call)
{
	return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRma(w, rc, call);
}

/*
 * @group's members as ranks of the window (its communicator's ranks, which are
 * librma's), turned into an rma_group; the last one is reused if the ranks are
 * the same (§4.4). MPI_SUCCESS or an MPI code already raised.
 */
int translateGroup(ShimWin &w, MPI_Group group, GroupCache &cache, const char *call, rma_group &out)
{
	int n = 0;
	int rc = PMPI_Group_size(group, &n);
	if (rc != MPI_SUCCESS)
		return raiseMpi(w, rc, call);
	std::vector<int> iota(n), ranks(n);
	for (int i = 0; i < n; i++)
		iota[i] = i;
	rc = PMPI_Group_translate_ranks(group, n, iota.data(), w.group, ranks.data());
	if (rc != MPI_SUCCESS)
		return raiseMpi(w, rc, call);
	for (int r : ranks)
		if (r == MPI_UNDEFINED)
			return raiseMpi(
				w, mpiCodeWithText(MPI_ERR_GROUP, call, "a member of the group is not in the window"),
				call);
	if (cache.group == RMA_GROUP_NULL || cache.ranks != ranks) {
		rma_group g = RMA_GROUP_NULL;
		int rrc = rma_group_incl(w.winGroup, n, ranks.data(), &g);
		if (rrc != RMA_SUCCESS)
			return raiseRma(w, rrc, call);
		if (cache.group != RMA_GROUP_NULL)
			rma_group_free(&cache.group);
		cache.group = g;
		cache.ranks = std::move(ranks);
	}
	out = cache.group;
	return MPI_SUCCESS;
}

int rmaLockType(int lockType)
{
	if (lockType == MPI_LOCK_EXCLUSIVE)
		return RMA_LOCK_EXCLUSIVE;
	if (lockType == MPI_LOCK_SHARED)
		return RMA_LOCK_SHARED;
	return -1; /* librma answers RMA_ERR_LOCKTYPE */
}

/* The flushes past their fast path: other windows, MULTIPLE. */
[[gnu::noinline]] int flushGeneral(int rank, MPI_Win win)
{
	ShimWin *w = findWinSlow(win);
	if (!w)
		return PMPI_Win_flush(rank, win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_flush(rmaRank(rank), w->win);
	}
	return done(*w, rc, "MPI_Win_flush");
}

[[gnu::noinline]] int flushAllGeneral(MPI_Win win)
{
	ShimWin *w = findWinSlow(win);
	if (!w)
		return PMPI_Win_flush_all(win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_flush_all(w->win);
	}
	return done(*w, rc, "MPI_Win_flush_all");
}

[[gnu::noinline]] int flushLocalGeneral(int rank, MPI_Win win)
{
	ShimWin *w = findWinSlow(win);
	if (!w)
		return PMPI_Win_flush_local(rank, win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_flush_local(rmaRank(rank), w->win);
	}
	return done(*w, rc, "MPI_Win_flush_local");
}

[[gnu::noinline]] int flushLocalAllGeneral(MPI_Win win)
{
	ShimWin *w = findWinSlow(win);
	if (!w)
		return PMPI_Win_flush_local_all(win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_flush_local_all(w->win);
	}
	return done(*w, rc, "MPI_Win_flush_local_all");
}

} /* namespace */

} /* namespace rmampi */

using namespace rmampi;

RMAMPI_EXPORT int MPI_Win_fence(int assert, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_fence(assert, win);
	int ra = 0;
	if (!translateAssert(assert, ra)) [[unlikely]]
		return assertError(*w, assert, "MPI_Win_fence");
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_fence(ra, w->win);
	}
	return done(*w, rc, "MPI_Win_fence");
}

RMAMPI_EXPORT int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_post(group, assert, win);
	int ra = 0;
	if (!translateAssert(assert, ra)) [[unlikely]]
		return assertError(*w, assert, "MPI_Win_post");
	rma_group rg = RMA_GROUP_NULL;
	int rc = translateGroup(*w, group, w->post, "MPI_Win_post", rg);
	if (rc != MPI_SUCCESS)
		return rc;
	{
		WinGuard g(*w);
		rc = rma_win_post(rg, ra, w->win);
	}
	return done(*w, rc, "MPI_Win_post");
}

RMAMPI_EXPORT int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_start(group, assert, win);
	int ra = 0;
	if (!translateAssert(assert, ra)) [[unlikely]]
		return assertError(*w, assert, "MPI_Win_start");
	rma_group rg = RMA_GROUP_NULL;
	int rc = translateGroup(*w, group, w->start, "MPI_Win_start", rg);
	if (rc != MPI_SUCCESS)
		return rc;
	{
		WinGuard g(*w);
		rc = rma_win_start(rg, ra, w->win);
	}
	return done(*w, rc, "MPI_Win_start");
}

RMAMPI_EXPORT int MPI_Win_complete(MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_complete(win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_complete(w->win);
	}
	return done(*w, rc, "MPI_Win_complete");
}

RMAMPI_EXPORT int MPI_Win_wait(MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_wait(win);
	if (!shim().multiple) /* no lock to take */
		return done(*w, rma_win_wait(w->win), "MPI_Win_wait");
	/* Under MULTIPLE: poll with the window lock released between polls (§6.1). */
	for (;;) {
		int flag = 0, rc;
		{
			WinGuard g(*w);
			rc = rma_win_test(w->win, &flag);
		}
		if (rc != RMA_SUCCESS)
			return raiseRma(*w, rc, "MPI_Win_wait");
		if (flag)
			return MPI_SUCCESS;
		sched_yield();
	}
}

RMAMPI_EXPORT int MPI_Win_test(MPI_Win win, int *flag)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_test(win, flag);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_test(w->win, flag);
	}
	return done(*w, rc, "MPI_Win_test");
}

RMAMPI_EXPORT int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_lock(lock_type, rank, assert, win);
	int ra = 0;
	if (!translateAssert(assert, ra)) [[unlikely]]
		return assertError(*w, assert, "MPI_Win_lock");
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_lock(rmaLockType(lock_type), rmaRank(rank), ra, w->win);
	}
	return done(*w, rc, "MPI_Win_lock");
}

RMAMPI_EXPORT int MPI_Win_unlock(int rank, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_unlock(rank, win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_unlock(rmaRank(rank), w->win);
	}
	return done(*w, rc, "MPI_Win_unlock");
}

RMAMPI_EXPORT int MPI_Win_lock_all(int assert, MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_lock_all(assert, win);
	int ra = 0;
	if (!translateAssert(assert, ra)) [[unlikely]]
		return assertError(*w, assert, "MPI_Win_lock_all");
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_lock_all(ra, w->win);
	}
	return done(*w, rc, "MPI_Win_lock_all");
}

RMAMPI_EXPORT int MPI_Win_unlock_all(MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_unlock_all(win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_unlock_all(w->win);
	}
	return done(*w, rc, "MPI_Win_unlock_all");
}

RMAMPI_EXPORT int MPI_Win_flush(int rank, MPI_Win win)
{
	if (ShimWin *w = fastWin(win)) [[likely]] { /* below MULTIPLE: no WinGuard */
		int rc = rma_win_flush(rmaRank(rank), w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Win_flush");
	}
	return flushGeneral(rank, win);
}

RMAMPI_EXPORT int MPI_Win_flush_all(MPI_Win win)
{
	if (ShimWin *w = fastWin(win)) [[likely]] { /* below MULTIPLE: no WinGuard */
		int rc = rma_win_flush_all(w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Win_flush_all");
	}
	return flushAllGeneral(win);
}

RMAMPI_EXPORT int MPI_Win_flush_local(int rank, MPI_Win win)
{
	if (ShimWin *w = fastWin(win)) [[likely]] { /* below MULTIPLE: no WinGuard */
		int rc = rma_win_flush_local(rmaRank(rank), w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Win_flush_local");
	}
	return flushLocalGeneral(rank, win);
}

RMAMPI_EXPORT int MPI_Win_flush_local_all(MPI_Win win)
{
	if (ShimWin *w = fastWin(win)) [[likely]] { /* below MULTIPLE: no WinGuard */
		int rc = rma_win_flush_local_all(w->win);
		return rc == RMA_SUCCESS ? MPI_SUCCESS : raiseRmaLast(rc, "MPI_Win_flush_local_all");
	}
	return flushLocalAllGeneral(win);
}

RMAMPI_EXPORT int MPI_Win_sync(MPI_Win win)
{
	ShimWin *w = findWin(win);
	if (!w)
		return PMPI_Win_sync(win);
	int rc;
	{
		WinGuard g(*w);
		rc = rma_win_sync(w->win);
	}
	return done(*w, rc, "MPI_Win_sync");
}
