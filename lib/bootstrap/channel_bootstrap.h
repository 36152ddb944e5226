/* SPDX-License-Identifier: MIT */
/*
 * ChannelBootstrap: what the bootstraps without a launcher of ours share
 * (PMIx, and an external runtime such as the program's MPI through
 * rma_init_external). Collective data travels through the runtime that
 * started the job (dataRound(), one per implementation); file descriptors
 * between the ranks of a host through LocalFdChannel; the instance id of a
 * collective is the hub's world rank over the hub's own counter.
 *
 * A rank's host is named by the smallest rank of the host (localPeers(),
 * as the runtime says), never by host name. That rank creates the host's
 * job status page and hands it to the other local ranks in a start-up
 * exchange; every local rank maps it writable, since no launcher of ours
 * watches the pids. Internal to lib/bootstrap.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bootstrap/bootstrap_base.h"
#include "bootstrap/local_fd_channel.h"

namespace librma {

class ChannelBootstrap : public BootstrapBase
{
public:
	~ChannelBootstrap() override;

protected:
	/*
	 * One all-to-all of fixed-size items for the collective (@ctx, @seq):
	 * every member gives @mine, @gathered (members.size() * mine.size()
	 * bytes, this member's slot already filled) receives every member's in
	 * member order. Called only with two or more members. Returns
	 * RMA_SUCCESS or an error naming the collective.
	 */
	virtual int dataRound(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
			      std::span<const std::byte> mine, std::span<std::byte> gathered) = 0;

	/*
	 * Listen on the host channel as @rank of job @jobId, run the start-up
	 * exchange over @size ranks, and share the job status page among
	 * localPeers() (which the caller set: this host's ranks, ascending,
	 * holding @rank). Collective over the job.
	 */
	int startChannel(uint64_t jobId, int rank, int size);

	/* Drop the channel's sockets (before the runtime under them goes away). */
	void closeChannel() { channel_.reset(); }

	uint64_t hostKey() const final { return static_cast<uint64_t>(localPeers_.front()); }

	int exchange(uint64_t ctx, uint64_t seq, std::span<const int> members, int myIndex,
		     std::span<const std::byte> data, std::span<const int> fds, GatherResult &out) final;

	/* This host's ranks, ascending; set by the implementation before startChannel(). */
	std::vector<int> localPeers_;

private:
	int shareJobStatus();

	std::optional<LocalFdChannel> channel_;
	std::atomic<uint64_t> counter_{ 0 };
};

} /* namespace librma */
