/* SPDX-License-Identifier: MIT */
/*
 * The window control segment: one per window, created by the window's rank 0
 * and mapped by every member. It holds the words through which members
 * synchronize without system calls, and, for dynamic windows, each member's
 * table of attached regions.
 *
 * Layout (pinned by static_asserts; a magic and a version come first):
 *   ControlHeader                      128 B
 *   RankSlot[nranks]                   128 B each: words written by rank i
 *   AttachTable[nranks]                dynamic windows only
 *
 * Every word is written by one process only (its owner) and read by the
 * others, so no line is written from two sides.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/cache.h"

namespace librma {

inline constexpr uint64_t kControlMagic = 0x4c4f52544e434d52ull; /* "RMCNTROL" */
inline constexpr uint32_t kControlVersion = 1;

struct alignas(kFalseSharingPad) ControlHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t nranks;
	uint32_t flavor;
	uint32_t reserved;
};
static_assert(sizeof(ControlHeader) == kFalseSharingPad);

struct alignas(kFalseSharingPad) RankSlot {
	/*
	 * Number of barriers (fence, free) this rank has entered. Written by
	 * the owner with release, read by peers with acquire.
	 */
	std::atomic<uint64_t> barrier;
};
static_assert(sizeof(RankSlot) == kFalseSharingPad);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

/* One region attached to a dynamic window. */
struct AttachEntry {
	uint64_t base;    /* address in the owner */
	uint64_t size;
	uint64_t segmentInode; /* memfd inode if the memory is from rma_alloc_mem, else 0 */
	uint64_t segmentOffset;
	uint64_t segmentSize;  /* bytes to map */
	int32_t segmentFd;     /* fd number in the owner */
	uint32_t hugePages;
};

inline constexpr uint32_t kMaxAttach = 1024;

/*
 * Attached regions of one rank, written by that rank only, under a sequence
 * lock: the owner makes `sequence` odd, edits, makes it even again; readers
 * retry while it is odd or changed under them.
 */
struct alignas(kFalseSharingPad) AttachTable {
	std::atomic<uint64_t> sequence;
	uint32_t count;
	uint32_t reserved;
	AttachEntry entries[kMaxAttach];
};

inline std::size_t controlSize(uint32_t nranks, bool dynamic)
{
	return sizeof(ControlHeader) + nranks * sizeof(RankSlot) + (dynamic ? nranks * sizeof(AttachTable) : 0);
}

inline ControlHeader *controlHeader(std::byte *base) { return reinterpret_cast<ControlHeader *>(base); }
inline RankSlot *rankSlots(std::byte *base) { return reinterpret_cast<RankSlot *>(base + sizeof(ControlHeader)); }
inline AttachTable *attachTables(std::byte *base, uint32_t nranks)
{
	return reinterpret_cast<AttachTable *>(base + sizeof(ControlHeader) + nranks * sizeof(RankSlot));
}

} /* namespace librma */
