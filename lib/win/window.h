/* SPDX-License-Identifier: MIT */
/*
 * Windows: memory exposed to RMA by the members of a communicator, and the
 * operations and synchronization on it. This header is the component's only
 * door.
 *
 * Every member's memory is reached in one of three ways, chosen at creation
 * (never per operation beyond one predictable branch):
 *  - Direct:  it lives in a memfd segment mapped here; put/get are memcpy.
 *  - Process: plain process memory of the target (rma_win_create over memory
 *             not from rma_alloc_mem); reached by cross-memory attach
 *             (process_vm_readv/writev), which needs nothing from the target.
 *  - Dynamic: regions attached later; resolved through the target's attach
 *             table in the control segment, each region then Direct (memory
 *             from rma_alloc_mem, mapped on first use) or Process.
 *  - Remote:  the member is on another host; its operations travel as frames
 *             to its host's server process (win/remote.h, lib/net).
 *
 * Thread safety: one thread at a time per window (RMA_THREAD_SERIALIZED).
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <rma/rma.h>

#include "core/core.h"
#include "op/op.h"
#include "progress/doorbell.h"
#include "progress/mpsc_ring.h"
#include "datatype/datatype.h"
#include "numa/topology.h"
#include "common/copy.h"
#include "common/pointer.h"
#include "common/spin_wait.h"
#include "common/tsan.h"
#include "shm/segment.h"
#include "win/acc_area.h"
#include "win/control.h"

namespace librma {

enum class Flavor {
	Create = RMA_WIN_FLAVOR_CREATE,
	Allocate = RMA_WIN_FLAVOR_ALLOCATE,
	Dynamic = RMA_WIN_FLAVOR_DYNAMIC,
	Shared = RMA_WIN_FLAVOR_SHARED,
};

enum class Reach : uint8_t { None, Direct, Process, Dynamic, Remote };

/* How this process reaches one member's window memory. */
struct TargetView {
	std::byte *base = nullptr; /* Direct: where it is mapped in this process */
	rma_aint size = 0;
	int dispUnit = 1;
	Reach reach = Reach::None;
	int16_t node = -1; /* NUMA node of the memory (-1: none, interleaved, unknown) */
	pid_t pid = 0;
	uint64_t remoteBase = 0; /* the owner's address of its memory */
};

/* The hints of a window (info keys), validated. */
struct WindowHints {
	bool noLocks = false;
	std::string accumulateOrdering = "rar,raw,war,waw";
	std::string accumulateOps = "same_op_no_op";
	long long accumulateGranularity = 0;
	/*
	 * rma_accumulate_path=ring: every accumulate goes through the ring and
	 * is applied with plain loads and stores (fast for arrays); "auto"
	 * (default, or RMA_ACC_PATH): small ops by origin atomics, and the
	 * ring applies hardware-typed elements atomically to compose with them.
	 */
	bool accumulateRing = false;
	bool sameSize = false;
	bool sameDispUnit = false;
	bool allocSharedNoncontig = false;
	HugePages hugePages = HugePages::Prefer;
	Placement placement;
	/* rma_win_name: the window's name from creation on ("" when not given). */
	std::string name;

	/*
	 * Read the keys of @info over the current values; RMA_ERR_INFO_VALUE on
	 * a bad value. The placement is, first to last: @info's rma_placement;
	 * the job's policy for the window named by @info's rma_win_name
	 * (RMA_PLACEMENT_WINDOWS); the value before the call.
	 */
	int parse(const char *call, const Info *info);
	/*
	 * The hints before any info key: the job's RMA_PLACEMENT and
	 * RMA_HUGE_PAGES (what rmarun --placement sets), else the defaults.
	 * rma_init has refused bad values of both already.
	 */
	static WindowHints jobDefaults();
};

/* The arguments of an accumulate-family call (result == nullptr: no fetch). */
struct AccArgs {
	const void *origin = nullptr;
	int ocount = 0;
	rma_datatype otype = RMA_DATATYPE_NULL;
	void *result = nullptr;
	int rcount = 0;
	rma_datatype rtype = RMA_DATATYPE_NULL;
	int target = 0;
	rma_aint disp = 0;
	int tcount = 0;
	rma_datatype ttype = RMA_DATATYPE_NULL;
	rma_op op = RMA_OP_NULL;
	/* get_accumulate / fetch_and_op: old values go to @result (which may be RMA_BOTTOM). */
	bool fetch = false;
	bool fetchAndOp = false;
	/* Set to the record's sequence number when the operation was queued, else 0 (complete). */
	uint64_t *queuedSeq = nullptr;
};

/* AccArgs from the arguments of rma_get_accumulate (@result nullptr: a plain accumulate). */
inline AccArgs makeAccArgs(const void *origin, int ocount, rma_datatype otype, void *result, int rcount,
			   rma_datatype rtype, int target, rma_aint disp, int tcount, rma_datatype ttype, rma_op op)
{
	AccArgs a;
	a.origin = origin;
	a.ocount = ocount;
	a.otype = otype;
	a.result = result;
	a.fetch = result != nullptr;
	a.rcount = rcount;
	a.rtype = rtype;
	a.target = target;
	a.disp = disp;
	a.tcount = tcount;
	a.ttype = ttype;
	a.op = op;
	return a;
}

struct AccRecord;
class RemoteWindow;
/*
 * One request (rma_rget, rma_rget_accumulate) to a target on another host:
 * the first refusal of one of its frames (an error code, unique to it),
 * recorded by the reply that refused it: the request's own wait or test
 * reports it, and no other call does (remote.h).
 */
struct RequestFailure {
	int error = 0;
	/* Freed before it completed: its refusals go to the stream, reported by the next call (remote.h). */
	bool abandoned = false;
};

/* The kinds traffic statistics count; request forms count with their blocking kind. */
enum class TrafficKind : uint8_t { Put, Get, Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap };
inline constexpr int kTrafficKinds = 6;
/* Their names in the statistics file, in TrafficKind order. */
inline constexpr const char *kTrafficKindNames[kTrafficKinds] = { "put",	  "get",	  "accumulate",
								  "get_accumulate", "fetch_and_op", "compare_and_swap" };

/* The dead count of a job without a status page: always 0. */
inline const std::atomic<uint64_t> kNoDeaths{ 0 };

/* RMA_ERR_BUFFER for a @which buffer (origin, result, ...) that badPointer() refuses. */
[[gnu::cold]] int badBuffer(const char *call, const char *which, const void *p);

/* What this rank's own memory is (reported by rma_win_get_info). */
struct LocalMemory {
	std::size_t pageSize = 0;
	int numaNode = -1;
	const char *kind = "none"; /* "segment", "alloc_mem", "process", "none" */
};

class Window
{
public:
	~Window();

	/*
	 * Collective creation over @comm. @base/@size/@dispUnit as the
	 * flavor's MPI call takes them (@base ignored but for Create).
	 * On success @out holds the window.
	 */
	static int create(Flavor flavor, void *base, rma_aint size, int dispUnit, const Info *info,
			  std::shared_ptr<Comm> comm, std::unique_ptr<Window> &out);

	/*
	 * Data path: put (Put = true) or get. The inline part (accessFast) takes
	 * the common case (open epoch, the same predefined type and count on
	 * both sides, a Direct target, in bounds) straight to the copy, and says
	 * false, having done nothing, for everything else; put()/get() check
	 * and report every case in full. Keeping the two apart lets the C entry
	 * points run the inline part as a leaf and reach the full path by a
	 * tail call, with no registers to save around it. With traffic
	 * statistics on (stats_), every inline part says false, so operations
	 * are counted once, in the full paths.
	 */
	template<bool Put>
	[[gnu::always_inline]] bool accessFast(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp,
					       int tcount, rma_datatype ttype)
	{
		if (otype == ttype && ocount == tcount && static_cast<unsigned>(target) < nTargets_ && !stats_ &&
		    (allAccess_ || access_[target]) && !badPointer(origin) && !anyDead()) [[likely]] {
			const Datatype *type = predefinedDatatype(otype);
			const TargetView &t = targets_[target];
			rma_aint offset;
			rma_aint end;
			if (type && t.reach == Reach::Direct && ocount >= 0 && disp >= 0 &&
			    !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) &&
			    !__builtin_add_overflow(offset, static_cast<rma_aint>(ocount) * type->size, &end) &&
			    end <= t.size) [[likely]] {
				size_t bytes = static_cast<size_t>(ocount) * static_cast<size_t>(type->size);
				/* Before the copy: nothing is live across the call then. */
				pendingOps_ = true;
				if constexpr (Put) {
					pendingStores_ |= bytes >= kNonTemporalBytes;
					copyBytes(t.base + offset, origin, bytes);
				} else {
					copyBytes(origin, t.base + offset, bytes);
				}
				return true;
			}
		}
		return false;
	}
	template<bool Put>
	int access(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		   rma_datatype ttype)
	{
		if (accessFast<Put>(origin, ocount, otype, target, disp, tcount, ttype)) [[likely]]
			return RMA_SUCCESS;
		if constexpr (Put)
			return put(origin, ocount, otype, target, disp, tcount, ttype);
		else
			return get(origin, ocount, otype, target, disp, tcount, ttype);
	}

	/* The full paths (any datatype, any reach, every check with its message). */
	[[gnu::noinline]] int put(const void *origin, int ocount, rma_datatype otype, int target, rma_aint disp,
				  int tcount, rma_datatype ttype);
	[[gnu::noinline]] int get(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
				  rma_datatype ttype);

	/*
	 * The accumulate family (accumulate.cpp): accumulate, get_accumulate,
	 * fetch_and_op; compare_and_swap. See accumulate.cpp for the three
	 * paths and the completion protocol.
	 */
	int accumulate(const char *call, const AccArgs &args);
	int accumulateChecked(const char *call, const AccArgs &args);
	/*
	 * What every inline part of the accumulate family asks of @target
	 * besides its own conditions: that @path (accFast_: origin atomics;
	 * accInPlace_: in-place applies) allows it, an epoch open to it,
	 * statistics off (counted operations take the full paths), no member
	 * dead.
	 */
	[[gnu::always_inline]] bool fastAccTarget(const std::vector<uint8_t> &path, int target) const
	{
		return static_cast<unsigned>(target) < path.size() && path[target] && (allAccess_ || access_[target]) &&
		       !stats_ && !anyDead();
	}
	/*
	 * The inline part of fetch_and_op, and of accumulate / get_accumulate
	 * of @count elements of one predefined type on every side (@fetch: the
	 * old values go to @result): an open epoch, a Direct target that takes
	 * origin atomics, at most kFastBytes, in bounds and aligned, nothing of
	 * ours queued to it: one atomic RMW per element. False, having done
	 * nothing, for everything else: the C entry points then call
	 * accumulate().
	 */
	[[gnu::always_inline]] bool atomicFast(const void *origin, void *result, rma_datatype type, int count, int target,
					       rma_aint disp, rma_op opHandle, bool fetch)
	{
		const Datatype *d = predefinedDatatype(type);
		const Op op = toOp(opHandle);
		/* The size first: mid-size operations leave here at once, for the in-place path. */
		if (d && count > 0 && count <= kFastElements && d->size * count <= kFastBytes &&
		    fastAccTarget(accFast_, target) && accIssued_[target] == accApplied_[target] &&
		    (fetch || op != Op::NoOp) && (op == Op::NoOp || !badPointer(origin))) [[likely]] {
			const TargetView &t = targets_[target];
			const rma_aint bytes = d->size * count;
			rma_aint offset;
			if (disp >= 0 && !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) &&
			    offset <= t.size - bytes) [[likely]] {
				const uint8_t elem = d->handleIndex;
				std::byte *addr = t.base + offset;
				const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
				/* One table load for what the pair allows (op.h, FastAcc); d->size is elemBytes() here. */
				const uint8_t kind = fastAccKind(op, elem);
				const bool add64 = count == 1 && (kind & fastacc::kAdd64) && (a & 7) == 0;
				const bool atomic =
					add64 || ((kind & fastacc::kAtomic) && (a & static_cast<uintptr_t>(d->size - 1)) == 0);
				/* Several elements in one aligned word: one compare-exchange for all of them (wordAt()). */
				const bool word = !add64 && count > 1 && atomic && (a & 7) + static_cast<uintptr_t>(bytes) <= 8;
				if (atomic && enterFastOp(target)) [[likely]] {
					if (add64)
						fetchAdd64(addr, origin, result);
					else if (word && (kind & fastacc::kLaneSum))
						applyLaneSum(static_cast<uint32_t>(d->size), addr, origin, result,
							     static_cast<size_t>(count));
					else if (word)
						applyOpWord(op, elem, addr, origin, result, static_cast<size_t>(count));
					else
						applyOp(op, elem, addr, origin, result, static_cast<size_t>(count));
					leaveFastOp(target);
					pendingOps_ = true;
					return true;
				}
			}
		}
		return false;
	}
	/*
	 * atomicFast()'s commonest case of several elements on its own:
	 * @count integer elements (a constant at the call site) of one aligned
	 * 8-byte word, summed lane-wise by one compare-exchange (applyLaneSum();
	 * OSU's 8-byte accumulate is 2 int32). A leaf without calls, so nothing
	 * is spilled to the stack before the locked instruction (which waits
	 * for every earlier store). False, having done nothing, for everything
	 * else (then atomicFast()).
	 */
	[[gnu::always_inline]] bool laneSumFast(const void *origin, void *result, rma_datatype type, int count,
						int target, rma_aint disp, rma_op opHandle)
	{
		const Datatype *d = predefinedDatatype(type);
		if (d && toOp(opHandle) == Op::Sum && d->size * count == 8 && fastAccTarget(accFast_, target) &&
		    accIssued_[target] == accApplied_[target] && !badPointer(origin)) [[likely]] {
			const uint8_t kind = fastAccKind(Op::Sum, d->handleIndex);
			const TargetView &t = targets_[target];
			rma_aint offset;
			if ((kind & fastacc::kLaneSum) && (kind & fastacc::kAtomic) && disp >= 0 &&
			    !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) &&
			    offset <= t.size - 8) [[likely]] {
				std::byte *addr = t.base + offset;
				if ((reinterpret_cast<uintptr_t>(addr) & 7) == 0 && enterFastOp(target)) [[likely]] {
					/* 8 / count, not d->size: the same here, and a constant once inlined. */
					applyLaneSum(static_cast<uint32_t>(8 / count), addr, origin, result,
						     static_cast<size_t>(count));
					leaveFastOp(target);
					pendingOps_ = true;
					return true;
				}
			}
		}
		return false;
	}
	/*
	 * The inline part of accumulate / get_accumulate past kFastBytes, under
	 * atomicFast()'s conditions but the size (@count elements of one
	 * predefined type on every side, @fetch: the old values go to @result):
	 * a target whose accumulates apply in place (accInPlace_; accumulate.cpp,
	 * "Plain mode"), an op and element plain applies take, in bounds: the origin
	 * applies it with plain stores while it holds the target's consumer
	 * role, when the target is already in plain mode (applyLeased()). False,
	 * having done nothing, for everything else: the C entry points then call
	 * accumulate(), which also enters plain mode or queues.
	 */
	[[gnu::always_inline]] bool inPlaceFast(const void *origin, void *result, rma_datatype type, int count, int target,
						rma_aint disp, rma_op opHandle, bool fetch)
	{
		const Datatype *d = predefinedDatatype(type);
		const Op op = toOp(opHandle);
		if (d && count > 0 && fastAccTarget(accInPlace_, target) && !noPlainMode_) [[likely]] {
			const uint8_t elem = d->handleIndex;
			const TargetView &t = targets_[target];
			const rma_aint bytes = d->size * count;
			rma_aint offset;
			if (bytes > kFastBytes && opAllowed(op, elem) && !isPairElem(elem) && (fetch || op != Op::NoOp) &&
			    (op == Op::NoOp || !badPointer(origin)) && (!fetch || !badPointer(result)) && disp >= 0 &&
			    !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) && offset <= t.size &&
			    bytes <= t.size - offset &&
			    applyLeased(target, op, elem, t.base + offset, origin, fetch ? result : nullptr,
					static_cast<size_t>(count))) [[likely]] {
				pendingOps_ = true;
				return true;
			}
		}
		return false;
	}
	/* Origin atomics take operations up to this many bytes (and elements). */
	static constexpr rma_aint kFastBytes = 16;
	static constexpr int kFastElements = 16;
	int compareAndSwap(const char *call, const void *origin, const void *compare, void *result,
			   rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq);
	/*
	 * The inline part of compare_and_swap, under atomicFast()'s conditions:
	 * a predefined type compare-and-swap takes, an open epoch, a Direct
	 * target that takes origin atomics, nothing of ours queued to it, in
	 * bounds and naturally aligned: one hardware compare-exchange, as
	 * compareAndSwap() does there. False, having done nothing, for
	 * everything else (PROC_NULL, misaligned targets, the ring and the apply
	 * lock, every error): the C entry point then calls compareAndSwap().
	 * The caller has checked the three buffers (badPointer()).
	 */
	[[gnu::always_inline]] bool casFast(const void *origin, const void *compare, void *result, rma_datatype type,
					    int target, rma_aint disp)
	{
		const Datatype *d = predefinedDatatype(type);
		if (d && fastAccTarget(accFast_, target) && accIssued_[target] == accApplied_[target]) [[likely]] {
			const uint8_t elem = d->handleIndex;
			const rma_aint bytes = elemBytes(elem);
			const TargetView &t = targets_[target];
			rma_aint offset;
			if (compareAndSwapAllowed(elem) && disp >= 0 &&
			    !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) &&
			    offset <= t.size - bytes) [[likely]] {
				std::byte *addr = t.base + offset;
				if ((reinterpret_cast<uintptr_t>(addr) & static_cast<uintptr_t>(bytes - 1)) == 0 &&
				    enterFastOp(target)) [[likely]] {
					/* Relaxed compare-exchange (compareAndSwapAligned): atomic per element, as compareAndSwap(). */
					switch (bytes) {
					case 1:
						compareAndSwapAligned<uint8_t>(addr, compare, origin, result);
						break;
					case 2:
						compareAndSwapAligned<uint16_t>(addr, compare, origin, result);
						break;
					case 4:
						compareAndSwapAligned<uint32_t>(addr, compare, origin, result);
						break;
					default: /* 8: the only other size compare-and-swap takes (op.h) */
						compareAndSwapAligned<uint64_t>(addr, compare, origin, result);
						break;
					}
					leaveFastOp(target);
					pendingOps_ = true;
					return true;
				}
			}
		}
		return false;
	}
	/*
	 * Bracket an origin-atomic operation on @target (see accumulate.cpp,
	 * "Plain mode"): false, with nothing to undo, when the target's
	 * consumer is applying with plain stores (then take another path).
	 * Always inline: the fast paths (atomicFast, casFast) otherwise call
	 * both out of line and spill their live registers around the calls.
	 */
	[[gnu::always_inline]] bool enterFastOp(int target)
	{
		if (!plainCapable_)
			return true;
		/* Relaxed: ordered before the load below by the applier's membarrier(), not by us. */
		myFastOp_->store(1, std::memory_order_relaxed);
		/* Compiler-only: the other half of this store->load fence is the applier's membarrier(). */
		std::atomic_signal_fence(std::memory_order_seq_cst);
		/* Acquire: pairs with the release that ends a plain apply; its stores come before our RMW. */
		if (accLines_[target].plainMode.load(std::memory_order_acquire) == 0) [[likely]] {
			crossProcessAcquire(&accLines_[target].plainMode); /* ThreadSanitizer: common/tsan.h */
			return true;
		}
		myFastOp_->store(0, std::memory_order_relaxed);
		return false;
	}
	[[gnu::always_inline]] void leaveFastOp(int target)
	{
		if (plainCapable_) {
			crossProcessRelease(&accLines_[target].plainMode); /* ThreadSanitizer: common/tsan.h */
			/* Release: pairs with the applier's acquire of fastOp; our RMW is done before it goes plain. */
			myFastOp_->store(0, std::memory_order_release);
		}
	}

	/* Requests of queued operations: whether record @seq to @target is applied (results copied out). */
	bool testAccumulate(int target, uint64_t seq);
	int waitAccumulate(const char *call, int target, uint64_t seq);
	/*
	 * After testAccumulate() said no: RMA_ERR_PROC_FAILED if the record can
	 * never be applied (a dead agent holds @target's ring: checkRingHolder()),
	 * so a program polling rma_test is told rather than left polling.
	 * A system call only while an agent holds the ring. For a target on
	 * another host, the same once its host has been silent past
	 * RMA_NET_TIMEOUT_MS while request @seq waits (RemoteWindow::silence()).
	 */
	[[gnu::cold]] int testFailure(const char *call, int target, uint64_t seq);

	/* Progress: drain the rings this process serves (agent source); whether any has records. */
	int progressPoll();
	bool progressPending() const;
	/* Consumer role: apply up to a batch of records queued for @target (0 if another holds the role). */
	int drainRing(int target);
	bool peerAlive(int rank) const;

	/* Synchronization: active target. */
	int fence(int assert);
	int post(const Group &group, int assert);
	int start(const Group &group, int assert);
	int complete();
	int wait();
	int test(int *flag);

	/* Synchronization: passive target. */
	int lock(int lockType, int target, int assert);
	int unlock(int target);
	/*
	 * lock's common case inline: a lock without assert on a target of this
	 * host, nothing else open on it, no exclusive locker waiting, the word
	 * free of an exclusive holder: one compare-exchange (tryTakeExclusive,
	 * or the shared count). False, having done nothing, for everything else
	 * (then lock(), which checks and reports every case and waits).
	 */
	[[gnu::always_inline]] bool lockFast(int lockType, int target, int assert)
	{
		if ((lockType == RMA_LOCK_EXCLUSIVE || lockType == RMA_LOCK_SHARED) && assert == 0 &&
		    static_cast<unsigned>(target) < nTargets_ && !locks_[target] && !lockAll_ && !started_ &&
		    !hints_.noLocks && !(fenceEpoch_ && pendingOps_) && targets_[target].reach != Reach::Remote &&
		    !anyDead()) [[likely]] {
			const bool exclusive = lockType == RMA_LOCK_EXCLUSIVE;
			noteLockActivity(exclusive, +1);
			/* Relaxed: a hint, as in acquireLock() (no barging past waiting exclusive lockers). */
			if (slots_[target].waiters.load(std::memory_order_relaxed) == 0 &&
			    (exclusive ? tryTakeExclusive(target) : tryTakeShared(target))) [[likely]] {
				openLock(target, exclusive ? kLockExclusive : kLockShared);
				return true;
			}
			noteLockActivity(exclusive, -1);
		}
		return false;
	}
	/*
	 * unlock's common case inline: a lock taken without RMA_MODE_NOCHECK on
	 * a target of this host, nothing of ours queued to it. False, having done
	 * nothing, for everything else (then unlock()).
	 */
	[[gnu::always_inline]] bool unlockFast(int target)
	{
		if (static_cast<unsigned>(target) < nTargets_ && locks_[target] != 0 &&
		    !(locks_[target] & kLockNoCheck) && targets_[target].reach != Reach::Remote &&
		    accIssued_[target] == accApplied_[target] && !anyDead()) [[likely]] {
			completeLocally();
			releaseLock(target, locks_[target] & kLockExclusive);
			closeLock(target);
			return true;
		}
		return false;
	}
	int lockAll(int assert);
	int unlockAll();
	int flush(const char *call, int target); /* also flush_local: completion is the same here */
	/*
	 * flush's common case inline: a lock_all or lock covers @target and
	 * nothing of ours is queued to it. False, having done nothing, for
	 * everything else (then flush()).
	 */
	[[gnu::always_inline]] bool flushFast(int target)
	{
		if (static_cast<unsigned>(target) < nTargets_ && (lockAll_ || locks_[target]) &&
		    accIssued_[target] == accApplied_[target] && !anyDead()) [[likely]] {
			completeLocally();
			return true;
		}
		return false;
	}
	int flushAll(const char *call);
	int sync();

	/* rput/rget: only inside a passive-target epoch that covers @target. */
	int checkRequestEpoch(const char *call, int target) const;

	/* Dynamic windows. */
	int attach(void *base, rma_aint size);
	int detach(const void *base);

	/* Collective free: checks that no epoch is open, then a barrier. */
	int free();
	/* Unmap without synchronizing (rma_finalize of windows left open). */
	void abandon();
	/* After a clean free: tell the control segment's maker this rank is done with it; the maker pools it. */
	void detachControl();
	/*
	 * Traffic statistics (RMA_STATS, stats.cpp): whether this window counts,
	 * and this rank's row (by target, then TrafficKind: ops, bytes).
	 */
	bool countsTraffic() const { return stats_; }
	const std::vector<uint64_t> &trafficRow() const { return traffic_; }
	/* Whether free() released the window although it failed (a member died). */
	bool released() const { return released_; }

	int sharedQuery(int rank, rma_aint *size, int *dispUnit, void *baseptr) const;
	void reportInfo(Info &out) const;
	int setInfo(const Info *info);

	Flavor flavor() const { return flavor_; }
	const std::shared_ptr<const Group> &group() const { return comm_->group(); }
	int rank() const { return comm_->rank(); }
	int size() const { return comm_->size(); }
	/* This rank's own window: base, size, disp_unit (as attributes). */
	void *localBase() const { return localBase_; }
	const rma_aint *localSize() const { return &localSize_; }
	const int *localDispUnit() const { return &localDispUnit_; }
	const int *flavorAttr() const { return &flavorAttr_; }
	const int *modelAttr() const { return &modelAttr_; }

	std::string name;
	std::shared_ptr<Errhandler> errhandler;
	/* Attributes the application cached (rma_win_set_attr); the predefined ones are the members above. */
	AttributeSet attributes;

	/* The stream sequence of the last request to @target on another host (request forms; see remote.h). */
	uint64_t remoteRequestSeq(int target);
	/*
	 * Fetches to other hosts issued while @f is set belong to one request:
	 * a refusal of any of them is recorded in *@f (nullptr: none).
	 */
	void remoteRequest(std::shared_ptr<RequestFailure> f);
	/*
	 * A complete request to @target up to stream sequence @seq
	 * (testAccumulate() said so): its own refusal as @call's error, or the
	 * lost link one of its replies needed, or RMA_SUCCESS. A request's
	 * refusal is reported here only (no other call to that host reports it).
	 */
	int remoteRequestResult(const char *call, int target, uint64_t seq, const RequestFailure *f);
	/*
	 * A request to @target freed before it completed (rma_request_free,
	 * or the call that made it failed): a refusal recorded in @f, or one
	 * that comes later, is reported by the next call to that host.
	 */
	void remoteRequestAbandon(int target, RequestFailure &f);
	/* Whether @target is on another host. */
	bool isRemote(int target) const
	{
		return static_cast<unsigned>(target) < nTargets_ && targets_[target].reach == Reach::Remote;
	}

private:
	friend class RemoteWindow;
	Window() = default;

	/*
	 * Traffic statistics (stats.cpp). The full paths hand over to these
	 * cold wrappers when stats_ is set: they run the operation and count it
	 * if it succeeded on a real target. At a collective free,
	 * gatherTraffic() brings every member's row to the window's rank 0,
	 * which writes the window whole into its host's file (so a window
	 * across hosts is reported on one host, without a shared file
	 * system); without one (abandon: finalize, a dead member),
	 * writeTraffic() merges this rank's own row, once.
	 */
	[[gnu::cold]] void startTraffic(uint64_t id);
	[[gnu::cold]] void countTraffic(TrafficKind kind, int target, uint64_t bytes);
	[[gnu::cold]] int accessCounted(bool put, void *origin, int ocount, rma_datatype otype, int target,
					rma_aint disp, int tcount, rma_datatype ttype);
	[[gnu::cold]] int accumulateCounted(const char *call, const AccArgs &a);
	[[gnu::cold]] void countAccumulate(const AccArgs &a);
	[[gnu::cold]] int compareAndSwapCounted(const char *call, const void *origin, const void *compare, void *result,
						rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq);
	int compareAndSwapBody(const char *call, const void *origin, const void *compare, void *result,
			       rma_datatype type, int target, rma_aint disp, uint64_t *queuedSeq);
	[[gnu::cold]] void writeTraffic(const std::vector<uint64_t> *all = nullptr);
	[[gnu::cold]] int gatherTraffic();

	int build(int status, void *base, rma_aint size, int dispUnit);
	int barrier(const char *call);
	int checkAccess(const char *call, int target);
	/*
	 * Wait until @ready() holds, watching @peer (or, if -1, every member) for
	 * death; @watch() (an error code) is asked at the same rate, for what
	 * else the wait depends on. @peer may also be kBlockedByExclusive or
	 * kBlockedByAny: a lock wait, which fails only for a dead rank whose
	 * lock activity can block it (deadLockBlocker(), at the same rate).
	 */
	static constexpr int kBlockedByExclusive = -2; /* blocked only by exclusive lockers (shared lock, lock_all) */
	static constexpr int kBlockedByAny = -3;       /* blocked by any lock holder (exclusive lock) */
	template<typename Ready, typename Watch>
	int waitUntil(const char *call, const char *what, int peer, Ready &&ready, Watch &&watch);
	template<typename Ready>
	int waitUntil(const char *call, const char *what, int peer, Ready &&ready)
	{
		return waitUntil(call, what, peer, static_cast<Ready &&>(ready), [] { return RMA_SUCCESS; });
	}
	int checkAlive(const char *call, const char *what, int peer);
	/*
	 * A lock wait (@blockers: kBlockedByExclusive or kBlockedByAny):
	 * RMA_ERR_PROC_FAILED naming the first dead rank whose lock activity
	 * (RankSlot::lockActivity) may be what blocks it, else
	 * RMA_SUCCESS. A dead rank that held no lock does not fail the wait.
	 * On a window spanning hosts, any dead rank does (a server holds locks
	 * for its remote origins that no slot counts).
	 */
	[[gnu::cold]] int deadLockBlocker(const char *call, const char *what, int blockers) const;
	/*
	 * The first dead rank whose lock activity may block a lock wait of
	 * kind @blockers, or -1. @thisHost: only ranks of this host (a host
	 * server judging a remote origin's parked LOCK; remote origins' own
	 * locks end with their connections), and no rule for spanning windows.
	 */
	[[gnu::cold]] int deadLockHolder(int blockers, bool thisHost) const;
	/* This rank's lock activity words (RankSlot): raised before a lock is taken, lowered after release. */
	/*
	 * Take @target's lock word for an exclusive lock if it is free, then look
	 * for lock_all holders: a Dekker pair with lockAll(), which counts itself
	 * in the global word and then looks at every target's word. Both sides
	 * are seq_cst (a locked instruction, then a load), so at least one of
	 * them sees the other and backs off. The CAS also acquires the last
	 * holder's release; the load of the global word acquires the release of
	 * the last unlock_all.
	 */
	[[gnu::always_inline]] bool tryTakeExclusive(int target)
	{
		std::atomic<uint64_t> &word = slots_[target].lock;
		uint64_t v = 0;
		const uint64_t holder = myHolder_; /* no load chain (comm_ -> rank) before the compare-exchange */
		if (!word.compare_exchange_strong(v, holder, std::memory_order_seq_cst, std::memory_order_relaxed))
			return false;
		if ((globalLocks_->word.load(std::memory_order_seq_cst) & lockword::kLockAllMask) == 0) [[likely]] {
			noteExclusiveGrant(slots_[target].grants);
			return true;
		}
		/* A lock_all epoch is open: give the word back (nothing was published under it). Release: as in releaseLock(). */
		word.store(0, std::memory_order_release);
		return false;
	}
	/*
	 * Count a shared holder in @target's word if no exclusive holder has it.
	 * Acquire: pairs with the release store in releaseLock() of the last
	 * exclusive holder. One try: a CAS lost to another shared locker is the
	 * slow path's to retry (acquireLock()).
	 */
	[[gnu::always_inline]] bool tryTakeShared(int target)
	{
		std::atomic<uint64_t> &word = slots_[target].lock;
		uint64_t v = word.load(std::memory_order_relaxed);
		return (v & lockword::kHolderMask) == 0 &&
		       word.compare_exchange_strong(v, v + lockword::kShared, std::memory_order_acquire,
						    std::memory_order_relaxed);
	}
	/* Release @target's lock word (exclusive: we are its only writer). */
	[[gnu::always_inline]] void releaseLock(int target, bool exclusive)
	{
		std::atomic<uint64_t> &word = slots_[target].lock;
		if (!exclusive) {
			/* Release: publishes this holder's RMA stores to the next exclusive holder's acquiring CAS. */
			word.fetch_sub(lockword::kShared, std::memory_order_release);
		} else {
			/*
			 * While we hold it nobody else writes the word (every other CAS
			 * expects a free holder field, lock_all only reads it), so a plain
			 * store frees it. Release: publishes our RMA stores to the next
			 * holder's acquiring CAS and to lock_all's scan.
			 */
			word.store(0, std::memory_order_release);
		}
		noteLockActivity(exclusive, -1);
	}
	/* The epoch bookkeeping of a lock taken (@bits: LockBits) and of one that ends. */
	[[gnu::always_inline]] void openLock(int target, uint8_t bits)
	{
		fenceEpoch_ = false;
		allAccess_ = false;
		locks_[target] = bits;
		access_[target] = 1;
		++locksHeld_;
		crossProcessEdge();
	}
	[[gnu::always_inline]] void closeLock(int target)
	{
		locks_[target] = 0;
		access_[target] = 0;
		--locksHeld_;
	}
	[[gnu::always_inline]] void noteLockActivity(bool exclusive, int delta)
	{
		std::atomic<uint32_t> &w = mySlot_->lockActivity;
		const uint32_t unit = exclusive ? lockactivity::kExclusive : lockactivity::kShared;
		/* Relaxed, not a locked RMW: only this thread writes it (see RankSlot). */
		w.store(w.load(std::memory_order_relaxed) + unit * static_cast<uint32_t>(delta), std::memory_order_relaxed);
	}
	/*
	 * A wait for @target's ring (a record applied, room, the consumer role):
	 * RMA_ERR_PROC_FAILED if a host agent holds the ring's consumer role and
	 * its process has died (it never gives the role back), else RMA_SUCCESS.
	 * Slow path: waitUntil()'s @watch.
	 */
	[[gnu::cold]] int checkRingHolder(const char *call, const char *what, int target);
	/*
	 * Failure detection (the launcher's job status page, see
	 * bootstrap/job_status.h). anyDead() is the data path's check: one
	 * relaxed load of a line that nobody writes until a rank dies (a stale
	 * 0 only delays detection by a store's propagation time).
	 */
	bool anyDead() const { return deadCount_->load(std::memory_order_relaxed) != 0; }
	/* Whether window rank @peer is known dead (launcher's page, or its pid gone). */
	bool peerDead(int peer) const;
	/* RMA_ERR_PROC_FAILED naming @peer if it is dead, else RMA_SUCCESS. */
	[[gnu::cold]] int deadTarget(const char *call, int peer) const;
	/* The same for the first dead rank among @peers (all members if empty). */
	[[gnu::cold]] int deadAmong(const char *call, const std::vector<int> *peers) const;
	/* Whether some member is dead (then rma_win_free releases without synchronizing). */
	bool memberDead() const;
	int acquireLock(const char *call, int target, bool exclusive);
	int takeLockAll(const char *call);
	/*
	 * This host's part of a lock_all: count it in the global word once no
	 * exclusive locker waits (phase-fair, @watch) and no target is held
	 * exclusively. @wait: wait for that (RMA_ERR_PROC_FAILED if a dead
	 * rank blocks it); else one try, @granted false if it must wait
	 * (nothing held then). @granted true: counted.
	 */
	int takeLocalLockAll(const char *call, GrantWatch &watch, bool wait, bool &granted);
	/* The sum of every target's exclusive grants (RankSlot::grants): what lock_all's GrantWatch watches. */
	[[gnu::cold]] uint64_t grantsOnThisHost() const;
	/* Give back this host's part of a lock_all (not RMA_MODE_NOCHECK). */
	void releaseGlobalLockAll()
	{
		/* Release: pairs with the acquire of exclusive lockers waiting for lock_all holders. */
		globalLocks_->word.fetch_sub(lockword::kLockAll, std::memory_order_release);
		noteLockActivity(false, -1);
	}
	int translateGroup(const char *call, const Group &group, std::vector<int> &out) const;
	/* Order this process's RMA stores before the synchronization that follows. */
	void completeLocally()
	{
		/* memcpy may have used non-temporal stores: they are ordered only by sfence. */
		if (pendingStores_) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_sfence();
#endif
		}
		/* Keep the compiler from sinking earlier stores below the synchronization that follows. */
		std::atomic_thread_fence(std::memory_order_release);
		pendingOps_ = false;
		pendingStores_ = false;
	}
	bool passiveOrPscwOpen() const { return locksHeld_ > 0 || lockAll_ != 0 || started_ || exposed_; }
	std::string describeEpochs() const;
	[[gnu::cold]] int missingEpoch(const char *call, const char *needed) const;
	int checkCanOpen(const char *call, bool conflict) const;
	uint32_t *postedRow(int origin) const { return pscwPosted_ + static_cast<size_t>(origin) * pscwRow_; }
	uint32_t *completedRow(int target) const { return pscwCompleted_ + static_cast<size_t>(target) * pscwRow_; }
	int checkTarget(const char *call, int target, rma_aint disp, Footprint fp, TargetView &view);
	/* @map false: never map a segment here (another thread's use: the view is Process, or Direct for our own rank). */
	int resolveDynamic(const char *call, int target, rma_aint disp, Footprint fp, TargetView &view, bool map = true);
	int transfer(const char *call, const TargetView &view, void *origin, const Datatype &otype, int ocount,
		     const Datatype &ttype, int tcount, rma_count bytes, bool toTarget);
	template<bool Put>
	int fullAccess(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		       rma_datatype ttype);
	void publishAttachTable(AttachTable &table, const std::vector<AttachEntry> &entries, uint32_t from);
	/* This rank's attached regions (dynamic windows), sorted by base: what attach_[rank] publishes. */
	std::vector<AttachEntry> attached_;

	/* Accumulates (accumulate.cpp). */
	int setUpAccumulates(const char *call, std::byte *control, const std::vector<uint8_t> &locked, bool plainCapable);
	void applyRecord(int target, const MpscRecord &record);
	int startServing();
	void stopServing();
	/* Agent mode: publish / withdraw this rank's ring in the host's served directory. */
	int publishRing();
	void withdrawRing();
	bool ringPending(int target) const;
	uint64_t accDoneOf(int target);
	std::atomic<uint64_t> &doneWord(int target, int origin) const
	{
		return reinterpret_cast<std::atomic<uint64_t> *>(accDone_ + static_cast<size_t>(target) * accDoneRow_)[origin];
	}
	void collectFetches(int target, uint64_t done);
	/* -1: every target; @remote false: not those on other hosts (fence completes them by its FENCE frames). */
	int completeAccumulates(const char *call, int target, bool remote = true);
	/* Every target's (completeAccumulates(-1)); a failed one (RMA_ERR_PROC_FAILED) does not stop the others. */
	int completeAllAccumulates(const char *call, bool remote);
	/* Whether every accumulate this origin issued has been applied (then completeAllAccumulates() has nothing to do). */
	bool allAccumulatesApplied() const
	{
		const std::size_t n = accIssued_.size();
		for (std::size_t r = 0; r < n; ++r)
			if (accApplied_[r] != accIssued_[r])
				return false;
		return true;
	}
	/* The epoch-closing calls' slow paths when completion fails (sync.cpp, window_ops.cpp). */
	[[gnu::cold]] int unlockFailed(int target, int rc);
	[[gnu::cold]] int unlockAllFailed(int rc);
	[[gnu::cold]] int fenceFailed(int assert, int rc);
	void ringDoorbell(int target);
	int reserveReply(const char *call, size_t bytes, size_t &offset);
	int queueRecord(const char *call, int target, uint32_t kind, const AccRecord &h, const TypeNode *runs,
			const std::byte *data, size_t dataBytes);
	int queueAccumulate(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			    const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes);
	int lockedApply(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes);
	int applyByOrigin(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem,
			  const Datatype &td, const Datatype *od, const Datatype *rd, rma_count bytes);
	int lockApply(const char *call, int target);
	/* An accumulate-family operation of an origin on another host (server thread; see accumulate.cpp). */
	int applyRemote(int t, int origin, bool cas, Op op, uint8_t elem, const TypeNode *nodes, size_t nnodes,
			rma_aint extent, rma_count count, rma_aint offset, const std::byte *data, std::byte *old,
			uint64_t bytes, bool &busy);
	[[gnu::cold]] int remoteRingBusy(int target, bool &busy, bool applyLock = false);
	int enterPlain(const char *call, int target);
	void leavePlain(int target);
	void endExpiredLease(int target);
	enum class InPlace { Done, Busy };
	int applyInPlace(const char *call, const AccArgs &a, const TargetView &view, Op op, uint8_t elem, size_t n,
			 InPlace &outcome);
	/* inPlaceFast()'s apply (applyInPlace()'s steady state). */
	[[gnu::noinline]] bool applyLeased(int t, Op op, uint8_t elem, std::byte *addr, const void *origin, void *result,
					   size_t n);
	[[gnu::always_inline]] inline void applyHoldingRole(int t, Op op, uint8_t elem, std::byte *addr,
							    const void *origin, void *result, size_t n, bool renew);
	void unlockApply(int target);

	Flavor flavor_ = Flavor::Create;
	std::shared_ptr<Comm> comm_;
	/* Members on other hosts (win/remote.h); nullptr for a window on one host. */
	std::unique_ptr<RemoteWindow> remote_;

	bool stats_ = false;             /* RMA_STATS: count operations (the fast paths step aside) */
	uint64_t statsId_ = 0;           /* the same at every member, unique in the job */
	std::vector<uint64_t> traffic_;  /* per target x TrafficKind: ops, bytes (stats_ only) */
	const std::atomic<uint64_t> *deadCount_ = &kNoDeaths;
	bool released_ = false;
	uint64_t ringCheckNs_ = 0; /* remoteRingBusy()'s last look (the server thread's) */
	WindowHints hints_;
	LocalMemory local_;

	std::vector<TargetView> targets_;
	uint32_t nTargets_ = 0; /* targets_.size(), without the divide */
	Segment own_;                  /* memory this rank created (allocate, shared rank 0) */
	std::vector<Segment> mapped_;  /* peers' segments mapped here */
	Segment control_;
	bool poolControl_ = false; /* this rank made control_ and keeps its fd to reuse it (ControlPool) */
	GlobalLocks *globalLocks_ = nullptr;
	RankSlot *slots_ = nullptr;
	RankSlot *mySlot_ = nullptr; /* &slots_[rank()] */
	uint64_t myHolder_ = 0;      /* (rank() + 1) << lockword::kHolderShift: this rank as an exclusive holder */
	uint32_t *pscwPosted_ = nullptr;
	uint32_t *pscwCompleted_ = nullptr;
	size_t pscwRow_ = 0;            /* uint32 counters per PSCW row */
	AttachTable *attach_ = nullptr; /* dynamic: every rank's table */

	/* Accumulates: shared words (control.h) and this origin's bookkeeping. */
	AccTargetLine *accLines_ = nullptr;
	std::byte *accDone_ = nullptr;
	size_t accDoneRow_ = 0;
	std::byte *accReplies_ = nullptr;
	std::vector<MpscRing> rings_;          /* per target */
	std::vector<uint8_t> accLocked_;       /* per target: path 3 (apply lock) */
	std::vector<uint8_t> accFast_;         /* per target: path 1 allowed (Direct, not locked, not forced to the ring) */
	std::vector<uint8_t> accInPlace_;      /* per target: in-place applies allowed (Direct, not locked, RMA_ACC_PATH auto, plain mode possible) */
	bool pathAuto_ = true;                 /* RMA_ACC_PATH is auto (read once, at creation) */
	std::vector<uint64_t> accIssued_;      /* per target: last sequence number queued */
	std::vector<uint64_t> accApplied_;     /* per target: known applied and collected */
	AccArea acc_;                          /* the consumer's view of the same (drainRing) */
	std::vector<int> served_;              /* targets whose rings this process's thread drains */
	/*
	 * Agent mode: what this rank publishes in the host's served directory
	 * (where its memory and the control segment can be opened from: the
	 * processes that keep their descriptors open), filled at creation, and
	 * its entry there (-1: none).
	 */
	ServedTarget ringHome_;
	int servedEntry_ = -1;
	std::vector<Doorbell *> servers_;      /* per target: the doorbell of its ring's server, or empty */
	bool orderingNone_ = false;
	bool plainCapable_ = false;            /* every member registered for membarrier(): plain mode works */
	bool noPlainMode_ = false;             /* membarrier() failed here after all: no in-place applies */
	std::atomic<uint32_t> *myFastOp_ = nullptr;
	/* Ring-only window: consumers apply plainly. Fixed at creation (agent threads read it). */
	bool plainApply_ = false;
	bool serving_ = false;                 /* a source of localAgent() */
	/* Where fetched values go once applied. */
	struct FetchDest {
		void *result = nullptr;
		std::shared_ptr<Datatype> type;
		int count = 0;
		std::vector<std::byte> packed; /* non-contiguous result types: unpacked at the end */
		int chunksLeft = 0;
	};
	struct PendingFetch {
		int target;
		uint64_t seq;
		size_t replyOffset;
		size_t bytes;
		size_t streamOffset;
		std::byte *direct;              /* contiguous result buffer (no dest) */
		std::shared_ptr<FetchDest> dest; /* non-contiguous result type */
	};
	std::vector<PendingFetch> fetches_;
	size_t replyUsed_ = 0;

	/* Dynamic windows: peers' rma_alloc_mem segments mapped on first use. */
	struct DynamicMapping {
		uint64_t inode;
		Segment segment;
	};
	std::map<std::pair<int, uint64_t>, DynamicMapping> dynamicMaps_;

	/*
	 * Epoch state of this process on this window. Access: every target
	 * (allAccess_: a fence epoch or lock_all) or some (access_[t]: a lock
	 * or a PSCW start). Exposure: a PSCW post.
	 */
	enum LockBits : uint8_t { kLockShared = 1, kLockExclusive = 2, kLockNoCheck = 4 };
	bool allAccess_ = false;
	bool fenceEpoch_ = false;     /* a fence opened an epoch (no NOSUCCEED) */
	std::vector<uint8_t> access_; /* per target */
	std::vector<uint8_t> locks_;  /* per target: LockBits */
	int locksHeld_ = 0;
	uint8_t lockAll_ = 0;         /* 0, or kLockShared | (kLockNoCheck) */
	bool started_ = false;
	std::vector<int> startGroup_;
	std::vector<uint32_t> postsConsumed_;     /* per target: posts matched by our starts */
	bool exposed_ = false;
	std::vector<int> postGroup_;
	std::vector<uint32_t> completesExpected_; /* per origin */
	std::vector<uint32_t> completesSent_;     /* per target on another host: our completes to it */
	/*
	 * memcpy may switch to non-temporal stores for large copies, and
	 * those are ordered only by an sfence; glibc never does so below
	 * 16 KiB, so smaller puts spare completion the sfence.
	 */
	static constexpr size_t kNonTemporalBytes = 16 << 10;
	bool pendingOps_ = false;    /* operations issued since the last synchronization */
	bool pendingStores_ = false; /* some of them may have used non-temporal stores */
	uint64_t barriers_ = 0;

	void *localBase_ = nullptr;
	rma_aint localSize_ = 0;
	int localDispUnit_ = 1;
	int flavorAttr_ = 0;
	int modelAttr_ = RMA_WIN_UNIFIED;
};

/* RMA_ACC_PATH=ring in the environment: windows default to rma_accumulate_path=ring. */
bool accumulateRingByDefault();
/* Whether this process is registered for membarrier(GLOBAL_EXPEDITED) (registers on first call). */
bool membarrierReady();

/*
 * Drop the control segments kept for reuse by the windows this process made
 * (rma_finalize: nothing stays reserved past it). Thread-safe.
 */
void releaseControlPool();

/*
 * Constant-initialized, so the per-call lookup has no guard to test; flat
 * (handle_table.h), so it has no chunk to load either: 64 Ki windows at
 * most (MPICH allows 2 Ki communicators), 2 MiB of .bss of which a process
 * touches a page per 128 windows.
 */
using WindowTable = HandleTable<Window, HandleKind::Win, 65536>;
inline constinit WindowTable gWindowTable;

inline WindowTable &windowTable()
{
	return gWindowTable;
}

/* The window behind a handle, or nullptr. */
inline Window *toWindow(rma_win handle)
{
	return windowTable().lookup(reinterpret_cast<uintptr_t>(handle));
}

/*
 * Spin (then yield) until @ready() holds. Once the wait is long (past the
 * spinning phase) the ranks that could release it are checked for death
 * every 1024 rounds: @peer, or every member if @peer is -1, or the
 * members whose lock activity may block a lock wait (kBlockedBy*), and then
 * @watch(). This is the slow path only; a wait that ends while spinning
 * makes no system call.
 */
template<typename Ready, typename Watch>
inline int Window::waitUntil(const char *call, const char *what, int peer, Ready &&ready, Watch &&watch)
{
	for (SpinWait wait; !ready(); wait.once()) {
		if (anyDead()) [[unlikely]] {
			if (peer >= 0) {
				RMA_TRY(deadTarget(call, peer));
			} else if (peer == -1) {
				RMA_TRY(deadAmong(call, nullptr));
			}
			/* A lock wait goes on past harmless deaths: it looks below, now and then. */
		}
		if (wait.count() < SpinWait::kSpins || (wait.count() & 0x3ff) != 0)
			continue;
		if (peer >= 0) {
			RMA_TRY(checkAlive(call, what, peer));
		} else if (peer < -1) {
			RMA_TRY(deadLockBlocker(call, what, peer));
		} else {
			for (int r = 0; r < size(); ++r)
				if (r != rank())
					RMA_TRY(checkAlive(call, what, r));
		}
		RMA_TRY(watch());
	}
	return RMA_SUCCESS;
}

} /* namespace librma */
