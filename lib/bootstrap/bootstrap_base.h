/* SPDX-License-Identifier: MIT */
/*
 * BootstrapBase: what every Bootstrap implementation shares (the rmarun
 * client, the singleton, PMIx): argument checks of allgather() and the
 * start-up exchange that learns every rank's pid and host. Internal to
 * lib/bootstrap; the rest of librma sees only bootstrap.h.
 */
#pragma once

#include <cstdint>
#include <span>

#include "bootstrap/bootstrap.h"
#include "bootstrap/host_board.h"

namespace librma {

/* Context id of the bootstrap's own collectives (the start-up exchanges); users get ctx > 0. */
inline constexpr uint64_t kBootstrapCtx = 0;

class BootstrapBase : public Bootstrap
{
public:
	/* Checks the arguments (RMA_ERR_ARG, ctx 0 is reserved), then exchange(). */
	int allgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		      std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) final;
	/* Through the host's board when it can (host_board.h), else allgather(). */
	int consistentAllgather(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
				std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) final;

	/*
	 * Set rank and size, then learn every rank's pid and host (collective
	 * over the world, ctx 0 seq 0). Ranks with equal hostKey() share a
	 * host index, numbered in order of first appearance. Returns
	 * RMA_SUCCESS or the exchange's error.
	 */
	int init(int rank, int size);

	/*
	 * Once descriptors can travel (after init(), and under PMIx or an
	 * external runtime after the channel is up): the host's collective
	 * board (host_board.h), made by the host's lowest rank and mapped by
	 * the others, and whether descriptors can be reopened through /proc
	 * here (agreed by all local ranks). Collective over the host's ranks
	 * (ctx 0, seqs 2 and 3). Without a board (RMA_BOOT_BOARD=0, one rank
	 * on the host, or it cannot be made) collectives take exchange().
	 */
	int setUpHostBoard();

protected:
	/* The exchange itself; arguments are checked. */
	virtual int exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			     std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) = 0;

	/*
	 * What this rank says about its host in the start-up exchange: equal
	 * values mean shared memory. Default: a hash of the host name (right
	 * for one host; launchers that know better override it).
	 */
	virtual uint64_t hostKey() const;

	/*
	 * Whether this process may meet on the host's board: it has one slot
	 * per process, so not if it runs collectives of several threads at
	 * once. Every local rank must allow it, or none uses it.
	 */
	virtual bool boardAllowed() const { return true; }
	/* A start-up collective of the bootstrap itself (ctx 0; seq 0 is init's). */
	int bootstrapExchange(uint64_t seq, std::span<const int> members, int myIndex, std::span<const std::byte> data,
			      std::span<const int> fds, GatherResult &out)
	{
		return checkedExchange(kBootstrapCtx, seq, members, myIndex, data, fds, out);
	}

private:
	/* allgather() through the board: every member on this host, the data fits. */
	int boardExchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			  std::span<const std::byte> data, std::span<const int> fds, GatherResult &out);
	HostBoard board_;
	std::vector<uint32_t> boardSlot_; /* world rank -> its slot on this host's board (UINT32_MAX: another host) */
	/* RMA_ERR_ARG for members, an index or sizes that no exchange takes. */
	int checkArgs(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		      std::span<const std::byte> data, std::span<const int> fds) const;
	int checkedExchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			    std::span<const std::byte> data, std::span<const int> fds, GatherResult &out);
};

} /* namespace librma */
