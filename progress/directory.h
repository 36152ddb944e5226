/* SPDX-License-Identifier: MIT */
/*
 * ServedDirectory: the host's list of accumulate rings that progress agents
 * serve, in shared memory every process of the host maps (the runtime
 * keeps it after the doorbells in the host segment, lib/core).
 *
 * In agent mode (RMA_PROGRESS=agent) a host runs one agent per NUMA node,
 * each a thread inside one rank's process, and that agent must drain the
 * rings of every window whose target memory is on its node, whether or not
 * its process is a member of the window. So each target rank *publishes*
 * its ring here: which process holds the descriptors of the window's
 * control segment and of its memory (the agent opens them through
 * /proc/PID/fd/N and checks their inodes), where its memory sits in them,
 * its window rank and NUMA node. The agent of that node finds the entry,
 * maps what it names, and drains the ring from then on; when the window is
 * freed the owner withdraws the entry and the agent drops its mappings.
 * The directory knows nothing about windows: a payload of numbers.
 *
 * Each entry is a sequence lock written by one owner at a time:
 *   state word: 0 free; odd: being written or withdrawn; even > 0: valid.
 *   claim:     CAS state 0 -> 1 (acquire: nothing of a previous owner's
 *              use can be reordered after the claim), fence(release),
 *              then the payload.
 *   publish:   state = 2 * generation (release), after the payload (relaxed
 *              atomic stores): readers that see it see the payload.
 *   withdraw:  state = 1 (relaxed), then 0 (release); a reader whose copy
 *              straddled it, or the next owner's rewrite, sees S2 != S1.
 * Readers (agents) copy an entry between two loads of its state:
 *   S1 = state (acquire), copy the payload (relaxed loads), fence(acquire),
 *   S2 = state (relaxed): S1 == S2, even and non-zero -> a consistent copy
 *   of a published entry (the classic seqlock pair: the writer's release
 *   fence after its claim pairs with the reader's acquire fence when a
 *   payload load sees a newer store, and then S2 sees the claim).
 * `changes` counts publishes and withdrawals (release, after the entry's
 * state): an agent polls it with one load per pass (acquire) and rescans
 * the table only when it moved, so an idle agent pays one load here.
 * Generations make a reused entry distinct: the same index with a new
 * state value is a different target.
 *
 * Thread and process safety: every function may be called concurrently
 * from any process mapping the directory. Control path only (window
 * creation and free, and an agent's rescan); never on an RMA operation.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/cache.h"

namespace librma {

/* What a target publishes (plain numbers; see the header comment). */
struct ServedTarget {
	uint64_t window = 0;       /* the window's id, the same at every member (diagnostics) */
	int32_t controlPid = 0;    /* the process holding the control segment's descriptor */
	int32_t controlFd = -1;    /* the window's control segment, in @controlPid */
	uint64_t controlDev = 0;   /* its memfd's st_dev and st_ino, checked after opening */
	uint64_t controlIno = 0;
	uint64_t controlBytes = 0; /* to map */
	int32_t memoryPid = 0;     /* the process holding the memory's descriptor */
	int32_t memoryFd = -1;     /* the segment holding the target's window memory, in @memoryPid */
	uint32_t memoryHuge = 0;   /* 1: a hugetlb memfd */
	uint32_t reserved = 0;
	uint64_t memoryDev = 0;
	uint64_t memoryIno = 0;
	uint64_t memoryBytes = 0;  /* to map */
	uint64_t memoryOffset = 0; /* of the window memory in that segment */
	uint64_t memorySize = 0;   /* of the window memory */
	int32_t target = 0;        /* window rank */
	int32_t nranks = 0;        /* window size */
	int32_t node = -1;         /* NUMA node of the memory; -1: none (interleaved, unbound) */
	uint32_t flags = 0;        /* kServedDynamicLayout | kServedPlainApply */
};

inline constexpr uint32_t kServedDynamicLayout = 1; /* the control layout of a dynamic window */
inline constexpr uint32_t kServedPlainApply = 2;    /* ring-only window: records applied with plain stores */

/* One entry: a state word and the payload as relaxed atomics (seqlock). */
struct alignas(kFalseSharingPad) ServedEntry {
	static constexpr std::size_t kWords = (sizeof(ServedTarget) + 7) / 8;
	std::atomic<uint64_t> state;
	std::atomic<uint64_t> words[kWords];
};
static_assert(sizeof(ServedEntry) % kFalseSharingPad == 0);

struct alignas(kFalseSharingPad) ServedDirectoryHeader {
	std::atomic<uint64_t> changes;    /* publishes + withdrawals */
	std::atomic<uint64_t> generation; /* source of entry generations */
};

class ServedDirectory
{
public:
	/* Entries a host's directory holds: targets of live windows on the host. */
	static constexpr uint32_t kEntries = 4096;

	/* Bytes of shared memory for a directory (zero-filled memory is an empty one). */
	static constexpr std::size_t bytes() { return sizeof(ServedDirectoryHeader) + kEntries * sizeof(ServedEntry); }

	ServedDirectory() = default;
	/* Over @mem: bytes() of zero-filled (or already used) shared memory, line aligned. */
	explicit ServedDirectory(void *mem)
		: header_(static_cast<ServedDirectoryHeader *>(mem)),
		  entries_(reinterpret_cast<ServedEntry *>(static_cast<std::byte *>(mem) + sizeof(ServedDirectoryHeader)))
	{
	}
	bool valid() const { return header_ != nullptr; }

	/*
	 * Publish @t in a free entry; returns its index, or -1 when every
	 * entry is taken (the caller's ring then goes unserved by the agents:
	 * its origins drain it, which is always correct).
	 */
	int publish(const ServedTarget &t) noexcept;

	/* Withdraw the entry publish() returned. Only its publisher may. */
	void withdraw(int index) noexcept;

	/* The change counter (acquire): rescan when it moved. */
	uint64_t changes() const noexcept { return header_->changes.load(std::memory_order_acquire); }

	/*
	 * A consistent copy of entry @index if it is published: true, with
	 * @out and its @state (generation: equal states mean the same
	 * publication). False when free or changing.
	 */
	bool read(int index, ServedTarget &out, uint64_t &state) const noexcept;

	/* The entry's state now (acquire): whether a copy read earlier is still current. */
	uint64_t state(int index) const noexcept { return entries_[index].state.load(std::memory_order_acquire); }

private:
	ServedDirectoryHeader *header_ = nullptr;
	ServedEntry *entries_ = nullptr;
};

} /* namespace librma */
