/* SPDX-License-Identifier: MIT */
/*
 * rmabench's librma backend: the calls of rmabench_backend.h over librma's
 * public C API (include/rma/rma.h), linked to librma.so as a user would.
 */
#include "rmabench_backend.h"
#include "rmabench_tight.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rma/rma.h>

namespace rmabench {

namespace {

template<typename T>
Handle toHandle(T h)
{
	return reinterpret_cast<Handle>(h);
}

template<typename T>
T from(Handle h)
{
	return reinterpret_cast<T>(h);
}

rma_win win(Handle h)
{
	return from<rma_win>(h);
}

[[gnu::cold, noreturn]] void fail(int rc, const char *what)
{
	char msg[RMA_MAX_ERROR_STRING];
	int len = 0;
	rma_error_string(rc, msg, &len);
	std::fprintf(stderr, "rmabench: %s failed: %s\n", what, msg);
	std::fflush(stderr);
	rma_abort(RMA_COMM_WORLD, 1);
	std::exit(1);
}

inline void check(int rc, const char *what)
{
	if (rc != RMA_SUCCESS) [[unlikely]]
		fail(rc, what);
}

std::string infoValue(rma_info info, const char *key)
{
	char v[RMA_MAX_INFO_VAL + 1];
	int flag = 0;
	if (rma_info_get(info, key, RMA_MAX_INFO_VAL, v, &flag) != RMA_SUCCESS || !flag)
		return "";
	return v;
}

} /* namespace */

namespace be {

const char *kind()
{
	return "librma";
}

std::string library()
{
	int version = RMA_VERSION;
	return "librma (API version " + std::to_string(version) + ")";
}

std::string progress()
{
	/* report() prefers the window's rma_progress info key when librma sets one. */
	const char *v = std::getenv("RMA_PROGRESS");
	return v && *v ? std::string(v) + " (RMA_PROGRESS)" : "librma's default (RMA_PROGRESS unset)";
}

void init(int *argc, char ***argv, const std::string &progress)
{
	if (!progress.empty())
		setenv("RMA_PROGRESS", progress.c_str(), 1);
	check(rma_init(argc, argv), "rma_init");
}

void finalize()
{
	check(rma_finalize(), "rma_finalize");
}

void abort(int code)
{
	std::fflush(stdout);
	std::fflush(stderr);
	rma_abort(RMA_COMM_WORLD, code);
	std::exit(code);
}

int rank()
{
	int r = 0;
	check(rma_comm_rank(RMA_COMM_WORLD, &r), "rma_comm_rank");
	return r;
}

int size()
{
	int s = 0;
	check(rma_comm_size(RMA_COMM_WORLD, &s), "rma_comm_size");
	return s;
}

void barrier()
{
	check(rma_barrier(RMA_COMM_WORLD), "rma_barrier");
}

double wtime()
{
	return rma_wtime();
}

void allgather(const void *mine, size_t bytes, void *all)
{
	/* librma has no collectives beyond barrier: every rank puts its part into every rank's window. */
	int n = size();
	rma_win w;
	std::byte *base;
	check(rma_win_allocate(static_cast<rma_aint>(bytes * n), 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &w),
	      "rma_win_allocate");
	check(rma_win_fence(RMA_MODE_NOPRECEDE, w), "rma_win_fence");
	int me = rank();
	for (int r = 0; r < n; ++r)
		check(rma_put(mine, static_cast<int>(bytes), RMA_BYTE, r, static_cast<rma_aint>(bytes * me),
			      static_cast<int>(bytes), RMA_BYTE, w),
		      "rma_put");
	check(rma_win_fence(RMA_MODE_NOSUCCEED, w), "rma_win_fence");
	std::memcpy(all, base, bytes * n);
	check(rma_win_free(&w), "rma_win_free");
}

Handle basicType(Elem e)
{
	switch (e) {
	case Elem::Byte:
		return toHandle(RMA_BYTE);
	case Elem::Int32:
		return toHandle(RMA_INT32_T);
	case Elem::Int64:
		return toHandle(RMA_INT64_T);
	case Elem::Uint64:
		return toHandle(RMA_UINT64_T);
	case Elem::Float:
		return toHandle(RMA_FLOAT);
	case Elem::Double:
		return toHandle(RMA_DOUBLE);
	}
	return toHandle(RMA_BYTE);
}

Handle vectorType(int count, int blocklen, int stride, Handle old)
{
	rma_datatype t;
	check(rma_type_vector(count, blocklen, stride, from<rma_datatype>(old), &t), "rma_type_vector");
	check(rma_type_commit(&t), "rma_type_commit");
	return toHandle(t);
}

Handle indexedType(int count, const int *blocklens, const int *displs, Handle old)
{
	rma_datatype t;
	check(rma_type_indexed(count, blocklens, displs, from<rma_datatype>(old), &t), "rma_type_indexed");
	check(rma_type_commit(&t), "rma_type_commit");
	return toHandle(t);
}

void freeType(Handle &type)
{
	rma_datatype t = from<rma_datatype>(type);
	check(rma_type_free(&t), "rma_type_free");
	type = 0;
}

Handle op(AccOp o)
{
	switch (o) {
	case AccOp::Sum:
		return toHandle(RMA_SUM);
	case AccOp::Prod:
		return toHandle(RMA_PROD);
	case AccOp::Max:
		return toHandle(RMA_MAX);
	case AccOp::Min:
		return toHandle(RMA_MIN);
	case AccOp::Band:
		return toHandle(RMA_BAND);
	case AccOp::Bor:
		return toHandle(RMA_BOR);
	case AccOp::Bxor:
		return toHandle(RMA_BXOR);
	case AccOp::Replace:
		return toHandle(RMA_REPLACE);
	case AccOp::NoOp:
		return toHandle(RMA_NO_OP);
	}
	return toHandle(RMA_SUM);
}

Handle group(const std::vector<int> &ranks)
{
	rma_group world, g;
	check(rma_comm_group(RMA_COMM_WORLD, &world), "rma_comm_group");
	check(rma_group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &g), "rma_group_incl");
	check(rma_group_free(&world), "rma_group_free");
	return toHandle(g);
}

void freeGroup(Handle &group)
{
	rma_group g = from<rma_group>(group);
	check(rma_group_free(&g), "rma_group_free");
	group = 0;
}

Window allocate(const WinSpec &spec)
{
	Window w;
	w.bytes = spec.bytes;
	rma_info info;
	check(rma_info_create(&info), "rma_info_create");
	if (!spec.hugePages.empty())
		check(rma_info_set(info, "rma_huge_pages", spec.hugePages.c_str()), "rma_info_set");
	if (!spec.placement.empty())
		check(rma_info_set(info, "rma_placement", spec.placement.c_str()), "rma_info_set");
	rma_win h = RMA_WIN_NULL;
	auto bytes = static_cast<rma_aint>(spec.bytes);
	switch (spec.flavor) {
	case Flavor::Allocate:
		check(rma_win_allocate(bytes, 1, info, RMA_COMM_WORLD, &w.base, &h), "rma_win_allocate");
		break;
	case Flavor::AllocateShared:
		check(rma_win_allocate_shared(bytes, 1, info, RMA_COMM_WORLD, &w.base, &h), "rma_win_allocate_shared");
		break;
	case Flavor::Create:
	case Flavor::Dynamic:
		check(rma_alloc_mem(bytes, info, &w.base), "rma_alloc_mem");
		w.owned = w.base;
		if (spec.flavor == Flavor::Create) {
			check(rma_win_create(w.base, bytes, 1, info, RMA_COMM_WORLD, &h), "rma_win_create");
		} else {
			check(rma_win_create_dynamic(info, RMA_COMM_WORLD, &h), "rma_win_create_dynamic");
			check(rma_win_attach(h, w.base, bytes), "rma_win_attach");
			w.dynamic = true;
		}
		break;
	}
	check(rma_info_free(&info), "rma_info_free");
	w.win = toHandle(h);
	/* Dynamic windows address the target's memory by its address. */
	Disp mine = 0;
	if (w.dynamic) {
		rma_aint a = 0;
		check(rma_get_address(w.base, &a), "rma_get_address");
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

WinReport report(const Window &w)
{
	WinReport r;
	rma_info used;
	check(rma_win_get_info(win(w.win), &used), "rma_win_get_info");
	r.pageSize = infoValue(used, "rma_page_size");
	r.numaNode = infoValue(used, "rma_numa_node");
	r.placement = infoValue(used, "rma_placement");
	r.hugePages = infoValue(used, "rma_huge_pages");
	r.memory = infoValue(used, "rma_memory");
	r.progress = infoValue(used, "rma_progress");
	check(rma_info_free(&used), "rma_info_free");
	return r;
}

void free(Window &w)
{
	rma_win h = win(w.win);
	if (w.dynamic)
		check(rma_win_detach(h, w.base), "rma_win_detach");
	check(rma_win_free(&h), "rma_win_free");
	if (w.owned)
		check(rma_free_mem(w.owned), "rma_free_mem");
	w = Window{};
}

void *sharedBase(const Window &w, int rank)
{
	rma_aint sz;
	int unit;
	void *base = nullptr;
	check(rma_win_shared_query(win(w.win), rank, &sz, &unit, &base), "rma_win_shared_query");
	return base;
}

void put(const void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype, Handle w)
{
	check(rma_put(origin, count, from<rma_datatype>(type), target, disp, tcount, from<rma_datatype>(ttype), win(w)),
	      "rma_put");
}

void get(void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype, Handle w)
{
	check(rma_get(origin, count, from<rma_datatype>(type), target, disp, tcount, from<rma_datatype>(ttype), win(w)),
	      "rma_get");
}

void accumulate(const void *origin, int count, Handle type, int target, Disp disp, int tcount, Handle ttype, Handle o,
		Handle w)
{
	check(rma_accumulate(origin, count, from<rma_datatype>(type), target, disp, tcount, from<rma_datatype>(ttype),
			     from<rma_op>(o), win(w)),
	      "rma_accumulate");
}

void getAccumulate(const void *origin, int count, Handle type, void *result, int rcount, Handle rtype, int target,
		   Disp disp, int tcount, Handle ttype, Handle o, Handle w)
{
	check(rma_get_accumulate(origin, count, from<rma_datatype>(type), result, rcount, from<rma_datatype>(rtype),
				 target, disp, tcount, from<rma_datatype>(ttype), from<rma_op>(o), win(w)),
	      "rma_get_accumulate");
}

void fetchAndOp(const void *origin, void *result, Handle type, int target, Disp disp, Handle o, Handle w)
{
	check(rma_fetch_and_op(origin, result, from<rma_datatype>(type), target, disp, from<rma_op>(o), win(w)),
	      "rma_fetch_and_op");
}

void compareAndSwap(const void *origin, const void *compare, void *result, Handle type, int target, Disp disp,
		    Handle w)
{
	check(rma_compare_and_swap(origin, compare, result, from<rma_datatype>(type), target, disp, win(w)),
	      "rma_compare_and_swap");
}

void fence(int assertNoSucceed, Handle w)
{
	check(rma_win_fence(assertNoSucceed ? RMA_MODE_NOSUCCEED : 0, win(w)), "rma_win_fence");
}

void post(Handle group, Handle w)
{
	check(rma_win_post(from<rma_group>(group), 0, win(w)), "rma_win_post");
}

void start(Handle group, Handle w)
{
	check(rma_win_start(from<rma_group>(group), 0, win(w)), "rma_win_start");
}

void complete(Handle w)
{
	check(rma_win_complete(win(w)), "rma_win_complete");
}

void wait(Handle w)
{
	check(rma_win_wait(win(w)), "rma_win_wait");
}

void lock(bool exclusive, int target, Handle w)
{
	check(rma_win_lock(exclusive ? RMA_LOCK_EXCLUSIVE : RMA_LOCK_SHARED, target, 0, win(w)), "rma_win_lock");
}

void unlock(int target, Handle w)
{
	check(rma_win_unlock(target, win(w)), "rma_win_unlock");
}

void lockAll(Handle w)
{
	check(rma_win_lock_all(0, win(w)), "rma_win_lock_all");
}

void unlockAll(Handle w)
{
	check(rma_win_unlock_all(win(w)), "rma_win_unlock_all");
}

void flush(int target, Handle w)
{
	check(rma_win_flush(target, win(w)), "rma_win_flush");
}

void flushLocal(int target, Handle w)
{
	check(rma_win_flush_local(target, win(w)), "rma_win_flush_local");
}

/* Every wrapper above inlined into the loop (flatten): the library's calls back to back. */
[[gnu::flatten]] void tightLoop(const TightCase &c, long n)
{
	runTight(c, n);
}

} /* namespace be */

} /* namespace rmabench */
