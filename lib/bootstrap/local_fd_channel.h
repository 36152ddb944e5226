/* SPDX-License-Identifier: MIT */
/*
 * LocalFdChannel: file descriptors between the processes of one job on one
 * host, with no launcher in the middle (PMIx jobs, the MPI drop-in). The
 * data of a collective travels elsewhere (PMIx, MPI); this carries only the
 * descriptors that no such runtime can move. Internal to lib/bootstrap; the
 * design is docs/design/mpi-dropin.md §3.4.
 *
 * Naming. Each process listens, from bootstrap start to its end, on the
 * abstract Unix address "\0librma.<job id, 16 hex digits>.<world rank>"
 * (SOCK_SEQPACKET). Abstract names leave no file behind, vanish with the
 * process and are scoped to the network namespace.
 *
 * One exchange, for the collective (ctx, seq) over @members (all on this
 * host), after a data round that told every member every fdCount:
 *   - if no member gives a descriptor, nothing happens (no socket);
 *   - otherwise every member but the hub (members[0]) connects to the
 *     hub and sends a Hello {ctx, seq, index, fdCount} with its
 *     descriptors (boot::sendPacket: at most 250 per packet);
 *   - the hub waits for all of them, then answers each on its connection
 *     with every other member's descriptors in member order (each member
 *     already holds its own; it inserts duplicates of them).
 *   That is n-1 connections per exchange.
 *
 * Authentication. SO_PEERCRED of every accepted and every connected socket
 * must show this process's effective uid and the pid the member list names for that
 * position. A connection that fails the check is closed unread (the hub
 * counts it in refusedCount()) and the exchange goes on; a hub that fails it
 * fails the member's exchange (nothing is sent to a stranger).
 *
 * Liveness and bounds. Every wait polls the peers' pidfds (kill(pid, 0)
 * without pidfd_open) and a deadline: a member that died fails the exchange
 * with RMA_ERR_PROC_FAILED naming its rank; a live member that does not
 * arrive within Options::timeout fails it with RMA_ERR_INTERN naming the
 * ranks still missing. The hub tells the members already connected about a
 * failure (an error reply), so they fail at once too.
 *
 * Concurrency. Thread-safe: threads of one process may run exchanges of
 * different collectives at the same time. A thread that accepts a
 * connection belonging to another collective of this process parks it
 * (with its Hello) for the owner to take. Setup path only: every call
 * may block up to the timeout.
 */
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "bootstrap/bootstrap.h"
#include "common/result.h"

namespace librma {

/*
 * The wire format (one boot:: message each way, see protocol.h for packets;
 * host byte order: both ends share a kernel).
 */
namespace fdchan {

inline constexpr uint32_t kHelloMagic = 0x484d4652; /* "RFMH" */
inline constexpr uint32_t kReplyMagic = 0x524d4652; /* "RFMR" */

/* Member -> hub: who it is in which collective; its fdCount descriptors ride along. */
struct Hello {
	uint32_t magic;
	uint32_t index; /* the sender's position in the member list (> 0) */
	uint64_t ctx;
	uint64_t seq;
	uint32_t fdCount;
	uint32_t memberCount;
};

/* Hub -> member: the outcome; on success every other member's descriptors ride along (fdCount). */
struct Reply {
	uint32_t magic;
	int32_t errorClass; /* 0, or the RMA_ERR_* class the exchange failed with */
	uint64_t ctx;
	uint64_t seq;
	int32_t failedRank; /* with RMA_ERR_PROC_FAILED: the rank that died, else -1 */
	uint32_t fdCount;
};

} /* namespace fdchan */

class LocalFdChannel
{
public:
	struct Options {
		/* How long one exchange waits for its members before it fails. */
		std::chrono::milliseconds timeout{ 30000 };
		/*
		 * Called with the world rank of every peer an exchange finds
		 * dead (before it returns RMA_ERR_PROC_FAILED), on the
		 * exchanging thread; may be empty. The PMIx bootstrap records
		 * the death in the host's job status page.
		 */
		std::function<void(int worldRank)> peerDied{};
	};

	/*
	 * Start listening as world rank @worldRank of job @jobId.
	 * Errors (RMA_ERR_INTERN, the message names the address): the socket
	 * cannot be made, or the address is taken (EADDRINUSE: another
	 * process of this job claims the same rank, or job ids collide).
	 */
	static Result<LocalFdChannel> listen(uint64_t jobId, int worldRank, Options options);
	static Result<LocalFdChannel> listen(uint64_t jobId, int worldRank) { return listen(jobId, worldRank, {}); }

	LocalFdChannel(LocalFdChannel &&) noexcept;
	LocalFdChannel &operator=(LocalFdChannel &&) noexcept;
	~LocalFdChannel();

	/*
	 * The descriptors of the collective (@ctx, @seq) over @members (world
	 * ranks in group order, all on this host; this process is
	 * members[@myIndex] and the caller's rank). @memberPids and
	 * @fdCounts have one entry per member (from the data round; every
	 * member passes the same). @fds are this member's fdCounts[myIndex]
	 * descriptors (borrowed; not closed).
	 *
	 * On success fills out.fds (every member's descriptors, in member
	 * order, all owned by the caller) and out.fdCounts, leaves out.data and
	 * out.instance alone, and returns RMA_SUCCESS. Errors:
	 *   RMA_ERR_ARG          inconsistent arguments (sizes, counts, index);
	 *   RMA_ERR_PROC_FAILED  a member died before the exchange finished;
	 *   RMA_ERR_INTERN       timeout, a peer that is not who it should be
	 *                        (the hub's pid or uid), a malformed message,
	 *                        or a socket error.
	 * On error @out is untouched. Thread-safe; (ctx, seq) must be unique to
	 * one collective in the job.
	 */
	int exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		     std::span<const pid_t> memberPids, std::span<const int> fds, std::span<const int> fdCounts,
		     GatherResult &out);

	/* Connections the hub closed because they failed the credential check or the protocol. */
	uint64_t refusedCount() const;

	/* The abstract address of @worldRank in @jobId, without the leading NUL (for messages and tests). */
	static std::string addressName(uint64_t jobId, int worldRank);

	struct State;

private:
	explicit LocalFdChannel(std::unique_ptr<State> state);
	std::unique_ptr<State> state_;
};

} /* namespace librma */
