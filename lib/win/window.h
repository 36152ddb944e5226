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
 * A future inter-host transport adds a fourth way behind the same branch.
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
#include "datatype/datatype.h"
#include "numa/topology.h"
#include "shm/segment.h"
#include "win/control.h"

namespace librma {

enum class Flavor {
	Create = RMA_WIN_FLAVOR_CREATE,
	Allocate = RMA_WIN_FLAVOR_ALLOCATE,
	Dynamic = RMA_WIN_FLAVOR_DYNAMIC,
	Shared = RMA_WIN_FLAVOR_SHARED,
};

enum class Reach : uint8_t { None, Direct, Process, Dynamic };

/* How this process reaches one member's window memory. */
struct TargetView {
	std::byte *base = nullptr; /* Direct: where it is mapped in this process */
	rma_aint size = 0;
	int dispUnit = 1;
	Reach reach = Reach::None;
	pid_t pid = 0;
	uint64_t remoteBase = 0; /* the owner's address of its memory */
};

/* The hints of a window (info keys), validated. */
struct WindowHints {
	bool noLocks = false;
	std::string accumulateOrdering = "rar,raw,war,waw";
	std::string accumulateOps = "same_op_no_op";
	long long accumulateGranularity = 0;
	bool sameSize = false;
	bool sameDispUnit = false;
	bool allocSharedNoncontig = false;
	HugePages hugePages = HugePages::Prefer;
	Placement placement;

	/* Read the keys of @info over the current values; RMA_ERR_INFO_VALUE on a bad value. */
	int parse(const char *call, const Info *info);
};

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
	 * Data path: put (Put = true) or get. The inline part takes the common
	 * case (open fence epoch, the same predefined type and count on both
	 * sides, a Direct target, in bounds) straight to memcpy; everything
	 * else, and every error, goes through put()/get(), which check and
	 * report in full.
	 */
	template<bool Put>
	int access(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		   rma_datatype ttype)
	{
		if (fenceEpoch_ && otype == ttype && ocount == tcount &&
		    static_cast<size_t>(static_cast<unsigned>(target)) < targets_.size()) [[likely]] {
			const Datatype *type = predefinedDatatype(otype);
			const TargetView &t = targets_[target];
			rma_aint offset;
			rma_aint end;
			if (type && t.reach == Reach::Direct && ocount >= 0 && disp >= 0 &&
			    !__builtin_mul_overflow(disp, static_cast<rma_aint>(t.dispUnit), &offset) &&
			    !__builtin_add_overflow(offset, static_cast<rma_aint>(ocount) * type->size, &end) &&
			    end <= t.size) [[likely]] {
				size_t bytes = static_cast<size_t>(ocount) * static_cast<size_t>(type->size);
				if constexpr (Put)
					std::memcpy(t.base + offset, origin, bytes);
				else
					std::memcpy(origin, t.base + offset, bytes);
				pendingOps_ = true;
				if constexpr (Put)
					pendingStores_ = true;
				return RMA_SUCCESS;
			}
		}
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

	/* Synchronization. */
	int fence(int assert);
	int sync();

	/* Dynamic windows. */
	int attach(void *base, rma_aint size);
	int detach(const void *base);

	/* Collective free: checks that no epoch is open, then a barrier. */
	int free();
	/* Unmap without synchronizing (rma_finalize of windows left open). */
	void abandon();

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

private:
	Window() = default;

	int build(int status, void *base, rma_aint size, int dispUnit);
	int barrier(const char *call);
	int checkAccess(const char *call, int target);
	int checkTarget(const char *call, int target, rma_aint disp, rma_count footprint, TargetView &view);
	int resolveDynamic(const char *call, int target, rma_aint disp, rma_count footprint, TargetView &view);
	int transfer(const char *call, const TargetView &view, void *origin, rma_count bytes, bool toTarget);
	template<bool Put>
	int fullAccess(void *origin, int ocount, rma_datatype otype, int target, rma_aint disp, int tcount,
		       rma_datatype ttype);
	void writeAttachEntry(AttachTable &table, uint32_t index, const AttachEntry &entry, uint32_t newCount);

	Flavor flavor_ = Flavor::Create;
	std::shared_ptr<Comm> comm_;
	WindowHints hints_;
	LocalMemory local_;

	std::vector<TargetView> targets_;
	Segment own_;                  /* memory this rank created (allocate, shared rank 0) */
	std::vector<Segment> mapped_;  /* peers' segments mapped here */
	Segment control_;
	RankSlot *slots_ = nullptr;
	AttachTable *attach_ = nullptr; /* dynamic: every rank's table */

	/* Dynamic windows: peers' rma_alloc_mem segments mapped on first use. */
	struct DynamicMapping {
		uint64_t inode;
		Segment segment;
	};
	std::map<std::pair<int, uint64_t>, DynamicMapping> dynamicMaps_;

	/* Epoch state (fence only so far). */
	bool fenceEpoch_ = false;   /* a fence opened an access/exposure epoch */
	bool pendingOps_ = false;   /* operations issued since the last synchronization */
	bool pendingStores_ = false; /* some of them stored through memcpy */
	uint64_t barriers_ = 0;

	void *localBase_ = nullptr;
	rma_aint localSize_ = 0;
	int localDispUnit_ = 1;
	int flavorAttr_ = 0;
	int modelAttr_ = RMA_WIN_UNIFIED;
};

inline HandleTable<Window, HandleKind::Win> &windowTable()
{
	static HandleTable<Window, HandleKind::Win> table;
	return table;
}

/* The window behind a handle, or nullptr. */
inline Window *toWindow(rma_win handle)
{
	return windowTable().lookup(reinterpret_cast<uintptr_t>(handle));
}

} /* namespace librma */
