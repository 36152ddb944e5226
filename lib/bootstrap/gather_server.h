/* SPDX-License-Identifier: MIT */
/*
 * GatherServer: the launcher's half of Bootstrap::allgather(), as pure
 * logic with no I/O. The launcher hands it each Gather message and each
 * rank whose connection ended; it queues the replies in a per-rank outbox
 * that the launcher sends. Single-threaded (the launcher's event loop).
 *
 * Matching: requests meet by (ctx, seq). The first arrival fixes the
 * member list and the data length; a later arrival that disagrees fails
 * the collective (RMA_ERR_INTERN) for every member, so nobody waits for a
 * result that cannot come. When every member has arrived, each gets all
 * data and descriptors in member order and a fresh instance id (1, 2, ...
 * in completion order; unique in the job).
 *
 * Failures: once a member is gone (rankGone()), every pending collective
 * that names it fails with RMA_ERR_PROC_FAILED, as does every later
 * request that names it. A failed collective answers each member that
 * arrives later with the same error, and is forgotten when every member
 * has arrived or is gone.
 */
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/protocol.h"
#include "common/unique_fd.h"

namespace librma::boot {

class GatherServer
{
public:
	explicit GatherServer(int size);

	/*
	 * A complete Gather message from @rank, with the descriptors it
	 * carried. Malformed or inconsistent requests get an Error reply.
	 * @rank must not be gone.
	 */
	void gather(int rank, std::span<const std::byte> body, std::vector<UniqueFd> fds);

	/*
	 * @rank's connection ended (it exited or died). Fails the pending
	 * collectives that name it and drops its outbox. Idempotent.
	 */
	void rankGone(int rank);

	/* Messages waiting to be sent to @rank, oldest first. */
	std::deque<OutMessage> &outbox(int rank) { return outboxes_[rank]; }

	/* Collectives that have not been answered and forgotten (tests, leak checks). */
	std::size_t pendingCount() const { return pending_.size(); }

	/* Bytes of contributions held for unanswered collectives (the launcher bounds it). */
	std::size_t bufferedBytes() const
	{
		std::size_t n = 0;
		for (const auto &[key, c] : pending_)
			n += c.data.size();
		return n;
	}

private:
	using Key = std::pair<uint64_t, uint64_t>; /* (ctx, seq) */

	struct Collective {
		std::vector<int> members;
		uint64_t dataLen = 0;
		std::vector<bool> arrived;
		int arrivedCount = 0;
		std::vector<std::byte> data;		/* members.size() * dataLen */
		std::vector<std::vector<UniqueFd>> fds; /* per member */
		/* Set once the collective failed: what every member is told. */
		int errorClass = 0;
		std::string error;
	};

	/* Mark @c failed and tell the members that arrived. */
	void fail(Collective &c, int errorClass, std::string message);
	void complete(Collective &c);
	/* Forget @key's collective if nobody can still arrive. */
	void forgetIfSettled(std::map<Key, Collective>::iterator it);
	void sendError(int rank, int errorClass, const std::string &message);

	std::vector<bool> gone_;
	std::vector<std::deque<OutMessage>> outboxes_;
	std::map<Key, Collective> pending_;
	uint64_t nextInstance_ = 1;
};

} /* namespace librma::boot */
