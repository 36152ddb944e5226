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
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/spin_wait.h"
#include "common/tsan.h"
#include "datatype/datatype.h"
#include "error/error.h"
#include "win/remote.h"
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

int badBuffer(const char *call, const char *which, const void *p)
{
	return makeError(RMA_ERR_BUFFER,
			 "%s: the %s buffer's first byte (%p) is NULL or in the first page; nothing was transferred",
			 call, which, p);
}

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
		if (anyDead()) [[unlikely]]
			return deadTarget(call, target);
		return RMA_SUCCESS;
	}
	return makeError(RMA_ERR_RMA_SYNC,
			 "%s: no access epoch covers target rank %d of window '%s' (open: %s; start one with "
			 "rma_win_fence, rma_win_start, rma_win_lock or rma_win_lock_all)",
			 call, target, name.c_str(), describeEpochs().c_str());
}

namespace {

[[gnu::cold]] int outOfRange(const char *call, const std::string &win, int target, rma_aint disp, int dispUnit,
			     Footprint fp, rma_aint size)
{
	return makeError(RMA_ERR_RMA_RANGE,
			 "%s: target rank %d of window '%s': displacement %lld x disp_unit %d, then bytes [%lld, %lld) "
			 "of target buffer (%lld bytes) fall outside the window size of %lld bytes; nothing was "
			 "transferred",
			 call, target, win.c_str(), static_cast<long long>(disp), dispUnit, static_cast<long long>(fp.low),
			 static_cast<long long>(fp.high), static_cast<long long>(fp.high - fp.low),
			 static_cast<long long>(size));
}

} /* namespace */

int Window::checkTarget(const char *call, int target, rma_aint disp, Footprint fp, TargetView &view)
{
	const TargetView &t = targets_[target];
	if (t.reach == Reach::Dynamic)
		return resolveDynamic(call, target, disp, fp, view);
	if (t.reach == Reach::Remote && flavor_ == Flavor::Dynamic) {
		/* An address in another host's process: its server checks it against the attached regions. */
		view = t;
		view.remoteBase = static_cast<uint64_t>(disp);
		return RMA_SUCCESS;
	}
	if (disp < 0) [[unlikely]]
		return makeError(RMA_ERR_DISP, "%s: target displacement %lld is negative (target rank %d, window '%s')",
				 call, static_cast<long long>(disp), target, name.c_str());
	rma_aint offset;
	rma_aint low;
	rma_aint high;
	if (__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) ||
	    __builtin_add_overflow(offset, fp.low, &low) || __builtin_add_overflow(offset, fp.high, &high) || low < 0 ||
	    (fp.high > fp.low && high > t.size)) [[unlikely]]
		return outOfRange(call, name, target, disp, t.dispUnit, fp, t.size);
	view = t;
	view.base = t.base ? t.base + offset : nullptr;
	view.remoteBase = t.remoteBase + static_cast<uint64_t>(offset);
	return RMA_SUCCESS;
}

namespace {

AttachEntry loadEntry(AttachEntry &e)
{
	AttachEntry out;
	out.base = std::atomic_ref<uint64_t>(e.base).load(std::memory_order_relaxed);
	out.size = std::atomic_ref<uint64_t>(e.size).load(std::memory_order_relaxed);
	out.coverEnd = std::atomic_ref<uint64_t>(e.coverEnd).load(std::memory_order_relaxed);
	out.segmentInode = std::atomic_ref<uint64_t>(e.segmentInode).load(std::memory_order_relaxed);
	out.segmentOffset = std::atomic_ref<uint64_t>(e.segmentOffset).load(std::memory_order_relaxed);
	out.segmentSize = std::atomic_ref<uint64_t>(e.segmentSize).load(std::memory_order_relaxed);
	out.segmentFd = std::atomic_ref<int32_t>(e.segmentFd).load(std::memory_order_relaxed);
	out.hugePages = std::atomic_ref<uint32_t>(e.hugePages).load(std::memory_order_relaxed);
	return out;
}

/* Whether @b continues @a's mapping: both private memory, or one segment at one offset relation. */
bool sameMapping(const AttachEntry &a, const AttachEntry &b)
{
	return a.segmentInode == b.segmentInode &&
	       (a.segmentInode == 0 || b.segmentOffset - b.base == a.segmentOffset - a.base);
}

} /* namespace */

/*
 * Find the attached regions of @target covering [disp + low, disp + high).
 * Any range the union of the attached regions covers is accepted, across
 * adjacent and overlapping regions; only a real hole is an error. The
 * target's table is read under its sequence lock (see attach()) and is
 * sorted by base with prefix cover ends, so the lookup is a binary search
 * plus the regions the range spans. The application guarantees, as MPI
 * requires, that the regions were attached before this access and are not
 * detached during it.
 */
int Window::resolveDynamic(const char *call, int target, rma_aint disp, Footprint fp, TargetView &view, bool map)
{
	AttachTable &table = attach_[target];
	/* The bytes touched are [disp + low, disp + high); disp itself is the buffer start. */
	uint64_t lo = static_cast<uint64_t>(disp) + static_cast<uint64_t>(fp.low);
	uint64_t hi = static_cast<uint64_t>(disp) + static_cast<uint64_t>(fp.high);
	if (fp.high <= fp.low) {
		/* Nothing is touched: no region is needed (and nothing will move). */
		view = targets_[target];
		view.reach = Reach::Process;
		view.base = nullptr;
		view.remoteBase = static_cast<uint64_t>(disp);
		return RMA_SUCCESS;
	}
	if (hi < lo)
		hi = UINT64_MAX;
	AttachEntry found{};
	bool ok = false;
	bool oneMapping = true;
	uint64_t cover = 0;
	uint64_t hole = lo;
	for (SpinWait wait;; wait.once()) {
		/* Acquire: pairs with the final release store of publishAttachTable(). */
		uint64_t s1 = table.sequence.load(std::memory_order_acquire);
		if (s1 & 1)
			continue;
		ok = false;
		oneMapping = true;
		uint32_t count = std::min(std::atomic_ref<uint32_t>(table.count).load(std::memory_order_relaxed), kMaxAttach);
		/* The first entry whose base is past lo. */
		uint32_t l = 0, r = count;
		while (l < r) {
			uint32_t m = l + (r - l) / 2;
			if (std::atomic_ref<uint64_t>(table.entries[m].base).load(std::memory_order_relaxed) <= lo)
				l = m + 1;
			else
				r = m;
		}
		/* Of the regions starting at or before lo, the one reaching furthest: walk back while one can reach lo. */
		int64_t best = -1;
		cover = lo;
		for (int64_t j = static_cast<int64_t>(l) - 1; j >= 0; --j) {
			AttachEntry e = loadEntry(table.entries[j]);
			if (e.coverEnd <= lo)
				break;
			if (e.base + e.size > cover) {
				cover = e.base + e.size;
				best = j;
			}
		}
		hole = lo;
		if (best >= 0) {
			found = loadEntry(table.entries[best]);
			/* Extend over the regions that start inside what is covered so far. */
			for (uint32_t j = l; j < count && cover < hi; ++j) {
				AttachEntry e = loadEntry(table.entries[j]);
				if (e.base > cover)
					break;
				if (e.base + e.size > cover) {
					cover = e.base + e.size;
					oneMapping = oneMapping && sameMapping(found, e);
				}
			}
			ok = cover >= hi;
			hole = cover;
		}
		/* Acquire fence: the entry loads above happen before the re-check below. */
		std::atomic_thread_fence(std::memory_order_acquire);
		if (table.sequence.load(std::memory_order_relaxed) == s1)
			break;
	}
	if (!ok)
		return makeError(RMA_ERR_RMA_RANGE,
				 "%s: target rank %d of dynamic window '%s': [%#llx, +%lld bytes) is not covered by the "
				 "regions attached there (no region holds address %#llx)",
				 call, target, name.c_str(), static_cast<unsigned long long>(lo),
				 static_cast<long long>(fp.high - fp.low), static_cast<unsigned long long>(hole));
	/*
	 * A range over regions of different mappings (separate segments, or a
	 * segment next to private memory) is still one stretch of the owner's
	 * address space: cross-memory attach reaches it whole.
	 */
	if (!oneMapping)
		found.segmentInode = 0;

	const TargetView &t = targets_[target];
	view = t;
	view.size = static_cast<rma_aint>(cover - found.base);
	view.remoteBase = static_cast<uint64_t>(disp);
	view.base = nullptr;
	view.reach = Reach::Process;
	if (found.segmentInode == 0)
		return RMA_SUCCESS;
	if (target == comm_->rank()) {
		view.reach = Reach::Direct;
		view.base = reinterpret_cast<std::byte *>(disp);
		return RMA_SUCCESS;
	}
	if (!map)
		return RMA_SUCCESS;

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
	view.base = it->second.segment.data() + found.segmentOffset + (static_cast<uint64_t>(disp) - found.base);
	return RMA_SUCCESS;
}

/* ---- Transfers ------------------------------------------------------------ */

namespace {

/*
 * Cross-memory attach: the (origin, target) block pairs of the two type
 * maps become iovec pairs, IOV_MAX at a time; a short transfer is resumed
 * where it stopped.
 */
[[gnu::cold]] int crossMemory(const char *call, const std::string &win, pid_t pid, uint64_t remote, void *origin,
			      const Datatype &otype, int ocount, const Datatype &ttype, int tcount, rma_count bytes,
			      bool toTarget)
{
	BlockPairCursor cursor(otype, ocount, ttype, tcount, bytes);
	iovec local[IOV_MAX];
	iovec far[IOV_MAX];
	size_t chunk = 0;
	while (size_t n = fillIovecs(cursor, origin, remote, local, far, IOV_MAX, chunk)) {
		size_t i = 0;
		while (i < n) {
			ssize_t done = toTarget ? process_vm_writev(pid, local + i, n - i, far + i, n - i, 0)
						: process_vm_readv(pid, local + i, n - i, far + i, n - i, 0);
			if (done <= 0) {
				int err = done < 0 ? errno : EIO;
				return makeErrnoError(err == ESRCH ? RMA_ERR_PROC_FAILED : RMA_ERR_INTERN, err,
						      "%s: cross-memory %s of process %d (window '%s') failed", call,
						      toTarget ? "write to" : "read from", static_cast<int>(pid), win.c_str());
			}
			/* Skip the pairs moved in full; trim the one moved in part. */
			auto left = static_cast<size_t>(done);
			while (i < n && left >= local[i].iov_len)
				left -= local[i++].iov_len;
			if (i < n && left > 0) {
				local[i].iov_base = static_cast<std::byte *>(local[i].iov_base) + left;
				far[i].iov_base = static_cast<std::byte *>(far[i].iov_base) + left;
				local[i].iov_len -= left;
				far[i].iov_len -= left;
			}
		}
	}
	return RMA_SUCCESS;
}

} /* namespace */

int Window::transfer(const char *call, const TargetView &view, void *origin, const Datatype &otype, int ocount,
		     const Datatype &ttype, int tcount, rma_count bytes, bool toTarget)
{
	if (view.reach == Reach::Direct) [[likely]] {
		if (toTarget)
			copyTyped(view.base, ttype, tcount, static_cast<const std::byte *>(origin), otype, ocount, bytes);
		else
			copyTyped(static_cast<std::byte *>(origin), otype, ocount, view.base, ttype, tcount, bytes);
		return RMA_SUCCESS;
	}
	return crossMemory(call, name, view.pid, view.remoteBase, origin, otype, ocount, ttype, tcount, bytes, toTarget);
}

template<bool Put>
int Window::fullAccess(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		       rma_datatype ttype)
{
	static constexpr const char *kCall = Put ? "rma_put" : "rma_get";
	RMA_TRY(checkAccess(kCall, target));
	if (target == RMA_PROC_NULL)
		return RMA_SUCCESS;
	const Datatype *od = lookupDatatype(otype);
	const Datatype *td = lookupDatatype(ttype);
	if (!od || !td) [[unlikely]]
		return badDatatype(kCall, od ? "target" : "origin", od ? ttype : otype);
	if ((ocount | tcount) < 0) [[unlikely]]
		return badCount(kCall, ocount, tcount);
	rma_count bytes;
	RMA_TRY(matchSignatures(kCall, *od, ocount, *td, tcount, Put, bytes));
	if (Put)
		RMA_TRY(checkTargetType(kCall, *td, tcount));
	TargetView view;
	RMA_TRY(checkTarget(kCall, target, disp, footprint(*td, tcount), view));
	if (bytes == 0)
		return RMA_SUCCESS;
	/* The first byte touched: RMA_BOTTOM (NULL) with absolute displacements is fine. */
	if (badPointer(static_cast<std::byte *>(origin) + od->trueLb)) [[unlikely]]
		return badBuffer(kCall, "origin", static_cast<std::byte *>(origin) + od->trueLb);
	pendingOps_ = true;
#ifdef RMA_HAVE_NET
	if (view.reach == Reach::Remote) {
		/* Unequal counts send flush() and unlock() to the slow path, which completes it remotely. */
		accIssued_[target] = accApplied_[target] + 1;
		const rma_aint offset = disp * static_cast<rma_aint>(targets_[target].dispUnit);
		if (Put)
			return remote_->put(kCall, target, offset, origin, *od, ocount, *td, tcount, bytes);
		return remote_->get(kCall, target, offset, origin, *od, ocount, *td, tcount, bytes);
	}
#endif
	if (Put)
		pendingStores_ |= static_cast<size_t>(bytes) >= kNonTemporalBytes;
	return transfer(kCall, view, origin, *od, ocount, *td, tcount, bytes, Put);
}

int Window::put(const void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		rma_datatype ttype)
{
	if (stats_) [[unlikely]]
		return accessCounted(true, const_cast<void *>(origin), ocount, otype, target, disp, tcount, ttype);
	return fullAccess<true>(const_cast<void *>(origin), ocount, otype, target, disp, tcount, ttype);
}

int Window::get(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		rma_datatype ttype)
{
	if (stats_) [[unlikely]]
		return accessCounted(false, origin, ocount, otype, target, disp, tcount, ttype);
	return fullAccess<false>(origin, ocount, otype, target, disp, tcount, ttype);
}

uint64_t Window::remoteRequestSeq(int target)
{
#ifdef RMA_HAVE_NET
	if (remote_ && isRemote(target))
		return remote_->requestSeq(target);
#endif
	(void)target;
	return 0;
}

void Window::remoteRequest(std::shared_ptr<RequestFailure> f)
{
#ifdef RMA_HAVE_NET
	if (remote_)
		remote_->request_ = std::move(f);
#else
	(void)f;
#endif
}

int Window::remoteRequestResult(const char *call, int target, uint64_t seq, const RequestFailure *f)
{
#ifdef RMA_HAVE_NET
	if (remote_ && isRemote(target))
		return remote_->requestResult(call, target, seq, f);
#endif
	(void)call;
	(void)target;
	(void)seq;
	(void)f;
	return RMA_SUCCESS;
}

void Window::remoteRequestAbandon(int target, RequestFailure &f)
{
	f.abandoned = true;
#ifdef RMA_HAVE_NET
	if (remote_ && isRemote(target))
		remote_->requestAbandoned(target, f);
#endif
	(void)target;
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
	 * Members on other hosts: their servers mirror our word there, theirs
	 * here (remote.h). A refused operation is reported after the barrier:
	 * every member waits for our word, which must be published anyway.
	 */
	int refused = RMA_SUCCESS;
#ifdef RMA_HAVE_NET
	if (remote_)
		refused = remote_->fence(call, epoch);
#endif
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
	crossProcessEdge();
	return refused;
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
	if (anyDead()) [[unlikely]] {
		if (int rc = deadAmong("rma_win_fence", nullptr); rc != RMA_SUCCESS) {
			fenceEpoch_ = false;
			allAccess_ = false;
			pendingOps_ = false;
			return rc;
		}
	}
	if (!allAccumulatesApplied())
		if (int rc = completeAllAccumulates("rma_win_fence", false); rc != RMA_SUCCESS) [[unlikely]]
			return fenceFailed(assert, rc);
	completeLocally();
	RMA_TRY(barrier("rma_win_fence"));
	fenceEpoch_ = !(assert & RMA_MODE_NOSUCCEED);
	allAccess_ = fenceEpoch_;
	return RMA_SUCCESS;
}

/*
 * fence() could not complete its operations (@rc). A failed process (a dead
 * agent holding a target's ring): the live members still meet in the
 * barrier (they would wait for us otherwise), and the failure is reported
 * after it. Other errors return at once.
 */
int Window::fenceFailed(int assert, int rc)
{
	if (errorClass(rc) != RMA_ERR_PROC_FAILED)
		return rc;
	completeLocally();
	RMA_TRY(barrier("rma_win_fence"));
	fenceEpoch_ = !(assert & RMA_MODE_NOSUCCEED);
	allAccess_ = fenceEpoch_;
	return rc;
}

int Window::sync()
{
	/* Unified model: the public and private copies are the same memory; order them like MPI_Win_sync must. */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	crossProcessEdge();
	return RMA_SUCCESS;
}

} /* namespace librma */

namespace librma {

int Window::accessCounted(bool put, void *origin, int ocount, rma_datatype otype, int target, rma_aint disp,
			  int tcount, rma_datatype ttype)
{
	int rc = put ? fullAccess<true>(origin, ocount, otype, target, disp, tcount, ttype)
		     : fullAccess<false>(origin, ocount, otype, target, disp, tcount, ttype);
	if (rc == RMA_SUCCESS && target >= 0)
		if (const Datatype *td = lookupDatatype(ttype))
			countTraffic(put ? TrafficKind::Put : TrafficKind::Get, target,
				     static_cast<uint64_t>(td->size) * static_cast<uint64_t>(tcount));
	return rc;
}

} /* namespace librma */
