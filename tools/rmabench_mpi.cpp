/* SPDX-License-Identifier: MIT */
/*
 * rmabench's MPI backend: the calls of rmabench_backend.h over the MPI
 * library's own RMA (MPI_Put, MPI_Win_lock, ...). Built once per MPI found
 * (rmabench-mpich, rmabench-openmpi); RMABENCH_MPI names which one.
 */
#include "rmabench_backend.h"
#include "rmabench_tight.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#ifndef RMABENCH_MPI
#error "RMABENCH_MPI must name the MPI this backend is built for"
#endif

namespace rmabench {

namespace {

/* MPICH's handles are ints, Open MPI's are pointers: carry both as integers. */
template<typename T>
Handle toHandle(T h)
{
	if constexpr (std::is_pointer_v<T>)
		return reinterpret_cast<Handle>(h);
	else
		return static_cast<Handle>(static_cast<std::make_unsigned_t<T>>(h));
}

template<typename T>
T from(Handle h)
{
	if constexpr (std::is_pointer_v<T>)
		return reinterpret_cast<T>(h);
	else
		return static_cast<T>(static_cast<std::make_unsigned_t<T>>(h));
}

MPI_Win win(Handle h)
{
	return from<MPI_Win>(h);
}

MPI_Datatype type(Handle h)
{
	return from<MPI_Datatype>(h);
}

std::string asyncProgress;

[[gnu::cold, noreturn]] void fail(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, msg, &len);
	std::fprintf(stderr, "rmabench: %s failed: %s\n", what, msg);
	std::fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	std::exit(1);
}

inline void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) [[unlikely]]
		fail(rc, what);
}

} /* namespace */

namespace be {

const char *kind()
{
	return RMABENCH_MPI;
}

std::string library()
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	MPI_Get_library_version(v, &len);
	std::string s(v, static_cast<size_t>(len));
	/* The first line names the library and its version. */
	auto nl = s.find('\n');
	if (nl != std::string::npos)
		s.resize(nl);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ','))
		s.pop_back();
	for (char &c : s)
		if (c == '\t')
			c = ' ';
	return s;
}

std::string progress()
{
	return asyncProgress.empty() ? "the MPI library's own (no asynchronous progress thread)" : asyncProgress;
}

void init(int *argc, char ***argv, const std::string &progress)
{
	int required = MPI_THREAD_SINGLE;
	if (progress == "thread" || progress == "agent") {
		/* MPICH's asynchronous progress thread; Open MPI 4 has no such switch for osc. */
		setenv("MPIR_CVAR_ASYNC_PROGRESS", "1", 1);
		required = MPI_THREAD_MULTIPLE;
		asyncProgress = "MPIR_CVAR_ASYNC_PROGRESS=1 (MPICH progress thread)";
	}
	int provided = 0;
	check(MPI_Init_thread(argc, argv, required, &provided), "MPI_Init_thread");
}

void finalize()
{
	check(MPI_Finalize(), "MPI_Finalize");
}

void abort(int code)
{
	std::fflush(stdout);
	std::fflush(stderr);
	/*
	 * The launcher forwards a rank's output through pipes and stops reading
	 * them once MPI_Abort has it kill the job (seen with MPICH's hydra): give
	 * it a moment to pass on the message that says why.
	 */
	usleep(200 * 1000);
	MPI_Abort(MPI_COMM_WORLD, code);
	std::exit(code);
}

int rank()
{
	int r = 0;
	check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
	return r;
}

int size()
{
	int s = 0;
	check(MPI_Comm_size(MPI_COMM_WORLD, &s), "MPI_Comm_size");
	return s;
}

void barrier()
{
	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

double wtime()
{
	return MPI_Wtime();
}

void allgather(const void *mine, size_t bytes, void *all)
{
	check(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE,
			    MPI_COMM_WORLD),
	      "MPI_Allgather");
}

Handle basicType(Elem e)
{
	switch (e) {
	case Elem::Byte:
		return toHandle(MPI_BYTE);
	case Elem::Int32:
		return toHandle(MPI_INT32_T);
	case Elem::Int64:
		return toHandle(MPI_INT64_T);
	case Elem::Uint64:
		return toHandle(MPI_UINT64_T);
	case Elem::Float:
		return toHandle(MPI_FLOAT);
	case Elem::Double:
		return toHandle(MPI_DOUBLE);
	}
	return toHandle(MPI_BYTE);
}

Handle vectorType(int count, int blocklen, int stride, Handle old)
{
	MPI_Datatype t;
	check(MPI_Type_vector(count, blocklen, stride, type(old), &t), "MPI_Type_vector");
	check(MPI_Type_commit(&t), "MPI_Type_commit");
	return toHandle(t);
}

Handle indexedType(int count, const int *blocklens, const int *displs, Handle old)
{
	MPI_Datatype t;
	check(MPI_Type_indexed(count, blocklens, displs, type(old), &t), "MPI_Type_indexed");
	check(MPI_Type_commit(&t), "MPI_Type_commit");
	return toHandle(t);
}

void freeType(Handle &h)
{
	MPI_Datatype t = type(h);
	check(MPI_Type_free(&t), "MPI_Type_free");
	h = 0;
}

Handle op(AccOp o)
{
	switch (o) {
	case AccOp::Sum:
		return toHandle(MPI_SUM);
	case AccOp::Prod:
		return toHandle(MPI_PROD);
	case AccOp::Max:
		return toHandle(MPI_MAX);
	case AccOp::Min:
		return toHandle(MPI_MIN);
	case AccOp::Band:
		return toHandle(MPI_BAND);
	case AccOp::Bor:
		return toHandle(MPI_BOR);
	case AccOp::Bxor:
		return toHandle(MPI_BXOR);
	case AccOp::Replace:
		return toHandle(MPI_REPLACE);
	case AccOp::NoOp:
		return toHandle(MPI_NO_OP);
	}
	return toHandle(MPI_SUM);
}

Handle group(const std::vector<int> &ranks)
{
	MPI_Group world, g;
	check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
	check(MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &g), "MPI_Group_incl");
	check(MPI_Group_free(&world), "MPI_Group_free");
	return toHandle(g);
}

void freeGroup(Handle &h)
{
	MPI_Group g = from<MPI_Group>(h);
	check(MPI_Group_free(&g), "MPI_Group_free");
	h = 0;
}

Window allocate(const WinSpec &spec)
{
	Window w;
	w.bytes = spec.bytes;
	MPI_Win h = MPI_WIN_NULL;
	auto bytes = static_cast<MPI_Aint>(spec.bytes);
	switch (spec.flavor) {
	case Flavor::Allocate:
		check(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base, &h), "MPI_Win_allocate");
		break;
	case Flavor::AllocateShared:
		check(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base, &h),
		      "MPI_Win_allocate_shared");
		break;
	case Flavor::Create:
	case Flavor::Dynamic:
		check(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &w.base), "MPI_Alloc_mem");
		w.owned = w.base;
		if (spec.flavor == Flavor::Create) {
			check(MPI_Win_create(w.base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &h), "MPI_Win_create");
		} else {
			check(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &h), "MPI_Win_create_dynamic");
			check(MPI_Win_attach(h, w.base, bytes), "MPI_Win_attach");
			w.dynamic = true;
		}
		break;
	}
	w.win = toHandle(h);
	Disp mine = 0;
	if (w.dynamic) {
		MPI_Aint a = 0;
		check(MPI_Get_address(w.base, &a), "MPI_Get_address");
		mine = a;
	}
	/*
	 * Only a dynamic window's displacements differ by rank; for the others
	 * every disp0 is 0 and no exchange is timed with the creation (win_create
	 * would otherwise time a second window in librma, whose allgather is one).
	 */
	w.disp0.assign(size(), 0);
	if (w.dynamic)
		allgather(&mine, sizeof(mine), w.disp0.data());
	return w;
}

WinReport report(const Window &)
{
	/* MPI names no page-size or placement key; the caller measures those. */
	return {};
}

void free(Window &w)
{
	MPI_Win h = win(w.win);
	if (w.dynamic)
		check(MPI_Win_detach(h, w.base), "MPI_Win_detach");
	check(MPI_Win_free(&h), "MPI_Win_free");
	if (w.owned)
		check(MPI_Free_mem(w.owned), "MPI_Free_mem");
	w = Window{};
}

void *sharedBase(const Window &w, int rank)
{
	MPI_Aint sz;
	int unit;
	void *base = nullptr;
	check(MPI_Win_shared_query(win(w.win), rank, &sz, &unit, &base), "MPI_Win_shared_query");
	return base;
}

void put(const void *origin, int count, Handle t, int target, Disp disp, int tcount, Handle tt, Handle w)
{
	check(MPI_Put(origin, count, type(t), target, disp, tcount, type(tt), win(w)), "MPI_Put");
}

void get(void *origin, int count, Handle t, int target, Disp disp, int tcount, Handle tt, Handle w)
{
	check(MPI_Get(origin, count, type(t), target, disp, tcount, type(tt), win(w)), "MPI_Get");
}

void accumulate(const void *origin, int count, Handle t, int target, Disp disp, int tcount, Handle tt, Handle o,
		Handle w)
{
	check(MPI_Accumulate(origin, count, type(t), target, disp, tcount, type(tt), from<MPI_Op>(o), win(w)),
	      "MPI_Accumulate");
}

void getAccumulate(const void *origin, int count, Handle t, void *result, int rcount, Handle rt, int target,
		   Disp disp, int tcount, Handle tt, Handle o, Handle w)
{
	check(MPI_Get_accumulate(origin, count, type(t), result, rcount, type(rt), target, disp, tcount, type(tt),
				 from<MPI_Op>(o), win(w)),
	      "MPI_Get_accumulate");
}

void fetchAndOp(const void *origin, void *result, Handle t, int target, Disp disp, Handle o, Handle w)
{
	check(MPI_Fetch_and_op(origin, result, type(t), target, disp, from<MPI_Op>(o), win(w)), "MPI_Fetch_and_op");
}

void compareAndSwap(const void *origin, const void *compare, void *result, Handle t, int target, Disp disp,
		    Handle w)
{
	check(MPI_Compare_and_swap(origin, compare, result, type(t), target, disp, win(w)), "MPI_Compare_and_swap");
}

void fence(int assertNoSucceed, Handle w)
{
	check(MPI_Win_fence(assertNoSucceed ? MPI_MODE_NOSUCCEED : 0, win(w)), "MPI_Win_fence");
}

void post(Handle group, Handle w)
{
	check(MPI_Win_post(from<MPI_Group>(group), 0, win(w)), "MPI_Win_post");
}

void start(Handle group, Handle w)
{
	check(MPI_Win_start(from<MPI_Group>(group), 0, win(w)), "MPI_Win_start");
}

void complete(Handle w)
{
	check(MPI_Win_complete(win(w)), "MPI_Win_complete");
}

void wait(Handle w)
{
	check(MPI_Win_wait(win(w)), "MPI_Win_wait");
}

void lock(bool exclusive, int target, Handle w)
{
	check(MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, target, 0, win(w)), "MPI_Win_lock");
}

void unlock(int target, Handle w)
{
	check(MPI_Win_unlock(target, win(w)), "MPI_Win_unlock");
}

void lockAll(Handle w)
{
	check(MPI_Win_lock_all(0, win(w)), "MPI_Win_lock_all");
}

void unlockAll(Handle w)
{
	check(MPI_Win_unlock_all(win(w)), "MPI_Win_unlock_all");
}

void flush(int target, Handle w)
{
	check(MPI_Win_flush(target, win(w)), "MPI_Win_flush");
}

void flushLocal(int target, Handle w)
{
	check(MPI_Win_flush_local(target, win(w)), "MPI_Win_flush_local");
}

/* Every wrapper above inlined into the loop (flatten): the library's calls back to back. */
[[gnu::flatten]] void tightLoop(const TightCase &c, long n)
{
	runTight(c, n);
}

} /* namespace be */

} /* namespace rmabench */
