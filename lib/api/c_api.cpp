/* SPDX-License-Identifier: MIT */
/*
 * The C API: each function looks its handles up, calls the engine, and hands
 * a failure to the error handler of the object involved (window, else
 * communicator, else RMA_COMM_SELF), as MPI does.
 */
#include <rma/rma.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/core.h"
#include "datatype/datatype.h"
#include "error/error.h"
#include "shm/segment.h"
#include "win/window.h"

using namespace librma;

#define RMA_EXPORT extern "C" RMA_API

namespace {

uintptr_t raw(const void *h) { return reinterpret_cast<uintptr_t>(h); }

/* An error with no object of its own goes to RMA_COMM_SELF's handler. */
[[gnu::cold]] int selfError(int code)
{
	Runtime &rt = runtime();
	Comm *self = rt.initialized ? toComm(RMA_COMM_SELF) : nullptr;
	if (!self || !self->errhandler)
		return code; /* before rma_init: nothing to call */
	return invokeCommErrhandler(*self->errhandler, RMA_COMM_SELF, code);
}

[[gnu::cold]] int commError(rma_comm handle, Comm *comm, int code)
{
	if (!comm || !comm->errhandler)
		return selfError(code);
	return invokeCommErrhandler(*comm->errhandler, handle, code);
}

[[gnu::cold]] int winError(rma_win handle, Window *win, int code)
{
	if (!win || !win->errhandler)
		return selfError(code);
	return invokeWinErrhandler(*win->errhandler, handle, code);
}

[[gnu::cold]] int notInitialized(const char *call)
{
	return makeError(RMA_ERR_OTHER, "%s: librma is not initialized (call rma_init first)", call);
}

[[gnu::cold]] int invalidComm(const char *call, rma_comm comm)
{
	if (!runtime().initialized || runtime().finalized)
		return notInitialized(call);
	return selfError(makeError(RMA_ERR_COMM, "%s: %s is not a valid communicator", call,
				   comm == RMA_COMM_NULL ? "RMA_COMM_NULL" : "the handle"));
}

[[gnu::cold]] int invalidWin(const char *call, rma_win win)
{
	if (!runtime().initialized)
		return notInitialized(call);
	return selfError(makeError(RMA_ERR_WIN, "%s: %s is not a valid window%s", call,
				   win == RMA_WIN_NULL ? "RMA_WIN_NULL" : "the handle",
				   win == RMA_WIN_NULL ? "" : " (freed, or never created)"));
}

[[gnu::cold]] int invalidGroup(const char *call)
{
	return selfError(makeError(RMA_ERR_GROUP, "%s: not a valid group", call));
}

[[gnu::cold]] int invalidInfo(const char *call)
{
	return selfError(makeError(RMA_ERR_INFO, "%s: not a valid info object", call));
}

[[gnu::cold]] int nullArg(const char *call, const char *arg)
{
	return selfError(makeError(RMA_ERR_ARG, "%s: %s is NULL", call, arg));
}

/* Resolve an info argument: RMA_INFO_NULL is fine, anything else must be live. */
bool resolveInfo(rma_info h, const Info *&out)
{
	out = nullptr;
	if (h == RMA_INFO_NULL)
		return true;
	out = toInfo(h);
	return out != nullptr;
}

template<typename Handle>
Handle toHandle(uintptr_t v)
{
	return reinterpret_cast<Handle>(v);
}

} /* namespace */

/* ---- Environment ---------------------------------------------------------- */

RMA_EXPORT int rma_init(int *, char ***)
{
	Runtime &rt = runtime();
	if (rt.initialized)
		return makeError(RMA_ERR_OTHER, "rma_init: librma is already %s", rt.finalized ? "finalized" : "initialized");
	int rc = initRuntime();
	if (rc != RMA_SUCCESS)
		std::fprintf(stderr, "librma: rma_init failed: %s\n", errorMessage(rc).c_str());
	return rc;
}

RMA_EXPORT int rma_init_thread(int *argc, char ***argv, int required, int *provided)
{
	if (required < RMA_THREAD_SINGLE || required > RMA_THREAD_MULTIPLE)
		return makeError(RMA_ERR_ARG, "rma_init_thread: %d is not a thread level", required);
	if (!provided)
		return makeError(RMA_ERR_ARG, "rma_init_thread: provided is NULL");
	RMA_TRY(rma_init(argc, argv));
	*provided = std::min(required, RMA_THREAD_SERIALIZED);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_init_external(const rma_bootstrap_ops *ops, int required, int *provided)
{
	if (!ops)
		return makeError(RMA_ERR_ARG, "rma_init_external: ops is NULL");
	if (required < RMA_THREAD_SINGLE || required > RMA_THREAD_MULTIPLE)
		return makeError(RMA_ERR_ARG, "rma_init_external: %d is not a thread level", required);
	if (!provided)
		return makeError(RMA_ERR_ARG, "rma_init_external: provided is NULL");
	Runtime &rt = runtime();
	if (rt.initialized)
		return makeError(RMA_ERR_OTHER, "rma_init_external: librma is already %s",
				 rt.finalized ? "finalized" : "initialized");
	RMA_TRY(initRuntime(ops, required == RMA_THREAD_MULTIPLE));
	*provided = std::min(required, RMA_THREAD_SERIALIZED);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_finalize(void)
{
	Runtime &rt = runtime();
	if (!rt.initialized || rt.finalized)
		return notInitialized("rma_finalize");
	/* Windows the application left open: unmap them, without synchronizing. */
	for (uintptr_t h : windowTable().liveHandles())
		if (auto w = windowTable().remove(h))
			w->abandon();
	int rc = finalizeRuntime();
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_initialized(int *flag)
{
	if (!flag)
		return RMA_ERR_ARG;
	*flag = runtime().initialized;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_finalized(int *flag)
{
	if (!flag)
		return RMA_ERR_ARG;
	*flag = runtime().finalized;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_abort(rma_comm, int errorcode)
{
	std::fflush(nullptr);
	Runtime &rt = runtime();
	if (rt.bootstrap)
		rt.bootstrap->abort(errorcode);
	_exit(errorcode);
}

RMA_EXPORT double rma_wtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

RMA_EXPORT double rma_wtick(void)
{
	struct timespec ts;
	clock_getres(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

RMA_EXPORT int rma_get_address(const void *location, rma_aint *address)
{
	if (!address)
		return nullArg("rma_get_address", "address");
	*address = reinterpret_cast<rma_aint>(location);
	return RMA_SUCCESS;
}

RMA_EXPORT rma_aint rma_aint_add(rma_aint base, rma_aint disp)
{
	return static_cast<rma_aint>(static_cast<uintptr_t>(base) + static_cast<uintptr_t>(disp));
}

RMA_EXPORT rma_aint rma_aint_diff(rma_aint addr1, rma_aint addr2)
{
	return static_cast<rma_aint>(static_cast<uintptr_t>(addr1) - static_cast<uintptr_t>(addr2));
}

/* ---- Errors --------------------------------------------------------------- */

RMA_EXPORT int rma_error_class(int errorcode, int *errorclass)
{
	if (!errorclass)
		return RMA_ERR_ARG;
	int cls = errorClass(errorcode);
	if (cls < 0)
		return RMA_ERR_ARG;
	*errorclass = cls;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_error_string(int errorcode, char *string, int *resultlen)
{
	if (!string || !resultlen || errorClass(errorcode) < 0)
		return RMA_ERR_ARG;
	std::string msg = errorMessage(errorcode);
	size_t n = std::min(msg.size(), static_cast<size_t>(RMA_MAX_ERROR_STRING - 1));
	std::memcpy(string, msg.data(), n);
	string[n] = '\0';
	*resultlen = static_cast<int>(n);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_create_errhandler(rma_comm_errhandler_function *fn, rma_errhandler *errhandler)
{
	if (!fn || !errhandler)
		return nullArg("rma_comm_create_errhandler", !fn ? "function" : "errhandler");
	auto h = std::make_shared<Errhandler>();
	h->kind = Errhandler::Kind::UserComm;
	h->commFn = fn;
	*errhandler = toHandle<rma_errhandler>(runtime().errhandlers.insert(std::move(h)));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_create_errhandler(rma_win_errhandler_function *fn, rma_errhandler *errhandler)
{
	if (!fn || !errhandler)
		return nullArg("rma_win_create_errhandler", !fn ? "function" : "errhandler");
	auto h = std::make_shared<Errhandler>();
	h->kind = Errhandler::Kind::UserWin;
	h->winFn = fn;
	*errhandler = toHandle<rma_errhandler>(runtime().errhandlers.insert(std::move(h)));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_errhandler_free(rma_errhandler *errhandler)
{
	if (!errhandler)
		return nullArg("rma_errhandler_free", "errhandler");
	if (HandleTable<Errhandler, HandleKind::Errhandler>::isPredefined(raw(*errhandler)) ||
	    !runtime().errhandlers.remove(raw(*errhandler)))
		return selfError(makeError(RMA_ERR_ARG, "rma_errhandler_free: not a user error handler"));
	*errhandler = RMA_ERRHANDLER_NULL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_set_errhandler(rma_comm comm, rma_errhandler errhandler)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_set_errhandler", comm);
	auto h = runtime().errhandlers.share(raw(errhandler));
	if (!h || h->kind == Errhandler::Kind::UserWin)
		return commError(comm, c,
				 makeError(RMA_ERR_ARG, "rma_comm_set_errhandler: not a communicator error handler"));
	c->errhandler = std::move(h);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_get_errhandler(rma_comm comm, rma_errhandler *errhandler)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_get_errhandler", comm);
	if (!errhandler)
		return nullArg("rma_comm_get_errhandler", "errhandler");
	/* Predefined handlers are recognised by identity; user ones get a fresh handle. */
	for (uint32_t i = 1; i <= 3; ++i) {
		uintptr_t h = encodeHandle(HandleKind::Errhandler, 0, i);
		if (runtime().errhandlers.lookup(h) == c->errhandler.get()) {
			*errhandler = toHandle<rma_errhandler>(h);
			return RMA_SUCCESS;
		}
	}
	*errhandler = toHandle<rma_errhandler>(runtime().errhandlers.insert(c->errhandler));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_set_errhandler(rma_win win, rma_errhandler errhandler)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_set_errhandler", win);
	auto h = runtime().errhandlers.share(raw(errhandler));
	if (!h || h->kind == Errhandler::Kind::UserComm)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_set_errhandler: not a window error handler"));
	w->errhandler = std::move(h);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_get_errhandler(rma_win win, rma_errhandler *errhandler)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_get_errhandler", win);
	if (!errhandler)
		return nullArg("rma_win_get_errhandler", "errhandler");
	for (uint32_t i = 1; i <= 3; ++i) {
		uintptr_t h = encodeHandle(HandleKind::Errhandler, 0, i);
		if (runtime().errhandlers.lookup(h) == w->errhandler.get()) {
			*errhandler = toHandle<rma_errhandler>(h);
			return RMA_SUCCESS;
		}
	}
	*errhandler = toHandle<rma_errhandler>(runtime().errhandlers.insert(w->errhandler));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_call_errhandler(rma_win win, int errorcode)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_call_errhandler", win);
	/* Keep the handler alive even if a user handler replaces it on the window. */
	std::shared_ptr<Errhandler> handler = w->errhandler;
	if (handler)
		(void)invokeWinErrhandler(*handler, win, errorcode);
	return RMA_SUCCESS;
}

/* ---- Communicators -------------------------------------------------------- */

RMA_EXPORT int rma_comm_rank(rma_comm comm, int *rank)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_rank", comm);
	if (!rank)
		return nullArg("rma_comm_rank", "rank");
	*rank = c->rank();
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_size(rma_comm comm, int *size)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_size", comm);
	if (!size)
		return nullArg("rma_comm_size", "size");
	*size = c->size();
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_split(rma_comm comm, int color, int key, rma_comm *newcomm)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_split", comm);
	if (!newcomm)
		return nullArg("rma_comm_split", "newcomm");
	/* A bad color still takes part, as RMA_UNDEFINED, so that no peer hangs. */
	bool badColor = color < 0 && color != RMA_UNDEFINED;
	std::shared_ptr<Comm> out;
	int rc = c->split(badColor ? RMA_UNDEFINED : color, key, out);
	if (rc != RMA_SUCCESS)
		return commError(comm, c, rc);
	if (badColor)
		return commError(comm, c,
				 makeError(RMA_ERR_ARG, "rma_comm_split: color %d is negative (only RMA_UNDEFINED may be)",
					   color));
	*newcomm = out ? toHandle<rma_comm>(runtime().comms.insert(std::move(out))) : RMA_COMM_NULL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_split_type(rma_comm comm, int split_type, int key, rma_info info, rma_comm *newcomm)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_split_type", comm);
	if (!newcomm)
		return nullArg("rma_comm_split_type", "newcomm");
	Runtime &rt = runtime();
	const Info *inf;
	bool badInfo = !resolveInfo(info, inf);
	bool badType = split_type != RMA_COMM_TYPE_SHARED && split_type != RMA_UNDEFINED;
	/* A bad argument still takes part, as RMA_UNDEFINED, so that no peer hangs. */
	int color = badInfo || badType || split_type == RMA_UNDEFINED ? RMA_UNDEFINED
								       : rt.bootstrap->host(rt.bootstrap->rank());
	std::shared_ptr<Comm> out;
	int rc = c->split(color, key, out);
	if (rc != RMA_SUCCESS)
		return commError(comm, c, rc);
	if (badType)
		return commError(comm, c,
				 makeError(RMA_ERR_ARG,
					   "rma_comm_split_type: split_type %d is not RMA_COMM_TYPE_SHARED (%d) or "
					   "RMA_UNDEFINED",
					   split_type, RMA_COMM_TYPE_SHARED));
	if (badInfo)
		return commError(comm, c, makeError(RMA_ERR_INFO, "rma_comm_split_type: not a valid info object"));
	*newcomm = out ? toHandle<rma_comm>(runtime().comms.insert(std::move(out))) : RMA_COMM_NULL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_create_group(rma_comm comm, rma_group group, int tag, rma_comm *newcomm)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_create_group", comm);
	if (!newcomm)
		return nullArg("rma_comm_create_group", "newcomm");
	Group *g = toGroup(group);
	if (!g)
		return commError(comm, c, makeError(RMA_ERR_GROUP, "rma_comm_create_group: not a valid group"));
	if (tag < 0)
		return commError(comm, c, makeError(RMA_ERR_TAG, "rma_comm_create_group: tag %d is negative", tag));
	for (int r = 0; r < g->size(); ++r) {
		if (c->group()->rankOf(g->worldRank(r)) == RMA_UNDEFINED)
			return commError(comm, c,
					 makeError(RMA_ERR_GROUP,
						   "rma_comm_create_group: member %d of the group (world rank %d) is not "
						   "in the communicator",
						   r, g->worldRank(r)));
	}
	std::shared_ptr<Comm> out;
	int rc = c->createGroup(*g, tag, out);
	if (rc != RMA_SUCCESS)
		return commError(comm, c, rc);
	if (!out) {
		*newcomm = RMA_COMM_NULL;
		return RMA_SUCCESS;
	}
	uintptr_t h = runtime().comms.insert(std::move(out));
	if (h == 0)
		return commError(comm, c, makeError(RMA_ERR_NO_MEM, "rma_comm_create_group: too many communicators"));
	*newcomm = toHandle<rma_comm>(h);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_dup(rma_comm comm, rma_comm *newcomm)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_dup", comm);
	if (!newcomm)
		return nullArg("rma_comm_dup", "newcomm");
	std::shared_ptr<Comm> out;
	int rc = c->split(0, c->rank(), out);
	if (rc != RMA_SUCCESS)
		return commError(comm, c, rc);
	*newcomm = toHandle<rma_comm>(runtime().comms.insert(std::move(out)));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_free(rma_comm *comm)
{
	if (!comm)
		return nullArg("rma_comm_free", "comm");
	if (HandleTable<Comm, HandleKind::Comm>::isPredefined(raw(*comm)))
		return selfError(makeError(RMA_ERR_COMM, "rma_comm_free: predefined communicators cannot be freed"));
	if (!runtime().comms.remove(raw(*comm)))
		return invalidComm("rma_comm_free", *comm);
	*comm = RMA_COMM_NULL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_comm_group(rma_comm comm, rma_group *group)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_comm_group", comm);
	if (!group)
		return nullArg("rma_comm_group", "group");
	*group = toHandle<rma_group>(runtime().groups.insert(std::make_shared<Group>(*c->group())));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_barrier(rma_comm comm)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm("rma_barrier", comm);
	int rc = c->barrier();
	return rc == RMA_SUCCESS ? rc : commError(comm, c, rc);
}

/* ---- Groups --------------------------------------------------------------- */

RMA_EXPORT int rma_group_size(rma_group group, int *size)
{
	Group *g = toGroup(group);
	if (!g)
		return invalidGroup("rma_group_size");
	if (!size)
		return nullArg("rma_group_size", "size");
	*size = g->size();
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_group_rank(rma_group group, int *rank)
{
	Group *g = toGroup(group);
	if (!g)
		return invalidGroup("rma_group_rank");
	if (!rank)
		return nullArg("rma_group_rank", "rank");
	Runtime &rt = runtime();
	*rank = rt.bootstrap ? g->rankOf(rt.bootstrap->rank()) : RMA_UNDEFINED;
	return RMA_SUCCESS;
}

namespace {

/* Validate ranks[0..n-1] of @g: in range and distinct. Returns the chosen mask. */
int checkRanks(const char *call, const Group &g, int n, const int ranks[], std::vector<char> &chosen)
{
	if (n < 0 || n > g.size())
		return makeError(RMA_ERR_ARG, "%s: n = %d is not in 0..%d (the group size)", call, n, g.size());
	if (n > 0 && !ranks)
		return makeError(RMA_ERR_ARG, "%s: ranks is NULL", call);
	chosen.assign(g.size(), 0);
	for (int i = 0; i < n; ++i) {
		if (ranks[i] < 0 || ranks[i] >= g.size())
			return makeError(RMA_ERR_RANK, "%s: ranks[%d] = %d is not in 0..%d", call, i, ranks[i], g.size() - 1);
		if (chosen[ranks[i]])
			return makeError(RMA_ERR_RANK, "%s: rank %d appears twice", call, ranks[i]);
		chosen[ranks[i]] = 1;
	}
	return RMA_SUCCESS;
}

} /* namespace */

RMA_EXPORT int rma_group_incl(rma_group group, int n, const int ranks[], rma_group *newgroup)
{
	Group *g = toGroup(group);
	if (!g)
		return invalidGroup("rma_group_incl");
	if (!newgroup)
		return nullArg("rma_group_incl", "newgroup");
	std::vector<char> chosen;
	int rc = checkRanks("rma_group_incl", *g, n, ranks, chosen);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	std::vector<int> world;
	for (int i = 0; i < n; ++i)
		world.push_back(g->worldRank(ranks[i]));
	*newgroup = n == 0 ? RMA_GROUP_EMPTY
			   : toHandle<rma_group>(runtime().groups.insert(std::make_shared<Group>(std::move(world))));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_group_excl(rma_group group, int n, const int ranks[], rma_group *newgroup)
{
	Group *g = toGroup(group);
	if (!g)
		return invalidGroup("rma_group_excl");
	if (!newgroup)
		return nullArg("rma_group_excl", "newgroup");
	std::vector<char> chosen;
	int rc = checkRanks("rma_group_excl", *g, n, ranks, chosen);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	std::vector<int> world;
	for (int r = 0; r < g->size(); ++r)
		if (!chosen[r])
			world.push_back(g->worldRank(r));
	*newgroup = world.empty() ? RMA_GROUP_EMPTY
				  : toHandle<rma_group>(runtime().groups.insert(std::make_shared<Group>(std::move(world))));
	return RMA_SUCCESS;
}

namespace {

/*
 * Expand @n triplets of @g into the ranks they name, in triplet order,
 * checking them as MPI says: a non-zero stride that moves from first
 * towards last, and named ranks inside the group and distinct. Bounded by
 * the group's size: a range that names more ranks fails on a repeat or an
 * out-of-range rank first.
 */
int expandRanges(const char *call, const Group &g, int n, int ranges[][3], std::vector<int> &ranks,
		 std::vector<char> &chosen)
{
	if (n < 0)
		return makeError(RMA_ERR_ARG, "%s: n = %d is negative", call, n);
	if (n > 0 && !ranges)
		return makeError(RMA_ERR_ARG, "%s: ranges is NULL", call);
	ranks.clear();
	chosen.assign(g.size(), 0);
	for (int i = 0; i < n; ++i) {
		int64_t first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
		if (stride == 0)
			return makeError(RMA_ERR_ARG, "%s: ranges[%d] = (%lld, %lld, %lld) has stride 0", call, i,
					 (long long)first, (long long)last, (long long)stride);
		if ((stride > 0 && first > last) || (stride < 0 && first < last))
			return makeError(RMA_ERR_ARG,
					 "%s: ranges[%d] = (%lld, %lld, %lld): the stride points away from last, so "
					 "the range names no rank",
					 call, i, (long long)first, (long long)last, (long long)stride);
		for (int64_t r = first; stride > 0 ? r <= last : r >= last; r += stride) {
			if (r < 0 || r >= g.size())
				return makeError(RMA_ERR_RANK, "%s: ranges[%d] = (%lld, %lld, %lld) names rank %lld, not in 0..%d",
						 call, i, (long long)first, (long long)last, (long long)stride, (long long)r,
						 g.size() - 1);
			if (chosen[r])
				return makeError(RMA_ERR_RANK, "%s: ranges[%d] = (%lld, %lld, %lld) names rank %lld a second time",
						 call, i, (long long)first, (long long)last, (long long)stride, (long long)r);
			chosen[r] = 1;
			ranks.push_back(static_cast<int>(r));
		}
	}
	return RMA_SUCCESS;
}

rma_group insertGroup(std::vector<int> world)
{
	if (world.empty())
		return RMA_GROUP_EMPTY;
	return toHandle<rma_group>(runtime().groups.insert(std::make_shared<Group>(std::move(world))));
}

} /* namespace */

namespace {

/* range_incl (@include: the ranges' ranks, in their order) or range_excl (the others, in group order). */
int rangeGroup(const char *call, rma_group group, int n, int ranges[][3], rma_group *newgroup, bool include)
{
	Group *g = toGroup(group);
	if (!g)
		return invalidGroup(call);
	if (!newgroup)
		return nullArg(call, "newgroup");
	std::vector<int> ranks;
	std::vector<char> chosen;
	int rc = expandRanges(call, *g, n, ranges, ranks, chosen);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	std::vector<int> world;
	if (include) {
		world.reserve(ranks.size());
		for (int r : ranks)
			world.push_back(g->worldRank(r));
	} else {
		for (int r = 0; r < g->size(); ++r)
			if (!chosen[r])
				world.push_back(g->worldRank(r));
	}
	rma_group out = insertGroup(std::move(world));
	if (out == RMA_GROUP_NULL)
		return selfError(makeError(RMA_ERR_NO_MEM, "%s: too many groups", call));
	*newgroup = out;
	return RMA_SUCCESS;
}

} /* namespace */

RMA_EXPORT int rma_group_range_incl(rma_group group, int n, int ranges[][3], rma_group *newgroup)
{
	return rangeGroup("rma_group_range_incl", group, n, ranges, newgroup, true);
}

RMA_EXPORT int rma_group_range_excl(rma_group group, int n, int ranges[][3], rma_group *newgroup)
{
	return rangeGroup("rma_group_range_excl", group, n, ranges, newgroup, false);
}

RMA_EXPORT int rma_group_compare(rma_group group1, rma_group group2, int *result)
{
	Group *g1 = toGroup(group1);
	Group *g2 = toGroup(group2);
	if (!g1 || !g2)
		return invalidGroup("rma_group_compare");
	if (!result)
		return nullArg("rma_group_compare", "result");
	const std::vector<int> &a = g1->worldRanks();
	const std::vector<int> &b = g2->worldRanks();
	if (a == b) {
		*result = RMA_IDENT;
		return RMA_SUCCESS;
	}
	if (a.size() != b.size()) {
		*result = RMA_UNEQUAL;
		return RMA_SUCCESS;
	}
	std::vector<int> sa = a, sb = b;
	std::sort(sa.begin(), sa.end());
	std::sort(sb.begin(), sb.end());
	*result = sa == sb ? RMA_SIMILAR : RMA_UNEQUAL;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_group_translate_ranks(rma_group group1, int n, const int ranks1[], rma_group group2, int ranks2[])
{
	Group *g1 = toGroup(group1);
	Group *g2 = toGroup(group2);
	if (!g1 || !g2)
		return invalidGroup("rma_group_translate_ranks");
	if (n < 0 || (n > 0 && (!ranks1 || !ranks2)))
		return selfError(makeError(RMA_ERR_ARG, "rma_group_translate_ranks: bad n (%d) or NULL arrays", n));
	for (int i = 0; i < n; ++i) {
		if (ranks1[i] == RMA_PROC_NULL) {
			ranks2[i] = RMA_PROC_NULL;
			continue;
		}
		if (ranks1[i] < 0 || ranks1[i] >= g1->size())
			return selfError(makeError(RMA_ERR_RANK, "rma_group_translate_ranks: ranks1[%d] = %d is not in 0..%d",
						   i, ranks1[i], g1->size() - 1));
		ranks2[i] = g2->rankOf(g1->worldRank(ranks1[i]));
	}
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_group_free(rma_group *group)
{
	if (!group)
		return nullArg("rma_group_free", "group");
	if (*group == RMA_GROUP_EMPTY) {
		*group = RMA_GROUP_NULL; /* MPI allows freeing the empty group handle; nothing to release */
		return RMA_SUCCESS;
	}
	if (!runtime().groups.remove(raw(*group)))
		return invalidGroup("rma_group_free");
	*group = RMA_GROUP_NULL;
	return RMA_SUCCESS;
}

/* ---- Info ----------------------------------------------------------------- */

namespace {

int checkKey(const char *call, const char *key)
{
	if (!key)
		return makeError(RMA_ERR_INFO_KEY, "%s: key is NULL", call);
	size_t n = std::strlen(key);
	if (n == 0 || n > RMA_MAX_INFO_KEY)
		return makeError(RMA_ERR_INFO_KEY, "%s: key length %zu is not in 1..%d", call, n, RMA_MAX_INFO_KEY);
	return RMA_SUCCESS;
}

} /* namespace */

RMA_EXPORT int rma_info_create(rma_info *info)
{
	if (!info)
		return nullArg("rma_info_create", "info");
	*info = toHandle<rma_info>(runtime().infos.insert(std::make_shared<Info>()));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_set(rma_info info, const char *key, const char *value)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_set");
	int rc = checkKey("rma_info_set", key);
	if (rc == RMA_SUCCESS && (!value || std::strlen(value) > RMA_MAX_INFO_VAL))
		rc = makeError(RMA_ERR_INFO_VALUE, "rma_info_set: value for key \"%s\" is NULL or longer than %d", key,
			       RMA_MAX_INFO_VAL);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	i->set(key, value);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_get(rma_info info, const char *key, int valuelen, char *value, int *flag)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_get");
	int rc = checkKey("rma_info_get", key);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	if (!flag || valuelen < 0 || (!value && valuelen > 0))
		return nullArg("rma_info_get", "flag or value");
	const std::string *v = i->get(key);
	*flag = v != nullptr;
	if (v) {
		size_t n = std::min(v->size(), static_cast<size_t>(valuelen));
		std::memcpy(value, v->data(), n);
		value[n] = '\0';
	}
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_get_string(rma_info info, const char *key, int *buflen, char *value, int *flag)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_get_string");
	int rc = checkKey("rma_info_get_string", key);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	if (!flag || !buflen || *buflen < 0)
		return nullArg("rma_info_get_string", "flag or buflen");
	const std::string *v = i->get(key);
	*flag = v != nullptr;
	if (v) {
		if (*buflen > 0 && value) {
			size_t n = std::min(v->size(), static_cast<size_t>(*buflen - 1));
			std::memcpy(value, v->data(), n);
			value[n] = '\0';
		}
		*buflen = static_cast<int>(v->size()) + 1;
	}
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_get_valuelen(rma_info info, const char *key, int *valuelen, int *flag)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_get_valuelen");
	int rc = checkKey("rma_info_get_valuelen", key);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	if (!flag || !valuelen)
		return nullArg("rma_info_get_valuelen", "flag or valuelen");
	const std::string *v = i->get(key);
	*flag = v != nullptr;
	if (v)
		*valuelen = static_cast<int>(v->size());
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_get_nkeys(rma_info info, int *nkeys)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_get_nkeys");
	if (!nkeys)
		return nullArg("rma_info_get_nkeys", "nkeys");
	*nkeys = static_cast<int>(i->entries().size());
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_get_nthkey(rma_info info, int n, char *key)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_get_nthkey");
	if (!key)
		return nullArg("rma_info_get_nthkey", "key");
	if (n < 0 || n >= static_cast<int>(i->entries().size()))
		return selfError(makeError(RMA_ERR_ARG, "rma_info_get_nthkey: n = %d is not in 0..%zu", n,
					   i->entries().size() - 1));
	const std::string &k = i->entries()[n].first;
	std::memcpy(key, k.c_str(), k.size() + 1);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_delete(rma_info info, const char *key)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_delete");
	int rc = checkKey("rma_info_delete", key);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	if (!i->erase(key))
		return selfError(makeError(RMA_ERR_INFO_NOKEY, "rma_info_delete: key \"%s\" is not set", key));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_dup(rma_info info, rma_info *newinfo)
{
	Info *i = toInfo(info);
	if (!i)
		return invalidInfo("rma_info_dup");
	if (!newinfo)
		return nullArg("rma_info_dup", "newinfo");
	*newinfo = toHandle<rma_info>(runtime().infos.insert(std::make_shared<Info>(*i)));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_info_free(rma_info *info)
{
	if (!info)
		return nullArg("rma_info_free", "info");
	if (HandleTable<Info, HandleKind::Info>::isPredefined(raw(*info)) || !runtime().infos.remove(raw(*info)))
		return invalidInfo("rma_info_free");
	*info = RMA_INFO_NULL;
	return RMA_SUCCESS;
}

/* ---- Memory --------------------------------------------------------------- */

RMA_EXPORT int rma_alloc_mem(rma_aint size, rma_info info, void *baseptr)
{
	static constexpr const char *kCall = "rma_alloc_mem";
	if (!runtime().initialized)
		return notInitialized(kCall);
	const Info *inf;
	if (!resolveInfo(info, inf))
		return invalidInfo(kCall);
	if (!baseptr)
		return nullArg(kCall, "baseptr");
	if (size < 0)
		return selfError(makeError(RMA_ERR_SIZE, "%s: size %lld is negative", kCall, static_cast<long long>(size)));
	WindowHints hints = WindowHints::jobDefaults();
	int rc = hints.parse(kCall, inf);
	if (rc != RMA_SUCCESS)
		return selfError(rc);
	const Topology &topology = Topology::system();
	auto policy = resolvePlacement(hints.placement, topology, currentNode(topology));
	if (!policy)
		return selfError(policy.code());
	SegmentOptions options;
	options.size = static_cast<size_t>(size > 0 ? size : 1); /* a unique, freeable address even for 0 */
	options.hugePages = hints.hugePages;
	options.policy = policy.value();
	options.name = "rma-alloc-mem";
	auto seg = Segment::create(options);
	if (!seg)
		return selfError(seg.code());
	*static_cast<void **>(baseptr) = SegmentRegistry::instance().add(std::move(seg.value()));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_free_mem(void *base)
{
	if (!SegmentRegistry::instance().remove(base))
		return selfError(makeError(RMA_ERR_BASE, "rma_free_mem: %p was not returned by rma_alloc_mem", base));
	return RMA_SUCCESS;
}

/* ---- Windows -------------------------------------------------------------- */

namespace {

int createWindow(const char *call, Flavor flavor, void *base, rma_aint size, int dispUnit, rma_info info,
		 rma_comm comm, void *baseptr, rma_win *win)
{
	Comm *c = toComm(comm);
	if (!c)
		return invalidComm(call, comm);
	const Info *inf;
	if (!resolveInfo(info, inf))
		return commError(comm, c, makeError(RMA_ERR_INFO, "%s: not a valid info object", call));
	if (!win || ((flavor == Flavor::Allocate || flavor == Flavor::Shared) && !baseptr))
		return commError(comm, c, makeError(RMA_ERR_ARG, "%s: %s is NULL", call, !win ? "win" : "baseptr"));
	std::unique_ptr<Window> w;
	int rc = Window::create(flavor, base, size, dispUnit, inf, runtime().comms.share(raw(comm)), w);
	if (rc != RMA_SUCCESS)
		return commError(comm, c, rc);
	if (baseptr)
		*static_cast<void **>(baseptr) = w->localBase();
	uintptr_t h = windowTable().insert(std::shared_ptr<Window>(std::move(w)));
	if (h == 0)
		return commError(comm, c, makeError(RMA_ERR_NO_MEM, "%s: too many windows", call));
	*win = toHandle<rma_win>(h);
	return RMA_SUCCESS;
}

} /* namespace */

RMA_EXPORT int rma_win_create(void *base, rma_aint size, int disp_unit, rma_info info, rma_comm comm, rma_win *win)
{
	return createWindow("rma_win_create", Flavor::Create, base, size, disp_unit, info, comm, nullptr, win);
}

RMA_EXPORT int rma_win_allocate(rma_aint size, int disp_unit, rma_info info, rma_comm comm, void *baseptr,
				rma_win *win)
{
	return createWindow("rma_win_allocate", Flavor::Allocate, nullptr, size, disp_unit, info, comm, baseptr, win);
}

RMA_EXPORT int rma_win_allocate_shared(rma_aint size, int disp_unit, rma_info info, rma_comm comm, void *baseptr,
				       rma_win *win)
{
	return createWindow("rma_win_allocate_shared", Flavor::Shared, nullptr, size, disp_unit, info, comm, baseptr,
			    win);
}

RMA_EXPORT int rma_win_create_dynamic(rma_info info, rma_comm comm, rma_win *win)
{
	return createWindow("rma_win_create_dynamic", Flavor::Dynamic, nullptr, 0, 1, info, comm, nullptr, win);
}

RMA_EXPORT int rma_win_shared_query(rma_win win, int rank, rma_aint *size, int *disp_unit, void *baseptr)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_shared_query", win);
	if (!size || !disp_unit || !baseptr)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_shared_query: an output argument is NULL"));
	int rc = w->sharedQuery(rank, size, disp_unit, baseptr);
	return rc == RMA_SUCCESS ? rc : winError(win, w, rc);
}

RMA_EXPORT int rma_win_attach(rma_win win, void *base, rma_aint size)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_attach", win);
	int rc = w->attach(base, size);
	return rc == RMA_SUCCESS ? rc : winError(win, w, rc);
}

RMA_EXPORT int rma_win_detach(rma_win win, const void *base)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_detach", win);
	int rc = w->detach(base);
	return rc == RMA_SUCCESS ? rc : winError(win, w, rc);
}

namespace {

bool isPredefinedWinKeyval(int keyval) { return keyval >= RMA_WIN_BASE && keyval <= RMA_WIN_MODEL; }

/* Run the delete callback of @e, cached on @win. */
int deleteCallback(rma_win win, const AttributeSet::Entry &e)
{
	if (!e.key->winDelete)
		return RMA_SUCCESS;
	return e.key->winDelete(win, e.keyval, e.value, e.key->extraState);
}

[[gnu::cold]] int callbackFailed(const char *call, int keyval, int rc, const char *consequence)
{
	return makeError(RMA_ERR_OTHER, "%s: the delete callback of keyval %d returned %d; %s", call, keyval, rc,
			 consequence);
}

} /* namespace */

RMA_EXPORT int rma_win_free(rma_win *win)
{
	if (!win)
		return nullArg("rma_win_free", "win");
	Window *w = toWindow(*win);
	if (!w)
		return invalidWin("rma_win_free", *win);
	/* Delete callbacks first, newest attribute first, while the window is still whole. */
	while (const AttributeSet::Entry *newest = w->attributes.newest()) {
		AttributeSet::Entry e = *newest; /* the callback may touch the set */
		int rc = deleteCallback(*win, e);
		w = toWindow(*win);
		if (!w)
			return invalidWin("rma_win_free", *win); /* a callback freed it */
		if (rc != RMA_SUCCESS)
			return winError(*win, w,
					callbackFailed("rma_win_free", e.keyval, rc,
						       "the window is not freed and keeps that attribute and older ones"));
		w->attributes.erase(e.keyval);
	}
	int rc = w->free();
	if (rc != RMA_SUCCESS && !w->released())
		return winError(*win, w, rc);
	if (rc != RMA_SUCCESS)
		rc = winError(*win, w, rc); /* a member died: the window is released all the same */
	(void)windowTable().remove(raw(*win));
	*win = RMA_WIN_NULL;
	return rc;
}

RMA_EXPORT int rma_win_null_copy_fn(rma_win, int, void *, void *, void *, int *flag)
{
	if (flag)
		*flag = 0;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_dup_fn(rma_win, int, void *, void *attribute_val_in, void *attribute_val_out, int *flag)
{
	if (attribute_val_out)
		*static_cast<void **>(attribute_val_out) = attribute_val_in;
	if (flag)
		*flag = 1;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_null_delete_fn(rma_win, int, void *, void *) { return RMA_SUCCESS; }

RMA_EXPORT int rma_win_create_keyval(rma_win_copy_attr_function *win_copy_attr_fn,
				     rma_win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state)
{
	if (!win_keyval)
		return nullArg("rma_win_create_keyval", "win_keyval");
	auto key = std::make_shared<Keyval>();
	key->kind = Keyval::Kind::Win;
	key->winCopy = win_copy_attr_fn;
	key->winDelete = win_delete_attr_fn;
	key->extraState = extra_state;
	int id = runtime().keyvals.create(std::move(key));
	if (id == 0)
		return selfError(makeError(RMA_ERR_NO_MEM, "rma_win_create_keyval: all %u keyvals have been made",
					   KeyvalRegistry::kMaxSerial));
	*win_keyval = id;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_free_keyval(int *win_keyval)
{
	if (!win_keyval)
		return nullArg("rma_win_free_keyval", "win_keyval");
	if (isPredefinedWinKeyval(*win_keyval))
		return selfError(makeError(RMA_ERR_KEYVAL, "rma_win_free_keyval: %d is a predefined keyval",
					   *win_keyval));
	if (!runtime().keyvals.free(Keyval::Kind::Win, *win_keyval))
		return selfError(makeError(RMA_ERR_KEYVAL, "rma_win_free_keyval: %d is not a window keyval%s",
					   *win_keyval, *win_keyval == RMA_KEYVAL_INVALID ? " (RMA_KEYVAL_INVALID)"
											  : " (freed, or never made)"));
	*win_keyval = RMA_KEYVAL_INVALID;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_set_attr(rma_win win, int win_keyval, void *attribute_val)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_set_attr", win);
	if (isPredefinedWinKeyval(win_keyval))
		return winError(win, w,
				makeError(RMA_ERR_KEYVAL, "rma_win_set_attr: keyval %d is predefined and read-only",
					  win_keyval));
	std::shared_ptr<Keyval> key = runtime().keyvals.find(Keyval::Kind::Win, win_keyval);
	if (!key || key->freed)
		return winError(win, w,
				makeError(RMA_ERR_KEYVAL, "rma_win_set_attr: %d is not a window keyval%s", win_keyval,
					  key ? " any more (freed)" : ""));
	if (const AttributeSet::Entry *old = w->attributes.find(win_keyval)) {
		AttributeSet::Entry e = *old;
		int rc = deleteCallback(win, e);
		w = toWindow(win);
		if (!w)
			return invalidWin("rma_win_set_attr", win);
		if (rc != RMA_SUCCESS)
			return winError(win, w, callbackFailed("rma_win_set_attr", win_keyval, rc, "the old value stays"));
	}
	w->attributes.set(win_keyval, std::move(key), attribute_val);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_get_attr(rma_win win, int win_keyval, void *attribute_val, int *flag)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_get_attr", win);
	if (!attribute_val || !flag)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_get_attr: attribute_val or flag is NULL"));
	void **out = static_cast<void **>(attribute_val);
	switch (win_keyval) {
	case RMA_WIN_BASE: *out = w->localBase(); break;
	case RMA_WIN_SIZE: *out = const_cast<rma_aint *>(w->localSize()); break;
	case RMA_WIN_DISP_UNIT: *out = const_cast<int *>(w->localDispUnit()); break;
	case RMA_WIN_CREATE_FLAVOR: *out = const_cast<int *>(w->flavorAttr()); break;
	case RMA_WIN_MODEL: *out = const_cast<int *>(w->modelAttr()); break;
	default: {
		if (!runtime().keyvals.find(Keyval::Kind::Win, win_keyval)) {
			*flag = 0; /* as before keyvals existed: programs that test only flag see no attribute */
			return winError(win, w,
					makeError(RMA_ERR_KEYVAL,
						  "rma_win_get_attr: %d is neither a predefined window attribute nor a "
						  "window keyval",
						  win_keyval));
		}
		const AttributeSet::Entry *e = w->attributes.find(win_keyval);
		*flag = e ? 1 : 0;
		if (e)
			*out = e->value;
		return RMA_SUCCESS;
	}
	}
	*flag = 1;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_delete_attr(rma_win win, int win_keyval)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_delete_attr", win);
	if (isPredefinedWinKeyval(win_keyval))
		return winError(win, w,
				makeError(RMA_ERR_KEYVAL, "rma_win_delete_attr: keyval %d is predefined and read-only",
					  win_keyval));
	if (!runtime().keyvals.find(Keyval::Kind::Win, win_keyval))
		return winError(win, w,
				makeError(RMA_ERR_KEYVAL, "rma_win_delete_attr: %d is not a window keyval", win_keyval));
	const AttributeSet::Entry *old = w->attributes.find(win_keyval);
	if (!old)
		return winError(win, w,
				makeError(RMA_ERR_KEYVAL, "rma_win_delete_attr: keyval %d has no value on this window",
					  win_keyval));
	AttributeSet::Entry e = *old;
	int rc = deleteCallback(win, e);
	w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_delete_attr", win);
	if (rc != RMA_SUCCESS)
		return winError(win, w, callbackFailed("rma_win_delete_attr", win_keyval, rc, "the attribute stays"));
	w->attributes.erase(win_keyval);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_get_group(rma_win win, rma_group *group)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_get_group", win);
	if (!group)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_get_group: group is NULL"));
	*group = toHandle<rma_group>(runtime().groups.insert(std::make_shared<Group>(*w->group())));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_set_info(rma_win win, rma_info info)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_set_info", win);
	const Info *inf;
	if (!resolveInfo(info, inf))
		return winError(win, w, makeError(RMA_ERR_INFO, "rma_win_set_info: not a valid info object"));
	int rc = w->setInfo(inf);
	return rc == RMA_SUCCESS ? rc : winError(win, w, rc);
}

RMA_EXPORT int rma_win_get_info(rma_win win, rma_info *info_used)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_get_info", win);
	if (!info_used)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_get_info: info_used is NULL"));
	auto info = std::make_shared<Info>();
	w->reportInfo(*info);
	*info_used = toHandle<rma_info>(runtime().infos.insert(std::move(info)));
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_set_name(rma_win win, const char *win_name)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_set_name", win);
	if (!win_name || std::strlen(win_name) >= RMA_MAX_OBJECT_NAME)
		return winError(win, w,
				makeError(RMA_ERR_ARG, "rma_win_set_name: name is NULL or longer than %d characters",
					  RMA_MAX_OBJECT_NAME - 1));
	w->name = win_name;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_get_name(rma_win win, char *win_name, int *resultlen)
{
	Window *w = toWindow(win);
	if (!w)
		return invalidWin("rma_win_get_name", win);
	if (!win_name || !resultlen)
		return winError(win, w, makeError(RMA_ERR_ARG, "rma_win_get_name: win_name or resultlen is NULL"));
	std::memcpy(win_name, w->name.c_str(), w->name.size() + 1);
	*resultlen = static_cast<int>(w->name.size());
	return RMA_SUCCESS;
}

/* ---- Communication -------------------------------------------------------- */

namespace {

/*
 * The full put/get behind the inline part (Window::accessFast): the same
 * parameters as rma_put/rma_get, so they reach it by a tail call and their
 * inline part saves no registers.
 */
template<bool Put>
[[gnu::noinline]] int accessSlow(void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
				 rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win)
{
	static constexpr const char *kCall = Put ? "rma_put" : "rma_get";
	Window *w = toWindow(win);
	if (!w) [[unlikely]]
		return invalidWin(kCall, win);
	int rc = Put ? w->put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			      target_datatype)
		     : w->get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			      target_datatype);
	if (rc != RMA_SUCCESS) [[unlikely]]
		return winError(win, w, rc);
	return RMA_SUCCESS;
}

} /* namespace */

RMA_EXPORT int rma_put(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		       rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->accessFast<true>(const_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank,
				     target_disp, target_count, target_datatype)) [[likely]]
		return RMA_SUCCESS;
	return accessSlow<true>(const_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank,
				target_disp, target_count, target_datatype, win);
}

RMA_EXPORT int rma_get(void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		       rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->accessFast<false>(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
				      target_count, target_datatype)) [[likely]]
		return RMA_SUCCESS;
	return accessSlow<false>(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				 target_datatype, win);
}

RMA_EXPORT int rma_win_fence(int assert, rma_win win)
{
	Window *w = toWindow(win);
	if (!w) [[unlikely]]
		return invalidWin("rma_win_fence", win);
	int rc = w->fence(assert);
	if (rc != RMA_SUCCESS) [[unlikely]]
		return winError(win, w, rc);
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_win_sync(rma_win win)
{
	Window *w = toWindow(win);
	if (!w) [[unlikely]]
		return invalidWin("rma_win_sync", win);
	return w->sync();
}

/* ---- Synchronization beyond fence ------------------------------------------ */

namespace {

/* Calls of the form f(win) or f(x, win): @w is toWindow(@win) (checked here); run, route errors. */
template<typename Fn>
int onWindow(const char *call, rma_win win, Window *w, Fn &&fn)
{
	if (!w) [[unlikely]]
		return invalidWin(call, win);
	int rc = fn(*w);
	if (rc != RMA_SUCCESS) [[unlikely]]
		return winError(win, w, rc);
	return RMA_SUCCESS;
}

/* The same, looking the window up. */
template<typename Fn>
int onWindow(const char *call, rma_win win, Fn &&fn)
{
	return onWindow(call, win, toWindow(win), fn);
}

template<typename Fn>
int onWindowGroup(const char *call, rma_group group, rma_win win, Fn &&fn)
{
	return onWindow(call, win, [&](Window &w) {
		Group *g = toGroup(group);
		if (!g)
			return makeError(RMA_ERR_GROUP, "%s: not a valid group", call);
		return fn(w, *g);
	});
}

} /* namespace */

RMA_EXPORT int rma_win_post(rma_group group, int assert, rma_win win)
{
	return onWindowGroup("rma_win_post", group, win, [&](Window &w, Group &g) { return w.post(g, assert); });
}

RMA_EXPORT int rma_win_start(rma_group group, int assert, rma_win win)
{
	return onWindowGroup("rma_win_start", group, win, [&](Window &w, Group &g) { return w.start(g, assert); });
}

RMA_EXPORT int rma_win_complete(rma_win win)
{
	return onWindow("rma_win_complete", win, [](Window &w) { return w.complete(); });
}

RMA_EXPORT int rma_win_wait(rma_win win)
{
	return onWindow("rma_win_wait", win, [](Window &w) { return w.wait(); });
}

RMA_EXPORT int rma_win_test(rma_win win, int *flag)
{
	return onWindow("rma_win_test", win, [&](Window &w) {
		if (!flag)
			return makeError(RMA_ERR_ARG, "rma_win_test: flag is NULL");
		return w.test(flag);
	});
}

namespace {

/* lock and unlock past their inline parts (Window::lockFast, unlockFast); reached by a tail call. */
[[gnu::noinline]] int lockSlow(int lock_type, int rank, int assert, rma_win win)
{
	return onWindow("rma_win_lock", win, [&](Window &w) { return w.lock(lock_type, rank, assert); });
}

[[gnu::noinline]] int unlockSlow(int rank, rma_win win)
{
	return onWindow("rma_win_unlock", win, [&](Window &w) { return w.unlock(rank); });
}

} /* namespace */

RMA_EXPORT int rma_win_lock(int lock_type, int rank, int assert, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->lockFast(lock_type, rank, assert)) [[likely]]
		return RMA_SUCCESS;
	return lockSlow(lock_type, rank, assert, win);
}

RMA_EXPORT int rma_win_unlock(int rank, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->unlockFast(rank)) [[likely]]
		return RMA_SUCCESS;
	return unlockSlow(rank, win);
}

RMA_EXPORT int rma_win_lock_all(int assert, rma_win win)
{
	return onWindow("rma_win_lock_all", win, [&](Window &w) { return w.lockAll(assert); });
}

RMA_EXPORT int rma_win_unlock_all(rma_win win)
{
	return onWindow("rma_win_unlock_all", win, [](Window &w) { return w.unlockAll(); });
}

namespace {

/* flush and flush_local past their inline part (Window::flushFast); reached by a tail call. */
template<bool Local>
[[gnu::noinline]] int flushSlow(int rank, rma_win win)
{
	static constexpr const char *kCall = Local ? "rma_win_flush_local" : "rma_win_flush";
	return onWindow(kCall, win, [&](Window &w) { return w.flush(kCall, rank); });
}

} /* namespace */

RMA_EXPORT int rma_win_flush(int rank, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->flushFast(rank)) [[likely]]
		return RMA_SUCCESS;
	return flushSlow<false>(rank, win);
}

RMA_EXPORT int rma_win_flush_all(rma_win win)
{
	return onWindow("rma_win_flush_all", win, [](Window &w) { return w.flushAll("rma_win_flush_all"); });
}

RMA_EXPORT int rma_win_flush_local(int rank, rma_win win)
{
	Window *w = toWindow(win);
	if (w && w->flushFast(rank)) [[likely]]
		return RMA_SUCCESS;
	return flushSlow<true>(rank, win);
}

RMA_EXPORT int rma_win_flush_local_all(rma_win win)
{
	return onWindow("rma_win_flush_local_all", win,
			[](Window &w) { return w.flushAll("rma_win_flush_local_all"); });
}

/* ---- Accumulate family ------------------------------------------------------ */



namespace {

/*
 * The accumulate family past its inline part (Window::atomicFast/casFast):
 * every check, every path, every error. The same parameters as the entry
 * points, which reach them by a tail call.
 */
[[gnu::noinline]] int accumulateSlow(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
			      rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
			      rma_win win)
{
	Window *w = toWindow(win);
	/* Past atomicFast(): a mid-size or large operation to a target in plain mode first. */
	if (w && origin_count == target_count && origin_datatype == target_datatype &&
	    w->inPlaceFast(origin_addr, nullptr, origin_datatype, origin_count, target_rank, target_disp, op, false))
		[[likely]]
		return RMA_SUCCESS;
	return onWindow("rma_accumulate", win, w, [&](Window &self) {
		return self.accumulate("rma_accumulate",
				    makeAccArgs(origin_addr, origin_count, origin_datatype, nullptr, 0,
						      RMA_DATATYPE_NULL, target_rank, target_disp, target_count,
						      target_datatype, op));
	});
}


[[gnu::noinline]] int getAccumulateSlow(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
				  void *result_addr, int result_count, rma_datatype result_datatype, int target_rank,
				  rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
				  rma_win win)
{
	Window *w = toWindow(win);
	/* As accumulateSlow(). */
	if (w && origin_count == target_count && result_count == target_count && origin_datatype == target_datatype &&
	    result_datatype == target_datatype &&
	    w->inPlaceFast(origin_addr, result_addr, target_datatype, target_count, target_rank, target_disp, op, true))
		[[likely]]
		return RMA_SUCCESS;
	return onWindow("rma_get_accumulate", win, w, [&](Window &self) {
		AccArgs a = makeAccArgs(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					      result_datatype, target_rank, target_disp, target_count, target_datatype, op);
		a.fetch = true;
		return self.accumulate("rma_get_accumulate", a);
	});
}

[[gnu::noinline]] int fetchAndOpSlow(const void *origin_addr, void *result_addr, rma_datatype datatype, int target_rank,
				rma_aint target_disp, rma_op op, rma_win win)
{
	return onWindow("rma_fetch_and_op", win, [&](Window &w) {
		if (badPointer(result_addr) || (op != RMA_NO_OP && badPointer(origin_addr))) [[unlikely]]
			return makeError(RMA_ERR_BUFFER, "rma_fetch_and_op: the %s buffer %p is NULL or in the first page",
					 badPointer(result_addr) ? "result" : "origin",
					 badPointer(result_addr) ? result_addr : origin_addr);
		AccArgs a = makeAccArgs(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1,
					datatype, op);
		a.fetch = true;
		a.fetchAndOp = true; /* predefined types only */
		return w.accumulate("rma_fetch_and_op", a);
	});
}

[[gnu::noinline]] int compareAndSwapSlow(const void *origin_addr, const void *compare_addr, void *result_addr,
				    rma_datatype datatype, int target_rank, rma_aint target_disp, rma_win win)
{
	return onWindow("rma_compare_and_swap", win, [&](Window &w) {
		if (badPointer(origin_addr) || badPointer(compare_addr) || badPointer(result_addr))
			return makeError(RMA_ERR_BUFFER,
					 "rma_compare_and_swap: a buffer (origin, compare or result) is NULL or in the first page");
		return w.compareAndSwap("rma_compare_and_swap", origin_addr, compare_addr, result_addr, datatype,
					target_rank, target_disp, nullptr);
	});
}

/*
 * accumulate and get_accumulate with one count and one datatype on every
 * side (the common case), reached from the entry points by a tail call:
 * 7 and 8 parameters instead of 9 and 12, and the count a constant where
 * it is 1 or 2 (OSU's 8-byte accumulate is 2 int32), so that atomicFast()
 * folds to the one path it takes and keeps its values in registers. With
 * every parameter live for the slow path's tail call the compiler spilled
 * a dozen values to the stack, and a locked instruction waits until every
 * earlier store has left the store buffer.
 */
template<int N>
[[gnu::noinline]] int accumulateUniform(const void *origin, rma_datatype type, int count, int target, rma_aint disp,
					rma_op op, rma_win win)
{
	Window *w = toWindow(win);
	if constexpr (N == 2) {
		/* Two elements: the lane-wise sum alone, the rest by a tail call (no spills here). */
		if (w && w->laneSumFast(origin, nullptr, type, 2, target, disp, op)) [[likely]]
			return RMA_SUCCESS;
		return accumulateUniform<0>(origin, type, 2, target, disp, op, win);
	} else {
		const int n = N ? N : count;
		if (w && w->atomicFast(origin, nullptr, type, n, target, disp, op, false)) [[likely]]
			return RMA_SUCCESS;
		return accumulateSlow(origin, n, type, target, disp, n, type, op, win);
	}
}

template<int N>
[[gnu::noinline]] int getAccumulateUniform(const void *origin, void *result, rma_datatype type, int count, int target,
					   rma_aint disp, rma_op op, rma_win win)
{
	Window *w = toWindow(win);
	const int n = N ? N : count;
	if (w && !badPointer(result) && w->atomicFast(origin, result, type, n, target, disp, op, true)) [[likely]]
		return RMA_SUCCESS;
	return getAccumulateSlow(origin, n, type, result, n, type, target, disp, n, type, op, win);
}

} /* namespace */

RMA_EXPORT int rma_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
			      rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
			      rma_win win)
{
	if (origin_count == target_count && origin_datatype == target_datatype) [[likely]] {
		if (origin_count == 1)
			return accumulateUniform<1>(origin_addr, origin_datatype, 1, target_rank, target_disp, op, win);
		if (origin_count == 2)
			return accumulateUniform<2>(origin_addr, origin_datatype, 2, target_rank, target_disp, op, win);
		if (origin_count <= Window::kFastElements)
			return accumulateUniform<0>(origin_addr, origin_datatype, origin_count, target_rank, target_disp,
						    op, win);
	}
	return accumulateSlow(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			      target_datatype, op, win);
}

RMA_EXPORT int rma_get_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
				  void *result_addr, int result_count, rma_datatype result_datatype, int target_rank,
				  rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
				  rma_win win)
{
	if (origin_count == target_count && result_count == target_count && origin_datatype == target_datatype &&
	    result_datatype == target_datatype) [[likely]] {
		if (target_count == 1)
			return getAccumulateUniform<1>(origin_addr, result_addr, target_datatype, 1, target_rank,
						       target_disp, op, win);
		if (target_count == 2) {
			/*
			 * OSU's 8-byte get_accumulate (2 int32): the lane-wise sum here,
			 * a leaf. Through getAccumulateUniform<2> (8 parameters) this
			 * entry shuffled its 6 stack parameters into place first: 18
			 * more instructions a call (bench/insn_count.sh:
			 * get_acc_2x32_flush 210 -> 192; a one-element get_accumulate
			 * pays 3 more for the larger entry).
			 */
			Window *w = toWindow(win);
			if (w && !badPointer(result_addr) &&
			    w->laneSumFast(origin_addr, result_addr, target_datatype, 2, target_rank, target_disp, op))
				[[likely]]
				return RMA_SUCCESS;
			return getAccumulateUniform<0>(origin_addr, result_addr, target_datatype, 2, target_rank,
						       target_disp, op, win);
		}
		if (target_count <= Window::kFastElements)
			return getAccumulateUniform<0>(origin_addr, result_addr, target_datatype, target_count,
						       target_rank, target_disp, op, win);
	}
	return getAccumulateSlow(origin_addr, origin_count, origin_datatype, result_addr, result_count,
				 result_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
}

RMA_EXPORT int rma_fetch_and_op(const void *origin_addr, void *result_addr, rma_datatype datatype, int target_rank,
				rma_aint target_disp, rma_op op, rma_win win)
{
	Window *w = toWindow(win);
	/* atomicFast() checks the origin buffer where the op reads it. */
	if (w && !badPointer(result_addr) &&
	    w->atomicFast(origin_addr, result_addr, datatype, 1, target_rank, target_disp, op, true)) [[likely]]
		return RMA_SUCCESS;
	return fetchAndOpSlow(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
}

RMA_EXPORT int rma_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
				    rma_datatype datatype, int target_rank, rma_aint target_disp, rma_win win)
{
	Window *w = toWindow(win);
	if (w && !badPointer(origin_addr) && !badPointer(compare_addr) && !badPointer(result_addr) &&
	    w->casFast(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp)) [[likely]]
		return RMA_SUCCESS;
	return compareAndSwapSlow(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win);
}

/* ---- Requests --------------------------------------------------------------- */

namespace {

/*
 * Every request is a handle of its own, so a request that was completed and
 * freed is RMA_ERR_REQUEST when used again (generation-tagged handles).
 * Operations that complete when their call returns (put and get to
 * same-host targets, accumulates done by the origin) get a Request with
 * seq 0; one queued on a target's ring names its record. Request objects
 * are recycled, so a steady stream of requests allocates nothing.
 */

struct Request {
	rma_win win;
	int target;
	uint64_t seq;
	/* A fetching request to another host: its own refusal, if any (RequestFailure). */
	std::shared_ptr<RequestFailure> failure;
};

HandleTable<Request, HandleKind::Request> &requestTable()
{
	static HandleTable<Request, HandleKind::Request> table;
	return table;
}

bool validRequest(rma_request r)
{
	return r == RMA_REQUEST_NULL || requestTable().lookup(reinterpret_cast<uintptr_t>(r)) != nullptr;
}

[[gnu::cold]] int invalidRequest(const char *call, int index)
{
	return selfError(index < 0 ? makeError(RMA_ERR_REQUEST, "%s: not a valid request", call)
				   : makeError(RMA_ERR_REQUEST, "%s: request %d is not a valid request", call, index));
}

/* The request for an operation that was queued as record @seq (0: complete already). */
std::vector<std::shared_ptr<Request>> &spareRequests()
{
	static thread_local std::vector<std::shared_ptr<Request>> spare;
	return spare;
}

rma_request makeRequest(rma_win win, int target, uint64_t seq, std::shared_ptr<RequestFailure> failure = nullptr)
{
	std::vector<std::shared_ptr<Request>> &spare = spareRequests();
	std::shared_ptr<Request> r;
	if (!spare.empty()) {
		r = std::move(spare.back());
		spare.pop_back();
		*r = Request{ win, target, seq, std::move(failure) };
	} else {
		r = std::make_shared<Request>(Request{ win, target, seq, std::move(failure) });
	}
	return reinterpret_cast<rma_request>(requestTable().insert(std::move(r)));
}

/* Free a completed request's handle and keep its object for the next one. */
void releaseRequest(uintptr_t h)
{
	std::shared_ptr<Request> r = requestTable().remove(h);
	std::vector<std::shared_ptr<Request>> &spare = spareRequests();
	if (r && r.use_count() == 1 && spare.size() < 64)
		spare.push_back(std::move(r));
}

/*
 * Complete (wait) or check (test) one valid request; frees it when complete,
 * also when it completed with its own error (a fetch another host refused:
 * reported here, once).
 */
int finishRequest(const char *call, rma_request *request, bool wait, bool *complete)
{
	*complete = true;
	uintptr_t h = reinterpret_cast<uintptr_t>(*request);
	int failed = RMA_SUCCESS;
	if (Request *r = requestTable().lookup(h)) {
		Window *w = toWindow(r->win);
		if (w && r->seq != 0) { /* a freed window has completed everything */
			/* An error here leaves the request to a later wait or test (it may still complete). */
			if (wait) {
				int rc = w->waitAccumulate(call, r->target, r->seq);
				if (rc != RMA_SUCCESS)
					return winError(r->win, w, rc);
			} else if (!w->testAccumulate(r->target, r->seq)) {
				if (int rc = w->testFailure(call, r->target, r->seq); rc != RMA_SUCCESS)
					return winError(r->win, w, rc);
				*complete = false;
				return RMA_SUCCESS;
			}
			/* Another host: complete, possibly with its own refusal or a lost reply (then freed all the same). */
			if (w->isRemote(r->target)) [[unlikely]]
				failed = w->remoteRequestResult(call, r->target, r->seq, r->failure.get());
		} else if (!w && r->failure && r->failure->error) {
			failed = r->failure->error; /* refused before its window was freed */
		}
		if (failed != RMA_SUCCESS)
			failed = winError(r->win, w, failed);
		releaseRequest(h);
	}
	*request = RMA_REQUEST_NULL;
	return failed;
}

/* While it lives, fetches to other hosts belong to the request being made (Window::remoteRequest()). */
class RemoteRequestScope
{
public:
	RemoteRequestScope(Window &w, int target, bool remote) : w_(w), target_(target)
	{
		if (remote) [[unlikely]] {
			failure_ = std::make_shared<RequestFailure>();
			w_.remoteRequest(failure_);
		}
	}
	/* A call that failed made no request: what it sent is the stream's to report. */
	~RemoteRequestScope()
	{
		if (failure_) [[unlikely]] {
			w_.remoteRequest(nullptr);
			if (!taken_)
				w_.remoteRequestAbandon(target_, *failure_);
		}
	}
	RemoteRequestScope(const RemoteRequestScope &) = delete;
	RemoteRequestScope &operator=(const RemoteRequestScope &) = delete;
	/* For the request made (the call succeeded). */
	std::shared_ptr<RequestFailure> take()
	{
		taken_ = true;
		return failure_;
	}

private:
	Window &w_;
	int target_;
	std::shared_ptr<RequestFailure> failure_;
	bool taken_ = false;
};

template<bool Put>
int requestOp(const char *call, void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
	      rma_datatype ttype, rma_win win, rma_request *request)
{
	return onWindow(call, win, [&](Window &w) {
		if (!request)
			return makeError(RMA_ERR_ARG, "%s: request is NULL", call);
		RMA_TRY(w.checkRequestEpoch(call, target));
		const bool remoteGet = !Put && w.isRemote(target);
		RemoteRequestScope scope(w, target, remoteGet);
		RMA_TRY(w.access<Put>(origin, ocount, otype, target, disp, tcount, ttype));
		/*
		 * Another host: an rput is complete (its data was copied into the
		 * stream); an rget completes when its replies are in.
		 */
		*request = makeRequest(win, target, remoteGet ? w.remoteRequestSeq(target) : 0, scope.take());
		return RMA_SUCCESS;
	});
}

int requestAccumulate(const char *call, AccArgs a, rma_win win, rma_request *request)
{
	return onWindow(call, win, [&](Window &w) {
		if (!request)
			return makeError(RMA_ERR_ARG, "%s: request is NULL", call);
		RMA_TRY(w.checkRequestEpoch(call, a.target));
		uint64_t seq = 0;
		a.queuedSeq = &seq;
		const bool remote = w.isRemote(a.target);
		RemoteRequestScope scope(w, a.target, remote && (a.fetch || a.fetchAndOp));
		RMA_TRY(w.accumulate(call, a));
		/* Another host: raccumulate is complete (data copied); rget_accumulate when its replies are in. */
		if (remote) [[unlikely]]
			seq = a.fetch || a.fetchAndOp ? w.remoteRequestSeq(a.target) : 0;
		*request = makeRequest(win, a.target, seq, scope.take());
		return RMA_SUCCESS;
	});
}

} /* namespace */

RMA_EXPORT int rma_rput(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
			rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win,
			rma_request *request)
{
	return requestOp<true>("rma_rput", const_cast<void *>(origin_addr), origin_count, origin_datatype, target_rank,
			       target_disp, target_count, target_datatype, win, request);
}

RMA_EXPORT int rma_rget(void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
			rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win,
			rma_request *request)
{
	return requestOp<false>("rma_rget", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
				target_count, target_datatype, win, request);
}

RMA_EXPORT int rma_raccumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
			       int target_rank, rma_aint target_disp, int target_count, rma_datatype target_datatype,
			       rma_op op, rma_win win, rma_request *request)
{
	return requestAccumulate("rma_raccumulate",
				 makeAccArgs(origin_addr, origin_count, origin_datatype, nullptr, 0, RMA_DATATYPE_NULL,
						   target_rank, target_disp, target_count, target_datatype, op),
				 win, request);
}

RMA_EXPORT int rma_rget_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
				   void *result_addr, int result_count, rma_datatype result_datatype, int target_rank,
				   rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
				   rma_win win, rma_request *request)
{
	AccArgs a = makeAccArgs(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype,
				target_rank, target_disp, target_count, target_datatype, op);
	a.fetch = true;
	return requestAccumulate("rma_rget_accumulate", a, win, request);
}

RMA_EXPORT int rma_wait(rma_request *request, rma_status *)
{
	if (!request || !validRequest(*request))
		return invalidRequest("rma_wait", -1);
	bool complete;
	return finishRequest("rma_wait", request, true, &complete);
}

RMA_EXPORT int rma_test(rma_request *request, int *flag, rma_status *)
{
	if (!request || !validRequest(*request))
		return invalidRequest("rma_test", -1);
	if (!flag)
		return nullArg("rma_test", "flag");
	bool complete;
	RMA_TRY(finishRequest("rma_test", request, false, &complete));
	*flag = complete;
	return RMA_SUCCESS;
}

RMA_EXPORT int rma_waitall(int count, rma_request array_of_requests[], rma_status *)
{
	if (count < 0 || (count > 0 && !array_of_requests))
		return selfError(makeError(RMA_ERR_ARG, "rma_waitall: count %d or the request array is invalid", count));
	for (int i = 0; i < count; ++i)
		if (!validRequest(array_of_requests[i]))
			return invalidRequest("rma_waitall", i);
	/* Every request, even past one that failed (its own refusal frees it): the first error is returned. */
	int first = RMA_SUCCESS;
	for (int i = 0; i < count; ++i) {
		bool complete;
		if (int rc = finishRequest("rma_waitall", &array_of_requests[i], true, &complete);
		    rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	return first;
}

RMA_EXPORT int rma_testall(int count, rma_request array_of_requests[], int *flag, rma_status *)
{
	if (!flag)
		return nullArg("rma_testall", "flag");
	if (count < 0 || (count > 0 && !array_of_requests))
		return selfError(makeError(RMA_ERR_ARG, "rma_testall: count %d or the request array is invalid", count));
	for (int i = 0; i < count; ++i)
		if (!validRequest(array_of_requests[i]))
			return invalidRequest("rma_testall", i);
	/* All or none: check every one first (testing completes what it can, harmlessly). */
	for (int i = 0; i < count; ++i) {
		uintptr_t h = reinterpret_cast<uintptr_t>(array_of_requests[i]);
		Request *r = requestTable().lookup(h);
		Window *w = r ? toWindow(r->win) : nullptr;
		if (w && !w->testAccumulate(r->target, r->seq)) {
			if (int rc = w->testFailure("rma_testall", r->target, r->seq); rc != RMA_SUCCESS)
				return winError(r->win, w, rc);
			*flag = 0;
			return RMA_SUCCESS;
		}
	}
	/* All complete: every one is freed, also one that failed (its own refusal); the first error is returned. */
	*flag = 1;
	int first = RMA_SUCCESS;
	for (int i = 0; i < count; ++i) {
		bool complete;
		if (int rc = finishRequest("rma_testall", &array_of_requests[i], false, &complete);
		    rc != RMA_SUCCESS && first == RMA_SUCCESS)
			first = rc;
	}
	return first;
}

RMA_EXPORT int rma_request_free(rma_request *request)
{
	if (!request || !validRequest(*request))
		return invalidRequest("rma_request_free", -1);
	uintptr_t h = reinterpret_cast<uintptr_t>(*request);
	if (Request *r = requestTable().lookup(h)) {
		/* Nobody will wait for it: its refusal (now or later) is reported by the next call to that host. */
		if (r->failure)
			if (Window *w = toWindow(r->win))
				w->remoteRequestAbandon(r->target, *r->failure);
		releaseRequest(h);
	}
	*request = RMA_REQUEST_NULL;
	return RMA_SUCCESS;
}
