/* SPDX-License-Identifier: MIT */
/*
 * The data path (put, get) and synchronization (fence, sync) of windows.
 *
 * Hot-path budget for put/get to a Direct target: handle lookups, a few
 * compares, one memcpy. No system call, no allocation, no lock. Everything
 * that formats a message is in a cold function.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/spin_wait.h"
#include "datatype/datatype.h"
#include "error/error.h"
#include "win/window.h"

namespace librma {

namespace {

constexpr int kAllModes = RMA_MODE_NOCHECK | RMA_MODE_NOSTORE | RMA_MODE_NOPUT | RMA_MODE_NOPRECEDE |
			  RMA_MODE_NOSUCCEED;

[[gnu::cold]] int badDatatype(const char *call, const char *side, rma_datatype h)
{
	return makeError(RMA_ERR_TYPE, "%s: the %s datatype (handle %#llx) is not a valid datatype", call, side,
			 static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(h)));
}

[[gnu::cold]] int badCount(const char *call, int ocount, int tcount)
{
	return makeError(RMA_ERR_COUNT, "%s: counts must not be negative (origin_count %d, target_count %d)", call,
			 ocount, tcount);
}

} /* namespace */

/* ---- Checks --------------------------------------------------------------- */

int Window::checkAccess(const char *call, int target)
{
	if (target == RMA_PROC_NULL) {
		if (allAccess_ || locksHeld_ || started_)
			return RMA_SUCCESS;
	} else if (static_cast<unsigned>(target) >= targets_.size()) [[unlikely]] {
		return makeError(RMA_ERR_RANK, "%s: target rank %d is not in window '%s' (ranks 0..%zu)", call, target,
				 name.c_str(), targets_.size() - 1);
	} else if (allAccess_ || access_[target]) [[likely]] {
		return RMA_SUCCESS;
	}
	return makeError(RMA_ERR_RMA_SYNC,
			 "%s: no access epoch covers target rank %d of window '%s' (open: %s; start one with "
			 "rma_win_fence, rma_win_start, rma_win_lock or rma_win_lock_all)",
			 call, target, name.c_str(), describeEpochs().c_str());
}

namespace {

[[gnu::cold]] int outOfRange(const char *call, const std::string &win, int target, rma_aint disp, int dispUnit,
			     rma_count footprint, rma_aint size)
{
	return makeError(RMA_ERR_RMA_RANGE,
			 "%s: target rank %d of window '%s': displacement %lld x disp_unit %d + %lld bytes of "
			 "target buffer exceeds the window size of %lld bytes; nothing was transferred",
			 call, target, win.c_str(), static_cast<long long>(disp), dispUnit,
			 static_cast<long long>(footprint), static_cast<long long>(size));
}

} /* namespace */

int Window::checkTarget(const char *call, int target, rma_aint disp, rma_count footprint, TargetView &view)
{
	const TargetView &t = targets_[target];
	if (t.reach == Reach::Dynamic)
		return resolveDynamic(call, target, disp, footprint, view);
	if (disp < 0) [[unlikely]]
		return makeError(RMA_ERR_DISP, "%s: target displacement %lld is negative (target rank %d, window '%s')",
				 call, static_cast<long long>(disp), target, name.c_str());
	rma_aint offset;
	rma_aint end;
	if (__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) ||
	    __builtin_add_overflow(offset, footprint, &end) || end > t.size) [[unlikely]]
		return outOfRange(call, name, target, disp, t.dispUnit, footprint, t.size);
	view = t;
	view.base = t.base ? t.base + offset : nullptr;
	view.remoteBase = t.remoteBase + static_cast<uint64_t>(offset);
	return RMA_SUCCESS;
}

/*
 * Find the attached region of @target holding [disp, disp + footprint).
 * The target's table is read under its sequence lock (see attach()); the
 * application guarantees, as MPI requires, that the region was attached
 * before this access and is not detached during it.
 */
int Window::resolveDynamic(const char *call, int target, rma_aint disp, rma_count footprint, TargetView &view)
{
	AttachTable &table = attach_[target];
	uint64_t lo = static_cast<uint64_t>(disp);
	uint64_t hi;
	if (__builtin_add_overflow(lo, static_cast<uint64_t>(footprint), &hi))
		hi = UINT64_MAX;
	AttachEntry found{};
	bool ok = false;
	for (SpinWait wait;; wait.once()) {
		/* Acquire: pairs with the final release store of attach()/detach(). */
		uint64_t s1 = table.sequence.load(std::memory_order_acquire);
		if (s1 & 1)
			continue;
		ok = false;
		uint32_t count = std::atomic_ref<uint32_t>(table.count).load(std::memory_order_relaxed);
		for (uint32_t i = 0; i < count && i < kMaxAttach; ++i) {
			AttachEntry &e = table.entries[i];
			uint64_t base = std::atomic_ref<uint64_t>(e.base).load(std::memory_order_relaxed);
			uint64_t size = std::atomic_ref<uint64_t>(e.size).load(std::memory_order_relaxed);
			if (lo >= base && hi <= base + size) {
				found.base = base;
				found.size = size;
				found.segmentInode = std::atomic_ref<uint64_t>(e.segmentInode).load(std::memory_order_relaxed);
				found.segmentOffset = std::atomic_ref<uint64_t>(e.segmentOffset).load(std::memory_order_relaxed);
				found.segmentSize = std::atomic_ref<uint64_t>(e.segmentSize).load(std::memory_order_relaxed);
				found.segmentFd = std::atomic_ref<int32_t>(e.segmentFd).load(std::memory_order_relaxed);
				found.hugePages = std::atomic_ref<uint32_t>(e.hugePages).load(std::memory_order_relaxed);
				ok = true;
				break;
			}
		}
		/* Acquire fence: the entry loads above happen before the re-check below. */
		std::atomic_thread_fence(std::memory_order_acquire);
		if (table.sequence.load(std::memory_order_relaxed) == s1)
			break;
	}
	if (!ok)
		return makeError(RMA_ERR_RMA_RANGE,
				 "%s: target rank %d of dynamic window '%s': [%#llx, +%lld bytes) is not inside a "
				 "region attached there",
				 call, target, name.c_str(), static_cast<unsigned long long>(lo),
				 static_cast<long long>(footprint));

	const TargetView &t = targets_[target];
	view = t;
	view.size = static_cast<rma_aint>(found.size);
	view.remoteBase = lo;
	view.base = nullptr;
	view.reach = Reach::Process;
	if (found.segmentInode == 0)
		return RMA_SUCCESS;
	if (target == comm_->rank()) {
		view.reach = Reach::Direct;
		view.base = reinterpret_cast<std::byte *>(lo);
		return RMA_SUCCESS;
	}

	/* rma_alloc_mem memory: map the owner's segment once, then store directly. */
	auto key = std::make_pair(target, found.segmentInode);
	auto it = dynamicMaps_.find(key);
	if (it == dynamicMaps_.end()) {
		char path[64];
		std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(t.pid), found.segmentFd);
		UniqueFd fd(open(path, O_RDWR | O_CLOEXEC));
		struct stat st;
		if (!fd.isValid() || fstat(fd.get(), &st) != 0 || st.st_ino != found.segmentInode)
			return RMA_SUCCESS; /* not reachable that way: cross-memory attach still works */
		auto seg = Segment::attach(std::move(fd), found.segmentSize, found.hugePages);
		if (!seg)
			return RMA_SUCCESS;
		seg->closeFd();
		it = dynamicMaps_.emplace(key, DynamicMapping{ found.segmentInode, std::move(seg.value()) }).first;
	}
	view.reach = Reach::Direct;
	view.base = it->second.segment.data() + found.segmentOffset + (lo - found.base);
	return RMA_SUCCESS;
}

/* ---- Transfers ------------------------------------------------------------ */

namespace {

/* Cross-memory attach, looping over partial transfers. */
[[gnu::cold]] int crossMemory(const char *call, const std::string &win, pid_t pid, uint64_t remote, void *local,
			      rma_count bytes, bool toTarget)
{
	auto *p = static_cast<std::byte *>(local);
	while (bytes > 0) {
		struct iovec l = { p, static_cast<size_t>(bytes) };
		struct iovec r = { reinterpret_cast<void *>(remote), static_cast<size_t>(bytes) };
		ssize_t n = toTarget ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;
			return makeErrnoError(err == ESRCH ? RMA_ERR_PROC_FAILED : RMA_ERR_INTERN, err,
					      "%s: cross-memory %s of process %d (window '%s') failed", call,
					      toTarget ? "write to" : "read from", static_cast<int>(pid), win.c_str());
		}
		p += n;
		remote += static_cast<uint64_t>(n);
		bytes -= n;
	}
	return RMA_SUCCESS;
}

} /* namespace */

int Window::transfer(const char *call, const TargetView &view, void *origin, rma_count bytes, bool toTarget)
{
	if (view.reach == Reach::Direct) [[likely]] {
		if (toTarget)
			std::memcpy(view.base, origin, static_cast<size_t>(bytes));
		else
			std::memcpy(origin, view.base, static_cast<size_t>(bytes));
		return RMA_SUCCESS;
	}
	return crossMemory(call, name, view.pid, view.remoteBase, origin, bytes, toTarget);
}

template<bool Put>
int Window::fullAccess(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		       rma_datatype ttype)
{
	static constexpr const char *kCall = Put ? "rma_put" : "rma_get";
	RMA_TRY(checkAccess(kCall, target));
	if (target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	const Datatype *od = toDatatype(otype);
	const Datatype *td = toDatatype(ttype);
	if (!od || !td) [[unlikely]]
		return badDatatype(kCall, od ? "target" : "origin", od ? ttype : otype);
	if ((ocount | tcount) < 0) [[unlikely]]
		return badCount(kCall, ocount, tcount);
	rma_count bytes;
	RMA_TRY(matchSignatures(kCall, *od, ocount, *td, tcount, Put, bytes));
	TargetView view;
	RMA_TRY(checkTarget(kCall, target, disp, static_cast<rma_count>(tcount) * td->extent, view));
	if (bytes == 0)
		return RMA_SUCCESS;
	pendingOps_ = true;
	if (Put)
		pendingStores_ |= static_cast<size_t>(bytes) >= kNonTemporalBytes;
	return transfer(kCall, view, origin, bytes, Put);
}

int Window::put(const void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		rma_datatype ttype)
{
	return fullAccess<true>(const_cast<void *>(origin), ocount, otype, target, disp, tcount, ttype);
}

int Window::get(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		rma_datatype ttype)
{
	return fullAccess<false>(origin, ocount, otype, target, disp, tcount, ttype);
}

/* ---- Synchronization ------------------------------------------------------ */

/*
 * Barrier over the window's members through the control segment: each member
 * publishes how many barriers it has entered and waits until every other has
 * entered as many. O(n) reads per member; for two ranks it is one cache line
 * each way.
 */
int Window::barrier(const char *call)
{
	const int me = comm_->rank();
	const uint64_t epoch = ++barriers_;
	/*
	 * Release: pairs with the acquire loads below in every peer. Publishes
	 * every store this process made before the barrier: its puts into
	 * peers' memory and its own local stores to its window.
	 */
	slots_[me].barrier.store(epoch, std::memory_order_release);
	for (int r = 0; r < comm_->size(); ++r) {
		if (r == me)
			continue;
		std::atomic<uint64_t> &theirs = slots_[r].barrier;
		/* Acquire: pairs with the release store above in rank r. */
		RMA_TRY(waitUntil(call, "a barrier", r,
				  [&theirs, epoch] { return theirs.load(std::memory_order_acquire) >= epoch; }));
	}
	return RMA_SUCCESS;
}

int Window::fence(int assert)
{
	if (assert & ~kAllModes)
		return makeError(RMA_ERR_ASSERT, "rma_win_fence: assert %#x has bits that are not RMA_MODE_* flags", assert);
	if (passiveOrPscwOpen())
		return makeError(RMA_ERR_RMA_SYNC, "rma_win_fence: window '%s' has %s open; a fence cannot be called inside it",
				 name.c_str(), describeEpochs().c_str());
	if ((assert & RMA_MODE_NOPRECEDE) && pendingOps_)
		return makeError(RMA_ERR_RMA_SYNC,
				 "rma_win_fence: RMA_MODE_NOPRECEDE asserted on window '%s', but this process issued "
				 "RMA operations since the last fence",
				 name.c_str());
	completeLocally();
	RMA_TRY(barrier("rma_win_fence"));
	fenceEpoch_ = !(assert & RMA_MODE_NOSUCCEED);
	allAccess_ = fenceEpoch_;
	return RMA_SUCCESS;
}

int Window::sync()
{
	/* Unified model: the public and private copies are the same memory; order them like MPI_Win_sync must. */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	return RMA_SUCCESS;
}

} /* namespace librma */
