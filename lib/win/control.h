/* SPDX-License-Identifier: MIT */
/*
 * The window control segment: one per window, created by the window's rank 0
 * and mapped by every member. It holds the words through which members
 * synchronize without system calls, and, for dynamic windows, each member's
 * table of attached regions.
 *
 * Layout (pinned by static_asserts; a magic and a version come first):
 *   ControlHeader                      128 B
 *   GlobalLocks                        128 B  the lock_all word
 *   RankSlot[nranks]                   256 B each: rank i's barrier and lock words
 *   PscwRow posted[nranks]             row o: posts each target made to origin o
 *   PscwRow completed[nranks]          row t: completes each origin made to target t
 *   AttachTable[nranks]                dynamic windows only
 *
 * Barrier counters and PSCW counters are written by one process only and
 * read by the others. Lock words are the exception: every origin that locks
 * a target updates that target's word with atomic read-modify-writes.
 *
 * Lock protocol (passive target, no call from the target process):
 *   lock word of target t, 64 bits: [63..48] exclusive holder rank + 1 (0: none)
 *                                   [31..0]  shared holders
 *   waiters of target t (same line): exclusive lockers waiting for t
 *   GlobalLocks.word:               [63..32] exclusive lockers waiting
 *                                   [31..0]  lock_all holders
 *   shared:    CAS +1 while holder and waiters are 0; phase-fair writer
 *              preference (GrantWatch): once an exclusive locker that was
 *              waiting has been granted, while the holder is 0. Release:
 *              fetch_sub 1.
 *   exclusive: (no waiters: else the slow path at once) CAS the word
 *              0 -> holder (then grants += 1), then load GlobalLocks: no lock_all
 *              holder, done (one locked instruction); else store 0 back
 *              and take the slow path (waiters += 1, GlobalLocks waiting
 *              += 1, retry the same until it holds). Release: store 0 (no
 *              one else writes a held word).
 *   lock_all:  CAS GlobalLocks lock_all += 1 while no exclusive locker
 *              waits (phase-fair as shared lockers), then scan every
 *              target's word: an exclusive holder makes it step back
 *              (-= 1), wait for that word, and retry (keeping the count
 *              would deadlock with a holder locking a second target).
 *   A host server (win/remote.cpp) does the same for other hosts' origins,
 *   one try per pass, counting the exclusive lockers it parks as waiters.
 *              The exclusive CAS-then-load and lock_all's RMW-then-scan
 *              are seq_cst: a Dekker pair, one of the two always sees the
 *              other.
 * Every acquiring operation is acquire (or seq_cst) and every releasing
 * one release: they order the RMA stores of successive lock holders.
 */
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <cstdint>

#include "common/cache.h"
#include "progress/mpsc_ring.h"

namespace librma {

inline constexpr uint64_t kControlMagic = 0x4c4f52544e434d52ull; /* "RMCNTROL" */
inline constexpr uint32_t kControlVersion = 9; /* 9: each rank's lock activity words */

struct alignas(kFalseSharingPad) ControlHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t nranks;
	uint32_t flavor;
	uint32_t reserved;
};
static_assert(sizeof(ControlHeader) == kFalseSharingPad);

/* The window-wide word behind lock_all: [63..32] exclusive lockers waiting, [31..0] lock_all holders. */
struct alignas(kFalseSharingPad) GlobalLocks {
	std::atomic<uint64_t> word;
};
static_assert(sizeof(GlobalLocks) == kFalseSharingPad);

struct alignas(kFalseSharingPad) RankSlot {
	/*
	 * Number of barriers (fence, free) this rank has entered. Written by
	 * the owner with release, read by peers with acquire.
	 */
	std::atomic<uint64_t> barrier;
	/* The rank's pid, written once at creation: how agents outside the window tell a dead producer. */
	std::atomic<int32_t> pid;
	/*
	 * 1 once the rank is done with this segment: stored (release) last in
	 * a clean rma_win_free, read (acquire) by the segment's maker before it
	 * reuses the segment for another window (ControlPool in window.cpp).
	 */
	std::atomic<uint32_t> detached;
	/*
	 * This rank's lock activity on the window, so that a waiter can tell
	 * whether a dead rank may be what blocks it (Window::deadLockBlocker):
	 * [15..0] the shared locks and the lock_all it holds or is taking,
	 * [31..16] the exclusive locks it holds, takes or waits for
	 * (lockactivity::). Raised before the lock word is touched, lowered
	 * after it is let go. Written by the rank's application thread only
	 * (relaxed: peers read it only once the rank is dead, when all its
	 * stores are visible).
	 */
	std::atomic<uint32_t> lockActivity;
	/* The lock word of this rank as a target (see the protocol above); on its own line. */
	alignas(kFalseSharingPad) std::atomic<uint64_t> lock;
	/* Exclusive lockers waiting for this target (shared lockers read it with the word: same line). */
	std::atomic<uint64_t> waiters;
	/*
	 * Exclusive grants of this target so far, bumped by each exclusive
	 * holder right after it took the word (relaxed load and store: only
	 * the holder writes it, and holders are ordered by the word). Callers
	 * that give way to waiting exclusive lockers watch it (GrantWatch).
	 */
	std::atomic<uint32_t> grants;
};
static_assert(sizeof(RankSlot) == 2 * kFalseSharingPad);
static_assert(offsetof(RankSlot, lock) == kFalseSharingPad);
static_assert(offsetof(RankSlot, detached) == 12);
static_assert(offsetof(RankSlot, lockActivity) + sizeof(uint32_t) <= kFalseSharingPad);
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

namespace lockword {
inline constexpr uint64_t kShared = 1;
inline constexpr uint64_t kSharedMask = 0xffffffffull;
inline constexpr int kHolderShift = 48;
inline constexpr uint64_t kHolderMask = 0xffffull << 48;
inline constexpr uint64_t kMaxRanks = 0xffff - 1;
/* GlobalLocks.word */
inline constexpr uint64_t kLockAll = 1;
inline constexpr uint64_t kLockAllMask = 0xffffffffull;
inline constexpr uint64_t kExclusive = 1ull << 32;
/*
 * Polls (a host server's retries) after which a caller that gives way to
 * waiting exclusive lockers stops giving way even though no grant came:
 * only an escape from a waiter count that can never drop (GrantWatch).
 */
inline constexpr unsigned kPatience = 1u << 16;
} /* namespace lockword */

/* An exclusive holder counts its grant, right after it took the word. */
inline void noteExclusiveGrant(std::atomic<uint32_t> &grants)
{
	/* Relaxed, not a locked RMW: only the holder writes it, and holders are ordered by the word. */
	grants.store(grants.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

/*
 * Phase-fair writer preference. A shared locker (or lock_all caller) that
 * finds exclusive lockers waiting gives way to them until one of them has
 * been granted: until the grants it watches (the target's, or the sum over
 * the host's targets for lock_all) differ from what they were when it
 * started giving way. From then on only a holder keeps it out. So a stream
 * of shared lockers cannot starve an exclusive one (they give way), and a
 * stream of exclusive lockers cannot starve a shared one (it waits for one
 * grant, not for the stream to end). One per waiting call; not shared.
 */
struct GrantWatch {
	uint64_t seen = 0;
	unsigned polls = 0;
	bool watching = false;
	bool earned = false;

	/* Whether waiting exclusive lockers still keep this caller out, the grants being @grantsNow. */
	bool yieldTo(uint64_t grantsNow)
	{
		if (earned)
			return false;
		if (!watching) {
			watching = true;
			seen = grantsNow;
			return true;
		}
		if (grantsNow != seen || ++polls > lockword::kPatience) {
			earned = true;
			return false;
		}
		return true;
	}
};

namespace lockactivity {
inline constexpr uint32_t kShared = 1;
inline constexpr uint32_t kSharedMask = 0xffff;
inline constexpr uint32_t kExclusive = 1u << 16;
} /* namespace lockactivity */

/*
 * A row of PSCW counters (uint32, one per rank), padded to whole lines.
 * posted[o][t] is written by target t only (the number of posts it made to
 * o, release), read by origin o (acquire) in start; completed[t][o] is
 * written by origin o only (its completes to t, release), read by t in
 * wait/test (acquire). Counters wrap; compare with (int32_t)(a - b) >= 0.
 */
inline std::size_t pscwRowBytes(uint32_t nranks)
{
	return (nranks * sizeof(uint32_t) + kFalseSharingPad - 1) / kFalseSharingPad * kFalseSharingPad;
}

/* One region attached to a dynamic window. */
struct AttachEntry {
	uint64_t base;    /* address in the owner */
	uint64_t size;
	uint64_t coverEnd; /* the largest base + size among this entry and those before it */
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
 * retry while it is odd or changed under them. Entries are sorted by base
 * (regions may be adjacent or overlap, as MPI allows), and coverEnd makes
 * the lookup of the regions covering a range O(log n) plus the regions it
 * spans: a binary search for the last base <= the range's start, then a
 * walk back only while coverEnd says an earlier region reaches it.
 */
struct alignas(kFalseSharingPad) AttachTable {
	std::atomic<uint64_t> sequence;
	uint32_t count;
	uint32_t remoteAccesses; /* another host's operations in progress here: beginRemoteAccess() */
	AttachEntry entries[kMaxAttach];
};

/*
 * Another host's operation on a dynamic target's memory is applied by its
 * host's server, in whichever process serves the window, while the target
 * process may detach and free the region at any moment (MPI calls such a
 * program erroneous; a frame from another host must still never write
 * freed memory). So the server announces each access before it looks the
 * region up and withdraws it after the last byte moved, and the owner's
 * detach waits, after publishing the table without the region, until no
 * access is announced (finishRemoteAccesses()).
 *
 * Why it holds (the store-buffering pattern): the server does W(count of
 * accesses) then R(sequence and entries), the owner W(sequence) then
 * R(count of accesses), each pair separated by a sequentially consistent
 * fence. So either the server's lookup reads the new table (no region: the
 * operation fails with RMA_ERR_RMA_ATTACH) or the owner's load sees the
 * access announced and waits for its end. Stress test:
 * tests/win/remote_access_test.cpp.
 */
inline void beginRemoteAccess(AttachTable &table)
{
	/* Relaxed increment, then a seq_cst fence: orders it before the lookup's loads of sequence and entries. */
	std::atomic_ref<uint32_t>(table.remoteAccesses).fetch_add(1, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_seq_cst);
}

inline void endRemoteAccess(AttachTable &table)
{
	/* Release: the access's writes (and reads) before the owner's acquire in finishRemoteAccesses(). */
	std::atomic_ref<uint32_t>(table.remoteAccesses).fetch_sub(1, std::memory_order_release);
}

/* RAII form of begin/endRemoteAccess(); a null table (not a dynamic target) announces nothing. */
class RemoteAccess
{
public:
	explicit RemoteAccess(AttachTable *table) : table_(table)
	{
		if (table_)
			beginRemoteAccess(*table_);
	}
	~RemoteAccess()
	{
		if (table_)
			endRemoteAccess(*table_);
	}
	RemoteAccess(const RemoteAccess &) = delete;
	RemoteAccess &operator=(const RemoteAccess &) = delete;

private:
	AttachTable *table_;
};

/*
 * The owner, after publishing a table without a region: whether every
 * remote access that may have seen the old table has ended. Call it until
 * true (a server's access is a copy or an apply: microseconds).
 */
inline bool finishRemoteAccesses(AttachTable &table)
{
	/* seq_cst fence: the sequence's release store before this load (see above). */
	std::atomic_thread_fence(std::memory_order_seq_cst);
	/* Acquire: pairs with the release in endRemoteAccess(); the server's last write to the region happened before. */
	return std::atomic_ref<uint32_t>(table.remoteAccesses).load(std::memory_order_acquire) == 0;
}

/*
 * The accumulate area (lib/win/accumulate.cpp), per target rank t:
 *  - AccTargetLine: `consumer` is the ring's consumer role, a try-lock any
 *    process mapping t's memory may take to drain t's ring (0: free, else
 *    the holder's window rank + 1, or a host agent's agentHolder(pid):
 *    win/acc_area.h); acquire on taking it pairs with the
 *    release on giving it back, which hands over the ring's head and every
 *    element the previous holder applied. `applyLock` serializes the
 *    accumulates that origins apply themselves to memory they cannot reach
 *    with atomics (dynamic windows, process memory): same encoding.
 *  - done[t][o]: the sequence number of the last record from origin o that
 *    has been applied to t, written by the consumer role's holder only
 *    (release, after the record's elements and fetched values), read by
 *    origin o (acquire) when it completes its operations to t.
 *  - ring[t]: the MpscRing of records for t; producer id = origin rank.
 * And per origin o, reply[o]: kAccReplyBytes where consumers write the
 * values that o's get_accumulates fetched (o hands out the space).
 */
struct alignas(kFalseSharingPad) AccTargetLine {
	std::atomic<uint64_t> consumer;
	alignas(kFalseSharingPad) std::atomic<uint64_t> applyLock;
	/*
	 * plainMode (rank t as a target): 1 while the consumer role's holder
	 * applies with plain stores; origin atomics stay away. fastOp (rank t
	 * as an origin): 1 while t is inside an origin-atomic operation on any
	 * target. The two form an asymmetric Dekker handshake: origins pair a
	 * compiler-only fence with the applier's membarrier() (see
	 * accumulate.cpp, "Plain mode").
	 */
	alignas(kFalseSharingPad) std::atomic<uint32_t> plainMode;
	std::atomic<uint64_t> plainSince; /* the lease: CLOCK_MONOTONIC ns it was last seen renewed; 0: renewed since */
	alignas(kFalseSharingPad) std::atomic<uint32_t> fastOp;
};
static_assert(sizeof(AccTargetLine) == 4 * kFalseSharingPad);

inline constexpr uint32_t kAccSlots = 256;
inline constexpr uint32_t kAccSlotBytes = 256;
inline constexpr std::size_t kAccReplyBytes = 64 << 10;

inline std::size_t roundToPad(std::size_t bytes)
{
	return (bytes + kFalseSharingPad - 1) / kFalseSharingPad * kFalseSharingPad;
}

/* The ring geometry for @nranks producers: staging shrinks as producers grow. */
inline MpscRingConfig accRingConfig(uint32_t nranks)
{
	std::size_t stage = (std::size_t(2) << 20) / (nranks ? nranks : 1);
	stage = std::clamp<std::size_t>(stage, 16 << 10, 64 << 10) & ~std::size_t(63);
	return MpscRingConfig{ kAccSlots, kAccSlotBytes, nranks, static_cast<uint32_t>(stage) };
}

/* Where each part of the control segment starts. */
struct ControlLayout {
	std::size_t globals;
	std::size_t slots;
	std::size_t posted;
	std::size_t completed;
	std::size_t attach;
	std::size_t accLines;
	std::size_t accDone;
	std::size_t accDoneRow; /* bytes per target's row of done[] */
	std::size_t accRings;
	std::size_t accRingBytes;
	std::size_t accReplies;
	std::size_t size;

	ControlLayout(uint32_t nranks, bool dynamic)
	{
		globals = sizeof(ControlHeader);
		slots = globals + sizeof(GlobalLocks);
		posted = slots + nranks * sizeof(RankSlot);
		completed = posted + nranks * pscwRowBytes(nranks);
		attach = completed + nranks * pscwRowBytes(nranks);
		accLines = attach + (dynamic ? nranks * sizeof(AttachTable) : 0);
		accDone = accLines + nranks * sizeof(AccTargetLine);
		accDoneRow = roundToPad(nranks * sizeof(uint64_t));
		accRings = accDone + nranks * accDoneRow;
		accRingBytes = roundToPad(MpscRing::bytesFor(accRingConfig(nranks)));
		accReplies = accRings + nranks * accRingBytes;
		size = accReplies + nranks * kAccReplyBytes;
	}
};

inline ControlHeader *controlHeader(std::byte *base) { return reinterpret_cast<ControlHeader *>(base); }

} /* namespace librma */
