/* SPDX-License-Identifier: MIT */
/*
 * HostBoard: the bootstrap's collectives among the ranks of one host
 * through a shared-memory page, without the launcher's round trip.
 *
 * Why: an allgather through rmarun's socket (or PMIx) costs ~60 µs on a
 * 2-CPU host (two sleeping receivers woken by a third process), and every
 * window creation and free runs two or three of them. Through this board
 * a collective whose members arrive together costs a few cache-line
 * transfers and no system call; descriptors are reopened through
 * /proc/PID/fd/N (the same file, a new open file description) instead of
 * travelling as SCM_RIGHTS.
 *
 * Layout: a header, then one 4 KiB slot per rank of the host (local
 * index order), each written only by its owner:
 *  - version (seqlock): odd while the owner writes its contribution; each
 *    collective it joins adds 2. Published with release; readers
 *    validate (ctx, seq) between two loads of it (acquire, then an acquire
 *    fence and a relaxed reload).
 *  - ctx, seq, len, nfds, the descriptor numbers, the data.
 *  - finished: the version of the last collective whose contributions the
 *    owner has copied (release). A member overwrites its slot only once
 *    every member of its last collective has finished that one (it waits
 *    at its next collective, or before it returns when descriptors were
 *    passed, which must stay open until reopened), so no owner overwrites
 *    a contribution someone still reads; "finished" is monotone: no ABA
 *    when the owner has already moved on to its next collective.
 *
 * Consistency of the path: every member of a collective must take the same
 * path, so the choice depends only on what all members share (the members,
 * the data length, the board). Descriptors: when some member passes more
 * than kFds, or the host cannot reopen descriptors through /proc (decided
 * for all local ranks at setup), every member sees it in the slots and
 * they all pass the descriptors through the bootstrap's own exchange.
 *
 * Waiting: spin up to kSpinNs (none when the host's ranks outnumber its
 * CPUs), then sleep on the awaited slot's bell (FUTEX_WAIT on the shared
 * word; its owner rings it after each publish and finish and wakes only
 * if someone sleeps); a dead member (the @dead callback, asked every
 * kNapNs asleep) fails the collective with RMA_ERR_PROC_FAILED.
 *
 * Thread safety: one collective at a time per process (the bootstrap's
 * callers are serialized); the board itself is shared by processes.
 */
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace librma {

class HostBoard
{
public:
	static constexpr std::size_t kSlotBytes = 4096;
	static constexpr std::size_t kFds = 32;
	static constexpr std::size_t kHeaderBytes = 256;
	/* Per-member data that fits a slot. */
	static constexpr std::size_t kDataBytes = kSlotBytes - kHeaderBytes - kFds * 24;

	HostBoard() = default;
	HostBoard(HostBoard &&other) noexcept;
	HostBoard &operator=(HostBoard &&other) noexcept;
	~HostBoard();

	/* A fresh board for @slots local ranks (made by the host's lowest rank). RMA_ERR_INTERN with errno. */
	static Result<HostBoard> create(uint32_t slots);
	/* Map the board @fd (taken) made for @slots ranks. RMA_ERR_INTERN if it is not one. */
	static Result<HostBoard> attach(int fd, uint32_t slots);

	int fd() const { return fd_.get(); }
	/* Close the descriptor once every rank has mapped the board (the mapping stays). */
	void closeFd() { fd_.reset(); }
	bool valid() const { return base_ != nullptr; }
	/* Whether collectives with descriptors reopen them through /proc (set alike at every local rank). */
	void setReopen(bool yes) { reopen_ = yes; }
	bool reopen() const { return reopen_; }
	/* More ranks on this host than CPUs for them: wait asleep at once instead of spinning first. */
	void setOversubscribed(bool yes) { oversubscribed_ = yes; }
	/* Whether a collective of @bytes per member can run here. */
	static bool fits(std::size_t bytes) { return bytes <= kDataBytes; }

	/*
	 * The allgather (@ctx, @seq) over @members (world ranks of this host,
	 * this process members[myIndex]); @slots[i] is member i's slot and
	 * @pids[i] its pid. Fills @out as Bootstrap::allgather() does, with
	 * instance = hub world rank << 40 | bit 39 | the hub's collective
	 * count. @fdsElsewhere: set when the descriptors must travel another
	 * way (out.fdCounts is filled, out.fds empty; the caller passes them
	 * and fills out.fds). @dead(i): whether member i has died.
	 */
	int allgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		      std::span<const uint32_t> slots, std::span<const pid_t> pids, std::span<const std::byte> data,
		      std::span<const int> fds, const std::function<bool(std::size_t)> &dead, GatherResult &out,
		      bool &fdsElsewhere);

	struct Slot; /* shared layout, host_board.cpp */

private:
	Slot *slot(uint32_t i) const;
	/* Wait until @ready(), asleep on our own slot @s's bell; RMA_ERR_PROC_FAILED if @dead(@member) and still not ready. */
	template<typename Ready>
	int waitFor(Slot &s, std::size_t member, const std::function<bool(std::size_t)> &dead, Ready &&ready) const;
	static constexpr int64_t kSpinNs = 50'000;
	static constexpr long kNapNs = 20'000'000;
	/* Members of our last collective and the finish each must reach before our slot is reused. */
	struct Pending {
		uint32_t slot;
		uint64_t want;
		pid_t pid;
	};

	UniqueFd fd_;
	std::byte *base_ = nullptr;
	std::size_t bytes_ = 0;
	uint32_t slots_ = 0;
	bool reopen_ = false;
	bool oversubscribed_ = false;
	std::vector<Pending> pending_;
};

} /* namespace librma */
