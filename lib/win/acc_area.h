/* SPDX-License-Identifier: MIT */
/*
 * AccArea: one process's view of a window's accumulate area (control.h) and
 * of its targets' memory, and what the holder of a ring's consumer role
 * does with it: take the role, apply the queued records, publish each
 * record's completion, end an expired plain-mode lease, give the role back.
 *
 * Two kinds of process drain rings, and both use this one code: the
 * window's members (origins completing their operations, and each rank's
 * own progress thread in thread mode) through their Window, and the host's
 * agents (agent mode, win/agent_service.h), which map the control segment
 * and the target memory of windows whose communicator may not include
 * them. Memory orderings are stated where each atomic is used
 * (accumulate.cpp).
 *
 * Thread safety: the consumer role serializes drain() and applyRecord() of
 * one target across every thread and process; the view itself is set up
 * once and then only read.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "progress/mpsc_ring.h"
#include "win/control.h"

namespace librma {

struct AccArea {
	AccTargetLine *lines = nullptr; /* per target */
	std::byte *done = nullptr;      /* done[t][o] rows */
	std::size_t doneRow = 0;        /* bytes per row */
	std::byte *replies = nullptr;   /* per origin: kAccReplyBytes */
	MpscRing *rings = nullptr;      /* per target, in this process */
	/* Ring-only window: every record is applied with plain loads and stores. */
	bool plainApply = false;

	/* Point the view at @control (a mapped control segment of @nranks). Rings are the caller's. */
	void attach(std::byte *control, uint32_t nranks, bool dynamicLayout)
	{
		const ControlLayout layout(nranks, dynamicLayout);
		lines = reinterpret_cast<AccTargetLine *>(control + layout.accLines);
		done = control + layout.accDone;
		doneRow = layout.accDoneRow;
		replies = control + layout.accReplies;
	}

	std::atomic<uint64_t> &doneWord(int target, int origin) const
	{
		return reinterpret_cast<std::atomic<uint64_t> *>(done + static_cast<std::size_t>(target) * doneRow)[origin];
	}

	/*
	 * Take @target's consumer role as @holder (non-zero; a window rank + 1,
	 * or agentHolder(pid)), apply up to a batch of its records to the memory at
	 * @base (the target's window memory in this process), give the role
	 * back. Returns the records applied; 0 if the ring was empty or another
	 * holder has the role.
	 */
	int drain(int target, uint64_t holder, std::byte *base) noexcept;

	/*
	 * Take @target's consumer role as @holder (non-zero) if nobody holds it;
	 * false, having done nothing, if someone does. Every applier takes the
	 * role this way (or in a wait around it) and gives it back with
	 * giveBackRole().
	 */
	bool tryTakeRole(int target, uint64_t holder) noexcept
	{
		std::atomic<uint64_t> &consumer = lines[target].consumer;
		uint64_t free = 0;
		/*
		 * A relaxed look first: no read-for-ownership of a held line.
		 * Acquire: pairs with the release in giveBackRole() of the previous
		 * holder (any process); hands over the ring's head and what it applied.
		 */
		return consumer.load(std::memory_order_relaxed) == 0 &&
		       consumer.compare_exchange_strong(free, holder, std::memory_order_acquire, std::memory_order_relaxed);
	}
	/* Give @target's consumer role back. Release: pairs with tryTakeRole()'s acquire; our applies come first. */
	void giveBackRole(int target) noexcept { lines[target].consumer.store(0, std::memory_order_release); }

	/* Apply one record to @target's memory at @base; the consumer role is held. */
	void applyRecord(int target, const MpscRecord &record, std::byte *base) noexcept;

	/* The consumer role is held: end plain mode on @target if its lease ran out. */
	void endExpiredLease(int target) noexcept;
	/* End plain mode on @target (the role is held). */
	void leavePlain(int target) noexcept;
};

/*
 * Consumer-role holder ids (AccTargetLine::consumer): a window member is
 * its window rank + 1 (below 2^31: ranks are ints); a host agent is
 * kAgentHolder | its process id, so that an origin that finds a ring's
 * role held by an agent can tell which process to watch (hostAgentDead(),
 * core.h): an agent that dies holding it never gives it back. Pids are
 * positive and at most PID_MAX_LIMIT (2^22) on Linux, so they fit the low
 * 32 bits, and bit 32 keeps every agent id apart from every member id.
 */
inline constexpr uint64_t kAgentHolder = uint64_t(1) << 32;
static_assert(kAgentHolder > uint64_t(INT32_MAX) + 1, "member ids (rank + 1) stay below the agent bit");

/* The holder id of the agent in process @pid. */
inline constexpr uint64_t agentHolder(int32_t pid)
{
	return kAgentHolder | static_cast<uint32_t>(pid);
}

/* Whether @holder (a non-zero consumer word) is an agent's id. */
inline constexpr bool isAgentHolder(uint64_t holder)
{
	return (holder & kAgentHolder) != 0;
}

/* The process id in an agent's holder id. */
inline constexpr int32_t agentHolderPid(uint64_t holder)
{
	return static_cast<int32_t>(static_cast<uint32_t>(holder));
}

} /* namespace librma */
